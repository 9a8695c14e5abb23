//! Hardware counters over one epoch, as a backend measured or estimated them.

use crate::ids::{NodeId, Pid, Tid};
use serde::{Deserialize, Serialize};

/// Per-node counters over one epoch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeCounters {
    pub node: NodeId,
    /// DRAM accesses served by this node's memory controller, split by the node whose CPU made
    /// them. Indexed like [`crate::Topology::nodes`] (dense index, not node number).
    pub dram_accesses_by_source: Vec<u64>,
    /// DRAM reads served by this node's controller (64-byte lines).
    pub dram_reads: u64,
    /// DRAM writes served by this node's controller (64-byte lines).
    pub dram_writes: u64,
    /// Instructions retired by this node's CPUs.
    pub instructions: u64,
    /// Unhalted cycles of this node's CPUs.
    pub cycles: u64,
    /// Last-level-cache misses of this node's CPUs.
    pub llc_misses: u64,
}

impl NodeCounters {
    /// All DRAM accesses this controller served.
    pub fn dram_accesses(&self) -> u64 {
        // Saturating: counts come from recordings and other machines, whatever they hold.
        self.dram_accesses_by_source
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }
}

/// Per-thread counters over one epoch (what MAPI, MPKI and MAPTU are computed from).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadCounters {
    pub pid: Pid,
    pub tid: Tid,
    /// The node the thread ran on for most of the epoch.
    pub node: NodeId,
    pub instructions: u64,
    pub cycles: u64,
    pub llc_misses: u64,
    /// DRAM accesses the thread made (local and remote).
    pub dram_accesses: u64,
    /// Of those, writes (write-backs of lines it modified).
    pub dram_writes: u64,
}

/// Traffic over one interconnect link in one epoch, both directions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkCounters {
    pub a: NodeId,
    pub b: NodeId,
    /// Bytes sent from `a` to `b`.
    pub bytes_a_to_b: u64,
    /// Bytes sent from `b` to `a`.
    pub bytes_b_to_a: u64,
    /// Link capacity per direction (bytes per second), when the backend knows it.
    pub capacity_bytes_per_s: Option<f64>,
}

/// Every counter a backend gives a policy for one epoch. Which of them were measured and which
/// were estimated is stated in `estimated`, so reports can say so.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Length of the epoch these counters cover (ns).
    pub duration_ns: u64,
    pub nodes: Vec<NodeCounters>,
    pub threads: Vec<ThreadCounters>,
    /// Empty when the machine has no link counters.
    pub links: Vec<LinkCounters>,
    /// The counters above that were estimated rather than counted, and how (for example DRAM
    /// traffic per node estimated from samples when there is no PMU).
    pub estimated: Vec<Estimate>,
    /// The counters above the machine could not measure at all: they read 0, and a policy
    /// must not take them for data (the engine refuses to run one that needs them, by the
    /// machine's capabilities).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<CounterGroup>,
}

/// A group of counters, for saying which a backend estimates or lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterGroup {
    /// `nodes[].dram_reads`, `dram_writes`: each node's DRAM traffic (and so the sum of its
    /// `dram_accesses_by_source`).
    NodeDram,
    /// `nodes[].dram_accesses_by_source`: which nodes' CPUs made each node's DRAM traffic
    /// (estimated wherever memory controllers count only totals).
    NodeDramBySource,
    /// `threads[].dram_accesses`, and `dram_writes` unless [`CounterGroup::ThreadDramWrites`]
    /// is listed on its own.
    ThreadDram,
    /// `threads[].dram_writes`, estimated where the accesses are counted (a core PMU counts
    /// a thread's DRAM loads, not its write-backs).
    ThreadDramWrites,
    /// `nodes[].cycles`, `threads[].cycles`.
    Cycles,
    /// `nodes[].instructions`, `threads[].instructions`.
    Instructions,
    /// `nodes[].llc_misses`, `threads[].llc_misses`.
    LlcMisses,
    /// `links`.
    Links,
}

/// One estimated counter group and how it was estimated, in words for reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Estimate {
    pub group: CounterGroup,
    pub how: String,
}

impl Counters {
    /// Whether a group of counters was not measured at all (it reads 0).
    pub fn is_missing(&self, group: CounterGroup) -> bool {
        self.missing.contains(&group)
    }

    /// Whether a group of counters was estimated rather than counted.
    pub fn is_estimated(&self, group: CounterGroup) -> bool {
        self.estimated.iter().any(|e| e.group == group)
    }
}
