//! Per-application metrics from an epoch's counters and samples, named as in \[Dashti13\]
//! Table 2, and the sample tallies they are computed from (counted as Carrefour counts its
//! samples). The machine-wide metrics are `rondpoint_model::metrics`.

use rondpoint_model::metrics::{epoch_micros, imbalance_over};
use rondpoint_model::{NodeId, Observation, Pid, Sample, SampleSource, Topology};

/// Metrics of one application in one epoch.
#[derive(Clone, Debug, PartialEq)]
pub struct AppMetrics {
    pub pid: Pid,
    /// DRAM accesses per microsecond by the application's threads.
    pub maptu: f64,
    /// Memory read ratio of the application (from its threads' counters).
    pub mrr: f64,
    /// CPU utilisation (percent of its threads' time), estimated as its threads' cycles over
    /// the cycles of the busiest thread on the machine (policies are not told the clock).
    pub cpu_pct: f64,
    /// Local access ratio from the application's samples homed on a node of the topology.
    pub lar: Option<f64>,
    /// Imbalance of the application's samples over home nodes (percent).
    pub mc_imbalance_pct: Option<f64>,
    /// DRAM accesses per microsecond to each node attributed to this application, estimated
    /// from the share of its samples homed there.
    pub maptu_by_node: Option<Vec<f64>>,
    /// Samples of this application in the epoch.
    pub samples: u64,
    /// Of those, samples that are page faults (first touches or NUMA hinting faults) rather
    /// than sampled accesses.
    pub fault_samples: u64,
}

/// Node number -> dense node index (position in [`Topology::nodes`]), by table: the topology's
/// own lookup is a binary search, and this runs once per sample.
pub(crate) struct DenseNodes(Vec<u16>);

impl DenseNodes {
    pub(crate) fn new(topology: &Topology) -> Self {
        let ids = topology.nodes().iter().map(|n| usize::from(n.id.0));
        let mut dense = vec![u16::MAX; ids.max().map_or(0, |m| m + 1)];
        for (i, n) in topology.nodes().iter().enumerate() {
            dense[usize::from(n.id.0)] = i as u16;
        }
        Self(dense)
    }

    /// Nodes of the topology.
    pub(crate) fn count(&self) -> usize {
        self.0.iter().filter(|&&d| d != u16::MAX).count()
    }

    pub(crate) fn of(&self, id: NodeId) -> Option<u16> {
        Some(self.index(id)).filter(|&d| d != u16::MAX)
    }

    /// The dense index of `id`, `u16::MAX` if it is not a node of the topology.
    pub(crate) fn index(&self, id: NodeId) -> u16 {
        self.0.get(usize::from(id.0)).copied().unwrap_or(u16::MAX)
    }
}

/// What [`per_app`] needs of one process's samples in an epoch.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SampleTally {
    /// Samples, and of them page faults (first touches or NUMA hinting faults).
    pub samples: u64,
    pub faults: u64,
    /// Of those whose home is a node of the topology, the ones made from that node.
    pub local: u64,
    /// Samples by home: index 0 unknown (or not a node of the topology), then dense node index
    /// + 1.
    pub by_home: Vec<u64>,
    /// The nodes the samples were made from, a bit per dense node index (at most 64 nodes).
    pub from: u64,
}

impl SampleTally {
    /// Samples whose home is a node of the topology.
    fn known(&self) -> u64 {
        self.by_home.iter().skip(1).sum()
    }
}

/// Per-process sample tallies of an epoch. A pass over the samples that has other work to do
/// (Carrefour's counting) tallies them as it goes, so that the samples are read once; [`of`]
/// is that pass alone.
///
/// [`of`]: SampleTallies::of
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SampleTallies {
    apps: Vec<(Pid, SampleTally)>,
}

impl SampleTallies {
    /// Tallies of `samples` by themselves.
    #[cfg(test)]
    pub(crate) fn of(samples: &[Sample], topology: &Topology) -> Self {
        let dense = DenseNodes::new(topology);
        let mut tallies = Self::default();
        let mut run = RunTally::new(&dense);
        for s in samples {
            if run.pid != Some(s.pid) {
                run.start(s.pid, &mut tallies);
            }
            run.count(s, &dense);
        }
        run.end(&mut tallies);
        tallies
    }
}

/// The tallies of a run of one process's samples, added to [`SampleTallies`] when it ends
/// (samples come in long runs of one process: per-sample work stays in locals).
pub(crate) struct RunTally {
    pid: Option<Pid>,
    faults: u64,
    local: u64,
    /// As [`SampleTally::by_home`].
    by_home: Vec<u64>,
    /// As [`SampleTally::from`].
    from: u64,
}

impl RunTally {
    pub(crate) fn new(dense: &DenseNodes) -> Self {
        Self {
            pid: None,
            faults: 0,
            local: 0,
            by_home: vec![0; dense.count() + 1],
            from: 0,
        }
    }

    /// Tallies `s`, a sample of the run's process. Returns its home as in
    /// [`SampleTally::by_home`] (0 unknown, else dense node index + 1), and whether it is a
    /// page fault rather than a sampled access.
    #[inline]
    pub(crate) fn count(&mut self, s: &Sample, dense: &DenseNodes) -> (usize, bool) {
        let (home, local) = match s.home_node.and_then(|h| dense.of(h)) {
            Some(h) => (usize::from(h) + 1, s.home_node == Some(s.node)),
            None => (0, false),
        };
        let fault = matches!(
            s.source,
            SampleSource::PageFault | SampleSource::HintingFault
        );
        if let Some(c) = self.by_home.get_mut(home) {
            *c += 1;
        }
        self.faults += u64::from(fault);
        self.local += u64::from(local);
        self.from |= 1u64
            .checked_shl(u32::from(dense.index(s.node)))
            .unwrap_or(0);
        (home, fault)
    }

    /// Ends the current run, if any, and starts one of `pid`.
    pub(crate) fn start(&mut self, pid: Pid, tallies: &mut SampleTallies) {
        self.end(tallies);
        self.pid = Some(pid);
    }

    /// Ends the current run, if any, adding it to `tallies`.
    pub(crate) fn end(&mut self, tallies: &mut SampleTallies) {
        let Some(pid) = self.pid.take() else {
            return;
        };
        let i = match tallies.apps.iter().position(|(p, _)| *p == pid) {
            Some(i) => i,
            None => {
                tallies.apps.push((pid, SampleTally::default()));
                tallies.apps.len() - 1
            }
        };
        let t = &mut tallies.apps[i].1;
        if t.by_home.len() < self.by_home.len() {
            t.by_home.resize(self.by_home.len(), 0);
        }
        for (a, c) in t.by_home.iter_mut().zip(&mut self.by_home) {
            t.samples += *c;
            *a += std::mem::take(c);
        }
        t.faults += std::mem::take(&mut self.faults);
        t.local += std::mem::take(&mut self.local);
        t.from |= std::mem::take(&mut self.from);
    }
}

/// The nodes an application's traffic loads or can load: those running its threads, holding
/// its memory, serving its sampled accesses or making them (see
/// `rondpoint_model::metrics::carrying_nodes`).
fn app_carrying(
    obs: &Observation,
    topology: &Topology,
    pid: Pid,
    tally: &SampleTally,
    by_home: &[f64],
) -> Vec<bool> {
    let mut carrying: Vec<bool> = by_home
        .iter()
        .enumerate()
        .map(|(i, &c)| c > 0.0 || (i < 64 && tally.from & (1 << i) != 0))
        .collect();
    if let Some(p) = obs.processes.iter().find(|p| p.pid == pid) {
        let held = p.resident_bytes_by_node.iter().enumerate();
        let running = p.threads.iter().filter_map(|t| topology.index_of(t.node));
        let marked = held.filter(|&(_, &b)| b > 0).map(|(i, _)| i).chain(running);
        for i in marked {
            if let Some(c) = carrying.get_mut(i) {
                *c = true;
            }
        }
    }
    carrying
}

/// Per-application metrics, one per process seen in the counters or samples, sorted by pid.
#[cfg(test)]
pub(crate) fn per_app(obs: &Observation, topology: &Topology) -> Vec<AppMetrics> {
    per_app_with(obs, topology, SampleTallies::of(&obs.samples, topology))
}

/// [`per_app`], with the samples already tallied.
pub(crate) fn per_app_with(
    obs: &Observation,
    topology: &Topology,
    tallies: SampleTallies,
) -> Vec<AppMetrics> {
    let nodes = topology.len();
    #[derive(Default)]
    struct Acc {
        accesses: f64,
        writes: f64,
        cycles: f64,
        threads: usize,
        samples: Option<SampleTally>,
    }
    let us = epoch_micros(obs);
    let mut apps: Vec<(Pid, Acc)> = Vec::new();
    let slot_of = |apps: &mut Vec<(Pid, Acc)>, pid: Pid| -> usize {
        match apps.iter().position(|(p, _)| *p == pid) {
            Some(i) => i,
            None => {
                apps.push((pid, Acc::default()));
                apps.len() - 1
            }
        }
    };
    let busiest = obs
        .counters
        .threads
        .iter()
        .map(|t| t.cycles)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    for t in &obs.counters.threads {
        let i = slot_of(&mut apps, t.pid);
        let a = &mut apps[i].1;
        a.accesses += t.dram_accesses as f64;
        a.writes += t.dram_writes as f64;
        a.cycles += t.cycles as f64;
        a.threads += 1;
    }
    for (pid, tally) in tallies.apps {
        let i = slot_of(&mut apps, pid);
        apps[i].1.samples = Some(tally);
    }
    apps.sort_by_key(|(pid, _)| *pid);
    apps.into_iter()
        .map(|(pid, a)| {
            let maptu = a.accesses / us;
            let tally = a.samples.unwrap_or_default();
            let known = tally.known();
            let by_home: Vec<f64> = (0..nodes)
                .map(|d| tally.by_home.get(d + 1).copied().unwrap_or(0) as f64)
                .collect();
            AppMetrics {
                pid,
                maptu,
                mrr: if a.accesses > 0.0 {
                    1.0 - a.writes / a.accesses
                } else {
                    1.0
                },
                cpu_pct: if a.threads == 0 {
                    0.0
                } else {
                    100.0 * a.cycles / (busiest * a.threads as f64)
                },
                lar: (known > 0).then(|| tally.local as f64 / known as f64),
                mc_imbalance_pct: (known > 0).then(|| {
                    imbalance_over(
                        &by_home,
                        &app_carrying(obs, topology, pid, &tally, &by_home),
                    )
                }),
                maptu_by_node: (known > 0)
                    .then(|| by_home.iter().map(|c| maptu * c / known as f64).collect()),
                samples: tally.samples,
                fault_samples: tally.faults,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::{
        AccessKind, Counters, CpuId, NodeId, PageSize, Sample, SampleSource, ThreadCounters, Tid,
    };

    #[test]
    fn app_metrics_from_threads_and_samples() {
        let sample = |node: u16, home: u16| Sample {
            pid: Pid(7),
            tid: Tid(7),
            cpu: CpuId(0),
            node: NodeId(node),
            addr: 0x1000,
            page_size: PageSize::Base4K,
            kind: AccessKind::Read,
            source: SampleSource::Simulated,
            latency_cycles: None,
            dram: Some(true),
            home_node: Some(NodeId(home)),
        };
        let obs = Observation {
            counters: Counters {
                duration_ns: 2_000,
                threads: vec![ThreadCounters {
                    pid: Pid(7),
                    tid: Tid(7),
                    node: NodeId(0),
                    instructions: 10,
                    cycles: 100,
                    llc_misses: 8,
                    dram_accesses: 8,
                    dram_writes: 2,
                }],
                ..Counters::default()
            },
            samples: vec![sample(0, 0), sample(0, 1), sample(0, 1), sample(1, 1)],
            ..Observation::default()
        };
        let two = rondpoint_model::synthetic::TopologyBuilder::new(2)
            .build()
            .unwrap();
        let a = &per_app(&obs, &two)[0];
        assert_eq!(a.pid, Pid(7));
        assert!((a.maptu - 4.0).abs() < 1e-12, "8 accesses in 2 µs");
        assert!((a.mrr - 0.75).abs() < 1e-12);
        assert_eq!(a.lar, Some(0.5));
        assert!((a.cpu_pct - 100.0).abs() < 1e-9);
        assert_eq!(a.maptu_by_node, Some(vec![1.0, 3.0]));
    }

    #[test]
    fn node_numbers_with_gaps_map_to_dense_indices() {
        // Nodes 0 and 2 (node 1 offline): a sample homed on node 2 counts at index 1.
        let node = |id: u16| rondpoint_model::Node {
            id: NodeId(id),
            cpus: vec![],
            mem_total_bytes: 1 << 30,
            mem_free_bytes: 1 << 29,
            hmat: Default::default(),
            memory_tier: None,
        };
        let t = Topology::new(
            vec![node(0), node(2)],
            vec![vec![10, 20], vec![20, 10]],
            vec![],
        )
        .unwrap();
        let dense = DenseNodes::new(&t);
        assert_eq!(
            (
                dense.of(NodeId(0)),
                dense.of(NodeId(1)),
                dense.of(NodeId(2))
            ),
            (Some(0), None, Some(1))
        );
        assert_eq!(dense.of(NodeId(9)), None);
        let s = Sample {
            pid: Pid(7),
            tid: Tid(7),
            cpu: CpuId(0),
            node: NodeId(0),
            addr: 0x1000,
            page_size: PageSize::Base4K,
            kind: AccessKind::Read,
            source: SampleSource::Ibs,
            latency_cycles: None,
            dram: Some(true),
            home_node: Some(NodeId(2)),
        };
        let obs = Observation {
            counters: Counters {
                duration_ns: 1_000,
                ..Counters::default()
            },
            samples: vec![s],
            ..Observation::default()
        };
        let a = &per_app(&obs, &t)[0];
        assert_eq!(a.lar, Some(0.0));
        assert_eq!(a.mc_imbalance_pct, Some(100.0));
    }

    proptest::proptest! {
        /// The tallies agree with counting each process's samples one by one.
        #[test]
        fn sample_tallies_match_a_plain_count(
            picks in proptest::collection::vec(
                (1i32..4, 0u8..4, 0u16..4, proptest::option::of(0u16..6)),
                0..400,
            )
        ) {
            let t = rondpoint_model::synthetic::TopologyBuilder::new(4).build().unwrap();
            let sources = [
                SampleSource::Ibs,
                SampleSource::Pebs,
                SampleSource::PageFault,
                SampleSource::HintingFault,
            ];
            let samples: Vec<Sample> = picks
                .iter()
                .map(|&(pid, source, node, home)| Sample {
                    pid: Pid(pid),
                    tid: Tid(pid),
                    cpu: CpuId(0),
                    node: NodeId(node),
                    addr: 0x1000,
                    page_size: PageSize::Base4K,
                    kind: AccessKind::Read,
                    source: sources[usize::from(source)],
                    latency_cycles: None,
                    dram: None,
                    home_node: home.map(NodeId),
                })
                .collect();
            let obs = Observation {
                counters: Counters { duration_ns: 1_000, ..Counters::default() },
                samples: samples.clone(),
                ..Observation::default()
            };
            for a in per_app(&obs, &t) {
                let own: Vec<&Sample> = samples.iter().filter(|s| s.pid == a.pid).collect();
                let faults = own
                    .iter()
                    .filter(|s| matches!(s.source, SampleSource::PageFault | SampleSource::HintingFault))
                    .count() as u64;
                // Homes 4 and 5 are not nodes of the machine: not known, so not local.
                let homed = |s: &&&Sample| s.home_node.is_some_and(|h| h.0 < 4);
                let known = own.iter().filter(homed).count();
                let local = own.iter().filter(homed).filter(|s| s.home_node == Some(s.node)).count();
                proptest::prop_assert_eq!(a.samples, own.len() as u64);
                proptest::prop_assert_eq!(a.fault_samples, faults);
                proptest::prop_assert_eq!(a.lar, (known > 0).then(|| local as f64 / known as f64));
                let mut by_home = vec![0.0; 4];
                for h in own.iter().filter_map(|s| s.home_node).filter(|h| h.0 < 4) {
                    by_home[usize::from(h.0)] += 1.0;
                }
                // Over the nodes that served or made its samples.
                let carrying: Vec<bool> = (0..4u16)
                    .map(|n| by_home[usize::from(n)] > 0.0 || own.iter().any(|s| s.node.0 == n))
                    .collect();
                proptest::prop_assert_eq!(
                    a.mc_imbalance_pct,
                    (known > 0).then(|| imbalance_over(&by_home, &carrying))
                );
            }
        }
    }
}
