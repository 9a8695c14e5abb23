//! What a simulated run gives: its results ([`RunResult`], `rondpoint sim --json`, schema in
//! docs/json/sim.md) and why a run failed ([`ExperimentError`]).

use crate::machine::SimError;
use crate::memory::MemoryReport;
use rondpoint_engine::EngineError;
use rondpoint_model::NodeId;
use rondpoint_policy_api::PolicyError;
use serde::Serialize;
use std::collections::BTreeMap;
use thiserror::Error;

/// Why a run failed.
#[derive(Debug, Error)]
pub enum ExperimentError {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error("{workload} under {policy} did not finish within {limit_s} simulated seconds")]
    TimeLimit {
        workload: String,
        policy: String,
        limit_s: f64,
    },
}

/// One run's results (`rondpoint sim --json`, schema in docs/json/sim.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    pub machine: String,
    pub workload: String,
    pub policy: String,
    pub seed: u64,
    /// Time until the last application finished (simulated seconds).
    pub completion_s: f64,
    /// First-touch's completion time over this run's (filled in when first-touch ran too).
    pub speedup_vs_first_touch: Option<f64>,
    /// The placement bound's completion time over this run's (filled in when the bound ran
    /// too; 1 at the bound, below 1 short of it; see [`crate::bound`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_bound: Option<f64>,
    pub avg_latency_cycles: f64,
    /// Local access ratio (0 to 1).
    pub lar: f64,
    /// Memory-controller imbalance (percent).
    pub mc_imbalance: f64,
    /// Interconnect imbalance (percent), over the link directions on routes in use.
    pub ic_imbalance: f64,
    /// Each memory controller's load over the run.
    pub mc_load: Vec<NodeLoad>,
    /// Each link direction's load over the run.
    pub link_load: Vec<LinkLoad>,
    pub ipc: f64,
    /// 4 KiB-equivalent pages moved by migrations (a page asked onto the node it is on is
    /// not counted).
    pub pages_migrated: u64,
    /// 4 KiB-equivalent pages interleaved (by actions, or placed by an interleaving policy).
    pub pages_interleaved: u64,
    /// 4 KiB-equivalent pages replicated.
    pub pages_replicated: u64,
    /// Actions not attempted because they were over a per-epoch rate limit
    /// (`--max-pages-per-epoch`, `--max-mb-per-epoch`).
    pub actions_skipped: u64,
    /// Time threads spent on mechanisms (samples, migrations, collapses, refills), as a
    /// percentage of their busy time.
    pub overhead_pct: f64,
    /// Samples delivered to the policy.
    pub samples: u64,
    /// Replicated pages collapsed by writes.
    pub collapses: u64,
    /// Completion per application (simulated seconds), and its memory per node at the end.
    pub apps: Vec<AppResult>,
    /// Each node's size and fallback order, and memory per node and per application over time.
    pub memory: MemoryReport,

    // Multiprogrammed workloads [Majo11] (see crate::experiment::multiprogram).
    /// Each program's slowdown against its solo run, for a scenario of several programs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multiprogram: Option<Multiprogram>,
    /// What the policy said about itself (a no-op and why, an approximation).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The actions by who decided them (the policy, or a lane of `auto`), with the last
    /// evidence and expected gain each gave ([`rondpoint_engine::ReasonTotals`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, rondpoint_engine::ReasonTotals>,
}

/// A memory controller's load, averaged over a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeLoad {
    pub node: NodeId,
    /// GB/s: a line per access, and one more per write-back.
    pub gbps: f64,
    /// That over the controller's bandwidth.
    pub utilisation: f64,
    /// Whether it counts in `mc_imbalance` (it served the run, ran its threads or held its
    /// memory).
    pub counted: bool,
}

/// A link direction's load, averaged over a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkLoad {
    pub from: NodeId,
    pub to: NodeId,
    /// GB/s: requests, data and headers.
    pub gbps: f64,
    /// That over the direction's bandwidth.
    pub utilisation: f64,
    /// Whether it counts in `ic_imbalance` (it lies on a route between a node that ran the
    /// run's threads and one that served or held its memory).
    pub counted: bool,
}

/// One application's completion, and where its memory was at the end of the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppResult {
    pub name: String,
    pub completion_s: f64,
    /// Bytes per node, in the order of `memory.nodes`.
    pub bytes_by_node: Vec<u64>,
}

/// Population standard deviation over mean, in percent (the imbalance of
/// [Dashti13 §2]); one definition for policies and reports.
pub use rondpoint_model::metrics::imbalance_pct;

/// Longest a run may take in simulated time before it is declared stuck.
pub const TIME_LIMIT_S: f64 = 3600.0;

/// One program's slowdown.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppSlowdown {
    pub name: String,
    /// Its solo run's completion (simulated seconds).
    pub solo_s: f64,
    /// Percent slower than alone: 100 x (time in the workload / solo time - 1), the time in
    /// the workload counted from the program's start.
    pub slowdown_pct: f64,
    /// Lowest and highest over the placements averaged (when more than one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range_pct: Option<[f64; 2]>,
}

/// Where a program runs alone for the time its slowdown is measured against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SoloNode {
    /// On its home node, its memory there: [Majo11 §4.1]'s solo run.
    Home,
    /// On the machine's first fast CPU node, its memory there: on a machine with slow nodes,
    /// [Gaud10 Figure 5] compares each application "to the performance of this application
    /// when run on a fast processor".
    Fast,
}

/// The slowdowns of a multiprogrammed run (`multiprogram` in `sim --json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Multiprogram {
    /// Placements averaged: the `default` baseline's splits, 1 for any other policy.
    pub placements: usize,
    /// Where each program ran alone for the reference time.
    pub solo: SoloNode,
    pub apps: Vec<AppSlowdown>,
    /// The mean of the programs' slowdowns (percent), the workload's as [Majo11 §4.1] reports
    /// it.
    pub average_pct: f64,
    /// Lowest and highest workload average over the placements (when more than one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub average_range_pct: Option<[f64; 2]>,
}
