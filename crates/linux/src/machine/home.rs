//! Where sampled pages are: the placement queries that give each sample its page's node, and
//! the memory of where each page was last seen, to spot the pages the kernel moved.

use super::LinuxMachine;
use crate::actuate;
use crate::sys::Sys;
use rondpoint_model::{Action, NodeId, Pid, Sample};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

impl<S: Sys> LinuxMachine<S> {
    /// Where each sampled page is now (one move_pages query per process, within what is left
    /// of the epoch's `max_queried_pages`).
    pub(super) fn fill_home_nodes(&mut self, samples: &mut [Sample]) {
        // Each process's distinct pages, in the order first sampled, within the budget.
        let mut pages: BTreeMap<Pid, Vec<u64>> = BTreeMap::new();
        let mut seen: FxHashSet<(Pid, u64)> = FxHashSet::default();
        let mut budget = self.config.max_queried_pages.saturating_sub(self.queried);
        for s in samples.iter() {
            if budget > 0 && seen.insert((s.pid, s.page())) {
                pages.entry(s.pid).or_default().push(s.page());
                budget -= 1;
                self.queried += 1;
            }
        }
        let mut home: FxHashMap<(Pid, u64), NodeId> = FxHashMap::default();
        for (pid, mut addrs) in pages {
            addrs.sort_unstable();
            if let Ok(status) = actuate::query(&mut self.sys, pid, &addrs) {
                for (a, s) in addrs.iter().zip(status) {
                    if s >= 0 {
                        home.insert((pid, *a), NodeId(s as u16));
                    }
                }
            }
        }
        // A page found on another node than at its last query, and not moved by rondpoint,
        // was moved by the kernel: with NUMA balancing, on a hinting fault, to the faulting
        // node. That fault (the first sample from the page's new node) reached the page where
        // it was before; reading the node after the move would make it look local.
        let mut pre_move: FxHashMap<(Pid, u64), NodeId> = FxHashMap::default();
        for (&key, &now) in &home {
            if let Some(&before) = self.last_seen_node.get(&key) {
                if before != now {
                    pre_move.insert(key, before);
                }
            }
        }
        if self.last_seen_node.len() + home.len() > 4 * self.config.max_queried_pages {
            self.last_seen_node.clear();
        }
        self.last_seen_node
            .extend(home.iter().map(|(&k, &v)| (k, v)));
        for s in samples.iter_mut() {
            let key = (s.pid, s.page());
            s.home_node = home.get(&key).copied();
            if s.home_node == Some(s.node) {
                if let Some(before) = pre_move.remove(&key) {
                    s.home_node = Some(before);
                }
            }
        }
    }

    /// Forgets where the pages an action moves were seen: pages rondpoint moves are not the
    /// kernel's moves (fill_home_nodes).
    pub(super) fn forget_moved_pages(&mut self, action: &Action) {
        match action {
            Action::MigratePages { range, .. }
            | Action::Interleave { range, .. }
            | Action::Replicate { range, .. } => {
                let size = range.page_size.bytes();
                if range.count > self.last_seen_node.len() as u64 {
                    self.last_seen_node
                        .retain(|k, _| k.0 != range.pid || k.1 < range.start || k.1 >= range.end());
                } else {
                    for k in 0..range.count {
                        self.last_seen_node
                            .remove(&(range.pid, range.start + k * size));
                    }
                }
            }
            Action::MoveApplication { pid, .. } | Action::MoveNodePages { pid, .. } => {
                self.last_seen_node.retain(|k, _| k.0 != *pid);
            }
            _ => {}
        }
    }
}
