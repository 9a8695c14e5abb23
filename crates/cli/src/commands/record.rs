//! `rondpoint record` and `rondpoint replay`: observations to a file, and a policy run over
//! them offline.

use crate::budget::{Budget, Estimate};
use crate::format;
use crate::options::PolicyOptions;
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_engine::record::{self, Header, Recorder};
use rondpoint_engine::{EngineConfig, Machine, VirtualClock};
use rondpoint_model::Action;
use rondpoint_sim::experiment::{TIME_LIMIT_S, multiprogram};
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, SimMachine, presets};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Machine preset or file (see `rondpoint sim --list`).
    #[arg(long, short = 'm', value_name = "MACHINE")]
    machine: String,
    /// Workload preset or scenario file.
    #[arg(long, short = 'w', value_name = "WORKLOAD")]
    workload: String,
    /// The policy that runs while recording (its actions are recorded with the observations).
    #[arg(long, short = 'p', default_value = "first-touch")]
    policy: String,
    #[command(flatten)]
    policy_options: PolicyOptions,
    /// Seed of the simulator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Policy epoch (simulated milliseconds, 1 to 3,600,000).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = crate::options::epoch_ms())]
    epoch_ms: u64,
    /// Most samples kept per epoch in the file (spread evenly); recordings of sampled runs
    /// otherwise grow by tens of megabytes per epoch.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    max_samples: usize,
    /// The recording to write (JSON lines, docs/record-format.md).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: PathBuf,
    /// Replace FILE even when it is not a rondpoint recording.
    #[arg(long)]
    force: bool,
    /// Longest wall time the simulation may take (90s, 20m, 2h, 3d, or "none"): checked
    /// before it starts from the simulator's pace on the first steps, and while it runs; a
    /// recording stopped by it keeps the epochs before, as one stopped by a signal does.
    #[arg(long, value_name = "TIME", default_value = "1h", value_parser = crate::budget::parse)]
    budget: Budget,
}

pub fn run_record(args: &RecordArgs) -> Result<ExitCode> {
    let given = args.policy_options.config()?;
    crate::policies::build(&args.policy, &given)?;
    let spec = MachineSpec::from_preset(&presets::machine(&args.machine)?)?;
    let scenario = presets::workload(&args.workload)?;
    let sim = SimConfig {
        seed: args.seed,
        ..SimConfig::default()
    };
    let engine = EngineConfig {
        epoch_ns: args.epoch_ms.saturating_mul(1_000_000),
        ..EngineConfig::default()
    };
    let config = run_config(args, &given, &spec, &scenario, &sim, &engine)?;
    let mut policy = crate::policies::build(&args.policy, &config)?;
    let mut machine = SimMachine::new(spec, &scenario, sim)?;
    let pace = machine.probe(TIME_LIMIT_S);
    let mut estimate = Estimate::default();
    estimate.add(&machine.spec().name, &scenario.name, pace, 1);
    args.budget.check(&estimate)?;
    let watch = args.budget.watch();
    let replace = crate::options::replace(args.force, rondpoint_safeio::OutputKind::Recording);
    let file =
        rondpoint_safeio::create_staged(&args.output, replace).context("creating the recording")?;
    let source = format!(
        "sim machine={} workload={} policy={} seed={}",
        args.machine, args.workload, args.policy, args.seed
    );
    let capabilities = machine.capabilities();
    let mut recorder = Recorder::new(
        file,
        &source,
        &Header {
            topology: machine.topology(),
            processes: &machine.processes(),
            capabilities: &capabilities,
            config: Some(&config),
        },
        Some(args.max_samples),
    )?;
    // A signal ends the simulation between epochs; what was recorded is kept (a second one
    // ends rondpoint at once, leaving its temporary file).
    let received = crate::signals::install()?;
    let engine = EngineConfig {
        time_limit_ns: Some((TIME_LIMIT_S * 1e9) as u64),
        stop: Some(rondpoint_engine::StopSignal {
            flag: std::sync::Arc::clone(&received.stop),
            signal: std::sync::Arc::clone(&received.signal),
            on_stop: rondpoint_engine::OnStop::End,
        }),
        ..engine
    };
    let mut failure: Option<anyhow::Error> = None;
    let mut epochs = 0u64;
    let expected_epochs = (pace.simulated_s * 1e9 / engine.epoch_ns as f64).ceil() as u64;
    rondpoint_engine::run(
        &mut machine,
        policy.as_mut(),
        &mut VirtualClock::default(),
        &engine,
        |r| {
            watch.tick();
            if failure.is_none() {
                let written = record_epoch(&mut recorder, r, &mut epochs, expected_epochs);
                failure = written.err();
            }
            if watch.spent().is_some() || failure.is_some() {
                received
                    .stop
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
        },
    )?;
    if let Some(e) = failure {
        return Err(e.context(format!("writing {}", args.output.display())));
    }
    recorder
        .finish()
        .map_err(anyhow::Error::from)
        .and_then(|staged| staged.commit().map_err(anyhow::Error::from))
        .with_context(|| format!("writing {}", args.output.display()))?;
    noteln!(
        "recorded {epochs} epochs ({:.1} simulated s) to {}",
        machine.now_ns() / 1e9,
        args.output.display()
    );
    if let Some(spent) = watch.spent() {
        return Err(spent.context("the recording holds the epochs before it"));
    }
    match received.pending() {
        Some(signal) => {
            noteln!(
                "rondpoint: stopped by signal {signal}; the recording holds the epochs before it"
            );
            Ok(ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The parameters the recording policy runs with, as `sim` runs it: those `given`, the profiles
/// of each program alone for a policy that takes them (N-MASS's), and the seed.
fn run_config(
    args: &RecordArgs,
    given: &rondpoint_policy_api::PolicyConfig,
    spec: &MachineSpec,
    scenario: &rondpoint_sim::scenario::Scenario,
    sim: &SimConfig,
    engine: &EngineConfig,
) -> Result<rondpoint_policy_api::PolicyConfig> {
    let registry = crate::policies::registry();
    let solo = if multiprogram::takes_profiles(registry.info(&args.policy)?) {
        noteln!("{} / {}: each program alone", spec.name, scenario.name);
        let solo = multiprogram::solo_runs(spec, scenario, sim, engine, true)
            .with_context(|| format!("running the programs of {} alone", scenario.name))?;
        Some(solo)
    } else {
        None
    };
    super::sim::plan::cell_config(spec, given, &args.policy, args.seed, solo.as_ref())
}

/// Writes one epoch, then checks the recording will fit on its disk at the bytes per epoch so
/// far over the `expected` epochs of the run.
fn record_epoch(
    recorder: &mut Recorder<rondpoint_safeio::Staged>,
    r: &rondpoint_engine::EpochReport<'_>,
    epochs: &mut u64,
    expected: u64,
) -> Result<()> {
    recorder.epoch(r)?;
    *epochs += 1;
    let written = recorder.output().written();
    let size = written / *epochs * expected;
    recorder
        .output()
        .check_room(Some(size.max(written)))
        .with_context(|| {
            format!(
                "{epochs} epochs written, about {expected} to come in all; keep fewer samples \
                 (--max-samples), record longer epochs (--epoch-ms) or write elsewhere"
            )
        })
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A recording made by `rondpoint record`.
    #[arg(value_name = "FILE")]
    input: PathBuf,
    /// The policy to run over the recorded observations.
    #[arg(long, short = 'p', default_value = "carrefour")]
    policy: String,
    #[command(flatten)]
    policy_options: PolicyOptions,
    /// Print every decision as JSON instead of a summary table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Serialize)]
struct ReplayReport<'a> {
    source: &'a str,
    policy: &'a str,
    start: Vec<Action>,
    epochs: Vec<record::ReplayedEpoch>,
}

pub fn run_replay(args: &ReplayArgs) -> Result<ExitCode> {
    let mut config = args.policy_options.config()?;
    let file = rondpoint_safeio::open_input(&args.input, rondpoint_safeio::InputKind::Recording)
        .context("opening the recording")?;
    let reading = || format!("reading {}", args.input.display());
    // Epoch by epoch: memory holds one, and no line may take more than the memory there is.
    let (recorded, reader) =
        record::Reader::open(BufReader::new(file), line_limit()).with_context(reading)?;
    // The recording run's parameters (its profiles, its seed) under those given here, so that
    // the recording policy decides as it did.
    if let Some(base) = &recorded.config {
        config.fill_from(base);
        crate::policies::registry()
            .check(&config)
            .with_context(|| format!("in the parameters recorded in {}", args.input.display()))?;
    }
    let mut policy = crate::policies::build(&args.policy, &config)?;
    let (mut replayer, start) = record::Replayer::start(policy.as_mut(), &recorded)?;
    let mut epochs = Vec::new();
    let mut recorded_actions = Vec::new();
    // Epochs where neither the recorded run nor the replayed policy acted: "the same" there
    // says nothing about another policy's decisions.
    let mut idle = 0;
    for epoch in reader {
        let epoch = epoch.with_context(reading)?;
        let replayed = replayer.epoch(&epoch);
        if replayed.actions.is_empty() && epoch.actions.is_empty() {
            idle += 1;
        }
        epochs.push(replayed);
        if !args.json {
            recorded_actions.push(summarise(&epoch.actions));
        }
    }
    if args.json {
        let report = ReplayReport {
            source: &recorded.source,
            policy: &args.policy,
            start,
            epochs,
        };
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} over {} epochs of [{}]",
        args.policy,
        epochs.len(),
        recorded.source
    );
    if !start.is_empty() {
        outln!("before the start: {}", summarise(&start));
    }
    let rows = epochs
        .iter()
        .zip(recorded_actions)
        .map(|(e, recorded)| {
            vec![
                e.epoch.to_string(),
                e.samples.to_string(),
                summarise(&e.actions),
                if e.same_as_recorded {
                    "same".into()
                } else {
                    recorded
                },
            ]
        })
        .collect();
    outln!(
        "{}",
        format::table(
            &["epoch", "samples", "decisions", "recorded run's"],
            &[true, true, false, false],
            rows
        )
    );
    let same = epochs.iter().filter(|e| e.same_as_recorded).count();
    outln!(
        "(the recording policy decides the same in an epoch when the recording holds every \
         sample of it)"
    );
    // The last line, read by scripts (`tail -1`): it starts "N of M epochs".
    outln!(
        "{same} of {} epochs decided as in the recorded run, {idle} with no action in either",
        epochs.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// "migrate 3 (1200 pages), interleave 1 (4 pages)".
/// The longest recording line `replay` parses: a parsed epoch takes about 7 times its text
/// (measured on a 563 MB line), so an eighth of the memory available now (from
/// /proc/meminfo), at least 64 MiB; 4 GiB, the largest recording, where that cannot be read.
pub(crate) fn line_limit() -> u64 {
    let available = rondpoint_safeio::read_system_text(std::path::Path::new("/proc/meminfo"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        });
    available.map_or(4 << 30, |kib| (kib.saturating_mul(1024) / 8).max(64 << 20))
}

fn summarise(actions: &[Action]) -> String {
    if actions.is_empty() {
        return "-".into();
    }
    let mut by: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for a in actions {
        let pages = match a {
            Action::MigratePages { range, .. }
            | Action::Interleave { range, .. }
            | Action::Replicate { range, .. } => range.count * range.page_size.base_pages(),
            Action::MoveNodePages { pages, .. } => *pages,
            _ => 0,
        };
        let e = by.entry(a.technique()).or_default();
        e.0 += 1;
        e.1 += pages;
    }
    by.iter()
        .map(|(t, (n, p))| {
            if *p > 0 {
                format!("{t} {n} ({p} pages)")
            } else {
                format!("{t} {n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
