//! `rondpoint topo`: the machine's NUMA topology, as a table or as JSON.
//!
//! The JSON schema is documented in docs/json/topo.md; its `schema_version` changes only when
//! a field is removed or changes meaning (new fields may appear at any time).

use crate::format;
use crate::status::Input;
use anyhow::{Context, Result};
use clap::Args;
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
    pub(crate) json: bool,
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
    let mut discovery = crate::options::discover(&args.sysfs_root)?;
    if let Some(file) = &args.interconnect {
        let text = rondpoint_safeio::read_text(file, rondpoint_safeio::InputKind::Interconnect)
            .context("reading the interconnect file")?;
        let spec = InterconnectSpec::from_toml(&text)
            .input()
            .with_context(|| format!("in interconnect file {}", file.display()))?;
        discovery.topology = discovery
            .topology
            .with_interconnect(&spec, InterconnectOrigin::File(file.display().to_string()))
            .input()
            .with_context(|| format!("in interconnect file {}", file.display()))?;
    }
    let report = build_report(
        &discovery.topology,
        &args.sysfs_root.display().to_string(),
        discovery.notes,
    );
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", render_text(&report));
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
    summary(&mut out, r);
    node_table(&mut out, &r.nodes);
    if r.numa {
        distances(&mut out, r);
        interconnect(&mut out, &r.interconnect);
    }
    llcs(&mut out, &r.llc_domains);
    hmat(&mut out, &r.nodes);
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The machine in one line, and what a single node means.
fn summary(out: &mut String, r: &TopoReport) {
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
}

/// One row per node, and what its class means.
fn node_table(out: &mut String, nodes: &[NodeReport]) {
    out.push('\n');
    let rows = nodes
        .iter()
        .map(|n| {
            vec![
                format::node(n.id),
                n.class.to_string(),
                n.cpus.len().to_string(),
                format::dash((!n.cpulist.is_empty()).then_some(&n.cpulist)),
                format::bytes(n.mem_total_bytes),
                format::bytes(n.mem_free_bytes),
                format::dash(n.worst_cpu_distance),
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
}

/// The SLIT matrix and its distinct distances.
fn distances(out: &mut String, r: &TopoReport) {
    out.push_str("distances (SLIT)\n");
    let columns: Vec<String> = r.nodes.iter().map(|n| format::node(n.id)).collect();
    let rows = r
        .nodes
        .iter()
        .zip(&r.distances)
        .map(|(n, row)| {
            let mut v = vec![format::node(n.id)];
            v.extend(row.iter().map(u32::to_string));
            v
        })
        .collect();
    out.push_str(&format::labelled_table("", &columns, rows));
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
}

/// The links, where they came from, and the routes that cross more than one.
fn interconnect(out: &mut String, ic: &InterconnectReport) {
    let links: Vec<String> = ic.links.iter().map(|[a, b]| format!("{a}-{b}")).collect();
    let origin = match &ic.file {
        Some(f) => format!("from {f}"),
        None => "inferred from distances".to_string(),
    };
    let _ = writeln!(out, "links ({origin}): {}", joined_or(&links, " ", "none"));
    let multi: Vec<String> = ic
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
        joined_or(
            &multi,
            ", ",
            "none (every pair of nodes is directly linked)"
        )
    );
}

/// `items` joined by `sep`, or `empty` when there are none.
fn joined_or(items: &[String], sep: &str, empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join(sep)
    }
}

/// The last-level caches: one line when they are all alike, else one entry each.
fn llcs(out: &mut String, llcs: &[LlcReport]) {
    let Some(first) = llcs.first() else {
        return;
    };
    let uniform = llcs
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
            llcs.len(),
            first.cpus.len(),
            size(first.size_bytes)
        );
    } else {
        let list: Vec<String> = llcs
            .iter()
            .map(|l| format!("{} ({})", l.cpulist, size(l.size_bytes)))
            .collect();
        let _ = writeln!(out, "last-level caches: {}", list.join("; "));
    }
}

/// The firmware's HMAT figures, where it gives any.
fn hmat(out: &mut String, nodes: &[NodeReport]) {
    let rows: Vec<Vec<String>> = nodes
        .iter()
        .filter_map(|n| Some((n.id, n.hmat.as_ref()?)))
        .flat_map(|(id, h)| {
            [("access0", &h.access0), ("access1", &h.access1)]
                .into_iter()
                .filter_map(move |(class, p)| Some(hmat_row(id, class, p.as_ref()?)))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
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
        rows,
    ));
    out.push('\n');
}

fn hmat_row(node: u16, class: &str, p: &HmatPerf) -> Vec<String> {
    vec![
        format::node(node),
        class.to_string(),
        p.initiators
            .iter()
            .map(|i| i.0.to_string())
            .collect::<Vec<_>>()
            .join(","),
        format::dash(p.read_latency_ns),
        format::dash(p.write_latency_ns),
        format::dash(p.read_bandwidth_mib_s),
        format::dash(p.write_bandwidth_mib_s),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts of the text the fixtures do not reach: links from a file, no links at all,
    /// caches of different sizes.
    #[test]
    fn text_shows_file_links_and_mixed_caches() {
        let d =
            rondpoint_linux::discover(std::path::Path::new("../../fixtures/sysfs/r905-asymmetric"))
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
