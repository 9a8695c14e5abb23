//! Built-in machine and workload presets, and loading users' files.

use crate::machine_preset::MachinePreset;
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
    machine_from_text(&origin, &text)
}

/// A machine preset from its text; `origin` names it in errors.
pub fn machine_from_text(origin: &str, text: &str) -> Result<MachinePreset, PresetError> {
    parse(origin, text)
}

/// A workload (scenario) by built-in name or file path. An `[[app]]` may take a built-in
/// single-application preset with `preset = "NAME"`: its application, with the keys given
/// beside `preset` in place of the preset's.
pub fn workload(name_or_path: &str) -> Result<Scenario, PresetError> {
    let (origin, text) = lookup(WORKLOADS, "workload", name_or_path)?;
    workload_from_text(&origin, &text)
}

/// A workload (scenario) from its text; `origin` names it in errors.
pub fn workload_from_text(origin: &str, text: &str) -> Result<Scenario, PresetError> {
    let bad = |message: String| PresetError::Parse {
        path: origin.to_string(),
        message,
    };
    let mut table: toml::Table = match toml::from_str(text) {
        Ok(t) => t,
        Err(_) => return parse(origin, text),
    };
    let Some(toml::Value::Array(apps)) = table.get_mut("app") else {
        return parse(origin, text);
    };
    if !apps.iter().any(|a| a.get("preset").is_some()) {
        return parse(origin, text);
    }
    for (i, app) in apps.iter_mut().enumerate() {
        let Some(keys) = app.as_table_mut() else {
            continue;
        };
        let Some(name) = keys.remove("preset") else {
            continue;
        };
        let name = name
            .as_str()
            .ok_or_else(|| bad(format!("app[{i}].preset must be a preset's name")))?;
        let mut merged = preset_app(name).map_err(|e| match e {
            PresetError::Parse { message, .. } => bad(format!("app[{i}].preset: {message}")),
            other => other,
        })?;
        merged.extend(keys.iter().map(|(k, v)| (k.clone(), v.clone())));
        *keys = merged;
    }
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| {
            bad(rondpoint_model::toml_error::without_strings(
                e.to_string().trim_end(),
            ))
        })
}

/// The one application of a built-in workload preset, as a TOML table.
fn preset_app(name: &str) -> Result<toml::Table, PresetError> {
    let Some((_, text)) = WORKLOADS.iter().find(|(n, _)| *n == name) else {
        return Err(PresetError::Unknown {
            kind: "workload",
            name: name.to_string(),
            valid: WORKLOADS.iter().map(|(n, _)| n.to_string()).collect(),
        });
    };
    let bad = |message: String| PresetError::Parse {
        path: format!("built-in workload '{name}'"),
        message,
    };
    let mut table: toml::Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
    match table.remove("app") {
        Some(toml::Value::Array(mut apps)) if apps.len() == 1 => match apps.pop() {
            Some(toml::Value::Table(t)) => Ok(t),
            _ => Err(bad("its [[app]] is not a table".into())),
        },
        _ => Err(bad(
            "`preset` takes a preset of exactly one application".into()
        )),
    }
}
