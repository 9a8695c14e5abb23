//! What a policy sees of the machine over one epoch, and nothing more.

use crate::counters::Counters;
use crate::ids::{CpuId, NodeId, Pid, Tid};
use crate::page::PageRange;
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

/// Writes to replicated pages that forced a collapse to one copy during the epoch (a backend
/// that cannot replicate never reports any).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collapse {
    pub page: PageRange,
    pub count: u32,
}

/// The true access rates to a block of pages, per accessing node. Given only by a simulator,
/// and only when the policy asks ([`crate::SamplingRequest::truth`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessTruth {
    pub range: PageRange,
    /// DRAM accesses per second to the block from CPUs of each node (dense node index).
    pub accesses_per_s_by_node: Vec<f64>,
    /// Share of those accesses that are writes.
    pub write_fraction: f64,
    /// Pages of the block on each node (dense node index; replicas count on each node).
    pub pages_by_node: Vec<u64>,
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
    /// Replica collapses seen this epoch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collapses: Vec<Collapse>,
    /// Ground truth, for the oracle only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth: Option<Vec<AccessTruth>>,
}
