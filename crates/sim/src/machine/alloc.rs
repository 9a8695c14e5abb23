//! Page placement as applications start: each page goes where its first toucher's allocation
//! policy puts it, as the kernel's page allocator would.

use super::SimMachine;
use crate::placement::Region;
use crate::scenario::FirstTouch;
use rondpoint_model::{MappingPolicy, MemPolicy, NodeId};

impl SimMachine {
    pub(super) fn allocate(&mut self, ai: usize) {
        let n = self.spec.nodes();
        let thread_nodes: Vec<usize> = self.apps[ai]
            .threads
            .iter()
            .map(|&t| self.node_of_thread(t))
            .collect();
        let policy = self.apps[ai].mempolicy.clone();
        let distances = self.spec.topology.distances().to_vec();
        for ri in 0..self.apps[ai].regions.len() {
            let len = self.apps[ai].regions[ri].len();
            let page_bytes = self.apps[ai].regions[ri].page_size.bytes() as f64;
            let blocks = thread_nodes.len();
            for p in 0..len {
                let toucher = match &self.apps[ai].models[ri].first_touch {
                    FirstTouch::Main => thread_nodes[0],
                    FirstTouch::Thread(i) => thread_nodes[(*i as usize).min(blocks - 1)],
                    FirstTouch::Partitioned => {
                        let per = len.div_ceil(blocks).max(1);
                        thread_nodes[(p / per).min(blocks - 1)]
                    }
                };
                let cursor = &mut self.apps[ai].interleave_cursor;
                let node = choose_node(
                    &policy, toucher, &self.free, page_bytes, &distances, cursor, n,
                );
                if matches!(
                    policy,
                    MemPolicy::Interleave { .. } | MemPolicy::WeightedInterleave { .. }
                ) {
                    self.totals.alloc_interleaved_pages +=
                        self.apps[ai].regions[ri].page_size.base_pages();
                }
                self.free[node] -= page_bytes;
                self.apps[ai].regions[ri].place(p, node);
            }
        }
        self.apps[ai].allocated = true;
        self.mark_app_dirty(ai);
    }
}

/// An application's memory policy as the mapping policies a kernel would list (the sim sets one
/// policy per application, at launch, so it covers every region; none for the default).
pub(super) fn mapping_policies(p: &MemPolicy, regions: &[Region]) -> Vec<MappingPolicy> {
    let Some(mode) = p.mode() else {
        return Vec::new();
    };
    let mut out: Vec<MappingPolicy> = regions
        .iter()
        .map(|r| MappingPolicy {
            start: r.base,
            end: r.base + r.bytes(),
            mode,
            nodes: p.nodes(),
            numa_balancing: false,
        })
        .collect();
    out.sort_by_key(|m| m.start);
    out
}

/// The kernel's fallback order from node `from`: by distance, then node number (static, as
/// [Choe21 Figure 1] shows).
fn fallback_order(from: usize, distances: &[Vec<u32>]) -> Vec<usize> {
    let mut v: Vec<usize> = (0..distances.len()).collect();
    v.sort_by_key(|&d| (distances[from][d], d));
    v
}

/// Where a page touched from node `toucher` goes under an allocation policy.
fn choose_node(
    policy: &MemPolicy,
    toucher: usize,
    free: &[f64],
    bytes: f64,
    distances: &[Vec<u32>],
    cursor: &mut usize,
    n: usize,
) -> usize {
    let fits = |d: usize| free[d] >= bytes;
    let first_fit = |allowed: &dyn Fn(usize) -> bool| {
        fallback_order(toucher, distances)
            .into_iter()
            .find(|&d| allowed(d) && fits(d))
    };
    let idx = |id: &NodeId| usize::from(id.0).min(n - 1);
    let any = || first_fit(&|_| true).unwrap_or(toucher);
    match policy {
        MemPolicy::Default => any(),
        MemPolicy::Bind { nodes } | MemPolicy::PreferredMany { nodes } => {
            let set: Vec<usize> = nodes.iter().map(idx).collect();
            first_fit(&|d| set.contains(&d)).unwrap_or_else(any)
        }
        MemPolicy::Interleave { nodes } => {
            let set: Vec<usize> = nodes.iter().map(idx).collect();
            for _ in 0..set.len().max(1) {
                let d = set[*cursor % set.len().max(1)];
                *cursor += 1;
                if fits(d) {
                    return d;
                }
            }
            any()
        }
        MemPolicy::WeightedInterleave { weights } => {
            let total: u64 = weights.iter().map(|w| u64::from(w.1)).sum();
            if total == 0 {
                return any();
            }
            for _ in 0..weights.len().max(1) {
                let mut k = (*cursor as u64) % total;
                *cursor += 1;
                for (id, w) in weights {
                    if k < u64::from(*w) {
                        let d = idx(id);
                        if fits(d) {
                            return d;
                        }
                        break;
                    }
                    k -= u64::from(*w);
                }
            }
            any()
        }
    }
}
