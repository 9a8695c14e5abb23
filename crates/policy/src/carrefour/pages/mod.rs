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

mod count;
mod window;

#[cfg(test)]
mod tests;

pub(crate) use window::MAX_WINDOW_EPOCHS;

use rondpoint_model::{PageSize, Pid};
use rustc_hash::FxHashMap;

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
    #[cfg(test)]
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
    #[cfg(test)]
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
    #[cfg(test)]
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

    #[cfg(test)]
    pub(crate) fn slot(&self, i: usize) -> &Slot {
        &self.slots[i]
    }

    pub(crate) fn slot_mut(&mut self, i: usize) -> &mut Slot {
        &mut self.slots[i]
    }

    /// Slots whose statistics are current.
    pub(crate) fn tracked(&self) -> usize {
        self.current.len()
    }

    /// The slots whose statistics are current, in the order they became so.
    pub(crate) fn current(&self) -> &[u32] {
        &self.current
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
