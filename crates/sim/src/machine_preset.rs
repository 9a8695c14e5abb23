//! Machine presets: a simulated machine described as data (TOML), every number with its source.
//!
//! Built-in presets live in `crates/sim/presets/machines/*.toml`; users pass their own file with
//! `--machine FILE`. Units are in the field names: `_ghz`, `_bytes`, `_gbs` (10^9 bytes per
//! second), `_ns`, `_us`.

use crate::param::Param;
use serde::{Deserialize, Serialize};

/// A simulated machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachinePreset {
    /// Short name used on the command line.
    pub name: String,
    /// One paragraph: what machine this is and which paper uses it.
    pub description: String,
    /// Number of NUMA nodes.
    pub nodes: Param<u16>,
    /// Cores per node with CPUs (the simulator runs one thread per core).
    pub cores_per_node: Param<u32>,
    /// Core clock (GHz); latencies in cycles are computed with it.
    pub freq_ghz: Param<f64>,
    /// Last-level cache per LLC domain (bytes).
    pub llc_bytes: Param<u64>,
    /// LLC domains per node (1 on Opteron and Xeon; 2 to 4 CCX/CCD per node on EPYC).
    #[serde(default = "one_u32")]
    pub llcs_per_node: Param<u32>,
    /// DRAM per node (bytes).
    pub mem_bytes_per_node: Param<u64>,
    /// Sustainable bandwidth of one node's memory controller(s) (GB/s, reads and writes together).
    pub mc_bandwidth_gbs: Param<f64>,
    /// Bandwidth of one interconnect link, per direction (GB/s of payload).
    pub link_bandwidth_gbs: Param<f64>,
    /// SLIT distance matrix as the firmware of this machine reports it (or would).
    pub distances: Param<Vec<Vec<u32>>>,
    /// Direct links, when the wiring is known; otherwise inferred from `distances`.
    #[serde(default)]
    pub links: Option<Param<Vec<(u16, u16)>>>,
    /// Pinned routes (others are shortest paths over the links).
    #[serde(default)]
    pub routes: Vec<RoutePreset>,
    /// How idle (unloaded) latency from each node to each node's memory is obtained.
    pub latency: LatencyModel,
    /// Nodes that differ from the defaults above (CPU-less CXL nodes, slower memory).
    #[serde(default, rename = "node")]
    pub node_overrides: Vec<NodeOverride>,
    /// Links that differ from `link_bandwidth_gbs`.
    #[serde(default, rename = "link")]
    pub link_overrides: Vec<LinkOverride>,
    /// Costs of the mechanisms policies use; defaults documented on [`Costs`].
    #[serde(default)]
    pub costs: Costs,
}

fn one_u32() -> Param<u32> {
    Param::sourced(1, "default: one LLC per node")
}

/// A pinned route.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutePreset {
    pub from: u16,
    pub to: u16,
    pub via: Vec<u16>,
    #[serde(default)]
    pub source: Option<String>,
}

/// Idle latency model.
///
/// `hops`: `L0[s][d] = max(local_ns[d] + hops(s, d) * hop_ns, probe_hop_ns * ecc(d))`, where
/// `ecc(d)` is the largest number of hops from the home node `d` to any CPU node. The second
/// term is broadcast coherence: the home node's memory controller must hear from every
/// processor before it answers ([Gaud10 §2.1] and Figure 2), which is
/// why nodes two hops from someone are slow even for local reads.
///
/// `matrix`: the published idle latency matrix, used as is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LatencyModel {
    Hops {
        /// Idle latency of a local DRAM read when coherence is not the bottleneck (ns).
        local_ns: Param<f64>,
        /// Added by each interconnect hop, request and response together (ns).
        hop_ns: Param<f64>,
        /// Coherence probe round trip per hop of the home node's eccentricity (ns); 0 for
        /// machines with directory or snoop-filter coherence where it is hidden.
        #[serde(default)]
        probe_hop_ns: Option<Param<f64>>,
    },
    Matrix {
        /// `ns[s][d]`: idle latency from a CPU of node `s` to memory of node `d` (ns). Rows of
        /// CPU-less nodes are ignored.
        ns: Param<Vec<Vec<f64>>>,
    },
}

/// A node that differs from the machine's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOverride {
    pub id: u16,
    /// 0 for a CPU-less memory node (CXL).
    #[serde(default)]
    pub cores: Option<Param<u32>>,
    #[serde(default)]
    pub mem_bytes: Option<Param<u64>>,
    #[serde(default)]
    pub mc_bandwidth_gbs: Option<Param<f64>>,
    /// For the `hops` latency model: this node's `local_ns` (for a CXL node, the latency from
    /// the socket it is attached to).
    #[serde(default)]
    pub local_ns: Option<Param<f64>>,
}

/// A link that differs from the machine's default bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkOverride {
    pub a: u16,
    pub b: u16,
    pub bandwidth_gbs: Param<f64>,
}

/// Costs of placement mechanisms, charged where they fall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Costs {
    /// CPU time to migrate one 4 KiB page besides the copy: unmap, TLB shootdown, remap (µs).
    pub migrate_page_us: Param<f64>,
    /// CPU time to migrate one 2 MiB page besides the copy (µs).
    pub migrate_huge_page_us: Param<f64>,
    /// One sampling interrupt on the sampled core (µs).
    pub sample_interrupt_us: Param<f64>,
    /// One NUMA hinting fault (µs).
    pub hinting_fault_us: Param<f64>,
    /// Collapsing one replicated page after a write (µs).
    pub replica_collapse_us: Param<f64>,
    /// Revoking access to 1 MiB of address space for hinting-fault scanning (µs).
    pub numa_scan_us_per_mib: Param<f64>,
}

impl Default for Costs {
    fn default() -> Self {
        Self {
            migrate_page_us: Param::sourced(
                5.0,
                "order of magnitude of Linux move_pages per-page overhead (~200k pages/s single \
                 thread before 6.3 batched TLB flushing); shared/design/simulator-model.md section 3",
            ),
            migrate_huge_page_us: Param::sourced(
                60.0,
                "one 2 MiB move: one unmap/remap plus a 2 MiB copy setup; chosen, order of \
                 magnitude",
            ),
            sample_interrupt_us: Param::sourced(
                2.0,
                "'a few microseconds' per delivered sample, shared/design/simulator-model.md \
                 section 3",
            ),
            hinting_fault_us: Param::sourced(
                1.5,
                "a minor fault plus task_numa_fault bookkeeping; chosen, order of magnitude",
            ),
            replica_collapse_us: Param::sourced(
                300.0,
                "'hundreds of microseconds' per collapse, [Dashti13 §4.4]",
            ),
            numa_scan_us_per_mib: Param::sourced(
                10.0,
                "change_prot_numa over 256 PTEs plus a TLB flush; chosen, order of magnitude \
                 (the kernel scans 256 MB per period in the task's own context)",
            ),
        }
    }
}
