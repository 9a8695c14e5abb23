//! One rondpoint per process: a rondpoint that manages a process holds an exclusive lock on a
//! file named after it (`pid-PID.lock` in a directory every rondpoint of the machine uses,
//! `/run/rondpoint` as root), so that a second daemon selecting the same process leaves it
//! alone and says which rondpoint has it (`rondpoint_safeio::lock`: `flock(2)` locks the
//! kernel drops when their holder exits). A lock file is removed when its process is no longer
//! managed.

use rondpoint_model::Pid;
use rondpoint_safeio::lock::{Lock, try_lock};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// The locks this rondpoint holds, and the processes it found held by another.
#[derive(Debug, Default)]
pub(super) struct Locks {
    dir: Option<PathBuf>,
    held: BTreeMap<Pid, File>,
    /// Each process another rondpoint manages, with that rondpoint's pid when it wrote it.
    elsewhere: BTreeMap<Pid, Option<i32>>,
}

impl Locks {
    /// Locks in `dir` (created if needed); `None`: no locking (tests on the fake kernel).
    pub(super) fn new(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            ..Self::default()
        }
    }

    /// Keeps in `set` the processes this rondpoint holds the lock of, taking the lock of each
    /// new one, and releases the locks of processes no longer in it. A process whose lock
    /// another rondpoint holds leaves `set`; so does every process when the lock directory
    /// cannot be used (the error says why: better not to manage than to manage twice).
    pub(super) fn claim(&mut self, set: &mut BTreeSet<Pid>) -> io::Result<()> {
        let Some(dir) = self.dir.clone() else {
            return Ok(());
        };
        let gone: Vec<Pid> = self
            .held
            .keys()
            .filter(|p| !set.contains(p))
            .copied()
            .collect();
        for pid in gone {
            if let Some(file) = self.held.remove(&pid) {
                // Removed while still locked: a rondpoint that opened it before checks the
                // name and tries again.
                let _ = std::fs::remove_file(lock_path(&dir, pid));
                drop(file);
            }
        }
        self.elsewhere.retain(|p, _| set.contains(p));
        if set.iter().any(|p| !self.held.contains_key(p)) {
            std::fs::create_dir_all(&dir)?;
        }
        let mut refused = Vec::new();
        for &pid in set.iter() {
            if self.held.contains_key(&pid) {
                continue;
            }
            match try_lock(&lock_path(&dir, pid))? {
                Lock::Ours(file) => {
                    self.elsewhere.remove(&pid);
                    self.held.insert(pid, file);
                }
                Lock::Theirs(holder) => {
                    self.elsewhere.insert(pid, holder);
                    refused.push(pid);
                }
            }
        }
        for pid in refused {
            set.remove(&pid);
        }
        Ok(())
    }

    /// The processes left alone because another rondpoint manages them, with its pid.
    pub(super) fn elsewhere(&self) -> &BTreeMap<Pid, Option<i32>> {
        &self.elsewhere
    }
}

fn lock_path(dir: &Path, pid: Pid) -> PathBuf {
    dir.join(format!("pid-{}.lock", pid.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_managed_by_one_rondpoint_and_released_when_it_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = Locks::new(Some(dir.path().to_path_buf()));
        let mut second = Locks::new(Some(dir.path().to_path_buf()));
        let mut a: BTreeSet<Pid> = [Pid(10), Pid(11)].into();
        first.claim(&mut a).unwrap();
        assert_eq!(a, [Pid(10), Pid(11)].into());
        // The second sees them held, by this test's pid, and leaves them.
        let mut b: BTreeSet<Pid> = [Pid(11), Pid(12)].into();
        second.claim(&mut b).unwrap();
        assert_eq!(b, [Pid(12)].into());
        let me = Some(std::process::id() as i32);
        assert_eq!(second.elsewhere(), &BTreeMap::from([(Pid(11), me)]));
        // Process 11 leaves the first's selection: its lock goes, and the second takes it.
        let mut a: BTreeSet<Pid> = [Pid(10)].into();
        first.claim(&mut a).unwrap();
        assert!(!lock_path(dir.path(), Pid(11)).exists());
        let mut b: BTreeSet<Pid> = [Pid(11), Pid(12)].into();
        second.claim(&mut b).unwrap();
        assert_eq!(b, [Pid(11), Pid(12)].into());
        assert!(second.elsewhere().is_empty());
        // A holder that ends (its files closed) frees its processes.
        drop(first);
        let mut b: BTreeSet<Pid> = [Pid(10), Pid(11), Pid(12)].into();
        second.claim(&mut b).unwrap();
        assert_eq!(b.len(), 3);
        // Without a directory, nothing is locked.
        let mut none = Locks::new(None);
        let mut c: BTreeSet<Pid> = [Pid(12)].into();
        none.claim(&mut c).unwrap();
        assert_eq!(c.len(), 1);
    }
}
