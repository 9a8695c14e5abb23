//! The machine: nodes, CPUs, memory, distances, last-level caches, the interconnect, and the
//! facts derived from them.
//!
//! # Derived facts, and why they are derived this way
//!
//! * **Hop classes.** The distinct off-diagonal SLIT distances, sorted: class 0 is local, class
//!   1 the nearest remote distance, and so on (the m5a.24xlarge table of
//!   004_3f7e99ce3837118e.txt, Table 1, has classes 10 / 16 / 32: local, "Remote-1",
//!   "Remote-2").
//! * **Links and routes.** Firmware publishes distances, not wiring. We infer that nodes `i` and
//!   `j` are *not* directly linked when some third node `k` is strictly nearer to both ends
//!   (`d(i,k) < d(i,j)` and `d(k,j) < d(i,j)`): the traffic then plausibly passes through `k`.
//!   On the Dell R905 of 003_10581fada7a362d4.txt (distances 16 for one hop, 22 for two) this
//!   finds the five HyperTransport links of its Figure 1 and no 0-3 link; on fully connected
//!   machines (Xeon UPI, EPYC Infinity Fabric) it finds every pair linked; a CPU-less CXL node
//!   is linked only to the socket it hangs off. Routes are shortest paths over the links (fewest
//!   hops, then smallest summed distance, then lowest node numbers). Both can be overridden by
//!   a file ([`InterconnectSpec`]) when the real wiring is known.
//! * **Fast and slow nodes.** 003_10581fada7a362d4.txt, section 2: with broadcast coherence,
//!   a node's accesses wait for the farthest probe answer, so the nodes whose *worst-case*
//!   distance to the other CPU nodes is larger are slower even for local accesses (256 vs 193
//!   cycles local read latency on the R905, Table 1). A CPU node is `fast` when its worst-case
//!   distance to the other CPU nodes equals the smallest such worst case on the machine, and
//!   `slow` otherwise; CPU-less nodes are `memory-only` and take no part (they are probed by
//!   no one). On a symmetric machine every CPU node is fast.

use crate::cpulist;
use crate::ids::{CpuId, NodeId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use thiserror::Error;

/// SLIT value firmware uses for "unreachable" (ACPI 6.5, section 5.2.17).
pub const SLIT_UNREACHABLE: u32 = 255;

/// Why a topology is not acceptable.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TopologyError {
    #[error("the topology has no nodes")]
    NoNodes,
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
}

impl Hmat {
    /// Whether the firmware gave any HMAT figure for this node.
    pub fn is_empty(&self) -> bool {
        self.access0.is_none() && self.access1.is_none()
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

/// A direct interconnect link between two nodes (`a < b`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Link {
    pub a: NodeId,
    pub b: NodeId,
}

impl Link {
    /// A link with its ends in canonical order.
    pub fn new(x: NodeId, y: NodeId) -> Self {
        if x <= y {
            Self { a: x, b: y }
        } else {
            Self { a: y, b: x }
        }
    }
}

/// The path traffic from `from` to `to` takes: every node on it, both ends included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub from: NodeId,
    pub to: NodeId,
    pub path: Vec<NodeId>,
}

impl Route {
    /// Links crossed, in order.
    pub fn links(&self) -> impl Iterator<Item = Link> + '_ {
        self.path.windows(2).map(|w| Link::new(w[0], w[1]))
    }

    /// Number of links crossed.
    pub fn hops(&self) -> usize {
        self.path.len().saturating_sub(1)
    }
}

/// Where the links and routes came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "path")]
pub enum InterconnectOrigin {
    /// Inferred from the distance matrix (see the module documentation).
    Inferred,
    /// Read from an interconnect file given by the user.
    File(String),
}

/// Links and a route for every ordered pair of distinct nodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interconnect {
    pub origin: InterconnectOrigin,
    /// Sorted.
    pub links: Vec<Link>,
    /// One per ordered pair of distinct nodes, sorted by (from, to).
    pub routes: Vec<Route>,
}

/// An interconnect description a user can give when the real wiring is known, in TOML:
///
/// ```toml
/// # the Dell R905 of 003_10581fada7a362d4.txt, Figure 1
/// links = [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3]]
///
/// [[routes]]        # optional: pin a route; the others are shortest paths over the links
/// from = 0
/// to = 3
/// via = [2]
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterconnectSpec {
    /// Pairs of node numbers that are directly linked.
    pub links: Vec<(u16, u16)>,
    /// Routes to pin; a route not listed is the shortest path over the links.
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
}

/// One pinned route: traffic from `from` to `to` passes through `via`, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub from: u16,
    pub to: u16,
    #[serde(default)]
    pub via: Vec<u16>,
}

impl InterconnectSpec {
    /// Parses the TOML form.
    pub fn from_toml(text: &str) -> Result<Self, TopologyError> {
        toml::from_str(text).map_err(|e| TopologyError::InterconnectToml(e.to_string()))
    }
}

/// The class of a node (003_10581fada7a362d4.txt, section 2; see the module documentation).
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

/// An interconnect spec together with where it came from (kept so a serialised topology says
/// whether its links were measured, given or inferred).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterconnectSpecWithOrigin {
    pub origin: InterconnectOrigin,
    #[serde(flatten)]
    pub spec: InterconnectSpec,
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
        mut nodes: Vec<Node>,
        distances: Vec<Vec<u32>>,
        mut llcs: Vec<LlcDomain>,
    ) -> Result<Self, TopologyError> {
        let n = nodes.len();
        if n == 0 {
            return Err(TopologyError::NoNodes);
        }
        if distances.len() != n {
            return Err(TopologyError::DistanceRows {
                rows: distances.len(),
                nodes: n,
            });
        }
        for (node, row) in nodes.iter().zip(&distances) {
            if row.len() != n {
                return Err(TopologyError::DistanceRowLength {
                    node: node.id,
                    len: row.len(),
                    nodes: n,
                });
            }
        }
        // Sort nodes, permuting the distance matrix with them.
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
        nodes = sorted;
        for w in nodes.windows(2) {
            if w[0].id == w[1].id {
                return Err(TopologyError::DuplicateNode(w[0].id));
            }
        }
        let mut owner = std::collections::BTreeMap::new();
        for node in &mut nodes {
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
        for llc in &mut llcs {
            llc.cpus.sort_unstable();
            llc.cpus.dedup();
        }
        llcs.sort_by(|a, b| a.cpus.cmp(&b.cpus));
        llcs.dedup();

        let classes = classify(&nodes, &distances);
        let links = infer_links(&nodes, &distances);
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

    /// Replaces the inferred links and routes with the ones a user gave.
    pub fn with_interconnect(
        mut self,
        spec: &InterconnectSpec,
        origin: InterconnectOrigin,
    ) -> Result<Self, TopologyError> {
        let mut links = Vec::with_capacity(spec.links.len());
        for &(a, b) in &spec.links {
            let (a, b) = (NodeId(a), NodeId(b));
            for x in [a, b] {
                self.index_of(x).ok_or(TopologyError::UnknownNode {
                    what: format!("link {a}-{b}"),
                    node: x,
                })?;
            }
            if a == b {
                return Err(TopologyError::SelfLink { a, b });
            }
            links.push(Link::new(a, b));
        }
        let mut pinned = Vec::with_capacity(spec.routes.len());
        for r in &spec.routes {
            let mut path = vec![NodeId(r.from)];
            path.extend(r.via.iter().map(|&v| NodeId(v)));
            path.push(NodeId(r.to));
            for &x in &path {
                self.index_of(x).ok_or(TopologyError::UnknownNode {
                    what: format!("route from node{} to node{}", r.from, r.to),
                    node: x,
                })?;
            }
            pinned.push(Route {
                from: NodeId(r.from),
                to: NodeId(r.to),
                path,
            });
        }
        self.set_interconnect(links, &pinned, origin)?;
        Ok(self)
    }

    fn set_interconnect(
        &mut self,
        mut links: Vec<Link>,
        pinned: &[Route],
        origin: InterconnectOrigin,
    ) -> Result<(), TopologyError> {
        links.sort();
        links.dedup();
        let linkset: BTreeSet<Link> = links.iter().copied().collect();
        for r in pinned {
            let distinct: BTreeSet<NodeId> = r.path.iter().copied().collect();
            if distinct.len() != r.path.len() {
                return Err(TopologyError::RouteLoops {
                    from: r.from,
                    to: r.to,
                });
            }
            for w in r.path.windows(2) {
                if !linkset.contains(&Link::new(w[0], w[1])) {
                    return Err(TopologyError::RouteNotOnLinks {
                        from: r.from,
                        to: r.to,
                        a: w[0],
                        b: w[1],
                    });
                }
            }
        }
        let routes = shortest_routes(&self.nodes, &self.distances, &links, pinned)?;
        let n = self.nodes.len();
        let mut hops = vec![vec![0u32; n]; n];
        for r in &routes {
            if let (Some(i), Some(j)) = (self.index_of(r.from), self.index_of(r.to)) {
                hops[i][j] = u32::try_from(r.hops()).unwrap_or(u32::MAX);
            }
        }
        self.hops = hops;
        self.interconnect = Interconnect {
            origin,
            links,
            routes,
        };
        Ok(())
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

    /// Largest distance from a node to the other CPU nodes (its own local distance when there
    /// is no other CPU node); `None` for a memory-only node.
    pub fn worst_cpu_distance(&self, node: NodeId) -> Option<u32> {
        let i = self.index_of(node)?;
        worst_cpu_distance(&self.nodes, &self.distances, i)
    }

    /// The distinct distances on the machine, sorted: index 0 is the local distance class,
    /// then remote classes from nearest to farthest ("hop classes").
    pub fn distance_classes(&self) -> Vec<u32> {
        let mut local = BTreeSet::new();
        let mut remote = BTreeSet::new();
        for (i, row) in self.distances.iter().enumerate() {
            for (j, &d) in row.iter().enumerate() {
                if i == j {
                    local.insert(d);
                } else {
                    remote.insert(d);
                }
            }
        }
        local.into_iter().chain(remote).collect()
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

fn worst_cpu_distance(nodes: &[Node], distances: &[Vec<u32>], i: usize) -> Option<u32> {
    if !nodes[i].has_cpu() {
        return None;
    }
    let others = nodes
        .iter()
        .enumerate()
        .filter(|&(j, n)| j != i && n.has_cpu())
        .map(|(j, _)| distances[i][j].max(distances[j][i]))
        .max();
    Some(others.unwrap_or(distances[i][i]))
}

fn classify(nodes: &[Node], distances: &[Vec<u32>]) -> Vec<NodeClass> {
    let worst: Vec<Option<u32>> = (0..nodes.len())
        .map(|i| worst_cpu_distance(nodes, distances, i))
        .collect();
    let best = worst.iter().flatten().copied().min();
    worst
        .iter()
        .map(|w| match (w, best) {
            (None, _) => NodeClass::MemoryOnly,
            (Some(w), Some(b)) if *w > b => NodeClass::Slow,
            _ => NodeClass::Fast,
        })
        .collect()
}

/// Symmetrised distance used for wiring inference (SLIT may be asymmetric).
fn sym(distances: &[Vec<u32>], i: usize, j: usize) -> u32 {
    distances[i][j].max(distances[j][i])
}

fn infer_links(nodes: &[Node], distances: &[Vec<u32>]) -> Vec<Link> {
    let n = nodes.len();
    let mut links = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            let d = sym(distances, i, j);
            let relayed = (0..n)
                .any(|k| k != i && k != j && sym(distances, i, k) < d && sym(distances, k, j) < d);
            if !relayed {
                links.push(Link::new(nodes[i].id, nodes[j].id));
            }
        }
    }
    links
}

/// Shortest routes for every ordered pair: fewest hops, then smallest summed distance, then
/// the lexicographically smallest path. Pinned routes replace the computed ones.
fn shortest_routes(
    nodes: &[Node],
    distances: &[Vec<u32>],
    links: &[Link],
    pinned: &[Route],
) -> Result<Vec<Route>, TopologyError> {
    let n = nodes.len();
    let idx = |id: NodeId| nodes.binary_search_by_key(&id, |x| x.id).ok();
    let mut adj = vec![Vec::new(); n];
    for l in links {
        if let (Some(a), Some(b)) = (idx(l.a), idx(l.b)) {
            adj[a].push(b);
            adj[b].push(a);
        }
    }
    for a in &mut adj {
        a.sort_unstable();
    }
    let mut routes = Vec::with_capacity(n * n.saturating_sub(1));
    for s in 0..n {
        // Dijkstra on (hops, summed distance, path) — n is at most a few hundred.
        type Key = (usize, u64, Vec<usize>);
        let mut best: Vec<Option<Key>> = vec![None; n];
        best[s] = Some((0, 0, vec![s]));
        let mut done = vec![false; n];
        loop {
            let next = (0..n)
                .filter(|&v| !done[v])
                .filter_map(|v| best[v].as_ref().map(|k| (k.clone(), v)))
                .min();
            let Some(((h, dsum, path), u)) = next else {
                break;
            };
            done[u] = true;
            for &v in &adj[u] {
                if done[v] {
                    continue;
                }
                let mut p = path.clone();
                p.push(v);
                let cand = (h + 1, dsum + u64::from(distances[u][v]), p);
                if best[v].as_ref().is_none_or(|b| cand < *b) {
                    best[v] = Some(cand);
                }
            }
        }
        for (t, b) in best.iter().enumerate() {
            if t == s {
                continue;
            }
            let (from, to) = (nodes[s].id, nodes[t].id);
            if let Some(r) = pinned.iter().find(|r| r.from == from && r.to == to) {
                routes.push(r.clone());
                continue;
            }
            let Some((_, _, path)) = b else {
                return Err(TopologyError::Disconnected { from, to });
            };
            routes.push(Route {
                from,
                to,
                path: path.iter().map(|&k| nodes[k].id).collect(),
            });
        }
    }
    Ok(routes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{TopologyBuilder, r905_distances};
    use proptest::prelude::*;

    fn nid(v: &[u16]) -> Vec<NodeId> {
        v.iter().map(|&x| NodeId(x)).collect()
    }

    #[test]
    fn r905_links_routes_and_classes() {
        let t = TopologyBuilder::new(4)
            .cores_per_llc(4)
            .distances(r905_distances())
            .build()
            .unwrap();
        let links: Vec<(u16, u16)> = t
            .interconnect()
            .links
            .iter()
            .map(|l| (l.a.0, l.b.0))
            .collect();
        assert_eq!(links, vec![(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]);
        assert_eq!(t.route(NodeId(0), NodeId(3)).unwrap().path, nid(&[0, 1, 3]));
        assert_eq!(t.route(NodeId(3), NodeId(0)).unwrap().path, nid(&[3, 1, 0]));
        assert_eq!(t.route(NodeId(1), NodeId(2)).unwrap().path, nid(&[1, 2]));
        assert_eq!(t.hops()[0][3], 2);
        assert_eq!(t.hops()[1][3], 1);
        assert_eq!(
            t.classes(),
            &[
                NodeClass::Slow,
                NodeClass::Fast,
                NodeClass::Fast,
                NodeClass::Slow
            ]
        );
        assert_eq!(t.distance_classes(), vec![10, 16, 22]);
    }

    #[test]
    fn interconnect_file_overrides_routes() {
        let t = TopologyBuilder::new(4)
            .distances(r905_distances())
            .build()
            .unwrap();
        let spec = InterconnectSpec::from_toml(
            "links = [[0,1],[0,2],[1,2],[1,3],[2,3]]\n[[routes]]\nfrom = 0\nto = 3\nvia = [2]\n",
        )
        .unwrap();
        let t = t
            .with_interconnect(&spec, InterconnectOrigin::File("r905.toml".into()))
            .unwrap();
        assert_eq!(t.route(NodeId(0), NodeId(3)).unwrap().path, nid(&[0, 2, 3]));
        // The reverse was not pinned, so it stays the shortest path with the lowest relay.
        assert_eq!(t.route(NodeId(3), NodeId(0)).unwrap().path, nid(&[3, 1, 0]));
    }

    #[test]
    fn interconnect_file_errors() {
        let t = TopologyBuilder::new(4)
            .distances(r905_distances())
            .build()
            .unwrap();
        let bad = |toml: &str| {
            let spec = InterconnectSpec::from_toml(toml)?;
            t.clone()
                .with_interconnect(&spec, InterconnectOrigin::File("x".into()))
        };
        assert!(matches!(
            bad("links = [[0,1],[1,2]]"),
            Err(TopologyError::Disconnected { .. })
        ));
        assert!(matches!(
            bad("links = [[0,9]]"),
            Err(TopologyError::UnknownNode {
                node: NodeId(9),
                ..
            })
        ));
        assert!(matches!(
            bad("links = [[1,1]]"),
            Err(TopologyError::SelfLink { .. })
        ));
        assert!(matches!(
            bad("links = [[0,1],[1,2],[2,3]]\n[[routes]]\nfrom=0\nto=3\nvia=[2]"),
            Err(TopologyError::RouteNotOnLinks { .. })
        ));
        assert!(matches!(
            bad("links = [[0,1],[1,2],[2,3]]\n[[routes]]\nfrom=0\nto=3\nvia=[1,0]"),
            Err(TopologyError::RouteLoops { .. })
        ));
        assert!(matches!(
            bad("linkz = []"),
            Err(TopologyError::InterconnectToml(_))
        ));
    }

    #[test]
    fn symmetric_machines_are_all_fast_and_fully_linked() {
        let t = TopologyBuilder::new(4).uniform(10, 21).build().unwrap();
        assert!(t.classes().iter().all(|&c| c == NodeClass::Fast));
        assert_eq!(t.interconnect().links.len(), 6);
        let one = TopologyBuilder::new(1).build().unwrap();
        assert!(!one.is_numa());
        assert_eq!(one.classes(), &[NodeClass::Fast]);
        assert!(one.interconnect().routes.is_empty());
    }

    #[test]
    fn cxl_node_is_memory_only_and_hangs_off_its_socket() {
        let t = TopologyBuilder::new(3)
            .memory_only(&[2])
            .distances(vec![vec![10, 21, 14], vec![21, 10, 24], vec![14, 24, 10]])
            .build()
            .unwrap();
        assert_eq!(
            t.classes(),
            &[NodeClass::Fast, NodeClass::Fast, NodeClass::MemoryOnly]
        );
        assert_eq!(t.route(NodeId(1), NodeId(2)).unwrap().path, nid(&[1, 0, 2]));
        assert_eq!(t.worst_cpu_distance(NodeId(2)), None);
        assert_eq!(t.worst_cpu_distance(NodeId(1)), Some(21));
    }

    #[test]
    fn rejects_bad_distances() {
        let b = |d: Vec<Vec<u32>>| TopologyBuilder::new(2).distances(d).build();
        assert!(matches!(
            b(vec![vec![10, 10], vec![20, 10]]),
            Err(TopologyError::RemoteNotFarther { .. })
        ));
        assert!(matches!(
            b(vec![vec![10, 255], vec![20, 10]]),
            Err(TopologyError::Unreachable { .. })
        ));
        assert!(matches!(
            b(vec![vec![10, 20]]),
            Err(TopologyError::DistanceRows { rows: 1, nodes: 2 })
        ));
        assert!(matches!(
            b(vec![vec![10, 20], vec![20]]),
            Err(TopologyError::DistanceRowLength { len: 1, .. })
        ));
    }

    #[test]
    fn nodes_are_sorted_with_their_distance_rows() {
        let mk = |id: u16, cpu: u32| Node {
            id: NodeId(id),
            cpus: vec![CpuId(cpu)],
            mem_total_bytes: 1,
            mem_free_bytes: 1,
            hmat: Hmat::default(),
        };
        let t = Topology::new(
            vec![mk(2, 2), mk(0, 0)],
            vec![vec![10, 30], vec![30, 10]],
            vec![],
        )
        .unwrap();
        assert_eq!(t.nodes()[0].id, NodeId(0));
        assert_eq!(t.distance(NodeId(0), NodeId(2)), Some(30));
        assert_eq!(t.index_of(NodeId(2)), Some(1));
        assert_eq!(t.index_of(NodeId(1)), None);
        assert_eq!(t.node_of_cpu(CpuId(2)), Some(NodeId(2)));
        assert!(matches!(
            Topology::new(
                vec![mk(0, 0), mk(1, 0)],
                vec![vec![10, 20], vec![20, 10]],
                vec![]
            ),
            Err(TopologyError::CpuInTwoNodes { .. })
        ));
    }

    #[test]
    fn serde_round_trip_keeps_the_interconnect() {
        let t = TopologyBuilder::new(4)
            .distances(r905_distances())
            .build()
            .unwrap();
        let json = serde_json::to_string(&t).unwrap();
        let back: Topology = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
    }

    /// A random symmetric distance matrix with local 10 and remote values in 11..=40.
    fn arb_distances() -> impl Strategy<Value = Vec<Vec<u32>>> {
        (1usize..9).prop_flat_map(|n| {
            proptest::collection::vec(11u32..=40, n * n).prop_map(move |v| {
                let mut d = vec![vec![10; n]; n];
                for i in 0..n {
                    for j in i + 1..n {
                        d[i][j] = v[i * n + j];
                        d[j][i] = v[i * n + j];
                    }
                }
                d
            })
        })
    }

    proptest! {
        #[test]
        fn derived_facts_are_consistent(d in arb_distances()) {
            let n = d.len();
            let t = TopologyBuilder::new(n).distances(d).build().unwrap();
            let links: BTreeSet<Link> = t.interconnect().links.iter().copied().collect();
            prop_assert_eq!(t.interconnect().routes.len(), n * (n - 1));
            for r in &t.interconnect().routes {
                // Every route starts and ends where it says and only crosses links.
                prop_assert_eq!(r.path.first(), Some(&r.from));
                prop_assert_eq!(r.path.last(), Some(&r.to));
                for l in r.links() {
                    prop_assert!(links.contains(&l));
                }
                prop_assert_eq!(t.route(r.from, r.to), Some(r));
            }
            for i in 0..n {
                for j in 0..n {
                    // Hop counts are symmetric, and one hop exactly on a link.
                    prop_assert_eq!(t.hops()[i][j], t.hops()[j][i]);
                    let linked = links.contains(&Link::new(t.nodes()[i].id, t.nodes()[j].id));
                    prop_assert_eq!(i != j && t.hops()[i][j] == 1, linked);
                }
            }
            // At least one CPU node is fast, and the fast ones share the smallest worst case.
            let fast: Vec<_> = t.nodes().iter().filter(|x| t.class(x.id) == Some(NodeClass::Fast)).collect();
            prop_assert!(!fast.is_empty());
            let best = fast.iter().filter_map(|x| t.worst_cpu_distance(x.id)).min();
            for x in t.nodes() {
                let w = t.worst_cpu_distance(x.id);
                prop_assert_eq!(t.class(x.id) == Some(NodeClass::Fast), w == best);
            }
        }
    }
}
