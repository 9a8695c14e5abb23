//! Why a policy acted: the explanation trail that recordings, reports and `rondpoint explain`
//! carry with every action.

use serde::{Deserialize, Serialize};

/// Why a policy took some of its actions.
///
/// A policy gives its reasons for a batch of actions in the batch's order: each covers the
/// next [`Reason::actions`] actions. In an [`Explained`] batch, `actions` is the number of the
/// batch's actions it explains, wherever they are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// How many actions it explains.
    pub actions: usize,
    /// Who decided: the policy, and in a composed policy its lane ("pages lane: carrefour").
    pub by: String,
    /// What the policy saw that made it act, with the figures and the thresholds they passed.
    pub evidence: String,
    /// What the policy expects the actions to gain, in its own model; none when it has no
    /// model of the gain (it then says how the gain is checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
}

impl Reason {
    /// A reason for the next `actions` actions.
    pub fn new(actions: usize, by: impl Into<String>, evidence: impl Into<String>) -> Self {
        Self {
            actions,
            by: by.into(),
            evidence: evidence.into(),
            expected: None,
        }
    }

    /// The same, with what the policy expects.
    pub fn expecting(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }
}

/// A batch of actions' reasons: each action's reason by index.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explained {
    /// The reasons, each with the number of the batch's actions it explains.
    pub reasons: Vec<Reason>,
    /// For each action of the batch, the index of its reason in `reasons`.
    pub why: Vec<u32>,
}

impl Explained {
    /// The reasons a policy gave (`runs`, in the order of its `n` actions) as one reason per
    /// action. Actions past the reasons' counts get one reason saying that `by` gave none; a
    /// count past the batch's end is cut to it.
    pub fn new(runs: Vec<Reason>, n: usize, by: &str) -> Self {
        let mut out = Self::default();
        for r in runs {
            let left = n - out.why.len();
            let take = r.actions.min(left);
            if take == 0 {
                continue;
            }
            out.push(Reason { actions: 0, ..r }, take);
        }
        if out.why.len() < n {
            let missing = n - out.why.len();
            out.push(Reason::new(0, by, "the policy gave no reason"), missing);
        }
        out
    }

    /// Appends `count` actions explained by `reason` (its own count ignored).
    pub fn push(&mut self, mut reason: Reason, count: usize) {
        if count == 0 {
            return;
        }
        reason.actions = count;
        let k = u32::try_from(self.reasons.len()).unwrap_or(u32::MAX);
        self.reasons.push(reason);
        self.why.extend(std::iter::repeat_n(k, count));
    }

    /// The actions at `order` (indices into this batch), in that order, with their reasons;
    /// reasons no chosen action has are left out.
    pub fn pick(&self, order: &[usize]) -> Self {
        let mut index = vec![None; self.reasons.len()];
        let mut out = Self::default();
        for &i in order {
            let Some(&k) = self.why.get(i) else {
                continue;
            };
            let k = k as usize;
            let Some(r) = self.reasons.get(k) else {
                continue;
            };
            let new = *index[k].get_or_insert_with(|| {
                out.reasons.push(Reason {
                    actions: 0,
                    ..r.clone()
                });
                out.reasons.len() - 1
            });
            out.reasons[new].actions += 1;
            out.why.push(u32::try_from(new).unwrap_or(u32::MAX));
        }
        out
    }

    /// The reasons as a policy gives them: one per run of consecutive actions with the same
    /// reason.
    pub fn runs(&self) -> Vec<Reason> {
        let mut out: Vec<Reason> = Vec::new();
        let mut last = None;
        for &k in &self.why {
            match out.last_mut() {
                Some(r) if last == Some(k) => r.actions += 1,
                _ => {
                    if let Some(r) = self.reasons.get(k as usize) {
                        out.push(Reason {
                            actions: 1,
                            ..r.clone()
                        });
                    }
                    last = Some(k);
                }
            }
        }
        out
    }

    /// Appends another batch's actions and reasons after this one's.
    pub fn extend(&mut self, other: Explained) {
        let base = u32::try_from(self.reasons.len()).unwrap_or(u32::MAX);
        self.reasons.extend(other.reasons);
        self.why
            .extend(other.why.into_iter().map(|k| k.saturating_add(base)));
    }

    /// The reason for action `i`.
    pub fn of(&self, i: usize) -> Option<&Reason> {
        self.reasons.get(*self.why.get(i)? as usize)
    }

    /// Whether no action is explained.
    pub fn is_empty(&self) -> bool {
        self.why.is_empty()
    }

    /// Whether the reasons are consistent: one index per action, each pointing at a reason,
    /// and each reason's count its number of actions.
    pub fn is_consistent(&self, actions: usize) -> bool {
        if self.why.len() != actions {
            return false;
        }
        let mut counts = vec![0usize; self.reasons.len()];
        for &k in &self.why {
            match counts.get_mut(k as usize) {
                Some(c) => *c += 1,
                None => return false,
            }
        }
        counts
            .iter()
            .zip(&self.reasons)
            .all(|(c, r)| *c == r.actions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: usize, e: &str) -> Reason {
        Reason::new(n, "p", e)
    }

    #[test]
    fn runs_become_one_reason_per_action_and_back() {
        let e = Explained::new(vec![r(2, "a"), r(1, "b")], 3, "p");
        assert_eq!(e.why, [0, 0, 1]);
        assert!(e.is_consistent(3));
        assert_eq!(e.runs(), vec![r(2, "a"), r(1, "b")]);
        assert_eq!(e.of(2).map(|x| x.evidence.as_str()), Some("b"));
    }

    #[test]
    fn actions_without_a_reason_say_so_and_counts_are_cut_to_the_batch() {
        let e = Explained::new(vec![r(1, "a")], 3, "p");
        assert_eq!(e.why, [0, 1, 1]);
        assert_eq!(e.reasons[1].evidence, "the policy gave no reason");
        let cut = Explained::new(vec![r(5, "a"), r(2, "b")], 2, "p");
        assert_eq!(cut.why, [0, 0]);
        assert_eq!(cut.reasons.len(), 1);
        assert!(cut.is_consistent(2));
    }

    #[test]
    fn picking_reorders_and_drops_unused_reasons() {
        let e = Explained::new(vec![r(2, "a"), r(1, "b"), r(1, "c")], 4, "p");
        let p = e.pick(&[3, 0]);
        assert_eq!(p.why, [0, 1]);
        assert_eq!(p.reasons[0].evidence, "c");
        assert_eq!(p.reasons[1].evidence, "a");
        assert_eq!(p.reasons[1].actions, 1);
        assert!(p.is_consistent(2));
    }

    #[test]
    fn extending_keeps_each_batch_s_reasons() {
        let mut e = Explained::new(vec![r(1, "a")], 1, "p");
        e.extend(Explained::new(vec![r(2, "b")], 2, "q"));
        assert_eq!(e.why, [0, 1, 1]);
        assert!(e.is_consistent(3));
    }
}
