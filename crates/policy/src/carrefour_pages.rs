//! Carrefour's per-page state: one open-addressing table of 32-byte slots, each holding a
//! page's key, its sampled accesses within the statistics window, and what Carrefour remembers
//! of it for good (replicated, how often it collapsed).
//!
//! Written by hand because the cost of a sample is the number of cache lines it touches: a
//! general map from page to an index into separate statistics (hashbrown, as before) touches
//! the map's control bytes, its entry and the statistics, and the replicated set and collapse
//! counts were two more maps probed per page. Here the key and everything kept about the page
//! share one slot, two slots per cache line, with linear probing (the next slot is usually in
//! the same line). With 100,000 samples over 30,000 pages per epoch (issue 4's benchmark) the
//! table is 2 MB, and that one access per sample is most of Carrefour's decision time.
//!
//! Statistics are reset lazily: a slot's are current while it was sampled within its window
//! (1 epoch for IBS/PEBS samples; the fault-sample window once a page fault or hinting fault is
//! among them), and the first sample after that starts them afresh, so nothing is cleared
//! between epochs. The fault-sample window follows the kernel's scanner: the table measures how
//! long pages go between two fault samples, and the window grows to hold most of those gaps
//! (see [`PageTable::begin_epoch`]), since a page takes one hinting fault per scan of its
//! process and needs two samples before Carrefour decides anything about it. Slots that are
//! neither current nor remembered for good are dropped when the table is rebuilt, which happens
//! when it fills up (three quarters).

use crate::metrics::{DenseNodes, RunTally, SampleTallies};
use rondpoint_model::{AccessKind, PageSize, Pid, Sample, SampleSource};
use rustc_hash::{FxHashMap, FxHashSet};

/// A page: process, start address, page size.
pub(crate) type PageKey = (Pid, u64, PageSize);

/// Most nodes whose sample counts are kept per page (dense index); accesses from any of the
/// first 64 nodes are seen in the node mask that drives decisions.
pub const COUNTED_NODES: usize = 8;

/// Bits of a page number in a packed key: page numbers of 57-bit addresses (5-level paging)
/// with 4 KiB pages.
const PAGE_BITS: u32 = 45;
/// Most (process, page size) spaces at once: the rest of a packed key, less the empty key 0.
const MAX_SPACES: usize = (1 << (64 - PAGE_BITS)) - 1;
/// Smallest table (slots).
const MIN_SLOTS: usize = 1024;
/// A slot marked replicated.
const REPLICATED: u8 = 0x80;
/// A slot whose statistics were started in some epoch (see `seen`).
const TRACKED: u8 = 0x40;
/// A slot whose statistics include a page-fault or hinting-fault sample: they are kept over the
/// fault-sample window instead of one epoch.
const FAULTED: u8 = 0x20;
/// Collapses counted (saturating).
const COLLAPSES: u8 = 0x1f;
/// Collapses are counted up to this.
pub(crate) const MAX_COLLAPSES: u32 = COLLAPSES as u32;
/// Epochs between sweeps of stale statistics: epochs are kept in 16 bits, so a slot must not go
/// unsampled for 65,536 epochs while still marked tracked.
const SWEEP_EPOCHS: u32 = 8192;
/// Longest statistics window the 16-bit epochs allow (with the sweep above).
pub(crate) const MAX_WINDOW_EPOCHS: u32 = 4096;

/// The fault-sample window is made to hold this share of the measured gaps between a page's
/// successive fault samples. Chosen: three quarters, so that the pages the scanner reaches late
/// in a scan of a large process still count, without letting the slowest tail (a page missed
/// by a scan) set the window.
const REFAULT_SHARE: (u64, u64) = (3, 4);
/// Each epoch the gaps measured so far weigh this much less (1/16): the window follows a
/// scanner whose period changes (Linux doubles or halves it as faults turn local or remote)
/// over some tens of epochs.
const REFAULT_DECAY_SHIFT: u32 = 4;
/// Weight of one measured gap (fixed point, so that decay keeps a few old gaps visible).
const REFAULT_WEIGHT: u64 = 1 << 10;

/// [`PageTable::count`] asks for the slot of the sample this many samples on (measured: 12 to
/// 16 is best; 32 and 64 are 4% and 6% slower, 8 is 3% slower).
const AHEAD: usize = 16;

/// Brings the cache line of `slot` in, without waiting for it.
#[inline(always)]
fn prefetch(slot: &Slot) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it reads nothing into the program, cannot fault, and
    // `slot` is a valid reference anyway. It is an unsafe intrinsic only because it needs SSE,
    // which every x86-64 processor has.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(slot).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = slot;
}

/// One page's slot.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(32))]
pub(crate) struct Slot {
    /// Packed (space + 1, page number); 0 for an empty slot.
    key: u64,
    /// Nodes that accessed it (bit per dense node index; up to 64 nodes).
    pub(crate) node_mask: u64,
    /// Samples from each of the first [`COUNTED_NODES`] nodes (saturating).
    pub(crate) by_node: [u8; COUNTED_NODES],
    /// Samples (saturating).
    pub(crate) samples: u16,
    /// Of which writes (saturating).
    pub(crate) writes: u16,
    /// Low 16 bits of the tick of the last epoch a sample fell in the page.
    seen: u16,
    /// Where the page was per the latest sample that knew: dense node index + 1, 0 unknown.
    home: u8,
    /// `REPLICATED | TRACKED | FAULTED | collapses`.
    marks: u8,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 32);

impl Slot {
    /// Forgets the sampled accesses (not what is remembered for good).
    pub(crate) fn reset_stats(&mut self) {
        self.node_mask = 0;
        self.by_node = [0; COUNTED_NODES];
        self.samples = 0;
        self.writes = 0;
        self.home = 0;
        self.marks &= !FAULTED;
    }

    /// Counts one sample from dense node `node`.
    pub(crate) fn record(&mut self, node: usize, write: bool) {
        if node < 64 {
            self.node_mask |= 1 << node;
        }
        if let Some(c) = self.by_node.get_mut(node) {
            *c = c.saturating_add(1);
        }
        self.samples = self.samples.saturating_add(1);
        self.writes = self.writes.saturating_add(u16::from(write));
    }

    /// [`Self::reset_stats`] then [`Self::record`], and marks the slot tracked, without
    /// loading the counts.
    pub(crate) fn restart(&mut self, node: usize, write: bool) {
        self.node_mask = if node < 64 { 1 << node } else { 0 };
        self.by_node = [0; COUNTED_NODES];
        if let Some(c) = self.by_node.get_mut(node) {
            *c = 1;
        }
        self.samples = 1;
        self.writes = u16::from(write);
        self.home = 0;
        self.marks = (self.marks & !FAULTED) | TRACKED;
    }

    /// Dense index of the node holding the page, if known.
    pub(crate) fn home(&self) -> Option<usize> {
        (self.home > 0).then(|| usize::from(self.home - 1))
    }

    /// Where the page is, as kept: 0 unknown, else dense node index + 1.
    pub(crate) fn home_code(&self) -> u8 {
        self.home
    }

    /// Records where the page is (dense index; nodes beyond 254 are not recorded).
    pub(crate) fn set_home(&mut self, node: usize) {
        self.home = u8::try_from(node + 1).unwrap_or(0);
    }

    pub(crate) fn replicated(&self) -> bool {
        self.marks & REPLICATED != 0
    }

    pub(crate) fn set_replicated(&mut self, on: bool) {
        if on {
            self.marks |= REPLICATED;
        } else {
            self.marks &= !REPLICATED;
        }
    }

    /// Collapses of its replicas so far (saturating at 31).
    pub(crate) fn collapses(&self) -> u32 {
        u32::from(self.marks & COLLAPSES)
    }

    pub(crate) fn add_collapses(&mut self, n: u32) {
        let c = (self.collapses().saturating_add(n)).min(u32::from(COLLAPSES)) as u8;
        self.marks = (self.marks & !COLLAPSES) | c;
    }

    /// The packed key (0 for an empty slot).
    pub(crate) fn packed_key(&self) -> u64 {
        self.key
    }

    /// Remembered whatever its statistics (so never dropped).
    fn kept_for_good(&self) -> bool {
        self.marks & (REPLICATED | COLLAPSES) != 0
    }
}

/// The table; see the module documentation.
#[derive(Debug)]
pub(crate) struct PageTable {
    /// A power of two of slots.
    slots: Vec<Slot>,
    /// 64 - log2(slots): a key's hash shifted right by this is its home slot.
    hash_shift: u32,
    /// Occupied slots.
    used: usize,
    /// (process, page size) of each space number.
    spaces: Vec<(Pid, PageSize)>,
    space_of: FxHashMap<(Pid, PageSize), u32>,
    /// Epochs started (each call of `begin_epoch`, plus gaps in the epoch numbers), its low 16
    /// bits, and the statistics window of pages with fault samples.
    tick: u32,
    epoch: u16,
    window: u16,
    /// `tick` of the last epoch that counted a fault sample.
    fault_tick: Option<u32>,
    /// Measured gaps (epochs) between a page's successive fault samples, by power of two:
    /// bucket `b` holds gaps of `2^b` to `2^(b+1) - 1` epochs, with weights that decay.
    refault_gaps: [u64; 16],
    /// The last epoch number seen.
    last_epoch: Option<u64>,
    /// `tick` at the last sweep.
    swept: u32,
    /// The slots whose statistics are current, in the order they became so (the first sample
    /// in the window).
    current: Vec<u32>,
}

impl Default for PageTable {
    fn default() -> Self {
        Self {
            slots: vec![Slot::default(); MIN_SLOTS],
            hash_shift: 64 - MIN_SLOTS.trailing_zeros(),
            used: 0,
            spaces: Vec::new(),
            space_of: FxHashMap::default(),
            tick: 0,
            epoch: 0,
            window: 1,
            fault_tick: None,
            refault_gaps: [0; 16],
            last_epoch: None,
            swept: 0,
            current: Vec::new(),
        }
    }
}

fn shift(size: PageSize) -> u32 {
    size.bytes().trailing_zeros()
}

/// How the pages of one space are keyed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SpaceKeys {
    /// The space's bits of a key.
    high: u64,
    /// log2 of the page size.
    shift: u32,
    /// Page numbers below this have a key (none in [`Self::NONE`]).
    limit: u64,
}

impl SpaceKeys {
    /// A space without keys (one that could not be numbered).
    const NONE: Self = Self {
        high: 0,
        shift: 0,
        limit: 0,
    };

    fn new(space: u32, size: PageSize) -> Self {
        Self {
            high: (u64::from(space) + 1) << PAGE_BITS,
            shift: shift(size),
            limit: 1 << PAGE_BITS,
        }
    }

    /// The key of the page holding address `addr`: 0 (no key) for an address beyond 57 bits,
    /// or in a space without keys.
    #[inline(always)]
    fn key(self, addr: u64) -> u64 {
        let number = addr >> self.shift;
        if number < self.limit {
            self.high | number
        } else {
            0
        }
    }
}

impl PageTable {
    /// Starts an epoch. Statistics from IBS/PEBS samples cover it only; those of a page with a
    /// fault sample among them cover the last `window` epochs, where `window` is the shortest
    /// power of two above the gaps between successive fault samples of a page that counting
    /// has measured (three quarters of them, weighted toward recent epochs), but at least
    /// `min_window` and at most `max_window` (pass the same value twice for a fixed window).
    /// Every call is a new epoch, even one that repeats the last number (a replayed or
    /// hand-built observation); a gap in the numbers ages the statistics by the gap.
    pub(crate) fn begin_epoch(&mut self, epoch: u64, min_window: u32, max_window: u32) {
        for g in &mut self.refault_gaps {
            *g -= *g >> REFAULT_DECAY_SHIFT;
        }
        let max_window = max_window.clamp(1, MAX_WINDOW_EPOCHS);
        let window = self
            .measured_window()
            .clamp(min_window.clamp(1, max_window), max_window);
        let step = match self.last_epoch {
            Some(last) if epoch > last => (epoch - last).min(u64::from(MAX_WINDOW_EPOCHS)) as u32,
            _ => 1,
        };
        self.last_epoch = Some(epoch);
        self.tick = self.tick.wrapping_add(step);
        self.epoch = self.tick as u16;
        self.window = window as u16;
        if self.spaces.len() >= MAX_SPACES / 2 {
            self.rebuild(0, true);
        }
        if self.tick.wrapping_sub(self.swept) >= SWEEP_EPOCHS {
            self.swept = self.tick;
            for i in 0..self.slots.len() {
                if self.slots[i].marks & TRACKED != 0 && !self.is_current(i) {
                    let s = &mut self.slots[i];
                    s.marks &= !TRACKED;
                    s.reset_stats();
                }
            }
        }
        // Statistics from earlier epochs are current only if they have fault samples.
        match self.fault_tick {
            Some(t) if self.tick.wrapping_sub(t) < u32::from(self.window) => self.list_current(),
            _ => self.current.clear(),
        }
    }

    /// The window that holds [`REFAULT_SHARE`] of the measured gaps between fault samples
    /// (0 when none was measured).
    fn measured_window(&self) -> u32 {
        let total: u64 = self.refault_gaps.iter().sum();
        let mut below = 0;
        for (b, &weight) in self.refault_gaps.iter().enumerate() {
            below += weight;
            if below > 0 && below * REFAULT_SHARE.1 >= total * REFAULT_SHARE.0 {
                return 2 << b;
            }
        }
        0
    }

    /// The fault-sample window of this epoch.
    #[cfg(test)]
    fn window(&self) -> u32 {
        u32::from(self.window)
    }

    /// The space number of (process, page size), added if new; `None` once there are
    /// `MAX_SPACES` (spaces nothing is kept for are dropped at the start of an epoch, so keys
    /// stay valid within one).
    fn space(&mut self, pid: Pid, size: PageSize) -> Option<u32> {
        if let Some(&s) = self.space_of.get(&(pid, size)) {
            return Some(s);
        }
        if self.spaces.len() >= MAX_SPACES {
            return None;
        }
        let s = self.spaces.len() as u32;
        self.spaces.push((pid, size));
        self.space_of.insert((pid, size), s);
        Some(s)
    }

    /// The packed key of a page of space `space` (`None` for an address beyond 57 bits).
    fn key(&self, space: u32, page: u64) -> Option<u64> {
        let &(_, size) = self.spaces.get(space as usize)?;
        Some(SpaceKeys::new(space, size).key(page)).filter(|&k| k != 0)
    }

    /// The packed key of a page, if its space exists.
    fn existing_key(&self, page: &PageKey) -> Option<u64> {
        let &space = self.space_of.get(&(page.0, page.2))?;
        self.key(space, page.1)
    }

    /// The space number of a packed key.
    pub(crate) fn space_of_key(key: u64) -> usize {
        ((key >> PAGE_BITS) as usize).saturating_sub(1)
    }

    /// (process, page size) of each space number.
    pub(crate) fn spaces(&self) -> &[(Pid, PageSize)] {
        &self.spaces
    }

    /// The page a packed key stands for.
    pub(crate) fn page(&self, key: u64) -> PageKey {
        let space = (key >> PAGE_BITS) as usize - 1;
        let (pid, size) = self.spaces[space];
        (pid, (key & ((1 << PAGE_BITS) - 1)) << shift(size), size)
    }

    fn home_slot(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.hash_shift) as usize
    }

    /// `Ok(slot)` holding `key`, or `Err(slot)` where it would go.
    fn probe(&self, key: u64) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home_slot(key);
        loop {
            match self.slots[i].key {
                k if k == key => return Ok(i),
                0 => return Err(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// The slot of a page, if present.
    pub(crate) fn get(&self, page: &PageKey) -> Option<(usize, &Slot)> {
        let i = self.probe(self.existing_key(page)?).ok()?;
        Some((i, &self.slots[i]))
    }

    /// The slot of `key`, added (with nothing recorded) if new.
    fn entry(&mut self, key: u64) -> usize {
        match self.probe(key) {
            Ok(i) => i,
            Err(mut i) => {
                if 4 * (self.used + 1) > 3 * self.slots.len() {
                    self.rebuild(1, false);
                    i = self.probe(key).unwrap_or_else(|e| e);
                }
                self.slots[i] = Slot {
                    key,
                    ..Slot::default()
                };
                self.used += 1;
                i
            }
        }
    }

    /// The slot of a page, added if new (`None` if its space or address cannot be keyed).
    pub(crate) fn entry_for(&mut self, page: &PageKey) -> Option<usize> {
        let space = self.space(page.0, page.2)?;
        let key = self.key(space, page.1)?;
        Some(self.entry(key))
    }

    /// Asks for slot `i`'s cache line ahead of use.
    pub(crate) fn prefetch(&self, i: usize) {
        if let Some(slot) = self.slots.get(i) {
            prefetch(slot);
        }
    }

    pub(crate) fn slot(&self, i: usize) -> &Slot {
        &self.slots[i]
    }

    pub(crate) fn slot_mut(&mut self, i: usize) -> &mut Slot {
        &mut self.slots[i]
    }

    /// Whether slot `i` has statistics from within the window.
    pub(crate) fn is_current(&self, i: usize) -> bool {
        self.slot_is_current(&self.slots[i])
    }

    fn slot_is_current(&self, s: &Slot) -> bool {
        let window = if s.marks & FAULTED != 0 {
            self.window
        } else {
            1
        };
        s.marks & TRACKED != 0 && self.epoch.wrapping_sub(s.seen) < window
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

    /// Marks slot `i` sampled in this epoch, starting its statistics afresh if they are not
    /// current (what counting does before recording a sample; for tests that build slots by
    /// hand).
    #[cfg(test)]
    fn touch(&mut self, i: usize) {
        if !self.is_current(i) {
            let s = &mut self.slots[i];
            s.reset_stats();
            s.marks |= TRACKED;
            self.current.push(i as u32);
        }
        self.slots[i].seen = self.epoch;
    }

    /// Slots whose statistics are current.
    pub(crate) fn tracked(&self) -> usize {
        self.current.len()
    }

    /// The slots whose statistics are current, in the order they became so.
    pub(crate) fn current(&self) -> &[u32] {
        &self.current
    }

    /// Lists the current slots, in table order.
    fn list_current(&mut self) {
        self.current = (0..self.slots.len())
            .filter(|&i| self.is_current(i))
            .map(|i| i as u32)
            .collect();
    }

    /// Bytes held.
    pub(crate) fn state_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.current.capacity() * std::mem::size_of::<u32>()
            + self.spaces.capacity() * std::mem::size_of::<(Pid, PageSize)>()
            + self.space_of.capacity() * (std::mem::size_of::<((Pid, PageSize), u32)>() + 1)
    }

    /// Rebuilds the table with the slots still worth keeping (current, or remembered for good)
    /// and room for `extra` more, at most half full. With `renumber`, spaces nothing is kept
    /// for are dropped and the rest renumbered (keys change); otherwise keys stay valid.
    fn rebuild(&mut self, extra: usize, renumber: bool) {
        let old = std::mem::take(&mut self.slots);
        let mut keep: Vec<Slot> = old
            .iter()
            .filter(|s| s.key != 0 && (s.kept_for_good() || self.slot_is_current(s)))
            .copied()
            .collect();
        if renumber {
            let pages: Vec<PageKey> = keep.iter().map(|s| self.page(s.key)).collect();
            self.spaces.clear();
            self.space_of.clear();
            for (slot, page) in keep.iter_mut().zip(pages) {
                // No more spaces than before, and the same addresses: both always fit.
                let space = self.space(page.0, page.2).unwrap_or(0);
                slot.key = self.key(space, page.1).unwrap_or(0);
            }
        }
        let want = (2 * (keep.len() + extra))
            .max(MIN_SLOTS)
            .next_power_of_two();
        self.slots = vec![Slot::default(); want];
        self.hash_shift = 64 - want.trailing_zeros();
        self.used = 0;
        for slot in keep {
            if slot.key == 0 {
                continue;
            }
            let i = self.probe(slot.key).unwrap_or_else(|e| e);
            self.slots[i] = slot;
            self.used += 1;
        }
        if renumber {
            self.list_current();
        } else {
            // Same keys: the current slots keep their order at their new places.
            let mut current = std::mem::take(&mut self.current);
            for i in &mut current {
                let key = old[*i as usize].key;
                *i = self.probe(key).unwrap_or_else(|e| e) as u32;
            }
            self.current = current;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::synthetic::TopologyBuilder;
    use rondpoint_model::{CpuId, NodeId, Observation, Tid};

    fn page(n: u64) -> PageKey {
        (Pid(7), 0x7f00_0000_0000 + n * 4096, PageSize::Base4K)
    }

    proptest::proptest! {
        /// Starting a slot afresh with a sample is forgetting its statistics, then counting
        /// the sample, and marking it tracked.
        #[test]
        fn restarting_is_resetting_then_recording(
            counts in proptest::collection::vec((0usize..10, proptest::bool::ANY), 0..6),
            marks in 0u8..=255,
            home in proptest::option::of(0usize..4),
            node in 0usize..70,
            write in proptest::bool::ANY,
        ) {
            let mut slot = Slot { marks, ..Slot::default() };
            for (n, w) in counts {
                slot.record(n, w);
            }
            if let Some(h) = home {
                slot.set_home(h);
            }
            let mut expected = slot;
            expected.reset_stats();
            expected.record(node, write);
            expected.marks |= TRACKED;
            slot.restart(node, write);
            proptest::prop_assert_eq!(format!("{slot:?}"), format!("{expected:?}"));
        }
    }

    #[test]
    fn keys_round_trip_for_both_page_sizes_and_the_largest_address() {
        let mut t = PageTable::default();
        for p in [
            page(0),
            (Pid(1), 0x1ff_ffff_ffff_f000, PageSize::Base4K),
            (Pid(i32::MAX), 0x7f00_0020_0000, PageSize::Huge2M),
        ] {
            let space = t.space(p.0, p.2).unwrap();
            let key = t.key(space, p.1).unwrap();
            assert_eq!(t.page(key), p);
        }
        let space = t.space(Pid(1), PageSize::Base4K).unwrap();
        assert_eq!(t.key(space, 1 << 57), None, "beyond 57-bit addresses");
    }

    #[test]
    fn statistics_last_one_epoch_and_marks_last_for_good() {
        let mut t = PageTable::default();
        t.begin_epoch(1, 1, 1);
        let i = t.entry_for(&page(1)).unwrap();
        t.touch(i);
        t.slot_mut(i).record(2, true);
        t.slot_mut(i).add_collapses(70);
        assert_eq!(t.tracked(), 1);
        assert_eq!(t.get(&page(1)).unwrap().1.samples, 1);
        assert_eq!(t.get(&page(1)).unwrap().1.collapses(), 31, "saturates");
        t.begin_epoch(2, 1, 1);
        assert_eq!(t.tracked(), 0);
        assert!(!t.is_current(i));
        t.touch(i);
        let s = t.slot(i);
        assert_eq!((s.samples, s.writes, s.node_mask), (0, 0, 0), "afresh");
        assert_eq!(s.collapses(), 31);
    }

    /// A sample of page `n` from node `node`, by `source`.
    fn sample(n: u64, node: u16, source: SampleSource) -> Sample {
        Sample {
            pid: Pid(7),
            tid: Tid(7),
            cpu: CpuId(0),
            node: NodeId(node),
            addr: page(n).1 + 8,
            page_size: PageSize::Base4K,
            kind: AccessKind::Read,
            source,
            latency_cycles: None,
            dram: None,
            home_node: Some(NodeId(0)),
        }
    }

    /// Counts `samples` into `t` in a new epoch with a fixed fault-sample window, on a 2-node
    /// machine.
    fn epoch(t: &mut PageTable, epoch: u64, window: u32, samples: &[Sample]) -> SampleTallies {
        epoch_within(t, epoch, (window, window), samples)
    }

    /// [`epoch`], with the fault-sample window measured within `(min, max)`.
    fn epoch_within(
        t: &mut PageTable,
        epoch: u64,
        (min, max): (u32, u32),
        samples: &[Sample],
    ) -> SampleTallies {
        let topo = TopologyBuilder::new(2).build().unwrap();
        let mut tallies = SampleTallies::default();
        t.begin_epoch(epoch, min, max);
        t.count(
            samples,
            &DenseNodes::new(&topo),
            &mut FxHashSet::default(),
            100,
            &mut tallies,
        );
        tallies
    }

    #[test]
    fn fault_samples_are_kept_over_the_window_and_ibs_samples_one_epoch() {
        let mut t = PageTable::default();
        // Pages 0-2 by page faults, pages 10-11 by IBS, in epoch 10.
        let mut samples: Vec<Sample> = (0..3)
            .map(|n| sample(n, 1, SampleSource::PageFault))
            .collect();
        samples.extend((10..12).map(|n| sample(n, 1, SampleSource::Ibs)));
        epoch(&mut t, 10, 3, &samples);
        assert_eq!(t.tracked(), 5);
        // The next epoch, with nothing sampled: the fault-sampled pages are still current.
        epoch(&mut t, 11, 3, &[]);
        assert_eq!(t.tracked(), 3);
        assert!(t.get(&page(10)).is_some_and(|(i, _)| !t.is_current(i)));
        // A sample in the window's last epoch adds to what it holds.
        epoch(&mut t, 12, 3, &[sample(0, 0, SampleSource::PageFault)]);
        let (i, s) = t.get(&page(0)).unwrap();
        assert!(t.is_current(i));
        assert_eq!((s.samples, s.node_mask), (2, 0b11));
        // Beyond the window, the pages not sampled since epoch 10 are gone.
        epoch(&mut t, 13, 3, &[]);
        assert_eq!(t.tracked(), 1, "page 0, sampled in epoch 12");
        epoch(&mut t, 15, 3, &[]);
        assert_eq!(t.tracked(), 0);
    }

    #[test]
    fn the_fault_window_grows_to_hold_the_gaps_between_faults_and_shrinks_back() {
        let mut t = PageTable::default();
        let faults = |node| -> Vec<Sample> {
            (0..10)
                .map(|n| sample(n, node, SampleSource::PageFault))
                .collect()
        };
        // Pages faulted in epoch 1, then 11 epochs later: the window (8 at least) grows to 16,
        // the power of two above the gap, and the second fault adds to the first.
        epoch_within(&mut t, 1, (8, 256), &faults(1));
        for e in 2..12 {
            epoch_within(&mut t, e, (8, 256), &[]);
            assert_eq!(t.window(), 8, "nothing measured yet");
        }
        epoch_within(&mut t, 12, (8, 256), &faults(0));
        assert_eq!(
            t.get(&page(0)).unwrap().1.samples,
            1,
            "the first had expired"
        );
        epoch_within(&mut t, 13, (8, 256), &[]);
        assert_eq!(t.window(), 16);
        for e in 14..23 {
            epoch_within(&mut t, e, (8, 256), &[]);
        }
        epoch_within(&mut t, 23, (8, 256), &faults(1));
        let (i, s) = t.get(&page(0)).unwrap();
        assert!(t.is_current(i));
        assert_eq!((s.samples, s.node_mask), (2, 0b11));
        // The longest window allowed caps it.
        epoch_within(&mut t, 24, (8, 10), &[]);
        assert_eq!(t.window(), 10);
        // Faults every epoch from then on: once they are most of what is measured (the older
        // gaps weigh less every epoch), the window is back to its shortest.
        let mut e = 25;
        while t.window() > 8 {
            epoch_within(&mut t, e, (8, 256), &faults(1));
            e += 1;
            assert!(e < 60, "the window never shrank: {}", t.window());
        }
        assert!(
            e > 26,
            "one epoch of short gaps is not three quarters of them"
        );
    }

    #[test]
    fn one_process_s_base_and_huge_pages_are_counted_apart_however_their_samples_alternate() {
        // One process, runs of one sample each: a base page, then the huge page holding it
        // (the same address, another page size), and so on. Each sample must be keyed with
        // its own page size, and the runs must not be taken for one.
        let mut t = PageTable::default();
        let huge = |node| Sample {
            page_size: PageSize::Huge2M,
            ..sample(0, node, SampleSource::Ibs)
        };
        let samples = [
            sample(0, 0, SampleSource::Ibs),
            huge(1),
            sample(0, 0, SampleSource::Ibs),
            huge(1),
            huge(1),
        ];
        epoch(&mut t, 1, 1, &samples);
        let base = t.get(&page(0)).map(|(_, s)| (s.samples, s.node_mask));
        let start = page(0).1 & !(PageSize::Huge2M.bytes() - 1);
        let huge = t
            .get(&(Pid(7), start, PageSize::Huge2M))
            .map(|(_, s)| (s.samples, s.node_mask));
        assert_eq!(base, Some((2, 0b01)));
        assert_eq!(huge, Some((3, 0b10)));
        assert_eq!(t.tracked(), 2);
    }

    #[test]
    fn counting_tallies_every_sample_by_process() {
        let mut t = PageTable::default();
        let mut samples = vec![
            sample(0, 0, SampleSource::Ibs),
            sample(1, 1, SampleSource::HintingFault),
            Sample {
                addr: 1 << 60,
                ..sample(2, 0, SampleSource::Ibs)
            },
        ];
        samples.push(Sample {
            pid: Pid(8),
            home_node: None,
            ..sample(3, 1, SampleSource::Ibs)
        });
        samples.push(sample(4, 1, SampleSource::PageFault));
        let tallies = epoch(&mut t, 1, 1, &samples);
        let topo = TopologyBuilder::new(2).build().unwrap();
        // Every sample is tallied, whether counted into a page or not (the first hinting fault
        // of a page, an address beyond 57 bits), and a process's runs add up.
        assert_eq!(tallies, SampleTallies::of(&samples, &topo));
        let apps = crate::metrics::per_app_with(&Observation::default(), &topo, tallies);
        assert_eq!(
            apps.iter()
                .map(|a| (a.pid, a.samples, a.fault_samples))
                .collect::<Vec<_>>(),
            vec![(Pid(7), 4, 2), (Pid(8), 1, 0)]
        );
        assert_eq!(
            apps[0].lar,
            Some(0.5),
            "homed on node 0, from nodes 0, 1, 0 and 1"
        );
        assert_eq!(apps[1].lar, None);
    }

    #[test]
    fn growing_keeps_what_matters_and_drops_the_rest() {
        let mut t = PageTable::default();
        t.begin_epoch(1, 1, 1);
        // A replicated page from another process, then many pages sampled in epoch 1.
        let r = (Pid(9), 0x1000, PageSize::Base4K);
        let i = t.entry_for(&r).unwrap();
        t.slot_mut(i).set_replicated(true);
        for n in 0..5000 {
            let i = t.entry_for(&page(n)).unwrap();
            t.touch(i);
            t.slot_mut(i).record((n % 4) as usize, false);
        }
        assert!(t.slots.len() >= 5001 && t.slots.len().is_power_of_two());
        assert!(4 * t.used <= 3 * t.slots.len());
        for n in 0..5000 {
            let s = t.get(&page(n)).unwrap().1;
            assert_eq!(s.by_node[(n % 4) as usize], 1);
        }
        // The current slots are still listed in first-sample order, at their new places.
        let listed: Vec<PageKey> = t
            .current()
            .iter()
            .map(|&i| t.page(t.slot(i as usize).packed_key()))
            .collect();
        assert_eq!(listed, (0..5000).map(page).collect::<Vec<_>>());
        // Next epoch: 5000 other pages; the stale ones go at the next rebuild, and with them
        // a space nothing is kept for.
        t.begin_epoch(2, 1, 1);
        let gone = t.entry_for(&(Pid(11), 0x1000, PageSize::Base4K)).unwrap();
        t.slot_mut(gone).add_collapses(0);
        for n in 5000..10_000 {
            let i = t.entry_for(&page(n)).unwrap();
            t.touch(i);
        }
        t.rebuild(0, true);
        assert!(t.get(&page(0)).is_none(), "stale and not remembered");
        assert!(t.get(&page(9999)).is_some());
        assert!(t.get(&r).unwrap().1.replicated());
        assert_eq!(t.tracked(), 5000);
        assert!(4 * t.used <= 3 * t.slots.len());
        assert_eq!(t.spaces.len(), 2, "both spaces keep something");
    }

    #[test]
    fn a_slot_unsampled_for_longer_than_the_epoch_counter_wraps_is_not_current() {
        let mut t = PageTable::default();
        t.begin_epoch(1, 1, 1);
        let i = t.entry_for(&page(1)).unwrap();
        t.touch(i);
        t.slot_mut(i).set_replicated(true);
        for e in (2..=65_537).step_by(1024) {
            t.begin_epoch(e, 1, 1);
        }
        t.begin_epoch(65_537, 1, 1);
        let i = t.get(&page(1)).unwrap().0;
        assert!(!t.is_current(i));
        assert!(t.slot(i).replicated());
    }
}
