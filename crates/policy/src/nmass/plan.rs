//! Carrying a mapping of processes to nodes out as thread pins: every thread of a process on
//! one core of its node, as \[Majo11\] maps processes onto cores (its programs are
//! single-threaded).

use super::view::Managed;
use rondpoint_model::{Action, CpuId, Pid, Tid, Topology};
use std::collections::{BTreeMap, BTreeSet};

/// The pins that carry `target` (a node, dense index, per process of `managed`; `None` leaves
/// the process where it is) out; the CPUs in `taken` (multi-threaded processes') are not free. A process that stays on its node keeps its core, and is
/// pinned there unless `pinned` says it already is. A process that changes node goes to a free
/// core of its new node; where there is none, it exchanges cores with a process going the
/// other way, the two pins adjacent (a backend carries such a pair out together).
pub fn pins(
    topology: &Topology,
    managed: &[Managed],
    target: &[Option<usize>],
    pinned: &BTreeMap<(Pid, Tid), CpuId>,
    taken: &BTreeSet<CpuId>,
) -> Vec<Action> {
    let mut busy: BTreeSet<CpuId> = managed
        .iter()
        .flat_map(|m| m.threads.iter().map(|t| t.1))
        .chain(taken.iter().copied())
        .collect();
    let mut out = Vec::new();
    let mut pending: Vec<(usize, usize)> = Vec::new();
    for (i, m) in managed.iter().enumerate() {
        let (Some(to), Some(core)) = (target.get(i).copied().flatten(), m.threads.first()) else {
            continue;
        };
        if m.node(topology) == Some(to) {
            if m.threads
                .iter()
                .any(|&(t, _)| pinned.get(&(m.pid, t)) != Some(&core.1))
            {
                pin(&mut out, m, core.1);
            }
        } else {
            pending.push((i, to));
        }
    }
    let mut at: Vec<Option<CpuId>> = managed
        .iter()
        .map(|m| m.threads.first().map(|t| t.1))
        .collect();
    while !pending.is_empty() {
        let free = pending
            .iter()
            .position(|&(_, to)| free_core(topology, to, &busy).is_some());
        if let Some(k) = free {
            let (i, to) = pending.remove(k);
            let Some(core) = free_core(topology, to, &busy) else {
                break;
            };
            for t in &managed[i].threads {
                busy.remove(&t.1);
            }
            busy.insert(core);
            at[i] = Some(core);
            pin(&mut out, &managed[i], core);
            continue;
        }
        // No free core for anyone: exchange the first with a process going the other way.
        let (i, to) = pending[0];
        let from = at[i].and_then(|c| node_index(topology, c));
        let partner = pending.iter().position(|&(j, back)| {
            j != i && Some(back) == from && at[j].and_then(|c| node_index(topology, c)) == Some(to)
        });
        let (Some(k), Some(ci)) = (partner, at[i]) else {
            break;
        };
        let (j, _) = pending.remove(k);
        pending.remove(0);
        let Some(cj) = at[j] else {
            break;
        };
        pin(&mut out, &managed[i], cj);
        pin(&mut out, &managed[j], ci);
        at.swap(i, j);
    }
    out
}

/// Every thread of `m` to `core`.
fn pin(out: &mut Vec<Action>, m: &Managed, core: CpuId) {
    out.extend(m.threads.iter().map(|&(tid, _)| Action::PinThread {
        pid: m.pid,
        tid,
        cpus: vec![core],
    }));
}

/// The first core of node `node` (dense index) no managed thread runs on.
fn free_core(topology: &Topology, node: usize, busy: &BTreeSet<CpuId>) -> Option<CpuId> {
    topology
        .nodes()
        .get(node)?
        .cpus
        .iter()
        .copied()
        .find(|c| !busy.contains(c))
}

fn node_index(topology: &Topology, cpu: CpuId) -> Option<usize> {
    topology.index_of(topology.node_of_cpu(cpu)?)
}
