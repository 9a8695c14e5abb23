//! `rondpoint daemon`: manage running processes until stopped; SIGHUP reloads the
//! configuration (`reload.rs`).

mod cgroups;
mod reload;

use crate::live::metrics::{self, Metrics};
use crate::live::state::{State, write_state};
use crate::live::{Live, LiveOptions, LiveRecording, ONE_NODE, RunReport, Unmanaged, drive};
use crate::logging::{self, LogLevel};
use crate::signals;
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_engine::Machine;
use rondpoint_engine::{Accounting, EpochReport, OnStop};
use rondpoint_linux::machine::{LinuxMachine, LiveConfig, Selection};
use rondpoint_linux::procfs::{ProcRoot, glob_match};
use rondpoint_linux::sys::RealSys;
use rondpoint_model::{OutcomeStatus, Pid, Topology};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

pub use cgroups::CgroupTotals;
use cgroups::Cgroups;
use reload::Reloader;

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
    /// Allow a selection that takes in every process of the machine: `--pid 1` (init and all
    /// its descendants), a `--comm` pattern with no letter (only `*` and `?`: names by length
    /// alone), or the root of a cgroup hierarchy. Without it they are refused, as a slip of the
    /// shell more often than a wish.
    #[arg(long)]
    all_processes: bool,
    #[command(flatten)]
    pub(crate) live: LiveOptions,
    /// The least severe log lines written on standard error: a start-up line, a line per
    /// epoch that did something or lost samples (`info`), every epoch (`debug`), warnings (a
    /// selection that matches nothing, samples lost). Under systemd, lines carry the journal's
    /// priorities.
    #[arg(long, value_enum, value_name = "LEVEL", default_value = "info")]
    log_level: LogLevel,
    /// Serve Prometheus / OpenMetrics metrics on ADDR at /metrics: a port alone (`9464`) is
    /// served on loopback only, `0.0.0.0:9464` on every interface (docs/metrics.md).
    #[arg(long, value_name = "ADDR", value_parser = metrics::parse_addr)]
    metrics: Option<std::net::SocketAddr>,
}

pub fn run(args: &DaemonArgs) -> Result<ExitCode> {
    check_selection(args)?;
    let opts = &args.live;
    let prepared = opts.prepare()?;
    if !prepared.topology.is_numa() {
        noteln!("rondpoint: {ONE_NODE}{}", opts.nothing_recorded());
        let notes: Vec<String> = prepared.note_unmet_needs().into_iter().collect();
        if opts.json {
            Unmanaged::new(opts, Vec::new(), None, Instant::now(), notes).print_json()?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let received = signals::install_reloading()?;
    logging::init(args.log_level);
    let Live {
        mut policy,
        topology,
        live,
        engine,
    } = prepared;
    let mut machine = select(args, topology, live)?;
    tracing::info!(
        "managing {} processes ({}) with {} at {} ms epochs{}",
        machine.managed().len(),
        describe_selection(args),
        opts.policy,
        engine.epoch_ns / 1_000_000,
        if opts.dry_run { ", dry run" } else { "" }
    );
    let mut sinks = Sinks::open(args, &mut machine)?;
    let mut reloader = Reloader::new(
        opts,
        received.clone(),
        machine.capabilities(),
        machine.topology().clone(),
    );
    let mut acct: Option<Accounting> = None;
    loop {
        let run = drive(
            &mut machine,
            policy.as_mut(),
            &engine,
            &received,
            OnStop::End,
            |r| sinks.epoch(r, &mut reloader),
        )?;
        sinks.ran(&run);
        match acct.as_mut() {
            Some(a) => a.absorb(run),
            None => acct = Some(run),
        }
        match reloader.next()? {
            Some(next) => policy = next,
            None => break,
        }
    }
    let acct = acct.unwrap_or_default();
    tracing::info!(
        "stopped after {} epochs: {} actions, {} pages placed; {} processes left running",
        acct.epochs,
        sinks.log.actions,
        sinks.log.pages,
        machine.managed().len()
    );
    let command = vec![format!(
        "daemon ({} processes at the end)",
        machine.managed().len()
    )];
    let exit = Some("left running (rondpoint stopped managing them)".into());
    let mut notes: Vec<String> = sinks.write_error.take().into_iter().collect();
    if reloader.reloads > 0 {
        notes.push(format!(
            "the configuration was reloaded {} time(s) (SIGHUP); the totals count every run",
            reloader.reloads
        ));
    }
    let saved = LiveRecording::end(sinks.recording.take(), &mut notes);
    RunReport::new(
        opts,
        command,
        exit,
        sinks.started,
        acct,
        &mut machine,
        notes,
    )
    .print(opts.json)?;
    if let Some(saved) = saved {
        noteln!("rondpoint: {saved}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Where each epoch goes: the recording, the state file, the log, the metrics; the epochs of
/// the runs after a reload numbered on from the earlier ones'.
struct Sinks<'a> {
    args: &'a DaemonArgs,
    recording: Option<LiveRecording>,
    state: State,
    topology: Topology,
    log: EpochLog,
    exported: Option<Metrics>,
    cgroups: Cgroups,
    started: Instant,
    /// Held while the daemon writes the state file.
    _state_lock: Option<crate::live::OutputLock>,
    write_error: Option<String>,
    /// Epochs and engine nanoseconds of the runs before this one.
    epochs_before: u64,
    ns_before: u64,
    last_ns: u64,
}

impl<'a> Sinks<'a> {
    /// Opens every output: a path that cannot be written stops the daemon before anything is
    /// managed.
    fn open(args: &'a DaemonArgs, machine: &mut LinuxMachine<RealSys>) -> Result<Self> {
        let log = EpochLog::new(machine.managed().is_empty(), describe_selection(args));
        let exported = match args.metrics {
            Some(addr) => {
                let m = Metrics::new(machine.topology(), machine.sample_totals());
                let bound = m.serve(addr)?;
                tracing::info!("serving metrics on http://{bound}/metrics");
                Some(m)
            }
            None => None,
        };
        if args.all_processes {
            noteln!(
                "rondpoint: --all-processes: managing {} processes now, and those the \
                 selection takes in later",
                machine.managed().len()
            );
        }
        let recording = args.live.recording("daemon", machine)?;
        let state = State::new("daemon", &args.live);
        // A state file that cannot be written (a device, a link, a directory, no rights) is
        // an error now, before anything is managed.
        let state_lock = match &args.live.state_file {
            Some(path) => {
                let lock = crate::live::OutputLock::take(path)?;
                write_state(path, &state, args.live.force).context("writing the state file")?;
                lock
            }
            None => None,
        };
        Ok(Self {
            args,
            recording,
            state,
            topology: machine.topology().clone(),
            log,
            exported,
            cgroups: Cgroups::new(&args.cgroups, ProcRoot::new("/proc")),
            started: Instant::now(),
            _state_lock: state_lock,
            write_error: None,
            epochs_before: 0,
            ns_before: 0,
            last_ns: 0,
        })
    }

    fn epoch(&mut self, r: &EpochReport<'_>, reloader: &mut Reloader<'_>) {
        let r = EpochReport {
            epoch: r.epoch + self.epochs_before,
            now_ns: r.now_ns + self.ns_before,
            ..*r
        };
        self.last_ns = r.now_ns;
        if let Some(recording) = self.recording.as_mut() {
            recording.epoch(&r);
        }
        self.cgroups.epoch(&r);
        self.state.update(&self.topology, &r, self.started);
        self.state.cgroups = self.cgroups.totals().to_vec();
        self.state.top.cgroups = self.cgroups.views();
        self.log.epoch(&r);
        if let Some(m) = self.exported.as_mut() {
            m.epoch(&r);
            m.cgroups(self.cgroups.totals());
        }
        if let Some(path) = &self.args.live.state_file {
            if let Err(e) = write_state(path, &self.state, self.args.live.force) {
                self.write_error
                    .get_or_insert(format!("cannot write {}: {e}", path.display()));
            }
        }
        reloader.epoch(&r.observation.processes);
    }

    /// After a run: the next one's epochs follow on.
    fn ran(&mut self, run: &Accounting) {
        self.epochs_before += run.epochs;
        self.ns_before = self.last_ns;
    }
}

/// The log's view of the epochs: a line for each that did something (`info`) or for every one
/// (`debug`), and a warning each time the selection goes from some processes to none.
struct EpochLog {
    empty: bool,
    selection: String,
    actions: u64,
    pages: u64,
}

impl EpochLog {
    /// Warns at once when the selection matches nothing at the start.
    fn new(empty: bool, selection: String) -> Self {
        if empty {
            tracing::warn!(
                "the selection ({selection}) matches no process now; it is looked for again \
                 every epoch"
            );
        }
        Self {
            empty,
            selection,
            actions: 0,
            pages: 0,
        }
    }

    fn epoch(&mut self, r: &EpochReport<'_>) {
        let managed = r.observation.processes.len();
        if managed == 0 && !self.empty {
            tracing::warn!(
                "epoch {}: the selection ({}) matches no process any more; it is looked for \
                 again every epoch",
                r.epoch,
                self.selection
            );
        } else if managed > 0 && self.empty {
            tracing::info!(
                "epoch {}: the selection matches {managed} processes",
                r.epoch
            );
        }
        self.empty = managed == 0;
        let pages: u64 = r.outcomes.iter().map(|o| o.pages_done).sum();
        let failed = r
            .outcomes
            .iter()
            .filter(|o| o.status == OutcomeStatus::Failed)
            .count();
        self.actions += r.actions.len() as u64;
        self.pages += pages;
        let mut by: BTreeMap<&str, usize> = BTreeMap::new();
        for a in r.actions {
            *by.entry(a.technique()).or_default() += 1;
        }
        let by: Vec<String> = by.iter().map(|(t, n)| format!("{n} {t}")).collect();
        let line = format!(
            "epoch {}: {managed} processes, {} samples, {} actions{}, {pages} pages placed{}",
            r.epoch,
            r.observation.samples.len(),
            r.actions.len(),
            if by.is_empty() {
                String::new()
            } else {
                format!(" ({})", by.join(", "))
            },
            if failed > 0 {
                format!(", {failed} actions failed")
            } else {
                String::new()
            }
        );
        if r.actions.is_empty() {
            tracing::debug!("{line}");
        } else {
            tracing::info!("{line}");
        }
    }
}

/// The selection as the command line gave it, for the log.
fn describe_selection(args: &DaemonArgs) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(args.pids.iter().map(|p| format!("--pid {p}")));
    parts.extend(args.comm.iter().map(|c| format!("--comm '{c}'")));
    parts.extend(
        args.cgroups
            .iter()
            .map(|d| format!("--cgroup {}", d.display())),
    );
    parts.join(" ")
}

/// Refuses, before anything starts: an empty selection, a pid that is not a running process,
/// an empty name pattern, a selection of the whole machine without `--all-processes`, and
/// cgroup directories that are not cgroups.
fn check_selection(args: &DaemonArgs) -> Result<()> {
    if args.pids.is_empty() && args.comm.is_empty() && args.cgroups.is_empty() {
        bad_input!("say which processes to manage: --pid, --comm or --cgroup");
    }
    let proc = ProcRoot::new("/proc");
    for &pid in &args.pids {
        crate::options::check_process(pid)?;
        if pid == 1 && !args.all_processes {
            bad_input!(
                "--pid 1 selects init and every process it started, that is the whole \
                 machine; add --all-processes if that is what you want"
            );
        }
    }
    for pattern in &args.comm {
        if pattern.is_empty() {
            bad_input!("--comm needs a command name or a pattern, not an empty string");
        }
        if matches_by_length_only(pattern) && !args.all_processes {
            let (matched, all) = count_matching(&proc, |comm| glob_match(pattern, comm));
            bad_input!(
                "--comm '{pattern}' has no letter: it matches command names by their length \
                 only, {matched} of the machine's {all} processes now; add --all-processes if \
                 that is what you want"
            );
        }
    }
    for dir in &args.cgroups {
        crate::options::check_cgroup_v2(dir)?;
        // Every cgroup v2 directory but the root has a cgroup.type.
        if !dir.join("cgroup.type").is_file() && !args.all_processes {
            bad_input!(
                "{} is the root of a cgroup hierarchy, which holds every process not placed \
                 elsewhere; add --all-processes if that is what you want",
                dir.display()
            );
        }
    }
    Ok(())
}

/// Whether a `--comm` glob has no literal character: made of `*` and `?` only, it selects
/// command names by their length alone (`*`, `??*`: every process of the machine, or nearly).
fn matches_by_length_only(pattern: &str) -> bool {
    pattern.chars().all(|c| c == '*' || c == '?')
}

/// How many of the machine's processes (kernel threads left out) `select` takes, and of how
/// many: what a refusal says.
fn count_matching(proc: &ProcRoot, select: impl Fn(&str) -> bool) -> (usize, usize) {
    let (mut matched, mut all) = (0, 0);
    for pid in proc.pids().unwrap_or_default() {
        let user = proc
            .stat(pid)
            .ok()
            .flatten()
            .is_some_and(|s| !s.is_kernel_thread());
        // Matched on the `comm` file, as the selection itself is (`find_by_comm`).
        if let (true, Ok(Some(comm))) = (user, proc.comm(pid)) {
            all += 1;
            matched += usize::from(select(&comm));
        }
    }
    (matched, all)
}

/// The machine managing the processes selected; an error when only `--pid` was given and none
/// of them runs (a `--comm` or `--cgroup` may match processes started later).
fn select(
    args: &DaemonArgs,
    topology: Topology,
    live: LiveConfig,
) -> Result<LinuxMachine<RealSys>> {
    let selection = Selection {
        pids: args.pids.iter().map(|&p| Pid(p)).collect(),
        comm: args.comm.clone(),
        cgroups: args.cgroups.clone(),
    };
    let machine = LinuxMachine::to_select(RealSys::new(), topology, live, selection);
    let stats = machine.stats();
    if let Some(e) = &stats.lock_error {
        anyhow::bail!("cannot take the per-process locks (one rondpoint per process): {e}");
    }
    if machine.managed().is_empty() && args.comm.is_empty() && args.cgroups.is_empty() {
        if let Some((pid, holder)) = stats.managed_elsewhere.first() {
            let by = holder.map_or("another rondpoint".into(), |h| format!("rondpoint {h}"));
            bad_input!("process {pid} is already managed by {by}: one rondpoint per process");
        }
        bad_input!(
            "no process to manage: {} not running",
            args.pids
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(machine)
}

#[cfg(test)]
mod tests {
    use super::matches_by_length_only;

    #[test]
    fn patterns_without_a_letter_are_recognised() {
        for p in [
            "*", "**", "?*", "*?*", "??*", "*??", "?*?", "???*", "*?*?*", "?",
        ] {
            assert!(matches_by_length_only(p), "{p}");
        }
        for p in ["a*", "*x", "mgen", "[a]*", "?a*"] {
            assert!(!matches_by_length_only(p), "{p}");
        }
    }
}
