//! [Majo11 Algorithm 3], refine_mapping: moving processes off the more pressured cache.
//!
//! The listing leaves gaps; our reading of each (docs/policies.md gives the reasons):
//! - Δ (line 6) is computed and never used. §3.1 moves pressure until the caches' pressures,
//!   the penalty counted, are equal (Figure 6c): a move is made only if it brings the two
//!   pressures strictly closer than Δ, and lowers the higher of the two (the destination ends
//!   below the source's pressure before the move): a move that only swaps which cache is the
//!   more pressured relieves none of them (§3.1's aim) and costs the moved process its penalty.
//! - Lines 11-12 update the pressures before line 21 can refuse the move: we work them out
//!   for the candidate and change them only when the move is made.
//! - `decision` is unset when the line-10 branch is not taken: every pass starts at CURRENT.
//! - The MOVE 1->0 branch is only a comment, "similar to the MOVE 0->1 case": it is the
//!   mirror image, and either direction is tried when the other is refused (the listing's
//!   line 24 lets only 1->0 follow 0->1), so that which processor is called 0 does not matter.
//!   With the Δ rule only a move from the more to the less pressured cache can be made, so
//!   line 10's order (the cheaper move first) decides nothing; we keep it to follow the
//!   listing.
//! - `until decision != CURRENT` would stop after the first move: we repeat until a pass
//!   moves nothing.
//! - The comment of line 14 reads inverted: get_next_available_core falls back to Processor 0
//!   when Processor 1 has no free core, which the test `core ∉ Processor 0` then refuses.
//! - The text cites line 14 for the threshold test printed on lines 15-16.
//! - Lines 8, 9 and 12 weigh the moved process's MPKI by its penalty; we weigh it by 1 when
//!   the move takes it back to its home (an overflowed process), where it runs locally.
//!   Lines 3-4 sum raw MPKIs, as printed, whether or not a process runs at home; line 11
//!   takes off a moved process's MPKI as its node counted it (raw, unless an earlier move
//!   weighed it), so that a node's pressure stays the sum over its processes.
//!
//! Ours beyond the listing: on more than two nodes each pass refines the most and the least
//! pressured node as the listing refines Processors 0 and 1 (on two nodes, exactly the
//! listing); and when the destination has no free core, the process may be exchanged with the
//! destination's last one (`swap_when_full`).

use super::maxlocal::{Proc, Processors};
use std::collections::VecDeque;

/// What the refinement needs beyond the processes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RefineParams {
    /// THRESHOLD (MPKI): most penalty-weighted pressure a cache may reach by taking in a
    /// process that runs off its home there (lines 15-16).
    pub threshold: f64,
    /// Exchange processes when the destination is full (ours).
    pub swap_when_full: bool,
}

/// The refinement's state: for each node its processes, front to back, in the order of
/// `M_maxlocal` (descending penalty; moved processes go to the front, line 18), its pressure
/// and its free cores.
#[derive(Clone, Debug)]
pub struct Refinement<'a> {
    procs: &'a [Proc],
    lists: Vec<VecDeque<usize>>,
    /// What each process adds to its node's pressure.
    counted: Vec<f64>,
    pressure: Vec<f64>,
    free: Vec<usize>,
    cpu_nodes: Vec<usize>,
}

/// A move of one pass: the process at the back of `from` to `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Current,
    Move {
        process: usize,
        from: usize,
        to: usize,
    },
    Swap {
        process: usize,
        with: usize,
        from: usize,
        to: usize,
    },
}

impl<'a> Refinement<'a> {
    /// Lines 1-4: the mapping split by node and each node's pressure, the sum of its
    /// processes' MPKI.
    pub fn new(procs: &'a [Proc], machine: &Processors, maxlocal: &[(usize, usize)]) -> Self {
        let n = machine.cores.len();
        let mut lists = vec![VecDeque::new(); n];
        let mut pressure = vec![0.0; n];
        let mut free = machine.cores.clone();
        for &(p, node) in maxlocal {
            lists[node].push_back(p);
            pressure[node] += procs[p].mpki;
            free[node] = free[node].saturating_sub(1);
        }
        let cpu_nodes = (0..n).filter(|&d| machine.cores[d] > 0).collect();
        Self {
            procs,
            lists,
            counted: procs.iter().map(|p| p.mpki).collect(),
            pressure,
            free,
            cpu_nodes,
        }
    }

    /// Each node's pressure now.
    pub fn pressure(&self) -> &[f64] {
        &self.pressure
    }

    /// The processes on a node, front to back.
    #[cfg(test)]
    pub(crate) fn processes_on(&self, node: usize) -> Vec<usize> {
        self.lists
            .get(node)
            .map_or(Vec::new(), |l| l.iter().copied().collect())
    }

    /// The node of every process (`None` for one the mapping left out).
    pub fn mapping(&self) -> Vec<Option<usize>> {
        let mut out = vec![None; self.procs.len()];
        for (node, list) in self.lists.iter().enumerate() {
            for &p in list {
                out[p] = Some(node);
            }
        }
        out
    }

    /// Passes until one moves nothing (line 28 as we read it). On more than two nodes each
    /// pass takes the most and the least pressured node (ours). Every move brings its two
    /// pressures strictly closer and lowers the higher; the passes are also capped at
    /// processes x nodes.
    pub fn run(&mut self, params: RefineParams) -> Vec<Decision> {
        let cap = (self.procs.len() + 1) * self.lists.len().max(1);
        let mut decisions = Vec::new();
        for _ in 0..cap {
            let Some((a, b)) = self.pair() else {
                break;
            };
            match self.pass(a, b, params) {
                Decision::Current => break,
                d => decisions.push(d),
            }
        }
        decisions
    }

    /// The nodes to refine, lower index first (the listing's Processors 0 and 1): the most
    /// and the least pressured nodes with cores, ties to the lower index.
    fn pair(&self) -> Option<(usize, usize)> {
        let by = |a: &&usize, b: &&usize| self.pressure[**a].total_cmp(&self.pressure[**b]);
        let hi = *self.cpu_nodes.iter().rev().max_by(|a, b| by(a, b))?;
        let lo = *self.cpu_nodes.iter().min_by(|a, b| by(a, b))?;
        (hi != lo).then_some((hi.min(lo), hi.max(lo)))
    }

    /// One pass of the repeat loop (lines 6-27) on nodes `a` (the listing's 0) and `b`.
    pub fn pass(&mut self, a: usize, b: usize, params: RefineParams) -> Decision {
        let delta = (self.pressure[b] - self.pressure[a]).abs(); // line 6
        let cost = |from: usize, to: usize| {
            self.lists[from]
                .back()
                .map_or(f64::INFINITY, |&p| self.weighted(p, to))
        };
        let (ab, ba) = (cost(a, b), cost(b, a)); // lines 7-9
        let order = if ab < ba {
            [(a, b), (b, a)] // line 10, then lines 24-25 when refused
        } else {
            [(b, a), (a, b)]
        };
        for (from, to) in order {
            let d = self.try_move(from, to, delta, params);
            if d != Decision::Current {
                return d;
            }
        }
        Decision::Current
    }

    /// `mpki x np` of process `p` on node `to` (lines 8, 9, 12); its bare MPKI at home.
    fn weighted(&self, p: usize, to: usize) -> f64 {
        let q = &self.procs[p];
        if q.home == to { q.mpki } else { q.mpki * q.np }
    }

    /// Whether `to` may take in process `p` at pressure `after` (lines 15-16): always at its
    /// home, under the threshold elsewhere.
    fn fits(&self, p: usize, to: usize, after: f64, params: RefineParams) -> bool {
        self.procs[p].home == to || after < params.threshold
    }

    /// Lines 11-22 for the process at the back of `from`: moved to a free core of `to`, or
    /// exchanged with the back of `to` when `to` is full and swaps are allowed.
    fn try_move(&mut self, from: usize, to: usize, delta: f64, params: RefineParams) -> Decision {
        let Some(&p) = self.lists[from].back() else {
            return Decision::Current;
        };
        // Closer than Δ, and the higher pressure of the pair falls (module doc).
        let before = self.pressure[from].max(self.pressure[to]);
        let closer = |x: f64, y: f64| (x - y).abs() < delta - 1e-12 && x.max(y) < before - 1e-12;
        let from_after = self.pressure[from] - self.counted[p]; // line 11
        let to_after = self.pressure[to] + self.weighted(p, to); // line 12
        if self.free[to] > 0 {
            // lines 13-16: a free core on `to` itself, so `core ∉ Processor 0` holds
            if !(self.fits(p, to, to_after, params) && closer(from_after, to_after)) {
                return Decision::Current; // line 21
            }
            self.lists[from].pop_back(); // line 17
            self.lists[to].push_front(p); // line 18
            self.free[to] -= 1;
            self.free[from] += 1;
            self.pressure[from] = from_after;
            self.pressure[to] = to_after;
            self.counted[p] = self.weighted(p, to);
            return Decision::Move {
                process: p,
                from,
                to,
            }; // line 19
        }
        let Some(&q) = self.lists[to].back().filter(|_| params.swap_when_full) else {
            return Decision::Current;
        };
        let from_after = from_after + self.weighted(q, from);
        let to_after = to_after - self.counted[q];
        if !(self.fits(p, to, to_after, params)
            && self.fits(q, from, from_after, params)
            && closer(from_after, to_after))
        {
            return Decision::Current;
        }
        self.lists[from].pop_back();
        self.lists[to].pop_back();
        self.lists[to].push_front(p);
        self.lists[from].push_front(q);
        self.pressure[from] = from_after;
        self.pressure[to] = to_after;
        self.counted[p] = self.weighted(p, to);
        self.counted[q] = self.weighted(q, from);
        Decision::Swap {
            process: p,
            with: q,
            from,
            to,
        }
    }
}

/// Algorithm 3 on a maximum-local mapping: the node of every process.
pub(crate) fn refine_mapping(
    procs: &[Proc],
    machine: &Processors,
    maxlocal: &[(usize, usize)],
    params: RefineParams,
) -> Vec<Option<usize>> {
    let mut r = Refinement::new(procs, machine, maxlocal);
    r.run(params);
    r.mapping()
}
