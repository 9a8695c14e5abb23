//! The placement trial: whether the placement lane's placement of threads pays, measured
//! against where the operating system ran the same programs, and undone when it does not.
//!
//! N-MASS places by a model of locality and cache contention ([Majo11 §3]) that can misjudge
//! a mix: in our runs of [Majo11 Table 2] it makes WL2, WL5, WL7 and WL10 slower on average
//! than the default scheduler, one program by up to 16%, as the paper's own "N-MASS is not
//! always better" cases do ([Majo11 §4.5]). So `auto` measures instead of trusting it, as
//! the payoff guard does for pages: once the placement lane has placed threads at the start,
//! each program's rate (instructions per cycle of its slowest thread, the guard's measure) is
//! averaged over [`TrialConfig::trial_epochs`] epochs after [`TrialConfig::settle_epochs`];
//! then every placed thread goes back to the CPU it ran on before (with the CPUs it was
//! allowed then) and the programs are measured the same way. The placement comes back only
//! if the programs' rates under it beat the operating system's by
//! [`TrialConfig::min_gain`] in geometric mean; otherwise the placement lane stops, with the
//! figures in the notes.
//!
//! One trial a run, at the start: a placement that moves memory with the threads (OAAS's
//! application moves) is not tried, as undoing it would move the memory back. Without
//! instruction counters nothing is measured and the placement stays.

use super::exchange::{self, Move};
use crate::guard;
use rondpoint_model::{
    Action, CounterGroup, CpuId, Observation, Pid, ProcessInfo, Reason, Tid, Topology,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `[auto.trial]`: the placement trial's parameters. Chosen, not from a paper: N-MASS has no
/// such check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrialConfig {
    /// Measure the placement against the operating system's and undo it when it does not
    /// pay; `false` keeps every placement, as N-MASS alone does.
    pub enabled: bool,
    /// Epochs after each switch that are not measured: caches refill on the new cores
    /// (epochs). Chosen: 1.
    pub settle_epochs: u32,
    /// Epochs each placement is measured over (epochs). Chosen: 2, to smooth one epoch's
    /// noise, as the payoff guard's pauses.
    pub trial_epochs: u32,
    /// The placement stays when the programs' rates under it, over their rates where the
    /// operating system ran them, have a geometric mean of at least 1 + this (fraction).
    /// Chosen: 0: N-MASS's gains in [Majo11 §4.5] are a few percent of the mean, and a
    /// placement that is not slower keeps its decision.
    pub min_gain: f64,
    /// ... and no program's rate under it is more than this fraction below its rate where the
    /// operating system ran it (fraction). Default 0.04: rondpoint's do-no-harm bound, the
    /// Carrefour paper's "never hurts performance by more than 4%" [Dashti13 §1].
    pub max_loss: f64,
    /// Epochs from a placement kept to the next trial of it, doubled each time it is kept
    /// again (epochs; 0: one trial, at the start). Programs come and go and their mix
    /// changes ([Majo11 §4.1] restarts those that finish first): a placement that paid for one
    /// mix is tried again for the next. Chosen: 8.
    pub recheck_epochs: u32,
    /// Longest time between two trials of a placement kept (epochs). Chosen: 64.
    pub max_recheck_epochs: u32,
}

impl Default for TrialConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            settle_epochs: 1,
            trial_epochs: 2,
            min_gain: 0.0,
            max_loss: 0.04,
            recheck_epochs: 8,
            max_recheck_epochs: 64,
        }
    }
}

/// Where the trial stands.
#[derive(Clone, Debug, PartialEq)]
enum Stage {
    /// Nothing placed, or nothing to try.
    Idle,
    /// The placement runs; `seen` epochs of it observed.
    Placed { seen: u32 },
    /// The operating system's placement runs again; `seen` epochs of it observed.
    Home { seen: u32 },
    /// The placement was kept; tried again in `left` epochs.
    Waiting { left: u32 },
    /// Decided for good: the verdict is the trial's latest.
    Done,
}

/// What the trial found.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The placement paid, and came back.
    Kept(String),
    /// It did not, and the operating system's placement stays.
    Undone(String),
    /// No verdict (a switch failed, no program ran in both), and the placement stays.
    Abandoned(String),
}

impl Verdict {
    /// What became of the placement.
    fn what(&self) -> &'static str {
        match self {
            Verdict::Kept(_) => "kept",
            Verdict::Undone(_) => "undone",
            Verdict::Abandoned(_) => "no verdict, kept",
        }
    }

    /// The figures or the reason behind it.
    fn why(&self) -> &str {
        match self {
            Verdict::Kept(w) | Verdict::Undone(w) | Verdict::Abandoned(w) => w,
        }
    }

    /// Both, in words.
    fn words(&self) -> String {
        format!("{}: {}", self.what(), self.why())
    }
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
    /// Each program's rates over the epochs of the current stage measured so far.
    rates: BTreeMap<Pid, Vec<f64>>,
    /// Each program's mean rate under the placement.
    under_placement: BTreeMap<Pid, f64>,
    /// Why the last switch failed, if it did.
    failed: Option<String>,
    /// Why putting the placement back failed, if it did.
    not_back: Option<String>,
    /// The latest verdict.
    last: Option<Verdict>,
    /// Trials made, and the wait before the next once the placement is kept (epochs).
    made: u32,
    interval: u32,
}

impl Trial {
    pub fn new(config: TrialConfig) -> Self {
        Self {
            config,
            stage: Stage::Idle,
            home: Vec::new(),
            placed: BTreeMap::new(),
            rates: BTreeMap::new(),
            under_placement: BTreeMap::new(),
            failed: None,
            not_back: None,
            last: None,
            made: 0,
            interval: 0,
        }
    }

    /// Takes note of the placement lane's start (where every thread of `processes` runs
    /// before it places any) and its actions: a trial when it only pins threads.
    pub fn begin(&mut self, processes: &[ProcessInfo], actions: &[Action]) {
        let pins_only = actions
            .iter()
            .all(|a| matches!(a, Action::PinThread { .. }));
        if !self.config.enabled || actions.is_empty() || !pins_only || self.stage != Stage::Idle {
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
        self.stage = Stage::Placed { seen: 0 };
        self.interval = self.config.recheck_epochs;
        self.placing(actions);
    }

    /// Takes note of the placement lane's pins (at the start and later: it may place again
    /// as it measures the programs), to put back the latest; a placement that is not a pin
    /// ends the trial without a verdict. The lane is measured as it acts, placing again or
    /// not.
    pub fn placing(&mut self, actions: &[Action]) {
        let placing = matches!(self.stage, Stage::Placed { .. } | Stage::Waiting { .. });
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
        matches!(self.stage, Stage::Home { .. })
            || (self.stage == Stage::Done && matches!(self.last, Some(Verdict::Undone(_))))
    }

    /// One epoch's observation: the switch to make, if any, with its reason.
    pub fn observe(
        &mut self,
        topology: &Topology,
        observation: &Observation,
    ) -> Option<(Vec<Action>, Reason)> {
        self.new_homes(observation);
        if let Stage::Waiting { left } = self.stage {
            if left > 1 {
                self.stage = Stage::Waiting { left: left - 1 };
                return None;
            }
            // Time to try it again: the placement has run long enough to need no settling,
            // and this epoch is its first measured.
            self.stage = Stage::Placed {
                seen: self.config.settle_epochs,
            };
        }
        let (seen, home) = match self.stage {
            Stage::Placed { seen } => (seen + 1, false),
            Stage::Home { seen } => (seen + 1, true),
            Stage::Idle | Stage::Done | Stage::Waiting { .. } => return None,
        };
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
        self.stage = match home {
            true => Stage::Home { seen },
            false => Stage::Placed { seen },
        };
        if seen <= self.config.settle_epochs {
            return None;
        }
        for (pid, rate) in guard::rates(observation) {
            if let Some(r) = rate {
                self.rates.entry(pid).or_default().push(r);
            }
        }
        if seen < self.config.settle_epochs + self.config.trial_epochs {
            return None;
        }
        let means: BTreeMap<Pid, f64> = std::mem::take(&mut self.rates)
            .into_iter()
            .map(|(pid, r)| (pid, r.iter().sum::<f64>() / r.len() as f64))
            .collect();
        if !home {
            self.under_placement = means;
            self.stage = Stage::Home { seen: 0 };
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
        let verdict = self.judge(&means);
        self.end(topology, observation, verdict)
    }

    /// The verdict from the operating system's rates (`means`) and the placement's.
    fn judge(&self, means: &BTreeMap<Pid, f64>) -> Verdict {
        let ratios: Vec<(Pid, f64)> = self
            .under_placement
            .iter()
            .filter_map(|(pid, placed)| {
                let os = *means.get(pid)?;
                (os > 0.0 && *placed > 0.0).then_some((*pid, placed / os))
            })
            .collect();
        if ratios.is_empty() {
            return Verdict::Abandoned("no program ran under both placements".into());
        }
        let geo = (ratios.iter().map(|(_, r)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let each: Vec<String> = ratios
            .iter()
            .map(|(pid, r)| format!("{pid} {:+.1}%", (r - 1.0) * 100.0))
            .collect();
        let worst = ratios.iter().map(|(_, r)| *r).fold(f64::INFINITY, f64::min);
        let figures = format!(
            "programs' rates under it vs the operating system's placement: {:+.2}% in geometric \
             mean over {} ({}); needed: {:+.1}% or more, and none below {:+.1}%",
            (geo - 1.0) * 100.0,
            ratios.len(),
            each.join(", "),
            self.config.min_gain * 100.0,
            -self.config.max_loss * 100.0,
        );
        if geo >= 1.0 + self.config.min_gain && worst >= 1.0 - self.config.max_loss {
            Verdict::Kept(figures)
        } else {
            Verdict::Undone(figures)
        }
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
            Stage::Home { .. } => self.failed = Some(format!("a thread could not go back: {why}")),
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
        Some(match &self.not_back {
            Some(why) => format!("{note}; a thread could not be put back: {why}"),
            None => note,
        })
    }
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
