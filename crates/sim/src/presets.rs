//! Built-in machine and workload presets, and loading users' files.

use crate::preset::MachinePreset;
use crate::scenario::Scenario;
use rondpoint_safeio::InputKind;
use std::path::Path;
use thiserror::Error;

/// Built-in machine presets: (name, TOML text).
pub const MACHINES: &[(&str, &str)] = &[
    (
        "opteron-8385",
        include_str!("../presets/machines/opteron-8385.toml"),
    ),
    (
        "opteron-8435",
        include_str!("../presets/machines/opteron-8435.toml"),
    ),
    (
        "r905-asymmetric",
        include_str!("../presets/machines/r905-asymmetric.toml"),
    ),
    (
        "xeon-6242-4s",
        include_str!("../presets/machines/xeon-6242-4s.toml"),
    ),
    ("xeon-2s", include_str!("../presets/machines/xeon-2s.toml")),
    (
        "epyc-genoa-2s-cxl",
        include_str!("../presets/machines/epyc-genoa-2s-cxl.toml"),
    ),
    (
        "xeon-2s-cxl",
        include_str!("../presets/machines/xeon-2s-cxl.toml"),
    ),
    (
        "nehalem-e5520-2s",
        include_str!("../presets/machines/nehalem-e5520-2s.toml"),
    ),
    (
        "m5a-24xlarge",
        include_str!("../presets/machines/m5a-24xlarge.toml"),
    ),
];

/// Built-in workload presets: (name, TOML text).
pub const WORKLOADS: &[(&str, &str)] = &include!("workload_list.rs");

/// Errors finding or parsing a preset.
#[derive(Debug, Error)]
pub enum PresetError {
    #[error("unknown {kind} '{name}'; built-in {kind}s: {}; or give a path to a .toml file", valid.join(", "))]
    Unknown {
        kind: &'static str,
        name: String,
        valid: Vec<String>,
    },
    #[error("cannot read {0}")]
    Read(#[source] rondpoint_safeio::SafeIoError),
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
}

fn lookup<'a>(
    table: &'a [(&'a str, &'a str)],
    kind: &'static str,
    name_or_path: &str,
) -> Result<(String, String), PresetError> {
    if let Some((n, text)) = table.iter().find(|(n, _)| *n == name_or_path) {
        return Ok((format!("built-in {kind} '{n}'"), (*text).to_string()));
    }
    let path = Path::new(name_or_path);
    if name_or_path.ends_with(".toml") || path.components().count() > 1 {
        let text =
            rondpoint_safeio::read_text(path, InputKind::Scenario).map_err(PresetError::Read)?;
        return Ok((name_or_path.to_string(), text));
    }
    Err(PresetError::Unknown {
        kind,
        name: name_or_path.to_string(),
        valid: table.iter().map(|(n, _)| n.to_string()).collect(),
    })
}

fn parse<T: serde::de::DeserializeOwned>(origin: &str, text: &str) -> Result<T, PresetError> {
    toml::from_str(text).map_err(|e| PresetError::Parse {
        path: origin.to_string(),
        message: rondpoint_model::toml_error::describe(text, &e),
    })
}

/// A machine preset by built-in name or file path.
pub fn machine(name_or_path: &str) -> Result<MachinePreset, PresetError> {
    let (origin, text) = lookup(MACHINES, "machine", name_or_path)?;
    parse(&origin, &text)
}

/// A workload (scenario) by built-in name or file path.
pub fn workload(name_or_path: &str) -> Result<Scenario, PresetError> {
    let (origin, text) = lookup(WORKLOADS, "workload", name_or_path)?;
    parse(&origin, &text)
}
