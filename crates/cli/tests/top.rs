//! End-to-end tests of `rondpoint top` and `sim --top` where no terminal is (the live screen
//! itself is tested by scripts/top-check in tmux, and its drawing by snapshots in the crate).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{rondpoint, stdout};
use predicates::prelude::*;
use serde_json::Value;

#[test]
fn prints_a_state_files_view_as_json() {
    let out = stdout(&["top", "--state", "fixtures/top/state.json", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["source"], "daemon");
    assert_eq!(v["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(v["processes"][1]["comm"], "mgen");
    assert_eq!(v["dram_estimated"], true);
}

/// `rondpoint sim` on a short simulation, with `extra` arguments.
fn sim(extra: &[&str]) -> assert_cmd::Command {
    let mut args = vec!["sim", "-m", "xeon-2s", "-w", "streamcluster"];
    args.extend_from_slice(extra);
    rondpoint(&args)
}

#[test]
fn refuses_to_draw_without_a_terminal() {
    let told =
        |what| predicate::str::contains("needs a terminal").and(predicate::str::contains(what));
    rondpoint(&["top", "--state", "fixtures/top/state.json"])
        .assert()
        .code(2)
        .stderr(told("--json"));
    sim(&["-p", "autonuma", "--top"])
        .assert()
        .code(2)
        .stderr(told("sim --json"));
}

#[test]
fn a_missing_state_file_is_said() {
    let missing = "fixtures/top/no-such-state.json";
    rondpoint(&["top", "--state", missing, "--json"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(missing));
}

#[test]
fn sim_top_shows_one_run() {
    // The default policies are two.
    sim(&["--top"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("one workload and one policy"));
    sim(&["-p", "autonuma", "--top", "--json"]).assert().code(2);
    sim(&["--top-pace-ms", "10"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--top"));
}
