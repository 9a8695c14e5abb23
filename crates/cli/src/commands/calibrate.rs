//! `rondpoint calibrate`: measure a machine's MAPI-to-gap curve with the microbenchmark of
//! [Gaud10 §3.1], for `oaas` (docs/calibrate.md).

use crate::format;
use anyhow::{Context, Result, bail};
use clap::Args;
use rondpoint_model::GapCurve;
use rondpoint_sim::calibrate::{CalibrationConfig, calibrate};
use rondpoint_sim::presets;
use rondpoint_sim::spec::MachineSpec;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Calibrate a simulated machine: a preset name or a preset file (.toml). Live calibration
    /// of the machine rondpoint runs on is not available yet.
    #[arg(long, short = 'm', value_name = "MACHINE")]
    machine: Option<String>,

    /// Write the curve to FILE, for `--set oaas.curve=FILE`.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Print the curve file's text (TOML) instead of a table.
    #[arg(long)]
    toml: bool,
}

pub fn run(args: &CalibrateArgs) -> Result<ExitCode> {
    let Some(machine) = &args.machine else {
        bail!(
            "live calibration is not available yet: give --machine PRESET to calibrate a \
             simulated machine (`rondpoint sim --list` lists them)"
        );
    };
    let spec = MachineSpec::from_preset(&presets::machine(machine)?)?;
    let curve = calibrate(&spec, &CalibrationConfig::default())?;
    let text = curve.to_toml()?;
    if let Some(path) = &args.output {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.toml {
        print!("{text}");
    } else {
        print!("{}", render(&curve));
        if let Some(path) = &args.output {
            println!("written to {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
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
