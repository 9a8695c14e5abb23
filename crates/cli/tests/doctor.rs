//! End-to-end tests of `rondpoint doctor`: the binary on the PMU fixture trees of
//! crates/linux/tests/fixtures/pmu (two EPYCs, two Xeons, a Neoverse, a VM without a PMU), its
//! output compared with golden files, and on this machine's own /sys.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout};
use predicates::prelude::*;
use serde_json::Value;

const PMU_FIXTURES: &str = "crates/linux/tests/fixtures/pmu";

/// Each machine with the procfs case it is read with.
const MACHINES: [(&str, &str); 6] = [
    ("zen4-genoa", "unprivileged"),
    ("zen3-milan", "perfmon"),
    ("spr-xeon-2s", "perfmon"),
    ("icx-xeon-2s", "unprivileged"),
    ("neoverse-n1", "debian-restricted"),
    ("vm-no-pmu", "unprivileged"),
];

fn args(machine: &str, proc: &str, json: bool) -> Vec<String> {
    let mut a = vec![
        "doctor".to_string(),
        "--sysfs-root".into(),
        format!("{PMU_FIXTURES}/{machine}"),
        "--proc-root".into(),
        format!("{PMU_FIXTURES}/proc/{proc}"),
    ];
    if json {
        a.push("--json".into());
    }
    a
}

fn run(machine: &str, proc: &str, json: bool) -> String {
    let a = args(machine, proc, json);
    stdout(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn text_output_matches_golden_files() {
    for (machine, proc) in MACHINES {
        insta::assert_snapshot!(format!("doctor_{machine}"), run(machine, proc, false));
    }
}

#[test]
fn json_output_matches_golden_files() {
    let (machine, proc) = MACHINES[0];
    insta::assert_snapshot!(format!("doctor_json_{machine}"), run(machine, proc, true));
}

fn signal<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["signals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["signal"] == name)
        .unwrap()
}

#[test]
fn detected_pmus_are_never_claimed_as_used() {
    for (machine, proc) in MACHINES {
        let j: Value = serde_json::from_str(&run(machine, proc, true)).unwrap();
        // Links are read from UPI counters (machine/links.rs), with the right to count
        // system-wide: of the fixtures, the Xeons have them, and only the Sapphire Rapids is
        // read with CAP_PERFMON.
        let links = &signal(&j, "link traffic")["status"];
        assert_eq!(links == "used", machine == "spr-xeon-2s", "{machine}");
        // Precise samples are read from IBS op, PEBS where catalogued and SPE
        // (machine/precise.rs in the linux crate), only with the right to sample system-wide
        // (the Neoverse fixture's paranoid level refuses it).
        let precise = &signal(&j, "precise access samples")["status"];
        let expected = match machine {
            "spr-xeon-2s" | "zen3-milan" => "used",
            _ => "missing",
        };
        assert_eq!(precise, expected, "{machine}");
        for p in j["pmus"].as_array().unwrap() {
            let used = p["use"] == "used";
            let kind = p["kind"].as_str().unwrap();
            // The memory controllers, IBS op, SPE and UPI links are read (machine/uncore.rs,
            // precise.rs, links.rs).
            assert!(
                !used
                    || [
                        "core",
                        "intel-imc",
                        "amd-umc",
                        "ibs-op",
                        "spe",
                        "intel-upi",
                        "amd-df"
                    ]
                    .contains(&kind)
                    || p["name"] == "software",
                "{machine}: {p}"
            );
        }
    }
}

#[test]
fn a_vm_without_a_pmu_says_so_and_refuses_the_counter_policies() {
    let j: Value = serde_json::from_str(&run("vm-no-pmu", "unprivileged", true)).unwrap();
    assert_eq!(j["hardware_pmu"], false);
    assert_eq!(signal(&j, "thread counters")["status"], "missing");
    let policies = j["policies"].as_array().unwrap();
    let n_mass = policies.iter().find(|p| p["name"] == "n-mass").unwrap();
    assert_eq!(n_mass["runs"], false);
}

#[test]
fn the_paranoid_level_and_capabilities_decide_what_opens() {
    let every = |j: &Value, verdict: &str| {
        j["access"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["verdict"] == verdict)
    };
    let j: Value = serde_json::from_str(&run("neoverse-n1", "debian-restricted", true)).unwrap();
    assert_eq!(j["perf_event_paranoid"], 3);
    assert!(every(&j, "refused"));
    let j: Value = serde_json::from_str(&run("spr-xeon-2s", "perfmon", true)).unwrap();
    assert!(every(&j, "allowed"));
    assert_eq!(signal(&j, "precise access samples")["sources"][0], "cpu");
}

/// This build machine is a VM without a virtual PMU: doctor must say so. Should it ever get
/// one, the robust part still holds: every PMU doctor lists is one sysfs lists.
#[test]
fn on_this_machines_sys() {
    let out = stdout(&["doctor", "--json"]);
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["probed"], true);
    let listed: Vec<String> = std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let kernel_only = listed.iter().all(|n| {
        matches!(
            n.as_str(),
            "software" | "tracepoint" | "kprobe" | "uprobe" | "breakpoint" | "msr" | "power"
        )
    });
    for p in j["pmus"].as_array().unwrap() {
        assert!(listed.iter().any(|n| p["name"] == n.as_str()), "{p}");
    }
    if kernel_only {
        assert_eq!(j["hardware_pmu"], false);
        rondpoint(&["doctor"])
            .assert()
            .success()
            .stdout(predicate::str::contains("no hardware PMU"));
    }
}

#[test]
fn an_unreadable_tree_is_the_users_error() {
    rondpoint(&[
        "doctor",
        "--sysfs-root",
        "no/such/dir",
        "--proc-root",
        "no/such/dir",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "--sysfs-root no/such/dir: not a directory",
    ));
    let dir = tempfile::tempdir().unwrap();
    let kernel = dir.path().join("sys/kernel");
    std::fs::create_dir_all(&kernel).unwrap();
    std::fs::write(kernel.join("perf_event_paranoid"), "high\n").unwrap();
    rondpoint(&["doctor", "--proc-root", dir.path().to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("perf_event_paranoid"));
}

#[test]
fn the_self_check_without_perf_says_what_to_install() {
    // An empty PATH: no perf. (Its runs against perf are in scripts/perf-equivalence, which
    // installs perf: on page faults here, and on the hardware counters where there is a PMU.)
    let empty = tempfile::tempdir().unwrap();
    rondpoint(&["doctor", "--self-check"])
        .env("PATH", empty.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("perf is not installed"));
}

#[test]
fn the_self_check_workload_waits_for_its_start_then_walks() {
    // It says where it walked, then waits for its standard input to close.
    rondpoint(&["doctor", "--self-check-workload", "4"])
        .write_stdin("g")
        .assert()
        .success()
        .stdout(predicate::str::is_match("^ready\nwalked 0x[0-9a-f]+ 4194304\n$").unwrap());
    // Without the start byte it fails, saying what it waited for.
    rondpoint(&["doctor", "--self-check-workload", "4"])
        .write_stdin("")
        .assert()
        .failure()
        .stderr(predicate::str::contains("waiting for the self-check"));
}
