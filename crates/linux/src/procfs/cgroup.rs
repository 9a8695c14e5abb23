//! Which cgroup v2 a process is in (`/proc/PID/cgroup`, cgroup-v2.rst "Processes") and where
//! the hierarchy is mounted (`/proc/self/mountinfo`, proc(5)): what a daemon managing cgroups
//! needs to count each one's processes.

use super::{ProcError, ProcRoot, read_system_file, read_task_file};
use rondpoint_model::Pid;
use std::path::PathBuf;

impl ProcRoot {
    /// The process's cgroup v2 path, from `/proc/PID/cgroup`'s `0::PATH` line (relative to
    /// the cgroup2 hierarchy's root, as the kernel prints it); `None` for a process that is
    /// gone or in no cgroup v2 hierarchy.
    pub fn cgroup(&self, pid: Pid) -> Result<Option<String>, ProcError> {
        let path = self.pid_file(pid, "cgroup");
        let text = read_task_file(&path, &self.pid_file(pid, "stat"))?;
        Ok(text.and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("0::"))
                .map(|p| p.trim_end().to_string())
        }))
    }

    /// Where the cgroup v2 hierarchy is mounted, from `/proc/self/mountinfo` (the mount point,
    /// the fifth field, of the first `cgroup2` file system); `None` without one.
    pub fn cgroup2_mount(&self) -> Result<Option<PathBuf>, ProcError> {
        let path = self.root.join("self/mountinfo");
        let Some(text) = read_system_file(&path, false)? else {
            return Ok(None);
        };
        Ok(text.lines().find_map(|l| {
            let (before, after) = l.split_once(" - ")?;
            let fstype = after.split_whitespace().next()?;
            (fstype == "cgroup2").then(|| before.split_whitespace().nth(4).map(PathBuf::from))?
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_s_cgroup_and_the_hierarchy_s_mount_are_read() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap_or(dir.path()))
                .unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
        };
        // A hybrid machine: v1 controllers, and v2 under /sys/fs/cgroup/unified.
        write(
            "42/stat",
            "42 (sleep) S 1 42 42 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0",
        );
        write("42/cgroup", "4:memory:/x\n0::/batch/run1\n");
        write(
            "self/mountinfo",
            "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
             35 25 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
        );
        let proc = ProcRoot::new(dir.path());
        assert_eq!(
            proc.cgroup(Pid(42)).unwrap_or_else(|e| panic!("{e}")),
            Some("/batch/run1".into())
        );
        assert_eq!(proc.cgroup(Pid(43)).unwrap_or_else(|e| panic!("{e}")), None);
        assert_eq!(
            proc.cgroup2_mount().unwrap_or_else(|e| panic!("{e}")),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
    }
}
