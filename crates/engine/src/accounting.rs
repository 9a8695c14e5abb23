//! What a run did: actions and pages by technique and outcome, and who decided them on what
//! evidence ([`Accounting`], the end report's source).

use rondpoint_model::{Action, Outcome, OutcomeStatus, Reason};
use serde::Serialize;
use std::collections::BTreeMap;

/// Totals per technique over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TechniqueTotals {
    pub actions: u64,
    pub applied: u64,
    pub partial: u64,
    pub failed: u64,
    pub skipped: u64,
    pub substituted: u64,
    pub pages_requested: u64,
    /// Pages that ended where asked, moved or already there.
    pub pages_done: u64,
    /// Pages placed by the actions (not already where asked): what moving cost.
    pub pages_moved: u64,
    pub bytes_copied: u64,
    /// Pages that did not end where asked, by reason (the kernel's per-page status, such as
    /// "EBUSY" or "ENOENT", or why a whole action failed).
    pub pages_failed_by_reason: BTreeMap<String, u64>,
}

impl TechniqueTotals {
    fn add(&mut self, o: &TechniqueTotals) {
        self.actions += o.actions;
        self.applied += o.applied;
        self.partial += o.partial;
        self.failed += o.failed;
        self.skipped += o.skipped;
        self.substituted += o.substituted;
        self.pages_requested += o.pages_requested;
        self.pages_done += o.pages_done;
        self.pages_moved += o.pages_moved;
        self.bytes_copied += o.bytes_copied;
        for (reason, pages) in &o.pages_failed_by_reason {
            *self
                .pages_failed_by_reason
                .entry(reason.clone())
                .or_default() += pages;
        }
    }
}

/// What one policy (or lane of a composed policy) did over a run, and why
/// ([`Policy::reasons`](rondpoint_policy_api::Policy::reasons)): the end report's explanation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReasonTotals {
    pub actions: u64,
    /// Actions by technique ([`Action::technique`]).
    pub by_technique: BTreeMap<String, u64>,
    /// The evidence of its last action, and the gain it expected.
    pub last_evidence: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_expected: Option<String>,
}

/// Accounting of a whole run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Accounting {
    pub epochs: u64,
    /// By technique name ([`Action::technique`]).
    pub by_technique: BTreeMap<String, TechniqueTotals>,
    pub samples_seen: u64,
    /// What the policy ran without or with only an approximation of, on this machine
    /// (estimated observations, substituted actions).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reduced: Vec<String>,
    /// Whether a stop signal ended the run.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// What the policy said about itself at the end of the run
    /// ([`Policy::notes`](rondpoint_policy_api::Policy::notes)).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Start decisions the machine could carry out only once its programs ran
    /// ([`Machine::start_ready`](crate::Machine::start_ready)): when they were, or why they
    /// were not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<String>,
    /// The actions by who decided them, with the last evidence each gave.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, ReasonTotals>,
}

impl Accounting {
    /// Counts `action` under who decided it, with the evidence given (`reason`).
    pub(crate) fn explain(&mut self, action: &Action, reason: Option<&Reason>) {
        let Some(r) = reason else {
            return;
        };
        // Looked up before inserting: thousands of actions an epoch share a few deciders and
        // techniques, so the names are copied once each, not once per action.
        if !self.reasons.contains_key(&r.by) {
            self.reasons.insert(r.by.clone(), ReasonTotals::default());
        }
        let Some(t) = self.reasons.get_mut(&r.by) else {
            return;
        };
        t.actions += 1;
        let technique = action.technique();
        match t.by_technique.get_mut(technique) {
            Some(n) => *n += 1,
            None => {
                t.by_technique.insert(technique.to_string(), 1);
            }
        }
        if t.last_evidence != r.evidence {
            t.last_evidence.clone_from(&r.evidence);
        }
        if t.last_expected != r.expected {
            t.last_expected.clone_from(&r.expected);
        }
    }

    pub(crate) fn record(&mut self, action: &Action, outcome: &Outcome) {
        let t = self
            .by_technique
            .entry(action.technique().to_string())
            .or_default();
        t.actions += 1;
        match outcome.status {
            OutcomeStatus::Applied => t.applied += 1,
            OutcomeStatus::Partial => t.partial += 1,
            OutcomeStatus::Failed => t.failed += 1,
            OutcomeStatus::Skipped => t.skipped += 1,
            OutcomeStatus::Substituted => t.substituted += 1,
        }
        t.pages_requested += outcome.pages_requested;
        t.pages_done += outcome.pages_done;
        t.pages_moved += outcome.pages_moved;
        t.bytes_copied += outcome.bytes_copied;
        for (reason, pages) in &outcome.failures {
            *t.pages_failed_by_reason.entry(reason.clone()).or_default() += pages;
        }
        if outcome.status == OutcomeStatus::Failed && outcome.failures.is_empty() {
            let reason = outcome.note.clone().unwrap_or_else(|| "failed".into());
            *t.pages_failed_by_reason.entry(reason).or_default() +=
                action.pages().max(outcome.pages_requested);
        }
    }

    /// Adds a later run on the same machine (a daemon that reloaded its configuration and
    /// started its policy again): counts summed, the later run's stop and notes (the policy
    /// in place at the end), what either ran without, and each decider's latest evidence.
    pub fn absorb(&mut self, later: Accounting) {
        self.epochs += later.epochs;
        self.samples_seen += later.samples_seen;
        for (name, t) in later.by_technique {
            self.by_technique.entry(name).or_default().add(&t);
        }
        for r in later.reduced {
            if !self.reduced.contains(&r) {
                self.reduced.push(r);
            }
        }
        self.stopped = later.stopped;
        self.notes = later.notes;
        self.deferred.extend(later.deferred);
        for (by, t) in later.reasons {
            let e = self.reasons.entry(by).or_default();
            e.actions += t.actions;
            for (technique, n) in t.by_technique {
                *e.by_technique.entry(technique).or_default() += n;
            }
            e.last_evidence = t.last_evidence;
            e.last_expected = t.last_expected;
        }
    }

    /// Pages done by one technique (moved, or already where asked).
    pub fn pages_done(&self, technique: &str) -> u64 {
        self.by_technique.get(technique).map_or(0, |t| t.pages_done)
    }

    /// Pages one technique placed (not already where asked).
    pub fn pages_moved(&self, technique: &str) -> u64 {
        self.by_technique
            .get(technique)
            .map_or(0, |t| t.pages_moved)
    }

    /// Actions not attempted: over a per-epoch rate limit, for a process that had exited, or
    /// in a dry run.
    pub fn actions_skipped(&self) -> u64 {
        self.by_technique.values().map(|t| t.skipped).sum()
    }

    /// One line for each technique some of whose actions failed outright: how many of how
    /// many, and why (a policy whose pins all failed would otherwise look like one that chose
    /// not to act).
    pub fn failure_notes(&self) -> Vec<String> {
        self.by_technique
            .iter()
            .filter(|(_, t)| t.failed > 0)
            .map(|(name, t)| {
                let why: Vec<&str> = t
                    .pages_failed_by_reason
                    .keys()
                    .map(String::as_str)
                    .collect();
                format!(
                    "{} of {} {name} actions failed{}",
                    t.failed,
                    t.actions,
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", why.join("; "))
                    }
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::{NodeId, PageRange, PageSize, Pid};

    fn run_of(pages: u64, by: &str, evidence: &str, stopped: bool) -> Accounting {
        let mut a = Accounting::default();
        let action = Action::MigratePages {
            range: PageRange {
                pid: Pid(1),
                start: 0,
                count: pages,
                page_size: PageSize::Base4K,
            },
            to: NodeId(1),
        };
        let mut o = Outcome::applied(0);
        o.pages_done = pages;
        a.record(&action, &o);
        a.explain(&action, Some(&Reason::new(1, by, evidence.to_string())));
        a.epochs = 3;
        a.samples_seen = 10;
        a.stopped = stopped;
        a.notes = vec![format!("{by} notes")];
        a.reduced = vec!["estimated traffic".into()];
        a
    }

    #[test]
    fn a_later_run_adds_its_counts_and_brings_its_stop_notes_and_evidence() {
        let mut first = run_of(5, "carrefour", "before", false);
        first.absorb(run_of(7, "carrefour", "after", true));
        assert_eq!(first.epochs, 6);
        assert_eq!(first.samples_seen, 20);
        assert_eq!(first.pages_done("migrate"), 12);
        assert_eq!(first.by_technique["migrate"].actions, 2);
        assert!(first.stopped);
        assert_eq!(first.notes, ["carrefour notes"]);
        assert_eq!(first.reduced, ["estimated traffic"]);
        let r = &first.reasons["carrefour"];
        assert_eq!((r.actions, r.last_evidence.as_str()), (2, "after"));
    }
}
