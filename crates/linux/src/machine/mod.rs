//! `LinuxMachine`: the engine's live backend. It observes managed processes through procfs,
//! sysfs and perf, and carries out actions through the syscall trait. It decides nothing.
//!
//! What it can see depends on the machine, and it says so ([`Signals`]):
//! - per-page samples with the accessing CPU: the software page-fault event (first touches,
//!   and NUMA hinting faults when kernel.numa_balancing is 1 or 3, or 2 on slower-tier memory),
//!   which works without a PMU, as in most VMs (IBS and PEBS sampling are not wired in yet);
//! - counters: the DRAM traffic per node is counted by the memory controllers' uncore counters
//!   where the machine has them (`uncore`); without, it is estimated from the samples (their
//!   accessing node and the page's node, found with a move_pages query), as its split by
//!   source node always is; without hardware counters, cycles are estimated from CPU time;
//!   the observation lists what was estimated.
//!
//! Safety: only the processes it was asked to manage (and their descendants) are touched;
//! actions on any other pid are refused. A managed program that exits is normal.
//!
//! Its parts: `select` (the managed set), `process` (what is read of each managed process),
//! `sampler` (the perf events and their rings), `home` (where sampled pages are), `counters`
//! (estimated counters and node memory), `uncore` (memory-controller counters), `room` (how much a node can take) and `stats` (the
//! run's report).

mod counters;
mod home;
mod hwcounters;
mod links;
mod locks;
mod moves;
mod precise;
mod process;
mod room;
mod sampler;
mod select;
mod spe;
mod stats;
#[cfg(test)]
mod tests;
mod uncore;

pub use hwcounters::{thread_counter_attrs, thread_dram_events_of};
pub use precise::precise_events_of;
pub use sampler::PAGE_FAULT_FORMAT;
use select::Launched;
pub use select::Selection;
pub use stats::{KernelBalancing, LiveStats, SampleTotals};

use crate::actuate;
use crate::capabilities::{KernelFacts, Probe};
use crate::procfs::{ProcError, ProcRoot};
use crate::sys::{Errno, ExitStatus, SpawnSetup, Sys};
use crate::sysfs::SysfsRoot;
use crate::thp::ThpMapping;
use rondpoint_engine::Machine;
use rondpoint_model::{
    Action, Capabilities, NodeId, Observation, Outcome, Pid, ProcessInfo, Sample, SamplingRequest,
    Tid, Topology,
};
use rustc_hash::FxHashMap;
use sampler::Sampler;
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;
use thiserror::Error;

/// The pid a policy sees for the program `rondpoint run` is about to launch, so that its
/// start decisions can name it before it exists: its allocation policy, set before exec, and
/// moves, carried out on its real pid once it runs ([`Machine::start_ready`]).
pub const PENDING: Pid = Pid(0);

/// `action` on process `pid` instead of the one it names.
fn for_pid(action: &Action, pid: Pid) -> Action {
    let mut action = action.clone();
    match &mut action {
        Action::MigratePages { range, .. }
        | Action::Interleave { range, .. }
        | Action::Replicate { range, .. } => range.pid = pid,
        Action::PinThread { pid: p, .. }
        | Action::MoveApplication { pid: p, .. }
        | Action::SetMemPolicy { pid: p, .. }
        | Action::MoveNodePages { pid: p, .. } => *p = pid,
        Action::ExchangeThreads { a, b } => {
            for side in [a, b] {
                if side.pid == PENDING {
                    side.pid = pid;
                }
            }
        }
    }
    action
}

/// What can go wrong managing live processes.
#[derive(Debug, Error)]
pub enum LiveError {
    #[error("cannot start {program}: {errno}")]
    Spawn { program: String, errno: Errno },
    #[error(transparent)]
    Proc(#[from] ProcError),
    #[error("{what}: {errno}")]
    Sys { what: String, errno: Errno },
}

/// Which signals a run had, for the report.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Signals {
    /// Per-page samples came from this source (None: no sampling was asked for or possible).
    pub sampler: Option<String>,
    /// Why sampling was not possible, when it was asked for.
    pub sampler_error: Option<String>,
    /// kernel.numa_balancing, a bit mask: hinting faults are sampled on every node's pages when
    /// it is 1 or 3, only on slower-tier memory when it is 2.
    pub numa_balancing: Option<u32>,
    /// Counters estimated rather than counted.
    pub estimated: Vec<String>,
    /// Counters not measured at all (they read 0 in observations).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Why hardware counters could not be opened, when the policy asked for them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters_error: Option<String>,
    /// Why a process's DRAM loads could not be counted where the machine has events for
    /// them (they are estimated from samples instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dram_counters_error: Option<String>,
}

/// Live backend settings.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    pub sysfs_root: PathBuf,
    pub proc_root: PathBuf,
    /// Most sampled pages whose node is queried per epoch (once per drain of the rings that
    /// samples them: a page sampled in two of an epoch's drains counts twice).
    pub max_queried_pages: usize,
    /// Data pages of each perf ring buffer (a power of two).
    pub ring_pages: usize,
    /// Nominal clock (GHz) used to estimate cycles from CPU time without a PMU.
    pub nominal_ghz: f64,
    /// Free memory a node keeps when rondpoint moves pages onto it by quantity
    /// (`MoveNodePages`) and the kernel's watermarks cannot be read (/proc/zoneinfo): the
    /// conservative rule, free memory less this, no cache counted. With the watermarks, a
    /// node's room is the kernel's own estimate (machine/room.rs). Chosen: 64 MiB, above what
    /// the kernel reserves by default on an 8 GiB node (high watermarks and lowmem reserves,
    /// 22 to 56 MiB in fixtures/procfs/numa4/zoneinfo), and leaving room on the testbed's
    /// 512 MiB nodes.
    pub reserve_free_bytes: u64,
    /// Where the per-process locks live (machine/locks.rs): every rondpoint of the machine
    /// must use the same one; `None` locks nothing (tests on the fake kernel).
    pub lock_dir: Option<PathBuf>,
    /// A process's memory per node (numa_maps) and THP mappings (smaps) are read again after
    /// at most this many epochs (1: every epoch); sooner when its resident size changed by
    /// more than a thirty-second or 4 MiB, or rondpoint changed its pages or policies. Each read
    /// makes the kernel walk the process's page tables, the largest part of rondpoint's own
    /// cost on a busy machine. Chosen: 10, a 10 s delay at 1 s epochs for the kernel's own
    /// moves (NUMA balancing, khugepaged), which change neither.
    pub memory_refresh_epochs: u64,
}

impl Default for LiveConfig {
    fn default() -> Self {
        Self {
            sysfs_root: "/sys".into(),
            proc_root: "/proc".into(),
            max_queried_pages: 20_000,
            ring_pages: 64,
            nominal_ghz: 2.5,
            reserve_free_bytes: 64 << 20,
            lock_dir: None,
            memory_refresh_epochs: 10,
        }
    }
}

/// The live machine.
#[derive(Debug)]
pub struct LinuxMachine<S: Sys> {
    sys: S,
    proc: ProcRoot,
    sysfs: SysfsRoot,
    config: LiveConfig,
    topology: Topology,
    roots: Vec<Pid>,
    selection: Option<Selection>,
    managed: BTreeSet<Pid>,
    /// The locks of the managed processes: one rondpoint per process.
    locks: locks::Locks,
    launch: Option<Vec<OsString>>,
    /// How the program to launch starts, as the command line asks (numactl's flags).
    launch_setup: SpawnSetup,
    launched: Option<Pid>,
    exit: Option<ExitStatus>,
    sampling: SamplingRequest,
    sampler: Option<Sampler>,
    /// The precise (IBS, PEBS) sampler, where the machine has one and the policy samples.
    precise: precise::PreciseState,
    signals: Signals,
    stats: LiveStats,
    thp: HashMap<Pid, Vec<ThpMapping>>,
    /// What was last read of each managed process's memory, and which are due a new read.
    memory: process::MemoryReads,
    /// Whether it launches its program (allocation policies can be set only then).
    launches: bool,
    /// What this machine can observe and do, probed the first time the engine asks.
    probe: Option<Probe>,
    /// Hardware counters of the managed processes, when the policy asks for them.
    hw: Option<hwcounters::HwCounters>,
    /// The per-thread DRAM events this machine has (found by the probe; empty without).
    dram_events: hwcounters::DramEvents,
    /// The memory-controller counters, opened with the probe when the machine has them.
    uncore: Option<uncore::Uncore>,
    /// The link counters (UPI, xGMI), opened with the probe on machines of one node per
    /// socket that have them.
    links: Option<links::SocketLinks>,
    /// Where each sampled page was at its last query, to spot pages the kernel moved since
    /// (forgotten when rondpoint moves them itself, and all at once beyond a bound).
    last_seen_node: FxHashMap<(Pid, u64), NodeId>,
    /// The samples drained during the current epoch (the engine's drains), which its
    /// observation lists first.
    drained: Vec<Sample>,
    /// Pages whose node was queried during the current epoch (at most `max_queried_pages`).
    queried: usize,
    /// Where the page search of moves by quantity stopped in each mapping, to continue there.
    search_cursors: crate::node_pages::SearchCursors,
    /// /proc/vmstat's (numa_hint_faults, numa_pages_migrated) when rondpoint started.
    balancing_at_start: Option<(u64, u64)>,
    cpu_ticks: HashMap<(Pid, Tid), u64>,
    /// Samples kept and lost up to the previous epoch (the log says each epoch's).
    samples_logged: (u64, u64),
    /// The sampler's totals, for readers outside the run.
    sample_totals: std::sync::Arc<SampleTotals>,
    epoch: u64,
    epoch_start: Instant,
    start: Instant,
}

fn sys_err(what: &str) -> impl Fn(Errno) -> LiveError + '_ {
    move |errno| LiveError::Sys {
        what: what.to_string(),
        errno,
    }
}

impl<S: Sys> LinuxMachine<S> {
    /// What the machine can observe and do, probed the first time it is needed.
    fn probe(&mut self) -> &Probe {
        let probe = match self.probe.take() {
            Some(p) => p,
            None => {
                let kernel = KernelFacts {
                    numa_balancing: self.signals.numa_balancing,
                    slower_tier: self.slower_tier(),
                    watermarks: self.watermarks_known(),
                };
                let mut probe = Probe::run(&mut self.sys, &self.sysfs, kernel, self.launches);
                // One read of the PMUs and one plan for all three.
                let pmus = self.machine_pmus();
                probe.mc_counters = self.open_uncore(&pmus);
                probe.precise = self.probe_precise(&pmus);
                probe.links = self.open_links(&pmus);
                probe.thread_dram = self.probe_thread_dram(&pmus);
                probe
            }
        };
        self.probe.insert(probe)
    }

    /// The nodes whose memory is a slower tier than the nodes with CPUs: by the kernel's
    /// memory tiers where the topology has them, else those with memory and no CPUs.
    fn slower_tier(&self) -> Vec<NodeId> {
        self.topology.slower_tier()
    }

    fn new(sys: S, topology: Topology, config: LiveConfig, launches: bool) -> Self {
        let proc = ProcRoot::new(config.proc_root.clone());
        let sysfs = SysfsRoot::new(config.sysfs_root.clone());
        let numa_balancing = proc.numa_balancing().ok().flatten();
        let balancing_at_start = stats::balancing_counters(&proc);
        let locks = locks::Locks::new(config.lock_dir.clone());
        Self {
            locks,
            sys,
            proc,
            sysfs,
            launches,
            probe: None,
            hw: None,
            dram_events: hwcounters::DramEvents::default(),
            uncore: None,
            links: None,
            config,
            topology,
            roots: Vec::new(),
            selection: None,
            managed: BTreeSet::new(),
            launch: None,
            launch_setup: SpawnSetup::default(),
            launched: None,
            exit: None,
            sampling: SamplingRequest::NONE,
            sampler: None,
            precise: precise::PreciseState::default(),
            signals: Signals {
                numa_balancing,
                ..Signals::default()
            },
            stats: LiveStats::default(),
            balancing_at_start,
            thp: HashMap::new(),
            memory: process::MemoryReads::default(),
            last_seen_node: FxHashMap::default(),
            drained: Vec::new(),
            queried: 0,
            search_cursors: Default::default(),
            cpu_ticks: HashMap::new(),
            samples_logged: (0, 0),
            sample_totals: Default::default(),
            epoch: 0,
            epoch_start: Instant::now(),
            start: Instant::now(),
        }
    }

    /// A machine that will launch `argv` when the engine applies the policy's start
    /// decisions (with the allocation policy they ask for, if any).
    pub fn to_launch(sys: S, topology: Topology, config: LiveConfig, argv: Vec<OsString>) -> Self {
        let mut m = Self::new(sys, topology, config, true);
        m.launch = Some(argv);
        m
    }

    /// The allocation policy and CPUs the program starts with, as the user asked (numactl's
    /// flags); a policy's own allocation policy for it is then not set.
    pub fn with_launch_setup(mut self, setup: SpawnSetup) -> Self {
        self.launch_setup = setup;
        self
    }

    /// A machine managing running processes (and their descendants).
    pub fn to_manage(sys: S, topology: Topology, config: LiveConfig, pids: Vec<Pid>) -> Self {
        Self::to_select(
            sys,
            topology,
            config,
            Selection {
                pids,
                ..Selection::default()
            },
        )
    }

    /// A machine managing the processes a selection names (and their descendants), rescanned
    /// every epoch. rondpoint never selects itself. A relative cgroup directory is taken from
    /// the current directory, as the command line names it.
    pub fn to_select(
        sys: S,
        topology: Topology,
        config: LiveConfig,
        mut selection: Selection,
    ) -> Self {
        for dir in &mut selection.cgroups {
            if let Ok(abs) = std::path::absolute(&*dir) {
                *dir = abs;
            }
        }
        let mut m = Self::new(sys, topology, config, false);
        m.selection = Some(selection);
        m.refresh_managed();
        m
    }

    /// The launched program's exit status, once it has ended.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exit
    }

    /// The launched program's pid.
    pub fn launched(&self) -> Option<Pid> {
        self.launched
    }

    pub fn signals(&self) -> &Signals {
        &self.signals
    }

    /// The syscall layer (tests inspect the fake's calls).
    pub fn sys(&self) -> &S {
        &self.sys
    }

    /// rondpoint's own CPU time (ns) and peak memory (bytes).
    pub fn own_usage(&mut self) -> (u64, u64) {
        (self.sys.own_cpu_time_ns(), self.sys.own_peak_rss_bytes())
    }

    /// The sampler's running totals, readable while the engine drives the machine.
    pub fn sample_totals(&self) -> std::sync::Arc<SampleTotals> {
        std::sync::Arc::clone(&self.sample_totals)
    }

    /// Processes currently managed.
    pub fn managed(&self) -> Vec<Pid> {
        self.managed.iter().copied().collect()
    }

    fn check_exit(&mut self) {
        if let (Some(pid), None) = (self.launched, self.exit) {
            if let Ok(Some(status)) = self.sys.try_wait(pid) {
                self.exit = Some(status);
            }
        }
    }
}

impl<S: Sys> LinuxMachine<S> {
    /// Carries out the page placements gathered so far, and empties the run.
    fn place_run(
        &mut self,
        actions: &[Action],
        run: &mut Vec<actuate::Placement<'_>>,
        out: &mut Vec<Outcome>,
    ) {
        if run.is_empty() {
            return;
        }
        let outcomes = actuate::place_all(&mut self.sys, &self.topology, run);
        out.extend(
            outcomes
                .into_iter()
                .map(|o| actuate::placed(&actions[o.action], o)),
        );
        run.clear();
    }

    /// Carries out an action that is not a page placement.
    fn apply_one(&mut self, i: usize, a: &Action) -> Outcome {
        if let Action::MoveNodePages {
            pid,
            from,
            to,
            pages,
        } = a
        {
            return self.move_node_pages(i, *pid, *from, to, *pages);
        }
        // Moving a whole application moves every thread it has now.
        let threads: Vec<Tid> = match a {
            Action::MoveApplication { .. } => process::tids_of(&self.proc, a.pid()),
            _ => Vec::new(),
        };
        actuate::apply(&mut self.sys, &self.topology, i, a, &threads)
    }
}

impl<S: Sys> Machine for LinuxMachine<S> {
    type Error = LiveError;

    fn topology(&self) -> &Topology {
        &self.topology
    }

    fn capabilities(&mut self) -> Capabilities {
        self.probe().capabilities()
    }

    fn processes(&self) -> Vec<ProcessInfo> {
        if let Some(argv) = &self.launch {
            return vec![ProcessInfo {
                pid: PENDING,
                comm: future_comm(argv),
                threads: Vec::new(),
                resident_bytes_by_node: vec![0; self.topology.len()],
                mapping_policies: Vec::new(),
            }];
        }
        self.process_infos(self.threads_of())
    }

    fn observe(&mut self, _until_ns: u64) -> Result<Observation, LiveError> {
        self.check_exit();
        self.refresh_managed();
        self.attach_sampler();
        self.attach_counters();
        // One read of each process's threads serves the memory reads' plan, the counters and
        // the policy, and one numa_maps read per process (when due) the policy and the report.
        let threads_of = self.threads_of();
        self.memory.plan(
            &threads_of,
            &self.managed,
            self.epoch,
            self.config.memory_refresh_epochs,
        );
        self.refresh_thp();
        let tail = self.collect_samples();
        self.stats.samples += tail.len() as u64;
        self.log_lost();
        self.sample_totals.publish(&self.stats);
        let mut samples = std::mem::take(&mut self.drained);
        samples.extend(tail);
        self.queried = 0;
        let now = Instant::now();
        let duration_ns =
            u64::try_from(now.duration_since(self.epoch_start).as_nanos()).unwrap_or(u64::MAX);
        let start_ns =
            u64::try_from(self.epoch_start.duration_since(self.start).as_nanos()).unwrap_or(0);
        self.epoch_start = now;
        self.follow_new_threads(&threads_of);
        let counters = self.counters(&samples, &threads_of, duration_ns);
        let lar = Self::lar(&samples);
        let processes = self.observe_process_infos(threads_of);
        if !self.managed.is_empty() {
            self.stats
                .record_epoch(&processes, self.topology.len(), lar);
        }
        let obs = Observation {
            epoch: self.epoch,
            start_ns,
            counters,
            samples,
            memory: self.node_memory(),
            processes,
            collapses: Vec::new(),
            truth: None,
        };
        self.epoch += 1;
        Ok(obs)
    }

    /// Launches the program (if this machine launches one) with the allocation policy the
    /// start decisions ask for it; other decisions naming it wait until it runs (the engine
    /// holds them back: [`Machine::start_ready`]), and any given here are reported skipped.
    /// Without a program to launch, carries out the start decisions.
    fn start(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, LiveError> {
        if self.launch.is_none() {
            return self.apply(actions);
        }
        let policy = actions.iter().find_map(|a| match a {
            Action::SetMemPolicy { pid, policy } if *pid == PENDING => Some(policy.clone()),
            _ => None,
        });
        let launched = self.launch_now(policy.as_ref())?;
        Ok(actions
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                Action::SetMemPolicy { pid, .. } if *pid == PENDING => match &launched {
                    Launched::Applied => Outcome::applied(i),
                    Launched::Substituted(note) => Outcome::substituted(i, note.clone()),
                    Launched::Overridden(why) => Outcome::skipped(i, 0, why.clone()),
                },
                _ => Outcome::skipped(i, 0, "the program had not started yet"),
            })
            .collect())
    }

    /// A start decision naming the program to launch ([`PENDING`]), but for its allocation
    /// policy (set before exec), waits until the program runs with threads; it is then carried
    /// out on the program's pid.
    fn start_ready(&self, action: &Action) -> Option<Action> {
        let launches = self.launch.is_some() || self.launched.is_some();
        if !launches || action.pid() != PENDING || matches!(action, Action::SetMemPolicy { .. }) {
            return Some(action.clone());
        }
        let pid = self.launched.filter(|_| self.exit.is_none())?;
        if process::tids_of(&self.proc, pid).is_empty() {
            return None;
        }
        Some(for_pid(action, pid))
    }

    /// Carries out the actions in order, each run of page placements together (one
    /// move_pages call for a process's pages: `actuate::place_all`).
    fn apply(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, LiveError> {
        let mut out: Vec<Outcome> = Vec::with_capacity(actions.len());
        let mut run: Vec<actuate::Placement<'_>> = Vec::new();
        for (i, a) in actions.iter().enumerate() {
            let pid = a.pid();
            if !self.managed.contains(&pid) {
                self.stats.refused_unmanaged += 1;
                out.push(Outcome::skipped(
                    i,
                    0,
                    format!("{pid} is not managed by rondpoint"),
                ));
                continue;
            }
            self.forget_moved_pages(a);
            self.memory.changed(pid);
            if let Some(p) = actuate::placement_of(i, a) {
                run.push(p);
                continue;
            }
            self.place_run(actions, &mut run, &mut out);
            out.push(self.apply_one(i, a));
        }
        self.place_run(actions, &mut run, &mut out);
        out.sort_by_key(|o| o.action);
        Ok(out)
    }

    fn finished(&self) -> bool {
        match (self.launched, &self.selection) {
            (Some(_), _) => self.exit.is_some(),
            // A daemon selecting by name or cgroup waits for processes to appear.
            (None, Some(sel)) if !sel.pids_only() => false,
            (None, _) => self.launch.is_none() && self.managed.is_empty(),
        }
    }

    fn poll_finished(&mut self) -> bool {
        self.check_exit();
        self.finished()
    }

    /// Drains the perf rings during the epoch: fewer samples are lost to full rings, and the
    /// policy counts them as they come. Each sample gets its page's node from a query made
    /// now (closer to the access than one at the epoch's end), and its page size from the
    /// THP mappings read at the last observation.
    fn drain_samples(&mut self, out: &mut Vec<Sample>) {
        let fresh = self.collect_samples();
        self.stats.samples += fresh.len() as u64;
        self.stats.samples_drained += fresh.len() as u64;
        out.extend_from_slice(&fresh);
        self.drained.extend(fresh);
    }

    fn set_sampling(&mut self, request: &SamplingRequest) {
        self.sampling = request.clone();
        if self.launch.is_none() {
            self.attach_sampler();
            self.attach_counters();
        }
    }

    /// Passes the signal (SIGTERM when unknown) on to the launched program, once it has started
    /// and until it ends.
    fn interrupt(&mut self, signal: i32) {
        let _ = stop(self, if signal > 0 { signal } else { libc::SIGTERM });
    }
}

/// The command name the kernel will give the program `argv` launches: its file name, cut to
/// the 15 bytes of TASK_COMM_LEN less its terminating nul (what policies keyed by program name,
/// N-MASS's profiles, will see once it runs).
fn future_comm(argv: &[OsString]) -> String {
    let name = argv
        .first()
        .map(std::path::Path::new)
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// Kills and reaps what is left of a launched program (used when rondpoint itself is stopped).
pub fn stop<S: Sys>(m: &mut LinuxMachine<S>, signal: i32) -> Result<(), LiveError> {
    if let (Some(pid), None) = (m.launched, m.exit) {
        m.sys.kill(pid, signal).map_err(sys_err("kill"))?;
    }
    Ok(())
}
