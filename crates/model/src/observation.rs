//! What a policy sees of the machine over one epoch, and nothing more.

use crate::counters::Counters;
use crate::ids::{CpuId, NodeId, Pid, Tid};
use crate::sample::Sample;
use serde::{Deserialize, Serialize};

/// Memory of one node at the end of an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeMemory {
    pub node: NodeId,
    pub total_bytes: u64,
    pub free_bytes: u64,
}

/// A thread of a managed process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    pub tid: Tid,
    /// The CPU it last ran on.
    pub cpu: CpuId,
    /// The node of that CPU.
    pub node: NodeId,
    /// CPUs it may run on.
    pub allowed_cpus: Vec<CpuId>,
}

/// A managed process (an application, in the papers' words).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: Pid,
    /// Command name.
    pub comm: String,
    pub threads: Vec<ThreadInfo>,
    /// Resident bytes per node, indexed like [`crate::Topology::nodes`].
    pub resident_bytes_by_node: Vec<u64>,
}

/// One epoch's view of the machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Epoch number, from 0.
    pub epoch: u64,
    /// Time at the start of the epoch (ns since the run began; virtual in the simulator).
    pub start_ns: u64,
    pub counters: Counters,
    pub samples: Vec<Sample>,
    pub memory: Vec<NodeMemory>,
    pub processes: Vec<ProcessInfo>,
}
