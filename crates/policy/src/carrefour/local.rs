//! Carrefour's page-local decisions (section 3.2.2): co-location, marks for replication and
//! interleaving, page by page.

use super::Carrefour;
use super::actions::PageMove;
use super::global::AppDecision;
use super::interleave::Interleaving;
use super::pages::{PageTable, Slot};
use super::rules::{Allowed, Rule};
use rand_pcg::Pcg64Mcg;
use rondpoint_model::{NodeId, Topology};

impl Carrefour {
    /// The page moves of this epoch, given each application's `decisions` and interleaving
    /// `odds` (one per decision); marks pages for replication on the way.
    ///
    /// Page-local decisions (section 3.2.2), in two steps: every current page is given the
    /// rule that applies to it (`Rule::of`, from its slot and its application's decisions
    /// only); then the pages under each rule are acted on, each rule's in the order they
    /// were first sampled (the interleaving draws are made in that order: deterministic).
    pub(super) fn decide_pages(
        &mut self,
        topology: &Topology,
        decisions: &[AppDecision],
        odds: &[Option<Interleaving>],
    ) -> Vec<PageMove> {
        // Each space's (process, page size) application decision, what it allows, and its
        // interleaving odds.
        let decision_of: Vec<Option<usize>> = self
            .pages
            .spaces()
            .iter()
            .map(|(pid, _)| decisions.iter().position(|d| d.pid == *pid))
            .collect();
        let allowed: Vec<Allowed> = decision_of
            .iter()
            .map(|k| k.map_or(Allowed::NOTHING, |k| Allowed::of(&decisions[k])))
            .collect();
        let space_odds: Vec<Option<&Interleaving>> = decision_of
            .iter()
            .map(|k| k.and_then(|k| odds[k].as_ref()))
            .collect();
        self.rules.sort(&self.pages, &allowed, &self.cfg);
        let mut moves = Moves::default();
        co_locate(
            &self.pages,
            self.rules.list(Rule::Migrate),
            topology,
            &mut moves,
        );
        for (_, slot) in self.pages.listed(self.rules.list(Rule::Mark)) {
            self.replication.mark(self.pages.page(slot.packed_key()));
        }
        interleave(
            &self.pages,
            self.rules.list(Rule::Interleave),
            &space_odds,
            &mut self.rng,
            topology,
            &mut moves,
        );
        // A page acted on starts afresh (statistics kept over a window would otherwise decide
        // it again on the same evidence).
        for i in moves.acted {
            self.pages.slot_mut(i).reset_stats();
        }
        moves.moves
    }
}

/// The page moves of an epoch, and the slots of the pages moved.
#[derive(Default)]
struct Moves {
    moves: Vec<PageMove>,
    acted: Vec<usize>,
}

impl Moves {
    /// Moves the page of slot `i`, `slot`, to `to` by `technique` ([`PageMove::MIGRATE`] or
    /// [`PageMove::INTERLEAVE`]).
    fn push(&mut self, technique: u64, pages: &PageTable, (i, slot): (usize, &Slot), to: NodeId) {
        let key = pages.page(slot.packed_key());
        self.moves.push(PageMove::new(technique, key, to));
        self.acted.push(i);
    }
}

/// Migrates each page of `list` (accessed from one node only, and elsewhere) to that node.
fn co_locate(pages: &PageTable, list: &[u32], topology: &Topology, moves: &mut Moves) {
    for (i, slot) in pages.listed(list) {
        let node = slot.node_mask.trailing_zeros() as usize;
        moves.push(
            PageMove::MIGRATE,
            pages,
            (i, slot),
            topology.nodes()[node].id,
        );
    }
}

/// Interleaves the pages of `list` (accessed from several nodes) with their space's odds
/// (`space_odds`, by space): each moves away from its node with probability P_migrate, to a
/// node drawn by P_node.
fn interleave(
    pages: &PageTable,
    list: &[u32],
    space_odds: &[Option<&Interleaving>],
    rng: &mut Pcg64Mcg,
    topology: &Topology,
    moves: &mut Moves,
) {
    for (i, slot) in pages.listed(list) {
        let space = PageTable::space_of_key(slot.packed_key());
        let Some(odds) = space_odds.get(space).copied().flatten() else {
            continue;
        };
        if let Some(dest) = odds.draw(rng, slot.home_code()) {
            moves.push(
                PageMove::INTERLEAVE,
                pages,
                (i, slot),
                topology.nodes()[dest].id,
            );
        }
    }
}
