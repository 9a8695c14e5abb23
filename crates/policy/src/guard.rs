//! The payoff guard: whether a policy's work for an application pays, measured, and rest for
//! the policy when it does not.
//!
//! A placement policy costs the programs it manages something every epoch it works for them:
//! sampling interrupts, page copies, TLB shootdowns. [Dashti13 §4.4] measured Carrefour's
//! sampling alone at up to 3.2% where it gains nothing, and its adaptive sampling only slows
//! down when there is nothing left to do; a policy that keeps finding pages to move whose
//! moves gain nothing pays in full for ever.
//!
//! The guard measures instead of predicting. Work changes placement, and placement outlasts
//! the work, so what a stretch of work is worth is the program's rate *at rest* after it
//! against its rate at rest before it: both without overhead, the difference is what the work
//! left behind. Each application's rate is the instructions per cycle of its slowest thread
//! (a completion rate: every backend with instruction counters has it, simulated and live). A
//! policy works for a program from the start, then pauses ([`GuardConfig::settle_epochs`]
//! and [`GuardConfig::trial_epochs`]) to measure it at rest; works again and pauses again,
//! and goes on, for twice as long each time, while each pause beats the one before by
//! [`GuardConfig::min_gain`] (or, for the first, while working beat resting). When it does
//! not, the program *rests* (the pages already placed stay placed) for a time that doubles
//! with each stretch of work that did not pay, up to [`GuardConfig::max_rest_epochs`], so
//! that a program whose needs change is looked at again; the end of a rest is the rate before
//! the next stretch, and a rest ends early when the rate falls ([`GuardConfig::wake_drop`]).
//!
//! A program whose rate changes by itself (phases, a shared machine) can mislead a verdict: a
//! rate that moves during a pause gets one more stretch instead of a verdict, and the doubling
//! bounds what a wrong verdict costs. Without instruction counters (a VM without a
//! PMU) nothing is measured and every program is worked for, as the paper's policy does.

use rondpoint_model::{CounterGroup, Observation, Pid};
use rondpoint_policy_api::bounds::Bounds;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The guard's parameters. Chosen, not from a paper: the papers' policies have no such guard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardConfig {
    /// Measure whether work pays, and rest when it does not; `false` runs the policy as its
    /// paper describes it.
    pub enabled: bool,
    /// Epochs of the first stretch of work, and of the first after a rest (epochs). Chosen: 2,
    /// the fewest in which a sampling policy sees samples and acts on them.
    pub first_act_epochs: u32,
    /// Longest stretch of work between pauses, reached by doubling while work pays (epochs).
    /// Chosen: 32.
    pub max_act_epochs: u32,
    /// Epochs of each pause, over which the rate at rest is averaged (epochs). Chosen: 2, to
    /// smooth one epoch's noise.
    pub trial_epochs: u32,
    /// Epochs at the start of each pause that are not measured: what the work left running
    /// (copies of the last moves, collapses of replicas written to) settles (epochs).
    /// Chosen: 1.
    pub settle_epochs: u32,
    /// Rest after the first stretch of work that did not pay (epochs). Chosen: 4.
    pub first_rest_epochs: u32,
    /// Longest rest, reached by doubling while work does not pay (epochs). Chosen: 32: a
    /// program whose needs change waits at most this long to be looked at again.
    pub max_rest_epochs: u32,
    /// Work goes on only when the rate at rest after it beats the rate before it by this
    /// fraction. Chosen: 1%, below which a gain is hard to tell from noise or a phase change.
    pub min_gain: f64,
    /// A rest ends early when the rate falls this fraction below the rate at rest when it
    /// began: the program changed (new memory, a new phase) and may need work again. Chosen:
    /// 5%, well above one epoch's noise.
    pub wake_drop: f64,
}

impl Default for GuardConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            first_act_epochs: 2,
            max_act_epochs: 32,
            trial_epochs: 2,
            settle_epochs: 1,
            first_rest_epochs: 4,
            max_rest_epochs: 32,
            min_gain: 0.01,
            wake_drop: 0.05,
        }
    }
}

/// The range of the guard's lengths in epochs; its `min_gain` is a fraction. A policy with a
/// guard lists them in its bounds, under `guard.`.
pub const EPOCHS: Bounds = Bounds::new(1.0, 1_000_000.0, "epochs");

/// Where one application stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Phase {
    /// The policy works for it; `epochs` so far of `of`.
    Acting { epochs: u32, of: u32 },
    /// No work, `epochs` so far: the rate at rest after the work (or, for a program just
    /// seen, before any).
    Pausing { epochs: u32 },
    /// Work did not pay: no work for `left` more epochs, then work again.
    Resting { left: u32 },
}

#[derive(Clone, Debug)]
struct App {
    phase: Phase,
    /// The next rest, and the next stretch of work, in epochs.
    rest: u32,
    act: u32,
    /// Instruction rates of the latest epochs of this phase (per ns), newest last, at most
    /// `trial_epochs`.
    rates: Vec<f64>,
    /// The rate at rest before the latest stretch of work.
    before: Option<f64>,
    /// The mean rate over the latest stretch of work.
    working: f64,
    /// Whether the latest verdict was [`Call::Retry`].
    retried: bool,
    /// Whether the epoch last observed was one of work.
    worked: bool,
    /// The epoch this application was last seen.
    seen: u64,
}

/// The verdict on one stretch of work, for reports and tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    pub pid: Pid,
    /// The rate at rest before the work (for the first stretch, the rate while working) and
    /// after it.
    pub before: f64,
    pub after: f64,
    pub call: Call,
}

/// What a verdict decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// The program is faster at rest after the work: work goes on, for twice as long.
    Pays,
    /// Nothing to judge: the rate moved during the pause (the program changed by itself: new
    /// memory, a new phase), which says nothing of the work. One more short stretch, judged
    /// against the latest rate.
    Retry,
    /// Work made no difference or made the program slower: rest.
    Rest,
}

/// The payoff guard over every application a policy manages.
#[derive(Clone, Debug, Default)]
pub struct Guard {
    cfg: GuardConfig,
    apps: FxHashMap<Pid, App>,
    verdicts: Vec<Verdict>,
}

impl Guard {
    /// A guard with these parameters.
    pub fn new(cfg: GuardConfig) -> Self {
        Self {
            cfg,
            apps: FxHashMap::default(),
            verdicts: Vec::new(),
        }
    }

    /// Takes in one epoch's observation (at its end, before the policy decides): each
    /// application's instruction rate, and where it stands next.
    pub fn observe(&mut self, obs: &Observation) {
        self.verdicts.clear();
        if !self.cfg.enabled || obs.counters.is_missing(CounterGroup::Instructions) {
            self.apps.clear();
            return;
        }
        let rates = rates(obs);
        let cfg = &self.cfg;
        for (&pid, &rate) in &rates {
            let app = self.apps.entry(pid).or_insert_with(|| App {
                phase: acting(cfg.first_act_epochs),
                rest: cfg.first_rest_epochs,
                act: cfg.first_act_epochs,
                rates: Vec::new(),
                before: None,
                working: 0.0,
                retried: false,
                worked: true,
                seen: obs.epoch,
            });
            app.seen = obs.epoch;
            app.worked = matches!(app.phase, Phase::Acting { .. });
            let Some(rate) = rate else { continue };
            let window = cfg.trial_epochs as usize;
            if app.rates.len() == window {
                app.rates.remove(0);
            }
            app.rates.push(rate);
            if let Some(v) = step(cfg, pid, app) {
                self.verdicts.push(v);
            }
        }
        // Applications gone for good are forgotten (a pid can come back as another program).
        self.apps.retain(|_, a| a.seen == obs.epoch);
        self.verdicts.sort_by_key(|v| v.pid);
    }

    /// Whether the epoch just observed was one of work for `pid`: the policy may act on what
    /// it saw (the moves land in the next epoch, which the pause's settling absorbs). A
    /// program not seen yet is worked for, and every program when the guard does not measure
    /// (disabled, or no instruction counters).
    pub fn may_act(&self, pid: Pid) -> bool {
        self.apps.get(&pid).is_none_or(|a| a.worked)
    }

    /// Whether the next epoch is one of work for `pid` (the policy samples it): not while the
    /// guard pauses or rests it. As for [`Guard::may_act`], unmeasured programs are worked for.
    pub fn working(&self, pid: Pid) -> bool {
        self.apps
            .get(&pid)
            .is_none_or(|a| matches!(a.phase, Phase::Acting { .. }))
    }

    /// Where `pid` stands, if the guard measures it.
    pub fn phase(&self, pid: Pid) -> Option<Phase> {
        self.apps.get(&pid).map(|a| a.phase)
    }

    /// The verdicts on work given at the latest observation.
    pub fn verdicts(&self) -> &[Verdict] {
        &self.verdicts
    }
}

/// Each program's rate this epoch: the instructions per cycle of its slowest thread, among
/// those that ran at least half as long as its busiest (a thread that ended or slept is not
/// its critical path). A parallel program completes when its slowest thread does, and a
/// move that speeds most threads and slows one (a page pulled away from the thread that uses
/// it most) leaves the sum of its threads' rates unchanged and the program slower. Time spent
/// in sampling interrupts and page moves counts as cycles without instructions. Without cycle
/// counters, cycles are the epoch's length. `None` for a program none of whose threads ran.
pub(crate) fn rates(obs: &Observation) -> FxHashMap<Pid, Option<f64>> {
    let per_cycle = !obs.counters.is_missing(CounterGroup::Cycles);
    let ns = obs.counters.duration_ns.max(1);
    let mut threads: FxHashMap<Pid, Vec<(u64, u64)>> = FxHashMap::default();
    for t in &obs.counters.threads {
        let cycles = if per_cycle { t.cycles } else { ns };
        threads
            .entry(t.pid)
            .or_default()
            .push((t.instructions, cycles));
    }
    threads
        .into_iter()
        .map(|(pid, ts)| {
            let busiest = ts.iter().map(|t| t.1).max().unwrap_or(0);
            let slowest = ts
                .iter()
                .filter(|t| busiest > 0 && t.1 >= busiest.div_ceil(2))
                .map(|&(instr, cycles)| instr as f64 / cycles as f64)
                .reduce(f64::min);
            (pid, slowest)
        })
        .collect()
}

/// Mean of the rates kept.
pub(crate) fn mean(rates: &[f64]) -> f64 {
    rates.iter().sum::<f64>() / rates.len().max(1) as f64
}

/// One epoch of one application's state machine; the verdict when a pause after work ends.
fn step(cfg: &GuardConfig, pid: Pid, app: &mut App) -> Option<Verdict> {
    let (next, verdict) = match app.phase {
        Phase::Acting { epochs, of } if epochs + 1 < of => (
            Phase::Acting {
                epochs: epochs + 1,
                of,
            },
            None,
        ),
        Phase::Acting { .. } => {
            app.working = mean(&app.rates);
            (Phase::Pausing { epochs: 0 }, None)
        }
        Phase::Pausing { epochs } if epochs + 1 < cfg.settle_epochs + cfg.trial_epochs => {
            (Phase::Pausing { epochs: epochs + 1 }, None)
        }
        Phase::Pausing { .. } => judge(cfg, pid, app),
        Phase::Resting { left } => {
            let latest = app.rates.last().copied().unwrap_or_default();
            if app
                .before
                .is_some_and(|b| latest < b * (1.0 - cfg.wake_drop))
            {
                app.before = Some(latest);
                (acting(app.act), None)
            } else if left > 1 {
                (Phase::Resting { left: left - 1 }, None)
            } else {
                app.before = Some(mean(&app.rates));
                (acting(app.act), None)
            }
        }
    };
    // Each phase's mean is over its own epochs (a rest's last `trial_epochs`).
    if std::mem::discriminant(&next) != std::mem::discriminant(&app.phase) {
        app.rates.clear();
    }
    app.phase = next;
    verdict
}

/// The end of a pause: the rate at rest after the work against the rate before it.
fn judge(cfg: &GuardConfig, pid: Pid, app: &mut App) -> (Phase, Option<Verdict>) {
    let after = mean(&app.rates);
    // A rate that moved during the pause is the program changing by itself: the next stretch
    // is judged against the latest rate.
    let (lo, hi) = app
        .rates
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
    let steady = hi <= lo * (1.0 + cfg.min_gain);
    let latest = app.rates.last().copied().unwrap_or(after);
    let before = app.before.replace(if steady { after } else { latest });
    let gains = |a: f64, b: f64| a > b * (1.0 + cfg.min_gain);
    let call = match before {
        // The first stretch has no rate at rest before it: it pays if working beat resting.
        // (Taking its pause as the reference for a second stretch instead costs every program
        // that gains nothing two more epochs of work: MG beside Streamcluster 0.9% -> 1.3%.)
        None if gains(app.working, after) => Call::Pays,
        None => Call::Rest,
        Some(b) if gains(after, b) => Call::Pays,
        Some(_) if !steady && !app.retried => Call::Retry,
        Some(_) => Call::Rest,
    };
    app.retried = call == Call::Retry;
    let next = match call {
        Call::Pays => {
            app.act = app.act.saturating_mul(2).min(cfg.max_act_epochs);
            app.rest = cfg.first_rest_epochs;
            acting(app.act)
        }
        Call::Retry => acting(cfg.first_act_epochs),
        Call::Rest => {
            let rest = app.rest;
            app.rest = app.rest.saturating_mul(2).min(cfg.max_rest_epochs);
            app.act = cfg.first_act_epochs;
            Phase::Resting { left: rest }
        }
    };
    let verdict = Verdict {
        pid,
        before: before.unwrap_or(app.working),
        after,
        call,
    };
    (next, Some(verdict))
}

fn acting(of: u32) -> Phase {
    Phase::Acting { epochs: 0, of }
}

#[cfg(test)]
mod tests;
