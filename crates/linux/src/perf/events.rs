//! PMU event encodings per microarchitecture, kept as data (after numatop).
//!
//! Each family has one TOML file in `crates/linux/events/`, embedded at build time. A file names
//! the CPUs it covers (`vendor`, and `match` entries of `cpu family` plus models, as
//! `/proc/cpuinfo` prints them) and the events rondpoint uses under fixed names:
//!
//! | name               | meaning                                                       |
//! |--------------------|---------------------------------------------------------------|
//! | `instructions`     | retired instructions (generic hardware event)                 |
//! | `cycles`           | core cycles (generic hardware event)                          |
//! | `llc_misses`       | last-level-cache misses (or the closest core-PMU proxy)       |
//! | `local_dram`       | loads (fills) served by DRAM of the local node                |
//! | `remote_dram`      | loads (fills) served by DRAM of another node                  |
//! | `mem_load_latency` | Intel PEBS load sampling (ldlat threshold in `config1`)       |
//! | `mem_loads_aux`    | Sapphire Rapids: group leader `mem_load_latency` needs        |
//! | `mem_stores`       | Intel PEBS store sampling                                     |
//! | `ibs_op`           | AMD IBS op sampling (PMU type read at run time)               |
//! | `imc_cas_rd/_wr`, `upi_flits`, `umc_cas_rd/_wr`, `df_dram_channel0` | optional uncore |
//!
//! Every event carries `source` (the public file the encoding comes from) and, where the
//! encoding or its meaning is not certain, `unsure` (why). Only `instructions` and `cycles` are
//! required of a table; callers must treat every other event as optional.
//!
//! This module only describes events; opening them (perf_event_open) belongs to the syscall
//! layer, which maps [`EventKind`] to `perf_event_attr.type` (see `EventKind::fixed_type`).

use std::collections::BTreeMap;

use serde::Deserialize;
use thiserror::Error;

/// The embedded table files: (file name, contents).
const FILES: &[(&str, &str)] = &[
    (
        "intel-skylake-sp.toml",
        include_str!("../../events/intel-skylake-sp.toml"),
    ),
    (
        "intel-icelake-sp.toml",
        include_str!("../../events/intel-icelake-sp.toml"),
    ),
    (
        "intel-sapphire-rapids.toml",
        include_str!("../../events/intel-sapphire-rapids.toml"),
    ),
    ("amd-zen2.toml", include_str!("../../events/amd-zen2.toml")),
    ("amd-zen3.toml", include_str!("../../events/amd-zen3.toml")),
    ("amd-zen4.toml", include_str!("../../events/amd-zen4.toml")),
];

/// `perf_event_attr.type` of PERF_TYPE_HARDWARE.
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// `perf_event_attr.type` of PERF_TYPE_RAW.
pub const PERF_TYPE_RAW: u32 = 4;

/// How an event is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// PERF_TYPE_HARDWARE; `config` is a `perf_hw_id` (0 cycles, 1 instructions, ...).
    Hardware,
    /// PERF_TYPE_RAW on the core PMU; `config` is `umask << 8 | event` (plus any extra bits).
    Raw,
    /// AMD IBS op sampling: the type is dynamic, read from
    /// `/sys/bus/event_source/devices/ibs_op/type`; samples carry the IBS registers in
    /// PERF_SAMPLE_RAW (see [`super::ring::decode_ibs_op`]).
    IbsOp,
    /// An uncore PMU with a dynamic type: the devices named `pmu` or `pmu_<n>` under
    /// `/sys/bus/event_source/devices/` (one per memory controller, link or die); counted per
    /// CPU (system-wide), not per task.
    Uncore {
        /// Device name or name prefix, e.g. `uncore_imc`, `amd_umc`, `amd_df`.
        pmu: String,
    },
}

impl EventKind {
    /// The `perf_event_attr.type` when it is fixed by the ABI; `None` for dynamic PMUs whose
    /// type must be read from sysfs.
    #[cfg(test)]
    pub(crate) fn fixed_type(&self) -> Option<u32> {
        match self {
            EventKind::Hardware => Some(PERF_TYPE_HARDWARE),
            EventKind::Raw => Some(PERF_TYPE_RAW),
            EventKind::IbsOp | EventKind::Uncore { .. } => None,
        }
    }
}

/// One event encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    pub kind: EventKind,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// `perf_event_attr.config1` (Intel: the PEBS load-latency threshold, MSR 0x3F6).
    pub config1: Option<u64>,
    /// `perf_event_attr.precise_ip` (0..=3) for PEBS events.
    pub precise_ip: Option<u8>,
    /// Where the encoding comes from (a public file).
    pub source: String,
    /// Why the encoding or its meaning is not certain, when it is not.
    pub unsure: Option<String>,
}

/// A `cpu family` and the models of it a table covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuMatch {
    pub family: u32,
    /// Individual models.
    pub models: Vec<u32>,
    /// Inclusive model ranges.
    pub model_ranges: Vec<(u32, u32)>,
}

impl CpuMatch {
    pub fn matches(&self, family: u32, model: u32) -> bool {
        family == self.family
            && (self.models.contains(&model)
                || self
                    .model_ranges
                    .iter()
                    .any(|&(lo, hi)| (lo..=hi).contains(&model)))
    }
}

/// The events of one microarchitecture family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTable {
    /// The file's `name`, e.g. `intel-skylake-sp`.
    pub name: String,
    /// Which processors it covers, in words.
    pub description: String,
    /// `vendor_id` from /proc/cpuinfo: `GenuineIntel` or `AuthenticAMD`.
    pub vendor: String,
    pub matches: Vec<CpuMatch>,
    /// Events by rondpoint name (see the module documentation).
    pub events: BTreeMap<String, EventSpec>,
}

impl EventTable {
    /// The event called `name`, if this table has one.
    pub fn event(&self, name: &str) -> Option<&EventSpec> {
        self.events.get(name)
    }

    /// Whether the table covers this CPU.
    pub fn covers(&self, vendor: &str, family: u32, model: u32) -> bool {
        self.vendor == vendor && self.matches.iter().any(|m| m.matches(family, model))
    }
}

/// A table file that does not parse or does not describe a valid table.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EventsError {
    #[error("events/{file}: {message}")]
    Syntax { file: String, message: String },
    #[error("events/{file}: `{field}`: {message}")]
    Field {
        file: String,
        field: String,
        message: String,
    },
}

/// Parses every embedded table file.
pub fn tables() -> Result<Vec<EventTable>, EventsError> {
    FILES
        .iter()
        .map(|(file, text)| parse_table(file, text))
        .collect()
}

/// The table covering this CPU (`vendor_id`, `cpu family`, `model` from /proc/cpuinfo), if any.
/// `None` also if the embedded tables fail to parse (a test guarantees they do not).
pub fn detect(vendor: &str, family: u32, model: u32) -> Option<EventTable> {
    tables()
        .ok()?
        .into_iter()
        .find(|t| t.covers(vendor, family, model))
}

/// `vendor_id`, `cpu family` and `model` of the first processor in /proc/cpuinfo text.
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

/// The file format, as serde reads it; [`parse_table`] checks it and builds an [`EventTable`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    name: String,
    description: String,
    vendor: String,
    #[serde(rename = "match")]
    matches: Vec<MatchFile>,
    events: BTreeMap<String, EventFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatchFile {
    family: u32,
    #[serde(default)]
    models: Vec<u32>,
    #[serde(default)]
    model_ranges: Vec<(u32, u32)>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventFile {
    #[serde(rename = "type")]
    kind: String,
    pmu: Option<String>,
    config: u64,
    config1: Option<u64>,
    precise_ip: Option<u8>,
    source: String,
    unsure: Option<String>,
}

/// Parses and checks one table file (crate-visible so that tests can feed malformed ones).
pub(crate) fn parse_table(file: &str, text: &str) -> Result<EventTable, EventsError> {
    let raw: TableFile = toml::from_str(text).map_err(|e| EventsError::Syntax {
        file: file.to_string(),
        message: e.to_string(),
    })?;
    let err = |field: &str, message: &str| EventsError::Field {
        file: file.to_string(),
        field: field.to_string(),
        message: message.to_string(),
    };
    if raw.vendor != "GenuineIntel" && raw.vendor != "AuthenticAMD" {
        return Err(err(
            "vendor",
            "must be \"GenuineIntel\" or \"AuthenticAMD\"",
        ));
    }
    if raw.matches.is_empty() {
        return Err(err(
            "match",
            "needs at least one { family, models | model_ranges }",
        ));
    }
    let mut matches = Vec::new();
    for (i, m) in raw.matches.into_iter().enumerate() {
        if m.models.is_empty() && m.model_ranges.is_empty() {
            return Err(err(&format!("match[{i}]"), "needs models or model_ranges"));
        }
        if m.model_ranges.iter().any(|&(lo, hi)| lo > hi) {
            return Err(err(
                &format!("match[{i}]"),
                "model_ranges entries are [low, high]",
            ));
        }
        matches.push(CpuMatch {
            family: m.family,
            models: m.models,
            model_ranges: m.model_ranges,
        });
    }
    let mut events = BTreeMap::new();
    for (name, e) in raw.events {
        let field = format!("events.{name}");
        let kind = match (e.kind.as_str(), e.pmu) {
            ("hardware", None) => EventKind::Hardware,
            ("raw", None) => EventKind::Raw,
            ("ibs_op", None) => EventKind::IbsOp,
            ("uncore", Some(pmu)) if !pmu.is_empty() => EventKind::Uncore { pmu },
            ("uncore", _) => return Err(err(&field, "type = \"uncore\" needs `pmu`")),
            ("hardware" | "raw" | "ibs_op", Some(_)) => {
                return Err(err(&field, "`pmu` is only for type = \"uncore\""));
            }
            (other, _) => {
                let message = format!("type `{other}`: expected hardware, raw, ibs_op or uncore");
                return Err(err(&field, &message));
            }
        };
        if e.precise_ip.is_some_and(|p| p > 3) {
            return Err(err(&field, "precise_ip must be 0..=3"));
        }
        if e.source.trim().is_empty() {
            return Err(err(
                &field,
                "`source` must say where the encoding comes from",
            ));
        }
        let spec = EventSpec {
            kind,
            config: e.config,
            config1: e.config1,
            precise_ip: e.precise_ip,
            source: e.source,
            unsure: e.unsure,
        };
        events.insert(name, spec);
    }
    for required in ["instructions", "cycles"] {
        if !events.contains_key(required) {
            return Err(err(
                "events",
                &format!("missing required event `{required}`"),
            ));
        }
    }
    Ok(EventTable {
        name: raw.name,
        description: raw.description,
        vendor: raw.vendor,
        matches,
        events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
description = "test"
vendor = "GenuineIntel"
match = [{ family = 6, models = [85], model_ranges = [[0x10, 0x1f]] }]
[events.instructions]
type = "hardware"
config = 1
source = "perf_event.h"
[events.cycles]
type = "hardware"
config = 0
source = "perf_event.h"
"#;

    #[test]
    fn minimal_table_parses_and_matches() {
        let t = parse_table("t.toml", MINIMAL).unwrap();
        assert!(t.covers("GenuineIntel", 6, 85));
        assert!(t.covers("GenuineIntel", 6, 0x1f));
        assert!(!t.covers("GenuineIntel", 6, 0x20));
        assert!(!t.covers("AuthenticAMD", 6, 85));
        assert_eq!(
            t.event("cycles").unwrap().kind.fixed_type(),
            Some(PERF_TYPE_HARDWARE)
        );
    }

    #[test]
    fn malformed_tables_are_refused_with_the_field() {
        let no_cycles = MINIMAL.replace("[events.cycles]", "[events.other]");
        let err = parse_table("t.toml", &no_cycles).unwrap_err().to_string();
        assert!(err.contains("cycles"), "{err}");
        let bad_type = MINIMAL.replacen("\"hardware\"", "\"magic\"", 1);
        let err = parse_table("t.toml", &bad_type).unwrap_err().to_string();
        assert!(err.contains("events.instructions"), "{err}");
        let typo = MINIMAL.replacen("config = 1", "confg = 1", 1);
        assert!(parse_table("t.toml", &typo).is_err());
        let precise = MINIMAL.replacen("config = 1", "config = 1\nprecise_ip = 4", 1);
        assert!(parse_table("t.toml", &precise).is_err());
        let syntax = MINIMAL.replacen("config = 1", "config = 1.0", 1);
        let err = parse_table("t.toml", &syntax).unwrap_err();
        assert!(matches!(err, EventsError::Syntax { .. }), "{err}");
        assert!(err.to_string().contains("line 8"), "{err}");
    }

    #[test]
    fn every_embedded_table_parses_with_the_required_events() {
        let tables = tables().unwrap();
        assert_eq!(tables.len(), 6);
        for t in &tables {
            for name in [
                "instructions",
                "cycles",
                "llc_misses",
                "local_dram",
                "remote_dram",
            ] {
                assert!(t.event(name).is_some(), "{} lacks {name}", t.name);
            }
            assert_eq!(t.event("cycles").unwrap().kind, EventKind::Hardware);
            assert_eq!(t.event("instructions").unwrap().config, 1);
            for (name, e) in &t.events {
                assert!(e.source.len() > 20, "{}.{name}: source too vague", t.name);
            }
            match t.vendor.as_str() {
                "GenuineIntel" => {
                    let lat = t.event("mem_load_latency").unwrap();
                    assert_eq!((lat.config, lat.precise_ip), (0x01cd, Some(2)));
                    assert!(lat.config1.is_some(), "ldlat threshold");
                    assert_eq!(t.event("mem_stores").unwrap().config, 0x82d0);
                    assert_eq!(t.event("local_dram").unwrap().config, 0x01d3);
                    assert_eq!(t.event("remote_dram").unwrap().config, 0x02d3);
                }
                "AuthenticAMD" => {
                    let ibs = t.event("ibs_op").unwrap();
                    assert_eq!(
                        (&ibs.kind, ibs.kind.fixed_type()),
                        (&EventKind::IbsOp, None)
                    );
                }
                other => panic!("vendor {other}"),
            }
        }
        // No CPU is claimed by two tables.
        for (vendor, family) in [
            ("GenuineIntel", 6),
            ("AuthenticAMD", 23),
            ("AuthenticAMD", 25),
        ] {
            for model in 0..=255 {
                let n = tables
                    .iter()
                    .filter(|t| t.covers(vendor, family, model))
                    .count();
                assert!(n <= 1, "{vendor} {family}/{model} in {n} tables");
            }
        }
    }
}
