//! Options several subcommands take.

use anyhow::{Context, Result};
use clap::Args;
use rondpoint_policy_api::PolicyConfig;
use rondpoint_safeio::{InputKind, read_text};
use std::path::{Path, PathBuf};

/// `--epoch-ms`: a millisecond to an hour (a longer epoch never decides; the product in
/// nanoseconds stays far inside 64 bits).
pub fn epoch_ms() -> clap::builder::RangedU64ValueParser<u64> {
    clap::builder::RangedU64ValueParser::new().range(1..=3_600_000)
}

/// Most simulated runs one command may ask for (seeds x policies x workloads): a day of this
/// machine's time at a few seconds a run.
pub const MAX_RUNS: u64 = 10_000;

/// The per-epoch limits of `--max-pages-per-epoch` and `--max-mb-per-epoch` (MB: 2^20 bytes,
/// for `sim`, `run` and `daemon` alike).
pub fn rate_limits(pages: Option<u64>, mb: Option<u64>) -> rondpoint_engine::RateLimits {
    rondpoint_engine::RateLimits {
        max_pages_per_epoch: pages,
        max_bytes_per_epoch: mb.map(|mb| mb.saturating_mul(1 << 20)),
    }
}

/// What an output may replace: with `--force` any regular file, otherwise only an output of
/// the same kind (a state file never overwrites a recording, nor /etc/passwd).
pub fn replace(force: bool, kind: rondpoint_safeio::OutputKind) -> rondpoint_safeio::Replace {
    if force {
        rondpoint_safeio::Replace::Any
    } else {
        rondpoint_safeio::Replace::Ours(kind)
    }
}

/// `--config` and `--set`: the parameters of every policy a command builds.
#[derive(Debug, Args)]
pub struct PolicyOptions {
    /// Policy parameters: a TOML file with one table per policy (`[carrefour]`, `[autonuma]`, ...);
    /// `rondpoint list policies --params` prints every parameter with its default, and
    /// docs/policies.md explains them.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Set one policy parameter, over the --config file (repeatable), e.g.
    /// `--set carrefour.techniques=interleaving,co-location` (the ablation of the Carrefour
    /// paper's Table 4) or `--set autonuma.scan_size_mb=64`. VALUE is a TOML value, or a
    /// comma-separated list.
    #[arg(long = "set", value_name = "POLICY.KEY=VALUE")]
    set: Vec<String>,
}

impl PolicyOptions {
    /// The configuration file with the `--set` values on top, checked against the policies.
    pub fn config(&self) -> Result<PolicyConfig> {
        let registry = crate::policies::registry();
        let mut config = match &self.config {
            Some(path) => {
                let text = read_text(path, InputKind::PolicyConfig)
                    .context("reading the policy configuration")?;
                PolicyConfig::from_toml(&text)
                    .with_context(|| format!("in policy configuration {}", path.display()))?
            }
            None => PolicyConfig::default(),
        };
        for arg in &self.set {
            registry.set_arg(&mut config, arg)?;
        }
        // Policies do no I/O: the files their parameters name are read here.
        registry.resolve_files(&mut config, |policy, key, path| {
            read_text(path, InputKind::PolicyFile)
                .with_context(|| format!("[{policy}] configuration: {key}"))
        })?;
        registry
            .check(&config)
            .with_context(|| format!("in {}", self.describe()))?;
        Ok(config)
    }

    /// Where the configuration comes from: "policy configuration FILE [with --set ...]",
    /// "--set ...", or the defaults.
    pub fn describe(&self) -> String {
        let set = self.set.join(" --set ");
        match &self.config {
            Some(path) if self.set.is_empty() => {
                format!("policy configuration {}", path.display())
            }
            Some(path) => format!("policy configuration {} with --set {set}", path.display()),
            None if self.set.is_empty() => "the policies' defaults (no --config)".into(),
            None => format!("--set {set}"),
        }
    }
}

/// The NUMA topology under `root` (sysfs, or a copy of it given with `--sysfs-root`): a tree
/// the user named that cannot be read is the user's input (exit status 2); `/sys` itself
/// failing is the machine's (1).
pub fn discover(root: &Path) -> Result<rondpoint_linux::Discovery> {
    let found = rondpoint_linux::discover(root).context("reading the NUMA topology");
    if root == Path::new("/sys") {
        found
    } else {
        crate::status::Input::input(found)
    }
}

/// A cgroup v2 directory the user named (`daemon --cgroup`, `run --cgroup`): refused, as the
/// user's input, when it is not a cgroup or a cgroup v1 one.
pub fn check_cgroup_v2(dir: &Path) -> Result<()> {
    if !dir.join("cgroup.procs").is_file() {
        bad_input!(
            "{} is not a cgroup v2 directory (no cgroup.procs)",
            dir.display()
        );
    }
    if !dir.join("cgroup.controllers").is_file() {
        bad_input!(
            "{} is a cgroup v1 directory (no cgroup.controllers): rondpoint reads cgroup v2 \
             hierarchies only",
            dir.display()
        );
    }
    Ok(())
}

/// A cgroup v2 directory a launched program is to join (`run --cgroup`): a leaf that takes
/// processes, whose cgroup.procs this user may write. Everything the kernel would refuse at
/// the join that can be seen now is refused now, naming the rule.
pub fn check_cgroup_to_join(dir: &Path) -> Result<()> {
    check_cgroup_v2(dir)?;
    // Kernel files, read as rondpoint reads /sys (bounded, no special files).
    let read = |f: &str| {
        rondpoint_safeio::read_system(&dir.join(f))
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default()
    };
    let kind = read("cgroup.type");
    if kind.trim() == "threaded" {
        bad_input!(
            "{} is a threaded cgroup: it takes threads, not processes; give a domain cgroup",
            dir.display()
        );
    }
    // The root cgroup (no cgroup.type) may hold processes whatever it distributes.
    let distributes = read("cgroup.subtree_control");
    if !kind.is_empty() && !distributes.trim().is_empty() {
        bad_input!(
            "{} distributes controllers to its children (cgroup.subtree_control: {}): cgroup \
             v2 keeps processes out of such a cgroup; give one of its children (mkdir one)",
            dir.display(),
            distributes.trim()
        );
    }
    if let Err(e) = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))
    {
        bad_input!(
            "cannot join cgroup {}: opening its cgroup.procs for writing: {e} (moving a process \
             into a cgroup needs write access to its cgroup.procs, and to that of the cgroup the \
             process leaves and theirs in common)",
            dir.display()
        );
    }
    Ok(())
}

/// A process the user named to be managed or moved: it runs (not a zombie), has memory of its
/// own (not a kernel thread) and is not rondpoint. Refusals are the user's input (status 2).
pub fn check_process(pid: i32) -> Result<rondpoint_linux::procfs::TaskStat> {
    if pid <= 0 {
        bad_input!("--pid {pid}: a process id is a positive number");
    }
    let proc = rondpoint_linux::procfs::ProcRoot::new("/proc");
    let Some(stat) = proc.stat(rondpoint_model::Pid(pid)).ok().flatten() else {
        bad_input!("process {pid} is not running");
    };
    if matches!(stat.state, 'Z' | 'X' | 'x') {
        bad_input!(
            "process {pid} ({}) has exited (a zombie its parent has not reaped): it has no \
             memory left to place",
            stat.comm
        );
    }
    if stat.is_kernel_thread() {
        bad_input!(
            "process {pid} ({}) is a kernel thread: it has no memory of its own to place",
            stat.comm
        );
    }
    if pid == std::process::id() as i32 {
        bad_input!("--pid {pid} is rondpoint itself, which never manages itself");
    }
    Ok(stat)
}
