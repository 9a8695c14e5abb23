//! Replication's state across epochs (section 3.3.2): the pages marked for it by the page-local
//! rules, held until an application has enough of them, and what collapses teach about pages
//! (a page whose replicas collapsed too often is not replicated again).

use super::actions::replications;
use super::config::CarrefourConfig;
use super::global::AppDecision;
use super::pages::{PageKey, PageTable};
use rondpoint_model::{Action, Collapse, NodeId, Observation, Outcome, OutcomeStatus, Pid};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, HashMap};

/// Pages marked for replication, by process, and the processes replicating already.
#[derive(Debug, Default)]
pub(super) struct Replication {
    pending: BTreeMap<Pid, FxHashSet<PageKey>>,
    replicating: FxHashSet<Pid>,
    /// Pages each process had replicated, and of them collapsed (reported by the backend).
    made: FxHashMap<Pid, (u64, u64)>,
}

impl Replication {
    /// Counts the collapses the backend reported against the pages each process replicated.
    pub(super) fn count_collapses(&mut self, collapses: &[Collapse]) {
        for c in collapses {
            self.made.entry(c.page.pid).or_default().1 += c.page.count;
        }
    }

    /// Whether `pid`'s replicas collapse too often to go on: at least `fraction` of the pages
    /// it had replicated. Its writes reach the pages it reads, and each collapse costs more
    /// than the replica saved (the application-wide MRR test of [Dashti13 §3.2.1] exists to
    /// keep such applications from replicating; this catches those whose writes it missed).
    pub(super) fn collapsing(&self, pid: Pid, fraction: f64) -> bool {
        self.made.get(&pid).is_some_and(|&(made, collapsed)| {
            made > 0 && collapsed as f64 >= fraction * made as f64
        })
    }

    /// Marks a page for replication.
    pub(super) fn mark(&mut self, key: PageKey) {
        self.pending.entry(key.0).or_default().insert(key);
    }

    /// The replications of this epoch; `thread_nodes` are the nodes running each process's
    /// threads (where replicas go).
    ///
    /// Replication, once enough pages are marked (section 3.3.2): each process's pages in
    /// (page size, address) order, contiguous ones merged into one action.
    pub(super) fn replicate(
        &mut self,
        decisions: &[AppDecision],
        thread_nodes: &HashMap<Pid, Vec<NodeId>>,
        pages: &mut PageTable,
        cfg: &CarrefourConfig,
    ) -> Vec<Action> {
        let mut actions: Vec<Action> = Vec::new();
        let pids: Vec<Pid> = self.pending.keys().copied().collect();
        for pid in pids {
            let still_allowed = decisions.iter().any(|d| d.pid == pid && d.replication);
            let ready = self.replicating.contains(&pid)
                || self
                    .pending
                    .get(&pid)
                    .is_some_and(|v| v.len() >= cfg.min_replication_candidates);
            if !still_allowed {
                // Marks do not survive a change of heart (MRR or free memory fell).
                self.pending.remove(&pid);
                continue;
            }
            if !ready {
                continue;
            }
            let nodes = thread_nodes.get(&pid).cloned().unwrap_or_default();
            if nodes.len() < 2 {
                continue;
            }
            self.replicating.insert(pid);
            let keys: Vec<PageKey> = self
                .pending
                .remove(&pid)
                .unwrap_or_default()
                .into_iter()
                .collect();
            self.made.entry(pid).or_default().0 += keys.len() as u64;
            for key in &keys {
                if let Some(i) = pages.entry_for(key) {
                    pages.slot_mut(i).set_replicated(true);
                }
            }
            actions.extend(replications(keys, &nodes));
        }
        self.bound(cfg.max_tracked_pages);
        actions
    }

    /// Bounds the pending lists to the tracking capacity.
    fn bound(&mut self, max_tracked_pages: usize) {
        for v in self.pending.values_mut() {
            if v.len() > max_tracked_pages {
                let mut keys: Vec<PageKey> = v.drain().collect();
                keys.sort_unstable();
                keys.truncate(max_tracked_pages);
                v.extend(keys);
            }
        }
    }

    /// Bytes held by the marks.
    pub(super) fn state_bytes(&self) -> usize {
        self.pending
            .values()
            .map(|v| v.len() * (std::mem::size_of::<PageKey>() + 8))
            .sum::<usize>()
    }
}

/// Counts the collapses a backend reports into the pages they hit, which are no longer
/// replicated (they may be marked again; after `max_collapses_per_page`, never).
pub(super) fn forget_collapsed(pages: &mut PageTable, collapses: &[Collapse]) {
    for c in collapses {
        let size = c.page.page_size.bytes();
        for k in 0..c.page.count {
            let key = (c.page.pid, c.page.start + k * size, c.page.page_size);
            if let Some(i) = pages.entry_for(&key) {
                let slot = pages.slot_mut(i);
                slot.add_collapses(c.count);
                slot.set_replicated(false);
            }
        }
    }
}

/// The pages of the replications among `actions` that left no replica and did not place the
/// pages otherwise either: skipped (a dry run, a rate limit), failed, or substituted (a backend
/// that cannot replicate interleaves the pages instead) with pages left unplaced. They are
/// taken as collapsed once, so that Carrefour does not go on believing replicas exist (it never
/// looks at a replicated page again until it collapses). Replications a substitute placed in
/// full are not: the pages are left be, as replicas would be; a machine that replicates reports
/// its own collapses, page by page.
///
/// A replication made for some pages of its range and not others (a simulated machine out of
/// memory on a node) counts over the whole range: the outcome does not say which pages have
/// replicas, and a made replica believed unmade costs one more request for it (which finds it
/// made), while an unmade one believed made would leave its page alone for good.
pub(super) fn unmade<'a>(
    actions: &'a [Action],
    outcomes: &'a [Outcome],
) -> impl Iterator<Item = Collapse> + 'a {
    actions.iter().zip(outcomes).filter_map(|(a, o)| {
        let Action::Replicate { range, .. } = a else {
            return None;
        };
        let unmade = match o.status {
            OutcomeStatus::Skipped | OutcomeStatus::Failed | OutcomeStatus::Partial => true,
            OutcomeStatus::Substituted => o.pages_done < o.pages_requested,
            OutcomeStatus::Applied => false,
        };
        unmade.then_some(Collapse {
            page: *range,
            count: 1,
        })
    })
}

/// Nodes running each application's threads (where replicas go).
pub(super) fn thread_nodes(obs: &Observation) -> HashMap<Pid, Vec<NodeId>> {
    let mut thread_nodes: HashMap<Pid, Vec<NodeId>> = HashMap::new();
    for p in &obs.processes {
        let mut v: Vec<NodeId> = p.threads.iter().map(|t| t.node).collect();
        v.sort_unstable();
        v.dedup();
        thread_nodes.insert(p.pid, v);
    }
    thread_nodes
}
