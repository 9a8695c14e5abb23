//! `rondpoint daemon`: manage running processes until stopped.

use crate::commands::run::{RunReport, render};
use crate::commands::sim::policy_config;
use crate::signals::{self, Signalled};
use anyhow::{Context, Result, bail};
use clap::Args;
use rondpoint_engine::{DryRun, EngineConfig, EpochReport, RateLimits, WallClock};
use rondpoint_linux::machine::{LinuxMachine, LiveConfig, Selection};
use rondpoint_linux::sys::RealSys;
use rondpoint_model::{OutcomeStatus, Pid};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// Manage this process and its descendants (repeatable).
    #[arg(long = "pid", value_name = "PID")]
    pids: Vec<i32>,
    /// Manage processes whose command name matches (exact, or a glob with * and ?; repeatable).
    /// Checked every epoch, so programs started later are picked up.
    #[arg(long = "comm", value_name = "PATTERN")]
    comm: Vec<String>,
    /// Manage the processes of a cgroup v2 directory, e.g. /sys/fs/cgroup/myjob (repeatable).
    #[arg(long = "cgroup", value_name = "DIR")]
    cgroups: Vec<PathBuf>,
    /// The placement policy.
    #[arg(long, short = 'p', default_value = "carrefour")]
    policy: String,
    /// Policy parameters (TOML, docs/policies.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Carrefour's mechanisms to enable (replication, interleaving, co-location).
    #[arg(long, value_name = "T[,T...]", value_delimiter = ',')]
    techniques: Vec<String>,
    /// Observe and decide, but change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Epoch length (milliseconds).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    epoch_ms: u64,
    /// Most pages the policy may move per epoch.
    #[arg(long, value_name = "PAGES", default_value_t = 65_536)]
    max_pages_per_epoch: u64,
    /// Most megabytes the policy may move per epoch.
    #[arg(long, value_name = "MB", default_value_t = 512)]
    max_mb_per_epoch: u64,
    /// Write the daemon's state here every epoch (JSON, replaced atomically; docs/json/daemon.md),
    /// for a live view to read.
    #[arg(long, value_name = "FILE")]
    state_file: Option<PathBuf>,
    /// Print the final report as JSON.
    #[arg(long)]
    json: bool,
    /// Read the topology from DIR instead of /sys.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    sysfs_root: PathBuf,
}

/// What the state file holds.
#[derive(Debug, Default, Serialize)]
struct State {
    schema_version: u32,
    policy: String,
    dry_run: bool,
    uptime_s: f64,
    epoch: u64,
    managed: Vec<i32>,
    samples_last_epoch: usize,
    /// Per technique: actions, pages placed.
    totals: BTreeMap<String, (u64, u64)>,
    failed_actions: u64,
}

fn write_state(path: &Path, state: &State) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(state)?)?;
    std::fs::rename(tmp, path)
}

pub fn run(args: &DaemonArgs) -> Result<ExitCode> {
    if args.pids.is_empty() && args.comm.is_empty() && args.cgroups.is_empty() {
        bail!("say which processes to manage: --pid, --comm or --cgroup");
    }
    if args.epoch_ms == 0 {
        bail!("--epoch-ms must be at least 1");
    }
    for dir in &args.cgroups {
        if !dir.join("cgroup.procs").is_file() {
            bail!(
                "{} is not a cgroup v2 directory (no cgroup.procs)",
                dir.display()
            );
        }
    }
    let config = policy_config(args.config.as_deref(), &args.techniques)?;
    let mut policy = rondpoint_policy::build(&args.policy, &config)?;
    let topology = rondpoint_linux::discover(&args.sysfs_root)
        .context("reading the NUMA topology")?
        .topology;
    if !topology.is_numa() {
        eprintln!("rondpoint: this machine has a single NUMA node: there is nothing to manage");
        return Ok(ExitCode::SUCCESS);
    }
    let stop = signals::install()?;
    let selection = Selection {
        pids: args.pids.iter().map(|&p| Pid(p)).collect(),
        comm: args.comm.clone(),
        cgroups: args.cgroups.clone(),
    };
    let live = LiveConfig {
        sysfs_root: args.sysfs_root.clone(),
        ..LiveConfig::default()
    };
    let machine = LinuxMachine::to_select(RealSys::new(), topology, live, selection);
    if machine.managed().is_empty() && args.comm.is_empty() && args.cgroups.is_empty() {
        bail!(
            "no process to manage: {} not running",
            args.pids
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let engine = EngineConfig {
        epoch_ns: args.epoch_ms * 1_000_000,
        time_limit_ns: None,
        limits: RateLimits {
            max_pages_per_epoch: Some(args.max_pages_per_epoch),
            max_bytes_per_epoch: Some(args.max_mb_per_epoch.saturating_mul(1 << 20)),
        },
    };
    let started = Instant::now();
    let mut state = State {
        schema_version: 1,
        policy: args.policy.clone(),
        dry_run: args.dry_run,
        ..State::default()
    };
    let mut write_error: Option<String> = None;
    let state_file = args.state_file.clone();
    let mut on_epoch = |r: &EpochReport<'_>| {
        state.uptime_s = started.elapsed().as_secs_f64();
        state.epoch = r.epoch;
        state.managed = r.observation.processes.iter().map(|p| p.pid.0).collect();
        state.samples_last_epoch = r.observation.samples.len();
        for (a, o) in r.actions.iter().zip(r.outcomes) {
            let e = state.totals.entry(a.technique().to_string()).or_default();
            e.0 += 1;
            e.1 += o.pages_done;
            if o.status == OutcomeStatus::Failed {
                state.failed_actions += 1;
            }
        }
        if let Some(path) = &state_file {
            if let Err(e) = write_state(path, &state) {
                write_error.get_or_insert(format!("cannot write {}: {e}", path.display()));
            }
        }
    };
    let mut clock = WallClock::new();
    let (acct, mut machine) = if args.dry_run {
        let mut m = Signalled::new(DryRun::new(machine), stop, |_: &mut _| {}, true);
        let acct =
            rondpoint_engine::run(&mut m, policy.as_mut(), &mut clock, &engine, &mut on_epoch)?;
        (acct, m.inner.into_inner())
    } else {
        let mut m = Signalled::new(machine, stop, |_: &mut _| {}, true);
        let acct =
            rondpoint_engine::run(&mut m, policy.as_mut(), &mut clock, &engine, &mut on_epoch)?;
        (acct, m.inner)
    };
    let (cpu_ns, rss) = machine.own_usage();
    let mut notes = Vec::new();
    if let Some(e) = write_error {
        notes.push(e);
    }
    if let Some(e) = &machine.signals().sampler_error {
        notes.push(format!("no samples: {e}"));
    }
    let report = RunReport {
        command: vec![format!(
            "daemon ({} processes at the end)",
            machine.managed().len()
        )],
        policy: args.policy.clone(),
        dry_run: args.dry_run,
        exit: Some("left running (rondpoint stopped managing them)".into()),
        wall_s: started.elapsed().as_secs_f64(),
        epochs: acct.epochs,
        signals: machine.signals().clone(),
        stats: machine.stats().clone(),
        actions: acct,
        rondpoint_cpu_s: cpu_ns as f64 / 1e9,
        rondpoint_peak_rss_bytes: rss,
        notes,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        eprint!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}
