//! The managed set: the processes a selection names (rescanned every epoch) or the program
//! rondpoint launches, and their descendants.

use super::{LinuxMachine, LiveError};
use crate::sys::{MemPolicyMode, Sys};
use crate::{capabilities, launch};
use rondpoint_model::{MemPolicy, Pid};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

/// Which running processes a daemon manages; rescanned every epoch, so that processes started
/// later under a matching name or in a matching cgroup are picked up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub pids: Vec<Pid>,
    /// Command names (exact, or globs with `*` and `?`).
    pub comm: Vec<String>,
    /// cgroup v2 directories (their `cgroup.procs` lists the processes).
    pub cgroups: Vec<PathBuf>,
}

impl Selection {
    /// Whether nothing can ever be selected again once the listed pids are gone.
    pub(crate) fn pids_only(&self) -> bool {
        self.comm.is_empty() && self.cgroups.is_empty()
    }
}

/// rondpoint's own pid: it never manages itself.
fn own_pid() -> Pid {
    Pid(std::process::id() as i32)
}

impl<S: Sys> LinuxMachine<S> {
    /// The roots a selection names now.
    pub(super) fn select(&self, sel: &Selection) -> Vec<Pid> {
        let mut roots: Vec<Pid> = sel.pids.clone();
        for pattern in &sel.comm {
            if let Ok(found) = self.proc.find_by_comm(pattern) {
                roots.extend(found);
            }
        }
        for dir in &sel.cgroups {
            if let Ok(found) = self.sysfs.cgroup_procs(dir) {
                roots.extend(found);
            }
        }
        roots.sort_unstable();
        roots.dedup();
        roots.retain(|&p| p != own_pid());
        roots
    }

    /// Re-reads which processes are managed: the roots still alive and their descendants.
    pub(super) fn refresh_managed(&mut self) {
        if let Some(sel) = &self.selection {
            self.roots = self.select(sel);
        }
        let mut set = BTreeSet::new();
        for &root in &self.roots {
            if self.proc.stat(root).ok().flatten().is_none() {
                continue;
            }
            set.insert(root);
            if let Ok(d) = self.proc.descendants(root) {
                set.extend(d);
            }
        }
        set.remove(&own_pid());
        match self.locks.claim(&mut set) {
            Ok(()) => self.stats.lock_error = None,
            Err(e) => {
                // Better not to manage than to manage what another rondpoint may.
                self.stats.lock_error = Some(e.to_string());
                set.clear();
            }
        }
        self.stats.managed_elsewhere = self
            .locks
            .elsewhere()
            .iter()
            .map(|(p, holder)| (p.0, *holder))
            .collect();
        self.managed = set;
    }

    /// Launches the program with `policy` set before exec, and says what was set instead of
    /// it when this kernel cannot set it as asked.
    pub(super) fn launch_now(
        &mut self,
        policy: Option<&MemPolicy>,
    ) -> Result<Option<String>, LiveError> {
        let Some(argv) = self.launch.take() else {
            return Ok(None);
        };
        let launch = policy.and_then(|p| {
            launch::launch_policy(p, capabilities::interleave_weights(&self.sysfs).as_ref())
        });
        let substituted = launch.as_ref().and_then(|l| l.substituted.clone());
        let policy = launch
            .filter(|l| l.mode != MemPolicyMode::Default)
            .map(|l| (l.mode, l.nodes));
        let program = argv
            .first()
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default();
        let pid = self
            .sys
            .spawn(&argv, policy)
            .map_err(|errno| LiveError::Spawn { program, errno })?;
        self.launched = Some(pid);
        self.roots = vec![pid];
        self.managed = BTreeSet::from([pid]);
        self.start = Instant::now();
        self.epoch_start = self.start;
        self.attach_sampler();
        self.attach_counters();
        Ok(substituted)
    }
}
