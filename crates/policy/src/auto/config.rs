//! `[auto]` parameters: which lanes may act, the arbiter's rules, and each lane policy's own
//! parameters in a sub-table (`[auto.carrefour]`, `[auto.usage-aware]`, `[auto.n-mass]`,
//! `[auto.oaas]`), read exactly as that policy's own table.

use super::trial::TrialConfig;
use rondpoint_policy_api::bounds::{Bounds, ParamBounds, SEED};
use serde::{Deserialize, Serialize};

/// The kinds of decision `auto` divides between its lanes, one owner each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lane {
    /// Where pages go by the traffic they draw: co-location, interleaving, replication
    /// (Carrefour, \[Dashti13\]).
    Pages,
    /// Where memory goes once a program's node is full: usage-aware overflow over the remote
    /// nodes, nearest tier first (\[Choe21\]).
    Overflow,
    /// Which node an application or process runs on: OAAS where the interconnect is
    /// asymmetric (\[Gaud10\]), N-MASS where single-threaded processes share last-level caches
    /// (\[Majo11\]).
    Placement,
}

impl Lane {
    /// Every lane, in the order `auto` asks them each epoch: where things run first, then
    /// where overflow goes, then pages by traffic (the later lanes see the earlier ones'
    /// decisions through the arbiter's rules).
    pub const ALL: [Lane; 3] = [Lane::Placement, Lane::Overflow, Lane::Pages];

    /// The name in messages and the `lanes` parameter.
    pub fn name(self) -> &'static str {
        match self {
            Lane::Pages => "pages",
            Lane::Overflow => "overflow",
            Lane::Placement => "placement",
        }
    }
}

/// The policies `auto` builds its lanes from: each reads its parameters from `[auto.NAME]`,
/// not from its own top-level `[NAME]` table.
pub const LANE_POLICIES: [&str; 4] = ["carrefour", "usage-aware", "n-mass", "oaas"];

/// `[auto]` parameters. Chosen, not from a paper: no paper composes these systems.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutoConfig {
    /// The lanes that may act, where they apply (`[]`: none, `auto` then equals first-touch).
    /// Default: all three.
    pub lanes: Vec<Lane>,
    /// Free memory a node must keep for the pages lane to move pages onto it (MiB): pages are
    /// never co-located, interleaved or replicated onto a node the overflow lane found full.
    /// Chosen: 256 MiB, four of the overflow lane's smallest moves (`min_move_mib`, 64).
    pub min_free_mib: u64,
    /// Seed of every random choice of the lanes (each lane's `seed`, unless its sub-table
    /// gives one). Default 1, Carrefour's.
    pub seed: u64,
    /// Carrefour's parameters, as `[carrefour]`'s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub carrefour: Option<toml::Table>,
    /// Usage-aware's parameters, as `[usage-aware]`'s.
    #[serde(rename = "usage-aware", skip_serializing_if = "Option::is_none")]
    pub usage_aware: Option<toml::Table>,
    /// N-MASS's parameters, as `[n-mass]`'s.
    #[serde(rename = "n-mass", skip_serializing_if = "Option::is_none")]
    pub n_mass: Option<toml::Table>,
    /// OAAS's parameters, as `[oaas]`'s (`curve` names a file, read by the caller).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oaas: Option<toml::Table>,
    /// The trials' parameters (`trial/`): whether the placement lane's placement of threads, and
    /// the overflow lane's placement of overflow, pay against what the OS does without them.
    pub trial: TrialConfig,
}

impl Default for AutoConfig {
    fn default() -> Self {
        Self {
            lanes: Lane::ALL.to_vec(),
            min_free_mib: 256,
            seed: 1,
            carrefour: None,
            usage_aware: None,
            // An empty profile, for a simulator to fill from solo runs as it fills `[n-mass]`'s.
            n_mass: Some(toml::Table::from_iter([(
                "inputs".to_string(),
                toml::Value::Table(toml::Table::from_iter([(
                    "profile".to_string(),
                    toml::Value::Table(toml::Table::new()),
                )])),
            )])),
            oaas: None,
            trial: TrialConfig::default(),
        }
    }
}

/// The range of each of `[auto]`'s own numbers; a lane's sub-table is checked against that
/// policy's own ranges when the lane is built.
pub const BOUNDS: &[ParamBounds] = &[
    ("min_free_mib", Bounds::new(0.0, 1_048_576.0, "MiB")),
    ("seed", SEED),
    ("trial.settle_epochs", Bounds::new(0.0, 1_000.0, "epochs")),
    ("trial.trial_epochs", Bounds::new(1.0, 1_000.0, "epochs")),
    ("trial.min_gain", Bounds::new(-1.0, 10.0, "fraction")),
    ("trial.max_loss", Bounds::new(0.0, 1.0, "fraction")),
    ("trial.step_gain", Bounds::new(-1.0, 10.0, "fraction")),
    (
        "trial.recheck_epochs",
        Bounds::new(0.0, 1_000_000.0, "epochs"),
    ),
    (
        "trial.max_recheck_epochs",
        Bounds::new(1.0, 1_000_000.0, "epochs"),
    ),
];
