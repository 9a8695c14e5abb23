//! Topology discovery: nodes, CPUs, memory, SLIT distances, HMAT attributes, the kernel's
//! memory tiers and LLC domains.
//!
//! Files read, relative to the sysfs root (Documentation/ABI/stable/sysfs-devices-node,
//! Documentation/admin-guide/mm/numaperf.rst and
//! Documentation/ABI/testing/sysfs-kernel-mm-memory-tiers):
//!
//! | file | required | what |
//! |---|---|---|
//! | `devices/system/node/online` | yes | online nodes (list) |
//! | `devices/system/node/nodeN/cpulist` | yes | the node's CPUs (list; empty for a CPU-less node) |
//! | `devices/system/node/nodeN/distance` | yes | SLIT row, one entry per online node in number order |
//! | `devices/system/node/nodeN/meminfo` | yes | `Node N MemTotal: ... kB`, `MemFree` |
//! | `devices/system/node/nodeN/access{0,1}/initiators/{read,write}_{latency,bandwidth}` | no | HMAT (ns, MiB/s) |
//! | `devices/virtual/memory_tiering/memory_tierN/nodelist` | no | the nodes of memory tier N (Linux 6.1+; smaller N is faster) |
//! | `devices/system/cpu/cpuK/cache/indexI/{level,type,shared_cpu_list,size}` | no | the LLC is the highest-level data or unified cache |

use super::{NODE_DIR, SysfsError, SysfsRoot};
use rondpoint_model::cpulist;
use rondpoint_model::{CpuId, Hmat, HmatPerf, LlcDomain, Node, NodeId, Topology};
use std::collections::BTreeMap;
use std::path::Path;

/// A discovered topology and what the reader noticed on the way (missing optional facts).
#[derive(Clone, Debug)]
pub struct Discovery {
    pub topology: Topology,
    /// Plain sentences for the user, e.g. "no LLC information under devices/system/cpu".
    pub notes: Vec<String>,
}

/// Reads the topology of the machine whose sysfs is at `root` (normally `/sys`).
pub fn discover(root: &Path) -> Result<Discovery, SysfsError> {
    let fs = SysfsRoot::new(root);
    let node_dir = fs.path(NODE_DIR);
    if !node_dir.is_dir() {
        return Err(SysfsError::NoNodeDirectory {
            root: root.to_path_buf(),
            path: node_dir,
        });
    }
    let online_rel = format!("{NODE_DIR}/online");
    let online = parse_list(&fs, &online_rel)?;
    if online.is_empty() {
        return Err(fs.malformed(&online_rel, "no node is online"));
    }
    let mut notes = Vec::new();
    let tiers = read_memory_tiers(&fs)?;
    let mut nodes = Vec::with_capacity(online.len());
    let mut distances = Vec::with_capacity(online.len());
    for &n in &online {
        let id = NodeId(
            u16::try_from(n)
                .map_err(|_| fs.malformed(&online_rel, format!("node number {n} is too large")))?,
        );
        let dir = format!("{NODE_DIR}/node{n}");
        let cpus = parse_list(&fs, &format!("{dir}/cpulist"))?
            .into_iter()
            .map(CpuId)
            .collect();
        let meminfo = fs.node_meminfo(id)?;
        distances.push(read_distance(
            &fs,
            &format!("{dir}/distance"),
            online.len(),
        )?);
        let hmat = Hmat {
            access0: read_hmat(&fs, &format!("{dir}/access0/initiators"))?,
            access1: read_hmat(&fs, &format!("{dir}/access1/initiators"))?,
            // sysfs shows the best initiators only.
            latency_from_ns: Vec::new(),
        };
        nodes.push(Node {
            id,
            cpus,
            mem_total_bytes: meminfo.total_bytes,
            mem_free_bytes: meminfo.free_bytes,
            hmat,
            memory_tier: tiers.get(&id).copied(),
        });
    }
    let all_cpus: Vec<u32> = nodes
        .iter()
        .flat_map(|n| n.cpus.iter().map(|c| c.0))
        .collect();
    let llcs = read_llcs(&fs, &all_cpus)?;
    if llcs.is_empty() && !all_cpus.is_empty() {
        notes.push(format!(
            "no cache information under {}: LLC domains unknown",
            fs.path("devices/system/cpu").display()
        ));
    }
    if nodes.iter().all(|n| n.hmat.is_empty()) && nodes.len() > 1 {
        notes.push("firmware gives no HMAT performance attributes".into());
    }
    let topology =
        Topology::new(nodes, distances, llcs).map_err(|source| SysfsError::Inconsistent {
            root: root.to_path_buf(),
            source,
        })?;
    Ok(Discovery { topology, notes })
}

fn parse_list(fs: &SysfsRoot, rel: &str) -> Result<Vec<u32>, SysfsError> {
    let text = fs.read(rel)?;
    cpulist::parse(&text).map_err(|e| fs.malformed(rel, format!("not a CPU list: {e}")))
}

/// The kernel's memory tiers, `devices/virtual/memory_tiering/memory_tierN/nodelist`: the
/// tier of each node listed (none when the kernel has no memory tiers). Other entries of the
/// directory (`power`, `uevent`) are passed over.
fn read_memory_tiers(fs: &SysfsRoot) -> Result<BTreeMap<NodeId, u32>, SysfsError> {
    const DIR: &str = "devices/virtual/memory_tiering";
    let mut tiers = BTreeMap::new();
    for name in fs.list_optional(DIR)? {
        let Some(tier) = name.strip_prefix("memory_tier") else {
            continue;
        };
        let rel = format!("{DIR}/{name}/nodelist");
        let tier: u32 = tier
            .parse()
            .map_err(|_| fs.malformed(&rel, format!("'{name}' is not a numbered tier")))?;
        for node in parse_list(fs, &rel)? {
            let id = u16::try_from(node)
                .map(NodeId)
                .map_err(|_| fs.malformed(&rel, format!("node number {node} is too large")))?;
            if let Some(other) = tiers.insert(id, tier) {
                return Err(fs.malformed(&rel, format!("{id} is also in memory tier {other}")));
            }
        }
    }
    Ok(tiers)
}

fn read_distance(fs: &SysfsRoot, rel: &str, nodes: usize) -> Result<Vec<u32>, SysfsError> {
    let text = fs.read(rel)?;
    let row = text
        .split_whitespace()
        .enumerate()
        .map(|(i, w)| {
            w.parse::<u32>()
                .map_err(|_| fs.malformed(rel, format!("entry {} is not a distance", i + 1)))
        })
        .collect::<Result<Vec<u32>, _>>()?;
    if row.len() != nodes {
        return Err(fs.malformed(
            rel,
            format!(
                "{} distances for {nodes} online nodes (row {})",
                row.len(),
                row.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
            ),
        ));
    }
    Ok(row)
}

fn read_u64_optional(fs: &SysfsRoot, rel: &str) -> Result<Option<u64>, SysfsError> {
    match fs.read_optional(rel)? {
        None => Ok(None),
        Some(t) => t
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| fs.malformed(rel, "not a number")),
    }
}

fn read_hmat(fs: &SysfsRoot, dir: &str) -> Result<Option<HmatPerf>, SysfsError> {
    let perf = HmatPerf {
        read_latency_ns: read_u64_optional(fs, &format!("{dir}/read_latency"))?,
        write_latency_ns: read_u64_optional(fs, &format!("{dir}/write_latency"))?,
        read_bandwidth_mib_s: read_u64_optional(fs, &format!("{dir}/read_bandwidth"))?,
        write_bandwidth_mib_s: read_u64_optional(fs, &format!("{dir}/write_bandwidth"))?,
        initiators: fs
            .list_optional(dir)?
            .iter()
            .filter_map(|name| name.strip_prefix("node")?.parse::<u16>().ok())
            .map(NodeId)
            .collect(),
    };
    let empty = perf.read_latency_ns.is_none()
        && perf.write_latency_ns.is_none()
        && perf.read_bandwidth_mib_s.is_none()
        && perf.write_bandwidth_mib_s.is_none();
    Ok(if empty { None } else { Some(perf) })
}

/// `32768K` → bytes (the kernel prints cache sizes in K; M and G are accepted too).
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'K' => (&t[..t.len() - 1], 1u64 << 10),
        'M' => (&t[..t.len() - 1], 1 << 20),
        'G' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// For every CPU, its last-level cache: the highest-level data or unified cache. CPUs with no
/// cache directory are left out.
fn read_llcs(fs: &SysfsRoot, cpus: &[u32]) -> Result<Vec<LlcDomain>, SysfsError> {
    let mut domains: BTreeMap<Vec<u32>, Option<u64>> = BTreeMap::new();
    for &cpu in cpus {
        let cache = format!("devices/system/cpu/cpu{cpu}/cache");
        let mut best: Option<(u32, String)> = None;
        for name in fs.list_optional(&cache)? {
            if !name.starts_with("index") {
                continue;
            }
            let dir = format!("{cache}/{name}");
            let Some(ty) = fs.read_optional(&format!("{dir}/type"))? else {
                continue;
            };
            if ty.trim() == "Instruction" {
                continue;
            }
            let level_rel = format!("{dir}/level");
            let Some(level) = fs.read_optional(&level_rel)? else {
                continue;
            };
            let level: u32 = level
                .trim()
                .parse()
                .map_err(|_| fs.malformed(&level_rel, "not a cache level"))?;
            if best.as_ref().is_none_or(|(l, _)| level > *l) {
                best = Some((level, dir));
            }
        }
        let Some((_, dir)) = best else { continue };
        let shared_rel = format!("{dir}/shared_cpu_list");
        let mut shared = parse_list(fs, &shared_rel)?;
        if !shared.contains(&cpu) {
            return Err(fs.malformed(&shared_rel, format!("does not include cpu{cpu} itself")));
        }
        // Offline CPUs may be listed; keep the ones the nodes know.
        shared.retain(|c| cpus.contains(c));
        let size_rel = format!("{dir}/size");
        let size = match fs.read_optional(&size_rel)? {
            None => None,
            Some(s) => {
                Some(parse_size(&s).ok_or_else(|| fs.malformed(&size_rel, "not a cache size"))?)
            }
        };
        domains.entry(shared).or_insert(size);
    }
    Ok(domains
        .into_iter()
        .map(|(cpus, size_bytes)| LlcDomain {
            cpus: cpus.into_iter().map(CpuId).collect(),
            size_bytes,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_size("6M"), Some(6 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }
}
