//! End-to-end tests of `rondpoint calibrate` and of `oaas` reading its curve.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{rondpoint, stdout};
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
fn calibrate_refuses_a_machine_without_slow_nodes() {
    rondpoint(&["calibrate", "-m", "opteron-8385"])
        .assert()
        .failure()
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
