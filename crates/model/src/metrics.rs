//! Traffic metrics computed from an [`Observation`], named as in the papers (\[Dashti13\]
//! Table 2): what reports show and policies decide on. Per-application metrics a policy derives
//! from its own sample counts stay with the policy.

use crate::NodeId;
use crate::observation::{Observation, ProcessInfo};
use crate::topology::Topology;

/// Population standard deviation over the mean, in percent (0 when the mean is 0): the
/// imbalance of [Dashti13 §2].
pub fn imbalance_pct(loads: &[f64]) -> f64 {
    if loads.is_empty() {
        return 0.0;
    }
    let mean = loads.iter().sum::<f64>() / loads.len() as f64;
    if mean <= 0.0 {
        return 0.0;
    }
    let var = loads.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / loads.len() as f64;
    100.0 * var.sqrt() / mean
}

/// [`imbalance_pct`] over the nodes `carrying` marks (all of them when it marks none or does
/// not fit): a node that can carry none of the traffic (a CPU-less memory node the workload
/// does not use) would count as an idle controller, and a perfectly local run on a machine
/// with one would look 50% imbalanced.
pub fn imbalance_over(loads: &[f64], carrying: &[bool]) -> f64 {
    if carrying.len() != loads.len() || !carrying.contains(&true) {
        return imbalance_pct(loads);
    }
    let kept: Vec<f64> = loads
        .iter()
        .zip(carrying)
        .filter(|&(_, &c)| c)
        .map(|(&l, _)| l)
        .collect();
    imbalance_pct(&kept)
}

/// The nodes (dense index, as the counters list them) whose controllers the observed
/// processes load or can load: see [`carrying`].
pub fn carrying_nodes(obs: &Observation) -> Vec<bool> {
    let ids: Vec<NodeId> = obs.counters.nodes.iter().map(|n| n.node).collect();
    let served: Vec<f64> = obs
        .counters
        .nodes
        .iter()
        .map(|n| n.dram_accesses() as f64)
        .collect();
    carrying(&ids, &served, &obs.processes)
}

/// Of the nodes `ids` (dense order), those whose controllers `processes` load or can load:
/// running one of their threads, holding some of their memory, or having `served` DRAM
/// accesses. Traffic imbalance is measured over these ([Dashti13 §2]'s "all controllers" on
/// the machines it had, where every node ran threads).
pub fn carrying(ids: &[NodeId], served: &[f64], processes: &[ProcessInfo]) -> Vec<bool> {
    let mut carrying: Vec<bool> = ids
        .iter()
        .enumerate()
        .map(|(i, _)| served.get(i).is_some_and(|&s| s > 0.0))
        .collect();
    for p in processes {
        let held = p.resident_bytes_by_node.iter().enumerate();
        let held = held.filter(|&(_, &b)| b > 0).map(|(i, _)| i);
        let running = p
            .threads
            .iter()
            .filter_map(|t| ids.iter().position(|&id| id == t.node));
        for i in held.chain(running) {
            if let Some(c) = carrying.get_mut(i) {
                *c = true;
            }
        }
    }
    carrying
}

/// Which link directions (`2i`: `a -> b` of the topology's link `i`, `2i + 1`: `b -> a`) lie on
/// a route between a node marked in `running` (dense index: runs the workload's threads) and a
/// node marked in `holding` (holds or serves its memory), either way: requests go one way,
/// data the other. Interconnect imbalance is measured over these: a link no route in use
/// crosses (to a CXL node nobody uses, between two sockets a local run never crosses) would
/// count as an idle link, and a run that never leaves its nodes would look imbalanced.
pub fn links_in_use(topology: &Topology, running: &[bool], holding: &[bool]) -> Vec<bool> {
    let interconnect = topology.interconnect();
    let mut in_use = vec![false; 2 * interconnect.links.len()];
    let marked = |v: &[bool], node: NodeId| {
        let i = topology.index_of(node);
        i.and_then(|i| v.get(i)).copied().unwrap_or(false)
    };
    for route in &interconnect.routes {
        let (x, y) = (route.from, route.to);
        let used = (marked(running, x) && marked(holding, y))
            || (marked(holding, x) && marked(running, y));
        if used {
            for d in interconnect.directions(route) {
                in_use[d] = true;
            }
        }
    }
    in_use
}

/// Machine-wide metrics of one epoch, from the per-node counters.
#[derive(Clone, Debug, PartialEq)]
pub struct GlobalMetrics {
    /// Memory-controller imbalance (percent), over the nodes that carry the traffic
    /// ([`carrying_nodes`]).
    pub mc_imbalance_pct: f64,
    /// Local access ratio (0 to 1; 1 when there was no DRAM traffic).
    pub lar: f64,
    /// DRAM accesses per microsecond, whole machine.
    pub maptu: f64,
    /// DRAM accesses per microsecond served by each node's controller (dense node index).
    pub maptu_by_node: Vec<f64>,
    /// Free memory over total memory.
    pub free_fraction: f64,
    /// Memory read ratio: DRAM reads over DRAM accesses (1 when there were none).
    pub mrr: f64,
}

/// The epoch's length in microseconds (at least a billionth of one, to divide by).
pub fn epoch_micros(obs: &Observation) -> f64 {
    (obs.counters.duration_ns as f64 / 1e3).max(1e-9)
}

/// Machine-wide metrics.
pub fn global(obs: &Observation) -> GlobalMetrics {
    let us = epoch_micros(obs);
    let nodes = &obs.counters.nodes;
    let served: Vec<f64> = nodes.iter().map(|n| n.dram_accesses() as f64).collect();
    let total: f64 = served.iter().sum();
    let local: f64 = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| n.dram_accesses_by_source.get(i).copied().unwrap_or(0) as f64)
        .sum();
    let writes: f64 = nodes.iter().map(|n| n.dram_writes as f64).sum();
    let mem_total: f64 = obs.memory.iter().map(|m| m.total_bytes as f64).sum();
    let mem_free: f64 = obs.memory.iter().map(|m| m.free_bytes as f64).sum();
    GlobalMetrics {
        mc_imbalance_pct: imbalance_over(&served, &carrying_nodes(obs)),
        lar: if total > 0.0 { local / total } else { 1.0 },
        maptu: total / us,
        maptu_by_node: served.iter().map(|s| s / us).collect(),
        free_fraction: if mem_total > 0.0 {
            mem_free / mem_total
        } else {
            0.0
        },
        mrr: if total > 0.0 {
            1.0 - writes / total
        } else {
            1.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Counters, NodeCounters, NodeId, NodeMemory};

    fn node(i: u16, by_source: Vec<u64>, writes: u64) -> NodeCounters {
        NodeCounters {
            node: NodeId(i),
            dram_accesses_by_source: by_source,
            dram_writes: writes,
            ..NodeCounters::default()
        }
    }

    #[test]
    fn imbalance_counts_the_nodes_that_carry_the_traffic() {
        use crate::{CpuId, Pid, ProcessInfo, ThreadInfo, Tid};
        // Two CPU nodes serving their own threads evenly, and a CPU-less node nobody uses.
        let mut obs = Observation {
            counters: Counters {
                duration_ns: 1_000_000,
                nodes: vec![
                    node(0, vec![100, 0, 0], 0),
                    node(1, vec![0, 100, 0], 0),
                    node(2, vec![0, 0, 0], 0),
                ],
                ..Counters::default()
            },
            ..Observation::default()
        };
        assert_eq!(carrying_nodes(&obs), vec![true, true, false]);
        assert!(global(&obs).mc_imbalance_pct.abs() < 1e-9);
        assert!((imbalance_pct(&[100.0, 100.0, 0.0]) - 70.7).abs() < 0.1);
        // Its memory on node 2, or a thread on node 1 with node 1 idle, count.
        obs.counters.nodes[1] = node(1, vec![0, 0, 0], 0);
        let thread = |node: u16| ThreadInfo {
            tid: Tid(1),
            cpu: CpuId(0),
            node: NodeId(node),
            allowed_cpus: Vec::new(),
        };
        obs.processes = vec![ProcessInfo {
            pid: Pid(1),
            comm: "a".into(),
            threads: vec![thread(0), thread(1)],
            resident_bytes_by_node: vec![4096, 0, 4096],
            mapping_policies: Vec::new(),
        }];
        assert_eq!(carrying_nodes(&obs), vec![true, true, true]);
        assert!((global(&obs).mc_imbalance_pct - 141.4).abs() < 0.1);
        // Nothing marked: every node.
        assert_eq!(
            imbalance_over(&[1.0, 3.0], &[false, false]),
            imbalance_pct(&[1.0, 3.0])
        );
    }

    #[test]
    fn links_in_use_are_those_on_routes_between_threads_and_memory() {
        use crate::synthetic::TopologyBuilder;
        // A ring of four nodes (0-1-2-3-0) and a CPU-less node 4 hanging off node 0.
        let t = TopologyBuilder::new(5)
            .memory_only(&[4])
            .distances(vec![
                vec![10, 20, 30, 20, 20],
                vec![20, 10, 20, 30, 30],
                vec![30, 20, 10, 20, 40],
                vec![20, 30, 20, 10, 30],
                vec![20, 30, 40, 30, 10],
            ])
            .build()
            .unwrap();
        let dirs = |running: &[bool], holding: &[bool]| -> Vec<(u16, u16)> {
            let links = &t.interconnect().links;
            links_in_use(&t, running, holding)
                .iter()
                .enumerate()
                .filter(|&(_, &u)| u)
                .map(|(d, _)| {
                    let l = links[d / 2];
                    if d % 2 == 0 {
                        (l.a.0, l.b.0)
                    } else {
                        (l.b.0, l.a.0)
                    }
                })
                .collect()
        };
        // Threads and memory on every socket: every ring link both ways, not node 4's.
        let sockets = [true, true, true, true, false];
        let used = dirs(&sockets, &sockets);
        assert_eq!(used.len(), 8, "{used:?}");
        assert!(used.iter().all(|&(a, b)| a != 4 && b != 4));
        // Threads on node 1, memory on node 0: only the 0-1 link, both ways.
        let one = [false, true, false, false, false];
        let zero = [true, false, false, false, false];
        assert_eq!(dirs(&one, &zero), vec![(0, 1), (1, 0)]);
        // Everything on one node: no link, and the imbalance over none is 0.
        assert!(dirs(&zero, &zero).is_empty());
        assert_eq!(imbalance_over(&[0.0; 10], &[false; 10]), 0.0);
    }

    #[test]
    fn global_metrics_from_counters() {
        // Node 0 serves 300 accesses (100 local), node 1 serves 100 (all local); 40 writes.
        let obs = Observation {
            counters: Counters {
                duration_ns: 1_000_000,
                nodes: vec![node(0, vec![100, 200], 30), node(1, vec![0, 100], 10)],
                ..Counters::default()
            },
            memory: vec![
                NodeMemory {
                    node: NodeId(0),
                    total_bytes: 100,
                    free_bytes: 25,
                },
                NodeMemory {
                    node: NodeId(1),
                    total_bytes: 100,
                    free_bytes: 75,
                },
            ],
            ..Observation::default()
        };
        let g = global(&obs);
        assert!((g.lar - 0.5).abs() < 1e-12);
        assert!((g.maptu - 0.4).abs() < 1e-12, "400 accesses in 1000 µs");
        assert!((g.mc_imbalance_pct - 50.0).abs() < 1e-9);
        assert!((g.free_fraction - 0.5).abs() < 1e-12);
        assert!((g.mrr - 0.9).abs() < 1e-12);
    }

    #[test]
    fn imbalance_of_one_hot_controller_matches_the_paper() {
        // [Dashti13 Table 1]: 170% for first-touch streamcluster, where one of four
        // controllers serves (nearly) everything; exactly one hot gives sqrt(3) = 173%.
        assert!((imbalance_pct(&[1.0, 0.0, 0.0, 0.0]) - 173.2).abs() < 0.1);
        assert_eq!(imbalance_pct(&[2.0, 2.0, 2.0]), 0.0);
        assert_eq!(imbalance_pct(&[]), 0.0);
        assert_eq!(imbalance_pct(&[0.0, 0.0]), 0.0);
    }
}
