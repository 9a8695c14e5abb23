//! SIGHUP under `rondpoint daemon`: the configuration read again, as a service reloads.
//!
//! After each epoch, a SIGHUP that came meanwhile has the policy's configuration (`--config`
//! with the `--set` values on top) read again, and a policy built from it checked against the
//! machine and the processes managed now, as the engine checks a policy before a run. A
//! configuration that fails (a file that no longer parses, a parameter out of range, a lane
//! whose signals the machine lacks) is named in a warning and the daemon goes on with the one
//! it had, undisturbed. A good one wakes the engine: the run ends at the epoch's boundary and
//! the daemon starts the policy again, built from it, on the same machine and processes (the
//! policy's own history, such as Carrefour's payoff guard, starts over). The end report and
//! the state file count the runs together. A daemon writing a recording (`--record`) keeps its
//! policy: a recording holds one policy's run.

use crate::live::LiveOptions;
use crate::signals::Received;
use anyhow::Result;
use rondpoint_model::{Capabilities, ProcessInfo, Topology};
use rondpoint_policy_api::{Policy, PolicyConfig};
use std::sync::atomic::Ordering;

/// Watches for SIGHUP and prepares the configuration to start next.
pub struct Reloader<'a> {
    opts: &'a LiveOptions,
    received: Received,
    capabilities: Capabilities,
    topology: Topology,
    /// A configuration read and checked, waiting for the engine to stop.
    ready: Option<PolicyConfig>,
    /// How many times the configuration was reloaded.
    pub reloads: u32,
}

impl<'a> Reloader<'a> {
    pub fn new(
        opts: &'a LiveOptions,
        received: Received,
        capabilities: Capabilities,
        topology: Topology,
    ) -> Self {
        Self {
            opts,
            received,
            capabilities,
            topology,
            ready: None,
            reloads: 0,
        }
    }

    /// Called after each epoch with the processes managed then: acts on a SIGHUP that came.
    pub fn epoch(&mut self, processes: &[ProcessInfo]) {
        if !self.received.take_reload() {
            return;
        }
        if let Some(path) = &self.opts.record {
            tracing::warn!(
                "SIGHUP: the configuration is not read again while the daemon records to {} \
                 (a recording holds one policy's run); restart the daemon to change it",
                path.display()
            );
            return;
        }
        match self.check(processes) {
            Ok(config) => {
                tracing::info!(
                    "SIGHUP: configuration read again ({}); {} starts again with it",
                    self.source(),
                    self.opts.policy
                );
                self.ready = Some(config);
                self.received.wake.store(true, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(
                "SIGHUP: configuration not reloaded: {e:#}; the daemon goes on with the one it \
                 had"
            ),
        }
    }

    /// Where the configuration comes from, for the log.
    fn source(&self) -> String {
        self.opts.policy_options.describe()
    }

    /// The configuration, read again, if a policy built from it can run here now.
    fn check(&self, processes: &[ProcessInfo]) -> Result<PolicyConfig> {
        let config = self.opts.policy_options.config()?;
        let mut policy = crate::policies::build(&self.opts.policy, &config)?;
        rondpoint_engine::check_policy(
            &self.capabilities,
            &self.topology,
            processes,
            policy.as_mut(),
        )?;
        Ok(config)
    }

    /// Once the engine has stopped: the policy to start next when a reload stopped it, `None`
    /// when the daemon is to end (a stopping signal, or nothing to reload).
    pub fn next(&mut self) -> Result<Option<Box<dyn Policy>>> {
        if self.received.stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let Some(config) = self.ready.take() else {
            return Ok(None);
        };
        self.received.wake.store(false, Ordering::Relaxed);
        self.reloads += 1;
        Ok(Some(crate::policies::build(&self.opts.policy, &config)?))
    }
}
