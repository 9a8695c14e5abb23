//! Synthetic topologies for tests, benchmarks and the simulator's presets.
//!
//! CPUs are numbered the way Linux numbers them on x86 servers: the first hardware thread of
//! every core on every node first, node by node, then the second threads in the same order
//! (so on 2 nodes x 2 cores x 2 threads, node 0 has CPUs 0,1,4,5).

use crate::ids::{CpuId, NodeId};
use crate::topology::{Hmat, LlcDomain, Node, Topology, TopologyError};

/// Builds a synthetic [`Topology`].
///
/// ```
/// use rondpoint_model::synthetic::TopologyBuilder;
/// let t = TopologyBuilder::new(2).llcs_per_node(2).cores_per_llc(4).threads_per_core(2)
///     .uniform(10, 21).build().unwrap();
/// assert_eq!(t.cpu_count(), 32);
/// assert_eq!(t.llcs().len(), 4);
/// ```
#[derive(Clone, Debug)]
pub struct TopologyBuilder {
    nodes: usize,
    llcs_per_node: usize,
    cores_per_llc: usize,
    threads_per_core: usize,
    mem_per_node: u64,
    free_fraction: f64,
    memory_only: Vec<usize>,
    llc_bytes: Option<u64>,
    distances: Option<Vec<Vec<u32>>>,
}

impl TopologyBuilder {
    /// `nodes` nodes, one LLC of one single-threaded core each, 16 GiB each, all free, and
    /// distances 10 local / 20 remote.
    pub fn new(nodes: usize) -> Self {
        Self {
            nodes,
            llcs_per_node: 1,
            cores_per_llc: 1,
            threads_per_core: 1,
            mem_per_node: 16 << 30,
            free_fraction: 1.0,
            memory_only: Vec::new(),
            llc_bytes: None,
            distances: None,
        }
    }

    pub fn llcs_per_node(mut self, v: usize) -> Self {
        self.llcs_per_node = v;
        self
    }

    pub fn cores_per_llc(mut self, v: usize) -> Self {
        self.cores_per_llc = v;
        self
    }

    pub fn threads_per_core(mut self, v: usize) -> Self {
        self.threads_per_core = v;
        self
    }

    /// Share of each node's memory that is free (0 to 1).
    pub fn free_fraction(mut self, f: f64) -> Self {
        self.free_fraction = f.clamp(0.0, 1.0);
        self
    }

    /// LLC size in bytes, for every LLC.
    pub fn llc_bytes(mut self, bytes: u64) -> Self {
        self.llc_bytes = Some(bytes);
        self
    }

    /// Node indices that have memory but no CPUs (CXL expanders).
    pub fn memory_only(mut self, nodes: &[usize]) -> Self {
        self.memory_only = nodes.to_vec();
        self
    }

    /// The SLIT matrix.
    pub fn distances(mut self, d: Vec<Vec<u32>>) -> Self {
        self.distances = Some(d);
        self
    }

    /// `local` on the diagonal, `remote` everywhere else.
    pub fn uniform(self, local: u32, remote: u32) -> Self {
        let n = self.nodes;
        let d = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if i == j { local } else { remote })
                    .collect()
            })
            .collect();
        self.distances(d)
    }

    pub fn build(self) -> Result<Topology, TopologyError> {
        let n = self.nodes;
        let cpu_nodes: Vec<usize> = (0..n).filter(|i| !self.memory_only.contains(i)).collect();
        let cores_per_node = self.llcs_per_node * self.cores_per_llc;
        let total_cores = cores_per_node * cpu_nodes.len();
        let mut nodes: Vec<Node> = (0..n)
            .map(|i| {
                let total = self.mem_per_node;
                Node {
                    id: NodeId(u16::try_from(i).unwrap_or(u16::MAX)),
                    cpus: Vec::new(),
                    mem_total_bytes: total,
                    mem_free_bytes: (total as f64 * self.free_fraction) as u64,
                    hmat: Hmat::default(),
                    memory_tier: None,
                }
            })
            .collect();
        let mut llcs = Vec::new();
        for (k, &node) in cpu_nodes.iter().enumerate() {
            for l in 0..self.llcs_per_node {
                let mut cpus = Vec::new();
                for c in 0..self.cores_per_llc {
                    let core = k * cores_per_node + l * self.cores_per_llc + c;
                    for t in 0..self.threads_per_core {
                        let cpu = (t * total_cores + core) as u32;
                        cpus.push(CpuId(cpu));
                    }
                }
                nodes[node].cpus.extend(cpus.iter().copied());
                llcs.push(LlcDomain {
                    cpus,
                    size_bytes: self.llc_bytes,
                });
            }
        }
        let distances = match self.distances {
            Some(d) => d,
            None => (0..n)
                .map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect())
                .collect(),
        };
        Topology::new(nodes, distances, llcs)
    }
}

/// SLIT of the Dell R905 of \[Gaud10\] (Figure 1: no link between processors 0
/// and 3), with AMD's hop-based distances: 10 local, 16 one hop, 22 two hops.
pub fn r905_distances() -> Vec<Vec<u32>> {
    vec![
        vec![10, 16, 16, 22],
        vec![16, 10, 16, 16],
        vec![16, 16, 10, 16],
        vec![22, 16, 16, 10],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_cpus_like_linux() {
        let t = TopologyBuilder::new(2)
            .cores_per_llc(2)
            .threads_per_core(2)
            .build()
            .unwrap();
        let cpus: Vec<u32> = t.nodes()[0].cpus.iter().map(|c| c.0).collect();
        assert_eq!(cpus, vec![0, 1, 4, 5]);
        let cpus: Vec<u32> = t.nodes()[1].cpus.iter().map(|c| c.0).collect();
        assert_eq!(cpus, vec![2, 3, 6, 7]);
    }

    #[test]
    fn memory_only_nodes_have_no_cpus() {
        let t = TopologyBuilder::new(3)
            .cores_per_llc(2)
            .memory_only(&[1])
            .build()
            .unwrap();
        assert!(!t.nodes()[1].has_cpu());
        assert_eq!(t.cpu_count(), 4);
        assert_eq!(t.nodes()[2].cpus, vec![CpuId(2), CpuId(3)]);
    }
}
