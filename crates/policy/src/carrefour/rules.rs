//! The page-local rules (section 3.2.2): which of co-location, replication and interleaving
//! applies to a page, from its statistics and what its application's global decisions allow,
//! worked out once for every combination; and the lists of an epoch's pages under each rule.

use super::config::CarrefourConfig;
use super::global::AppDecision;
use super::pages::{self, PageTable};

/// What an application's global decisions allow (bits), as the page-local rules read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Allowed(u8);

impl Allowed {
    pub(super) const NOTHING: Self = Self(0);
    const ENABLED: u8 = 1;
    const REPLICATION: u8 = 2;
    const INTERLEAVING: u8 = 4;
    const CO_LOCATION: u8 = 8;

    pub(super) fn of(d: &AppDecision) -> Self {
        Self(
            (u8::from(d.enabled) * Self::ENABLED)
                | (u8::from(d.replication) * Self::REPLICATION)
                | (u8::from(d.interleaving) * Self::INTERLEAVING)
                | (u8::from(d.co_location) * Self::CO_LOCATION),
        )
    }

    const fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// The page-local rule that applies to a page (section 3.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Rule {
    /// Nothing to do: too few samples, its application not enabled or the mechanism off, a
    /// page already where it should be, or already replicated.
    None = 0,
    /// Accessed from one node only, and elsewhere: migrate it there (co-location).
    Migrate = 1,
    /// Accessed from several nodes, never written: mark it for replication.
    Mark = 2,
    /// Accessed from several nodes otherwise: interleave it (P_migrate, P_node).
    Interleave = 3,
}

/// What the page-local rules read of a page, as bits ([`Rule::facts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Facts(u8);

impl Facts {
    /// At least `min_samples_per_page` samples.
    const DECIDES: u8 = 1;
    /// Accessed from one node only.
    const SINGLE: u8 = 2;
    /// Known to be on the one node that accessed it.
    const THERE: u8 = 4;
    /// Never written.
    const READ_ONLY: u8 = 8;
    /// At most `max_collapses_per_page` collapses.
    const FEW_COLLAPSES: u8 = 16;
    /// Replicated.
    const REPLICATED: u8 = 32;

    const fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// The rule of every combination of a page's facts (64) under every [`Allowed`] (16), worked
/// out once: a page's rule is then one lookup.
static RULES: [[Rule; 64]; 16] = {
    let mut table = [[Rule::None; 64]; 16];
    let mut allowed = 0;
    while allowed < 16 {
        let mut facts = 0;
        while facts < 64 {
            table[allowed][facts] = Rule::of_facts(Facts(facts as u8), Allowed(allowed as u8));
            facts += 1;
        }
        allowed += 1;
    }
    table
};

impl Rule {
    /// The rule for `slot` (one table lookup: see [`RULES`]).
    pub(super) fn of(slot: &pages::Slot, allowed: Allowed, cfg: &CarrefourConfig) -> Self {
        RULES[usize::from(allowed.0 & 15)][usize::from(Self::facts(slot, cfg).0)]
    }

    /// The facts the rules read of `slot`, worked out without branches.
    fn facts(slot: &pages::Slot, cfg: &CarrefourConfig) -> Facts {
        // The one node that accessed it, as the slot keeps its home (dense index + 1).
        let node = slot.node_mask.trailing_zeros() + 1;
        Facts(
            (u8::from(u32::from(slot.samples) >= cfg.min_samples_per_page) * Facts::DECIDES)
                | (u8::from(slot.node_mask.is_power_of_two()) * Facts::SINGLE)
                | (u8::from(u32::from(slot.home_code()) == node) * Facts::THERE)
                | (u8::from(slot.writes == 0) * Facts::READ_ONLY)
                | (u8::from(slot.collapses() <= cfg.max_collapses_per_page) * Facts::FEW_COLLAPSES)
                | (u8::from(slot.replicated()) * Facts::REPLICATED),
        )
    }

    /// The rule of a page with `facts` in an application allowed `allowed` (section 3.2.2,
    /// in the paper's order).
    const fn of_facts(facts: Facts, allowed: Allowed) -> Self {
        if !facts.has(Facts::DECIDES) || !allowed.has(Allowed::ENABLED) {
            Rule::None
        } else if facts.has(Facts::SINGLE) {
            if allowed.has(Allowed::CO_LOCATION) && !facts.has(Facts::THERE) {
                Rule::Migrate
            } else {
                Rule::None
            }
        } else if facts.has(Facts::READ_ONLY)
            && allowed.has(Allowed::REPLICATION)
            && facts.has(Facts::FEW_COLLAPSES)
        {
            if facts.has(Facts::REPLICATED) {
                Rule::None
            } else {
                Rule::Mark
            }
        } else if allowed.has(Allowed::INTERLEAVING) {
            Rule::Interleave
        } else {
            Rule::None
        }
    }
}

/// Each rule's pages in an epoch, in the order they were first sampled.
#[derive(Debug, Default)]
pub(super) struct RuleLists {
    /// The lists, one after another, each with room for every current page.
    lists: Vec<u32>,
    /// How far each list was written this epoch.
    len: [usize; 4],
    /// Room for each list (the current pages of this epoch).
    room: usize,
}

impl RuleLists {
    /// Gives every current page of `pages` the rule that applies to it (`Rule::of`, from its
    /// slot and `allowed[space]`, what its space's application allows), and lists it under
    /// that rule.
    pub(super) fn sort(&mut self, pages: &PageTable, allowed: &[Allowed], cfg: &CarrefourConfig) {
        let current = pages.current();
        let n_current = current.len();
        // Each rule's pages, listed without a branch: a page is written to the end of its
        // rule's list (`Rule::None`'s is not read), one list after another in `lists`. What
        // the lists held last epoch is left in place (each list is read only as far as it was
        // written this epoch): only room added is written before use.
        let lists = &mut self.lists;
        lists.reserve_exact((4 * n_current).saturating_sub(lists.len()));
        lists.resize(4 * n_current, 0);
        let mut len = [0usize; 4];
        for (i, slot) in pages.listed(current) {
            let space = PageTable::space_of_key(slot.packed_key());
            let allowed = allowed.get(space).copied().unwrap_or(Allowed::NOTHING);
            let rule = Rule::of(slot, allowed, cfg) as usize;
            if let Some(end) = lists.get_mut(rule * n_current + len[rule]) {
                *end = i as u32;
            }
            len[rule] += 1;
        }
        self.len = len;
        self.room = n_current;
    }

    /// The pages (slots) listed under `rule` by the last [`Self::sort`].
    pub(super) fn list(&self, rule: Rule) -> &[u32] {
        let r = rule as usize;
        &self.lists[r * self.room..r * self.room + self.len[r]]
    }

    /// Bytes held.
    pub(super) fn state_bytes(&self) -> usize {
        self.lists.capacity() * std::mem::size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The page-local rules, worked out without branches, agree with section 3.2.2 read as
        /// a sequence of tests.
        #[test]
        fn page_rules_follow_the_paper(
            by_node in proptest::array::uniform4(0u8..3),
            writes in 0u16..3,
            home in proptest::option::of(0usize..4),
            replicated in any::<bool>(),
            collapses in 0u32..8,
            allowed in 0u8..16,
            min_samples in 1u32..4,
        ) {
            let mut slot = pages::Slot::default();
            for (node, &n) in by_node.iter().enumerate() {
                for k in 0..n {
                    slot.record(node, u16::from(k) < writes);
                }
            }
            if let Some(h) = home {
                slot.set_home(h);
            }
            slot.set_replicated(replicated);
            slot.add_collapses(collapses);
            let cfg = CarrefourConfig { min_samples_per_page: min_samples, ..CarrefourConfig::default() };
            let allows = Allowed(allowed);
            // Section 3.2.2, in the paper's order.
            let expected = if u32::from(slot.samples) < min_samples || !allows.has(Allowed::ENABLED) {
                Rule::None
            } else if slot.node_mask.count_ones() == 1 {
                let node = slot.node_mask.trailing_zeros() as usize;
                if allows.has(Allowed::CO_LOCATION) && home != Some(node) {
                    Rule::Migrate
                } else {
                    Rule::None
                }
            } else if slot.writes == 0
                && allows.has(Allowed::REPLICATION)
                && collapses <= cfg.max_collapses_per_page
            {
                if replicated { Rule::None } else { Rule::Mark }
            } else if allows.has(Allowed::INTERLEAVING) {
                Rule::Interleave
            } else {
                Rule::None
            };
            prop_assert_eq!(Rule::of(&slot, allows, &cfg), expected);
        }
    }
}
