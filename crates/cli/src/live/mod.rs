//! What `rondpoint run` and `rondpoint daemon` share: their options, what they build from
//! them before anything is touched, the engine run on the live machine, its recording and its
//! end report.

pub mod metrics;
mod numactl;
mod recording;
mod report;
pub mod state;

pub use numactl::NumactlFlags;
pub use recording::LiveRecording;
pub use report::{ONE_NODE, RunReport, Unmanaged};

use crate::options::PolicyOptions;
use crate::signals::Received;
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_engine::{
    Accounting, EngineConfig, EpochReport, Machine, OnStop, StopSignal, WallClock,
};
use rondpoint_linux::machine::{LinuxMachine, LiveConfig};
use rondpoint_linux::sys::RealSys;
use rondpoint_model::{Capabilities, Topology};
use rondpoint_policy_api::Policy;
use std::path::PathBuf;
use std::sync::Arc;

/// What `rondpoint run` and `rondpoint daemon` share: the policy, its limits and the machine.
#[derive(Debug, Args)]
pub struct LiveOptions {
    /// The placement policy (`rondpoint list policies`; parameters in docs/policies.md). The
    /// default, `auto`, composes Carrefour, usage-aware, N-MASS and OAAS, each where it applies.
    #[arg(long, short = 'p', default_value = "auto")]
    pub policy: String,
    #[command(flatten)]
    pub policy_options: PolicyOptions,
    /// Observe and decide, but change nothing: actions are logged and reported, not applied.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the end report as JSON on stdout (a managed program's own output is left alone).
    #[arg(long)]
    pub json: bool,
    /// Epoch length (milliseconds, 1 to 3,600,000).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = crate::options::epoch_ms())]
    pub epoch_ms: u64,
    /// Most pages the policy may move per epoch.
    #[arg(long, value_name = "PAGES", default_value_t = 65_536)]
    pub max_pages_per_epoch: u64,
    /// Most megabytes (MiB) the policy may move per epoch.
    #[arg(long, value_name = "MB", default_value_t = 512)]
    pub max_mb_per_epoch: u64,
    /// Read the topology from DIR instead of /sys.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sysfs_root: PathBuf,
    /// Save every epoch's observation, and the policy's actions with their outcomes, to FILE
    /// (JSON lines, docs/record-format.md), for `rondpoint replay` to run any policy over
    /// offline. Written out after each epoch.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// With --record: most samples kept per epoch in the file (spread evenly over the epoch's),
    /// or `all`. A sample takes about 200 bytes of the file. A policy replayed over thinned
    /// samples can decide differently from the live one.
    #[arg(
        long,
        value_name = "N|all",
        default_value = "20000",
        value_parser = parse_max_samples,
        requires = "record"
    )]
    pub record_max_samples: MaxSamples,
    /// Write the state here every epoch (JSON, replaced atomically; docs/json/daemon.md), for
    /// `rondpoint top --state FILE` to watch.
    #[arg(long, value_name = "FILE")]
    pub state_file: Option<PathBuf>,
    /// Replace an output file (--record, --state-file) even when it is not a rondpoint output
    /// of the same kind; without it such a file is left alone and the command refused.
    #[arg(long)]
    pub force: bool,
}

impl LiveOptions {
    /// The `--record` recording of a live `what` ("daemon", "run 'CMD'") on `machine`,
    /// created now so that a path that cannot be written stops the run before anything is
    /// managed.
    pub fn recording(
        &self,
        what: &str,
        machine: &mut LinuxMachine<RealSys>,
    ) -> Result<Option<LiveRecording>> {
        self.record
            .as_deref()
            .map(|path| {
                let lock = OutputLock::take(path)?;
                let run = recording::RecordedRun {
                    source: recording::live_source(what, &self.policy),
                    topology: machine.topology().clone(),
                    capabilities: machine.capabilities(),
                    config: self.policy_options.config()?,
                };
                LiveRecording::create(
                    path,
                    run,
                    self.record_max_samples.0,
                    crate::options::replace(self.force, rondpoint_safeio::OutputKind::Recording),
                    lock,
                )
            })
            .transpose()
    }

    /// What a run that manages nothing says of its `--record`.
    pub fn nothing_recorded(&self) -> &'static str {
        if self.record.is_some() {
            " (nothing recorded)"
        } else {
            ""
        }
    }
}

/// Where every rondpoint of this machine keeps its per-process locks: `/run/rondpoint` for
/// root (and any user who may write there), else the user's runtime directory, else the
/// temporary directory; rondpoints of one user (and root's) exclude each other.
fn lock_dir() -> PathBuf {
    let run = PathBuf::from("/run/rondpoint");
    if std::fs::create_dir_all(&run).is_ok() && can_create_in(&run) {
        return run;
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("rondpoint"),
        _ => std::env::temp_dir().join(format!("rondpoint-{}", user_id())),
    }
}

/// The lock of an output a live rondpoint writes while it runs (a daemon's state file, a
/// `--record` recording): held from before the first write to the end, so that a second
/// rondpoint given the same file is refused instead of the two overwriting each other. Its
/// lock file goes when it is dropped.
#[derive(Debug)]
pub struct OutputLock {
    path: PathBuf,
    _file: std::fs::File,
}

impl OutputLock {
    /// Takes the lock of `output`, or says which rondpoint writes it. `None` when the
    /// output's directory cannot be read: nothing can be written there either, and the write
    /// that follows says why.
    pub fn take(output: &std::path::Path) -> Result<Option<Self>> {
        use rondpoint_safeio::lock::{Lock, output_lock_path, try_lock};
        let dir = lock_dir();
        let Ok(path) = output_lock_path(&dir, output) else {
            return Ok(None);
        };
        let lock = std::fs::create_dir_all(&dir)
            .and_then(|()| try_lock(&path))
            .with_context(|| {
                format!(
                    "locking {} in {} (so that no other rondpoint writes it)",
                    output.display(),
                    dir.display()
                )
            })?;
        match lock {
            Lock::Ours(file) => Ok(Some(Self { path, _file: file })),
            Lock::Theirs(holder) => {
                let who = holder.map_or_else(String::new, |p| format!(" (pid {p})"));
                bad_input!(
                    "{}: another rondpoint{who} is writing it; give another file",
                    output.display()
                )
            }
        }
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        // Removed while still held: a rondpoint that opened it meanwhile finds the name gone
        // and tries again (rondpoint_safeio::lock).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether this process may create files in `dir` (tried, not guessed from mode bits).
fn can_create_in(dir: &std::path::Path) -> bool {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .is_ok();
    if made {
        let _ = std::fs::remove_file(&probe);
    }
    made
}

/// This process's user id (for a per-user directory name).
fn user_id() -> u32 {
    std::fs::metadata("/proc/self").map_or(0, |m| std::os::unix::fs::MetadataExt::uid(&m))
}

/// `--record-max-samples`: a number, or every sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxSamples(pub Option<usize>);

fn parse_max_samples(s: &str) -> Result<MaxSamples, String> {
    if s == "all" {
        return Ok(MaxSamples(None));
    }
    s.parse()
        .map(|n| MaxSamples(Some(n)))
        .map_err(|_| format!("'{s}' is neither a number of samples nor 'all'"))
}

/// Everything built from [`LiveOptions`] before a live run starts.
pub struct Live {
    pub policy: Box<dyn Policy>,
    pub topology: Topology,
    pub live: LiveConfig,
    pub engine: EngineConfig,
}

impl LiveOptions {
    /// Checks the options and builds the policy and the engine's configuration, and reads the
    /// topology: all that can be wrong is found before any process is touched.
    pub fn prepare(&self) -> Result<Live> {
        let config = self.policy_options.config()?;
        if self.policy == "auto" {
            for lane in rondpoint_policy::auto::LANE_POLICIES {
                if config.tables().contains_key(lane) {
                    noteln!(
                        "rondpoint: note: [{lane}] is not read by `auto` (the default policy): \
                         its lane reads [auto.{lane}]; or run --policy {lane}"
                    );
                }
            }
        }
        let policy = crate::policies::build(&self.policy, &config)?;
        let topology = crate::options::discover(&self.sysfs_root)?.topology;
        Ok(Live {
            policy,
            topology,
            live: LiveConfig {
                sysfs_root: self.sysfs_root.clone(),
                lock_dir: Some(lock_dir()),
                ..LiveConfig::default()
            },
            engine: EngineConfig {
                epoch_ns: self.epoch_ms.saturating_mul(1_000_000),
                limits: crate::options::rate_limits(
                    Some(self.max_pages_per_epoch),
                    Some(self.max_mb_per_epoch),
                ),
                dry_run: self.dry_run,
                ..EngineConfig::default()
            },
        })
    }
}

impl Live {
    /// Says, on a one-node machine (where a run or daemon manages nothing, and so checks
    /// nothing against the machine), what the policy would lack here: the refusal a machine of
    /// several nodes with this one's capabilities would give. Silent when its needs are met.
    pub fn note_unmet_needs(&self) -> Option<String> {
        let capabilities = launch_capabilities(&self.topology, &self.live);
        let unmet = capabilities
            .check(self.policy.name(), &self.policy.needs())
            .err()?;
        let note = format!("even with more nodes, {unmet}");
        noteln!("rondpoint: {note}");
        Some(note)
    }
}

/// What a machine that launches its program offers the policies here (`rondpoint run`'s),
/// probed without launching anything.
pub fn launch_capabilities(topology: &Topology, config: &LiveConfig) -> Capabilities {
    LinuxMachine::to_launch(RealSys::new(), topology.clone(), config.clone(), Vec::new())
        .capabilities()
}

/// Runs the engine on the live machine until it finishes or a signal sets `stop`: with
/// `on_stop` [`OnStop::Interrupt`] the launched program is asked to terminate and managed
/// until it does; with [`OnStop::End`] the run ends at once.
pub fn drive(
    machine: &mut LinuxMachine<RealSys>,
    policy: &mut dyn Policy,
    engine: &EngineConfig,
    stop: &Received,
    on_stop: OnStop,
    on_epoch: impl FnMut(&EpochReport<'_>),
) -> Result<Accounting> {
    let engine = EngineConfig {
        stop: Some(StopSignal {
            flag: Arc::clone(&stop.wake),
            signal: Arc::clone(&stop.signal),
            on_stop,
        }),
        ..engine.clone()
    };
    let mut clock = WallClock::new();
    Ok(rondpoint_engine::run(
        machine, policy, &mut clock, &engine, on_epoch,
    )?)
}
