//! The placement trial: whether the placement lane's placement of threads pays, measured
//! against where the operating system ran the same programs, and undone when it does not.
//!
//! N-MASS places by a model of locality and cache contention ([Majo11 §3]) that can misjudge
//! a mix: in our runs of [Majo11 Table 2] it makes WL2, WL5, WL7 and WL10 slower on average
//! than the default scheduler, one program by up to 16%, as the paper's own "N-MASS is not
//! always better" cases do ([Majo11 §4.5]). So once the placement lane has placed threads at
//! the start, the programs are measured ([`Window`]); then every placed thread goes back to
//! the CPU it ran on before (with the CPUs it was allowed then) and the programs are measured
//! the same way. The placement comes back only if it pays ([`judge`]); otherwise the
//! placement lane stops, with the figures in the notes.
//!
//! A placement kept is tried again later, as the programs' mix changes. A placement undone
//! holds the lane until a program starts ([`Trial::mix_changed`]); the lane may then place
//! the programs running then, and that placement is tried in turn. A
//! placement that moves memory with the threads (OAAS's application moves) is not tried, as
//! undoing it would move the memory back.

use super::{Rates, TrialConfig, Verdict, Window, judge};
use crate::auto::exchange::{self, Move};
use rondpoint_model::{
    Action, CounterGroup, CpuId, Observation, Pid, ProcessInfo, Reason, Tid, Topology,
};
use std::collections::{BTreeMap, BTreeSet};

/// Where the trial stands.
#[derive(Clone, Debug, PartialEq)]
enum Stage {
    /// Nothing placed, or nothing to try.
    Idle,
    /// The placement runs, measured.
    Placed(Window),
    /// The operating system's placement runs again, measured.
    Home(Window),
    /// The placement was kept; tried again in `left` epochs.
    Waiting { left: u32 },
    /// Decided for good: the verdict is the trial's latest.
    Done,
}

/// One placed thread: where it ran before the placement, with the CPUs it was allowed then.
#[derive(Clone, Debug)]
struct Home {
    pid: Pid,
    tid: Tid,
    cpu: CpuId,
    allowed: Vec<CpuId>,
}

/// The trial of one placement (see the module documentation).
#[derive(Clone, Debug)]
pub struct Trial {
    config: TrialConfig,
    stage: Stage,
    home: Vec<Home>,
    /// The placement lane's latest pin of each thread, to put the placement back.
    placed: BTreeMap<(Pid, Tid), Vec<CpuId>>,
    /// Each program's mean rate under the placement.
    under_placement: Rates,
    /// Why the last switch failed, if it did.
    failed: Option<String>,
    /// Why putting the placement back failed, if it did.
    not_back: Option<String>,
    /// The latest verdict.
    last: Option<Verdict>,
    /// Trials made, and the wait before the next once the placement is kept (epochs).
    made: u32,
    interval: u32,
    /// The programs running when the placement was last undone, the epoch then, how many
    /// times the lane was let act again since as programs changed, and the epochs to wait
    /// after an undone placement before that (doubled each time, as re-checks are).
    mix: BTreeSet<Pid>,
    undone_at: u64,
    readmitted: u32,
    readmit_wait: u32,
}

impl Trial {
    pub fn new(config: TrialConfig) -> Self {
        Self {
            readmit_wait: config.recheck_epochs,
            config,
            stage: Stage::Idle,
            home: Vec::new(),
            placed: BTreeMap::new(),
            under_placement: Rates::new(),
            failed: None,
            not_back: None,
            last: None,
            made: 0,
            interval: 0,
            mix: BTreeSet::new(),
            undone_at: 0,
            readmitted: 0,
        }
    }

    /// Takes note of the placement lane's start (where every thread of `processes` runs
    /// before it places any) and its actions: a trial when it only pins threads.
    pub fn begin(&mut self, processes: &[ProcessInfo], actions: &[Action]) {
        let pins_only = actions
            .iter()
            .all(|a| matches!(a, Action::PinThread { .. }));
        if !self.config.placement || actions.is_empty() || !pins_only || self.stage != Stage::Idle {
            return;
        }
        self.home = processes
            .iter()
            .flat_map(|p| p.threads.iter().map(move |t| (p.pid, t)))
            .map(|(pid, t)| Home {
                pid,
                tid: t.tid,
                cpu: t.cpu,
                allowed: t.allowed_cpus.clone(),
            })
            .collect();
        self.stage = Stage::Placed(Window::default());
        self.interval = self.config.recheck_epochs;
        self.placing(actions);
    }

    /// Takes note of the placement lane's pins (at the start and later: it may place again
    /// as it measures the programs), to put back the latest; a placement that is not a pin
    /// ends the trial without a verdict. The lane is measured as it acts, placing again or
    /// not.
    pub fn placing(&mut self, actions: &[Action]) {
        let placing = matches!(self.stage, Stage::Placed(_) | Stage::Waiting { .. });
        if !placing || actions.is_empty() {
            return;
        }
        for a in actions {
            match a {
                Action::PinThread { pid, tid, cpus } => {
                    self.placed.insert((*pid, *tid), cpus.clone());
                }
                other => {
                    let what = other.technique();
                    self.finish(Verdict::Abandoned(format!(
                        "the placement lane took a {what} action, which a trial does not undo"
                    )));
                    return;
                }
            }
        }
    }

    /// The latest verdict, once there is one.
    pub fn verdict(&self) -> Option<&Verdict> {
        self.last.as_ref()
    }

    /// Whether the placement lane must not act: while the operating system's placement is
    /// measured, and for good once the placement was undone.
    pub(crate) fn holds_lane(&self) -> bool {
        matches!(self.stage, Stage::Home(_))
            || (self.stage == Stage::Done && matches!(self.last, Some(Verdict::Undone(_))))
    }

    /// Whether the placement was undone, and the lane holds until the programs change.
    pub(crate) fn undone(&self) -> bool {
        self.stage == Stage::Done && matches!(self.last, Some(Verdict::Undone(_)))
    }

    /// Whether, since the placement was undone (and at least `readmit_wait` epochs ago), a
    /// program has started: the lane's rule may pay for the new mix. (Programs that end leave
    /// a mix the undone placement was measured on, less some: not tried again.)
    pub(crate) fn mix_changed(&self, observation: &Observation) -> bool {
        let waited = observation.epoch >= self.undone_at + u64::from(self.readmit_wait);
        self.undone()
            && waited
            && !self.mix.is_empty()
            && running(observation).iter().any(|p| !self.mix.contains(p))
    }

    /// Keeps the lane held for the programs running now (the new ones bring no placement to
    /// try): only programs started later are looked at.
    pub(crate) fn hold_for(&mut self, observation: &Observation) {
        self.mix = running(observation);
    }

    /// Lets the placement lane act again after an undone placement ([`Self::mix_changed`]):
    /// its next start is tried as the first was. The last verdict stays in the notes until
    /// the next one.
    pub(crate) fn readmit(&mut self) {
        self.stage = Stage::Idle;
        self.home.clear();
        self.placed.clear();
        self.under_placement = Rates::new();
        self.failed = None;
        self.not_back = None;
        self.interval = 0;
        self.mix.clear();
        self.readmitted += 1;
        self.readmit_wait = self
            .readmit_wait
            .saturating_mul(2)
            .min(self.config.max_recheck_epochs);
    }

    /// Whether the programs are being measured (another trial then waits).
    pub fn measuring(&self) -> bool {
        matches!(self.stage, Stage::Placed(_) | Stage::Home(_))
    }

    /// One epoch's observation: the switch to make, if any, with its reason. A placement kept
    /// is not tried again while `wait` (another trial is under way).
    pub fn observe(
        &mut self,
        topology: &Topology,
        observation: &Observation,
        wait: bool,
    ) -> Option<(Vec<Action>, Reason)> {
        self.new_homes(observation);
        if let Stage::Waiting { left } = self.stage {
            if left > 1 || wait {
                self.stage = Stage::Waiting {
                    left: left.saturating_sub(1).max(1),
                };
                return None;
            }
            // Time to try it again: the placement has run long enough to need no settling,
            // and this epoch is its first measured.
            self.stage = Stage::Placed(Window::settled(&self.config));
        }
        if !matches!(self.stage, Stage::Placed(_) | Stage::Home(_)) {
            return None;
        }
        if observation.counters.is_missing(CounterGroup::Instructions) {
            self.finish(Verdict::Abandoned(
                "no instruction counters to measure it with".into(),
            ));
            return None;
        }
        if let Some(why) = self.failed.take() {
            // A switch failed: the placement as it was decided, and no verdict.
            return self.end(topology, observation, Verdict::Abandoned(why));
        }
        let (means, home) = match &mut self.stage {
            Stage::Placed(w) => (w.observe(&self.config, observation)?, false),
            Stage::Home(w) => (w.observe(&self.config, observation)?, true),
            _ => return None,
        };
        if !home {
            self.under_placement = means;
            self.stage = Stage::Home(Window::default());
            self.measured_placement(observation);
            let acts = self.revert(topology, observation);
            let reason = Reason::new(
                acts.len(),
                "",
                format!(
                    "the placement ran {} epoch(s) (measured after {} to settle): each placed \
                 thread goes back where the operating system ran it, to measure that the same way",
                    self.config.trial_epochs, self.config.settle_epochs
                ),
            )
            .expecting(format!(
                "the placement comes back if the programs are faster under it by {:.1}% or \
                 more (geometric mean of their rates) and none is more than {:.1}% slower",
                self.config.min_gain * 100.0,
                self.config.max_loss * 100.0
            ));
            return Some((acts, reason));
        }
        let against = "the operating system's placement";
        let verdict = judge(&self.config, &self.under_placement, &means, against);
        self.end(topology, observation, verdict)
    }

    /// Ends the trial with `verdict`, the placement put back unless it was undone.
    fn end(
        &mut self,
        topology: &Topology,
        observation: &Observation,
        verdict: Verdict,
    ) -> Option<(Vec<Action>, Reason)> {
        let back = !matches!(verdict, Verdict::Undone(_));
        let words = format!("placement {}", verdict.words());
        self.made += 1;
        self.stage = match (&verdict, self.config.recheck_epochs) {
            (Verdict::Kept(_), 1..) => {
                let left = self.interval.max(1);
                self.interval = left.saturating_mul(2).min(self.config.max_recheck_epochs);
                Stage::Waiting { left }
            }
            _ => Stage::Done,
        };
        self.last = Some(verdict);
        if !back {
            self.mix = running(observation);
            self.undone_at = observation.epoch;
            return None;
        }
        let acts = self.restore(topology, observation);
        let n = acts.len();
        (n > 0).then(|| (acts, Reason::new(n, "", words)))
    }

    /// Ends the trial for good with `verdict`, nothing switched.
    fn finish(&mut self, verdict: Verdict) {
        self.last = Some(verdict);
        self.stage = Stage::Done;
    }

    /// Takes note of where the threads not seen before run: a program that started since
    /// runs where the operating system put it until the placement lane places it (after
    /// this observation).
    fn new_homes(&mut self, observation: &Observation) {
        if matches!(self.stage, Stage::Idle | Stage::Done) {
            return;
        }
        let known: BTreeSet<(Pid, Tid)> = self.home.iter().map(|h| (h.pid, h.tid)).collect();
        for p in &observation.processes {
            for t in p
                .threads
                .iter()
                .filter(|t| !known.contains(&(p.pid, t.tid)))
            {
                self.home.push(Home {
                    pid: p.pid,
                    tid: t.tid,
                    cpu: t.cpu,
                    allowed: t.allowed_cpus.clone(),
                });
            }
        }
    }

    /// Takes the placement as it ran when measured (where each placed thread is now) as the
    /// one to put back: a pin the backend could not carry out is not part of it.
    fn measured_placement(&mut self, observation: &Observation) {
        for p in &observation.processes {
            for t in &p.threads {
                if let Some(cpus) = self.placed.get_mut(&(p.pid, t.tid)) {
                    if cpus.first() != Some(&t.cpu) {
                        *cpus = vec![t.cpu];
                    }
                }
            }
        }
    }

    /// Pins that send every placed thread back to its CPU before the placement, allowed its
    /// CPUs of then.
    fn revert(&self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        let placed = |h: &&Home| self.placed.contains_key(&(h.pid, h.tid));
        let moves = self.home.iter().filter(placed).map(|h| {
            let mut cpus = vec![h.cpu];
            cpus.extend(h.allowed.iter().copied().filter(|&c| c != h.cpu));
            (h.pid, h.tid, cpus)
        });
        plan(topology, observation, moves)
    }

    /// Pins that put the placement back.
    fn restore(&self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        let moves = self
            .placed
            .iter()
            .map(|((pid, tid), cpus)| (*pid, *tid, cpus.clone()));
        plan(topology, observation, moves)
    }

    /// What became of the switch's pins: a failed one going back ends the trial without a
    /// verdict; one putting the placement back is noted.
    pub fn outcome(&mut self, failure: Option<String>) {
        let Some(why) = failure else {
            return;
        };
        match self.stage {
            Stage::Home(_) => self.failed = Some(format!("a thread could not go back: {why}")),
            Stage::Done | Stage::Waiting { .. } => self.not_back = Some(why),
            _ => {}
        }
    }

    /// What the notes say of the trial.
    pub fn note(&self) -> Option<String> {
        let v = self.verdict()?;
        let note = match v {
            Verdict::Abandoned(_) => format!("placement trial: {}", v.words()),
            _ => format!(
                "placement trial: {}, at trial {}: {}",
                v.what(),
                self.made,
                v.why()
            ),
        };
        let note = match self.readmitted {
            0 => note,
            n => format!("{note} (the lane acted again {n} time(s) as the programs changed)"),
        };
        Some(match &self.not_back {
            Some(why) => format!("{note}; a thread could not be put back: {why}"),
            None => note,
        })
    }
}

/// The programs running (with threads) in `observation`.
fn running(observation: &Observation) -> BTreeSet<Pid> {
    observation
        .processes
        .iter()
        .filter(|p| !p.threads.is_empty())
        .map(|p| p.pid)
        .collect()
}

/// The ordered pins moving threads `(pid, tid, cpus)` from where `observation` saw them to the
/// first of their `cpus` (threads already there are left alone).
fn plan(
    topology: &Topology,
    observation: &Observation,
    wanted: impl Iterator<Item = (Pid, Tid, Vec<CpuId>)>,
) -> Vec<Action> {
    let now: BTreeMap<(Pid, Tid), CpuId> = observation
        .processes
        .iter()
        .flat_map(|p| p.threads.iter().map(move |t| ((p.pid, t.tid), t.cpu)))
        .collect();
    let moves: Vec<Move> = wanted
        .filter_map(|(pid, tid, cpus)| {
            let from = *now.get(&(pid, tid))?;
            Some(Move {
                pid,
                tid,
                from,
                cpus,
            })
        })
        .collect();
    let moving: BTreeSet<(Pid, Tid)> = moves.iter().map(|m| (m.pid, m.tid)).collect();
    let busy: BTreeSet<CpuId> = now
        .iter()
        .filter(|(k, _)| !moving.contains(k))
        .map(|(_, c)| *c)
        .collect();
    let cpus: Vec<CpuId> = topology
        .nodes()
        .iter()
        .flat_map(|n| n.cpus.iter().copied())
        .collect();
    exchange::pins(&moves, &busy, &cpus)
}

#[cfg(test)]
mod tests;
