//! The statistics window: which slots' statistics are current in an epoch (one epoch for
//! IBS/PEBS samples, the fault-sample window once a fault sample is among them), and the
//! fault-sample window itself, measured from the gaps between a page's fault samples.

use super::{FAULTED, MAX_SPACES, PageTable, Slot, TRACKED};

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
pub(super) const REFAULT_WEIGHT: u64 = 1 << 10;
/// The window holds this many times the measured gaps (rounded up to a power of two): the
/// next gap can be longer than the last ones. Linux doubles a process's scan period after a
/// scan that found nothing of interest or failed migrations (`update_task_scan_period` in
/// kernel/sched/fair.c), and skips areas the scanning thread did not touch lately (6.4 on:
/// `vma_is_accessed`), so that on the testbed successive passes over one array came 2 to 11
/// s apart; a window that held only the gaps already seen dropped each page's one sample
/// before its next, and Carrefour decided nothing for a whole run.
const REFAULT_SLACK: u32 = 2;

impl PageTable {
    /// Starts an epoch. Statistics from IBS/PEBS samples cover it only; those of a page with a
    /// fault sample among them cover the last `window` epochs, where `window` is twice
    /// ([`REFAULT_SLACK`]) the shortest power of two above the gaps between successive fault
    /// samples of a page that counting has measured (three quarters of them, weighted toward
    /// recent epochs), but at least
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

    /// The window that holds [`REFAULT_SHARE`] of the measured gaps between fault samples,
    /// [`REFAULT_SLACK`] times over (0 when none was measured).
    fn measured_window(&self) -> u32 {
        let total: u64 = self.refault_gaps.iter().sum();
        let mut below = 0;
        for (b, &weight) in self.refault_gaps.iter().enumerate() {
            below += weight;
            if below > 0 && below * REFAULT_SHARE.1 >= total * REFAULT_SHARE.0 {
                return REFAULT_SLACK << (b + 1);
            }
        }
        0
    }

    /// The fault-sample window of this epoch.
    #[cfg(test)]
    pub(super) fn window(&self) -> u32 {
        u32::from(self.window)
    }
    /// Whether slot `i` has statistics from within the window.
    pub(crate) fn is_current(&self, i: usize) -> bool {
        self.slot_is_current(&self.slots[i])
    }

    pub(super) fn slot_is_current(&self, s: &Slot) -> bool {
        let window = if s.marks & FAULTED != 0 {
            self.window
        } else {
            1
        };
        s.marks & TRACKED != 0 && self.epoch.wrapping_sub(s.seen) < window
    }

    /// Marks slot `i` sampled in this epoch, starting its statistics afresh if they are not
    /// current (what counting does before recording a sample; for tests that build slots by
    /// hand).
    #[cfg(test)]
    pub(super) fn touch(&mut self, i: usize) {
        if !self.is_current(i) {
            let s = &mut self.slots[i];
            s.reset_stats();
            s.marks |= TRACKED;
            self.current.push(i as u32);
        }
        self.slots[i].seen = self.epoch;
    }

    /// Lists the current slots, in table order.
    pub(super) fn list_current(&mut self) {
        self.current = (0..self.slots.len())
            .filter(|&i| self.is_current(i))
            .map(|i| i as u32)
            .collect();
    }
}
