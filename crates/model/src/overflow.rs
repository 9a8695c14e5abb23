//! Overflow placement: where a page goes once the node of the CPU that touches it is full,
//! under the remote-placement policies of [Choe21 §3]. Linux takes the next node of a static
//! fallback list [Choe21 Figure 1]; hybrid interleaves the overflow over the remote nodes
//! [Choe21 §3.1] and usage-aware sends it to the least-used one [Choe21 §3.2]; both group the
//! remote nodes into tiers by distance and use the nearest tier with room first [Choe21 §7].
//!
//! The rule lives here, in the vocabulary, so that the simulator (which applies it page by page
//! at allocation, as an in-kernel policy would: [`crate::MemPolicy::Overflow`]) and the
//! policies' reactive mode (which moves pages to where the rule would have put them) share one
//! definition.

use crate::ids::NodeId;
use serde::{Deserialize, Serialize};

/// How the overflow is spread over the nodes of a tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverflowSpread {
    /// Round-robin, one allocation unit (a page, or a whole huge page) at a time, over the
    /// tier's nodes that have room, in the tier's order (hybrid, [Choe21 §3.1]).
    Interleave,
    /// The tier's node with the fewest allocated bytes, total minus free (usage-aware as
    /// [Choe21 §4] and §5.1 describe it); ties go to the earlier node of the tier.
    FewestAllocated,
    /// The tier's node with the most free bytes (usage-aware as [Choe21 §3.3] words it); ties
    /// go to the earlier node of the tier.
    MostFree,
}

/// The remote tiers of one local node, nearest first: where a page touched from `local` goes
/// once `local` is full.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeTiers {
    pub local: NodeId,
    pub tiers: Vec<Vec<NodeId>>,
}

/// What the rule knows of a node: its size and its free memory (bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeRoom {
    pub total: f64,
    pub free: f64,
}

impl NodeRoom {
    /// Bytes in use: total minus free (the kernel's and the page cache's included, as the
    /// per-node counts of [Choe21 §4] include file pages).
    pub fn used(&self) -> f64 {
        self.total - self.free
    }
}

/// The node one overflow allocation of `bytes` goes to: the first tier (nearest first) with a
/// node that has room for it, and in that tier the node `spread` picks among those with room.
/// `cursor` is the interleaving position (used and advanced by [`OverflowSpread::Interleave`]
/// only: the node after the one chosen is tried first next time). Nodes `room` does not know
/// count as full. `None` when no tier has room: never a node without free memory.
pub fn overflow_node(
    tiers: &[Vec<NodeId>],
    spread: OverflowSpread,
    bytes: f64,
    room: impl Fn(NodeId) -> Option<NodeRoom>,
    cursor: &mut usize,
) -> Option<NodeId> {
    let fits = |id: NodeId| room(id).filter(|r| r.free >= bytes);
    for tier in tiers {
        let k = tier.len();
        let chosen = match spread {
            OverflowSpread::Interleave => (0..k).find_map(|step| {
                let id = tier[(*cursor + step) % k];
                fits(id).map(|_| {
                    *cursor = (*cursor + step + 1) % k;
                    id
                })
            }),
            OverflowSpread::FewestAllocated => best(tier, &fits, |r| -r.used()),
            OverflowSpread::MostFree => best(tier, &fits, |r| r.free),
        };
        if chosen.is_some() {
            return chosen;
        }
    }
    None
}

/// The node of `tier` with room whose `score` is highest; the earliest on ties.
fn best(
    tier: &[NodeId],
    fits: &dyn Fn(NodeId) -> Option<NodeRoom>,
    score: impl Fn(&NodeRoom) -> f64,
) -> Option<NodeId> {
    let mut chosen: Option<(NodeId, f64)> = None;
    for &id in tier {
        if let Some(r) = fits(id) {
            let s = score(&r);
            if chosen.is_none_or(|(_, b)| s > b) {
                chosen = Some((id, s));
            }
        }
    }
    chosen.map(|c| c.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const PAGE: f64 = 4096.0;

    fn ids(v: &[u16]) -> Vec<NodeId> {
        v.iter().copied().map(NodeId).collect()
    }

    /// Places `pages` pages one by one, updating the free memory as a kernel would.
    fn place(
        tiers: &[Vec<NodeId>],
        spread: OverflowSpread,
        mem: &mut BTreeMap<NodeId, NodeRoom>,
        pages: usize,
    ) -> Vec<Option<NodeId>> {
        let mut cursor = 0;
        (0..pages)
            .map(|_| {
                let got =
                    overflow_node(tiers, spread, PAGE, |id| mem.get(&id).copied(), &mut cursor);
                if let Some(id) = got {
                    if let Some(r) = mem.get_mut(&id) {
                        r.free -= PAGE;
                    }
                }
                got
            })
            .collect()
    }

    fn room(total_pages: u64, free_pages: u64) -> NodeRoom {
        NodeRoom {
            total: total_pages as f64 * PAGE,
            free: free_pages as f64 * PAGE,
        }
    }

    #[test]
    fn interleave_goes_round_robin_in_tier_order_and_skips_full_nodes() {
        let tiers = vec![ids(&[1, 2, 3])];
        let mut mem: BTreeMap<NodeId, NodeRoom> = [(1, 10, 10), (2, 10, 1), (3, 10, 10)]
            .map(|(n, t, f)| (NodeId(n), room(t, f)))
            .into();
        let got = place(&tiers, OverflowSpread::Interleave, &mut mem, 7);
        let want: Vec<Option<NodeId>> = [1, 2, 3, 1, 3, 1, 3].map(|n| Some(NodeId(n))).into();
        assert_eq!(got, want);
    }

    #[test]
    fn usage_rules_differ_on_unequal_nodes() {
        // Node 1: 100 pages, 60 used; node 2: 400 pages, 100 used. Fewest allocated picks 1
        // (60 < 100); most free picks 2 (300 > 40).
        let tiers = vec![ids(&[1, 2])];
        let mem = |id: NodeId| match id.0 {
            1 => Some(room(100, 40)),
            2 => Some(room(400, 300)),
            _ => None,
        };
        let mut c = 0;
        let pick = |s, c: &mut usize| overflow_node(&tiers, s, PAGE, mem, c);
        assert_eq!(
            pick(OverflowSpread::FewestAllocated, &mut c),
            Some(NodeId(1))
        );
        assert_eq!(pick(OverflowSpread::MostFree, &mut c), Some(NodeId(2)));
        assert_eq!(c, 0, "only interleaving moves the cursor");
    }

    #[test]
    fn nothing_when_every_tier_is_full() {
        let tiers = vec![ids(&[1]), ids(&[2])];
        let mem = |_| Some(room(10, 0));
        for s in [
            OverflowSpread::Interleave,
            OverflowSpread::FewestAllocated,
            OverflowSpread::MostFree,
        ] {
            assert_eq!(overflow_node(&tiers, s, PAGE, mem, &mut 0), None);
        }
        assert_eq!(
            overflow_node(&[], OverflowSpread::Interleave, PAGE, mem, &mut 0),
            None
        );
    }

    fn spreads() -> impl Strategy<Value = OverflowSpread> {
        prop_oneof![
            Just(OverflowSpread::Interleave),
            Just(OverflowSpread::FewestAllocated),
            Just(OverflowSpread::MostFree),
        ]
    }

    /// Up to 3 tiers over nodes 1..=6 (each node in one tier), each node with its size and
    /// free pages.
    fn machines() -> impl Strategy<Value = (Vec<Vec<NodeId>>, BTreeMap<NodeId, NodeRoom>)> {
        (
            proptest::collection::vec(0usize..3, 6),
            proptest::collection::vec((1u64..200, 0.0f64..1.0), 6),
        )
            .prop_map(|(tier_of, sizes)| {
                let mut tiers = vec![Vec::new(); 3];
                let mut mem = BTreeMap::new();
                for (i, (&t, &(total, free))) in tier_of.iter().zip(&sizes).enumerate() {
                    let id = NodeId(i as u16 + 1);
                    tiers[t].push(id);
                    mem.insert(id, room(total, (total as f64 * free) as u64));
                }
                tiers.retain(|t| !t.is_empty());
                (tiers, mem)
            })
    }

    proptest! {
        /// Never a node without room; never a farther tier while a nearer one has room; and
        /// within a tier, the node the rule names.
        #[test]
        fn every_choice_has_room_and_respects_tiers_and_the_rule(
            (tiers, mut mem) in machines(),
            spread in spreads(),
            pages in 1usize..600,
        ) {
            let mut cursor = 0;
            for _ in 0..pages {
                let before = mem.clone();
                let got = overflow_node(&tiers, spread, PAGE, |id| mem.get(&id).copied(), &mut cursor);
                let has_room = |id: &NodeId| before[id].free >= PAGE;
                let first_tier = tiers.iter().position(|t| t.iter().any(has_room));
                match (got, first_tier) {
                    (None, None) => break,
                    (Some(id), Some(ti)) => {
                        prop_assert!(has_room(&id));
                        prop_assert!(tiers[ti].contains(&id), "{id} not in the nearest tier with room");
                        let open: Vec<&NodeRoom> =
                            tiers[ti].iter().filter(|n| has_room(n)).map(|n| &before[n]).collect();
                        match spread {
                            OverflowSpread::FewestAllocated => prop_assert!(
                                open.iter().all(|r| before[&id].used() <= r.used())
                            ),
                            OverflowSpread::MostFree => prop_assert!(
                                open.iter().all(|r| before[&id].free >= r.free)
                            ),
                            OverflowSpread::Interleave => {}
                        }
                        if let Some(r) = mem.get_mut(&id) {
                            r.free -= PAGE;
                        }
                    }
                    (got, want) => prop_assert!(false, "got {got:?}, nearest tier with room {want:?}"),
                }
            }
        }

        /// Interleaving over a tier whose nodes all have room spreads evenly: after any number
        /// of pages, no node has more than one page more than another.
        #[test]
        fn interleave_spreads_evenly_within_a_tier(k in 1u16..8, pages in 0usize..200) {
            let tiers = vec![(1..=k).map(NodeId).collect::<Vec<_>>()];
            let mut mem: BTreeMap<NodeId, NodeRoom> =
                (1..=k).map(|n| (NodeId(n), room(1000, 1000))).collect();
            let mut count: BTreeMap<NodeId, usize> = BTreeMap::new();
            for id in place(&tiers, OverflowSpread::Interleave, &mut mem, pages).into_iter().flatten() {
                *count.entry(id).or_default() += 1;
            }
            let most = (1..=k).map(|n| count.get(&NodeId(n)).copied().unwrap_or(0)).max();
            let least = (1..=k).map(|n| count.get(&NodeId(n)).copied().unwrap_or(0)).min();
            prop_assert!(most.unwrap_or(0) - least.unwrap_or(0) <= 1, "{count:?}");
        }
    }
}
