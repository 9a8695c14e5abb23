//! `auto`'s trials: a lane's decision measured against what the operating system does without
//! it, and undone when it does not pay.
//!
//! Each lane's policy decides by its paper's model, and a model can misjudge a mix. So `auto`
//! measures, as the payoff guard does for pages ([`crate::guard`]): each program's rate (the
//! instructions per cycle of its slowest thread) is averaged over [`TrialConfig::trial_epochs`]
//! epochs after [`TrialConfig::settle_epochs`], once under the lane's decision and once
//! without it, and the decision stays only if the programs are not slower under it on
//! average ([`TrialConfig::min_gain`]) and none is more than [`TrialConfig::max_loss`] slower.
//!
//! - [`placement`]: the placement lane's pins of threads against where the operating system
//!   ran them (the placement first, then the operating system's);
//! - [`overflow`]: the overflow lane's placement of overflow against where the kernel's
//!   fallback put it (the kernel's first, then the lane's).
//!
//! Without instruction counters nothing is measured and the lanes act as their papers say.

pub mod overflow;
pub mod placement;

use crate::guard;
use rondpoint_model::{Observation, Pid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[auto.trial]`: the trials' parameters. Chosen, not from a paper: neither N-MASS nor
/// usage-aware has such a check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrialConfig {
    /// Measure the placement lane's placement of threads against the operating system's and
    /// undo it when it does not pay; `false` keeps every placement, as N-MASS alone does.
    pub placement: bool,
    /// Measure the overflow lane's placement of overflow against the kernel's fallback and
    /// undo it when it does not pay; `false` places overflow as usage-aware alone does. The
    /// trial needs the overflow placed after allocation: with it, the lane runs usage-aware
    /// with `mode = "reactive"` unless `[auto.usage-aware]` sets a `mode`.
    pub overflow: bool,
    /// Epochs after each switch that are not measured: caches refill on the new cores, the
    /// last page copies end (epochs). Chosen: 1.
    pub settle_epochs: u32,
    /// Epochs each placement is measured over (epochs). Chosen: 2, to smooth one epoch's
    /// noise, as the payoff guard's pauses.
    pub trial_epochs: u32,
    /// A decision stays when the programs' rates under it, over their rates without it, have
    /// a geometric mean of at least 1 + this (fraction). Chosen: 0: N-MASS's gains in [Majo11
    /// §4.5] are a few percent of the mean, and a decision that is not slower is kept.
    pub min_gain: f64,
    /// ... and no program's rate under it is more than this fraction below its rate without
    /// it (fraction). Default 0.04: rondpoint's do-no-harm bound, the Carrefour paper's "never
    /// hurts performance by more than 4%" [Dashti13 §1].
    pub max_loss: f64,
    /// The overflow lane places overflow in steps, each of twice as many epochs of moves as
    /// the one before (the first: one epoch, at most its `max_move_mib_per_epoch`), measured
    /// after each; it goes on only while a step raises the programs' rates by this fraction
    /// in geometric mean. Chosen: 0.01, the payoff guard's `min_gain`: below it a gain is hard
    /// to tell from noise, and each step's moves cost the programs whose pages move.
    pub step_gain: f64,
    /// Epochs from a placement of threads kept to the next trial of it, doubled each time it
    /// is kept again (epochs; 0: one trial, at the start). Programs come and go and their mix
    /// changes ([Majo11 §4.1] restarts those that finish first): a placement that paid for one
    /// mix is tried again for the next. Also the least wait, doubled each time, from a
    /// placement undone to the lane placing again once the programs change. Chosen: 8.
    pub recheck_epochs: u32,
    /// Longest time between two trials of a placement kept (epochs). Chosen: 64.
    pub max_recheck_epochs: u32,
}

impl Default for TrialConfig {
    fn default() -> Self {
        Self {
            placement: true,
            overflow: true,
            settle_epochs: 1,
            trial_epochs: 2,
            min_gain: 0.0,
            max_loss: 0.04,
            step_gain: 0.01,
            recheck_epochs: 8,
            max_recheck_epochs: 64,
        }
    }
}

/// What a trial found.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The decision paid, and stays.
    Kept(String),
    /// It did not, and what the operating system does stays.
    Undone(String),
    /// No verdict (a switch failed, no program ran in both), and the decision stays.
    Abandoned(String),
}

impl Verdict {
    /// What became of the decision.
    pub(super) fn what(&self) -> &'static str {
        match self {
            Verdict::Kept(_) => "kept",
            Verdict::Undone(_) => "undone",
            Verdict::Abandoned(_) => "no verdict, kept",
        }
    }

    /// The figures or the reason behind it.
    pub(super) fn why(&self) -> &str {
        match self {
            Verdict::Kept(w) | Verdict::Undone(w) | Verdict::Abandoned(w) => w,
        }
    }

    /// Both, in words.
    pub(super) fn words(&self) -> String {
        format!("{}: {}", self.what(), self.why())
    }
}

/// Each program's mean rate over one measurement.
pub(super) type Rates = BTreeMap<Pid, f64>;

/// One measurement of every program's rate: [`TrialConfig::trial_epochs`] epochs after
/// [`TrialConfig::settle_epochs`] not measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Window {
    /// Epochs observed.
    seen: u32,
    /// Each program's rates over the epochs measured so far.
    rates: BTreeMap<Pid, Vec<f64>>,
}

impl Window {
    /// A window whose settling is already over: what it measures has run long enough.
    pub(super) fn settled(config: &TrialConfig) -> Self {
        Self {
            seen: config.settle_epochs,
            rates: BTreeMap::new(),
        }
    }

    /// One epoch observed; each program's mean rate once the window is over.
    pub(super) fn observe(
        &mut self,
        config: &TrialConfig,
        observation: &Observation,
    ) -> Option<Rates> {
        self.seen += 1;
        if self.seen <= config.settle_epochs {
            return None;
        }
        for (pid, rate) in guard::rates(observation) {
            if let Some(r) = rate {
                self.rates.entry(pid).or_default().push(r);
            }
        }
        if self.seen < config.settle_epochs + config.trial_epochs {
            return None;
        }
        let means = std::mem::take(&mut self.rates)
            .into_iter()
            .map(|(pid, r)| (pid, guard::mean(&r)))
            .collect();
        Some(means)
    }
}

/// The verdict on a decision from the programs' rates under it (`tried`) and without it
/// (`base`, described as `against`).
pub(super) fn judge(config: &TrialConfig, tried: &Rates, base: &Rates, against: &str) -> Verdict {
    let ratios = ratios(tried, base);
    let Some(geo) = geo_mean(&ratios) else {
        return Verdict::Abandoned(format!("no program ran both under it and under {against}"));
    };
    let each: Vec<String> = ratios
        .iter()
        .map(|(pid, r)| format!("{pid} {:+.1}%", (r - 1.0) * 100.0))
        .collect();
    let worst = ratios.iter().map(|(_, r)| *r).fold(f64::INFINITY, f64::min);
    let figures = format!(
        "programs' rates under it vs {against}: {:+.2}% in geometric mean over {} ({}); \
         needed: {:+.1}% or more, and none below {:+.1}%",
        (geo - 1.0) * 100.0,
        ratios.len(),
        each.join(", "),
        config.min_gain * 100.0,
        -config.max_loss * 100.0,
    );
    if geo >= 1.0 + config.min_gain && worst >= 1.0 - config.max_loss {
        Verdict::Kept(figures)
    } else {
        Verdict::Undone(figures)
    }
}

/// Each program's rate in `tried` over its rate in `base`, for the programs in both.
fn ratios(tried: &Rates, base: &Rates) -> Vec<(Pid, f64)> {
    tried
        .iter()
        .filter_map(|(pid, with)| {
            let without = *base.get(pid)?;
            (without > 0.0 && *with > 0.0).then_some((*pid, with / without))
        })
        .collect()
}

/// The geometric mean of the ratios; `None` without any.
fn geo_mean(ratios: &[(Pid, f64)]) -> Option<f64> {
    let n = ratios.len();
    (n > 0).then(|| (ratios.iter().map(|(_, r)| r.ln()).sum::<f64>() / n as f64).exp())
}

/// The geometric mean of the programs' rates in `tried` over those in `base`; `None` when no
/// program is in both.
pub(super) fn gain(tried: &Rates, base: &Rates) -> Option<f64> {
    geo_mean(&ratios(tried, base))
}
