//! What the live machine can observe and do: probed once when it is built, so that the
//! engine can refuse a policy whose signals this machine lacks before anything is touched.

use crate::sys::{Errno, PerfAttr, Sys};
use crate::sysfs::SysfsRoot;
use rondpoint_model::{Capabilities, Capability, Pid, Support};
use std::collections::BTreeMap;

/// `PERF_TYPE_HARDWARE` and its `PERF_COUNT_HW_INSTRUCTIONS` (include/uapi/linux/perf_event.h).
const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;

/// Where the kernel keeps the weights of MPOL_WEIGHTED_INTERLEAVE (Linux 6.9), one file per
/// node (`nodeN`, a weight from 1 to 255), machine-wide.
pub const WEIGHTED_INTERLEAVE_DIR: &str = "kernel/mm/mempolicy/weighted_interleave";

/// The facts the live machine's capabilities follow from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// Whether a hardware counter opens on this process (perf_event_open with
    /// PERF_TYPE_HARDWARE), and the errno if not (ENOENT on most VMs: no PMU).
    pub hardware_counters: Result<(), Errno>,
    /// kernel.numa_balancing (hinting faults happen only when it is 1).
    pub numa_balancing: Option<u32>,
    /// Whether the machine launches its program (allocation policies are set before exec;
    /// a running process's policy cannot be set from outside).
    pub launches: bool,
    /// The kernel's weighted-interleave weights by node, when it has weighted interleave.
    pub interleave_weights: Option<BTreeMap<u16, u8>>,
}

impl Probe {
    /// Probes this machine: one hardware counter opened and closed on rondpoint itself, and
    /// the weighted-interleave weights read from sysfs.
    pub fn run<S: Sys>(
        sys: &mut S,
        sysfs: &SysfsRoot,
        numa_balancing: Option<u32>,
        launches: bool,
    ) -> Self {
        let attr = PerfAttr {
            kind: PERF_TYPE_HARDWARE,
            config: PERF_COUNT_HW_INSTRUCTIONS,
            exclude_kernel: true,
            ..PerfAttr::default()
        };
        let hardware_counters = sys
            .perf_open(&attr, Pid(0), -1)
            .map(|fd| sys.perf_close(fd));
        Self {
            hardware_counters,
            numa_balancing,
            launches,
            interleave_weights: interleave_weights(sysfs),
        }
    }

    /// What the live backend can observe and do, given these facts.
    pub fn capabilities(&self) -> Capabilities {
        let from_samples =
            "estimated from page-fault samples: no memory-controller counters are read";
        let mut c = Capabilities::none();
        c.set(Capability::ThreadCounters, self.thread_counters())
            .set(
                Capability::ThreadDram,
                Support::Estimated(from_samples.into()),
            )
            .set(
                Capability::NodeTraffic,
                Support::Estimated(from_samples.into()),
            )
            .set(
                Capability::LinkTraffic,
                Support::Missing("no interconnect counters are read".into()),
            )
            .set(
                Capability::AccessSamples,
                Support::Estimated(
                    "page-fault samples stand in for IBS/PEBS (first touches, and NUMA hinting \
                     faults when kernel.numa_balancing=1): IBS/PEBS sampling is not wired yet"
                        .into(),
                ),
            )
            .set(Capability::FaultSamples, self.fault_samples())
            .set(
                Capability::Truth,
                Support::Missing("only the simulator knows true access rates".into()),
            )
            .set(Capability::MigratePages, Support::Full)
            .set(Capability::InterleavePages, Support::Full)
            .set(
                Capability::ReplicatePages,
                Support::Substituted(
                    "Linux cannot replicate another process's pages: they are interleaved over \
                     the reading nodes instead"
                        .into(),
                ),
            )
            .set(Capability::PinThreads, Support::Full)
            .set(Capability::MoveApplications, Support::Full)
            .set(Capability::MemPolicies, self.mem_policies())
            .set(Capability::WeightedInterleave, self.weighted_interleave())
            .set(
                Capability::OverflowPlacement,
                Support::Missing(
                    "Linux has no allocation policy that spreads a full node's overflow over \
                     remote nodes: remote-placement policies move it afterwards (their reactive \
                     mode)"
                        .into(),
                ),
            );
        c
    }

    fn thread_counters(&self) -> Support {
        match self.hardware_counters {
            Err(e) => Support::Missing(format!(
                "no hardware counters (perf_event_open: {} for PERF_TYPE_HARDWARE)",
                e.name()
            )),
            Ok(()) => Support::Full,
        }
    }

    fn fault_samples(&self) -> Support {
        if self.numa_balancing == Some(1) {
            Support::Estimated(
                "the kernel's own hinting-fault scan (kernel.numa_balancing=1), at its scan size \
                 and period rather than the policy's"
                    .into(),
            )
        } else {
            Support::Missing(
                "kernel.numa_balancing is not 1, so the kernel makes no NUMA hinting faults \
                 (sysctl kernel.numa_balancing=1)"
                    .into(),
            )
        }
    }

    fn mem_policies(&self) -> Support {
        if self.launches {
            Support::Full
        } else {
            Support::Missing(
                "a running process's allocation policy cannot be set from outside it \
                 (set_mempolicy acts on its caller): rondpoint run sets it at launch"
                    .into(),
            )
        }
    }

    fn weighted_interleave(&self) -> Support {
        match (self.launches, &self.interleave_weights) {
            (false, _) => self.mem_policies(),
            (true, Some(_)) => Support::Substituted(
                "the kernel's weighted interleave takes its weights from \
                 /sys/kernel/mm/mempolicy/weighted_interleave, machine-wide, and rondpoint does \
                 not change them: other weights than the kernel's are reported substituted"
                    .into(),
            ),
            (true, None) => Support::Substituted(
                "this kernel has no weighted interleave (Linux 6.9+): plain interleave over the \
                 weighted nodes instead"
                    .into(),
            ),
        }
    }
}

/// The kernel's weighted-interleave weights by node (`None` when the kernel has no weighted
/// interleave or its files cannot be read).
pub(crate) fn interleave_weights(sysfs: &SysfsRoot) -> Option<BTreeMap<u16, u8>> {
    let entries = sysfs.list_optional(WEIGHTED_INTERLEAVE_DIR).ok()?;
    if entries.is_empty() {
        return None;
    }
    let mut weights = BTreeMap::new();
    for name in entries {
        let Some(node) = name
            .strip_prefix("node")
            .and_then(|n| n.parse::<u16>().ok())
        else {
            continue;
        };
        let text = sysfs
            .read_optional(&format!("{WEIGHTED_INTERLEAVE_DIR}/{name}"))
            .ok()??;
        weights.insert(node, text.trim().parse::<u8>().ok()?);
    }
    (!weights.is_empty()).then_some(weights)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{Call, FakeSys};

    fn probe(counters: Result<(), Errno>, balancing: u32, launches: bool) -> Probe {
        Probe {
            hardware_counters: counters,
            numa_balancing: Some(balancing),
            launches,
            interleave_weights: None,
        }
    }

    #[test]
    fn the_probe_opens_one_hardware_counter_on_itself_and_closes_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut sys = FakeSys::new();
        let p = Probe::run(&mut sys, &SysfsRoot::new(dir.path()), Some(1), true);
        assert_eq!(p.hardware_counters, Ok(()));
        let calls = &sys.calls;
        assert!(
            matches!(
                calls.as_slice(),
                [Call::PerfOpen { attr, pid: Pid(0), cpu: -1 }, Call::PerfClose { .. }]
                    if attr.kind == PERF_TYPE_HARDWARE && attr.config == PERF_COUNT_HW_INSTRUCTIONS
                        && attr.sample_period == 0
            ),
            "{calls:?}"
        );
        assert_eq!(p.interleave_weights, None);
    }

    #[test]
    fn no_pmu_makes_thread_counters_missing_with_the_errno() {
        let c = probe(Err(Errno::ENOENT), 1, true).capabilities();
        assert_eq!(
            c.support(Capability::ThreadCounters),
            Support::Missing(
                "no hardware counters (perf_event_open: ENOENT for PERF_TYPE_HARDWARE)".into()
            )
        );
        let c = probe(Ok(()), 1, true).capabilities();
        assert_eq!(c.support(Capability::ThreadCounters), Support::Full);
    }

    #[test]
    fn hinting_faults_need_numa_balancing_and_policies_need_a_launch() {
        let c = probe(Err(Errno::ENOENT), 0, false).capabilities();
        assert!(!c.support(Capability::FaultSamples).is_available());
        assert!(!c.support(Capability::MemPolicies).is_available());
        assert!(!c.support(Capability::WeightedInterleave).is_available());
        let c = probe(Err(Errno::ENOENT), 1, true).capabilities();
        assert!(matches!(
            c.support(Capability::FaultSamples),
            Support::Estimated(_)
        ));
        assert_eq!(c.support(Capability::MemPolicies), Support::Full);
        assert!(matches!(
            c.support(Capability::ReplicatePages),
            Support::Substituted(_)
        ));
        assert!(!c.support(Capability::Truth).is_available());
    }

    #[test]
    fn kernel_weights_are_read_per_node() {
        let dir = tempfile::tempdir().unwrap();
        let wi = dir.path().join(WEIGHTED_INTERLEAVE_DIR);
        std::fs::create_dir_all(&wi).unwrap();
        std::fs::write(wi.join("node0"), "3\n").unwrap();
        std::fs::write(wi.join("node2"), "1\n").unwrap();
        let sysfs = SysfsRoot::new(dir.path());
        assert_eq!(
            interleave_weights(&sysfs),
            Some(BTreeMap::from([(0, 3), (2, 1)]))
        );
        std::fs::write(wi.join("node1"), "heavy\n").unwrap();
        assert_eq!(interleave_weights(&sysfs), None, "unreadable: none trusted");
    }
}
