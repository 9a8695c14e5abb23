//! Formatting helpers shared by the subcommands' human-readable output.

use comfy_table::{CellAlignment, Table, presets};
use std::collections::BTreeMap;
use std::fmt::Display;

/// Bytes as a short human figure with a binary unit ("15.6 GiB").
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// A plain table: a header row, no borders, columns separated by two spaces, numbers aligned
/// right where `right[i]` says so.
pub fn table(header: &[&str], right: &[bool], rows: Vec<Vec<String>>) -> String {
    let mut t = Table::new();
    t.load_style(presets::NOTHING);
    t.set_header(header.to_vec());
    for row in rows {
        t.add_row(row);
    }
    for (i, &r) in right.iter().enumerate() {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(if r {
                CellAlignment::Right
            } else {
                CellAlignment::Left
            });
            col.set_padding((0, 2));
        }
    }
    t.to_string()
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A table of figures: row labels in the first column, under `corner`, then one column per
/// name in `columns`, aligned right.
pub fn labelled_table(corner: &str, columns: &[String], rows: Vec<Vec<String>>) -> String {
    let mut header = vec![corner];
    header.extend(columns.iter().map(String::as_str));
    let mut right = vec![false];
    right.extend(columns.iter().map(|_| true));
    table(&header, &right, rows)
}

/// How the output names a node ("node3").
pub fn node(id: impl Display) -> String {
    format!("node{id}")
}

/// A value, or "-" where there is none.
pub fn dash(v: Option<impl Display>) -> String {
    v.map_or_else(|| "-".to_string(), |x| x.to_string())
}

/// Counts by reason, in the order of the reasons: "7 EBUSY, 2 ENOENT".
pub fn tally(counts: &BTreeMap<String, u64>) -> String {
    counts
        .iter()
        .map(|(reason, n)| format!("{n} {reason}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_human() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(16 << 30), "16.0 GiB");
        assert_eq!(bytes(1536), "1.5 KiB");
    }

    #[test]
    fn table_aligns() {
        let s = table(
            &["a", "bb"],
            &[false, true],
            vec![
                vec!["x".into(), "1".into()],
                vec!["yyy".into(), "22".into()],
            ],
        );
        assert_eq!(s, "a    bb\nx     1\nyyy  22");
    }

    #[test]
    fn labelled_tables_align_figures_right() {
        let s = labelled_table(
            "",
            &[node(0), node(1)],
            vec![vec![node(0), "10".into(), "16".into()]],
        );
        assert_eq!(s, "       node0  node1\nnode0     10     16");
    }

    #[test]
    fn missing_values_and_tallies() {
        assert_eq!(dash(Some(3)), "3");
        assert_eq!(dash(None::<u32>), "-");
        let counts = [("EBUSY".to_string(), 7), ("ENOENT".to_string(), 2)].into();
        assert_eq!(tally(&counts), "7 EBUSY, 2 ENOENT");
        assert_eq!(tally(&BTreeMap::new()), "");
    }
}
