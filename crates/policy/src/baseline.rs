//! The Linux baselines that need no run-time decisions (first-touch, which does nothing, is
//! `rondpoint_policy_api::FirstTouch`).

use crate::Policy;
use rondpoint_model::{Action, Capability, MemPolicy, Need, Observation, ProcessInfo, Topology};

/// The whole application interleaved over every node with memory, as
/// `numactl --interleave=all` does: one set_mempolicy before the program starts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interleave;

impl Policy for Interleave {
    fn name(&self) -> &str {
        "interleave"
    }

    fn needs(&self) -> Vec<Need> {
        vec![Need::one(
            Capability::MemPolicies,
            "to interleave each program's memory from its start",
        )]
    }

    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let nodes: Vec<_> = topology
            .nodes()
            .iter()
            .filter(|n| n.mem_total_bytes > 0)
            .map(|n| n.id)
            .collect();
        processes
            .iter()
            .map(|p| Action::SetMemPolicy {
                pid: p.pid,
                policy: MemPolicy::Interleave {
                    nodes: nodes.clone(),
                },
            })
            .collect()
    }

    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::synthetic::TopologyBuilder;
    use rondpoint_model::{NodeId, Pid};
    use rondpoint_policy_api::FirstTouch;

    fn proc(pid: i32) -> ProcessInfo {
        ProcessInfo {
            pid: Pid(pid),
            comm: "app".into(),
            threads: Vec::new(),
            resident_bytes_by_node: Vec::new(),
            mapping_policies: Vec::new(),
        }
    }

    #[test]
    fn interleave_sets_every_process_to_all_memory_nodes() {
        let t = TopologyBuilder::new(3).memory_only(&[2]).build().unwrap();
        let actions = Interleave.start(&t, &[proc(10), proc(11)]);
        let all = vec![NodeId(0), NodeId(1), NodeId(2)];
        assert_eq!(
            actions,
            vec![
                Action::SetMemPolicy {
                    pid: Pid(10),
                    policy: MemPolicy::Interleave { nodes: all.clone() }
                },
                Action::SetMemPolicy {
                    pid: Pid(11),
                    policy: MemPolicy::Interleave { nodes: all }
                },
            ]
        );
        assert!(Interleave.decide(&t, &Observation::default()).is_empty());
    }

    #[test]
    fn first_touch_does_nothing() {
        let t = TopologyBuilder::new(2).build().unwrap();
        assert!(FirstTouch.start(&t, &[proc(1)]).is_empty());
        assert!(FirstTouch.decide(&t, &Observation::default()).is_empty());
    }
}
