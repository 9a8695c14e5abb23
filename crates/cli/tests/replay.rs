//! Golden replays: recordings checked in under fixtures/recordings/ (one of the simulator, one
//! of a live run on the emulated testbed), replayed and compared with snapshots, so that a
//! change to the recording format or to a policy's decisions shows up as a diff.

#![allow(clippy::unwrap_used)]

use crate::common::stdout;

/// The replay table of `policy` over the recording `name`.
fn replayed(name: &str, policy: &str) -> String {
    stdout(&[
        "replay",
        &format!("fixtures/recordings/{name}.jsonl"),
        "--policy",
        policy,
    ])
}

#[test]
fn the_recorded_simulation_replays_to_its_snapshot() {
    let name = "sim-opteron-8385-facerec-carrefour";
    for policy in ["carrefour", "autonuma"] {
        insta::assert_snapshot!(format!("{name}-{policy}"), replayed(name, policy));
    }
}

#[test]
fn the_recorded_live_run_replays_to_its_snapshot() {
    // Carrefour managing `rondpoint-mgen partitioned --bound` on the testbed's Linux 6.12, every
    // sample recorded: replayed, it decides as it did live in every epoch.
    let name = "live-testbed-6.12-carrefour-own-partitioned";
    let out = replayed(name, "carrefour");
    assert!(
        out.contains("21 of 21 epochs decided as in the recorded run"),
        "{out}"
    );
    insta::assert_snapshot!(format!("{name}-carrefour"), out);
}
