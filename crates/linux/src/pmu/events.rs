//! The events rondpoint opens, per signal and CPU family, as data: each entry is the event
//! string perf would take (`pmu/terms/`, or a generic hardware event), the PMU it goes to, and
//! where its code comes from. [`super::attrs::plan`] turns the entries that apply to a machine
//! into complete `perf_event_attr`s, and scripts/perf-equivalence checks each against the
//! attr Debian's perf prints for the same event on the same fixture tree.
//!
//! Sources are cited by path in the Linux tree (the kernel's PMU drivers, which also print the
//! sysfs aliases; `tools/perf/pmu-events/arch/...` JSON, perf's copy of Intel's perfmon lists
//! and AMD's PPR tables). `perf_name` is the name Debian's perf 6.1 knows the same code by
//! under `PERF_CPUID` of that CPU, which the equivalence test also asks perf for: where it
//! differs from the upstream name in `source`, perf 6.1's table is older (it has no amdzen4
//! directory and reads Zen 4 with its amdzen3 tables, whose names for these codes differ).

use super::PmuKind;
use serde::Serialize;
use std::fmt;

/// What rondpoint wants to know, whatever PMU gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    /// Retired instructions of a process (its threads, inherited).
    Instructions,
    /// Core cycles of a process.
    Cycles,
    /// Last-level-cache misses of a process.
    LlcMisses,
    /// A process's loads served by DRAM of its own node.
    DramLocal,
    /// A process's loads served by DRAM of another node.
    DramRemote,
    /// Reads at each memory controller (per PMU unit, counted on one CPU of its socket).
    McReads,
    /// Writes at each memory controller.
    McWrites,
    /// Data sent on each inter-socket link.
    LinkTraffic,
    /// Precise memory-access samples (data address, data source): IBS op, PEBS loads, SPE.
    PreciseLoads,
    /// Precise samples of stores (PEBS).
    PreciseStores,
}

impl Signal {
    /// Every signal, in report order.
    pub const ALL: [Signal; 10] = [
        Signal::Instructions,
        Signal::Cycles,
        Signal::LlcMisses,
        Signal::DramLocal,
        Signal::DramRemote,
        Signal::McReads,
        Signal::McWrites,
        Signal::LinkTraffic,
        Signal::PreciseLoads,
        Signal::PreciseStores,
    ];

    /// The signal's name in reports and attr ids.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Instructions => "instructions",
            Signal::Cycles => "cycles",
            Signal::LlcMisses => "llc-misses",
            Signal::DramLocal => "dram-local",
            Signal::DramRemote => "dram-remote",
            Signal::McReads => "mc-reads",
            Signal::McWrites => "mc-writes",
            Signal::LinkTraffic => "link-traffic",
            Signal::PreciseLoads => "precise-loads",
            Signal::PreciseStores => "precise-stores",
        }
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The CPUs an entry's code is valid on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Any CPU with a core PMU (generic hardware events, mapped by the kernel's driver).
    AnyCore,
    /// Intel Ice Lake-SP and Ice Lake-D (family 6, models 0x6A and 0x6C; perf's `icelakex`).
    IntelIceLakeSp,
    /// Intel Sapphire Rapids and Emerald Rapids (family 6, models 0x8F and 0xCF).
    IntelSapphireRapids,
    /// AMD Zen 3 and Zen 3+ (family 0x19, models 0x00-0x0F and 0x20-0x5F; perf's `amdzen3`).
    AmdZen3,
    /// AMD Zen 4 and Zen 5 (family 0x19 models 0x10-0x1F and 0x60-0xFF; family 0x1A).
    AmdZen4,
    /// AMD Zen 4 alone (family 0x19 models 0x10-0x1F and 0x60-0xFF; perf's `amdzen4`), for
    /// the codes Zen 5 changed; known from /proc/cpuinfo only.
    AmdZen4Only,
    /// AMD Zen 5 (family 0x1A; perf's `amdzen5`); known from /proc/cpuinfo only.
    AmdZen5,
    /// Any AMD CPU with an IBS op PMU (`ibs_op`: Family 10h and later, every Zen).
    AmdIbs,
    /// Any Arm CPU with the Statistical Profiling Extension.
    ArmSpe,
}

/// How an entry's event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Encoding {
    /// PERF_TYPE_HARDWARE with this `perf_hw_id`; perf's name for it.
    Generic { config: u64, perf: &'static str },
    /// Terms for the PMU's `format/*` fields (or its `events/*` aliases).
    Terms(&'static str),
}

/// One event of the catalogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CatalogueEvent {
    pub signal: Signal,
    /// A short name, unique within the signal and family (`mem-loads-aux`).
    pub name: &'static str,
    pub family: Family,
    /// The kind of PMU the event goes to; every unit of that kind gets one attr.
    pub pmu: PmuKind,
    pub encoding: Encoding,
    /// The name Debian's perf 6.1 knows this code by under `PERF_CPUID` of the family.
    pub perf_name: Option<&'static str>,
    /// Where the code comes from.
    pub source: &'static str,
}

/// One sample per this many events for every precise sampler: a multiple of 16, which IBS
/// needs (arch/x86/events/amd/ibs.c `perf_ibs_init` refuses a period with its low 4 bits set),
/// and the order of perf mem's and the Carrefour prototype's rates (one sample per tens of
/// thousands of ops); a policy parameter, not a hardware constant.
pub const PRECISE_PERIOD: u64 = 16_384;

/// The PEBS load-latency threshold in core cycles: loads faster than this are not sampled.
/// 30 is perf mem's default (tools/perf/Documentation/perf-mem.txt, `--ldlat`); it keeps L1
/// and L2 hits out of the samples.
pub const LOAD_LATENCY_CYCLES: u64 = 30;

const UAPI: &str = "include/uapi/linux/perf_event.h";

/// The catalogue. Entries of one signal are tried in order; every one whose family and PMU
/// the machine has is opened.
pub const CATALOGUE: &[CatalogueEvent] = &[
    CatalogueEvent {
        signal: Signal::Instructions,
        name: "instructions",
        family: Family::AnyCore,
        pmu: PmuKind::Core,
        encoding: Encoding::Generic {
            config: 1,
            perf: "instructions",
        },
        perf_name: None,
        source: UAPI,
    },
    CatalogueEvent {
        signal: Signal::Cycles,
        name: "cycles",
        family: Family::AnyCore,
        pmu: PmuKind::Core,
        encoding: Encoding::Generic {
            config: 0,
            perf: "cycles",
        },
        perf_name: None,
        source: UAPI,
    },
    CatalogueEvent {
        signal: Signal::LlcMisses,
        name: "cache-misses",
        family: Family::AnyCore,
        pmu: PmuKind::Core,
        encoding: Encoding::Generic {
            config: 3,
            perf: "cache-misses",
        },
        perf_name: None,
        source: "include/uapi/linux/perf_event.h PERF_COUNT_HW_CACHE_MISSES; the driver maps it (arch/x86/events/intel/core.c intel_perfmon_event_map: LONGEST_LAT_CACHE.MISS; arch/x86/events/amd/core.c amd_zen4_perfmon_event_map)",
    },
    CatalogueEvent {
        signal: Signal::DramLocal,
        name: "local-dram",
        family: Family::IntelSapphireRapids,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0xd3,umask=0x1"),
        perf_name: Some("mem_load_l3_miss_retired.local_dram"),
        source: "MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM: tools/perf/pmu-events/arch/x86/sapphirerapids/",
    },
    CatalogueEvent {
        signal: Signal::DramRemote,
        name: "remote-dram",
        family: Family::IntelSapphireRapids,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0xd3,umask=0x2"),
        perf_name: Some("mem_load_l3_miss_retired.remote_dram"),
        source: "MEM_LOAD_L3_MISS_RETIRED.REMOTE_DRAM: tools/perf/pmu-events/arch/x86/sapphirerapids/",
    },
    CatalogueEvent {
        signal: Signal::DramLocal,
        name: "dram-io-near",
        family: Family::AmdZen4,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0x44,umask=0x8"),
        perf_name: Some("ls_any_fills_from_sys.mem_io_local"),
        source: "ls_any_fills_from_sys.dram_io_near (fills from DRAM or MMIO of the same node, prefetches included): tools/perf/pmu-events/arch/x86/amdzen4/",
    },
    CatalogueEvent {
        signal: Signal::DramRemote,
        name: "dram-io-far",
        family: Family::AmdZen4,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0x44,umask=0x40"),
        perf_name: Some("ls_any_fills_from_sys.mem_io_remote"),
        source: "ls_any_fills_from_sys.dram_io_far (fills from DRAM or MMIO of another node): tools/perf/pmu-events/arch/x86/amdzen4/",
    },
    CatalogueEvent {
        signal: Signal::DramLocal,
        name: "local-dram",
        family: Family::IntelIceLakeSp,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0xd3,umask=0x1"),
        perf_name: Some("mem_load_l3_miss_retired.local_dram"),
        source: "MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM: tools/perf/pmu-events/arch/x86/icelakex/ (cache.json in perf 6.1)",
    },
    CatalogueEvent {
        signal: Signal::DramRemote,
        name: "remote-dram",
        family: Family::IntelIceLakeSp,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0xd3,umask=0x2"),
        perf_name: Some("mem_load_l3_miss_retired.remote_dram"),
        source: "MEM_LOAD_L3_MISS_RETIRED.REMOTE_DRAM: tools/perf/pmu-events/arch/x86/icelakex/ (cache.json in perf 6.1)",
    },
    CatalogueEvent {
        signal: Signal::DramLocal,
        name: "mem-io-local",
        family: Family::AmdZen3,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0x44,umask=0x8"),
        perf_name: Some("ls_any_fills_from_sys.mem_io_local"),
        source: "ls_any_fills_from_sys.mem_io_local (data-cache fills from DRAM or MMIO of the same node, prefetches included; the code Zen 4 keeps as dram_io_near): tools/perf/pmu-events/arch/x86/amdzen3/ (memory.json in perf 6.1)",
    },
    CatalogueEvent {
        signal: Signal::DramRemote,
        name: "mem-io-remote",
        family: Family::AmdZen3,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0x44,umask=0x40"),
        perf_name: Some("ls_any_fills_from_sys.mem_io_remote"),
        source: "ls_any_fills_from_sys.mem_io_remote (data-cache fills from DRAM or MMIO of another node): tools/perf/pmu-events/arch/x86/amdzen3/ (memory.json in perf 6.1)",
    },
    CatalogueEvent {
        signal: Signal::McReads,
        name: "cas-count-read",
        family: Family::IntelSapphireRapids,
        pmu: PmuKind::IntelImc,
        encoding: Encoding::Terms("cas_count_read"),
        perf_name: Some("unc_m_cas_count.rd"),
        source: "alias cas_count_read = event=0x05,umask=0xcf: arch/x86/events/intel/uncore_snbep.c spr_uncore_imc_events; UNC_M_CAS_COUNT.RD in tools/perf/pmu-events/arch/x86/sapphirerapids/uncore-memory.json",
    },
    CatalogueEvent {
        signal: Signal::McWrites,
        name: "cas-count-write",
        family: Family::IntelSapphireRapids,
        pmu: PmuKind::IntelImc,
        encoding: Encoding::Terms("cas_count_write"),
        perf_name: Some("unc_m_cas_count.wr"),
        source: "alias cas_count_write = event=0x05,umask=0xf0: arch/x86/events/intel/uncore_snbep.c spr_uncore_imc_events; UNC_M_CAS_COUNT.WR in tools/perf/pmu-events/arch/x86/sapphirerapids/uncore-memory.json",
    },
    CatalogueEvent {
        signal: Signal::McReads,
        name: "cas-count-read",
        family: Family::IntelIceLakeSp,
        pmu: PmuKind::IntelImc,
        encoding: Encoding::Terms("event=0x04,umask=0x0f"),
        perf_name: Some("unc_m_cas_count.rd"),
        source: "UNC_M_CAS_COUNT.RD (EventCode 0x04, UMask 0x0f): tools/perf/pmu-events/arch/x86/icelakex/uncore-memory.json; written as terms, not the driver's cas_count_read alias, which arch/x86/events/intel/uncore_snbep.c gives icx_uncore_imc from hswep_uncore_imc_events (umask 0x03)",
    },
    CatalogueEvent {
        signal: Signal::McWrites,
        name: "cas-count-write",
        family: Family::IntelIceLakeSp,
        pmu: PmuKind::IntelImc,
        encoding: Encoding::Terms("event=0x04,umask=0x30"),
        perf_name: Some("unc_m_cas_count.wr"),
        source: "UNC_M_CAS_COUNT.WR (EventCode 0x04, UMask 0x30): tools/perf/pmu-events/arch/x86/icelakex/uncore-memory.json (the driver's cas_count_write alias says umask 0x0c)",
    },
    CatalogueEvent {
        signal: Signal::McReads,
        name: "umc-cas-rd",
        family: Family::AmdZen4,
        pmu: PmuKind::AmdUmc,
        encoding: Encoding::Terms("event=0x0a,rdwrmask=0x1"),
        perf_name: None,
        source: "umc_cas_cmd.rd (EventCode 0x0a, RdWrMask 0x1): tools/perf/pmu-events/arch/x86/amdzen4/memory-controller.json",
    },
    CatalogueEvent {
        signal: Signal::McWrites,
        name: "umc-cas-wr",
        family: Family::AmdZen4,
        pmu: PmuKind::AmdUmc,
        encoding: Encoding::Terms("event=0x0a,rdwrmask=0x2"),
        perf_name: None,
        source: "umc_cas_cmd.wr (EventCode 0x0a, RdWrMask 0x2): tools/perf/pmu-events/arch/x86/amdzen4/memory-controller.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "upi-txl-flits-data",
        family: Family::IntelSapphireRapids,
        pmu: PmuKind::IntelUpi,
        encoding: Encoding::Terms("event=0x02,umask=0x0f"),
        perf_name: Some("unc_upi_txl_flits.all_data"),
        source: "UNC_UPI_TxL_FLITS.ALL_DATA: tools/perf/pmu-events/arch/x86/sapphirerapids/uncore-interconnect.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "upi-txl-flits-data",
        family: Family::IntelIceLakeSp,
        pmu: PmuKind::IntelUpi,
        encoding: Encoding::Terms("event=0x02,umask=0x0f"),
        perf_name: Some("unc_upi_txl_flits.all_data"),
        source: "UNC_UPI_TxL_FLITS.ALL_DATA: tools/perf/pmu-events/arch/x86/icelakex/ (uncore-interconnect.json; perf 6.1 files it under uncore-other.json)",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link0",
        family: Family::AmdZen4Only,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xb5f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link0 (EventCode 0xb5f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen4/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link1",
        family: Family::AmdZen4Only,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xb9f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link1 (EventCode 0xb9f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen4/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link2",
        family: Family::AmdZen4Only,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xbdf,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link2 (EventCode 0xbdf, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen4/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link3",
        family: Family::AmdZen4Only,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xc1f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link3 (EventCode 0xc1f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen4/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link4",
        family: Family::AmdZen4Only,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xc5f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link4 (EventCode 0xc5f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen4/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link5",
        family: Family::AmdZen4Only,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xc9f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link5 (EventCode 0xc9f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen4/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link6",
        family: Family::AmdZen4Only,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xcdf,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link6 (EventCode 0xcdf, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen4/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link7",
        family: Family::AmdZen4Only,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xd1f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link7 (EventCode 0xd1f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen4/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link0",
        family: Family::AmdZen5,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xd5f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link_0 (EventCode 0xd5f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen5/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link1",
        family: Family::AmdZen5,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xd9f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link_1 (EventCode 0xd9f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen5/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link2",
        family: Family::AmdZen5,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xddf,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link_2 (EventCode 0xddf, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen5/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link3",
        family: Family::AmdZen5,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xe1f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link_3 (EventCode 0xe1f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen5/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link4",
        family: Family::AmdZen5,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xe5f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link_4 (EventCode 0xe5f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen5/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::LinkTraffic,
        name: "xgmi-out-link5",
        family: Family::AmdZen5,
        pmu: PmuKind::AmdDf,
        encoding: Encoding::Terms("event=0xe9f,umask=0xf3e"),
        perf_name: None,
        source: "local_socket_outbound_data_beats_link_5 (EventCode 0xe9f, UMask 0xf3e, 64-byte beats): tools/perf/pmu-events/arch/x86/amdzen5/data-fabric.json",
    },
    CatalogueEvent {
        signal: Signal::PreciseLoads,
        name: "ibs-op",
        family: Family::AmdIbs,
        pmu: PmuKind::IbsOp,
        encoding: Encoding::Terms("cnt_ctl=1"),
        perf_name: None,
        source: "IBS op sampling, counting dispatched ops (cnt_ctl = IbsOpCntCtl, config:19): arch/x86/events/amd/ibs.c",
    },
    CatalogueEvent {
        signal: Signal::PreciseLoads,
        name: "mem-loads-aux",
        family: Family::IntelSapphireRapids,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0x03,umask=0x82"),
        perf_name: None,
        source: "mem-loads-aux, the leader a load-latency event needs on this core (arch/x86/events/intel/core.c EVENT_ATTR_STR(mem-loads-aux, mem_ld_aux, ...), require_mem_loads_aux_event)",
    },
    CatalogueEvent {
        signal: Signal::PreciseLoads,
        name: "mem-loads",
        family: Family::IntelSapphireRapids,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0xcd,umask=0x1,ldlat=30"),
        perf_name: None,
        source: "MEM_TRANS_RETIRED.LOAD_LATENCY (event 0xcd, umask 0x1, threshold in ldlat = config1:0-15): arch/x86/events/intel/core.c mem_ld_hsw in glc_events_attrs; tools/perf/pmu-events/arch/x86/sapphirerapids/",
    },
    CatalogueEvent {
        signal: Signal::PreciseStores,
        name: "mem-stores",
        family: Family::IntelSapphireRapids,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0xcd,umask=0x2"),
        perf_name: Some("mem_trans_retired.store_sample"),
        source: "MEM_TRANS_RETIRED.STORE_SAMPLE: arch/x86/events/intel/core.c EVENT_ATTR_STR(mem-stores, mem_st_spr, ...); tools/perf/pmu-events/arch/x86/sapphirerapids/",
    },
    CatalogueEvent {
        signal: Signal::PreciseLoads,
        name: "mem-loads",
        family: Family::IntelIceLakeSp,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0xcd,umask=0x1,ldlat=30"),
        perf_name: None,
        source: "MEM_TRANS_RETIRED.LOAD_LATENCY (event 0xcd, umask 0x1, threshold in ldlat = config1:0-15): arch/x86/events/intel/core.c mem_ld_hsw in icl_events_attrs; no mem-loads-aux leader (intel_pmu_init sets PMU_FL_MEM_LOADS_AUX for Sapphire Rapids, not Ice Lake)",
    },
    CatalogueEvent {
        signal: Signal::PreciseStores,
        name: "mem-stores",
        family: Family::IntelIceLakeSp,
        pmu: PmuKind::Core,
        encoding: Encoding::Terms("event=0xd0,umask=0x82"),
        perf_name: Some("mem_inst_retired.all_stores"),
        source: "MEM_INST_RETIRED.ALL_STORES: arch/x86/events/intel/core.c EVENT_ATTR_STR(mem-stores, mem_st_hsw, ...) in icl_events_attrs; tools/perf/pmu-events/arch/x86/icelakex/ (cache.json in perf 6.1)",
    },
    CatalogueEvent {
        signal: Signal::PreciseLoads,
        name: "spe-loads-stores",
        family: Family::ArmSpe,
        pmu: PmuKind::Spe,
        encoding: Encoding::Terms("ts_enable=1,load_filter=1,store_filter=1"),
        perf_name: None,
        source: "Arm SPE, loads and stores only, timestamped: drivers/perf/arm_spe_pmu.c format attributes ts_enable, load_filter, store_filter",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_a_source_and_a_unique_name() {
        for (i, e) in CATALOGUE.iter().enumerate() {
            assert!(e.source.len() > 20, "{}: source too vague", e.name);
            let same = CATALOGUE[..i]
                .iter()
                .any(|o| (o.signal, o.family, o.name) == (e.signal, e.family, e.name));
            assert!(!same, "{} {} twice", e.signal, e.name);
        }
        assert_eq!(PRECISE_PERIOD % 16, 0, "IBS needs the low 4 bits clear");
        let ldlat = CATALOGUE.iter().find(|e| e.name == "mem-loads").unwrap();
        let want = format!("ldlat={LOAD_LATENCY_CYCLES}");
        assert!(matches!(ldlat.encoding, Encoding::Terms(t) if t.ends_with(&want)));
    }
}
