//! A policy's parameters: one TOML table per policy, from a `--config` file with
//! `--set POLICY.KEY=VALUE` overrides on top, and the errors reading them.

use rondpoint_model::toml_error;
use serde::de::DeserializeOwned;
use thiserror::Error;

/// Errors building a policy.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("unknown policy '{name}'; valid policies: {}", valid.join(", "))]
    Unknown { name: String, valid: Vec<String> },
    #[error("policy '{old}' is now called '{new}'")]
    Renamed { old: String, new: String },
    #[error("[{policy}] configuration: {message}")]
    Config { policy: String, message: String },
    #[error("configuration file is not valid TOML: {0}")]
    Toml(String),
    #[error("--set {0}: expected POLICY.KEY=VALUE (e.g. carrefour.lar_threshold=0.7)")]
    SetSyntax(String),
}

/// Policy parameters: one table per policy, e.g.
///
/// ```toml
/// [carrefour]
/// mc_imbalance_threshold_pct = 35.0
/// techniques = ["interleaving", "co-location"]
///
/// [autonuma]
/// scan_size_mb = 256
/// ```
///
/// read from a `--config` file, with `--set POLICY.KEY=VALUE` overrides on top.
/// Serialised as its tables (a recording keeps the configuration its run used); one read back
/// is checked like any other (`Registry::check`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct PolicyConfig {
    tables: toml::Table,
}

impl PolicyConfig {
    /// Parses a configuration file's text: a table per policy. Which tables name policies,
    /// and whether their parameters are valid, [`Registry::check`](crate::Registry::check) says.
    pub fn from_toml(text: &str) -> Result<Self, PolicyError> {
        let tables: toml::Table =
            toml::from_str(text).map_err(|e| PolicyError::Toml(toml_error::describe(text, &e)))?;
        Self::from_table(tables)
    }

    /// A configuration of `tables` (a table per policy), checked as a file's are.
    pub fn from_table(tables: toml::Table) -> Result<Self, PolicyError> {
        for (k, v) in &tables {
            if !v.is_table() {
                return Err(PolicyError::Config {
                    policy: k.clone(),
                    message: "must be a table".into(),
                });
            }
        }
        Ok(Self { tables })
    }

    /// Sets one parameter of one policy; `path` may name a key of a sub-table
    /// (`sampling.period`).
    pub fn set(&mut self, policy: &str, path: &str, value: toml::Value) -> Result<(), PolicyError> {
        let keys: Vec<&str> = path.split('.').collect();
        self.set_keys(policy, &keys, value)
    }

    /// Sets one parameter of one policy by its keys, one per level of sub-table (for keys that
    /// may hold a dot themselves, such as program names).
    pub fn set_keys(
        &mut self,
        policy: &str,
        keys: &[&str],
        value: toml::Value,
    ) -> Result<(), PolicyError> {
        let mut table = self
            .tables
            .entry(policy.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let mut rest = keys.iter().copied().peekable();
        while let Some(key) = rest.next() {
            let toml::Value::Table(t) = table else {
                break;
            };
            if rest.peek().is_none() {
                t.insert(key.to_string(), value);
                return Ok(());
            }
            table = t
                .entry(key.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        }
        Err(PolicyError::Config {
            policy: policy.to_string(),
            message: format!("'{}': a value, not a table, is on the way", keys.join(".")),
        })
    }

    /// The value of one parameter given to one policy, by its keys.
    pub fn get_keys(&self, policy: &str, keys: &[&str]) -> Option<&toml::Value> {
        let mut v = self.tables.get(policy)?;
        for k in keys {
            v = v.as_table()?.get(*k)?;
        }
        Some(v)
    }

    /// Every table, as given: one per policy named.
    pub fn tables(&self) -> &toml::Table {
        &self.tables
    }

    /// Takes from `base` every parameter this configuration does not give (the parameters
    /// given here win, key by key, at every depth).
    pub fn fill_from(&mut self, base: &PolicyConfig) {
        fn fill(into: &mut toml::Table, from: &toml::Table) {
            for (k, v) in from {
                match (into.get_mut(k), v) {
                    (Some(toml::Value::Table(i)), toml::Value::Table(f)) => fill(i, f),
                    (Some(_), _) => {}
                    (None, _) => {
                        into.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        fill(&mut self.tables, &base.tables);
    }

    /// The policies the configuration has a table for.
    pub fn policies(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// The parameters given to one policy.
    pub fn params<'a>(&'a self, policy: &'a str) -> Params<'a> {
        Params {
            policy,
            table: self.tables.get(policy),
        }
    }
}

/// The parameters given to one policy: its table of the configuration, if any.
#[derive(Clone, Copy, Debug)]
pub struct Params<'a> {
    pub policy: &'a str,
    pub table: Option<&'a toml::Value>,
}

impl Params<'_> {
    /// The parameters parsed into the policy's config type: defaults for what is not given,
    /// an error naming the policy and the key for a bad value or an unknown key.
    pub fn parse<T: DeserializeOwned + Default>(&self) -> Result<T, PolicyError> {
        match self.table {
            None => Ok(T::default()),
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| PolicyError::Config {
                    policy: self.policy.to_string(),
                    message: toml_error::without_strings(e.to_string().trim()),
                }),
        }
    }

    /// Refuses any parameter, for policies that have none.
    pub fn none(&self) -> Result<(), PolicyError> {
        match self.table.and_then(toml::Value::as_table) {
            Some(t) if !t.is_empty() => Err(PolicyError::Config {
                policy: self.policy.to_string(),
                message: format!(
                    "this policy has no parameters (got {})",
                    t.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PolicyConfig;

    #[test]
    fn fill_from_keeps_what_is_given_and_takes_the_rest() {
        let mut given = PolicyConfig::from_toml("[a]\nx = 1\n[a.t]\ny = 2\n").unwrap();
        let base = PolicyConfig::from_toml("[a]\nx = 9\nz = 3\n[a.t]\ny = 9\nw = 4\n[b]\nv = 5\n")
            .unwrap();
        given.fill_from(&base);
        let want = PolicyConfig::from_toml("[a]\nx = 1\nz = 3\n[a.t]\ny = 2\nw = 4\n[b]\nv = 5\n")
            .unwrap();
        assert_eq!(given, want);
        let json = serde_json::to_string(&given).unwrap();
        assert_eq!(serde_json::from_str::<PolicyConfig>(&json).unwrap(), given);
    }
}
