//! The table of policies: every place that lists, builds, documents or validates policies
//! reads a [`Registry`], made of [`PolicyInfo`] rows. rondpoint's rows are
//! `rondpoint_policy::BUILTIN`; the binary assembles the registry from them, and a test or a
//! downstream crate may add rows of its own ([`Registry::with`]).

use crate::bounds::{self, ParamBounds};
use crate::{Params, Policy, PolicyConfig, PolicyError};
use serde::Serialize;

/// Where a policy comes from, for listings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// What Linux does by itself or with numactl: the baselines.
    Baseline,
    /// Carrefour \[Dashti13\].
    Carrefour,
    /// Remote placement under memory pressure \[Choe21\].
    RemotePlacement,
    /// N-MASS and its baselines \[Majo11\].
    NMass,
    /// Asymmetry-aware scheduling of applications, and its baselines \[Gaud10\].
    Oaas,
    /// rondpoint's own, from no paper (its `source` is "ours").
    Rondpoint,
    /// Not a deployable policy: a bound to compare real ones against.
    Reference,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Baseline => "baseline",
            Family::Carrefour => "carrefour",
            Family::RemotePlacement => "remote-placement",
            Family::NMass => "n-mass",
            Family::Oaas => "oaas",
            Family::Rondpoint => "rondpoint",
            Family::Reference => "reference",
        }
    }
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct PolicyInfo {
    /// The name users pass to `--policy`, and the policy's table in a `--config` file.
    pub name: &'static str,
    pub family: Family,
    /// What it does, in one line.
    pub summary: &'static str,
    /// Where it comes from: a key of docs/references.md (`Dashti13`), "Linux" for what the
    /// kernel does, or "ours" for a policy of rondpoint's own.
    pub source: &'static str,
    /// Whether `--policy all` runs it.
    pub in_all: bool,
    /// Builds it from its parameters.
    pub build: fn(&Params<'_>) -> Result<Box<dyn Policy>, PolicyError>,
    /// Its parameters with their defaults (an empty table when it has none).
    pub defaults: fn() -> toml::Table,
    /// The range of each numeric parameter ([`crate::bounds`]), checked before it is built.
    pub bounds: &'static [ParamBounds],
    /// The parameters that name a file, which the caller reads ([`Registry::resolve_files`]):
    /// a policy does no I/O.
    pub files: &'static [FileParam],
}

/// A parameter whose value names a file (unless it is one of `keywords`): the program that
/// builds the policy reads the file and hands its text over as `{ path = "...", text = "..." }`
/// in place of the name.
#[derive(Clone, Copy, Debug)]
pub struct FileParam {
    /// The parameter's key in the policy's table (a dotted path for one in a sub-table).
    pub key: &'static str,
    /// Values that name no file (`"builtin"`).
    pub keywords: &'static [&'static str],
}

/// The defaults of a config type as a TOML table (for `defaults` in a row).
pub fn defaults_of<T: Serialize + Default>() -> toml::Table {
    toml::Table::try_from(T::default()).unwrap_or_default()
}

/// No parameters (for `defaults` in the row of a policy without any).
pub fn no_parameters() -> toml::Table {
    toml::Table::new()
}

/// A set of policies: rondpoint's own and any added to them, with the names policies were
/// known by before (`--policy` with an old name says the new one).
#[derive(Clone, Debug, Default)]
pub struct Registry {
    rows: Vec<&'static PolicyInfo>,
    renamed: Vec<(&'static str, &'static str)>,
}

impl Registry {
    /// The policies of `rows`, in their order.
    pub fn new(rows: &'static [PolicyInfo]) -> Self {
        Self {
            rows: rows.iter().collect(),
            renamed: Vec::new(),
        }
    }

    /// With names that policies had before: asking for `old` (as `--policy` or a `--config`
    /// table) is refused with a message that names `new`, never read as something else.
    pub fn with_renamed(mut self, renamed: &[(&'static str, &'static str)]) -> Self {
        self.renamed.extend_from_slice(renamed);
        self
    }

    /// With one more policy (a name already taken is an error).
    pub fn with(mut self, row: &'static PolicyInfo) -> Result<Self, PolicyError> {
        if self.rows.iter().any(|r| r.name == row.name) {
            return Err(PolicyError::Config {
                policy: row.name.to_string(),
                message: "a policy of that name is already registered".into(),
            });
        }
        self.rows.push(row);
        Ok(self)
    }

    /// Every row, in order.
    pub fn rows(&self) -> impl Iterator<Item = &'static PolicyInfo> + '_ {
        self.rows.iter().copied()
    }

    /// The row of a policy.
    pub fn info(&self, name: &str) -> Result<&'static PolicyInfo, PolicyError> {
        if let Some(row) = self.rows().find(|p| p.name == name) {
            return Ok(row);
        }
        match self.renamed.iter().find(|(old, _)| *old == name) {
            Some((old, new)) => Err(PolicyError::Renamed {
                old: old.to_string(),
                new: new.to_string(),
            }),
            None => Err(PolicyError::Unknown {
                name: name.to_string(),
                valid: self.names().map(str::to_string).collect(),
            }),
        }
    }

    /// Every policy's name, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.rows().map(|p| p.name)
    }

    /// What `--policy all` runs.
    pub fn all(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.rows().filter(|p| p.in_all).map(|p| p.name)
    }

    /// Builds a policy by name with its parameters from `config` (defaults where absent).
    pub fn build(&self, name: &str, config: &PolicyConfig) -> Result<Box<dyn Policy>, PolicyError> {
        let info = self.info(name)?;
        let params = config.params(info.name);
        if let Some(table) = params.table {
            bounds::check(info.name, info.bounds, table)?;
        }
        (info.build)(&params)
    }

    /// Checks a configuration: every table names a policy, and every policy with a table
    /// builds from it (so that a bad parameter is reported when the file is read, not when the
    /// policy first runs).
    pub fn check(&self, config: &PolicyConfig) -> Result<(), PolicyError> {
        for name in config.policies() {
            self.build(name, config)?;
        }
        Ok(())
    }

    /// `config` with `seed` as the seed of policy `name`, when the policy has a `seed`
    /// parameter and `config` does not set it (a run's seed seeds every random choice the user
    /// did not fix: `rondpoint sim --seed/--seeds`).
    pub fn seeded(
        &self,
        config: &PolicyConfig,
        name: &str,
        seed: u64,
    ) -> Result<PolicyConfig, PolicyError> {
        let info = self.info(name)?;
        let has_seed = (info.defaults)().contains_key("seed");
        let given = config
            .params(info.name)
            .table
            .and_then(toml::Value::as_table)
            .is_some_and(|t| t.contains_key("seed"));
        let mut out = config.clone();
        if has_seed && !given {
            let seed = i64::try_from(seed).map_err(|_| PolicyError::Config {
                policy: info.name.to_string(),
                message: format!("seed {seed} is too large (at most {})", i64::MAX),
            })?;
            out.set(info.name, "seed", toml::Value::Integer(seed))?;
        }
        Ok(out)
    }

    /// Reads the files that parameters of `config` name ([`PolicyInfo::files`]) with `read`
    /// and puts each one's text in place of its name, as `{ path = "...", text = "..." }`, so
    /// that building the policy needs no I/O. Values that are a keyword, or already read, stay.
    pub fn resolve_files<E>(
        &self,
        config: &mut PolicyConfig,
        mut read: impl FnMut(&str, &str, &std::path::Path) -> Result<String, E>,
    ) -> Result<(), E>
    where
        E: From<PolicyError>,
    {
        let names: Vec<String> = config.policies().map(str::to_string).collect();
        for name in names {
            let Ok(info) = self.info(&name) else { continue };
            for file in info.files {
                let keys: Vec<&str> = file.key.split('.').collect();
                let Some(toml::Value::String(path)) = config.get_keys(&name, &keys) else {
                    continue;
                };
                if file.keywords.contains(&path.as_str()) {
                    continue;
                }
                let path = path.clone();
                let text = read(&name, file.key, std::path::Path::new(&path))?;
                let table = toml::Table::from_iter([
                    ("path".to_string(), toml::Value::String(path)),
                    ("text".to_string(), toml::Value::String(text)),
                ]);
                config.set_keys(&name, &keys, toml::Value::Table(table))?;
            }
        }
        Ok(())
    }

    /// Applies one `--set POLICY.KEY=VALUE` to `config`. VALUE is read as a TOML value
    /// (`0.7`, `true`, `"text"`, `[1, 2]`); otherwise as a comma-separated list of such values
    /// when it has a comma, or as a string. Where the policy's default for KEY is a list, a
    /// single value is a list of one; where it is a string, VALUE is taken as written.
    pub fn set_arg(&self, config: &mut PolicyConfig, arg: &str) -> Result<(), PolicyError> {
        let syntax = || PolicyError::SetSyntax(arg.to_string());
        let (lhs, text) = arg.split_once('=').ok_or_else(syntax)?;
        let (policy, path) = lhs.trim().split_once('.').ok_or_else(syntax)?;
        let path = path.trim();
        if policy.trim().is_empty() || path.is_empty() || path.split('.').any(str::is_empty) {
            return Err(syntax());
        }
        let info = self.info(policy.trim())?;
        // An integer past TOML's (a u64 seed) would otherwise be read as a string.
        let digits = text.trim().trim_start_matches(['-', '+']).replace('_', "");
        if !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit())
            && text.trim().replace('_', "").parse::<i64>().is_err()
        {
            return Err(PolicyError::Config {
                policy: info.name.to_string(),
                message: format!(
                    "{path} = {}: past the largest whole number a configuration holds ({})",
                    text.trim(),
                    i64::MAX
                ),
            });
        }
        let defaults = (info.defaults)();
        let value = match value_at(&defaults, path) {
            Some(toml::Value::String(_)) => toml::Value::String(text.to_string()),
            Some(toml::Value::Array(_)) => match parse_value(text) {
                v @ toml::Value::Array(_) => v,
                v => toml::Value::Array(vec![v]),
            },
            _ => parse_value(text),
        };
        config.set(info.name, path, value)
    }
}

/// The value at a dotted path of a table.
fn value_at<'a>(table: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let mut keys = path.split('.');
    let mut v = table.get(keys.next()?)?;
    for k in keys {
        v = v.as_table()?.get(k)?;
    }
    Some(v)
}

/// A `--set` value: a TOML value, else a comma-separated list of them, else a string.
fn parse_value(text: &str) -> toml::Value {
    let one = |t: &str| -> Option<toml::Value> {
        let t = t.trim();
        if t.contains('\n') {
            return None;
        }
        let mut table: toml::Table = toml::from_str(&format!("v = {t}")).ok()?;
        if table.len() != 1 {
            return None;
        }
        table.remove("v")
    };
    if let Some(v) = one(text) {
        return v;
    }
    if text.contains(',') {
        return toml::Value::Array(
            text.split(',')
                .map(|t| one(t).unwrap_or_else(|| toml::Value::String(t.trim().to_string())))
                .collect(),
        );
    }
    toml::Value::String(text.to_string())
}
