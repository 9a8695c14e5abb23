//! `rondpoint sim`: run policies on simulated machines, side by side.

use crate::budget::{Budget, Estimate, Watch, human};
use crate::format;
use crate::options::{MAX_RUNS, PolicyOptions};
use crate::status::Input;
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_engine::EngineConfig;
use rondpoint_policy_api::PolicyConfig;
use rondpoint_sim::experiment::multiprogram;
use rondpoint_sim::experiment::summary::{self, Summary};
use rondpoint_sim::experiment::{self, RunResult};
use rondpoint_sim::scenario::Scenario;
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, presets};
use serde::Serialize;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

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

    /// Policies to compare, comma-separated, or "all" (`rondpoint list policies` shows them).
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

    /// Most megabytes a policy may move, interleave or replicate per epoch.
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

    /// Print JSON (schema in docs/json/sim.md) instead of a table.
    #[arg(long)]
    json: bool,

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

    /// List the built-in machines, workloads and policies, and exit.
    #[arg(long)]
    list: bool,
}

#[derive(Debug, Serialize)]
struct SimReport {
    schema_version: u32,
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
        "policies:  {}",
        registry.names().collect::<Vec<_>>().join(", ")
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
    let plan = Plan::of(args)?;
    plan.check_budget(&args.budget)?;
    let mut results = Vec::new();
    for scenario in &plan.scenarios {
        plan.run_scenario(scenario, &mut results)?;
    }
    experiment::fill_speedups(&mut results);
    let summary = args.seeds.map(|_| summary::summarize(&results));
    if args.json {
        let report = SimReport {
            schema_version: SCHEMA_VERSION,
            runs: results,
            summary,
        };
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    match &summary {
        Some(s) => out!("{}{}", render_summary(s), render_notes(&results)),
        None => out!("{}", render_table(&results)),
    }
    if args.memory {
        for r in &results {
            out!("\n{}", render_memory(r));
        }
    }
    Ok(ExitCode::SUCCESS)
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

/// Each application's completion time over the seeds: mean, standard deviation, extremes.
pub fn render_summary(summaries: &[Summary]) -> String {
    let mut rows = Vec::new();
    for s in summaries {
        let spreads = s
            .apps
            .iter()
            .map(|a| (a.name.as_str(), a.spread))
            .chain(std::iter::once(("(all)", s.completion)));
        for (name, sp) in spreads {
            rows.push(vec![
                s.workload.clone(),
                s.policy.clone(),
                s.seeds.len().to_string(),
                name.to_string(),
                format!("{:.2}", sp.mean_s),
                format!("{:.2}", sp.std_s),
                format!("{:.1}%", sp.std_pct()),
                format!("{:.2}", sp.min_s),
                format!("{:.2}", sp.max_s),
            ]);
        }
    }
    let mut out = format::table(
        &[
            "workload",
            "policy",
            "seeds",
            "application",
            "mean s",
            "std s",
            "std",
            "min s",
            "max s",
        ],
        &[false, false, true, false, true, true, true, true, true],
        rows,
    );
    out.push_str(
        "\n\nper application: completion time (simulated s) over the seeds: mean, sample \
         standard deviation (n - 1) in s and as % of the mean,\nleast and greatest; (all): \
         until the last application finished.\n",
    );
    out
}

/// What to run: the machine, the workloads and policies, and the settings, checked.
struct Plan {
    spec: MachineSpec,
    config: PolicyConfig,
    policies: Vec<String>,
    scenarios: Vec<Scenario>,
    sim: SimConfig,
    /// The runs' seeds (`--seed`, or `--seeds N` of them from it).
    seeds: Vec<u64>,
    engine: EngineConfig,
    progress: bool,
    live: bool,
    /// The wall clock against `--budget`.
    watch: Watch,
}

impl Plan {
    fn of(args: &SimArgs) -> Result<Self> {
        let Some(machine_name) = &args.machine else {
            bad_input!("--machine is required");
        };
        let preset = presets::machine(machine_name)?;
        let spec = MachineSpec::from_preset(&preset)?;
        let config = args.policy_options.config()?;
        let mut policies: Vec<String> = Vec::new();
        for p in &args.policy {
            if p == "all" {
                policies.extend(crate::policies::registry().all().map(str::to_string));
            } else {
                crate::policies::build(p, &config)?;
                policies.push(p.clone());
            }
        }
        let mut seen = std::collections::HashSet::new();
        policies.retain(|p| seen.insert(p.clone()));
        let mut scenarios = args
            .workload
            .iter()
            .map(|w| presets::workload(w).map_err(anyhow::Error::from))
            .collect::<Result<Vec<_>>>()?;
        if let Some(map) = &args.allocation_map {
            for s in &mut scenarios {
                *s = multiprogram::with_homes(&spec, s, map)
                    .map_err(anyhow::Error::msg)
                    .input()?;
            }
        }
        let sim = SimConfig {
            seed: args.seed,
            exchange_pins: args.exchange_pins,
            ..SimConfig::default()
        };
        let watch = args.budget.watch();
        let engine = EngineConfig {
            epoch_ns: args.epoch_ms.saturating_mul(1_000_000),
            limits: rondpoint_engine::RateLimits {
                max_pages_per_epoch: args.max_pages_per_epoch,
                max_bytes_per_epoch: args.max_mb_per_epoch.map(|mb| mb.saturating_mul(1_000_000)),
            },
            stop: Some(watch.stop_signal()),
            ..EngineConfig::default()
        };
        let progress = !args.quiet;
        let seeds = seeds(args)?;
        let runs = [seeds.len(), policies.len(), scenarios.len()]
            .iter()
            .fold(1u64, |n, &k| n.saturating_mul(k as u64));
        if runs > MAX_RUNS {
            bad_input!(
                "{runs} runs ({} seeds x {} policies x {} workloads): one command runs at most \
                 {MAX_RUNS}; split it",
                seeds.len(),
                policies.len(),
                scenarios.len()
            );
        }
        Ok(Self {
            spec,
            config,
            policies,
            scenarios,
            sim,
            seeds,
            engine,
            progress,
            live: progress && std::io::stderr().is_terminal(),
            watch,
        })
    }

    /// Whether any policy takes per-program profiles (N-MASS's), which solo runs fill in.
    fn profiled(&self) -> bool {
        let registry = crate::policies::registry();
        self.policies
            .iter()
            .any(|p| registry.info(p).is_ok_and(multiprogram::takes_profiles))
    }

    /// Refuses the plan if it should take longer than `budget`, from each workload's pace on
    /// its first steps (a workload the simulator cannot build is left for its run to report).
    fn check_budget(&self, budget: &Budget) -> Result<()> {
        let profiled = self.profiled();
        let mut estimate = Estimate::default();
        for s in &self.scenarios {
            let Ok(pace) = experiment::pace(&self.spec, s, &self.sim) else {
                continue;
            };
            let solo = if s.apps.len() > 1 || profiled {
                s.apps.len()
            } else {
                0
            };
            estimate.add(&s.name, pace, self.policies.len() * self.seeds.len() + solo);
        }
        budget.check(&estimate, &self.spec.name)?;
        if self.progress && estimate.wall_s > 60.0 {
            noteln!(
                "rondpoint: about {} of wall time expected for the simulator (policies add \
                 their own)",
                human(estimate.wall_s)
            );
        }
        Ok(())
    }

    /// Runs every policy on `scenario`, appending to `results`. A workload of several programs
    /// first runs each alone (for slowdowns), and so does any workload run under a policy that
    /// takes per-program profiles (N-MASS's), which the solo runs fill in.
    fn run_scenario(&self, scenario: &Scenario, results: &mut Vec<RunResult>) -> Result<()> {
        let registry = crate::policies::registry();
        let profiled = self.profiled();
        let several = scenario.apps.len() > 1;
        let solo = if several || profiled {
            if self.progress {
                noteln!("{} / {}: each program alone", self.spec.name, scenario.name);
            }
            let solo =
                multiprogram::solo_runs(&self.spec, scenario, &self.sim, &self.engine, profiled)
                    .map_err(|e| self.watch.spent().unwrap_or_else(|| e.into()))
                    .with_context(|| format!("running the programs of {} alone", scenario.name))?;
            Some(solo)
        } else {
            None
        };
        let total = self.scenarios.len() * self.policies.len() * self.seeds.len();
        for p in &self.policies {
            let mut config = self.config.clone();
            if let Some(solo) = &solo {
                multiprogram::fill_profiles(&mut config, registry.info(p)?, solo)?;
            }
            for &seed in &self.seeds {
                let config = registry.seeded(&config, p, seed)?;
                let sim = SimConfig {
                    seed,
                    ..self.sim.clone()
                };
                let of_seed = if self.seeds.len() > 1 {
                    format!(" / seed {seed}")
                } else {
                    String::new()
                };
                let label = format!(
                    "[{}/{total}] {} / {} / {p}{of_seed}",
                    results.len() + 1,
                    self.spec.name,
                    scenario.name
                );
                let slowdowns = solo.as_ref().filter(|_| several);
                let r = self
                    .run_policy(scenario, p, &config, &sim, slowdowns, &label)
                    .with_context(|| format!("running {} under {p}", scenario.name))?;
                results.push(r);
            }
        }
        Ok(())
    }

    /// One policy on one scenario, with progress lines.
    fn run_policy(
        &self,
        scenario: &Scenario,
        policy: &str,
        config: &PolicyConfig,
        sim: &SimConfig,
        solo: Option<&multiprogram::Solo>,
        label: &str,
    ) -> Result<RunResult> {
        let build = || crate::policies::build(policy, config);
        let started = Instant::now();
        let live = self.live;
        let r = experiment::run_policy(
            &self.spec,
            scenario,
            &build,
            sim,
            &self.engine,
            solo,
            |k, n, t| {
                self.watch.tick();
                if live {
                    let of = if n > 1 {
                        format!(" (placement {}/{n})", k + 1)
                    } else {
                        String::new()
                    };
                    note!("\r{label}{of}: {t:.0} simulated s");
                }
            },
        )
        .map_err(|e| self.watch.spent().unwrap_or_else(|| e.into()))?;
        if self.progress {
            noteln!(
                "{}{label}: {:.2} simulated s in {:.2} s of wall time",
                if live { "\r" } else { "" },
                r.completion_s,
                started.elapsed().as_secs_f64()
            );
        }
        Ok(r)
    }
}

/// One run's memory per node (GiB): size, fallback order, peak and final use, and each
/// application's memory at the end.
pub fn render_memory(r: &RunResult) -> String {
    let gib = |b: u64| format!("{:.2}", b as f64 / f64::from(1u32 << 30));
    let peak = r.memory.peak_used_bytes();
    let end = r
        .memory
        .last()
        .map(|p| p.used_bytes.clone())
        .unwrap_or_default();
    let rows = r
        .memory
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut row = vec![
                n.node.0.to_string(),
                gib(n.total_bytes),
                gib(peak.get(i).copied().unwrap_or(0)),
                gib(end.get(i).copied().unwrap_or(0)),
                n.fallback
                    .iter()
                    .map(|f| f.0.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            ];
            row.extend(
                r.apps
                    .iter()
                    .map(|a| gib(a.bytes_by_node.get(i).copied().unwrap_or(0))),
            );
            row
        })
        .collect();
    let mut header = vec!["node", "size", "peak", "end", "fallback"];
    header.extend(r.apps.iter().map(|a| a.name.as_str()));
    let mut right = vec![false, true, true, true, false];
    right.resize(header.len(), true);
    format!(
        "memory: {} / {} (GiB; peak and end: in use, the OS's share included; applications: \
         at the end)\n{}\n",
        r.workload,
        r.policy,
        format::table(&header, &right, rows)
    )
}

/// The comparison table.
pub fn render_table(results: &[RunResult]) -> String {
    let rows = results
        .iter()
        .map(|r| {
            vec![
                r.workload.clone(),
                r.policy.clone(),
                format!("{:.2}", r.completion_s),
                r.speedup_vs_first_touch
                    .map_or_else(|| "-".into(), |s| format!("{s:.2}x")),
                format!("{:.0}", r.avg_latency_cycles),
                format!("{:.0}%", 100.0 * r.lar),
                format!("{:.0}%", r.mc_imbalance),
                format!("{:.0}%", r.ic_imbalance),
                format!("{:.2}", r.ipc),
                r.pages_migrated.to_string(),
                r.pages_interleaved.to_string(),
                r.pages_replicated.to_string(),
                format!("{:.1}%", r.overhead_pct),
            ]
        })
        .collect();
    let mut out = format::table(
        &[
            "workload",
            "policy",
            "time s",
            "speedup",
            "lat cyc",
            "LAR",
            "MC imb",
            "IC imb",
            "IPC",
            "migrated",
            "interleaved",
            "replicated",
            "overhead",
        ],
        &[
            false, false, true, true, true, true, true, true, true, true, true, true, true,
        ],
        rows,
    );
    out.push_str(
        "\n\ntime: completion (simulated s); speedup over first-touch; lat: average DRAM access \
         latency in core cycles;\nLAR: local access ratio; MC/IC imb: std. dev. of memory-controller \
         / link load as % of the mean;\npages in 4 KiB units; overhead: thread time spent on \
         placement mechanisms.\n",
    );
    out.push_str(&render_slowdowns(results));
    out.push_str(&render_notes(results));
    out
}

/// The slowdowns of the multiprogrammed runs, one row per run, one column per program
/// (empty when no run has them).
fn render_slowdowns(results: &[RunResult]) -> String {
    let runs: Vec<(&RunResult, &rondpoint_sim::experiment::Multiprogram)> = results
        .iter()
        .filter_map(|r| r.multiprogram.as_ref().map(|m| (r, m)))
        .collect();
    let mut out = String::new();
    let mut names: Vec<&str> = Vec::new();
    for (_, m) in &runs {
        for a in &m.apps {
            if !names.contains(&a.name.as_str()) {
                names.push(&a.name);
            }
        }
    }
    if runs.is_empty() {
        return out;
    }
    let pct = |x: f64, range: Option<[f64; 2]>| match range {
        Some([lo, hi]) => format!("{x:.1}% ({lo:.0}..{hi:.0})"),
        None => format!("{x:.1}%"),
    };
    let rows = runs
        .iter()
        .map(|(r, m)| {
            let mut row = vec![r.workload.clone(), r.policy.clone()];
            row.extend(names.iter().map(|n| {
                m.apps
                    .iter()
                    .find(|a| a.name == *n)
                    .map_or_else(|| "-".into(), |a| pct(a.slowdown_pct, a.range_pct))
            }));
            row.push(pct(m.average_pct, m.average_range_pct));
            row
        })
        .collect();
    let mut header = vec!["workload", "policy"];
    header.extend(names.iter().copied());
    header.push("average");
    let mut right = vec![false, false];
    right.extend(std::iter::repeat_n(true, names.len() + 1));
    out.push_str(
        "\nslowdown of each program over its solo run (the paper's way, [Majo11 §4.1]):\n\n",
    );
    out.push_str(&format::table(&header, &right, rows));
    out.push_str(
        "\n\nsolo run: the program alone on its home node; average: over the programs; \
         (lo..hi): range over the placements a policy stands for (default: every CPU-balanced \
         split).\n",
    );
    out
}

/// What the policies said about themselves, one line each (nothing when they said nothing).
pub fn render_notes(results: &[RunResult]) -> String {
    let mut out = String::new();
    let mut seen = std::collections::BTreeSet::new();
    for r in results {
        for n in &r.notes {
            if seen.insert((&r.workload, &r.policy, n)) {
                out.push_str(&format!("note: {} / {}: {n}\n", r.workload, r.policy));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::{NodeId, NodeMemory, Observation, Pid, ProcessInfo};
    use rondpoint_sim::experiment::AppResult;
    use rondpoint_sim::memory::{MemoryReport, NodeInfo};

    #[test]
    fn memory_lists_each_node_with_its_fallback_and_each_application() {
        const GIB: u64 = 1 << 30;
        let mut memory = MemoryReport::new(
            (0..2)
                .map(|n| NodeInfo {
                    node: NodeId(n),
                    total_bytes: 16 * GIB,
                    fallback: vec![NodeId(n), NodeId(1 - n)],
                })
                .collect(),
        );
        let at = |free: [u64; 2]| Observation {
            memory: (0..2)
                .map(|n| NodeMemory {
                    node: NodeId(n as u16),
                    total_bytes: 16 * GIB,
                    free_bytes: free[n],
                })
                .collect(),
            processes: vec![ProcessInfo {
                pid: Pid(1),
                comm: "big".into(),
                threads: vec![],
                resident_bytes_by_node: vec![16 * GIB - free[0], 16 * GIB - free[1]],
                mapping_policies: vec![],
            }],
            ..Observation::default()
        };
        memory.record(1.0, &at([0, 4 * GIB]));
        memory.record(2.0, &at([0, 8 * GIB]));
        let r = RunResult {
            machine: "m".into(),
            workload: "w".into(),
            policy: "p".into(),
            seed: 1,
            completion_s: 2.0,
            speedup_vs_first_touch: None,
            avg_latency_cycles: 0.0,
            lar: 1.0,
            mc_imbalance: 0.0,
            ic_imbalance: 0.0,
            ipc: 1.0,
            pages_migrated: 0,
            pages_interleaved: 0,
            pages_replicated: 0,
            overhead_pct: 0.0,
            samples: 0,
            collapses: 0,
            apps: vec![AppResult {
                name: "big".into(),
                completion_s: 2.0,
                bytes_by_node: vec![16 * GIB, 8 * GIB],
            }],
            memory,
            multiprogram: None,
            notes: vec![],
        };
        let out = render_memory(&r);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("memory: w / p"), "{out}");
        let cells = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            cells(lines[1]),
            ["node", "size", "peak", "end", "fallback", "big"]
        );
        assert_eq!(
            cells(lines[2]),
            ["0", "16.00", "16.00", "16.00", "0", "1", "16.00"]
        );
        assert_eq!(
            cells(lines[3]),
            ["1", "16.00", "12.00", "8.00", "1", "0", "8.00"]
        );
    }
}
