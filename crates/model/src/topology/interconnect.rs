//! The interconnect: links and routes, inferred from the distances or read from a file given
//! by the user (see the module documentation of [`super`]).

use super::{Node, Topology, TopologyError, derive};
use crate::ids::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

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

impl Interconnect {
    /// The link directions `route` crosses, in order: `2i` for link `i` (of `links`) crossed
    /// from its `a` end to its `b` end, `2i + 1` the other way. Traffic per direction is
    /// numbered so in the counters and the simulator.
    pub fn directions<'a>(&'a self, route: &'a Route) -> impl Iterator<Item = usize> + 'a {
        route.path.windows(2).filter_map(|hop| {
            let link = Link::new(hop[0], hop[1]);
            let i = self.links.binary_search(&link).ok()?;
            Some(2 * i + usize::from(hop[0] != link.a))
        })
    }
}

/// An interconnect description a user can give when the real wiring is known, in TOML:
///
/// ```toml
/// # the Dell R905 of [Gaud10 Figure 1]
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

/// An interconnect spec together with where it came from (kept so a serialised topology says
/// whether its links were measured, given or inferred).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterconnectSpecWithOrigin {
    pub origin: InterconnectOrigin,
    #[serde(flatten)]
    pub spec: InterconnectSpec,
}

impl InterconnectSpec {
    /// Parses the TOML form.
    pub fn from_toml(text: &str) -> Result<Self, TopologyError> {
        toml::from_str(text)
            .map_err(|e| TopologyError::InterconnectToml(crate::toml_error::describe(text, &e)))
    }
}

impl Topology {
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

    pub(super) fn set_interconnect(
        &mut self,
        mut links: Vec<Link>,
        pinned: &[Route],
        origin: InterconnectOrigin,
    ) -> Result<(), TopologyError> {
        links.sort();
        links.dedup();
        let linkset: BTreeSet<Link> = links.iter().copied().collect();
        let mut pairs = BTreeSet::new();
        for r in pinned {
            if !pairs.insert((r.from, r.to)) {
                return Err(TopologyError::RouteTwice {
                    from: r.from,
                    to: r.to,
                });
            }
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
        self.hops = derive::hop_counts(self, &routes);
        self.interconnect = Interconnect {
            origin,
            links,
            routes,
        };
        Ok(())
    }
}

/// Symmetrised distance used for wiring inference (SLIT may be asymmetric).
fn sym(distances: &[Vec<u32>], i: usize, j: usize) -> u32 {
    distances[i][j].max(distances[j][i])
}

pub(super) fn infer_links(nodes: &[Node], distances: &[Vec<u32>]) -> Vec<Link> {
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
