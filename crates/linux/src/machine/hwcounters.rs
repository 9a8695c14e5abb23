//! Hardware counters per thread: instructions, cycles and last-level-cache misses, counted
//! with perf_event_open's generic hardware events, and where the CPU's core PMU has events for
//! them (pmu/events.rs: Ice Lake-SP, Sapphire Rapids, Zen 3, Zen 4) its loads served by DRAM
//! of its own node and of others, on every thread a managed process has when it is first seen,
//! each event inherited by the threads and processes that thread creates later (their counts
//! are added to their creator's: per process, nothing is lost or counted twice). Read every
//! epoch, scaled by the time each counter actually ran when the kernel multiplexed it.

use super::LinuxMachine;
use super::process::tids_of;
use super::uncore::MachinePmus;
use crate::pmu::attrs::{PlannedAttr, Target};
use crate::pmu::events::{Encoding, Signal};
use crate::sys::{Errno, PerfAttr, PerfFd, PerfReading, Sys};
use rondpoint_model::{Pid, Tid};
use std::collections::BTreeMap;

/// PERF_TYPE_HARDWARE and its generic events (include/uapi/linux/perf_event.h).
const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
/// The generic "cache misses" event, which the kernel maps to last-level-cache misses on x86
/// (Intel: LONGEST_LAT_CACHE.MISS; AMD: the L3 or memory-fill event of each family).
const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;

/// The generic counters every thread gets, with their `perf_hw_id`, in the order opened.
const BASE: [(Event, u64); 3] = [
    (Event::Instructions, PERF_COUNT_HW_INSTRUCTIONS),
    (Event::Cycles, PERF_COUNT_HW_CPU_CYCLES),
    (Event::LlcMisses, PERF_COUNT_HW_CACHE_MISSES),
];

/// The counting event for one generic hardware event: user-space only (what an unprivileged
/// user may count on its own processes at kernel.perf_event_paranoid 2), inherited.
pub(super) fn counter_attr(config: u64) -> PerfAttr {
    PerfAttr {
        kind: PERF_TYPE_HARDWARE,
        config,
        exclude_kernel: true,
        inherit: true,
        ..PerfAttr::default()
    }
}

/// The three counters as rondpoint opens them on a task, with perf's names for the same
/// events counted in user space (`instructions:u`, `cycles:u`, `cache-misses:u`): what
/// `rondpoint doctor --self-check` compares with perf stat.
pub fn thread_counter_attrs() -> [(&'static str, PerfAttr); 3] {
    [
        ("instructions:u", counter_attr(PERF_COUNT_HW_INSTRUCTIONS)),
        ("cycles:u", counter_attr(PERF_COUNT_HW_CPU_CYCLES)),
        ("cache-misses:u", counter_attr(PERF_COUNT_HW_CACHE_MISSES)),
    ]
}

/// What one of a thread's counters counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Instructions,
    Cycles,
    LlcMisses,
    DramLocal,
    DramRemote,
}

/// The core PMU's events for a thread's loads served by DRAM of its own node and of other
/// nodes (`mem_load_l3_miss_retired.local_dram` / `remote_dram` on Intel,
/// `ls_any_fills_from_sys.mem_io_local` / `mem_io_remote` on AMD), one attr per core PMU unit
/// that has them, as the machine's plan gives them (user space only, inherited).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct DramEvents(Vec<(Event, PerfAttr)>);

impl DramEvents {
    /// The plan's per-thread DRAM events.
    pub(super) fn of(attrs: &[PlannedAttr]) -> Result<Self, NoDramEvents> {
        let events = dram_attrs(attrs)?;
        Ok(Self(
            events
                .into_iter()
                .map(|(e, a)| (e, a.attr.clone()))
                .collect(),
        ))
    }
}

/// Why a machine's threads' DRAM loads are not counted: its plan has no event for them (both,
/// local and remote, are needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "no core PMU event counts a thread's DRAM loads by node on this CPU (rondpoint has them \
     for Ice Lake-SP, Sapphire Rapids, Zen 3 and Zen 4)"
)]
pub struct NoDramEvents;

/// The per-thread DRAM events of a plan, local then remote.
fn dram_attrs(attrs: &[PlannedAttr]) -> Result<Vec<(Event, &PlannedAttr)>, NoDramEvents> {
    let of = |signal: Signal, event: Event| {
        attrs
            .iter()
            .filter(move |a| a.target == Target::Task && a.event.signal == signal)
            .map(move |a| (event, a))
    };
    let local: Vec<_> = of(Signal::DramLocal, Event::DramLocal).collect();
    let remote: Vec<_> = of(Signal::DramRemote, Event::DramRemote).collect();
    if local.is_empty() || remote.is_empty() {
        return Err(NoDramEvents);
    }
    Ok(local.into_iter().chain(remote).collect())
}

/// A plan's per-thread DRAM load events as rondpoint opens them, each with the event string
/// perf takes for the same count in user space (`cpu/event=0xd3,umask=0x1/u`), or why there
/// are none: for reports about a machine rondpoint does not run on (`rondpoint doctor`) and
/// for `doctor --self-check`.
pub fn thread_dram_events_of(
    planned: &[PlannedAttr],
) -> Result<Vec<(String, PerfAttr)>, NoDramEvents> {
    Ok(dram_attrs(planned)?
        .into_iter()
        .map(|(_, a)| {
            let perf = match a.event.encoding {
                Encoding::Terms(terms) => format!("{}/{terms}/u", a.unit),
                Encoding::Generic { perf, .. } => format!("{perf}:u"),
            };
            (perf, a.attr.clone())
        })
        .collect())
}

/// One epoch's counts of one thread (with whatever it created since its counters opened).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub instructions: u64,
    pub cycles: u64,
    pub llc_misses: u64,
    /// Loads served by DRAM of the thread's node, and of other nodes (0 where not counted).
    pub dram_local: u64,
    pub dram_remote: u64,
}

impl Counts {
    fn add(&mut self, event: Event, n: u64) {
        let field = match event {
            Event::Instructions => &mut self.instructions,
            Event::Cycles => &mut self.cycles,
            Event::LlcMisses => &mut self.llc_misses,
            Event::DramLocal => &mut self.dram_local,
            Event::DramRemote => &mut self.dram_remote,
        };
        *field = field.saturating_add(n);
    }
}

/// One open counter of a thread and its last reading.
#[derive(Debug)]
struct Open {
    event: Event,
    fd: PerfFd,
    last: PerfReading,
}

/// The processes counted, and of them those whose DRAM loads are counted too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Counted {
    pub pids: Vec<Pid>,
    pub dram: Vec<Pid>,
}

/// The counters of the managed processes.
#[derive(Debug, Default)]
pub(super) struct HwCounters {
    /// Per thread that had its own counters opened: its events and their last readings.
    threads: BTreeMap<(Pid, Tid), Vec<Open>>,
    /// The processes whose counters opened (or that carry an ancestor's inherited ones), and
    /// whether their DRAM loads are counted.
    counted: BTreeMap<Pid, bool>,
    /// The per-thread DRAM events to open (none where the machine has none).
    pub(super) dram: DramEvents,
    /// Why counters could not be opened, the last time they could not.
    pub(super) error: Option<String>,
    /// Why a process's DRAM loads could not be counted, the last time they could not.
    pub(super) dram_error: Option<String>,
}

impl HwCounters {
    /// Whether `pid` has counters (its own, or its parent's inherited ones).
    pub(super) fn covers(&self, pid: Pid) -> bool {
        self.counted.contains_key(&pid)
    }

    /// Marks `pid` as counted by its parent's inherited events (a process forked after its
    /// parent's counters opened: events of its own would count it twice).
    pub(super) fn inherited(&mut self, pid: Pid, parent: Pid) {
        let dram = self.counted.get(&parent).copied().unwrap_or(false);
        self.counted.insert(pid, dram);
    }

    /// Opens the counters of each of `tids`, threads of `pid`. A thread gone meanwhile is
    /// skipped; another error leaves the process uncounted, says why, and closes what opened.
    /// DRAM events that do not open leave the process counted without them (and say why).
    pub(super) fn open(&mut self, sys: &mut dyn Sys, pid: Pid, tids: &[Tid]) {
        let base: Vec<(Event, PerfAttr)> = BASE
            .iter()
            .map(|&(e, config)| (e, counter_attr(config)))
            .collect();
        let mut dram = !self.dram.0.is_empty();
        let mut opened: Vec<((Pid, Tid), Vec<Open>)> = Vec::new();
        for &tid in tids {
            let mut events = match open_events(sys, tid, &base) {
                Ok(events) => events,
                Err(e) if e == Errno::ESRCH => continue,
                Err(e) => {
                    for (_, events) in opened {
                        close(sys, &events);
                    }
                    self.error = Some(format!(
                        "perf_event_open (hardware counters) on {pid}: {e}{}",
                        refusal_hint(e)
                    ));
                    return;
                }
            };
            if dram {
                match open_events(sys, tid, &self.dram.0) {
                    Ok(more) => events.extend(more),
                    Err(e) if e == Errno::ESRCH => {}
                    Err(e) => {
                        // Counted without them: close the DRAM events of the threads before.
                        dram = false;
                        for (_, events) in &mut opened {
                            events.retain(|o| {
                                let keep = BASE.iter().any(|&(e, _)| e == o.event);
                                if !keep {
                                    sys.perf_close(o.fd);
                                }
                                keep
                            });
                        }
                        self.dram_error = Some(format!(
                            "perf_event_open (DRAM load counters) on {pid}: {e}{}",
                            refusal_hint(e)
                        ));
                    }
                }
            }
            opened.push(((pid, tid), events));
        }
        self.threads.extend(opened);
        self.counted.insert(pid, dram);
    }

    /// The counts since the last read, per thread with counters of its own.
    pub(super) fn read(&mut self, sys: &mut dyn Sys) -> BTreeMap<(Pid, Tid), Counts> {
        let mut out = BTreeMap::new();
        for (&key, events) in &mut self.threads {
            let mut counts = Counts::default();
            for o in events.iter_mut() {
                // A thread that has exited keeps its final count; a read that fails counts
                // nothing this epoch.
                if let Ok(now) = sys.perf_read(o.fd) {
                    counts.add(o.event, now.scaled_since(&o.last));
                    o.last = now;
                }
            }
            out.insert(key, counts);
        }
        out
    }

    /// The processes counted, of `managed`.
    pub(super) fn counted(&self, managed: impl Iterator<Item = Pid>) -> Counted {
        let mut c = Counted::default();
        for pid in managed {
            if let Some(&dram) = self.counted.get(&pid) {
                c.pids.push(pid);
                if dram {
                    c.dram.push(pid);
                }
            }
        }
        c
    }

    /// Closes the counters of processes no longer managed.
    pub(super) fn retain(&mut self, sys: &mut dyn Sys, managed: impl Fn(Pid) -> bool) {
        self.threads.retain(|&(pid, _), events| {
            let keep = managed(pid);
            if !keep {
                close(sys, events);
            }
            keep
        });
        self.counted.retain(|&pid, _| managed(pid));
    }
}

/// Why perf_event_open refused, for a user: the rights it takes.
fn refusal_hint(e: Errno) -> &'static str {
    match e {
        Errno::EACCES | Errno::EPERM => {
            ": counting another process needs CAP_PERFMON, or kernel.perf_event_paranoid <= 2 \
             for your own processes"
        }
        _ => "",
    }
}

/// Opens `events` on thread `tid`; on an error, closes those opened.
fn open_events(
    sys: &mut dyn Sys,
    tid: Tid,
    events: &[(Event, PerfAttr)],
) -> Result<Vec<Open>, Errno> {
    let mut fds = Vec::with_capacity(events.len());
    for (event, attr) in events {
        match sys.perf_open(attr, Pid(tid.0), -1) {
            Ok(fd) => fds.push(Open {
                event: *event,
                fd,
                last: PerfReading::default(),
            }),
            Err(e) => {
                close(sys, &fds);
                return Err(e);
            }
        }
    }
    Ok(fds)
}

fn close(sys: &mut dyn Sys, events: &[Open]) {
    for o in events {
        sys.perf_close(o.fd);
    }
}

impl<S: Sys> LinuxMachine<S> {
    /// Whether this machine's per-thread DRAM events open (on rondpoint itself, closed
    /// again), for the probe; `Some` says why they are not counted. Keeps them for
    /// [`Self::attach_counters`].
    pub(super) fn probe_thread_dram(&mut self, machine: &MachinePmus) -> Option<String> {
        let events = match DramEvents::of(&machine.attrs) {
            Ok(e) => e,
            Err(why) => return Some(why.to_string()),
        };
        match open_events(&mut self.sys, Tid(0), &events.0) {
            Ok(fds) => {
                close(&mut self.sys, &fds);
                self.dram_events = events;
                None
            }
            Err(e) => Some(format!(
                "the core PMU's DRAM load events did not open (perf_event_open: {}{})",
                e.name(),
                refusal_hint(e)
            )),
        }
    }

    /// Opens hardware counters on managed processes that have none yet, when the policy asks
    /// for them and the machine has them; closes those of processes no longer managed.
    pub(super) fn attach_counters(&mut self) {
        if !self.sampling.counters || self.probe().hardware_counters.is_err() {
            self.hw = None;
            return;
        }
        let mut hw = self.hw.take().unwrap_or_else(|| HwCounters {
            dram: self.dram_events.clone(),
            ..HwCounters::default()
        });
        hw.retain(&mut self.sys, |p| self.managed.contains(&p));
        for &pid in &self.managed {
            if hw.covers(pid) {
                continue;
            }
            // A process forked after its parent's counters opened carries them already.
            let parent = self.proc.stat(pid).ok().flatten().map(|st| st.ppid);
            if let Some(pp) = parent.filter(|&pp| hw.covers(pp)) {
                hw.inherited(pid, pp);
                continue;
            }
            hw.open(&mut self.sys, pid, &tids_of(&self.proc, pid));
        }
        self.signals.counters_error.clone_from(&hw.error);
        self.signals.dram_counters_error.clone_from(&hw.dram_error);
        self.hw = Some(hw);
    }

    /// The hardware counts of the epoch per thread with counters of its own, and the
    /// processes counted (none when there are no counters).
    pub(super) fn read_counters(&mut self) -> (BTreeMap<(Pid, Tid), Counts>, Counted) {
        let Some(hw) = self.hw.as_mut() else {
            return (BTreeMap::new(), Counted::default());
        };
        let counted = hw.counted(self.managed.iter().copied());
        (hw.read(&mut self.sys), counted)
    }
}
