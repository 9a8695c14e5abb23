//! Whether a move pays for itself. [Gaud10 §5.1]: "the scheduler tries to make sure that all
//! migrations costs will be amortized over time", and takes P_diff as the expected gain; it
//! does not say over how long, nor what a move costs. Ours: a move is made only when the time
//! it is expected to save the applications over what is left of their runs exceeds the time
//! moving their pages takes from them.
//!
//! - Time left: each application's run is `run_s` seconds alone on a fast node; the work done
//!   so far is its time under OAAS, a period on a slow node counting as the period over
//!   1 + P/100 (P its predicted gap, percent).
//! - Gain: B (slow to fast) has R_B seconds of fast-node work left, which take R_B (1 + P_B/100)
//!   on its slow node: it saves R_B P_B / 100. A (fast to slow) loses R_A P_A / 100. An empty
//!   fast node has no A.
//! - Cost: the pages of each moved application not on its new node (in 4 KiB pages), times
//!   `migrate_page_us` of CPU time, shared by the application's threads: each thread is delayed
//!   by its share (ours; the simulator charges a migration so); none for `oaas-nopm`, which
//!   moves no pages. A move that costs nothing has nothing to amortise: the threshold alone
//!   decides it, as before.

use rondpoint_model::{NodeId, Pid, ProcessInfo, Topology};
use std::collections::BTreeMap;

/// The unit pages are counted in (bytes).
const PAGE_BYTES: u64 = 4096;

/// Each application's work done so far, in seconds alone on a fast node.
#[derive(Clone, Debug, Default)]
pub(super) struct Progress {
    done_s: BTreeMap<Pid, f64>,
}

impl Progress {
    /// Adds a period of `period_s` seconds that `pid` ran on a slow node (`slow`) or a fast
    /// one, with predicted gap `gap_pct`.
    pub(super) fn add(&mut self, pid: Pid, period_s: f64, slow: bool, gap_pct: f64) {
        let rate = if slow {
            1.0 / (1.0 + gap_pct.max(0.0) / 100.0)
        } else {
            1.0
        };
        *self.done_s.entry(pid).or_default() += period_s * rate;
    }

    /// What is left of `pid`'s run of `run_s` seconds alone on a fast node (at least 0).
    pub(super) fn remaining_s(&self, pid: Pid, run_s: f64) -> f64 {
        (run_s - self.done_s.get(&pid).copied().unwrap_or(0.0)).max(0.0)
    }
}

/// The pages of `p` (4 KiB units) not on node `to`: those a move there migrates.
pub(super) fn pages_to_move(topology: &Topology, p: &ProcessInfo, to: NodeId) -> u64 {
    let bytes: u64 = topology
        .nodes()
        .iter()
        .zip(&p.resident_bytes_by_node)
        .filter(|(n, _)| n.id != to)
        .map(|(_, &b)| b)
        .sum();
    bytes.div_ceil(PAGE_BYTES)
}

/// One application of a move: its predicted gap (percent), the fast-node seconds left of its
/// run, the pages the move migrates and its threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Side {
    pub gap_pct: f64,
    pub remaining_s: f64,
    pub pages: u64,
    pub threads: usize,
}

impl Side {
    /// The delay moving its pages costs it (s) at `migrate_page_us` per page.
    fn cost_s(&self, migrate_page_us: f64) -> f64 {
        self.pages as f64 * migrate_page_us * 1e-6 / self.threads.max(1) as f64
    }
}

/// A move's expected gain and cost, in seconds of the applications' time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Balance {
    pub gain_s: f64,
    pub cost_s: f64,
    pub pages: u64,
}

impl Balance {
    /// B from a slow node to a fast one, and A (if the fast node has an application) the
    /// other way, at `migrate_page_us` per page.
    pub(super) fn of(b: &Side, a: Option<&Side>, migrate_page_us: f64) -> Self {
        let saved = |s: &Side| s.remaining_s * s.gap_pct / 100.0;
        let pages = b.pages + a.map_or(0, |a| a.pages);
        Self {
            gain_s: saved(b) - a.map_or(0.0, saved),
            cost_s: b.cost_s(migrate_page_us) + a.map_or(0.0, |a| a.cost_s(migrate_page_us)),
            pages,
        }
    }

    /// Whether the move pays for itself: its gain exceeds its cost, or it costs nothing
    /// (`oaas-nopm`, or `migrate_page_us = 0`: nothing to amortise, the threshold decides).
    pub(super) fn pays(&self) -> bool {
        self.cost_s <= 0.0 || self.gain_s > self.cost_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_slow_periods_at_the_slow_rate() {
        let mut p = Progress::default();
        p.add(Pid(1), 1.1, true, 10.0);
        p.add(Pid(1), 1.0, false, 10.0);
        assert!((p.remaining_s(Pid(1), 10.0) - 8.0).abs() < 1e-12);
        assert_eq!(p.remaining_s(Pid(2), 10.0), 10.0);
        assert_eq!(p.remaining_s(Pid(1), 1.0), 0.0);
    }

    #[test]
    fn a_move_pays_when_the_time_saved_exceeds_the_pages_cost() {
        let b = Side {
            gap_pct: 11.0,
            remaining_s: 0.8,
            pages: 87_192,
            threads: 4,
        };
        // 0.8 s left at 11%: 0.088 s saved, against 87,192 pages at 5 µs over 4 threads: 0.109 s.
        let late = Balance::of(&b, None, 5.0);
        assert!((late.gain_s - 0.088).abs() < 1e-12 && (late.cost_s - 0.10899).abs() < 1e-9);
        assert!(!late.pays());
        // Early in the run it pays, and free moves always pay while time is left.
        let early = Side {
            remaining_s: 9.7,
            ..b
        };
        assert!(Balance::of(&early, None, 5.0).pays());
        assert!(Balance::of(&b, None, 0.0).pays());
        let over = Side {
            remaining_s: 0.0,
            ..b
        };
        assert!(!Balance::of(&over, None, 5.0).pays());
        assert!(Balance::of(&over, None, 0.0).pays());
        // A's loss counts against B's gain.
        let a = Side {
            gap_pct: 10.0,
            remaining_s: 9.7,
            pages: 0,
            threads: 4,
        };
        let swap = Balance::of(&early, Some(&a), 0.0);
        assert!((swap.gain_s - 9.7 * 0.01).abs() < 1e-12);
    }
}
