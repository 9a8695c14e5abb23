//! The microbenchmark of [Gaud10 §3.1], run on the machine rondpoint runs on: at increasing
//! rates of memory reads per instruction, every CPU of a fast node and every CPU of a slow node
//! each do CPU work (multiplications and modulos on registers) interleaved with dependent
//! reads of a private array (64 MiB: far beyond any cache; filled with a random cycle of cache
//! lines, each read giving the next address), allocated by first touch from that CPU so that it
//! is on the CPU's node. The aggregate reads per second of the fast node's CPUs against the slow
//! node's give the throughput gap at each MAPI: the machine's MAPI-to-gap curve, which `oaas`
//! reads.
//!
//! MAPI is the loop's reads over its instructions. The instructions are not counted (most
//! machines rondpoint runs on have no PMU): each read comes with `work` rounds of register
//! arithmetic, and MAPI is taken as 1 / (1 + `INSTRUCTIONS_PER_ROUND` x `work`), an estimate
//! from the loop's shape, which the curve file says.

use crate::sys::{RealSys, Sys};
use rondpoint_model::gap_curve::{CURVE_FORMAT, CurveMachine, CurvePoint, GapCurve};
use rondpoint_model::{CpuId, NodeClass, NodeId, Tid, Topology};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Instructions of one round of CPU work (a multiply, a modulo by a constant compiled to a
/// multiply, shift and subtract, an add and the loop's count and branch): chosen from the
/// loop's shape, not counted.
const INSTRUCTIONS_PER_ROUND: f64 = 6.0;

/// A cache line.
const LINE: usize = 64;

/// Why a live calibration could not be made.
#[derive(Debug, Error)]
pub enum LiveCalibrationError {
    #[error(
        "this machine has no {class} CPU node to compare with a {other} one: its nodes are all of one class, so there is no gap to measure ({shape})"
    )]
    NoNode {
        class: &'static str,
        other: &'static str,
        shape: String,
    },
    #[error(
        "the topology given is not this machine's: it has {given}, this machine {here}; a live \
         calibration pins threads to the CPUs of a fast and a slow node and measures the memory \
         of those very nodes, so it needs this machine's own topology (simulate another machine \
         instead)"
    )]
    NotThisMachine { given: String, here: String },
    #[error("pinning a calibration thread to CPU {cpu}: {why}")]
    Pin { cpu: u32, why: String },
    #[error("a calibration thread failed")]
    Thread,
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct LiveCalibration {
    /// MAPI points (reads per instruction), each in (0, 1].
    pub mapi: Vec<f64>,
    /// Each CPU's private array (MiB). 64 [Gaud10 §3.1].
    pub array_mib: usize,
    /// How long each node runs at each point.
    pub duration: Duration,
    /// This machine's topology, when the one to calibrate was read from elsewhere (a copy of
    /// sysfs): a topology that differs from it (nodes, their CPUs, distances) is refused
    /// before anything runs. `None`: the topology to calibrate is this machine's.
    pub this_machine: Option<Topology>,
}

impl Default for LiveCalibration {
    fn default() -> Self {
        Self {
            mapi: vec![0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 1.0],
            array_mib: 64,
            duration: Duration::from_millis(500),
            this_machine: None,
        }
    }
}

/// Rounds of CPU work per read for a MAPI.
fn work_for(mapi: f64) -> u64 {
    (((1.0 / mapi) - 1.0) / INSTRUCTIONS_PER_ROUND)
        .round()
        .max(0.0) as u64
}

/// The MAPI that many rounds of work per read give (the estimate of the module docs).
fn mapi_of(work: u64) -> f64 {
    1.0 / (1.0 + INSTRUCTIONS_PER_ROUND * work as f64)
}

/// The MAPI a point asked for is measured at: the nearest a whole number of rounds of work
/// per read gives (MAPI 0.35, 0.5 and 1 all mean no work between reads, and are one point).
pub fn measured_mapi(asked: f64) -> f64 {
    mapi_of(work_for(asked))
}

/// Why `given` is not `here`, in words, when their nodes, CPUs or distances differ.
fn other_machine(given: &Topology, here: &Topology) -> Option<LiveCalibrationError> {
    let layout = |t: &Topology| -> Vec<(NodeId, Vec<CpuId>)> {
        t.nodes().iter().map(|n| (n.id, n.cpus.clone())).collect()
    };
    if layout(given) == layout(here) && given.distances() == here.distances() {
        return None;
    }
    let describe = |t: &Topology| {
        let nodes: Vec<String> = t
            .nodes()
            .iter()
            .map(|n| format!("node {}: CPUs {}", n.id.0, Topology::cpulist(n)))
            .collect();
        let count = match t.len() {
            1 => "1 node".to_string(),
            n => format!("{n} nodes"),
        };
        format!("{count} ({})", nodes.join("; "))
    };
    let (mut given_text, here_text) = (describe(given), describe(here));
    if given_text == here_text {
        given_text.push_str(" at other distances");
    }
    Some(LiveCalibrationError::NotThisMachine {
        given: given_text,
        here: here_text,
    })
}

/// Measures this machine's curve; `machine` names it in the file.
pub fn calibrate_live(
    topology: &Topology,
    machine: &str,
    config: &LiveCalibration,
) -> Result<GapCurve, LiveCalibrationError> {
    let shape = CurveMachine::of(topology);
    let first = |class| {
        topology
            .nodes()
            .iter()
            .zip(topology.classes())
            .find(|(n, c)| **c == class && n.has_cpu())
            .map(|(n, _)| (n.id, n.cpus.clone()))
    };
    let none = |class, other| LiveCalibrationError::NoNode {
        class,
        other,
        shape: shape.describe(),
    };
    let (fast, fast_cpus) = first(NodeClass::Fast).ok_or_else(|| none("fast", "slow"))?;
    let (slow, slow_cpus) = first(NodeClass::Slow).ok_or_else(|| none("slow", "fast"))?;
    if let Some(e) = config
        .this_machine
        .as_ref()
        .and_then(|here| other_machine(topology, here))
    {
        return Err(e);
    }
    let mut works: Vec<u64> = config.mapi.iter().map(|&m| work_for(m)).collect();
    works.sort_unstable_by(|a, b| b.cmp(a));
    works.dedup();
    let mut points = Vec::with_capacity(works.len());
    for work in works {
        let f = node_reads_per_s(&fast_cpus, work, config)?;
        let s = node_reads_per_s(&slow_cpus, work, config)?;
        points.push(CurvePoint {
            mapi: mapi_of(work),
            gap_pct: if s > 0.0 { 100.0 * (f / s - 1.0) } else { 0.0 },
            fast_reads_per_s: Some(f),
            slow_reads_per_s: Some(s),
        });
    }
    Ok(GapCurve {
        format: CURVE_FORMAT,
        machine: machine.to_string(),
        measured_by: format!(
            "rondpoint calibrate on {machine}: the [Gaud10 §3.1] microbenchmark live, {} MiB \
             per CPU, {} ms per node and point; MAPI estimated from the loop's shape ({} \
             instructions per round of work), not counted",
            config.array_mib,
            config.duration.as_millis(),
            INSTRUCTIONS_PER_ROUND
        ),
        nodes: shape.nodes,
        fast: shape.fast,
        slow: shape.slow,
        compared: Some((fast, slow)),
        points,
    })
}

/// Reads per second of all of `cpus` together, each running the loop on its own array.
fn node_reads_per_s(
    cpus: &[CpuId],
    work: u64,
    config: &LiveCalibration,
) -> Result<f64, LiveCalibrationError> {
    let lines = config.array_mib.saturating_mul(1 << 20) / LINE;
    let results: Vec<Result<f64, LiveCalibrationError>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| s.spawn(move || one_cpu(cpu, lines, work, config.duration)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(LiveCalibrationError::Thread)))
            .collect()
    });
    results.into_iter().sum()
}

/// One CPU's reads per second: pinned, its array touched from it, then the loop.
fn one_cpu(
    cpu: CpuId,
    lines: usize,
    work: u64,
    duration: Duration,
) -> Result<f64, LiveCalibrationError> {
    RealSys::new()
        .sched_setaffinity(Tid(0), &[cpu])
        .map_err(|e| LiveCalibrationError::Pin {
            cpu: cpu.0,
            why: e.to_string(),
        })?;
    let next = random_cycle(lines, u64::from(cpu.0) + 1);
    let started = Instant::now();
    let (mut at, mut reads, mut acc) = (0usize, 0u64, 1u64);
    while started.elapsed() < duration {
        // A batch between clock reads, so that reading the clock stays a small share.
        for _ in 0..256 {
            for _ in 0..work {
                acc = (acc.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(3)) % 1_000_003;
            }
            at = next[at * 8] as usize;
            reads += 1;
        }
    }
    std::hint::black_box((acc, at));
    Ok(reads as f64 / started.elapsed().as_secs_f64())
}

/// An array of `lines` cache lines (8 u64 each) whose first word holds the index of the next
/// line of one random cycle through all of them (Sattolo's shuffle), so that every read
/// depends on the previous one and no prefetcher can guess it.
fn random_cycle(lines: usize, seed: u64) -> Vec<u64> {
    let mut order: Vec<u64> = (0..lines as u64).collect();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..lines).rev() {
        // xorshift64: enough randomness for a permutation nobody needs to be unpredictable.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0u64; lines * 8];
    for k in 0..lines {
        let from = order[k] as usize;
        next[from * 8] = order[(k + 1) % lines];
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::synthetic::TopologyBuilder;

    #[test]
    fn work_and_mapi_round_trip() {
        assert_eq!(work_for(1.0), 0);
        assert_eq!(mapi_of(0), 1.0);
        for m in [0.01, 0.05, 0.2] {
            let back = mapi_of(work_for(m));
            assert!((back - m).abs() / m < 0.3, "{m} -> {back}");
        }
    }

    #[test]
    fn the_cycle_visits_every_line_once() {
        let next = random_cycle(1000, 7);
        let mut at = 0usize;
        let mut seen = vec![false; 1000];
        for _ in 0..1000 {
            assert!(!seen[at]);
            seen[at] = true;
            at = next[at * 8] as usize;
        }
        assert_eq!(at, 0);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn a_symmetric_machine_has_no_gap_to_measure() {
        let t = TopologyBuilder::new(2).build().unwrap();
        let err = calibrate_live(&t, "here", &LiveCalibration::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no slow CPU node"), "{err}");
    }

    #[test]
    fn another_machine_s_topology_is_refused_before_anything_runs() {
        let asymmetric = |n| {
            let mut d = vec![vec![16; n]; n];
            for (i, row) in d.iter_mut().enumerate() {
                row[i] = 10;
            }
            d[0][n - 1] = 22;
            d[n - 1][0] = 22;
            TopologyBuilder::new(n).distances(d).build().unwrap()
        };
        let config = LiveCalibration {
            this_machine: Some(TopologyBuilder::new(1).build().unwrap()),
            ..LiveCalibration::default()
        };
        let err = calibrate_live(&asymmetric(4), "here", &config)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "the topology given is not this machine's: it has 4 nodes (node 0: CPUs"
            ),
            "{err}"
        );
        assert!(err.contains("this machine 1 node (node 0: CPUs "), "{err}");
        // The same nodes and CPUs at other distances are another machine too.
        let config = LiveCalibration {
            this_machine: Some(TopologyBuilder::new(4).build().unwrap()),
            ..config
        };
        let err = calibrate_live(&asymmetric(4), "here", &config)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(") at other distances, this machine 4 nodes"),
            "{err}"
        );
        // Only the nearest whole number of rounds of work is measured.
        assert_eq!(measured_mapi(0.35), 1.0);
        assert_eq!(measured_mapi(1.0), 1.0);
    }
}
