//! Counting samples into the table: one pass over an epoch's samples, asking for each slot's
//! cache line ahead of its sample.

use super::window::REFAULT_WEIGHT;
use super::{FAULTED, PageKey, PageTable, Slot, SpaceKeys, TRACKED};
use crate::metrics::{DenseNodes, RunTally, SampleTallies};
use rondpoint_model::{AccessKind, Sample, SampleSource};
use rustc_hash::FxHashSet;

/// [`PageTable::count`] asks for the slot of the sample this many samples on (measured: 12 to
/// 16 is best; 32 and 64 are 4% and 6% slower, 8 is 3% slower).
const AHEAD: usize = 16;

/// Starts loading the cache line of `slot` ahead of its use: a plain read the compiler must
/// keep (`black_box`), which the processor issues out of order and moves on from, as it would
/// a prefetch (a missing line holds a load-queue entry until it arrives). An `_mm_prefetch`
/// hint is faster still (about 20% off the decision benchmark), but it is an unsafe
/// intrinsic, and rondpoint keeps its unsafe code in the live backend's syscall layer.
#[inline(always)]
fn prefetch(slot: &Slot) {
    std::hint::black_box(slot.key);
}

impl PageTable {
    /// Asks for slot `i`'s cache line ahead of use.
    fn prefetch(&self, i: usize) {
        if let Some(slot) = self.slots.get(i) {
            prefetch(slot);
        }
    }

    /// The slots listed in `list` (slot numbers), in order, with their numbers; each slot's
    /// cache line is asked for [`AHEAD`] places before its turn.
    #[inline]
    pub(crate) fn listed<'a>(
        &'a self,
        list: &'a [u32],
    ) -> impl Iterator<Item = (usize, &'a Slot)> + 'a {
        list.iter().enumerate().map(move |(k, &i)| {
            if let Some(&ahead) = list.get(k + AHEAD) {
                self.prefetch(ahead as usize);
            }
            (i as usize, &self.slots[i as usize])
        })
    }

    /// Counts an epoch's samples into the table, tracking at most `max_tracked` pages, and
    /// tallies them by process into `tallies` (all of them, including those not counted). The
    /// first hinting-fault sample of a page is only remembered in `faulted` (it may be the
    /// first touch).
    ///
    /// One pass: before counting a sample, it asks for the cache line of the slot of the
    /// sample [`AHEAD`] places on, which is on its way by the time that sample is counted.
    pub(crate) fn count(
        &mut self,
        samples: &[Sample],
        nodes: &DenseNodes,
        faulted: &mut FxHashSet<PageKey>,
        max_tracked: usize,
        tallies: &mut SampleTallies,
    ) {
        let mut tally = RunTally::new(nodes);
        let mut any_fault = false;
        let mut k = 0;
        // Samples come in long runs of one process: its space is looked up, and its tallies
        // kept, once a run. Within a run, the slot of the sample `AHEAD` on is asked for with
        // the run's keys (a sample of the next run gets a useless prefetch, no more); a new
        // run asks for its first `AHEAD` slots again with its own keys, as far as the run
        // goes (runs of a few samples, as when a process's samples alternate between base and
        // huge pages, do not pay for `AHEAD` prefetches each).
        while let Some(first) = samples.get(k) {
            let (pid, size) = (first.pid, first.page_size);
            tally.start(pid, tallies);
            let keys = self
                .space(pid, size)
                .map_or(SpaceKeys::NONE, |space| SpaceKeys::new(space, size));
            for a in samples[k..]
                .iter()
                .take(AHEAD)
                .take_while(|a| a.pid == pid && a.page_size == size)
            {
                self.prefetch(self.home_slot(keys.key(a.addr)));
            }
            while let Some(s) = samples.get(k) {
                if s.pid != pid || s.page_size != size {
                    break;
                }
                if let Some(a) = samples.get(k + AHEAD) {
                    self.prefetch(self.home_slot(keys.key(a.addr)));
                }
                k += 1;
                let key = keys.key(s.addr);
                let (home, fault) = tally.count(s, nodes);
                if fault {
                    // Rare beside sampled accesses, and kept out of line so that the loop's
                    // state stays in registers.
                    any_fault |= self.count_fault(s, key, home, nodes, faulted, max_tracked);
                } else {
                    self.count_one::<false>(s, key, home, nodes, max_tracked);
                }
            }
        }
        tally.end(tallies);
        if any_fault {
            self.fault_tick = Some(self.tick);
        }
    }

    /// [`Self::count_one`] of a page-fault or hinting-fault sample, whose first of a page is
    /// only remembered in `faulted` (it may be the first touch).
    #[cold]
    #[inline(never)]
    fn count_fault(
        &mut self,
        s: &Sample,
        key: u64,
        home: usize,
        nodes: &DenseNodes,
        faulted: &mut FxHashSet<PageKey>,
        max_tracked: usize,
    ) -> bool {
        if s.source == SampleSource::HintingFault && faulted.insert((s.pid, s.page(), s.page_size))
        {
            return false;
        }
        self.count_one::<true>(s, key, home, nodes, max_tracked)
    }

    /// Counts sample `s` of page `key` (0: a page without a key, not counted), `home` as
    /// [`RunTally::count`] returns it, into the table; `FAULT` for a fault sample. Returns
    /// whether the sample was counted into a page's statistics.
    #[inline(always)]
    fn count_one<const FAULT: bool>(
        &mut self,
        s: &Sample,
        key: u64,
        home: usize,
        nodes: &DenseNodes,
        max_tracked: usize,
    ) -> bool {
        if key == 0 {
            return false;
        }
        let full = self.current.len() >= max_tracked;
        let i = match self.probe(key) {
            Ok(i) => i,
            Err(_) if full => return false,
            Err(_) => self.entry(key),
        };
        let stale = !self.is_current(i);
        if stale {
            if full {
                return false;
            }
            self.current.push(i as u32);
        }
        let epoch = self.epoch;
        let slot = &mut self.slots[i];
        let node = nodes.index(s.node);
        if node == u16::MAX {
            if stale {
                slot.reset_stats();
                slot.marks |= TRACKED;
            }
            slot.seen = epoch;
            return false;
        }
        let write = s.kind == AccessKind::Write;
        // A fault sample on a page whose last sample was one too (in the window or not): the
        // gap between them is what the window must hold.
        if FAULT && slot.marks & (TRACKED | FAULTED) == TRACKED | FAULTED {
            let gap = epoch.wrapping_sub(slot.seen);
            if gap > 0 {
                self.refault_gaps[(15 - gap.leading_zeros()) as usize] += REFAULT_WEIGHT;
            }
        }
        // Samples taken while the page was elsewhere say nothing about where it should go
        // now (its first-touch fault, or a node it was moved away from): start afresh.
        // Starting afresh stores the counts without loading them first: a store of zeros
        // followed by the load of the counts would stall the load (which the compiler makes
        // one wide load, over fields stored apart).
        let home = home as u16;
        if stale || (home != 0 && slot.home != 0 && home != u16::from(slot.home)) {
            slot.restart(usize::from(node), write);
        } else {
            slot.record(usize::from(node), write);
        }
        if home != 0 {
            slot.set_home(usize::from(home - 1));
        }
        if FAULT {
            slot.marks |= FAULTED;
        }
        // Stored last, for the same reason.
        slot.seen = epoch;
        true
    }
}
