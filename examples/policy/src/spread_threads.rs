//! `spread-threads`: the threads of each multi-threaded process pinned round-robin over the
//! nodes with CPUs, once, the first time the policy sees the process with enough threads.

use rondpoint_model::{Action, Capability, Need, Observation, Pid, Topology};
use rondpoint_policy_api::Policy;
use rondpoint_policy_api::bounds::{Bounds, ParamBounds};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// `[spread-threads]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpreadThreadsConfig {
    /// Fewest threads a process must have to be spread (threads). Default 2 (ours: one
    /// thread has nothing to spread).
    pub min_threads: u32,
}

// Written out, not derived: a derived Default would make every number 0.
impl Default for SpreadThreadsConfig {
    fn default() -> Self {
        Self { min_threads: 2 }
    }
}

/// The range of each numeric parameter, checked before the policy is built.
pub const BOUNDS: &[ParamBounds] = &[("min_threads", Bounds::new(1.0, 4096.0, "threads"))];

/// The policy: its parameters, and what it remembers between epochs.
#[derive(Debug)]
pub struct SpreadThreads {
    config: SpreadThreadsConfig,
    spread: BTreeSet<Pid>,
}

impl SpreadThreads {
    pub fn new(config: SpreadThreadsConfig) -> Self {
        Self {
            config,
            spread: BTreeSet::new(),
        }
    }
}

impl Policy for SpreadThreads {
    fn name(&self) -> &str {
        "spread-threads"
    }

    fn needs(&self) -> Vec<Need> {
        vec![Need::one(Capability::PinThreads, "to pin threads to nodes")]
    }

    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        let nodes: Vec<_> = topology.nodes().iter().filter(|n| n.has_cpu()).collect();
        let min = usize::try_from(self.config.min_threads).unwrap_or(usize::MAX);
        let mut actions = Vec::new();
        for p in &observation.processes {
            if p.threads.len() < min || !self.spread.insert(p.pid) {
                continue;
            }
            for (t, node) in p.threads.iter().zip(nodes.iter().cycle()) {
                actions.push(Action::PinThread {
                    pid: p.pid,
                    tid: t.tid,
                    cpus: node.cpus.clone(),
                });
            }
        }
        actions
    }
}
