//! What the mapping algorithms see, and [Majo11 Algorithm 2], maximum-local.

use rondpoint_model::{CpuId, Topology};
use std::collections::{BTreeSet, VecDeque};

/// A process as the mapping algorithms see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Proc {
    /// The node (dense index) holding its memory: where it runs locally.
    pub home: usize,
    /// NUMA penalty, CPI remote / CPI local [Majo11 Eq. 1].
    pub np: f64,
    /// Cache pressure: LLC misses per thousand instructions over the last epoch [Majo11 §3.2].
    pub mpki: f64,
}

/// The machine as the mapping algorithms see it: the paper's processors are the nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Processors {
    /// Cores of each node (dense index); 0 for a node without CPUs.
    pub cores: Vec<usize>,
    /// For each node, the other nodes with cores, nearest first (by distance, then index):
    /// where `get_next_available_core` looks when the node has no free core.
    pub fallback: Vec<Vec<usize>>,
}

impl Processors {
    /// The nodes of a topology.
    pub fn of(topology: &Topology) -> Self {
        let cores: Vec<usize> = topology.nodes().iter().map(|n| n.cpus.len()).collect();
        let d = topology.distances();
        let fallback = (0..cores.len())
            .map(|i| {
                let mut v: Vec<usize> = (0..cores.len())
                    .filter(|&j| j != i && cores[j] > 0)
                    .collect();
                v.sort_by_key(|&j| (d[i][j], j));
                v
            })
            .collect();
        Self { cores, fallback }
    }

    /// The machine without the cores in `taken` (those multi-threaded processes run on).
    pub fn without(mut self, topology: &Topology, taken: &BTreeSet<CpuId>) -> Self {
        for cpu in taken {
            let node = topology
                .node_of_cpu(*cpu)
                .and_then(|n| topology.index_of(n));
            if let Some(c) = node.and_then(|n| self.cores.get_mut(n)) {
                *c = c.saturating_sub(1);
            }
        }
        self
    }

    /// `get_next_available_core(node)` of [Majo11 §3.3]: a free core of `node`, else of the
    /// nearest node with one; `None` when every core is taken.
    pub(crate) fn next_available(&self, node: usize, free: &[usize]) -> Option<usize> {
        std::iter::once(node)
            .chain(self.fallback[node].iter().copied())
            .find(|&d| free[d] > 0)
    }
}

/// [Majo11 Algorithm 2] on any number of nodes. The processes homed on each node are sorted
/// by descending NUMA penalty (Algorithm 1, lines 2-3; the sort is stable, so equal penalties
/// keep their order) and the lists are merged: the head with the highest penalty is mapped
/// first, onto its home if a core is free there, else onto the nearest node with a free core.
/// On equal penalties the higher-numbered node's head goes first: line 4 takes Processor 0's
/// head only if its penalty is strictly higher. On two nodes this is the listing; on more,
/// the merge takes the highest head among all lists (ours). Returns (process, node) in merge
/// order, descending penalty; a process that finds no free core anywhere is left out.
pub(crate) fn map_maxlocal(procs: &[Proc], machine: &Processors) -> Vec<(usize, usize)> {
    let n = machine.cores.len();
    let mut order: Vec<usize> = (0..procs.len()).collect();
    order.sort_by(|&a, &b| procs[b].np.total_cmp(&procs[a].np));
    let mut lists: Vec<VecDeque<usize>> = vec![VecDeque::new(); n];
    for p in order {
        lists[procs[p].home].push_back(p);
    }
    let mut free = machine.cores.clone();
    let mut out = Vec::with_capacity(procs.len());
    loop {
        let head = (0..n)
            .filter_map(|d| lists[d].front().map(|&p| (d, p)))
            .max_by(|a, b| procs[a.1].np.total_cmp(&procs[b.1].np).then(a.0.cmp(&b.0)));
        let Some((node, p)) = head else {
            break;
        };
        lists[node].pop_front();
        if let Some(at) = machine.next_available(node, &free) {
            free[at] -= 1;
            out.push((p, at));
        }
    }
    out
}
