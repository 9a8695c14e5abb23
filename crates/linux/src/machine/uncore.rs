//! Memory-controller traffic per node, counted by the uncore PMUs (Intel `uncore_imc_N`, AMD
//! `amd_umc_N`) instead of estimated from page-fault samples.
//!
//! The counters are the plan's ([`crate::pmu::attrs::plan`]: the memory-controller read and
//! write events of the catalogue on every unit of such a PMU), opened once, when the machine is
//! first probed, system-wide (pid -1) on every CPU of the unit's `cpumask`. An uncore PMU lists
//! one CPU per socket (die) there, and an event counts the box of the socket of the CPU it is
//! opened on: arch/x86/events/intel/uncore.c (`uncore_pmu_event_init`: `event->cpu =
//! box->cpu`; the `cpumask` file shows `uncore_cpu_mask`, one CPU per die), so `uncore_imc_3`
//! with cpumask `0,56` is channel 3 of socket 0 on CPU 0 and of socket 1 on CPU 56 (what
//! `perf stat -a` opens);
//! arch/x86/events/amd/uncore.c (`amd_uncore_umc_ctx_init`) registers each `amd_umc_N` for one
//! group (socket) only, its cpumask naming one CPU of it. They are read every epoch and scaled
//! for multiplexing by the time each ran, as the thread counters are.
//!
//! A count is of CAS commands, each moving one 64-byte line: Intel's driver says so with the
//! events' scale, 6.103515625e-5 MiB = 64 bytes (`spr_uncore_imc_events`,
//! `INTEL_UNCORE_EVENT_DESC(cas_count_read.scale, "6.103515625e-5")` in
//! arch/x86/events/intel/uncore_snbep.c); AMD's Zen 4 metrics multiply `umc_cas_cmd.*` by 64
//! for bytes (`umc_mem_read_bandwidth`, tools/perf/pmu-events/arch/x86/amdzen4/recommended.json).
//!
//! From socket to node: a counter's socket is its CPU's `physical_package_id`
//! (/sys/devices/system/cpu/cpuN/topology), and the socket's nodes are the nodes with memory
//! whose CPUs are in that package. With one such node per socket, the count is that node's,
//! measured. With several (Intel SNC, AMD NPS2/NPS4), which channel serves which node is not
//! in sysfs (nor is the channel-to-unit numbering), so the socket's count is shared among its
//! nodes in proportion to their sampled traffic (evenly when they have none): the socket's
//! total is measured, its split estimated, and the report says so. Nodes without CPUs (CXL
//! memory) are behind no DDR controller counted here: their traffic stays estimated from the
//! samples, scaled by the lines counted per sample on the measured nodes.
//!
//! Counters count every access of the machine, not only the managed processes' (the
//! controllers' load, as Carrefour's global metrics want it); which node the accesses came
//! from is not counted, and stays split as the samples are.

use crate::capabilities::McCounters;
use crate::pmu::Pmu;
use crate::pmu::attrs::{self, CpuIdent, PlannedAttr, Target};
use crate::pmu::events::Signal;
use crate::sys::{Errno, PerfFd, PerfReading, Sys};
use crate::sysfs::SysfsRoot;
use rondpoint_model::{CpuId, NodeCounters, Pid, Topology};

/// Bytes one CAS command moves: a 64-byte line (see the module's documentation).
pub(super) const BYTES_PER_CAS: u64 = 64;

/// The unit of `NodeCounters::dram_reads` and `dram_writes`: 64-byte lines.
const LINE_BYTES: u64 = 64;

/// One opened counter: a unit's read or write event on one CPU of its cpumask.
#[derive(Debug)]
struct Counter {
    fd: PerfFd,
    last: PerfReading,
    write: bool,
    /// Index into [`Uncore::groups`].
    group: usize,
}

/// The nodes one socket's controllers serve (dense indices, nodes with memory).
#[derive(Debug)]
struct Group {
    package: u32,
    nodes: Vec<usize>,
}

/// The memory-controller counters of the machine.
#[derive(Debug)]
pub(super) struct Uncore {
    counters: Vec<Counter>,
    groups: Vec<Group>,
    /// Why per-node traffic is still in part estimated with these counters (`None`: every
    /// node with memory is measured on its own).
    pub(super) partial: Option<String>,
}

/// What the machine's memory-controller counters gave in an epoch, per node (dense index):
/// lines read and written, `None` where it stays estimated.
pub(super) type Measured = Vec<Option<[u64; 2]>>;

/// The socket (`physical_package_id`) of a CPU, if sysfs says.
pub(super) fn package_of(sysfs: &SysfsRoot, cpu: CpuId) -> Option<u32> {
    let rel = format!(
        "devices/system/cpu/cpu{}/topology/physical_package_id",
        cpu.0
    );
    sysfs.read_optional(&rel).ok()??.trim().parse().ok()
}

/// What a refusal of a system-wide (pid -1, one CPU) perf_event_open means, as the end of a
/// message: the uncore counters' and the precise samplers'.
pub(super) fn system_wide_hint(e: Errno) -> &'static str {
    match e {
        Errno::EACCES | Errno::EPERM => {
            ": system-wide events need CAP_PERFMON (or CAP_SYS_ADMIN), or \
             kernel.perf_event_paranoid <= 0"
        }
        Errno::ENOENT | Errno::EOPNOTSUPP | Errno::EINVAL => {
            ": the kernel's PMU refused the event (no such unit, a VM that hides it, or a \
             kernel without it)"
        }
        _ => "",
    }
}

/// Why a perf_event_open of an uncore counter failed, in words.
pub(super) fn open_error(a: &PlannedAttr, cpu: CpuId, e: Errno) -> String {
    let why = system_wide_hint(e);
    format!("perf_event_open of {} on {cpu}: {}{why}", a.id(), e.name())
}

/// The machine's PMUs and the attrs the plan gives for them: read once when the machine is
/// probed, for the memory-controller counters, the UPI counters and the precise samplers.
#[derive(Debug, Default)]
pub(super) struct MachinePmus {
    pub pmus: Vec<Pmu>,
    pub attrs: Vec<PlannedAttr>,
}

impl MachinePmus {
    /// The PMUs under the sysfs root and the plan for them and the CPU of `cpuinfo`'s text.
    pub(super) fn read(sysfs: &SysfsRoot, cpuinfo: Option<&str>) -> Self {
        let pmus = crate::pmu::detect(sysfs).unwrap_or_default();
        let cpu = cpuinfo.and_then(CpuIdent::from_cpuinfo);
        let attrs = attrs::plan(&pmus, cpu.as_ref()).attrs;
        Self { pmus, attrs }
    }

    /// The plan's system-wide (uncore) attrs of the signals `want` picks.
    pub(super) fn uncore(&self, want: impl Fn(Signal) -> bool) -> Vec<&PlannedAttr> {
        self.attrs
            .iter()
            .filter(|a| a.target == Target::Cpu && want(a.event.signal))
            .collect()
    }
}

/// The CPUs the `cpumask` of PMU unit `unit` names (one per socket for an uncore unit).
pub(super) fn unit_cpus(pmus: &[Pmu], unit: &str) -> Vec<CpuId> {
    pmus.iter()
        .find(|p| p.name == unit)
        .and_then(|p| p.cpus.clone())
        .unwrap_or_default()
}

impl Uncore {
    /// Opens the plan's memory-controller counters on this machine. `Err` says why there are
    /// none: not planned ([`McCounters::Absent`]), or one did not open (every one opened is
    /// closed again, and the traffic is estimated as without them).
    pub(super) fn open(
        sys: &mut dyn Sys,
        sysfs: &SysfsRoot,
        machine: &MachinePmus,
        topology: &Topology,
    ) -> Result<Self, McCounters> {
        let planned = machine.uncore(|s| matches!(s, Signal::McReads | Signal::McWrites));
        if planned.is_empty() {
            return Err(McCounters::Absent);
        }
        // The socket of each node with memory and CPUs, by its first CPU.
        let node_package: Vec<Option<u32>> = topology
            .nodes()
            .iter()
            .map(|n| {
                let first = n.cpus.first().filter(|_| n.mem_total_bytes > 0)?;
                package_of(sysfs, *first)
            })
            .collect();
        let mut uncore = Uncore {
            counters: Vec::new(),
            groups: Vec::new(),
            partial: None,
        };
        let mut problems = Vec::new();
        // Sockets a counter of which did not open, with why.
        let mut failed: std::collections::BTreeMap<u32, String> = Default::default();
        for a in planned {
            let cpus = unit_cpus(&machine.pmus, &a.unit);
            if cpus.is_empty() {
                problems.push(format!("{} has no cpumask", a.unit));
            }
            for cpu in cpus {
                let Some(package) = package_of(sysfs, cpu) else {
                    problems.push(format!(
                        "the socket of {cpu} (its physical_package_id) is unreadable, so which \
                         nodes {} serves there is unknown",
                        a.unit
                    ));
                    continue;
                };
                if failed.contains_key(&package) {
                    continue;
                }
                let fd = match sys.perf_open(&a.attr, Pid(-1), cpu.0 as i32) {
                    Ok(fd) => fd,
                    // No right to count system-wide: no counter will open.
                    Err(e) if e == Errno::EACCES || e == Errno::EPERM => {
                        uncore.close(sys);
                        return Err(McCounters::Failed(open_error(a, cpu, e)));
                    }
                    // One unit refused (busy, or hidden): its socket's total would lack a
                    // channel, so that socket is estimated and the others still counted.
                    Err(e) => {
                        failed.insert(package, open_error(a, cpu, e));
                        continue;
                    }
                };
                let group = uncore.group_of(package, &node_package);
                uncore.counters.push(Counter {
                    fd,
                    last: PerfReading::default(),
                    write: a.event.signal == Signal::McWrites,
                    group,
                });
            }
        }
        for (package, why) in &failed {
            uncore.drop_package(sys, *package);
            problems.push(format!("socket {package}: {why}: its nodes are estimated"));
        }
        if uncore.counters.is_empty() {
            return Err(McCounters::Failed(problems.join("; ")));
        }
        uncore.partial = uncore.coverage(topology, problems);
        Ok(uncore)
    }

    /// The group of a socket, made on first use with the socket's nodes.
    fn group_of(&mut self, package: u32, node_package: &[Option<u32>]) -> usize {
        if let Some(i) = self.groups.iter().position(|g| g.package == package) {
            return i;
        }
        let nodes = (0..node_package.len())
            .filter(|&i| node_package[i] == Some(package))
            .collect();
        self.groups.push(Group { package, nodes });
        self.groups.len() - 1
    }

    /// Why per-node traffic stays in part estimated (nodes with memory that no socket's
    /// counters cover, sockets of several nodes, problems met), or `None`.
    fn coverage(&self, topology: &Topology, mut problems: Vec<String>) -> Option<String> {
        let complete = |g: usize| {
            let has = |w: bool| self.counters.iter().any(|c| c.group == g && c.write == w);
            has(false) && has(true)
        };
        for (g, group) in self.groups.iter().enumerate() {
            if group.nodes.is_empty() {
                // Dropped (its reason is among the problems), or serving no node with memory.
                continue;
            }
            if !complete(g) {
                problems.push(format!(
                    "socket {} lacks a read or a write counter",
                    group.package
                ));
            } else if group.nodes.len() > 1 {
                let names: Vec<String> = group
                    .nodes
                    .iter()
                    .map(|&i| topology.nodes()[i].id.to_string())
                    .collect();
                problems.push(format!(
                    "socket {} holds {} (sub-NUMA clustering or NPS): which memory channel \
                     serves which node is not in sysfs, so the socket's counted traffic is \
                     shared among them by their sampled traffic",
                    group.package,
                    names.join(", ")
                ));
            }
        }
        let covered: Vec<usize> = (0..self.groups.len())
            .filter(|&g| complete(g))
            .flat_map(|g| self.groups[g].nodes.iter().copied())
            .collect();
        for (i, n) in topology.nodes().iter().enumerate() {
            if n.mem_total_bytes > 0 && !covered.contains(&i) {
                let what = if n.has_cpu() {
                    "no memory-controller counter covers it"
                } else {
                    "it has no CPUs (CXL or other memory behind no counted controller)"
                };
                problems.push(format!(
                    "{}: {what}; estimated from its samples, scaled by the lines counted per \
                     sample elsewhere",
                    n.id
                ));
            }
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }

    /// Closes the counters of one socket, whose nodes are then estimated (a group without
    /// counters covers nothing).
    fn drop_package(&mut self, sys: &mut dyn Sys, package: u32) {
        let Some(g) = self.groups.iter().position(|g| g.package == package) else {
            return;
        };
        self.counters.retain(|c| {
            if c.group == g {
                sys.perf_close(c.fd);
            }
            c.group != g
        });
        self.groups[g].nodes.clear();
    }

    fn close(&mut self, sys: &mut dyn Sys) {
        for c in self.counters.drain(..) {
            sys.perf_close(c.fd);
        }
    }

    /// The lines each node's controllers read and wrote since the last read, scaled for
    /// multiplexing; `None` for a node whose socket's counters could not all be read (it is
    /// estimated this epoch), and for nodes no counter covers. A socket's count is shared
    /// among its nodes by `sampled` (each node's sampled accesses).
    pub(super) fn read(&mut self, sys: &mut dyn Sys, sampled: &[u64]) -> Measured {
        let mut totals: Vec<Option<[u64; 2]>> = vec![Some([0, 0]); self.groups.len()];
        for c in &mut self.counters {
            let Ok(now) = sys.perf_read(c.fd) else {
                totals[c.group] = None;
                continue;
            };
            let lines = now.scaled_since(&c.last).saturating_mul(BYTES_PER_CAS) / LINE_BYTES;
            c.last = now;
            if let Some(t) = &mut totals[c.group] {
                t[usize::from(c.write)] += lines;
            }
        }
        let mut out: Measured = vec![None; sampled.len()];
        for (group, total) in self.groups.iter().zip(totals) {
            let Some([reads, writes]) = total else {
                continue;
            };
            let weights: Vec<u64> = group.nodes.iter().map(|&i| sampled[i]).collect();
            let reads = split(reads, &weights);
            let writes = split(writes, &weights);
            for (k, &i) in group.nodes.iter().enumerate() {
                out[i] = Some([reads[k], writes[k]]);
            }
        }
        out
    }
}

/// `total` split in proportion to `weights` (evenly when they are all 0), summing to `total`
/// exactly: the remainder of the rounding down goes to the largest weight.
pub(super) fn split(total: u64, weights: &[u64]) -> Vec<u64> {
    if weights.is_empty() {
        return Vec::new();
    }
    let even = vec![1; weights.len()];
    let weights = if weights.iter().all(|&w| w == 0) {
        &even
    } else {
        weights
    };
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    let mut out: Vec<u64> = weights
        .iter()
        .map(|&w| u64::try_from(u128::from(total) * u128::from(w) / sum).unwrap_or(u64::MAX))
        .collect();
    let rest = total.saturating_sub(out.iter().sum());
    let largest = (0..weights.len()).max_by_key(|&i| (weights[i], std::cmp::Reverse(i)));
    if let Some(i) = largest {
        out[i] += rest;
    }
    out
}

/// Puts the measured traffic into the epoch's node counters, tallied from the samples
/// (`dram_accesses_by_source` holds each node's samples by source node): a measured node's
/// reads and writes are its counts, and their sum is split by source node in the proportions
/// of its samples (else of all the samples, else evenly over the nodes with CPUs); a node
/// without a measure keeps its samples, scaled by the lines counted per sample on the measured
/// nodes (1 when those have no samples), as reads.
pub(super) fn apply(nodes: &mut [NodeCounters], measured: &Measured, cpu_nodes: &[bool]) {
    let sampled: Vec<u64> = nodes.iter().map(NodeCounters::dram_accesses).collect();
    let mut all = vec![0u64; nodes.len()];
    for n in nodes.iter() {
        for (s, v) in n.dram_accesses_by_source.iter().enumerate() {
            if let Some(a) = all.get_mut(s) {
                *a += v;
            }
        }
    }
    let (lines, samples) = measured
        .iter()
        .zip(&sampled)
        .filter_map(|(m, &s)| m.map(|[r, w]| (r + w, s)))
        .fold((0u64, 0u64), |(l, s), (ml, ms)| (l + ml, s + ms));
    let per_sample = if samples > 0 {
        lines as f64 / samples as f64
    } else {
        1.0
    };
    let fallback: Vec<u64> = cpu_nodes.iter().map(|&c| u64::from(c)).collect();
    for (i, n) in nodes.iter_mut().enumerate() {
        let [reads, writes] = measured
            .get(i)
            .copied()
            .flatten()
            .unwrap_or([(sampled[i] as f64 * per_sample).round() as u64, 0]);
        let weights = [&n.dram_accesses_by_source, &all]
            .into_iter()
            .find(|w| w.len() == fallback.len() && w.iter().any(|&v| v > 0))
            .unwrap_or(&fallback)
            .clone();
        n.dram_accesses_by_source = split(reads + writes, &weights);
        n.dram_reads = reads;
        n.dram_writes = writes;
    }
}

impl<S: Sys> super::LinuxMachine<S> {
    /// The machine's PMUs and their plan (its CPU from /proc/cpuinfo).
    pub(super) fn machine_pmus(&self) -> MachinePmus {
        let cpuinfo = rondpoint_safeio::read_system_text(&self.proc.root().join("cpuinfo")).ok();
        MachinePmus::read(&self.sysfs, cpuinfo.as_deref())
    }

    /// Opens the memory-controller counters, if the machine has them (once, with the probe).
    pub(super) fn open_uncore(&mut self, machine: &MachinePmus) -> McCounters {
        match Uncore::open(&mut self.sys, &self.sysfs, machine, &self.topology) {
            Ok(u) => {
                let partial = u.partial.clone();
                self.uncore = Some(u);
                McCounters::Opened { partial }
            }
            Err(why) => why,
        }
    }

    /// Puts the epoch's counted memory-controller traffic into `nodes` (tallied from the
    /// samples), and says whether every node with memory was counted this epoch and how the
    /// node traffic was had; `None` without counters (the nodes keep the samples' estimate).
    pub(super) fn measure_node_traffic(
        &mut self,
        nodes: &mut [NodeCounters],
    ) -> Option<(bool, String)> {
        let uncore = self.uncore.as_mut()?;
        let sampled: Vec<u64> = nodes.iter().map(NodeCounters::dram_accesses).collect();
        let measured = uncore.read(&mut self.sys, &sampled);
        let cpu_nodes: Vec<bool> = self.topology.nodes().iter().map(|n| n.has_cpu()).collect();
        apply(nodes, &measured, &cpu_nodes);
        let mut how = format!(
            "DRAM traffic per node: read and write CAS commands counted by the memory \
             controllers' uncore counters ({BYTES_PER_CAS} bytes each, every process of the \
             machine)"
        );
        if let Some(partial) = &uncore.partial {
            how.push_str("; ");
            how.push_str(partial);
        }
        let unread: Vec<String> = self
            .topology
            .nodes()
            .iter()
            .zip(&measured)
            .filter(|(n, m)| m.is_none() && n.mem_total_bytes > 0 && n.has_cpu())
            .map(|(n, _)| n.id.to_string())
            .collect();
        if !unread.is_empty() && uncore.partial.is_none() {
            how.push_str(&format!(
                "; this epoch {} estimated from samples (a counter read failed)",
                unread.join(", ")
            ));
        }
        Some((uncore.partial.is_none() && unread.is_empty(), how))
    }
}

#[cfg(test)]
mod tests;
