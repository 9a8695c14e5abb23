//! End-to-end tests of `rondpoint top` and `sim --top` where no terminal is (the live screen
//! itself is tested by scripts/top-check in tmux, and its drawing by snapshots in the crate).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout};
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

#[test]
fn a_snapshot_pictures_the_screen_of_a_state_file_or_a_simulation() {
    let dir = tempfile::tempdir().unwrap();
    // A daemon's state file, as an SVG: every cell's character, the processes' names in it.
    let svg = dir.path().join("top.svg");
    let state = "fixtures/top/state.json";
    rondpoint(&["top", "--state", state, "--snapshot", svg.to_str().unwrap()])
        .assert()
        .success();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<!-- rondpoint chart -->"));
    let cells: String = crate::common::svg_texts(&text).concat();
    for says in ["rondpoint", "top", "mgen", "node"] {
        assert!(cells.contains(says), "{says}: {cells}");
    }
    // A simulation run to its end, as a PNG of 120 x 28 cells of 9 x 18 pixels.
    let png = dir.path().join("top.png");
    sim(&[
        "-p",
        "carrefour",
        "--top",
        "--snapshot",
        png.to_str().unwrap(),
    ])
    .assert()
    .success();
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG"));
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((width, height), (120 * 9, 28 * 18));
    // Not without --top; a file that is not rondpoint's picture is kept.
    sim(&["-p", "carrefour", "--snapshot", png.to_str().unwrap()])
        .assert()
        .code(2);
    let mine = dir.path().join("mine.png");
    std::fs::write(&mine, "mine").unwrap();
    rondpoint(&[
        "top",
        "--state",
        state,
        "--snapshot",
        mine.to_str().unwrap(),
    ])
    .assert()
    .code(2);
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
}

#[test]
fn top_reads_the_state_of_a_run_as_of_a_daemon() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let mut run = std::process::Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
        .current_dir(crate::common::workspace())
        .args(["run", "--sysfs-root", "fixtures/sysfs/r905-asymmetric"])
        .args(["--epoch-ms", "100", "--state-file"])
        .arg(&state)
        .args(["--", "sleep", "3"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // While the program runs, `top` sees it in the run's state file.
    let deadline = Instant::now() + Duration::from_secs(20);
    let v = loop {
        let out = rondpoint(&["top", "--state", state.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        if let Ok(v) = serde_json::from_slice::<Value>(&out.stdout) {
            if v["processes"].as_array().is_some_and(|p| !p.is_empty()) {
                break v;
            }
        }
        assert!(Instant::now() < deadline, "no process in the state file");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(v["source"], "run");
    assert_eq!(v["processes"][0]["comm"], "sleep", "{v}");
    assert!(run.wait().unwrap().success());
}
