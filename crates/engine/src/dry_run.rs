//! A machine wrapper that observes for real and applies nothing.

use crate::Machine;
use rondpoint_model::{
    Action, Observation, Outcome, ProcessInfo, Sample, SamplingRequest, Topology,
};

/// Wraps a machine: observations pass through, actions are logged and reported as skipped.
#[derive(Debug)]
pub struct DryRun<M> {
    inner: M,
    log: Vec<Action>,
}

impl<M: Machine> DryRun<M> {
    pub fn new(inner: M) -> Self {
        Self {
            inner,
            log: Vec::new(),
        }
    }

    /// Every action the policy asked for, in order.
    pub fn log(&self) -> &[Action] {
        &self.log
    }

    pub fn into_inner(self) -> M {
        self.inner
    }

    /// The wrapped machine.
    pub fn inner_mut(&mut self) -> &mut M {
        &mut self.inner
    }
}

impl<M: Machine> Machine for DryRun<M> {
    type Error = M::Error;

    fn topology(&self) -> &Topology {
        self.inner.topology()
    }

    fn processes(&self) -> Vec<ProcessInfo> {
        self.inner.processes()
    }

    fn observe(&mut self, until_ns: u64) -> Result<Observation, Self::Error> {
        self.inner.observe(until_ns)
    }

    fn drain_samples(&mut self, out: &mut Vec<Sample>) {
        self.inner.drain_samples(out);
    }

    fn apply(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, Self::Error> {
        self.log.extend_from_slice(actions);
        Ok(actions
            .iter()
            .enumerate()
            .map(|(i, a)| Outcome::skipped(i, crate::limits::pages_of(a), "dry run"))
            .collect())
    }

    /// Starts the managed programs without the policy's start decisions, which are logged.
    fn start(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, Self::Error> {
        self.inner.start(&[])?;
        self.apply(actions)
    }

    fn finished(&self) -> bool {
        self.inner.finished()
    }

    fn poll_finished(&mut self) -> bool {
        self.inner.poll_finished()
    }

    fn set_sampling(&mut self, request: &SamplingRequest) {
        self.inner.set_sampling(request);
    }
}
