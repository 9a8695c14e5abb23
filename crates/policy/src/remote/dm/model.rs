//! What a move of dynamic migration costs and saves, and how much room a destination keeps.
//!
//! **Latency.** An access from a CPU of node `s` to memory of node `d` takes its idle latency
//! `L0(s, d)` plus the wait at `d`'s memory controllers, taken as an M/M/1 queue's:
//! `W(u) = S * u / (1 - u)`, with `S` the time the controllers take for one 64-byte line
//! (`64 B / bandwidth`) and `u` their utilisation, the bytes they served per second over their
//! bandwidth, at most `max_utilisation` (a saturated node serves at most its bandwidth, so its
//! counted utilisation stops near 1 however long its queue). A move of `x` accesses per second
//! of the tenant (on `s`) from the stressed node `h` to `c` pays when the latency of all
//! accesses falls:
//!
//! `A_h W_h(u_h) + A_c W_c(u_c) > (A_h - x) W_h(u_h') + (A_c + x) W_c(u_c') + x (L0(s, c) - L0(s, h))`
//!
//! with `A` the accesses per second each node serves and `u'` the utilisations after the move.
//! Its idle latencies and bandwidths are the machine's HMAT figures
//! ([`rondpoint_model::Hmat`]): the latency from each initiator where known (the simulator),
//! else the best initiators' latency scaled by the SLIT distance (ACPI's SLIT is relative
//! latency, 10 local); the bandwidth of the best initiators. Where the machine gives no
//! bandwidth the model cannot say a move pays (there is no model), and dm falls back to
//! counts (see [`super`]).
//!
//! **Room.** A destination keeps free memory above its high watermark after the move, as
//! Linux's NUMA balancing requires of a migration target (`migrate_balanced_pgdat` in
//! mm/migrate.c: `zone_watermark_ok` at the high watermark plus the pages migrated). The
//! watermarks are the kernel's defaults (`__setup_per_zone_wmarks` in mm/page_alloc.c):
//! `min` is the node's share, by size, of `min_free_kbytes = sqrt(16 * memory in KiB)` (at most
//! 262144 KiB; `init_per_zone_wmark_min`), and `high = min + 2 * max(min / 4, size *
//! watermark_scale_factor / 10000)`.

use rondpoint_model::{NodeId, Observation, Topology};

/// Bytes one DRAM access moves: a cache line.
pub(super) const LINE: f64 = 64.0;

/// Bytes per MiB and KiB.
const MIB: f64 = 1_048_576.0;
const KIB: f64 = 1024.0;

/// Largest `min_free_kbytes` the kernel's default gives (KiB).
const MAX_MIN_FREE_KIB: f64 = 262_144.0;

/// The latency model of one machine over one period.
pub(super) struct Model {
    /// Memory-controller bandwidth per node (bytes per ns), dense indices.
    bandwidth: Vec<f64>,
    /// Idle latency `[s][d]` (ns), where known.
    idle: Vec<Vec<Option<f64>>>,
    /// Length of the period (ns).
    period_ns: f64,
    max_utilisation: f64,
}

impl Model {
    /// The model, if the machine gives a bandwidth for every node with memory and the period
    /// has a length.
    pub(crate) fn of(topology: &Topology, period_ns: f64, max_utilisation: f64) -> Option<Self> {
        if period_ns.is_nan() || period_ns <= 0.0 {
            return None;
        }
        let nodes = topology.nodes();
        let bandwidth = nodes
            .iter()
            .map(
                |n| match n.hmat.best().and_then(|p| p.read_bandwidth_mib_s) {
                    Some(b) if b > 0 => Some(b as f64 * MIB / 1e9),
                    _ if n.mem_total_bytes == 0 => Some(f64::INFINITY),
                    _ => None,
                },
            )
            .collect::<Option<Vec<f64>>>()?;
        let idle = (0..nodes.len())
            .map(|s| {
                (0..nodes.len())
                    .map(|d| idle_latency(topology, s, d))
                    .collect()
            })
            .collect();
        Some(Self {
            bandwidth,
            idle,
            period_ns,
            max_utilisation,
        })
    }

    /// Utilisation of node `d`'s controllers when it serves `accesses` in the period.
    pub(crate) fn utilisation(&self, d: usize, accesses: f64) -> f64 {
        accesses * LINE / self.period_ns / self.bandwidth[d]
    }

    /// Wait at node `d` (ns) when it serves `accesses` in the period.
    fn wait(&self, d: usize, accesses: f64) -> f64 {
        let u = self
            .utilisation(d, accesses)
            .clamp(0.0, self.max_utilisation);
        LINE / self.bandwidth[d] * u / (1.0 - u)
    }

    /// Idle latency from node `s` to node `d` (ns), where known.
    pub(crate) fn idle(&self, s: usize, d: usize) -> Option<f64> {
        self.idle[s][d]
    }

    /// Wait saved in the period (ns summed over accesses; negative: added) by moving `x`
    /// accesses from `h` (serving `a_h`) to `c` (serving `a_c`); the tenant's change of idle
    /// latency is the caller's ([`Model::idle`]).
    pub(crate) fn wait_saving(
        &self,
        (h, a_h): (usize, f64),
        (c, a_c): (usize, f64),
        x: f64,
    ) -> f64 {
        let before = a_h * self.wait(h, a_h) + a_c * self.wait(c, a_c);
        let after = (a_h - x) * self.wait(h, a_h - x) + (a_c + x) * self.wait(c, a_c + x);
        before - after
    }
}

/// Idle latency from a CPU of node `s` (dense) to memory of node `d` from `d`'s HMAT figures:
/// the latency from `s` where given, else the best initiators' scaled by the SLIT distances.
fn idle_latency(topology: &Topology, s: usize, d: usize) -> Option<f64> {
    let nodes = topology.nodes();
    let (from, to) = (nodes.get(s)?, nodes.get(d)?);
    if let Some(&(_, ns)) = to.hmat.latency_from_ns.iter().find(|(i, _)| *i == from.id) {
        return Some(ns as f64);
    }
    let best = to.hmat.best()?;
    let ns = best.read_latency_ns? as f64;
    let initiator: NodeId = *best.initiators.first()?;
    let near = topology.distance(initiator, to.id)?;
    let far = topology.distance(from.id, to.id)?;
    (near > 0).then(|| ns * f64::from(far) / f64::from(near))
}

/// The high watermark of node `node` (bytes) by the kernel's default rule (module
/// documentation), with `scale_factor` the kernel's `vm.watermark_scale_factor`.
pub(super) fn high_watermark(observation: &Observation, node: NodeId, scale_factor: f64) -> f64 {
    let total: f64 = observation
        .memory
        .iter()
        .map(|m| m.total_bytes as f64)
        .sum();
    let Some(size) = observation
        .memory
        .iter()
        .find(|m| m.node == node)
        .map(|m| m.total_bytes as f64)
    else {
        return 0.0;
    };
    if total <= 0.0 {
        return 0.0;
    }
    let min_free = (16.0 * total / KIB).sqrt().min(MAX_MIN_FREE_KIB) * KIB;
    let min = min_free * size / total;
    min + 2.0 * (min / 4.0).max(size * scale_factor / 10_000.0)
}
