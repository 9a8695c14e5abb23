//! Carrefour's decisions as actions: single-page migrations and interleavings gathered as sort
//! keys, then merged into ranges; replications merged by process.

use super::pages::PageKey;
use rondpoint_model::{Action, NodeId, NodeList, PageRange, PageSize, Pid};

/// The actions of an epoch from its page `moves` and its `replications`: migrations, then
/// interleavings, then replications (by process, page size and address).
pub(super) fn merged(mut moves: Vec<PageMove>, replications: Vec<Action>) -> Vec<Action> {
    // Each technique's actions sorted by their group and start, as one coalescing of every
    // single-page action would list them.
    moves.sort_unstable();
    let mut merged = PageMove::merge(&moves);
    merged.extend(replications);
    merged
}

/// The group of an action for coalescing: (technique, pid, page size, target) in one integer,
/// the target in the low 29 bits: here a node number (the tests' reference coalescing also
/// puts a hash of a list of nodes there, above every node number).
fn group(technique: u64, pid: Pid, page_size: PageSize, target: u64) -> u64 {
    let huge = u64::from(page_size == PageSize::Huge2M);
    technique << 62 | u64::from(pid.0 as u32) << 30 | huge << 29 | target
}

/// A single-page migration or interleaving, as the integer it sorts by when coalescing: its
/// [`group`] (the target a single node) above the page's start address. Decisions are
/// gathered as these (no allocation each) and become actions once merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct PageMove(u128);

impl PageMove {
    pub(super) const MIGRATE: u64 = 1;
    pub(super) const INTERLEAVE: u64 = 2;

    pub(super) fn new(technique: u64, (pid, start, page_size): PageKey, to: NodeId) -> Self {
        let group = group(technique, pid, page_size, u64::from(to.0));
        Self(u128::from(group) << 64 | u128::from(start))
    }

    /// The actions of sorted page moves, contiguous pages with the same target merged.
    fn merge(moves: &[PageMove]) -> Vec<Action> {
        let mut out: Vec<Action> = Vec::new();
        let mut last: Option<(u64, PageRange)> = None;
        let mut emit = |group: u64, range: PageRange| {
            let to = NodeId((group & ((1 << 29) - 1)) as u16);
            out.push(if group >> 62 == Self::MIGRATE {
                Action::MigratePages { range, to }
            } else {
                Action::Interleave {
                    range,
                    nodes: NodeList::from_slice(&[to]),
                }
            });
        };
        for m in moves {
            let (group, start) = ((m.0 >> 64) as u64, m.0 as u64);
            if let Some((g, r)) = &mut last {
                if *g == group && r.end() == start {
                    r.count += 1;
                    continue;
                }
                emit(*g, *r);
            }
            let page_size = if group >> 29 & 1 == 1 {
                PageSize::Huge2M
            } else {
                PageSize::Base4K
            };
            let pid = Pid((group >> 30) as u32 as i32);
            last = Some((group, PageRange::page_of(pid, start, page_size)));
        }
        if let Some((g, r)) = last {
            emit(g, r);
        }
        out
    }
}

/// The replications of one process's pages onto `nodes`: in (page size, address) order,
/// contiguous pages merged into one action.
pub(super) fn replications(mut pages: Vec<PageKey>, nodes: &[NodeId]) -> Vec<Action> {
    pages.sort_unstable_by_key(|&(_, start, size)| (size == PageSize::Huge2M, start));
    let mut out: Vec<Action> = Vec::new();
    for (pid, start, size) in pages {
        let range = PageRange::page_of(pid, start, size);
        match out.last_mut() {
            Some(Action::Replicate { range: r, .. })
                if r.pid == pid && r.page_size == size && r.end() == start =>
            {
                r.count += 1;
            }
            _ => out.push(Action::Replicate {
                range,
                nodes: NodeList::from_slice(nodes),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PAGE: u64 = 0x7f00_0000_0000;

    proptest! {
        /// One process's replications, merged as Carrefour lists them, are the coalesced
        /// single-page replications.
        #[test]
        fn merged_replications_are_the_coalesced_actions(
            pages in proptest::collection::hash_set((any::<bool>(), 0u64..12), 0..40),
        ) {
            let nodes = NodeList::from_slice(&[NodeId(0), NodeId(2)]);
            let keys: Vec<PageKey> = pages
                .into_iter()
                .map(|(huge, page)| {
                    let size = if huge { PageSize::Huge2M } else { PageSize::Base4K };
                    (Pid(3), PAGE + page * size.bytes(), size)
                })
                .collect();
            let single = keys
                .iter()
                .map(|&(pid, start, size)| Action::Replicate {
                    range: PageRange::page_of(pid, start, size),
                    nodes: nodes.clone(),
                })
                .collect();
            prop_assert_eq!(replications(keys, &nodes), coalesce(single));
        }
    }

    proptest! {
        /// Page moves merged straight from their sort keys give the actions that building every
        /// single-page action and coalescing them gives.
        #[test]
        fn merged_page_moves_are_the_coalesced_actions(
            moves in proptest::collection::vec(
                (any::<bool>(), 1i32..4, any::<bool>(), 0u64..12, 0u16..3),
                0..40,
            ),
        ) {
            let mut keys = Vec::new();
            let mut actions = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for (migrate, pid, huge, page, to) in moves {
                let size = if huge { PageSize::Huge2M } else { PageSize::Base4K };
                let start = PAGE + page * size.bytes();
                // One decision per page and epoch, as Carrefour makes them.
                if !seen.insert((pid, start, huge)) {
                    continue;
                }
                let (pid, to) = (Pid(pid), NodeId(to));
                let range = PageRange::page_of(pid, start, size);
                if migrate {
                    keys.push(PageMove::new(PageMove::MIGRATE, (pid, start, size), to));
                    actions.push(Action::MigratePages { range, to });
                } else {
                    keys.push(PageMove::new(PageMove::INTERLEAVE, (pid, start, size), to));
                    actions.push(Action::Interleave { range, nodes: NodeList::from_slice(&[to]) });
                }
            }
            keys.sort_unstable();
            prop_assert_eq!(PageMove::merge(&keys), coalesce(actions));
        }
    }

    /// Merges single-page actions on contiguous pages with the same target into ranges: the
    /// general coalescing that [`PageMove::merge`] and Carrefour's merged replications must agree
    /// with (the reference of the property tests).
    fn coalesce(actions: Vec<Action>) -> Vec<Action> {
        // Actions with the same technique, process, page size and target sort together, by start
        // address: the sort key is the action's group above its start. Actions on no page range
        // sort first.
        fn target(nodes: &[NodeId]) -> u64 {
            match nodes {
                [one] => u64::from(one.0),
                _ => {
                    use std::hash::{Hash, Hasher};
                    let mut h = rustc_hash::FxHasher::default();
                    nodes.hash(&mut h);
                    (1 << 28) | (h.finish() & ((1 << 28) - 1))
                }
            }
        }
        fn key(a: &Action) -> u128 {
            let (technique, range, target) = match a {
                Action::MigratePages { range, to } => (PageMove::MIGRATE, range, u64::from(to.0)),
                Action::Interleave { range, nodes } => (PageMove::INTERLEAVE, range, target(nodes)),
                Action::Replicate { range, nodes } => (3, range, target(nodes)),
                _ => return 0,
            };
            u128::from(group(technique, range.pid, range.page_size, target)) << 64
                | u128::from(range.start)
        }
        // Sorted as (key, position): small to move, and actions with equal keys keep their order.
        let mut order: Vec<(u128, usize)> = actions.iter().map(key).zip(0..).collect();
        order.sort_unstable();
        let mut out: Vec<Action> = Vec::with_capacity(actions.len());
        let mut actions: Vec<Option<Action>> = actions.into_iter().map(Some).collect();
        let actions = order.into_iter().filter_map(|(_, i)| actions[i].take());
        for a in actions {
            if let Some(last) = out.last_mut() {
                let merged = match (last, &a) {
                    (
                        Action::MigratePages { range: r, to: t },
                        Action::MigratePages { range, to },
                    ) if t == to && extends(r, range) => {
                        r.count += range.count;
                        true
                    }
                    (
                        Action::Interleave { range: r, nodes: n },
                        Action::Interleave { range, nodes },
                    ) if n == nodes && extends(r, range) => {
                        r.count += range.count;
                        true
                    }
                    (
                        Action::Replicate { range: r, nodes: n },
                        Action::Replicate { range, nodes },
                    ) if n == nodes && extends(r, range) => {
                        r.count += range.count;
                        true
                    }
                    _ => false,
                };
                if merged {
                    continue;
                }
            }
            out.push(a);
        }
        out
    }

    fn extends(r: &PageRange, next: &PageRange) -> bool {
        r.pid == next.pid && r.page_size == next.page_size && r.end() == next.start
    }
}
