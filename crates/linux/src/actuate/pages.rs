//! Page moves on a live kernel: move_pages in as few calls as possible, verified by a placement
//! query.
//!
//! Why few calls: since Linux 5.13 every move_pages call that moves pages begins with
//! `lru_cache_disable()` (mm/migrate.c, `do_pages_move`), an expedited RCU grace period and a
//! drain of every CPU's LRU batches, whatever the number of pages: a cost to the whole machine,
//! once per call. So the page moves of one process go in one call (a call per action, or per
//! 1,024 pages, paid it thousands of times an epoch, and on the testbed moved 128 MiB at a
//! fifth to a half of the rate of `migratepages`, which pays it once). Queries (no target
//! nodes: `do_pages_stat`) pay none of it.
//!
//! Outcome accounting per page: `pages_done` counts pages a placement query found on their
//! target node after the move (pages already there count as done without a move); failures
//! are counted by the errno the kernel reported for the page (EBUSY, ENOMEM, EFAULT, ENOENT
//! for a page not present, EACCES for a page shared with another process, ...).

use crate::sys::{Errno, NodeMask, Sys};
use rondpoint_model::{NodeId, Outcome, PageCounts, PageRange, Pid, Topology};
use std::collections::BTreeMap;

/// Most pages in one move_pages call that moves (256 MiB of base pages). The kernel takes any
/// count; the bound keeps a call's arrays, and the time it holds the process's pages
/// isolated, in check.
pub const MOVE_BATCH: usize = 1 << 16;

/// Pages per placement query (no drain: only the syscall's own cost is saved by more).
const QUERY_BATCH: usize = 1 << 14;

/// What the kernel did with a set of page moves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MoveReport {
    pub requested: u64,
    /// On the target node afterwards (moved, or already there).
    pub done: u64,
    /// Moved by this call (not already there).
    pub moved: u64,
    /// Failures by errno name.
    pub failures: BTreeMap<String, u64>,
}

impl MoveReport {
    fn of(fates: &[Fate]) -> Self {
        let mut r = MoveReport {
            requested: fates.len() as u64,
            ..MoveReport::default()
        };
        for f in fates {
            match f {
                Fate::There => r.done += 1,
                Fate::Moved => {
                    r.done += 1;
                    r.moved += 1;
                }
                Fate::Refused(e) => *r.failures.entry(e.name()).or_default() += 1,
                Fate::NotMoved => *r.failures.entry(NOT_MOVED.into()).or_default() += 1,
            }
        }
        r
    }
}

const NOT_MOVED: &str = "not moved (verified)";

/// What became of one page asked to move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Already on its target node.
    There,
    Moved,
    /// The kernel's errno for the page (or for the whole call).
    Refused(Errno),
    /// The kernel said nothing was wrong, but the page is not on its target node.
    NotMoved,
}

/// Moves `pages` (page start addresses) of `pid` so that page i ends on `targets[i]`: queries
/// where they are, moves the ones that are elsewhere, and verifies with a second query. A
/// process that exits meanwhile gives `Err(ESRCH)`.
pub fn move_pages_to(
    sys: &mut dyn Sys,
    pid: Pid,
    pages: &[u64],
    targets: &[i32],
) -> Result<MoveReport, Errno> {
    let before = query(sys, pid, pages)?;
    move_pages_from(sys, pid, pages, &before, targets)
}

/// [`move_pages_to`] for pages whose nodes the caller has just queried (`before[i]`, node or
/// negative errno, as [`query`] gives them): one round trip fewer.
pub fn move_pages_from(
    sys: &mut dyn Sys,
    pid: Pid,
    pages: &[u64],
    before: &[i32],
    targets: &[i32],
) -> Result<MoveReport, Errno> {
    Ok(MoveReport::of(&fates(sys, pid, pages, before, targets)?))
}

/// Moves every page of `pid` on the nodes where `before` finds the listed `pages` (other than
/// `to`) to node `to` with one migrate_pages(2) call, as `numactl --migratepages` does, then
/// verifies the listed pages with one query.
///
/// Why: one call that names nodes, not pages, is the kernel's cheapest whole-node move (no page
/// arrays, one LRU drain). It moves every page of the process on those nodes that only this
/// process maps (MPOL_MF_MOVE), not only the listed ones; the report counts the listed pages.
pub fn move_node_pages(
    sys: &mut dyn Sys,
    pid: Pid,
    pages: &[u64],
    before: &[i32],
    to: u16,
) -> Result<MoveReport, Errno> {
    let target = i32::from(to);
    let from: std::collections::BTreeSet<u16> = before
        .iter()
        .filter(|&&n| n >= 0 && n != target)
        .filter_map(|&n| u16::try_from(n).ok())
        .collect();
    let mut fate: Vec<Fate> = before
        .iter()
        .map(|&n| match n {
            n if n < 0 => Fate::Refused(Errno(-n)),
            n if n == target => Fate::There,
            _ => Fate::NotMoved,
        })
        .collect();
    if from.is_empty() {
        return Ok(MoveReport::of(&fate));
    }
    sys.migrate_pages(pid, &NodeMask::of(from), &NodeMask::of([to]))?;
    let asked: Vec<usize> = (0..pages.len())
        .filter(|&i| fate[i] == Fate::NotMoved)
        .collect();
    let addrs: Vec<u64> = asked.iter().map(|&i| pages[i]).collect();
    let after = query(sys, pid, &addrs)?;
    for (&i, &node) in asked.iter().zip(&after) {
        fate[i] = match node {
            n if n == target => Fate::Moved,
            n if n < 0 => Fate::Refused(Errno(-n)),
            _ => Fate::NotMoved,
        };
    }
    Ok(MoveReport::of(&fate))
}

/// Each page's fate: the moves in calls of at most [`MOVE_BATCH`] pages, grouped by target
/// node (the kernel migrates each run of one node's pages as one list), then one verifying
/// query of the pages the kernel took.
fn fates(
    sys: &mut dyn Sys,
    pid: Pid,
    pages: &[u64],
    before: &[i32],
    targets: &[i32],
) -> Result<Vec<Fate>, Errno> {
    let mut fate = vec![Fate::There; pages.len()];
    let mut todo: Vec<usize> = Vec::new();
    for (i, (&now, &target)) in before.iter().zip(targets).enumerate() {
        if now < 0 {
            fate[i] = Fate::Refused(Errno(-now));
        } else if now != target {
            todo.push(i);
        }
    }
    // Stable: each node's pages stay in address order.
    todo.sort_by_key(|&i| targets[i]);
    let mut attempted = Vec::with_capacity(todo.len());
    for chunk in todo.chunks(MOVE_BATCH) {
        let batch: Vec<u64> = chunk.iter().map(|&i| pages[i]).collect();
        let nodes: Vec<i32> = chunk.iter().map(|&i| targets[i]).collect();
        let mut status = vec![0i32; batch.len()];
        match sys.move_pages(pid, &batch, Some(&nodes), &mut status) {
            Ok(()) => {}
            Err(e) if e == Errno::ESRCH => return Err(e),
            Err(e) => {
                chunk.iter().for_each(|&i| fate[i] = Fate::Refused(e));
                continue;
            }
        }
        for (&i, &s) in chunk.iter().zip(&status) {
            if s < 0 {
                fate[i] = Fate::Refused(Errno(-s));
            } else {
                attempted.push(i);
            }
        }
    }
    // Verify: the kernel's status says where the page is, but THP splits, races with the
    // program and migrations that silently did nothing are only seen by asking again.
    if !attempted.is_empty() {
        attempted.sort_unstable();
        let addrs: Vec<u64> = attempted.iter().map(|&i| pages[i]).collect();
        let after = query(sys, pid, &addrs)?;
        for (&i, &node) in attempted.iter().zip(&after) {
            fate[i] = if node == targets[i] {
                Fate::Moved
            } else {
                Fate::NotMoved
            };
        }
    }
    Ok(fate)
}

/// Where each page is (node, or negative errno), in batches.
pub fn query(sys: &mut dyn Sys, pid: Pid, pages: &[u64]) -> Result<Vec<i32>, Errno> {
    let mut out = Vec::with_capacity(pages.len());
    for chunk in pages.chunks(QUERY_BATCH) {
        let mut status = vec![0i32; chunk.len()];
        sys.move_pages(pid, chunk, None, &mut status)?;
        out.extend_from_slice(&status);
    }
    Ok(out)
}

/// One page-placement action to carry out: its index in the epoch's actions, its pages, and
/// the nodes they go to (round-robin; one node: all of them there).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placement<'a> {
    pub(crate) index: usize,
    pub(crate) range: &'a PageRange,
    pub(crate) nodes: &'a [NodeId],
}

/// A placement's position in the caller's list, its page addresses and their target nodes.
type Targets = (usize, Vec<u64>, Vec<i32>);

/// Carries out page placements, each process's together: one query, the moves in as few
/// calls as [`MOVE_BATCH`] allows, one verification. Outcomes come in the order of
/// `placements`.
pub(crate) fn place_all(
    sys: &mut dyn Sys,
    topology: &Topology,
    placements: &[Placement<'_>],
) -> Vec<Outcome> {
    let mut out: Vec<Option<Outcome>> = vec![None; placements.len()];
    // Each process's placements, with their pages' span in the combined arrays.
    let mut by_pid: BTreeMap<Pid, Vec<Targets>> = BTreeMap::new();
    for (k, p) in placements.iter().enumerate() {
        match targets_of(topology, p) {
            Ok((pages, targets)) => by_pid
                .entry(p.range.pid)
                .or_default()
                .push((k, pages, targets)),
            Err(o) => out[k] = Some(o),
        }
    }
    for (pid, items) in by_pid {
        let pages: Vec<u64> = items.iter().flat_map(|x| x.1.iter().copied()).collect();
        let targets: Vec<i32> = items.iter().flat_map(|x| x.2.iter().copied()).collect();
        let fates =
            query(sys, pid, &pages).and_then(|before| fates(sys, pid, &pages, &before, &targets));
        let mut at = 0;
        for (k, p_pages, _) in &items {
            let p = &placements[*k];
            let span = at..at + p_pages.len();
            at = span.end;
            out[*k] = Some(match &fates {
                Ok(f) => outcome_from(p.index, &MoveReport::of(&f[span]), p.range),
                Err(e) if *e == Errno::ESRCH => Outcome::skipped(
                    p.index,
                    p.range.count,
                    format!("{} has exited", p.range.pid),
                ),
                Err(e) => Outcome::failed(p.index, format!("move_pages: {e}")),
            });
        }
    }
    out.into_iter()
        .zip(placements)
        .map(|(o, p)| o.unwrap_or_else(|| Outcome::failed(p.index, "not carried out")))
        .collect()
}

/// A placement's page addresses (at its own page size: for a 2 MiB range, the first 4 KiB page
/// of each huge page, which moves the whole huge page) and target nodes, or the outcome of a
/// placement naming no node this machine has.
fn targets_of(topology: &Topology, p: &Placement<'_>) -> Result<(Vec<u64>, Vec<i32>), Outcome> {
    let nums: Option<Vec<i32>> = p
        .nodes
        .iter()
        .map(|id| topology.index_of(*id).map(|_| i32::from(id.0)))
        .collect();
    let Some(nums) = nums.filter(|v| !v.is_empty()) else {
        let names: Vec<String> = p.nodes.iter().map(NodeId::to_string).collect();
        return Err(Outcome::failed(
            p.index,
            format!("no such node among [{}]", names.join(", ")),
        ));
    };
    let pages: Vec<u64> = p.range.page_starts().collect();
    let targets = (0..pages.len()).map(|i| nums[i % nums.len()]).collect();
    Ok((pages, targets))
}

fn outcome_from(index: usize, r: &MoveReport, range: &PageRange) -> Outcome {
    let failures: Vec<(String, u64)> = r.failures.iter().map(|(k, v)| (k.clone(), *v)).collect();
    let counts = PageCounts {
        requested: r.requested,
        done: r.done,
        moved: r.moved,
        bytes_copied: r.moved * range.page_size.bytes(),
    };
    Outcome::for_pages(index, counts, failures)
}
