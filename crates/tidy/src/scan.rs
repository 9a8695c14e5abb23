//! Reading the tree: which files there are, which part of a file is production code, and where
//! its functions start and end.

use std::path::{Path, PathBuf};

/// One Rust source file of the workspace.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// Relative to the workspace root, with `/` separators.
    pub path: String,
    /// The crate's folder (`crates/policy`, `examples/policy`).
    pub krate: String,
    pub text: String,
    /// A file of tests: under a `tests` or `benches` folder, or a `tests.rs`.
    pub is_test: bool,
}

/// The workspace's root (two folders above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file of the workspace's crates (`crates/*`, `examples/*`), sorted by path.
pub fn source_files(root: &Path) -> Vec<SourceFile> {
    let mut out = Vec::new();
    for group in ["crates", "examples"] {
        let Ok(entries) = std::fs::read_dir(root.join(group)) else {
            continue;
        };
        for entry in entries.flatten() {
            let krate = format!("{group}/{}", entry.file_name().to_string_lossy());
            if entry.path().join("Cargo.toml").is_file() {
                walk(root, &entry.path(), &krate, &mut out);
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn walk(root: &Path, dir: &Path, krate: &str, out: &mut Vec<SourceFile>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                walk(root, &path, krate, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            let in_crate = rel.strip_prefix(krate).unwrap_or(&rel);
            let is_test = in_crate.split('/').any(|c| c == "tests" || c == "benches")
                || in_crate.ends_with("/tests.rs");
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.push(SourceFile {
                path: rel,
                krate: krate.to_string(),
                text,
                is_test,
            });
        }
    }
}

/// The lines of `text` before its unit tests (a `#[cfg(test)]` on a `mod tests`), with their
/// numbers from 1.
pub fn production_part(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or_default();
        if line.trim() == "#[cfg(test)]" && next.starts_with("mod tests") {
            break;
        }
        out.push((i + 1, *line));
    }
    out
}

/// A function with a body: its name, first line and length in lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub line: usize,
    pub lines: usize,
}

/// The functions with a body among `lines` (as [`production_part`] gives them).
pub fn functions(lines: &[(usize, &str)]) -> Vec<Function> {
    let start = regex::Regex::new(
        r"^(\s*)(pub(\([^)]*\))? )?(const )?(async )?(unsafe )?(extern \S+ )?fn (\w+)",
    )
    .ok();
    let Some(start) = start else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, (number, line)) in lines.iter().enumerate() {
        let Some(c) = start.captures(line) else {
            continue;
        };
        let indent = c.get(1).map_or("", |m| m.as_str());
        let name = c.get(8).map_or("", |m| m.as_str()).to_string();
        // The signature ends at the first `{` (a body) or a `;` (a declaration).
        let mut has_body = false;
        let mut end = None;
        for (j, (n, l)) in lines.iter().enumerate().skip(k) {
            if !has_body {
                let code = l.split("//").next().unwrap_or_default();
                if code.trim_end().ends_with(';') && !code.contains('{') {
                    break;
                }
                if code.contains('{') {
                    has_body = true;
                    if code.trim_end().ends_with('}') && j == k {
                        end = Some(*n);
                        break;
                    }
                }
                continue;
            }
            if l.len() == indent.len() + 1 && l.starts_with(indent) && l.ends_with('}') {
                end = Some(*n);
                break;
            }
        }
        if let Some(end) = end {
            out.push(Function {
                name,
                line: *number,
                lines: end + 1 - number,
            });
        }
    }
    out
}
