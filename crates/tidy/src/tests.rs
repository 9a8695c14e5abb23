use super::*;
use std::collections::BTreeSet;

fn files() -> Vec<SourceFile> {
    let files = source_files(&workspace_root());
    assert!(
        files.len() > 100,
        "the tree was not found from {:?}",
        workspace_root()
    );
    files
}

fn production() -> impl Iterator<Item = SourceFile> {
    files().into_iter().filter(|f| !f.is_test)
}

/// The crates that are libraries (a binary crate may use `anyhow` and `String` errors).
fn is_library(f: &SourceFile) -> bool {
    !matches!(
        f.krate.as_str(),
        "crates/cli" | "crates/mgen" | "crates/tidy"
    )
}

fn report(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{what} ({} places):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

#[test]
fn source_files_stay_under_800_lines_outside_tests() {
    let problems: Vec<String> = production()
        .filter(|f| production_part(&f.text).len() > MAX_FILE_LINES)
        .map(|f| format!("{}: {} lines", f.path, production_part(&f.text).len()))
        .collect();
    report(
        "files over 800 lines: split them along a real seam",
        &problems,
    );
}

#[test]
fn functions_stay_under_100_lines_outside_tests() {
    let mut problems = Vec::new();
    for f in production() {
        for func in functions(&production_part(&f.text)) {
            if func.lines > MAX_FN_LINES {
                problems.push(format!(
                    "{}:{} {} ({} lines)",
                    f.path, func.line, func.name, func.lines
                ));
            }
        }
    }
    report("functions over 100 lines", &problems);
}

#[test]
fn the_function_scanner_finds_bodies_and_skips_declarations() {
    let text = "fn a() {\n    x();\n}\n\ntrait T {\n    fn b(&self);\n    fn c(&self) -> u8 {\n        1\n    }\n}\npub(crate) fn d<T>(\n    t: T,\n) -> T\nwhere\n    T: Copy,\n{\n    t\n}\nfn e() {}\n";
    let found = functions(&production_part(text));
    let got: Vec<(&str, usize, usize)> = found
        .iter()
        .map(|f| (f.name.as_str(), f.line, f.lines))
        .collect();
    assert_eq!(got, [("a", 1, 3), ("c", 7, 3), ("d", 11, 8), ("e", 19, 1)]);
    let with_tests = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn long() {}\n}\n";
    assert_eq!(production_part(with_tests).len(), 1);
}

#[test]
fn only_the_syscall_layer_has_unsafe_code() {
    let mut problems = Vec::new();
    for f in files() {
        let root = f.path == format!("{}/src/lib.rs", f.krate)
            || f.path == format!("{}/src/main.rs", f.krate);
        let syscalls = f.krate == "crates/linux";
        if root && !syscalls && !f.text.contains("#![forbid(unsafe_code)]") {
            problems.push(format!("{}: no #![forbid(unsafe_code)]", f.path));
        }
        if root && syscalls && !f.text.contains("#![deny(unsafe_code)]") {
            problems.push(format!("{}: no #![deny(unsafe_code)]", f.path));
        }
        // This crate names what it looks for.
        let allowed = f.path == "crates/linux/src/sys/real.rs" || f.krate == "crates/tidy";
        for (n, line) in f.text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let opens_unsafe = code.contains("unsafe {")
                || code.contains("unsafe fn")
                || code.contains("unsafe impl");
            if opens_unsafe && !allowed {
                problems.push(format!(
                    "{}:{}: unsafe outside crates/linux/src/sys/real.rs",
                    f.path,
                    n + 1
                ));
            }
            if code.contains("allow(unsafe_code)")
                && f.path != "crates/linux/src/sys/mod.rs"
                && !allowed
            {
                problems.push(format!(
                    "{}:{}: unsafe code allowed outside sys/mod.rs",
                    f.path,
                    n + 1
                ));
            }
        }
    }
    report("unsafe code outside the syscall layer", &problems);
}

#[test]
fn libraries_return_typed_errors_not_strings() {
    let pattern = regex::Regex::new(r"Result<[^;{]*,\s*String>").unwrap();
    let mut problems = Vec::new();
    for f in production().filter(is_library) {
        for (n, line) in production_part(&f.text) {
            if pattern.is_match(line) && !line.trim_start().starts_with("//") {
                problems.push(format!("{}:{n}: {}", f.path, line.trim()));
            }
        }
    }
    report(
        "Result<_, String> in a library: use a thiserror enum",
        &problems,
    );
}

#[test]
fn unit_tests_have_one_layout() {
    // A module's unit tests: `#[cfg(test)] mod tests`, inline at the end of its file, or in
    // `tests.rs` / `tests/mod.rs` beside it (declared among the other modules); no other name,
    // no #[path], no `foo_tests.rs`.
    let mut problems = Vec::new();
    for f in production() {
        let lines: Vec<&str> = f.text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim() != "#[cfg(test)]" {
                continue;
            }
            let next = lines.get(i + 1).map(|l| l.trim()).unwrap_or_default();
            if next.starts_with("#[path") {
                problems.push(format!("{}:{}: #[path] on a test module", f.path, i + 2));
            } else if next.starts_with("mod ") && !next.starts_with("mod tests") {
                problems.push(format!(
                    "{}:{}: a test module not named `tests`",
                    f.path,
                    i + 2
                ));
            } else if next.starts_with("mod tests") {
                let rest = &lines[i + 1..];
                let closes = if next.ends_with(';') {
                    true
                } else {
                    rest.iter()
                        .rposition(|l| *l == "}")
                        .is_some_and(|p| rest[p + 1..].iter().all(|l| l.trim().is_empty()))
                };
                if !closes || rest.iter().skip(1).any(|l| l.starts_with("mod tests")) {
                    problems.push(format!(
                        "{}:{}: the tests module is not the end of the file",
                        f.path,
                        i + 2
                    ));
                }
            }
        }
        let name = f.path.rsplit('/').next().unwrap_or_default();
        if name.ends_with("_tests.rs") || name.ends_with("_test.rs") {
            problems.push(format!("{}: tests go in tests.rs or tests/", f.path));
        }
    }
    report("unit tests outside the one layout", &problems);
}

/// A `pub fn` whose name no other crate uses (its integration tests, benches and doc examples
/// count as other crates) should be `pub(crate)`. Names are compared as words: a heuristic that
/// errs towards keeping `pub`.
#[test]
fn pub_functions_are_used_outside_their_crate() {
    let all = files();
    let decl = regex::Regex::new(r"^\s*pub (const )?(unsafe )?fn (\w+)").unwrap();
    let word = regex::Regex::new(r"\w+").unwrap();
    // Words used by each crate's outside: other crates, and this crate's tests/benches folders.
    let mut problems = Vec::new();
    let krates: BTreeSet<&str> = all.iter().map(|f| f.krate.as_str()).collect();
    for krate in krates
        .iter()
        .filter(|k| !matches!(**k, "crates/cli" | "crates/mgen" | "crates/tidy"))
    {
        let mut outside: BTreeSet<&str> = all
            .iter()
            .filter(|f| {
                f.krate != *krate
                    || f.path.starts_with(&format!("{krate}/tests/"))
                    || f.path.starts_with(&format!("{krate}/benches/"))
            })
            .flat_map(|f| word.find_iter(&f.text).map(|m| m.as_str()))
            .collect();
        // Doc examples are compiled as crates of their own.
        for f in all.iter().filter(|f| f.krate == *krate) {
            for line in f.text.lines().filter(|l| l.trim_start().starts_with("//")) {
                outside.extend(word.find_iter(line).map(|m| m.as_str()));
            }
        }
        for f in all.iter().filter(|f| f.krate == *krate && !f.is_test) {
            for (n, line) in production_part(&f.text) {
                let Some(c) = decl.captures(line) else {
                    continue;
                };
                let name = c.get(3).map_or("", |m| m.as_str());
                if !outside.contains(name) {
                    problems.push(format!("{}:{n}: {name}", f.path));
                }
            }
        }
    }
    report(
        "pub fn that no other crate uses: make it pub(crate) (or remove it)",
        &problems,
    );
}

#[test]
fn every_file_is_read_through_safeio() {
    // One reader: user inputs with `read_text`/`open_input`, the kernel's trees with
    // `read_system`; both refuse FIFOs and devices and cap what they read.
    let pattern =
        regex::Regex::new(r"fs::read\(|fs::read_to_string\(|File::open\(|read_to_string\(format")
            .unwrap();
    let mut problems = Vec::new();
    // rondpoint-mgen is the testbed's workload program, which reads its own /proc entries.
    let exempt = ["crates/safeio", "crates/tidy", "crates/mgen"];
    for f in production().filter(|f| !exempt.contains(&f.krate.as_str())) {
        for (n, line) in production_part(&f.text) {
            if pattern.is_match(line) && !line.trim_start().starts_with("//") {
                problems.push(format!("{}:{n}: {}", f.path, line.trim()));
            }
        }
    }
    report("a file read past rondpoint_safeio", &problems);
}

#[test]
fn papers_are_cited_by_their_keys() {
    let root = workspace_root();
    let references = std::fs::read_to_string(root.join("docs/references.md")).unwrap();
    let key = regex::Regex::new(r"\[([A-Z][a-z]+\d\d)(\\?\]| )").unwrap();
    let known: BTreeSet<String> = regex::Regex::new(r"(?m)^### ([A-Z][a-z]+\d\d)$")
        .unwrap()
        .captures_iter(&references)
        .filter_map(|c| c.get(1).map(|m| m.as_str().to_string()))
        .collect();
    assert!(known.contains("Dashti13"), "{known:?}");
    let storage = regex::Regex::new(r"\b00[0-4]_[0-9a-f]{16}\b").unwrap();
    let mut texts: Vec<(String, String)> = files().into_iter().map(|f| (f.path, f.text)).collect();
    for dir in ["docs", "docs/json", "docs/dev", "."] {
        for e in std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "md") {
                texts.push((
                    format!("{dir}/{}", e.file_name().to_string_lossy()),
                    std::fs::read_to_string(&p).unwrap_or_default(),
                ));
            }
        }
    }
    let mut problems = Vec::new();
    for (path, text) in &texts {
        for c in key.captures_iter(text) {
            let k = c.get(1).map_or("", |m| m.as_str());
            if !known.contains(k) {
                problems.push(format!("{path}: [{k}] is not a key of docs/references.md"));
            }
        }
        if !path.ends_with("references.md") && storage.is_match(text) {
            problems.push(format!("{path}: a seed's storage name; cite its key"));
        }
    }
    report("citations", &problems);
}
