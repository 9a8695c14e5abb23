//! `--json` prints exactly one JSON document on standard output, on every path of every
//! command that has it: a result, a machine with nothing to manage, a refusal, a failure, a
//! usage error (docs/reliability.md).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::rondpoint;
use serde_json::Value;

/// Runs `rondpoint ARGS`, and checks that its standard output is one JSON document; returns it
/// with the exit status.
fn one_document(args: &[&str]) -> (Value, i32) {
    let out = rondpoint(args).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut docs = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    let first = docs
        .next()
        .unwrap_or_else(|| panic!("{args:?}: nothing on stdout"))
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"));
    assert!(
        docs.next().is_none(),
        "{args:?}: more than one document: {text}"
    );
    (first, out.status.code().unwrap_or(-1))
}

/// A failure's document: the error, its causes, and the exit status it also exits with.
fn assert_error(args: &[&str], status: i32) {
    let (doc, code) = one_document(args);
    assert_eq!(code, status, "{args:?}: {doc}");
    assert_eq!(doc["status"], status, "{args:?}: {doc}");
    assert!(
        doc["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{args:?}: {doc}"
    );
    assert!(doc["causes"].is_array(), "{args:?}: {doc}");
}

const RECORDING: &str = "fixtures/recordings/sim-opteron-8385-facerec-carrefour.jsonl";

#[test]
fn results_are_one_document() {
    let fixture = "fixtures/sysfs/r905-asymmetric";
    let cases: &[&[&str]] = &[
        &["topo", "--json", "--sysfs-root", fixture],
        &["list", "policies", "--json"],
        &["list", "capabilities", "--json", "--sysfs-root", fixture],
        &["replay", RECORDING, "-p", "first-touch", "--json"],
        &["explain", RECORDING, "--json", "--epoch", "1"],
        &["report", RECORDING, "--json"],
        &[
            "sim",
            "-q",
            "--json",
            "-m",
            "xeon-2s",
            "-w",
            "cg",
            "-p",
            "first-touch",
        ],
        &[
            "matrix",
            "-q",
            "--json",
            "-m",
            "xeon-2s",
            "-w",
            "cg",
            "-p",
            "interleave",
        ],
        &["calibrate", "-m", "r905-asymmetric", "--json"],
        &["doctor", "--json"],
    ];
    for args in cases {
        let (_, code) = one_document(args);
        assert_eq!(code, 0, "{args:?}");
    }
}

#[test]
fn failures_and_usage_errors_are_one_document() {
    let cases: &[(&[&str], i32)] = &[
        (&["topo", "--json", "--sysfs-root", "/nonexistent"], 2),
        (&["list", "nosuchthing", "--json"], 2),
        (
            &["replay", "/nonexistent.jsonl", "-p", "carrefour", "--json"],
            2,
        ),
        (&["explain", "/nonexistent.jsonl", "--json"], 2),
        (&["report", "/nonexistent.jsonl", "--json"], 2),
        (&["sim", "--json", "-m", "nosuchmachine", "-w", "cg"], 2),
        (&["sim", "--json", "--no-such-flag"], 2),
        (&["matrix", "--json", "-m", "nosuchmachine"], 2),
        (&["calibrate", "-m", "nosuchmachine", "--json"], 2),
        (&["doctor", "--json", "--sysfs-root", "/nonexistent"], 2),
        (&["migrate", "--pid", "999999999", "--to", "0", "--json"], 2),
        (&["daemon", "--json"], 2),
        (
            &["run", "--json", "--policy", "nosuchpolicy", "--", "true"],
            2,
        ),
    ];
    for (args, status) in cases {
        assert_error(args, *status);
    }
}

#[test]
fn a_program_that_cannot_start_is_one_document() {
    assert_error(&["run", "--json", "--", "/nonexistent/program"], 127);
}

#[test]
fn a_run_with_nothing_to_manage_says_so_in_its_document() {
    let here = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
    if here.trim() != "0" {
        return; // a NUMA machine manages the program: run.rs tests that report
    }
    let (doc, code) = one_document(&["run", "--json", "--", "sh", "-c", "exit 3"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["managed"], false);
    assert_eq!(doc["exit"], "exit code 3");
    assert_eq!(doc["command"], serde_json::json!(["sh", "-c", "exit 3"]));
    assert!(
        doc["reason"].as_str().unwrap().contains("single NUMA node"),
        "{doc}"
    );
    let me = std::process::id().to_string();
    let (doc, code) = one_document(&["daemon", "--json", "--pid", &me]);
    assert_eq!((code, &doc["managed"]), (0, &Value::Bool(false)), "{doc}");
}
