//! The scenario format: applications, their threads, instruction budgets, cache behaviour and
//! memory regions with their access patterns. TOML; documented with examples in
//! docs/scenario-format.md. Built-in workload presets live in `crates/sim/presets/workloads/`.

use crate::param::Param;
use rondpoint_model::PageSize;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A scenario: one or more applications run together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Where the model's numbers come from (papers, benchmark sources, measurements).
    #[serde(default)]
    pub sources: Vec<String>,
    /// Start again each application that finishes while another has not finished once, until
    /// every one has (same process, memory and pins), so that every program runs next to all
    /// the others for the whole of its measured run, as [Majo11 §3.1, §4.1] restarts the
    /// programs that end first. An application's completion is the end of its first run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart: bool,
    /// Its `[[app]]` tables (none is refused when the machine is built, saying so).
    #[serde(rename = "app", default)]
    pub apps: Vec<AppSpec>,
}

/// How many threads an application runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ThreadCount {
    /// Exactly this many.
    Count(u32),
    /// `"all-cores"`: one per core of the machine; `"node-cores"`: one per core of one node.
    Named(NamedCount),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NamedCount {
    AllCores,
    NodeCores,
}

/// Where an application's threads start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThreadPlacement {
    /// Round-robin over the CPU nodes: thread i on node i mod n (Linux's load balancer spreads
    /// a parallel program this way on an idle machine).
    Spread,
    /// Fill node by node: the cores of the first CPU node, then the next.
    Fill,
    /// Every thread on one node.
    Node(u16),
    /// Threads dealt round-robin over these nodes.
    Nodes(Vec<u16>),
}

/// Who first touches a region, and so where first-touch places its pages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FirstTouch {
    /// The main thread (thread 0) initialises the whole region (PARSEC streamcluster, canneal).
    Main,
    /// Each thread initialises its own block (NAS parallel initialisation).
    Partitioned,
    /// Thread `i` of the application.
    Thread(u32),
}

/// How the threads of an application access a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Each thread uses only its own block, uniformly.
    Partitioned,
    /// Every thread uses the whole region, uniformly.
    SharedUniform,
    /// Every thread uses the whole region, with Zipf popularity (`zipf_s`).
    Zipf,
    /// Each thread uses its block, and a fraction `halo` of its accesses goes to its two
    /// neighbours' blocks (stencils: NAS MG, SP, BT, LU).
    Halo,
    /// Every thread reads and writes the whole region at random (canneal, GUPS).
    RandomReadWrite,
}

/// One memory region of an application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionSpec {
    pub name: String,
    /// Size (MiB).
    pub size_mib: Param<f64>,
    /// `"4KiB"` (default) or `"2MiB"` for a THP-backed region.
    #[serde(default = "default_page_size")]
    pub page_size: PageSize,
    pub first_touch: FirstTouch,
    pub pattern: Pattern,
    /// Share of the application's DRAM accesses that go to this region (the shares of an
    /// application's regions are normalised to sum to 1).
    pub share: Param<f64>,
    /// Share of accesses that are writes.
    #[serde(default = "zero")]
    pub write_ratio: Param<f64>,
    /// Zipf exponent for `pattern = "zipf"`.
    #[serde(default)]
    pub zipf_s: Option<Param<f64>>,
    /// Share of accesses to the neighbours' blocks for `pattern = "halo"`.
    #[serde(default)]
    pub halo: Option<Param<f64>>,
}

fn default_page_size() -> PageSize {
    PageSize::Base4K
}

fn zero() -> Param<f64> {
    Param::Plain(0.0)
}

/// A change of behaviour part-way through an application's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// When the phase starts, as a fraction of the instruction budget (0 to 1).
    pub at: f64,
    /// New access shares per region name (regions not named keep their share).
    #[serde(default)]
    pub shares: BTreeMap<String, f64>,
    /// Multiplier on the miss rate during the phase (bursts, quiet phases).
    #[serde(default)]
    pub mpki_scale: Option<f64>,
    /// Where the phase's timing and shares come from.
    #[serde(default)]
    pub source: Option<String>,
}

/// One application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    pub name: String,
    pub threads: ThreadCount,
    #[serde(default = "spread")]
    pub placement: ThreadPlacement,
    /// Instructions each thread retires before it is done.
    pub instructions: Param<f64>,
    /// Cycles per instruction with a perfect memory system (no LLC misses).
    pub cpi_base: Param<f64>,
    /// Memory-level parallelism: LLC misses in flight per thread on average.
    pub mlp: Param<f64>,
    /// LLC misses per thousand instructions when the application gets `mrc_ref_bytes` of LLC
    /// per thread (the miss-ratio curve's reference point).
    pub mpki: Param<f64>,
    /// LLC capacity per thread at which `mpki` holds (bytes).
    pub mrc_ref_bytes: Param<f64>,
    /// Miss-ratio-curve exponent: `mpki(C) = mpki * (C / mrc_ref_bytes)^(-alpha)`; 0 for an
    /// application whose misses do not depend on cache space (streaming).
    #[serde(default = "zero")]
    pub mrc_alpha: Param<f64>,
    /// Launch delay (simulated seconds).
    #[serde(default)]
    pub start_s: f64,
    /// Nodes the application's memory is bound to from its start (`numactl --membind`): its
    /// home in \[Majo11\]'s terms when one node. Unset: no binding, pages follow the allocation
    /// policy (first touch unless a policy sets another).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub membind: Option<Vec<u16>>,
    #[serde(rename = "region")]
    pub regions: Vec<RegionSpec>,
    #[serde(default, rename = "phase")]
    pub phases: Vec<PhaseSpec>,
}

fn spread() -> ThreadPlacement {
    ThreadPlacement::Spread
}
