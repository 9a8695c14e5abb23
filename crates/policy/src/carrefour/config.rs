//! Carrefour's parameters: each of the paper's is a named field with its unit, its default (the
//! paper's value) and where the paper gives it; the few that are not the paper's say why they
//! were chosen.

use super::pages;
use crate::PolicyError;
use crate::guard::{self, GuardConfig};
use rondpoint_policy_api::bounds::{
    Bounds, COUNT, FRACTION, PERCENT, ParamBounds, SAMPLING_CYCLES, SEED, TRACKED_PAGES,
    check_config,
};
use serde::{Deserialize, Serialize};

/// One of Carrefour's three mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Technique {
    Replication,
    Interleaving,
    CoLocation,
}

/// Carrefour's parameters, defaulted to the paper's values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CarrefourConfig {
    /// Run Carrefour for an application only above this many DRAM accesses per microsecond
    /// (MAPTU). [Dashti13 §3.2.1] step 1: 50.
    pub maptu_threshold: f64,
    /// Replicate only if at least this fraction of memory is free; when unset, 1 − 1/nodes
    /// (enough to replicate the whole resident set). Section 3.2.1 step 2.
    pub replication_min_free_fraction: Option<f64>,
    /// Replicate only for applications whose DRAM accesses are at least this fraction reads
    /// (MRR). Section 3.2.1 step 2: 95%.
    pub mrr_threshold: f64,
    /// Interleave when memory-controller imbalance exceeds this (percent). Step 3: 35%.
    pub mc_imbalance_threshold_pct: f64,
    /// Co-locate when the local access ratio is below this. Step 4: 80%.
    pub lar_threshold: f64,
    /// Decide on a page only with at least this many samples. Section 3.2.2: 2.
    pub min_samples_per_page: u32,
    /// Start replicating for an application only once this many pages are marked for it.
    /// Section 3.3.2, footnote 6: 500.
    pub min_replication_candidates: usize,
    /// Never replicate again a page that collapsed more than this many times. Section 3.3.2: 5.
    pub max_collapses_per_page: u32,
    /// An application stops replicating once the backend reports collapses for at least this
    /// fraction of the pages it had replicated: its writes reach the pages it reads (the
    /// per-page limit above learns that one page at a time). Not the paper's; chosen: half.
    pub max_collapsed_fraction: f64,
    /// Sampling period while Carrefour is acting (cycles per sample). Section 3.3.1: 65,000.
    pub sampling_period_high_cycles: u64,
    /// Sampling period after a quiet epoch. Section 3.3.1: 260,000.
    pub sampling_period_low_cycles: u64,
    /// An epoch with fewer actions than this is quiet. Section 3.3.1: 10.
    pub min_actions_for_high_rate: usize,
    /// Most pages tracked per epoch. Section 4.4: 30,000.
    pub max_tracked_pages: usize,
    /// Judge each application on its own traffic (the per-pid runtime) instead of the
    /// machine's.
    pub per_application: bool,
    /// Mechanisms enabled (all three by default; Table 4 runs one at a time).
    pub techniques: Vec<Technique>,
    /// When the backend says its DRAM traffic counters are estimated from samples (a machine
    /// without a PMU, where the page-fault sampler is all there is), MAPTU is not a DRAM access
    /// rate and the threshold above means nothing: an application is then enabled once it
    /// yields this many samples in an epoch. Chosen: enough for a few pages to reach two
    /// samples.
    pub min_samples_when_estimated: u64,
    /// Shortest window, in epochs, over which a page's statistics are kept once a page fault or
    /// NUMA hinting fault is among its samples (statistics from IBS/PEBS samples alone last one
    /// epoch, as in the paper). A hinting fault comes at most once per page per scan of its
    /// process by the kernel (256 MB per scan period of 1 s to 60 s), so a page rarely gets two
    /// samples in one epoch; the paper's per-epoch reset would leave Carrefour blind. The
    /// window grows beyond this to hold three quarters of the gaps measured between successive
    /// fault samples of a page (rounded up to a power of two), twice over (the next scan can
    /// come twice as late), so that it follows the scanner's actual pace. Chosen: 8 epochs. A page's statistics are also reset once
    /// Carrefour acts on it, and when it is found on another node than before (moved by someone
    /// else: its old samples are stale).
    pub fault_sample_window_epochs: u32,
    /// Longest fault-sample window (epochs) the measured gaps can make. Chosen: 256 epochs,
    /// about four of the kernel's slowest scan periods (numa_balancing_scan_period_max_ms,
    /// 60 s) at 1 s epochs; longer windows mostly fill the tracked pages with pages waiting
    /// for their second sample.
    pub fault_sample_window_max_epochs: u32,
    /// Seed of the P_migrate / P_node draws.
    pub seed: u64,
    /// Whether Carrefour's work for each application pays, measured, and rest when it does
    /// not (not the paper's: see [`crate::guard`]).
    pub guard: GuardConfig,
}

impl Default for CarrefourConfig {
    fn default() -> Self {
        Self {
            maptu_threshold: 50.0,
            replication_min_free_fraction: None,
            mrr_threshold: 0.95,
            mc_imbalance_threshold_pct: 35.0,
            lar_threshold: 0.80,
            min_samples_per_page: 2,
            min_replication_candidates: 500,
            max_collapses_per_page: 5,
            max_collapsed_fraction: 0.5,
            sampling_period_high_cycles: 65_000,
            sampling_period_low_cycles: 260_000,
            min_actions_for_high_rate: 10,
            max_tracked_pages: 30_000,
            per_application: false,
            techniques: vec![
                Technique::Replication,
                Technique::Interleaving,
                Technique::CoLocation,
            ],
            min_samples_when_estimated: 100,
            fault_sample_window_epochs: 8,
            fault_sample_window_max_epochs: 256,
            seed: 1,
            guard: GuardConfig::default(),
        }
    }
}

impl CarrefourConfig {
    /// Checks the parameters: each in its range ([`BOUNDS`]: fractions in [0, 1], sampling
    /// periods, values the page table can count), and the window below its maximum.
    pub(super) fn validate(&self) -> Result<(), PolicyError> {
        check_config("carrefour", BOUNDS, self)?;
        if self.fault_sample_window_epochs > self.fault_sample_window_max_epochs {
            return Err(PolicyError::Config {
                policy: "carrefour".into(),
                message: format!(
                    "fault_sample_window_epochs ({}) must be at most \
                     fault_sample_window_max_epochs ({})",
                    self.fault_sample_window_epochs, self.fault_sample_window_max_epochs
                ),
            });
        }
        Ok(())
    }

    /// The free fraction of memory replication needs on a machine of `nodes` nodes.
    pub(super) fn min_free_fraction(&self, nodes: usize) -> f64 {
        self.replication_min_free_fraction
            .unwrap_or(1.0 - 1.0 / nodes as f64)
    }

    /// Whether mechanism `t` is enabled.
    pub(super) fn has(&self, t: Technique) -> bool {
        self.techniques.contains(&t)
    }
}

/// The range of each parameter ([`CarrefourConfig`]).
pub const BOUNDS: &[ParamBounds] = &[
    ("maptu_threshold", Bounds::new(0.0, 1e6, "accesses/us")),
    ("replication_min_free_fraction", FRACTION),
    ("mrr_threshold", FRACTION),
    ("mc_imbalance_threshold_pct", PERCENT),
    ("lar_threshold", FRACTION),
    // Samples per page are counted in 16 bits.
    (
        "min_samples_per_page",
        Bounds::new(1.0, u16::MAX as f64, "samples"),
    ),
    ("min_replication_candidates", COUNT),
    // Collapses are counted up to pages::MAX_COLLAPSES.
    (
        "max_collapses_per_page",
        Bounds::new(0.0, (pages::MAX_COLLAPSES - 1) as f64, "collapses"),
    ),
    ("max_collapsed_fraction", FRACTION),
    ("sampling_period_high_cycles", SAMPLING_CYCLES),
    ("sampling_period_low_cycles", SAMPLING_CYCLES),
    ("min_actions_for_high_rate", COUNT),
    ("max_tracked_pages", TRACKED_PAGES),
    ("min_samples_when_estimated", COUNT),
    (
        "fault_sample_window_epochs",
        Bounds::new(1.0, pages::MAX_WINDOW_EPOCHS as f64, "epochs"),
    ),
    (
        "fault_sample_window_max_epochs",
        Bounds::new(1.0, pages::MAX_WINDOW_EPOCHS as f64, "epochs"),
    ),
    ("seed", SEED),
    ("guard.first_act_epochs", guard::EPOCHS),
    ("guard.max_act_epochs", guard::EPOCHS),
    ("guard.trial_epochs", guard::EPOCHS),
    (
        "guard.settle_epochs",
        Bounds::new(0.0, 1_000_000.0, "epochs"),
    ),
    ("guard.first_rest_epochs", guard::EPOCHS),
    ("guard.max_rest_epochs", guard::EPOCHS),
    ("guard.min_gain", FRACTION),
    ("guard.wake_drop", FRACTION),
];

#[cfg(test)]
mod tests {
    use super::super::Carrefour;
    use super::*;

    #[test]
    fn bad_parameters_are_refused() {
        let bad = |cfg: CarrefourConfig| Carrefour::new(cfg).is_err();
        assert!(bad(CarrefourConfig {
            mrr_threshold: 1.5,
            ..CarrefourConfig::default()
        }));
        assert!(bad(CarrefourConfig {
            sampling_period_low_cycles: 0,
            ..CarrefourConfig::default()
        }));
        assert!(bad(CarrefourConfig {
            min_samples_per_page: 0,
            ..CarrefourConfig::default()
        }));
        assert!(bad(CarrefourConfig {
            replication_min_free_fraction: Some(-0.1),
            ..CarrefourConfig::default()
        }));
        // Beyond what the per-page counters hold.
        assert!(bad(CarrefourConfig {
            min_samples_per_page: 70_000,
            ..CarrefourConfig::default()
        }));
        assert!(bad(CarrefourConfig {
            max_collapses_per_page: 31,
            ..CarrefourConfig::default()
        }));
        assert!(!bad(CarrefourConfig {
            max_collapses_per_page: 30,
            ..CarrefourConfig::default()
        }));
        assert!(bad(CarrefourConfig {
            fault_sample_window_epochs: 5000,
            ..CarrefourConfig::default()
        }));
        assert!(bad(CarrefourConfig {
            fault_sample_window_max_epochs: 5000,
            fault_sample_window_epochs: 5000,
            ..CarrefourConfig::default()
        }));
        assert!(!bad(CarrefourConfig {
            fault_sample_window_max_epochs: 4096,
            fault_sample_window_epochs: 4096,
            ..CarrefourConfig::default()
        }));
    }
}
