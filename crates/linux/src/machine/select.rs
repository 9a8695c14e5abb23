//! The managed set: the processes a selection names (rescanned every epoch) or the program
//! rondpoint launches, and their descendants.

use super::{LinuxMachine, LiveError};
use crate::sys::{MemPolicyMode, SpawnSetup, Sys};
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

/// What became of the policy's allocation policy for the program launched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Launched {
    Applied,
    /// Set otherwise, and why.
    Substituted(String),
    /// Not set: the command line's is (why).
    Overridden(String),
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

    /// Launches the program with `policy` (the policy's) or the command line's allocation
    /// policy set before exec, and its CPUs if the command line names them; says what was
    /// set instead of the policy's, and why.
    pub(super) fn launch_now(&mut self, policy: Option<&MemPolicy>) -> Result<Launched, LiveError> {
        let Some(argv) = self.launch.take() else {
            return Ok(Launched::Applied);
        };
        let asked = policy.and_then(|p| {
            launch::launch_policy(p, capabilities::interleave_weights(&self.sysfs).as_ref())
        });
        // The command line's allocation policy (numactl's flags) is the user's: a policy's
        // is not set over it.
        let (policy, launched) = match (&self.launch_setup.policy, asked) {
            (Some(user), Some(_)) => (
                Some(user.clone()),
                Launched::Overridden(
                    "the program's allocation policy is the one the command line sets".into(),
                ),
            ),
            (Some(user), None) => (Some(user.clone()), Launched::Applied),
            (None, Some(l)) => {
                let note = l
                    .substituted
                    .clone()
                    .map_or(Launched::Applied, Launched::Substituted);
                let policy = (l.mode != MemPolicyMode::Default).then_some((l.mode, l.nodes));
                (policy, note)
            }
            (None, None) => (None, Launched::Applied),
        };
        let setup = SpawnSetup {
            cgroup: self.launch_setup.cgroup.clone(),
            policy,
            cpus: self.launch_setup.cpus.clone(),
        };
        let program = argv
            .first()
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default();
        let pid = self
            .sys
            .spawn(&argv, &setup)
            .map_err(|errno| LiveError::Spawn { program, errno })?;
        self.launched = Some(pid);
        self.roots = vec![pid];
        self.managed = BTreeSet::from([pid]);
        self.start = Instant::now();
        self.epoch_start = self.start;
        self.attach_sampler();
        self.attach_counters();
        Ok(launched)
    }
}
