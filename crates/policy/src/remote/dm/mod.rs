//! Dynamic migration (DM), the AutoNUMA extension of [Choe21 §4] evaluated in §5.2:
//! "periodically move pages from the busiest node that has the most memory traffic to the
//! least busy one", to relieve a node "highly stressed due to excessive interference". The
//! paper gives no threshold, period or batch size, and no rule for machines unlike its four
//! equal sockets one hop apart; every parameter here is rondpoint's, named "chosen" with its
//! reason, or the kernel's.
//!
//! Each period rondpoint:
//! 1. sums each node's DRAM accesses by source node over the period, from the memory
//!    controllers' counters ([`rondpoint_model::NodeCounters::dram_accesses_by_source`]; the
//!    paper estimates traffic from AutoNUMA's fault statistics, which count pages touched per
//!    scan, not how often they are touched), and takes each node's load as its utilisation:
//!    the bytes it served per second over its bandwidth ([`model`]), so that "busiest" means
//!    nearest its limit, not serving most (a CXL expander with a third of a socket's
//!    bandwidth is as busy at a third of the accesses);
//! 2. takes as stressed the busiest node among those serving at least `min_remote_share` of
//!    their accesses to other nodes' CPUs (interference: a node serving only its own CPUs has
//!    nothing to give away), and as its noisiest tenant the process on the node sending it the
//!    most remote accesses that has most memory there;
//! 3. takes as destination, among the nodes with room (free memory above their high
//!    watermark after the move, as Linux's NUMA balancing requires of a migration target) that
//!    run none of the tenant's threads and whose load is `imbalance_pct` percent below the
//!    stressed node's, the one where the move saves the most access latency, and only if it
//!    saves some ([`model`]: the wait removed at the stressed node against the wait added at
//!    the destination and the tenant's extra idle latency when the destination is farther or
//!    slower memory). On the paper's machine (remote nodes one hop away, equal bandwidths)
//!    that is its least busy node; elsewhere a farther node (another die or socket when the
//!    stressed node is the tenant's sibling die) is taken when the queueing it relieves
//!    outweighs the distance, and slower memory (a CXL node, a slower kernel memory tier) only
//!    when the model says it pays;
//! 4. moves enough of the tenant's pages to bring the two nodes' loads together, at the
//!    accesses per byte the tenant made to the stressed node (or a half or a quarter of that
//!    when that saves more, as the distance can make the whole move cost more than it saves),
//!    at most `batch_mib` and the destination's room ([`Action::MoveNodePages`]).
//!
//! Meeting in the middle makes successive periods converge instead of swinging the traffic
//! back and forth. Where the machine gives no bandwidth for its nodes (no HMAT: many live
//! machines), loads are access counts (equal bandwidths assumed), and only nodes that are not
//! slower memory ([`Topology::is_slower_tier`]) and no farther from the tenant than the
//! stressed node are destinations: nothing says a move elsewhere pays. The moves cost what
//! migrations cost (copies, and per-page work the simulator charges to the process);
//! AutoNUMA's hinting scans, which run beside (Linux's balancing, as in the paper's runs: the
//! kernel's own on a live machine, the policy's copy of its rules in the simulator), cost what
//! they cost.

pub mod model;

use model::{Model, high_watermark};
use rondpoint_model::{Action, NodeId, NodeList, Observation, Pid, ProcessInfo, Topology};
use rondpoint_policy_api::bounds::{Bounds, FRACTION, MOVE_MIB, PERCENT, ParamBounds};
use serde::{Deserialize, Serialize};

/// Bytes of a base page: the unit of [`Action::MoveNodePages`].
const PAGE: f64 = 4096.0;

/// `[dm]` parameters (and `[ua-dm.dm]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DmConfig {
    /// Epochs of counters summed for one decision (at least 1). Default 2: chosen; two
    /// seconds at the default 1 s epoch smooth one epoch's noise (a phase, a program
    /// finishing) and still react within seconds on runs of tens of seconds.
    pub period_epochs: u64,
    /// How much more the stressed node must have served than the destination (percent).
    /// Default 20: chosen; below it the queueing removed is small beside the copies.
    pub imbalance_pct: f64,
    /// Share of a node's accesses that must come from other nodes' CPUs for it to count as
    /// stressed by interference (0 to 1). Default 0.1: chosen.
    pub min_remote_share: f64,
    /// Most memory moved per decision (MiB). Default 512: chosen; 4.5 GiB of overflow is
    /// rebalanced within half a minute, and 512 MiB over a 2 s period is under 2% of one DDR4
    /// channel's bandwidth (xeon-6242-4s: 18.8 GB/s).
    pub batch_mib: u64,
    /// Highest utilisation the latency model counts (0 to 1): a node at or above it is taken
    /// at it. Default 0.95: chosen; an M/M/1 wait grows without bound at 1, and a saturated
    /// node's counted utilisation stops below 1 however long its queue, so the model needs a
    /// ceiling; at 0.95 the wait is 19 line times (65 ns on one DDR4-2933 channel).
    pub max_utilisation: f64,
    /// The kernel's `vm.watermark_scale_factor` (units of 1/10000 of a node's memory), from
    /// which a destination's high watermark follows (module [`model`]). Default 10: Linux's
    /// default (Documentation/admin-guide/sysctl/vm.rst).
    pub watermark_scale_factor: f64,
}

impl Default for DmConfig {
    fn default() -> Self {
        Self {
            period_epochs: 2,
            imbalance_pct: 20.0,
            min_remote_share: 0.1,
            batch_mib: 512,
            max_utilisation: 0.95,
            watermark_scale_factor: 10.0,
        }
    }
}

/// The rebalancer and the counters of the current period.
#[derive(Clone, Debug)]
pub(crate) struct Rebalancer {
    config: DmConfig,
    /// DRAM accesses of the period, `[served by * n + made from]` (dense indices).
    accesses: Vec<f64>,
    /// Length of the period so far (ns).
    period_ns: f64,
    epochs: u64,
}

impl Rebalancer {
    pub fn new(config: DmConfig) -> Self {
        let mut c = config;
        c.period_epochs = c.period_epochs.max(1);
        if !c.imbalance_pct.is_finite() || c.imbalance_pct < 0.0 {
            c.imbalance_pct = DmConfig::default().imbalance_pct;
        }
        if !c.min_remote_share.is_finite() {
            c.min_remote_share = DmConfig::default().min_remote_share;
        }
        c.min_remote_share = c.min_remote_share.clamp(0.0, 1.0);
        let d = DmConfig::default();
        if !c.max_utilisation.is_finite() {
            c.max_utilisation = d.max_utilisation;
        }
        c.max_utilisation = c.max_utilisation.clamp(0.0, 0.999);
        if !c.watermark_scale_factor.is_finite() || c.watermark_scale_factor < 0.0 {
            c.watermark_scale_factor = d.watermark_scale_factor;
        }
        Self {
            config: c,
            accesses: Vec::new(),
            period_ns: 0.0,
            epochs: 0,
        }
    }

    /// Counts the epoch's traffic and, at the end of a period, the move to make, if any.
    /// Processes for which `busy` is true are not moved (their placement is under way).
    pub fn decide(
        &mut self,
        topology: &Topology,
        observation: &Observation,
        busy: impl Fn(Pid) -> bool,
    ) -> Vec<Action> {
        let n = topology.len();
        self.accesses.resize(n * n, 0.0);
        for c in &observation.counters.nodes {
            let Some(d) = topology.index_of(c.node) else {
                continue;
            };
            for (s, &a) in c.dram_accesses_by_source.iter().enumerate().take(n) {
                self.accesses[d * n + s] += a as f64;
            }
        }
        self.period_ns += observation.counters.duration_ns as f64;
        self.epochs += 1;
        if self.epochs < self.config.period_epochs {
            return Vec::new();
        }
        let traffic = Traffic {
            n,
            accesses: std::mem::take(&mut self.accesses),
            period_ns: std::mem::take(&mut self.period_ns),
        };
        self.epochs = 0;
        traffic
            .plan(topology, observation, &self.config, busy)
            .into_iter()
            .collect()
    }
}

/// One period's accesses.
struct Traffic {
    n: usize,
    accesses: Vec<f64>,
    /// The period's length (ns; 0 if the counters gave none).
    period_ns: f64,
}

/// A candidate move: destination (dense), bytes, and its score (latency saved with the model;
/// without, minus the destination's accesses).
struct Offer {
    to: usize,
    bytes: f64,
    score: f64,
}

/// What [`Traffic::offer`] needs of the stressed node and its tenant.
struct Stressed<'a> {
    hot: usize,
    source: usize,
    /// The tenant's accesses per byte on the stressed node.
    density: f64,
    /// Most bytes one move takes off the stressed node (batch, the tenant's bytes there).
    most: f64,
    model: Option<&'a Model>,
}

impl Traffic {
    fn served(&self, d: usize) -> f64 {
        self.accesses[d * self.n..(d + 1) * self.n].iter().sum()
    }

    fn from(&self, d: usize, s: usize) -> f64 {
        self.accesses[d * self.n + s]
    }

    /// A node's load: its utilisation with a model, its accesses without.
    fn load(&self, model: Option<&Model>, d: usize) -> f64 {
        match model {
            Some(m) => m.utilisation(d, self.served(d)),
            None => self.served(d),
        }
    }

    /// The stressed node: the busiest with enough remote accesses.
    fn stressed(&self, model: Option<&Model>, min_remote_share: f64) -> Option<usize> {
        (0..self.n)
            .filter(|&d| {
                let all = self.served(d);
                all > 0.0 && (all - self.from(d, d)) >= min_remote_share * all
            })
            .max_by(|&a, &b| {
                self.load(model, a)
                    .total_cmp(&self.load(model, b))
                    .then(b.cmp(&a))
            })
    }

    /// The move of this period, if any.
    fn plan(
        &self,
        topology: &Topology,
        observation: &Observation,
        config: &DmConfig,
        busy: impl Fn(Pid) -> bool,
    ) -> Option<Action> {
        let ids: Vec<NodeId> = topology.nodes().iter().map(|x| x.id).collect();
        let model = Model::of(topology, self.period_ns, config.max_utilisation);
        let model = model.as_ref();
        let hot = self.stressed(model, config.min_remote_share)?;
        let source = (0..self.n).filter(|&s| s != hot).max_by(|&a, &b| {
            self.from(hot, a)
                .total_cmp(&self.from(hot, b))
                .then(b.cmp(&a))
        })?;
        let runs_on = |p: &ProcessInfo, i: usize| p.threads.iter().any(|t| t.node == ids[i]);
        let tenant = observation
            .processes
            .iter()
            .filter(|p| !busy(p.pid) && runs_on(p, source) && !runs_on(p, hot))
            .max_by_key(|p| {
                (
                    p.resident_bytes_by_node.get(hot).copied().unwrap_or(0),
                    -p.pid.0,
                )
            })?;
        let on_hot = tenant.resident_bytes_by_node.get(hot).copied().unwrap_or(0) as f64;
        let density = self.from(hot, source) / on_hot;
        if on_hot <= 0.0 || density.is_nan() || density <= 0.0 {
            return None;
        }
        let stressed = Stressed {
            hot,
            source,
            density,
            most: (config.batch_mib as f64 * (1u64 << 20) as f64).min(on_hot),
            model,
        };
        let imbalance = 1.0 + config.imbalance_pct / 100.0;
        let best = (0..self.n)
            .filter(|&i| i != hot && !runs_on(tenant, i))
            .filter(|&i| topology.nodes()[i].mem_total_bytes > 0)
            .filter(|&i| self.load(model, hot) >= imbalance * self.load(model, i))
            .filter_map(|i| {
                let room = free(observation, ids[i])
                    - high_watermark(observation, ids[i], config.watermark_scale_factor);
                self.offer(topology, &stressed, i, room)
            })
            .max_by(|a, b| a.score.total_cmp(&b.score).then(b.to.cmp(&a.to)))?;
        let pages = (best.bytes / PAGE) as u64;
        (pages > 0).then(|| Action::MoveNodePages {
            pid: tenant.pid,
            from: ids[hot],
            to: NodeList::from_slice(&[ids[best.to]]),
            pages,
        })
    }

    /// The move to node `c` with `room` bytes above its high watermark, if it is one.
    fn offer(&self, topology: &Topology, s: &Stressed<'_>, c: usize, room: f64) -> Option<Offer> {
        let most = s.most.min(room);
        if most < PAGE {
            return None;
        }
        let ids = |i: usize| topology.nodes()[i].id;
        let d = topology.distances();
        // Without a latency for both nodes: no slower memory, nothing farther.
        let near = !topology.is_slower_tier(ids(c)) && d[s.source][c] <= d[s.source][s.hot];
        let (a_h, a_c) = (self.served(s.hot), self.served(c));
        let Some(m) = s.model else {
            // Counts alone: the least busy near node, the counts brought together.
            return near.then(|| Offer {
                to: c,
                bytes: ((a_h - a_c) / 2.0 / s.density).min(most),
                score: -a_c,
            });
        };
        let farther = match (m.idle(s.source, c), m.idle(s.source, s.hot)) {
            (Some(x), Some(y)) => x - y,
            _ if near => 0.0,
            _ => return None,
        };
        // Accesses that bring the two utilisations together.
        let (k_h, k_c) = (m.utilisation(s.hot, 1.0), m.utilisation(c, 1.0));
        let meet = (k_h * a_h - k_c * a_c) / (k_h + k_c);
        [1.0, 0.5, 0.25]
            .iter()
            .map(|f| {
                let bytes = (meet * f / s.density).min(most);
                let x = bytes * s.density;
                let score = m.wait_saving((s.hot, a_h), (c, a_c), x) - x * farther;
                Offer {
                    to: c,
                    bytes,
                    score,
                }
            })
            .filter(|o| o.score > 0.0 && o.bytes >= PAGE)
            .max_by(|a, b| a.score.total_cmp(&b.score))
    }
}

/// Free bytes of node `node` (0 if not reported).
fn free(observation: &Observation, node: NodeId) -> f64 {
    observation
        .memory
        .iter()
        .find(|m| m.node == node)
        .map_or(0.0, |m| m.free_bytes as f64)
}

/// The range of each parameter ([`DmConfig`]).
pub const BOUNDS: &[ParamBounds] = &[
    ("period_epochs", Bounds::new(1.0, 1e6, "epochs")),
    ("imbalance_pct", PERCENT),
    ("min_remote_share", FRACTION),
    ("batch_mib", MOVE_MIB),
    ("max_utilisation", FRACTION),
    ("watermark_scale_factor", WATERMARK_SCALE),
];

/// The kernel's range of `vm.watermark_scale_factor` (Documentation/admin-guide/sysctl/vm.rst:
/// at most 3000, 30% of memory; 0 here for no scaled part).
pub const WATERMARK_SCALE: Bounds = Bounds::new(0.0, 3000.0, "1/10000 of node memory");

#[cfg(test)]
mod tests;
