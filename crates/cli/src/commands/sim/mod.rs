//! `rondpoint sim`: run policies on simulated machines, side by side.

pub mod plan;
mod render;

use crate::budget::{Budget, Estimate, human};
use crate::options::{MAX_RUNS, PolicyOptions};
use crate::status::Input;
use anyhow::{Context, Result};
use clap::Args;
use plan::{Plan, Progress, RunOptions, Settings};
pub use render::{render_memory, render_notes, render_summary, render_table};
use rondpoint_sim::experiment::summary::{self, Summary};
use rondpoint_sim::experiment::{self, RunResult};
use rondpoint_sim::presets;
use serde::Serialize;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

/// Version of the `sim --json` schema (docs/json/sim.md).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Machine preset name, or a preset file (.toml). `--list` shows the built-in ones.
    #[arg(
        long,
        short = 'm',
        value_name = "MACHINE",
        required_unless_present = "list"
    )]
    machine: Option<String>,

    /// Workload preset names or scenario files, comma-separated; each is run separately.
    #[arg(
        long,
        short = 'w',
        value_name = "W[,W...]",
        value_delimiter = ',',
        required_unless_present = "list"
    )]
    workload: Vec<String>,

    /// Policies to compare, comma-separated, or "all" (`rondpoint list policies` shows them):
    /// the page policies, the oracle and the placement bound ("bound": the best placement the
    /// model allows, placed at no cost; every run is then compared with it as "to bound").
    #[arg(
        long,
        short = 'p',
        value_name = "P[,P...]",
        value_delimiter = ',',
        default_value = "first-touch,interleave"
    )]
    policy: Vec<String>,

    /// Seed of every random choice of a run: the simulator's, and those of each policy with a
    /// `seed` parameter that --config and --set leave unset. The same seed gives the same
    /// results.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Run every workload under every policy N times, with seeds SEED, SEED+1, ..., and print
    /// each application's mean completion time and its standard deviation over the runs (the
    /// JSON adds a `summary`). At most 10,000, and 10,000 runs in all (seeds x policies x
    /// workloads).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_RUNS))]
    seeds: Option<u64>,

    #[command(flatten)]
    policy_options: PolicyOptions,

    /// Policy epoch (simulated milliseconds, 1 to 3,600,000).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = crate::options::epoch_ms())]
    epoch_ms: u64,

    /// Most pages (4 KiB or 2 MiB) a policy may move, interleave or replicate per epoch; the
    /// rest of its actions are skipped and counted.
    #[arg(long, value_name = "PAGES")]
    max_pages_per_epoch: Option<u64>,

    /// Most megabytes (MiB) a policy may move, interleave or replicate per epoch.
    #[arg(long, value_name = "MB")]
    max_mb_per_epoch: Option<u64>,

    /// Home each application's memory on a node, one digit per application in order
    /// ("0001": the first three on node 0, the fourth on node 1), as \[Majo11\]'s allocation
    /// maps do; overrides the workloads' own `membind`.
    #[arg(long, value_name = "MAP")]
    allocation_map: Option<String>,

    /// Carry out two adjacent pins that exchange two threads' cores together. Without it, the
    /// simulator runs one thread per core and a pin onto a busy core fails, so a policy that
    /// exchanges processes on a machine with every core busy (N-MASS on 8 processes and 8
    /// cores) cannot.
    #[arg(long)]
    exchange_pins: bool,

    /// Show every column (latency, link load, IPC, pages by technique) in one table, not the
    /// 80-column tables per workload.
    #[arg(long)]
    wide: bool,

    /// Print JSON (schema in docs/json/sim.md) instead of a table.
    #[arg(long)]
    pub(crate) json: bool,

    /// After the table, each run's memory per node: size, fallback order, peak and final use,
    /// and each application's share at the end (the JSON always has it, over time).
    #[arg(long)]
    memory: bool,

    /// No progress lines on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,

    /// Longest wall time the command may take: 90s, 20m, 2h, 3d, or "none". Before anything
    /// runs, the simulator's pace is measured on each workload's first steps, and a command
    /// expected to take longer is refused with its estimate; a run still going when the budget
    /// is spent (policies add their own time to the simulator's) stops with an error.
    #[arg(long, value_name = "TIME", default_value = "1h", value_parser = crate::budget::parse)]
    budget: Budget,

    /// Show the run live in the terminal (`rondpoint top`'s view, docs/top.md) instead of
    /// printing a table: per-node controller load and memory, link load, local access ratio,
    /// imbalance, sampling and each process's pages and actions, epoch by epoch. Needs one
    /// workload and one policy; the last epoch stays on the screen until q.
    #[arg(long, conflicts_with_all = ["json", "seeds", "memory", "wide", "plot"])]
    top: bool,

    /// With --top: wall time each simulated epoch stays on the screen (milliseconds).
    #[arg(long, value_name = "MS", default_value_t = 500, requires = "top",
          value_parser = clap::value_parser!(u64).range(0..=60_000))]
    top_pace_ms: u64,

    /// With --top: run to the end without a terminal and write the last screen as a picture
    /// into FILE (.svg or .png; a 120 x 28 terminal), as `rondpoint top --snapshot` does.
    #[arg(long, value_name = "FILE", requires = "top", group = "picture")]
    snapshot: Option<std::path::PathBuf>,

    /// Also draw the results as a chart into FILE (.svg or .png): speedup over first-touch
    /// per workload and policy, and for a single workload each memory controller's and
    /// link's load (docs/plots.md). first-touch must be among the policies.
    #[arg(long, value_name = "FILE", group = "picture")]
    plot: Option<std::path::PathBuf>,

    /// With --plot or --snapshot: replace FILE even if it is not a picture rondpoint wrote.
    #[arg(long, requires = "picture")]
    force: bool,

    /// List the built-in machines, workloads and policies, and exit.
    #[arg(long)]
    list: bool,
}

#[derive(Debug, Serialize)]
struct SimReport<'a> {
    schema_version: u32,
    /// The options that shaped every run (each run's seed is in the run).
    options: RunOptions<'a>,
    runs: Vec<RunResult>,
    /// With `--seeds`: each application's completion time over the seeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<Vec<Summary>>,
}

fn list() -> Result<()> {
    outln!("machines:  {}", names(presets::MACHINES));
    outln!("workloads: {}", names(presets::WORKLOADS));
    let registry = crate::policies::registry();
    outln!(
        "policies:  {}; and {} (the placement bound)",
        registry.names().collect::<Vec<_>>().join(", "),
        rondpoint_sim::bound::NAME
    );
    Ok(())
}

fn names(table: &[(&str, &str)]) -> String {
    table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

pub fn run(args: &SimArgs) -> Result<ExitCode> {
    if args.list {
        list()?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(machine) = &args.machine else {
        bad_input!("--machine is required");
    };
    let config = args.policy_options.config()?;
    let mut policies = args.policy.clone();
    if policies.iter().any(|p| p == "all") {
        policies.push(rondpoint_sim::bound::NAME.to_string());
        if !args.quiet && !args.json {
            let registry = crate::policies::registry();
            let all: Vec<&str> = registry.all().collect();
            let other: Vec<&str> = registry.names().filter(|n| !all.contains(n)).collect();
            noteln!(
                "rondpoint: --policy all: the page policies ({}) and the bound; name the \
                 others to run them ({}; their scenarios are in examples/scenarios/)",
                all.join(", "),
                other.join(", ")
            );
        }
    }
    let settings = Settings {
        machine,
        workloads: &args.workload,
        policies: &policies,
        seeds: seeds(args)?,
        options: RunOptions {
            epoch_ms: args.epoch_ms,
            max_pages_per_epoch: args.max_pages_per_epoch,
            max_mb_per_epoch: args.max_mb_per_epoch,
            allocation_map: args.allocation_map.as_deref(),
            exchange_pins: args.exchange_pins,
            config: &config,
        },
    };
    if args.top {
        return top(args, &settings);
    }
    let plot = plot_output(args, &policies)?;
    let plan = Plan::new(&settings, Arc::new(args.budget.watch()))?;
    check_budget(&[&plan], &args.budget, !args.quiet)?;
    let progress = Progress {
        on: !args.quiet,
        live: !args.quiet && std::io::stderr().is_terminal(),
        started: Arc::default(),
        total: plan.runs(),
    };
    let mut results = Vec::new();
    for scenario in &plan.scenarios {
        plan.run_scenario(scenario, &progress, &mut results)?;
    }
    experiment::fill_speedups(&mut results);
    if let Some(plot) = plot {
        plot.write(&crate::plot::SimFigure::new(&results)?)?;
    }
    let summary = args.seeds.map(|_| summary::summarize(&results));
    if args.json {
        let report = SimReport {
            schema_version: SCHEMA_VERSION,
            options: settings.options,
            runs: results,
            summary,
        };
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    match &summary {
        Some(s) => out!("{}{}", render_summary(s), render_notes(&results)),
        None => out!("{}", render_table(&results, args.wide)),
    }
    if args.memory {
        for r in &results {
            out!("\n{}", render_memory(r));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--top`: one run, drawn live.
fn top(args: &SimArgs, settings: &Settings) -> Result<ExitCode> {
    let plan = Plan::new(settings, Arc::new(Budget(None).watch()))?;
    let (Some(scenario), Some(policy), 1, 1) = (
        plan.scenarios.first(),
        plan.policies.first(),
        plan.scenarios.len(),
        plan.policies.len(),
    ) else {
        bad_input!(
            "--top shows one run: give one workload and one policy (-p), not {} and {}",
            plan.scenarios.len(),
            plan.policies.len()
        );
    };
    if let Some(path) = &args.snapshot {
        let output = crate::plot::Output::create(path, args.force)?;
        return crate::top::sim::snapshot(&plan, scenario, policy, output);
    }
    let pace = std::time::Duration::from_millis(args.top_pace_ms);
    crate::top::sim::run(&plan, scenario, policy, pace)
}

/// `--plot`'s file, opened before anything runs; refused if it is neither SVG nor PNG, may
/// not be replaced, or if first-touch, which the chart's speedups are over, is not among
/// `policies`.
fn plot_output(args: &SimArgs, policies: &[String]) -> Result<Option<crate::plot::Output>> {
    let Some(path) = &args.plot else {
        return Ok(None);
    };
    let all_has = || {
        crate::policies::registry()
            .all()
            .any(|p| p == "first-touch")
    };
    if !policies
        .iter()
        .any(|p| p == "first-touch" || (p == "all" && all_has()))
    {
        bad_input!("--plot draws speedup over first-touch: add first-touch to --policy");
    }
    crate::plot::Output::create(path, args.force).map(Some)
}

/// The seeds of the runs: `--seed`, or `--seeds N` of them from it.
fn seeds(args: &SimArgs) -> Result<Vec<u64>> {
    match args.seeds {
        None => Ok(vec![args.seed]),
        Some(0) => bad_input!("--seeds must be at least 1"),
        Some(n) => (0..n)
            .map(|k| {
                args.seed
                    .checked_add(k)
                    .context("--seed plus --seeds passes the largest seed")
                    .input()
            })
            .collect(),
    }
}

/// Refuses `plans` if they should take longer than `budget`, from each workload's pace on
/// its first steps; says how long they should take when that is over a minute.
pub fn check_budget(plans: &[&Plan], budget: &Budget, progress: bool) -> Result<()> {
    if budget.0.is_none() && !progress {
        // Nothing to refuse and nobody to tell: the probes would be wasted.
        return Ok(());
    }
    let mut estimate = Estimate::default();
    for plan in plans {
        plan.estimate(&mut estimate);
    }
    budget.check(&estimate)?;
    if progress && estimate.wall_s > 60.0 {
        noteln!(
            "rondpoint: about {} of wall time expected for the simulator (policies add \
             their own)",
            human(estimate.wall_s)
        );
    }
    Ok(())
}
