//! Formatting helpers shared by the subcommands' human-readable output.

use comfy_table::{CellAlignment, Table, presets};

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
}
