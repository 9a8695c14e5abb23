//! End-to-end tests of `rondpoint daemon`: selection, the state file, clean shutdown on
//! SIGTERM, and refusals.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, workspace};
use predicates::prelude::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn wait_for(path: &std::path::Path, what: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                if what(&v) {
                    return v;
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "state file never showed what was expected"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn manages_a_pid_publishes_state_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let recording = dir.path().join("daemon.jsonl");
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("rondpoint");
    let daemon = Command::new(bin)
        .current_dir(workspace())
        .args([
            "daemon",
            "--pid",
            &victim.id().to_string(),
            "--epoch-ms",
            "100",
            "--json",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--state-file",
            state.to_str().unwrap(),
            "--record",
            recording.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let s = wait_for(&state, |v| v["epoch"].as_u64().unwrap_or(0) >= 2);
    assert_eq!(s["schema_version"], 1);
    assert_eq!(s["managed"], serde_json::json!([victim.id()]));
    // What `rondpoint top` shows, read back by it.
    assert_eq!(s["top"]["source"], "daemon");
    assert_eq!(s["top"]["processes"][0]["pid"], victim.id());
    let shown = crate::common::stdout(&["top", "--json", "--state", state.to_str().unwrap()]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["processes"][0]["comm"], "sleep");
    assert!(shown["nodes"].is_array());
    // SIGTERM: the daemon stops managing, reports and exits 0; the managed program lives on.
    Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    let out = daemon.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["epochs"].as_u64().unwrap() >= 2);
    // The recording holds every epoch of the report, after the header naming the daemon.
    let text = std::fs::read_to_string(&recording).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines[0]["source"]
            .as_str()
            .unwrap()
            .starts_with("live daemon policy=auto"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[0]["processes"][0]["pid"], victim.id());
    assert_eq!(
        lines.len() as u64 - 1,
        report["epochs"].as_u64().unwrap(),
        "one line per epoch"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("recorded"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the managed program must survive"
    );
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[test]
fn refuses_nothing_to_manage_and_missing_pids() {
    rondpoint(&["daemon", "--sysfs-root", "fixtures/sysfs/r905-asymmetric"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--pid, --comm or --cgroup"));
    rondpoint(&[
        "daemon",
        "--pid",
        "999999999",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("process 999999999 is not running"));
    rondpoint(&[
        "daemon",
        "--cgroup",
        "/nonexistent",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("not a cgroup v2 directory"));
    let me = std::process::id().to_string();
    rondpoint(&[
        "daemon",
        "--pid",
        &me,
        "--sysfs-root",
        "fixtures/sysfs/vm-1node",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("single NUMA node"));
    // A pid that does not run is an error on a one-node machine too.
    rondpoint(&[
        "daemon",
        "--pid",
        "999999999",
        "--sysfs-root",
        "fixtures/sysfs/vm-1node",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("process 999999999 is not running"));
}

#[test]
fn a_selection_of_the_whole_machine_needs_all_processes() {
    for (args, says) in [
        (vec!["--pid", "1"], "--pid 1 selects init"),
        (
            vec!["--comm", "*"],
            "matches command names by their length only",
        ),
        (
            vec!["--comm", "?*"],
            "matches command names by their length only",
        ),
        (vec!["--comm", "??*"], "of the machine's"),
        (vec!["--comm", "*??"], "by their length only"),
        (vec!["--comm", "?*?"], "by their length only"),
        (vec!["--comm", "???*"], "by their length only"),
        (vec!["--comm", "*?*?*"], "by their length only"),
        (vec!["--comm", ""], "not an empty string"),
        (vec!["--pid", "0"], "a process id is a positive number"),
        (vec!["--pid=-5"], "a process id is a positive number"),
    ] {
        let mut all = vec!["daemon", "--sysfs-root", "fixtures/sysfs/r905-asymmetric"];
        all.extend(&args);
        rondpoint(&all)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    // The root of a cgroup hierarchy holds every process not placed elsewhere; cgroup v1
    // directories are not read.
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("cgroup.procs"), "1\n").unwrap();
    let v1 = tempfile::tempdir().unwrap();
    std::fs::write(v1.path().join("cgroup.procs"), "1\n").unwrap();
    std::fs::write(root.path().join("cgroup.controllers"), "cpu memory\n").unwrap();
    for (dir, says) in [
        (&root, "is the root of a cgroup hierarchy"),
        (&v1, "is a cgroup v1 directory"),
    ] {
        rondpoint(&[
            "daemon",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--cgroup",
            dir.path().to_str().unwrap(),
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(says));
    }
    // A kernel thread (kthreadd is pid 2 outside a pid namespace) has no memory to place.
    if std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd") {
        rondpoint(&[
            "daemon",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--pid",
            "2",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("(kthreadd) is a kernel thread"));
    }
    // With --all-processes the selection is taken (here on a one-node machine, where the
    // daemon has nothing to do and says so).
    for args in [vec!["--pid", "1"], vec!["--comm", "*"]] {
        let mut all = vec![
            "daemon",
            "--all-processes",
            "--sysfs-root",
            "fixtures/sysfs/vm-1node",
        ];
        all.extend(&args);
        rondpoint(&all)
            .assert()
            .success()
            .stderr(predicate::str::contains("single NUMA node"));
    }
}

#[test]
fn two_daemons_never_manage_one_process() {
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = victim.id().to_string();
    let args = [
        "daemon",
        "--pid",
        &pid,
        "--epoch-ms",
        "100",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
    ];
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let first = Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
        .current_dir(workspace())
        .args(args)
        .args(["--state-file", state.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&state, |v| v["epoch"].as_u64().unwrap_or(0) >= 1);
    // The second is refused, naming the first.
    rondpoint(&args)
        .timeout(Duration::from_secs(10))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "process {pid} is already managed by rondpoint {}",
            first.id()
        )));
    Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status()
        .unwrap();
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success());
    // Once the first has gone, the process can be managed again.
    let state2 = dir.path().join("state2.json");
    let second = Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
        .current_dir(workspace())
        .args(args)
        .args(["--state-file", state2.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let s = wait_for(&state2, |v| {
        v["managed"] == serde_json::json!([victim.id()])
    });
    assert!(s["epoch"].as_u64().is_some());
    Command::new("kill")
        .args(["-TERM", &second.id().to_string()])
        .status()
        .unwrap();
    assert!(second.wait_with_output().unwrap().status.success());
    let _ = victim.kill();
    let _ = victim.wait();
}

#[test]
fn two_daemons_never_write_one_state_file() {
    let mut victims: Vec<_> = (0..2)
        .map(|_| Command::new("sleep").arg("30").spawn().unwrap())
        .collect();
    let daemon = |pid: u32| {
        vec![
            "daemon".to_string(),
            "--pid".to_string(),
            pid.to_string(),
            "--epoch-ms".to_string(),
            "100".to_string(),
            "--sysfs-root".to_string(),
            "fixtures/sysfs/r905-asymmetric".to_string(),
            "--state-file".to_string(),
        ]
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let first = Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
        .current_dir(workspace())
        .args(daemon(victims[0].id()))
        .arg(&state)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&state, |v| v["epoch"].as_u64().unwrap_or(0) >= 1);
    // Another process, the same file by another name: refused, the file left to the first.
    let mut second = daemon(victims[1].id());
    let other_spelling = dir.path().join(".").join("state.json");
    second.push(other_spelling.to_str().unwrap().to_string());
    let second: Vec<&str> = second.iter().map(String::as_str).collect();
    rondpoint(&second)
        .timeout(Duration::from_secs(10))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "another rondpoint (pid {}) is writing it; give another file",
            first.id()
        )));
    Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(first.wait_with_output().unwrap().status.success());
    let last: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(last["managed"], serde_json::json!([victims[0].id()]));
    for v in &mut victims {
        let _ = v.kill();
        let _ = v.wait();
    }
}

/// Runs a daemon on the R905 fixture with `args` and its standard error in `err` (with
/// `JOURNAL_STREAM` naming that file when `journal`), until its state file shows 3 epochs;
/// stops it with SIGTERM and returns what it logged.
fn logged(args: &[&str], journal: bool) -> String {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let err_path = dir.path().join("stderr");
    let err = std::fs::File::create(&err_path).unwrap();
    let meta = err.metadata().unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("rondpoint"));
    cmd.current_dir(workspace())
        .args(["daemon", "--epoch-ms", "100", "--sysfs-root"])
        .arg("fixtures/sysfs/r905-asymmetric")
        .arg("--state-file")
        .arg(&state)
        .args(args)
        .env_remove("JOURNAL_STREAM")
        .stdout(Stdio::null())
        .stderr(err);
    if journal {
        cmd.env("JOURNAL_STREAM", format!("{}:{}", meta.dev(), meta.ino()));
    }
    let daemon = cmd.spawn().unwrap();
    wait_for(&state, |v| v["epoch"].as_u64().unwrap_or(0) >= 3);
    Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    let out = daemon.wait_with_output().unwrap();
    assert!(out.status.success());
    std::fs::read_to_string(&err_path).unwrap()
}

#[test]
fn the_log_says_what_it_manages_and_warns_when_the_selection_matches_nothing() {
    let log = logged(&["--comm", "no-such-program-xyz"], false);
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        lines[0].contains(" INFO ")
            && lines[0].ends_with(
                "managing 0 processes (--comm 'no-such-program-xyz') with auto at 100 ms epochs"
            ),
        "{log}"
    );
    assert!(
        lines[1].contains(" WARN ")
            && lines[1].ends_with(
                "the selection (--comm 'no-such-program-xyz') matches no process now; it is \
                 looked for again every epoch"
            ),
        "{log}"
    );
    // Epochs that did nothing are debug lines: not at the default level.
    assert!(!log.contains("epoch 1:"), "{log}");
    assert!(log.contains("INFO stopped after "), "{log}");
    let log = logged(
        &["--comm", "no-such-program-xyz", "--log-level", "debug"],
        false,
    );
    assert!(
        log.contains("DEBUG epoch 1: 0 processes, 0 samples, 0 actions"),
        "{log}"
    );
}

#[test]
fn under_systemd_the_log_carries_the_journal_s_priorities() {
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = victim.id().to_string();
    let log = logged(&["--pid", &pid], true);
    victim.kill().unwrap();
    victim.wait().unwrap();
    let lines: Vec<&str> = log.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        format!("<6>managing 1 processes (--pid {pid}) with auto at 100 ms epochs"),
        "{log}"
    );
    assert!(
        lines.last().unwrap().starts_with("<6>stopped after "),
        "{log}"
    );
    let log = logged(&["--comm", "no-such-program-xyz"], true);
    assert!(log.contains("\n<4>the selection (--comm"), "{log}");
}

/// GET `path` from `addr` over plain HTTP/1.0 with `headers`: (status line, body).
fn http_get_with(addr: &str, path: &str, headers: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{headers}\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

fn http_get(addr: &str, path: &str) -> (String, String) {
    http_get_with(addr, path, "")
}

#[test]
fn metrics_are_served_on_loopback_and_follow_the_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let err_path = dir.path().join("stderr");
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let mut daemon = Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
        .current_dir(workspace())
        .args(["daemon", "--epoch-ms", "100", "--metrics", "0", "--pid"])
        .arg(victim.id().to_string())
        .args(["--sysfs-root", "fixtures/sysfs/r905-asymmetric"])
        .env_remove("JOURNAL_STREAM")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    // The log names the address the kernel chose for port 0.
    let deadline = Instant::now() + Duration::from_secs(20);
    let addr = loop {
        let log = std::fs::read_to_string(&err_path).unwrap_or_default();
        if let Some(a) = log
            .lines()
            .find_map(|l| l.split("serving metrics on http://").nth(1))
        {
            break a.trim_end_matches("/metrics").to_string();
        }
        assert!(Instant::now() < deadline, "no metrics address: {log}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let epochs = |body: &str| -> u64 {
        body.lines()
            .find_map(|l| l.strip_prefix("rondpoint_epochs_total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    // Series appear with the first epoch.
    let first = loop {
        let (status, body) = http_get(&addr, "/metrics");
        assert!(status.contains("200"), "{status}");
        // Without an Accept header: Prometheus's older text format (counters' HELP names
        // their sample, no EOF line).
        assert!(!body.contains("# EOF"), "{body}");
        if epochs(&body) >= 1 {
            break body;
        }
        assert!(Instant::now() < deadline, "no epoch: {body}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let pid = victim.id();
    assert!(
        first.contains(&format!(
            "rondpoint_process_resident_bytes{{pid=\"{pid}\",comm=\"sleep\",node=\"0\"}}"
        )),
        "{first}"
    );
    for name in [
        "rondpoint_managed_processes",
        "rondpoint_samples_lost_total",
        "rondpoint_node_memory_bytes{node=\"0\",state=\"free\"}",
        "rondpoint_local_access_ratio",
        "rondpoint_cpu_seconds_total",
    ] {
        assert!(first.contains(name), "{name} missing: {first}");
    }
    std::thread::sleep(Duration::from_millis(400));
    let (_, later) = http_get(&addr, "/metrics");
    assert!(epochs(&later) > epochs(&first), "{first}\n{later}");
    // Prometheus asks for OpenMetrics, and gets it.
    let (_, om) = http_get_with(
        &addr,
        "/metrics",
        "Accept: application/openmetrics-text;version=1.0.0\r\n",
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(
        om.contains("# HELP rondpoint_epochs Epochs completed."),
        "{om}"
    );
    assert!(
        first.contains("# HELP rondpoint_epochs_total Epochs completed."),
        "{first}"
    );
    let (status, _) = http_get(&addr, "/other");
    assert!(status.contains("404"), "{status}");
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[test]
fn the_grafana_dashboard_reads_only_documented_metrics() {
    // Every rondpoint_* name in examples/grafana/rondpoint.json is in docs/metrics.md's table.
    let root = workspace();
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("examples/grafana/rondpoint.json")).unwrap(),
    )
    .unwrap();
    let docs = std::fs::read_to_string(root.join("docs/metrics.md")).unwrap();
    let mut names = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for (i, _) in expr.match_indices("rondpoint_") {
                let name: String = expr[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(
                    docs.contains(&format!("`{name}`")),
                    "{name} is not documented"
                );
                names += 1;
            }
        }
    }
    assert!(names >= 8, "{names}");
}
