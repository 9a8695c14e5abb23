//! `rondpoint calibrate --machine PRESET`: the MAPI microbenchmark of [Gaud10 §3.1] run on a
//! simulated machine, and the MAPI-to-gap curve it gives.
//!
//! The paper's microbenchmark: CPU work (multiplications and modulos on registers) interleaved,
//! in increasing proportion, with reads of a 64 MB array filled with random addresses, each read
//! giving the address of the next; one private array per core, on the core's own node; the
//! reads per second of all the cores of a fast processor together, against those of a slow
//! one. Here each MAPI point is two runs of one application with a thread on every core of a
//! node (the first fast node, then the first slow one), each thread on its own 64 MiB block
//! first touched by itself: instructions are the CPU work and the reads, a share `mapi` of
//! them reads that all miss the cache (the array is ten times the LLC), one at a time (each
//! read needs the previous one's value: memory-level parallelism 1). The gap is how much
//! sooner the fast node's cores finish the same work.

use crate::experiment::{self, ExperimentError};
use crate::machine::SimConfig;
use crate::param::Param;
use crate::scenario::{
    AppSpec, FirstTouch, Pattern, RegionSpec, Scenario, ThreadCount, ThreadPlacement,
};
use crate::spec::MachineSpec;
use rondpoint_engine::EngineConfig;
use rondpoint_model::gap_curve::{CURVE_FORMAT, DEFAULT_MAPI_POINTS};
use rondpoint_model::{CurvePoint, GapCurve, NodeClass, NodeId, PageSize};
use rondpoint_policy_api::FirstTouch as FirstTouchPolicy;
use rondpoint_policy_api::{PolicyConfig, PolicyInfo};
use thiserror::Error;

/// Why a machine cannot be calibrated.
#[derive(Debug, Error)]
pub enum CalibrationError {
    #[error(
        "{machine} has no {class} CPU node: the microbenchmark compares a fast node's cores \
         with a slow node's [Gaud10 §3.1], and every CPU node of this machine is {other}"
    )]
    NoNode {
        machine: String,
        class: &'static str,
        other: &'static str,
    },
    #[error("calibration settings: {0}")]
    Settings(String),
    #[error(transparent)]
    Run(#[from] ExperimentError),
}

/// The microbenchmark's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationConfig {
    /// The MAPI values to measure at (main-memory reads per retired instruction).
    pub mapi: Vec<f64>,
    /// Cycles per instruction of the CPU work between reads (multiplications and modulos on
    /// registers, [Gaud10 §3.1]). Default 2: chosen; a dependent chain of register multiplies
    /// (3 cycles of latency on the Opteron's family 10h) and modulos by a constant (compiled to
    /// multiply, shift and subtract, 1 to 3 cycles each) retires about one instruction every two
    /// cycles. The paper gives no timing; this sets how fast the curve rises (with 2 it is
    /// within 2 points of its plateau from MAPI 0.1).
    pub cpu_cpi: f64,
    /// Cycles per instruction of a read besides its wait for memory. Default 1: chosen, one
    /// load retired per cycle.
    pub read_cpi: f64,
    /// Each core's private array (MiB). Default 64 [Gaud10 §3.1].
    pub array_mib: f64,
    /// How long each run lasts on the fast node (simulated seconds). Default 0.5: chosen, fifty
    /// of the simulator's 10 ms steps, a steady state.
    pub seconds: f64,
}

impl Default for CalibrationConfig {
    fn default() -> Self {
        Self {
            mapi: DEFAULT_MAPI_POINTS.to_vec(),
            cpu_cpi: 2.0,
            read_cpi: 1.0,
            array_mib: 64.0,
            seconds: 0.5,
        }
    }
}

/// The first CPU node of a class (dense index and id).
fn first_of(spec: &MachineSpec, class: NodeClass) -> Option<(usize, NodeId)> {
    let t = &spec.topology;
    t.nodes()
        .iter()
        .enumerate()
        .find(|(i, n)| t.classes()[*i] == class && n.has_cpu())
        .map(|(i, n)| (i, n.id))
}

/// Runs the microbenchmark on `spec`'s first fast node and first slow node at every MAPI of
/// `config`, and returns the curve.
pub fn calibrate(
    spec: &MachineSpec,
    config: &CalibrationConfig,
) -> Result<GapCurve, CalibrationError> {
    let positive = |v: f64| v.is_finite() && v > 0.0;
    let sizes = [
        config.cpu_cpi,
        config.read_cpi,
        config.array_mib,
        config.seconds,
    ];
    if !sizes.into_iter().all(positive) || config.mapi.iter().any(|m| !(0.0..=1.0).contains(m)) {
        return Err(CalibrationError::Settings(
            "cycles per instruction, array size and duration must be positive, MAPI in [0, 1]"
                .into(),
        ));
    }
    let none = |class, other| CalibrationError::NoNode {
        machine: spec.name.clone(),
        class,
        other,
    };
    let fast = first_of(spec, NodeClass::Fast).ok_or_else(|| none("fast", "slow"))?;
    let slow = first_of(spec, NodeClass::Slow).ok_or_else(|| none("slow", "fast"))?;
    let mut mapi = config.mapi.clone();
    mapi.sort_by(f64::total_cmp);
    mapi.dedup();
    let mut points = Vec::with_capacity(mapi.len());
    for &m in &mapi {
        let cycles_fast = spec.idle_ns[fast.0][fast.0] * spec.cycles_per_ns();
        let cpi = cpi_base(config, m) + m * cycles_fast;
        let instructions = config.seconds * spec.freq_ghz * 1e9 / cpi;
        let t_fast = run(spec, fast, m, instructions, config)?;
        let t_slow = run(spec, slow, m, instructions, config)?;
        let threads = spec.cores_on(fast.0) as f64;
        let reads = |t: f64| (m > 0.0).then(|| threads * instructions * m / t);
        points.push(CurvePoint {
            mapi: m,
            gap_pct: 100.0 * (t_slow / t_fast - 1.0),
            fast_reads_per_s: reads(t_fast),
            slow_reads_per_s: reads(t_slow),
        });
    }
    let ids = |class| {
        let t = &spec.topology;
        t.nodes()
            .iter()
            .zip(t.classes())
            .filter(|(n, c)| **c == class && n.has_cpu())
            .map(|(n, _)| n.id)
            .collect()
    };
    Ok(GapCurve {
        format: CURVE_FORMAT,
        machine: spec.name.clone(),
        measured_by: format!(
            "rondpoint calibrate --machine {} (the simulator; CPU work at {} cycles per \
             instruction)",
            spec.name, config.cpu_cpi
        ),
        nodes: spec.topology.len(),
        fast: ids(NodeClass::Fast),
        slow: ids(NodeClass::Slow),
        compared: Some((fast.1, slow.1)),
        points,
    })
}

/// Gives the policy of row `info` (OAAS's `curve`, for a policy whose parameters have one) the
/// MAPI-to-gap curve of `spec` measured now, as [Gaud10 §5.2] measures it "at system startup",
/// unless `config` names a curve already; a machine without both fast and slow CPU nodes is
/// left to the policy, which says it has nothing to do there. A built-in curve is chosen by the
/// machine's shape alone, which holds only for the machine it was measured on.
pub fn fill_curve(
    config: &mut PolicyConfig,
    info: &PolicyInfo,
    spec: &MachineSpec,
) -> Result<(), CalibrationError> {
    // The parameter that names a curve file: `curve`, or one in a sub-table (`auto`'s
    // `oaas.curve`).
    let Some(param) = info
        .files
        .iter()
        .find(|f| f.key == "curve" || f.key.ends_with(".curve"))
    else {
        return Ok(());
    };
    let keys: Vec<&str> = param.key.split('.').collect();
    if config.get_keys(info.name, &keys).is_some() {
        return Ok(());
    }
    let curve = match calibrate(spec, &CalibrationConfig::default()) {
        Ok(c) => c,
        Err(CalibrationError::NoNode { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    let text = curve
        .to_toml()
        .map_err(|e| CalibrationError::Settings(e.to_string()))?;
    let file = toml::Table::from_iter([
        (
            "path".to_string(),
            toml::Value::String(format!("calibrated on {} at start", spec.name)),
        ),
        ("text".to_string(), toml::Value::String(text)),
    ]);
    config
        .set_keys(info.name, &keys, toml::Value::Table(file))
        .map_err(|e| CalibrationError::Settings(e.to_string()))
}

/// Cycles per instruction of the microbenchmark without its memory waits, at `mapi`.
fn cpi_base(config: &CalibrationConfig, mapi: f64) -> f64 {
    (1.0 - mapi) * config.cpu_cpi + mapi * config.read_cpi
}

/// Simulated seconds until every core of `node` has done `instructions` at `mapi`.
fn run(
    spec: &MachineSpec,
    node: (usize, NodeId),
    mapi: f64,
    instructions: f64,
    config: &CalibrationConfig,
) -> Result<f64, CalibrationError> {
    let s = microbenchmark(node.1, spec.cores_on(node.0), mapi, instructions, config);
    let r = experiment::run(
        spec,
        &s,
        &mut FirstTouchPolicy,
        &SimConfig::default(),
        &EngineConfig::default(),
        |_| {},
    )?;
    Ok(r.completion_s)
}

/// The microbenchmark as a scenario: one thread per core of `node`, each on its own array.
pub fn microbenchmark(
    node: NodeId,
    threads: usize,
    mapi: f64,
    instructions: f64,
    config: &CalibrationConfig,
) -> Scenario {
    let why = "[Gaud10 §3.1] microbenchmark (crates/sim/src/calibrate.rs)";
    let p = |v: f64| Param::sourced(v, why);
    Scenario {
        name: format!("mapi-microbenchmark-{mapi}"),
        description: format!(
            "CPU work and dependent reads of a private {} MiB array per core, MAPI {mapi}, on \
             {node}",
            config.array_mib
        ),
        sources: vec![why.into()],
        apps: vec![AppSpec {
            name: "microbenchmark".into(),
            threads: ThreadCount::Count(threads as u32),
            placement: ThreadPlacement::Node(node.0),
            instructions: p(instructions),
            cpi_base: p(cpi_base(config, mapi)),
            mlp: p(1.0),
            mpki: p(1000.0 * mapi),
            mrc_ref_bytes: p(1048576.0),
            mrc_alpha: p(0.0),
            start_s: 0.0,
            regions: vec![RegionSpec {
                name: "arrays".into(),
                size_mib: p(config.array_mib * threads as f64),
                page_size: PageSize::Base4K,
                first_touch: FirstTouch::Partitioned,
                pattern: Pattern::Partitioned,
                share: p(1.0),
                write_ratio: p(0.0),
                zipf_s: None,
                halo: None,
            }],
            phases: Vec::new(),
            membind: None,
        }],
        restart: false,
    }
}
