//! Clocks: the swap point between simulated and live runs.

use std::time::{Duration, Instant};

/// The engine's time base.
pub trait Clock {
    /// Nanoseconds since the run began.
    fn now_ns(&self) -> u64;
    /// Returns once the clock reads `t_ns` (a virtual clock jumps; a wall clock sleeps).
    fn wait_until(&mut self, t_ns: u64);

    /// Like [`Clock::wait_until`], but calls `poll` on the way (a wall clock every few tens of
    /// milliseconds, less often while it reports [`Poll::Quiet`]; a virtual clock has nothing
    /// to wait for) and returns early once it says [`Poll::Done`].
    fn wait_until_or(&mut self, t_ns: u64, poll: &mut dyn FnMut() -> Poll) {
        let _ = poll;
        self.wait_until(t_ns);
    }
}

/// What a poll during a wait found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Stop waiting: the run is over.
    Done,
    /// There was work (samples drained): poll again soon.
    Active,
    /// Nothing happened: the next poll can wait longer.
    Quiet,
}

/// Simulated time: as fast as the machine can simulate, deterministic.
#[derive(Clone, Debug, Default)]
pub struct VirtualClock {
    now_ns: u64,
}

impl Clock for VirtualClock {
    fn now_ns(&self) -> u64 {
        self.now_ns
    }

    fn wait_until(&mut self, t_ns: u64) {
        self.now_ns = self.now_ns.max(t_ns);
    }
}

/// Real time, for live machines.
#[derive(Clone, Debug)]
pub struct WallClock {
    start: Instant,
}

impl WallClock {
    /// The poll interval while polls find work: a live machine's perf rings are drained this
    /// often (a 256 KiB ring holds about 50 ms of page faults at 100,000 a second).
    pub const ACTIVE_SLICE: Duration = Duration::from_millis(25);
    /// The longest poll interval, while polls find nothing: the delay to notice that a
    /// program ended, and the rings' first drain after a quiet spell. Each poll wakes
    /// rondpoint (a sleep, a wait for the child, a look at every ring): at 25 ms they were
    /// most of its own CPU on an idle program.
    pub const QUIET_SLICE: Duration = Duration::from_millis(100);

    /// The wait before the next poll, after a wait of `slice` and a poll that found `found`;
    /// none once it found the run over.
    pub(crate) fn next_slice(slice: Duration, found: Poll) -> Option<Duration> {
        match found {
            Poll::Done => None,
            Poll::Active => Some(Self::ACTIVE_SLICE),
            Poll::Quiet => Some((slice * 2).min(Self::QUIET_SLICE)),
        }
    }

    pub fn new() -> Self {
        Self {
            start: Instant::now(),
        }
    }
}

impl Default for WallClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for WallClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn wait_until(&mut self, t_ns: u64) {
        let now = self.now_ns();
        if t_ns > now {
            std::thread::sleep(Duration::from_nanos(t_ns - now));
        }
    }

    /// Polls every [`WallClock::ACTIVE_SLICE`] while polls find work, and backs off by
    /// doubling to [`WallClock::QUIET_SLICE`] while they find none.
    fn wait_until_or(&mut self, t_ns: u64, poll: &mut dyn FnMut() -> Poll) {
        let mut slice = Self::ACTIVE_SLICE;
        loop {
            let now = self.now_ns();
            if now >= t_ns {
                return;
            }
            let Some(next) = Self::next_slice(slice, poll()) else {
                return;
            };
            slice = next;
            std::thread::sleep(slice.min(Duration::from_nanos(t_ns - now)));
        }
    }
}
