//! SIGINT and SIGTERM for commands that manage live programs.

use anyhow::{Context, Result};
use rondpoint_engine::Machine;
use rondpoint_model::{
    Action, Observation, Outcome, ProcessInfo, Sample, SamplingRequest, Topology,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Sets a flag when SIGINT or SIGTERM arrives (instead of dying, so a report can be printed).
pub fn install() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing the signal handlers")?;
    }
    Ok(stop)
}

/// A machine that notices the stop flag between epochs: it calls `on_stop` once (to forward
/// the signal to a launched program, say) and, if `finish_on_stop`, ends the run.
pub struct Signalled<M, F> {
    pub inner: M,
    stop: Arc<AtomicBool>,
    on_stop: F,
    finish_on_stop: bool,
    stopped: bool,
}

impl<M: Machine, F: FnMut(&mut M)> Signalled<M, F> {
    pub fn new(inner: M, stop: Arc<AtomicBool>, on_stop: F, finish_on_stop: bool) -> Self {
        Self {
            inner,
            stop,
            on_stop,
            finish_on_stop,
            stopped: false,
        }
    }

    fn check(&mut self) -> bool {
        if !self.stopped && self.stop.load(Ordering::Relaxed) {
            self.stopped = true;
            (self.on_stop)(&mut self.inner);
        }
        self.stopped && self.finish_on_stop
    }
}

impl<M: Machine, F: FnMut(&mut M)> Machine for Signalled<M, F> {
    type Error = M::Error;

    fn topology(&self) -> &Topology {
        self.inner.topology()
    }

    fn processes(&self) -> Vec<ProcessInfo> {
        self.inner.processes()
    }

    fn observe(&mut self, until_ns: u64) -> Result<Observation, Self::Error> {
        self.check();
        self.inner.observe(until_ns)
    }

    fn apply(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, Self::Error> {
        self.inner.apply(actions)
    }

    fn start(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, Self::Error> {
        self.inner.start(actions)
    }

    fn finished(&self) -> bool {
        (self.stopped && self.finish_on_stop) || self.inner.finished()
    }

    fn poll_finished(&mut self) -> bool {
        self.check() || self.inner.poll_finished()
    }

    fn drain_samples(&mut self, out: &mut Vec<Sample>) {
        self.inner.drain_samples(out);
    }

    fn set_sampling(&mut self, request: &SamplingRequest) {
        self.inner.set_sampling(request);
    }
}
