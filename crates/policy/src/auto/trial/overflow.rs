//! The overflow trial: whether the overflow lane's placement of overflow pays, measured
//! against where the kernel's fallback put it, and undone when it does not.
//!
//! Usage-aware sends a full node's overflow to the remote node with the least memory
//! allocated [Choe21 §3.2], which is not the one with the least traffic: on a machine where a
//! bandwidth-bound program runs on a node with little memory allocated, the overflow lands on
//! its memory controller and slows it more than it speeds the overflowing program
//! (docs/auto.md, asym-pressure). So `auto` measures the placement before it keeps it:
//!
//! 1. when the lane first has overflow to move, it is held, and the programs are measured as
//!    the kernel placed the overflow ([`Window`]);
//! 2. the lane moves the overflow where its rule wants it in steps: one epoch of moves, then
//!    two, four, ... (at most [`MAX_PLACING_EPOCHS`] in all), held after each while the
//!    programs are measured again;
//! 3. after a step, if a program is more than `max_loss` slower than under the kernel's
//!    placement, or the programs are slower in geometric mean by more than a step's gain
//!    ([`TrialConfig::step_gain`]), each program's overflow goes back to the nodes the kernel
//!    had put it on, in bytes per node as they were measured, at most the lane's
//!    `max_move_mib_per_epoch` an epoch, and the lane stops. If the step gained at least
//!    `step_gain` over the one before, the next step follows; otherwise the overflow stays as
//!    placed so far and the lane stops there (moves cost the programs whose pages move, and a
//!    step that gains nothing does not pay for the next). Once the lane has nothing left to
//!    move, the placement is kept and the lane goes on placing new overflow freely;
//! 4. during a step, a program whose pages do not move that is already past the bound in each
//!    of `trial_epochs` epochs stops the step there;
//! 5. when the placement slowed programs on nodes it filled, another trial follows with those
//!    nodes avoided (usage-aware's `avoid_nodes`), at most [`MAX_TRIALS`] in a series;
//! 6. once the lane has stopped, a program that had no overflow at any verdict before and now
//!    has some (one started or restarted since) begins a new series, with no node avoided.
//!
//! The kernel's placement is measured first because a placement kept then costs no move back.
//! The trial needs the lane to place the overflow after allocation (usage-aware's reactive
//! mode); placed at allocation, there is no kernel placement to measure, and no trial.

use super::{Rates, TrialConfig, Verdict, Window, judge};
use crate::guard;
use crate::remote::reactive::{Limits, PAGE, away_nodes, move_action, transfers};
use rondpoint_model::{Action, CounterGroup, NodeId, Observation, Pid, Reason, Topology};
use std::collections::{BTreeMap, BTreeSet};

/// Most epochs of moves the lane is given to place the overflow, over all steps, before its
/// placement is taken as complete: 32 epochs move 16 GiB at usage-aware's default 512 MiB an
/// epoch.
pub const MAX_PLACING_EPOCHS: u32 = 32;

/// What the lane's placement is measured against, in verdicts.
const KERNEL: &str = "the kernel's fallback placement";

/// Most trials in a series (for the same programs): each may move overflow there and back.
const MAX_TRIALS: usize = 3;

/// Epochs running in which the moves back left every program's memory unchanged before the
/// trial stops moving (a move the machine keeps refusing is not asked for forever).
const MAX_STALLS: u32 = 3;

/// Where the trial stands.
#[derive(Clone, Debug, PartialEq)]
enum Stage {
    /// No overflow yet.
    Watching,
    /// The kernel's placement runs, measured; the lane held.
    Kernel(Window),
    /// The lane places the overflow, `epochs` so far; each program's rates over the latest
    /// epochs of it (at most `trial_epochs`), after `settle_epochs`.
    Placing {
        epochs: u32,
        recent: BTreeMap<Pid, Vec<f64>>,
    },
    /// The lane's placement runs, measured; the lane held.
    Placed(Window),
    /// The overflow goes back where the kernel put it; the lane held.
    Undoing {
        /// Every process's memory when moves were last planned, and how many epochs running
        /// it did not change.
        last: Vec<Vec<u64>>,
        stalls: u32,
    },
    /// Decided: the verdict is the latest.
    Done,
}

/// The trial of the overflow lane's placement (see the module documentation).
#[derive(Clone, Debug)]
pub struct OverflowTrial {
    config: TrialConfig,
    limits: Limits,
    stage: Stage,
    /// The processes whose overflow the lane first proposed to move.
    overflowing: BTreeSet<Pid>,
    /// Each process's memory per node as the kernel placed it, when measured.
    kernel: BTreeMap<Pid, Vec<u64>>,
    /// Each program's mean rate as the kernel placed the overflow.
    under_kernel: Rates,
    /// Bytes moved back so far in this trial.
    moved_back: u64,
    /// Bytes the lane placed so far in this trial.
    placed: u64,
    /// Epochs of moves of the current step, of all steps so far, and of the current step at
    /// most.
    step_made: u32,
    moves_made: u32,
    step: u32,
    /// Each program's mean rate after the last step (the kernel's placement before the first).
    previous: Rates,
    /// Whether the lane had nothing more to place (or its time ran out).
    complete: bool,
    /// Whether the lane stopped placing, its last step not gaining enough.
    halted: bool,
    /// This trial's verdict, once it has one.
    last: Option<Verdict>,
    /// The nodes given no overflow in this trial.
    avoided: Vec<NodeId>,
    /// The nodes this trial's placement harmed, to avoid in the next.
    avoid_next: Vec<NodeId>,
    /// The nodes to avoid in the next trial, until it starts.
    retry: Option<Vec<NodeId>>,
    /// The notes of the trials before this one.
    history: Vec<String>,
    /// Where in `history` the trials for the current programs begin (a new series begins
    /// when a program gets overflow after the lane stopped).
    episode: usize,
    /// Whether the next trial begins a new series.
    fresh: bool,
    /// The processes that had overflow at a verdict.
    known: BTreeSet<Pid>,
}

impl OverflowTrial {
    /// A trial with `config` (none if its `overflow` is false), moving back within `limits`
    /// (the lane's own).
    pub(crate) fn new(config: TrialConfig, limits: Limits) -> Self {
        Self {
            stage: match config.overflow {
                true => Stage::Watching,
                false => Stage::Done,
            },
            limits,
            overflowing: BTreeSet::new(),
            kernel: BTreeMap::new(),
            under_kernel: Rates::new(),
            moved_back: 0,
            placed: 0,
            step_made: 0,
            moves_made: 0,
            step: 1,
            previous: Rates::new(),
            complete: false,
            halted: false,
            last: None,
            avoided: Vec::new(),
            avoid_next: Vec::new(),
            retry: None,
            history: Vec::new(),
            episode: 0,
            fresh: false,
            known: BTreeSet::new(),
            config,
        }
    }

    /// No trial, for `why` (the lane places the overflow at allocation), unless one has
    /// begun.
    pub(crate) fn skip(&mut self, why: String) {
        if self.stage == Stage::Watching {
            self.finish(Verdict::Abandoned(why));
        }
    }

    /// The latest verdict, once there is one.
    #[cfg(test)]
    pub(crate) fn verdict(&self) -> Option<&Verdict> {
        self.last.as_ref()
    }

    /// Whether the overflow lane must not act: while a placement is measured or moved back,
    /// for good once its placement was undone, and before the trial while `other` trial
    /// measures the programs (both measure every program).
    pub(crate) fn holds_lane(&self, other: bool) -> bool {
        match self.stage {
            Stage::Kernel(_) | Stage::Placed(_) | Stage::Undoing { .. } => true,
            Stage::Done => self.halted || matches!(self.last, Some(Verdict::Undone(_))),
            Stage::Watching => other,
            Stage::Placing { .. } => false,
        }
    }

    /// Whether a trial is under way (another trial then waits).
    pub(crate) fn busy(&self) -> bool {
        !matches!(self.stage, Stage::Watching | Stage::Done)
    }

    /// The lane's proposals for this epoch: whether they go ahead. The first it makes starts
    /// the trial and is held back, so that the kernel's placement is measured first.
    pub(crate) fn proposed(&mut self, actions: &[Action], observation: &Observation) -> bool {
        match self.stage {
            Stage::Watching if !actions.is_empty() => {
                if observation.counters.is_missing(CounterGroup::Instructions) {
                    self.finish(Verdict::Abandoned(
                        "no instruction counters to measure it with".into(),
                    ));
                    return true;
                }
                self.overflowing = actions.iter().map(Action::pid).collect();
                self.stage = Stage::Kernel(Window::default());
                false
            }
            Stage::Placing { .. } => {
                if actions.is_empty() {
                    self.complete = true;
                    self.stage = Stage::Placed(Window::default());
                    return false;
                }
                self.placed += actions.iter().map(|a| a.pages() * PAGE).sum::<u64>();
                self.moves_made += 1;
                self.step_made += 1;
                if self.moves_made >= MAX_PLACING_EPOCHS {
                    self.complete = true;
                }
                if self.complete || self.step_made >= self.step {
                    self.stage = Stage::Placed(Window::default());
                }
                true
            }
            _ => true,
        }
    }

    /// One epoch's observation: the moves back to make, if any, with their reason.
    pub(crate) fn observe(
        &mut self,
        topology: &Topology,
        observation: &Observation,
    ) -> Option<(Vec<Action>, Reason)> {
        match &mut self.stage {
            Stage::Kernel(w) => {
                let means = w.observe(&self.config, observation)?;
                self.previous.clone_from(&means);
                self.under_kernel = means;
                self.kernel = observation
                    .processes
                    .iter()
                    .map(|p| (p.pid, p.resident_bytes_by_node.clone()))
                    .collect();
                self.stage = Stage::Placing {
                    epochs: 0,
                    recent: BTreeMap::new(),
                };
                None
            }
            Stage::Placing { epochs, recent } => {
                *epochs += 1;
                if *epochs <= self.config.settle_epochs {
                    return None;
                }
                let keep = self.config.trial_epochs as usize;
                for (pid, rate) in guard::rates(observation) {
                    let r = recent.entry(pid).or_default();
                    r.extend(rate);
                    if r.len() > keep {
                        r.remove(0);
                    }
                }
                let (n, means) = (*epochs, self.hurt(keep)?);
                self.note_known(topology, observation);
                let verdict = judge(&self.config, &means, &self.under_kernel, KERNEL);
                let Verdict::Undone(why) = verdict else {
                    return None;
                };
                let why = format!(
                    "stopped after {n} epoch(s) of placing, a program not overflowing being \
                     already slower than the bound allows: {why}"
                );
                self.undone(Verdict::Undone(why), &means, topology, observation)
            }
            Stage::Placed(w) => {
                let means = w.observe(&self.config, observation)?;
                self.note_known(topology, observation);
                let alive = observation
                    .processes
                    .iter()
                    .any(|p| self.overflowing.contains(&p.pid));
                // Moving back costs as much as placing: it pays only when the kernel's
                // placement was better by a step's gain, or a program is past the bound.
                let bar = TrialConfig {
                    min_gain: self.config.min_gain - self.config.step_gain,
                    ..self.config.clone()
                };
                let verdict = match alive {
                    false => Verdict::Abandoned("the programs with overflow ended".into()),
                    true => judge(&bar, &means, &self.under_kernel, KERNEL),
                };
                match verdict {
                    Verdict::Undone(_) => self.undone(verdict, &means, topology, observation),
                    Verdict::Kept(why) if !self.complete => {
                        self.next_step(means, why);
                        None
                    }
                    other => {
                        self.finish(other);
                        None
                    }
                }
            }
            Stage::Undoing { .. } => self.undo(topology, observation),
            Stage::Done => {
                self.watch_again(topology, observation);
                None
            }
            _ => None,
        }
    }

    /// While the lane places the overflow: each program's mean rate over the latest `keep`
    /// epochs, when a program whose overflow is not being moved was slower than the bound
    /// allows in each of them (the placement already harms a bystander; the programs whose
    /// pages move pay for the copies, and are judged once they end).
    fn hurt(&self, keep: usize) -> Option<Rates> {
        let Stage::Placing { recent, .. } = &self.stage else {
            return None;
        };
        let floor = 1.0 - self.config.max_loss;
        let harmed = recent.iter().any(|(pid, r)| {
            let before = self.under_kernel.get(pid).copied().unwrap_or(0.0);
            !self.overflowing.contains(pid)
                && before > 0.0
                && r.len() == keep
                && r.iter().all(|x| *x < floor * before)
        });
        harmed.then(|| {
            recent
                .iter()
                .filter(|(_, r)| !r.is_empty())
                .map(|(pid, r)| (*pid, guard::mean(r)))
                .collect()
        })
    }

    /// After a step that harmed no program (`figures`, against the kernel's placement): the
    /// next step, twice as long, if this one gained enough over the one before; otherwise the
    /// placement stays as it is and the lane stops there.
    fn next_step(&mut self, means: Rates, figures: String) {
        let gain = super::gain(&means, &self.previous).unwrap_or(1.0);
        if gain >= 1.0 + self.config.step_gain {
            self.previous = means;
            self.step = self.step.saturating_mul(2);
            self.step_made = 0;
            self.stage = Stage::Placing {
                epochs: 0,
                recent: BTreeMap::new(),
            };
            return;
        }
        self.halted = true;
        self.finish(Verdict::Kept(format!(
            "{} MiB of overflow placed, then no more: its last step raised the programs' rates \
             {:+.2}% in geometric mean (needed {:+.1}% to go on); {figures}",
            self.placed >> 20,
            (gain - 1.0) * 100.0,
            self.config.step_gain * 100.0,
        )));
    }

    /// Takes the verdict `undone` (from the programs' rates `means` under the placement), and
    /// starts moving the overflow back; notes the nodes to avoid in another trial.
    fn undone(
        &mut self,
        undone: Verdict,
        means: &Rates,
        topology: &Topology,
        observation: &Observation,
    ) -> Option<(Vec<Action>, Reason)> {
        self.avoid_next = self.harmed_nodes(means, topology, observation);
        self.last = Some(undone);
        self.stage = Stage::Undoing {
            last: Vec::new(),
            stalls: 0,
        };
        self.undo(topology, observation)
    }

    /// The nodes, not avoided yet, that both received overflow under the placement and run a
    /// program not overflowing that it slowed past the bound: without them, another placement
    /// may pay.
    fn harmed_nodes(
        &self,
        means: &Rates,
        topology: &Topology,
        observation: &Observation,
    ) -> Vec<NodeId> {
        let floor = 1.0 - self.config.max_loss;
        let grew: BTreeSet<usize> = observation
            .processes
            .iter()
            .filter(|p| self.overflowing.contains(&p.pid))
            .flat_map(|p| {
                let before = self.kernel.get(&p.pid);
                let at =
                    |v: Option<&Vec<u64>>, i: usize| v.and_then(|v| v.get(i)).copied().unwrap_or(0);
                (0..topology.len()).filter(move |&i| {
                    let now = at(Some(&p.resident_bytes_by_node), i);
                    now > at(before, i).saturating_add(self.limits.min_move_bytes)
                })
            })
            .collect();
        let harmed = |pid: &Pid| {
            let (Some(with), Some(without)) = (means.get(pid), self.under_kernel.get(pid)) else {
                return false;
            };
            !self.overflowing.contains(pid) && *without > 0.0 && with / without < floor
        };
        let nodes: BTreeSet<NodeId> = observation
            .processes
            .iter()
            .filter(|p| harmed(&p.pid))
            .flat_map(|p| p.threads.iter().map(|t| t.node))
            .filter(|n| topology.index_of(*n).is_some_and(|i| grew.contains(&i)))
            .filter(|n| !self.avoided.contains(n))
            .collect();
        nodes.into_iter().collect()
    }

    /// The overflow is back (or no more of it can move): the trial ends, and another is
    /// offered without the nodes it harmed, if there are some and trials are left.
    fn moved_back_all(&mut self) {
        self.stage = Stage::Done;
        if !self.avoid_next.is_empty() && self.made() < MAX_TRIALS {
            let mut avoid = self.avoided.clone();
            avoid.append(&mut self.avoid_next);
            self.retry = Some(avoid);
        }
    }

    /// The nodes the overflow lane must avoid in the next trial, once, when there is one: the
    /// trial then starts again, watching for the lane's first proposal.
    pub(crate) fn take_retry(&mut self) -> Option<Vec<NodeId>> {
        let avoid = self.retry.take()?;
        self.history.extend(self.line());
        if std::mem::take(&mut self.fresh) {
            self.episode = self.history.len();
            self.halted = false;
        }
        self.avoided.clone_from(&avoid);
        self.stage = Stage::Watching;
        self.overflowing.clear();
        self.kernel.clear();
        self.under_kernel.clear();
        self.moved_back = 0;
        self.placed = 0;
        (self.step_made, self.moves_made, self.step) = (0, 0, 1);
        self.complete = false;
        self.last = None;
        Some(avoid)
    }

    /// Why the overflow lane stops for good, once it does: its last placement was undone and
    /// no other will be tried.
    pub(crate) fn stopped(&self) -> Option<&str> {
        match (&self.stage, &self.last, &self.retry) {
            (Stage::Done, Some(Verdict::Undone(why)), None) => Some(why),
            _ => None,
        }
    }

    /// Trials made so far (the current one included once it has a verdict).
    fn made(&self) -> usize {
        self.history.len() - self.episode + usize::from(self.last.is_some())
    }

    /// The processes with overflow now: memory (at least the lane's smallest move) on nodes
    /// running none of their threads, their user's binding aside.
    fn with_overflow(&self, topology: &Topology, observation: &Observation) -> BTreeSet<Pid> {
        observation
            .processes
            .iter()
            .filter(|p| !crate::remote::user_placed(p))
            .filter(|p| {
                let away = away_nodes(topology, p).into_iter();
                let bytes = away.filter_map(|i| p.resident_bytes_by_node.get(i));
                bytes.sum::<u64>() >= self.limits.min_move_bytes.max(1)
            })
            .map(|p| p.pid)
            .collect()
    }

    /// Once the lane stopped (its placement undone, or no more placed), a new trial, with no
    /// node avoided, when a program that had no overflow at any verdict before has some: the
    /// programs changed, and the lane's rule may pay for them.
    fn watch_again(&mut self, topology: &Topology, observation: &Observation) {
        let stopped = self.halted || matches!(self.last, Some(Verdict::Undone(_)));
        if !stopped || self.retry.is_some() || self.last.is_none() {
            return;
        }
        let now = self.with_overflow(topology, observation);
        if now.is_subset(&self.known) {
            return;
        }
        self.known.extend(now);
        self.fresh = true;
        self.retry = Some(Vec::new());
    }

    /// This epoch's moves back to the kernel's placement; none once every process's memory
    /// is back (or the moves stopped changing it), which ends the trial.
    fn undo(
        &mut self,
        topology: &Topology,
        observation: &Observation,
    ) -> Option<(Vec<Action>, Reason)> {
        let now: Vec<Vec<u64>> = observation
            .processes
            .iter()
            .map(|p| p.resident_bytes_by_node.clone())
            .collect();
        if let Stage::Undoing { last, stalls } = &mut self.stage {
            *stalls = if *last == now { *stalls + 1 } else { 0 };
            *last = now;
            if *stalls >= MAX_STALLS {
                self.moved_back_all();
                return None;
            }
        }
        let acts = self.moves_back(topology, observation);
        if acts.is_empty() {
            self.moved_back_all();
            return None;
        }
        self.moved_back += acts.iter().map(|a| a.pages() * PAGE).sum::<u64>();
        let reason = Reason::new(
            acts.len(),
            "",
            format!(
                "overflow trial: the lane's placement of overflow did not pay ({}): each \
                 program's overflow goes back to the nodes the kernel had put it on",
                self.last.as_ref().map_or("", Verdict::why)
            ),
        );
        Some((acts, reason))
    }

    /// Moves of each process's memory, on the nodes running none of its threads, toward its
    /// bytes per node under the kernel's placement, onto the room each node has, within the
    /// limits.
    fn moves_back(&self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        let nodes = topology.nodes();
        let mut room: Vec<u64> = nodes
            .iter()
            .map(|n| {
                let m = observation.memory.iter().find(|m| m.node == n.id);
                m.map_or(0, |m| m.free_bytes)
            })
            .collect();
        let mut budget = self.limits.max_move_bytes;
        let mut out = Vec::new();
        for p in &observation.processes {
            let Some(before) = self.kernel.get(&p.pid) else {
                continue;
            };
            let away = away_nodes(topology, p);
            // What a node cannot take stays where it is.
            let mut target = before.clone();
            for &i in &away {
                let now = p.resident_bytes_by_node.get(i).copied().unwrap_or(0);
                let cap = now.saturating_add(room[i]);
                if let Some(t) = target.get_mut(i) {
                    *t = (*t).min(cap);
                }
            }
            let mine = &p.resident_bytes_by_node;
            for (from, to, bytes) in
                transfers(mine, &target, &away, self.limits.min_move_bytes, budget)
            {
                budget -= bytes;
                room[to] = room[to].saturating_sub(bytes);
                room[from] = room[from].saturating_add(bytes);
                out.push(move_action(topology, p.pid, from, to, bytes));
            }
        }
        out
    }

    /// Ends the trial with `verdict`.
    fn finish(&mut self, verdict: Verdict) {
        self.last = Some(verdict);
        self.stage = Stage::Done;
    }

    /// Takes note of the processes with overflow at a verdict, and of those the lane
    /// proposed to move.
    fn note_known(&mut self, topology: &Topology, observation: &Observation) {
        let now = self.with_overflow(topology, observation);
        self.known.extend(now);
        self.known.extend(self.overflowing.iter().copied());
    }

    /// The current trial's line in the notes, once it has a verdict.
    fn line(&self) -> Option<String> {
        let v = self.last.as_ref()?;
        let k = self.history.len() + 1;
        let avoiding = match self.avoided.as_slice() {
            [] => String::new(),
            nodes => {
                let ids: Vec<String> = nodes.iter().map(|n| n.0.to_string()).collect();
                format!(", avoiding node(s) {}", ids.join(", "))
            }
        };
        let mut line = format!("overflow trial {k}{avoiding}: {}", v.words());
        if matches!(v, Verdict::Undone(_)) {
            line.push_str(&format!("; {} MiB moved back", self.moved_back >> 20));
        }
        Some(line)
    }

    /// What the notes say of the trials, one line each.
    pub(crate) fn notes(&self) -> Vec<String> {
        self.history.iter().cloned().chain(self.line()).collect()
    }
}

#[cfg(test)]
mod tests;
