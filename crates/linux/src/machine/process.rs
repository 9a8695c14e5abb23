//! What is read of each managed process: its threads, its memory per node and explicit memory
//! policies (numa_maps), and which of its mappings are THP-backed (smaps), the last two only
//! when they may have changed ([`MemoryReads`]).

use super::LinuxMachine;
use crate::procfs::{ProcRoot, ThreadSnapshot};
use crate::sys::Sys;
use crate::thp;
use rondpoint_model::{MappingPolicy, Pid, ProcessInfo, ThreadInfo, Tid};
use std::collections::{BTreeSet, HashMap, HashSet};

/// A resident size change that calls for a new read: more than this share of the size at the
/// last read...
const RSS_CHANGE_SHARE: u64 = 32;
/// ... or more than this many 4 KiB pages (4 MiB).
const RSS_CHANGE_PAGES: u64 = 1024;

/// What was last read of a process's memory (numa_maps): when, at what resident size, and
/// what it said.
#[derive(Clone, Debug, Default)]
struct MemoryRead {
    epoch: u64,
    rss_pages: Option<u64>,
    resident: Vec<u64>,
    mapping_policies: Vec<MappingPolicy>,
}

/// The memory reads of the managed processes, and which are due this epoch. numa_maps and
/// smaps each make the kernel walk the process's page tables; a process whose resident size
/// has not moved, whose pages rondpoint has not touched and whose last read is recent is
/// described from that read.
#[derive(Clone, Debug, Default)]
pub(super) struct MemoryReads {
    last: HashMap<Pid, MemoryRead>,
    /// Processes whose pages or policies rondpoint changed since their last read.
    changed: HashSet<Pid>,
    /// Processes to read this epoch, with their resident size now.
    due: HashMap<Pid, Option<u64>>,
}

impl MemoryReads {
    /// Decides which of `managed` to read this epoch (`epoch`; a read at most `every` epochs
    /// old is kept), from each one's resident size in the stat of its threads as just read
    /// (`threads_of`).
    pub(super) fn plan(
        &mut self,
        threads_of: &[(Pid, Vec<ThreadSnapshot>)],
        managed: &BTreeSet<Pid>,
        epoch: u64,
        every: u64,
    ) {
        self.last.retain(|pid, _| managed.contains(pid));
        self.due.clear();
        for &pid in managed {
            let rss = threads_of
                .iter()
                .find(|(p, _)| *p == pid)
                .and_then(|(_, threads)| threads.first())
                .and_then(|t| t.rss_pages);
            let stale = match self.last.get(&pid) {
                None => true,
                Some(r) => {
                    self.changed.contains(&pid)
                        || epoch.saturating_sub(r.epoch) >= every.max(1)
                        || moved(r.rss_pages, rss)
                }
            };
            if stale {
                self.due.insert(pid, rss);
            }
        }
    }

    /// Marks `pid`'s memory changed by rondpoint: it is read at the next observation.
    pub(super) fn changed(&mut self, pid: Pid) {
        self.changed.insert(pid);
    }

    fn is_due(&self, pid: Pid) -> bool {
        self.due.contains_key(&pid) || !self.last.contains_key(&pid)
    }

    fn record(&mut self, pid: Pid, epoch: u64, resident: &[u64], policies: &[MappingPolicy]) {
        let rss_pages = self.due.get(&pid).copied().flatten();
        self.changed.remove(&pid);
        self.last.insert(
            pid,
            MemoryRead {
                epoch,
                rss_pages,
                resident: resident.to_vec(),
                mapping_policies: policies.to_vec(),
            },
        );
    }
}

/// Whether a resident size moved enough since a read to read again (unknown sizes always do).
fn moved(then: Option<u64>, now: Option<u64>) -> bool {
    match (then, now) {
        (Some(a), Some(b)) => a.abs_diff(b) > (a / RSS_CHANGE_SHARE).max(RSS_CHANGE_PAGES),
        _ => true,
    }
}

/// The ids of a process's threads now (none when it is gone).
pub(super) fn tids_of(proc: &ProcRoot, pid: Pid) -> Vec<Tid> {
    proc.threads(pid)
        .map(|v| v.into_iter().map(|t| t.tid).collect())
        .unwrap_or_default()
}

impl<S: Sys> LinuxMachine<S> {
    /// Each managed process with its threads as read now (a process gone meanwhile is left
    /// out).
    pub(super) fn threads_of(&self) -> Vec<(Pid, Vec<ThreadSnapshot>)> {
        self.managed
            .iter()
            .filter_map(|&pid| Some((pid, self.proc.threads(pid).ok()?)))
            .collect()
    }

    /// Which mappings are THP-backed, for the processes whose memory is due a read: the full
    /// smaps only when the rollup shows any (each read makes the kernel walk the page tables).
    pub(super) fn refresh_thp(&mut self) {
        let managed = &self.managed;
        self.thp.retain(|pid, _| managed.contains(pid));
        for &pid in self.managed.iter().filter(|&&p| self.memory.is_due(p)) {
            match self.proc.thp_bytes(pid) {
                Ok(Some(b)) if b > 0 => {
                    if let Ok(Some(text)) = self.proc.smaps(pid) {
                        self.thp.insert(pid, thp::parse_smaps(&text));
                    }
                }
                _ => {
                    self.thp.remove(&pid);
                }
            }
        }
    }

    /// What the policy is told of each process, from its threads as just read (a process gone
    /// meanwhile is left out).
    pub(super) fn process_infos(
        &self,
        threads_of: Vec<(Pid, Vec<ThreadSnapshot>)>,
    ) -> Vec<ProcessInfo> {
        self.read_process_infos(threads_of)
            .into_iter()
            .map(|(info, _)| info)
            .collect()
    }

    /// [`Self::process_infos`], remembering the memory read of each process whose memory was
    /// due (for the next epochs).
    pub(super) fn observe_process_infos(
        &mut self,
        threads_of: Vec<(Pid, Vec<ThreadSnapshot>)>,
    ) -> Vec<ProcessInfo> {
        let infos = self.read_process_infos(threads_of);
        for (info, read) in &infos {
            if *read {
                let (pid, epoch) = (info.pid, self.epoch);
                self.memory.record(
                    pid,
                    epoch,
                    &info.resident_bytes_by_node,
                    &info.mapping_policies,
                );
            }
        }
        infos.into_iter().map(|(info, _)| info).collect()
    }

    /// Each process's description, and whether its memory was read now (rather than taken
    /// from the last read).
    fn read_process_infos(
        &self,
        threads_of: Vec<(Pid, Vec<ThreadSnapshot>)>,
    ) -> Vec<(ProcessInfo, bool)> {
        threads_of
            .into_iter()
            .filter_map(|(pid, threads)| self.process_info(pid, threads))
            .collect()
    }

    /// What the policy is told of one process, from its threads as just read (None when it is
    /// gone).
    fn process_info(&self, pid: Pid, threads: Vec<ThreadSnapshot>) -> Option<(ProcessInfo, bool)> {
        let comm = self.proc.comm(pid).ok().flatten()?;
        let threads = threads
            .into_iter()
            .filter_map(|t| {
                let cpu = t.cpu?;
                Some(ThreadInfo {
                    tid: t.tid,
                    cpu,
                    node: self.topology.node_of_cpu(cpu)?,
                    allowed_cpus: t.allowed_cpus,
                })
            })
            .collect();
        let (resident_bytes_by_node, mapping_policies, read) = self.memory_of(pid);
        let info = ProcessInfo {
            pid,
            comm,
            threads,
            resident_bytes_by_node,
            mapping_policies,
        };
        Some((info, read))
    }

    /// A process's resident bytes per node and explicit memory policies: read from numa_maps
    /// when due (and then whether the read succeeded), else as last read.
    fn memory_of(&self, pid: Pid) -> (Vec<u64>, Vec<MappingPolicy>, bool) {
        if !self.memory.is_due(pid) {
            if let Some(r) = self.memory.last.get(&pid) {
                return (r.resident.clone(), r.mapping_policies.clone(), false);
            }
        }
        let mut resident = vec![0u64; self.topology.len()];
        let mut mapping_policies = Vec::new();
        if let Ok(Some(maps)) = self.proc.numa_maps(pid) {
            for (k, m) in maps.iter().enumerate() {
                let page_bytes = m.page_size_kb.max(4) * 1024;
                for (node, pages) in &m.pages_by_node {
                    if let Some(i) = self.topology.index_of(*node) {
                        resident[i] += pages * page_bytes;
                    }
                }
                // numa_maps gives only starts; a mapping ends at most where the next
                // begins (addresses in between are unmapped and never sampled).
                if let Some((mode, nodes, numa_balancing)) = m.explicit_policy() {
                    mapping_policies.push(MappingPolicy {
                        start: m.start,
                        end: maps.get(k + 1).map_or(u64::MAX, |n| n.start),
                        mode,
                        nodes,
                        numa_balancing,
                    });
                }
            }
            return (resident, mapping_policies, true);
        }
        (resident, mapping_policies, false)
    }
}
