//! `/proc/zoneinfo`: the kernel's per-zone watermarks, summed per node.
//!
//! Each zone of each node starts with a `Node N, zone NAME` line; among its lines are the
//! watermarks `min`, `low` and `high` (pages; the printed values include any watermark boost),
//! `managed` (pages the allocator manages, Linux 3.8+) and `protection: (a, b, ...)`, the
//! zone's lowmem reserves against allocations that could have used a higher zone
//! (`zoneinfo_show_print` in mm/vmstat.c; the watermarks are described with `min_free_kbytes`
//! and `watermark_scale_factor` in Documentation/admin-guide/sysctl/vm.rst). The per-CPU
//! pagesets' `high:` (with a colon) is another thing and is not read.

use super::{ProcError, ProcRoot, malformed, read_system_file};
use rondpoint_model::NodeId;
use std::collections::BTreeMap;
use std::path::Path;

/// One node's watermarks, summed over its zones, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeWatermarks {
    /// The low watermarks.
    pub low_pages: u64,
    /// The high watermarks.
    pub high_pages: u64,
    /// What the kernel keeps from user allocations: each zone's high watermark plus its
    /// largest lowmem reserve, at most its managed pages (`calculate_totalreserve_pages` in
    /// mm/page_alloc.c, the `totalreserve_pages` that MemAvailable leaves out).
    pub reserve_pages: u64,
}

/// One zone as read.
#[derive(Default)]
struct Zone {
    low: Option<u64>,
    high: Option<u64>,
    managed: Option<u64>,
    present: Option<u64>,
    protection: u64,
}

impl Zone {
    /// Its low and high watermarks and its reserve (see [`NodeWatermarks::reserve_pages`]);
    /// before Linux 3.8 (no `managed` line) the present pages cap the reserve.
    fn sums(&self, path: &Path, node: u16) -> Result<(u64, u64, u64), ProcError> {
        let (Some(low), Some(high)) = (self.low, self.high) else {
            return Err(malformed(
                path,
                format!("a zone of node {node} has no low or high watermark"),
            ));
        };
        let reserve = high.saturating_add(self.protection);
        let cap = self.managed.or(self.present).unwrap_or(u64::MAX);
        Ok((low, high, reserve.min(cap)))
    }
}

impl ProcRoot {
    /// Each node's watermarks from `/proc/zoneinfo`; `None` when the file is absent.
    pub fn zoneinfo(&self) -> Result<Option<BTreeMap<NodeId, NodeWatermarks>>, ProcError> {
        let path = self.root.join("zoneinfo");
        let Some(text) = read_system_file(&path, false)? else {
            return Ok(None);
        };
        parse(&path, &text).map(Some)
    }
}

/// `Node 3, zone   Normal` → 3.
fn zone_header(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("Node ")?;
    let (node, zone) = rest.split_once(',')?;
    zone.trim_start().starts_with("zone").then_some(node.trim())
}

fn parse(path: &Path, text: &str) -> Result<BTreeMap<NodeId, NodeWatermarks>, ProcError> {
    let mut zones: Vec<(u16, Zone)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bad = |what: &str| malformed(path, format!("line {}: {what}", i + 1));
        if let Some(node) = zone_header(line) {
            let node = node.parse().map_err(|_| bad("not a node number"))?;
            zones.push((node, Zone::default()));
            continue;
        }
        let Some((_, zone)) = zones.last_mut() else {
            continue;
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        let number = |w: Option<&&str>| -> Result<u64, ProcError> {
            w.and_then(|w| {
                w.trim_matches(|c| c == '(' || c == ')' || c == ',')
                    .parse()
                    .ok()
            })
            .ok_or_else(|| bad("not a number"))
        };
        let slot = match words.first().copied() {
            Some("low") => &mut zone.low,
            Some("high") => &mut zone.high,
            Some("managed") => &mut zone.managed,
            Some("present") => &mut zone.present,
            Some("protection:") => {
                for w in words.iter().skip(1) {
                    zone.protection = zone.protection.max(number(Some(w))?);
                }
                continue;
            }
            _ => continue,
        };
        if words.len() == 2 {
            *slot = Some(number(words.get(1))?);
        }
    }
    if zones.is_empty() {
        return Err(malformed(path, "no zone"));
    }
    let mut nodes: BTreeMap<NodeId, NodeWatermarks> = BTreeMap::new();
    for (node, zone) in &zones {
        let (low, high, reserve) = zone.sums(path, *node)?;
        let w = nodes.entry(NodeId(*node)).or_default();
        w.low_pages = w.low_pages.saturating_add(low);
        w.high_pages = w.high_pages.saturating_add(high);
        w.reserve_pages = w.reserve_pages.saturating_add(reserve);
    }
    Ok(nodes)
}
