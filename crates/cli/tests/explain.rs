//! The explanation trail: every action of a recorded `auto` run names its lane and its
//! evidence, and `rondpoint explain` prints that trail (text and JSON).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout, workspace};
use serde_json::Value;
use std::path::Path;

/// Records `scenario` on `machine` under `policy` into `out`.
fn record(machine: &str, scenario: &str, policy: &str, out: &Path) {
    let path = workspace().join(scenario);
    let w = if path.exists() {
        path.to_str().unwrap().to_string()
    } else {
        scenario.to_string()
    };
    rondpoint(&[
        "record",
        "-m",
        machine,
        "-w",
        &w,
        "-p",
        policy,
        "-o",
        out.to_str().unwrap(),
    ])
    .assert()
    .success();
}

/// Every batch of actions in the recording (start and epochs), with its reasons: each action
/// has one, naming a lane of `auto` and giving evidence. Returns who decided, per action.
fn check_every_action_explained(recording: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(recording).unwrap();
    let mut by = Vec::new();
    for line in text.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        let actions = v["actions"].as_array().unwrap();
        if actions.is_empty() {
            continue;
        }
        let why = v["why"]
            .as_array()
            .expect("a batch of actions without reasons");
        let reasons = v["reasons"].as_array().unwrap();
        assert_eq!(why.len(), actions.len(), "one reason per action");
        for k in why {
            let r = &reasons[k.as_u64().unwrap() as usize];
            let name = r["by"].as_str().unwrap();
            let evidence = r["evidence"].as_str().unwrap();
            assert!(name.contains(" lane: "), "not a lane: {name}");
            assert!(
                !evidence.is_empty() && evidence != "the policy gave no reason",
                "{name}: no evidence"
            );
            by.push(name.to_string());
        }
    }
    by
}

#[test]
fn every_action_of_a_recorded_auto_run_names_its_lane_and_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // OAAS's moves on the asymmetric machine.
        (
            "r905-asymmetric",
            "examples/scenarios/oaas/pg-1.toml",
            ["placement lane: oaas"].as_slice(),
        ),
        // Usage-aware's moves of overflow, and the overflow trial's moves back.
        (
            "xeon-6242-4s",
            "examples/scenarios/choe21-mix1-mg.toml",
            [
                "overflow lane: usage-aware",
                "overflow lane: usage-aware (trial)",
            ]
            .as_slice(),
        ),
        // Carrefour's migrations and replications.
        (
            "opteron-8385",
            "streamcluster",
            ["pages lane: carrefour"].as_slice(),
        ),
        // N-MASS's pins.
        (
            "nehalem-e5520-2s",
            "examples/scenarios/nmass/wl9.toml",
            ["placement lane: n-mass"].as_slice(),
        ),
    ];
    for (machine, scenario, lanes) in cases {
        let file = dir.path().join("rec.jsonl");
        record(machine, scenario, "auto", &file);
        let by = check_every_action_explained(&file);
        for lane in lanes {
            assert!(
                by.iter().any(|b| b == lane),
                "{scenario}: no action by {lane}: {by:?}"
            );
        }
    }
}

#[test]
fn explain_prints_the_trail_as_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rec.jsonl");
    record("opteron-8385", "streamcluster", "auto", &file);
    let f = file.to_str().unwrap();
    let text = stdout(&["explain", f]);
    assert!(
        text.starts_with("the recorded run's decisions over [sim "),
        "{text}"
    );
    assert!(
        text.contains("\nepoch 0:\n  pages lane: carrefour: "),
        "{text}"
    );
    assert!(text.contains("    evidence: pid 1000: "), "{text}");
    assert!(text.contains("    expected: "), "{text}");
    let json: Value = serde_json::from_str(&stdout(&["explain", f, "--json"])).unwrap();
    let entries = json.as_array().unwrap();
    assert!(!entries.is_empty());
    let first_epoch = entries.iter().find(|e| e["epoch"] == 0).unwrap();
    assert_eq!(first_epoch["by"], "pages lane: carrefour");
    assert!(first_epoch["pages"].as_u64().unwrap() > 0);
    // One epoch only.
    let only: Value =
        serde_json::from_str(&stdout(&["explain", f, "--json", "--epoch", "1"])).unwrap();
    assert!(only.as_array().unwrap().iter().all(|e| e["epoch"] == 1));
    // Another policy replayed over the same observations explains its own decisions.
    let replayed = stdout(&["explain", f, "--policy", "carrefour"]);
    assert!(
        replayed.starts_with("carrefour's decisions, replayed over [sim "),
        "{replayed}"
    );
    assert!(replayed.contains("\n  carrefour: "), "{replayed}");
}

#[test]
fn a_recording_without_reasons_is_refused_with_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rec.jsonl");
    record("opteron-8385", "streamcluster", "carrefour", &file);
    // As an older rondpoint wrote it: no reasons.
    let text = std::fs::read_to_string(&file).unwrap();
    let old: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if let Some(o) = v.as_object_mut() {
                o.remove("reasons");
                o.remove("why");
            }
            v.to_string()
        })
        .collect();
    let old_file = dir.path().join("old.jsonl");
    std::fs::write(&old_file, old.join("\n") + "\n").unwrap();
    let out = rondpoint(&["explain", old_file.to_str().unwrap()])
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("but no reasons"), "{err}");
    assert!(err.contains("rondpoint explain --policy P"), "{err}");
    // A missing file is an error naming it, not a panic.
    rondpoint(&["explain", "/nonexistent/rec.jsonl"])
        .assert()
        .failure();
}
