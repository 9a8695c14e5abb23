//! The reactive mode of the remote-placement policies, for machines that cannot place overflow
//! at allocation (a live Linux machine: user space cannot change another process's fallback).
//! The kernel puts the overflow on its fallback node; each epoch this planner reads each
//! process's memory per node and each node's free memory, works out where the allocation-time
//! rule ([`rondpoint_model::overflow::overflow_node`]) would have put the same overflow, and
//! moves the difference there ([`Action::MoveNodePages`]), at most `max_move` bytes an epoch.
//!
//! It emulates allocation-time placement, not a balancer: once a process's overflow is where
//! the rule wants it, the process is settled and left alone until its overflow grows again
//! (new allocations landing on the fallback node), so that other mechanisms (dynamic
//! migration, AutoNUMA) can move its pages without the planner moving them back.

use rondpoint_model::overflow::overflow_node;
use rondpoint_model::{
    Action, NodeId, NodeList, NodeRoom, NodeTiers, Observation, OverflowSpread, Pid, ProcessInfo,
    Topology,
};
use std::collections::BTreeMap;

/// Bytes of a base page: the unit of [`Action::MoveNodePages`].
pub(crate) const PAGE: u64 = 4096;
/// The finest step in which the planner lays out an overflow (one huge page).
const MIN_CHUNK: u64 = 2 << 20;
/// The most steps it takes for one process's overflow.
const MAX_CHUNKS: u64 = 4096;
/// Epochs running in which a process's planned moves left its memory unchanged before it is
/// left as it is (until its overflow grows): a move the machine keeps refusing is not asked
/// for forever.
const MAX_STALLS: u32 = 3;

/// How much the planner moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Most bytes moved per epoch, over all processes.
    pub max_move_bytes: u64,
    /// Smallest move worth making (bytes); also how far a settled process's overflow must grow
    /// before it is planned again.
    pub min_move_bytes: u64,
}

impl Limits {
    /// The limits given in MiB.
    pub(crate) fn from_mib(max_move_mib: u64, min_move_mib: u64) -> Self {
        Self {
            max_move_bytes: max_move_mib.saturating_mul(1 << 20),
            min_move_bytes: min_move_mib.saturating_mul(1 << 20),
        }
    }
}

/// Dense indices of the nodes that run none of `p`'s threads: its memory there is overflow.
pub(crate) fn away_nodes(topology: &Topology, p: &ProcessInfo) -> Vec<usize> {
    let nodes = topology.nodes();
    (0..nodes.len())
        .filter(|&i| p.threads.iter().all(|t| t.node != nodes[i].id))
        .collect()
}

/// The move of `bytes` of `pid`'s memory from node `from` to node `to` (dense indices), in
/// whole base pages.
pub(crate) fn move_action(
    topology: &Topology,
    pid: Pid,
    from: usize,
    to: usize,
    bytes: u64,
) -> Action {
    let nodes = topology.nodes();
    Action::MoveNodePages {
        pid,
        from: nodes[from].id,
        to: NodeList::from_slice(&[nodes[to].id]),
        pages: bytes / PAGE,
    }
}

/// Where one process stands.
#[derive(Clone, Debug, Default, PartialEq)]
struct ProcessState {
    /// Overflow bytes when its placement was last found done (`None`: not settled).
    settled_at: Option<u64>,
    /// Its memory per node when moves were last planned for it, and how many epochs running
    /// that did not change it.
    last_planned: Option<Vec<u64>>,
    stalls: u32,
}

/// The planner and what it remembers per process.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reactive {
    processes: BTreeMap<Pid, ProcessState>,
}

/// The memory of each node (dense index), as the planner updates it with its own moves.
type Room = Vec<NodeRoom>;

impl Reactive {
    /// Whether the process's overflow is where the rule wants it (or the process has none).
    pub(crate) fn is_settled(&self, pid: Pid) -> bool {
        self.processes
            .get(&pid)
            .is_some_and(|s| s.settled_at.is_some())
    }

    /// This epoch's moves, for every process with overflow not yet where `spread` over
    /// `tiers` would have put it.
    pub fn plan(
        &mut self,
        topology: &Topology,
        observation: &Observation,
        spread: OverflowSpread,
        tiers: &[NodeTiers],
        limits: Limits,
    ) -> Vec<Action> {
        let mut room: Room = topology
            .nodes()
            .iter()
            .map(|n| {
                let m = observation.memory.iter().find(|m| m.node == n.id);
                NodeRoom {
                    total: m.map_or(0.0, |m| m.total_bytes as f64),
                    free: m.map_or(0.0, |m| m.free_bytes as f64),
                }
            })
            .collect();
        let mut budget = limits.max_move_bytes;
        let mut actions = Vec::new();
        self.processes
            .retain(|pid, _| observation.processes.iter().any(|p| p.pid == *pid));
        for p in observation
            .processes
            .iter()
            .filter(|p| !super::user_placed(p))
        {
            let Some(layout) = Layout::of(topology, p, tiers) else {
                continue;
            };
            let state = self.processes.entry(p.pid).or_default();
            if !state.wants_plan(&layout, limits.min_move_bytes) {
                continue;
            }
            let moves = layout.moves(spread, &room, limits.min_move_bytes, budget);
            state.planned(&layout, moves.is_empty());
            for &(from, to, bytes) in &moves {
                room[from].free += bytes as f64;
                room[to].free -= bytes as f64;
                budget -= bytes;
                actions.push(move_action(topology, p.pid, from, to, bytes));
            }
        }
        actions
    }
}

impl ProcessState {
    /// Whether to plan for the process this epoch.
    fn wants_plan(&mut self, layout: &Layout, min_move: u64) -> bool {
        let overflow = layout.overflow();
        if let Some(at) = self.settled_at {
            if overflow < at.saturating_add(min_move) {
                return false;
            }
            self.settled_at = None;
            self.stalls = 0;
        }
        if self.last_planned.as_ref() == Some(&layout.mine) {
            self.stalls += 1;
            if self.stalls >= MAX_STALLS {
                self.settled_at = Some(overflow);
                self.last_planned = None;
                return false;
            }
        } else {
            self.stalls = 0;
        }
        true
    }

    /// Records what was planned: nothing to move settles the process.
    fn planned(&mut self, layout: &Layout, nothing: bool) {
        if nothing {
            self.settled_at = Some(layout.overflow());
            self.last_planned = None;
            self.stalls = 0;
        } else {
            self.last_planned = Some(layout.mine.clone());
        }
    }
}

/// One process's memory as the planner sees it (dense node indices).
#[derive(Clone, Debug, PartialEq)]
struct Layout {
    /// Bytes per node.
    mine: Vec<u64>,
    /// The remote tiers of its home node (the node running most of its threads), without the
    /// nodes running any of its threads.
    tiers: Vec<Vec<NodeId>>,
    /// Dense indices of the nodes that run none of its threads: its overflow is what it has
    /// there.
    away: Vec<usize>,
    /// Dense index of each node id the tiers name.
    index: BTreeMap<NodeId, usize>,
}

impl Layout {
    /// The layout of process `p`; `None` when it has no threads or its home has no tiers.
    fn of(topology: &Topology, p: &ProcessInfo, tiers: &[NodeTiers]) -> Option<Self> {
        let mut threads: BTreeMap<NodeId, usize> = BTreeMap::new();
        for t in &p.threads {
            *threads.entry(t.node).or_default() += 1;
        }
        let home = threads
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(id, _)| *id)?;
        let own = tiers.iter().find(|t| t.local == home)?;
        let tiers: Vec<Vec<NodeId>> = own
            .tiers
            .iter()
            .map(|t| {
                t.iter()
                    .copied()
                    .filter(|id| !threads.contains_key(id))
                    .collect::<Vec<_>>()
            })
            .filter(|t| !t.is_empty())
            .collect();
        let index: BTreeMap<NodeId, usize> = tiers
            .iter()
            .flatten()
            .filter_map(|id| Some((*id, topology.index_of(*id)?)))
            .collect();
        let n = topology.len();
        let mut mine = p.resident_bytes_by_node.clone();
        mine.resize(n, 0);
        let away = away_nodes(topology, p);
        Some(Self {
            mine,
            tiers,
            away,
            index,
        })
    }

    /// Bytes on nodes running none of its threads.
    fn overflow(&self) -> u64 {
        self.away.iter().map(|&i| self.mine[i]).sum()
    }

    /// Where the rule would put this process's overflow (bytes per dense node), in chunks of
    /// at least a huge page, on the memory of `room` with the process's own overflow counted as
    /// free. What no tier can take stays where it is.
    fn targets(&self, spread: OverflowSpread, room: &Room) -> Vec<u64> {
        let mut view: Room = room.clone();
        for &i in &self.away {
            view[i].free += self.mine[i] as f64;
        }
        let overflow = self.overflow();
        let chunk = (overflow / MAX_CHUNKS).max(MIN_CHUNK).div_ceil(PAGE) * PAGE;
        let mut target = vec![0u64; self.mine.len()];
        let mut left = overflow;
        let mut cursor = 0;
        while left > 0 {
            let bytes = left.min(chunk);
            let pick = overflow_node(
                &self.tiers,
                spread,
                bytes as f64,
                |id| self.index.get(&id).map(|&i| view[i]),
                &mut cursor,
            );
            let Some(i) = pick.and_then(|id| self.index.get(&id).copied()) else {
                break;
            };
            view[i].free -= bytes as f64;
            target[i] += bytes;
            left -= bytes;
        }
        // What found no room: left where it is, node by node.
        for &i in &self.away {
            let keep = self.mine[i].saturating_sub(target[i]).min(left);
            target[i] += keep;
            left -= keep;
        }
        target
    }

    /// Moves `(from, to, bytes)` (dense indices) toward the targets (see [`transfers`]).
    fn moves(
        &self,
        spread: OverflowSpread,
        room: &Room,
        min_move: u64,
        budget: u64,
    ) -> Vec<(usize, usize, u64)> {
        let target = self.targets(spread, room);
        transfers(&self.mine, &target, &self.away, min_move, budget)
    }
}

/// Moves `(from, to, bytes)` between the nodes `among` (dense indices) that take memory
/// `mine` (bytes per node) toward `target`: from the nodes holding more than their target to
/// those holding less, largest first, each at least `min_move` and in all at most `budget`,
/// in whole base pages.
pub(crate) fn transfers(
    mine: &[u64],
    target: &[u64],
    among: &[usize],
    min_move: u64,
    mut budget: u64,
) -> Vec<(usize, usize, u64)> {
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    let gap = |i: usize, over: bool| {
        let (a, b) = (at(mine, i), at(target, i));
        if over {
            a.saturating_sub(b)
        } else {
            b.saturating_sub(a)
        }
    };
    let mut surplus: Vec<(usize, u64)> = among.iter().map(|&i| (i, gap(i, true))).collect();
    let mut deficit: Vec<(usize, u64)> = among.iter().map(|&i| (i, gap(i, false))).collect();
    surplus.retain(|s| s.1 > 0);
    deficit.retain(|d| d.1 > 0);
    surplus.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    deficit.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = Vec::new();
    for (from, mut extra) in surplus {
        for (to, short) in deficit.iter_mut() {
            let bytes = extra.min(*short).min(budget) / PAGE * PAGE;
            if bytes < min_move.max(PAGE) {
                continue;
            }
            out.push((from, *to, bytes));
            extra -= bytes;
            *short -= bytes;
            budget -= bytes;
        }
    }
    out
}

#[cfg(test)]
mod tests;
