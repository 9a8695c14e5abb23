//! The machine: nodes, CPUs, memory, distances, last-level caches, the interconnect, and the
//! facts derived from them.
//!
//! # Derived facts, and why they are derived this way
//!
//! * **Hop classes.** The distinct off-diagonal SLIT distances, sorted: class 0 is local, class
//!   1 the nearest remote distance, and so on (the m5a.24xlarge table of
//!   [Choe21 Table 1], has classes 10 / 16 / 32: local, "Remote-1",
//!   "Remote-2").
//! * **Links and routes.** Firmware publishes distances, not wiring. We infer that nodes `i` and
//!   `j` are *not* directly linked when some third node `k` is strictly nearer to both ends
//!   (`d(i,k) < d(i,j)` and `d(k,j) < d(i,j)`): the traffic then plausibly passes through `k`.
//!   On the Dell R905 of \[Gaud10\] (distances 16 for one hop, 22 for two) this
//!   finds the five HyperTransport links of its Figure 1 and no 0-3 link; on fully connected
//!   machines (Xeon UPI, EPYC Infinity Fabric) it finds every pair linked; a CPU-less CXL node
//!   is linked only to the socket it hangs off. Routes are shortest paths over the links (fewest
//!   hops, then smallest summed distance, then lowest node numbers). Both can be overridden by
//!   a file ([`InterconnectSpec`]) when the real wiring is known.
//! * **Fast and slow nodes.** [Gaud10 §2]: with broadcast coherence,
//!   a node's accesses wait for the farthest probe answer, so the nodes whose *worst-case*
//!   distance to the other CPU nodes is larger are slower even for local accesses (256 vs 193
//!   cycles local read latency on the R905, Table 1). A CPU node is `fast` when its worst-case
//!   distance to the other CPU nodes equals the smallest such worst case on the machine, and
//!   `slow` otherwise; CPU-less nodes are `memory-only` and take no part (they are probed by
//!   no one). On a symmetric machine every CPU node is fast.
//! * **Slower-tier memory** ([`Topology::is_slower_tier`]): memory slower than the nodes with
//!   CPUs have (CXL, persistent memory), which remote placement uses last. By the kernel's
//!   memory tiers when known ([`Node::memory_tier`]), as the kernel itself tells top-tier nodes
//!   from the others (`node_is_toptier` in mm/memory-tiers.c): every tier up to the slowest one
//!   holding a node with CPUs is top tier, so a CPU-less node in DRAM's tier (HBM in flat mode,
//!   memory the firmware does not mark as special) is not slower memory. Without them, every
//!   node with memory and no CPUs is.

mod derive;
mod interconnect;

#[cfg(test)]
mod tests;

pub use interconnect::{
    Interconnect, InterconnectOrigin, InterconnectSpec, InterconnectSpecWithOrigin, Link, Route,
    RouteSpec,
};

use crate::bounds::{MAX_CPUS, MAX_NODES};
use crate::cpulist;
use crate::ids::{CpuId, NodeId};
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// SLIT value firmware uses for "unreachable" (ACPI 6.5, section 5.2.17).
pub const SLIT_UNREACHABLE: u32 = 255;

/// Why a topology is not acceptable.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TopologyError {
    #[error("the topology has no nodes")]
    NoNodes,
    #[error("the machine has {count} {what}; rondpoint handles at most {max}")]
    TooLarge {
        what: &'static str,
        count: usize,
        max: usize,
    },
    #[error("{0} appears more than once")]
    DuplicateNode(NodeId),
    #[error("{cpu} is listed under both {first} and {second}")]
    CpuInTwoNodes {
        cpu: CpuId,
        first: NodeId,
        second: NodeId,
    },
    #[error("the distance matrix has {rows} rows but there are {nodes} nodes")]
    DistanceRows { rows: usize, nodes: usize },
    #[error("distance row of {node} has {len} entries but there are {nodes} nodes")]
    DistanceRowLength {
        node: NodeId,
        len: usize,
        nodes: usize,
    },
    #[error(
        "distance from {from} to {to} is {remote}, not larger than {from}'s local distance {local}"
    )]
    RemoteNotFarther {
        from: NodeId,
        to: NodeId,
        local: u32,
        remote: u32,
    },
    #[error("distance from {from} to {to} is {SLIT_UNREACHABLE}: firmware marks it unreachable")]
    Unreachable { from: NodeId, to: NodeId },
    #[error("memory free on {node} ({free} bytes) exceeds its total ({total} bytes)")]
    FreeAboveTotal { node: NodeId, free: u64, total: u64 },
    #[error("{what} names {node}, which is not in the topology")]
    UnknownNode { what: String, node: NodeId },
    #[error("link {a}-{b} joins a node to itself")]
    SelfLink { a: NodeId, b: NodeId },
    #[error("route from {from} to {to} steps from {a} to {b}, and there is no link {a}-{b}")]
    RouteNotOnLinks {
        from: NodeId,
        to: NodeId,
        a: NodeId,
        b: NodeId,
    },
    #[error("route from {from} to {to} visits a node twice")]
    RouteLoops { from: NodeId, to: NodeId },
    #[error("the route from {from} to {to} is given twice")]
    RouteTwice { from: NodeId, to: NodeId },
    #[error("with the given links, {to} cannot be reached from {from}")]
    Disconnected { from: NodeId, to: NodeId },
    #[error("interconnect file is not valid TOML: {0}")]
    InterconnectToml(String),
}

/// HMAT performance of one memory node as seen from its best initiators
/// (`/sys/devices/system/node/nodeN/accessK/initiators/`). Linux reports latencies in
/// nanoseconds and bandwidths in MiB/s (Documentation/admin-guide/mm/numaperf.rst).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HmatPerf {
    pub read_latency_ns: Option<u64>,
    pub write_latency_ns: Option<u64>,
    pub read_bandwidth_mib_s: Option<u64>,
    pub write_bandwidth_mib_s: Option<u64>,
    /// The initiator nodes these figures are for.
    pub initiators: Vec<NodeId>,
}

/// HMAT access classes: `access0` (any initiator, including CPU-less ones such as GPUs) and
/// `access1` (CPU initiators only; Linux 5.10).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hmat {
    pub access0: Option<HmatPerf>,
    pub access1: Option<HmatPerf>,
    /// Idle read latency to this node from each initiator node (ns), where known. ACPI's HMAT
    /// lists every initiator-target pair (its System Locality Latency and Bandwidth
    /// Information structures), but Linux's sysfs shows only the best initiators
    /// (`access0`/`access1`), so a live machine leaves this empty; the simulator fills it from
    /// its latency matrix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_from_ns: Vec<(NodeId, u64)>,
}

impl Hmat {
    /// Whether the firmware gave any HMAT figure for this node.
    pub fn is_empty(&self) -> bool {
        self.access0.is_none() && self.access1.is_none() && self.latency_from_ns.is_empty()
    }

    /// The best initiators' figures: `access1` (CPU initiators), else `access0`.
    pub fn best(&self) -> Option<&HmatPerf> {
        self.access1.as_ref().or(self.access0.as_ref())
    }
}

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub id: NodeId,
    /// Its CPUs, sorted. Empty for a memory-only node (CXL, persistent memory, HBM).
    pub cpus: Vec<CpuId>,
    pub mem_total_bytes: u64,
    pub mem_free_bytes: u64,
    #[serde(default, skip_serializing_if = "Hmat::is_empty")]
    pub hmat: Hmat,
    /// The kernel's memory tier holding this node's memory
    /// (`/sys/devices/virtual/memory_tiering/memory_tierN/nodelist`, Linux 6.1+;
    /// Documentation/ABI/testing/sysfs-kernel-mm-memory-tiers): a smaller number is a faster
    /// tier; DRAM is in tier 4 by default, memory a driver says is slower (dax/kmem:
    /// persistent memory, CXL) in a higher-numbered one. `None` when the kernel has no memory
    /// tiers, or for a node without memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_tier: Option<u32>,
}

impl Node {
    /// Whether the node has CPUs (a memory-only node, such as a CXL expander, has none).
    pub fn has_cpu(&self) -> bool {
        !self.cpus.is_empty()
    }
}

/// CPUs that share one last-level cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlcDomain {
    /// Sorted.
    pub cpus: Vec<CpuId>,
    /// Size in bytes, when known.
    pub size_bytes: Option<u64>,
}

/// The class of a node ([Gaud10 §2]; see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeClass {
    Fast,
    Slow,
    MemoryOnly,
}

impl fmt::Display for NodeClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeClass::Fast => "fast",
            NodeClass::Slow => "slow",
            NodeClass::MemoryOnly => "memory-only",
        })
    }
}

/// The raw parts of a topology, before checks and derivations; also its serialised form.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopologySpec {
    pub nodes: Vec<Node>,
    /// `distances[i][j]`: SLIT distance from `nodes[i]` to `nodes[j]`.
    pub distances: Vec<Vec<u32>>,
    #[serde(default)]
    pub llcs: Vec<LlcDomain>,
    /// Links and routes; inferred from the distances when absent.
    #[serde(default)]
    pub interconnect: Option<InterconnectSpecWithOrigin>,
}

/// A checked machine description with its derived facts. Nodes are kept sorted by number;
/// every per-node vector in rondpoint is indexed the same way ([`Topology::index_of`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "TopologySpec", into = "TopologySpec")]
pub struct Topology {
    nodes: Vec<Node>,
    distances: Vec<Vec<u32>>,
    llcs: Vec<LlcDomain>,
    interconnect: Interconnect,
    hops: Vec<Vec<u32>>,
    classes: Vec<NodeClass>,
}

impl TryFrom<TopologySpec> for Topology {
    type Error = TopologyError;
    fn try_from(spec: TopologySpec) -> Result<Self, Self::Error> {
        let (interconnect, origin) = match spec.interconnect {
            Some(i) => (Some(i.spec), Some(i.origin)),
            None => (None, None),
        };
        let mut t = Topology::new(spec.nodes, spec.distances, spec.llcs)?;
        if let (Some(ic), Some(origin)) = (interconnect, origin) {
            t = t.with_interconnect(&ic, origin)?;
        }
        Ok(t)
    }
}

impl From<Topology> for TopologySpec {
    fn from(t: Topology) -> Self {
        let routes = t
            .interconnect
            .routes
            .iter()
            .map(|r| RouteSpec {
                from: r.from.0,
                to: r.to.0,
                via: r.path[1..r.path.len() - 1].iter().map(|n| n.0).collect(),
            })
            .collect();
        TopologySpec {
            interconnect: Some(InterconnectSpecWithOrigin {
                origin: t.interconnect.origin.clone(),
                spec: InterconnectSpec {
                    links: t
                        .interconnect
                        .links
                        .iter()
                        .map(|l| (l.a.0, l.b.0))
                        .collect(),
                    routes,
                },
            }),
            nodes: t.nodes,
            distances: t.distances,
            llcs: t.llcs,
        }
    }
}

impl Topology {
    /// Checks the parts and derives links, routes, hops and classes (links inferred from the
    /// distances). Nodes may come in any order; they are sorted by number, and the distance
    /// rows must be given in the same order as `nodes`.
    pub fn new(
        nodes: Vec<Node>,
        distances: Vec<Vec<u32>>,
        mut llcs: Vec<LlcDomain>,
    ) -> Result<Self, TopologyError> {
        check_shape(&nodes, &distances)?;
        let (mut nodes, distances) = sorted_by_number(&nodes, &distances);
        check_nodes(&mut nodes)?;
        check_distances(&nodes, &distances)?;
        for llc in &mut llcs {
            llc.cpus.sort_unstable();
            llc.cpus.dedup();
        }
        llcs.sort_by(|a, b| a.cpus.cmp(&b.cpus));
        llcs.dedup();

        let classes = derive::classify(&nodes, &distances);
        let links = interconnect::infer_links(&nodes, &distances);
        let mut t = Topology {
            nodes,
            distances,
            llcs,
            interconnect: Interconnect {
                origin: InterconnectOrigin::Inferred,
                links: Vec::new(),
                routes: Vec::new(),
            },
            hops: Vec::new(),
            classes,
        };
        t.set_interconnect(links, &[], InterconnectOrigin::Inferred)?;
        Ok(t)
    }

    /// Sets a node's HMAT figures (a machine description that knows them, such as the
    /// simulator's); nothing derived depends on them. False if there is no such node.
    pub fn set_hmat(&mut self, node: NodeId, hmat: Hmat) -> bool {
        match self.index_of(node) {
            Some(i) => {
                self.nodes[i].hmat = hmat;
                true
            }
            None => false,
        }
    }

    /// Nodes, sorted by number.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Never true for a checked topology; here for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Dense index of a node (its position in [`Topology::nodes`]).
    pub fn index_of(&self, node: NodeId) -> Option<usize> {
        self.nodes.binary_search_by_key(&node, |n| n.id).ok()
    }

    /// The node with this number.
    pub fn node(&self, node: NodeId) -> Option<&Node> {
        self.index_of(node).map(|i| &self.nodes[i])
    }

    /// The node a CPU belongs to.
    pub fn node_of_cpu(&self, cpu: CpuId) -> Option<NodeId> {
        self.nodes
            .iter()
            .find(|n| n.cpus.binary_search(&cpu).is_ok())
            .map(|n| n.id)
    }

    /// The SLIT matrix, indexed densely.
    pub fn distances(&self) -> &[Vec<u32>] {
        &self.distances
    }

    /// SLIT distance between two nodes.
    pub fn distance(&self, from: NodeId, to: NodeId) -> Option<u32> {
        Some(self.distances[self.index_of(from)?][self.index_of(to)?])
    }

    /// Links crossed from `from` to `to` (0 for a node to itself).
    pub fn hops(&self) -> &[Vec<u32>] {
        &self.hops
    }

    /// Last-level cache domains, sorted by their first CPU.
    pub fn llcs(&self) -> &[LlcDomain] {
        &self.llcs
    }

    /// The nodes whose CPUs share a given LLC domain.
    pub fn llc_nodes(&self, llc: &LlcDomain) -> Vec<NodeId> {
        let mut v: Vec<NodeId> = llc
            .cpus
            .iter()
            .filter_map(|&c| self.node_of_cpu(c))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Links and routes.
    pub fn interconnect(&self) -> &Interconnect {
        &self.interconnect
    }

    /// The route from one node to another (`None` for a node to itself or an unknown node).
    pub fn route(&self, from: NodeId, to: NodeId) -> Option<&Route> {
        let n = self.nodes.len();
        let (i, j) = (self.index_of(from)?, self.index_of(to)?);
        if i == j {
            return None;
        }
        // Routes are sorted by (from, to) and exclude the diagonal.
        let k = i * (n - 1) + if j > i { j - 1 } else { j };
        self.interconnect.routes.get(k)
    }

    /// The class of each node, indexed densely.
    pub fn classes(&self) -> &[NodeClass] {
        &self.classes
    }

    /// The class of one node.
    pub fn class(&self, node: NodeId) -> Option<NodeClass> {
        self.index_of(node).map(|i| self.classes[i])
    }

    /// Total CPUs.
    pub fn cpu_count(&self) -> usize {
        self.nodes.iter().map(|n| n.cpus.len()).sum()
    }

    /// Whether there is anything NUMA about this machine (more than one node).
    pub fn is_numa(&self) -> bool {
        self.nodes.len() > 1
    }

    /// A node's CPU list in the kernel's compact form.
    pub fn cpulist(node: &Node) -> String {
        cpulist::format(node.cpus.iter().map(|c| c.0))
    }
}

/// Checks that there are nodes and a distance row of the right length for each.
fn check_shape(nodes: &[Node], distances: &[Vec<u32>]) -> Result<(), TopologyError> {
    let n = nodes.len();
    if n == 0 {
        return Err(TopologyError::NoNodes);
    }
    let cpus: usize = nodes.iter().map(|node| node.cpus.len()).sum();
    for (what, count, max) in [("nodes", n, MAX_NODES), ("CPUs", cpus, MAX_CPUS)] {
        if count > max {
            return Err(TopologyError::TooLarge { what, count, max });
        }
    }
    if distances.len() != n {
        return Err(TopologyError::DistanceRows {
            rows: distances.len(),
            nodes: n,
        });
    }
    for (node, row) in nodes.iter().zip(distances) {
        if row.len() != n {
            return Err(TopologyError::DistanceRowLength {
                node: node.id,
                len: row.len(),
                nodes: n,
            });
        }
    }
    Ok(())
}

/// The nodes sorted by number, and the distance matrix permuted with them.
fn sorted_by_number(nodes: &[Node], distances: &[Vec<u32>]) -> (Vec<Node>, Vec<Vec<u32>>) {
    let n = nodes.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| nodes[i].id);
    let distances: Vec<Vec<u32>> = order
        .iter()
        .map(|&i| order.iter().map(|&j| distances[i][j]).collect())
        .collect();
    let mut sorted: Vec<Node> = Vec::with_capacity(n);
    for &i in &order {
        sorted.push(nodes[i].clone());
    }
    (sorted, distances)
}

/// Checks the sorted nodes (each once, free memory within the total, each CPU on one node)
/// and sorts each one's CPUs.
fn check_nodes(nodes: &mut [Node]) -> Result<(), TopologyError> {
    for w in nodes.windows(2) {
        if w[0].id == w[1].id {
            return Err(TopologyError::DuplicateNode(w[0].id));
        }
    }
    let mut owner = std::collections::BTreeMap::new();
    for node in nodes.iter_mut() {
        node.cpus.sort_unstable();
        node.cpus.dedup();
        if node.mem_free_bytes > node.mem_total_bytes {
            return Err(TopologyError::FreeAboveTotal {
                node: node.id,
                free: node.mem_free_bytes,
                total: node.mem_total_bytes,
            });
        }
        for &cpu in &node.cpus {
            if let Some(first) = owner.insert(cpu, node.id) {
                return Err(TopologyError::CpuInTwoNodes {
                    cpu,
                    first,
                    second: node.id,
                });
            }
        }
    }
    Ok(())
}

/// Checks the distances: none unreachable, every remote one larger than the local one.
fn check_distances(nodes: &[Node], distances: &[Vec<u32>]) -> Result<(), TopologyError> {
    for (i, row) in distances.iter().enumerate() {
        for (j, &d) in row.iter().enumerate() {
            if d == SLIT_UNREACHABLE && i != j {
                return Err(TopologyError::Unreachable {
                    from: nodes[i].id,
                    to: nodes[j].id,
                });
            }
            if i != j && d <= row[i] {
                return Err(TopologyError::RemoteNotFarther {
                    from: nodes[i].id,
                    to: nodes[j].id,
                    local: row[i],
                    remote: d,
                });
            }
        }
    }
    Ok(())
}
