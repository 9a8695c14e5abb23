//! SIGINT, SIGTERM, SIGHUP and SIGQUIT for commands that manage live programs: the first sets
//! a flag the engine looks at (`rondpoint_engine::StopSignal`) and records which signal it was,
//! instead of killing rondpoint, so that a report is printed and a launched program gets the
//! signal; a second one ends rondpoint at once (exit status 128 + the signal, as a shell
//! reports a program killed by it). rondpoint changes nothing on the machine that would need
//! restoring (no sysctl, no machine-wide setting).

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The signals rondpoint passes on or stops at.
pub const HANDLED: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// What has arrived so far.
#[derive(Clone, Debug)]
pub struct Received {
    /// Set by the first signal.
    pub stop: Arc<AtomicBool>,
    /// The last signal's number (0 before any).
    pub signal: Arc<AtomicUsize>,
}

impl Received {
    /// The signal to pass on, if one arrived.
    pub fn pending(&self) -> Option<i32> {
        if !self.stop.load(Ordering::Relaxed) {
            return None;
        }
        i32::try_from(self.signal.load(Ordering::Relaxed)).ok()
    }
}

/// Installs the handlers.
pub fn install() -> Result<Received> {
    let received = Received {
        stop: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicUsize::new(0)),
    };
    for signal in HANDLED {
        // Registered first, so that it sees the flag as the previous signal left it: a second
        // signal ends rondpoint at once.
        signal_hook::flag::register_conditional_shutdown(
            signal,
            128 + signal,
            Arc::clone(&received.stop),
        )
        .context("installing the signal handlers")?;
        signal_hook::flag::register_usize(
            signal,
            Arc::clone(&received.signal),
            usize::try_from(signal).unwrap_or(0),
        )
        .context("installing the signal handlers")?;
        signal_hook::flag::register(signal, Arc::clone(&received.stop))
            .context("installing the signal handlers")?;
    }
    Ok(received)
}
