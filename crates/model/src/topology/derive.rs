//! Facts derived from the distances and routes: fast, slow and memory-only nodes, hop counts,
//! the distance ("hop") classes, and slower-tier memory (see the module documentation of
//! [`super`]).

use super::{Node, NodeClass, Route, Topology};
use crate::ids::NodeId;
use std::collections::BTreeSet;

impl Topology {
    /// Largest distance from a node to the other CPU nodes (its own local distance when there
    /// is no other CPU node); `None` for a memory-only node.
    pub fn worst_cpu_distance(&self, node: NodeId) -> Option<u32> {
        let i = self.index_of(node)?;
        worst_cpu_distance(&self.nodes, &self.distances, i)
    }

    /// Whether `node`'s memory is a slower tier than that of the nodes with CPUs (see the
    /// module documentation of [`super`]): by the kernel's memory tiers when a node with CPUs
    /// has one, a tier numbered above every tier holding a node with CPUs; otherwise, and for
    /// a node the tiers do not list, a node with memory and no CPUs.
    pub fn is_slower_tier(&self, node: NodeId) -> bool {
        let Some(n) = self.node(node) else {
            return false;
        };
        let top = self
            .nodes
            .iter()
            .filter(|n| n.has_cpu())
            .filter_map(|n| n.memory_tier)
            .max();
        match (n.memory_tier, top) {
            (Some(tier), Some(top)) => tier > top,
            _ => !n.has_cpu() && n.mem_total_bytes > 0,
        }
    }

    /// The nodes whose memory is a slower tier ([`Topology::is_slower_tier`]), by number.
    pub fn slower_tier(&self) -> Vec<NodeId> {
        self.nodes
            .iter()
            .map(|n| n.id)
            .filter(|&id| self.is_slower_tier(id))
            .collect()
    }

    /// The distinct distances on the machine, sorted: index 0 is the local distance class,
    /// then remote classes from nearest to farthest ("hop classes").
    pub fn distance_classes(&self) -> Vec<u32> {
        let mut local = BTreeSet::new();
        let mut remote = BTreeSet::new();
        for (i, row) in self.distances.iter().enumerate() {
            for (j, &d) in row.iter().enumerate() {
                if i == j {
                    local.insert(d);
                } else {
                    remote.insert(d);
                }
            }
        }
        local.into_iter().chain(remote).collect()
    }
}

/// Links crossed on each route, indexed densely (0 from a node to itself).
pub(super) fn hop_counts(t: &Topology, routes: &[Route]) -> Vec<Vec<u32>> {
    let n = t.nodes.len();
    let mut hops = vec![vec![0u32; n]; n];
    for r in routes {
        if let (Some(i), Some(j)) = (t.index_of(r.from), t.index_of(r.to)) {
            hops[i][j] = u32::try_from(r.hops()).unwrap_or(u32::MAX);
        }
    }
    hops
}

fn worst_cpu_distance(nodes: &[Node], distances: &[Vec<u32>], i: usize) -> Option<u32> {
    if !nodes[i].has_cpu() {
        return None;
    }
    let others = nodes
        .iter()
        .enumerate()
        .filter(|&(j, n)| j != i && n.has_cpu())
        .map(|(j, _)| distances[i][j].max(distances[j][i]))
        .max();
    Some(others.unwrap_or(distances[i][i]))
}

pub(super) fn classify(nodes: &[Node], distances: &[Vec<u32>]) -> Vec<NodeClass> {
    let worst: Vec<Option<u32>> = (0..nodes.len())
        .map(|i| worst_cpu_distance(nodes, distances, i))
        .collect();
    let best = worst.iter().flatten().copied().min();
    worst
        .iter()
        .map(|w| match (w, best) {
            (None, _) => NodeClass::MemoryOnly,
            (Some(w), Some(b)) if *w > b => NodeClass::Slow,
            _ => NodeClass::Fast,
        })
        .collect()
}
