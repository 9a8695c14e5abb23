//! Every system call rondpoint makes, behind one trait.
//!
//! [`RealSys`] (real.rs) is the only place in rondpoint with `unsafe` code: each block states
//! why it is sound, and each function only translates arguments and errno. [`FakeSys`]
//! (fake.rs) records every call and returns scripted results, so the backend's logic, including
//! every error path, is tested on any machine.

mod fake;
#[allow(unsafe_code)]
mod real;

pub use fake::{Call, FakeSys};
pub use real::RealSys;

use rondpoint_model::{CpuId, Pid, Tid};
use std::ffi::OsString;
use std::fmt;

/// A failed system call's errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const ESRCH: Errno = Errno(libc::ESRCH);
    pub const EINTR: Errno = Errno(libc::EINTR);
    pub const EFAULT: Errno = Errno(libc::EFAULT);
    pub const EBUSY: Errno = Errno(libc::EBUSY);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const ENOMEM: Errno = Errno(libc::ENOMEM);
    pub const EACCES: Errno = Errno(libc::EACCES);
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    pub const ENOSYS: Errno = Errno(libc::ENOSYS);
    pub const EOPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    pub const E2BIG: Errno = Errno(libc::E2BIG);
    pub const EXDEV: Errno = Errno(libc::EXDEV);

    /// The symbolic name ("EPERM"), or `E<n>`.
    pub fn name(self) -> String {
        let known = [
            (Self::EPERM, "EPERM"),
            (Self::ENOENT, "ENOENT"),
            (Self::ESRCH, "ESRCH"),
            (Self::EINTR, "EINTR"),
            (Self::EFAULT, "EFAULT"),
            (Self::EBUSY, "EBUSY"),
            (Self::EINVAL, "EINVAL"),
            (Self::ENOMEM, "ENOMEM"),
            (Self::EACCES, "EACCES"),
            (Self::ENODEV, "ENODEV"),
            (Self::ENOSYS, "ENOSYS"),
            (Self::EOPNOTSUPP, "EOPNOTSUPP"),
            (Self::E2BIG, "E2BIG"),
            (Self::EXDEV, "EXDEV"),
        ];
        known
            .iter()
            .find(|(e, _)| *e == self)
            .map_or_else(|| format!("E{}", self.0), |(_, n)| (*n).to_string())
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({})",
            self.name(),
            std::io::Error::from_raw_os_error(self.0)
        )
    }
}

impl std::error::Error for Errno {}

/// A set of NUMA nodes as the kernel takes it: a bitmask of `unsigned long`s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeMask {
    words: Vec<u64>,
}

impl NodeMask {
    /// The mask of the given node numbers.
    pub fn of(nodes: impl IntoIterator<Item = u16>) -> Self {
        let mut words = Vec::new();
        for n in nodes {
            let (w, b) = (usize::from(n) / 64, n % 64);
            if words.len() <= w {
                words.resize(w + 1, 0);
            }
            words[w] |= 1 << b;
        }
        Self { words }
    }

    /// The words, lowest nodes first.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// `maxnode` for the kernel: bits in the mask, plus one (the kernel ignores the last bit;
    /// see set_mempolicy(2) BUGS).
    pub(crate) fn maxnode(&self) -> u64 {
        self.words.len() as u64 * 64 + 1
    }

    /// Node numbers in the mask.
    pub fn nodes(&self) -> Vec<u16> {
        (0..self.words.len() * 64)
            .filter(|&i| self.words[i / 64] & (1 << (i % 64)) != 0)
            .map(|i| i as u16)
            .collect()
    }
}

/// Memory policy modes (`MPOL_*` in include/uapi/linux/mempolicy.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemPolicyMode {
    Default = 0,
    Preferred = 1,
    Bind = 2,
    Interleave = 3,
    /// Linux 5.15.
    PreferredMany = 5,
    /// Linux 6.9; weights come from /sys/kernel/mm/mempolicy/weighted_interleave/.
    WeightedInterleave = 6,
}

/// How [`Sys::spawn`] starts a program: the cgroup v2 directory it joins (its `cgroup.procs`
/// opened before the fork, "0" written to it in the child), its allocation policy
/// (set_mempolicy) and the CPUs it may run on (sched_setaffinity), each set in the child
/// before exec when given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpawnSetup {
    pub cgroup: Option<std::path::PathBuf>,
    pub policy: Option<(MemPolicyMode, NodeMask)>,
    pub cpus: Option<Vec<CpuId>>,
}

/// What to measure or sample with perf_event_open (a subset of `struct perf_event_attr`;
/// [`PerfAttr::kernel`] gives every field the kernel receives).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfAttr {
    /// PERF_TYPE_* (0 hardware, 1 software, 4 raw, or a dynamic PMU type such as ibs_op's).
    pub kind: u32,
    pub config: u64,
    pub config1: u64,
    /// `config2` (Arm SPE's minimum latency, for one).
    pub config2: u64,
    /// 0 for a counter; otherwise one sample every this many events.
    pub sample_period: u64,
    /// PERF_SAMPLE_* bits.
    pub sample_type: u64,
    pub precise_ip: u8,
    pub exclude_kernel: bool,
    /// Leave out the hypervisor: true by default; PMUs that cannot exclude anything (uncore
    /// counters, IBS) refuse an event that asks it.
    pub exclude_hv: bool,
    /// Count the children and threads the task creates after the event is opened.
    pub inherit: bool,
    /// Data pages of the ring buffer (a power of two; 0 for a counter).
    pub ring_pages: usize,
    /// Pages of the AUX buffer, where Arm SPE writes its records (a power of two; 0: none).
    /// Needs a ring buffer.
    pub aux_pages: usize,
    /// Write a PERF_RECORD_SWITCH_CPU_WIDE to the ring at every context switch on the
    /// event's CPU, with a sample id (TID, TIME, CPU, as sample_type has them): what tells
    /// which task an SPE record belongs to.
    pub context_switch: bool,
}

impl Default for PerfAttr {
    fn default() -> Self {
        Self {
            kind: 0,
            config: 0,
            config1: 0,
            config2: 0,
            sample_period: 0,
            sample_type: 0,
            precise_ip: 0,
            exclude_kernel: false,
            exclude_hv: true,
            inherit: false,
            ring_pages: 0,
            aux_pages: 0,
            context_switch: false,
        }
    }
}

/// PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
/// (include/uapi/linux/perf_event.h): the read_format of every event rondpoint opens.
pub const READ_FORMAT_TIMES: u64 = 1 | 2;

/// Every `perf_event_attr` field rondpoint sets, as the kernel receives it; the fields not
/// here are zero. What [`Sys::perf_open`] opens, and what the attr-equivalence test compares
/// with perf's (scripts/perf-equivalence).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelAttr {
    pub kind: u32,
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub disabled: bool,
    pub inherit: bool,
    pub exclude_kernel: bool,
    pub exclude_hv: bool,
    pub precise_ip: u8,
    pub watermark: bool,
    pub wakeup_watermark: u32,
    pub context_switch: bool,
    pub sample_id_all: bool,
    pub aux_watermark: u32,
}

impl PerfAttr {
    /// The full attr: counters are read with their enabled and running times, to scale them
    /// when the kernel multiplexes them (ignored by sampling events, which are never read());
    /// every event starts disabled and is enabled once open. A ring is drained on the
    /// engine's clock, not polled, so the kernel is asked to wake readers only once half of
    /// it is written: a wakeup per sample costs the sampled program an interrupt work item
    /// at every sample. `page_bytes` is the kernel's page size.
    pub fn kernel(&self, page_bytes: u64) -> KernelAttr {
        let ring_bytes = (self.ring_pages as u64).saturating_mul(page_bytes) / 2;
        KernelAttr {
            kind: self.kind,
            config: self.config,
            config1: self.config1,
            config2: self.config2,
            sample_period: self.sample_period,
            sample_type: self.sample_type,
            read_format: READ_FORMAT_TIMES,
            disabled: true,
            inherit: self.inherit,
            exclude_kernel: self.exclude_kernel,
            exclude_hv: self.exclude_hv,
            precise_ip: self.precise_ip,
            watermark: self.ring_pages > 0,
            wakeup_watermark: if self.ring_pages > 0 {
                u32::try_from(ring_bytes).unwrap_or(u32::MAX)
            } else {
                0
            },
            context_switch: self.context_switch,
            sample_id_all: self.context_switch,
            // The driver publishes AUX data (advances aux_head) only when this much is
            // written: an eighth of the buffer, so that a lightly sampled program's records
            // do not wait for half of it.
            aux_watermark: u32::try_from((self.aux_pages as u64).saturating_mul(page_bytes) / 8)
                .unwrap_or(u32::MAX),
        }
    }
}

/// How an event's hardware timestamps (Arm SPE's: the generic timer's count) convert to the
/// perf clock of its ring's records, from the ring's `perf_event_mmap_page` (`time_zero`,
/// `time_mult`, `time_shift`; with `cap_user_time_short`, `time_cycles` and `time_mask`),
/// as include/uapi/linux/perf_event.h documents it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeConversion {
    pub zero: u64,
    pub mult: u32,
    pub shift: u16,
    /// `(time_cycles, time_mask)` when the counter is narrower than 64 bits.
    pub short: Option<(u64, u64)>,
}

impl TimeConversion {
    /// The perf-clock time (ns) of a hardware timestamp.
    pub(crate) fn perf_time(&self, mut cycles: u64) -> u64 {
        if let Some((base, mask)) = self.short {
            cycles = base.wrapping_add(cycles.wrapping_sub(base) & mask);
        }
        let shift = u32::from(self.shift.min(63));
        let quot = cycles >> shift;
        let rem = cycles & ((1u64 << shift) - 1);
        let mult = u64::from(self.mult);
        self.zero
            .wrapping_add(quot.wrapping_mul(mult))
            .wrapping_add(rem.wrapping_mul(mult) >> shift)
    }
}

/// A counter as read: its value, and the nanoseconds it was enabled and actually counting
/// (less when the kernel multiplexed it with other events on the PMU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfReading {
    pub value: u64,
    pub enabled_ns: u64,
    pub running_ns: u64,
}

impl PerfReading {
    /// The count between `earlier` and this reading, scaled up by the share of that time the
    /// counter was not running (perf's own estimate for a multiplexed counter); 0 when it
    /// never ran.
    /// The count since the counter opened, scaled up by the share of that time it was not
    /// running, as perf scales a multiplexed counter.
    pub fn scaled_total(&self) -> u64 {
        self.scaled_since(&PerfReading::default())
    }

    pub(crate) fn scaled_since(&self, earlier: &PerfReading) -> u64 {
        let value = self.value.saturating_sub(earlier.value);
        let enabled = self.enabled_ns.saturating_sub(earlier.enabled_ns);
        let running = self.running_ns.saturating_sub(earlier.running_ns);
        if running == 0 {
            return 0;
        }
        if running >= enabled {
            return value;
        }
        let scaled = u128::from(value) * u128::from(enabled) / u128::from(running);
        u64::try_from(scaled).unwrap_or(u64::MAX)
    }
}

/// An open perf event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PerfFd(pub i32);

/// How a child process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

/// The system calls rondpoint makes.
pub trait Sys {
    /// move_pages(2) with MPOL_MF_MOVE: with `nodes`, move each page to its node; without,
    /// query where each page is. `status` gets a node number or a negative errno per page.
    /// A process that has exited, whether reaped or not, gives `ESRCH`.
    fn move_pages(
        &mut self,
        pid: Pid,
        pages: &[u64],
        nodes: Option<&[i32]>,
        status: &mut [i32],
    ) -> Result<(), Errno>;

    /// migrate_pages(2): move a process's pages from one set of nodes to another. Returns the
    /// number of pages that could not be moved.
    fn migrate_pages(&mut self, pid: Pid, from: &NodeMask, to: &NodeMask) -> Result<u64, Errno>;

    /// sched_setaffinity(2) for one thread.
    fn sched_setaffinity(&mut self, tid: Tid, cpus: &[CpuId]) -> Result<(), Errno>;

    /// mbind(2) with no flags: sets the memory policy of a range of the calling process (whole
    /// pages), for the pages it allocates from then on; `numa_balancing` adds
    /// MPOL_F_NUMA_BALANCING (bind only; set_mempolicy takes it since Linux 5.12, and mbind on
    /// later kernels, 6.1 and 6.12 among them as the testbed shows), which lets NUMA balancing
    /// scan the range and move pages within the policy's nodes. Used by the testbed's
    /// workloads.
    fn mbind(
        &mut self,
        addr: u64,
        len: u64,
        mode: MemPolicyMode,
        nodes: &NodeMask,
        numa_balancing: bool,
    ) -> Result<(), Errno>;

    /// Starts a program as `setup` says: its memory policy and CPUs set before it executes
    /// (inherited across exec and by everything it starts).
    fn spawn(&mut self, argv: &[OsString], setup: &SpawnSetup) -> Result<Pid, Errno>;

    /// Whether a child started by [`Sys::spawn`] has ended (without blocking).
    fn try_wait(&mut self, pid: Pid) -> Result<Option<ExitStatus>, Errno>;

    /// Sends a signal to a process.
    fn kill(&mut self, pid: Pid, signal: i32) -> Result<(), Errno>;

    /// perf_event_open(2) on a task (`pid`) on one CPU (or every CPU with `cpu = -1`) and
    /// enables it. An inherited event with a ring buffer must name a CPU: the kernel refuses
    /// to map the ring of an inherited event that follows the task across CPUs (perf_mmap).
    fn perf_open(&mut self, attr: &PerfAttr, pid: Pid, cpu: i32) -> Result<PerfFd, Errno>;

    /// perf_event_open(2) as [`Sys::perf_open`], into the group `leader` leads (opened on the
    /// same task and CPU): the event is scheduled onto the PMU with its leader, as some
    /// events need (Sapphire Rapids' load-latency event needs `mem-loads-aux` as its leader).
    fn perf_open_member(
        &mut self,
        attr: &PerfAttr,
        pid: Pid,
        cpu: i32,
        leader: PerfFd,
    ) -> Result<PerfFd, Errno>;

    /// Sets a sampling event's period from its next sample on (ioctl PERF_EVENT_IOC_PERIOD).
    fn perf_set_period(&mut self, fd: PerfFd, period: u64) -> Result<(), Errno>;

    /// Reads a counter: its value and how long it was enabled and running (every event is
    /// opened with PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING, so that a
    /// counter the kernel multiplexed can be scaled).
    fn perf_read(&mut self, fd: PerfFd) -> Result<PerfReading, Errno>;

    /// Appends the ring buffer's new bytes to `out` and frees them in the ring.
    fn perf_drain(&mut self, fd: PerfFd, out: &mut Vec<u8>) -> Result<(), Errno>;

    /// Appends the AUX buffer's new bytes to `out` and frees them (an event opened with
    /// `aux_pages`); with them, how the event's clock converts hardware timestamps, when the
    /// kernel says.
    fn perf_drain_aux(
        &mut self,
        fd: PerfFd,
        out: &mut Vec<u8>,
    ) -> Result<Option<TimeConversion>, Errno>;

    /// Closes an event.
    fn perf_close(&mut self, fd: PerfFd);

    /// CPU time this process (rondpoint) has used, in nanoseconds.
    fn own_cpu_time_ns(&mut self) -> u64;

    /// Peak resident memory of this process (rondpoint), in bytes.
    fn own_peak_rss_bytes(&mut self) -> u64;

    /// The kernel's base page size in bytes (`sysconf(_SC_PAGESIZE)`), the unit of
    /// /proc/zoneinfo.
    fn page_bytes(&self) -> u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_masks() {
        let m = NodeMask::of([0, 3, 65]);
        assert_eq!(m.words(), &[0b1001, 0b10]);
        assert_eq!(m.maxnode(), 129);
        assert_eq!(m.nodes(), vec![0, 3, 65]);
        assert_eq!(NodeMask::of([]).maxnode(), 1);
    }

    #[test]
    fn multiplexed_counts_are_scaled_by_the_time_they_ran() {
        let r = |value, enabled_ns, running_ns| PerfReading {
            value,
            enabled_ns,
            running_ns,
        };
        assert_eq!(r(1_300, 200, 200).scaled_since(&r(300, 100, 100)), 1_000);
        // Ran a quarter of the epoch: four times what it counted.
        assert_eq!(r(400, 200, 125).scaled_since(&r(300, 100, 100)), 400);
        // Never ran: nothing known, nothing claimed.
        assert_eq!(r(300, 200, 100).scaled_since(&r(300, 100, 100)), 0);
        // A counter that went backwards (a reset) does not wrap.
        assert_eq!(r(10, 200, 200).scaled_since(&r(300, 100, 100)), 0);
    }

    #[test]
    fn errno_names() {
        assert_eq!(Errno::ESRCH.name(), "ESRCH");
        assert_eq!(Errno(9999).name(), "E9999");
        assert!(Errno::EPERM.to_string().starts_with("EPERM ("));
    }
}
