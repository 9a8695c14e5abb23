//! What the live machine can observe and do: probed once when it is built, so that the
//! engine can refuse a policy whose signals this machine lacks before anything is touched.

use crate::sys::{Errno, PerfAttr, Sys};
use crate::sysfs::SysfsRoot;
use rondpoint_model::{Capabilities, Capability, NodeId, Pid, Support};
use std::collections::BTreeMap;

/// `PERF_TYPE_HARDWARE` and its `PERF_COUNT_HW_INSTRUCTIONS` (include/uapi/linux/perf_event.h).
const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
/// `PERF_TYPE_SOFTWARE` and its `PERF_COUNT_SW_PAGE_FAULTS`: the page-fault sampler's event.
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;

/// Where the kernel keeps the weights of MPOL_WEIGHTED_INTERLEAVE (Linux 6.9), one file per
/// node (`nodeN`, a weight from 1 to 255), machine-wide.
pub const WEIGHTED_INTERLEAVE_DIR: &str = "kernel/mm/mempolicy/weighted_interleave";

/// `kernel.numa_balancing` is a bit mask (Documentation/admin-guide/sysctl/kernel.rst,
/// "numa_balancing"): bit 0 (1, `NUMA_BALANCING_NORMAL`) is NUMA balancing, which makes hinting
/// faults on the pages it scans and migrates them toward the faulting task; bit 1 (2,
/// `NUMA_BALANCING_MEMORY_TIERING`, Linux 6.0) is memory tiering, which promotes the hot pages
/// of slower-tier nodes to the faster tier. 3 is both. With tiering alone, the scan skips pages
/// on top-tier nodes (`change_pte_range` in mm/mprotect.c), so hinting faults come only from
/// slower-tier memory.
const NUMA_BALANCING_NORMAL: u32 = 1;
const NUMA_BALANCING_MEMORY_TIERING: u32 = 2;

/// Whether kernel.numa_balancing (`None`: no CONFIG_NUMA_BALANCING) makes hinting faults on
/// every node's pages, and balances them (1 or 3).
pub fn balances(numa_balancing: Option<u32>) -> bool {
    numa_balancing.is_some_and(|m| m & NUMA_BALANCING_NORMAL != 0)
}

/// Whether kernel.numa_balancing is memory tiering alone (2): hinting faults, and the kernel's
/// promotions, only on slower-tier memory.
pub fn tiering_only(numa_balancing: Option<u32>) -> bool {
    numa_balancing
        .is_some_and(|m| m & NUMA_BALANCING_MEMORY_TIERING != 0 && m & NUMA_BALANCING_NORMAL == 0)
}

/// What the machine read of its kernel before the probe (see [`Probe`]'s fields).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelFacts {
    pub numa_balancing: Option<u32>,
    pub slower_tier: Vec<NodeId>,
    pub watermarks: bool,
}

/// The memory-controller (uncore) counters the live machine opened when it was probed, which
/// make per-node DRAM traffic measured rather than estimated (machine/uncore.rs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum McCounters {
    /// None planned here: no `uncore_imc_N` or `amd_umc_N` PMU with a catalogued event (most
    /// machines, every VM), or not probed.
    #[default]
    Absent,
    /// Opened; `partial` says why the traffic of some nodes is still estimated (`None`: every
    /// node with memory is measured on its own).
    Opened { partial: Option<String> },
    /// Planned, but one did not open (the errno and why): the traffic is estimated as without.
    Failed(String),
}

/// What the machine's precise sampling is, for its capabilities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreciseSampling {
    /// No IBS op or PEBS event planned here (why).
    Absent(String),
    /// Its events opened (a test open on one CPU when probed): what samples.
    Available(String),
    /// Planned, but the kernel refused an event (why).
    Failed(String),
}

impl Default for PreciseSampling {
    fn default() -> Self {
        PreciseSampling::Absent("not probed".into())
    }
}

/// The facts the live machine's capabilities follow from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// Whether a hardware counter opens on this process (perf_event_open with
    /// PERF_TYPE_HARDWARE), and the errno if not (ENOENT on most VMs: no PMU).
    pub hardware_counters: Result<(), Errno>,
    /// Whether the page-fault sampler's event (a software event that counts in the kernel)
    /// opens on this process, and the errno if not (EACCES: kernel.perf_event_paranoid above
    /// 1 without CAP_PERFMON).
    pub page_faults: Result<(), Errno>,
    /// kernel.numa_balancing, a bit mask: hinting faults on every node's pages with 1 or 3,
    /// only on slower-tier memory with 2 (memory tiering alone), none with 0.
    pub numa_balancing: Option<u32>,
    /// The nodes whose memory is a slower tier than the nodes with CPUs (where
    /// kernel.numa_balancing=2 makes hinting faults).
    pub slower_tier: Vec<NodeId>,
    /// Whether the kernel's per-node watermarks can be read (/proc/zoneinfo): a node's room
    /// for pages moved there is then the kernel's own estimate, else a conservative rule.
    pub watermarks: bool,
    /// Whether the machine launches its program (allocation policies are set before exec;
    /// a running process's policy cannot be set from outside).
    pub launches: bool,
    /// The kernel's weighted-interleave weights by node, when it has weighted interleave.
    pub interleave_weights: Option<BTreeMap<u16, u8>>,
    /// The memory-controller counters (set by the machine, which opens them, after [`Probe::run`]).
    pub mc_counters: McCounters,
    /// Precise access sampling (IBS op, PEBS, SPE; set by the machine after [`Probe::run`]).
    pub precise: PreciseSampling,
    /// Why interconnect links are not measured (`None`: UPI or xGMI counters opened; set by
    /// the machine after [`Probe::run`]).
    pub links: Option<String>,
    /// Why a thread's DRAM loads are not counted by the core PMU (`None`: its events opened
    /// on rondpoint itself; set by the machine after [`Probe::run`]).
    pub thread_dram: Option<String>,
}

impl Probe {
    /// Probes this machine: one hardware counter opened and closed on rondpoint itself, and
    /// the weighted-interleave weights read from sysfs; the kernel's facts (`kernel`: its
    /// NUMA balancing, slower tier and watermarks) and `launches` are taken as given.
    pub fn run<S: Sys>(
        sys: &mut S,
        sysfs: &SysfsRoot,
        kernel: KernelFacts,
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
        let attr = PerfAttr {
            kind: PERF_TYPE_SOFTWARE,
            config: PERF_COUNT_SW_PAGE_FAULTS,
            sample_period: 1,
            ..PerfAttr::default()
        };
        let page_faults = sys
            .perf_open(&attr, Pid(0), -1)
            .map(|fd| sys.perf_close(fd));
        Self {
            hardware_counters,
            page_faults,
            numa_balancing: kernel.numa_balancing,
            slower_tier: kernel.slower_tier,
            watermarks: kernel.watermarks,
            launches,
            interleave_weights: interleave_weights(sysfs),
            mc_counters: McCounters::Absent,
            precise: PreciseSampling::default(),
            links: Some("no interconnect counters are read".into()),
            thread_dram: Some("not probed".into()),
        }
    }

    /// What the live backend can observe and do, given these facts.
    pub fn capabilities(&self) -> Capabilities {
        // DRAM traffic is estimated from the samples: without them, there is nothing to
        // estimate from.
        let from_samples = || match self.no_sampling() {
            Some(why) => Support::Missing(format!(
                "no memory-controller counters are read, and the samples it would be estimated \
                 from cannot be taken: {why}"
            )),
            None => Support::Estimated(format!(
                "estimated from {}: no memory-controller counters are read",
                self.samples_kind()
            )),
        };
        let mut c = Capabilities::none();
        c.set(Capability::ThreadCounters, self.thread_counters())
            .set(Capability::ThreadDram, self.thread_dram(from_samples()))
            .set(Capability::NodeTraffic, self.node_traffic(from_samples()))
            .set(
                Capability::LinkTraffic,
                match &self.links {
                    None => Support::Full,
                    Some(why) => Support::Missing(why.clone()),
                },
            )
            .set(Capability::AccessSamples, self.access_samples())
            .set(Capability::FaultSamples, self.fault_samples())
            .set(Capability::KernelBalancing, self.kernel_balancing())
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
                Support::Missing(format!(
                    "Linux has no allocation policy that spreads a full node's overflow over \
                     remote nodes: remote-placement policies move it afterwards (their reactive \
                     mode), onto nodes with room: {}",
                    self.room_rule()
                )),
            );
        c
    }

    /// Per-node traffic: measured where the memory-controller counters opened and cover every
    /// node with memory on its own; else, in part or wholly, `from_samples`.
    fn node_traffic(&self, from_samples: Support) -> Support {
        match (&self.mc_counters, from_samples) {
            (McCounters::Absent, estimate) => estimate,
            (McCounters::Opened { partial: None }, _) => Support::Full,
            (McCounters::Opened { partial: Some(why) }, _) => Support::Estimated(format!(
                "counted by the memory controllers' uncore counters, in part estimated: {why}"
            )),
            (McCounters::Failed(why), Support::Estimated(_)) => Support::Estimated(format!(
                "estimated from {}: the memory-controller counters did not open ({why})",
                self.samples_kind()
            )),
            (McCounters::Failed(why), _) => Support::Missing(format!(
                "the memory-controller counters did not open ({why}), and {}",
                self.no_sampling().unwrap_or_default()
            )),
        }
    }

    /// Per-thread DRAM accesses: counted where the core PMU's DRAM load events opened (and
    /// hardware counters do), else `from_samples`.
    fn thread_dram(&self, from_samples: Support) -> Support {
        match (&self.thread_dram, self.hardware_counters) {
            (None, Ok(())) => Support::Full,
            (Some(why), _) => match from_samples {
                Support::Estimated(how) => Support::Estimated(format!("{how} ({why})")),
                other => other,
            },
            (None, Err(_)) => from_samples,
        }
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

    /// The samples traffic is estimated from: precise ones where they open, else page faults.
    fn samples_kind(&self) -> &'static str {
        match self.precise {
            PreciseSampling::Available(_) => "precise (IBS, PEBS, SPE) samples",
            _ => "page-fault samples",
        }
    }

    /// Why page faults cannot be sampled here, if they cannot.
    fn no_sampling(&self) -> Option<String> {
        let e = self.page_faults.err()?;
        let why = if e == Errno::EACCES || e == Errno::EPERM {
            " (kernel.perf_event_paranoid is above 1 and rondpoint lacks CAP_PERFMON: \
             sysctl kernel.perf_event_paranoid=1, or run with CAP_PERFMON)"
        } else {
            ""
        };
        Some(format!(
            "page faults cannot be sampled: perf_event_open: {} for the page-fault sampler{why}",
            e.name()
        ))
    }

    fn access_samples(&self) -> Support {
        let precise = match &self.precise {
            PreciseSampling::Available(_) => return Support::Full,
            PreciseSampling::Absent(why) => format!("no precise sampling: {why}"),
            PreciseSampling::Failed(why) => format!("precise sampling did not open: {why}"),
        };
        match self.no_sampling() {
            Some(why) => Support::Missing(format!("{precise}; and {why}")),
            None => Support::Estimated(format!(
                "page-fault samples stand in for IBS, PEBS or SPE (first touches, and NUMA hinting \
                 faults when kernel.numa_balancing is 1 or 3, or 2 on slower-tier memory): \
                 {precise}"
            )),
        }
    }

    fn fault_samples(&self) -> Support {
        if let Some(why) = self.no_sampling() {
            return Support::Missing(why);
        }
        let mode = self.numa_balancing;
        let shown = mode.map_or("absent".to_string(), |m| m.to_string());
        if balances(mode) {
            return Support::Estimated(format!(
                "the kernel's own hinting-fault scan (kernel.numa_balancing={shown}), at its \
                 scan size and period rather than the policy's"
            ));
        }
        if !tiering_only(mode) {
            return Support::Missing(format!(
                "kernel.numa_balancing is {shown}, so the kernel makes no NUMA hinting faults \
                 (sysctl kernel.numa_balancing=1, or 3 with memory tiering)"
            ));
        }
        if self.slower_tier.is_empty() {
            return Support::Missing(
                "kernel.numa_balancing=2 (memory tiering alone) makes hinting faults only on \
                 slower-tier memory, and this machine has none (sysctl \
                 kernel.numa_balancing=1, or 3)"
                    .into(),
            );
        }
        let nodes: Vec<String> = self.slower_tier.iter().map(|n| n.to_string()).collect();
        Support::Estimated(format!(
            "kernel.numa_balancing=2 (memory tiering alone): the kernel's own scan makes hinting \
             faults only on the slower-tier memory of {}, whose hot pages it promotes itself; \
             none on the other nodes' pages (3 adds them)",
            nodes.join(", ")
        ))
    }

    /// Whether the kernel balances memory by itself, as kernel.numa_balancing says.
    fn kernel_balancing(&self) -> Support {
        let mode = self.numa_balancing;
        let shown = mode.map_or("absent".to_string(), |m| m.to_string());
        if balances(mode) {
            Support::Full
        } else if tiering_only(mode) {
            Support::Substituted(
                "kernel.numa_balancing=2 (memory tiering alone): the kernel only promotes hot \
                 pages of slower-tier memory to the faster tier; it does not balance between \
                 the other nodes (1 or 3 does)"
                    .into(),
            )
        } else {
            Support::Missing(format!(
                "kernel.numa_balancing is {shown}: the kernel does not balance memory \
                 (sysctl kernel.numa_balancing=1)"
            ))
        }
    }

    /// How a node's room for moved pages is judged (machine/room.rs).
    fn room_rule(&self) -> &'static str {
        if self.watermarks {
            "free memory, plus the page cache and reclaimable slab the kernel counts as \
             available, less its high watermarks and lowmem reserves (/proc/zoneinfo)"
        } else {
            "free memory less a fixed reserve (LiveConfig::reserve_free_bytes, 64 MiB by \
             default), a conservative rule: the kernel's watermarks (/proc/zoneinfo) cannot be \
             read, so no page cache is counted"
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
pub fn interleave_weights(sysfs: &SysfsRoot) -> Option<BTreeMap<u16, u8>> {
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
            page_faults: Ok(()),
            numa_balancing: Some(balancing),
            slower_tier: Vec::new(),
            watermarks: true,
            launches,
            interleave_weights: None,
            mc_counters: McCounters::Absent,
            precise: PreciseSampling::default(),
            links: Some("no interconnect counters are read".into()),
            thread_dram: Some("no core PMU event".into()),
        }
    }

    #[test]
    fn the_probe_opens_a_hardware_counter_and_the_sampler_s_event_on_itself() {
        let dir = tempfile::tempdir().unwrap();
        let mut sys = FakeSys::new();
        let kernel = KernelFacts {
            numa_balancing: Some(1),
            ..KernelFacts::default()
        };
        let p = Probe::run(&mut sys, &SysfsRoot::new(dir.path()), kernel, true);
        assert_eq!(p.hardware_counters, Ok(()));
        let calls = &sys.calls;
        assert!(
            matches!(
                calls.as_slice(),
                [
                    Call::PerfOpen { attr, pid: Pid(0), cpu: -1 },
                    Call::PerfClose { .. },
                    Call::PerfOpen { attr: sampler, pid: Pid(0), cpu: -1 },
                    Call::PerfClose { .. },
                ]
                    if attr.kind == PERF_TYPE_HARDWARE && attr.config == PERF_COUNT_HW_INSTRUCTIONS
                        && attr.sample_period == 0
                        && sampler.kind == PERF_TYPE_SOFTWARE
                        && sampler.config == PERF_COUNT_SW_PAGE_FAULTS
                        && sampler.sample_period == 1
            ),
            "{calls:?}"
        );
        assert_eq!(p.interleave_weights, None);
    }

    #[test]
    fn sampling_that_is_not_permitted_makes_samples_missing_and_says_how_to_allow_it() {
        let mut p = probe(Ok(()), 1, true);
        p.page_faults = Err(Errno::EACCES);
        let c = p.capabilities();
        for cap in [
            Capability::AccessSamples,
            Capability::FaultSamples,
            Capability::NodeTraffic,
            Capability::ThreadDram,
        ] {
            match c.support(cap) {
                Support::Missing(why) => assert!(
                    why.contains("EACCES") && why.contains("CAP_PERFMON"),
                    "{why}"
                ),
                other => panic!("{cap:?}: {other:?}"),
            }
        }
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
    fn numa_balancing_is_read_as_the_kernels_bit_mask() {
        let faults = |mode: u32, slower: &[u16]| {
            let p = Probe {
                slower_tier: slower.iter().copied().map(NodeId).collect(),
                ..probe(Ok(()), mode, true)
            };
            p.capabilities().support(Capability::FaultSamples)
        };
        // 1 and 3 (balancing, with or without tiering): hinting faults on every node.
        for mode in [1, 3] {
            let Support::Estimated(how) = faults(mode, &[]) else {
                panic!("mode {mode}: {:?}", faults(mode, &[]));
            };
            assert!(how.contains(&format!("numa_balancing={mode}")), "{how}");
        }
        // 2 (tiering alone): only on slower-tier memory, so none without a slower tier.
        let Support::Estimated(how) = faults(2, &[2]) else {
            panic!("{:?}", faults(2, &[2]));
        };
        assert!(
            how.contains("only on the slower-tier memory of node2"),
            "{how}"
        );
        let Support::Missing(why) = faults(2, &[]) else {
            panic!("{:?}", faults(2, &[]));
        };
        assert!(why.contains("this machine has none"), "{why}");
        assert!(!faults(0, &[2]).is_available());
        let absent = Probe {
            numa_balancing: None,
            ..probe(Ok(()), 0, true)
        };
        assert!(
            !absent
                .capabilities()
                .support(Capability::FaultSamples)
                .is_available()
        );
        assert!(balances(Some(3)) && balances(Some(1)) && !balances(Some(2)));
        // The kernel balances by itself with 1 or 3; with 2 only between tiers.
        let balancing = |mode| {
            probe(Ok(()), mode, true)
                .capabilities()
                .support(Capability::KernelBalancing)
        };
        assert_eq!(balancing(1), Support::Full);
        assert_eq!(balancing(3), Support::Full);
        assert!(matches!(balancing(2), Support::Substituted(_)));
        assert!(!balancing(0).is_available());
        assert!(tiering_only(Some(2)) && !tiering_only(Some(3)) && !tiering_only(None));
    }

    #[test]
    fn memory_controller_counters_make_node_traffic_measured_or_say_why_not() {
        let traffic = |mc: McCounters, sampling: Result<(), Errno>| {
            let p = Probe {
                mc_counters: mc,
                page_faults: sampling,
                ..probe(Ok(()), 1, true)
            };
            p.capabilities().support(Capability::NodeTraffic)
        };
        let full = McCounters::Opened { partial: None };
        assert_eq!(traffic(full, Err(Errno::EACCES)), Support::Full);
        let snc = McCounters::Opened {
            partial: Some("socket 0 holds node0, node1".into()),
        };
        assert!(matches!(traffic(snc, Ok(())), Support::Estimated(w) if w.contains("socket 0")));
        let failed = || McCounters::Failed("perf_event_open of x on cpu0: EACCES".into());
        let Support::Estimated(why) = traffic(failed(), Ok(())) else {
            panic!();
        };
        assert!(
            why.starts_with("estimated from page-fault samples") && why.contains("EACCES"),
            "{why}"
        );
        let Support::Missing(why) = traffic(failed(), Err(Errno::EPERM)) else {
            panic!();
        };
        assert!(
            why.contains("did not open") && why.contains("EPERM"),
            "{why}"
        );
        let Support::Estimated(why) = traffic(McCounters::Absent, Ok(())) else {
            panic!();
        };
        assert!(
            why.contains("no memory-controller counters are read"),
            "{why}"
        );
    }

    #[test]
    fn the_room_rule_is_said_with_overflow_placement() {
        let said = |watermarks| {
            let p = Probe {
                watermarks,
                ..probe(Ok(()), 1, true)
            };
            match p.capabilities().support(Capability::OverflowPlacement) {
                Support::Missing(why) => why,
                other => panic!("{other:?}"),
            }
        };
        assert!(said(true).contains("high watermarks"), "{}", said(true));
        assert!(said(false).contains("conservative"), "{}", said(false));
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
