//! SIGINT, SIGTERM, SIGHUP and SIGQUIT for commands that manage live programs: the first sets
//! a flag the engine looks at (`rondpoint_engine::StopSignal`) and records which signal it was,
//! instead of killing rondpoint, so that a report is printed and a launched program gets the
//! signal; a second one ends rondpoint at once (exit status 128 + the signal, as a shell
//! reports a program killed by it). rondpoint changes nothing on the machine that would need
//! restoring (no sysctl, no machine-wide setting).
//!
//! The daemon ([`install_reloading`]) takes SIGHUP as a service does: reload the
//! configuration. It then only sets [`Received::reload`], stops nothing, and may come any
//! number of times.

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The signals rondpoint passes on or stops at.
pub const HANDLED: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// What has arrived so far.
#[derive(Clone, Debug)]
pub struct Received {
    /// Set by the first signal that stops rondpoint.
    pub stop: Arc<AtomicBool>,
    /// The last such signal's number (0 before any).
    pub signal: Arc<AtomicUsize>,
    /// What the engine watches: set with `stop`, and by the daemon itself when it has a new
    /// configuration to start (`commands/daemon/reload.rs`).
    pub wake: Arc<AtomicBool>,
    /// Set by SIGHUP under [`install_reloading`]; cleared by whoever acts on it.
    pub reload: Arc<AtomicBool>,
}

impl Received {
    /// The signal to pass on, if one arrived.
    pub fn pending(&self) -> Option<i32> {
        if !self.stop.load(Ordering::Relaxed) {
            return None;
        }
        i32::try_from(self.signal.load(Ordering::Relaxed)).ok()
    }

    /// Whether a SIGHUP asked for the configuration to be read again (and forgets it).
    pub fn take_reload(&self) -> bool {
        self.reload.swap(false, Ordering::Relaxed)
    }
}

/// Installs the handlers: every one of [`HANDLED`] stops.
pub fn install() -> Result<Received> {
    install_with(&HANDLED)
}

/// Installs the handlers of a daemon: SIGINT, SIGTERM and SIGQUIT stop, SIGHUP asks for the
/// configuration to be read again.
pub fn install_reloading() -> Result<Received> {
    let received = install_with(&[SIGINT, SIGTERM, SIGQUIT])?;
    signal_hook::flag::register(SIGHUP, Arc::clone(&received.reload))
        .context("installing the signal handlers")?;
    Ok(received)
}

fn install_with(stopping: &[i32]) -> Result<Received> {
    let received = Received {
        stop: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicUsize::new(0)),
        wake: Arc::new(AtomicBool::new(false)),
        reload: Arc::new(AtomicBool::new(false)),
    };
    for &signal in stopping {
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
        signal_hook::flag::register(signal, Arc::clone(&received.wake))
            .context("installing the signal handlers")?;
    }
    Ok(received)
}
