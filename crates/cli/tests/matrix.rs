//! End-to-end tests of `rondpoint matrix`: the table (golden file), the JSON, `--check`'s exit
//! status, bad input, and the do-no-harm regression suite CI runs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout};
use predicates::prelude::*;
use serde_json::Value;

#[test]
fn table_matches_golden_file_whatever_the_number_of_jobs() {
    let args = |jobs: &'static str| {
        [
            "matrix",
            "-q",
            "-m",
            "opteron-8385,xeon-2s",
            "-w",
            "facerec,mg",
            "-p",
            "interleave,static",
            "--jobs",
            jobs,
        ]
    };
    let out = stdout(&args("2"));
    assert_eq!(
        out,
        stdout(&args("1")),
        "runs in parallel, results in order"
    );
    insta::assert_snapshot!("matrix_table_facerec_mg", out);
}

#[test]
fn json_has_every_cell_its_speedup_and_the_violations() {
    let out = stdout(&[
        "matrix",
        "-q",
        "--json",
        "-m",
        "xeon-2s",
        "-w",
        "cg,streamcluster",
        "-p",
        "interleave,carrefour,static",
        "--max-slowdown",
        "10",
    ]);
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["baseline"], "first-touch");
    assert_eq!(j["max_slowdown_pct"], 10.0);
    assert_eq!(j["seed"], 1);
    let names = |k: &str| -> Vec<String> {
        j[k].as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("machines"), ["xeon-2s"]);
    assert_eq!(names("workloads"), ["cg", "streamcluster"]);
    assert_eq!(
        names("policies"),
        ["first-touch", "interleave", "carrefour", "static", "bound"]
    );
    let cells = j["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 10);
    let cell = |w: &str, p: &str| {
        cells
            .iter()
            .find(|c| c["workload"] == w && c["policy"] == p)
            .unwrap()
    };
    assert_eq!(cell("cg", "first-touch")["speedup"], 1.0);
    assert!(cell("cg", "static")["refused"].as_str().is_some());
    assert!(cell("cg", "static")["speedup"].is_null());
    // Interleaving cg's private matrix blocks only adds remote traffic [Dashti13 §4.2].
    let il = cell("cg", "interleave")["speedup"].as_f64().unwrap();
    assert!(il < 0.9, "{il}");
    let v = j["violations"].as_array().unwrap();
    assert!(
        v.iter()
            .any(|v| v["workload"] == "cg" && v["policy"] == "interleave")
    );
    for s in j["summary"].as_array().unwrap() {
        for field in ["machine", "policy", "runs", "refused", "violations"] {
            assert!(!s[field].is_null(), "{field} missing in {s}");
        }
    }
    // Every run has its ratio to the placement bound, at most 1 give or take its tolerance.
    assert_eq!(cell("streamcluster", "bound")["to_bound"], 1.0);
    let to_bound = cell("streamcluster", "carrefour")["to_bound"]
        .as_f64()
        .unwrap();
    assert!(to_bound > 0.5 && to_bound <= 1.005, "{to_bound}");
    assert!(cell("cg", "static")["to_bound"].is_null());
    assert_eq!(j["beyond_bound"].as_array().map(Vec::len), Some(0));
}

#[test]
fn no_bound_leaves_the_bound_out() {
    let out = stdout(&[
        "matrix",
        "-q",
        "--json",
        "-m",
        "xeon-2s",
        "-w",
        "cg",
        "-p",
        "interleave",
        "--no-bound",
    ]);
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        j["policies"],
        serde_json::json!(["first-touch", "interleave"])
    );
    assert!(j["cells"][1]["to_bound"].is_null());
}

#[test]
fn check_fails_only_for_the_checked_policies() {
    let args = |check: &'static str| {
        [
            "matrix",
            "-q",
            "-m",
            "xeon-2s",
            "-w",
            "cg",
            "-p",
            "interleave",
            "--check",
            check,
        ]
    };
    rondpoint(&args("interleave"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "1 run more than 4% slower than first-touch",
        ))
        .stderr(predicate::str::contains(
            "1 run of interleave more than 4% slower than first-touch",
        ));
    rondpoint(&args("first-touch")).assert().success();
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    for (args, says) in [
        (
            vec![
                "matrix",
                "-m",
                "xeon-2s",
                "-w",
                "cg",
                "-p",
                "carrefour",
                "--check",
                "autonuma",
            ],
            "does not run autonuma",
        ),
        (
            vec!["matrix", "-m", "xeon-2s", "--check", "nosuch"],
            "nosuch",
        ),
        (vec!["matrix", "-m", "opteron"], "unknown machine 'opteron'"),
        (vec!["matrix", "-m", "xeon-2s", "-w", "mgg"], "mgg"),
        (vec!["matrix", "-p", "nosuch"], "nosuch"),
        (vec!["matrix", "--max-slowdown", "101"], "from 0 to 100"),
        (vec!["matrix", "--jobs", "0"], "--jobs"),
        (vec!["matrix", "--baseline", "nosuch"], "nosuch"),
    ] {
        rondpoint(&args)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(says));
    }
}

/// The do-no-harm regression suite: Carrefour, rondpoint's default, never more than 4% slower
/// than first-touch on the four reference machines, on the workloads where it acts or once
/// did harm ([Dashti13 §5]: never more than 4% slower than Linux); and neither it nor the
/// oracle faster than the placement bound by more than 0.5% (a run that is shows a placement
/// the bound's search misses). The whole matrix is `rondpoint matrix --check carrefour`
/// (docs/reproduction.md).
#[test]
fn carrefour_does_no_harm_and_nothing_beats_the_bound_on_the_reduced_matrix() {
    rondpoint(&[
        "matrix",
        "-q",
        "-w",
        "cg,sp,ferret,facesim,is,streamcluster",
        "-p",
        "carrefour,oracle",
        "--check",
        "carrefour",
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains(
        "no run is faster than the placement bound by more than",
    ));
}
