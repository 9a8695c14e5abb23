//! The accepted range of every numeric policy parameter, checked when a configuration is read
//! (`--config`, `--set`) before any policy is built from it: a NaN, an infinity or a value that
//! would make a policy spin (a sampling period of one cycle, a scan period of 0 ms) or fill the
//! host's memory (millions of tracked pages) is refused with the range in the message.
//!
//! Each policy's row names its table ([`PolicyInfo::bounds`]), kept beside the policy's
//! parameters; [`row_problems`] checks that every numeric default has a range and lies inside
//! it, and that every range names a parameter. Keys are paths inside the policy's table; `*`
//! matches any one key (a program's name in a profile). The check itself is
//! [`rondpoint_model::bounds::Bounds`], the one for every number from outside.

use crate::{PolicyConfig, PolicyError, PolicyInfo, Registry};
pub use rondpoint_model::bounds::Bounds;
use rondpoint_model::bounds::OutOfBounds;

/// A parameter's range: its key (a dotted path) and the range.
pub type ParamBounds = (&'static str, Bounds);

/// A fraction.
pub const FRACTION: Bounds = Bounds::new(0.0, 1.0, "");
/// A random seed (TOML integers are signed 64-bit).
pub const SEED: Bounds = Bounds::new(0.0, 9.223_372_036_854_776e18, "");
/// Pages a policy keeps statistics on: up to 16 Mi (64 GiB of 4-KiB pages), a few hundred MiB
/// of the host's memory at most.
pub const TRACKED_PAGES: Bounds = Bounds::new(1.0, 16_777_216.0, "pages");
/// A period of a policy's own: a millisecond to an hour.
pub const PERIOD_MS: Bounds = Bounds::new(1.0, 3_600_000.0, "ms");
/// Memory moved at once: a MiB to a TiB.
pub const MOVE_MIB: Bounds = Bounds::new(1.0, 1_048_576.0, "MiB");
/// A percentage, up to ten times the whole (imbalances exceed 100%).
pub const PERCENT: Bounds = Bounds::new(0.0, 1000.0, "%");
/// A count of things.
pub const COUNT: Bounds = Bounds::new(0.0, 1e9, "");
/// Hardware sampling: one sample per thousand cycles at most (far above what PEBS and IBS
/// sustain without throttling), one per ten seconds at 1 GHz at least.
pub const SAMPLING_CYCLES: Bounds = Bounds::new(1000.0, 1e10, "cycles");

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
    for (path, value) in numbers_in(table) {
        let bad = |e: OutOfBounds| PolicyError::Config {
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

/// Every number of a policy's config value inside its range: the same check as a
/// configuration's, for a policy built directly from its config type (tests, other crates), so
/// that a constructor can rely on its parameters without checking them again.
pub fn check_config<T: serde::Serialize>(
    policy: &str,
    bounds: &[ParamBounds],
    config: &T,
) -> Result<(), PolicyError> {
    let value = toml::Value::try_from(config).map_err(|e| PolicyError::Config {
        policy: policy.to_string(),
        message: e.to_string(),
    })?;
    check(policy, bounds, &value)
}

/// What is wrong with a row's ranges, one line each (none for a good row): a numeric default
/// without a range or outside it, a range that names no parameter. Every row of a registry
/// should pass; rondpoint's tests check its own rows with it.
pub fn row_problems(row: &'static PolicyInfo) -> Vec<String> {
    let mut problems = Vec::new();
    let defaults = toml::Value::Table((row.defaults)());
    for (path, _) in numbers_in(&defaults) {
        if find(row.bounds, &path).is_none() {
            problems.push(format!("{}: no range for {path}", row.name));
        }
    }
    if let Err(e) = check(row.name, row.bounds, &defaults) {
        problems.push(format!("{}: a default is out of its range: {e}", row.name));
    }
    // A range names a parameter if the policy builds with it set (or refuses its value for
    // another reason than not knowing the key): optional parameters have no default to look at.
    let Ok(registry) = Registry::default().with(row) else {
        return problems;
    };
    for (key, range) in row.bounds {
        let keys: Vec<&str> = key
            .split('.')
            .map(|k| if k == "*" { "x" } else { k })
            .collect();
        let mut config = PolicyConfig::default();
        let value = if range.max.fract() == 0.0 && range.min.fract() == 0.0 && range.max < 9e15 {
            toml::Value::Integer(range.max as i64)
        } else {
            toml::Value::Float(range.max)
        };
        if config.set_keys(row.name, &keys, value).is_err() {
            problems.push(format!("{}: range {key} cannot be set", row.name));
            continue;
        }
        if let Err(e) = registry.build(row.name, &config) {
            let e = e.to_string();
            if e.contains("unknown field") || e.contains("no parameters") {
                problems.push(format!(
                    "{}: range {key} names no parameter ({e})",
                    row.name
                ));
            }
        }
    }
    problems
}

#[derive(Clone, Copy, Debug)]
enum Number {
    Int(i64),
    Float(f64),
}

/// The numbers in a TOML value with their dotted paths (array items under their array's).
fn numbers_in(v: &toml::Value) -> Vec<(String, Number)> {
    fn walk(v: &toml::Value, path: String, out: &mut Vec<(String, Number)>) {
        match v {
            toml::Value::Integer(i) => out.push((path, Number::Int(*i))),
            toml::Value::Float(f) => out.push((path, Number::Float(*f))),
            toml::Value::Array(items) => {
                for item in items {
                    walk(item, path.clone(), out);
                }
            }
            toml::Value::Table(t) => {
                for (k, item) in t {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(item, p, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOY: &[ParamBounds] = &[
        ("sampling_period_cycles", SAMPLING_CYCLES),
        ("maptu", Bounds::new(0.0, 1e6, "accesses/us")),
        (
            "inputs.profile.*.numa_penalty",
            Bounds::new(0.1, 100.0, "CPI ratio"),
        ),
        ("inputs.profile.*.mpki", Bounds::new(0.0, 1000.0, "MPKI")),
    ];

    #[test]
    fn refuses_nan_infinity_and_out_of_range_values_naming_the_range() {
        let t = |s: &str| toml::from_str::<toml::Value>(s).unwrap();
        let e = check("toy", TOY, &t("sampling_period_cycles = 1"));
        assert_eq!(
            e.unwrap_err().to_string(),
            "[toy] configuration: sampling_period_cycles = 1: must be from 1000 to 1e10 cycles"
        );
        let e = check("toy", TOY, &t("maptu = nan"));
        assert!(e.unwrap_err().to_string().contains("finite"));
        let e = check("toy", TOY, &t("inputs.profile.mcf.numa_penalty = inf"));
        assert!(e.is_err());
        assert!(check("toy", TOY, &t("inputs.profile.mcf.mpki = 20.0")).is_ok());
        assert!(check("toy", TOY, &t("inputs.profile.mcf.mpki = 2000.0")).is_err());
        // A number with no range of its own must still be finite.
        assert!(check("x", &[], &t("y = -inf")).is_err());
        assert!(check("x", &[], &t("y = -1e300")).is_ok());
    }

    #[derive(Default, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Toy {
        period: u32,
        share: f64,
    }

    static TOY_ROW: PolicyInfo = PolicyInfo {
        name: "toy",
        family: crate::Family::Rondpoint,
        summary: "does nothing",
        source: "ours",
        in_all: false,
        build: |p| {
            let _: Toy = p.parse()?;
            Ok(Box::new(crate::FirstTouch))
        },
        defaults: crate::defaults_of::<Toy>,
        bounds: &[("period", Bounds::new(1.0, 10.0, "")), ("nope", FRACTION)],
        files: &[],
    };

    #[test]
    fn a_row_s_problems_are_each_named() {
        let problems = row_problems(&TOY_ROW);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(problems[0].contains("no range for share"), "{problems:#?}");
        assert!(
            problems[1].contains("period = 0: must be from 1 to 10"),
            "{problems:#?}"
        );
        assert!(
            problems[2].contains("range nope names no parameter"),
            "{problems:#?}"
        );
    }

    #[test]
    fn a_config_value_is_checked_like_its_table() {
        let toy = Toy {
            period: 11,
            share: 0.5,
        };
        let e = check_config("toy", TOY_ROW.bounds, &toy)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "[toy] configuration: period = 11: must be from 1 to 10");
        let toy = Toy {
            period: 3,
            share: f64::NAN,
        };
        assert!(check_config("toy", TOY_ROW.bounds, &toy).is_err());
    }

    #[test]
    fn wildcards_match_one_key_only() {
        assert!(find(TOY, "inputs.profile.mcf.mpki").is_some());
        assert!(find(TOY, "inputs.profile.mpki").is_none());
        assert!(find(TOY, "inputs.profile.a.b.mpki").is_none());
    }
}
