//! Which lanes apply to this machine and these programs, from the topology (node classes, memory
//! tiers, last-level caches) and the processes (threads each): decided before the run and again
//! whenever the set of programs or their thread counts change. A lane that does not apply is
//! left out with the reason, which the run's notes give.

use rondpoint_model::{NodeClass, ProcessInfo, Topology};

/// Who places processes, if anyone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// OAAS: applications on fast or slow nodes by their sensitivity \[Gaud10\].
    Oaas,
    /// N-MASS: single-threaded processes on cores by locality and cache pressure \[Majo11\].
    NMass,
    /// Neither, and why.
    Neither(String),
    /// Not known yet: a program has not started (no threads to count).
    Unknown,
}

/// What the placement lane is, for these processes on this machine.
///
/// OAAS applies where the interconnect is asymmetric (both fast and slow CPU nodes) and every
/// program is a multi-threaded application ([Gaud10 §4]: each application fills a node of its
/// own), at most one per CPU node. N-MASS applies where at least two single-threaded processes
/// may share a last-level cache ([Majo11 §2]); it leaves multi-threaded ones where the OS runs
/// them. Where both could, single-threaded processes are present and OAAS, which gives every
/// program a node of its own, cannot take them: N-MASS places.
pub fn placement(topology: &Topology, processes: &[ProcessInfo]) -> Placement {
    if processes.iter().any(|p| p.threads.is_empty()) {
        return Placement::Unknown;
    }
    let single = processes.iter().filter(|p| p.threads.len() == 1).count();
    let multi = processes.len() - single;
    let shared_cache = largest_cache_cores(topology) >= 2;
    if single >= 2 && shared_cache {
        return Placement::NMass;
    }
    let cpu_nodes = topology.nodes().iter().filter(|n| n.has_cpu()).count();
    let class = |c: NodeClass| {
        topology
            .nodes()
            .iter()
            .zip(topology.classes())
            .any(|(n, k)| *k == c && n.has_cpu())
    };
    let asymmetric = class(NodeClass::Fast) && class(NodeClass::Slow);
    match () {
        _ if !asymmetric => Placement::Neither(
            "neither OAAS nor N-MASS applies: the interconnect is symmetric (no slow node to \
             keep sensitive applications off, [Gaud10 §2])"
                .to_string()
                + &nmass_why(single, shared_cache),
        ),
        _ if single > 0 => Placement::Neither(format!(
            "neither OAAS nor N-MASS applies: {single} single-threaded program(s) beside \
             {multi} multi-threaded: OAAS gives each application a node of its own \
             [Gaud10 §4]{}",
            nmass_why(single, shared_cache)
        )),
        _ if multi > cpu_nodes => Placement::Neither(format!(
            "OAAS does not apply: {multi} applications for {cpu_nodes} CPU nodes, and it gives \
             each a node of its own [Gaud10 §4]"
        )),
        _ if multi == 0 => Placement::Neither("no program to place".to_string()),
        _ => Placement::Oaas,
    }
}

/// Why N-MASS does not apply, as the end of a sentence.
fn nmass_why(single: usize, shared_cache: bool) -> String {
    if !shared_cache {
        "; no two cores share a last-level cache, so N-MASS has no cache contention to relieve"
            .to_string()
    } else {
        format!(
            "; {single} single-threaded process(es): N-MASS needs two to share a cache \
             [Majo11 §2]"
        )
    }
}

/// Cores of the largest last-level cache (a node's cores where the topology lists none).
fn largest_cache_cores(topology: &Topology) -> usize {
    let by_llc = topology.llcs().iter().map(|l| l.cpus.len()).max();
    by_llc.unwrap_or_else(|| {
        topology
            .nodes()
            .iter()
            .map(|n| n.cpus.len())
            .max()
            .unwrap_or(0)
    })
}

/// Why the pages lane has nothing to do here, if it has not: Carrefour moves pages between
/// nodes with CPUs (it leaves memory-only nodes to the overflow lane), so it needs two.
pub fn pages(topology: &Topology) -> Option<String> {
    let cpu_nodes = topology.nodes().iter().filter(|n| n.has_cpu()).count();
    if cpu_nodes < 2 {
        return Some(format!(
            "the pages lane does not apply: {cpu_nodes} node(s) with CPUs, and Carrefour moves \
             pages between nodes that run threads [Dashti13 §3]"
        ));
    }
    None
}

/// Why the overflow lane has nowhere to put overflow, if it has not: it needs a second node
/// with memory.
pub fn overflow(topology: &Topology) -> Option<String> {
    let memory_nodes = topology
        .nodes()
        .iter()
        .filter(|n| n.mem_total_bytes > 0)
        .count();
    if memory_nodes < 2 {
        return Some(format!(
            "the overflow lane does not apply: {memory_nodes} node(s) with memory, no remote \
             node to place overflow on [Choe21 §3]"
        ));
    }
    None
}
