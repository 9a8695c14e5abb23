//! End-to-end tests of `rondpoint report`: a recording summed up as text, listed whole as
//! JSON (one value per epoch in every series, the actions and pages the recording holds), and
//! drawn over time (the SVG's panels, series and one polyline per series; a PNG); and the
//! refusals.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout};
use predicates::prelude::*;
use serde_json::Value;

/// Records Carrefour on streamcluster (opteron-8385, where it migrates and replicates) into
/// `dir`, and returns the recording's path.
fn recording(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("r.jsonl");
    rondpoint(&[
        "record",
        "-m",
        "opteron-8385",
        "-w",
        "streamcluster",
        "-p",
        "carrefour",
        "-o",
        path.to_str().unwrap(),
    ])
    .assert()
    .success();
    path
}

#[test]
fn a_recording_is_summed_up_listed_and_drawn_over_time() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording(dir.path());
    let rec = rec.to_str().unwrap();
    // JSON: one value per epoch in every series; the actions are the recording's.
    let json: Value = serde_json::from_str(&stdout(&["report", rec, "--json"])).unwrap();
    let epochs = json["t_s"].as_array().unwrap().len();
    let lines = std::fs::read_to_string(rec).unwrap().lines().count();
    assert_eq!(epochs, lines - 1, "one value per recorded epoch");
    for series in [
        "memory_bytes_by_node",
        "lar",
        "mc_imbalance_pct",
        "pages_done",
    ] {
        assert_eq!(json[series].as_array().unwrap().len(), epochs, "{series}");
    }
    assert_eq!(json["nodes"].as_array().unwrap().len(), 4);
    let recorded_actions: usize = std::fs::read_to_string(rec)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["actions"]
                .as_array()
                .map_or(0, Vec::len)
        })
        .sum();
    let reported: u64 = json["actions_by_technique"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|v| v.as_array().unwrap().iter().map(|n| n.as_u64().unwrap()))
        .sum();
    assert!(recorded_actions > 0);
    assert_eq!(reported as usize, recorded_actions);
    // Text: a line per node, the two metrics with their direction, the actions.
    let text = stdout(&["report", rec]);
    for says in [
        "memory on node 3",
        "local access ratio",
        "memory-controller imbalance",
        "replicate",
        "pages placed",
        "higher is better",
    ] {
        assert!(text.contains(says), "{says}:\n{text}");
    }
    // SVG: three panels, each series in its legend and drawn as one line.
    let svg_path = dir.path().join("r.svg");
    rondpoint(&["report", rec, "--plot", svg_path.to_str().unwrap()])
        .assert()
        .success();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    for says in [
        "memory of the managed programs per node",
        "locality and balance",
        "actions per epoch",
        "time (s)",
        "node 0",
        "local access ratio (higher is better)",
        "controller imbalance (lower is better)",
        "migrate",
    ] {
        assert!(svg.contains(says), "{says}");
    }
    // 4 nodes, 2 metrics, and one line per technique, each with its legend mark.
    let techniques = json["actions_by_technique"].as_object().unwrap().len();
    assert!(svg.matches("<polyline").count() >= 2 * (4 + 2 + techniques));
    // PNG: rondpoint's, replaced on a second run; a file of another kind is not.
    let png = dir.path().join("r.png");
    for _ in 0..2 {
        rondpoint(&["report", rec, "--plot", png.to_str().unwrap()])
            .assert()
            .success();
    }
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    let other = dir.path().join("notes.svg");
    std::fs::write(&other, "mine").unwrap();
    rondpoint(&["report", rec, "--plot", other.to_str().unwrap()])
        .assert()
        .code(2);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "mine");
}

#[test]
fn a_chart_of_another_format_or_a_missing_recording_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording(dir.path());
    rondpoint(&["report", rec.to_str().unwrap(), "--plot", "x.pdf"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("must end in .svg or .png"));
    rondpoint(&["report", "/nonexistent/r.jsonl"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("opening the recording"));
}
