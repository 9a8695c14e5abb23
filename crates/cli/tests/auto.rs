//! `auto` against the single policies on the papers' scenarios (docs/auto.md): where one
//! system's problem is the scenario's, `auto` hands it to that system's lane and every
//! application ends within 2% of that policy's run, unless that policy makes an application
//! more than 4% slower than first-touch: `auto` keeps that bound.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{stdout, workspace};
use serde_json::Value;
use std::collections::BTreeMap;

/// Each application's completion (s) under each policy.
fn completions(machine: &str, scenario: &str, policies: &str) -> BTreeMap<String, Vec<f64>> {
    let path = workspace().join(scenario);
    let out = stdout(&[
        "sim",
        "-q",
        "-m",
        machine,
        "-w",
        path.to_str().unwrap(),
        "-p",
        policies,
        "--json",
    ]);
    let json: Value = serde_json::from_str(&out).unwrap();
    json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let apps = r["apps"].as_array().unwrap();
            let times = apps.iter().map(|a| a["completion_s"].as_f64().unwrap());
            (r["policy"].as_str().unwrap().to_string(), times.collect())
        })
        .collect()
}

/// Every application under `auto` within `band` of its time under `best`, and the notes name
/// the lane that acts.
fn auto_follows(machine: &str, scenario: &str, best: &str, band: f64) {
    let t = completions(machine, scenario, &format!("{best},auto"));
    for (i, (a, b)) in t["auto"].iter().zip(&t[best]).enumerate() {
        assert!(
            a / b - 1.0 <= band,
            "{scenario}: application {i} takes {a:.2} s under auto, {b:.2} s under {best}"
        );
    }
}

#[test]
fn on_an_asymmetric_machine_auto_places_applications_as_oaas_does() {
    // PG-1: canneal starts where the OS put it, on a slow node, and OAAS moves it with its
    // pages after the first epoch; `oaas` alone starts from its random draw, which put it on
    // a fast node before it touched memory: about 2.5% of canneal's time.
    let pg1 = "examples/scenarios/oaas/pg-1.toml";
    auto_follows("r905-asymmetric", pg1, "oaas", 0.03);
    assert_notes_say(
        "r905-asymmetric",
        pg1,
        "placement lane: oaas (decided 2 move-application",
    );
    // PG-3: `oaas` gives streamcluster ferret's fast node and ferret ends 9.5% slower than
    // under first-touch; `auto` keeps the do-no-harm bound.
    let pg3 = "examples/scenarios/oaas/pg-3.toml";
    auto_follows("r905-asymmetric", pg3, "first-touch", 0.04);
}

#[test]
fn with_single_threaded_processes_sharing_caches_auto_maps_them_as_nmass_does() {
    for k in [1, 3] {
        let scenario = format!("examples/scenarios/nmass/wl{k}.toml");
        auto_follows("nehalem-e5520-2s", &scenario, "n-mass", 0.02);
        assert_trial("nehalem-e5520-2s", &scenario, "kept");
    }
}

#[test]
fn on_the_nmass_workloads_no_program_is_more_than_4_percent_slower_than_first_touch() {
    // The placement trial's loss bound, over whole runs in which programs restart and the mix
    // changes (WL9: kept at the first trial, undone at the second). WL10 is left out: on its
    // full machine the simulator cannot exchange threads, and the trial has no verdict.
    for k in [1, 2, 3, 4, 5, 6, 7, 8, 9, 11] {
        let scenario = format!("examples/scenarios/nmass/wl{k}.toml");
        auto_follows("nehalem-e5520-2s", &scenario, "first-touch", 0.04);
    }
}

#[test]
fn where_nmass_placement_makes_programs_slower_auto_undoes_it() {
    // WL2, WL5 and WL7: N-MASS is slower than the OS's placement on average, one program by
    // 8% to 16%; `auto` measures it, undoes it, and follows the OS's placement.
    for k in [2, 5, 7] {
        let scenario = format!("examples/scenarios/nmass/wl{k}.toml");
        auto_follows("nehalem-e5520-2s", &scenario, "first-touch", 0.02);
        assert_trial("nehalem-e5520-2s", &scenario, "undone");
    }
}

/// The notes say the placement trial ended with `verdict`.
fn assert_trial(machine: &str, scenario: &str, verdict: &str) {
    assert_notes_say(
        machine,
        scenario,
        &format!("placement trial: {verdict}, at trial "),
    );
}

/// The notes of `auto`'s run say `says`.
fn assert_notes_say(machine: &str, scenario: &str, says: &str) {
    let path = workspace().join(scenario);
    let out = stdout(&[
        "sim",
        "-m",
        machine,
        "-w",
        path.to_str().unwrap(),
        "-p",
        "auto",
    ]);
    assert!(out.contains(says), "{scenario}: {says}\n{out}");
}

#[test]
fn where_usage_aware_overflow_slows_programs_auto_measures_it_and_stops_it() {
    // choe21-mix1: usage-aware's placement makes mg 7% slower than the kernel's: undone.
    let mix1 = "examples/scenarios/choe21-mix1-mg.toml";
    auto_follows("xeon-6242-4s", mix1, "first-touch", 0.02);
    assert_notes_say("xeon-6242-4s", mix1, "overflow trial 1: undone: ");
    // asym-pressure: usage-aware alone makes soplex and lbm 25% and 31% slower than
    // first-touch; its first step gains nothing, and the lane stops there.
    let asym = "examples/scenarios/mixed/asym-pressure.toml";
    auto_follows("r905-asymmetric", asym, "first-touch", 0.04);
    let says = "overflow trial 1: kept: 512 MiB of overflow placed, then no more";
    assert_notes_say("r905-asymmetric", asym, says);
}

#[test]
fn on_choe21_mix2_auto_keeps_the_overflow_placement_that_harms_no_program() {
    // Usage-aware's placement slows fotonik3d's rate 7% (undone); the second trial avoids its
    // node, and the mean beats first-touch's with no program more than 4% slower.
    let mix2 = "examples/scenarios/choe21-mix2-liblinear.toml";
    let t = completions("xeon-6242-4s", mix2, "first-touch,auto");
    let ratios: Vec<f64> = t["auto"]
        .iter()
        .zip(&t["first-touch"])
        .map(|(a, f)| a / f)
        .collect();
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    assert!(mean < 0.99, "mean {mean:.3} of {ratios:?}");
    assert!(ratios.iter().all(|r| *r <= 1.04), "{ratios:?}");
    let says = "overflow trial 2, avoiding node(s) 2: kept";
    assert_notes_say("xeon-6242-4s", mix2, says);
}

#[test]
fn on_traffic_hot_spots_auto_places_pages_as_carrefour_does() {
    auto_follows(
        "opteron-8385",
        "examples/scenarios/dashti13-pca-streamcluster.toml",
        "carrefour",
        0.02,
    );
}

#[test]
fn the_notes_say_which_lane_acts_and_why_the_others_do_not() {
    let path = workspace().join("examples/scenarios/oaas/pg-1.toml");
    let out = stdout(&[
        "sim",
        "-m",
        "r905-asymmetric",
        "-w",
        path.to_str().unwrap(),
        "-p",
        "auto",
    ]);
    for says in [
        "placement lane: oaas",
        "overflow lane: usage-aware",
        "pages lane: carrefour",
    ] {
        assert!(out.contains(says), "{says}:\n{out}");
    }
    let path = workspace().join("examples/scenarios/choe21-mix1-mg.toml");
    let out = stdout(&[
        "sim",
        "-m",
        "xeon-6242-4s",
        "-w",
        path.to_str().unwrap(),
        "-p",
        "auto",
    ]);
    assert!(
        out.contains("placement lane: none acts: neither OAAS nor N-MASS applies"),
        "{out}"
    );
}
