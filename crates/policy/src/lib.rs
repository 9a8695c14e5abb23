//! Placement policies. A policy is pure: it sees the [`Topology`] and each epoch's
//! [`Observation`] and returns [`Action`]s; it never calls the kernel and never looks inside
//! the simulator. State kept across epochs lives in the policy value.
//!
//! Every policy is a row of [`registry::POLICIES`]; its parameters are a TOML table
//! (`[carrefour]`, `[autonuma]`, ... in a `--config` file, or `--set carrefour.KEY=VALUE`),
//! each parameter named, defaulted to the paper's value and documented with its source on the
//! policy's config struct.

pub mod autonuma;
pub mod baseline;
pub mod bounds;
pub mod carrefour;
pub mod metrics;
pub mod nmass;
pub mod oaas;
pub mod oracle;
pub mod registry;
pub mod remote;

pub use registry::{BUILTIN, Family, Params, PolicyInfo, Registry};
use rondpoint_model::toml_error;
use rondpoint_model::{
    Action, Capabilities, Need, Observation, Outcome, ProcessInfo, Sample, SamplingRequest,
    Topology,
};
use thiserror::Error;

/// A placement policy.
pub trait Policy {
    /// The name users pass to `--policy`.
    fn name(&self) -> &str;

    /// What the policy needs of the machine, for the parameters it was built with. The engine
    /// refuses to run a policy whose needs the machine cannot meet, naming what is missing
    /// (see [`rondpoint_model::Capabilities::check`]).
    fn needs(&self) -> Vec<Need>;

    /// How many equally likely placements the policy stands for, for `processes` processes on
    /// `topology`: 1 for a policy that decides, more for a baseline that is a distribution of
    /// placements rather than one (the default scheduler of [Majo11 §4.3]: every split of the
    /// processes a CPU-load balancer would choose). A simulator runs each, chosen with
    /// [`Policy::select_variant`] before the run, and reports their average and spread.
    fn variants(&self, topology: &Topology, processes: usize) -> usize {
        let _ = (topology, processes);
        1
    }

    /// Takes placement `k` (from 0) of those [`Policy::variants`] counts, before the run. The
    /// default ignores it.
    fn select_variant(&mut self, k: usize) {
        let _ = k;
    }

    /// What the machine offers, given once before the run after [`Policy::needs`] was found
    /// met, so that a policy with more than one way of working (at allocation time where the
    /// machine can, by migration afterwards where it cannot) takes the one the machine
    /// supports. The default ignores it.
    fn configure(&mut self, capabilities: &Capabilities) {
        let _ = capabilities;
    }

    /// Whether the policy can work on this machine with these programs at all, asked once
    /// before the run, after its needs were found met: `Err(why)` stops the run before
    /// anything is touched, as an unmet need does (OAAS given a MAPI-to-gap curve measured on
    /// another machine); the policy may keep what it found (the curve it chose). A policy
    /// that can only do nothing here accepts, and says so in [`Policy::notes`]. N-MASS refuses
    /// more processes than cores ([Majo11 §3.3, Limitations]). The default accepts.
    fn accepts(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), String> {
        let _ = (topology, processes);
        Ok(())
    }

    /// What the run's report should say about the policy: that it took no action and why,
    /// or what it approximated. The engine reads them when the run ends. The default has none.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

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

    /// What became of the actions of the start and of each decision, one outcome per action
    /// in the order carried out (those the rate limits refused, and every action of a dry
    /// run, come back skipped). A policy that keeps beliefs about the machine (Carrefour:
    /// which pages have replicas) corrects them here; the default ignores them.
    fn outcomes(&mut self, actions: &[Action], outcomes: &[Outcome]) {
        let _ = (actions, outcomes);
    }

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
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyConfig {
    tables: toml::Table,
}

impl PolicyConfig {
    /// Parses a configuration file's text: a table per policy. Which tables name policies,
    /// and whether their parameters are valid, [`Registry::check`] says.
    pub fn from_toml(text: &str) -> Result<Self, PolicyError> {
        let tables: toml::Table =
            toml::from_str(text).map_err(|e| PolicyError::Toml(toml_error::describe(text, &e)))?;
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

/// Builds one of rondpoint's policies by name with its parameters from `config` (defaults
/// where absent).
pub fn build(name: &str, config: &PolicyConfig) -> Result<Box<dyn Policy>, PolicyError> {
    Registry::builtin().build(name, config)
}

/// Builds one of rondpoint's policies by name with its default parameters.
pub fn by_name(name: &str) -> Result<Box<dyn Policy>, PolicyError> {
    build(name, &PolicyConfig::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_builds_under_its_own_name_and_unknown_lists_them() {
        let r = Registry::builtin();
        for n in r.names() {
            assert_eq!(
                by_name(n).map(|p| p.name().to_string()).ok().as_deref(),
                Some(n)
            );
        }
        let err = by_name("carrefour2").err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some(
                "unknown policy 'carrefour2'; valid policies: first-touch, interleave, autonuma, \
                 carrefour, hybrid, usage-aware, dm, ua-dm, maximum-local, n-mass, default, \
                 oaas, oaas-nopm, static, random, linux, oracle"
            )
        );
        let mut names: Vec<_> = r.names().collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BUILTIN.len(), "names are unique");
    }

    #[test]
    fn every_default_table_builds_the_policy_back() {
        for row in BUILTIN {
            let defaults = (row.defaults)();
            let text = toml::to_string(&toml::Table::from_iter([(
                row.name.to_string(),
                toml::Value::Table(defaults),
            )]))
            .unwrap();
            let config = PolicyConfig::from_toml(&text).unwrap();
            assert!(Registry::builtin().check(&config).is_ok(), "{}", row.name);
        }
    }

    #[test]
    fn config_errors_name_the_policy_and_the_key() {
        let r = Registry::builtin();
        let c = PolicyConfig::from_toml("[carrefour]\nlar_threshold = \"high\"\n").unwrap();
        let err = r.check(&c).err().unwrap().to_string();
        assert!(err.starts_with("[carrefour] configuration:"), "{err}");
        assert!(err.contains("lar_threshold"), "{err}");
        let c = PolicyConfig::from_toml("[carrefour]\nno_such_knob = 1\n").unwrap();
        let err = r.check(&c).err().unwrap().to_string();
        assert!(err.contains("no_such_knob"), "{err}");
        let c = PolicyConfig::from_toml("[carefour]\n").unwrap();
        assert!(matches!(r.check(&c), Err(PolicyError::Unknown { .. })));
        assert!(matches!(
            PolicyConfig::from_toml("[x"),
            Err(PolicyError::Toml(_))
        ));
        assert!(matches!(
            PolicyConfig::from_toml("carrefour = 1"),
            Err(PolicyError::Config { .. })
        ));
        let c = PolicyConfig::from_toml("[first-touch]\nx = 1\n").unwrap();
        let err = r.check(&c).err().unwrap().to_string();
        assert!(err.contains("has no parameters (got x)"), "{err}");
    }

    #[test]
    fn set_reads_values_by_the_type_of_the_default() {
        let r = Registry::builtin();
        let mut c = PolicyConfig::default();
        r.set_arg(&mut c, "carrefour.lar_threshold=0.7").unwrap();
        r.set_arg(&mut c, "carrefour.techniques=interleaving")
            .unwrap();
        r.set_arg(&mut c, "autonuma.scan_size_mb=64").unwrap();
        let expected = PolicyConfig::from_toml(
            "[carrefour]\nlar_threshold = 0.7\ntechniques = [\"interleaving\"]\n\
             [autonuma]\nscan_size_mb = 64\n",
        )
        .unwrap();
        assert_eq!(c, expected);
        r.check(&c).unwrap();
        r.set_arg(&mut c, "carrefour.techniques=replication, co-location")
            .unwrap();
        let mut lists = PolicyConfig::default();
        lists
            .set(
                "carrefour",
                "techniques",
                toml::Value::Array(vec!["replication".into(), "co-location".into()]),
            )
            .unwrap();
        assert_eq!(
            c.params("carrefour")
                .table
                .and_then(|t| t.get("techniques")),
            lists
                .params("carrefour")
                .table
                .and_then(|t| t.get("techniques"))
        );
    }

    #[test]
    fn set_refuses_bad_syntax_unknown_policies_and_bad_values() {
        let r = Registry::builtin();
        let mut c = PolicyConfig::default();
        for bad in [
            "carrefour",
            "carrefour=1",
            "carrefour.=1",
            "carrefour..x=1",
            ".x=1",
        ] {
            assert!(
                matches!(r.set_arg(&mut c, bad), Err(PolicyError::SetSyntax(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            r.set_arg(&mut c, "carfour.x=1"),
            Err(PolicyError::Unknown { .. })
        ));
        r.set_arg(&mut c, "carrefour.techniques=teleportation")
            .unwrap();
        let err = r.check(&c).err().unwrap().to_string();
        assert!(err.contains("teleportation"), "{err}");
        // A newline cannot smuggle a second key in.
        let mut c = PolicyConfig::default();
        r.set_arg(&mut c, "carrefour.seed=1\nlar_threshold = 0.1")
            .unwrap();
        assert!(r.check(&c).is_err());
    }

    #[test]
    fn a_run_seed_seeds_the_policies_with_a_seed_unless_given() {
        let r = Registry::builtin();
        let seed_of = |c: &PolicyConfig, p: &str| {
            c.params(p)
                .table
                .and_then(|t| t.get("seed"))
                .and_then(toml::Value::as_integer)
        };
        let c = r.seeded(&PolicyConfig::default(), "random", 7).unwrap();
        assert_eq!(seed_of(&c, "random"), Some(7));
        r.check(&c).unwrap();
        let c = r
            .seeded(&PolicyConfig::default(), "first-touch", 7)
            .unwrap();
        assert_eq!(c, PolicyConfig::default(), "no seed parameter, nothing set");
        let mut given = PolicyConfig::default();
        r.set_arg(&mut given, "carrefour.seed=3").unwrap();
        let c = r.seeded(&given, "carrefour", 7).unwrap();
        assert_eq!(seed_of(&c, "carrefour"), Some(3));
        assert!(r.seeded(&given, "nope", 7).is_err());
    }

    #[test]
    fn a_registry_takes_rows_of_its_own_once() {
        static TOY: PolicyInfo = PolicyInfo {
            name: "toy",
            family: Family::Reference,
            summary: "does nothing",
            source: "test",
            in_all: false,
            build: |p| {
                p.none()?;
                Ok(Box::new(baseline::FirstTouch))
            },
            defaults: toml::Table::new,
            bounds: &[],
        };
        let r = Registry::builtin().with(&TOY).unwrap();
        assert!(r.info("toy").is_ok());
        assert!(!r.all().any(|n| n == "toy"));
        assert!(r.clone().with(&TOY).is_err());
        assert!(Registry::builtin().info("toy").is_err());
    }
}
