//! SIGINT, SIGTERM and SIGHUP for commands that manage live programs: a flag the engine
//! looks at (`rondpoint_engine::StopSignal`), instead of dying, so that a report is printed
//! and a launched program is not left behind.

use anyhow::{Context, Result};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Sets a flag when SIGINT, SIGTERM or SIGHUP arrives.
pub fn install() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing the signal handlers")?;
    }
    Ok(stop)
}
