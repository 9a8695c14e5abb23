//! Distance tiers: the remote nodes of each local node, grouped nearest first [Choe21 §7].

use rondpoint_model::{NodeId, NodeTiers, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the remote nodes are grouped into tiers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grouping {
    /// Remote nodes with CPUs by their distance from the local node, nearest first
    /// [Choe21 §7]; then memory-only (CPU-less, CXL) nodes, by distance, as tiers of their own
    /// after every CPU node (rondpoint's extension: they are slower than any socket's DRAM
    /// and have no CPUs whose programs they could take from).
    #[default]
    Distance,
    /// Every remote node with memory in one tier: the design [Choe21 §5] evaluated, on a
    /// machine where every remote node is one hop away.
    Flat,
}

/// The tiers of remote nodes with memory for a page touched from `local`, nearest first;
/// within a tier, by node number.
pub(crate) fn tiers_of(topology: &Topology, local: NodeId, grouping: Grouping) -> Vec<Vec<NodeId>> {
    let remote = topology
        .nodes()
        .iter()
        .filter(|n| n.id != local && n.mem_total_bytes > 0);
    if grouping == Grouping::Flat {
        let all: Vec<NodeId> = remote.map(|n| n.id).collect();
        return if all.is_empty() {
            Vec::new()
        } else {
            vec![all]
        };
    }
    let mut cpu: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    let mut memory_only: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    for n in remote {
        let d = topology.distance(local, n.id).unwrap_or(u32::MAX);
        let group = if n.has_cpu() {
            &mut cpu
        } else {
            &mut memory_only
        };
        group.entry(d).or_default().push(n.id);
    }
    cpu.into_values().chain(memory_only.into_values()).collect()
}

/// The tiers of every node with CPUs (where pages are first touched).
pub(crate) fn all_tiers(topology: &Topology, grouping: Grouping) -> Vec<NodeTiers> {
    topology
        .nodes()
        .iter()
        .filter(|n| n.has_cpu())
        .map(|n| NodeTiers {
            local: n.id,
            tiers: tiers_of(topology, n.id, grouping),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::synthetic::TopologyBuilder;

    fn ids(v: &[u16]) -> Vec<NodeId> {
        v.iter().copied().map(NodeId).collect()
    }

    /// The m5a.24xlarge of [Choe21 Table 1]: nodes 0-2 and 3-5 at 16 within a group, 32
    /// across.
    fn m5a() -> Topology {
        let d = (0..6)
            .map(|a: usize| {
                (0..6)
                    .map(|b: usize| match (a == b, a / 3 == b / 3) {
                        (true, _) => 10,
                        (false, true) => 16,
                        (false, false) => 32,
                    })
                    .collect()
            })
            .collect();
        TopologyBuilder::new(6).distances(d).build().unwrap()
    }

    #[test]
    fn m5a_tiers_are_the_papers_remote_groups() {
        let t = m5a();
        assert_eq!(
            tiers_of(&t, NodeId(0), Grouping::Distance),
            vec![ids(&[1, 2]), ids(&[3, 4, 5])]
        );
        assert_eq!(
            tiers_of(&t, NodeId(4), Grouping::Distance),
            vec![ids(&[3, 5]), ids(&[0, 1, 2])]
        );
        assert_eq!(
            tiers_of(&t, NodeId(0), Grouping::Flat),
            vec![ids(&[1, 2, 3, 4, 5])]
        );
        assert_eq!(all_tiers(&t, Grouping::Distance).len(), 6);
    }

    #[test]
    fn memory_only_nodes_come_after_every_cpu_node_even_when_nearer() {
        // Node 2 is a CXL node at distance 14 from node 0, nearer than socket 1 (21).
        let t = TopologyBuilder::new(3)
            .memory_only(&[2])
            .distances(vec![vec![10, 21, 14], vec![21, 10, 24], vec![14, 24, 10]])
            .build()
            .unwrap();
        assert_eq!(
            tiers_of(&t, NodeId(0), Grouping::Distance),
            vec![ids(&[1]), ids(&[2])]
        );
        let locals: Vec<NodeId> = all_tiers(&t, Grouping::Distance)
            .iter()
            .map(|x| x.local)
            .collect();
        assert_eq!(locals, ids(&[0, 1]), "no tiers for a node without CPUs");
        let single = TopologyBuilder::new(1).build().unwrap();
        assert!(tiers_of(&single, NodeId(0), Grouping::Flat).is_empty());
    }
}
