//! Placement policies. A policy is pure: it sees the [`Topology`] and each epoch's
//! [`Observation`] and returns [`Action`]s; it never calls the kernel and never looks inside
//! the simulator. State kept across epochs lives in the policy value.
//!
//! Every policy's parameters are a TOML table (`[carrefour]`, `[autonuma]`, ... in a
//! `--config` file), each parameter named, defaulted to the paper's value and documented with
//! its source on the policy's config struct.

pub mod autonuma;
pub mod baseline;
pub mod carrefour;
pub mod metrics;
pub mod oracle;

use rondpoint_model::{Action, Observation, ProcessInfo, Sample, SamplingRequest, Topology};
use thiserror::Error;

/// A placement policy.
pub trait Policy {
    /// The name users pass to `--policy`.
    fn name(&self) -> &str;

    /// Decisions taken before the managed programs start (allocation policies, pinning).
    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let _ = (topology, processes);
        Vec::new()
    }

    /// Samples of epoch `epoch` delivered before its end, as a backend drains its sampler
    /// during the epoch (the engine hands them over while it waits the epoch out). They are
    /// the first samples of that epoch's observation, in the same order: `decide` sees them
    /// again in `observation.samples`, so a policy that counts them here counts only the rest
    /// there, and one that ignores them (the default) loses nothing. A policy gains from this
    /// when counting is most of its decision (Carrefour: the paper counts each IBS sample in
    /// its interrupt handler, and decides once a second on what was counted).
    fn ingest(&mut self, topology: &Topology, epoch: u64, samples: &[Sample]) {
        let _ = (topology, epoch, samples);
    }

    /// Decisions at the end of an epoch.
    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action>;

    /// The samples the policy wants now (asked again after every decision, so a policy can
    /// adapt its rates). The default asks for none, and the backend then pays nothing.
    fn sampling(&self) -> SamplingRequest {
        SamplingRequest::NONE
    }
}

/// Errors building a policy.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("unknown policy '{name}'; valid policies: {}", valid.join(", "))]
    Unknown { name: String, valid: Vec<String> },
    #[error("[{policy}] configuration: {message}")]
    Config { policy: String, message: String },
    #[error("configuration file is not valid TOML: {0}")]
    Toml(String),
}

/// Names of the policies [`build`] knows, in the order reports list them.
pub const NAMES: &[&str] = &[
    "first-touch",
    "interleave",
    "autonuma",
    "carrefour",
    "oracle",
];

/// A policy configuration file: one table per policy, e.g.
///
/// ```toml
/// [carrefour]
/// mc_imbalance_threshold_pct = 35.0
/// techniques = ["interleaving", "co-location"]
///
/// [autonuma]
/// scan_size_mb = 256
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyConfig {
    tables: toml::Table,
}

impl PolicyConfig {
    /// Parses a configuration file's text. Unknown policy sections are errors.
    pub fn from_toml(text: &str) -> Result<Self, PolicyError> {
        let tables: toml::Table =
            toml::from_str(text).map_err(|e| PolicyError::Toml(e.to_string()))?;
        for (k, v) in &tables {
            if !NAMES.contains(&k.as_str()) {
                return Err(PolicyError::Unknown {
                    name: k.clone(),
                    valid: NAMES.iter().map(|s| s.to_string()).collect(),
                });
            }
            if !v.is_table() {
                return Err(PolicyError::Config {
                    policy: k.clone(),
                    message: "must be a table".into(),
                });
            }
        }
        Ok(Self { tables })
    }

    /// Sets one parameter of one policy (command-line overrides such as `--techniques`).
    pub fn set(&mut self, policy: &str, key: &str, value: toml::Value) {
        let entry = self
            .tables
            .entry(policy.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let toml::Value::Table(t) = entry {
            t.insert(key.to_string(), value);
        }
    }

    /// Builds every policy the configuration has a table for, so that a bad parameter is
    /// reported when the file is read, not when the policy first runs.
    pub fn check(&self) -> Result<(), PolicyError> {
        for name in self.tables.keys() {
            build(name, self)?;
        }
        Ok(())
    }

    /// The parameters of one policy, parsed into its config struct (defaults for what is not
    /// given; unknown keys are errors).
    pub fn get<T: serde::de::DeserializeOwned + Default>(
        &self,
        policy: &str,
    ) -> Result<T, PolicyError> {
        match self.tables.get(policy) {
            None => Ok(T::default()),
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| PolicyError::Config {
                    policy: policy.to_string(),
                    message: e.to_string().trim().to_string(),
                }),
        }
    }
}

/// Builds a policy by name with its parameters from `config` (defaults where absent).
pub fn build(name: &str, config: &PolicyConfig) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(match name {
        "first-touch" => Box::new(baseline::FirstTouch),
        "interleave" => Box::new(baseline::Interleave),
        "autonuma" => Box::new(autonuma::AutoNuma::new(config.get("autonuma")?)),
        "carrefour" => Box::new(carrefour::Carrefour::new(config.get("carrefour")?)?),
        "oracle" => Box::new(oracle::Oracle::new(config.get("oracle")?)),
        _ => {
            return Err(PolicyError::Unknown {
                name: name.to_string(),
                valid: NAMES.iter().map(|s| s.to_string()).collect(),
            });
        }
    })
}

/// Builds a policy by name with its default parameters.
pub fn by_name(name: &str) -> Result<Box<dyn Policy>, PolicyError> {
    build(name, &PolicyConfig::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_and_unknown_lists_them() {
        for n in NAMES {
            assert_eq!(
                by_name(n).map(|p| p.name().to_string()).ok().as_deref(),
                Some(*n)
            );
        }
        let err = by_name("carrefour2").err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some(
                "unknown policy 'carrefour2'; valid policies: first-touch, interleave, autonuma, \
                 carrefour, oracle"
            )
        );
    }

    #[test]
    fn config_errors_name_the_policy_and_the_key() {
        let c = PolicyConfig::from_toml("[carrefour]\nlar_threshold = \"high\"\n").unwrap();
        let err = build("carrefour", &c).err().unwrap().to_string();
        assert!(err.starts_with("[carrefour] configuration:"), "{err}");
        assert!(err.contains("lar_threshold"), "{err}");
        let c = PolicyConfig::from_toml("[carrefour]\nno_such_knob = 1\n").unwrap();
        let err = build("carrefour", &c).err().unwrap().to_string();
        assert!(err.contains("no_such_knob"), "{err}");
        assert!(matches!(
            PolicyConfig::from_toml("[carefour]\n"),
            Err(PolicyError::Unknown { .. })
        ));
        assert!(matches!(
            PolicyConfig::from_toml("[x"),
            Err(PolicyError::Toml(_))
        ));
    }
}
