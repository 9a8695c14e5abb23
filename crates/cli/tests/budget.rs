//! Work inside every input limit that would run for hours: `--budget` refuses it up front with
//! an estimate, and stops a run that outlasts it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::rondpoint;
use predicates::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A machine of `nodes` fully linked nodes of `cores` cores, written into `dir`.
fn machine(dir: &Path, nodes: usize, cores: usize) -> PathBuf {
    let row = |i: usize, local: f64, remote: f64| {
        let cells: Vec<String> = (0..nodes)
            .map(|j| format!("{}", if i == j { local } else { remote }))
            .collect();
        format!("[{}]", cells.join(", "))
    };
    let matrix = |local: f64, remote: f64| {
        let rows: Vec<String> = (0..nodes).map(|i| row(i, local, remote)).collect();
        format!("[{}]", rows.join(", "))
    };
    let links: Vec<String> = (0..nodes)
        .flat_map(|i| (i + 1..nodes).map(move |j| format!("[{i}, {j}]")))
        .collect();
    let text = format!(
        "name = \"big\"\ndescription = \"test\"\nnodes = {nodes}\ncores_per_node = {cores}\n\
         freq_ghz = 2.5\nllc_bytes = 33554432\nllcs_per_node = 1\n\
         mem_bytes_per_node = 68719476736\nmc_bandwidth_gbs = 40.0\nlink_bandwidth_gbs = 20.0\n\
         distances = {}\nlinks = [{}]\n[latency]\nmodel = \"matrix\"\nns = {}\n",
        matrix(10.0, 20.0).replace(".0", ""),
        links.join(", "),
        matrix(80.0, 130.0)
    );
    let path = dir.join("big.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// One thread per core scanning 1 GiB the main thread touched first: memory-bound on one
/// controller, `instructions` per thread.
fn scan(dir: &Path, instructions: f64) -> PathBuf {
    let text = format!(
        "name = \"scan\"\ndescription = \"test\"\n[[app]]\nname = \"scan\"\n\
         threads = \"all-cores\"\ninstructions = {instructions:e}\ncpi_base = 0.8\nmlp = 4.0\n\
         mpki = 20.0\nmrc_ref_bytes = 2097152\n[[app.region]]\nname = \"data\"\n\
         size_mib = 1024\nfirst_touch = \"main\"\npattern = \"shared-uniform\"\nshare = 1.0\n"
    );
    let path = dir.join("scan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_simulation_of_hours_is_refused_at_once_with_its_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let m = machine(dir.path(), 64, 64);
    let w = scan(dir.path(), 2e11);
    for command in ["sim", "record"] {
        let mut args = vec![
            command,
            "-m",
            m.to_str().unwrap(),
            "-w",
            w.to_str().unwrap(),
            "-p",
            "first-touch",
            "--budget",
            "10m",
        ];
        let out = dir.path().join("r.jsonl");
        if command == "record" {
            args.extend(["-o", out.to_str().unwrap()]);
        }
        rondpoint(&args)
            .timeout(Duration::from_secs(30))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "of wall time, more than --budget (10 min)",
            ))
            .stderr(predicate::str::contains(
                "scan on big should last about 3600 simulated s (the time limit)",
            ));
        assert!(!out.exists());
    }
    // Nothing left behind by `record`.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// The number before `before` in `text` (`... 0.06 s of wall time per ...`).
fn number_before(text: &str, before: &str) -> f64 {
    let head = &text[..text.find(before).unwrap()];
    let word = head.split_whitespace().last().unwrap();
    word.parse().unwrap()
}

#[test]
fn a_run_that_outlasts_its_budget_stops_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let m = machine(dir.path(), 16, 16);
    let w = scan(dir.path(), 4e9);
    let sim = |budget: &str| {
        rondpoint(&[
            "sim",
            "-m",
            m.to_str().unwrap(),
            "-w",
            w.to_str().unwrap(),
            "-p",
            "carrefour",
            "--budget",
            budget,
        ])
        .timeout(Duration::from_secs(120))
        .assert()
    };
    // The estimate, as this machine runs now: refused at once under a budget of nothing.
    let refused = sim("0.001s").code(2);
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    let pace = number_before(&said, "s of wall time per simulated second");
    let simulated = number_before(&said, "simulated s, which");
    // The simulator alone should take pace x simulated (about 0.5 s here); Carrefour's
    // sampling makes the run take about 15 times that. A budget of 4 times the estimate passes
    // it and is spent before the run ends, on a machine as loaded as when it was measured.
    let budget = (4.0 * pace.max(0.01) * simulated).max(0.5);
    sim(&format!("{budget:.2}s"))
        .code(1)
        .stderr(predicate::str::contains("of wall time, the --budget ("));
}
