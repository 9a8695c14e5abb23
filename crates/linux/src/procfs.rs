//! Reading procfs through a root prefix: processes, threads, their memory per node, the
//! kernel's NUMA counters and its per-node watermarks (`zoneinfo`).
//!
//! Every path is relative to a root that plays the role of `/proc`, so that tests read fixture
//! trees (`fixtures/procfs`) with the same code that reads a live machine.
//!
//! Processes and threads come and go between any two reads. On a per-process file, "gone" is
//! normal and gives `Ok(None)` (or skips the thread), never an error:
//! - `ENOENT` (the directory vanished) and `ESRCH` (the task exited after the open; also what
//!   `smaps_rollup` returns for zombies and kernel threads, which have no memory map);
//! - an empty read (a zombie's or a kernel thread's `numa_maps` and `smaps`);
//! - `EACCES` when the task turns out to be dead (its `stat` is gone or says `Z`/`X`). `EACCES`
//!   on a live task (another user's `numa_maps` without `CAP_SYS_PTRACE`) is a real error.
//!
//! Malformed content is an error naming the file. Per-process files are decoded lossily: a
//! command name or a mapped file name is bytes, not necessarily UTF-8.

// Parses bytes from outside (files, the kernel): no indexing that could panic on them.
#![deny(clippy::indexing_slicing)]

mod cgroup;
mod zoneinfo;

pub use zoneinfo::NodeWatermarks;

use rondpoint_model::bounds::Invalid;
use rondpoint_model::{CpuId, NodeId, Pid, PolicyMode, Tid, cpulist};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use thiserror::Error;

/// `ESRCH` ("no such process"), 3 on every Linux architecture (`io::ErrorKind` has no kind).
const ESRCH: i32 = 3;

/// What went wrong reading a procfs tree.
#[derive(Debug, Error)]
pub enum ProcError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {what}", path.display())]
    Malformed { path: PathBuf, what: String },
}

/// One task's `/proc/PID/stat` or `/proc/PID/task/TID/stat` (man 5 proc_pid_stat).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskStat {
    /// Field 1: the task id (the process id for `/proc/PID/stat`).
    pub pid: Pid,
    /// Field 2 without its parentheses (at most 15 bytes, may contain spaces and parentheses).
    pub comm: String,
    /// Field 3: `R`, `S`, `D`, `Z`, `T`, `t`, `X`, `I`, ...
    pub state: char,
    /// Field 4: the parent's process id (0 for init and kthreadd).
    pub ppid: Pid,
    /// Field 9: the kernel's `PF_*` flags.
    pub flags: u64,
    /// Field 14, in clock ticks (`sysconf(_SC_CLK_TCK)`, 100 on every mainstream kernel). For a
    /// process, the whole thread group's time, exited threads included.
    pub utime_ticks: u64,
    /// Field 15, in clock ticks.
    pub stime_ticks: u64,
    /// Field 20.
    pub num_threads: u64,
    /// Field 24: resident set size in pages, the whole address space's (the kernel's counters,
    /// read without walking page tables); absent on a line too short to have it.
    pub rss_pages: Option<u64>,
    /// Field 39: the CPU the task last ran on (absent only on kernels older than 2.5.19).
    pub processor: Option<CpuId>,
}

impl TaskStat {
    /// `PF_KTHREAD` (include/linux/sched.h): a kernel thread, which has no memory of its own.
    pub const PF_KTHREAD: u64 = 0x0020_0000;

    /// Whether the task is a kernel thread.
    pub fn is_kernel_thread(&self) -> bool {
        self.flags & Self::PF_KTHREAD != 0
    }
}

/// One thread of a process, as [`ProcRoot::threads`] found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSnapshot {
    pub tid: Tid,
    /// The CPU it last ran on.
    pub cpu: Option<CpuId>,
    pub state: char,
    /// utime + stime, in clock ticks.
    pub cpu_ticks: u64,
    /// Its process's resident set size in pages (every thread shares it).
    pub rss_pages: Option<u64>,
    /// `Cpus_allowed_list` of its `status`.
    pub allowed_cpus: Vec<CpuId>,
}

/// One line of `/proc/PID/numa_maps`: a mapping and where its resident pages are.
///
/// Page counts are in units of `page_size_kb` (the kernel's `kernelpagesize_kB`) in both cases
/// that matter: a hugetlbfs mapping counts huge pages (`kernelpagesize_kB=2048` or `1048576`),
/// while transparent huge pages count as base pages (`kernelpagesize_kB=4`, and a 2 MiB THP
/// adds 512 to its node's count; checked on kernel 6.18). So [`NumaMapping::bytes`] is right
/// for both, and THP use shows only in `smaps` ([`ProcRoot::thp_bytes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumaMapping {
    /// Start address of the mapping.
    pub start: u64,
    /// The memory policy exactly as printed: `default`, `local`, `prefer:1`, `bind:0-1`,
    /// `interleave:0-3`, `bind=static:2-3`, `weighted interleave:0-3`, `prefer (many):1-2`.
    pub policy: String,
    /// Resident pages per node (`N<n>=`), in node order; empty when nothing is resident.
    pub pages_by_node: Vec<(NodeId, u64)>,
    /// `kernelpagesize_kB`; 0 when the line has none (no resident pages, or a kernel older than
    /// 3.2).
    pub page_size_kb: u64,
    /// The mapping holds anonymous pages (`anon=`): private anonymous memory, heap, stack, or
    /// copy-on-write pages of a private file mapping.
    pub anon: bool,
    /// The `anon=` count (0 when absent).
    pub anon_pages: u64,
    /// A hugetlbfs mapping (`huge`).
    pub huge: bool,
    /// The mapped file (`file=`), with the kernel's octal escapes (`\040` for a space) undone.
    pub file: Option<String>,
}

impl NumaMapping {
    /// The mapping's explicit memory policy as (mode, nodes, MPOL_F_NUMA_BALANCING), or `None`
    /// for `default` and for a policy string this parser does not know (a newer kernel's mode),
    /// which is then treated like the default.
    pub fn explicit_policy(&self) -> Option<(PolicyMode, Vec<NodeId>, bool)> {
        parse_policy(&self.policy)
    }

    /// Resident pages on all nodes.
    pub fn pages(&self) -> u64 {
        let counts = self.pages_by_node.iter().map(|&(_, n)| n);
        counts.fold(0, u64::saturating_add)
    }

    /// Resident bytes on all nodes.
    pub fn bytes(&self) -> u64 {
        let kb = self.pages().saturating_mul(self.page_size_kb);
        kb.saturating_mul(1024)
    }
}

/// The NUMA counters of `/proc/vmstat` (cumulative since boot). Each is `None` when this kernel
/// does not print it: `numa_pte_updates`, `numa_hint_faults*`, `numa_pages_migrated` and
/// `pgmigrate_*` since 3.8 (and only with CONFIG_NUMA_BALANCING / CONFIG_MIGRATION),
/// `thp_migration_success` since 5.8; all `numa_*` need CONFIG_NUMA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NumaVmstat {
    pub numa_hit: Option<u64>,
    pub numa_miss: Option<u64>,
    pub numa_foreign: Option<u64>,
    pub numa_interleave: Option<u64>,
    pub numa_local: Option<u64>,
    pub numa_other: Option<u64>,
    pub numa_pte_updates: Option<u64>,
    pub numa_hint_faults: Option<u64>,
    pub numa_hint_faults_local: Option<u64>,
    pub numa_pages_migrated: Option<u64>,
    pub pgmigrate_success: Option<u64>,
    pub pgmigrate_fail: Option<u64>,
    pub thp_migration_success: Option<u64>,
}

/// A procfs tree rooted somewhere (normally `/proc`).
#[derive(Clone, Debug)]
pub struct ProcRoot {
    root: PathBuf,
}

impl Default for ProcRoot {
    fn default() -> Self {
        Self::new("/proc")
    }
}

impl ProcRoot {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn pid_file(&self, pid: Pid, name: &str) -> PathBuf {
        self.root.join(pid.0.to_string()).join(name)
    }

    fn task_file(&self, pid: Pid, tid: Tid, name: &str) -> PathBuf {
        self.pid_file(pid, "task")
            .join(tid.0.to_string())
            .join(name)
    }

    /// The numeric entries of the root (every process; threads are hidden there), sorted. A
    /// root that does not exist is an error.
    pub fn pids(&self) -> Result<Vec<Pid>, ProcError> {
        let mut pids = numeric_entries(&self.root, false)?.unwrap_or_default();
        pids.sort_unstable();
        Ok(pids.into_iter().map(Pid).collect())
    }

    /// `/proc/PID/comm` without its newline (a name may itself end in spaces, kept).
    pub fn comm(&self, pid: Pid) -> Result<Option<String>, ProcError> {
        let path = self.pid_file(pid, "comm");
        let text = read_task_file(&path, &self.pid_file(pid, "stat"))?;
        Ok(text.map(|t| t.strip_suffix('\n').unwrap_or(&t).to_string()))
    }

    /// `/proc/PID/stat`.
    pub fn stat(&self, pid: Pid) -> Result<Option<TaskStat>, ProcError> {
        read_stat(&self.pid_file(pid, "stat"))
    }

    /// `/proc/PID/task/TID/stat`.
    pub fn task_stat(&self, pid: Pid, tid: Tid) -> Result<Option<TaskStat>, ProcError> {
        read_stat(&self.task_file(pid, tid, "stat"))
    }

    /// Every thread of `/proc/PID/task`, sorted by id; threads that exit while being read are
    /// left out, and a process that is gone has none.
    pub fn threads(&self, pid: Pid) -> Result<Vec<ThreadSnapshot>, ProcError> {
        let mut tids = numeric_entries(&self.pid_file(pid, "task"), true)?.unwrap_or_default();
        tids.sort_unstable();
        let mut out = Vec::with_capacity(tids.len());
        for tid in tids.into_iter().map(Tid) {
            let Some(stat) = self.task_stat(pid, tid)? else {
                continue;
            };
            let Some(allowed_cpus) = self.allowed_cpus(pid, tid)? else {
                continue;
            };
            out.push(ThreadSnapshot {
                tid,
                cpu: stat.processor,
                state: stat.state,
                cpu_ticks: stat.utime_ticks.saturating_add(stat.stime_ticks),
                rss_pages: stat.rss_pages,
                allowed_cpus,
            });
        }
        Ok(out)
    }

    /// `Cpus_allowed_list` of `/proc/PID/task/TID/status` (the main thread's is the process's).
    pub fn allowed_cpus(&self, pid: Pid, tid: Tid) -> Result<Option<Vec<CpuId>>, ProcError> {
        let path = self.task_file(pid, tid, "status");
        let Some(text) = read_task_file(&path, &self.task_file(pid, tid, "stat"))? else {
            return Ok(None);
        };
        let Some(list) = text
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        else {
            return Err(malformed(&path, "no Cpus_allowed_list line"));
        };
        let cpus = cpulist::parse(list)
            .map_err(|e| malformed(&path, format!("Cpus_allowed_list: {e}")))?;
        Ok(Some(cpus.into_iter().map(CpuId).collect()))
    }

    /// `/proc/PID/numa_maps`, one entry per mapping; `None` for a process that is gone, a
    /// zombie or a kernel thread (no memory map).
    pub fn numa_maps(&self, pid: Pid) -> Result<Option<Vec<NumaMapping>>, ProcError> {
        let path = self.pid_file(pid, "numa_maps");
        let Some(text) = read_task_file(&path, &self.pid_file(pid, "stat"))? else {
            return Ok(None);
        };
        let lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let parsed = lines.map(|(i, line)| {
            parse_numa_line(line)
                .map_err(|what| malformed(&path, format!("line {}: {what}", i + 1)))
        });
        parsed.collect::<Result<_, _>>().map(Some)
    }

    /// Bytes of anonymous memory backed by transparent huge pages: `AnonHugePages` of
    /// `/proc/PID/smaps_rollup` (4.14+), else the sum over `/proc/PID/smaps`.
    pub fn thp_bytes(&self, pid: Pid) -> Result<Option<u64>, ProcError> {
        let stat = self.pid_file(pid, "stat");
        let rollup = self.pid_file(pid, "smaps_rollup");
        if let Some(text) = read_task_file(&rollup, &stat)? {
            return sum_anon_huge(&rollup, &text).map(Some);
        }
        match self.smaps(pid)? {
            Some(text) => sum_anon_huge(&self.pid_file(pid, "smaps"), &text).map(Some),
            None => Ok(None),
        }
    }

    /// `/proc/PID/smaps` as text; `None` for a process that is gone, a zombie or a kernel
    /// thread (no memory map).
    pub fn smaps(&self, pid: Pid) -> Result<Option<String>, ProcError> {
        read_task_file(&self.pid_file(pid, "smaps"), &self.pid_file(pid, "stat"))
    }

    /// The address ranges of `/proc/PID/maps` (start, end), in address order; `None` for a
    /// process that is gone, a zombie or a kernel thread. Lines it cannot read are skipped.
    pub fn maps(&self, pid: Pid) -> Result<Option<Vec<(u64, u64)>>, ProcError> {
        let text = read_task_file(&self.pid_file(pid, "maps"), &self.pid_file(pid, "stat"))?;
        Ok(text.map(|t| {
            t.lines()
                .filter_map(|l| {
                    let (a, b) = l.split_whitespace().next()?.split_once('-')?;
                    Some((
                        u64::from_str_radix(a, 16).ok()?,
                        u64::from_str_radix(b, 16).ok()?,
                    ))
                })
                .collect()
        }))
    }

    /// Children, grandchildren, ... of `pid` (not `pid` itself), sorted: through the kernel's
    /// `task/TID/children` files where it has them (CONFIG_PROC_CHILDREN), otherwise through the
    /// ppid of every process's `stat`. A child created by any thread of `pid` has `pid` as its
    /// ppid (the parent's thread-group id).
    pub fn descendants(&self, pid: Pid) -> Result<Vec<Pid>, ProcError> {
        // The children files cost a few reads instead of one per process on the machine. When
        // the root task has none (the kernel does not provide them, or the process is gone),
        // every process's ppid is scanned.
        if self.task_file(pid, Tid(pid.0), "children").is_file() {
            return Ok(walk_descendants(pid, |p| self.children_by_files(p)));
        }
        let mut children: BTreeMap<Pid, Vec<Pid>> = BTreeMap::new();
        for p in self.pids()? {
            if let Some(stat) = self.stat(p)? {
                children.entry(stat.ppid).or_default().push(p);
            }
        }
        Ok(walk_descendants(pid, |p| {
            children.get(&p).cloned().unwrap_or_default()
        }))
    }

    /// The children of `pid` that its tasks' `/proc/PID/task/TID/children` files list; none
    /// when it has exited meanwhile.
    fn children_by_files(&self, pid: Pid) -> Vec<Pid> {
        let Ok(Some(tids)) = numeric_entries(&self.pid_file(pid, "task"), true) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for tid in tids.into_iter().map(Tid) {
            let path = self.task_file(pid, tid, "children");
            let Ok(Some(text)) = read_task_file(&path, &self.task_file(pid, tid, "stat")) else {
                continue;
            };
            let pids = text
                .split_whitespace()
                .filter_map(|w| w.parse::<i32>().ok());
            out.extend(pids.map(Pid));
        }
        out
    }

    /// Processes whose comm matches `pattern`: an exact name, or a glob with `*` (any run of
    /// characters) and `?` (one character). Sorted.
    pub fn find_by_comm(&self, pattern: &str) -> Result<Vec<Pid>, ProcError> {
        let mut out = Vec::new();
        for pid in self.pids()? {
            if let Some(comm) = self.comm(pid)? {
                if glob_match(pattern, &comm) {
                    out.push(pid);
                }
            }
        }
        Ok(out)
    }

    /// The NUMA counters of `/proc/vmstat` (which must exist).
    pub fn vmstat_numa(&self) -> Result<NumaVmstat, ProcError> {
        let path = self.root.join("vmstat");
        let text = read_system_file(&path, true)?.unwrap_or_default();
        let mut v = NumaVmstat::default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let Some(name) = words.next() else { continue };
            let slot = match name {
                "numa_hit" => &mut v.numa_hit,
                "numa_miss" => &mut v.numa_miss,
                "numa_foreign" => &mut v.numa_foreign,
                "numa_interleave" => &mut v.numa_interleave,
                "numa_local" => &mut v.numa_local,
                "numa_other" => &mut v.numa_other,
                "numa_pte_updates" => &mut v.numa_pte_updates,
                "numa_hint_faults" => &mut v.numa_hint_faults,
                "numa_hint_faults_local" => &mut v.numa_hint_faults_local,
                "numa_pages_migrated" => &mut v.numa_pages_migrated,
                "pgmigrate_success" => &mut v.pgmigrate_success,
                "pgmigrate_fail" => &mut v.pgmigrate_fail,
                "thp_migration_success" => &mut v.thp_migration_success,
                _ => continue,
            };
            let value = words.next().unwrap_or("");
            *slot = Some(
                value
                    .parse()
                    .map_err(|_| malformed(&path, format!("{name}: '{value}' is not a number")))?,
            );
        }
        Ok(v)
    }

    /// `/proc/sys/kernel/numa_balancing`: 0 off, 1 NUMA balancing, 2 memory tiering (6.0+),
    /// 3 both; `None` when the kernel has no CONFIG_NUMA_BALANCING.
    pub fn numa_balancing(&self) -> Result<Option<u32>, ProcError> {
        let path = self.root.join("sys/kernel/numa_balancing");
        let Some(text) = read_system_file(&path, false)? else {
            return Ok(None);
        };
        let t = text.trim();
        t.parse()
            .map(Some)
            .map_err(|_| malformed(&path, format!("'{t}' is not a number")))
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters (even none) and
/// `?` exactly one; every other character matches itself. Written here rather than taken from
/// a crate (glob, wildmatch): it is twenty lines, and those crates bring path semantics
/// (`/`, `**`, character classes) that a command name does not have.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was (pattern index after it) and the text index it has swallowed to.
    let mut star: Option<(usize, usize)> = None;
    while let Some(&tc) = t.get(ti) {
        let pc = p.get(pi).copied();
        if pc == Some('?') || pc == Some(tc) {
            pi += 1;
            ti += 1;
        } else if pc == Some('*') {
            star = Some((pi + 1, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            // Let the last `*` swallow one more character and retry from there.
            star = Some((sp, st + 1));
            pi = sp;
            ti = st + 1;
        } else {
            return false;
        }
    }
    p.iter().skip(pi).all(|&c| c == '*')
}

/// Every process reachable from `pid` through `children` (not `pid` itself), sorted.
fn walk_descendants(pid: Pid, mut children: impl FnMut(Pid) -> Vec<Pid>) -> Vec<Pid> {
    let mut found = BTreeSet::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for c in children(p) {
            if c != pid && found.insert(c) {
                todo.push(c);
            }
        }
    }
    found.into_iter().collect()
}

fn malformed(path: &Path, what: impl Into<String>) -> ProcError {
    ProcError::Malformed {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

/// The task has exited: the error says so directly.
fn is_gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(ESRCH)
}

/// Whether the task whose `stat` is at `stat_path` is gone or a zombie.
fn is_dead(stat_path: &Path) -> bool {
    match rondpoint_safeio::read_system(stat_path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let state = text
                .rfind(')')
                .and_then(|i| text[i + 1..].split_whitespace().next());
            bytes.is_empty() || matches!(state, Some("Z" | "X" | "x"))
        }
        Err(e) => is_gone(&e),
    }
}

/// Reads a per-task file; `Ok(None)` when its task is gone (see the module documentation).
/// `stat_path` is the owning task's `stat`, consulted after `EACCES`.
fn read_task_file(path: &Path, stat_path: &Path) -> Result<Option<String>, ProcError> {
    match rondpoint_safeio::read_system(path) {
        Ok(bytes) if bytes.is_empty() => Ok(None),
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if is_gone(&e) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied && is_dead(stat_path) => Ok(None),
        Err(source) => Err(ProcError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Reads a system-wide file; an absent one gives `Ok(None)` unless it is `required`.
fn read_system_file(path: &Path, required: bool) -> Result<Option<String>, ProcError> {
    match rondpoint_safeio::read_system(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| malformed(path, "not UTF-8 text")),
        Err(e) if !required && e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ProcError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Positive numeric entry names of a directory; `None` when the directory is gone and that is
/// `normal` (a task directory), an error otherwise.
fn numeric_entries(dir: &Path, normal: bool) -> Result<Option<Vec<i32>>, ProcError> {
    let read_err = |source| ProcError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if normal && is_gone(&e) => return Ok(None),
        Err(e) => return Err(read_err(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) if normal && is_gone(&e) => return Ok(None),
            Err(e) => return Err(read_err(e)),
        };
        let name = entry.file_name();
        out.extend(
            name.to_str()
                .and_then(|s| s.parse::<i32>().ok())
                .filter(|&n| n > 0),
        );
    }
    Ok(Some(out))
}

fn read_stat(path: &Path) -> Result<Option<TaskStat>, ProcError> {
    let Some(text) = read_task_file(path, path)? else {
        return Ok(None);
    };
    parse_stat(&text)
        .map(Some)
        .map_err(|what| malformed(path, what.0))
}

/// Parses a stat line. The comm (field 2) is in parentheses and may itself contain spaces and
/// parentheses, so it runs from the first `(` to the *last* `)` (man 5 proc_pid_stat).
fn parse_stat(text: &str) -> Result<TaskStat, Invalid> {
    let (open, close) = match (text.find('('), text.rfind(')')) {
        (Some(open), Some(close)) if open < close => (open, close),
        _ => return Err("no '(comm)' field".into()),
    };
    let pid = text[..open].trim();
    let pid: i32 = pid
        .parse()
        .map_err(|_| Invalid(format!("field 1 (pid): '{pid}' is not a number")))?;
    let comm = text[open + 1..close].to_string();
    // rest[i] is field i + 3.
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    if rest.len() < 18 {
        return Err(Invalid(format!(
            "{} fields, expected at least 20",
            rest.len() + 2
        )));
    }
    let field3 = rest.first().copied().unwrap_or("");
    let mut state = field3.chars();
    let (Some(s), None) = (state.next(), state.next()) else {
        return Err(Invalid(format!(
            "field 3 (state): '{field3}' is not one letter"
        )));
    };
    Ok(TaskStat {
        pid: Pid(pid),
        comm,
        state: s,
        ppid: Pid(stat_field(&rest, 4, "ppid")?),
        flags: stat_field(&rest, 9, "flags")?,
        utime_ticks: stat_field(&rest, 14, "utime")?,
        stime_ticks: stat_field(&rest, 15, "stime")?,
        num_threads: stat_field(&rest, 20, "num_threads")?,
        rss_pages: if rest.len() >= 22 {
            Some(stat_field(&rest, 24, "rss")?)
        } else {
            None
        },
        processor: if rest.len() >= 37 {
            Some(CpuId(stat_field(&rest, 39, "processor")?))
        } else {
            None
        },
    })
}

/// Field `n` (1-based, as in man proc) of a stat line, from the fields after the comm.
fn stat_field<T: FromStr>(rest: &[&str], n: usize, name: &str) -> Result<T, Invalid> {
    let s = rest.get(n - 3).copied().unwrap_or("");
    s.parse()
        .map_err(|_| Invalid(format!("field {n} ({name}): '{s}' is not a number")))
}

/// Policy names that contain a space (`mpol_to_str`'s `policy_modes`), so a line cannot simply
/// be split on whitespace.
const SPACED_POLICIES: [&str; 2] = ["weighted interleave", "prefer (many)"];

/// Parses `mpol_to_str` output: `mode[=flags][:nodes]`, flags being `static`, `relative` and
/// `balancing` joined by `|`.
fn parse_policy(text: &str) -> Option<(PolicyMode, Vec<NodeId>, bool)> {
    let (head, nodes) = text.split_once(':').unwrap_or((text, ""));
    let (mode, flags) = head.split_once('=').unwrap_or((head, ""));
    let mode = match mode {
        "prefer" => PolicyMode::Prefer,
        "bind" => PolicyMode::Bind,
        "interleave" => PolicyMode::Interleave,
        "weighted interleave" => PolicyMode::WeightedInterleave,
        "local" => PolicyMode::Local,
        "prefer (many)" => PolicyMode::PreferMany,
        _ => return None, // "default", or a mode newer than this parser
    };
    let nodes = if nodes.is_empty() {
        Vec::new()
    } else {
        let list = cpulist::parse(nodes).ok()?;
        list.into_iter()
            .filter_map(|n| u16::try_from(n).ok().map(NodeId))
            .collect()
    };
    Some((mode, nodes, flags.split('|').any(|f| f == "balancing")))
}

fn parse_numa_line(line: &str) -> Result<NumaMapping, Invalid> {
    let line = line.trim();
    let (addr, rest) = line.split_once(' ').unwrap_or((line, ""));
    let start = u64::from_str_radix(addr, 16)
        .map_err(|_| Invalid(format!("'{addr}' is not a hex address")))?;
    let rest = rest.trim_start();
    // The policy is one word, or a spaced name followed by its flags and nodes (`:0-3`).
    let skip = SPACED_POLICIES
        .iter()
        .find(|p| rest.starts_with(*p))
        .map_or(0, |p| p.len());
    let end = rest[skip..].find(' ').map_or(rest.len(), |i| skip + i);
    let (policy, attrs) = rest.split_at(end);
    if policy.is_empty() {
        return Err("no memory policy".into());
    }
    let mut m = NumaMapping {
        start,
        policy: policy.to_string(),
        ..NumaMapping::default()
    };
    for word in attrs.split_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            m.huge |= word == "huge"; // others: heap, stack, stack:TID (before 4.5)
            continue;
        };
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| Invalid(format!("{key}: '{value}' is not a number")))
        };
        match key {
            "file" => m.file = Some(unescape(value)),
            "anon" => {
                m.anon_pages = number()?;
                m.anon = m.anon_pages > 0;
            }
            "kernelpagesize_kB" => m.page_size_kb = number()?,
            _ => {
                if let Some(node) = key.strip_prefix('N') {
                    let node: u16 = node
                        .parse()
                        .map_err(|_| Invalid(format!("'{key}' is not a node (N<number>)")))?;
                    m.pages_by_node.push((NodeId(node), number()?));
                }
                // dirty=, mapped=, mapmax=, swapcache=, active=, writeback=: not needed.
            }
        }
    }
    Ok(m)
}

/// Undoes the kernel's `\ooo` octal escapes in a path (`mangle_path` escapes space, tab,
/// newline and `=` in `numa_maps`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let octal = b
            .get(i + 1..)
            .and_then(<[u8]>::first_chunk::<3>)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)) && d[0] <= b'3');
        match (c, octal) {
            (b'\\', Some(&[a, b1, c1])) => {
                out.push((a - b'0') * 64 + (b1 - b'0') * 8 + (c1 - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sum of the `AnonHugePages:   N kB` lines of an smaps or smaps_rollup text, in bytes. A file
/// without such a line (kernel without THP accounting) gives 0.
fn sum_anon_huge(path: &Path, text: &str) -> Result<u64, ProcError> {
    let mut kb = 0u64;
    for line in text.lines() {
        let Some(value) = line.strip_prefix("AnonHugePages:") else {
            continue;
        };
        let value = value.trim();
        let n = value
            .strip_suffix("kB")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| malformed(path, format!("AnonHugePages: '{value}' is not 'N kB'")))?;
        kb = kb.saturating_add(n);
    }
    Ok(kb.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_threads_are_told_by_their_flags() {
        // kthreadd and a user process, as a 6.12 kernel prints them (fields past 20 cut).
        let kthreadd = parse_stat("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(kthreadd.is_kernel_thread());
        let user = parse_stat("77 (sleep) S 1 77 77 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!user.is_kernel_thread());
    }

    #[test]
    fn policy_strings_with_flags() {
        let n = |v: &[u16]| v.iter().map(|&x| NodeId(x)).collect::<Vec<_>>();
        assert_eq!(parse_policy("default"), None);
        assert_eq!(
            parse_policy("bind=balancing:1,3"),
            Some((PolicyMode::Bind, n(&[1, 3]), true))
        );
        assert_eq!(
            parse_policy("bind=static|balancing:0-2"),
            Some((PolicyMode::Bind, n(&[0, 1, 2]), true))
        );
        assert_eq!(
            parse_policy("prefer (many)=relative:2"),
            Some((PolicyMode::PreferMany, n(&[2]), false))
        );
        assert_eq!(
            parse_policy("local"),
            Some((PolicyMode::Local, vec![], false))
        );
        assert_eq!(parse_policy("interleave:0-x"), None);
        assert_eq!(parse_policy("tiered:0-3"), None);
    }
}
