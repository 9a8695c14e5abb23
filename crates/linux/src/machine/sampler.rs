//! The page-fault sampler: perf events on the managed processes (inherited, one per CPU) and
//! on the threads inherited events miss (one each, on every CPU), drained into samples.

use super::process::tids_of;
use super::{LinuxMachine, LiveConfig};
use crate::capabilities;
use crate::perf::ring::{self, RawSample, Record, RingError, SampleFormat};
use crate::procfs::ThreadSnapshot;
use crate::sys::{Errno, PerfAttr, PerfFd, Sys};
use crate::thp;
use rondpoint_model::{AccessKind, CpuId, PageSize, Pid, Sample, SampleSource, Tid};
use std::collections::{BTreeMap, BTreeSet};

/// Share of an epoch's samples lost to full ring buffers above which the log warns (%): below
/// it, a policy's counts per page are off by less than the sampling's own noise at the rates
/// Carrefour samples (chosen; no paper gives a figure).
pub(crate) const LOST_WARN_PCT: f64 = 5.0;

/// The log line for an epoch that kept `kept` samples and lost `lost`: none without a loss,
/// a warning (`true`) above [`LOST_WARN_PCT`], an information line below.
fn lost_line(epoch: u64, kept: u64, lost: u64) -> Option<(bool, String)> {
    if lost == 0 {
        return None;
    }
    let all = kept + lost;
    let share = 100.0 * lost as f64 / all as f64;
    Some(if share > LOST_WARN_PCT {
        (
            true,
            format!(
                "epoch {epoch}: {lost} of {all} samples lost ({share:.0}%, above \
                 {LOST_WARN_PCT}%): the ring buffers filled faster than rondpoint read them (a \
                 busy machine, or a sampling period too short); decisions rest on the rest"
            ),
        )
    } else {
        (
            false,
            format!("epoch {epoch}: {lost} of {all} samples lost ({share:.1}%)"),
        )
    })
}

/// The page-fault sampler's sample_type: the faulting thread, address and CPU.
pub const PAGE_FAULT_FORMAT: SampleFormat = SampleFormat {
    sample_type: SampleFormat::TID | SampleFormat::ADDR | SampleFormat::CPU,
};

/// Per-process sampling state.
#[derive(Debug)]
pub(super) struct Sampler {
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
    /// Descendants that already existed when an ancestor's inherited events opened (listed
    /// just before): they carry none of those events, however late they are first seen (a
    /// program's shell forks its children before the first epoch attaches the sampler).
    predate: BTreeSet<Pid>,
    /// The threads last listed of each process that had threads besides its main one when
    /// its sampler opened. Those threads' events are not inherited, so the threads they
    /// create later carry no event: every thread that appears in such a process gets one of
    /// its own (one that also carries the inherited events only counts once: see
    /// `collect_samples`), and a thread's event closes once it is gone.
    threads: BTreeMap<Pid, BTreeSet<Tid>>,
    round: u64,
    format: SampleFormat,
    /// The event of a process (inherited, per CPU) and of a thread (not inherited, on every
    /// CPU).
    process_attr: PerfAttr,
    thread_attr: PerfAttr,
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

/// What one drain of the rings found.
struct Drained {
    /// Each sample with the process whose events recorded it.
    samples: Vec<(Pid, RawSample)>,
    /// The processes whose ring is unreadable, with why.
    unreadable: Vec<(Pid, RingError)>,
}

/// The page-fault sampler's event: inherited (a process's, per CPU) or not (a thread's, on
/// every CPU). Ring pages per CPU: a power of two, smaller on machines with many CPUs.
fn sampler_attr(
    config: &LiveConfig,
    cpus: usize,
    format: &SampleFormat,
    inherit: bool,
) -> PerfAttr {
    let ring_pages = (config.ring_pages * 8 / cpus.max(1))
        .clamp(4, config.ring_pages.max(4))
        .next_power_of_two();
    PerfAttr {
        kind: 1,   // PERF_TYPE_SOFTWARE
        config: 2, // PERF_COUNT_SW_PAGE_FAULTS
        sample_period: 1,
        sample_type: format.sample_type,
        inherit,
        ring_pages,
        ..PerfAttr::default()
    }
}

impl Sampler {
    fn new(config: &LiveConfig, cpus: usize) -> Self {
        let format = PAGE_FAULT_FORMAT;
        Self {
            fds: BTreeMap::new(),
            first_seen: BTreeMap::new(),
            sampled_in: BTreeMap::new(),
            predate: BTreeSet::new(),
            threads: BTreeMap::new(),
            round: 0,
            process_attr: sampler_attr(config, cpus, &format, true),
            thread_attr: sampler_attr(config, cpus, &format, false),
            format,
            buffer: Vec::new(),
            lost: 0,
            throttled: 0,
        }
    }

    /// Whether `pid` carries the inherited events of its parent: a process first seen after
    /// its parent was sampled, and not listed among the parent's descendants just before its
    /// events opened, was forked after they opened. (One forked between that listing and the
    /// opening, a few system calls apart, is taken as inheriting them.)
    fn inherits_from(&self, pid: Pid, parent: Option<Pid>) -> bool {
        let parent_round = parent.and_then(|pp| self.sampled_in.get(&pp).copied());
        !self.predate.contains(&pid)
            && parent_round.is_some_and(|r| self.first_seen.get(&pid).is_some_and(|&f| f > r))
    }

    /// Opens the inherited events of `pid`, one per CPU. The error is why none opened; `None`
    /// when the process is gone.
    fn open_cpus(
        &mut self,
        sys: &mut dyn Sys,
        pid: Pid,
        cpus: &[u32],
    ) -> Result<(), Option<Errno>> {
        let mut opened = 0;
        let mut last_error = None;
        for &cpu in cpus {
            match sys.perf_open(&self.process_attr, pid, cpu as i32) {
                Ok(fd) => {
                    self.fds.insert((pid, SamplerTarget::Cpu(cpu)), fd);
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
        if opened > 0 { Ok(()) } else { Err(last_error) }
    }

    /// Opens the event of one thread of `pid`, following it on every CPU (it is not
    /// inherited: perf_mmap refuses only inherited events without a CPU).
    fn open_thread(&mut self, sys: &mut dyn Sys, pid: Pid, tid: Tid) -> Result<(), Errno> {
        let fd = sys.perf_open(&self.thread_attr, Pid(tid.0), -1)?;
        self.fds.insert((pid, SamplerTarget::Thread(tid)), fd);
        Ok(())
    }

    /// Closes the events of the processes `gone` names.
    fn close_processes(&mut self, sys: &mut dyn Sys, gone: impl Fn(&Pid) -> bool) {
        let keys: Vec<(Pid, SamplerTarget)> =
            self.fds.keys().copied().filter(|(p, _)| gone(p)).collect();
        for key in keys {
            self.close(sys, key);
        }
    }

    fn close(&mut self, sys: &mut dyn Sys, key: (Pid, SamplerTarget)) {
        if let Some(fd) = self.fds.remove(&key) {
            sys.perf_close(fd);
        }
    }

    /// Drains every ring. A sample of a thread with an event of its own is taken from that
    /// event only, not also from the process's inherited ones.
    fn drain(&mut self, sys: &mut dyn Sys) -> Drained {
        let mut raw = Vec::new();
        let mut unreadable = Vec::new();
        let own_event: BTreeSet<(Pid, u32)> = self
            .fds
            .keys()
            .filter_map(|&(p, t)| match t {
                SamplerTarget::Thread(tid) => Some((p, tid.0 as u32)),
                SamplerTarget::Cpu(_) => None,
            })
            .collect();
        for (&(pid, target), &fd) in &self.fds {
            self.buffer.clear();
            if sys.perf_drain(fd, &mut self.buffer).is_err() {
                continue;
            }
            let records = match ring::parse(&self.buffer, &self.format) {
                Ok((records, _)) => records,
                Err(e) => {
                    unreadable.push((pid, e));
                    continue;
                }
            };
            for r in records {
                match r {
                    Record::Sample(s) => {
                        let shadowed = matches!(target, SamplerTarget::Cpu(_))
                            && s.tid.is_some_and(|t| own_event.contains(&(pid, t)));
                        if !shadowed {
                            raw.push((pid, s));
                        }
                    }
                    Record::Lost { lost, .. } => self.lost += lost,
                    Record::Throttle => self.throttled += 1,
                    _ => {}
                }
            }
        }
        Drained {
            samples: raw,
            unreadable,
        }
    }
}

impl<S: Sys> LinuxMachine<S> {
    /// Opens the page-fault sampler on managed processes that do not have one yet.
    pub(super) fn attach_sampler(&mut self) {
        // Access samples come from the precise sampler where it opens; page faults stand in
        // for them elsewhere, and give the hinting faults a policy asks for everywhere.
        let precise = self.attach_precise();
        let wants =
            (self.sampling.period_cycles.is_some() && !precise) || self.sampling.hinting.is_some();
        if !wants {
            if let Some(mut s) = self.sampler.take() {
                s.close_processes(&mut self.sys, |_| true);
            }
            return;
        }
        let cpus: Vec<u32> = self
            .topology
            .nodes()
            .iter()
            .flat_map(|n| n.cpus.iter().map(|c| c.0))
            .collect();
        let sampler = self
            .sampler
            .get_or_insert_with(|| Sampler::new(&self.config, cpus.len()));
        sampler.round += 1;
        let round = sampler.round;
        for &pid in &self.managed {
            sampler.first_seen.entry(pid).or_insert(round);
        }
        sampler.first_seen.retain(|p, _| self.managed.contains(p));
        sampler.sampled_in.retain(|p, _| self.managed.contains(p));
        let proc = &self.proc;
        let managed = &self.managed;
        sampler
            .predate
            .retain(|p| managed.contains(p) || proc.stat(*p).ok().flatten().is_some());
        // Processes the policy leaves unsampled lose their events; they are opened again
        // when it samples them again. (Every fault is a sample here: a period of its own
        // does not apply.)
        let request = &self.sampling;
        let unsampled = |p: &Pid| request.left_out(*p);
        sampler.close_processes(&mut self.sys, unsampled);
        sampler.sampled_in.retain(|p, _| !unsampled(p));
        for &pid in &self.managed {
            if sampler.sampled_in.contains_key(&pid) || unsampled(&pid) {
                continue;
            }
            let parent = self.proc.stat(pid).ok().flatten().map(|st| st.ppid);
            if sampler.inherits_from(pid, parent) {
                sampler.sampled_in.insert(pid, round);
                continue;
            }
            // Its descendants so far, forked before its events open: none inherits them.
            let older = self.proc.descendants(pid).unwrap_or_default();
            match sampler.open_cpus(&mut self.sys, pid, &cpus) {
                Ok(()) => sampler.predate.extend(older),
                Err(None) => continue,
                Err(Some(e)) => {
                    self.signals.sampler_error = Some(match e {
                        Errno::EACCES | Errno::EPERM => format!(
                            "perf_event_open on {pid}: {e}: sampling another process needs \
                             CAP_PERFMON (or CAP_SYS_ADMIN), or kernel.perf_event_paranoid <= 1 \
                             for your own processes"
                        ),
                        _ => format!("perf_event_open on {pid}: {e}"),
                    });
                    continue;
                }
            }
            sampler.sampled_in.insert(pid, round);
            // Threads that exist now may predate the inherited events, which then miss
            // them: each gets its own event, and the inherited events' samples of those
            // threads are dropped (collect_samples) so that none counts twice.
            let existing = tids_of(&self.proc, pid);
            for &tid in existing.iter().filter(|t| t.0 != pid.0) {
                // A thread that exits meanwhile needs no event.
                let _ = sampler.open_thread(&mut self.sys, pid, tid);
            }
            if existing.iter().any(|t| t.0 != pid.0) {
                sampler.threads.insert(pid, existing.into_iter().collect());
            }
            self.signals.sampler = Some(
                "page faults (first touches; NUMA hinting faults when kernel.numa_balancing is 1 \
                 or 3, or 2 on slower-tier memory)"
                    .into(),
            );
        }
    }

    /// Gives each thread that appeared since the last epoch in a process whose older threads
    /// have events of their own (not inherited: a thread they create carries none) an event of
    /// its own, and closes the events of threads that are gone. Runs after the epoch's rings
    /// are drained: from the next drain on, the inherited events' samples of a thread with its
    /// own event are dropped, so none is lost or counted twice.
    pub(super) fn follow_new_threads(&mut self, threads_of: &[(Pid, Vec<ThreadSnapshot>)]) {
        let Some(sampler) = self.sampler.as_mut() else {
            return;
        };
        sampler.threads.retain(|p, _| self.managed.contains(p));
        for (pid, threads) in threads_of {
            let Some(known) = sampler.threads.get(pid) else {
                continue;
            };
            let now: BTreeSet<Tid> = threads.iter().map(|t| t.tid).collect();
            let appeared: Vec<Tid> = now.difference(known).copied().collect();
            let gone: Vec<Tid> = known.difference(&now).copied().collect();
            for tid in appeared {
                if tid.0 == pid.0 {
                    continue;
                }
                match sampler.open_thread(&mut self.sys, *pid, tid) {
                    Ok(()) => {}
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
            for tid in gone {
                sampler.close(&mut self.sys, (*pid, SamplerTarget::Thread(tid)));
            }
            sampler.threads.insert(*pid, now);
        }
    }

    /// Logs the samples the rings lost this epoch ([`lost_line`]).
    pub(super) fn log_lost(&mut self) {
        let (kept, lost) = (self.stats.samples, self.stats.lost_samples);
        let (kept_before, lost_before) = self.samples_logged;
        self.samples_logged = (kept, lost);
        let kept = kept.saturating_sub(kept_before);
        let lost = lost.saturating_sub(lost_before);
        match lost_line(self.epoch, kept, lost) {
            Some((true, line)) => tracing::warn!("{line}"),
            Some((false, line)) => tracing::info!("{line}"),
            None => {}
        }
    }

    /// Drains the rings and turns records into samples.
    pub(super) fn collect_samples(&mut self) -> Vec<Sample> {
        let mut out = self.precise_samples();
        let (precise_lost, precise_throttled) = self.precise_losses();
        self.stats.lost_samples = precise_lost;
        self.stats.sampler_throttled = precise_throttled;
        out.extend(self.page_fault_samples());
        self.fill_home_nodes(&mut out);
        // With memory tiering alone, the kernel's scan makes hinting faults only on
        // slower-tier pages: a fault on one of those is taken for a hinting fault (the event
        // does not tell it from the first touch of a page allocated there), any other for a
        // first touch.
        if capabilities::tiering_only(self.signals.numa_balancing) {
            let slower = self.slower_tier();
            for s in &mut out {
                if s.source == SampleSource::PageFault
                    && s.home_node.is_some_and(|h| slower.contains(&h))
                {
                    s.source = SampleSource::HintingFault;
                }
            }
        }
        out
    }

    /// Drains the page-fault sampler's rings into samples (without their page's node).
    fn page_fault_samples(&mut self) -> Vec<Sample> {
        let Some(sampler) = self.sampler.as_mut() else {
            return Vec::new();
        };
        let Drained {
            samples: raw,
            unreadable,
        } = sampler.drain(&mut self.sys);
        for (pid, e) in &unreadable {
            // An unreadable ring: this process's sampling stops, and the report says so.
            self.signals.sampler_error = Some(format!(
                "sampling of {pid} stopped: its ring is unreadable: {e}"
            ));
        }
        // Stop sampling processes that are gone.
        sampler.close_processes(&mut self.sys, |p| {
            !self.managed.contains(p) || unreadable.iter().any(|(q, _)| q == p)
        });
        self.stats.lost_samples += sampler.lost;
        self.stats.sampler_throttled += sampler.throttled;
        raw.into_iter()
            .filter_map(|(root, s)| self.sample_of(root, &s))
            .collect()
    }

    /// The size of the page at `addr` in `pid`: 2 MiB in its THP-backed mappings as last read.
    pub(super) fn page_size_at(&self, pid: Pid, addr: u64) -> PageSize {
        self.thp
            .get(&pid)
            .map_or(PageSize::Base4K, |m| thp::page_size_of(m, addr))
    }

    /// A page-fault record of a process `root` sampled, as a sample (without its page's node);
    /// `None` without an address or a known CPU.
    fn sample_of(&self, root: Pid, s: &RawSample) -> Option<Sample> {
        let (Some(addr), Some(cpu)) = (s.addr, s.cpu) else {
            return None;
        };
        let pid = s.pid.map_or(root, |p| Pid(p as i32));
        let tid = s.tid.map_or(Tid(pid.0), |t| Tid(t as i32));
        let node = self.topology.node_of_cpu(CpuId(cpu))?;
        let page_size = self.page_size_at(pid, addr);
        Some(Sample {
            pid,
            tid,
            cpu: CpuId(cpu),
            node,
            addr,
            page_size,
            kind: AccessKind::Read,
            // Every fault may be a hinting fault when the kernel balances (1 or 3): the event
            // does not tell them from first touches.
            source: if capabilities::balances(self.signals.numa_balancing) {
                SampleSource::HintingFault
            } else {
                SampleSource::PageFault
            },
            latency_cycles: None,
            dram: None,
            home_node: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::lost_line;

    #[test]
    fn losses_above_the_share_are_warnings() {
        assert_eq!(lost_line(3, 1000, 0), None);
        let (warn, line) = lost_line(3, 990, 10).unwrap();
        assert!(!warn);
        assert_eq!(line, "epoch 3: 10 of 1000 samples lost (1.0%)");
        let (warn, line) = lost_line(4, 28_013, 55_391).unwrap();
        assert!(warn);
        assert!(
            line.starts_with("epoch 4: 55391 of 83404 samples lost (66%, above 5%)"),
            "{line}"
        );
        // Everything lost: no division by zero.
        assert!(lost_line(5, 0, 7).unwrap().0);
    }
}
