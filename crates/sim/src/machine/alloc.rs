//! Page placement as applications start: each page goes where its first toucher's allocation
//! policy puts it, as the kernel's page allocator would, or where an installed layout says
//! (`layout`).
//!
//! Applications that start at the same time allocate together, not one after the other in the
//! order the scenario lists them ([`SimMachine::allocate_together`]): otherwise a program
//! listed first could take the still-empty home node of one listed later, and a result would
//! depend on the listing.

use super::{RegionModel, SimMachine};
use crate::placement::Region;
use crate::scenario::FirstTouch;
use rondpoint_model::overflow::overflow_node;
use rondpoint_model::{MappingPolicy, MemPolicy, NodeId, NodeRoom};
use std::cmp::Ordering;

impl SimMachine {
    /// Allocates applications `due` (not yet allocated), earliest start first; those that
    /// start at the same time allocate together.
    pub(super) fn allocate_in_start_order(&mut self, mut due: Vec<usize>) {
        due.sort_by(|&a, &b| self.apps[a].start_ns.total_cmp(&self.apps[b].start_ns));
        let groups: Vec<Vec<usize>> = due
            .chunk_by(|&a, &b| self.apps[a].start_ns == self.apps[b].start_ns)
            .map(<[usize]>::to_vec)
            .collect();
        for group in groups {
            self.allocate_together(&group);
        }
    }

    /// Allocates applications that start at the same time, their pages interleaved in time as
    /// each would touch them at its own rate.
    ///
    /// Each thread that first-touches memory does so at one rate, the same for every thread
    /// (a page fault costs a thread the same whatever its program: a fault, a zeroed page), and
    /// the threads of an application touch in parallel. So an application goes through a region
    /// as fast as the threads that touch it: a `partitioned` region at its thread count times
    /// the rate, a region touched by one thread (`main`, `thread = i`) at the rate. A page's
    /// time is the bytes per toucher before it plus half its own, `Σ bytes / touchers`, and
    /// the pages of all the applications are placed in the order of those times, each as its
    /// application's policy says; a tie goes to the application whose name sorts first (names
    /// are unique, so the order never depends on the listing). The rate itself drops out: the
    /// model gives allocation no simulated time, so only the order counts. Why this reading:
    /// it needs no parameter the workload model lacks (who touches a region is
    /// `first_touch`), and it is what happens on a machine, where 16 copies of a SPEC program
    /// have each touched their 600 MiB long before a 16-thread program has touched its 20 GiB
    /// ([Choe21 §5.1]'s mixes count on it). Spreading each application's footprint over one
    /// common start-up interval instead would have a small program and a large one finish
    /// together, as if the small one touched slower. Within an application the order stays its
    /// own: region by region, page by page (a `partitioned` region's blocks one after the
    /// other, not touched side by side: a simplification of the model).
    pub(super) fn allocate_together(&mut self, group: &[usize]) {
        let layout = self.layout.take();
        let n = self.spec.nodes();
        let distances = self.spec.topology.distances();
        let orders: Vec<Vec<usize>> = (0..n).map(|d| fallback_order(d, distances)).collect();
        let mut walks: Vec<Walk> = group.iter().map(|&ai| self.walk(ai)).collect();
        walks.sort_by(|a, b| self.apps[a.ai].name.cmp(&self.apps[b.ai].name));
        while let Some((w, rival)) = next_page(&walks) {
            // The first walk places pages until the runner-up's next page comes first, or a
            // quantum later (runs of pages, not single pages, keep allocation fast; the order
            // still depends on nothing but the applications).
            let rival = rival.map(|r| (walks[r].mid() + QUANTUM, r));
            let walk = &mut walks[w];
            loop {
                let planned = layout
                    .as_ref()
                    .and_then(|l| l.get(walk.group + walk.block(&self.apps[walk.ai].regions)));
                match planned {
                    Some(place) => self.place_planned(walk, place),
                    None => self.place_by_policy(walk, &orders),
                }
                let app = &self.apps[walk.ai];
                walk.advance(&app.regions, &app.models);
                let behind = |(at, r): (f64, usize)| match walk.mid().total_cmp(&at) {
                    Ordering::Less => false,
                    Ordering::Equal => w > r,
                    Ordering::Greater => true,
                };
                if walk.done || rival.is_some_and(behind) {
                    break;
                }
            }
        }
        self.layout = layout;
        for &ai in group {
            self.apps[ai].allocated = true;
            self.mark_app_dirty(ai);
        }
    }

    /// Application `ai` before it places its first page.
    fn walk(&self, ai: usize) -> Walk {
        let app = &self.apps[ai];
        let group = self.apps[..ai]
            .iter()
            .flat_map(|a| &a.regions)
            .map(Region::blocks)
            .sum();
        let mut w = Walk {
            ai,
            ri: 0,
            p: 0,
            at: 0.0,
            step: 0.0,
            toucher: 0,
            until: 0,
            done: false,
            thread_nodes: app
                .threads
                .iter()
                .map(|&t| self.node_of_thread(t))
                .collect(),
            policy: app.mempolicy.clone(),
            group,
            placed: vec![0.0; self.spec.nodes()],
            block_mass: 0.0,
        };
        w.enter(&app.regions, &app.models);
        w
    }

    /// Places the next page of `w` where its toucher's allocation policy puts it.
    fn place_by_policy(&mut self, w: &Walk, orders: &[Vec<usize>]) {
        let (ai, ri, p) = (w.ai, w.ri, w.p);
        let n = self.spec.nodes();
        let region = &self.apps[ai].regions[ri];
        let size = region.page_size;
        let toucher = w.toucher;
        let memory = Memory {
            free: &self.free,
            total: &self.spec.mem_bytes,
            orders,
        };
        let cursor = &mut self.apps[ai].interleave_cursor;
        let page_bytes = size.bytes() as f64;
        let node = choose_node(&w.policy, toucher, &memory, page_bytes, cursor, n);
        if matches!(
            w.policy,
            MemPolicy::Interleave { .. } | MemPolicy::WeightedInterleave { .. }
        ) {
            self.totals.alloc_interleaved_pages += size.base_pages();
        }
        self.free[node] -= page_bytes;
        self.apps[ai].regions[ri].place(p, node);
    }
}

/// How far (bytes per toucher) the first application may run ahead of the next one before
/// that one places its next pages: 16 pages of 4 KiB for a program touching with one thread,
/// 1 MiB for one touching with 16.
const QUANTUM: f64 = 65536.0;

/// One application's way through its pages as it allocates: the page it places next, and
/// what its placement needs to know.
pub(super) struct Walk {
    pub(super) ai: usize,
    pub(super) ri: usize,
    pub(super) p: usize,
    /// When the application starts to touch its next page: bytes per toucher before it.
    at: f64,
    /// Bytes per toucher of a page of region `ri` (how long a page takes).
    step: f64,
    /// The node of the thread that touches the next page, and the page of region `ri` where
    /// another thread takes over (its length when none does).
    toucher: usize,
    until: usize,
    done: bool,
    /// The node of each of the application's threads.
    thread_nodes: Vec<usize>,
    policy: MemPolicy,
    /// The first page group (in a layout's order) of region `ri`.
    group: usize,
    /// Of the next page's block: access mass placed per node so far, and its whole mass
    /// (for a planned layout).
    pub(super) placed: Vec<f64>,
    pub(super) block_mass: f64,
}

impl Walk {
    /// The block of region `ri` the next page is in.
    fn block(&self, regions: &[Region]) -> usize {
        regions.get(self.ri).map_or(0, |r| r.block_of(self.p))
    }

    /// Moves on past the page just placed.
    fn advance(&mut self, regions: &[Region], models: &[RegionModel]) {
        self.at += self.step;
        self.p += 1;
        if self.p < self.until {
            return;
        }
        if self.p >= regions[self.ri].len() {
            self.group += regions[self.ri].blocks();
            self.ri += 1;
            self.p = 0;
        }
        self.enter(regions, models);
    }

    /// Sets what holds from page `p` of region `ri` on, until `until`: its pace, its toucher
    /// (a `partitioned` region: thread k touches block k), or marks the walk done past the
    /// last region.
    fn enter(&mut self, regions: &[Region], models: &[RegionModel]) {
        let Some((r, m)) = regions.get(self.ri).zip(models.get(self.ri)) else {
            self.done = true;
            return;
        };
        let (len, threads) = (r.len(), self.thread_nodes.len().max(1));
        let last = threads - 1;
        self.step = per_toucher(r, m, threads);
        (self.toucher, self.until) = match m.first_touch {
            FirstTouch::Main => (self.thread_nodes[0], len),
            FirstTouch::Thread(i) => (self.thread_nodes[(i as usize).min(last)], len),
            FirstTouch::Partitioned => {
                let per = len.div_ceil(threads).max(1);
                let k = (self.p / per).min(last);
                let until = if k == last {
                    len
                } else {
                    ((k + 1) * per).min(len)
                };
                (self.thread_nodes[k], until)
            }
        };
    }

    /// When this walk's next page is touched: at the middle of its touch.
    fn mid(&self) -> f64 {
        self.at + self.step / 2.0
    }
}

/// Bytes per toucher of a page of `region` (its model `m`; `threads` in the application): its
/// bytes over the threads that touch it in parallel.
fn per_toucher(region: &Region, m: &RegionModel, threads: usize) -> f64 {
    let touchers = match m.first_touch {
        FirstTouch::Partitioned => threads.max(1),
        FirstTouch::Main | FirstTouch::Thread(_) => 1,
    };
    region.page_size.bytes() as f64 / touchers as f64
}

/// The walk whose next page comes first and the one whose next page comes after it, the
/// earlier walk first on a tie; none when all are done.
fn next_page(walks: &[Walk]) -> Option<(usize, Option<usize>)> {
    let (mut first, mut second): (Option<usize>, Option<usize>) = (None, None);
    let before = |x: usize, y: Option<usize>| {
        y.is_none_or(|y| {
            walks[x]
                .mid()
                .total_cmp(&walks[y].mid())
                .then(x.cmp(&y))
                .is_lt()
        })
    };
    for i in (0..walks.len()).filter(|&i| !walks[i].done) {
        if before(i, first) {
            second = first;
            first = Some(i);
        } else if before(i, second) {
            second = Some(i);
        }
    }
    first.map(|f| (f, second))
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
