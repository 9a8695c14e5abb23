//! End-to-end tests of `rondpoint run` on this machine's real kernel. On a one-node machine the
//! program runs unchanged; with a fixture topology of four nodes (--sysfs-root) the live
//! backend runs for real against a kernel that has one node, which exercises sampling,
//! reporting and failure handling. Known-answer tests on a real 4-node kernel are the QEMU
//! testbed's job.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::rondpoint;
use predicates::prelude::*;
use serde_json::Value;

/// A shell command that touches about 30 MB and runs a second or so.
const TOUCH: &str = "x=$(head -c 30000000 /dev/zero | tr '\\0' a); sleep 1; echo ${#x}";

#[test]
fn one_node_machine_runs_the_program_unchanged_with_its_exit_status() {
    rondpoint(&[
        "run",
        "--sysfs-root",
        "fixtures/sysfs/vm-1node",
        "--",
        "sh",
        "-c",
        "echo out; exit 7",
    ])
    .assert()
    .code(7)
    .stdout("out\n")
    .stderr(predicate::str::contains("single NUMA node"));
}

/// On one node nothing is managed, so nothing refuses a policy this machine cannot run: the
/// program still runs, and the note says what the policy would lack here, with the message
/// of the refusal on a machine of several nodes.
#[test]
fn one_node_machine_says_what_the_policy_would_lack_here() {
    let caps: Value = serde_json::from_str(&crate::common::stdout(&[
        "list",
        "capabilities",
        "--json",
        "--sysfs-root",
        "fixtures/sysfs/vm-1node",
    ]))
    .unwrap();
    let counted = caps["support"]["thread-counters"]["support"] == "full";
    let me = std::process::id().to_string();
    for policy in ["n-mass", "oaas"] {
        let run = ["run", "-p", policy, "--", "sh", "-c", "exit 5"];
        let daemon = ["daemon", "-p", policy, "--pid", &me];
        for (args, code) in [(&run[..], 5), (&daemon[..], 0)] {
            let mut args = args.to_vec();
            args.splice(1..1, ["--sysfs-root", "fixtures/sysfs/vm-1node"]);
            let lacks = predicate::str::contains(format!(
                "rondpoint: even with more nodes, {policy} cannot run on this machine: it needs \
                 per-thread instructions"
            ))
            .and(predicate::str::contains("this machine: thread-counters: "));
            let ran = rondpoint(&args)
                .assert()
                .code(code)
                .stderr(predicate::str::contains("single NUMA node"));
            // Where there is a PMU the policies would run: nothing is lacking.
            if counted {
                ran.stderr(lacks.not());
            } else {
                ran.stderr(lacks);
            }
        }
    }
    // A policy whose needs this machine meets (moving pages) is not said to lack anything.
    rondpoint(&[
        "run",
        "--sysfs-root",
        "fixtures/sysfs/vm-1node",
        "-p",
        "usage-aware",
        "--",
        "true",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("even with more nodes").not());
}

#[test]
fn managed_run_reports_samples_and_placement_as_json() {
    let out = rondpoint(&[
        "run",
        "--json",
        "--epoch-ms",
        "300",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--",
        "sh",
        "-c",
        TOUCH,
    ])
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let text = String::from_utf8(out).unwrap();
    // The program's own output comes first, then the JSON report.
    let (program, json) = text.split_once('\n').unwrap();
    assert_eq!(program, "30000000");
    let r: Value = serde_json::from_str(json).unwrap();
    assert_eq!(r["exit"], "exit code 0");
    assert!(r["epochs"].as_u64().unwrap() >= 2);
    assert!(r["rondpoint_cpu_s"].as_f64().unwrap() > 0.0);
    let pages: u64 = r["stats"]["pages_last"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(pages > 1000, "{pages} pages seen");
    // Sampling needs perf_event_open rights; as root (CI) it works, elsewhere it is reported.
    if r["signals"]["sampler_error"].is_null() {
        assert!(r["stats"]["samples"].as_u64().unwrap() > 100, "{r}");
        // The rings are drained while the epochs run, not only at their ends.
        assert!(r["stats"]["samples_drained"].as_u64().unwrap() > 0, "{r}");
    } else {
        assert!(r["notes"][0].as_str().unwrap().contains("perf_event_open"));
    }
}

/// `static` decides at the start to move the program to fast node 1, before it exists: the
/// move is carried out once an epoch sees it running, and the report says so. (Whether the
/// pin to the fixture's CPUs succeeds depends on the machine the test runs on.)
#[test]
fn a_start_decision_that_moves_the_program_waits_for_it_to_run() {
    let out = rondpoint(&[
        "run",
        "--json",
        "--epoch-ms",
        "100",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "-p",
        "static",
        "--set",
        "static.mapping=F",
        "--",
        "sleep",
        "0.5",
    ])
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let r: Value = serde_json::from_slice(&out).unwrap();
    let moves = &r["actions"]["by_technique"]["move-application"];
    assert_eq!(moves["actions"], 1, "{r}");
    assert_eq!(moves["skipped"], 0, "{r}");
    let deferred = r["actions"]["deferred"][0].as_str().unwrap();
    assert!(
        deferred.starts_with("1 start decision (move-application) carried out at epoch "),
        "{deferred}"
    );
}

#[test]
fn dry_run_still_runs_the_program() {
    rondpoint(&[
        "run",
        "--dry-run",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--",
        "sh",
        "-c",
        "exit 3",
    ])
    .assert()
    .code(3)
    .stderr(predicate::str::contains("dry run: nothing was changed"));
}

#[test]
fn missing_program_and_bad_configuration_are_explained() {
    rondpoint(&[
        "run",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--",
        "/no/such/program",
    ])
    .assert()
    .code(127)
    .stderr(predicate::str::contains("cannot start /no/such/program"))
    .stderr(predicate::str::contains("ENOENT"));
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "[carrefour]\nmaptu = 5\n").unwrap();
    // The program must not start when the configuration is bad.
    let marker = dir.path().join("started");
    rondpoint(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--",
        "touch",
        marker.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("bad.toml"));
    assert!(
        !marker.exists(),
        "the program ran despite a bad configuration"
    );
    rondpoint(&["run"]).assert().code(2);
}

/// N-MASS with profiled MPKIs and no profile for the program: refused by name before the
/// program starts (nothing would count its misses; it would be mapped on MPKI 0).
#[test]
fn n_mass_on_profiles_refuses_a_program_without_one_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--policy",
            "n-mass",
            "--set",
            "n-mass.inputs.mpki=profile",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "touch", marker.to_str().unwrap()]);
        rondpoint(&args).assert()
    };
    run(&[]).code(2).stderr(predicate::str::contains(
        "program 'touch' has no profiled MPKI: give inputs.profile.touch.mpki",
    ));
    assert!(!marker.exists(), "the program ran although refused");
    run(&["--set", "n-mass.inputs.profile.touch.mpki=2"]).success();
    assert!(marker.exists());
}

#[test]
fn sigterm_is_passed_on_to_the_program_and_the_report_still_printed() {
    let bin = assert_cmd::cargo::cargo_bin("rondpoint");
    let child = std::process::Command::new(bin)
        .current_dir(crate::common::workspace())
        .args([
            "run",
            "--epoch-ms",
            "100",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--",
            "sleep",
            "30",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("program killed by signal 15"), "{stderr}");
}

#[test]
fn a_live_run_is_recorded_and_replays_offline() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.jsonl");
    let f = file.to_str().unwrap();
    rondpoint(&[
        "run",
        "--epoch-ms",
        "300",
        "--record",
        f,
        "--record-max-samples",
        "50",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--",
        "sh",
        "-c",
        TOUCH,
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("recorded"))
    .stderr(predicate::str::contains(f));
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["kind"], "header");
    let source = lines[0]["source"].as_str().unwrap();
    assert!(source.starts_with("live run 'sh -c"), "{source}");
    assert!(source.contains("policy=auto kernel="), "{source}");
    // The header lists the launched program (and the children it had by the first epoch's
    // end), and the topology is the fixture's four nodes.
    assert_eq!(
        lines[0]["processes"][0]["comm"], "sh",
        "{}",
        lines[0]["processes"]
    );
    assert_eq!(lines[0]["topology"]["nodes"].as_array().unwrap().len(), 4);
    let epochs = &lines[1..];
    assert!(epochs.len() >= 2, "{} epochs", epochs.len());
    for e in epochs {
        assert_eq!(e["kind"], "epoch");
        assert!(e["observation"]["samples"].as_array().unwrap().len() <= 50);
    }
    let j: Value = serde_json::from_str(&crate::common::stdout(&[
        "replay",
        f,
        "-p",
        "carrefour",
        "--json",
    ]))
    .unwrap();
    assert_eq!(j["epochs"].as_array().unwrap().len(), epochs.len());
}

#[test]
fn a_recording_that_cannot_be_written_stops_the_run_before_the_program_starts() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    rondpoint(&[
        "run",
        "--record",
        "/no/such/dir/live.jsonl",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
        "--",
        "touch",
        marker.to_str().unwrap(),
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("/no/such/dir/live.jsonl"));
    assert!(!marker.exists(), "the program ran");
    rondpoint(&[
        "run",
        "--record",
        "x.jsonl",
        "--record-max-samples",
        "lots",
        "--",
        "true",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "neither a number of samples nor 'all'",
    ));
    rondpoint(&["run", "--record-max-samples", "5", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--record <FILE>"));
}

#[test]
fn a_recording_that_fails_midway_ends_without_ending_the_run() {
    // A file-size limit of 1 KiB (SIGXFSZ ignored, so that the write fails with EFBIG instead
    // of killing rondpoint): the recording's first write fails, the program runs to its end,
    // its exit status is rondpoint's, and the report says why the recording was not saved. (A
    // device such as /dev/full is refused before anything runs: tests/safety.rs.)
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("run.jsonl");
    let bin = assert_cmd::cargo::cargo_bin("rondpoint");
    let script = format!(
        "ulimit -f 1; trap '' XFSZ; exec {} run --json --epoch-ms 300 --record {} \\
         --sysfs-root fixtures/sysfs/r905-asymmetric -- sh -c 'sleep 1; exit 4'",
        bin.display(),
        recording.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(crate::common::workspace())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("recorded"));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["epochs"].as_u64().unwrap() >= 2, "{r}");
    let note = r["notes"][0].as_str().unwrap();
    assert!(
        note.contains("was not saved (it failed after 0 epochs)")
            && note.contains("File too large"),
        "{note}"
    );
    // Neither a half-written recording nor its temporary file is left.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn policies_that_need_hardware_counters_are_refused_where_there_are_none() {
    // This project's machines are VMs without a PMU; where a machine has one, the policies
    // run instead, and this test has nothing to check.
    let caps: Value = serde_json::from_str(&crate::common::stdout(&[
        "list",
        "capabilities",
        "--json",
        "--sysfs-root",
        "fixtures/sysfs/r905-asymmetric",
    ]))
    .unwrap();
    let counters = &caps["support"]["thread-counters"];
    if counters["support"] == "full" {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    for policy in ["n-mass", "oaas"] {
        rondpoint(&[
            "run",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--policy",
            policy,
            "--",
            "touch",
            started.to_str().unwrap(),
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{policy} cannot run on this machine: it needs per-thread instructions"
        )))
        .stderr(predicate::str::contains("thread-counters: "));
        assert!(!started.exists(), "{policy}: nothing may start");
    }
}

#[test]
fn numactl_s_flags_set_the_program_s_policy_and_cpus() {
    // On any machine: node 0 and CPU 0 exist, and the program reports what it runs under.
    let out = crate::common::stdout(&[
        "run",
        "--policy",
        "first-touch",
        "--membind",
        "0",
        "--physcpubind",
        "0",
        "--",
        "sh",
        "-c",
        "grep Cpus_allowed_list /proc/self/status; grep -c ' bind:0 ' /proc/self/numa_maps",
    ]);
    let mut lines = out.lines();
    assert_eq!(
        lines
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["Cpus_allowed_list:", "0"]),
        "{out}"
    );
    let bound: u32 = lines.next().unwrap_or("0").trim().parse().unwrap_or(0);
    assert!(bound > 0, "no mapping under bind:0: {out}");
    // numactl's list syntax, checked against the machine before anything starts.
    rondpoint(&["run", "--membind", "4095", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--membind 4095: node 4095 does not exist here",
        ));
    rondpoint(&["run", "--membind", "0", "--interleave", "0", "--", "true"])
        .assert()
        .code(2);
}

#[test]
fn the_example_service_configuration_is_accepted() {
    // examples/service/config.toml is what the systemd unit reads: every key must be one the
    // policies take (an unknown key is refused with status 2).
    rondpoint(&[
        "run",
        "--dry-run",
        "--config",
        "examples/service/config.toml",
        "--",
        "true",
    ])
    .assert()
    .success();
}

/// A writable cgroup v2 hierarchy's mount point, if this machine has one (as root).
fn cgroup2_mount() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == "cgroup2")
        .map(|f| std::path::PathBuf::from(f[1]))
}

#[test]
fn a_program_starts_in_the_cgroup_given() {
    let Some(mount) = cgroup2_mount() else {
        eprintln!("skipped: no cgroup v2 hierarchy mounted here");
        return;
    };
    let name = format!("rondpoint-test-{}", std::process::id());
    let dir = mount.join(&name);
    if let Err(e) = std::fs::create_dir(&dir) {
        eprintln!("skipped: cannot make a cgroup in {}: {e}", mount.display());
        return;
    }
    // Managed (a fixture of four nodes) and unmanaged (one node): the program is in the
    // cgroup from its first instruction.
    for fixture in ["r905-asymmetric", "vm-1node"] {
        let out = rondpoint(&[
            "run",
            "--sysfs-root",
            &format!("fixtures/sysfs/{fixture}"),
            "--cgroup",
            dir.to_str().unwrap(),
            "--",
            "cat",
            "/proc/self/cgroup",
        ])
        .assert()
        .success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert!(text.contains(&format!("0::/{name}\n")), "{fixture}: {text}");
    }
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn a_cgroup_that_cannot_take_the_program_is_refused_before_it_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let run = |expect: &str| {
        rondpoint(&[
            "run",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--cgroup",
            dir.to_str().unwrap(),
            "--",
            "touch",
            dir.join("ran").to_str().unwrap(),
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(expect));
        assert!(!dir.join("ran").exists(), "{expect}");
    };
    run("is not a cgroup v2 directory (no cgroup.procs)");
    std::fs::write(dir.join("cgroup.procs"), "").unwrap();
    run("is a cgroup v1 directory");
    std::fs::write(dir.join("cgroup.controllers"), "cpu memory\n").unwrap();
    std::fs::write(dir.join("cgroup.type"), "threaded\n").unwrap();
    run("is a threaded cgroup: it takes threads, not processes");
    std::fs::write(dir.join("cgroup.type"), "domain\n").unwrap();
    std::fs::write(dir.join("cgroup.subtree_control"), "memory\n").unwrap();
    run("distributes controllers to its children (cgroup.subtree_control: memory)");
}
