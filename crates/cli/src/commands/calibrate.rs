//! `rondpoint calibrate`: measure a machine's MAPI-to-gap curve with the microbenchmark of
//! [Gaud10 §3.1], for `oaas` (docs/calibrate.md).

use crate::format;
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_linux::calibrate::{LiveCalibration, LiveCalibrationError, calibrate_live};
use rondpoint_model::GapCurve;
use rondpoint_sim::calibrate::{CalibrationConfig, calibrate};
use rondpoint_sim::presets;
use rondpoint_sim::spec::MachineSpec;
use std::path::PathBuf;
use std::process::ExitCode;

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
    #[arg(long)]
    toml: bool,
}

pub fn run(args: &CalibrateArgs) -> Result<ExitCode> {
    let curve = match &args.machine {
        Some(machine) => {
            let spec = MachineSpec::from_preset(&presets::machine(machine)?)?;
            calibrate(&spec, &CalibrationConfig::default())?
        }
        None => live(args)?,
    };
    let text = curve.to_toml()?;
    if let Some(path) = &args.output {
        let replace = crate::options::replace(args.force, rondpoint_safeio::OutputKind::GapCurve);
        rondpoint_safeio::write_replacing(path, text.as_bytes(), replace)
            .context("writing the curve")?;
    }
    if args.toml {
        out!("{text}");
    } else {
        out!("{}", render(&curve));
        if let Some(path) = &args.output {
            outln!("written to {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// This machine's curve, measured live.
fn live(args: &CalibrateArgs) -> Result<GapCurve> {
    let topology = crate::options::discover(&args.sysfs_root)?.topology;
    let kernel =
        rondpoint_safeio::read_system_text(std::path::Path::new("/proc/sys/kernel/osrelease"))
            .unwrap_or_default();
    let name = format!("this machine (Linux {})", kernel.trim());
    let config = LiveCalibration {
        array_mib: args.array_mib,
        duration: std::time::Duration::from_millis(args.ms),
        ..LiveCalibration::default()
    };
    calibrate_live(&topology, &name, &config).map_err(|e| match e {
        // No gap to measure on this machine: what was asked cannot be done here (status 2).
        LiveCalibrationError::NoNode { .. } => {
            anyhow::Error::new(crate::status::BadInput(e.into()))
        }
        LiveCalibrationError::Pin { .. } if args.sysfs_root != std::path::Path::new("/sys") => {
            anyhow::Error::new(e).context(format!(
                "the topology read from {} names CPUs this machine may not have: live \
                 calibration runs on the machine itself, so --sysfs-root only describes it",
                args.sysfs_root.display()
            ))
        }
        e => anyhow::Error::new(e),
    })
}

/// The curve as a table, with the nodes compared.
fn render(c: &GapCurve) -> String {
    let rate = |r: Option<f64>| format::dash(r.map(|r| format!("{:.1}", r / 1e6)));
    let rows = c
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
    let compared = c.compared.map_or_else(String::new, |(f, s)| {
        format!(
            ": the cores of fast node {} against those of slow node {}",
            f.0, s.0
        )
    });
    format!(
        "MAPI-to-gap curve of {}{compared}\n{}\n{}\n\nMAPI: main-memory reads per retired \
         instruction; reads in millions per second, all the node's cores together; gap: how \
         much faster\nthe fast node's cores read [Gaud10 §3.1, Figure 3].\n",
        c.machine,
        c.measured_by,
        format::table(
            &["MAPI", "fast M reads/s", "slow M reads/s", "gap"],
            &[true, true, true, true],
            rows
        )
    )
}
