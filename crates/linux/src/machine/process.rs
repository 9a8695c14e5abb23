//! What is read of each managed process: its threads, its memory per node and explicit memory
//! policies (numa_maps), and which of its mappings are THP-backed (smaps).

use super::LinuxMachine;
use crate::procfs::{ProcRoot, ThreadSnapshot};
use crate::sys::Sys;
use crate::thp;
use rondpoint_model::{MappingPolicy, Pid, ProcessInfo, ThreadInfo, Tid};

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

    /// Which mappings are THP-backed: the full smaps only when the rollup shows any (each
    /// read makes the kernel walk the page tables, and this runs every epoch).
    pub(super) fn refresh_thp(&mut self) {
        let managed = &self.managed;
        self.thp.retain(|pid, _| managed.contains(pid));
        for &pid in &self.managed {
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
        threads_of
            .into_iter()
            .filter_map(|(pid, threads)| self.process_info(pid, threads))
            .collect()
    }

    /// What the policy is told of one process, from its threads as just read (None when it is
    /// gone).
    fn process_info(&self, pid: Pid, threads: Vec<ThreadSnapshot>) -> Option<ProcessInfo> {
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
        }
        Some(ProcessInfo {
            pid,
            comm,
            threads,
            resident_bytes_by_node: resident,
            mapping_policies,
        })
    }
}
