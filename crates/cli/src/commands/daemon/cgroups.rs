//! Per-cgroup totals of `daemon --cgroup`: for each cgroup given, the managed processes in it
//! (or in a cgroup below it) now, their memory on each node, their samples, and the actions
//! taken on them and the pages placed since the start; in the state file and the metrics.
//!
//! A process counts for the deepest cgroup given that holds it, by its own cgroup
//! (`/proc/PID/cgroup`); a managed process in none of them (selected by `--pid` or `--comm`,
//! or a child that moved elsewhere) counts for none.

use crate::top::model::CgroupView;
use rondpoint_engine::EpochReport;
use rondpoint_linux::procfs::ProcRoot;
use rondpoint_model::Pid;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One cgroup's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CgroupTotals {
    /// The directory as given (`--cgroup`).
    pub cgroup: String,
    /// Its path in the cgroup v2 hierarchy (`/batch/run1`), when the hierarchy's mount is
    /// known.
    pub path: Option<String>,
    /// Managed processes in it, last epoch.
    pub processes: usize,
    /// Their resident bytes on each node (in the topology's order), last epoch.
    pub memory_bytes_by_node: Vec<u64>,
    /// Their samples, last epoch and since the start.
    pub samples_last_epoch: u64,
    pub samples: u64,
    /// Actions on them since the start, by technique.
    pub actions: BTreeMap<String, u64>,
    /// Pages placed for them since the start (moved, or found where asked).
    pub pages_placed: u64,
    /// Actions and pages of the last epoch (what the metrics' counters add).
    #[serde(skip)]
    pub actions_last_epoch: BTreeMap<String, u64>,
    #[serde(skip)]
    pub pages_last_epoch: u64,
}

/// The cgroups a daemon watches.
#[derive(Debug)]
pub struct Cgroups {
    proc: ProcRoot,
    groups: Vec<CgroupTotals>,
}

impl Cgroups {
    /// The cgroups `dirs`, each placed in the hierarchy mounted where `/proc/self/mountinfo`
    /// says.
    pub fn new(dirs: &[PathBuf], proc: ProcRoot) -> Self {
        let mount = proc.cgroup2_mount().ok().flatten();
        let groups = dirs
            .iter()
            .map(|d| CgroupTotals {
                cgroup: d.display().to_string(),
                path: mount.as_deref().and_then(|m| hierarchy_path(d, m)),
                ..CgroupTotals::default()
            })
            .collect();
        Self { proc, groups }
    }

    pub fn totals(&self) -> &[CgroupTotals] {
        &self.groups
    }

    /// The rows `rondpoint top` shows.
    pub fn views(&self) -> Vec<CgroupView> {
        self.groups
            .iter()
            .map(|g| CgroupView {
                cgroup: g.cgroup.clone(),
                processes: g.processes,
                pages_by_node: g.memory_bytes_by_node.iter().map(|b| b / 4096).collect(),
                samples: g.samples_last_epoch,
                actions_total: g.actions.clone(),
                pages_placed: g.pages_placed,
            })
            .collect()
    }

    /// Takes in one epoch.
    pub fn epoch(&mut self, r: &EpochReport<'_>) {
        if self.groups.is_empty() {
            return;
        }
        let mut of: HashMap<Pid, usize> = HashMap::new();
        for g in &mut self.groups {
            g.processes = 0;
            g.memory_bytes_by_node.clear();
            g.samples_last_epoch = 0;
            g.actions_last_epoch.clear();
            g.pages_last_epoch = 0;
        }
        for p in &r.observation.processes {
            let Some(k) = self.group_of(p.pid) else {
                continue;
            };
            of.insert(p.pid, k);
            let g = &mut self.groups[k];
            g.processes += 1;
            let memory = &mut g.memory_bytes_by_node;
            memory.resize(memory.len().max(p.resident_bytes_by_node.len()), 0);
            for (m, b) in memory.iter_mut().zip(&p.resident_bytes_by_node) {
                *m += b;
            }
            let samples = r.sampled.by_pid.get(&p.pid).copied().unwrap_or(0);
            g.samples_last_epoch += samples;
            g.samples += samples;
        }
        for (a, o) in r.actions.iter().zip(r.outcomes) {
            let Some(&k) = of.get(&a.pid()) else {
                continue;
            };
            let g = &mut self.groups[k];
            *g.actions.entry(a.technique().to_string()).or_default() += 1;
            *g.actions_last_epoch
                .entry(a.technique().to_string())
                .or_default() += 1;
            g.pages_placed += o.pages_done;
            g.pages_last_epoch += o.pages_done;
        }
    }

    /// The deepest cgroup given that holds `pid`.
    fn group_of(&self, pid: Pid) -> Option<usize> {
        let own = self.proc.cgroup(pid).ok().flatten()?;
        self.groups
            .iter()
            .enumerate()
            .filter_map(|(k, g)| {
                let path = g.path.as_deref()?;
                holds(path, &own).then_some((path.len(), k))
            })
            .max()
            .map(|(_, k)| k)
    }
}

/// `dir`'s path in the hierarchy mounted at `mount` (`/` for the mount itself).
fn hierarchy_path(dir: &Path, mount: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let rest = dir.strip_prefix(mount).ok()?;
    Some(format!("/{}", rest.display()))
}

/// Whether the cgroup at `path` is `own` or one of its ancestors.
fn holds(path: &str, own: &str) -> bool {
    path == "/" || own == path || own.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_holds_itself_and_the_cgroups_below_it_only() {
        assert!(holds("/batch", "/batch"));
        assert!(holds("/batch", "/batch/run1"));
        assert!(!holds("/batch", "/batch2"));
        assert!(!holds("/batch/run1", "/batch"));
        assert!(holds("/", "/anything"));
        assert_eq!(
            hierarchy_path(Path::new("/no/such/cg/run1"), Path::new("/no/such/cg")),
            Some("/run1".into())
        );
        assert_eq!(
            hierarchy_path(Path::new("/no/such/cg"), Path::new("/no/such/cg")),
            Some("/".into())
        );
        assert_eq!(
            hierarchy_path(Path::new("/elsewhere"), Path::new("/no/such/cg")),
            None
        );
    }
}
