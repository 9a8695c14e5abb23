//! End-to-end tests of `rondpoint calibrate` and of `oaas` reading its curve.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout};
use predicates::prelude::*;
use rondpoint_model::GapCurve;

#[test]
fn calibrate_prints_the_curve_and_writes_the_file_oaas_reads() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r905.toml");
    let path = file.to_str().unwrap();
    let out = stdout(&["calibrate", "--machine", "r905-asymmetric", "-o", path]);
    assert!(
        out.starts_with(
            "MAPI-to-gap curve of r905-asymmetric: the cores of fast node 1 against those of \
             slow node 0"
        ),
        "{out}"
    );
    assert!(
        out.contains("0.3500") && out.contains("written to"),
        "{out}"
    );
    let curve = GapCurve::from_toml(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(curve.gap_pct(0.35) > 28.0);
    let toml = stdout(&["calibrate", "-m", "r905-asymmetric", "--toml"]);
    assert_eq!(GapCurve::from_toml(&toml).unwrap(), curve);
    // oaas runs with it on the R905 and refuses it on another machine, saying why.
    let set = format!("oaas.curve={path}");
    let sim = |machine: &str| {
        rondpoint(&[
            "sim",
            "-q",
            "-m",
            machine,
            "-w",
            "examples/scenarios/oaas/pg-1.toml",
            "-p",
            "oaas",
            "--epoch-ms",
            "300",
            "--set",
            &set,
        ])
        .assert()
    };
    sim("r905-asymmetric").success();
    sim("opteron-8385").failure().stderr(predicate::str::contains(
        "oaas cannot run here: the MAPI-to-gap curve was measured on 'r905-asymmetric', 4 nodes \
         (fast 1, 2; slow 0, 3); this machine has 4 nodes (fast 0, 1, 2, 3; slow none)",
    ));
}

#[test]
fn calibrate_json_carries_the_curve_the_nodes_and_what_was_not_measured() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r905.toml");
    let path = file.to_str().unwrap();
    let out = stdout(&["calibrate", "-m", "r905-asymmetric", "--json", "-o", path]);
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["mode"], "simulated");
    assert_eq!(r["machine"], "r905-asymmetric");
    assert!(r["measured_by"].as_str().unwrap().contains("the simulator"));
    assert_eq!(
        (r["nodes"].clone(), r["fast"].clone()),
        (4.into(), serde_json::json!([1, 2]))
    );
    assert_eq!(r["slow"], serde_json::json!([0, 3]));
    assert_eq!(r["compared"]["fast"]["node"], 1);
    assert_eq!(
        r["compared"]["fast"]["cpus"],
        serde_json::json!([4, 5, 6, 7])
    );
    assert_eq!(r["compared"]["slow"]["node"], 0);
    let skipped: Vec<(u64, &str)> = r["nodes_not_measured"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["node"].as_u64().unwrap(), n["class"].as_str().unwrap()))
        .collect();
    assert_eq!(skipped, vec![(2, "fast"), (3, "slow")]);
    assert!(
        r["nodes_not_measured"][0]["why"]
            .as_str()
            .unwrap()
            .contains("first node")
    );
    assert_eq!(r["mapi_not_measured"], serde_json::json!([]));
    assert_eq!(r["output"], path);
    // The points are the curve's, the one written to the file.
    let curve = GapCurve::from_toml(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), curve.points.len());
    // (Equal to the last digit or so: JSON and TOML readers may round the last bit apart.)
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * a.abs().max(1.0),
        (a, b) => a == b,
    };
    for (p, c) in points.iter().zip(&curve.points) {
        assert!(close(p["mapi"].as_f64(), Some(c.mapi)), "{p} {c:?}");
        assert!(close(p["gap_pct"].as_f64(), Some(c.gap_pct)), "{p} {c:?}");
        assert!(
            close(p["fast_reads_per_s"].as_f64(), c.fast_reads_per_s),
            "{p} {c:?}"
        );
        assert!(
            close(p["slow_reads_per_s"].as_f64(), c.slow_reads_per_s),
            "{p} {c:?}"
        );
    }
    // MAPI 0 reads nothing: its rates are null, not absent.
    assert!(points[0]["fast_reads_per_s"].is_null() && points[0].get("slow_reads_per_s").is_some());
    // The table says the same of the nodes.
    let text = stdout(&["calibrate", "-m", "r905-asymmetric"]);
    assert!(
        text.contains(
            "not measured: fast node 2, slow node 3: a class is measured on its first node"
        ),
        "{text}"
    );
    rondpoint(&["calibrate", "-m", "r905-asymmetric", "--json", "--toml"])
        .assert()
        .code(2);
}

#[test]
fn calibrate_refuses_a_machine_without_slow_nodes() {
    // Nothing was started: what was asked cannot be done (status 2, docs/reliability.md).
    rondpoint(&["calibrate", "-m", "opteron-8385"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "opteron-8385 has no slow CPU node: the microbenchmark compares a fast node's cores \
             with a slow node's",
        ));
    // Live, on a machine of one node (a fixture of one).
    rondpoint(&["calibrate", "--sysfs-root", "fixtures/sysfs/vm-1node"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "this machine has no slow CPU node to compare with a fast one",
        ));
    rondpoint(&["calibrate", "--array-mib", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("0 is not in 1..=1024"));
}

#[test]
fn calibrate_refuses_a_topology_that_is_not_this_machine_s_before_it_starts() {
    // The fixture's 16 CPUs on 4 nodes are not the machine the tests run on: live calibration
    // would pin threads to CPUs that may not exist and measure nodes that are not there.
    let out = rondpoint(&[
        "calibrate",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--ms",
        "1",
        "--array-mib",
        "1",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "rondpoint: error: --sysfs-root fixtures/sysfs/r905-asymmetric: the topology given is \
         not this machine's: it has 4 nodes (node 0: CPUs 0-3; node 1: CPUs 4-7; node 2: CPUs \
         8-11; node 3: CPUs 12-15), this machine ",
    ))
    .stderr(predicate::str::contains(
        "so it needs this machine's own topology",
    ))
    .get_output()
    .clone();
    assert!(out.stdout.is_empty());
    // An output that may not be replaced is refused before anything is measured, too.
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("notes.txt");
    std::fs::write(&mine, "mine\n").unwrap();
    rondpoint(&[
        "calibrate",
        "-m",
        "r905-asymmetric",
        "-o",
        mine.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stdout("")
    .stderr(predicate::str::contains("--force to replace it"));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine\n");
}
