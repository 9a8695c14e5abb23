//! Hardware counters per thread: instructions, cycles and last-level-cache misses, counted
//! with perf_event_open's generic hardware events on every thread a managed process has when
//! it is first seen, each event inherited by the threads and processes that thread creates
//! later (their counts are added to their creator's: per process, nothing is lost or counted
//! twice). Read every epoch, scaled by the time each counter actually ran when the kernel
//! multiplexed it.

use super::LinuxMachine;
use super::process::tids_of;
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

/// The three counters of one thread, in this order.
pub(super) const EVENTS: [u64; 3] = [
    PERF_COUNT_HW_INSTRUCTIONS,
    PERF_COUNT_HW_CPU_CYCLES,
    PERF_COUNT_HW_CACHE_MISSES,
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

/// One epoch's counts of one thread (with whatever it created since its counters opened).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub instructions: u64,
    pub cycles: u64,
    pub llc_misses: u64,
}

/// The counters of the managed processes.
#[derive(Debug, Default)]
pub(super) struct HwCounters {
    /// Per thread that had its own counters opened: the three events and their last reading.
    threads: BTreeMap<(Pid, Tid), [(PerfFd, PerfReading); 3]>,
    /// The processes whose counters opened (or that carry an ancestor's inherited ones).
    counted: BTreeMap<Pid, ()>,
    /// Why counters could not be opened, the last time they could not.
    pub(super) error: Option<String>,
}

impl HwCounters {
    /// Whether `pid` has counters (its own, or its parent's inherited ones).
    pub(super) fn covers(&self, pid: Pid) -> bool {
        self.counted.contains_key(&pid)
    }

    /// Marks `pid` as counted by its parent's inherited events (a process forked after its
    /// parent's counters opened: events of its own would count it twice).
    pub(super) fn inherited(&mut self, pid: Pid) {
        self.counted.insert(pid, ());
    }

    /// Opens the counters of each of `tids`, threads of `pid`. A thread gone meanwhile is
    /// skipped; another error leaves the process uncounted, says why, and closes what opened.
    pub(super) fn open(&mut self, sys: &mut dyn Sys, pid: Pid, tids: &[Tid]) {
        let mut opened = Vec::new();
        for &tid in tids {
            match open_thread(sys, tid) {
                Ok(events) => opened.push(((pid, tid), events)),
                Err(e) if e == Errno::ESRCH => {}
                Err(e) => {
                    for (_, events) in opened {
                        close(sys, &events);
                    }
                    self.error = Some(format!(
                        "perf_event_open (hardware counters) on {pid}: {e}{}",
                        match e {
                            Errno::EACCES | Errno::EPERM =>
                                ": counting another process needs CAP_PERFMON, or \
                                 kernel.perf_event_paranoid <= 2 for your own processes",
                            _ => "",
                        }
                    ));
                    return;
                }
            }
        }
        self.threads.extend(opened);
        self.counted.insert(pid, ());
    }

    /// The counts since the last read, per thread with counters of its own.
    pub(super) fn read(&mut self, sys: &mut dyn Sys) -> BTreeMap<(Pid, Tid), Counts> {
        let mut out = BTreeMap::new();
        for (&key, events) in &mut self.threads {
            let mut delta = [0u64; 3];
            for (k, (fd, last)) in events.iter_mut().enumerate() {
                // A thread that has exited keeps its final count; a read that fails counts
                // nothing this epoch.
                if let Ok(now) = sys.perf_read(*fd) {
                    delta[k] = now.scaled_since(last);
                    *last = now;
                }
            }
            out.insert(
                key,
                Counts {
                    instructions: delta[0],
                    cycles: delta[1],
                    llc_misses: delta[2],
                },
            );
        }
        out
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

fn open_thread(sys: &mut dyn Sys, tid: Tid) -> Result<[(PerfFd, PerfReading); 3], Errno> {
    let mut fds = Vec::with_capacity(3);
    for config in EVENTS {
        match sys.perf_open(&counter_attr(config), Pid(tid.0), -1) {
            Ok(fd) => fds.push((fd, PerfReading::default())),
            Err(e) => {
                for (fd, _) in fds {
                    sys.perf_close(fd);
                }
                return Err(e);
            }
        }
    }
    fds.try_into().map_err(|_| Errno::EINVAL)
}

fn close(sys: &mut dyn Sys, events: &[(PerfFd, PerfReading); 3]) {
    for (fd, _) in events {
        sys.perf_close(*fd);
    }
}

impl<S: Sys> LinuxMachine<S> {
    /// Opens hardware counters on managed processes that have none yet, when the policy asks
    /// for them and the machine has them; closes those of processes no longer managed.
    pub(super) fn attach_counters(&mut self) {
        if !self.sampling.counters || self.probe().hardware_counters.is_err() {
            self.hw = None;
            return;
        }
        let mut hw = self.hw.take().unwrap_or_default();
        hw.retain(&mut self.sys, |p| self.managed.contains(&p));
        for &pid in &self.managed {
            if hw.covers(pid) {
                continue;
            }
            // A process forked after its parent's counters opened carries them already.
            let parent = self.proc.stat(pid).ok().flatten().map(|st| st.ppid);
            if parent.is_some_and(|pp| hw.covers(pp)) {
                hw.inherited(pid);
                continue;
            }
            hw.open(&mut self.sys, pid, &tids_of(&self.proc, pid));
        }
        self.signals.counters_error.clone_from(&hw.error);
        self.hw = Some(hw);
    }

    /// The hardware counts of the epoch per thread with counters of its own, and the
    /// processes counted (empty when there are no counters).
    pub(super) fn read_counters(&mut self) -> (BTreeMap<(Pid, Tid), Counts>, Vec<Pid>) {
        let Some(hw) = self.hw.as_mut() else {
            return (BTreeMap::new(), Vec::new());
        };
        let counted = self
            .managed
            .iter()
            .copied()
            .filter(|&p| hw.covers(p))
            .collect();
        (hw.read(&mut self.sys), counted)
    }
}
