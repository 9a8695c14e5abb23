//! From a machine's PMUs to the `perf_event_attr` of every event rondpoint would open there:
//! the catalogue's entries ([`super::events::CATALOGUE`]) whose CPU family and PMU the machine
//! has, each encoded with the PMU's own `format/*` files, in the opening mode of its signal.
//! Signals with no usable entry are listed with why, so reports can say what is estimated.
//!
//! Pure: nothing is opened. [`Plan::perf_lines`] prints each attr with the perf command that
//! must print the same attr, which scripts/perf-equivalence runs against fixture trees.

use super::events::{CATALOGUE, CatalogueEvent, Encoding, Family, PRECISE_PERIOD, Signal};
use super::{Pmu, PmuKind};
use crate::sys::{KernelAttr, PerfAttr};
use std::fmt::Write as _;

/// A CPU as perf's `PERF_CPUID` names it on x86 (`GenuineIntel-6-8F-8`: vendor, family in
/// decimal, model in hexadecimal, stepping; tools/perf/arch/x86/util/header.c), or as
/// /proc/cpuinfo describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuIdent {
    pub vendor: String,
    pub family: u32,
    pub model: u32,
}

impl CpuIdent {
    /// Reads `VENDOR-FAMILY-MODEL[-STEPPING]`, as `PERF_CPUID` takes it.
    pub fn parse_perf_cpuid(text: &str) -> Option<Self> {
        let mut parts = text.trim().split('-');
        let vendor = parts.next()?.to_string();
        let family = parts.next()?.parse().ok()?;
        let model = u32::from_str_radix(parts.next()?, 16).ok()?;
        Some(Self {
            vendor,
            family,
            model,
        })
    }

    /// The first processor of /proc/cpuinfo's text.
    pub fn from_cpuinfo(text: &str) -> Option<Self> {
        let (vendor, family, model) = parse_cpuinfo(text)?;
        Some(Self {
            vendor,
            family,
            model,
        })
    }

    fn is(&self, vendor: &str, family: u32) -> bool {
        self.vendor == vendor && self.family == family
    }
}

/// `vendor_id`, `cpu family` and `model` of the first processor in /proc/cpuinfo text
/// (arch/x86/kernel/cpu/proc.c `show_cpuinfo` prints the family and model in decimal).
pub fn parse_cpuinfo(text: &str) -> Option<(String, u32, u32)> {
    let (mut vendor, mut family, mut model) = (None, None, None);
    for line in text.lines() {
        if line.trim().is_empty() {
            if vendor.is_some() || family.is_some() || model.is_some() {
                break; // end of the first processor's block
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "vendor_id" => vendor = Some(value.to_string()),
            "cpu family" => family = value.parse().ok(),
            "model" => model = value.parse().ok(),
            _ => {}
        }
    }
    Some((vendor?, family?, model?))
}

/// Where an event counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A process's threads, inherited by what they create (pid = the task, cpu = -1).
    Task,
    /// Everything on one CPU of the PMU's `cpumask` (pid = -1): uncore counters.
    Cpu,
}

/// One attr rondpoint would open.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedAttr {
    pub event: &'static CatalogueEvent,
    /// The PMU unit (`uncore_imc_3`), or `""` for a generic hardware event.
    pub unit: String,
    pub target: Target,
    pub attr: PerfAttr,
}

/// A signal this machine cannot give, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Degraded {
    pub signal: Signal,
    pub why: String,
}

/// Every attr for a machine, and the signals left without one.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub families: Vec<Family>,
    pub attrs: Vec<PlannedAttr>,
    pub degraded: Vec<Degraded>,
}

/// Data pages of a precise sampler's ring (per CPU), as the page-fault sampler's default.
const SAMPLER_RING_PAGES: usize = 64;

/// PERF_SAMPLE_* bits (include/uapi/linux/perf_event.h) the precise samplers ask for.
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_ADDR: u64 = 1 << 3;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_RAW: u64 = 1 << 10;
const SAMPLE_DATA_SRC: u64 = 1 << 15;
/// The access's latency, on Intel in the low 32 bits (`var1_dw`); what perf record's `-W`
/// asks for on x86 (tools/perf/arch/x86/util/evsel.c).
const SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;

/// perf's names of the PERF_SAMPLE_* bits, bit 0 first (tools/perf/util/perf_event_attr_fprintf.c).
const SAMPLE_NAMES: [&str; 25] = [
    "IP",
    "TID",
    "TIME",
    "ADDR",
    "READ",
    "CALLCHAIN",
    "ID",
    "CPU",
    "PERIOD",
    "STREAM_ID",
    "RAW",
    "BRANCH_STACK",
    "REGS_USER",
    "STACK_USER",
    "WEIGHT",
    "DATA_SRC",
    "IDENTIFIER",
    "TRANSACTION",
    "REGS_INTR",
    "PHYS_ADDR",
    "AUX",
    "CGROUP",
    "DATA_PAGE_SIZE",
    "CODE_PAGE_SIZE",
    "WEIGHT_STRUCT",
];

/// perf's names of the PERF_FORMAT_* bits, bit 0 first.
const READ_FORMAT_NAMES: [&str; 5] = [
    "TOTAL_TIME_ENABLED",
    "TOTAL_TIME_RUNNING",
    "ID",
    "GROUP",
    "LOST",
];

/// The families of this machine's CPU: from `cpu` when known (/proc/cpuinfo, or a fixture's
/// perf cpuid), else from what the PMUs show: `caps/pmu_name` of Intel's core PMU (Ice Lake-SP
/// is `icelake` with numbered `uncore_imc_N` units, which Ice Lake clients lack), IBS's
/// `caps/zen4_ibs_extensions` (Zen 4), and for Zen 3 the family 19h formats of `amd_l3`
/// (`enallcores`, arch/x86/events/amd/uncore.c) without that IBS capability.
pub fn families(pmus: &[Pmu], cpu: Option<&CpuIdent>) -> Vec<Family> {
    let has = |kind| pmus.iter().any(|p| p.kind == kind);
    let cap = |kind, name: &str, value: &str| {
        pmus.iter()
            .any(|p| p.kind == kind && p.caps.get(name).is_some_and(|v| v == value))
    };
    let mut out = Vec::new();
    if has(PmuKind::Core) {
        out.push(Family::AnyCore);
    }
    let intel = |models: &[u32]| cpu.map(|c| c.is("GenuineIntel", 6) && models.contains(&c.model));
    let icx = intel(&[0x6a, 0x6c])
        .unwrap_or_else(|| cap(PmuKind::Core, "pmu_name", "icelake") && has(PmuKind::IntelImc));
    let spr =
        intel(&[0x8f, 0xcf]).unwrap_or_else(|| cap(PmuKind::Core, "pmu_name", "sapphire_rapids"));
    let zen4 = match cpu {
        Some(c) => {
            c.is("AuthenticAMD", 0x1a)
                || c.is("AuthenticAMD", 0x19) && matches!(c.model, 0x10..=0x1f | 0x60..=0xff)
        }
        None => cap(PmuKind::IbsOp, "zen4_ibs_extensions", "1"),
    };
    // Zen 4 and Zen 5 apart: their data-fabric codes differ, and only cpuinfo tells them.
    let amd = |family| cpu.is_some_and(|c| c.is("AuthenticAMD", family));
    let zen4_only = zen4 && amd(0x19);
    let zen5 = zen4 && amd(0x1a);
    let zen3 = match cpu {
        Some(c) => c.is("AuthenticAMD", 0x19) && matches!(c.model, 0x00..=0x0f | 0x20..=0x5f),
        None => {
            !zen4
                && pmus
                    .iter()
                    .any(|p| p.name == "amd_l3" && p.formats.contains_key("enallcores"))
        }
    };
    for (is, family) in [
        (icx, Family::IntelIceLakeSp),
        (spr, Family::IntelSapphireRapids),
        (zen3, Family::AmdZen3),
        (zen4, Family::AmdZen4),
        (zen4_only, Family::AmdZen4Only),
        (zen5, Family::AmdZen5),
        (has(PmuKind::IbsOp), Family::AmdIbs),
        (has(PmuKind::Spe), Family::ArmSpe),
    ] {
        if is {
            out.push(family);
        }
    }
    out
}

/// The attrs rondpoint would open on a machine with these PMUs and this CPU.
pub fn plan(pmus: &[Pmu], cpu: Option<&CpuIdent>) -> Plan {
    let families = families(pmus, cpu);
    let mut attrs = Vec::new();
    let mut degraded = Vec::new();
    for signal in Signal::ALL {
        let mut problems = Vec::new();
        let before = attrs.len();
        for event in CATALOGUE
            .iter()
            .filter(|e| e.signal == signal && families.contains(&e.family))
        {
            attrs.extend(attrs_of(event, pmus, &mut problems));
        }
        if attrs.len() == before {
            if problems.is_empty() {
                problems.push(missing(signal, pmus).to_string());
            }
            degraded.push(Degraded {
                signal,
                why: problems.join("; "),
            });
        }
    }
    Plan {
        families,
        attrs,
        degraded,
    }
}

/// Why a signal has no entry for this machine's families.
fn missing(signal: Signal, pmus: &[Pmu]) -> &'static str {
    let core = pmus.iter().any(|p| p.kind == PmuKind::Core);
    match signal {
        _ if !core && signal <= Signal::DramRemote => {
            "no core PMU (a VM without a virtual PMU?): hardware counters cannot be opened"
        }
        Signal::DramLocal | Signal::DramRemote => {
            "no local/remote DRAM event catalogued for this CPU: DRAM traffic estimated from page-fault samples"
        }
        Signal::McReads | Signal::McWrites if pmus.iter().any(|p| p.kind == PmuKind::AmdDf) => {
            "no amd_umc PMU (amd_df counts each DRAM channel's reads and writes together, which is not catalogued): memory-controller traffic estimated from page-fault samples"
        }
        Signal::McReads | Signal::McWrites => {
            "no uncore_imc or amd_umc PMU with a catalogued event: memory-controller traffic estimated from page-fault samples"
        }
        Signal::LinkTraffic if pmus.iter().any(|p| p.kind == PmuKind::AmdDf) => {
            "no xGMI event catalogued for this CPU (amd_df: Zen 4 and Zen 5, told apart by /proc/cpuinfo): link traffic not measured"
        }
        Signal::LinkTraffic => {
            "no uncore_upi or amd_df PMU with a catalogued event: link traffic not measured"
        }
        Signal::PreciseLoads => {
            "no IBS op, PEBS or SPE PMU with a catalogued event: page-fault samples stand in"
        }
        Signal::PreciseStores
            if pmus
                .iter()
                .any(|p| matches!(p.kind, PmuKind::IbsOp | PmuKind::Spe)) =>
        {
            "no event of its own: IBS op and SPE sample stores with the loads"
        }
        _ => "no PEBS store event catalogued for this CPU: stores are not sampled",
    }
}

/// The attrs of one entry: one per unit of its PMU kind (one for a generic event); a unit
/// the entry does not fit is left out, with why in `problems`.
fn attrs_of(
    event: &'static CatalogueEvent,
    pmus: &[Pmu],
    problems: &mut Vec<String>,
) -> Vec<PlannedAttr> {
    let units: Vec<&Pmu> = pmus.iter().filter(|p| p.kind == event.pmu).collect();
    if units.is_empty() {
        problems.push(format!(
            "{} is on a {}, which this machine lacks",
            event.name,
            event.pmu.describe()
        ));
        return Vec::new();
    }
    let target = match event.signal {
        Signal::McReads | Signal::McWrites | Signal::LinkTraffic => Target::Cpu,
        _ => Target::Task,
    };
    let terms = match event.encoding {
        Encoding::Generic { config, .. } => {
            let attr = mode(event, 0, [config, 0, 0]);
            return vec![PlannedAttr {
                event,
                unit: String::new(),
                target,
                attr,
            }];
        }
        Encoding::Terms(terms) => terms,
    };
    let mut out = Vec::new();
    for unit in units {
        let words = match unit.encode(terms) {
            Ok(w) if w.config3 == 0 => w,
            Ok(_) => {
                problems.push(format!("{} on {}: sets config3", event.name, unit.name));
                continue;
            }
            Err(e) => {
                problems.push(format!("{} on {}: {e}", event.name, unit.name));
                continue;
            }
        };
        if is_pebs(event) && unit.max_precise().unwrap_or(0) < 2 {
            problems.push(format!(
                "{}: {} has no PEBS (caps/max_precise below 2)",
                event.name, unit.name
            ));
            continue;
        }
        let attr = mode(
            event,
            unit.pmu_type,
            [words.config, words.config1, words.config2],
        );
        out.push(PlannedAttr {
            event,
            unit: unit.name.clone(),
            target,
            attr,
        });
    }
    out
}

fn is_pebs(event: &CatalogueEvent) -> bool {
    matches!(event.signal, Signal::PreciseLoads | Signal::PreciseStores)
        && matches!(
            event.family,
            Family::IntelIceLakeSp | Family::IntelSapphireRapids
        )
}

/// The attr of an event in its signal's opening mode: a process's counters count user space
/// only (what kernel.perf_event_paranoid 2 allows on one's own processes) and are inherited;
/// uncore counters exclude nothing (their PMUs refuse any exclusion: PERF_PMU_CAP_NO_EXCLUDE);
/// precise samplers sample every [`PRECISE_PERIOD`] events with the data address, data source,
/// thread and CPU, PEBS at precise_ip 2 in user space (its loads with their latency, the
/// weight), IBS including the kernel (ibs.c refuses
/// any exclusion unless its software filter is asked for) and with its raw registers.
fn mode(event: &CatalogueEvent, kind: u32, [config, config1, config2]: [u64; 3]) -> PerfAttr {
    let base = PerfAttr {
        kind,
        config,
        config1,
        config2,
        ..PerfAttr::default()
    };
    match event.signal {
        Signal::McReads | Signal::McWrites | Signal::LinkTraffic => PerfAttr {
            exclude_hv: false,
            ..base
        },
        Signal::PreciseLoads | Signal::PreciseStores => {
            let ibs = event.pmu == PmuKind::IbsOp;
            PerfAttr {
                sample_period: PRECISE_PERIOD,
                sample_type: SAMPLE_TID
                    | SAMPLE_ADDR
                    | SAMPLE_CPU
                    | SAMPLE_DATA_SRC
                    | if ibs { SAMPLE_RAW } else { 0 }
                    | if is_pebs(event) && event.signal == Signal::PreciseLoads {
                        SAMPLE_WEIGHT_STRUCT
                    } else {
                        0
                    },
                precise_ip: if is_pebs(event) { 2 } else { 0 },
                exclude_kernel: !ibs,
                exclude_hv: !ibs,
                inherit: true,
                ring_pages: SAMPLER_RING_PAGES,
                ..base
            }
        }
        _ => PerfAttr {
            exclude_kernel: true,
            inherit: true,
            ..base
        },
    }
}

/// Names of the set bits of `value`, `|`-separated as perf prints them, or `0`.
fn bit_names(value: u64, names: &[&str]) -> String {
    let set: Vec<&str> = names
        .iter()
        .enumerate()
        .filter(|(bit, _)| value & (1 << bit) != 0)
        .map(|(_, n)| *n)
        .collect();
    if set.is_empty() {
        "0".to_string()
    } else {
        set.join("|")
    }
}

impl PlannedAttr {
    /// `signal/name/unit`, unique in a plan.
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.event.signal, self.event.name, self.unit)
    }

    /// perf's modifier for this attr's exclusions and precision.
    fn modifier(&self) -> &'static str {
        match (self.attr.exclude_kernel, self.attr.precise_ip) {
            (true, 2) => "upp",
            (true, _) => "u",
            (false, _) => "",
        }
    }

    /// The event as perf's `-e` takes it, and the perf options of the opening mode.
    pub fn perf_command(&self) -> (String, String) {
        let m = self.modifier();
        let event = match self.event.encoding {
            Encoding::Generic { perf, .. } => format!("{perf}:{m}"),
            Encoding::Terms(terms) => format!("{}/{terms}/{m}", self.unit),
        };
        let options = match (self.target, self.attr.sample_period) {
            (Target::Cpu, _) => "stat -a --no-inherit".to_string(),
            (Target::Task, 0) => "stat".to_string(),
            (Target::Task, period) => {
                let flag = |bit, option| {
                    if self.attr.sample_type & bit != 0 {
                        option
                    } else {
                        ""
                    }
                };
                format!(
                    "record -c {period} -d --sample-cpu{}{}",
                    flag(SAMPLE_RAW, " -R"),
                    flag(SAMPLE_WEIGHT_STRUCT, " -W")
                )
            }
        };
        (event.trim_end_matches(':').to_string(), options)
    }

    /// The same event by the name of perf's tables, with the same modifier.
    pub(crate) fn perf_named(&self) -> Option<String> {
        let name = self.event.perf_name?;
        let m = self.modifier();
        Some(if m.is_empty() {
            name.to_string()
        } else {
            format!("{name}:{m}")
        })
    }

    /// The compared fields, `name=value` as perf -vv prints them (zero fields included, which
    /// perf leaves out). Recording adds perf's own read_format; it is not compared then.
    pub fn fields(&self) -> String {
        let k: KernelAttr = self.attr.kernel(4096);
        let sampling = k.sample_period != 0;
        let mut out = format!(
            "type={} config={:#x} config1={:#x} config2={:#x} sample_period={} freq=0 \
             sample_type={}",
            k.kind,
            k.config,
            k.config1,
            k.config2,
            k.sample_period,
            bit_names(k.sample_type, &SAMPLE_NAMES)
        );
        if !sampling {
            let _ = write!(
                out,
                " read_format={}",
                bit_names(k.read_format, &READ_FORMAT_NAMES)
            );
        }
        let _ = write!(
            out,
            " disabled={} inherit={} pinned=0 exclusive=0 exclude_user=0 exclude_kernel={} \
             exclude_hv={} exclude_idle=0 precise_ip={} exclude_host=0",
            u8::from(k.disabled),
            u8::from(k.inherit),
            u8::from(k.exclude_kernel),
            u8::from(k.exclude_hv),
            k.precise_ip
        );
        out
    }
}

impl Plan {
    /// One tab-separated line per attr (`attr`, id, perf options, event, named event or `-`,
    /// fields) and per degraded signal (`degraded`, signal, why): the input of
    /// scripts/perf-equivalence.
    pub fn perf_lines(&self) -> String {
        let mut out = String::new();
        for a in &self.attrs {
            let (event, options) = a.perf_command();
            let named = a.perf_named().unwrap_or_else(|| "-".to_string());
            let _ = writeln!(
                out,
                "attr\t{}\t{options}\t{event}\t{named}\t{}",
                a.id(),
                a.fields()
            );
        }
        for d in &self.degraded {
            let _ = writeln!(out, "degraded\t{}\t{}", d.signal, d.why);
        }
        out
    }
}

#[cfg(test)]
mod tests;
