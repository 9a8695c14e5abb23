//! End-to-end tests that rondpoint cannot be made to harm the host through its file
//! arguments, its outputs or signals (docs/live.md, issue "never harm the host").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{rondpoint, workspace};
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
        let started = Instant::now();
        rondpoint(&args)
            .timeout(Duration::from_secs(10))
            .assert()
            .code(1)
            .stderr(predicate::str::contains(format!(
                "is a {what}, not a regular file"
            )));
        assert!(started.elapsed() < Duration::from_secs(2), "{args:?}");
    }
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
    .code(1)
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
    .code(1)
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
    assert_eq!(out.status.code(), Some(1));
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
        assert_eq!(out.status.code(), Some(1));
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
    assert_eq!(out.status.code(), Some(1));
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
