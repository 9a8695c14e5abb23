//! Carrying out policy actions: page moves and replications (with their copies and fixed
//! costs) and allocation policies; thread placements are in `moves`.

use super::SimMachine;
use crate::placement::{REPLICATED, UNALLOCATED, mask_nodes};
use rondpoint_model::{
    Action, MemPolicy, NodeId, NodeList, Outcome, PageCounts, PageRange, PageSize, Pid,
};

impl SimMachine {
    pub(super) fn apply_one(&mut self, index: usize, action: &Action) -> Outcome {
        match action {
            Action::SetMemPolicy { pid, policy } => self.set_mempolicy(index, *pid, policy),
            Action::MigratePages { range, to } => match self.node_index(*to) {
                Some(to) => self.move_range(index, range, &|_| to),
                None => Outcome::failed(index, format!("{to} does not exist")),
            },
            Action::Interleave { range, nodes } => {
                let idx: Option<Vec<usize>> = nodes.iter().map(|id| self.node_index(*id)).collect();
                match idx {
                    Some(idx) if !idx.is_empty() => {
                        let k = idx.len() as u64;
                        self.move_range(index, range, &|i| idx[(i % k) as usize])
                    }
                    _ => Outcome::failed(index, "interleave needs existing nodes"),
                }
            }
            Action::Replicate { range, nodes } => self.replicate(index, range, nodes),
            Action::PinThread { pid, tid, cpus } => self.pin_thread(index, *pid, *tid, cpus),
            Action::ExchangeThreads { a, b } => self.exchange_threads(index, a, b),
            Action::MoveApplication { .. } => {
                let plan = self.plan_placements(std::slice::from_ref(action), false);
                self.apply_placed(index, action, plan.into_iter().next().flatten(), false)
            }
            Action::MoveNodePages {
                pid,
                from,
                to,
                pages,
            } => self.move_node_pages(index, *pid, *from, to, *pages),
        }
    }

    fn set_mempolicy(&mut self, index: usize, pid: Pid, policy: &MemPolicy) -> Outcome {
        let Some(ai) = self.app_of(pid) else {
            return no_process(index, 0, pid);
        };
        if let Some(bad) = policy
            .nodes()
            .iter()
            .find(|id| self.node_index(**id).is_none())
        {
            return Outcome::failed(index, format!("{bad} does not exist"));
        }
        self.apps[ai].mempolicy = policy.clone();
        let mut o = Outcome::applied(index);
        o.note = if self.apps[ai].allocated {
            Some("applies to allocations from now on".into())
        } else {
            None
        };
        o
    }

    fn replicate(&mut self, index: usize, range: &PageRange, nodes: &NodeList) -> Outcome {
        let Some(ai) = self.app_of(range.pid) else {
            return no_process(index, range.count, range.pid);
        };
        let mut mask = 0u64;
        for id in nodes {
            match self.node_index(*id) {
                Some(i) => mask |= 1 << i,
                None => return Outcome::failed(index, format!("{id} does not exist")),
            }
        }
        let (mut done, mut moved) = (0, 0);
        let mut copied = 0;
        let mut nomem = 0;
        for addr in range.page_starts() {
            let Some((ri, page)) = self.locate(ai, addr) else {
                continue;
            };
            let bytes = self.apps[ai].regions[ri].page_size.bytes();
            let from = self.apps[ai].regions[ri].node_of(page);
            if from == UNALLOCATED {
                continue;
            }
            let have = self.apps[ai].regions[ri]
                .replica_mask(page)
                .unwrap_or(1u64 << from.min(63));
            let new: Vec<usize> = mask_nodes(mask & !have).collect();
            if new.iter().any(|&x| self.free[x] < bytes as f64) {
                nomem += 1;
                continue;
            }
            let src = mask_nodes(have).next().unwrap_or(0);
            let copies = self.apps[ai].regions[ri].replicate(page, mask);
            moved += u64::from(!copies.is_empty());
            for x in copies {
                self.free[x] -= bytes as f64;
                self.queue_copy(src, x, bytes as f64);
                copied += bytes;
            }
            done += 1;
        }
        if moved > 0 {
            self.charge_app(ai, moved as f64 * self.spec.costs.migrate_page_ns);
            self.mark_app_dirty(ai);
        }
        let failures = if nomem > 0 {
            vec![("ENOMEM".into(), nomem)]
        } else {
            vec![]
        };
        let counts = PageCounts {
            requested: range.count,
            done,
            moved,
            bytes_copied: copied,
        };
        Outcome::for_pages(index, counts, failures)
    }

    /// The region holding `addr`, and the page index in it.
    fn locate(&self, ai: usize, addr: u64) -> Option<(usize, usize)> {
        self.apps[ai]
            .regions
            .iter()
            .enumerate()
            .find_map(|(ri, r)| {
                (addr >= r.base && addr < r.base + r.bytes())
                    .then(|| (ri, ((addr - r.base) / r.page_size.bytes()) as usize))
            })
    }

    /// Moves the pages of `range` to nodes chosen by `target(i)` (i = page index in the range).
    pub(super) fn move_range(
        &mut self,
        index: usize,
        range: &PageRange,
        target: &dyn Fn(u64) -> usize,
    ) -> Outcome {
        let Some(ai) = self.app_of(range.pid) else {
            return no_process(index, range.count, range.pid);
        };
        let (mut done, mut moved) = (0, 0);
        let mut copied = 0u64;
        let mut failures: Vec<(String, u64)> = Vec::new();
        let mut fail = |why: &str| {
            if let Some(f) = failures.iter_mut().find(|f| f.0 == why) {
                f.1 += 1;
            } else {
                failures.push((why.to_string(), 1));
            }
        };
        let mut fixed_ns = 0.0;
        for (i, addr) in range.page_starts().enumerate() {
            let to = target(i as u64);
            let Some((ri, page)) = self.locate(ai, addr) else {
                fail("EFAULT");
                continue;
            };
            let (bytes, current) = {
                let region = &self.apps[ai].regions[ri];
                (region.page_size.bytes(), region.node_of(page))
            };
            match current {
                UNALLOCATED => fail("ENOENT"),
                REPLICATED => fail("EBUSY"),
                from if usize::from(from) == to => done += 1,
                from => {
                    if self.free[to] < bytes as f64 {
                        fail("ENOMEM");
                        continue;
                    }
                    fixed_ns += self.move_page(ai, ri, page, usize::from(from), to);
                    copied += bytes;
                    done += 1;
                    moved += 1;
                }
            }
        }
        if copied > 0 {
            self.charge_app(ai, fixed_ns);
            self.mark_app_dirty(ai);
        }
        let counts = PageCounts {
            requested: range.count,
            done,
            moved,
            bytes_copied: copied,
        };
        Outcome::for_pages(index, counts, failures)
    }

    /// Moves page `page` of region `ri` of app `ai` from node `from` to node `to`, which the
    /// caller found has room: the copy loads both controllers and the links on the way during
    /// the next step. Returns the fixed cost of the move besides the copy (ns).
    fn move_page(&mut self, ai: usize, ri: usize, page: usize, from: usize, to: usize) -> f64 {
        let page_size = self.apps[ai].regions[ri].page_size;
        let bytes = page_size.bytes() as f64;
        self.apps[ai].regions[ri].place(page, to);
        self.free[to] -= bytes;
        self.free[from] += bytes;
        self.queue_copy(from, to, bytes);
        match page_size {
            PageSize::Base4K => self.spec.costs.migrate_page_ns,
            PageSize::Huge2M => self.spec.costs.migrate_huge_page_ns,
        }
    }

    /// Moves up to `pages` 4 KiB units of the process's pages on node `from` to the nodes
    /// `to`, round-robin, in reverse allocation order: the simulator allocates regions and
    /// their pages in address order, so the last pages of the last regions, the overflow of a
    /// full node, go first. A huge page counts 512 and moves whole, so the last one may take
    /// the count past `pages`. Stops with the rest failed ENOMEM once no node of `to` has
    /// room; costs as [`Self::move_range`]'s.
    fn move_node_pages(
        &mut self,
        index: usize,
        pid: Pid,
        from: NodeId,
        to: &NodeList,
        pages: u64,
    ) -> Outcome {
        let Some(ai) = self.app_of(pid) else {
            return no_process(index, pages, pid);
        };
        let Some(src) = self.node_index(from) else {
            return Outcome::failed(index, format!("{from} does not exist"));
        };
        let targets: Option<Vec<usize>> = to.iter().map(|id| self.node_index(*id)).collect();
        let targets: Vec<usize> = targets.unwrap_or_default();
        if targets.is_empty() || targets.contains(&src) {
            return Outcome::failed(
                index,
                "the target nodes must exist and not include the source",
            );
        }
        let (mut moved, mut copied, mut fixed_ns) = (0u64, 0u64, 0.0);
        let mut cursor = 0;
        let mut out_of_room = false;
        'regions: for ri in (0..self.apps[ai].regions.len()).rev() {
            let region = &self.apps[ai].regions[ri];
            if region.pages_on()[src] == 0 {
                continue;
            }
            let (len, size) = (region.len(), region.page_size);
            for page in (0..len).rev() {
                if moved >= pages {
                    break 'regions;
                }
                if usize::from(self.apps[ai].regions[ri].node_of(page)) != src {
                    continue;
                }
                let k = targets.len();
                let Some(step) =
                    (0..k).find(|s| self.free[targets[(cursor + s) % k]] >= size.bytes() as f64)
                else {
                    out_of_room = true;
                    break 'regions;
                };
                let dst = targets[(cursor + step) % k];
                cursor = (cursor + step + 1) % k;
                fixed_ns += self.move_page(ai, ri, page, src, dst);
                copied += size.bytes();
                moved += size.base_pages();
            }
        }
        if copied > 0 {
            self.charge_app(ai, fixed_ns);
            self.mark_app_dirty(ai);
        }
        let failures = if out_of_room {
            vec![("ENOMEM".to_string(), pages.saturating_sub(moved))]
        } else {
            Vec::new()
        };
        let counts = PageCounts {
            requested: pages,
            done: moved,
            moved,
            bytes_copied: copied,
        };
        let mut o = Outcome::for_pages(index, counts, failures);
        if !out_of_room && moved < pages {
            o.note = Some(format!("only {moved} pages of {pid} were on {from}"));
        }
        o
    }

    /// Spreads `ns` of mechanism time over an application's running threads.
    pub(super) fn charge_app(&mut self, ai: usize, ns: f64) {
        let running: Vec<usize> = self.running_threads(ai).collect();
        if running.is_empty() {
            return;
        }
        let each = ns / running.len() as f64;
        for t in running {
            self.threads[t].stall_ns += each;
        }
        self.totals.overhead_ns += ns;
    }

    fn queue_copy(&mut self, from: usize, to: usize, bytes: f64) {
        let n = self.spec.nodes();
        self.copy_bytes[from] += bytes;
        self.copy_bytes[to] += bytes;
        for &l in &self.spec.path[from][to] {
            self.copy_bytes[n + l] += bytes;
        }
    }
}

/// The outcome of action `index` (on `pages` pages), skipped: there is no process `pid`.
pub(super) fn no_process(index: usize, pages: u64, pid: Pid) -> Outcome {
    Outcome::skipped(index, pages, format!("no process {pid}"))
}
