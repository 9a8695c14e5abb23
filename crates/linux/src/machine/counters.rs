//! The counters an epoch reports: estimated from the samples and CPU time where the machine
//! has no hardware counters to read, and the memory of each node.

use super::LinuxMachine;
use super::hwcounters::{Counted, Counts};
use crate::procfs::ThreadSnapshot;
use crate::sys::Sys;
use rondpoint_model::{
    AccessKind, CounterGroup, Counters, Estimate, NodeCounters, NodeId, NodeMemory, Pid, Sample,
    ThreadCounters, Tid,
};
use std::collections::BTreeMap;

/// The counters estimated without hardware counters, and how.
const ESTIMATED: [(CounterGroup, &str); 4] = [
    (
        CounterGroup::NodeDram,
        "DRAM traffic per node: sampled accesses, by page node and CPU node",
    ),
    (
        CounterGroup::NodeDramBySource,
        "DRAM traffic per node by source node: sampled accesses, by page node and CPU node",
    ),
    (
        CounterGroup::ThreadDram,
        "DRAM accesses per thread: sampled accesses",
    ),
    (CounterGroup::Cycles, "cycles: CPU time x nominal clock"),
];

/// How the threads' DRAM writes are had when their DRAM loads are counted.
const DRAM_WRITES: (CounterGroup, &str) = (
    CounterGroup::ThreadDramWrites,
    "DRAM writes per thread: its counted DRAM loads times the share of writes in its samples \
     (the core PMU counts loads)",
);

/// A thread's samples of an epoch: all of them, and the writes.
#[derive(Clone, Copy, Debug, Default)]
struct Sampled {
    all: u64,
    writes: u64,
}

impl Sampled {
    /// The writes among `accesses`, in the samples' proportion (none without samples).
    fn writes_among(self, accesses: u64) -> u64 {
        if self.all == 0 {
            return 0;
        }
        (u128::from(accesses) * u128::from(self.writes.min(self.all)) / u128::from(self.all)) as u64
    }
}

/// How the split by source is had when the memory controllers count the totals.
const SPLIT_BY_SOURCE: &str = "DRAM traffic per node by source node: the counted totals split \
                               in the proportions of the sampled accesses (memory controllers \
                               count totals only)";

/// What the live backend does not measure at all: instructions and LLC misses without hardware
/// counters (capability thread-counters, and a policy that asks for them), interconnect
/// traffic without UPI link counters (machine/links.rs).
const MISSING: [(CounterGroup, &str); 3] = [
    (CounterGroup::Instructions, "instructions"),
    (CounterGroup::LlcMisses, "LLC misses"),
    (CounterGroup::Links, "interconnect traffic"),
];

impl<S: Sys> LinuxMachine<S> {
    /// Each node's memory now, from its meminfo; a node whose meminfo cannot be read keeps
    /// what discovery found.
    pub(super) fn node_memory(&self) -> Vec<NodeMemory> {
        self.topology
            .nodes()
            .iter()
            .map(|n| {
                let (total, free) = match self.sysfs.node_meminfo(n.id) {
                    Ok(m) => (m.total_bytes, m.free_bytes),
                    Err(_) => (n.mem_total_bytes, n.mem_free_bytes),
                };
                NodeMemory {
                    node: n.id,
                    total_bytes: total,
                    free_bytes: free.min(total),
                }
            })
            .collect()
    }

    /// Forgets the CPU time of threads that are gone: a daemon over short-lived threads would
    /// otherwise keep an entry for every thread it ever saw.
    fn forget_gone_threads(&mut self, threads_of: &[(Pid, Vec<ThreadSnapshot>)]) {
        let alive: std::collections::HashSet<(Pid, Tid)> = threads_of
            .iter()
            .flat_map(|(pid, list)| list.iter().map(move |t| (*pid, t.tid)))
            .collect();
        self.cpu_ticks.retain(|key, _| alive.contains(key));
    }

    /// The samples tallied: DRAM accesses per node by the node they came from, and samples per
    /// thread (all of them, and the writes).
    fn tally(&self, samples: &[Sample]) -> (Vec<NodeCounters>, BTreeMap<(Pid, Tid), Sampled>) {
        let n = self.topology.len();
        let mut nodes: Vec<NodeCounters> = self
            .topology
            .nodes()
            .iter()
            .map(|x| NodeCounters {
                node: x.id,
                dram_accesses_by_source: vec![0; n],
                ..NodeCounters::default()
            })
            .collect();
        let mut per_thread: BTreeMap<(Pid, Tid), Sampled> = BTreeMap::new();
        for s in samples {
            if let (Some(h), Some(src)) = (
                s.home_node.and_then(|h| self.topology.index_of(h)),
                self.topology.index_of(s.node),
            ) {
                nodes[h].dram_accesses_by_source[src] += 1;
                nodes[h].dram_reads += 1;
            }
            let t = per_thread.entry((s.pid, s.tid)).or_default();
            t.all += 1;
            t.writes += u64::from(s.kind == AccessKind::Write);
        }
        (nodes, per_thread)
    }

    /// The epoch's counters, estimated: DRAM traffic from its samples, cycles from each
    /// thread's CPU time since the last epoch.
    pub(super) fn counters(
        &mut self,
        samples: &[Sample],
        threads_of: &[(Pid, Vec<ThreadSnapshot>)],
        duration_ns: u64,
    ) -> Counters {
        let (mut nodes, per_thread) = self.tally(samples);
        let counted_traffic = self.measure_node_traffic(&mut nodes);
        let links = self.measure_links();
        let (hw, counted) = self.read_counters();
        self.forget_gone_threads(threads_of);
        let threads = self.thread_counters(threads_of, &per_thread, &hw, &counted);
        for t in &threads {
            if let Some(i) = self.topology.index_of(t.node) {
                nodes[i].cycles += t.cycles;
            }
        }
        // With every managed process counted by hardware, cycles, instructions and LLC misses
        // are measured; otherwise they are estimated (cycles) or missing.
        let all = |pids: &[Pid]| {
            !self.managed.is_empty() && self.managed.iter().all(|p| pids.contains(p))
        };
        let all_counted = all(&counted.pids);
        // With every managed process's DRAM loads counted by the core PMU, the threads' DRAM
        // accesses are measured, and only their writes estimated.
        let dram_counted = all(&counted.dram);
        // With memory-controller counters, the node traffic is counted (on every node, or in
        // part, which the words say) and only its split by source node estimated.
        let estimated: Vec<(CounterGroup, &str)> = ESTIMATED
            .iter()
            .filter(|(g, _)| !(all_counted && *g == CounterGroup::Cycles))
            .filter(|(g, _)| !(dram_counted && *g == CounterGroup::ThreadDram))
            .chain(dram_counted.then_some(&DRAM_WRITES))
            .filter_map(|&(g, how)| match (&counted_traffic, g) {
                (Some((true, _)), CounterGroup::NodeDram) => None,
                (Some((false, counted)), CounterGroup::NodeDram) => Some((g, counted.as_str())),
                (Some(_), CounterGroup::NodeDramBySource) => Some((g, SPLIT_BY_SOURCE)),
                _ => Some((g, how)),
            })
            .collect();
        let missing: Vec<(CounterGroup, &str)> = MISSING
            .iter()
            .filter(|(g, _)| {
                let counted_by_hw = all_counted
                    && matches!(g, CounterGroup::Instructions | CounterGroup::LlcMisses);
                let counted_links = *g == CounterGroup::Links && !links.is_empty();
                !counted_by_hw && !counted_links
            })
            .copied()
            .collect();
        self.signals.estimated = estimated.iter().map(|(_, how)| how.to_string()).collect();
        self.signals.missing = missing.iter().map(|(_, what)| what.to_string()).collect();
        Counters {
            duration_ns,
            nodes,
            threads,
            links,
            estimated: estimated
                .iter()
                .map(|&(group, how)| Estimate {
                    group,
                    how: how.to_string(),
                })
                .collect(),
            missing: missing.iter().map(|&(group, _)| group).collect(),
        }
    }

    /// Each thread's counters: counted where its process has hardware counters (DRAM loads
    /// too where those are counted), else estimated (cycles from CPU time, DRAM accesses from
    /// samples).
    fn thread_counters(
        &mut self,
        threads_of: &[(Pid, Vec<ThreadSnapshot>)],
        per_thread: &BTreeMap<(Pid, Tid), Sampled>,
        hw: &BTreeMap<(Pid, Tid), Counts>,
        counted: &Counted,
    ) -> Vec<ThreadCounters> {
        let mut threads = Vec::new();
        let ticks_ns = 1e9 / 100.0; // USER_HZ is 100 on Linux
        for (pid, list) in threads_of {
            let pid = *pid;
            for t in list {
                let before = self
                    .cpu_ticks
                    .insert((pid, t.tid), t.cpu_ticks)
                    .unwrap_or(0);
                let busy_ns = t.cpu_ticks.saturating_sub(before) as f64 * ticks_ns;
                let node = t
                    .cpu
                    .and_then(|c| self.topology.node_of_cpu(c))
                    .unwrap_or(NodeId(0));
                let sampled = per_thread.get(&(pid, t.tid)).copied().unwrap_or_default();
                // Counted where the process has hardware counters (a thread created after
                // they opened counts with its creator, and reads 0 here); estimated from CPU
                // time where it has none.
                let hw_counts = counted
                    .pids
                    .contains(&pid)
                    .then(|| hw.get(&(pid, t.tid)).copied().unwrap_or_default());
                let (dram_accesses, dram_writes) = match hw_counts {
                    Some(c) if counted.dram.contains(&pid) => {
                        let loads = c.dram_local.saturating_add(c.dram_remote);
                        (loads, sampled.writes_among(loads))
                    }
                    _ => (sampled.all, sampled.writes),
                };
                threads.push(ThreadCounters {
                    pid,
                    tid: t.tid,
                    node,
                    instructions: hw_counts.map_or(0, |c| c.instructions),
                    cycles: hw_counts
                        .map_or((busy_ns * self.config.nominal_ghz) as u64, |c| c.cycles),
                    llc_misses: hw_counts.map_or(0, |c| c.llc_misses),
                    dram_accesses,
                    dram_writes,
                });
            }
        }
        threads
    }

    /// Local share of the samples whose page node is known.
    pub(super) fn lar(samples: &[Sample]) -> Option<f64> {
        let (known, local) = samples
            .iter()
            .filter_map(|s| s.home_node.map(|h| h == s.node))
            .fold((0u64, 0u64), |(k, l), is_local| {
                (k + 1, l + u64::from(is_local))
            });
        (known > 0).then(|| local as f64 / known as f64)
    }
}
