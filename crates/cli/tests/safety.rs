//! End-to-end tests that rondpoint cannot be made to harm the host through its file
//! arguments, its outputs or signals (docs/live.md, issue "never harm the host").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, workspace};
use predicates::prelude::*;
use std::os::unix::fs::FileTypeExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn mkfifo(path: &std::path::Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[test]
fn special_files_as_inputs_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("scenario.toml");
    mkfifo(&fifo);
    for (args, what) in [
        (
            vec!["sim", "-m", "opteron-8385", "-w", "/dev/zero"],
            "character device",
        ),
        (
            vec!["sim", "-m", "opteron-8385", "-w", fifo.to_str().unwrap()],
            "FIFO",
        ),
        (
            vec!["sim", "-m", "/dev/zero", "-w", "mg"],
            "character device",
        ),
        (
            vec![
                "sim",
                "-m",
                "opteron-8385",
                "-w",
                "mg",
                "--config",
                "/dev/zero",
            ],
            "character device",
        ),
        (vec!["replay", "/dev/zero"], "character device"),
        (vec!["replay", fifo.to_str().unwrap()], "FIFO"),
        (
            vec!["topo", "--interconnect", fifo.to_str().unwrap()],
            "FIFO",
        ),
    ] {
        refused_at_once(&args, what);
    }
}

/// `rondpoint ARGS` refuses a file that is a `what`, with status 2, within two seconds.
fn refused_at_once(args: &[&str], what: &str) {
    let started = Instant::now();
    rondpoint(args)
        .timeout(Duration::from_secs(10))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "is a {what}, not a regular file"
        )));
    assert!(started.elapsed() < Duration::from_secs(2), "{args:?}");
}

#[test]
fn parse_errors_say_where_without_quoting_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("shadow");
    std::fs::write(&cfg, "root:$6$s3cr3t-hash:19000:0:99999:7:::\n").unwrap();
    rondpoint(&[
        "sim",
        "-m",
        "opteron-8385",
        "-w",
        "mg",
        "--config",
        cfg.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("line 1, column"))
    .stderr(predicate::str::contains("s3cr3t").not());
    let scenario = dir.path().join("w.toml");
    std::fs::write(&scenario, "name = \"x\"\npassword = hunter2\n").unwrap();
    rondpoint(&[
        "sim",
        "-m",
        "opteron-8385",
        "-w",
        scenario.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("line 2, column"))
    .stderr(predicate::str::contains("hunter2").not());
}

/// `rondpoint daemon --state-file PATH` on a process that runs, with the 4-node fixture.
fn daemon_with_state_file(state: &std::path::Path) -> std::process::Output {
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let out = rondpoint(&[
        "daemon",
        "--pid",
        &victim.id().to_string(),
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--state-file",
        state.to_str().unwrap(),
    ])
    .timeout(Duration::from_secs(20))
    .output()
    .unwrap();
    let _ = victim.kill();
    let _ = victim.wait();
    out
}

#[test]
fn a_state_file_that_is_not_a_regular_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("state.json");
    mkfifo(&fifo);
    let out = daemon_with_state_file(&fifo);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a FIFO, not a regular file"), "{err}");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    // A character device the test makes (root only: mknod), not the real /dev/full.
    let dev = dir.path().join("full");
    let made = Command::new("mknod")
        .arg(&dev)
        .args(["c", "1", "7"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if made {
        let out = daemon_with_state_file(&dev);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("is a character device"));
        assert!(
            std::fs::symlink_metadata(&dev)
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
    // A symbolic link is not followed: its target is untouched.
    let target = dir.path().join("precious");
    std::fs::write(&target, "keep me").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = daemon_with_state_file(&link);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    // An unrelated file with the old temporary name is left alone by a daemon that runs.
    let conf = dir.path().join("conf");
    let conf_tmp = dir.path().join("conf.tmp");
    std::fs::write(&conf_tmp, "mine").unwrap();
    let _ = std::fs::remove_file(&conf);
    let bin = assert_cmd::cargo::cargo_bin("rondpoint");
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let mut daemon = Command::new(bin)
        .current_dir(workspace())
        .args([
            "daemon",
            "--pid",
            &victim.id().to_string(),
            "--epoch-ms",
            "50",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--state-file",
            conf.to_str().unwrap(),
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    let _ = Command::new("kill").arg(daemon.id().to_string()).status();
    let _ = daemon.wait();
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(conf.is_file());
    assert_eq!(std::fs::read_to_string(&conf_tmp).unwrap(), "mine");
}

#[test]
fn run_passes_a_signal_on_to_its_program_and_exits_with_its_status() {
    // On this project's one-node machines `run` runs the program unchanged; on a NUMA machine
    // it manages it: the signal is passed on either way.
    let bin = assert_cmd::cargo::cargo_bin("rondpoint");
    let mut run = Command::new(bin)
        .args(["run", "--", "sleep", "100"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status();
    let status = run.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "the program's status: killed by SIGTERM"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A built-in preset's text with one line's value replaced: `edit(FILE, "threads =", NEW)`.
fn edited(preset: &str, key: &str, line: &str) -> String {
    let text = std::fs::read_to_string(workspace().join(preset)).unwrap();
    let mut found = false;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            if !found && l.starts_with(key) {
                found = true;
                line.to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(found, "{key} not in {preset}");
    out.join("\n")
}

#[test]
fn numbers_out_of_range_are_refused_before_anything_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let workload = "crates/sim/presets/workloads/facerec.toml";
    let machine = "crates/sim/presets/machines/xeon-2s.toml";
    let src = ", source = \"test\" }";
    for (file, key, line, says) in [
        (
            workload,
            "threads =",
            "threads = 4294967295".to_string(),
            "threads = 4294967295: must be from 1 to 4096 threads",
        ),
        (
            workload,
            "size_mib =",
            "size_mib = 1e300".to_string(),
            "size_mib = 1e300: must be from",
        ),
        (
            workload,
            "size_mib =",
            "size_mib = nan".to_string(),
            "must be a finite number",
        ),
        (
            machine,
            "freq_ghz =",
            format!("freq_ghz = {{ value = 70000{src}"),
            "freq_ghz = 70000: must be from 0.1 to 10 GHz",
        ),
        (
            machine,
            "cores_per_node =",
            format!("cores_per_node = {{ value = 100000000{src}"),
            "must be from 0 to 4096 cores",
        ),
        (
            machine,
            "links =",
            format!("links = {{ value = [[0, 1, 3]]{src}"),
            "invalid length 3",
        ),
    ] {
        let path = dir.path().join("input.toml");
        std::fs::write(&path, edited(file, key, &line)).unwrap();
        let path = path.to_str().unwrap();
        let (m, w) = if file == workload {
            ("xeon-2s", path)
        } else {
            (path, "facerec")
        };
        let started = Instant::now();
        rondpoint(&["sim", "-m", m, "-w", w, "-p", "carrefour"])
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
        assert!(started.elapsed() < Duration::from_secs(5), "{line}");
    }
    for (set, says) in [
        (
            "carrefour.sampling_period_high_cycles=1",
            "must be from 1000 to 1e10 cycles",
        ),
        (
            "autonuma.scan_period_min_ms=0",
            "must be from 10 to 3600000 ms",
        ),
        ("carrefour.mrr_threshold=inf", "must be a finite number"),
    ] {
        let policy = set.split('.').next().unwrap();
        rondpoint(&[
            "sim", "-m", "xeon-2s", "-w", "facerec", "-p", policy, "--set", set,
        ])
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(says));
    }
}

#[test]
fn a_closed_standard_output_ends_quietly_with_the_sigpipe_status() {
    for args in [
        vec!["sim", "--list"],
        vec!["list", "policies"],
        vec![
            "replay",
            "fixtures/recordings/sim-opteron-8385-facerec-carrefour.jsonl",
            "--json",
        ],
        vec!["topo", "--sysfs-root", "fixtures/sysfs/r905-asymmetric"],
        vec!["--help"],
        vec!["sim", "--help"],
        vec!["--version"],
    ] {
        // The reader is gone before rondpoint starts: every write fails with EPIPE.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
            .current_dir(workspace())
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(141), "{args:?}");
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_recording_of_a_machine_past_the_limits_is_refused_at_once() {
    // The fixture's header with a 1,000-node machine (which took 41 s to replay before the
    // topology limits): refused with the limit, before any epoch is read.
    let text = std::fs::read_to_string(
        workspace().join("fixtures/recordings/sim-opteron-8385-facerec-carrefour.jsonl"),
    )
    .unwrap();
    let mut lines = text.lines();
    let mut header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let n = 1000;
    let node = |i: usize| {
        serde_json::json!({"id": i, "cpus": [i], "mem_total_bytes": 1u64 << 30,
                           "mem_free_bytes": 1u64 << 30})
    };
    let topology = &mut header["topology"];
    topology["nodes"] = (0..n).map(node).collect();
    topology["distances"] = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| if i == j { 10 } else { 20 })
                .collect::<Vec<u32>>()
        })
        .collect();
    topology["llcs"] = serde_json::json!([]);
    topology["interconnect"] = serde_json::Value::Null;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let mut out = serde_json::to_string(&header).unwrap();
    for l in lines {
        out.push('\n');
        out.push_str(l);
    }
    std::fs::write(&path, out).unwrap();
    let started = Instant::now();
    rondpoint(&["replay", path.to_str().unwrap()])
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("1000 nodes").and(predicate::str::contains("64")));
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A copy of the 2-socket EPYC fixture (eight nodes) to break.
fn fixture_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = workspace().join("fixtures/sysfs/epyc-nps4-2s/devices");
    let status = Command::new("cp")
        .arg("-r")
        .arg(&from)
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

#[test]
fn kernel_files_swapped_for_fifos_or_devices_are_refused_at_once() {
    let fifo_tree = fixture_copy();
    let distance = fifo_tree.path().join("devices/system/node/node0/distance");
    std::fs::remove_file(&distance).unwrap();
    mkfifo(&distance);
    let zero_tree = fixture_copy();
    let cpulist = zero_tree.path().join("devices/system/node/node1/cpulist");
    std::fs::remove_file(&cpulist).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &cpulist).unwrap();
    for (tree, what) in [(&fifo_tree, "FIFO"), (&zero_tree, "character device")] {
        let root = tree.path().to_str().unwrap();
        for args in [
            vec!["topo", "--sysfs-root", root],
            vec!["list", "capabilities", "--sysfs-root", root],
            vec!["run", "--sysfs-root", root, "--", "true"],
            vec!["calibrate", "--sysfs-root", root],
        ] {
            refused_at_once(&args, what);
        }
    }
}

#[test]
fn a_standard_error_that_cannot_be_written_stops_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let with_full_stderr = |args: &[&str]| {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
            .current_dir(workspace())
            .args(args)
            .stderr(full)
            .status()
            .unwrap()
            .code()
    };
    // The program starts, and its status is rondpoint's.
    assert_eq!(
        with_full_stderr(&["run", "--", "touch", marker.to_str().unwrap()]),
        Some(0)
    );
    assert!(marker.exists());
    assert_eq!(
        with_full_stderr(&["run", "--", "sh", "-c", "exit 3"]),
        Some(3)
    );
    // A program that cannot be started: 127 when it is not found, 126 when it cannot be
    // executed, as a shell says.
    assert_eq!(
        with_full_stderr(&["run", "--", "/no/such/program"]),
        Some(127)
    );
    assert_eq!(with_full_stderr(&["run", "--", "/etc"]), Some(126));
    // A refusal keeps its status though its message is lost.
    assert_eq!(
        with_full_stderr(&["sim", "-m", "nonexist", "-w", "mg"]),
        Some(2)
    );
}

#[test]
fn control_characters_from_inputs_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let preset = workspace().join("crates/sim/presets/machines/opteron-8385.toml");
    let text = std::fs::read_to_string(preset).unwrap();
    let evil = text.replacen(
        "name = \"opteron-8385\"",
        "name = \"opteron\\u001b]0;pwned\\u0007\\u001b[2J\"",
        1,
    );
    assert_ne!(evil, text, "the preset names itself");
    let file = dir.path().join("evil.toml");
    std::fs::write(&file, evil).unwrap();
    let out = rondpoint(&[
        "sim",
        "-m",
        file.to_str().unwrap(),
        "-w",
        "mg",
        "-p",
        "first-touch",
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(progress.contains("opteron]0;pwned[2J"), "{progress}");
    for stream in [&out.stdout, &out.stderr] {
        let text = String::from_utf8_lossy(stream);
        assert!(!stream.contains(&0x1b) && !stream.contains(&0x07), "{text}");
    }
}

/// `rondpoint record` of a short simulation to `out`.
fn record_to(out: &str) -> Vec<&str> {
    let args = [
        "record",
        "-m",
        "opteron-8385",
        "-w",
        "mg",
        "-p",
        "first-touch",
        "-o",
    ];
    let mut v = args.to_vec();
    v.push(out);
    v
}

#[test]
fn outputs_never_replace_a_file_rondpoint_did_not_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let passwd = dir.path().join("passwd");
    let text = "root:x:0:0:root:/root:/bin/bash\n";
    std::fs::write(&passwd, text).unwrap();
    let p = passwd.to_str().unwrap();
    let out = daemon_with_state_file(&passwd);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a rondpoint state file"), "{err}");
    for args in [
        record_to(p),
        vec!["calibrate", "-m", "r905-asymmetric", "-o", p],
        vec![
            "run",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--record",
            p,
            "--",
            "true",
        ],
    ] {
        rondpoint(&args)
            .timeout(Duration::from_secs(60))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--force to replace it"));
    }
    assert_eq!(std::fs::read_to_string(&passwd).unwrap(), text);
    // A recording rondpoint wrote is replaced by the next; with --force, any regular file,
    // keeping its mode.
    let rec = dir.path().join("rec.jsonl");
    let r = rec.to_str().unwrap();
    let record = |out: &str, force: bool| {
        let mut args = record_to(out);
        args.extend(["--epoch-ms", "3600000"]);
        if force {
            args.push("--force");
        }
        rondpoint(&args).assert().success();
    };
    record(r, false);
    record(r, false);
    std::fs::set_permissions(&passwd, std::fs::Permissions::from_mode(0o640)).unwrap();
    record(p, true);
    let replaced = std::fs::read_to_string(&passwd).unwrap();
    assert!(replaced.starts_with("{\"kind\":\"header\""));
    let mode = std::fs::metadata(&passwd).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

#[test]
fn work_past_its_budget_is_refused_before_it_starts() {
    for (args, says) in [
        (
            vec![
                "sim",
                "-m",
                "xeon-2s",
                "-w",
                "facerec",
                "--seeds",
                "18446744073709551615",
            ],
            "18446744073709551615 is not in 1..=10000",
        ),
        (
            vec![
                "sim",
                "-m",
                "xeon-2s",
                "-w",
                "mg",
                "--epoch-ms",
                "18446744073710",
            ],
            "is not in 1..=3600000",
        ),
        (
            vec!["daemon", "--pid", "1", "--epoch-ms", "18446744073709551615"],
            "is not in 1..=3600000",
        ),
        (
            vec!["run", "--epoch-ms", "0", "--", "true"],
            "0 is not in 1..=3600000",
        ),
        (
            vec![
                "sim",
                "-m",
                "xeon-2s",
                "-w",
                "mg,cg,ft,sp,bt",
                "-p",
                "all",
                "--seeds",
                "10000",
            ],
            "350000 runs (10000 seeds x 7 policies x 5 workloads)",
        ),
    ] {
        let started = Instant::now();
        rondpoint(&args)
            .timeout(Duration::from_secs(10))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
        assert!(started.elapsed() < Duration::from_secs(2), "{args:?}");
    }
}

#[test]
fn a_signal_during_record_keeps_what_was_recorded_and_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rec.jsonl");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
        .current_dir(workspace())
        .args([
            "record",
            "-m",
            "opteron-8385",
            "-w",
            "facerec-long",
            "-p",
            "carrefour",
        ])
        .args(["--epoch-ms", "100", "-o", out.to_str().unwrap()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Once epochs are being written (the handlers are installed before the first).
    let started = Instant::now();
    let recording = || {
        std::fs::read_dir(dir.path()).unwrap().any(|e| {
            let e = e.unwrap();
            e.file_name().to_string_lossy().starts_with(".rondpoint-")
                && e.metadata().unwrap().len() > 1 << 20
        })
    };
    while !recording() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(recording(), "no epoch written in 30 s");
    assert!(
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("{\"kind\":\"header\""));
    assert!(
        text.lines().count() > 1,
        "epochs before the signal are kept"
    );
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["rec.jsonl"]);
}

#[test]
fn no_file_rondpoint_reads_is_echoed_in_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("shadow");
    std::fs::write(&secret, "root:$6$s3cr3t-hash:19000:0:99999:7:::\n").unwrap();
    let curve = format!("oaas.curve={}", secret.display());
    let typed = dir.path().join("typed.toml");
    std::fs::write(&typed, "[carrefour]\nlar_threshold = \"s3cr3t-hash\"\n").unwrap();
    let tree = fixture_copy();
    let cpulist = tree.path().join("devices/system/node/node1/cpulist");
    std::fs::remove_file(&cpulist).unwrap();
    std::os::unix::fs::symlink(&secret, &cpulist).unwrap();
    for args in [
        vec!["sim", "-m", "r905-asymmetric", "-w", "mg", "--set", &curve],
        vec![
            "sim",
            "-m",
            "r905-asymmetric",
            "-w",
            "mg",
            "--config",
            typed.to_str().unwrap(),
        ],
        vec!["topo", "--sysfs-root", tree.path().to_str().unwrap()],
    ] {
        rondpoint(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("s3cr3t").not());
    }
}

#[test]
fn numbers_past_a_configuration_or_a_machine_are_refused_with_the_reason() {
    for (args, says) in [
        (
            vec![
                "sim",
                "-m",
                "xeon-2s",
                "-w",
                "mg",
                "--set",
                "carrefour.seed=18446744073709551615",
            ],
            "past the largest whole number a configuration holds",
        ),
        (
            vec!["calibrate", "--array-mib", "17592186044416"],
            "is not in 1..=1024",
        ),
        (
            vec!["calibrate", "--array-mib", "100000"],
            "is not in 1..=1024",
        ),
    ] {
        rondpoint(&args)
            .timeout(Duration::from_secs(10))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
}
