//! Where memory is over a run: each node's size, fallback order and use over time, and each
//! application's memory per node (`rondpoint sim --json`, docs/json/sim.md; `--memory`).

use rondpoint_model::{NodeId, Observation};
use serde::Serialize;

/// Memory of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemoryReport {
    /// Every node, in the topology's order (the order of the per-node lists below).
    pub nodes: Vec<NodeInfo>,
    /// One point per epoch, at its end.
    pub timeline: Vec<MemoryPoint>,
}

/// One node: its size and where the default policy goes when it is full.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeInfo {
    pub node: NodeId,
    pub total_bytes: u64,
    /// Nodes in the order the default policy tries them for a page touched from this one (by
    /// distance, then node number; itself first) [Choe21 Figure 1].
    pub fallback: Vec<NodeId>,
}

/// Memory at one time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryPoint {
    /// Simulated seconds since the start.
    pub t_s: f64,
    /// Bytes in use per node (total minus free: the share the OS keeps included).
    pub used_bytes: Vec<u64>,
    /// Bytes of each application (in the order of the run's `apps`) per node.
    pub apps_bytes: Vec<Vec<u64>>,
}

impl MemoryReport {
    /// An empty report for nodes of these sizes and fallback orders.
    pub fn new(nodes: Vec<NodeInfo>) -> Self {
        Self {
            nodes,
            timeline: Vec::new(),
        }
    }

    /// Adds the memory an epoch's observation saw at its end, `t_s` seconds into the run.
    pub fn record(&mut self, t_s: f64, observation: &Observation) {
        let used_bytes = self
            .nodes
            .iter()
            .map(|n| {
                observation
                    .memory
                    .iter()
                    .find(|m| m.node == n.node)
                    .map_or(0, |m| m.total_bytes.saturating_sub(m.free_bytes))
            })
            .collect();
        let apps_bytes = observation
            .processes
            .iter()
            .map(|p| p.resident_bytes_by_node.clone())
            .collect();
        self.timeline.push(MemoryPoint {
            t_s,
            used_bytes,
            apps_bytes,
        });
    }

    /// The largest use of each node over the run (bytes).
    pub fn peak_used_bytes(&self) -> Vec<u64> {
        let mut peak = vec![0; self.nodes.len()];
        for p in &self.timeline {
            for (m, &u) in peak.iter_mut().zip(&p.used_bytes) {
                *m = (*m).max(u);
            }
        }
        peak
    }

    /// The last point, if any.
    pub fn last(&self) -> Option<&MemoryPoint> {
        self.timeline.last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::{NodeMemory, Pid, ProcessInfo};

    #[test]
    fn points_follow_the_topology_order_and_peaks_are_per_node() {
        let info = |n: u16| NodeInfo {
            node: NodeId(n),
            total_bytes: 100,
            fallback: vec![NodeId(n)],
        };
        let mut r = MemoryReport::new(vec![info(0), info(1)]);
        let obs = |free0: u64, free1: u64| Observation {
            memory: vec![
                NodeMemory {
                    node: NodeId(1),
                    total_bytes: 100,
                    free_bytes: free1,
                },
                NodeMemory {
                    node: NodeId(0),
                    total_bytes: 100,
                    free_bytes: free0,
                },
            ],
            processes: vec![ProcessInfo {
                pid: Pid(1),
                comm: "a".into(),
                threads: vec![],
                resident_bytes_by_node: vec![100 - free0, 100 - free1],
                mapping_policies: vec![],
            }],
            ..Observation::default()
        };
        r.record(1.0, &obs(10, 90));
        r.record(2.0, &obs(30, 60));
        assert_eq!(r.peak_used_bytes(), vec![90, 40]);
        let last = r.last().unwrap();
        assert_eq!((last.t_s, &last.used_bytes), (2.0, &vec![70, 40]));
        assert_eq!(last.apps_bytes, vec![vec![70, 40]]);
    }
}
