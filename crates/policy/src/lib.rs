//! rondpoint's placement policies, and the registry of them: [`BUILTIN`] is the one table
//! that `--policy`, `--policy all`, `rondpoint list policies`, `--config` tables and `--set`
//! read (the binary hands it to [`Registry::new`] through [`registry`]). Each policy is a
//! module here implementing [`rondpoint_policy_api::Policy`]; its parameters are a TOML
//! table (`[carrefour]`, `[autonuma]`, ...), each named, defaulted to the paper's value and
//! documented with its source on the policy's config struct, with its range beside it.
//!
//! Adding a policy is one module and one row of [`BUILTIN`] (docs/architecture.md, "Adding a
//! policy"); the tests below check every row.

#![forbid(unsafe_code)]

pub mod auto;
pub mod autonuma;
pub mod baseline;
pub mod carrefour;
pub mod guard;
pub mod metrics;
pub mod nmass;
pub mod oaas;
pub mod oracle;
pub mod remote;

use rondpoint_policy_api::{
    Family, FirstTouch, Policy, PolicyConfig, PolicyError, PolicyInfo, Registry, defaults_of,
    no_parameters,
};

/// The names policies had before, and what they are called now: asking for an old one is
/// refused with the new name.
pub static RENAMED: &[(&str, &str)] = &[("default", "cfs-average"), ("linux", "linux-spread")];

/// rondpoint's policies, with the names they had before ([`RENAMED`]).
pub fn registry() -> Registry {
    Registry::new(BUILTIN).with_renamed(RENAMED)
}

/// Builds one of rondpoint's policies by name with its parameters from `config` (defaults
/// where absent).
pub fn build(name: &str, config: &PolicyConfig) -> Result<Box<dyn Policy>, PolicyError> {
    registry().build(name, config)
}

/// Builds one of rondpoint's policies by name with its default parameters.
pub fn by_name(name: &str) -> Result<Box<dyn Policy>, PolicyError> {
    build(name, &PolicyConfig::default())
}

/// `[auto.oaas]`'s curve, a file the caller reads as `[oaas]`'s.
const AUTO_CURVE_FILE: &[rondpoint_policy_api::FileParam] = &[rondpoint_policy_api::FileParam {
    key: "oaas.curve",
    keywords: &["builtin"],
}];

/// rondpoint's policies, in the order reports list them.
pub static BUILTIN: &[PolicyInfo] = &[
    PolicyInfo {
        name: "first-touch",
        family: Family::Baseline,
        summary: "each page on the node of the CPU that first touches it, falling back by \
                  distance when that node is full (Linux's default; takes no action)",
        source: "Linux",
        in_all: true,
        build: |p| {
            p.none()?;
            Ok(Box::new(FirstTouch))
        },
        defaults: no_parameters,
        bounds: &[],
        files: &[],
    },
    PolicyInfo {
        name: "interleave",
        family: Family::Baseline,
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
        files: &[],
    },
    PolicyInfo {
        name: "autonuma",
        family: Family::Baseline,
        summary: "automatic NUMA balancing as Linux does it: hinting-fault scans, the \
                  two-fault migration filter, tasks moved toward their memory",
        source: "Linux",
        in_all: true,
        build: |p| Ok(Box::new(autonuma::AutoNuma::new(p.parse()?)?)),
        defaults: defaults_of::<autonuma::AutoNumaConfig>,
        bounds: autonuma::BOUNDS,
        files: &[],
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
        bounds: carrefour::BOUNDS,
        files: &[],
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
        bounds: remote::HYBRID_BOUNDS,
        files: &[],
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
        bounds: remote::HYBRID_BOUNDS,
        files: &[],
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
        bounds: remote::dm::BOUNDS,
        files: &[],
    },
    PolicyInfo {
        name: "ua-dm",
        family: Family::RemotePlacement,
        summary: "usage-aware placement of overflow, then dm's rebalancing of traffic",
        source: "Choe21",
        in_all: false,
        build: |p| Ok(Box::new(remote::ua_dm(p.parse()?))),
        defaults: defaults_of::<remote::UaDmConfig>,
        bounds: remote::UA_DM_BOUNDS,
        files: &[],
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
        bounds: nmass::MAXIMUM_LOCAL_BOUNDS,
        files: &[],
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
        bounds: nmass::NMASS_BOUNDS,
        files: &[],
    },
    PolicyInfo {
        name: "cfs-average",
        family: Family::NMass,
        summary: "§4.3's scheduler baseline: every split of the processes a CPU-load balancer \
                  would choose, each run and averaged by the simulator (8 processes: all 70 \
                  splits, ours); live, the machine's own scheduler",
        source: "Majo11",
        in_all: false,
        build: |p| Ok(Box::new(nmass::CfsAverage::new(p.parse()?)?)),
        defaults: defaults_of::<nmass::CfsAverageConfig>,
        bounds: nmass::CFS_BOUNDS,
        files: &[],
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
        bounds: oaas::OAAS_BOUNDS,
        files: oaas::CURVE_FILE,
    },
    PolicyInfo {
        name: "oaas-nopm",
        family: Family::Oaas,
        summary: "[Gaud10 §5.3] OAAS-noPM: oaas, moving applications without their pages",
        source: "Gaud10",
        in_all: false,
        build: |p| Ok(Box::new(oaas::Oaas::without_pages(p.parse()?)?)),
        defaults: defaults_of::<oaas::OaasConfig>,
        bounds: oaas::OAAS_BOUNDS,
        files: oaas::CURVE_FILE,
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
        files: &[],
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
        bounds: oaas::RANDOM_BOUNDS,
        files: &[],
    },
    PolicyInfo {
        name: "linux-spread",
        family: Family::Oaas,
        summary: "[Gaud10 §4.1, §4.2] Linux's scheduler for the simulator: each application's \
                  threads spread one per node from a random node, some exchanged between \
                  applications by load balancing (ours: the draw and its rate), by seed",
        source: "Gaud10",
        in_all: false,
        build: |p| Ok(Box::new(oaas::LinuxSpread::new(p.parse()?)?)),
        defaults: defaults_of::<oaas::LinuxSpreadConfig>,
        bounds: oaas::SPREAD_BOUNDS,
        files: &[],
    },
    PolicyInfo {
        name: "auto",
        family: Family::Rondpoint,
        summary: "the four systems composed, each deciding one thing where it applies: \
                  placement (oaas or n-mass), overflow (usage-aware), pages (carrefour), with \
                  stated rules for their conflicts",
        source: "ours",
        in_all: true,
        build: |p| Ok(Box::new(auto::Auto::new(p.parse()?)?)),
        defaults: defaults_of::<auto::AutoConfig>,
        bounds: auto::BOUNDS,
        files: AUTO_CURVE_FILE,
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
        bounds: oracle::BOUNDS,
        files: &[],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_builds_under_its_own_name_and_unknown_lists_them() {
        let r = registry();
        for n in r.names() {
            assert_eq!(
                by_name(n).map(|p| p.name().to_string()).ok().as_deref(),
                Some(n)
            );
        }
        let err = by_name("carrefour2").err().map(|e| e.to_string());
        let valid: Vec<&str> = BUILTIN.iter().map(|row| row.name).collect();
        assert_eq!(
            err,
            Some(format!(
                "unknown policy 'carrefour2'; valid policies: {}",
                valid.join(", ")
            ))
        );
        let mut names: Vec<_> = r.names().collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BUILTIN.len(), "names are unique");
    }

    #[test]
    fn every_row_has_ranges_for_its_numbers_and_a_known_source() {
        let references = include_str!("../../../docs/references.md");
        for row in BUILTIN {
            let problems = rondpoint_policy_api::bounds::row_problems(row);
            assert!(problems.is_empty(), "{problems:#?}");
            let known = match row.source {
                "Linux" => row.family == Family::Baseline || row.family == Family::Reference,
                "ours" => row.family == Family::Rondpoint,
                key => references.contains(&format!("### {key}\n")),
            };
            assert!(known, "{}: source '{}'", row.name, row.source);
            assert!(
                !row.summary.is_empty() && !row.summary.ends_with('.'),
                "{}",
                row.name
            );
        }
    }

    /// The table of every policy in docs/policies.md, as the registry gives it.
    fn policy_table() -> String {
        let mut t = String::from(
            "| policy | family | what it does | source | in `all` |\n|---|---|---|---|---|\n",
        );
        for row in BUILTIN {
            let source = match row.source {
                "Linux" | "ours" => row.source.to_string(),
                key => format!("[{key}]"),
            };
            let all = if row.in_all { "yes" } else { "no" };
            t += &format!(
                "| `{}` | {} | {} | {source} | {all} |\n",
                row.name,
                row.family.name(),
                row.summary.replace('|', "\\|")
            );
        }
        t
    }

    /// The policies of the README, one line per family, as the registry gives them.
    fn policy_list() -> String {
        let mut families: Vec<Family> = Vec::new();
        for row in BUILTIN {
            if !families.contains(&row.family) {
                families.push(row.family);
            }
        }
        let mut out = String::new();
        for family in families {
            let rows: Vec<&PolicyInfo> = BUILTIN.iter().filter(|r| r.family == family).collect();
            let names: Vec<String> = rows.iter().map(|r| format!("`{}`", r.name)).collect();
            let mut sources: Vec<&str> = Vec::new();
            for row in &rows {
                if !sources.contains(&row.source) {
                    sources.push(row.source);
                }
            }
            let sources: Vec<String> = sources
                .iter()
                .map(|s| match *s {
                    "Linux" | "ours" => s.to_string(),
                    key => format!("[{key}]"),
                })
                .collect();
            out += &format!(
                "  - {} ({}): {}\n",
                family.name(),
                sources.join(", "),
                names.join(", ")
            );
        }
        out
    }

    /// Checks (or with `UPDATE_DOCS` set, rewrites) the part of a file between two markers.
    fn generated(file: &str, start: &str, end: &str, content: &str) {
        let path = format!("{}/../../{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let (Some(a), Some(b)) = (text.find(start), text.find(end)) else {
            panic!("{file} has no generated part ({start})");
        };
        let a = a + start.len();
        if text[a..b] == *content {
            return;
        }
        assert!(
            std::env::var_os("UPDATE_DOCS").is_some(),
            "{file} differs from the registry: run UPDATE_DOCS=1 cargo test -p rondpoint-policy"
        );
        std::fs::write(&path, format!("{}{content}{}", &text[..a], &text[b..])).unwrap();
    }

    #[test]
    fn the_docs_table_and_the_readme_list_every_policy_of_the_registry() {
        generated(
            "docs/policies.md",
            "<!-- generated from the registry by `UPDATE_DOCS=1 cargo test -p rondpoint-policy`: \
             edit the rows in crates/policy/src/lib.rs -->\n",
            "<!-- end of the generated table -->",
            &policy_table(),
        );
        generated(
            "README.md",
            "<!-- generated from the registry by `UPDATE_DOCS=1 cargo test -p rondpoint-policy` -->\n",
            "  <!-- end of the generated list -->",
            &policy_list(),
        );
    }

    #[test]
    fn an_old_name_is_refused_with_the_new_one_as_policy_or_table() {
        let r = registry();
        for (old, new) in RENAMED {
            assert!(r.info(new).is_ok(), "{new}");
            let err = r.info(old).err().map(|e| e.to_string());
            assert_eq!(err, Some(format!("policy '{old}' is now called '{new}'")));
            let c = PolicyConfig::from_toml(&format!("[{old}]\n")).unwrap();
            assert!(matches!(r.check(&c), Err(PolicyError::Renamed { .. })));
        }
    }

    #[test]
    fn file_parameters_are_read_by_the_caller_and_handed_over_as_text() {
        let r = registry();
        let curve = include_str!("oaas/curves/r905-asymmetric.toml");
        let mut c = PolicyConfig::default();
        r.set_arg(&mut c, "oaas.curve=/some/file.toml").unwrap();
        // Unread, the policy refuses to build rather than read it itself.
        let err = r.check(&c).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("the file was not read"), "{err}");
        let mut asked = Vec::new();
        r.resolve_files(&mut c, |policy, key, path| {
            asked.push(format!("{policy}.{key}={}", path.display()));
            Ok::<_, PolicyError>(curve.to_string())
        })
        .unwrap();
        assert_eq!(asked, ["oaas.curve=/some/file.toml"]);
        r.check(&c).unwrap();
        // A keyword names no file.
        let mut c = PolicyConfig::default();
        r.set_arg(&mut c, "oaas-nopm.curve=builtin").unwrap();
        r.resolve_files(&mut c, |_, _, _| Err(PolicyError::SetSyntax("read".into())))
            .unwrap();
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
            assert!(registry().check(&config).is_ok(), "{}", row.name);
        }
    }

    #[test]
    fn config_errors_name_the_policy_and_the_key() {
        let r = registry();
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
        let r = registry();
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
        let r = registry();
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
        let r = registry();
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
                Ok(Box::new(FirstTouch))
            },
            defaults: toml::Table::new,
            bounds: &[],
            files: &[],
        };
        let r = registry().with(&TOY).unwrap();
        assert!(r.info("toy").is_ok());
        assert!(!r.all().any(|n| n == "toy"));
        assert!(r.clone().with(&TOY).is_err());
        assert!(registry().info("toy").is_err());
    }
}
