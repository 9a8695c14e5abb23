//! Where threads run: pins, application moves, and the planning of a batch's thread
//! placements.
//!
//! The simulator runs one thread per core (it does not time-share), so a thread can only go
//! to a free core. A batch's application moves are planned together: a core that another move
//! of the same batch empties counts as free, so that two applications can swap nodes (OAAS
//! [Gaud10 §5.2] swaps a fast node's application with a slow node's; on Linux the two
//! `sched_setaffinity` calls time-share the cores for a moment, which the simulator skips).
//! Before the programs start nothing runs yet, so the start's pins are planned the same way:
//! a policy may deal every thread to a core of its choosing. Pins during the run are carried
//! out one by one, as they come. A move whose threads find no room fails, and the batch is
//! planned again without counting the cores it would have emptied.

use super::SimMachine;
use super::actions::no_process;
use crate::machine::whole_range;
use rondpoint_model::{Action, CpuId, Outcome, OutcomeStatus, PageRange, Pid, ThreadCpu, Tid};

/// Where a placement action sends its threads.
#[derive(Clone, Debug)]
enum Target {
    /// Every thread to a free core of this node (dense index).
    Node(usize),
    /// The one thread to the first free core of these (core indices, in the action's order).
    Cores(Vec<usize>),
}

/// A placement action of a batch, with the threads it moves.
#[derive(Clone, Debug)]
struct Mover {
    action: usize,
    threads: Vec<usize>,
    target: Target,
}

/// The cores planned for one placement action: `(thread, core)` pairs, or its outcome when
/// it cannot be carried out.
pub(super) type Placed = Result<Vec<(usize, usize)>, Outcome>;

impl SimMachine {
    /// Carries out a batch of actions in order, its thread placements planned together first
    /// (pins too when `plan_pins`); `at_start`, before the programs run, places threads at no
    /// cost.
    pub(super) fn apply_batch(
        &mut self,
        actions: &[Action],
        plan_pins: bool,
        at_start: bool,
    ) -> Vec<Outcome> {
        let plan = self.plan_placements(actions, plan_pins);
        actions
            .iter()
            .zip(plan)
            .enumerate()
            .map(|(i, (a, placed))| match placed {
                Some(p) => self.apply_placed(i, a, Some(p), at_start),
                None => self.apply_one(i, a),
            })
            .collect()
    }

    /// Carries out a planned placement action: its threads to their cores, and for an
    /// application moved with its memory, its pages to the new node. Before the programs
    /// start (`at_start`) a thread is placed at no cost: nothing of it is cached yet.
    pub(super) fn apply_placed(
        &mut self,
        index: usize,
        action: &Action,
        placed: Option<Placed>,
        at_start: bool,
    ) -> Outcome {
        let moves = match placed {
            Some(Ok(moves)) => moves,
            Some(Err(outcome)) => return outcome,
            None => return Outcome::failed(index, "not a thread placement"),
        };
        for &(t, core) in &moves {
            if at_start {
                self.threads[t].core = core;
                self.threads[t].mix_dirty = true;
            } else {
                self.move_thread(t, core);
            }
        }
        match action {
            Action::MoveApplication {
                pid,
                to,
                with_memory: true,
            } => match self.node_index(*to) {
                Some(to) => self.move_memory(index, *pid, to),
                None => Outcome::failed(index, format!("{to} does not exist")),
            },
            _ => Outcome::applied(index),
        }
    }

    /// Plans the thread placements of a batch: for each action, `None` when it places no
    /// threads (or is a pin during the run, carried out as it comes by
    /// [`Self::pin_thread`]), else where its threads go.
    pub(super) fn plan_placements(
        &self,
        actions: &[Action],
        at_start: bool,
    ) -> Vec<Option<Placed>> {
        let mut plan: Vec<Option<Placed>> = vec![None; actions.len()];
        let mut movers = Vec::new();
        for (i, a) in actions.iter().enumerate() {
            match self.mover(i, a, at_start) {
                Some(Ok(m)) => movers.push(m),
                Some(Err(o)) => plan[i] = Some(Err(o)),
                None => {}
            }
        }
        // Plan with every mover's threads lifted off their cores; a mover that finds no room
        // stays where it is, and the rest are planned again.
        let mut failed: Vec<Option<Outcome>> = vec![None; movers.len()];
        let claims = loop {
            let claims = self.claim(&movers, &failed);
            let newly: Vec<usize> = (0..movers.len())
                .filter(|&m| failed[m].is_none() && claims[m].is_err())
                .collect();
            if newly.is_empty() {
                break claims;
            }
            for m in newly {
                failed[m] = claims[m].clone().err();
            }
        };
        for (m, c) in movers.iter().zip(claims) {
            plan[m.action] = Some(c);
        }
        plan
    }

    /// The mover of a placement action, its outcome when it cannot be planned, or `None` when
    /// it is not one.
    fn mover(&self, i: usize, a: &Action, at_start: bool) -> Option<Result<Mover, Outcome>> {
        Some(match a {
            Action::MoveApplication { pid, to, .. } => {
                match (self.app_of(*pid), self.node_index(*to)) {
                    (None, _) => Err(no_process(i, 0, *pid)),
                    (_, None) => Err(Outcome::failed(i, format!("{to} does not exist"))),
                    (Some(ai), Some(to)) => Ok(Mover {
                        action: i,
                        threads: self.running_threads(ai).collect(),
                        target: Target::Node(to),
                    }),
                }
            }
            Action::PinThread { pid, tid, cpus } if at_start => match self.thread_of(*pid, *tid) {
                None => Err(no_thread(i, *pid, *tid)),
                Some(t) => Ok(Mover {
                    action: i,
                    threads: vec![t],
                    target: Target::Cores(self.cores_of(cpus)),
                }),
            },
            _ => return None,
        })
    }

    /// One planning pass: the cores each mover claims, in order, with the threads of the
    /// movers not yet failed lifted off their cores (a failed one keeps its outcome).
    fn claim(&self, movers: &[Mover], failed: &[Option<Outcome>]) -> Vec<Placed> {
        let mut busy = vec![false; self.spec.cores.len()];
        let mut lifted = vec![false; self.threads.len()];
        for (m, f) in movers.iter().zip(failed) {
            if f.is_none() {
                m.threads.iter().for_each(|&t| lifted[t] = true);
            }
        }
        for (t, th) in self.threads.iter().enumerate() {
            if th.done_ns.is_none() && !lifted[t] {
                busy[th.core] = true;
            }
        }
        movers
            .iter()
            .zip(failed)
            .map(|(m, f)| {
                if let Some(o) = f {
                    return Err(o.clone());
                }
                let cores: Vec<usize> = match &m.target {
                    Target::Node(to) => {
                        let free: Vec<usize> = (0..self.spec.cores.len())
                            .filter(|&c| self.spec.cores[c].node == *to && !busy[c])
                            .collect();
                        if free.len() < m.threads.len() {
                            return Err(Outcome::failed(
                                m.action,
                                format!(
                                    "node {to} has {} free cores for {} threads",
                                    free.len(),
                                    m.threads.len()
                                ),
                            ));
                        }
                        free.into_iter().take(m.threads.len()).collect()
                    }
                    Target::Cores(list) => match list.iter().find(|&&c| !busy[c]) {
                        Some(&c) => vec![c],
                        None => {
                            return Err(Outcome::failed(
                                m.action,
                                "every allowed CPU is busy or does not exist",
                            ));
                        }
                    },
                };
                cores.iter().for_each(|&c| busy[c] = true);
                Ok(m.threads.iter().copied().zip(cores).collect())
            })
            .collect()
    }

    /// Pins one thread during the run to the first of `cpus` no other running thread is on.
    pub(super) fn pin_thread(
        &mut self,
        index: usize,
        pid: Pid,
        tid: Tid,
        cpus: &[CpuId],
    ) -> Outcome {
        let Some(t) = self.thread_of(pid, tid) else {
            return no_thread(index, pid, tid);
        };
        let Some(core) = self.cores_of(cpus).into_iter().find(|&core| {
            !self
                .threads
                .iter()
                .enumerate()
                .any(|(u, th)| u != t && th.core == core && th.done_ns.is_none())
        }) else {
            return Outcome::failed(index, "every allowed CPU is busy or does not exist");
        };
        self.move_thread(t, core);
        Outcome::applied(index)
    }

    /// Exchanges the cores of two running threads, each on the CPU the action says it runs on
    /// (action `index`).
    pub(super) fn exchange_threads(
        &mut self,
        index: usize,
        a: &ThreadCpu,
        b: &ThreadCpu,
    ) -> Outcome {
        let mut at = [(0, 0); 2];
        for (k, side) in [a, b].into_iter().enumerate() {
            let Some(t) = self.thread_of(side.pid, side.tid) else {
                return no_thread(index, side.pid, side.tid);
            };
            if self.threads[t].done_ns.is_some() {
                return Outcome::skipped(
                    index,
                    0,
                    format!("thread {} of {} has ended", side.tid, side.pid),
                );
            }
            match self.cores_of(&[side.cpu]).first() {
                Some(&core) if core == self.threads[t].core => at[k] = (t, core),
                _ => {
                    return Outcome::failed(
                        index,
                        format!(
                            "thread {} of {} does not run on {}",
                            side.tid, side.pid, side.cpu
                        ),
                    );
                }
            }
        }
        if at[0].0 == at[1].0 {
            return Outcome::failed(index, "a thread cannot exchange with itself");
        }
        self.move_thread(at[0].0, at[1].1);
        self.move_thread(at[1].0, at[0].1);
        Outcome::applied(index)
    }

    /// Moves every page of process `pid` to node `to` (dense index), as part of action
    /// `index`: the outcome counts 4 KiB pages.
    fn move_memory(&mut self, index: usize, pid: Pid, to: usize) -> Outcome {
        let Some(ai) = self.app_of(pid) else {
            return no_process(index, 0, pid);
        };
        let ranges: Vec<PageRange> = self.apps[ai]
            .regions
            .iter()
            .filter(|r| !r.is_empty())
            .filter_map(|r| whole_range(pid, r))
            .collect();
        let mut outcome = Outcome::applied(index);
        for r in ranges {
            let o = self.move_range(index, &r, &|_| to);
            outcome.pages_requested += o.pages_requested * r.page_size.base_pages();
            outcome.pages_done += o.pages_done * r.page_size.base_pages();
            outcome.pages_moved += o.pages_moved * r.page_size.base_pages();
            outcome.bytes_copied += o.bytes_copied;
            outcome.failures.extend(o.failures);
        }
        if !outcome.failures.is_empty() {
            outcome.status = OutcomeStatus::Partial;
        }
        outcome
    }

    /// Moves a thread to another core; it refetches its LLC footprint there.
    pub(super) fn move_thread(&mut self, t: usize, core: usize) {
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
            let lines = app.mrc_ref.min(self.spec.llc_bytes) / crate::traffic::LINE;
            let cost = lines * self.spec.idle_ns[new.node][new.node] / app.mlp.max(1.0);
            self.threads[t].stall_ns += cost;
            self.totals.overhead_ns += cost;
        }
    }

    /// The index of thread `tid` of process `pid`.
    fn thread_of(&self, pid: Pid, tid: Tid) -> Option<usize> {
        self.threads
            .iter()
            .position(|th| th.tid == tid && self.apps[th.app].pid == pid)
    }

    /// The core indices of `cpus`, in order (CPUs the machine does not have are left out).
    fn cores_of(&self, cpus: &[CpuId]) -> Vec<usize> {
        cpus.iter()
            .filter_map(|c| self.spec.cores.iter().position(|k| k.cpu == *c))
            .collect()
    }
}

/// The outcome of pin `index`, skipped: process `pid` has no thread `tid`.
fn no_thread(index: usize, pid: Pid, tid: Tid) -> Outcome {
    Outcome::skipped(index, 0, format!("no thread {tid} in {pid}"))
}
