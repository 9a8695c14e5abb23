//! Carrying out policy actions: page moves and replications (with their copies and fixed
//! costs), allocation policies, and thread moves.

use super::{LINE, SimMachine, whole_range};
use crate::placement::{REPLICATED, UNALLOCATED, mask_nodes};
use rondpoint_model::{
    Action, CpuId, MemPolicy, NodeId, NodeList, Outcome, OutcomeStatus, PageRange, PageSize, Pid,
    Tid,
};

impl SimMachine {
    /// The start decisions. Pins before launch say where the threads start (as
    /// sched_setaffinity before exec would): when the start's pins together leave one thread
    /// per core, they are carried out as one placement, at no cost; the other actions, and
    /// pins that would not leave one thread per core, are carried out in order.
    pub(super) fn start_all(&mut self, actions: &[Action]) -> Vec<Outcome> {
        let Some(placed) = self.launch_placement(actions) else {
            return self.apply_all(actions);
        };
        let mut out = Vec::with_capacity(actions.len());
        for (i, (a, place)) in actions.iter().zip(placed).enumerate() {
            match place {
                Some((t, core)) => {
                    self.threads[t].core = core;
                    self.threads[t].mix_dirty = true;
                    out.push(Outcome::applied(i));
                }
                None => out.push(self.apply_one(i, a)),
            }
        }
        out
    }

    /// For each start action, the thread and core of a pin, when the start pins together
    /// leave one thread per core (`None` when there are no pins or they would not).
    fn launch_placement(&self, actions: &[Action]) -> Option<Vec<Option<(usize, usize)>>> {
        let mut cores: Vec<usize> = self.threads.iter().map(|t| t.core).collect();
        let mut placed = Vec::with_capacity(actions.len());
        for a in actions {
            let Action::PinThread { pid, tid, cpus } = a else {
                placed.push(None);
                continue;
            };
            let t = self
                .threads
                .iter()
                .position(|th| th.tid == *tid && self.apps[th.app].pid == *pid)?;
            let core = cpus
                .iter()
                .find_map(|c| self.spec.cores.iter().position(|k| k.cpu == *c))?;
            cores[t] = core;
            placed.push(Some((t, core)));
        }
        let mut seen = vec![false; self.spec.cores.len()];
        let pins = placed.iter().flatten().count();
        (pins > 0
            && cores
                .iter()
                .all(|&c| !std::mem::replace(&mut seen[c], true)))
        .then_some(placed)
    }

    /// Carries out actions in order, one outcome each. With `SimConfig::exchange_pins`, two
    /// adjacent pins that exchange the cores of two running threads are carried out together
    /// (one at a time, the first finds its core busy and fails, since the simulator runs one
    /// thread per core), as the kernel lets a thread onto a busy core until the other leaves.
    pub(super) fn apply_all(&mut self, actions: &[Action]) -> Vec<Outcome> {
        let mut out = Vec::with_capacity(actions.len());
        let mut i = 0;
        while i < actions.len() {
            let exchange = self
                .config
                .exchange_pins
                .then(|| self.exchange(&actions[i], actions.get(i + 1)))
                .flatten();
            if let Some((a, b)) = exchange {
                let (ca, cb) = (self.threads[a].core, self.threads[b].core);
                self.move_thread(a, cb);
                self.move_thread(b, ca);
                out.push(Outcome::applied(i));
                out.push(Outcome::applied(i + 1));
                i += 2;
            } else {
                out.push(self.apply_one(i, &actions[i]));
                i += 1;
            }
        }
        out
    }

    /// The two threads `first` and `second` exchange, if they are pins of two running threads
    /// each to the single CPU of the other.
    fn exchange(&self, first: &Action, second: Option<&Action>) -> Option<(usize, usize)> {
        let (
            Action::PinThread {
                pid: pa,
                tid: ta,
                cpus: ca,
            },
            Some(Action::PinThread {
                pid: pb,
                tid: tb,
                cpus: cb,
            }),
        ) = (first, second)
        else {
            return None;
        };
        let find = |pid: Pid, tid: Tid| {
            self.threads.iter().position(|th| {
                th.tid == tid && self.apps[th.app].pid == pid && th.done_ns.is_none()
            })
        };
        let (a, b) = (find(*pa, *ta)?, find(*pb, *tb)?);
        let cpu = |t: usize| self.spec.cores[self.threads[t].core].cpu;
        (a != b && ca.as_slice() == [cpu(b)] && cb.as_slice() == [cpu(a)]).then_some((a, b))
    }

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
            Action::MoveApplication {
                pid,
                to,
                with_memory,
            } => self.move_application(index, *pid, *to, *with_memory),
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
        let mut done = 0;
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
            for x in self.apps[ai].regions[ri].replicate(page, mask) {
                self.free[x] -= bytes as f64;
                self.queue_copy(src, x, bytes as f64);
                copied += bytes;
            }
            done += 1;
        }
        if copied > 0 {
            self.charge_app(ai, done as f64 * self.spec.costs.migrate_page_ns);
            self.mark_app_dirty(ai);
        }
        let failures = if nomem > 0 {
            vec![("ENOMEM".into(), nomem)]
        } else {
            vec![]
        };
        Outcome::for_pages(index, range.count, done, copied, failures)
    }

    fn pin_thread(&mut self, index: usize, pid: Pid, tid: Tid, cpus: &[CpuId]) -> Outcome {
        let Some(t) = self
            .threads
            .iter()
            .position(|th| th.tid == tid && self.apps[th.app].pid == pid)
        else {
            return Outcome::skipped(index, 0, format!("no thread {tid} in {pid}"));
        };
        let Some(core) = cpus.iter().find_map(|c| {
            let core = self.spec.cores.iter().position(|k| k.cpu == *c)?;
            let busy = self
                .threads
                .iter()
                .enumerate()
                .any(|(u, th)| u != t && th.core == core && th.done_ns.is_none());
            (!busy).then_some(core)
        }) else {
            return Outcome::failed(index, "every allowed CPU is busy or does not exist");
        };
        self.move_thread(t, core);
        Outcome::applied(index)
    }

    fn move_application(
        &mut self,
        index: usize,
        pid: Pid,
        to: NodeId,
        with_memory: bool,
    ) -> Outcome {
        let Some(ai) = self.app_of(pid) else {
            return no_process(index, 0, pid);
        };
        let Some(to) = self.node_index(to) else {
            return Outcome::failed(index, format!("{to} does not exist"));
        };
        let threads: Vec<usize> = self.running_threads(ai).collect();
        let mut free_cores: Vec<usize> = (0..self.spec.cores.len())
            .filter(|&c| self.spec.cores[c].node == to)
            .filter(|&c| {
                !self
                    .threads
                    .iter()
                    .any(|th| th.core == c && th.done_ns.is_none() && th.app != ai)
            })
            .collect();
        if free_cores.len() < threads.len() {
            return Outcome::failed(
                index,
                format!(
                    "node {to} has {} free cores for {} threads",
                    free_cores.len(),
                    threads.len()
                ),
            );
        }
        free_cores.sort_unstable();
        for (&t, &c) in threads.iter().zip(&free_cores) {
            self.move_thread(t, c);
        }
        let mut outcome = Outcome::applied(index);
        if with_memory {
            let ranges: Vec<PageRange> = self.apps[ai]
                .regions
                .iter()
                .filter(|r| !r.is_empty())
                .filter_map(|r| whole_range(pid, r))
                .collect();
            for r in ranges {
                let o = self.move_range(index, &r, &|_| to);
                outcome.pages_requested += o.pages_requested * r.page_size.base_pages();
                outcome.pages_done += o.pages_done * r.page_size.base_pages();
                outcome.bytes_copied += o.bytes_copied;
                outcome.failures.extend(o.failures);
            }
            if !outcome.failures.is_empty() {
                outcome.status = OutcomeStatus::Partial;
            }
        }
        outcome
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
    fn move_range(
        &mut self,
        index: usize,
        range: &PageRange,
        target: &dyn Fn(u64) -> usize,
    ) -> Outcome {
        let Some(ai) = self.app_of(range.pid) else {
            return no_process(index, range.count, range.pid);
        };
        let mut done = 0;
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
                }
            }
        }
        if copied > 0 {
            self.charge_app(ai, fixed_ns);
            self.mark_app_dirty(ai);
        }
        Outcome::for_pages(index, range.count, done, copied, failures)
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
        let mut o = Outcome::for_pages(index, pages, moved, copied, failures);
        if !out_of_room && moved < pages {
            o.note = Some(format!("only {moved} pages of {pid} were on {from}"));
        }
        o
    }

    /// Moves a thread to another core; it refetches its LLC footprint there.
    fn move_thread(&mut self, t: usize, core: usize) {
        if self.threads[t].core == core {
            return;
        }
        let old = self.spec.cores[self.threads[t].core];
        let new = self.spec.cores[core];
        self.threads[t].core = core;
        self.threads[t].mix_dirty = true;
        if old.llc != new.llc {
            // Refill: its LLC share, one line per miss, at the idle local latency with MLP.
            let app = &self.apps[self.threads[t].app];
            let lines = app.mrc_ref.min(self.spec.llc_bytes) / LINE;
            let cost = lines * self.spec.idle_ns[new.node][new.node] / app.mlp.max(1.0);
            self.threads[t].stall_ns += cost;
            self.totals.overhead_ns += cost;
        }
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
fn no_process(index: usize, pages: u64, pid: Pid) -> Outcome {
    Outcome::skipped(index, pages, format!("no process {pid}"))
}
