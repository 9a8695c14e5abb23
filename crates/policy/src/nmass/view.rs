//! What the N-MASS policies read of an observation: the managed processes, each one's home,
//! MPKI and where its threads run.

use rondpoint_model::{Counters, CpuId, Pid, PolicyMode, ProcessInfo, Tid, Topology};
use std::collections::BTreeSet;

/// A process with running threads, as the policies map it.
#[derive(Clone, Debug, PartialEq)]
pub struct Managed {
    pub pid: Pid,
    pub comm: String,
    /// Its threads and the CPU each last ran on.
    pub threads: Vec<(Tid, CpuId)>,
    /// Its home node (dense index), see [`home`].
    pub home: usize,
}

impl Managed {
    /// The processes that have threads, by pid.
    pub fn all(topology: &Topology, processes: &[ProcessInfo]) -> Vec<Self> {
        let mut v: Vec<Self> = processes
            .iter()
            .filter(|p| !p.threads.is_empty())
            .map(|p| Self {
                pid: p.pid,
                comm: p.comm.clone(),
                threads: p.threads.iter().map(|t| (t.tid, t.cpu)).collect(),
                home: home(topology, p),
            })
            .collect();
        v.sort_by_key(|m| m.pid);
        v
    }

    /// The processes that have threads split into those the policies map, single-threaded
    /// ([Majo11 §2]: each program is one process of one thread), and the multi-threaded
    /// ones, which they leave where the OS runs them, and the CPUs those run on.
    pub fn split(
        topology: &Topology,
        processes: &[ProcessInfo],
    ) -> (Vec<Self>, Vec<Self>, BTreeSet<CpuId>) {
        let (single, multi): (Vec<Self>, Vec<Self>) = Self::all(topology, processes)
            .into_iter()
            .partition(|m| m.threads.len() == 1);
        let taken = multi
            .iter()
            .flat_map(|m| m.threads.iter().map(|t| t.1))
            .collect();
        (single, multi, taken)
    }

    /// The node (dense index) its first thread runs on.
    pub fn node(&self, topology: &Topology) -> Option<usize> {
        let cpu = self.threads.first()?.1;
        topology.index_of(topology.node_of_cpu(cpu)?)
    }
}

/// A process's home node (dense index). [Majo11 §2] homes every process on one processor (its
/// data allocated there only) and §5 suggests reading a program's home from the page
/// distribution the OS reports; the rule is ours: the one node all its explicit memory
/// policies bind it (or prefer it) to; else the node holding most of its resident pages (ties
/// to the lower index); else, before it has pages, the node its first thread runs on.
pub fn home(topology: &Topology, p: &ProcessInfo) -> usize {
    let bound: Vec<usize> = p
        .mapping_policies
        .iter()
        .filter(|m| matches!(m.mode, PolicyMode::Bind | PolicyMode::Prefer))
        .filter_map(|m| match m.nodes.as_slice() {
            [one] => topology.index_of(*one),
            _ => None,
        })
        .collect();
    if !bound.is_empty()
        && bound.len() == p.mapping_policies.len()
        && bound.iter().all(|&n| n == bound[0])
    {
        return bound[0];
    }
    let most = p
        .resident_bytes_by_node
        .iter()
        .enumerate()
        .filter(|(_, b)| **b > 0)
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)));
    if let Some((i, _)) = most {
        return i;
    }
    p.threads
        .first()
        .and_then(|t| topology.index_of(t.node))
        .unwrap_or(0)
}

/// A process's MPKI over the epoch: its threads' LLC misses per thousand instructions
/// retired; `None` when its threads retired nothing.
pub fn mpki(counters: &Counters, pid: Pid) -> Option<f64> {
    let (instr, misses) =
        counters
            .threads
            .iter()
            .filter(|t| t.pid == pid)
            .fold((0u64, 0u64), |(i, m), t| {
                (
                    i.saturating_add(t.instructions),
                    m.saturating_add(t.llc_misses),
                )
            });
    (instr > 0).then(|| 1000.0 * misses as f64 / instr as f64)
}

/// The narrowest interconnect link's capacity per direction the machine reports (bytes/s).
pub(crate) fn narrowest_link(counters: &Counters) -> Option<f64> {
    counters
        .links
        .iter()
        .filter_map(|l| l.capacity_bytes_per_s)
        .filter(|c| *c > 0.0)
        .min_by(f64::total_cmp)
}
