//! Page placement as applications start: each page goes where its first toucher's allocation
//! policy puts it, as the kernel's page allocator would.

use super::SimMachine;
use crate::placement::Region;
use crate::scenario::FirstTouch;
use rondpoint_model::overflow::overflow_node;
use rondpoint_model::{MappingPolicy, MemPolicy, NodeId, NodeRoom};

impl SimMachine {
    pub(super) fn allocate(&mut self, ai: usize) {
        if self.allocate_planned(ai) {
            return;
        }
        let n = self.spec.nodes();
        let thread_nodes: Vec<usize> = self.apps[ai]
            .threads
            .iter()
            .map(|&t| self.node_of_thread(t))
            .collect();
        let policy = self.apps[ai].mempolicy.clone();
        let distances = self.spec.topology.distances().to_vec();
        let orders: Vec<Vec<usize>> = (0..n).map(|d| fallback_order(d, &distances)).collect();
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
                let memory = Memory {
                    free: &self.free,
                    total: &self.spec.mem_bytes,
                    orders: &orders,
                };
                let cursor = &mut self.apps[ai].interleave_cursor;
                let node = choose_node(&policy, toucher, &memory, page_bytes, cursor, n);
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
pub(super) fn fallback_order(from: usize, distances: &[Vec<u32>]) -> Vec<usize> {
    let mut v: Vec<usize> = (0..distances.len()).collect();
    v.sort_by_key(|&d| (distances[from][d], d));
    v
}

/// What an allocation sees of the machine: free and total bytes per node, and each node's
/// fallback order ([`fallback_order`]).
struct Memory<'a> {
    free: &'a [f64],
    total: &'a [u64],
    orders: &'a [Vec<usize>],
}

/// Where a page touched from node `toucher` goes under an allocation policy.
fn choose_node(
    policy: &MemPolicy,
    toucher: usize,
    memory: &Memory<'_>,
    bytes: f64,
    cursor: &mut usize,
    n: usize,
) -> usize {
    let free = memory.free;
    let fits = |d: usize| free[d] >= bytes;
    let first_fit = |allowed: &dyn Fn(usize) -> bool| {
        memory.orders[toucher]
            .iter()
            .copied()
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
        MemPolicy::Overflow { spread, tiers } => {
            if fits(toucher) {
                return toucher;
            }
            let room = |id: NodeId| {
                let d = usize::from(id.0);
                (d < n).then(|| NodeRoom {
                    total: memory.total[d] as f64,
                    free: free[d],
                })
            };
            tiers
                .iter()
                .find(|t| usize::from(t.local.0) == toucher)
                .and_then(|t| overflow_node(&t.tiers, *spread, bytes, room, cursor))
                .map_or_else(any, |id| usize::from(id.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::{NodeTiers, OverflowSpread};

    const GIB: f64 = (1u64 << 30) as f64;

    fn overflow(spread: OverflowSpread, tiers: Vec<Vec<u16>>) -> MemPolicy {
        MemPolicy::Overflow {
            spread,
            tiers: vec![NodeTiers {
                local: NodeId(0),
                tiers: tiers
                    .into_iter()
                    .map(|t| t.into_iter().map(NodeId).collect())
                    .collect(),
            }],
        }
    }

    /// Where `pages` pages of 1 GiB touched from node 0 go, page by page.
    fn place(policy: &MemPolicy, free_gib: &[f64], pages: usize) -> Vec<usize> {
        let n = free_gib.len();
        let mut free: Vec<f64> = free_gib.iter().map(|g| g * GIB).collect();
        let total = vec![(16.0 * GIB) as u64; n];
        let distances: Vec<Vec<u32>> = (0..n)
            .map(|a| (0..n).map(|b| if a == b { 10 } else { 21 }).collect())
            .collect();
        let mut cursor = 0;
        let orders: Vec<Vec<usize>> = (0..n).map(|d| fallback_order(d, &distances)).collect();
        (0..pages)
            .map(|_| {
                let memory = Memory {
                    free: &free,
                    total: &total,
                    orders: &orders,
                };
                let d = choose_node(policy, 0, &memory, GIB, &mut cursor, n);
                free[d] -= GIB;
                d
            })
            .collect()
    }

    #[test]
    fn overflow_is_local_first_then_spread_where_first_touch_piles_it_on_one_node() {
        let free = [2.0, 8.0, 8.0, 8.0];
        assert_eq!(place(&MemPolicy::Default, &free, 6), [0, 0, 1, 1, 1, 1]);
        let hy = overflow(OverflowSpread::Interleave, vec![vec![1, 2, 3]]);
        assert_eq!(place(&hy, &free, 6), [0, 0, 1, 2, 3, 1]);
        // Usage-aware on node 1 with 4 GiB less used than nodes 2 and 3: node 1 first until
        // it is as full, then in turn.
        let ua = overflow(OverflowSpread::FewestAllocated, vec![vec![1, 2, 3]]);
        assert_eq!(place(&ua, &[1.0, 8.0, 4.0, 4.0], 6), [0, 1, 1, 1, 1, 1]);
        assert_eq!(place(&ua, &[1.0, 6.0, 4.0, 4.0], 6), [0, 1, 1, 1, 2, 3]);
    }

    #[test]
    fn overflow_takes_the_nearer_tier_first_and_falls_back_when_all_are_full() {
        let tiered = overflow(OverflowSpread::Interleave, vec![vec![1], vec![2, 3]]);
        assert_eq!(place(&tiered, &[0.0, 2.0, 1.0, 1.0], 5), [1, 1, 2, 3, 0]);
        // A toucher the policy has no tiers for falls back by distance.
        let elsewhere = MemPolicy::Overflow {
            spread: OverflowSpread::Interleave,
            tiers: vec![NodeTiers {
                local: NodeId(3),
                tiers: vec![vec![NodeId(2)]],
            }],
        };
        assert_eq!(place(&elsewhere, &[0.0, 1.0, 1.0, 0.0], 2), [1, 2]);
    }
}
