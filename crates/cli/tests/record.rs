//! End-to-end tests of `rondpoint record` and `rondpoint replay`, and of policy configuration
//! on the command line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout};
use predicates::prelude::*;
use serde_json::Value;

/// `rondpoint record` of Carrefour on FaceRec (opteron-8385) to `file`, keeping at most
/// `max_samples` samples an epoch.
fn record_facerec(file: &str, max_samples: &str) -> assert_cmd::Command {
    rondpoint(&[
        "record",
        "-m",
        "opteron-8385",
        "-w",
        "facerec",
        "-p",
        "carrefour",
        "--max-samples",
        max_samples,
        "-o",
        file,
    ])
}

#[test]
fn record_then_replay_carrefour_offline() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("facerec.jsonl");
    let f = file.to_str().unwrap();
    record_facerec(f, "5000")
        .assert()
        .success()
        .stderr(predicate::str::contains("recorded"));
    let first = std::fs::read_to_string(&file).unwrap();
    let header: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(header["kind"], "header");
    assert_eq!(header["version"], 1);
    let epochs = first.lines().count() - 1;
    assert!(epochs >= 3, "{epochs} epochs");

    // Replaying Carrefour over its own recording takes decisions; replaying first-touch none.
    let j: Value =
        serde_json::from_str(&stdout(&["replay", f, "-p", "carrefour", "--json"])).unwrap();
    let replayed = j["epochs"].as_array().unwrap();
    assert_eq!(replayed.len(), epochs);
    assert!(
        replayed
            .iter()
            .any(|e| !e["actions"].as_array().unwrap().is_empty())
    );
    assert!(
        replayed
            .iter()
            .all(|e| e["samples"].as_u64().unwrap() <= 5000)
    );
    let out = stdout(&["replay", f, "-p", "first-touch"]);
    assert!(out.contains("first-touch over"), "{out}");
    let j: Value =
        serde_json::from_str(&stdout(&["replay", f, "-p", "first-touch", "--json"])).unwrap();
    assert!(
        j["epochs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["actions"].as_array().unwrap().is_empty()),
        "{j}"
    );
    // Thinned to 5,000 samples an epoch, the replay need not decide as the recorded run did;
    // with every sample it does, epoch for epoch.
    let all = dir.path().join("all.jsonl");
    let a = all.to_str().unwrap();
    record_facerec(a, "100000000").assert().success();
    let j: Value =
        serde_json::from_str(&stdout(&["replay", a, "-p", "carrefour", "--json"])).unwrap();
    let replayed = j["epochs"].as_array().unwrap();
    assert!(replayed.iter().all(|e| e["same_as_recorded"] == true));
    assert!(
        replayed
            .iter()
            .any(|e| !e["actions"].as_array().unwrap().is_empty())
    );
    let out = stdout(&["replay", a, "-p", "carrefour"]);
    let n = replayed.len();
    assert!(
        out.contains(&format!("{n} of {n} epochs decided as in the recorded run")),
        "{out}"
    );
    // Another policy decides otherwise where Carrefour acted (epoch 0), and the table shows
    // what the recorded run did there.
    let j: Value =
        serde_json::from_str(&stdout(&["replay", a, "-p", "interleave", "--json"])).unwrap();
    assert_eq!(
        j["epochs"][0]["same_as_recorded"], false,
        "{}",
        j["epochs"][0]
    );
    let out = stdout(&["replay", a, "-p", "interleave"]);
    assert!(out.contains("migrate"), "{out}");
    // The same replay twice gives the same decisions.
    assert_eq!(
        stdout(&["replay", f, "-p", "carrefour", "--json"]),
        stdout(&["replay", f, "-p", "carrefour", "--json"])
    );
}

#[test]
fn replay_of_a_bad_file_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    std::fs::write(&file, "{\"kind\":\"epoch\"}\n").unwrap();
    rondpoint(&["replay", file.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.jsonl"))
        .stderr(predicate::str::contains("line 1"));
    rondpoint(&["replay", "no/such/file"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no/such/file"));
}

#[test]
fn set_restricts_carrefour_to_chosen_techniques() {
    let j: Value = serde_json::from_str(&stdout(&[
        "sim",
        "-q",
        "--json",
        "-m",
        "opteron-8385",
        "-w",
        "facerec",
        "-p",
        "carrefour",
        "--set",
        "carrefour.techniques=interleaving",
    ]))
    .unwrap();
    let r = &j["runs"][0];
    assert_eq!(r["pages_replicated"], 0);
    assert_eq!(r["pages_migrated"], 0);
    assert!(r["pages_interleaved"].as_u64().unwrap() > 0);
    rondpoint(&[
        "sim",
        "-m",
        "opteron-8385",
        "-w",
        "facerec",
        "-p",
        "carrefour",
        "--set",
        "carrefour.techniques=magic",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "in --set carrefour.techniques=magic",
    ))
    .stderr(predicate::str::contains("unknown variant `magic`"))
    .stderr(predicate::str::contains("co-location"));
}

#[test]
fn bad_policy_configuration_fails_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("policy.toml");
    std::fs::write(&cfg, "[carrefour]\nlar_treshold = 0.7\n").unwrap();
    rondpoint(&[
        "sim",
        "-m",
        "opteron-8385",
        "-w",
        "facerec",
        "-p",
        "carrefour",
        "--config",
        cfg.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("policy.toml"))
    .stderr(predicate::str::contains("lar_treshold"))
    .stderr(predicate::str::contains("simulated s").not());
    std::fs::write(
        &cfg,
        "[carrefour]\nmrr_threshold = 0.9\n[autonuma]\nscan_size_mb = 64\n",
    )
    .unwrap();
    rondpoint(&[
        "sim",
        "-q",
        "-m",
        "opteron-8385",
        "-w",
        "facerec",
        "-p",
        "carrefour,autonuma",
        "--config",
        cfg.to_str().unwrap(),
    ])
    .assert()
    .success();
}

#[test]
fn a_policy_the_recorded_machine_could_not_run_is_refused_as_run_would() {
    let live = "fixtures/recordings/live-testbed-6.12-carrefour-own-partitioned.jsonl";
    for policy in ["oracle", "n-mass", "oaas"] {
        rondpoint(&["replay", live, "-p", policy])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("{policy} cannot run")));
    }
}

/// `sim`, `record` and `replay` run N-MASS with the same parameters (the profiles of each
/// program alone, the seed) and so decide identically: WL9, in both MPKI modes.
#[test]
fn sim_record_and_replay_decide_alike_for_nmass() {
    let dir = tempfile::tempdir().unwrap();
    let wl9 = crate::common::workspace().join("examples/scenarios/nmass/wl9.toml");
    let wl9 = wl9.to_str().unwrap();
    for set in ["n-mass.inputs.mpki=measured", "n-mass.inputs.mpki=profile"] {
        let file = dir.path().join("wl9.jsonl");
        let f = file.to_str().unwrap();
        let common = [
            "-m",
            "nehalem-e5520-2s",
            "-w",
            wl9,
            "-p",
            "n-mass",
            "--set",
            set,
        ];
        let out = rondpoint(&[&["record"][..], &common, &["-o", f, "--force"]].concat())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let said = String::from_utf8(out.stderr).unwrap();
        let sim: Value =
            serde_json::from_str(&stdout(&[&["sim", "-q", "--json"][..], &common].concat()))
                .unwrap();
        let completion = sim["runs"][0]["completion_s"].as_f64().unwrap();
        assert!(
            said.contains(&format!("({completion:.1} simulated s)")),
            "{set}: sim ended at {completion} s; record said {said}"
        );
        let j: Value =
            serde_json::from_str(&stdout(&["replay", f, "-p", "n-mass", "--json"])).unwrap();
        let epochs = j["epochs"].as_array().unwrap();
        assert!(epochs.len() > 10);
        let differ: Vec<&Value> = epochs
            .iter()
            .filter(|e| e["same_as_recorded"] != true)
            .collect();
        assert!(differ.is_empty(), "{set}: {differ:?}");
    }
}
