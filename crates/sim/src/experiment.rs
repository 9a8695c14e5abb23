//! Running a policy on a scenario in the simulator, and the metrics a report shows.
//!
//! Metrics are named and defined as in the papers:
//! - LAR, local access ratio: DRAM accesses served by the accessing thread's node over all
//!   DRAM accesses ([Dashti13 Table 2]);
//! - MC imbalance: standard deviation of the DRAM accesses served by each memory controller, as
//!   a percentage of their mean (Table 2: 170% when one of four controllers serves everything);
//! - interconnect imbalance: the same over the bytes carried by each link direction;
//! - average memory latency: loaded latency of a DRAM access, in core cycles, averaged over
//!   accesses;
//! - IPC: instructions over busy cycles, all threads together.

use crate::machine::{SimConfig, SimError, SimMachine};
use crate::memory::{MemoryReport, NodeInfo};
use crate::scenario::Scenario;
use crate::spec::MachineSpec;
use rondpoint_engine::{EngineConfig, EngineError, VirtualClock};
use rondpoint_policy::Policy;
use serde::Serialize;
use thiserror::Error;

/// Why a run failed.
#[derive(Debug, Error)]
pub enum ExperimentError {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Engine(#[from] EngineError),
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
    pub avg_latency_cycles: f64,
    /// Local access ratio (0 to 1).
    pub lar: f64,
    /// Memory-controller imbalance (percent).
    pub mc_imbalance: f64,
    /// Interconnect imbalance (percent).
    pub ic_imbalance: f64,
    pub ipc: f64,
    /// 4 KiB-equivalent pages moved by migrations.
    pub pages_migrated: u64,
    /// 4 KiB-equivalent pages interleaved (by actions, or placed by an interleaving policy).
    pub pages_interleaved: u64,
    /// 4 KiB-equivalent pages replicated.
    pub pages_replicated: u64,
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
    /// What the policy said about itself (a no-op and why, an approximation).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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

/// Runs `policy` on `scenario` on `machine` and computes the metrics.
/// `progress` is called after each epoch with the simulated time (seconds).
pub fn run(
    machine: &MachineSpec,
    scenario: &Scenario,
    policy: &mut dyn Policy,
    sim: &SimConfig,
    engine: &EngineConfig,
    mut progress: impl FnMut(f64),
) -> Result<RunResult, ExperimentError> {
    let mut m = SimMachine::new(machine.clone(), scenario, sim.clone())?;
    let mut cfg = engine.clone();
    cfg.time_limit_ns = Some((TIME_LIMIT_S * 1e9) as u64);
    let mut memory = MemoryReport::new(node_infos(machine, &m));
    let acct = rondpoint_engine::run(&mut m, policy, &mut VirtualClock::default(), &cfg, |r| {
        let t_s = r.now_ns as f64 / 1e9;
        memory.record(t_s, r.observation);
        progress(t_s)
    })?;
    if !rondpoint_engine::Machine::finished(&m) {
        return Err(ExperimentError::TimeLimit {
            workload: scenario.name.clone(),
            policy: policy.name().to_string(),
            limit_s: TIME_LIMIT_S,
        });
    }
    let t = m.totals();
    let f = machine.cycles_per_ns();
    let resident: Vec<Vec<u64>> = rondpoint_engine::Machine::processes(&m)
        .into_iter()
        .map(|p| p.resident_bytes_by_node)
        .collect();
    let apps: Vec<AppResult> = m
        .app_completion_ns()
        .into_iter()
        .zip(resident)
        .map(|((name, done), bytes_by_node)| AppResult {
            name,
            completion_s: done.unwrap_or(f64::NAN) / 1e9,
            bytes_by_node,
        })
        .collect();
    let completion_s = apps.iter().map(|a| a.completion_s).fold(0.0, f64::max);
    let per_dir: Vec<f64> = t.link_bytes.clone();
    Ok(RunResult {
        machine: machine.name.clone(),
        workload: scenario.name.clone(),
        policy: policy.name().to_string(),
        seed: sim.seed,
        completion_s,
        speedup_vs_first_touch: None,
        avg_latency_cycles: if t.accesses > 0.0 {
            t.latency_ns_sum / t.accesses * f
        } else {
            0.0
        },
        lar: if t.accesses > 0.0 {
            t.local_accesses / t.accesses
        } else {
            1.0
        },
        mc_imbalance: imbalance_pct(&t.mc_accesses),
        ic_imbalance: imbalance_pct(&per_dir),
        ipc: if t.busy_ns > 0.0 {
            t.instructions / (t.busy_ns * f)
        } else {
            0.0
        },
        pages_migrated: acct.pages_done("migrate")
            + acct.pages_done("move-application")
            + acct.pages_done("move-node-pages"),
        pages_interleaved: acct.pages_done("interleave") + t.alloc_interleaved_pages,
        pages_replicated: acct.pages_done("replicate"),
        overhead_pct: if t.busy_ns > 0.0 {
            100.0 * t.overhead_ns / t.busy_ns
        } else {
            0.0
        },
        samples: acct.samples_seen,
        collapses: t.collapses,
        apps,
        memory,
        notes: acct.notes,
    })
}

/// Each node of `machine` with its size and the fallback order of `m`.
fn node_infos(machine: &MachineSpec, m: &SimMachine) -> Vec<NodeInfo> {
    machine
        .topology
        .nodes()
        .iter()
        .zip(&machine.mem_bytes)
        .zip(m.fallback_orders())
        .map(|((n, &total_bytes), fallback)| NodeInfo {
            node: n.id,
            total_bytes,
            fallback,
        })
        .collect()
}

/// Fills `speedup_vs_first_touch` for every run of the same machine, workload and seed as a
/// first-touch run.
pub fn fill_speedups(results: &mut [RunResult]) {
    let baselines: Vec<(String, String, u64, f64)> = results
        .iter()
        .filter(|r| r.policy == "first-touch")
        .map(|r| {
            (
                r.machine.clone(),
                r.workload.clone(),
                r.seed,
                r.completion_s,
            )
        })
        .collect();
    for r in results.iter_mut() {
        r.speedup_vs_first_touch = baselines
            .iter()
            .find(|(m, w, s, _)| *m == r.machine && *w == r.workload && *s == r.seed)
            .map(|(_, _, _, ft)| ft / r.completion_s);
    }
}
