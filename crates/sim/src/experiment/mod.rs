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

pub mod matrix;
pub mod multiprogram;
mod result;
pub mod summary;

pub use result::{
    AppResult, AppSlowdown, ExperimentError, LinkLoad, Multiprogram, NodeLoad, RunResult, SoloNode,
    TIME_LIMIT_S, imbalance_pct,
};

use crate::machine::{Pace, SimConfig, SimMachine};
use crate::memory::{MemoryReport, NodeInfo};
use crate::scenario::Scenario;
use crate::spec::MachineSpec;
use multiprogram::Solo;
use rondpoint_engine::{EngineConfig, EngineError, VirtualClock};
use rondpoint_model::{NodeId, Pid, ProcessInfo};
use rondpoint_policy_api::{Policy, PolicyError};

/// Before the machine is built (a scenario with more threads than cores cannot be): the
/// policy's refusal of these applications (N-MASS: more processes than cores), given one entry
/// per application; the engine asks again with the machine's own list.
fn refuse_early(
    machine: &MachineSpec,
    scenario: &Scenario,
    policy: &mut dyn Policy,
) -> Result<(), ExperimentError> {
    let planned: Vec<ProcessInfo> = scenario
        .apps
        .iter()
        .enumerate()
        .map(|(i, a)| ProcessInfo {
            pid: Pid(i32::try_from(i + 1).unwrap_or(i32::MAX)),
            comm: a.name.clone(),
            threads: Vec::new(),
            resident_bytes_by_node: Vec::new(),
            mapping_policies: Vec::new(),
        })
        .collect();
    policy
        .accepts(&machine.topology, &planned)
        .map_err(|why| EngineError::Refused {
            policy: policy.name().to_string(),
            why: why.to_string(),
        })?;
    Ok(())
}

/// The pace a run of `scenario` on `machine` should keep, measured on its first steps with no
/// policy (see [`SimMachine::probe`]), within a fraction of a second.
pub fn pace(
    machine: &MachineSpec,
    scenario: &Scenario,
    sim: &SimConfig,
) -> Result<Pace, ExperimentError> {
    Ok(SimMachine::new(machine.clone(), scenario, sim.clone())?.probe(TIME_LIMIT_S))
}

/// Runs `policy` on `scenario` on `machine` and computes the metrics.
/// `progress` is called after each epoch with the simulated time (seconds).
pub fn run(
    machine: &MachineSpec,
    scenario: &Scenario,
    policy: &mut dyn Policy,
    sim: &SimConfig,
    engine: &EngineConfig,
    progress: impl FnMut(f64),
) -> Result<RunResult, ExperimentError> {
    refuse_early(machine, scenario, policy)?;
    let m = SimMachine::new(machine.clone(), scenario, sim.clone())?;
    run_on(m, machine, scenario, policy, sim, engine, progress)
}

/// Runs `policy` on `m`, a machine built for `scenario` (see [`run`]).
pub(crate) fn run_on(
    mut m: SimMachine,
    machine: &MachineSpec,
    scenario: &Scenario,
    policy: &mut dyn Policy,
    sim: &SimConfig,
    engine: &EngineConfig,
    mut progress: impl FnMut(f64),
) -> Result<RunResult, ExperimentError> {
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
    let processes = rondpoint_engine::Machine::processes(&m);
    let ids: Vec<_> = machine.topology.nodes().iter().map(|n| n.id).collect();
    // Over the controllers that served the run or could have (a node running its threads or
    // holding its memory at the end), as policies measure it.
    let carrying = rondpoint_model::metrics::carrying(&ids, &t.mc_accesses, &processes);
    let resident: Vec<Vec<u64>> = processes
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
    let running: Vec<bool> = t.accesses_by_source.iter().map(|&a| a > 0.0).collect();
    let on_routes = rondpoint_model::metrics::links_in_use(&machine.topology, &running, &carrying);
    let (mc_load, link_load) = loads(machine, t, completion_s, &carrying, &on_routes);
    Ok(RunResult {
        machine: machine.name.clone(),
        workload: scenario.name.clone(),
        policy: policy.name().to_string(),
        seed: sim.seed,
        completion_s,
        speedup_vs_first_touch: None,
        to_bound: None,
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
        mc_imbalance: rondpoint_model::metrics::imbalance_over(&t.mc_accesses, &carrying),
        ic_imbalance: rondpoint_model::metrics::imbalance_over(&t.link_bytes, &on_routes),
        mc_load,
        link_load,
        ipc: if t.busy_ns > 0.0 {
            t.instructions / (t.busy_ns * f)
        } else {
            0.0
        },
        pages_migrated: acct.pages_moved("migrate")
            + acct.pages_moved("move-application")
            + acct.pages_moved("move-node-pages"),
        pages_interleaved: acct.pages_moved("interleave") + t.alloc_interleaved_pages,
        pages_replicated: acct.pages_moved("replicate"),
        actions_skipped: acct.actions_skipped(),
        overhead_pct: if t.busy_ns > 0.0 {
            100.0 * t.overhead_ns / t.busy_ns
        } else {
            0.0
        },
        samples: acct.samples_seen,
        collapses: t.collapses,
        apps,
        memory,
        multiprogram: None,
        notes: [acct.notes.clone(), acct.failure_notes()].concat(),
        reasons: acct.reasons,
    })
}

/// Each controller's and each link direction's load over a run of `completion_s` simulated
/// seconds, marked as counted in the imbalances (`carrying` controllers, links `on_routes`).
fn loads(
    machine: &MachineSpec,
    t: &crate::machine::Totals,
    completion_s: f64,
    carrying: &[bool],
    on_routes: &[bool],
) -> (Vec<NodeLoad>, Vec<LinkLoad>) {
    let ns = (completion_s * 1e9).max(1.0);
    let ids: Vec<NodeId> = machine.topology.nodes().iter().map(|n| n.id).collect();
    let id = |i: usize| ids.get(i).copied().unwrap_or(NodeId(0));
    let per = |bytes: f64, bw: f64| (bytes / ns, if bw > 0.0 { bytes / ns / bw } else { 0.0 });
    let mc = (0..machine.nodes())
        .map(|i| {
            let (gbps, utilisation) = per(t.mc_bytes[i], machine.mc_bw[i]);
            NodeLoad {
                node: id(i),
                gbps,
                utilisation,
                counted: carrying.get(i).copied().unwrap_or(false),
            }
        })
        .collect();
    let links = (0..machine.directed_links())
        .map(|d| {
            let (a, b) = machine.links[d / 2];
            let (from, to) = if d % 2 == 0 { (a, b) } else { (b, a) };
            let (gbps, utilisation) = per(t.link_bytes[d], machine.link_bw[d / 2]);
            LinkLoad {
                from: id(from),
                to: id(to),
                gbps,
                utilisation,
                counted: on_routes.get(d).copied().unwrap_or(false),
            }
        })
        .collect();
    (mc, links)
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

/// Runs a policy as `rondpoint sim` does: once, or, for a policy that stands for several
/// placements ([`Policy::variants`]: the `default` baseline of [Majo11 §4.3]), once per
/// placement with every number averaged over them; with `solo`, each program's slowdown
/// (with its range over the placements). `build` makes the policy afresh for each run.
pub fn run_policy(
    machine: &MachineSpec,
    scenario: &Scenario,
    build: &dyn Fn() -> Result<Box<dyn Policy>, PolicyError>,
    sim: &SimConfig,
    engine: &EngineConfig,
    solo: Option<&Solo>,
    mut progress: impl FnMut(usize, usize, f64),
) -> Result<RunResult, ExperimentError> {
    let placements = build()?
        .variants(&machine.topology, scenario.apps.len())
        .max(1);
    let mut runs = Vec::with_capacity(placements);
    for k in 0..placements {
        let mut policy = build()?;
        if placements > 1 {
            policy.select_variant(k);
        }
        let mut r = run(machine, scenario, policy.as_mut(), sim, engine, |t| {
            progress(k, placements, t)
        })?;
        r.multiprogram = solo.map(|s| multiprogram::slowdowns(&r, scenario, s));
        runs.push(r);
    }
    match runs.len() {
        1 => Ok(runs.swap_remove(0)),
        _ => Ok(mean_of(&runs)),
    }
}

/// One result for several runs of one policy (at least one): every number averaged (counts
/// rounded), the slowdowns with their range.
fn mean_of(runs: &[RunResult]) -> RunResult {
    let n = runs.len() as f64;
    let avg = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(f).sum::<f64>() / n;
    let count = |f: &dyn Fn(&RunResult) -> u64| (avg(&|r| f(r) as f64)).round() as u64;
    let parts: Vec<Multiprogram> = runs.iter().filter_map(|r| r.multiprogram.clone()).collect();
    let first = &runs[0];
    RunResult {
        machine: first.machine.clone(),
        workload: first.workload.clone(),
        policy: first.policy.clone(),
        seed: first.seed,
        completion_s: avg(&|r| r.completion_s),
        speedup_vs_first_touch: None,
        to_bound: None,
        avg_latency_cycles: avg(&|r| r.avg_latency_cycles),
        lar: avg(&|r| r.lar),
        mc_imbalance: avg(&|r| r.mc_imbalance),
        ic_imbalance: avg(&|r| r.ic_imbalance),
        // Loads, like memory over time, are the first placement's.
        mc_load: first.mc_load.clone(),
        link_load: first.link_load.clone(),
        ipc: avg(&|r| r.ipc),
        pages_migrated: count(&|r| r.pages_migrated),
        pages_interleaved: count(&|r| r.pages_interleaved),
        pages_replicated: count(&|r| r.pages_replicated),
        actions_skipped: count(&|r| r.actions_skipped),
        overhead_pct: avg(&|r| r.overhead_pct),
        samples: count(&|r| r.samples),
        collapses: count(&|r| r.collapses),
        apps: first
            .apps
            .iter()
            .enumerate()
            .map(|(i, a)| AppResult {
                name: a.name.clone(),
                completion_s: avg(&|r| r.apps.get(i).map_or(f64::NAN, |x| x.completion_s)),
                bytes_by_node: a.bytes_by_node.clone(),
            })
            .collect(),
        // Memory over time is the first placement's: an average of timelines means little.
        memory: first.memory.clone(),
        multiprogram: multiprogram::average(&parts),
        notes: first.notes.clone(),
        reasons: first.reasons.clone(),
    }
}

/// Fills `speedup_vs_first_touch` and `to_bound` for every run of the same machine, workload
/// and seed as a first-touch run and a bound run.
pub fn fill_speedups(results: &mut [RunResult]) {
    let times_of = |policy: &str| -> Vec<(String, String, u64, f64)> {
        results
            .iter()
            .filter(|r| r.policy == policy)
            .map(|r| {
                (
                    r.machine.clone(),
                    r.workload.clone(),
                    r.seed,
                    r.completion_s,
                )
            })
            .collect()
    };
    let first_touch = times_of("first-touch");
    let bound = times_of(crate::bound::NAME);
    for r in results.iter_mut() {
        let of = |times: &[(String, String, u64, f64)]| {
            times
                .iter()
                .find(|(m, w, s, _)| *m == r.machine && *w == r.workload && *s == r.seed)
                .map(|(_, _, _, t)| t / r.completion_s)
        };
        r.speedup_vs_first_touch = of(&first_touch);
        r.to_bound = of(&bound);
    }
}
