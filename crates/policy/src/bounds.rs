//! The accepted range of every numeric policy parameter, checked when a configuration is
//! read (`--config`, `--set`) before any policy is built from it: a NaN, an infinity or a
//! value that would make a policy spin (a sampling period of one cycle, a scan period of 0 ms)
//! or fill the host's memory (millions of tracked pages) is refused with the range in the
//! message. Each policy's row in the registry points at its table here; a test checks that
//! every numeric default has a range and lies inside it. Keys are paths inside the policy's
//! table; `*` matches any one key (a program's name in a profile).

use crate::PolicyError;
use rondpoint_model::limits::{Bounds, MAX_CPUS};

/// A parameter's range.
pub type ParamBounds = (&'static str, Bounds);

const FRACTION: Bounds = Bounds::new(0.0, 1.0, "");
const SEED: Bounds = Bounds::new(0.0, 9.223_372_036_854_776e18, "");
/// Pages a policy keeps statistics on: up to 16 Mi (64 GiB of 4-KiB pages), a few hundred
/// MiB of the host's memory at most.
const TRACKED_PAGES: Bounds = Bounds::new(1.0, 16_777_216.0, "pages");
const PERIOD_MS: Bounds = Bounds::new(1.0, 3_600_000.0, "ms");
const MOVE_MIB: Bounds = Bounds::new(1.0, 1_048_576.0, "MiB");
const PERCENT: Bounds = Bounds::new(0.0, 1000.0, "%");
const COUNT: Bounds = Bounds::new(0.0, 1e9, "");

pub const AUTONUMA: &[ParamBounds] = &[
    ("scan_size_mb", Bounds::new(1.0, 1_048_576.0, "MiB")),
    // Under 10 ms a scan would start many times an epoch (and did loop forever at 0).
    ("scan_period_min_ms", Bounds::new(10.0, 3_600_000.0, "ms")),
    ("scan_period_max_ms", Bounds::new(10.0, 3_600_000.0, "ms")),
    ("local_fault_ratio_to_slow_down", FRACTION),
    ("fault_decay", FRACTION),
    ("preferred_node_min_share", FRACTION),
    (
        "max_task_moves_per_epoch",
        Bounds::new(0.0, MAX_CPUS as f64, "moves"),
    ),
    ("max_tracked_pages", TRACKED_PAGES),
];

/// Hardware sampling: one sample per thousand cycles at most (far above what PEBS and IBS
/// sustain without throttling), one per ten seconds at 1 GHz at least.
const SAMPLING_CYCLES: Bounds = Bounds::new(1000.0, 1e10, "cycles");

pub const CARREFOUR: &[ParamBounds] = &[
    ("maptu_threshold", Bounds::new(0.0, 1e6, "accesses/us")),
    ("replication_min_free_fraction", FRACTION),
    ("mrr_threshold", FRACTION),
    ("mc_imbalance_threshold_pct", PERCENT),
    ("lar_threshold", FRACTION),
    ("min_samples_per_page", Bounds::new(1.0, 1e6, "samples")),
    ("min_replication_candidates", COUNT),
    ("max_collapses_per_page", COUNT),
    ("sampling_period_high_cycles", SAMPLING_CYCLES),
    ("sampling_period_low_cycles", SAMPLING_CYCLES),
    ("min_actions_for_high_rate", COUNT),
    ("max_tracked_pages", TRACKED_PAGES),
    ("min_samples_when_estimated", COUNT),
    (
        "fault_sample_window_epochs",
        Bounds::new(1.0, 1e6, "epochs"),
    ),
    (
        "fault_sample_window_max_epochs",
        Bounds::new(1.0, 1e6, "epochs"),
    ),
    ("seed", SEED),
];

pub const HYBRID: &[ParamBounds] = &[
    ("max_move_mib_per_epoch", MOVE_MIB),
    ("min_move_mib", Bounds::new(0.0, 1_048_576.0, "MiB")),
];

pub const DM: &[ParamBounds] = &[
    ("period_epochs", Bounds::new(1.0, 1e6, "epochs")),
    ("imbalance_pct", PERCENT),
    ("min_remote_share", FRACTION),
    ("batch_mib", MOVE_MIB),
];

pub const UA_DM: &[ParamBounds] = &[
    ("max_move_mib_per_epoch", MOVE_MIB),
    ("min_move_mib", Bounds::new(0.0, 1_048_576.0, "MiB")),
    ("dm.period_epochs", Bounds::new(1.0, 1e6, "epochs")),
    ("dm.imbalance_pct", PERCENT),
    ("dm.min_remote_share", FRACTION),
    ("dm.batch_mib", MOVE_MIB),
];

/// N-MASS's inputs, as in maximum-local and n-mass.
const NMASS_INPUTS: [ParamBounds; 5] = [
    (
        "inputs.regression_intercept",
        Bounds::new(0.0, 100.0, "CPI ratio"),
    ),
    (
        "inputs.regression_slope",
        Bounds::new(0.0, 10.0, "CPI ratio per MPKI"),
    ),
    (
        "inputs.mpki_change_to_redecide",
        Bounds::new(0.0, 100.0, ""),
    ),
    (
        "inputs.profile.*.numa_penalty",
        Bounds::new(0.1, 100.0, "CPI ratio"),
    ),
    ("inputs.profile.*.mpki", Bounds::new(0.0, 1000.0, "MPKI")),
];

pub const MAXIMUM_LOCAL: &[ParamBounds] = &NMASS_INPUTS;

pub const NMASS: &[ParamBounds] = &[
    NMASS_INPUTS[0],
    NMASS_INPUTS[1],
    NMASS_INPUTS[2],
    NMASS_INPUTS[3],
    NMASS_INPUTS[4],
    ("threshold_mpki", Bounds::new(0.001, 1e6, "MPKI")),
    ("reference_link_gbs", Bounds::new(0.001, 100_000.0, "GB/s")),
];

/// Each split is a whole simulated run.
pub const DEFAULT_SCHEDULE: &[ParamBounds] = &[("max_splits", Bounds::new(1.0, 10_000.0, "runs"))];

pub const OAAS: &[ParamBounds] = &[
    ("period_ms", PERIOD_MS),
    ("min_gain_points", Bounds::new(0.0, 1000.0, "points")),
    ("seed", SEED),
];

pub const SEED_ONLY: &[ParamBounds] = &[("seed", SEED)];

pub const LINUX: &[ParamBounds] = &[("exchange_probability", FRACTION), ("seed", SEED)];

pub const ORACLE: &[ParamBounds] = &[
    ("min_node_share", FRACTION),
    ("max_write_fraction_for_replication", FRACTION),
    ("balance_tolerance", Bounds::new(0.0, 10.0, "")),
];

/// The range of the parameter at `path`, if it has one.
pub fn find(bounds: &[ParamBounds], path: &str) -> Option<Bounds> {
    let matches = |pattern: &str| {
        let (mut p, mut k) = (pattern.split('.'), path.split('.'));
        loop {
            match (p.next(), k.next()) {
                (None, None) => return true,
                (Some(a), Some(b)) if a == "*" || a == b => {}
                _ => return false,
            }
        }
    };
    bounds.iter().find(|(k, _)| matches(k)).map(|(_, b)| *b)
}

/// Every number in `table` (a policy's parameters) finite and inside its range.
pub fn check(policy: &str, bounds: &[ParamBounds], table: &toml::Value) -> Result<(), PolicyError> {
    let mut numbers = Vec::new();
    numbers_in(table, String::new(), &mut numbers);
    for (path, value) in numbers {
        let bad = |e: rondpoint_model::limits::OutOfBounds| PolicyError::Config {
            policy: policy.to_string(),
            message: e.to_string(),
        };
        match (find(bounds, &path), value) {
            (Some(b), Number::Int(i)) => b.check_int(&path, i.into()).map(drop).map_err(bad)?,
            (Some(b), Number::Float(f)) => b.check(&path, f).map(drop).map_err(bad)?,
            (None, Number::Float(f)) if !f.is_finite() => {
                let any = Bounds::new(f64::MIN, f64::MAX, "");
                any.check(&path, f).map(drop).map_err(bad)?
            }
            (None, _) => {}
        }
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum Number {
    Int(i64),
    Float(f64),
}

/// The numbers in a TOML value with their dotted paths (array items under their array's).
fn numbers_in(v: &toml::Value, path: String, out: &mut Vec<(String, Number)>) {
    match v {
        toml::Value::Integer(i) => out.push((path, Number::Int(*i))),
        toml::Value::Float(f) => out.push((path, Number::Float(*f))),
        toml::Value::Array(items) => {
            for item in items {
                numbers_in(item, path.clone(), out);
            }
        }
        toml::Value::Table(t) => {
            for (k, item) in t {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                numbers_in(item, p, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::BUILTIN;

    #[test]
    fn every_numeric_default_has_a_range_and_lies_inside_it() {
        for row in BUILTIN {
            let defaults = toml::Value::Table((row.defaults)());
            let mut numbers = Vec::new();
            numbers_in(&defaults, String::new(), &mut numbers);
            for (path, _) in &numbers {
                assert!(
                    find(row.bounds, path).is_some(),
                    "{}: no range for {path}",
                    row.name
                );
            }
            check(row.name, row.bounds, &defaults).unwrap();
        }
    }

    #[test]
    fn every_range_names_a_parameter() {
        for row in BUILTIN {
            let defaults = (row.defaults)();
            for (key, _) in row.bounds {
                let mut v = defaults.get(key.split('.').next().unwrap_or_default());
                for k in key.split('.').skip(1) {
                    v = match (v, k) {
                        // A profile's programs are the user's; the default has none.
                        (Some(toml::Value::Table(t)), _) if t.is_empty() => break,
                        (Some(toml::Value::Table(t)), "*") => t.values().next(),
                        (Some(toml::Value::Table(t)), k) => t.get(k),
                        _ => None,
                    };
                }
                // Optional parameters (unset by default) may be absent.
                let optional = *key == "replication_min_free_fraction";
                assert!(
                    v.is_some() || optional,
                    "{}: {key} is no parameter",
                    row.name
                );
            }
        }
    }

    #[test]
    fn refuses_nan_infinity_and_out_of_range_values_naming_the_range() {
        let t = |s: &str| toml::from_str::<toml::Value>(s).unwrap();
        let e = check(
            "carrefour",
            CARREFOUR,
            &t("sampling_period_high_cycles = 1"),
        );
        assert_eq!(
            e.unwrap_err().to_string(),
            "[carrefour] configuration: sampling_period_high_cycles = 1: must be from 1000 to 1e10 \
             cycles"
        );
        let e = check("carrefour", CARREFOUR, &t("maptu_threshold = nan"));
        assert!(e.unwrap_err().to_string().contains("finite"));
        assert!(check("autonuma", AUTONUMA, &t("scan_period_min_ms = 0")).is_err());
        let e = check("n-mass", NMASS, &t("inputs.profile.mcf.numa_penalty = inf"));
        assert!(e.is_err());
        assert!(check("n-mass", NMASS, &t("inputs.profile.mcf.mpki = 20.0")).is_ok());
        // A number with no range of its own must still be finite.
        assert!(check("x", &[], &t("y = -inf")).is_err());
        assert!(check("x", &[], &t("y = -1e300")).is_ok());
    }
}
