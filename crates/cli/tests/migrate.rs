//! End-to-end tests of `rondpoint migrate` on this machine's kernel (moves between real nodes
//! are the testbed's benchmark; here: queries, no-op moves and refusals).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout};
use predicates::prelude::*;
use serde_json::Value;

#[test]
fn moving_to_the_node_the_pages_are_on_moves_nothing_and_says_so() {
    let mut victim = std::process::Command::new("sleep")
        .arg("10")
        .spawn()
        .unwrap();
    let pid = victim.id().to_string();
    let j: Value =
        serde_json::from_str(&stdout(&["migrate", "--pid", &pid, "--to", "0", "--json"])).unwrap();
    assert_eq!(j["pages_moved"], 0);
    assert!(j["pages_already_there"].as_u64().unwrap() > 0, "{j}");
    assert_eq!(j["failures"], serde_json::json!({}));
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[test]
fn unknown_nodes_and_processes_are_refused() {
    rondpoint(&["migrate", "--pid", "1", "--to", "7"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("node 7 does not exist"));
    rondpoint(&["migrate", "--pid", "999999999", "--to", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("process 999999999 is not running"));
    rondpoint(&["migrate", "--pid=0", "--to", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "a process id is a positive number",
        ));
}

#[test]
fn a_move_that_moves_nothing_fails() {
    // The fixture says node 2 exists; this machine's kernel has no such node, so no page can
    // go there: the kernel refuses the move, and the exit status says so (not 0, as a move
    // that did nothing).
    let mut victim = std::process::Command::new("sleep")
        .arg("10")
        .spawn()
        .unwrap();
    let pid = victim.id().to_string();
    let here = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
    if here.trim() == "0" {
        rondpoint(&[
            "migrate",
            "--pid",
            &pid,
            "--to",
            "2",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "node 2 is not online here, has no memory, or is outside the process's cpuset",
        ));
    }
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[test]
fn a_zombie_or_a_kernel_thread_is_refused_not_moved() {
    // A child that exited and that this test has not reaped yet is a zombie.
    let mut zombie = std::process::Command::new("true").spawn().unwrap();
    let pid = zombie.id().to_string();
    let dead = |p: &str| {
        std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
    };
    for _ in 0..200 {
        if dead(&pid) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(dead(&pid));
    for args in [
        vec!["migrate", "--pid", &pid, "--to", "0"],
        vec![
            "daemon",
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--pid",
            &pid,
        ],
    ] {
        rondpoint(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("has exited (a zombie"));
    }
    zombie.wait().unwrap();
    if std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd") {
        rondpoint(&["migrate", "--pid", "2", "--to", "0"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("(kthreadd) is a kernel thread"));
    }
}
