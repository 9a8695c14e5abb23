//! What the run's report needs, accumulated over the run, and the kernel's own NUMA balancing
//! over the same time.

use super::LinuxMachine;
use crate::procfs::ProcRoot;
use crate::sys::Sys;
use rondpoint_model::ProcessInfo;
use std::sync::atomic::{AtomicU64, Ordering};

/// The sampler's running totals, shared with a reader outside the run (a metrics endpoint,
/// which cannot borrow the machine while the engine drives it); updated at each observation.
#[derive(Debug, Default)]
pub struct SampleTotals {
    pub samples: AtomicU64,
    pub lost: AtomicU64,
    pub throttled: AtomicU64,
}

impl SampleTotals {
    /// (samples, lost, throttled) now.
    pub fn get(&self) -> (u64, u64, u64) {
        (
            self.samples.load(Ordering::Relaxed),
            self.lost.load(Ordering::Relaxed),
            self.throttled.load(Ordering::Relaxed),
        )
    }

    pub(super) fn publish(&self, stats: &LiveStats) {
        self.samples.store(stats.samples, Ordering::Relaxed);
        self.lost.store(stats.lost_samples, Ordering::Relaxed);
        self.throttled
            .store(stats.sampler_throttled, Ordering::Relaxed);
    }
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
    /// Processes the selection takes in that another rondpoint manages (it holds their lock,
    /// machine/locks.rs), left alone: (pid, that rondpoint's pid when known).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub managed_elsewhere: Vec<(i32, Option<i32>)>,
    /// Why the processes could not be locked, when they could not: none is managed then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_error: Option<String>,
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

/// The two counters behind [`KernelBalancing`] now (/proc/vmstat's `numa_hint_faults` and
/// `numa_pages_migrated`), if this kernel prints both.
pub(super) fn balancing_counters(proc: &ProcRoot) -> Option<(u64, u64)> {
    let v = proc.vmstat_numa().ok()?;
    Some((v.numa_hint_faults?, v.numa_pages_migrated?))
}

impl LiveStats {
    /// Notes an epoch's pages of the managed processes per node (from their resident bytes)
    /// and its local access ratio: the first epoch with pages, and the latest.
    pub(super) fn record_epoch(
        &mut self,
        processes: &[ProcessInfo],
        nodes: usize,
        lar: Option<f64>,
    ) {
        let mut pages = vec![0u64; nodes];
        for p in processes {
            for (i, b) in p.resident_bytes_by_node.iter().enumerate() {
                pages[i] += b / 4096;
            }
        }
        if self.pages_first.is_none() && pages.iter().sum::<u64>() > 0 {
            self.pages_first = Some(pages.clone());
            self.lar_first = lar;
        }
        if pages.iter().sum::<u64>() > 0 {
            self.pages_last = Some(pages);
        }
        if lar.is_some() {
            self.lar_last = lar;
        }
    }
}

impl<S: Sys> LinuxMachine<S> {
    /// What the run's report needs so far; the kernel's own balancing is read now (one
    /// /proc/vmstat read, at report time rather than every epoch).
    pub fn stats(&self) -> LiveStats {
        let kernel_balancing = match (self.balancing_at_start, balancing_counters(&self.proc)) {
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
}
