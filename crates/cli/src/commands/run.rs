//! `rondpoint run`: launch a program under management and report, like `perf stat`.

use crate::live::state::{State, write_state};
use crate::live::{
    LiveOptions, LiveRecording, NumactlFlags, ONE_NODE, RunReport, Unmanaged, drive,
};
use crate::signals;
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_engine::{Machine, OnStop};
use rondpoint_linux::machine::LinuxMachine;
use rondpoint_linux::sys::{ExitStatus, RealSys, SpawnSetup, Sys};
use std::ffi::OsString;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub(crate) live: LiveOptions,
    #[command(flatten)]
    numactl: NumactlFlags,
    /// Start the program in this cgroup v2 directory (for example one made with `mkdir
    /// /sys/fs/cgroup/batch/run1`): it joins the cgroup before exec, so that the cgroup's
    /// limits and accounting apply from its first instruction, and a daemon watching the
    /// cgroup sees it. The directory must exist, take processes (a leaf, not threaded), and
    /// its cgroup.procs be writable by this user.
    #[arg(long, value_name = "DIR")]
    cgroup: Option<std::path::PathBuf>,
    /// The program to run and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    command: Vec<OsString>,
}

fn exit_code(status: Option<ExitStatus>) -> ExitCode {
    match status {
        Some(ExitStatus::Code(c)) => ExitCode::from(u8::try_from(c & 0xff).unwrap_or(1)),
        Some(ExitStatus::Signal(s)) => ExitCode::from(u8::try_from((128 + s) & 0xff).unwrap_or(1)),
        None => ExitCode::FAILURE,
    }
}

fn describe(status: Option<ExitStatus>) -> Option<String> {
    status.map(|s| match s {
        ExitStatus::Code(c) => format!("exit code {c}"),
        ExitStatus::Signal(s) => format!("killed by signal {s}"),
    })
}

/// Runs the command unchanged (a one-node machine has nothing to manage), passing on the
/// first SIGINT, SIGTERM, SIGHUP or SIGQUIT to it (a second ends rondpoint at once), and
/// gives its status.
fn run_plain(argv: &[OsString], setup: &SpawnSetup) -> Result<ExitStatus> {
    let received = signals::install()?;
    let mut sys = RealSys::new();
    let pid = sys
        .spawn(argv, setup)
        .map_err(|errno| crate::status::NotStarted {
            program: argv[0].to_string_lossy().into_owned(),
            errno,
        })?;
    let mut passed_on = false;
    loop {
        if let Some(status) = sys
            .try_wait(pid)
            .map_err(|e| anyhow::anyhow!("waiting: {e}"))?
        {
            return Ok(status);
        }
        if let (false, Some(signal)) = (passed_on, received.pending()) {
            passed_on = true;
            // A child that has just exited is reaped at the next turn.
            let _ = sys.kill(pid, signal);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn run(args: &RunArgs) -> Result<ExitCode> {
    // Everything that can be wrong with the arguments is checked before the program starts.
    let opts = &args.live;
    let mut prepared = opts.prepare()?;
    let mut setup = args.numactl.setup(&prepared.topology, &opts.sysfs_root)?;
    if let Some(dir) = &args.cgroup {
        crate::options::check_cgroup_to_join(dir)?;
        setup.cgroup = Some(dir.clone());
    }
    let command: Vec<String> = args
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if !prepared.topology.is_numa() {
        noteln!(
            "rondpoint: {ONE_NODE}; running {} {}{}",
            args.command[0].to_string_lossy(),
            if args.numactl.any() {
                "with numactl's flags only"
            } else {
                "unchanged"
            },
            opts.nothing_recorded()
        );
        let notes: Vec<String> = prepared.note_unmet_needs().into_iter().collect();
        let started = Instant::now();
        let status = run_plain(&args.command, &setup)?;
        if opts.json {
            Unmanaged::new(opts, command, describe(Some(status)), started, notes).print_json()?;
        }
        return Ok(exit_code(Some(status)));
    }

    if args.numactl.any() && opts.policy != "first-touch" {
        noteln!(
            "rondpoint: the program starts as numactl's flags say; {} may still move its pages \
             and threads later (--policy first-touch leaves them where numactl would)",
            opts.policy
        );
    }
    let mut machine = LinuxMachine::to_launch(
        RealSys::new(),
        prepared.topology,
        prepared.live,
        args.command.clone(),
    )
    .with_launch_setup(setup);
    let mut recording = opts.recording(&format!("run '{}'", command.join(" ")), &mut machine)?;
    let mut state = StateOutput::open(opts, machine.topology().clone())?;
    let stop = signals::install()?;
    let started = Instant::now();
    // No status line while the program runs: it writes to the same terminal, and a line of
    // rondpoint's would land in the middle of its output. The report comes at the end; `top
    // --state` shows the run as it goes when --state-file is given.
    let on_epoch = |r: &rondpoint_engine::EpochReport<'_>| {
        if let Some(recording) = recording.as_mut() {
            recording.epoch(r);
        }
        if let Some(s) = state.as_mut() {
            s.epoch(r, started);
        }
    };
    // SIGINT/SIGTERM/SIGHUP: pass SIGTERM on to the program once (Machine::interrupt), and
    // keep managing until it ends, so that the report is complete and the exit status is the
    // program's.
    let acct = drive(
        &mut machine,
        prepared.policy.as_mut(),
        &prepared.engine,
        &stop,
        OnStop::Interrupt,
        on_epoch,
    )?;
    let mut notes: Vec<String> = state.and_then(|s| s.error).into_iter().collect();
    let saved = LiveRecording::end(recording, &mut notes);
    let exit = describe(machine.exit_status());
    RunReport::new(opts, command, exit, started, acct, &mut machine, notes).print(opts.json)?;
    if let Some(saved) = saved {
        noteln!("rondpoint: {saved}");
    }
    Ok(exit_code(machine.exit_status()))
}

/// `--state-file`: the state rewritten every epoch for `rondpoint top --state` (as the
/// daemon's), its lock held while the run lasts.
struct StateOutput {
    path: std::path::PathBuf,
    force: bool,
    state: State,
    topology: rondpoint_model::Topology,
    _lock: Option<crate::live::OutputLock>,
    /// The first write that failed, for the report's notes.
    error: Option<String>,
}

impl StateOutput {
    /// Takes the file and writes the state before the program starts: a file that cannot be
    /// written stops the run before anything is launched.
    fn open(opts: &LiveOptions, topology: rondpoint_model::Topology) -> Result<Option<Self>> {
        let Some(path) = &opts.state_file else {
            return Ok(None);
        };
        let lock = crate::live::OutputLock::take(path)?;
        let state = State::new("run", opts);
        write_state(path, &state, opts.force).context("writing the state file")?;
        Ok(Some(Self {
            path: path.clone(),
            force: opts.force,
            state,
            topology,
            _lock: lock,
            error: None,
        }))
    }

    fn epoch(&mut self, r: &rondpoint_engine::EpochReport<'_>, started: Instant) {
        self.state.update(&self.topology, r, started);
        if let Err(e) = write_state(&self.path, &self.state, self.force) {
            self.error
                .get_or_insert(format!("cannot write {}: {e}", self.path.display()));
        }
    }
}
