//! Linux automatic NUMA balancing (`kernel.numa_balancing=1`, "AutoNUMA"), the Linux baseline
//! of \[Dashti13\] (sections 4-5) and \[Choe21\] (sections 2.3, 5).
//! It sees only NUMA hinting faults ([`SampleSource::HintingFault`]): every scan period the
//! backend revokes access to the next `scan_size_mb` of each process, and the next touch of a
//! revoked page reports which node touched it. Each epoch, after kernel/sched/fair.c:
//! - **Memory follows tasks** (`should_numa_migrate_memory`, the `last_cpupid` two-stage
//!   filter): a page migrates to the faulting node when two consecutive hinting faults on it
//!   come from that node and it is not there already, and its mapping has no explicit memory
//!   policy (`mpol_misplaced` leaves pages under mbind/set_mempolicy policies where they are,
//!   unless MPOL_F_NUMA_BALANCING allows the faulting node: see
//!   [`rondpoint_model::MappingPolicy`]); adjacent pages going to one node form one
//!   range. No migration to a node whose free memory (minus this epoch's earlier migrations)
//!   cannot take the page: Linux's `migrate_balanced_pgdat`, and 004's "AutoNUMA does not move
//!   pages on the fully allocated node".
//! - **Tasks follow memory** (`task_numa_placement`, `task_numa_migrate`): a thread's faults
//!   are counted by the node holding the page after this epoch's migrations (Linux counts a
//!   migrating fault at the destination, so threads do not chase pages coming to them), and
//!   decayed each epoch; its preferred node is the CPU node with most faults. A thread away
//!   from a preferred node holding enough of its faults is pinned to an idle CPU there, or
//!   swapped with a thread of that node that prefers the first thread's node.
//! - **Adaptive scan period** (`update_task_scan_period`): once a period has passed since the
//!   last change (by epoch start times), the period doubles if at least 70% of the faults
//!   since were local (or there were none) and halves otherwise, within [min, max]; it drops to
//!   the minimum when a thread moves, as `task_numa_migrate` does for the moved task.
//!
//! Simplifications: one scan period for the whole machine, because a [`SamplingRequest`]
//! carries one [`HintingScan`] (Linux keeps one per task, and moves it in tenths,
//! `NUMA_PERIOD_SLOTS`, weighted by the private/shared fault ratio). The filter compares nodes
//! only; Linux also lets through the first fault on a page with no recorded accessor and
//! private faults early in a task's life, while here the first fault seen only records. No
//! numa_group, no load weighing in task moves (a share threshold stands in for `task_weight`
//! comparisons), no retry timers.

use crate::{Policy, PolicyError};
use rondpoint_model::bounds::MAX_CPUS;
use rondpoint_model::{
    Action, Capability, CpuId, HintingScan, Need, NodeId, Observation, PageRange, PageSize, Pid,
    ProcessInfo, SampleSource, SamplingRequest, ThreadInfo, Tid, Topology,
};
use rondpoint_policy_api::bounds::{Bounds, FRACTION, ParamBounds, TRACKED_PAGES, check_config};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `[autonuma]` parameters. Out-of-range values are clamped when the policy is built.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutoNumaConfig {
    /// Address space made inaccessible per scan period (MiB). Default 256: Linux
    /// `sysctl_numa_balancing_scan_size` in kernel/sched/fair.c, the `scan_size_mb` knob
    /// (`kernel.numa_balancing_scan_size_mb` in Documentation/admin-guide/sysctl/kernel.rst
    /// until Linux 5.13, then /sys/kernel/debug/sched/numa_balancing/, sched-debug.rst).
    pub scan_size_mb: u64,
    /// Shortest scan period, and the starting one (ms). Default 1000: Linux
    /// `numa_balancing_scan_period_min_ms` (`sysctl_numa_balancing_scan_period_min`).
    pub scan_period_min_ms: u64,
    /// Longest scan period (ms). Default 60000: Linux `numa_balancing_scan_period_max_ms`.
    pub scan_period_max_ms: u64,
    /// Share of hinting faults that must be local (page already on the faulting node) for the
    /// scan to slow down (0 to 1). Default 0.7: `NUMA_PERIOD_THRESHOLD` / `NUMA_PERIOD_SLOTS`
    /// = 7/10 in kernel/sched/fair.c ("Aim for 70% local accesses").
    pub local_fault_ratio_to_slow_down: f64,
    /// Factor applied to each thread's fault counts every epoch (0 to 1). Default 0.5:
    /// `task_numa_placement` halves `numa_faults` each scan ("Decay existing window").
    pub fault_decay: f64,
    /// Share of a thread's (decayed) faults its preferred node must hold before the thread is
    /// moved there (0 to 1). Default 0.6: chosen, a hysteresis standing in for Linux's
    /// `task_weight` comparison in `task_numa_migrate`.
    pub preferred_node_min_share: f64,
    /// Thread moves per epoch (a swap counts as one move); 0 disables task placement.
    /// Default 4: chosen (Linux rate-limits per task with `numa_migrate_retry`).
    pub max_task_moves_per_epoch: usize,
    /// Pages whose last faulting node is remembered (Linux keeps it in `struct page`, so for
    /// every page). Default 1 << 20 (4 GiB of 4 KiB pages, a few tens of MiB): chosen.
    /// Kept as two generations of half this size; when the newer fills up the older is
    /// dropped, so the pages not faulted for longest are forgotten first.
    pub max_tracked_pages: usize,
}

impl Default for AutoNumaConfig {
    fn default() -> Self {
        Self {
            scan_size_mb: 256,
            scan_period_min_ms: 1000,
            scan_period_max_ms: 60_000,
            local_fault_ratio_to_slow_down: 0.7,
            fault_decay: 0.5,
            preferred_node_min_share: 0.6,
            max_task_moves_per_epoch: 4,
            max_tracked_pages: 1 << 20,
        }
    }
}

/// A page: process, start address, size.
type PageKey = (Pid, u64, PageSize);

/// The AutoNUMA-like policy and its state across epochs.
#[derive(Clone, Debug)]
pub struct AutoNuma {
    config: AutoNumaConfig,
    period_ms: u64,
    /// Start of the epoch at which the period last changed.
    last_adapt_ns: Option<u64>,
    /// Hinting faults since the last period change: page local to the faulting node or not.
    local_faults: u64,
    remote_faults: u64,
    /// Last node that faulted on each page: newer and older generation.
    last_node: FxHashMap<PageKey, NodeId>,
    older_last_node: FxHashMap<PageKey, NodeId>,
    /// Decayed hinting faults of each thread by node holding the page (dense node index).
    thread_faults: BTreeMap<(Pid, Tid), Vec<f64>>,
}

impl AutoNuma {
    /// AutoNUMA with these parameters: each in its range ([`BOUNDS`]), and the scan period's
    /// least no more than its most.
    pub fn new(config: AutoNumaConfig) -> Result<Self, PolicyError> {
        check_config("autonuma", BOUNDS, &config)?;
        if config.scan_period_min_ms > config.scan_period_max_ms {
            return Err(PolicyError::Config {
                policy: "autonuma".into(),
                message: format!(
                    "scan_period_min_ms ({}) is above scan_period_max_ms ({})",
                    config.scan_period_min_ms, config.scan_period_max_ms
                ),
            });
        }
        Ok(Self::checked(config))
    }

    /// Linux's automatic NUMA balancing at its defaults.
    pub(crate) fn linux_defaults() -> Self {
        Self::checked(AutoNumaConfig::default())
    }

    fn checked(c: AutoNumaConfig) -> Self {
        Self {
            period_ms: c.scan_period_min_ms,
            config: c,
            last_adapt_ns: None,
            local_faults: 0,
            remote_faults: 0,
            last_node: FxHashMap::default(),
            older_last_node: FxHashMap::default(),
            thread_faults: BTreeMap::new(),
        }
    }

    /// The current hinting-scan period (ms).
    #[cfg(test)]
    pub(crate) fn scan_period_ms(&self) -> u64 {
        self.period_ms
    }

    /// Pages whose last faulting node is remembered.
    pub fn tracked_pages(&self) -> usize {
        self.last_node.len() + self.older_last_node.len()
    }

    /// Records `node` as the page's last faulting node and returns the previous one.
    fn swap_last_node(&mut self, key: PageKey, node: NodeId) -> Option<NodeId> {
        let prev = match self.last_node.insert(key, node) {
            Some(p) => Some(p),
            None => self.older_last_node.remove(&key),
        };
        if self.last_node.len() >= self.config.max_tracked_pages / 2 {
            self.older_last_node = std::mem::take(&mut self.last_node);
        }
        prev
    }

    /// A thread's preferred node (the CPU node with most faults) and that node's share.
    fn preferred(&self, key: (Pid, Tid), topology: &Topology) -> Option<(NodeId, f64)> {
        let f = self.thread_faults.get(&key)?;
        let total: f64 = f.iter().sum();
        let mut best: Option<(NodeId, f64)> = None;
        for (i, node) in topology.nodes().iter().enumerate() {
            let x = f.get(i).copied().unwrap_or(0.0);
            if node.has_cpu() && x > 0.0 && best.is_none_or(|b| x > b.1) {
                best = Some((node.id, x));
            }
        }
        best.map(|(n, x)| (n, x / total))
    }

    /// Doubles or halves the scan period once a period has passed since the last change.
    fn adapt_period(&mut self, now_ns: u64) {
        let period_ns = self.period_ms.saturating_mul(1_000_000);
        if self
            .last_adapt_ns
            .is_some_and(|t| now_ns.saturating_sub(t) < period_ns)
        {
            return;
        }
        let total = self.local_faults + self.remote_faults;
        let local_enough =
            self.local_faults as f64 >= self.config.local_fault_ratio_to_slow_down * total as f64;
        self.period_ms = if total == 0 || local_enough {
            self.period_ms
                .saturating_mul(2)
                .min(self.config.scan_period_max_ms)
        } else {
            (self.period_ms / 2).max(self.config.scan_period_min_ms)
        };
        self.local_faults = 0;
        self.remote_faults = 0;
        self.last_adapt_ns = Some(now_ns);
    }

    /// Moves threads toward their preferred nodes; returns the number of moves.
    fn place_tasks(
        &self,
        topology: &Topology,
        threads: &[(Pid, &ThreadInfo)],
        actions: &mut Vec<Action>,
    ) -> usize {
        let min_share = self.config.preferred_node_min_share;
        let mut used: BTreeSet<CpuId> = threads.iter().map(|t| t.1.cpu).collect();
        let mut candidates: Vec<(f64, Pid, &ThreadInfo, NodeId)> = threads
            .iter()
            .filter_map(|&(pid, t)| {
                let (pref, share) = self.preferred((pid, t.tid), topology)?;
                (pref != t.node && share >= min_share).then_some((share, pid, t, pref))
            })
            .collect();
        candidates.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then((a.1, a.2.tid).cmp(&(b.1, b.2.tid)))
        });
        let mut moved: BTreeSet<(Pid, Tid)> = BTreeSet::new();
        let mut moves = 0;
        for (_, pid, t, pref) in candidates {
            if moves >= self.config.max_task_moves_per_epoch {
                break;
            }
            if moved.contains(&(pid, t.tid)) {
                continue;
            }
            let pin = |pid, tid, cpu| Action::PinThread {
                pid,
                tid,
                cpus: vec![cpu],
            };
            let idle = topology
                .node(pref)
                .and_then(|n| n.cpus.iter().copied().find(|c| !used.contains(c)));
            if let Some(cpu) = idle {
                used.insert(cpu);
                actions.push(pin(pid, t.tid, cpu));
            } else if let Some(&(ppid, p)) = threads.iter().find(|&&(ppid, p)| {
                p.node == pref
                    && !moved.contains(&(ppid, p.tid))
                    && self.preferred((ppid, p.tid), topology).map(|x| x.0) == Some(t.node)
            }) {
                actions.push(pin(pid, t.tid, p.cpu));
                actions.push(pin(ppid, p.tid, t.cpu));
                moved.insert((ppid, p.tid));
            } else {
                continue;
            }
            moved.insert((pid, t.tid));
            moves += 1;
        }
        moves
    }
}

/// One `MigratePages` per run of adjacent pages going to the same node, in a stable order.
fn migrations(planned: FxHashMap<PageKey, (Option<NodeId>, NodeId)>) -> Vec<Action> {
    let mut pages: Vec<(Pid, PageSize, NodeId, u64)> = planned
        .into_iter()
        .filter(|(_, (from, to))| *from != Some(*to))
        .map(|((pid, start, size), (_, to))| (pid, size, to, start))
        .collect();
    pages.sort_unstable();
    let mut out: Vec<Action> = Vec::new();
    for (pid, size, to, start) in pages {
        if let Some(Action::MigratePages { range, to: t }) = out.last_mut() {
            if range.pid == pid && range.page_size == size && *t == to && range.end() == start {
                range.count += 1;
                continue;
            }
        }
        out.push(Action::MigratePages {
            range: PageRange::page_of(pid, start, size),
            to,
        });
    }
    out
}

impl Policy for AutoNuma {
    fn name(&self) -> &str {
        "autonuma"
    }

    fn needs(&self) -> Vec<Need> {
        vec![
            Need::one(
                Capability::FaultSamples,
                "to see which node touches which page, from hinting faults",
            ),
            Need::one(
                Capability::MigratePages,
                "to move pages to the faulting node",
            ),
            Need::one(Capability::PinThreads, "to move tasks toward their memory"),
        ]
    }

    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        let n = topology.len();
        let decay = self.config.fault_decay;
        self.thread_faults
            .values_mut()
            .flatten()
            .for_each(|x| *x *= decay);
        let mut free: Vec<Option<u64>> = vec![None; n];
        for m in &observation.memory {
            if let Some(i) = topology.index_of(m.node) {
                free[i] = Some(m.free_bytes);
            }
        }
        // Page -> (node it was on, node it goes to) for this epoch's migrations.
        let mut planned: FxHashMap<PageKey, (Option<NodeId>, NodeId)> = FxHashMap::default();
        let processes: FxHashMap<Pid, &ProcessInfo> =
            observation.processes.iter().map(|p| (p.pid, p)).collect();
        for s in &observation.samples {
            let Some(ni) = topology.index_of(s.node) else {
                continue;
            };
            if s.source != SampleSource::HintingFault {
                continue;
            }
            let key = (s.pid, s.page(), s.page_size);
            let home = planned.get(&key).map_or(s.home_node, |p| Some(p.1));
            match home {
                Some(h) if h == s.node => self.local_faults += 1,
                Some(_) => self.remote_faults += 1,
                None => {}
            }
            let mut now_home = home;
            // An explicit memory policy keeps the page where it is (`mpol_misplaced`), unless
            // it was set with MPOL_F_NUMA_BALANCING and the faulting node is one of its nodes.
            let movable = processes
                .get(&s.pid)
                .and_then(|p| p.policy_at(s.addr))
                .is_none_or(|m| m.allows_fault_migration_to(s.node));
            if movable && self.swap_last_node(key, s.node) == Some(s.node) && home != Some(s.node) {
                let bytes = s.page_size.bytes();
                if free[ni].is_none_or(|f| f >= bytes) {
                    if let Some(f) = free[ni].as_mut() {
                        *f -= bytes;
                    }
                    let from = planned.get(&key).map_or(s.home_node, |p| p.0);
                    planned.insert(key, (from, s.node));
                    now_home = Some(s.node);
                }
            }
            if let Some(hi) = now_home.and_then(|h| topology.index_of(h)) {
                let f = self.thread_faults.entry((s.pid, s.tid)).or_default();
                f.resize(n, 0.0);
                f[hi] += 1.0;
            }
        }
        let mut actions = migrations(planned);
        self.adapt_period(observation.start_ns);
        let mut threads: Vec<(Pid, &ThreadInfo)> = observation
            .processes
            .iter()
            .flat_map(|p| p.threads.iter().map(move |t| (p.pid, t)))
            .collect();
        threads.sort_by_key(|t| (t.0, t.1.tid));
        if self.place_tasks(topology, &threads, &mut actions) > 0 {
            self.period_ms = self.config.scan_period_min_ms;
        }
        let live: BTreeSet<(Pid, Tid)> = threads.iter().map(|t| (t.0, t.1.tid)).collect();
        self.thread_faults
            .retain(|k, f| live.contains(k) && f.iter().sum::<f64>() > 1e-6);
        actions
    }

    fn sampling(&self) -> SamplingRequest {
        SamplingRequest {
            hinting: Some(HintingScan {
                scan_bytes: self.config.scan_size_mb.saturating_mul(1 << 20),
                period_ms: self.period_ms,
            }),
            ..SamplingRequest::NONE
        }
    }
}

/// The range of each parameter ([`AutoNumaConfig`]).
pub const BOUNDS: &[ParamBounds] = &[
    ("scan_size_mb", Bounds::new(1.0, 1_048_576.0, "MiB")),
    // Under 10 ms a scan would start many times an epoch (and did loop forever at 0).
    ("scan_period_min_ms", Bounds::new(10.0, 3_600_000.0, "ms")),
    ("scan_period_max_ms", Bounds::new(10.0, 3_600_000.0, "ms")),
    ("local_fault_ratio_to_slow_down", FRACTION),
    ("fault_decay", FRACTION),
    ("preferred_node_min_share", FRACTION),
    (
        "max_task_moves_per_epoch",
        Bounds::new(0.0, MAX_CPUS as f64, "moves"),
    ),
    ("max_tracked_pages", TRACKED_PAGES),
];

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::synthetic::TopologyBuilder;
    use rondpoint_model::{AccessKind, NodeMemory, ProcessInfo, Sample};

    const P: Pid = Pid(1);

    /// 4 nodes of 2 CPUs: node k has CPUs 2k and 2k+1.
    fn topo() -> Topology {
        TopologyBuilder::new(4).cores_per_llc(2).build().unwrap()
    }

    fn fault(tid: i32, node: u16, addr: u64, home: u16) -> Sample {
        Sample {
            pid: P,
            tid: Tid(tid),
            cpu: CpuId(u32::from(node) * 2),
            node: NodeId(node),
            addr,
            page_size: PageSize::Base4K,
            kind: AccessKind::Read,
            source: SampleSource::HintingFault,
            latency_cycles: None,
            dram: None,
            home_node: Some(NodeId(home)),
        }
    }

    fn obs(start_s: u64, samples: Vec<Sample>) -> Observation {
        Observation {
            start_ns: start_s * 1_000_000_000,
            samples,
            ..Observation::default()
        }
    }

    fn migrate(addr: u64, count: u64, to: u16) -> Action {
        let range = PageRange::new(P, addr, count, PageSize::Base4K).unwrap();
        Action::MigratePages {
            range,
            to: NodeId(to),
        }
    }

    fn pin(tid: i32, cpu: u32) -> Action {
        Action::PinThread {
            pid: P,
            tid: Tid(tid),
            cpus: vec![CpuId(cpu)],
        }
    }

    /// One process whose threads `(tid, cpu)` run where given.
    fn with_threads(mut o: Observation, threads: &[(i32, u32)]) -> Observation {
        let threads = threads
            .iter()
            .map(|&(tid, cpu)| ThreadInfo {
                tid: Tid(tid),
                cpu: CpuId(cpu),
                node: NodeId((cpu / 2) as u16),
                allowed_cpus: (0..8).map(CpuId).collect(),
            })
            .collect();
        o.processes = vec![ProcessInfo {
            pid: P,
            comm: "app".into(),
            threads,
            resident_bytes_by_node: vec![],
            mapping_policies: Vec::new(),
        }];
        o
    }

    #[test]
    fn two_stage_filter() {
        let t = topo();
        let mut a = AutoNuma::linux_defaults();
        // First fault from node 1: recorded only.
        assert_eq!(a.decide(&t, &obs(0, vec![fault(1, 1, 0x1234, 0)])), vec![]);
        // Second consecutive fault from node 1, next epoch: the page moves to node 1.
        assert_eq!(
            a.decide(&t, &obs(1, vec![fault(1, 1, 0x1000, 0)])),
            vec![migrate(0x1000, 1, 1)]
        );
        // Faults alternating between nodes: nothing.
        let alternating = [0, 2, 0, 2].map(|n| fault(1, n, 0x8000, 1)).to_vec();
        assert_eq!(a.decide(&t, &obs(2, alternating)), vec![]);
        // Page already on the faulting node: nothing.
        assert_eq!(
            a.decide(&t, &obs(3, [3, 3].map(|n| fault(1, n, 0x9000, 3)).to_vec())),
            vec![]
        );
        // Adjacent pages to the same node in one epoch: one range; a page decided once.
        let s = [0x2000, 0x3000, 0x2000, 0x3000, 0x2000]
            .map(|x| fault(1, 2, x, 0))
            .to_vec();
        assert_eq!(a.decide(&t, &obs(4, s)), vec![migrate(0x2000, 2, 2)]);
    }

    #[test]
    fn ignores_other_samples_and_full_nodes_and_stays_bounded() {
        let t = topo();
        let mut a = AutoNuma::linux_defaults();
        let ibs = [fault(1, 1, 0x1000, 0), fault(1, 1, 0x1000, 0)].map(|s| Sample {
            source: SampleSource::Ibs,
            ..s
        });
        assert_eq!(a.decide(&t, &obs(0, ibs.to_vec())), vec![]);
        assert_eq!(a.tracked_pages(), 0);
        let mut o = obs(1, vec![fault(1, 1, 0x1000, 0), fault(1, 1, 0x1000, 0)]);
        o.memory = vec![NodeMemory {
            node: NodeId(1),
            total_bytes: 1 << 30,
            free_bytes: 4095,
        }];
        assert_eq!(a.decide(&t, &o), vec![]);
        // The page memory stays within its bound.
        let mut a = AutoNuma::new(AutoNumaConfig {
            max_tracked_pages: 8,
            ..Default::default()
        })
        .unwrap();
        a.decide(
            &t,
            &obs(0, (0..100).map(|i| fault(1, 1, i * 4096, 0)).collect()),
        );
        assert_eq!(a.tracked_pages(), 4);
    }

    #[test]
    fn scan_period_adapts_within_bounds() {
        let t = topo();
        let mut a = AutoNuma::linux_defaults();
        let req = |a: &AutoNuma| a.sampling().hinting.map(|h| (h.scan_bytes, h.period_ms));
        assert_eq!(req(&a), Some((256 << 20, 1000)));
        assert_eq!(a.sampling().period_cycles, None);
        assert!(!a.sampling().truth);
        // Out of range, or the least period above the most: refused, not clamped.
        for c in [
            AutoNumaConfig {
                scan_period_min_ms: 0,
                ..Default::default()
            },
            AutoNumaConfig {
                scan_period_min_ms: 70_000,
                ..Default::default()
            },
        ] {
            assert!(AutoNuma::new(c).is_err());
        }
        let text = toml::to_string(&AutoNumaConfig::default()).unwrap();
        assert_eq!(
            toml::from_str::<AutoNumaConfig>(&text).unwrap(),
            AutoNumaConfig::default()
        );
        let local = || {
            (0..10)
                .map(|i| fault(1, 0, i * 4096, 0))
                .collect::<Vec<_>>()
        };
        let mut periods = vec![];
        for e in 0..8 {
            a.decide(&t, &obs(e * 60, local()));
            periods.push(a.scan_period_ms());
        }
        assert_eq!(
            periods,
            [2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000]
        );
        assert_eq!(req(&a), Some((256 << 20, 60000)));
        // 6 local faults out of 10 is below 70%: halve, down to 1 s.
        let mixed =
            |e: u64| (0..10).map(move |i| fault(1, 0, (e * 10 + i) * 4096, (i >= 6) as u16));
        let mut periods = vec![];
        for e in 8..16 {
            a.decide(&t, &obs(e * 60, mixed(e).collect()));
            periods.push(a.scan_period_ms());
        }
        assert_eq!(periods, [30000, 15000, 7500, 3750, 1875, 1000, 1000, 1000]);
        // No faults: slow down, but not before a whole period has passed.
        a.decide(&t, &obs(16 * 60, vec![]));
        assert_eq!(a.scan_period_ms(), 2000);
        a.decide(&t, &obs(16 * 60 + 1, vec![]));
        assert_eq!(a.scan_period_ms(), 2000);
        a.decide(&t, &obs(16 * 60 + 2, vec![]));
        assert_eq!(a.scan_period_ms(), 4000);
    }

    #[test]
    fn thread_moves_to_an_idle_cpu_of_its_memory_node() {
        let t = topo();
        let mut a = AutoNuma::linux_defaults();
        a.period_ms = 8000;
        // Thread 1 on CPU 0 (node 0) faults on 4 pages of node 2 and 1 of node 0; CPU 4 of
        // node 2 is busy, CPU 5 idle.
        let mut s: Vec<Sample> = (0..4).map(|i| fault(1, 0, i * 4096, 2)).collect();
        s.push(fault(1, 0, 0x10_0000, 0));
        let o = with_threads(obs(0, s), &[(1, 0), (2, 4)]);
        assert_eq!(a.decide(&t, &o), vec![pin(1, 5)]);
        // A move resets the scan period to its minimum.
        assert_eq!(a.scan_period_ms(), 1000);
    }

    #[test]
    fn threads_swap_when_the_preferred_node_is_full() {
        let t = topo();
        let mut a = AutoNuma::linux_defaults();
        // Node 2 is full (threads 2 and 3). Thread 3 has no faults: no partner, no move.
        let s: Vec<Sample> = (0..4).map(|i| fault(1, 0, i * 4096, 2)).collect();
        let o = with_threads(obs(0, s), &[(1, 0), (2, 4), (3, 5)]);
        assert_eq!(a.decide(&t, &o), vec![]);
        // Thread 3's memory is on node 0: they swap (new pages, so that none migrates).
        let mut s2: Vec<Sample> = (0..4)
            .map(|i| fault(1, 0, 0x20_0000 + i * 4096, 2))
            .collect();
        s2.extend((0..4).map(|i| fault(3, 2, 0x10_0000 + i * 4096, 0)));
        let o = with_threads(obs(1, s2), &[(1, 0), (2, 4), (3, 5)]);
        assert_eq!(a.decide(&t, &o), vec![pin(1, 5), pin(3, 0)]);
    }

    #[test]
    fn bound_memory_stays_and_pulls_its_thread() {
        use rondpoint_model::{MappingPolicy, PolicyMode};
        let t = topo();
        let bound = |balancing: bool| MappingPolicy {
            start: 0,
            end: 0x10_0000,
            mode: PolicyMode::Bind,
            nodes: vec![NodeId(1), NodeId(2)],
            numa_balancing: balancing,
        };
        let faults = |e: u64| (0..4).map(move |i| fault(1, 0, (e * 4 + i) % 8 * 4096, 2));
        let with_policy = |o: Observation, m: MappingPolicy| {
            let mut o = with_threads(o, &[(1, 0)]);
            o.processes[0].mapping_policies = vec![m];
            o
        };
        // Bound to nodes 1-2 (no MPOL_F_NUMA_BALANCING): the twice-faulted pages stay on node
        // 2, so the thread's faults count there and the thread goes to node 2. Without the
        // policy, the same faults bring the pages to node 0 instead.
        let migrations = |x: &[Action]| {
            x.iter()
                .filter(|a| matches!(a, Action::MigratePages { .. }))
                .count()
        };
        let mut a = AutoNuma::linux_defaults();
        let first = a.decide(&t, &with_policy(obs(0, faults(0).collect()), bound(false)));
        assert_eq!(first, vec![pin(1, 4)]);
        let second = a.decide(&t, &with_policy(obs(1, faults(2).collect()), bound(false)));
        assert_eq!(migrations(&second), 0);
        let mut a = AutoNuma::linux_defaults();
        a.decide(&t, &with_threads(obs(0, faults(0).collect()), &[(1, 0)]));
        let o = with_threads(obs(1, faults(2).collect()), &[(1, 0)]);
        assert_eq!(migrations(&a.decide(&t, &o)), 1);
        // With the flag, pages move only toward a faulting node among the policy's: node 0 is
        // not, node 1 is.
        let mut a = AutoNuma::linux_defaults();
        a.decide(&t, &with_policy(obs(0, faults(0).collect()), bound(true)));
        let o = with_policy(obs(1, faults(2).collect()), bound(true));
        assert!(
            a.decide(&t, &o)
                .iter()
                .all(|x| matches!(x, Action::PinThread { .. }))
        );
        let from1 = |e: u64| {
            (0..2)
                .map(move |_| fault(1, 1, e * 4096, 2))
                .collect::<Vec<_>>()
        };
        let mut a = AutoNuma::linux_defaults();
        let o = with_policy(obs(0, from1(9)), bound(true));
        assert_eq!(a.decide(&t, &o), vec![migrate(9 * 4096, 1, 1)]);
        // Outside the bound range, the usual rule.
        let mut a = AutoNuma::linux_defaults();
        let o = with_policy(obs(0, from1(0x200)), bound(false));
        assert_eq!(a.decide(&t, &o), vec![migrate(0x200 * 4096, 1, 1)]);
    }
}
