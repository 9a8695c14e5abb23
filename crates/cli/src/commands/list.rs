//! `rondpoint list`: what rondpoint knows: policies (with what each needs of a machine and its
//! parameters), simulator presets, and what this machine offers the policies.

use crate::format;
use anyhow::Result;
use clap::{Args, ValueEnum};
use rondpoint_linux::machine::LiveConfig;
use rondpoint_model::{Capabilities, Need, Support};
use rondpoint_policy_api::PolicyConfig;
use rondpoint_sim::presets;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ListArgs {
    /// What to list.
    #[arg(value_enum, default_value = "policies")]
    what: What,
    /// With `policies`: every parameter with its default (as a --config file would set it).
    #[arg(long)]
    params: bool,
    /// With `capabilities`: read the topology from DIR instead of /sys.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    sysfs_root: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum What {
    /// Placement policies: family, source, what each needs of the machine.
    Policies,
    /// The simulator's machine presets.
    Machines,
    /// The simulator's workload presets.
    Workloads,
    /// What this machine's live backend can observe and do (`rondpoint run`).
    Capabilities,
}

#[derive(Debug, Serialize)]
pub(crate) struct PolicyRow {
    pub(crate) name: &'static str,
    family: &'static str,
    source: &'static str,
    summary: &'static str,
    in_all: bool,
    pub(crate) needs: Vec<Need>,
    params: toml::Table,
}

/// Every policy of the registry, built with its defaults, with what it needs of a machine.
pub(crate) fn policies() -> Result<Vec<PolicyRow>> {
    let registry = crate::policies::registry();
    registry
        .rows()
        .map(|row| {
            let policy = registry.build(row.name, &PolicyConfig::default())?;
            Ok(PolicyRow {
                name: row.name,
                family: row.family.name(),
                source: row.source,
                summary: row.summary,
                in_all: row.in_all,
                needs: policy.needs(),
                params: (row.defaults)(),
            })
        })
        .collect()
}

pub fn run(args: &ListArgs) -> Result<ExitCode> {
    match args.what {
        What::Policies => {
            let rows = policies()?;
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                out!("{}", render_policies(&rows, args.params));
                outln!(
                    "\nand, in `sim` and `matrix` only, {} (not a policy: the best placement the \
                     simulator's model allows, placed at no cost; see docs/policies.md)",
                    rondpoint_sim::bound::NAME
                );
            }
        }
        What::Machines | What::Workloads => {
            let table = if args.what == What::Machines {
                presets::MACHINES
            } else {
                presets::WORKLOADS
            };
            let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&names)?);
            } else {
                outln!("{}", names.join("\n"));
            }
        }
        What::Capabilities => {
            let caps = live_capabilities(&args.sysfs_root)?;
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&caps)?);
            } else {
                out!("{}", render_capabilities(&caps));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The capabilities `rondpoint run` would have here (a machine that launches its program).
pub(crate) fn live_capabilities(sysfs_root: &std::path::Path) -> Result<Capabilities> {
    let topology = crate::options::discover(sysfs_root)?.topology;
    let config = LiveConfig {
        sysfs_root: sysfs_root.to_path_buf(),
        ..LiveConfig::default()
    };
    Ok(crate::live::launch_capabilities(&topology, &config))
}

fn render_policies(rows: &[PolicyRow], params: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for r in rows {
        let _ = writeln!(out, "{} ({}, {})", r.name, r.family, r.source);
        let _ = writeln!(out, "    {}", r.summary);
        for need in &r.needs {
            let caps: Vec<&str> = need.any_of.iter().map(|c| c.name()).collect();
            let _ = writeln!(
                out,
                "    needs {}{}: {}",
                caps.join(" or "),
                if need.exact { " (exactly)" } else { "" },
                need.why
            );
        }
        if params && !r.params.is_empty() {
            // Under the policy's own table, so that sub-tables read `[n-mass.inputs]`.
            let table = toml::Table::from_iter([(
                r.name.to_string(),
                toml::Value::Table(r.params.clone()),
            )]);
            let text = toml::to_string(&table).unwrap_or_default();
            for line in text.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    out
}

/// The capabilities as a table (`capability`, `support`, `how`).
pub(crate) fn render_capabilities(caps: &Capabilities) -> String {
    let rows = caps
        .iter()
        .map(|(c, s)| {
            let (level, how) = match s {
                Support::Full => ("yes", String::new()),
                Support::Estimated(h) => ("estimated", h),
                Support::Substituted(h) => ("substituted", h),
                Support::Missing(h) => ("no", h),
            };
            vec![c.name().to_string(), level.to_string(), how]
        })
        .collect();
    let mut out = format::table(
        &["capability", "support", "how"],
        &[false, false, false],
        rows,
    );
    out.push('\n');
    out
}
