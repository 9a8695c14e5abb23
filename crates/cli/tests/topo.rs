//! End-to-end tests of `rondpoint topo`: the binary run on the fixture sysfs trees, its output
//! compared with golden files (tests/snapshots), and its errors on bad input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout};
use predicates::prelude::*;
use serde_json::Value;

const FIXTURES: [&str; 6] = [
    "vm-1node",
    "xeon-snc2-2s",
    "r905-asymmetric",
    "epyc-nps4-2s",
    "xeon-2s-cxl",
    "aws-m5a-24xlarge",
];

fn topo_json(fixture: &str) -> Value {
    let root = format!("fixtures/sysfs/{fixture}");
    serde_json::from_str(&stdout(&["topo", "--json", "--sysfs-root", &root])).unwrap()
}

#[test]
fn text_output_matches_golden_files() {
    for f in FIXTURES {
        let root = format!("fixtures/sysfs/{f}");
        insta::assert_snapshot!(
            format!("topo_{f}"),
            stdout(&["topo", "--sysfs-root", &root])
        );
    }
}

#[test]
fn json_output_matches_golden_files() {
    for f in ["r905-asymmetric", "xeon-2s-cxl"] {
        let root = format!("fixtures/sysfs/{f}");
        insta::assert_snapshot!(
            format!("topo_json_{f}"),
            stdout(&["topo", "--json", "--sysfs-root", &root])
        );
    }
}

#[test]
fn r905_json_reports_slow_corners() {
    let j = topo_json("r905-asymmetric");
    assert_eq!(j["schema_version"], 1);
    let nodes = j["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 4);
    let class: Vec<&str> = nodes.iter().map(|n| n["class"].as_str().unwrap()).collect();
    assert_eq!(class, ["slow", "fast", "fast", "slow"]);
    let d = &j["distances"];
    let d03 = d[0][3].as_u64().unwrap();
    for (a, b) in [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)] {
        assert!(d03 > d[a][b].as_u64().unwrap(), "d(0,3) > d({a},{b})");
    }
    let rows = d.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r.as_array().unwrap().len() == 4));
    for n in nodes {
        assert!(n["has_cpu"].as_bool().unwrap());
        assert!(n["mem_total_bytes"].as_u64().unwrap() >= n["mem_free_bytes"].as_u64().unwrap());
        assert_eq!(n["cpus"].as_array().unwrap().len(), 4);
    }
    assert_eq!(j["hops"][0][3], 2);
}

#[test]
fn cxl_json_reports_memory_only_node() {
    let j = topo_json("xeon-2s-cxl");
    let n2 = &j["nodes"][2];
    assert_eq!(n2["class"], "memory-only");
    assert_eq!(n2["has_cpu"], false);
    assert_eq!(n2["cpus"].as_array().unwrap().len(), 0);
    assert!(n2["hmat"]["access0"]["read_latency_ns"].as_u64().unwrap() > 0);
    assert_eq!(j["nodes"][0]["class"], "fast");
}

#[test]
fn one_node_machine_says_so() {
    let out = stdout(&["topo", "--sysfs-root", "fixtures/sysfs/vm-1node"]);
    assert!(out.contains("single NUMA node"), "{out}");
    let j = topo_json("vm-1node");
    assert_eq!(j["numa"], false);
    assert_eq!(j["node_count"], 1);
}

#[test]
fn interconnect_file_pins_routes() {
    let j: Value = serde_json::from_str(&stdout(&[
        "topo",
        "--json",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--interconnect",
        "examples/interconnect/r905.toml",
    ]))
    .unwrap();
    assert_eq!(j["interconnect"]["origin"], "file");
    let route = j["interconnect"]["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["from"] == 0 && r["to"] == 3)
        .unwrap();
    assert_eq!(route["path"], serde_json::json!([0, 2, 3]));
}

#[test]
fn missing_root_is_a_clear_error() {
    rondpoint(&["topo", "--sysfs-root", "no/such/dir"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no/such/dir/devices/system/node does not exist",
        ))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn bad_interconnect_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("ic.toml");
    std::fs::write(&bad, "links = [[0, 1], [1, 2]]\n").unwrap();
    rondpoint(&[
        "topo",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--interconnect",
        bad.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("ic.toml"))
    .stderr(predicate::str::contains("cannot be reached"));
    std::fs::write(&bad, "links = [[0, 1]\n").unwrap();
    rondpoint(&[
        "topo",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--interconnect",
        bad.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("not valid TOML"))
    .stderr(predicate::str::contains("line 1"));
}

#[test]
fn help_and_version() {
    rondpoint(&["--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("topo"))
        .stdout(predicate::str::contains("NUMA"));
    rondpoint(&["topo", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--sysfs-root"))
        .stdout(predicate::str::contains("--json"));
    rondpoint(&["--version"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("rondpoint "));
    rondpoint(&["topo", "--no-such-flag"]).assert().code(2);
}
