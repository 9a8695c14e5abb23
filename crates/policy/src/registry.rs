//! The one table of policies. Everything that lists, builds, documents or validates policies
//! reads it: [`crate::build`], `--policy all`, `rondpoint list policies`, help texts and
//! `--config` / `--set` checking. Adding a policy is one module plus one row of [`BUILTIN`]
//! (docs/architecture.md walks through it); a [`Registry`] can also take rows of its own (a
//! test's toy policy, a downstream crate's).

use crate::{
    Policy, PolicyConfig, PolicyError, autonuma, baseline, bounds, carrefour, nmass, oaas, oracle,
    remote,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Where a policy comes from, for listings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// What Linux does by itself or with numactl.
    Linux,
    /// Carrefour [Dashti13].
    Carrefour,
    /// Remote placement under memory pressure [Choe21].
    RemotePlacement,
    /// N-MASS and its baselines [Majo11].
    NMass,
    /// Asymmetry-aware scheduling of applications, and its baselines [Gaud10].
    Oaas,
    /// Not a deployable policy: a bound to compare real ones against.
    Reference,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Linux => "linux",
            Family::Carrefour => "carrefour",
            Family::RemotePlacement => "remote-placement",
            Family::NMass => "n-mass",
            Family::Oaas => "oaas",
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
    /// Where it comes from: a key of docs/references.md, or "Linux".
    pub source: &'static str,
    /// Whether `--policy all` runs it.
    pub in_all: bool,
    /// Builds it from its parameters.
    pub build: fn(&Params<'_>) -> Result<Box<dyn Policy>, PolicyError>,
    /// Its parameters with their defaults (an empty table when it has none).
    pub defaults: fn() -> toml::Table,
    /// The range of each numeric parameter ([`crate::bounds`]), checked before it is built.
    pub bounds: &'static [bounds::ParamBounds],
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
                    message: e.to_string().trim().to_string(),
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

/// The defaults of a config type as a TOML table (for `defaults` in a row).
pub fn defaults_of<T: Serialize + Default>() -> toml::Table {
    toml::Table::try_from(T::default()).unwrap_or_default()
}

fn no_parameters() -> toml::Table {
    toml::Table::new()
}

/// rondpoint's policies, in the order reports list them.
pub static BUILTIN: &[PolicyInfo] = &[
    PolicyInfo {
        name: "first-touch",
        family: Family::Linux,
        summary: "each page on the node of the CPU that first touches it, falling back by \
                  distance when that node is full (Linux's default; takes no action)",
        source: "Linux",
        in_all: true,
        build: |p| {
            p.none()?;
            Ok(Box::new(baseline::FirstTouch))
        },
        defaults: no_parameters,
        bounds: &[],
    },
    PolicyInfo {
        name: "interleave",
        family: Family::Linux,
        summary: "the whole program interleaved over every node with memory from its start \
                  (numactl --interleave=all)",
        source: "Linux",
        in_all: true,
        build: |p| {
            p.none()?;
            Ok(Box::new(baseline::Interleave))
        },
        defaults: no_parameters,
        bounds: &[],
    },
    PolicyInfo {
        name: "autonuma",
        family: Family::Linux,
        summary: "automatic NUMA balancing as Linux does it: hinting-fault scans, the \
                  two-fault migration filter, tasks moved toward their memory",
        source: "Linux",
        in_all: true,
        build: |p| Ok(Box::new(autonuma::AutoNuma::new(p.parse()?))),
        defaults: defaults_of::<autonuma::AutoNumaConfig>,
        bounds: bounds::AUTONUMA,
    },
    PolicyInfo {
        name: "carrefour",
        family: Family::Carrefour,
        summary: "pages co-located, interleaved or replicated by sampled accesses when \
                  memory-controller load or locality calls for it",
        source: "Dashti13",
        in_all: true,
        build: |p| Ok(Box::new(carrefour::Carrefour::new(p.parse()?)?)),
        defaults: defaults_of::<carrefour::CarrefourConfig>,
        bounds: bounds::CARREFOUR,
    },
    PolicyInfo {
        name: "hybrid",
        family: Family::RemotePlacement,
        summary: "first touch on the local node; once it is full, the overflow interleaved over \
                  the remote nodes, nearest tier first (at allocation, or moved there after)",
        source: "Choe21",
        in_all: false,
        build: |p| Ok(Box::new(remote::hybrid(p.parse()?))),
        defaults: defaults_of::<remote::HybridConfig>,
        bounds: bounds::HYBRID,
    },
    PolicyInfo {
        name: "usage-aware",
        family: Family::RemotePlacement,
        summary: "first touch on the local node; once it is full, the overflow on the least-used \
                  remote node, nearest tier first (at allocation, or moved there after)",
        source: "Choe21",
        in_all: false,
        build: |p| Ok(Box::new(remote::usage_aware(p.parse()?))),
        defaults: defaults_of::<remote::UsageAwareConfig>,
        bounds: bounds::HYBRID,
    },
    PolicyInfo {
        name: "dm",
        family: Family::RemotePlacement,
        summary: "AutoNUMA, plus periodic moves of a remote tenant's pages from the busiest \
                  memory controller to the least busy one (dynamic migration)",
        source: "Choe21",
        in_all: false,
        build: |p| Ok(Box::new(remote::dm(p.parse()?))),
        defaults: defaults_of::<remote::dm::DmConfig>,
        bounds: bounds::DM,
    },
    PolicyInfo {
        name: "ua-dm",
        family: Family::RemotePlacement,
        summary: "usage-aware placement of overflow, then dm's rebalancing of traffic",
        source: "Choe21",
        in_all: false,
        build: |p| Ok(Box::new(remote::ua_dm(p.parse()?))),
        defaults: defaults_of::<remote::UaDmConfig>,
        bounds: bounds::UA_DM,
    },
    PolicyInfo {
        name: "maximum-local",
        family: Family::NMass,
        summary: "Algorithm 2: each process pinned to a core of its home node, highest NUMA \
                  penalty first, the rest overflowing to the nearest node (ours: home = the \
                  node its memory is bound to or holds most of its pages; N nodes)",
        source: "Majo11",
        in_all: false,
        build: |p| Ok(Box::new(nmass::NMass::maximum_local(p.parse()?)?)),
        defaults: defaults_of::<nmass::MaximumLocalConfig>,
        bounds: bounds::MAXIMUM_LOCAL,
    },
    PolicyInfo {
        name: "n-mass",
        family: Family::NMass,
        summary: "Algorithms 1-3: maximum-local, then processes moved to the less pressured \
                  cache while the NUMA-penalty-weighted MPKI evens out and stays under 60 \
                  (ours: the readings of Algorithm 3's gaps, threshold scaled by link \
                  bandwidth, N nodes pairwise, exchanges when the destination is full)",
        source: "Majo11",
        in_all: false,
        build: |p| Ok(Box::new(nmass::NMass::refined(p.parse()?)?)),
        defaults: defaults_of::<nmass::NMassConfig>,
        bounds: bounds::NMASS,
    },
    PolicyInfo {
        name: "default",
        family: Family::NMass,
        summary: "§4.3's scheduler baseline: every split of the processes a CPU-load balancer \
                  would choose, each run and averaged by the simulator (8 processes: all 70 \
                  splits, ours); live, the machine's own scheduler",
        source: "Majo11",
        in_all: false,
        build: |p| Ok(Box::new(nmass::DefaultSchedule::new(p.parse()?)?)),
        defaults: defaults_of::<nmass::DefaultConfig>,
        bounds: bounds::DEFAULT_SCHEDULE,
    },
    PolicyInfo {
        name: "oaas",
        family: Family::Oaas,
        summary: "[Gaud10 §5] every 300 ms each application's MAPI; the highest on fast nodes; \
                  a fast node's and a slow node's applications swap, with their pages, when \
                  the machine's MAPI-to-gap curve predicts a gain over 5 points (ours: MAPI \
                  over the whole period, gain in points; random start as in §5.3)",
        source: "Gaud10",
        in_all: false,
        build: |p| Ok(Box::new(oaas::Oaas::with_pages(p.parse()?)?)),
        defaults: defaults_of::<oaas::OaasConfig>,
        bounds: bounds::OAAS,
    },
    PolicyInfo {
        name: "oaas-nopm",
        family: Family::Oaas,
        summary: "[Gaud10 §5.3] OAAS-noPM: oaas, moving applications without their pages",
        source: "Gaud10",
        in_all: false,
        build: |p| Ok(Box::new(oaas::Oaas::without_pages(p.parse()?)?)),
        defaults: defaults_of::<oaas::OaasConfig>,
        bounds: bounds::OAAS,
    },
    PolicyInfo {
        name: "static",
        family: Family::Oaas,
        summary: "[Gaud10 Table 4] a fixed mapping of applications 1-4 to fast (F) and slow \
                  (S) nodes, one node each: mapping = M0 (FFSS) to M5 (SSFF), or F/S letters \
                  (ours)",
        source: "Gaud10",
        in_all: false,
        build: |p| Ok(Box::new(oaas::Static::new(p.parse()?)?)),
        defaults: defaults_of::<oaas::StaticConfig>,
        bounds: &[],
    },
    PolicyInfo {
        name: "random",
        family: Family::Oaas,
        summary: "[Gaud10 §4.2] each application on a node of its own drawn at random (by \
                  seed), before it starts",
        source: "Gaud10",
        in_all: false,
        build: |p| Ok(Box::new(oaas::Random::new(p.parse()?))),
        defaults: defaults_of::<oaas::RandomConfig>,
        bounds: bounds::SEED_ONLY,
    },
    PolicyInfo {
        name: "linux",
        family: Family::Oaas,
        summary: "[Gaud10 §4.1, §4.2] Linux's scheduler for the simulator: each application's \
                  threads spread one per node from a random node, some exchanged between \
                  applications by load balancing (ours: the draw and its rate), by seed",
        source: "Gaud10",
        in_all: false,
        build: |p| Ok(Box::new(oaas::LinuxLike::new(p.parse()?)?)),
        defaults: defaults_of::<oaas::LinuxConfig>,
        bounds: bounds::LINUX,
    },
    PolicyInfo {
        name: "oracle",
        family: Family::Reference,
        summary: "Carrefour's rules on the simulator's true access rates: an upper bound \
                  for sampled policies (simulator only)",
        source: "Dashti13",
        in_all: true,
        build: |p| Ok(Box::new(oracle::Oracle::new(p.parse()?))),
        defaults: defaults_of::<oracle::OracleConfig>,
        bounds: bounds::ORACLE,
    },
];

/// A set of policies: rondpoint's own ([`Registry::builtin`]), and any added to them.
#[derive(Clone, Debug)]
pub struct Registry {
    rows: Vec<&'static PolicyInfo>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Registry {
    /// rondpoint's policies.
    pub fn builtin() -> Self {
        Self {
            rows: BUILTIN.iter().collect(),
        }
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
        self.rows()
            .find(|p| p.name == name)
            .ok_or_else(|| PolicyError::Unknown {
                name: name.to_string(),
                valid: self.names().map(str::to_string).collect(),
            })
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
