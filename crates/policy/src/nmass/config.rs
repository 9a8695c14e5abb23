//! The parameters of `maximum-local` and `n-mass`: each of the paper's is a named field with its
//! unit, its default (the paper's value) and where the paper gives it; ours say so and why.

use crate::PolicyError;
use rondpoint_policy_api::bounds::{Bounds, ParamBounds, check_config};
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

/// Where a process's MPKI comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MpkiSource {
    /// Measured each epoch from its threads' instructions and LLC misses, as N-MASS is
    /// designed to sample them [Majo11 §3.4].
    Measured,
    /// Per program, from profiling runs (`profile`): what the prototype the paper evaluated
    /// replays from its trace files (§3.4), known before the programs start and unchanged by
    /// contention.
    Profile,
}

/// What a profiling run measured of one program.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// NUMA penalty, CPI remote / CPI local [Majo11 Eq. 1] (a ratio, 1 when remote costs
    /// nothing): the program alone, once local and once remote (§3.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_penalty: Option<f64>,
    /// MPKI of the program alone and local (LLC misses per thousand instructions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpki: Option<f64>,
}

/// What `maximum-local` and `n-mass` decide from: each process's NUMA penalty and MPKI, and
/// when to decide again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Inputs {
    /// `"profile"` or `"regression"`. Default `"profile"`, the mode of [Majo11 §4.3-4.4]; a
    /// program with no profiled penalty gets the regression's estimate (ours).
    pub penalty: PenaltySource,
    /// `"measured"` or `"profile"`. Default `"measured"`, the design (§3.4) and the only way
    /// on a live machine without profiles. With `"profile"` every program needs a profiled
    /// MPKI: one without is refused by name (nothing counts its misses in that mode).
    pub mpki: MpkiSource,
    /// Profiling results by program (command name). Default empty: `rondpoint sim` fills in,
    /// for the workload's programs not given here, what it measures the paper's way (each
    /// program alone, local and remote, §3.2); on a live machine give them from such runs.
    pub profile: BTreeMap<String, Profile>,
    /// Intercept of the fit NP = intercept + slope x MPKI. Default 1.05 [Majo11 §4.5] (whose
    /// text swaps the words intercept and slope; a penalty of 1.05 at no misses is the
    /// reading that fits the 1.0 to 1.46 range of §4.1).
    pub regression_intercept: f64,
    /// Slope of that fit (penalty per MPKI). Default 0.015 [Majo11 §4.5] (fitted without mcf
    /// and without the programs under 1 MPKI).
    pub regression_slope: f64,
    /// Map again when a process's MPKI changed by more than this fraction of its MPKI over
    /// the previous epoch (0.2 = 20%). Default 0.2 [Majo11 §3.4]. The epoch is the engine's
    /// (`--epoch-ms`, default 1 s, §3.4).
    pub mpki_change_to_redecide: f64,
}

impl Default for Inputs {
    fn default() -> Self {
        Self {
            penalty: PenaltySource::Profile,
            mpki: MpkiSource::Measured,
            profile: BTreeMap::new(),
            regression_intercept: 1.05,
            regression_slope: 0.015,
            mpki_change_to_redecide: 0.2,
        }
    }
}

impl Inputs {
    /// The NUMA penalty of program `comm` at `mpki`.
    pub(crate) fn penalty_of(&self, comm: &str, mpki: f64) -> f64 {
        let profiled = self.profile.get(comm).and_then(|p| p.numa_penalty);
        match (self.penalty, profiled) {
            (PenaltySource::Profile, Some(np)) => np,
            _ => self.regression_intercept + self.regression_slope * mpki.max(0.0),
        }
    }

    /// The profiled MPKI of program `comm`, when the MPKI comes from the profile.
    pub(crate) fn profiled_mpki(&self, comm: &str) -> Option<f64> {
        match self.mpki {
            MpkiSource::Profile => self.profile.get(comm).and_then(|p| p.mpki),
            MpkiSource::Measured => None,
        }
    }

    /// Whether decisions on program `comm` read its measured MPKI: for its penalty (the
    /// regression) or, with `refine`, for its pressure.
    pub fn measures(&self, comm: &str, refine: bool) -> bool {
        if self.profiled_mpki(comm).is_some() {
            return false;
        }
        let profiled_np = self.penalty == PenaltySource::Profile
            && self
                .profile
                .get(comm)
                .is_some_and(|p| p.numa_penalty.is_some());
        refine || !profiled_np
    }

    /// With MPKIs from profiles, the first of `comms` without a profiled MPKI.
    pub(crate) fn unprofiled<'a>(
        &self,
        mut comms: impl Iterator<Item = &'a str>,
    ) -> Option<&'a str> {
        if self.mpki != MpkiSource::Profile {
            return None;
        }
        comms.find(|c| self.profile.get(*c).and_then(|p| p.mpki).is_none())
    }

    /// Whether a machine must count MPKI for these inputs whatever the programs.
    pub(crate) fn needs_counters(&self, refine: bool) -> bool {
        self.mpki == MpkiSource::Measured && (refine || self.penalty == PenaltySource::Regression)
    }

    pub(super) fn check(&self, policy: &str) -> Result<(), PolicyError> {
        check_config(
            policy,
            MAXIMUM_LOCAL_BOUNDS,
            &MaximumLocalConfig {
                inputs: self.clone(),
            },
        )
    }
}

/// `[maximum-local]` parameters: only its inputs (Algorithm 2 reads penalties and homes; with
/// profiled penalties it maps again only when processes come or go).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MaximumLocalConfig {
    pub inputs: Inputs,
}

/// `[n-mass]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NMassConfig {
    pub inputs: Inputs,
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
            inputs: Inputs::default(),
            threshold_mpki: 60.0,
            scale_threshold_by_link: true,
            reference_link_gbs: 11.72,
            swap_when_full: true,
        }
    }
}

impl NMassConfig {
    pub(super) fn check(&self, policy: &str) -> Result<(), PolicyError> {
        check_config(policy, NMASS_BOUNDS, self)
    }
}

/// N-MASS's inputs, as in maximum-local and n-mass.
const INPUT_BOUNDS: [ParamBounds; 5] = [
    (
        "inputs.regression_intercept",
        Bounds::new(0.001, 100.0, "CPI ratio"),
    ),
    (
        "inputs.regression_slope",
        Bounds::new(0.0, 10.0, "CPI ratio per MPKI"),
    ),
    (
        "inputs.mpki_change_to_redecide",
        Bounds::new(0.0, 100.0, ""),
    ),
    (
        "inputs.profile.*.numa_penalty",
        Bounds::new(0.1, 100.0, "CPI ratio"),
    ),
    ("inputs.profile.*.mpki", Bounds::new(0.0, 1000.0, "MPKI")),
];

/// The range of each parameter of maximum-local ([`MaximumLocalConfig`]).
pub const MAXIMUM_LOCAL_BOUNDS: &[ParamBounds] = &INPUT_BOUNDS;

/// The range of each parameter of n-mass ([`NMassConfig`]).
pub const NMASS_BOUNDS: &[ParamBounds] = &[
    INPUT_BOUNDS[0],
    INPUT_BOUNDS[1],
    INPUT_BOUNDS[2],
    INPUT_BOUNDS[3],
    INPUT_BOUNDS[4],
    ("threshold_mpki", Bounds::new(0.001, 1e6, "MPKI")),
    ("reference_link_gbs", Bounds::new(0.001, 100_000.0, "GB/s")),
];
