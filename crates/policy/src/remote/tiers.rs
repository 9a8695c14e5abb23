//! Distance tiers: the remote nodes of each local node, grouped nearest first [Choe21 §7].

use rondpoint_model::{NodeId, NodeTiers, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the remote nodes are grouped into tiers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grouping {
    /// Remote nodes by their distance from the local node, nearest first [Choe21 §7]; then
    /// slower-tier nodes (CXL, persistent memory: [`Topology::is_slower_tier`], by the
    /// kernel's memory tiers where known, else every CPU-less node), by distance, as tiers of
    /// their own after every other node (rondpoint's extension: they are slower than any
    /// socket's DRAM and have no CPUs whose programs they could take from). A CPU-less node
    /// the kernel puts in DRAM's tier (HBM in flat mode) is grouped by distance like a socket.
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
    let mut fast: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    let mut slower: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    for n in remote {
        let d = topology.distance(local, n.id).unwrap_or(u32::MAX);
        let group = if topology.is_slower_tier(n.id) {
            &mut slower
        } else {
            &mut fast
        };
        group.entry(d).or_default().push(n.id);
    }
    fast.into_values().chain(slower.into_values()).collect()
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

    /// Two sockets and CPU-less node 2 at distance 14 from node 0, nearer than socket 1 (21).
    fn cxl() -> Topology {
        TopologyBuilder::new(3)
            .memory_only(&[2])
            .distances(vec![vec![10, 21, 14], vec![21, 10, 24], vec![14, 24, 10]])
            .build()
            .unwrap()
    }

    #[test]
    fn memory_only_nodes_come_after_every_cpu_node_even_when_nearer() {
        let t = cxl();
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

    #[test]
    fn the_kernels_memory_tiers_decide_which_cpu_less_nodes_come_last() {
        let base = cxl();
        let with_tiers = |tiers: [u32; 3]| {
            let mut nodes = base.nodes().to_vec();
            for (n, t) in nodes.iter_mut().zip(tiers) {
                n.memory_tier = Some(t);
            }
            Topology::new(nodes, base.distances().to_vec(), base.llcs().to_vec()).unwrap()
        };
        // CXL in a slower tier (the kernel's dax/kmem default, tier 22): last, as without tiers.
        let cxl = with_tiers([4, 4, 22]);
        assert_eq!(
            tiers_of(&cxl, NodeId(0), Grouping::Distance),
            vec![ids(&[1]), ids(&[2])]
        );
        // HBM in flat mode, in DRAM's tier 4: not slower memory, so by distance, first.
        let hbm = with_tiers([4, 4, 4]);
        assert_eq!(
            tiers_of(&hbm, NodeId(0), Grouping::Distance),
            vec![ids(&[2]), ids(&[1])]
        );
    }
}
