//! The parameters of `maximum-local` and `n-mass`: each of the paper's is a named field with its
//! unit, its default (the paper's value) and where the paper gives it; ours say so and why.

use crate::PolicyError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a process's NUMA penalty comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PenaltySource {
    /// Per program, from profiling runs (`profile`): the paper's main mode, "perfect
    /// information" replayed from traces of separate runs [Majo11 §3.4, §4.3].
    Profile,
    /// Estimated from the process's MPKI with the linear fit of [Majo11 §4.5].
    Regression,
}

/// How `maximum-local` and `n-mass` know each process's NUMA penalty, CPI remote / CPI local
/// [Majo11 Eq. 1]: the factor by which running away from its memory slows it down.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PenaltyConfig {
    /// `"profile"` or `"regression"`. Default `"profile"`, the mode of [Majo11 §4.3-4.4].
    pub source: PenaltySource,
    /// NUMA penalty per program, by command name (a ratio, 1 when remote costs nothing), used
    /// with `source = "profile"`. Default empty: `rondpoint sim` fills it, for the programs of
    /// the workload that are not given here, with penalties it measures the paper's way (each
    /// program alone, once local and once remote, [Majo11 §3.2]); on a live machine give them
    /// (from such runs). A program missing here gets the regression's estimate (ours).
    pub profile: BTreeMap<String, f64>,
    /// Intercept of the fit NP = intercept + slope x MPKI. Default 1.05 [Majo11 §4.5] (whose
    /// text swaps the words intercept and slope; a penalty of 1.05 at no misses is the
    /// reading that fits Figure 7's range of 1.0 to 1.46, §4.1).
    pub regression_intercept: f64,
    /// Slope of that fit (penalty per MPKI). Default 0.015 [Majo11 §4.5] (fitted without mcf
    /// and without the programs under 1 MPKI).
    pub regression_slope: f64,
}

impl Default for PenaltyConfig {
    fn default() -> Self {
        Self {
            source: PenaltySource::Profile,
            profile: BTreeMap::new(),
            regression_intercept: 1.05,
            regression_slope: 0.015,
        }
    }
}

impl PenaltyConfig {
    /// The NUMA penalty of program `comm` at `mpki`.
    pub fn of(&self, comm: &str, mpki: f64) -> f64 {
        match (self.source, self.profile.get(comm)) {
            (PenaltySource::Profile, Some(&np)) => np,
            _ => self.regression_intercept + self.regression_slope * mpki.max(0.0),
        }
    }

    /// Whether the penalties depend on the MPKI (the regression, for at least some program).
    pub fn uses_mpki(&self) -> bool {
        self.source == PenaltySource::Regression
    }

    fn check(&self, policy: &str) -> Result<(), PolicyError> {
        let bad = |message: String| PolicyError::Config {
            policy: policy.to_string(),
            message,
        };
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !(positive(self.regression_intercept)
            && self.regression_slope.is_finite()
            && self.regression_slope >= 0.0)
        {
            return Err(bad(
                "penalty.regression_intercept must be positive and penalty.regression_slope \
                 not negative"
                    .into(),
            ));
        }
        if let Some((name, v)) = self
            .profile
            .iter()
            .find(|(_, v)| !(v.is_finite() && **v > 0.0))
        {
            return Err(bad(format!(
                "penalty.profile.{name} = {v}: a NUMA penalty is a positive ratio"
            )));
        }
        Ok(())
    }
}

/// `[maximum-local]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MaximumLocalConfig {
    pub penalty: PenaltyConfig,
    /// Map again when a process's MPKI changed by more than this fraction of its MPKI over
    /// the previous epoch (0.2 = 20%). Default 0.2 [Majo11 §3.4]. Used only when the penalties
    /// come from the MPKI (the regression): Algorithm 2 itself reads only penalties and homes,
    /// so with profiled penalties maximum-local maps again only when processes come or go.
    /// The epoch is the engine's (`--epoch-ms`, default 1 s, the paper's §3.4).
    pub mpki_change_to_redecide: f64,
}

impl Default for MaximumLocalConfig {
    fn default() -> Self {
        Self {
            penalty: PenaltyConfig::default(),
            mpki_change_to_redecide: 0.2,
        }
    }
}

/// `[n-mass]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NMassConfig {
    pub penalty: PenaltyConfig,
    /// Map again when a process's MPKI changed by more than this fraction of its MPKI over
    /// the previous epoch. Default 0.2 [Majo11 §3.4]. The epoch is the engine's (default 1 s,
    /// §3.4).
    pub mpki_change_to_redecide: f64,
    /// THRESHOLD of Algorithm 3 (MPKI): a process is moved off its home only if the cache it
    /// goes to stays under this penalty-weighted pressure. Default 60 [Majo11 §3.4], found
    /// empirically as the pressure at which the paper's machine saturates its QPI link.
    pub threshold_mpki: f64,
    /// Scale the threshold by the machine's interconnect bandwidth against the paper's
    /// machine, where the machine reports its link capacity (the narrowest link counts);
    /// where it does not, the threshold is used as it is. Default true. Ours: the paper has
    /// one machine; a link twice as wide saturates at about twice the traffic. On the paper's
    /// machine (`nehalem-e5520-2s`) the scale is exactly 1.
    pub scale_threshold_by_link: bool,
    /// The paper machine's link bandwidth per direction (GB/s, 1e9 bytes), the reference of
    /// that scaling. Default 11.72: the 23.44 GB/s QPI of [Majo11 Table 1] counts both
    /// directions.
    pub reference_link_gbs: f64,
    /// When the cache a process should go to has no free core, exchange it with that cache's
    /// last process (lowest penalty) if the exchange brings the pressures closer and passes
    /// the threshold. Default true. Ours: Algorithm 3 moves a process only to a free core, so
    /// on a machine with every core busy (the 8-process workloads) it never moves anything,
    /// yet [Majo11 §4.4] reports N-MASS ahead of maximum-local on WL11; false keeps the
    /// listing's behaviour.
    pub swap_when_full: bool,
}

impl Default for NMassConfig {
    fn default() -> Self {
        Self {
            penalty: PenaltyConfig::default(),
            mpki_change_to_redecide: 0.2,
            threshold_mpki: 60.0,
            scale_threshold_by_link: true,
            reference_link_gbs: 11.72,
            swap_when_full: true,
        }
    }
}

impl MaximumLocalConfig {
    pub(super) fn check(&self, policy: &str) -> Result<(), PolicyError> {
        self.penalty.check(policy)?;
        check_fraction(policy, self.mpki_change_to_redecide)
    }
}

impl NMassConfig {
    pub(super) fn check(&self, policy: &str) -> Result<(), PolicyError> {
        self.penalty.check(policy)?;
        check_fraction(policy, self.mpki_change_to_redecide)?;
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !(positive(self.threshold_mpki) && positive(self.reference_link_gbs)) {
            return Err(PolicyError::Config {
                policy: policy.to_string(),
                message: "threshold_mpki and reference_link_gbs must be positive".into(),
            });
        }
        Ok(())
    }
}

fn check_fraction(policy: &str, x: f64) -> Result<(), PolicyError> {
    if x.is_finite() && x >= 0.0 {
        Ok(())
    } else {
        Err(PolicyError::Config {
            policy: policy.to_string(),
            message: format!("mpki_change_to_redecide must be a fraction, not {x}"),
        })
    }
}
