//! `rondpoint matrix`: every policy on every workload and machine in the simulator, against a
//! baseline, with the runs that break the do-no-harm bound: the policies' regression suite.

use crate::budget::Budget;
use crate::commands::sim::plan::{self, Plan, Progress, RunOptions, Settings};
use crate::format;
use crate::options::PolicyOptions;
use crate::status::Input;
use anyhow::Result;
use clap::Args;
use rondpoint_policy_api::PolicyConfig;
use rondpoint_sim::experiment::matrix::{Matrix, Outcome, Refused};
use rondpoint_sim::presets;
use serde::Serialize;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Version of the `matrix --json` schema (docs/json/matrix.md).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// Machine presets or files, comma-separated [default: the four reference machines:
    /// opteron-8385 (the Carrefour paper's machine A), xeon-2s, epyc-genoa-2s-cxl and
    /// xeon-2s-cxl].
    #[arg(long, short = 'm', value_name = "M[,M...]", value_delimiter = ',')]
    machine: Vec<String>,

    /// Workload presets or scenario files, comma-separated [default: every preset workload].
    #[arg(long, short = 'w', value_name = "W[,W...]", value_delimiter = ',')]
    workload: Vec<String>,

    /// Policies, comma-separated, or "all" (the page policies and the oracle); the baseline
    /// and the placement bound ("bound") are added when missing.
    #[arg(
        long,
        short = 'p',
        value_name = "P[,P...]",
        value_delimiter = ',',
        default_value = "all"
    )]
    policy: Vec<String>,

    /// The policy every other is compared with.
    #[arg(long, value_name = "P", default_value = "first-touch")]
    baseline: String,

    /// The do-no-harm bound: a run more than this many percent slower than the baseline's
    /// breaks it (4: the Carrefour paper's "never more than 4% slower than Linux").
    #[arg(long, value_name = "PCT", default_value_t = 4.0, value_parser = slowdown_pct)]
    max_slowdown: f64,

    /// Do not run the placement bound (the best placement the model allows, which every run
    /// is compared with as "to bound"); saves a search and two runs per cell.
    #[arg(long)]
    no_bound: bool,

    /// Exit with status 1 when one of these policies breaks the do-no-harm bound (the
    /// regression check CI runs).
    #[arg(long, value_name = "P[,P...]", value_delimiter = ',')]
    check: Vec<String>,

    /// Seed of every random choice of every run.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    #[command(flatten)]
    policy_options: PolicyOptions,

    /// Policy epoch (simulated milliseconds, 1 to 3,600,000).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = crate::options::epoch_ms())]
    epoch_ms: u64,

    /// Runs at once [default: the CPUs this process may use].
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: Option<u64>,

    /// Print JSON (schema in docs/json/matrix.md) instead of tables.
    #[arg(long)]
    pub(crate) json: bool,

    /// No progress lines on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,

    /// Longest wall time the command may take: 90s, 20m, 2h, 3d, or "none" (as for `sim`).
    #[arg(long, value_name = "TIME", default_value = "1h", value_parser = crate::budget::parse)]
    budget: Budget,
}

fn slowdown_pct(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err("a percentage from 0 to 100".into()),
    }
}

/// The machines of the do-no-harm goal when `--machine` names none.
const REFERENCE_MACHINES: [&str; 4] = [
    "opteron-8385",
    "xeon-2s",
    "epyc-genoa-2s-cxl",
    "xeon-2s-cxl",
];

#[derive(Serialize)]
struct MatrixReport<'a> {
    schema_version: u32,
    seed: u64,
    options: RunOptions<'a>,
    /// The policies `--check` guards.
    checked: &'a [String],
    #[serde(flatten)]
    matrix: &'a Matrix,
}

pub fn run(args: &MatrixArgs) -> Result<ExitCode> {
    let config = args.policy_options.config()?;
    let plans = plans(args, &config)?;
    let refs: Vec<&Plan> = plans.iter().collect();
    crate::commands::sim::check_budget(&refs, &args.budget, !args.quiet)?;
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        |j| usize::try_from(j).unwrap_or(1),
    );
    let progress = Progress {
        on: !args.quiet,
        live: false,
        started: Arc::default(),
        total: plans.iter().map(Plan::runs).sum(),
    };
    let outcomes = run_all(&plans, &progress, jobs)?;
    let matrix = Matrix::of(&outcomes, &args.baseline, args.max_slowdown);
    if args.json {
        let report = MatrixReport {
            schema_version: SCHEMA_VERSION,
            seed: args.seed,
            options: options(args, &config),
            checked: &args.check,
            matrix: &matrix,
        };
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", render(&matrix, &args.check));
    }
    let broken = matrix.violations_of(&args.check).count();
    if broken > 0 {
        noteln!(
            "rondpoint: {broken} run{} of {} more than {}% slower than {}",
            if broken == 1 { "" } else { "s" },
            args.check.join(", "),
            args.max_slowdown,
            args.baseline
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The options every run of the matrix has.
fn options<'a>(args: &MatrixArgs, config: &'a PolicyConfig) -> RunOptions<'a> {
    RunOptions {
        epoch_ms: args.epoch_ms,
        max_pages_per_epoch: None,
        max_mb_per_epoch: None,
        allocation_map: None,
        exchange_pins: false,
        config,
    }
}

/// One plan per machine, each with every workload and policy (the baseline first), checked
/// before anything runs.
fn plans(args: &MatrixArgs, config: &PolicyConfig) -> Result<Vec<Plan>> {
    let machines: Vec<String> = if args.machine.is_empty() {
        REFERENCE_MACHINES.iter().map(|m| m.to_string()).collect()
    } else {
        args.machine.clone()
    };
    let workloads: Vec<String> = if args.workload.is_empty() {
        presets::WORKLOADS
            .iter()
            .map(|(w, _)| w.to_string())
            .collect()
    } else {
        args.workload.clone()
    };
    let mut policies = vec![args.baseline.clone()];
    policies.extend(args.policy.iter().cloned());
    if !args.no_bound {
        policies.push(rondpoint_sim::bound::NAME.to_string());
    }
    let watch = Arc::new(args.budget.watch());
    let plans = machines
        .iter()
        .map(|machine| {
            let settings = Settings {
                machine,
                workloads: &workloads,
                policies: &policies,
                seeds: vec![args.seed],
                options: options(args, config),
            };
            Plan::new(&settings, Arc::clone(&watch))
        })
        .collect::<Result<Vec<_>>>()?;
    for c in &args.check {
        crate::policies::registry().info(c).input()?;
        if plans.first().is_some_and(|p| !p.policies.contains(c)) {
            bad_input!("--check {c}: the matrix does not run {c}; add it to --policy");
        }
    }
    Ok(plans)
}

/// Runs every (machine, workload) of `plans` on `jobs` threads, each workload's policies in
/// turn on one thread, and returns the outcomes in plan and workload order. A policy's
/// refusal is an outcome; any other failure stops the matrix.
///
/// By hand rather than with a thread-pool crate: a shared job counter over scoped threads is
/// all this needs.
fn run_all(plans: &[Plan], progress: &Progress, jobs: usize) -> Result<Vec<Outcome>> {
    let work: Vec<(usize, usize)> = plans
        .iter()
        .enumerate()
        .flat_map(|(p, plan)| (0..plan.scenarios.len()).map(move |s| (p, s)))
        .collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let done: Mutex<Vec<Option<Result<Vec<Outcome>>>>> =
        Mutex::new((0..work.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, work.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(p, s)) = work.get(i) else { break };
                    if failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let r = run_workload(&plans[p], s, progress);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    if let Ok(mut d) = done.lock() {
                        d[i] = Some(r);
                    }
                }
            });
        }
    });
    let done = done
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a matrix thread panicked"))?;
    let mut outcomes = Vec::new();
    for r in done.into_iter().flatten() {
        outcomes.extend(r?);
    }
    Ok(outcomes)
}

/// Every policy of `plan` on its workload `s`.
fn run_workload(plan: &Plan, s: usize, progress: &Progress) -> Result<Vec<Outcome>> {
    let scenario = &plan.scenarios[s];
    let solo = plan.solo(scenario, progress)?;
    let mut out = Vec::with_capacity(plan.policies.len());
    for p in &plan.policies {
        match plan.run_cell(scenario, p, plan.seed(), solo.as_ref(), progress) {
            Ok(r) => out.push(Ok(r)),
            Err(e) => match plan::refusal(&e) {
                Some(why) => out.push(Err(Refused {
                    machine: plan.spec.name.clone(),
                    workload: scenario.name.clone(),
                    policy: p.clone(),
                    why,
                })),
                None => return Err(e),
            },
        }
    }
    Ok(out)
}

/// Per machine, a table of speedups (workloads x policies, "!" on a broken bound), then each
/// policy's geometric mean, worst case and violations; then every violation.
fn render(m: &Matrix, checked: &[String]) -> String {
    let mut out = String::new();
    for machine in &m.machines {
        let mut rows: Vec<Vec<String>> = m
            .workloads
            .iter()
            .map(|w| {
                let mut row = vec![w.clone()];
                row.extend(m.policies.iter().map(|p| {
                    match p == &m.baseline {
                        true => m
                            .cell(machine, w, p)
                            .and_then(|c| c.completion_s)
                            .map_or_else(|| "-".into(), |t| format!("{t:.2} s")),
                        false => speedup_cell(m, machine, w, p),
                    }
                }));
                row
            })
            .collect();
        let of = |p: &String| {
            m.summary
                .iter()
                .find(|s| s.machine == *machine && s.policy == *p)
        };
        let of = |p: &String| of(p).filter(|_| *p != m.baseline);
        let geomean = m.policies.iter().map(|p| {
            of(p)
                .and_then(|s| s.geomean_speedup)
                .map_or_else(|| "-".into(), |g| format!("{g:.3}"))
        });
        rows.push(
            std::iter::once("(geomean)".to_string())
                .chain(geomean)
                .collect(),
        );
        let broken = m
            .policies
            .iter()
            .map(|p| of(p).map_or_else(|| "-".into(), |s| s.violations.to_string()));
        rows.push(
            std::iter::once("(harm)".to_string())
                .chain(broken)
                .collect(),
        );
        let to_bound = m.policies.iter().map(|p| {
            m.summary
                .iter()
                .find(|s| s.machine == *machine && s.policy == *p)
                .and_then(|s| s.geomean_to_bound)
                .map_or_else(|| "-".into(), |g| format!("{g:.3}"))
        });
        if m.cells.iter().any(|c| c.to_bound.is_some()) {
            rows.push(
                std::iter::once("(to bound)".to_string())
                    .chain(to_bound)
                    .collect(),
            );
        }
        out.push_str(&format!(
            "{machine}: speedup over {}\n{}\n\n",
            m.baseline,
            format::labelled_table("workload", &m.policies, rows)
        ));
    }
    out.push_str(&format!(
        "{b}: its completion time (simulated s); other policies: speedup, {b}'s time over \
         theirs (above 1: faster);\n!: more than {}% slower than {b} (the do-no-harm bound); \
         refused: the policy cannot run there; (harm): runs with !; (to bound): geometric mean of\n\
         the bound's time over the policy's (1: as fast as the best placement the model allows).\n",
        m.max_slowdown_pct,
        b = m.baseline
    ));
    let mut reasons: Vec<&str> = Vec::new();
    for why in m.cells.iter().filter_map(|c| c.refused.as_deref()) {
        if !reasons.contains(&why) {
            reasons.push(why);
            out.push_str(&format!("refused: {why}\n"));
        }
    }
    out.push_str(&render_violations(m, checked));
    out.push_str(&render_beyond_bound(m));
    out
}

/// The runs faster than the bound by more than its tolerance (none when no bound ran).
fn render_beyond_bound(m: &Matrix) -> String {
    use rondpoint_sim::experiment::matrix::BOUND_TOLERANCE_PCT;
    if !m.cells.iter().any(|c| c.to_bound.is_some()) {
        return String::new();
    }
    if m.beyond_bound.is_empty() {
        return format!(
            "no run is faster than the placement bound by more than {BOUND_TOLERANCE_PCT}%.\n"
        );
    }
    let rows = m
        .beyond_bound
        .iter()
        .map(|b| {
            vec![
                b.machine.clone(),
                b.workload.clone(),
                b.policy.clone(),
                format!("{:.3}", b.to_bound),
            ]
        })
        .collect();
    format!(
        "\n{} run{} faster than the placement bound by more than {BOUND_TOLERANCE_PCT}% (a placement the \
         bound's search missed):\n{}\n",
        m.beyond_bound.len(),
        if m.beyond_bound.len() == 1 { "" } else { "s" },
        format::table(
            &["machine", "workload", "policy", "to bound"],
            &[false, false, false, true],
            rows,
        )
    )
}

/// Every violation, marked when `--check` names its policy.
fn render_violations(m: &Matrix, checked: &[String]) -> String {
    if m.violations.is_empty() {
        return "no run breaks the do-no-harm bound.\n".into();
    }
    let mut out = String::new();
    out.push_str(&format!(
        "\n{} run{} more than {}% slower than {}:\n",
        m.violations.len(),
        if m.violations.len() == 1 { "" } else { "s" },
        m.max_slowdown_pct,
        m.baseline
    ));
    let rows = m
        .violations
        .iter()
        .map(|v| {
            vec![
                v.machine.clone(),
                match &v.application {
                    Some(a) => format!("{} ({a})", v.workload),
                    None => v.workload.clone(),
                },
                v.policy.clone(),
                format!("{:.3}", v.speedup),
                format!("{:.1}%", v.slower_pct),
                if checked.contains(&v.policy) {
                    "checked"
                } else {
                    ""
                }
                .to_string(),
            ]
        })
        .collect();
    out.push_str(&format::table(
        &["machine", "workload", "policy", "speedup", "slower", ""],
        &[false, false, false, true, true, false],
        rows,
    ));
    out.push('\n');
    out
}

/// A cell of the speedup table: the speedup with "!" on a broken bound, "refused" or "-".
fn speedup_cell(m: &Matrix, machine: &str, workload: &str, policy: &str) -> String {
    let Some(c) = m.cell(machine, workload, policy) else {
        return "-".into();
    };
    if c.refused.is_some() {
        return "refused".into();
    }
    match c.speedup {
        Some(s) if m.breaks(c) => format!("{s:.3}!"),
        Some(s) => format!("{s:.3}"),
        None => "-".into(),
    }
}
