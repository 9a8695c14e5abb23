//! Options more than one subcommand takes, and what they build.

use anyhow::{Context, Result, bail};
use clap::Args;
use rondpoint_engine::{Accounting, DryRun, EngineConfig, EpochReport, RateLimits, WallClock};
use rondpoint_linux::machine::{LinuxMachine, LiveConfig};
use rondpoint_linux::sys::RealSys;
use rondpoint_model::Topology;
use rondpoint_policy::{Policy, PolicyConfig};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::commands::record::{LiveRecording, live_source};
use crate::signals::Signalled;

/// `--config` and `--techniques`: the parameters of every policy a command builds.
#[derive(Debug, Args)]
pub struct PolicyOptions {
    /// Policy parameters: a TOML file with one table per policy ([carrefour], [autonuma], ...);
    /// every parameter and its default is documented in docs/policies.md.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Carrefour's mechanisms to enable, comma-separated: replication, interleaving,
    /// co-location (the ablation of the Carrefour paper's Table 4). Default: all three.
    #[arg(long, value_name = "T[,T...]", value_delimiter = ',')]
    techniques: Vec<String>,
}

impl PolicyOptions {
    /// The configuration file, checked, with `--techniques` applied on top.
    pub fn config(&self) -> Result<PolicyConfig> {
        let mut config = match &self.config {
            Some(path) => {
                let context = || format!("in policy configuration {}", path.display());
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading policy configuration {}", path.display()))?;
                let config = PolicyConfig::from_toml(&text).with_context(context)?;
                config.check().with_context(context)?;
                config
            }
            None => PolicyConfig::default(),
        };
        if !self.techniques.is_empty() {
            const VALID: [&str; 3] = ["replication", "interleaving", "co-location"];
            if let Some(t) = self
                .techniques
                .iter()
                .find(|t| !VALID.contains(&t.as_str()))
            {
                bail!(
                    "unknown technique '{t}'; valid techniques: {}",
                    VALID.join(", ")
                );
            }
            let list = self.techniques.iter().cloned().map(toml::Value::String);
            config.set(
                "carrefour",
                "techniques",
                toml::Value::Array(list.collect()),
            );
        }
        Ok(config)
    }
}

/// What `rondpoint run` and `rondpoint daemon` share: the policy, its limits and the machine.
#[derive(Debug, Args)]
pub struct LiveOptions {
    /// The placement policy (see `rondpoint sim --list`; parameters in docs/policies.md).
    #[arg(long, short = 'p', default_value = "carrefour")]
    pub policy: String,
    #[command(flatten)]
    pub policy_options: PolicyOptions,
    /// Observe and decide, but change nothing: actions are logged and reported, not applied.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the end report as JSON on stdout (a managed program's own output is left alone).
    #[arg(long)]
    pub json: bool,
    /// Epoch length (milliseconds).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub epoch_ms: u64,
    /// Most pages the policy may move per epoch.
    #[arg(long, value_name = "PAGES", default_value_t = 65_536)]
    pub max_pages_per_epoch: u64,
    /// Most megabytes the policy may move per epoch.
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
}

impl LiveOptions {
    /// The `--record` recording of a live `what` ("daemon", "run 'CMD'"), created now so that
    /// a path that cannot be written stops the run before anything is managed.
    pub fn recording(&self, what: &str, topology: &Topology) -> Result<Option<LiveRecording>> {
        self.record
            .as_deref()
            .map(|path| {
                let source = live_source(what, &self.policy);
                LiveRecording::create(path, source, topology, self.record_max_samples.0)
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
        if self.epoch_ms == 0 {
            bail!("--epoch-ms must be at least 1");
        }
        let policy = rondpoint_policy::build(&self.policy, &self.policy_options.config()?)?;
        let topology = rondpoint_linux::discover(&self.sysfs_root)
            .context("reading the NUMA topology")?
            .topology;
        Ok(Live {
            policy,
            topology,
            live: LiveConfig {
                sysfs_root: self.sysfs_root.clone(),
                ..LiveConfig::default()
            },
            engine: EngineConfig {
                epoch_ns: self.epoch_ms.saturating_mul(1_000_000),
                time_limit_ns: None,
                limits: RateLimits {
                    max_pages_per_epoch: Some(self.max_pages_per_epoch),
                    max_bytes_per_epoch: Some(self.max_mb_per_epoch.saturating_mul(1 << 20)),
                },
            },
        })
    }
}

/// Runs the engine on the live machine until it finishes (or a signal ends it), through a
/// [`DryRun`] when `dry_run`. `on_stop` is called once when SIGINT or SIGTERM arrives; with
/// `finish_on_stop` the run then ends.
#[allow(clippy::too_many_arguments)]
pub fn drive(
    machine: LinuxMachine<RealSys>,
    dry_run: bool,
    stop: Arc<AtomicBool>,
    mut on_stop: impl FnMut(&mut LinuxMachine<RealSys>),
    finish_on_stop: bool,
    policy: &mut dyn Policy,
    engine: &EngineConfig,
    on_epoch: impl FnMut(&EpochReport<'_>),
) -> Result<(Accounting, LinuxMachine<RealSys>)> {
    let mut clock = WallClock::new();
    if dry_run {
        let forward = move |m: &mut DryRun<LinuxMachine<RealSys>>| on_stop(m.inner_mut());
        let mut m = Signalled::new(DryRun::new(machine), stop, forward, finish_on_stop);
        let acct = rondpoint_engine::run(&mut m, policy, &mut clock, engine, on_epoch)?;
        Ok((acct, m.inner.into_inner()))
    } else {
        let mut m = Signalled::new(machine, stop, on_stop, finish_on_stop);
        let acct = rondpoint_engine::run(&mut m, policy, &mut clock, engine, on_epoch)?;
        Ok((acct, m.inner))
    }
}
