//! `rondpoint calibrate`: measure a machine's MAPI-to-gap curve with the microbenchmark of
//! [Gaud10 §3.1], for `oaas` (docs/calibrate.md).

use crate::format;
use crate::status::BadInput;
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_linux::calibrate::{
    LiveCalibration, LiveCalibrationError, calibrate_live, measured_mapi,
};
use rondpoint_model::{CpuId, GapCurve, NodeClass, NodeId, Topology};
use rondpoint_sim::calibrate::{CalibrationConfig, CalibrationError, calibrate};
use rondpoint_sim::presets;
use rondpoint_sim::spec::MachineSpec;
use serde::Serialize;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The version of `calibrate --json`'s schema (docs/json/calibrate.md).
const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Calibrate a simulated machine: a preset name or a preset file (.toml). Without it,
    /// the machine rondpoint runs on is measured (it needs a fast and a slow node).
    #[arg(long, short = 'm', value_name = "MACHINE")]
    machine: Option<String>,

    /// Live: read the topology from DIR instead of /sys.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "/sys",
        conflicts_with = "machine"
    )]
    sysfs_root: PathBuf,

    /// Live: each CPU's private array (MiB, 1 to 1024: far past any last-level cache;
    /// [Gaud10 §3.1]: 64).
    #[arg(
        long,
        value_name = "MIB",
        default_value_t = 64,
        conflicts_with = "machine",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024)
    )]
    array_mib: usize,

    /// Live: how long each node runs at each point (milliseconds, 1 to 60,000).
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 500,
        conflicts_with = "machine",
        value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..=60_000)
    )]
    ms: u64,

    /// Write the curve to FILE, for `--set oaas.curve=FILE`.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Replace FILE even when it is not a curve rondpoint wrote.
    #[arg(long)]
    force: bool,

    /// Print the curve file's text (TOML) instead of a table.
    #[arg(long, conflicts_with = "json")]
    toml: bool,

    /// Print the result as JSON (docs/json/calibrate.md): the curve, the nodes compared and
    /// what was not measured.
    #[arg(long)]
    pub(crate) json: bool,
}

pub fn run(args: &CalibrateArgs) -> Result<ExitCode> {
    // An output that may not be replaced is refused before anything is measured.
    let staged = args
        .output
        .as_deref()
        .map(|path| {
            let replace =
                crate::options::replace(args.force, rondpoint_safeio::OutputKind::GapCurve);
            rondpoint_safeio::create_staged(path, replace).context("writing the curve")
        })
        .transpose()?;
    let (topology, curve, mapi) = match &args.machine {
        Some(machine) => {
            let spec = MachineSpec::from_preset(&presets::machine(machine)?)?;
            let config = CalibrationConfig::default();
            let curve = calibrate(&spec, &config).map_err(|e| match e {
                // No gap to measure on this machine: what was asked cannot be done (status 2).
                CalibrationError::NoNode { .. } => anyhow::Error::new(BadInput(e.into())),
                e => anyhow::Error::new(e),
            })?;
            (spec.topology, curve, Vec::new())
        }
        None => live(args)?,
    };
    let text = curve.to_toml()?;
    if let Some(mut staged) = staged {
        staged
            .write_all(text.as_bytes())
            .map_err(anyhow::Error::new)
            .and_then(|()| Ok(staged.commit()?))
            .context("writing the curve")?;
    }
    let report = Report::new(args, &topology, &curve, mapi);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else if args.toml {
        out!("{text}");
    } else {
        out!("{}", render(&report));
        if let Some(path) = &args.output {
            outln!("written to {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// This machine's topology and curve, measured live, and the MAPI points asked for that were
/// measured as another.
fn live(args: &CalibrateArgs) -> Result<(Topology, GapCurve, Vec<MapiNotMeasured>)> {
    let root = &args.sysfs_root;
    let topology = crate::options::discover(root)?.topology;
    let given = root != Path::new("/sys");
    // Another tree must describe this machine: compared with /sys where that can be read
    // (where it cannot, a pin that fails says why).
    let this_machine = given
        .then(|| rondpoint_linux::discover(Path::new("/sys")).ok())
        .flatten()
        .map(|d| d.topology);
    let kernel = rondpoint_safeio::read_system_text(Path::new("/proc/sys/kernel/osrelease"))
        .unwrap_or_default();
    let name = format!("this machine (Linux {})", kernel.trim());
    let config = LiveCalibration {
        array_mib: args.array_mib,
        duration: std::time::Duration::from_millis(args.ms),
        this_machine,
        ..LiveCalibration::default()
    };
    let curve = calibrate_live(&topology, &name, &config).map_err(|e| match e {
        // No gap to measure on this machine: what was asked cannot be done here (status 2).
        LiveCalibrationError::NoNode { .. } => anyhow::Error::new(BadInput(e.into())),
        LiveCalibrationError::NotThisMachine { .. } => anyhow::Error::new(BadInput::msg(format!(
            "--sysfs-root {}: {e}",
            root.display()
        ))),
        LiveCalibrationError::Pin { .. } if given => {
            anyhow::Error::new(BadInput(anyhow::Error::new(e).context(format!(
                "--sysfs-root {} names CPUs this machine does not run threads on: it is \
                 probably another machine's topology; a live calibration measures this \
                 machine's own memory from its own CPUs, so it needs this machine's topology \
                 (simulate another machine with --machine)",
                root.display()
            ))))
        }
        e => anyhow::Error::new(e),
    })?;
    Ok((topology, curve, merged(&config.mapi)))
}

/// The points asked for that the loop measures as another one asked for: each measured
/// MAPI counts once, for the point asked nearest to it.
fn merged(asked: &[f64]) -> Vec<MapiNotMeasured> {
    let mut out = Vec::new();
    for &mapi in asked {
        let at = measured_mapi(mapi);
        let nearer = asked
            .iter()
            .any(|&other| measured_mapi(other) == at && (other - at).abs() < (mapi - at).abs());
        if nearer {
            out.push(MapiNotMeasured {
                mapi,
                measured_as: at,
                why: "the loop's work between reads comes in whole rounds: this point has the \
                      same loop as a nearer one, measured once",
            });
        }
    }
    out
}

/// What `calibrate` found, as printed (text, or JSON: docs/json/calibrate.md).
#[derive(Debug, Serialize)]
struct Report {
    schema_version: u32,
    /// "simulated" (`--machine`) or "live".
    mode: &'static str,
    machine: String,
    measured_by: String,
    nodes: usize,
    fast: Vec<NodeId>,
    slow: Vec<NodeId>,
    compared: Option<Compared>,
    nodes_not_measured: Vec<NodeNotMeasured>,
    mapi_not_measured: Vec<MapiNotMeasured>,
    points: Vec<Point>,
    output: Option<PathBuf>,
}

/// The two nodes whose cores ran the microbenchmark.
#[derive(Debug, Serialize)]
struct Compared {
    fast: Side,
    slow: Side,
}

#[derive(Debug, Serialize)]
struct Side {
    node: NodeId,
    cpus: Vec<CpuId>,
}

#[derive(Debug, Serialize)]
struct NodeNotMeasured {
    node: NodeId,
    class: NodeClass,
    why: &'static str,
}

/// A MAPI point asked for and measured as another.
#[derive(Debug, Serialize)]
struct MapiNotMeasured {
    mapi: f64,
    measured_as: f64,
    why: &'static str,
}

#[derive(Debug, Serialize)]
struct Point {
    mapi: f64,
    gap_pct: f64,
    fast_reads_per_s: Option<f64>,
    slow_reads_per_s: Option<f64>,
}

impl Report {
    fn new(
        args: &CalibrateArgs,
        topology: &Topology,
        c: &GapCurve,
        mapi_not_measured: Vec<MapiNotMeasured>,
    ) -> Self {
        let side = |node: NodeId| Side {
            node,
            cpus: topology
                .node(node)
                .map(|n| n.cpus.clone())
                .unwrap_or_default(),
        };
        let compared = c.compared.map(|(f, s)| Compared {
            fast: side(f),
            slow: side(s),
        });
        let used = c.compared.map(|(f, s)| [f, s]).unwrap_or_default();
        let nodes_not_measured = topology
            .nodes()
            .iter()
            .zip(topology.classes())
            .filter(|(n, _)| !used.contains(&n.id))
            .map(|(n, &class)| NodeNotMeasured {
                node: n.id,
                class,
                why: if n.has_cpu() {
                    "a class is measured on its first node: one fast node's cores against one \
                     slow node's [Gaud10 §3.1]"
                } else {
                    "no CPUs to run the microbenchmark on"
                },
            })
            .collect();
        Self {
            schema_version: SCHEMA_VERSION,
            mode: if args.machine.is_some() {
                "simulated"
            } else {
                "live"
            },
            machine: c.machine.clone(),
            measured_by: c.measured_by.clone(),
            nodes: c.nodes,
            fast: c.fast.clone(),
            slow: c.slow.clone(),
            compared,
            nodes_not_measured,
            mapi_not_measured,
            points: c
                .points
                .iter()
                .map(|p| Point {
                    mapi: p.mapi,
                    gap_pct: p.gap_pct,
                    fast_reads_per_s: p.fast_reads_per_s,
                    slow_reads_per_s: p.slow_reads_per_s,
                })
                .collect(),
            output: args.output.clone(),
        }
    }
}

/// The curve as a table, with the nodes compared and those not measured.
fn render(r: &Report) -> String {
    let rate = |v: Option<f64>| format::dash(v.map(|v| format!("{:.1}", v / 1e6)));
    let rows = r
        .points
        .iter()
        .map(|p| {
            vec![
                format!("{:.4}", p.mapi),
                rate(p.fast_reads_per_s),
                rate(p.slow_reads_per_s),
                format!("{:.1}%", p.gap_pct),
            ]
        })
        .collect();
    let compared = r.compared.as_ref().map_or_else(String::new, |c| {
        format!(
            ": the cores of fast node {} against those of slow node {}",
            c.fast.node.0, c.slow.node.0
        )
    });
    // One line per reason, naming what it left out.
    let mut skipped: Vec<(&str, Vec<String>)> = Vec::new();
    let mut add = |why: &'static str, what: String| match skipped.iter_mut().find(|s| s.0 == why) {
        Some((_, list)) => list.push(what),
        None => skipped.push((why, vec![what])),
    };
    for n in &r.nodes_not_measured {
        add(n.why, format!("{} node {}", n.class, n.node.0));
    }
    for m in &r.mapi_not_measured {
        add(m.why, format!("MAPI {} (as {:.4})", m.mapi, m.measured_as));
    }
    let skipped: String = skipped
        .iter()
        .map(|(why, what)| format!("not measured: {}: {why}\n", what.join(", ")))
        .collect();
    format!(
        "MAPI-to-gap curve of {}{compared}\n{}\n{}\n{skipped}\nMAPI: main-memory reads per \
         retired instruction; reads in millions per second, all the node's cores together; gap: \
         how much faster\nthe fast node's cores read [Gaud10 §3.1, Figure 3].\n",
        r.machine,
        r.measured_by,
        format::table(
            &["MAPI", "fast M reads/s", "slow M reads/s", "gap"],
            &[true, true, true, true],
            rows
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_the_live_loop_measures_as_one_are_named_but_the_nearest() {
        let asked = LiveCalibration::default().mapi;
        let merged = merged(&asked);
        let names: Vec<f64> = merged.iter().map(|m| m.mapi).collect();
        // 0.35, 0.5 and 1 all mean no work between reads: measured once, as MAPI 1.
        assert_eq!(names, vec![0.35, 0.5]);
        assert!(merged.iter().all(|m| m.measured_as == 1.0));
    }
}
