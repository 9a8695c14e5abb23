//! The machine's PMUs as the kernel lists them in `/sys/bus/event_source/devices`, and what
//! rondpoint may do with perf events here (`kernel.perf_event_paranoid`, capabilities).
//!
//! - [`detect`]: every device's `type`, `format/*` fields, `events/*` aliases, `cpumask` or
//!   `cpus`, and `caps/*`, read through a [`crate::sysfs::SysfsRoot`] so that fixture trees
//!   (crates/linux/tests/fixtures/pmu) stand in for real machines;
//! - [`format`](mod@format): the format fields, and the encoding of an event string into
//!   config words exactly as perf encodes it (the reference rondpoint's attrs are compared
//!   with);
//! - [`events`]: the events rondpoint opens per signal and CPU family, with the source of
//!   every code, and [`attrs`]: the complete `perf_event_attr` of each on a given machine,
//!   checked against perf's by scripts/perf-equivalence;
//! - [`access`]: the paranoid level and effective capabilities, read through a
//!   [`crate::procfs::ProcRoot`], and which kinds of events they allow.
//!
//! Everything here is pure reading and parsing: nothing is opened.

pub mod access;
pub mod attrs;
mod detect;
pub mod events;
pub mod format;

pub use access::{Access, Privileges, Scope};
pub use detect::{DEVICES_DIR, detect};
pub use format::{ConfigWord, ConfigWords, EncodeError, FormatField};

use rondpoint_model::CpuId;
use serde::Serialize;
use std::collections::BTreeMap;

/// What a PMU is, for rondpoint's signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PmuKind {
    /// The CPU's own counters: x86 `cpu`, hybrid `cpu_core`/`cpu_atom`, Arm `armv8_pmuv3_N`
    /// (or any PMU with a `cpus` file, which perf takes for an Arm core PMU).
    Core,
    /// AMD Instruction-Based Sampling of ops: precise memory-access samples.
    IbsOp,
    /// AMD Instruction-Based Sampling of instruction fetches.
    IbsFetch,
    /// Arm Statistical Profiling Extension: precise memory-access samples.
    Spe,
    /// Intel memory-controller counters (`uncore_imc_N`).
    IntelImc,
    /// Intel UPI link counters (`uncore_upi_N`).
    IntelUpi,
    /// Intel caching-and-home-agent counters (`uncore_cha_N`).
    IntelCha,
    /// AMD Data Fabric counters (`amd_df`).
    AmdDf,
    /// AMD unified memory-controller counters (`amd_umc_N`, Zen 4 and later).
    AmdUmc,
    /// The kernel's own event sources: software, tracepoint, kprobe, uprobe, breakpoint.
    Kernel,
    /// Anything else (msr, power, other uncore units, devices).
    Other,
}

impl PmuKind {
    /// The kind of the device named `name` (`has_cpus`: it has a `cpus` file).
    pub fn of(name: &str, has_cpus: bool) -> Self {
        let numbered = |prefix: &str| {
            name.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        match name {
            "cpu" | "cpu_core" | "cpu_atom" => PmuKind::Core,
            "ibs_op" => PmuKind::IbsOp,
            "ibs_fetch" => PmuKind::IbsFetch,
            "amd_df" => PmuKind::AmdDf,
            "software" | "tracepoint" | "kprobe" | "uprobe" | "breakpoint" => PmuKind::Kernel,
            _ if numbered("uncore_imc_") => PmuKind::IntelImc,
            _ if numbered("uncore_upi_") => PmuKind::IntelUpi,
            _ if numbered("uncore_cha_") => PmuKind::IntelCha,
            _ if numbered("amd_umc_") => PmuKind::AmdUmc,
            _ if numbered("arm_spe_") => PmuKind::Spe,
            _ if name.starts_with("armv8_") || name.starts_with("armv9_") || has_cpus => {
                PmuKind::Core
            }
            _ => PmuKind::Other,
        }
    }

    /// A few words for tables.
    pub fn describe(self) -> &'static str {
        match self {
            PmuKind::Core => "core PMU",
            PmuKind::IbsOp => "AMD IBS op sampling",
            PmuKind::IbsFetch => "AMD IBS fetch sampling",
            PmuKind::Spe => "Arm SPE sampling",
            PmuKind::IntelImc => "Intel memory controller",
            PmuKind::IntelUpi => "Intel UPI link",
            PmuKind::IntelCha => "Intel CHA (LLC slice)",
            PmuKind::AmdDf => "AMD Data Fabric",
            PmuKind::AmdUmc => "AMD memory controller",
            PmuKind::Kernel => "kernel software events",
            PmuKind::Other => "other",
        }
    }

    /// Whether this is hardware that counts or samples (not the kernel's own sources, not
    /// `msr` and the like).
    pub fn is_hardware(self) -> bool {
        !matches!(self, PmuKind::Kernel | PmuKind::Other)
    }
}

/// One device of `/sys/bus/event_source/devices`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pmu {
    pub name: String,
    /// `perf_event_attr.type` for its events (4 for x86's `cpu`, dynamic for most).
    #[serde(rename = "type")]
    pub pmu_type: u32,
    pub kind: PmuKind,
    /// `format/*`: field name to config bits.
    pub formats: BTreeMap<String, FormatField>,
    /// `events/*`: alias name to its terms (`event=0x3c`), without `.scale`/`.unit` files.
    pub events: BTreeMap<String, String>,
    /// `cpumask` (uncore and sampling PMUs: the CPUs to open system-wide events on) or
    /// `cpus` (Arm core and hybrid PMUs: the CPUs it covers).
    pub cpus: Option<Vec<CpuId>>,
    /// `caps/*`: capability name to its text (`max_precise` = `3`).
    pub caps: BTreeMap<String, String>,
    /// Files that could not be read or parsed, with why; the rest of the PMU is kept.
    pub problems: Vec<String>,
}

impl Pmu {
    /// Encodes an event string (`event=0x29,umask=0x7`) into this PMU's config words,
    /// as perf would for `NAME/event=0x29,umask=0x7/`. Terms are ORed, as perf does for
    /// every PMU to which it gives no default attr; for those (arm_spe_N in perf built for
    /// Arm, intel_pt in perf built for x86) perf lets a repeated term replace the earlier
    /// one, and starts from its default attr: compare such events term by term.
    pub fn encode(&self, terms: &str) -> Result<ConfigWords, EncodeError> {
        format::encode(&self.name, &self.formats, &self.events, terms, false)
    }

    /// `caps/max_precise` as a number (x86 core PMUs: 0 without PEBS, up to 3).
    pub fn max_precise(&self) -> Option<u8> {
        self.caps.get("max_precise")?.trim().parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_are_classified_by_name() {
        let kind = |n| PmuKind::of(n, false);
        for core in [
            "cpu",
            "cpu_core",
            "cpu_atom",
            "armv8_pmuv3_0",
            "armv8_cortex_a53",
        ] {
            assert_eq!(kind(core), PmuKind::Core, "{core}");
        }
        assert_eq!(PmuKind::of("apple_firestorm_pmu", true), PmuKind::Core);
        assert_eq!(kind("ibs_op"), PmuKind::IbsOp);
        assert_eq!(kind("ibs_fetch"), PmuKind::IbsFetch);
        assert_eq!(kind("uncore_imc_3"), PmuKind::IntelImc);
        assert_eq!(kind("uncore_upi_0"), PmuKind::IntelUpi);
        assert_eq!(kind("uncore_cha_41"), PmuKind::IntelCha);
        assert_eq!(kind("amd_df"), PmuKind::AmdDf);
        assert_eq!(kind("amd_umc_11"), PmuKind::AmdUmc);
        assert_eq!(kind("arm_spe_0"), PmuKind::Spe);
        for k in ["software", "tracepoint", "kprobe", "uprobe", "breakpoint"] {
            assert_eq!(kind(k), PmuKind::Kernel, "{k}");
            assert!(!kind(k).is_hardware());
        }
        for other in [
            "msr",
            "power",
            "amd_l3",
            "uncore_imc_free_running_0",
            "uncore_imc_",
        ] {
            assert_eq!(kind(other), PmuKind::Other, "{other}");
        }
        assert!(kind("ibs_op").is_hardware());
    }
}
