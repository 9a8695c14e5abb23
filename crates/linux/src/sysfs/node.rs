//! A node's `meminfo`, read once at discovery and again every epoch by the live backend.

// Parses bytes from outside (files, the kernel): no indexing that could panic on them.
#![deny(clippy::indexing_slicing)]

use super::{NODE_DIR, SysfsError, SysfsRoot};
use rondpoint_model::NodeId;
use std::collections::BTreeMap;

/// The fields of a node's `meminfo` that rondpoint uses, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeMeminfo {
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// The page cache on the file LRU lists, `Active(file)` + `Inactive(file)` (what the
    /// kernel's MemAvailable counts as reclaimable cache); `None` unless both are readable.
    pub file_bytes: Option<u64>,
    /// Reclaimable kernel memory: `KReclaimable` (Linux 4.20: reclaimable slab and other
    /// reclaimable kernel allocations), else `SReclaimable`; `None` when neither is readable.
    pub reclaimable_bytes: Option<u64>,
}

/// The fields read leniently: a node's room does without them (`None`), so a missing or
/// malformed one is no error.
const LENIENT: [&str; 4] = [
    "Active(file)",
    "Inactive(file)",
    "KReclaimable",
    "SReclaimable",
];

/// `Node 0 Inactive(file):  1154232 kB` → bytes, for the lenient fields.
fn lenient_bytes(words: &[&str]) -> Option<u64> {
    match words {
        [_, _, _, value, "kB"] => value.parse::<u64>().ok()?.checked_mul(1024),
        _ => None,
    }
}

impl SysfsRoot {
    /// `devices/system/node/nodeN/meminfo`: `Node 0 MemTotal:       16315400 kB` → bytes.
    /// Both `MemTotal` and `MemFree` must be there, for this node, in kB; the page cache and
    /// reclaimable kernel memory are read when they are.
    pub(crate) fn node_meminfo(&self, node: NodeId) -> Result<NodeMeminfo, SysfsError> {
        let rel = format!("{NODE_DIR}/node{}/meminfo", node.0);
        let text = self.read(&rel)?;
        let mut fields = BTreeMap::new();
        let mut lenient: BTreeMap<&str, u64> = BTreeMap::new();
        for (lineno, line) in text.lines().enumerate() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if words.is_empty() {
                continue;
            }
            // Only the two fields we use are checked strictly; others pass through untouched.
            let key = match words.as_slice() {
                ["Node", _, key, ..] => key.trim_end_matches(':'),
                _ => continue,
            };
            if let Some(k) = LENIENT.into_iter().find(|k| *k == key) {
                let this_node = words.get(1).copied() == Some(node.0.to_string().as_str());
                if let Some(bytes) = lenient_bytes(&words).filter(|_| this_node) {
                    lenient.insert(k, bytes);
                }
                continue;
            }
            if key != "MemTotal" && key != "MemFree" {
                continue;
            }
            let bad = |what: &str| self.malformed(&rel, format!("line {}: {what}", lineno + 1));
            if words.get(1).copied() != Some(node.0.to_string().as_str()) {
                return Err(bad(&format!("expected node {}", node.0)));
            }
            let value: u64 = words
                .get(3)
                .ok_or_else(|| bad("no value"))?
                .parse()
                .map_err(|_| bad("value is not a number"))?;
            let unit = words.get(4).copied().unwrap_or("");
            let bytes = match unit {
                "kB" => value
                    .checked_mul(1024)
                    .ok_or_else(|| bad("value too large"))?,
                _ => return Err(bad("unit is not kB")),
            };
            fields.insert(key.to_string(), bytes);
        }
        let get = |k: &str| {
            fields
                .get(k)
                .copied()
                .ok_or_else(|| self.malformed(&rel, format!("no {k} line")))
        };
        let field = |k: &str| lenient.get(k).copied();
        Ok(NodeMeminfo {
            total_bytes: get("MemTotal")?,
            free_bytes: get("MemFree")?,
            file_bytes: field("Active(file)")
                .zip(field("Inactive(file)"))
                .map(|(a, i)| a.saturating_add(i)),
            reclaimable_bytes: field("KReclaimable").or(field("SReclaimable")),
        })
    }
}
