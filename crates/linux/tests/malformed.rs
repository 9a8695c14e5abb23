//! Every kind of missing or malformed sysfs file gives an error that names the file and says
//! what was wrong; none panics. Each test copies a good fixture and breaks one thing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_linux::{SysfsError, discover};
use std::fs;
use std::path::{Path, PathBuf};

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let ty = entry.file_type().unwrap();
        let dest = to.join(entry.file_name());
        if ty.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(entry.path()).unwrap(), &dest).unwrap();
        } else if ty.is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A fresh copy of a fixture tree.
fn tree(name: &str) -> (tempfile::TempDir, PathBuf) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sys");
    copy_tree(&src, &root);
    (dir, root)
}

fn write(root: &Path, rel: &str, text: &str) {
    fs::write(root.join(rel), text).unwrap();
}

/// Discovery fails, the message names `file`, and contains `what`.
fn fails(root: &Path, file: &str, what: &str) -> SysfsError {
    let err = match discover(root) {
        Ok(_) => panic!("discovery should fail ({file}: {what})"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(
        msg.contains(&root.join(file).display().to_string()),
        "message should name {file}: {msg}"
    );
    assert!(msg.contains(what), "message should say {what:?}: {msg}");
    // Never what the file holds: a file in its place may be a secret (a link to /etc/shadow).
    let content = fs::read_to_string(root.join(file)).unwrap_or_default();
    for word in content.split(|c: char| !c.is_ascii_alphabetic()) {
        if word.len() >= 3 {
            assert!(
                !msg.contains(word),
                "message quotes the file ({word}): {msg}"
            );
        }
    }
    err
}

const NODE: &str = "devices/system/node";

#[test]
fn no_node_directory() {
    let dir = tempfile::tempdir().unwrap();
    let err = discover(dir.path()).unwrap_err();
    assert!(matches!(err, SysfsError::NoNodeDirectory { .. }));
    assert!(err.to_string().contains("CONFIG_NUMA"));
}

#[test]
fn missing_online() {
    let (_d, root) = tree("r905-asymmetric");
    fs::remove_file(root.join(NODE).join("online")).unwrap();
    let err = fails(&root, "devices/system/node/online", "No such file");
    assert!(matches!(err, SysfsError::Read { .. }));
}

#[test]
fn malformed_online() {
    let (_d, root) = tree("r905-asymmetric");
    write(&root, "devices/system/node/online", "0-x\n");
    fails(
        &root,
        "devices/system/node/online",
        "an entry is not a number",
    );
    write(&root, "devices/system/node/online", "3-1\n");
    fails(&root, "devices/system/node/online", "runs backwards");
    write(&root, "devices/system/node/online", "\n");
    fails(&root, "devices/system/node/online", "no node is online");
}

#[test]
fn missing_cpulist() {
    let (_d, root) = tree("r905-asymmetric");
    fs::remove_file(root.join("devices/system/node/node2/cpulist")).unwrap();
    fails(&root, "devices/system/node/node2/cpulist", "cannot read");
}

#[test]
fn malformed_cpulist() {
    let (_d, root) = tree("r905-asymmetric");
    write(&root, "devices/system/node/node1/cpulist", "4-7,banana\n");
    fails(
        &root,
        "devices/system/node/node1/cpulist",
        "not a CPU list: an entry is not a number",
    );
}

#[test]
fn distance_row_too_short() {
    let (_d, root) = tree("r905-asymmetric");
    write(&root, "devices/system/node/node3/distance", "22 16 16\n");
    fails(
        &root,
        "devices/system/node/node3/distance",
        "3 distances for 4 online nodes",
    );
}

#[test]
fn distance_not_a_number() {
    let (_d, root) = tree("r905-asymmetric");
    write(
        &root,
        "devices/system/node/node0/distance",
        "10 16 sixteen 22\n",
    );
    fails(
        &root,
        "devices/system/node/node0/distance",
        "entry 3 is not a distance",
    );
}

#[test]
fn distance_not_farther_than_local() {
    let (_d, root) = tree("r905-asymmetric");
    write(&root, "devices/system/node/node1/distance", "16 10 10 16\n");
    let err = discover(&root).unwrap_err();
    assert!(matches!(err, SysfsError::Inconsistent { .. }), "{err}");
    assert!(err.to_string().contains("node1 to node2 is 10"), "{err}");
}

#[test]
fn meminfo_missing_memtotal() {
    let (_d, root) = tree("r905-asymmetric");
    write(
        &root,
        "devices/system/node/node0/meminfo",
        "Node 0 MemFree:        1000 kB\n",
    );
    fails(
        &root,
        "devices/system/node/node0/meminfo",
        "no MemTotal line",
    );
}

#[test]
fn meminfo_bad_value_and_unit() {
    let (_d, root) = tree("r905-asymmetric");
    write(
        &root,
        "devices/system/node/node0/meminfo",
        "Node 0 MemTotal:        lots kB\nNode 0 MemFree: 1 kB\n",
    );
    fails(
        &root,
        "devices/system/node/node0/meminfo",
        "line 1: value is not a number",
    );
    write(
        &root,
        "devices/system/node/node0/meminfo",
        "Node 0 MemTotal:        100 MB\nNode 0 MemFree: 1 kB\n",
    );
    fails(&root, "devices/system/node/node0/meminfo", "unit is not kB");
    write(
        &root,
        "devices/system/node/node0/meminfo",
        "Node 1 MemTotal:        100 kB\nNode 1 MemFree: 1 kB\n",
    );
    fails(
        &root,
        "devices/system/node/node0/meminfo",
        "expected node 0",
    );
}

#[test]
fn meminfo_free_above_total() {
    let (_d, root) = tree("r905-asymmetric");
    write(
        &root,
        "devices/system/node/node0/meminfo",
        "Node 0 MemTotal:        100 kB\nNode 0 MemFree:   200 kB\n",
    );
    let err = discover(&root).unwrap_err();
    assert!(err.to_string().contains("exceeds its total"), "{err}");
}

#[test]
fn not_utf8() {
    let (_d, root) = tree("r905-asymmetric");
    fs::write(root.join("devices/system/node/node0/cpulist"), [0xff, 0xfe]).unwrap();
    fails(&root, "devices/system/node/node0/cpulist", "not UTF-8");
}

#[test]
fn hmat_not_a_number() {
    let (_d, root) = tree("xeon-2s-cxl");
    write(
        &root,
        "devices/system/node/node2/access0/initiators/read_latency",
        "fast\n",
    );
    fails(
        &root,
        "devices/system/node/node2/access0/initiators/read_latency",
        "not a number",
    );
}

#[test]
fn memory_tier_malformed() {
    // xeon-2s-cxl with the kernel's default tiers: DRAM in 4, CXL in 22.
    let (_d, root) = tree("xeon-2s-cxl");
    let tier4 = "devices/virtual/memory_tiering/memory_tier4/nodelist";
    let tier22 = "devices/virtual/memory_tiering/memory_tier22/nodelist";
    for (file, nodes) in [(tier4, "0-1\n"), (tier22, "2\n")] {
        fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
        write(&root, file, nodes);
    }
    assert!(discover(&root).is_ok());
    write(&root, tier4, "0-x\n");
    fails(&root, tier4, "not a CPU list");
    // A node in two tiers.
    write(&root, tier4, "0-2\n");
    fails(&root, tier4, "also in memory tier 22");
}

#[test]
fn cache_level_malformed() {
    let (_d, root) = tree("r905-asymmetric");
    write(
        &root,
        "devices/system/cpu/cpu5/cache/index3/level",
        "three\n",
    );
    fails(
        &root,
        "devices/system/cpu/cpu5/cache/index3/level",
        "not a cache level",
    );
}

#[test]
fn cache_shared_list_malformed_or_wrong() {
    let (_d, root) = tree("r905-asymmetric");
    let rel = "devices/system/cpu/cpu5/cache/index3/shared_cpu_list";
    write(&root, rel, "4-?\n");
    fails(&root, rel, "not a CPU list");
    write(&root, rel, "0-3\n");
    fails(&root, rel, "does not include cpu5 itself");
}

#[test]
fn cache_size_malformed() {
    let (_d, root) = tree("r905-asymmetric");
    let rel = "devices/system/cpu/cpu0/cache/index3/size";
    write(&root, rel, "6 megs\n");
    fails(&root, rel, "not a cache size");
}

#[test]
fn cpu_in_two_nodes() {
    let (_d, root) = tree("r905-asymmetric");
    write(&root, "devices/system/node/node1/cpulist", "3-7\n");
    let err = discover(&root).unwrap_err();
    assert!(
        err.to_string()
            .contains("cpu3 is listed under both node0 and node1"),
        "{err}"
    );
}

#[test]
fn missing_caches_are_a_note_not_an_error() {
    let (_d, root) = tree("r905-asymmetric");
    fs::remove_dir_all(root.join("devices/system/cpu")).unwrap();
    let d = discover(&root).unwrap();
    assert!(d.topology.llcs().is_empty());
    assert!(
        d.notes.iter().any(|n| n.contains("LLC domains unknown")),
        "{:?}",
        d.notes
    );
}
