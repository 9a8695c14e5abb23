//! `LinuxMachine`: the engine's live backend. It observes managed processes through procfs,
//! sysfs and perf, and carries out actions through the syscall trait. It decides nothing.
//!
//! What it can see depends on the machine, and it says so ([`Signals`]):
//! - per-page samples with the accessing CPU: the software page-fault event (first touches,
//!   and NUMA hinting faults when kernel.numa_balancing=1), which works without a PMU, as in
//!   most VMs (IBS and PEBS sampling are not wired in yet);
//! - counters: without hardware counters, the DRAM traffic per node and per source node is
//!   estimated from the samples (their accessing node and the page's node, found with a
//!   move_pages query), and cycles from CPU time; the observation lists what was estimated.
//!
//! Safety: only the processes it was asked to manage (and their descendants) are touched;
//! actions on any other pid are refused. A managed program that exits is normal.

use crate::actuate;
use crate::capabilities::Probe;
use crate::perf::ring::{self, Record, SampleFormat};
use crate::procfs::{ProcError, ProcRoot, ThreadSnapshot};
use crate::sys::{Errno, ExitStatus, MemPolicyMode, NodeMask, PerfAttr, PerfFd, Sys};
use crate::sysfs::SysfsRoot;
use crate::thp::{self, ThpMapping};
use rondpoint_engine::Machine;
use rondpoint_model::{
    AccessKind, Action, Capabilities, CounterGroup, Counters, Estimate, MappingPolicy, MemPolicy,
    NodeCounters, NodeId, NodeMemory, Observation, Outcome, PageSize, Pid, ProcessInfo, Sample,
    SampleSource, SamplingRequest, ThreadCounters, ThreadInfo, Tid, Topology,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;
use thiserror::Error;

/// The pid a policy sees for the program `rondpoint run` is about to launch, so that its
/// start decisions (an allocation policy) can name it before it exists.
pub const PENDING: Pid = Pid(0);

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
    /// kernel.numa_balancing (hinting faults are only sampled when it is 1).
    pub numa_balancing: Option<u32>,
    /// Counters estimated rather than counted.
    pub estimated: Vec<String>,
}

/// Which running processes a daemon manages; rescanned every epoch, so that processes started
/// later under a matching name or in a matching cgroup are picked up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub pids: Vec<Pid>,
    /// Command names (exact, or globs with `*` and `?`).
    pub comm: Vec<String>,
    /// cgroup v2 directories (their `cgroup.procs` lists the processes).
    pub cgroups: Vec<PathBuf>,
}

impl Selection {
    /// Whether nothing can ever be selected again once the listed pids are gone.
    pub fn pids_only(&self) -> bool {
        self.comm.is_empty() && self.cgroups.is_empty()
    }
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
}

impl Default for LiveConfig {
    fn default() -> Self {
        Self {
            sysfs_root: "/sys".into(),
            proc_root: "/proc".into(),
            max_queried_pages: 20_000,
            ring_pages: 64,
            nominal_ghz: 2.5,
        }
    }
}

/// Per-process sampling state.
#[derive(Debug)]
struct Sampler {
    /// Per process: one inherited event per CPU, following the process's main thread and
    /// every thread created after it was opened; and one event per thread that already
    /// existed then (an inherited event does not reach threads that exist when it opens), or
    /// that appeared later in a process that had such threads (see `threads`).
    fds: BTreeMap<(Pid, SamplerTarget), PerfFd>,
    /// The attach round in which each managed process was first seen, and in which each
    /// sampled process got its events or was found to carry an ancestor's inherited ones
    /// (forked after those opened: events of its own would count every fault twice).
    first_seen: BTreeMap<Pid, u64>,
    sampled_in: BTreeMap<Pid, u64>,
    /// The threads last listed of each process that had threads besides its main one when
    /// its sampler opened. Those threads' events are not inherited, so the threads they
    /// create later carry no event: every thread that appears in such a process gets one of
    /// its own (one that also carries the inherited events only counts once: see
    /// `collect_samples`), and a thread's event closes once it is gone.
    threads: BTreeMap<Pid, BTreeSet<Tid>>,
    round: u64,
    format: SampleFormat,
    buffer: Vec<u8>,
    lost: u64,
    throttled: u64,
}

/// What one sampler event follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SamplerTarget {
    /// The process's main thread and its future threads, on one CPU.
    Cpu(u32),
    /// One thread, on every CPU: one that existed when the process's sampler opened, or one
    /// that appeared later in a process that had such threads.
    Thread(Tid),
}

/// Everything the report needs, accumulated over the run.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LiveStats {
    pub samples: u64,
    /// Of `samples`, those drained from the rings during an epoch (handed to the policy as
    /// they came) rather than at its end.
    pub samples_drained: u64,
    pub lost_samples: u64,
    /// Times the kernel throttled the sampler (PERF_RECORD_THROTTLE: more samples per tick
    /// than kernel.perf_event_max_sample_rate allows); samples are dropped uncounted then.
    pub sampler_throttled: u64,
    /// Pages of the managed processes per node at the first and the latest epoch.
    pub pages_first: Option<Vec<u64>>,
    pub pages_last: Option<Vec<u64>>,
    /// Local share of sampled accesses (with a known page node) at the first and latest epoch.
    pub lar_first: Option<f64>,
    pub lar_last: Option<f64>,
    /// Actions refused because they named a process rondpoint does not manage.
    pub refused_unmanaged: u64,
    /// The kernel's own NUMA balancing since rondpoint started, machine-wide (all processes),
    /// from /proc/vmstat when the stats are read; `None` where the kernel has no such counters.
    pub kernel_balancing: Option<KernelBalancing>,
}

/// Increases of the kernel's NUMA-balancing counters (/proc/vmstat) since rondpoint started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct KernelBalancing {
    /// `numa_hint_faults`: NUMA hinting faults taken.
    pub hint_faults: u64,
    /// `numa_pages_migrated`: pages the kernel migrated on hinting faults.
    pub pages_migrated: u64,
}

/// The two counters behind [`KernelBalancing`], if this kernel prints both.
fn balancing_counters(v: &crate::procfs::NumaVmstat) -> Option<(u64, u64)> {
    Some((v.numa_hint_faults?, v.numa_pages_migrated?))
}

/// The live machine.
#[derive(Debug)]
pub struct LinuxMachine<S: Sys> {
    sys: S,
    proc: ProcRoot,
    config: LiveConfig,
    topology: Topology,
    roots: Vec<Pid>,
    selection: Option<Selection>,
    managed: BTreeSet<Pid>,
    launch: Option<Vec<OsString>>,
    launched: Option<Pid>,
    exit: Option<ExitStatus>,
    sampling: SamplingRequest,
    sampler: Option<Sampler>,
    signals: Signals,
    stats: LiveStats,
    thp: HashMap<Pid, Vec<ThpMapping>>,
    /// What this machine can observe and do (probed when it was built).
    probe: Probe,
    /// Where each sampled page was at its last query, to spot pages the kernel moved since
    /// (forgotten when rondpoint moves them itself, and all at once beyond a bound).
    last_seen_node: HashMap<(Pid, u64), NodeId>,
    /// The samples drained during the current epoch (the engine's drains), which its
    /// observation lists first.
    drained: Vec<Sample>,
    /// Pages whose node was queried during the current epoch (at most `max_queried_pages`).
    queried: usize,
    /// /proc/vmstat's (numa_hint_faults, numa_pages_migrated) when rondpoint started.
    balancing_at_start: Option<(u64, u64)>,
    cpu_ticks: HashMap<(Pid, Tid), u64>,
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
    fn new(sys: S, topology: Topology, config: LiveConfig, launches: bool) -> Self {
        let proc = ProcRoot::new(config.proc_root.clone());
        let numa_balancing = proc.numa_balancing().ok().flatten();
        let mut sys = sys;
        let probe = Probe::run(
            &mut sys,
            &SysfsRoot::new(config.sysfs_root.clone()),
            numa_balancing,
            launches,
        );
        let mut m = Self {
            probe,
            sys,
            proc,
            config,
            topology,
            roots: Vec::new(),
            selection: None,
            managed: BTreeSet::new(),
            launch: None,
            launched: None,
            exit: None,
            sampling: SamplingRequest::NONE,
            sampler: None,
            signals: Signals {
                numa_balancing,
                ..Signals::default()
            },
            stats: LiveStats::default(),
            balancing_at_start: None,
            thp: HashMap::new(),
            last_seen_node: HashMap::new(),
            drained: Vec::new(),
            queried: 0,
            cpu_ticks: HashMap::new(),
            epoch: 0,
            epoch_start: Instant::now(),
            start: Instant::now(),
        };
        m.balancing_at_start = m
            .proc
            .vmstat_numa()
            .ok()
            .as_ref()
            .and_then(balancing_counters);
        m
    }

    /// A machine that will launch `argv` when the engine applies the policy's start
    /// decisions (with the allocation policy they ask for, if any).
    pub fn to_launch(sys: S, topology: Topology, config: LiveConfig, argv: Vec<OsString>) -> Self {
        let mut m = Self::new(sys, topology, config, true);
        m.launch = Some(argv);
        m
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
    /// every epoch. rondpoint never selects itself.
    pub fn to_select(sys: S, topology: Topology, config: LiveConfig, selection: Selection) -> Self {
        let mut m = Self::new(sys, topology, config, false);
        m.selection = Some(selection);
        m.refresh_managed();
        m
    }

    /// The roots a selection names now.
    fn select(&self, sel: &Selection) -> Vec<Pid> {
        let me = Pid(std::process::id() as i32);
        let mut roots: Vec<Pid> = sel.pids.clone();
        for pattern in &sel.comm {
            if let Ok(found) = self.proc.find_by_comm(pattern) {
                roots.extend(found);
            }
        }
        for dir in &sel.cgroups {
            if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
                roots.extend(
                    text.lines()
                        .filter_map(|l| l.trim().parse::<i32>().ok())
                        .map(Pid),
                );
            }
        }
        roots.sort_unstable();
        roots.dedup();
        roots.retain(|&p| p != me);
        roots
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

    /// What the run's report needs so far; the kernel's own balancing is read now (one
    /// /proc/vmstat read, at report time rather than every epoch).
    pub fn stats(&self) -> LiveStats {
        let now = self.proc.vmstat_numa().ok();
        let kernel_balancing = match (
            self.balancing_at_start,
            now.as_ref().and_then(balancing_counters),
        ) {
            (Some((f0, m0)), Some((f, m))) => Some(KernelBalancing {
                hint_faults: f.saturating_sub(f0),
                pages_migrated: m.saturating_sub(m0),
            }),
            _ => None,
        };
        LiveStats {
            kernel_balancing,
            ..self.stats.clone()
        }
    }

    /// The syscall layer (tests inspect the fake's calls).
    pub fn sys(&self) -> &S {
        &self.sys
    }

    /// rondpoint's own CPU time (ns) and peak memory (bytes).
    pub fn own_usage(&mut self) -> (u64, u64) {
        (self.sys.own_cpu_time_ns(), self.sys.own_peak_rss_bytes())
    }

    /// Processes currently managed.
    pub fn managed(&self) -> Vec<Pid> {
        self.managed.iter().copied().collect()
    }

    /// Re-reads which processes are managed: the roots still alive and their descendants.
    fn refresh_managed(&mut self) {
        if let Some(sel) = &self.selection {
            self.roots = self.select(sel);
        }
        let me = Pid(std::process::id() as i32);
        let mut set = BTreeSet::new();
        for &root in &self.roots {
            if self.proc.stat(root).ok().flatten().is_none() {
                continue;
            }
            set.insert(root);
            if let Ok(d) = self.proc.descendants(root) {
                set.extend(d);
            }
        }
        set.remove(&me);
        self.managed = set;
    }

    fn launch_now(&mut self, policy: Option<&MemPolicy>) -> Result<(), LiveError> {
        let Some(argv) = self.launch.take() else {
            return Ok(());
        };
        let mempolicy = policy.and_then(|p| match p {
            MemPolicy::Default => None,
            MemPolicy::Bind { nodes } => Some((MemPolicyMode::Bind, nodes.clone())),
            MemPolicy::Interleave { nodes } => Some((MemPolicyMode::Interleave, nodes.clone())),
            MemPolicy::PreferredMany { nodes } => {
                Some((MemPolicyMode::PreferredMany, nodes.clone()))
            }
            MemPolicy::WeightedInterleave { weights } => Some((
                MemPolicyMode::WeightedInterleave,
                weights.iter().map(|w| w.0).collect(),
            )),
            // No Linux equivalent: this machine does not offer OverflowPlacement, so no policy
            // that passed the capability check asks for it; first touch is its local part.
            MemPolicy::Overflow { .. } => None,
        });
        let policy = mempolicy.map(|(m, nodes)| (m, NodeMask::of(nodes.iter().map(|n| n.0))));
        let program = argv
            .first()
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default();
        let pid = self
            .sys
            .spawn(&argv, policy)
            .map_err(|errno| LiveError::Spawn { program, errno })?;
        self.launched = Some(pid);
        self.roots = vec![pid];
        self.managed = BTreeSet::from([pid]);
        self.start = Instant::now();
        self.epoch_start = self.start;
        self.attach_sampler();
        Ok(())
    }

    /// Opens the page-fault sampler on managed processes that do not have one yet.
    fn attach_sampler(&mut self) {
        let wants = self.sampling.period_cycles.is_some() || self.sampling.hinting.is_some();
        if !wants {
            if let Some(s) = self.sampler.take() {
                for (_, fd) in s.fds {
                    self.sys.perf_close(fd);
                }
            }
            return;
        }
        let sampler = self.sampler.get_or_insert_with(|| Sampler {
            fds: BTreeMap::new(),
            first_seen: BTreeMap::new(),
            sampled_in: BTreeMap::new(),
            threads: BTreeMap::new(),
            round: 0,
            format: SampleFormat {
                sample_type: SampleFormat::TID | SampleFormat::ADDR | SampleFormat::CPU,
            },
            buffer: Vec::new(),
            lost: 0,
            throttled: 0,
        });
        let cpus: Vec<u32> = self
            .topology
            .nodes()
            .iter()
            .flat_map(|n| n.cpus.iter().map(|c| c.0))
            .collect();
        let attr = Self::sampler_attr(&self.config, cpus.len(), sampler, true);
        let thread_attr = Self::sampler_attr(&self.config, cpus.len(), sampler, false);
        sampler.round += 1;
        let round = sampler.round;
        for &pid in &self.managed {
            sampler.first_seen.entry(pid).or_insert(round);
        }
        sampler.first_seen.retain(|p, _| self.managed.contains(p));
        sampler.sampled_in.retain(|p, _| self.managed.contains(p));
        for &pid in &self.managed {
            if sampler.sampled_in.contains_key(&pid) {
                continue;
            }
            // A process first seen after its parent was sampled was forked after the parent's
            // inherited events opened, so it carries them (a process that existed before is
            // first seen in the same round as its parent, or earlier).
            let parent = self.proc.stat(pid).ok().flatten().map(|st| st.ppid);
            let parent_round = parent.and_then(|pp| sampler.sampled_in.get(&pp).copied());
            if parent_round.is_some_and(|r| sampler.first_seen.get(&pid).is_some_and(|&f| f > r)) {
                sampler.sampled_in.insert(pid, round);
                continue;
            }
            let mut opened = 0;
            let mut last_error = None;
            for &cpu in &cpus {
                match self.sys.perf_open(&attr, pid, cpu as i32) {
                    Ok(fd) => {
                        sampler.fds.insert((pid, SamplerTarget::Cpu(cpu)), fd);
                        opened += 1;
                    }
                    Err(e) if e == Errno::ESRCH => break,
                    // A CPU that is offline (or absent when the topology came from a fixture
                    // tree) is skipped.
                    Err(e) if e == Errno::ENODEV || e == Errno::EINVAL => last_error = Some(e),
                    Err(e) => {
                        last_error = Some(e);
                        break;
                    }
                }
            }
            if opened > 0 {
                sampler.sampled_in.insert(pid, round);
                // Threads that exist now may predate the inherited events, which then miss
                // them: each gets its own event, and the inherited events' samples of those
                // threads are dropped (collect_samples) so that none counts twice. A
                // per-thread event may follow its thread on every CPU because it is not
                // inherited (perf_mmap refuses only inherited events without a CPU).
                let existing: Vec<Tid> = self
                    .proc
                    .threads(pid)
                    .map(|ts| ts.into_iter().map(|t| t.tid).collect())
                    .unwrap_or_default();
                for &tid in existing.iter().filter(|t| t.0 != pid.0) {
                    if let Ok(fd) = self.sys.perf_open(&thread_attr, Pid(tid.0), -1) {
                        sampler.fds.insert((pid, SamplerTarget::Thread(tid)), fd);
                    }
                }
                if existing.iter().any(|t| t.0 != pid.0) {
                    sampler.threads.insert(pid, existing.into_iter().collect());
                }
                self.signals.sampler = Some(
                    "page faults (first touches; NUMA hinting faults when kernel.numa_balancing=1)"
                        .into(),
                );
            } else if let Some(e) = last_error {
                self.signals.sampler_error = Some(match e {
                    Errno::EACCES | Errno::EPERM => format!(
                        "perf_event_open on {pid}: {e}: sampling another process needs \
                         CAP_PERFMON (or CAP_SYS_ADMIN), or kernel.perf_event_paranoid <= 1 \
                         for your own processes"
                    ),
                    _ => format!("perf_event_open on {pid}: {e}"),
                });
            }
        }
    }

    /// The page-fault sampler's event: inherited (a process's, per CPU) or not (a thread's, on
    /// every CPU). Ring pages per CPU: a power of two, smaller on machines with many CPUs.
    fn sampler_attr(
        config: &LiveConfig,
        cpus: usize,
        sampler: &Sampler,
        inherit: bool,
    ) -> PerfAttr {
        let ring_pages = (config.ring_pages * 8 / cpus.max(1))
            .clamp(4, config.ring_pages.max(4))
            .next_power_of_two();
        PerfAttr {
            kind: 1,   // PERF_TYPE_SOFTWARE
            config: 2, // PERF_COUNT_SW_PAGE_FAULTS
            sample_period: 1,
            sample_type: sampler.format.sample_type,
            inherit,
            ring_pages,
            ..PerfAttr::default()
        }
    }

    /// Gives each thread that appeared since the last epoch in a process whose older threads
    /// have events of their own (not inherited: a thread they create carries none) an event of
    /// its own, and closes the events of threads that are gone. Runs after the epoch's rings
    /// are drained: from the next drain on, the inherited events' samples of a thread with its
    /// own event are dropped, so none is lost or counted twice.
    fn follow_new_threads(&mut self, threads_of: &[(Pid, Vec<ThreadSnapshot>)]) {
        let cpus = self.topology.nodes().iter().map(|n| n.cpus.len()).sum();
        let Some(sampler) = self.sampler.as_mut() else {
            return;
        };
        let thread_attr = Self::sampler_attr(&self.config, cpus, sampler, false);
        sampler.threads.retain(|p, _| self.managed.contains(p));
        for (pid, threads) in threads_of {
            let Some(known) = sampler.threads.get_mut(pid) else {
                continue;
            };
            let now: BTreeSet<Tid> = threads.iter().map(|t| t.tid).collect();
            for &tid in now.difference(known) {
                if tid.0 == pid.0 {
                    continue;
                }
                match self.sys.perf_open(&thread_attr, Pid(tid.0), -1) {
                    Ok(fd) => {
                        sampler.fds.insert((*pid, SamplerTarget::Thread(tid)), fd);
                    }
                    Err(e) if e == Errno::ESRCH => {}
                    Err(e) => {
                        self.signals.sampler_error = Some(format!(
                            "perf_event_open on thread {} of {pid}: {e}: its page faults are \
                             not sampled",
                            tid.0
                        ));
                    }
                }
            }
            for &tid in known.difference(&now) {
                if let Some(fd) = sampler.fds.remove(&(*pid, SamplerTarget::Thread(tid))) {
                    self.sys.perf_close(fd);
                }
            }
            *known = now;
        }
    }

    /// Drains the rings and turns records into samples.
    fn collect_samples(&mut self) -> Vec<Sample> {
        let Some(sampler) = self.sampler.as_mut() else {
            return Vec::new();
        };
        let mut raw = Vec::new();
        let mut closed = Vec::new();
        let own_event: BTreeSet<(Pid, u32)> = sampler
            .fds
            .keys()
            .filter_map(|&(p, t)| match t {
                SamplerTarget::Thread(tid) => Some((p, tid.0 as u32)),
                SamplerTarget::Cpu(_) => None,
            })
            .collect();
        for (&(pid, target), &fd) in &sampler.fds {
            sampler.buffer.clear();
            if self.sys.perf_drain(fd, &mut sampler.buffer).is_err() {
                continue;
            }
            match ring::parse(&sampler.buffer, &sampler.format) {
                Ok((records, _)) => {
                    for r in records {
                        match r {
                            Record::Sample(s) => {
                                let shadowed = matches!(target, SamplerTarget::Cpu(_))
                                    && s.tid.is_some_and(|t| own_event.contains(&(pid, t)));
                                if !shadowed {
                                    raw.push((pid, s));
                                }
                            }
                            Record::Lost { lost, .. } => sampler.lost += lost,
                            Record::Throttle => sampler.throttled += 1,
                            _ => {}
                        }
                    }
                }
                Err(e) => {
                    // An unreadable ring: this process's sampling stops, and the report says so.
                    self.signals.sampler_error = Some(format!(
                        "sampling of {pid} stopped: its ring is unreadable: {e}"
                    ));
                    closed.push(pid);
                }
            }
        }
        // Stop sampling processes that are gone.
        let gone: Vec<(Pid, SamplerTarget)> = sampler
            .fds
            .keys()
            .copied()
            .filter(|(p, _)| !self.managed.contains(p) || closed.contains(p))
            .collect();
        for key in gone {
            if let Some(fd) = sampler.fds.remove(&key) {
                self.sys.perf_close(fd);
            }
        }
        self.stats.lost_samples = sampler.lost;
        self.stats.sampler_throttled = sampler.throttled;
        let mut out = Vec::with_capacity(raw.len());
        for (root, s) in raw {
            let (Some(addr), Some(cpu)) = (s.addr, s.cpu) else {
                continue;
            };
            let pid = s.pid.map_or(root, |p| Pid(p as i32));
            let tid = s.tid.map_or(Tid(pid.0), |t| Tid(t as i32));
            let Some(node) = self.topology.node_of_cpu(rondpoint_model::CpuId(cpu)) else {
                continue;
            };
            let page_size = self
                .thp
                .get(&pid)
                .map_or(PageSize::Base4K, |m| thp::page_size_of(m, addr));
            out.push(Sample {
                pid,
                tid,
                cpu: rondpoint_model::CpuId(cpu),
                node,
                addr,
                page_size,
                kind: AccessKind::Read,
                source: if self.signals.numa_balancing == Some(1) {
                    SampleSource::HintingFault
                } else {
                    SampleSource::PageFault
                },
                latency_cycles: None,
                dram: None,
                home_node: None,
            });
        }
        self.fill_home_nodes(&mut out);
        out
    }

    /// Where each sampled page is now (one move_pages query per process, within what is left
    /// of the epoch's `max_queried_pages`).
    fn fill_home_nodes(&mut self, samples: &mut [Sample]) {
        let mut pages: BTreeMap<Pid, BTreeSet<u64>> = BTreeMap::new();
        let mut budget = self.config.max_queried_pages.saturating_sub(self.queried);
        for s in samples.iter() {
            let set = pages.entry(s.pid).or_default();
            if budget > 0 && set.insert(s.page()) {
                budget -= 1;
                self.queried += 1;
            }
        }
        let mut home: HashMap<(Pid, u64), NodeId> = HashMap::new();
        for (pid, set) in pages {
            let addrs: Vec<u64> = set.into_iter().collect();
            if let Ok(status) = actuate::query(&mut self.sys, pid, &addrs) {
                for (a, s) in addrs.iter().zip(status) {
                    if s >= 0 {
                        home.insert((pid, *a), NodeId(s as u16));
                    }
                }
            }
        }
        // A page found on another node than at its last query, and not moved by rondpoint,
        // was moved by the kernel: with NUMA balancing, on a hinting fault, to the faulting
        // node. That fault (the first sample from the page's new node) reached the page where
        // it was before; reading the node after the move would make it look local.
        let mut pre_move: HashMap<(Pid, u64), NodeId> = HashMap::new();
        for (&key, &now) in &home {
            if let Some(&before) = self.last_seen_node.get(&key) {
                if before != now {
                    pre_move.insert(key, before);
                }
            }
        }
        if self.last_seen_node.len() + home.len() > 4 * self.config.max_queried_pages {
            self.last_seen_node.clear();
        }
        self.last_seen_node
            .extend(home.iter().map(|(&k, &v)| (k, v)));
        for s in samples.iter_mut() {
            let key = (s.pid, s.page());
            s.home_node = home.get(&key).copied();
            if s.home_node == Some(s.node) {
                if let Some(before) = pre_move.remove(&key) {
                    s.home_node = Some(before);
                }
            }
        }
    }

    fn node_memory(&self) -> Vec<NodeMemory> {
        let root = self.config.sysfs_root.join("devices/system/node");
        self.topology
            .nodes()
            .iter()
            .map(|n| {
                let path = root.join(format!("node{}/meminfo", n.id.0));
                let (mut total, mut free) = (n.mem_total_bytes, n.mem_free_bytes);
                if let Ok(text) = std::fs::read_to_string(path) {
                    for line in text.lines() {
                        let w: Vec<&str> = line.split_whitespace().collect();
                        let v = w
                            .get(3)
                            .and_then(|v| v.parse::<u64>().ok())
                            .map(|k| k * 1024);
                        match (w.get(2), v) {
                            (Some(&"MemTotal:"), Some(v)) => total = v,
                            (Some(&"MemFree:"), Some(v)) => free = v,
                            _ => {}
                        }
                    }
                }
                NodeMemory {
                    node: n.id,
                    total_bytes: total,
                    free_bytes: free.min(total),
                }
            })
            .collect()
    }

    fn counters(
        &mut self,
        samples: &[Sample],
        threads_of: &[(Pid, Vec<ThreadSnapshot>)],
        duration_ns: u64,
    ) -> Counters {
        let n = self.topology.len();
        let mut nodes: Vec<NodeCounters> = self
            .topology
            .nodes()
            .iter()
            .map(|x| NodeCounters {
                node: x.id,
                dram_accesses_by_source: vec![0; n],
                ..NodeCounters::default()
            })
            .collect();
        let mut per_thread: BTreeMap<(Pid, Tid), (NodeId, u64)> = BTreeMap::new();
        for s in samples {
            if let (Some(h), Some(src)) = (
                s.home_node.and_then(|h| self.topology.index_of(h)),
                self.topology.index_of(s.node),
            ) {
                nodes[h].dram_accesses_by_source[src] += 1;
                nodes[h].dram_reads += 1;
            }
            let e = per_thread.entry((s.pid, s.tid)).or_insert((s.node, 0));
            e.1 += 1;
        }
        let mut threads = Vec::new();
        let ticks_ns = 1e9 / 100.0; // USER_HZ is 100 on Linux
        for (pid, list) in threads_of {
            let pid = *pid;
            for t in list {
                let before = self
                    .cpu_ticks
                    .insert((pid, t.tid), t.cpu_ticks)
                    .unwrap_or(0);
                let busy_ns = t.cpu_ticks.saturating_sub(before) as f64 * ticks_ns;
                let node = t
                    .cpu
                    .and_then(|c| self.topology.node_of_cpu(c))
                    .unwrap_or(NodeId(0));
                let accesses = per_thread.get(&(pid, t.tid)).map_or(0, |e| e.1);
                threads.push(ThreadCounters {
                    pid,
                    tid: t.tid,
                    node,
                    instructions: 0,
                    cycles: (busy_ns * self.config.nominal_ghz) as u64,
                    llc_misses: 0,
                    dram_accesses: accesses,
                    dram_writes: 0,
                });
            }
        }
        for t in &threads {
            if let Some(i) = self.topology.index_of(t.node) {
                nodes[i].cycles += t.cycles;
            }
        }
        let estimate = |group, how: &str| Estimate {
            group,
            how: how.to_string(),
        };
        let estimated = vec![
            estimate(
                CounterGroup::NodeDram,
                "DRAM traffic per node: sampled accesses, by page node and CPU node",
            ),
            estimate(
                CounterGroup::ThreadDram,
                "DRAM accesses per thread: sampled accesses",
            ),
            estimate(CounterGroup::Cycles, "cycles: CPU time x nominal clock"),
        ];
        self.signals.estimated = estimated.iter().map(|e| e.how.clone()).collect();
        Counters {
            duration_ns,
            nodes,
            threads,
            links: Vec::new(),
            estimated,
        }
    }

    /// What the policy is told of one process, from its threads as just read (None when it is
    /// gone).
    fn process_info(&self, pid: Pid, threads: Vec<ThreadSnapshot>) -> Option<ProcessInfo> {
        let comm = self.proc.comm(pid).ok().flatten()?;
        let threads = threads
            .into_iter()
            .filter_map(|t| {
                let cpu = t.cpu?;
                Some(ThreadInfo {
                    tid: t.tid,
                    cpu,
                    node: self.topology.node_of_cpu(cpu)?,
                    allowed_cpus: t.allowed_cpus,
                })
            })
            .collect();
        let mut resident = vec![0u64; self.topology.len()];
        let mut mapping_policies = Vec::new();
        if let Ok(Some(maps)) = self.proc.numa_maps(pid) {
            for (k, m) in maps.iter().enumerate() {
                let page_bytes = m.page_size_kb.max(4) * 1024;
                for (node, pages) in &m.pages_by_node {
                    if let Some(i) = self.topology.index_of(*node) {
                        resident[i] += pages * page_bytes;
                    }
                }
                // numa_maps gives only starts; a mapping ends at most where the next
                // begins (addresses in between are unmapped and never sampled).
                if let Some((mode, nodes, numa_balancing)) = m.explicit_policy() {
                    mapping_policies.push(MappingPolicy {
                        start: m.start,
                        end: maps.get(k + 1).map_or(u64::MAX, |n| n.start),
                        mode,
                        nodes,
                        numa_balancing,
                    });
                }
            }
        }
        Some(ProcessInfo {
            pid,
            comm,
            threads,
            resident_bytes_by_node: resident,
            mapping_policies,
        })
    }

    /// Local share of the samples whose page node is known.
    fn lar(samples: &[Sample]) -> Option<f64> {
        let (known, local) = samples
            .iter()
            .filter_map(|s| s.home_node.map(|h| h == s.node))
            .fold((0u64, 0u64), |(k, l), is_local| {
                (k + 1, l + u64::from(is_local))
            });
        (known > 0).then(|| local as f64 / known as f64)
    }

    fn check_exit(&mut self) {
        if let (Some(pid), None) = (self.launched, self.exit) {
            if let Ok(Some(status)) = self.sys.try_wait(pid) {
                self.exit = Some(status);
            }
        }
    }
}

impl<S: Sys> Machine for LinuxMachine<S> {
    type Error = LiveError;

    fn topology(&self) -> &Topology {
        &self.topology
    }

    fn capabilities(&self) -> Capabilities {
        self.probe.capabilities()
    }

    fn processes(&self) -> Vec<ProcessInfo> {
        if self.launch.is_some() {
            return vec![ProcessInfo {
                pid: PENDING,
                comm: "(about to start)".into(),
                threads: Vec::new(),
                resident_bytes_by_node: vec![0; self.topology.len()],
                mapping_policies: Vec::new(),
            }];
        }
        self.managed
            .iter()
            .filter_map(|&pid| {
                let threads = self.proc.threads(pid).ok()?;
                self.process_info(pid, threads)
            })
            .collect()
    }

    fn observe(&mut self, _until_ns: u64) -> Result<Observation, LiveError> {
        self.check_exit();
        self.refresh_managed();
        self.attach_sampler();
        // Which mappings are THP-backed: the full smaps only when the rollup shows any (each
        // read makes the kernel walk the page tables, and this runs every epoch).
        for &pid in &self.managed {
            match self.proc.thp_bytes(pid) {
                Ok(Some(b)) if b > 0 => {
                    let path = self.config.proc_root.join(format!("{}/smaps", pid.0));
                    if let Ok(text) = std::fs::read_to_string(path) {
                        self.thp.insert(pid, thp::parse_smaps(&text));
                    }
                }
                _ => {
                    self.thp.remove(&pid);
                }
            }
        }
        let tail = self.collect_samples();
        self.stats.samples += tail.len() as u64;
        let mut samples = std::mem::take(&mut self.drained);
        samples.extend(tail);
        self.queried = 0;
        let now = Instant::now();
        let duration_ns =
            u64::try_from(now.duration_since(self.epoch_start).as_nanos()).unwrap_or(u64::MAX);
        let start_ns =
            u64::try_from(self.epoch_start.duration_since(self.start).as_nanos()).unwrap_or(0);
        self.epoch_start = now;
        // One read of each process's threads serves the counters and the policy, and one
        // numa_maps read per process serves the policy and the report.
        let threads_of: Vec<(Pid, Vec<ThreadSnapshot>)> = self
            .managed
            .iter()
            .filter_map(|&pid| Some((pid, self.proc.threads(pid).ok()?)))
            .collect();
        self.follow_new_threads(&threads_of);
        let counters = self.counters(&samples, &threads_of, duration_ns);
        let lar = Self::lar(&samples);
        let processes: Vec<ProcessInfo> = threads_of
            .into_iter()
            .filter_map(|(pid, threads)| self.process_info(pid, threads))
            .collect();
        if !self.managed.is_empty() {
            let mut pages = vec![0u64; self.topology.len()];
            for p in &processes {
                for (i, b) in p.resident_bytes_by_node.iter().enumerate() {
                    pages[i] += b / 4096;
                }
            }
            if self.stats.pages_first.is_none() && pages.iter().sum::<u64>() > 0 {
                self.stats.pages_first = Some(pages.clone());
                self.stats.lar_first = lar;
            }
            if pages.iter().sum::<u64>() > 0 {
                self.stats.pages_last = Some(pages);
            }
            if lar.is_some() {
                self.stats.lar_last = lar;
            }
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
    /// start decisions ask for it, then carries out the other start decisions.
    fn start(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, LiveError> {
        if self.launch.is_none() {
            return self.apply(actions);
        }
        let policy = actions.iter().find_map(|a| match a {
            Action::SetMemPolicy { pid, policy } if *pid == PENDING => Some(policy.clone()),
            _ => None,
        });
        self.launch_now(policy.as_ref())?;
        Ok(actions
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                Action::SetMemPolicy { pid, .. } if *pid == PENDING => Outcome::applied(i),
                _ => Outcome::skipped(i, 0, "the program had not started yet"),
            })
            .collect())
    }

    fn apply(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, LiveError> {
        let mut out = Vec::with_capacity(actions.len());
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
            // Moving a whole application moves every thread it has now.
            let threads: Vec<Tid> = match a {
                Action::MoveApplication { .. } => self
                    .proc
                    .threads(pid)
                    .map(|v| v.into_iter().map(|t| t.tid).collect())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            // Pages rondpoint moves are not the kernel's moves (fill_home_nodes).
            match a {
                Action::MigratePages { range, .. }
                | Action::Interleave { range, .. }
                | Action::Replicate { range, .. } => {
                    let size = range.page_size.bytes();
                    if range.count > self.last_seen_node.len() as u64 {
                        self.last_seen_node.retain(|k, _| {
                            k.0 != range.pid || k.1 < range.start || k.1 >= range.end()
                        });
                    } else {
                        for k in 0..range.count {
                            self.last_seen_node
                                .remove(&(range.pid, range.start + k * size));
                        }
                    }
                }
                Action::MoveApplication { .. } => self.last_seen_node.retain(|k, _| k.0 != pid),
                _ => {}
            }
            out.push(actuate::apply(
                &mut self.sys,
                &self.topology,
                i,
                a,
                &threads,
            ));
        }
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
        self.sampling = *request;
        if self.launch.is_none() {
            self.attach_sampler();
        }
    }

    /// Passes SIGTERM on to the launched program, once it has started and until it ends.
    fn interrupt(&mut self) {
        let _ = stop(self, libc::SIGTERM);
    }
}

/// Kills and reaps what is left of a launched program (used when rondpoint itself is stopped).
pub fn stop<S: Sys>(m: &mut LinuxMachine<S>, signal: i32) -> Result<(), LiveError> {
    if let (Some(pid), None) = (m.launched, m.exit) {
        m.sys.kill(pid, signal).map_err(sys_err("kill"))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
