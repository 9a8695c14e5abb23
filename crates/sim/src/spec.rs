//! A machine preset turned into the checked, derived description the simulator runs on:
//! topology, per-node and per-link capacities, the idle latency matrix, and for every pair of
//! nodes the directed links a memory access crosses.

use crate::machine_preset::{LatencyModel, MachinePreset};
use crate::param::Param;
use rondpoint_model::bounds::Invalid;
use rondpoint_model::topology::{InterconnectSpec, RouteSpec};
use rondpoint_model::{
    CpuId, Hmat, HmatPerf, InterconnectOrigin, LlcDomain, Node, NodeId, Topology, TopologyError,
};
use thiserror::Error;

/// What is wrong with a machine preset.
#[derive(Debug, Error)]
pub enum SpecError {
    #[error("machine '{machine}': {what}")]
    Invalid { machine: String, what: String },
    #[error("machine '{machine}': {source}")]
    Topology {
        machine: String,
        #[source]
        source: TopologyError,
    },
}

/// Mechanism costs, in nanoseconds or plain factors.
#[derive(Clone, Debug, PartialEq)]
pub struct CostsNs {
    pub migrate_page_ns: f64,
    pub migrate_huge_page_ns: f64,
    pub sample_interrupt_ns: f64,
    pub hinting_fault_ns: f64,
    pub replica_collapse_ns: f64,
    pub numa_scan_ns_per_mib: f64,
}

/// One core the simulator can run a thread on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Core {
    pub cpu: CpuId,
    /// Dense node index.
    pub node: usize,
    /// Index into [`MachineSpec::topology`]'s LLC list.
    pub llc: usize,
}

/// The simulated machine.
#[derive(Clone, Debug)]
pub struct MachineSpec {
    pub name: String,
    pub topology: Topology,
    pub freq_ghz: f64,
    pub llc_bytes: f64,
    /// Memory per node (bytes), indexed densely.
    pub mem_bytes: Vec<u64>,
    /// Memory-controller bandwidth per node (bytes per ns = GB/s).
    pub mc_bw: Vec<f64>,
    /// Undirected links; directed link `2i` is `a -> b`, `2i + 1` is `b -> a`.
    pub links: Vec<(usize, usize)>,
    /// Bandwidth per direction of each undirected link (bytes per ns).
    pub link_bw: Vec<f64>,
    /// `idle_ns[s][d]`: unloaded latency from a CPU of node `s` to memory of node `d`.
    pub idle_ns: Vec<Vec<f64>>,
    /// `path[s][d]`: directed links crossed going from node `s` to node `d`.
    pub path: Vec<Vec<Vec<usize>>>,
    pub cores: Vec<Core>,
    pub costs: CostsNs,
}

impl MachineSpec {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.mem_bytes.len()
    }

    /// Cores of node `node` (dense index).
    pub(crate) fn cores_on(&self, node: usize) -> usize {
        self.cores.iter().filter(|c| c.node == node).count()
    }

    /// The nodes with cores (dense indices, in order).
    pub(crate) fn cpu_nodes(&self) -> Vec<usize> {
        (0..self.nodes())
            .filter(|&n| self.cores_on(n) > 0)
            .collect()
    }

    /// Number of directed links.
    pub(crate) fn directed_links(&self) -> usize {
        self.links.len() * 2
    }

    /// Cycles per nanosecond.
    pub(crate) fn cycles_per_ns(&self) -> f64 {
        self.freq_ghz
    }

    /// Checks a preset and derives the machine.
    pub fn from_preset(p: &MachinePreset) -> Result<Self, SpecError> {
        let bad = |what: Invalid| SpecError::Invalid {
            machine: p.name.clone(),
            what: what.0,
        };
        crate::bounds::check_machine(p).map_err(|e| bad(e.into()))?;
        let per_node = PerNode::of(p).map_err(&bad)?;
        let (mut topology, cores) = topology(p, &per_node)?;
        let links: Vec<(usize, usize)> = topology
            .interconnect()
            .links
            .iter()
            .map(|l| (usize::from(l.a.0), usize::from(l.b.0)))
            .collect();
        let link_bw = link_bandwidths(p, &links).map_err(&bad)?;
        let path = link_paths(&topology);
        let idle_ns = idle_latency(p, &topology, &per_node).map_err(&bad)?;
        set_hmat(&mut topology, &idle_ns, &per_node.mc_bw, &per_node.cores);
        let c = &p.costs;
        Ok(MachineSpec {
            name: p.name.clone(),
            topology,
            freq_ghz: p.freq_ghz.get(),
            llc_bytes: p.llc_bytes.get() as f64,
            mem_bytes: per_node.mem,
            mc_bw: per_node.mc_bw,
            links,
            link_bw,
            idle_ns,
            path,
            cores,
            costs: CostsNs {
                migrate_page_ns: c.migrate_page_us.get() * 1e3,
                migrate_huge_page_ns: c.migrate_huge_page_us.get() * 1e3,
                sample_interrupt_ns: c.sample_interrupt_us.get() * 1e3,
                hinting_fault_ns: c.hinting_fault_us.get() * 1e3,
                replica_collapse_ns: c.replica_collapse_us.get() * 1e3,
                numa_scan_ns_per_mib: c.numa_scan_us_per_mib.get() * 1e3,
            },
        })
    }
}

/// A preset's per-node figures, with its `[[node]]` overrides applied.
struct PerNode {
    cores: Vec<u32>,
    mem: Vec<u64>,
    mc_bw: Vec<f64>,
    local_ns: Vec<Option<f64>>,
}

impl PerNode {
    fn of(p: &MachinePreset) -> Result<Self, Invalid> {
        // The numbers are in range (crate::bounds); what is left is their structure.
        let n = usize::from(p.nodes.get());
        let mut per = Self {
            cores: vec![p.cores_per_node.get(); n],
            mem: vec![p.mem_bytes_per_node.get(); n],
            mc_bw: vec![p.mc_bandwidth_gbs.get(); n],
            local_ns: vec![None; n],
        };
        for o in &p.node_overrides {
            let i = usize::from(o.id);
            if i >= n {
                return Err(Invalid(format!(
                    "[[node]] id = {} but the machine has {n} nodes",
                    o.id
                )));
            }
            if let Some(c) = &o.cores {
                per.cores[i] = c.get();
            }
            if let Some(m) = &o.mem_bytes {
                per.mem[i] = m.get();
            }
            if let Some(b) = &o.mc_bandwidth_gbs {
                per.mc_bw[i] = b.get();
            }
            per.local_ns[i] = o.local_ns.as_ref().map(Param::get);
        }
        if per.cores.iter().all(|&c| c == 0) {
            return Err("the machine has no cores".into());
        }
        let total: u64 = per.cores.iter().map(|&c| u64::from(c)).sum();
        if total > rondpoint_model::bounds::MAX_CPUS as u64 {
            return Err(Invalid(format!(
                "the machine has {total} cores; rondpoint handles at most {}",
                rondpoint_model::bounds::MAX_CPUS
            )));
        }
        Ok(per)
    }
}

/// The topology (CPUs numbered node by node; LLCs splitting each node's cores evenly; links
/// and routes from the preset where it gives them), and its cores.
fn topology(p: &MachinePreset, per: &PerNode) -> Result<(Topology, Vec<Core>), SpecError> {
    let llcs_per_node = p.llcs_per_node.get().max(1);
    let mut nodes = Vec::with_capacity(per.cores.len());
    let mut llcs = Vec::new();
    let mut cores = Vec::new();
    let mut next_cpu = 0u32;
    for (i, &c) in per.cores.iter().enumerate() {
        let cpus: Vec<CpuId> = (next_cpu..next_cpu + c).map(CpuId).collect();
        next_cpu += c;
        if c > 0 {
            let each = c.div_ceil(llcs_per_node) as usize;
            for chunk in cpus.chunks(each) {
                let llc = llcs.len();
                for &cpu in chunk {
                    cores.push(Core { cpu, node: i, llc });
                }
                llcs.push(LlcDomain {
                    cpus: chunk.to_vec(),
                    size_bytes: Some(p.llc_bytes.get()),
                });
            }
        }
        nodes.push(Node {
            id: NodeId(i as u16),
            cpus,
            mem_total_bytes: per.mem[i],
            mem_free_bytes: per.mem[i],
            hmat: Hmat::default(),
            memory_tier: None,
        });
    }
    let topo_err = |source| SpecError::Topology {
        machine: p.name.clone(),
        source,
    };
    let mut topology = Topology::new(nodes, p.distances.value().clone(), llcs).map_err(topo_err)?;
    if p.links.is_some() || !p.routes.is_empty() {
        let links = match &p.links {
            Some(l) => l.value().clone(),
            None => topology
                .interconnect()
                .links
                .iter()
                .map(|l| (l.a.0, l.b.0))
                .collect(),
        };
        let spec = InterconnectSpec {
            links,
            routes: p
                .routes
                .iter()
                .map(|r| RouteSpec {
                    from: r.from,
                    to: r.to,
                    via: r.via.clone(),
                })
                .collect(),
        };
        topology = topology
            .with_interconnect(
                &spec,
                InterconnectOrigin::File(format!("preset {}", p.name)),
            )
            .map_err(topo_err)?;
    }
    // Cores get their LLC index in the topology's (sorted) LLC order.
    for core in &mut cores {
        core.llc = topology
            .llcs()
            .iter()
            .position(|l| l.cpus.contains(&core.cpu))
            .unwrap_or(0);
    }
    Ok((topology, cores))
}

/// Each node's HMAT figures as a firmware would report them: for its best CPU initiators (least
/// idle latency), the idle latency and the memory controllers' bandwidth (reads and writes
/// together, so both read and write figures), and the idle latency from every CPU node, which
/// ACPI's HMAT holds and Linux's sysfs does not show.
fn set_hmat(topology: &mut Topology, idle_ns: &[Vec<f64>], mc_bw: &[f64], cores: &[u32]) {
    let cpu_nodes: Vec<usize> = (0..cores.len()).filter(|&i| cores[i] > 0).collect();
    for (d, &bw) in mc_bw.iter().enumerate() {
        if topology
            .nodes()
            .get(d)
            .is_none_or(|n| n.mem_total_bytes == 0)
        {
            continue;
        }
        let latency = |s: usize| idle_ns[s][d].round().max(0.0) as u64;
        let Some(best) = cpu_nodes.iter().map(|&s| latency(s)).min() else {
            continue;
        };
        // GB/s (10^9 bytes) to the MiB/s sysfs reports.
        let mib_s = (bw * 1e9 / f64::from(1u32 << 20)).round() as u64;
        let perf = HmatPerf {
            read_latency_ns: Some(best),
            write_latency_ns: Some(best),
            read_bandwidth_mib_s: Some(mib_s),
            write_bandwidth_mib_s: Some(mib_s),
            initiators: cpu_nodes
                .iter()
                .filter(|&&s| latency(s) == best)
                .map(|&s| NodeId(s as u16))
                .collect(),
        };
        let hmat = Hmat {
            access0: Some(perf.clone()),
            access1: Some(perf),
            latency_from_ns: cpu_nodes
                .iter()
                .map(|&s| (NodeId(s as u16), latency(s)))
                .collect(),
        };
        topology.set_hmat(NodeId(d as u16), hmat);
    }
}

/// Bandwidth per direction of each link: the preset's, or its `[[link]]` override.
fn link_bandwidths(p: &MachinePreset, links: &[(usize, usize)]) -> Result<Vec<f64>, Invalid> {
    let mut link_bw = vec![p.link_bandwidth_gbs.get(); links.len()];
    for o in &p.link_overrides {
        let key = (usize::from(o.a.min(o.b)), usize::from(o.a.max(o.b)));
        let Some(i) = links.iter().position(|&l| l == key) else {
            return Err(Invalid(format!(
                "[[link]] {}-{} is not a link of this machine",
                o.a, o.b
            )));
        };
        link_bw[i] = o.bandwidth_gbs.get();
    }
    Ok(link_bw)
}

/// `path[s][d]`: the directed links (`2i` is `a -> b`, `2i + 1` is `b -> a`) of the route from
/// node `s` to node `d`.
fn link_paths(topology: &Topology) -> Vec<Vec<Vec<usize>>> {
    let n = topology.len();
    let interconnect = topology.interconnect();
    let mut path = vec![vec![Vec::new(); n]; n];
    for r in &interconnect.routes {
        let (s, d) = (usize::from(r.from.0), usize::from(r.to.0));
        path[s][d] = interconnect.directions(r).collect();
    }
    path
}

/// The idle latency matrix: as given, or from the `hops` model (doc comment of
/// [`LatencyModel`]).
fn idle_latency(
    p: &MachinePreset,
    topology: &Topology,
    per: &PerNode,
) -> Result<Vec<Vec<f64>>, Invalid> {
    let n = per.cores.len();
    match &p.latency {
        LatencyModel::Matrix { ns } => {
            let m = ns.value();
            if m.len() != n || m.iter().any(|r| r.len() != n) {
                return Err(Invalid(format!("latency matrix must be {n} x {n}")));
            }
            Ok(m.clone())
        }
        LatencyModel::Hops {
            local_ns,
            hop_ns,
            probe_hop_ns,
        } => {
            let hop = hop_ns.get();
            let probe = probe_hop_ns.as_ref().map_or(0.0, Param::get);
            let hops = topology.hops();
            let cpu_nodes: Vec<usize> = (0..n).filter(|&i| per.cores[i] > 0).collect();
            Ok((0..n)
                .map(|s| {
                    (0..n)
                        .map(|d| {
                            let local = per.local_ns[d].unwrap_or(local_ns.get());
                            let ecc = cpu_nodes.iter().map(|&c| hops[d][c]).max().unwrap_or(0);
                            (local + f64::from(hops[s][d]) * hop).max(probe * f64::from(ecc))
                        })
                        .collect()
                })
                .collect())
        }
    }
}
