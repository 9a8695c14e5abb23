//! numactl's launch flags on `rondpoint run`: the program's allocation policy and CPUs, set
//! before it executes as `numactl` sets them (numactl(8)), in numactl's list syntax.

use anyhow::Result;
use clap::Args;
use rondpoint_linux::capabilities;
use rondpoint_linux::sys::{MemPolicyMode, NodeMask, SpawnSetup};
use rondpoint_linux::sysfs::SysfsRoot;
use rondpoint_model::{CpuId, Topology, cpulist};
use std::path::Path;

/// The flags, under the names numactl gives them (long forms; `=` or a space before the
/// value): at most one memory flag and one CPU flag.
#[derive(Debug, Default, Args)]
pub struct NumactlFlags {
    #[command(flatten)]
    mem: MemFlags,
    #[command(flatten)]
    cpu: CpuFlags,
}

/// The program's allocation policy: one of them.
#[derive(Debug, Default, Args)]
#[group(multiple = false)]
struct MemFlags {
    /// Interleave the program's memory over NODES, as `numactl --interleave` (lists: `0-3,5`,
    /// `all`, `!0` for all but node 0).
    #[arg(long, value_name = "NODES", help_heading = "numactl's flags")]
    interleave: Option<String>,
    /// Allocate only on NODES, as `numactl --membind`.
    #[arg(long, value_name = "NODES", help_heading = "numactl's flags")]
    membind: Option<String>,
    /// Allocate on NODE first, elsewhere when it is full, as `numactl --preferred`.
    #[arg(long, value_name = "NODE", help_heading = "numactl's flags")]
    preferred: Option<String>,
    /// Allocate on NODES first (Linux 5.15+), as `numactl --preferred-many`.
    #[arg(long, value_name = "NODES", help_heading = "numactl's flags")]
    preferred_many: Option<String>,
    /// Interleave over NODES in proportion to the kernel's weights
    /// (/sys/kernel/mm/mempolicy/weighted_interleave, Linux 6.9+), as `numactl
    /// --weighted-interleave`.
    #[arg(long, value_name = "NODES", help_heading = "numactl's flags")]
    weighted_interleave: Option<String>,
}

/// The program's CPUs: one of them.
#[derive(Debug, Default, Args)]
#[group(multiple = false)]
struct CpuFlags {
    /// Run the program on the CPUs of NODES, as `numactl --cpunodebind`.
    #[arg(long, value_name = "NODES", help_heading = "numactl's flags")]
    cpunodebind: Option<String>,
    /// Run the program on CPUS (`0-3,8`, `all`, `!0`), as `numactl --physcpubind`.
    #[arg(long, value_name = "CPUS", help_heading = "numactl's flags")]
    physcpubind: Option<String>,
}

impl NumactlFlags {
    /// Whether any flag was given.
    pub fn any(&self) -> bool {
        self.memory().is_some() || self.cpu.cpunodebind.is_some() || self.cpu.physcpubind.is_some()
    }

    /// The memory flag given, as (flag, value, mode).
    fn memory(&self) -> Option<(&'static str, &str, MemPolicyMode)> {
        let flags = [
            (
                "--interleave",
                &self.mem.interleave,
                MemPolicyMode::Interleave,
            ),
            ("--membind", &self.mem.membind, MemPolicyMode::Bind),
            ("--preferred", &self.mem.preferred, MemPolicyMode::Preferred),
            (
                "--preferred-many",
                &self.mem.preferred_many,
                MemPolicyMode::PreferredMany,
            ),
            (
                "--weighted-interleave",
                &self.mem.weighted_interleave,
                MemPolicyMode::WeightedInterleave,
            ),
        ];
        flags
            .into_iter()
            .find_map(|(flag, value, mode)| value.as_deref().map(|v| (flag, v, mode)))
    }

    /// How the program starts on `topology` (read from `sysfs_root`): every list checked
    /// against the machine before anything starts.
    pub fn setup(&self, topology: &Topology, sysfs_root: &Path) -> Result<SpawnSetup> {
        let mut setup = SpawnSetup::default();
        if let Some((flag, value, mode)) = self.memory() {
            let with_memory: Vec<u32> = topology
                .nodes()
                .iter()
                .filter(|n| n.mem_total_bytes > 0)
                .map(|n| u32::from(n.id.0))
                .collect();
            let nodes = list(flag, value, &with_memory, "node")?;
            if mode == MemPolicyMode::Preferred && nodes.len() != 1 {
                bad_input!("--preferred takes one node (--preferred-many takes several)");
            }
            if mode == MemPolicyMode::WeightedInterleave
                && capabilities::interleave_weights(&SysfsRoot::new(sysfs_root)).is_none()
            {
                bad_input!(
                    "--weighted-interleave needs Linux 6.9 or later: this kernel has no \
                     /sys/kernel/mm/mempolicy/weighted_interleave"
                );
            }
            let nodes = nodes.into_iter().filter_map(|n| u16::try_from(n).ok());
            setup.policy = Some((mode, NodeMask::of(nodes)));
        }
        if let Some(value) = &self.cpu.cpunodebind {
            let with_cpus: Vec<u32> = topology
                .nodes()
                .iter()
                .filter(|n| !n.cpus.is_empty())
                .map(|n| u32::from(n.id.0))
                .collect();
            let nodes = list("--cpunodebind", value, &with_cpus, "node with CPUs")?;
            setup.cpus = Some(
                topology
                    .nodes()
                    .iter()
                    .filter(|n| nodes.contains(&u32::from(n.id.0)))
                    .flat_map(|n| n.cpus.iter().copied())
                    .collect(),
            );
        }
        if let Some(value) = &self.cpu.physcpubind {
            let all: Vec<u32> = topology
                .nodes()
                .iter()
                .flat_map(|n| n.cpus.iter().map(|c| c.0))
                .collect();
            let cpus = list("--physcpubind", value, &all, "CPU")?;
            setup.cpus = Some(cpus.into_iter().map(CpuId).collect());
        }
        Ok(setup)
    }
}

/// A list in numactl's syntax: `all`, `0-3,5`, or `!` before a list for every item of `all`
/// but those. Each item must be one of `all` (`what` names them in the error).
fn list(flag: &str, text: &str, all: &[u32], what: &str) -> Result<Vec<u32>> {
    let text = text.trim();
    if text.starts_with('+') {
        bad_input!(
            "{flag} {text}: lists relative to the cpuset (+) are not supported; give the \
             numbers"
        );
    }
    let (invert, body) = match text.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let picked = if body == "all" {
        all.to_vec()
    } else {
        let items = match cpulist::parse(body) {
            Ok(items) => items,
            Err(e) => bad_input!("{flag} {text}: {e} (lists are like 0-3,5, all or !0)"),
        };
        if let Some(bad) = items.iter().find(|i| !all.contains(i)) {
            bad_input!(
                "{flag} {text}: {what} {bad} does not exist here (this machine has {})",
                cpulist::format(all.iter().copied())
            );
        }
        items
    };
    let out: Vec<u32> = if invert {
        all.iter()
            .copied()
            .filter(|i| !picked.contains(i))
            .collect()
    } else {
        picked
    };
    if out.is_empty() {
        bad_input!("{flag} {text}: the list names no {what}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::synthetic::TopologyBuilder;

    fn flags(f: impl FnOnce(&mut NumactlFlags)) -> NumactlFlags {
        let mut flags = NumactlFlags::default();
        f(&mut flags);
        flags
    }

    #[test]
    fn lists_follow_numactl_s_syntax() {
        let all = [0, 1, 2, 3];
        assert_eq!(list("--membind", "all", &all, "node").unwrap(), all);
        assert_eq!(list("--membind", "1-2", &all, "node").unwrap(), [1, 2]);
        assert_eq!(list("--membind", "!0,3", &all, "node").unwrap(), [1, 2]);
        assert_eq!(list("--membind", "0,2", &all, "node").unwrap(), [0, 2]);
        let err = |t: &str| list("--membind", t, &all, "node").unwrap_err().to_string();
        assert!(err("7").contains("node 7 does not exist here (this machine has 0-3)"));
        assert!(err("+1").contains("relative to the cpuset"));
        assert!(err("!all").contains("names no node"));
        assert!(err("x").contains("lists are like"));
    }

    #[test]
    fn flags_become_the_program_s_policy_and_cpus() {
        let topo = TopologyBuilder::new(4).cores_per_llc(2).build().unwrap();
        let root = Path::new("/nonexistent");
        let s = flags(|f| f.mem.interleave = Some("all".into()))
            .setup(&topo, root)
            .unwrap();
        assert_eq!(
            s.policy,
            Some((MemPolicyMode::Interleave, NodeMask::of([0, 1, 2, 3])))
        );
        assert_eq!(s.cpus, None);
        let s = flags(|f| {
            f.mem.membind = Some("2".into());
            f.cpu.cpunodebind = Some("1".into());
        })
        .setup(&topo, root)
        .unwrap();
        assert_eq!(s.policy, Some((MemPolicyMode::Bind, NodeMask::of([2]))));
        let node1: Vec<CpuId> = topo.nodes()[1].cpus.clone();
        assert_eq!(s.cpus.as_deref(), Some(&node1[..]));
        let s = flags(|f| f.cpu.physcpubind = Some("!0".into()))
            .setup(&topo, root)
            .unwrap();
        assert_eq!(s.cpus.as_ref().map(Vec::len), Some(7));
        let err = flags(|f| f.mem.preferred = Some("0,1".into()))
            .setup(&topo, root)
            .unwrap_err();
        assert!(err.to_string().contains("one node"), "{err}");
        let err = flags(|f| f.mem.weighted_interleave = Some("all".into()))
            .setup(&topo, root)
            .unwrap_err();
        assert!(err.to_string().contains("Linux 6.9"), "{err}");
    }
}
