//! Moving some of a process's pages off one node (`Action::MoveNodePages`): for policies that
//! know how much of a process is on each node (numa_maps) but not where, such as the reactive
//! mode of the remote-placement policies. The backend finds the pages: it walks the mappings
//! that numa_maps says hold pages on the node, most such pages first, each from its highest
//! address down (memory touched last, the overflow of a buffer first-touched in order, comes
//! first), asks move_pages where each page is, and moves those on the node round-robin over the
//! targets that still have room, in batches, verified by a second query.
//!
//! The walk of a mapping continues where the last one for the same process and source node
//! stopped (`SearchCursors`), wrapping to the mapping's top once it reaches the bottom: pages
//! already searched (and the overflow already moved) are not queried again every epoch, so
//! moving an overflow of N pages a batch at a time costs queries in proportion to N, not N².
//! A mapping that changed (another end: it grew or shrank) is walked from its top again.

use crate::actuate::{MoveReport, move_pages_to, query};
use crate::procfs::NumaMapping;
use crate::sys::{Errno, Sys};
use crate::thp::{self, ThpMapping};
use rondpoint_model::{NodeId, Outcome, PageCounts, PageSize, Pid};
use std::collections::BTreeMap;

/// Base pages looked up per move_pages query while searching (a bounded batch keeps a call
/// short; the search stops as soon as enough pages are found).
const SEARCH_BATCH: u64 = 1024;

/// Where the page search of each mapping stopped, by process, source node and mapping start:
/// the mapping's end when searched, and the address below which the next search continues.
#[derive(Clone, Debug, Default)]
pub(crate) struct SearchCursors {
    at: BTreeMap<(Pid, NodeId, u64), (u64, u64)>,
}

impl SearchCursors {
    /// Forgets the cursors of the processes `keep` rejects (gone, no longer managed).
    pub(crate) fn retain(&mut self, keep: impl Fn(Pid) -> bool) {
        self.at.retain(|k, _| keep(k.0));
    }

    /// Where the search of `m` continues: where the last one stopped, on the page boundary
    /// at or below it; the mapping's top when it is new or changed.
    fn resume(&self, pid: Pid, from: NodeId, m: &Extent, thp: &[ThpMapping]) -> u64 {
        match self.at.get(&(pid, from, m.start)) {
            Some(&(end, next)) if end == m.end && next > m.start && next < m.end => {
                thp::page_size_of(thp, next).align_down(next).max(m.start)
            }
            _ => m.end,
        }
    }
}

/// A mapping of the process with pages on the source node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub start: u64,
    pub end: u64,
    /// Its pages on the source node, as numa_maps counts them.
    pub pages_on_node: u64,
}

/// The mappings of numa_maps with pages on `node` (hugetlbfs mappings left out: their pages
/// do not migrate this way), with their ends from `/proc/PID/maps` (`ranges`, start to end).
pub(crate) fn extents_on(
    mappings: &[NumaMapping],
    ranges: &[(u64, u64)],
    node: NodeId,
) -> Vec<Extent> {
    mappings
        .iter()
        .filter(|m| !m.huge)
        .filter_map(|m| {
            let pages_on_node = m
                .pages_by_node
                .iter()
                .find(|(n, _)| *n == node)
                .map_or(0, |(_, p)| *p);
            let &(_, end) = ranges.iter().find(|(start, _)| *start == m.start)?;
            (pages_on_node > 0 && end > m.start).then_some(Extent {
                start: m.start,
                end,
                pages_on_node,
            })
        })
        .collect()
}

/// What the move may use: where the process's pages are, its THP-backed ranges, and how much
/// room each target node has.
#[derive(Debug)]
pub struct NodePagesPlan<'a> {
    pub pid: Pid,
    pub from: NodeId,
    pub to: &'a [NodeId],
    /// Base (4 KiB) pages to move at most.
    pub pages: u64,
    pub extents: Vec<Extent>,
    pub thp: &'a [ThpMapping],
    /// Bytes each node may still take (free memory less the reserve kept free).
    pub room: BTreeMap<NodeId, u64>,
}

/// The page start addresses of `pid` on `from`, at most `limit` base pages' worth, with the
/// size of each, searched as the module documentation says.
fn find(
    sys: &mut dyn Sys,
    plan: &NodePagesPlan<'_>,
    limit: u64,
    cursors: &mut SearchCursors,
) -> Result<Vec<(u64, PageSize)>, Errno> {
    let mut candidates = plan.extents.clone();
    candidates.sort_by_key(|e| std::cmp::Reverse(e.pages_on_node));
    // Mappings gone, or without pages on the node any more, lose their cursors.
    cursors.at.retain(|&(pid, from, start), _| {
        pid != plan.pid || from != plan.from || candidates.iter().any(|m| m.start == start)
    });
    let mut found = Found::default();
    for m in candidates {
        if found.base_pages >= limit {
            break;
        }
        let resume = cursors.resume(plan.pid, plan.from, &m, plan.thp);
        // Below where the last search stopped, then from the top down to it.
        let mut stop = resume;
        for (hi, lo) in [(resume, m.start), (m.end, resume)] {
            if hi > lo && found.base_pages < limit {
                stop = search(sys, plan, (hi, lo), limit, &mut found)?;
            }
        }
        cursors
            .at
            .insert((plan.pid, plan.from, m.start), (m.end, stop));
    }
    Ok(found.pages)
}

/// The pages found so far, and their base pages.
#[derive(Default)]
struct Found {
    pages: Vec<(u64, PageSize)>,
    base_pages: u64,
}

/// Queries the pages from `hi` down to `lo` (`span`), highest first, a batch at a time, and
/// takes those on the source node until `limit` base pages are found. Returns where the walk
/// stopped: the last page taken when the limit was reached (the pages below it in its batch
/// are queried again next time), else `lo`.
fn search(
    sys: &mut dyn Sys,
    plan: &NodePagesPlan<'_>,
    (mut hi, lo): (u64, u64),
    limit: u64,
    found: &mut Found,
) -> Result<u64, Errno> {
    while hi > lo {
        // One batch of page starts below `hi`, highest first, at each address's page size.
        let mut batch = Vec::new();
        let mut addr = hi;
        while addr > lo && (batch.len() as u64) < SEARCH_BATCH {
            let size = thp::page_size_of(plan.thp, addr - 1);
            let start = size.align_down(addr - 1).max(lo);
            batch.push((start, size));
            addr = start;
        }
        hi = addr;
        let starts: Vec<u64> = batch.iter().map(|b| b.0).collect();
        let status = query(sys, plan.pid, &starts)?;
        for (&(start, size), &node) in batch.iter().zip(&status) {
            if node == i32::from(plan.from.0) {
                found.pages.push((start, size));
                found.base_pages += size.base_pages();
                if found.base_pages >= limit {
                    return Ok(start);
                }
            }
        }
    }
    Ok(lo)
}

/// Moves up to `plan.pages` base pages of the process off `plan.from`, round-robin over the
/// targets that have room (a target without room for a page is passed over; when none has,
/// the rest is reported `no room on the target nodes`), and reports what was done. Pages the
/// process does not have on the node are reported `not on the node`. The search continues
/// where the last one stopped (`cursors`).
pub(crate) fn move_off(
    sys: &mut dyn Sys,
    index: usize,
    mut plan: NodePagesPlan<'_>,
    cursors: &mut SearchCursors,
) -> Outcome {
    if plan.to.is_empty() || plan.to.contains(&plan.from) {
        return Outcome::failed(index, "the targets must be other nodes than the source");
    }
    let found = match find(sys, &plan, plan.pages, cursors) {
        Ok(f) => f,
        Err(e) if e == Errno::ESRCH => {
            return Outcome::skipped(index, plan.pages, format!("{} has exited", plan.pid));
        }
        Err(e) => return Outcome::failed(index, format!("move_pages query: {e}")),
    };
    let mut pages = Vec::new();
    let mut targets = Vec::new();
    let mut sizes: Vec<PageSize> = Vec::new();
    let mut no_room = 0u64;
    let mut next = 0usize;
    for (addr, size) in found {
        let fits = (0..plan.to.len())
            .map(|k| plan.to[(next + k) % plan.to.len()])
            .find(|n| plan.room.get(n).is_some_and(|&r| r >= size.bytes()));
        let Some(node) = fits else {
            no_room += size.base_pages();
            continue;
        };
        next = plan.to.iter().position(|n| *n == node).map_or(0, |p| p + 1);
        if let Some(r) = plan.room.get_mut(&node) {
            *r -= size.bytes();
        }
        pages.push(addr);
        targets.push(i32::from(node.0));
        sizes.push(size);
    }
    let found_base: u64 = sizes.iter().map(|s| s.base_pages()).sum::<u64>() + no_room;
    // One move per page size, so that each report converts exactly to base pages.
    let (mut done, mut moved) = (0u64, 0u64);
    let mut copied = 0u64;
    let mut failures: BTreeMap<String, u64> = BTreeMap::new();
    for size in [PageSize::Base4K, PageSize::Huge2M] {
        let (p, t): (Vec<u64>, Vec<i32>) = pages
            .iter()
            .zip(&targets)
            .zip(&sizes)
            .filter(|(_, s)| **s == size)
            .map(|((p, t), _)| (*p, *t))
            .unzip();
        if p.is_empty() {
            continue;
        }
        let report: MoveReport = match move_pages_to(sys, plan.pid, &p, &t) {
            Ok(r) => r,
            Err(e) if e == Errno::ESRCH => {
                return Outcome::skipped(index, plan.pages, format!("{} has exited", plan.pid));
            }
            Err(e) => return Outcome::failed(index, format!("move_pages: {e}")),
        };
        done += report.done * size.base_pages();
        moved += report.moved * size.base_pages();
        copied += report.moved * size.bytes();
        for (why, n) in report.failures {
            *failures.entry(why).or_default() += n * size.base_pages();
        }
    }
    if no_room > 0 {
        failures.insert("no room on the target nodes".into(), no_room);
    }
    let missing = plan.pages.saturating_sub(found_base);
    if missing > 0 {
        failures.insert(format!("not on {}", plan.from), missing);
    }
    let counts = PageCounts {
        requested: plan.pages,
        done,
        moved,
        bytes_copied: copied,
    };
    Outcome::for_pages(index, counts, failures.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{Call, FakeSys};

    const PID: i32 = 700;
    const BASE: u64 = 0x7f00_0000_0000;

    fn mapping(start: u64, pages: u64, by_node: &[(u16, u64)]) -> (NumaMapping, (u64, u64)) {
        let m = NumaMapping {
            start,
            policy: "default".into(),
            pages_by_node: by_node.iter().map(|&(n, p)| (NodeId(n), p)).collect(),
            page_size_kb: 4,
            anon: true,
            anon_pages: pages,
            huge: false,
            file: None,
        };
        (m, (start, start + pages * 4096))
    }

    /// A process whose 16 pages are on node 0, the last `on1` of them on node 1.
    fn fake(on1: u64) -> FakeSys {
        let pages: Vec<(u64, i32)> = (0..16)
            .map(|i| (BASE + i * 4096, if i >= 16 - on1 { 1 } else { 0 }))
            .collect();
        FakeSys::new().with_process(PID, &pages)
    }

    fn plan<'a>(
        to: &'a [NodeId],
        pages: u64,
        maps: &[(NumaMapping, (u64, u64))],
        room: &[(u16, u64)],
    ) -> NodePagesPlan<'a> {
        let numa: Vec<NumaMapping> = maps.iter().map(|m| m.0.clone()).collect();
        let ranges: Vec<(u64, u64)> = maps.iter().map(|m| m.1).collect();
        NodePagesPlan {
            pid: Pid(PID),
            from: NodeId(1),
            to,
            pages,
            extents: extents_on(&numa, &ranges, NodeId(1)),
            thp: &[],
            room: room.iter().map(|&(n, b)| (NodeId(n), b)).collect(),
        }
    }

    #[test]
    fn the_highest_pages_on_the_node_move_round_robin_over_the_targets() {
        let maps = [mapping(BASE, 16, &[(0, 10), (1, 6)])];
        let mut sys = fake(6);
        let to = [NodeId(2), NodeId(3)];
        let o = move_off(
            &mut sys,
            0,
            plan(&to, 4, &maps, &[(2, 1 << 30), (3, 1 << 30)]),
            &mut SearchCursors::default(),
        );
        assert_eq!((o.pages_requested, o.pages_done), (4, 4), "{o:?}");
        assert!(o.failures.is_empty(), "{o:?}");
        // Pages 15, 14, 13, 12 (the highest), to nodes 2, 3, 2, 3.
        let moves: Vec<&Call> = sys
            .calls
            .iter()
            .filter(|c| matches!(c, Call::MovePages { nodes: Some(_), .. }))
            .collect();
        let mut placed: Vec<(u64, i32)> = Vec::new();
        for c in moves {
            if let Call::MovePages {
                pages,
                nodes: Some(nodes),
                ..
            } = c
            {
                placed.extend(
                    pages
                        .iter()
                        .map(|p| (p - BASE) / 4096)
                        .zip(nodes.iter().copied()),
                );
            }
        }
        placed.sort_unstable();
        assert_eq!(placed, vec![(12, 3), (13, 2), (14, 3), (15, 2)]);
    }

    #[test]
    fn a_full_target_is_passed_over_and_none_left_is_reported() {
        let maps = [mapping(BASE, 16, &[(0, 10), (1, 6)])];
        let to = [NodeId(2), NodeId(3)];
        // Node 2 has room for one page, node 3 for none: one moves, the rest has no room.
        let mut sys = fake(6);
        let o = move_off(
            &mut sys,
            0,
            plan(&to, 4, &maps, &[(2, 4096), (3, 0)]),
            &mut SearchCursors::default(),
        );
        assert_eq!(o.pages_done, 1, "{o:?}");
        assert!(
            o.failures
                .contains(&("no room on the target nodes".into(), 3)),
            "{o:?}"
        );
    }

    #[test]
    fn asking_for_more_than_the_node_holds_moves_what_there_is() {
        let maps = [mapping(BASE, 16, &[(0, 14), (1, 2)])];
        let to = [NodeId(2)];
        let mut sys = fake(2);
        let o = move_off(
            &mut sys,
            0,
            plan(&to, 5, &maps, &[(2, 1 << 30)]),
            &mut SearchCursors::default(),
        );
        assert_eq!(o.pages_done, 2, "{o:?}");
        assert!(o.failures.contains(&("not on node1".into(), 3)), "{o:?}");
        // Targets that include the source are refused without a system call.
        let mut sys = fake(2);
        let bad = [NodeId(1)];
        let o = move_off(
            &mut sys,
            0,
            plan(&bad, 1, &maps, &[(1, 1 << 30)]),
            &mut SearchCursors::default(),
        );
        assert_eq!(o.status, rondpoint_model::OutcomeStatus::Failed);
        assert!(sys.calls.is_empty());
    }

    #[test]
    fn a_process_gone_is_skipped() {
        let maps = [mapping(BASE, 16, &[(1, 16)])];
        let mut sys = FakeSys::new();
        let to = [NodeId(2)];
        let o = move_off(
            &mut sys,
            0,
            plan(&to, 4, &maps, &[(2, 1 << 30)]),
            &mut SearchCursors::default(),
        );
        assert_eq!(o.status, rondpoint_model::OutcomeStatus::Skipped);
    }

    /// A process with one mapping of `pages` pages, each on the node `node_of` gives it.
    fn big(pages: u64, node_of: impl Fn(u64) -> i32) -> FakeSys {
        let placed: Vec<(u64, i32)> = (0..pages).map(|i| (BASE + i * 4096, node_of(i))).collect();
        FakeSys::new().with_process(PID, &placed)
    }

    /// The pages (as indices into the mapping) of every placement query since call `from`.
    fn queried_since(sys: &FakeSys, from: usize) -> Vec<u64> {
        sys.calls[from..]
            .iter()
            .filter_map(|c| match c {
                Call::MovePages {
                    pages, nodes: None, ..
                } => Some(pages.iter().map(|p| (p - BASE) / 4096)),
                _ => None,
            })
            .flatten()
            .collect()
    }

    #[test]
    fn each_search_continues_where_the_last_one_stopped() {
        // 4096 pages all on node 1; each epoch moves 1500 of them to node 2.
        let pages = 4096;
        let mut sys = big(pages, |_| 1);
        let mut cursors = SearchCursors::default();
        let maps = [mapping(BASE, pages, &[(1, pages)])];
        let to = [NodeId(2)];
        // Without the cursor each epoch would query again from page 4095 down, over the
        // pages already moved: the cost of an overflow would grow with its square.
        let epoch = |sys: &mut FakeSys, cursors: &mut SearchCursors, n: u64| {
            let before = sys.calls.len();
            let o = move_off(sys, 0, plan(&to, n, &maps, &[(2, 1 << 40)]), cursors);
            (o.pages_done, queried_since(sys, before))
        };
        // Each epoch reads nothing at or above where the last stopped: neither the pages it
        // moved nor those above them. The first takes pages 4095 down to 2596.
        let (done, first) = epoch(&mut sys, &mut cursors, 1500);
        assert_eq!(done, 1500);
        assert!(first.iter().all(|&p| p >= 2048), "two batches of 1024");
        for (ask, stopped) in [(1500, 2596), (1096, 1096)] {
            let (done, queried) = epoch(&mut sys, &mut cursors, ask);
            assert_eq!(done, ask);
            let again: Vec<&u64> = queried.iter().filter(|&&p| p >= stopped).collect();
            assert!(again.is_empty(), "read again: {again:?}");
        }
        assert!(sys.placement.values().all(|&n| n == 2));
    }

    #[test]
    fn the_search_wraps_to_the_top_and_starts_again_when_the_mapping_changes() {
        // Pages 8..16 of 16 on node 1: the first search takes 15..12 and stops at 12.
        let maps = [mapping(BASE, 16, &[(0, 8), (1, 8)])];
        let to = [NodeId(2)];
        let room = [(2, 1 << 30)];
        let mut sys = big(16, |i| if i >= 8 { 1 } else { 0 });
        let mut cursors = SearchCursors::default();
        let o = move_off(&mut sys, 0, plan(&to, 4, &maps, &room), &mut cursors);
        assert_eq!(o.pages_done, 4);
        // The program touches page 15 again on node 1 (moved back by the kernel, say), and
        // page 3 lands on node 1: the next search goes below 12 (11..8, then 3), wraps to
        // the top and finds 15.
        sys.placement.insert((PID, BASE + 15 * 4096), 1);
        sys.placement.insert((PID, BASE + 3 * 4096), 1);
        let before = sys.calls.len();
        let o = move_off(&mut sys, 0, plan(&to, 6, &maps, &room), &mut cursors);
        assert_eq!(o.pages_done, 6, "{o:?}");
        let q = queried_since(&sys, before);
        assert_eq!(
            q[..16],
            [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12]
        );
        // The mapping grows: searched from its new top.
        let grown = [mapping(BASE, 20, &[(0, 16), (1, 4)])];
        let mut sys = big(20, |i| if i == 19 { 1 } else { 0 });
        let o = move_off(&mut sys, 0, plan(&to, 1, &grown, &room), &mut cursors);
        assert_eq!(o.pages_done, 1);
        assert_eq!(queried_since(&sys, 0)[0], 19);
    }
}
