//! One sampled memory access: which page, which CPU and node touched it, and how.

use crate::ids::{CpuId, NodeId, Pid, Tid};
use crate::page::PageSize;
use serde::{Deserialize, Serialize};

/// A load or a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    Read,
    Write,
}

/// Where a sample came from. Policies may weigh sources differently: a first-touch fault says
/// nothing about later use; a hinting fault is one access in a scan period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SampleSource {
    /// AMD Instruction-Based Sampling (ibs_op).
    Ibs,
    /// Intel PEBS (load latency or stores).
    Pebs,
    /// Arm SPE (Statistical Profiling Extension): loads and stores.
    Spe,
    /// A page fault (first touch), from the software page-fault event.
    PageFault,
    /// A NUMA hinting fault (kernel.numa_balancing or the simulator's AutoNUMA model).
    HintingFault,
    /// The simulator's IBS/PEBS-like sampler.
    Simulated,
}

/// One sampled access.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub pid: Pid,
    pub tid: Tid,
    pub cpu: CpuId,
    /// The node of `cpu`: the node that made the access.
    pub node: NodeId,
    /// Virtual address accessed.
    pub addr: u64,
    /// Size of the page holding `addr`, when known (THP-backed regions are 2 MiB).
    pub page_size: PageSize,
    pub kind: AccessKind,
    pub source: SampleSource,
    /// Access latency in core cycles, when the sampler reports it.
    pub latency_cycles: Option<u32>,
    /// Whether the access missed every cache and went to DRAM, when known.
    pub dram: Option<bool>,
    /// The node holding the data, when the sampler knows it (IBS gives the physical address;
    /// the page-fault sampler can ask move_pages).
    pub home_node: Option<NodeId>,
}

impl Sample {
    /// Start address of the page this sample fell in.
    pub fn page(&self) -> u64 {
        self.page_size.align_down(self.addr)
    }
}
