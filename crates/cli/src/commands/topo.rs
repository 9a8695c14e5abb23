//! `rondpoint topo`: the machine's NUMA topology, as a table or as JSON.
//!
//! The JSON schema is documented in docs/json/topo.md; its `schema_version` changes only when
//! a field is removed or changes meaning (new fields may appear at any time).

use crate::format;
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_linux::discover;
use rondpoint_model::topology::InterconnectSpec;
use rondpoint_model::{HmatPerf, InterconnectOrigin, NodeClass, Topology, cpulist};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Version of the `topo --json` schema (docs/json/topo.md).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Args)]
pub struct TopoArgs {
    /// Read sysfs from DIR instead of /sys (DIR plays the role of /sys: it holds devices/system/node).
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    sysfs_root: PathBuf,

    /// Take links and routes from a TOML file instead of inferring them from distances.
    ///
    /// Format: `links = [[0, 1], [1, 2]]`, plus optional `[[routes]]` tables with `from`, `to`
    /// and `via = [...]` to pin a route (see docs/json/topo.md).
    #[arg(long, value_name = "FILE")]
    interconnect: Option<PathBuf>,

    /// Print JSON (schema in docs/json/topo.md) instead of a table.
    #[arg(long)]
    json: bool,
}

/// The `topo --json` document.
#[derive(Debug, Serialize)]
pub struct TopoReport {
    pub schema_version: u32,
    pub sysfs_root: String,
    /// More than one node.
    pub numa: bool,
    pub node_count: usize,
    pub cpu_count: usize,
    pub mem_total_bytes: u64,
    pub mem_free_bytes: u64,
    pub nodes: Vec<NodeReport>,
    /// `distances[i][j]`: SLIT distance from `nodes[i]` to `nodes[j]`.
    pub distances: Vec<Vec<u32>>,
    /// Distinct distances, local first, then remote classes from nearest to farthest.
    pub distance_classes: Vec<u32>,
    /// `hops[i][j]`: links crossed from `nodes[i]` to `nodes[j]`.
    pub hops: Vec<Vec<u32>>,
    pub interconnect: InterconnectReport,
    pub llc_domains: Vec<LlcReport>,
    /// Facts the reader could not establish, in plain words.
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct NodeReport {
    pub id: u16,
    pub cpus: Vec<u32>,
    pub cpulist: String,
    pub mem_total_bytes: u64,
    pub mem_free_bytes: u64,
    pub has_cpu: bool,
    /// "fast", "slow" or "memory-only".
    pub class: NodeClass,
    /// Largest distance to another CPU node (null for a memory-only node).
    pub worst_cpu_distance: Option<u32>,
    /// Indices into `llc_domains` of the LLCs holding this node's CPUs.
    pub llcs: Vec<usize>,
    pub hmat: Option<HmatReport>,
}

#[derive(Debug, Serialize)]
pub struct HmatReport {
    pub access0: Option<HmatPerf>,
    pub access1: Option<HmatPerf>,
}

#[derive(Debug, Serialize)]
pub struct InterconnectReport {
    /// "inferred" (from distances) or "file".
    pub origin: &'static str,
    /// The interconnect file, when origin is "file".
    pub file: Option<String>,
    pub links: Vec<[u16; 2]>,
    /// Every ordered pair of distinct nodes, with the full path (ends included).
    pub routes: Vec<RouteReport>,
}

#[derive(Debug, Serialize)]
pub struct RouteReport {
    pub from: u16,
    pub to: u16,
    pub path: Vec<u16>,
}

#[derive(Debug, Serialize)]
pub struct LlcReport {
    pub id: usize,
    pub cpus: Vec<u32>,
    pub cpulist: String,
    pub nodes: Vec<u16>,
    pub size_bytes: Option<u64>,
}

pub fn run(args: &TopoArgs) -> Result<ExitCode> {
    let mut discovery = discover(&args.sysfs_root).context("reading the NUMA topology")?;
    if let Some(file) = &args.interconnect {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading interconnect file {}", file.display()))?;
        let spec = InterconnectSpec::from_toml(&text)
            .with_context(|| format!("in interconnect file {}", file.display()))?;
        discovery.topology = discovery
            .topology
            .with_interconnect(&spec, InterconnectOrigin::File(file.display().to_string()))
            .with_context(|| format!("in interconnect file {}", file.display()))?;
    }
    let report = build_report(
        &discovery.topology,
        &args.sysfs_root.display().to_string(),
        discovery.notes,
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_text(&report));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn build_report(t: &Topology, sysfs_root: &str, notes: Vec<String>) -> TopoReport {
    let llc_domains: Vec<LlcReport> = t
        .llcs()
        .iter()
        .enumerate()
        .map(|(id, l)| LlcReport {
            id,
            cpus: l.cpus.iter().map(|c| c.0).collect(),
            cpulist: cpulist::format(l.cpus.iter().map(|c| c.0)),
            nodes: t.llc_nodes(l).iter().map(|n| n.0).collect(),
            size_bytes: l.size_bytes,
        })
        .collect();
    let nodes = t
        .nodes()
        .iter()
        .zip(t.classes())
        .map(|(n, &class)| NodeReport {
            id: n.id.0,
            cpus: n.cpus.iter().map(|c| c.0).collect(),
            cpulist: Topology::cpulist(n),
            mem_total_bytes: n.mem_total_bytes,
            mem_free_bytes: n.mem_free_bytes,
            has_cpu: n.has_cpu(),
            class,
            worst_cpu_distance: t.worst_cpu_distance(n.id),
            llcs: llc_domains
                .iter()
                .filter(|l| l.nodes.contains(&n.id.0))
                .map(|l| l.id)
                .collect(),
            hmat: (!n.hmat.is_empty()).then(|| HmatReport {
                access0: n.hmat.access0.clone(),
                access1: n.hmat.access1.clone(),
            }),
        })
        .collect();
    let ic = t.interconnect();
    let (origin, file) = match &ic.origin {
        InterconnectOrigin::Inferred => ("inferred", None),
        InterconnectOrigin::File(f) => ("file", Some(f.clone())),
    };
    TopoReport {
        schema_version: SCHEMA_VERSION,
        sysfs_root: sysfs_root.to_string(),
        numa: t.is_numa(),
        node_count: t.len(),
        cpu_count: t.cpu_count(),
        mem_total_bytes: t.nodes().iter().map(|n| n.mem_total_bytes).sum(),
        mem_free_bytes: t.nodes().iter().map(|n| n.mem_free_bytes).sum(),
        nodes,
        distances: t.distances().to_vec(),
        distance_classes: t.distance_classes(),
        hops: t.hops().to_vec(),
        interconnect: InterconnectReport {
            origin,
            file,
            links: ic.links.iter().map(|l| [l.a.0, l.b.0]).collect(),
            routes: ic
                .routes
                .iter()
                .map(|r| RouteReport {
                    from: r.from.0,
                    to: r.to.0,
                    path: r.path.iter().map(|n| n.0).collect(),
                })
                .collect(),
        },
        llc_domains,
        notes,
    }
}

/// The human-readable form. Everything in it is also in the JSON.
pub fn render_text(r: &TopoReport) -> String {
    let mut out = String::new();
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let _ = writeln!(
        out,
        "{}, {}, {} of memory ({} free)   [sysfs: {}]",
        plural(r.node_count, "NUMA node"),
        plural(r.cpu_count, "CPU"),
        format::bytes(r.mem_total_bytes),
        format::bytes(r.mem_free_bytes),
        r.sysfs_root
    );
    if !r.numa {
        let _ = writeln!(
            out,
            "\nThis machine has a single NUMA node: every access is local, so there is no \
             placement for rondpoint to improve here.\n`rondpoint sim` simulates multi-node \
             machines instead."
        );
    }
    out.push('\n');
    let rows = r
        .nodes
        .iter()
        .map(|n| {
            vec![
                format!("node{}", n.id),
                n.class.to_string(),
                n.cpus.len().to_string(),
                if n.cpulist.is_empty() {
                    "-".to_string()
                } else {
                    n.cpulist.clone()
                },
                format::bytes(n.mem_total_bytes),
                format::bytes(n.mem_free_bytes),
                n.worst_cpu_distance
                    .map_or_else(|| "-".to_string(), |d| d.to_string()),
                n.llcs.len().to_string(),
            ]
        })
        .collect();
    out.push_str(&format::table(
        &[
            "node", "class", "cpus", "cpulist", "memory", "free", "worst", "llcs",
        ],
        &[false, false, true, false, true, true, true, true],
        rows,
    ));
    out.push_str("\n\n");
    out.push_str(
        "class: fast/slow by worst-case distance to the other CPU nodes (\"worst\"); \
         memory-only = no CPUs\n\n",
    );

    if r.numa {
        out.push_str("distances (SLIT)\n");
        let mut header = vec![String::new()];
        header.extend(r.nodes.iter().map(|n| format!("node{}", n.id)));
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut right = vec![false];
        right.extend(r.nodes.iter().map(|_| true));
        let rows = r
            .nodes
            .iter()
            .zip(&r.distances)
            .map(|(n, row)| {
                let mut v = vec![format!("node{}", n.id)];
                v.extend(row.iter().map(u32::to_string));
                v
            })
            .collect();
        out.push_str(&format::table(&header_refs, &right, rows));
        out.push_str("\n\n");

        let classes: Vec<String> = r
            .distance_classes
            .iter()
            .enumerate()
            .map(|(i, d)| {
                if i == 0 {
                    format!("{d} local")
                } else {
                    format!("{d} remote-{i}")
                }
            })
            .collect();
        let _ = writeln!(out, "distance classes: {}", classes.join(", "));
        let links: Vec<String> = r
            .interconnect
            .links
            .iter()
            .map(|[a, b]| format!("{a}-{b}"))
            .collect();
        let origin = match &r.interconnect.file {
            Some(f) => format!("from {f}"),
            None => "inferred from distances".to_string(),
        };
        let _ = writeln!(
            out,
            "links ({origin}): {}",
            if links.is_empty() {
                "none".to_string()
            } else {
                links.join(" ")
            }
        );
        let multi: Vec<String> = r
            .interconnect
            .routes
            .iter()
            .filter(|rt| rt.path.len() > 2)
            .map(|rt| {
                let via: Vec<String> = rt.path[1..rt.path.len() - 1]
                    .iter()
                    .map(u16::to_string)
                    .collect();
                format!("{}->{} via {}", rt.from, rt.to, via.join(","))
            })
            .collect();
        let _ = writeln!(
            out,
            "multi-hop routes: {}",
            if multi.is_empty() {
                "none (every pair of nodes is directly linked)".to_string()
            } else {
                multi.join(", ")
            }
        );
    }

    if let Some(first) = r.llc_domains.first() {
        let uniform = r
            .llc_domains
            .iter()
            .all(|l| l.cpus.len() == first.cpus.len() && l.size_bytes == first.size_bytes);
        let size = |b: Option<u64>| {
            b.map(format::bytes)
                .unwrap_or_else(|| "size unknown".into())
        };
        if uniform {
            let _ = writeln!(
                out,
                "last-level caches: {} of {} CPUs each, {} each",
                r.llc_domains.len(),
                first.cpus.len(),
                size(first.size_bytes)
            );
        } else {
            let list: Vec<String> = r
                .llc_domains
                .iter()
                .map(|l| format!("{} ({})", l.cpulist, size(l.size_bytes)))
                .collect();
            let _ = writeln!(out, "last-level caches: {}", list.join("; "));
        }
    }

    let hmat_rows: Vec<Vec<String>> = r
        .nodes
        .iter()
        .filter_map(|n| {
            let h = n.hmat.as_ref()?;
            let row = |class: &str, p: &HmatPerf| {
                let opt = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |x| x.to_string());
                vec![
                    format!("node{}", n.id),
                    class.to_string(),
                    p.initiators
                        .iter()
                        .map(|i| i.0.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                    opt(p.read_latency_ns),
                    opt(p.write_latency_ns),
                    opt(p.read_bandwidth_mib_s),
                    opt(p.write_bandwidth_mib_s),
                ]
            };
            let mut rows = Vec::new();
            if let Some(p) = &h.access0 {
                rows.push(row("access0", p));
            }
            if let Some(p) = &h.access1 {
                rows.push(row("access1", p));
            }
            Some(rows)
        })
        .flatten()
        .collect();
    if !hmat_rows.is_empty() {
        out.push_str("\nHMAT (latency ns, bandwidth MiB/s, from the best initiators)\n");
        out.push_str(&format::table(
            &[
                "target",
                "class",
                "initiators",
                "rd lat",
                "wr lat",
                "rd bw",
                "wr bw",
            ],
            &[false, false, false, true, true, true, true],
            hmat_rows,
        ));
        out.push('\n');
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts of the text the fixtures do not reach: links from a file, no links at all,
    /// caches of different sizes.
    #[test]
    fn text_shows_file_links_and_mixed_caches() {
        let d = discover(std::path::Path::new("../../fixtures/sysfs/r905-asymmetric"))
            .expect("fixture");
        let mut r = build_report(&d.topology, "fixture", vec!["a note".into()]);
        r.interconnect.file = Some("links.toml".into());
        r.interconnect.links.clear();
        r.llc_domains[1].size_bytes = None;
        let got = render_text(&r);
        assert!(
            got.ends_with(
                "\ndistance classes: 10 local, 16 remote-1, 22 remote-2\n\
                 links (from links.toml): none\n\
                 multi-hop routes: 0->3 via 1, 3->0 via 1\n\
                 last-level caches: 0-3 (6.0 MiB); 4-7 (size unknown); 8-11 (6.0 MiB); \
                 12-15 (6.0 MiB)\n\
                 note: a note\n"
            ),
            "{got}"
        );
    }
}
