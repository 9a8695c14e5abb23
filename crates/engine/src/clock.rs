//! Clocks: the swap point between simulated and live runs.

use std::time::{Duration, Instant};

/// The engine's time base.
pub trait Clock {
    /// Nanoseconds since the run began.
    fn now_ns(&self) -> u64;
    /// Returns once the clock reads `t_ns` (a virtual clock jumps; a wall clock sleeps).
    fn wait_until(&mut self, t_ns: u64);

    /// Like [`Clock::wait_until`], but returns early once `done()` is true (checked every few
    /// milliseconds by a wall clock; a virtual clock has nothing to wait for).
    fn wait_until_or(&mut self, t_ns: u64, done: &mut dyn FnMut() -> bool) {
        let _ = done;
        self.wait_until(t_ns);
    }
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

    fn wait_until_or(&mut self, t_ns: u64, done: &mut dyn FnMut() -> bool) {
        /// How often a live machine is asked whether its programs have ended.
        const SLICE: Duration = Duration::from_millis(25);
        loop {
            let now = self.now_ns();
            if now >= t_ns || done() {
                return;
            }
            std::thread::sleep(SLICE.min(Duration::from_nanos(t_ns - now)));
        }
    }
}
