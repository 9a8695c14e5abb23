//! End-to-end tests of `rondpoint sim`: the table (golden file), the JSON schema, determinism,
//! and every kind of bad input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{rondpoint, stdout};
use predicates::prelude::*;
use serde_json::Value;

#[test]
fn table_matches_golden_file() {
    let out = stdout(&[
        "sim",
        "-q",
        "--machine",
        "opteron-8385",
        "--workload",
        "facerec,mg",
        "--policy",
        "first-touch,interleave",
    ]);
    insta::assert_snapshot!("sim_table_opteron_facerec_mg", out);
    // Every line of the default tables fits 80 columns.
    assert!(
        out.lines()
            .take_while(|l| !l.starts_with("note:"))
            .all(|l| l.chars().count() <= 80),
        "{out}"
    );
}

#[test]
fn wide_table_matches_golden_file() {
    let out = stdout(&[
        "sim",
        "-q",
        "--wide",
        "--machine",
        "opteron-8385",
        "--workload",
        "facerec,mg",
        "--policy",
        "first-touch,interleave",
    ]);
    insta::assert_snapshot!("sim_wide_table_opteron_facerec_mg", out);
}

#[test]
fn json_has_the_documented_fields_and_is_deterministic() {
    let args = [
        "sim",
        "-q",
        "--json",
        "-m",
        "opteron-8385",
        "-w",
        "streamcluster",
        "-p",
        "all",
        "--seed",
        "7",
    ];
    let a = stdout(&args);
    assert_eq!(a, stdout(&args), "same seed, same output");
    let j: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(j["schema_version"], 1);
    let runs = j["runs"].as_array().unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "first-touch",
            "interleave",
            "autonuma",
            "carrefour",
            "auto",
            "oracle",
            "bound"
        ]
    );
    for r in runs {
        for field in [
            "policy",
            "workload",
            "completion_s",
            "speedup_vs_first_touch",
            "avg_latency_cycles",
            "lar",
            "mc_imbalance",
            "ic_imbalance",
            "ipc",
            "pages_migrated",
            "pages_interleaved",
            "pages_replicated",
        ] {
            assert!(!r[field].is_null(), "{field} missing in {r}");
        }
        assert_eq!(r["seed"], 7);
    }
    assert_eq!(runs[0]["speedup_vs_first_touch"], 1.0);
    // [Dashti13 Figure 5]: FaceRec is faster interleaved, and faster still
    // under Carrefour, which replicates its shared data.
    let speedup = |i: usize| runs[i]["speedup_vs_first_touch"].as_f64().unwrap();
    assert!(speedup(1) > 1.2);
    assert!(speedup(3) > speedup(1));
    assert!(runs[3]["pages_replicated"].as_u64().unwrap() > 1000);
    // `all` adds the placement bound, and every run its ratio to it.
    assert_eq!(runs[6]["to_bound"], 1.0);
    for r in runs {
        let to = r["to_bound"].as_f64().unwrap();
        assert!(to > 0.1 && to <= 1.005, "{r}");
    }
}

#[test]
fn progress_goes_to_stderr() {
    rondpoint(&[
        "sim",
        "-m",
        "opteron-8385",
        "-w",
        "facerec",
        "-p",
        "first-touch",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains(
        "[1/1] opteron-8385 / facerec / first-touch",
    ))
    .stderr(predicate::str::contains("simulated s in"));
}

#[test]
fn list_shows_presets_and_policies() {
    let out = stdout(&["sim", "--list"]);
    assert!(out.contains("r905-asymmetric") && out.contains("gups") && out.contains("interleave"));
}

#[test]
fn unknown_names_list_the_valid_ones() {
    rondpoint(&["sim", "-m", "opteron", "-w", "mg"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown machine 'opteron'"))
        .stderr(predicate::str::contains("opteron-8385"));
    rondpoint(&["sim", "-m", "opteron-8385", "-w", "mgg"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown workload 'mgg'"))
        .stderr(predicate::str::contains("streamcluster"));
    rondpoint(&["sim", "-m", "opteron-8385", "-w", "mg", "-p", "carefour"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown policy 'carefour'"))
        .stderr(predicate::str::contains("first-touch"));
}

#[test]
fn malformed_and_impossible_scenarios_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"x\"\ndescription = \"y\"\n[[app]]\nname = \"a\"\nthreads = 4\nmlp = \"lots\"\n",
    )
    .unwrap();
    rondpoint(&["sim", "-m", "opteron-8385", "-w", bad.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.toml"))
        .stderr(predicate::str::contains("line 6"))
        .stderr(predicate::str::contains("panicked").not());
    let big = dir.path().join("big.toml");
    std::fs::write(
        &big,
        r#"name = "big"
description = "too many threads"
[[app]]
name = "a"
threads = 64
instructions = 1e9
cpi_base = 1.0
mlp = 2.0
mpki = 5.0
mrc_ref_bytes = 1e6
[[app.region]]
name = "r"
size_mib = 10
first_touch = "main"
pattern = "shared-uniform"
share = 1.0
"#,
    )
    .unwrap();
    rondpoint(&["sim", "-m", "opteron-8385", "-w", big.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("wants 64 threads"))
        .stderr(predicate::str::contains("16 cores"));
}

#[test]
fn rate_limits_cap_what_a_policy_moves() {
    let args = |limit: &str| {
        let j: Value = serde_json::from_str(&stdout(&[
            "sim",
            "-q",
            "--json",
            "-m",
            "opteron-8385",
            "-w",
            "facerec",
            "-p",
            "carrefour",
            "--max-pages-per-epoch",
            limit,
        ]))
        .unwrap();
        let r = &j["runs"][0];
        (
            r["pages_replicated"].as_u64().unwrap(),
            r["completion_s"].as_f64().unwrap(),
        )
    };
    let (free, t_free) = args("1000000");
    let (capped, t_capped) = args("100");
    assert!(free > 1000);
    assert!(capped < free, "{capped} vs {free}");
    assert!(t_capped > t_free);
}

/// `rondpoint sim` on \[Majo11\]'s WL9: each program's slowdown over its solo run and the
/// average, in the table and in the JSON; `cfs-average` averaged over its six splits.
#[test]
fn multiprogrammed_workloads_report_slowdowns() {
    let wl9 = "examples/scenarios/nmass/wl9.toml";
    let args = [
        "sim",
        "-q",
        "-m",
        "nehalem-e5520-2s",
        "-w",
        wl9,
        "-p",
        "cfs-average,maximum-local,n-mass",
    ];
    let table = stdout(&args);
    assert!(
        table.contains("slowdown of each program over its solo run"),
        "{table}"
    );
    for name in ["mcf", "milc", "soplex", "lbm", "average", "maximum-local"] {
        assert!(table.contains(name), "{name} in {table}");
    }
    let mut json = args.to_vec();
    json.push("--json");
    let j: Value = serde_json::from_str(&stdout(&json)).unwrap();
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let mp = &runs[0]["multiprogram"];
    assert_eq!(mp["placements"], 6);
    assert_eq!(mp["apps"].as_array().unwrap().len(), 4);
    assert!(mp["average_range_pct"].as_array().is_some());
    for r in &runs[1..] {
        assert_eq!(r["multiprogram"]["placements"], 1);
        assert!(r["multiprogram"]["average_pct"].as_f64().is_some());
        assert!(r["multiprogram"]["apps"][0]["range_pct"].is_null());
    }
    // Single-program workloads have no slowdowns to report.
    let j: Value = serde_json::from_str(&stdout(&[
        "sim",
        "-q",
        "--json",
        "-m",
        "nehalem-e5520-2s",
        "-w",
        "soplex",
        "-p",
        "first-touch",
    ]))
    .unwrap();
    assert!(j["runs"][0].get("multiprogram").is_none());
}

#[test]
fn allocation_maps_must_fit_the_workload_and_the_machine() {
    let wl9 = "examples/scenarios/nmass/wl9.toml";
    let sim = |map: &str| {
        rondpoint(&[
            "sim",
            "-q",
            "-m",
            "nehalem-e5520-2s",
            "-w",
            wl9,
            "-p",
            "maximum-local",
            "--allocation-map",
            map,
        ])
        .assert()
    };
    sim("00000")
        .code(2)
        .stderr(predicate::str::contains("5 digits for the 4 applications"));
    sim("0020").code(2).stderr(predicate::str::contains(
        "'2' is not a node of nehalem-e5520-2s",
    ));
    sim("0011").success();
    rondpoint(&[
        "sim",
        "-q",
        "-m",
        "nehalem-e5520-2s",
        "-w",
        "examples/scenarios/nmass/wl11.toml",
        "-p",
        "n-mass",
        "--allocation-map",
        "0000",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("4 digits for the 8 applications"));
}

#[test]
fn seeds_summarise_each_application_with_its_spread() {
    let args = [
        "sim",
        "-q",
        "-m",
        "r905-asymmetric",
        "-w",
        "examples/scenarios/oaas/pg-1.toml",
        "-p",
        "random,oaas",
        "--epoch-ms",
        "300",
        "--seeds",
        "3",
    ];
    let table = stdout(&args);
    assert!(
        table.contains("application") && table.contains("std s"),
        "{table}"
    );
    assert!(
        table.contains("sample standard deviation (n - 1)"),
        "{table}"
    );
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let j: Value = serde_json::from_str(&stdout(&json_args)).unwrap();
    let runs = j["runs"].as_array().unwrap();
    let seeds: Vec<u64> = runs.iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, [1, 2, 3, 1, 2, 3]);
    let summary = j["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 2);
    for s in summary {
        assert_eq!(s["seeds"], serde_json::json!([1, 2, 3]));
        let apps = s["apps"].as_array().unwrap();
        assert_eq!(apps.len(), 4);
        for a in apps {
            for field in ["name", "mean_s", "std_s", "min_s", "max_s"] {
                assert!(!a[field].is_null(), "{field} missing in {a}");
            }
        }
        assert!(!s["completion"]["mean_s"].is_null());
    }
    // The runs' seeds reach random's draws: three seeds, more than one placement of canneal.
    let canneal: Vec<f64> = runs[..3]
        .iter()
        .map(|r| r["apps"][3]["completion_s"].as_f64().unwrap())
        .collect();
    assert!(
        canneal.iter().any(|&t| (t - canneal[0]).abs() > 0.1),
        "{canneal:?}"
    );
    // Without --seeds the JSON has no summary.
    let one: Value = serde_json::from_str(&stdout(
        &args[..args.len() - 2]
            .iter()
            .copied()
            .chain(["--json"])
            .collect::<Vec<_>>(),
    ))
    .unwrap();
    assert!(one.get("summary").is_none());
    rondpoint(&[&args[..args.len() - 1], &["0"]].concat())
        .assert()
        .failure()
        .stderr(predicate::str::contains("0 is not in 1..=10000"));
}

#[test]
fn oaas_policies_say_what_they_cannot_do() {
    let pg1 = "examples/scenarios/oaas/pg-1.toml";
    // No slow node: oaas is a no-op and says so under the table.
    let out = stdout(&["sim", "-q", "-m", "opteron-8385", "-w", pg1, "-p", "oaas"]);
    assert!(
        out.contains("note: pg-1 / oaas: every CPU node of this machine is fast"),
        "{out}"
    );
    // A static mapping by name or by letters; a bad one is refused when read.
    let mapping = |m: &str| {
        let set = format!("static.mapping={m}");
        rondpoint(&[
            "sim",
            "-q",
            "-m",
            "r905-asymmetric",
            "-w",
            pg1,
            "-p",
            "static",
            "--set",
            &set,
        ])
        .assert()
    };
    mapping("M3").success();
    mapping("sffs").success();
    mapping("M9")
        .failure()
        .stderr(predicate::str::contains("neither M0 to M5"));
    // More applications than nodes: refused before the run, with the reason.
    let dir = tempfile::tempdir().unwrap();
    let three = dir.path().join("three.toml");
    let app = |name: &str| {
        format!(
            "[[app]]\nname = \"{name}\"\nthreads = 1\ninstructions = 1e9\ncpi_base = 1.0\n\
             mlp = 1.0\nmpki = 1.0\nmrc_ref_bytes = 1048576\n[[app.region]]\nname = \"r\"\n\
             size_mib = 1\nfirst_touch = \"main\"\npattern = \"shared-uniform\"\nshare = 1.0\n"
        )
    };
    std::fs::write(
        &three,
        format!(
            "name = \"three\"\ndescription = \"three apps\"\n{}{}{}",
            app("a"),
            app("b"),
            app("c")
        ),
    )
    .unwrap();
    rondpoint(&[
        "sim",
        "-q",
        "-m",
        "xeon-2s",
        "-w",
        three.to_str().unwrap(),
        "-p",
        "random",
    ])
    .assert()
    .failure()
    .stderr(predicate::str::contains(
        "random cannot run here: 3 applications for 2 CPU nodes",
    ));
}

#[test]
fn json_records_the_options_and_the_actions_a_rate_limit_skipped() {
    let out = stdout(&[
        "sim",
        "-q",
        "--json",
        "-m",
        "opteron-8385",
        "-w",
        "streamcluster",
        "-p",
        "carrefour",
        "--max-pages-per-epoch",
        "64",
        "--set",
        "carrefour.guard.enabled=false",
    ]);
    let j: Value = serde_json::from_str(&out).unwrap();
    let o = &j["options"];
    assert_eq!(o["epoch_ms"], 1000);
    assert_eq!(o["max_pages_per_epoch"], 64);
    assert!(o["max_mb_per_epoch"].is_null());
    assert_eq!(o["parameters"]["carrefour"]["guard"]["enabled"], false);
    let run = &j["runs"][0];
    assert!(run["actions_skipped"].as_u64().unwrap() > 0, "{run}");
    // Loads: one per controller, two per link; every link direction of machine A's square
    // is on a route in use, and none is over its bandwidth on average.
    assert_eq!(run["mc_load"].as_array().unwrap().len(), 4);
    let links = run["link_load"].as_array().unwrap();
    assert_eq!(links.len(), 8);
    for l in links {
        assert_eq!(l["counted"], true, "{l}");
        let u = l["utilisation"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&u), "{l}");
    }
    let table = stdout(&[
        "sim",
        "-q",
        "-m",
        "opteron-8385",
        "-w",
        "streamcluster",
        "-p",
        "carrefour",
        "--max-pages-per-epoch",
        "64",
    ]);
    assert!(
        table.contains("actions skipped over the per-epoch rate limit"),
        "{table}"
    );
}

/// A binding the user asked for is never overridden: WL1 with every program's memory bound to
/// node 1 (`--allocation-map 1111`), nothing overflowing, ends with all of it on node 1 under
/// every remote-placement policy, as under first-touch (issue 39).
#[test]
fn remote_placement_keeps_a_programs_own_binding() {
    let out = stdout(&[
        "sim",
        "-q",
        "--json",
        "-m",
        "nehalem-e5520-2s",
        "-w",
        "examples/scenarios/nmass/wl1.toml",
        "--allocation-map",
        "1111",
        "-p",
        "first-touch,hybrid,usage-aware,ua-dm",
    ]);
    let j: Value = serde_json::from_str(&out).unwrap();
    for r in j["runs"].as_array().unwrap() {
        for a in r["apps"].as_array().unwrap() {
            let on = |n: usize| a["bytes_by_node"][n].as_u64().unwrap();
            assert!(
                on(1) > 0 && on(0) == 0,
                "{} / {}: {a}",
                r["policy"],
                a["name"]
            );
        }
    }
}

/// OAAS measures the simulated machine's MAPI-to-gap curve at start and names it: on a copy of
/// the R905 whose slow nodes read no slower (no probe hops), the curve is flat and OAAS moves
/// nothing, where the R905's built-in curve (chosen by shape alone) would move pages.
#[test]
fn oaas_measures_the_machine_it_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let preset = std::fs::read_to_string(
        crate::common::workspace().join("crates/sim/presets/machines/r905-asymmetric.toml"),
    )
    .unwrap();
    let flat: String = preset
        .lines()
        .map(|l| match l {
            _ if l.starts_with("name = ") => "name = \"r905-no-gap\"".to_string(),
            _ if l.starts_with("probe_hop_ns = ") => "probe_hop_ns = 0.0".to_string(),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let machine = dir.path().join("r905-no-gap.toml");
    std::fs::write(&machine, flat).unwrap();
    let pg4 = crate::common::workspace().join("examples/scenarios/oaas/pg-4.toml");
    let run = |extra: &[&str]| -> Value {
        let args = [
            &[
                "sim",
                "-q",
                "--json",
                "-m",
                machine.to_str().unwrap(),
                "-w",
                pg4.to_str().unwrap(),
                "-p",
                "oaas",
                "--epoch-ms",
                "300",
            ][..],
            extra,
        ]
        .concat();
        serde_json::from_str::<Value>(&stdout(&args)).unwrap()["runs"][0].clone()
    };
    let measured = run(&[]);
    assert_eq!(measured["pages_migrated"], 0, "{measured}");
    let notes = measured["notes"].to_string();
    assert!(
        notes.contains("MAPI-to-gap curve 'calibrated on r905-no-gap at start'"),
        "{notes}"
    );
    let builtin = run(&["--set", "oaas.curve=builtin"]);
    assert!(builtin["pages_migrated"].as_u64().unwrap() > 0, "{builtin}");
}
