//! Reproductions of \[Choe21\] in the simulator: Figures 5, 6 and 8
//! (with Figure 7's direction) on the three mixes of examples/scenarios/choe21-mix*.toml on
//! xeon-6242-4s, the distance tiers of §7 on m5a.24xlarge, CXL nodes as a tier of their own,
//! and the comparison with Carrefour and AutoNUMA. The paper gives figures, not numbers: every
//! band is on directions, with the tolerance stated per test. docs/reproduction.md has our
//! numbers and the claims the model does not reproduce; for those a test asserts what the
//! model does instead, so that a change to the model that reproduces them shows up.
//! `cargo test -p rondpoint-sim --test sim remote_reproduction:: -- --nocapture` prints the figures.
//!
//! As in the paper's runs, AutoNUMA is on everywhere (Linux 5.3's default): the FT baseline is
//! the `autonuma` policy, hybrid and usage-aware run with `autonuma = true`, dm and ua-dm run it
//! always, and interleaved memory is not scanned, as Linux skips it. Times are normalised to
//! FT per application (the paper's "speedup", lower is better).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_engine::{EngineConfig, Machine, VirtualClock};
use rondpoint_policy_api::PolicyConfig;
use rondpoint_sim::experiment::{self, RunResult};
use rondpoint_sim::scenario::Scenario;
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, SimMachine, presets};
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

const GIB: f64 = (1u64 << 30) as f64;
const MIXES: [&str; 3] = [
    "choe21-mix1-mg",
    "choe21-mix2-liblinear",
    "choe21-mix3-gups",
];
/// Runs of every mix: (label, policy, extra configuration).
const RUNS: [(&str, &str, &str); 8] = [
    ("FT", "autonuma", ""),
    ("FT-no-autonuma", "first-touch", ""),
    ("PI", "interleave", ""),
    ("HY", "hybrid", "[hybrid]\nautonuma = true\n"),
    ("UA", "usage-aware", "[usage-aware]\nautonuma = true\n"),
    ("DM", "dm", ""),
    ("UA+DM", "ua-dm", ""),
    ("Carrefour", "carrefour", ""),
];
/// Runs of mix-1 only: the placements done reactively, as a live machine must.
const REACTIVE: [(&str, &str, &str); 2] = [
    (
        "HY-reactive",
        "hybrid",
        "[hybrid]\nautonuma = true\nmode = \"reactive\"\n",
    ),
    (
        "UA-reactive",
        "usage-aware",
        "[usage-aware]\nautonuma = true\nmode = \"reactive\"\n",
    ),
];

fn machine(name: &str) -> MachineSpec {
    MachineSpec::from_preset(&presets::machine(name).unwrap()).unwrap()
}

fn scenario(name: &str) -> Scenario {
    let path = format!(
        "{}/../../examples/scenarios/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    presets::workload(&path).unwrap()
}

fn run(m: &MachineSpec, s: &Scenario, policy: &str, config: &str) -> RunResult {
    let config = PolicyConfig::from_toml(config).unwrap();
    let mut p = rondpoint_policy::build(policy, &config).unwrap();
    experiment::run(
        m,
        s,
        p.as_mut(),
        &SimConfig::default(),
        &EngineConfig::default(),
        |_| {},
    )
    .unwrap()
}

/// Every run of the mixes, made once for all tests, on two threads.
fn runs() -> &'static BTreeMap<(&'static str, &'static str), RunResult> {
    static RESULTS: OnceLock<BTreeMap<(&'static str, &'static str), RunResult>> = OnceLock::new();
    RESULTS.get_or_init(|| {
        let m = machine("xeon-6242-4s");
        let mut jobs: Vec<(&'static str, (&'static str, &'static str, &'static str))> = MIXES
            .iter()
            .flat_map(|&mix| RUNS.iter().map(move |&r| (mix, r)))
            .collect();
        jobs.extend(REACTIVE.iter().map(|&r| (MIXES[0], r)));
        let scenarios: BTreeMap<&str, Scenario> = MIXES.iter().map(|&x| (x, scenario(x))).collect();
        let queue = Mutex::new(jobs);
        let out = Mutex::new(BTreeMap::new());
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    while let Some((mix, (label, policy, config))) = queue.lock().unwrap().pop() {
                        let r = run(&m, &scenarios[mix], policy, config);
                        out.lock().unwrap().insert((mix, label), r);
                    }
                });
            }
        });
        out.into_inner().unwrap()
    })
}

fn result(mix: &str, label: &str) -> &'static RunResult {
    runs()
        .iter()
        .find(|((m, l), _)| *m == mix && *l == label)
        .map(|(_, r)| r)
        .unwrap()
}

/// An application's completion under `label` over its completion under FT.
fn norm(mix: &str, label: &str, app: &str) -> f64 {
    let t = |label: &str| {
        result(mix, label)
            .apps
            .iter()
            .find(|a| a.name == app)
            .unwrap()
            .completion_s
    };
    t(label) / t("FT")
}

/// The geometric mean of a mix's normalised times under `label`.
fn geomean(mix: &str, label: &str) -> f64 {
    let apps = &result(mix, label).apps;
    let logs: f64 = apps.iter().map(|a| norm(mix, label, &a.name).ln()).sum();
    (logs / apps.len() as f64).exp()
}

/// The program on node 0 of a mix.
fn big(mix: &str) -> &str {
    mix.rsplit('-').next().unwrap()
}

fn print_mix(mix: &str) {
    for (label, _, _) in RUNS {
        let apps: Vec<String> = result(mix, label)
            .apps
            .iter()
            .map(|a| format!("{} {:.2}", a.name, norm(mix, label, &a.name)))
            .collect();
        println!(
            "{mix} {label}: {} (geomean {:.3})",
            apps.join(", "),
            geomean(mix, label)
        );
    }
}

/// Figure 5, PI against FT. Reproduced: cam4 is significantly degraded under PI (at least 30%
/// slower in every mix) and gups, the most bandwidth-bound, gains (at least 20%). Not
/// reproduced (docs/reproduction.md): PI beating FT for mg, liblinear and mcf; in the model
/// fotonik3d, 16 copies streaming on one DDR4 channel, saturates its node under FT and, spread
/// over all four under PI, loads every node, so the latency-bound mcf and the node-0 programs
/// lose more than the extra channels give them.
#[test]
fn fig5_page_interleave_against_first_touch() {
    for mix in MIXES {
        print_mix(mix);
        let cam4 = norm(mix, "PI", "cam4");
        assert!(cam4 > 1.3, "{mix}: cam4 under PI {cam4:.2}");
        let mcf = norm(mix, "PI", "mcf");
        assert!(
            mcf > 1.0,
            "{mix}: mcf under PI {mcf:.2}: now reproduced? update the docs"
        );
    }
    let gups = norm(MIXES[2], "PI", "gups");
    assert!(gups < 0.8, "gups under PI {gups:.2}");
    for mix in &MIXES[..2] {
        let b = norm(mix, "PI", big(mix));
        assert!(
            b > 1.0,
            "{mix}: {} under PI {b:.2}: now reproduced?",
            big(mix)
        );
    }
}

/// Figure 5, HY and UA. Bands: cam4 at most 5% slower than FT under both in every mix; mcf
/// faster than FT under both in every mix (at least 5% under HY; under UA by at least 1%, in
/// mix-1 only that: usage-aware still puts 92% of mg's overflow on mcf's node 1, the least
/// used); fotonik3d within 5% of FT under UA, DM and UA+DM, and within 12% under HY (whose
/// spread sends liblinear's and gups' overflow traffic to fotonik3d's node: 6% and 11%).
#[test]
fn fig5_hybrid_and_usage_aware_spare_cam4_and_relieve_mcf() {
    for mix in MIXES {
        for label in ["HY", "UA"] {
            let cam4 = norm(mix, label, "cam4");
            assert!(cam4 <= 1.05, "{mix}: cam4 under {label} {cam4:.3}");
            let mcf = norm(mix, label, "mcf");
            let want = if label == "HY" { 0.95 } else { 0.99 };
            assert!(mcf <= want, "{mix}: mcf under {label} {mcf:.3}");
        }
        for label in ["UA", "DM", "UA+DM"] {
            let f = norm(mix, label, "fotonik3d");
            assert!(
                (0.95..=1.05).contains(&f),
                "{mix}: fotonik3d under {label} {f:.3}"
            );
        }
        let f = norm(mix, "HY", "fotonik3d");
        assert!(
            (0.95..=1.12).contains(&f),
            "{mix}: fotonik3d under HY {f:.3}"
        );
    }
}

/// mg's bytes per node at the end of a mix-1 run (GiB).
fn mg_gib(label: &str) -> Vec<f64> {
    let r = result(MIXES[0], label);
    let mg = r.apps.iter().find(|a| a.name == "mg").unwrap();
    mg.bytes_by_node.iter().map(|&b| b as f64 / GIB).collect()
}

/// Figure 6, memory per node of mix-1. Bands: under FT all of mg's overflow is on node 1;
/// under HY it is spread over nodes 1-3 within 1% of each other; under UA node 1 takes it
/// first, until node 1 is as used as nodes 2 and 3 (within 1%), which then share the rest
/// equally (within 1%).
#[test]
fn fig6_where_mix1_overflow_goes() {
    let ft = mg_gib("FT");
    println!("fig6 mg GiB per node: FT {ft:.2?}");
    assert!(ft[2] == 0.0 && ft[3] == 0.0 && ft[1] > 4.0, "{ft:?}");
    let hy = mg_gib("HY");
    println!("fig6 mg GiB per node: HY {hy:.2?}");
    let (lo, hi) = (
        hy[1..].iter().copied().fold(f64::MAX, f64::min),
        hy[1..].iter().copied().fold(0.0, f64::max),
    );
    assert!(hi - lo <= 0.01 * hi && (hi + lo) > 2.0, "{hy:?}");
    let ua = mg_gib("UA");
    println!("fig6 mg GiB per node: UA {ua:.2?}");
    assert!(
        ua[1] > 4.0 * ua[2] && (ua[2] - ua[3]).abs() <= 0.01 * ua[2],
        "{ua:?}"
    );
    let used = &result(MIXES[0], "UA").memory.last().unwrap().used_bytes;
    for n in 2..4 {
        let gap = used[1].abs_diff(used[n]) as f64 / used[n] as f64;
        assert!(gap < 0.01, "node 1 vs node {n}: {used:?}");
    }
}

/// Figure 8 (and Figure 7's direction). Bands, on the geometric mean of each mix's normalised
/// times: DM and UA+DM at most 3% above UA in every mix; UA+DM at most 2% above DM; over all
/// mixes, DM and UA+DM below FT and PI. Figure 7: under DM and UA+DM mg's memory on node 1
/// decreases over time and its memory on node 3 (cam4's, the least busy) increases.
#[test]
fn fig8_dynamic_migration_against_usage_aware() {
    let mut all: BTreeMap<&str, f64> = BTreeMap::new();
    for mix in MIXES {
        let g = |l| geomean(mix, l);
        println!(
            "fig8 {mix}: UA {:.3}, DM {:.3}, UA+DM {:.3}, PI {:.3}",
            g("UA"),
            g("DM"),
            g("UA+DM"),
            g("PI")
        );
        assert!(
            g("DM") <= 1.03 * g("UA"),
            "{mix}: DM {} UA {}",
            g("DM"),
            g("UA")
        );
        assert!(g("UA+DM") <= 1.03 * g("UA"), "{mix}: UA+DM {}", g("UA+DM"));
        assert!(
            g("UA+DM") <= 1.02 * g("DM"),
            "{mix}: UA+DM {} DM {}",
            g("UA+DM"),
            g("DM")
        );
        for l in ["DM", "UA+DM", "PI"] {
            *all.entry(l).or_default() += g(l).ln() / MIXES.len() as f64;
        }
    }
    let all: BTreeMap<&str, f64> = all.into_iter().map(|(l, x)| (l, x.exp())).collect();
    println!("fig8 over all mixes (FT = 1): {all:.3?}");
    for l in ["DM", "UA+DM"] {
        assert!(all[l] < 1.0 && all[l] < all["PI"], "{l}: {all:?}");
    }
    for label in ["DM", "UA+DM"] {
        let t = &result(MIXES[0], label).memory.timeline;
        let mg = |i: usize, node: usize| t[i].apps_bytes[3][node];
        let (first, last) = (0, t.len() - 1);
        println!(
            "fig7 {label}: mg on node 1 {:.2} -> {:.2} GiB, node 3 {:.2} -> {:.2} GiB",
            mg(first, 1) as f64 / GIB,
            mg(last, 1) as f64 / GIB,
            mg(first, 3) as f64 / GIB,
            mg(last, 3) as f64 / GIB
        );
        assert!(mg(last, 1) < mg(first, 1) && mg(last, 3) > mg(first, 3));
    }
}

/// [Choe21 §6] names Carrefour and §2.3/§5 AutoNUMA. Findings (bands): AutoNUMA changes no
/// application's time by more than 1% against first touch without it (it cannot move pages onto
/// the full node 0 and the threads stay on their sockets); Carrefour replicates nothing here
/// (every mix's data is written), so the memory cost §6 warns of does not arise, and it costs
/// 0 to 5% (its sampling), helping no application by more than 1%.
#[test]
fn carrefour_and_autonuma_on_the_mixes() {
    for mix in MIXES {
        for a in &result(mix, "FT").apps {
            let plain = norm(mix, "FT-no-autonuma", &a.name);
            let c = norm(mix, "Carrefour", &a.name);
            println!(
                "{mix} {}: first touch without AutoNUMA {plain:.3}, Carrefour {c:.3}",
                a.name
            );
            assert!((0.99..=1.01).contains(&plain), "{mix} {}: {plain}", a.name);
            assert!(
                (0.99..=1.05).contains(&c),
                "{mix} {}: Carrefour {c}",
                a.name
            );
        }
        assert_eq!(result(mix, "Carrefour").pages_replicated, 0);
    }
}

/// Placement done after the fact (a live machine's only way) ends where placement at
/// allocation puts the overflow (within 64 MiB per node), at the cost of moving it: hybrid
/// moves two thirds of mg's 4.5 GiB overflow off node 1 (3 GiB, 786,432 pages, within 1%),
/// usage-aware the little that goes to nodes 2 and 3.
#[test]
fn reactive_placement_ends_where_allocation_puts_it_and_costs_the_moves() {
    for (reactive, at_allocation) in [("HY-reactive", "HY"), ("UA-reactive", "UA")] {
        let (a, b) = (mg_gib(reactive), mg_gib(at_allocation));
        let moved = result(MIXES[0], reactive).pages_migrated;
        println!(
            "{reactive}: mg {a:.2?} GiB, {moved} pages moved, mg {:.2} of FT (at allocation {:.2})",
            norm(MIXES[0], reactive, "mg"),
            norm(MIXES[0], at_allocation, "mg")
        );
        for n in 0..4 {
            assert!(
                (a[n] - b[n]).abs() <= 0.0625,
                "{reactive} node {n}: {a:?} vs {b:?}"
            );
        }
    }
    let hy = result(MIXES[0], "HY-reactive").pages_migrated as f64;
    assert!((hy / 786_432.0 - 1.0).abs() < 0.01, "{hy}");
}

/// The first second of a scenario under a policy: each node's bytes of the application named.
fn placement(
    machine_name: &str,
    scenario_name: &str,
    policy: &str,
    config: &str,
    app: &str,
) -> Vec<f64> {
    let s = scenario(scenario_name);
    let mut m = SimMachine::new(machine(machine_name), &s, SimConfig::default()).unwrap();
    let config = PolicyConfig::from_toml(config).unwrap();
    let mut p = rondpoint_policy::build(policy, &config).unwrap();
    let engine = EngineConfig {
        time_limit_ns: Some(1_000_000_000),
        ..EngineConfig::default()
    };
    rondpoint_engine::run(
        &mut m,
        p.as_mut(),
        &mut VirtualClock::default(),
        &engine,
        |_| {},
    )
    .unwrap();
    let i = s.apps.iter().position(|a| a.name == app).unwrap();
    m.processes()[i]
        .resident_bytes_by_node
        .iter()
        .map(|&b| b as f64 / GIB)
        .collect()
}

/// Tiers on m5a.24xlarge (a test of our design; [Choe21 §7] did not evaluate it). Bands: under
/// hybrid and usage-aware, gups's overflow fills nodes 1 and 2 (distance 16) before any of it
/// goes to nodes 3-5 (32), where it is spread evenly (within one 2 MiB page); first touch puts
/// all of the far overflow on node 3; with `tiers = "flat"` hybrid spreads over all five.
#[test]
fn tiers_on_m5a_fill_the_near_nodes_first() {
    let run = |policy, config| placement("m5a-24xlarge", "m5a-tiers", policy, config, "gups");
    let near_full = |g: &[f64]| g[1] > 57.0 && g[2] > 57.0;
    for policy in ["hybrid", "usage-aware"] {
        let g = run(policy, "");
        println!("m5a {policy}: gups GiB per node {g:.2?}");
        assert!(near_full(&g), "{policy}: {g:?}");
        let far = &g[3..];
        let (lo, hi) = (
            far.iter().copied().fold(f64::MAX, f64::min),
            far.iter().copied().fold(0.0, f64::max),
        );
        assert!(lo > 1.0 && hi - lo <= 2.0 / 1024.0, "{policy}: {g:?}");
    }
    let ft = run("first-touch", "");
    println!("m5a first-touch: gups GiB per node {ft:.2?}");
    assert!(
        near_full(&ft) && ft[3] > 20.0 && ft[4] == 0.0 && ft[5] == 0.0,
        "{ft:?}"
    );
    let flat = run("hybrid", "[hybrid]\ntiers = \"flat\"\n");
    println!("m5a hybrid, flat: gups GiB per node {flat:.2?}");
    assert!(flat[1] < 50.0 && flat[3] > 20.0, "{flat:?}");
}

/// A CXL memory-only node is a tier of its own after the CPU nodes (rondpoint's extension).
/// Bands: on xeon-2s-cxl, first touch sends node 0's overflow to the CXL node (nearer by SLIT
/// distance) and hybrid and usage-aware send it all to socket 1, which has room; docs list the
/// times.
#[test]
fn cxl_nodes_come_after_the_sockets() {
    let run = |policy| placement("xeon-2s-cxl", "cxl-overflow", policy, "", "gups");
    let ft = run("first-touch");
    println!("cxl first-touch: gups GiB per node {ft:.2?}");
    assert!(ft[2] > 17.0 && ft[1] == 0.0, "{ft:?}");
    for policy in ["hybrid", "usage-aware"] {
        let g = run(policy);
        println!("cxl {policy}: gups GiB per node {g:.2?}");
        assert!(g[1] > 17.0 && g[2] == 0.0, "{policy}: {g:?}");
    }
}

/// Dynamic migration leaves the CXL node alone where the move does not pay: on
/// `cxl-overflow`, usage-aware puts gups's overflow on socket 1, and ua-dm's rebalancing must not
/// move it to the CXL node, 31 ns slower from socket 0 than socket 1's DRAM with a third of its
/// bandwidth, while socket 1's controllers are far from saturated (before the latency model, it
/// moved 14.5 GiB there, as the least busy node by raw counts). Bands: nothing of gups's on node
/// 2 at the end; gups no slower than under usage-aware (within 0.5%).
#[test]
fn ua_dm_leaves_the_cxl_node_alone_where_moving_does_not_pay() {
    let (m, s) = (machine("xeon-2s-cxl"), scenario("cxl-overflow"));
    let gups = |r: &RunResult| r.apps.iter().find(|a| a.name == "gups").unwrap().clone();
    let ua = gups(&run(&m, &s, "usage-aware", ""));
    let dm = gups(&run(&m, &s, "ua-dm", ""));
    let gib: Vec<f64> = dm.bytes_by_node.iter().map(|&b| b as f64 / GIB).collect();
    println!("cxl ua-dm: gups GiB per node {gib:.2?}");
    assert_eq!(dm.bytes_by_node[2], 0, "{gib:?}");
    let (a, b) = (ua.completion_s, dm.completion_s);
    assert!(b <= a * 1.005, "ua-dm {b} s against usage-aware {a} s");
}

/// The mixes are the presets scaled as the presets say (16 copies of each SPEC program, the
/// node-0 program as its preset, mg at the chosen 20 GiB), so that a preset change reaches
/// them: every number but the sizes and thread counts equals the preset's.
#[test]
fn mixes_follow_their_presets() {
    for mix in MIXES {
        let s = scenario(mix);
        assert_eq!(s.apps.len(), 4);
        for (i, app) in s.apps.iter().enumerate() {
            let preset = presets::workload(&app.name).unwrap().apps.remove(0);
            let v = |x: &rondpoint_sim::param::Param<f64>| *x.value();
            assert_eq!(v(&app.mpki), v(&preset.mpki), "{mix} {}", app.name);
            assert_eq!(v(&app.mlp), v(&preset.mlp));
            assert_eq!(v(&app.cpi_base), v(&preset.cpi_base));
            assert_eq!(v(&app.instructions), v(&preset.instructions));
            assert_eq!(v(&app.mrc_alpha), v(&preset.mrc_alpha));
            let copies = if i < 3 { 16.0 } else { 1.0 };
            for (r, p) in app.regions.iter().zip(&preset.regions) {
                let want = if app.name == "mg" {
                    20480.0
                } else {
                    copies * v(&p.size_mib)
                };
                assert_eq!(v(&r.size_mib), want, "{mix} {}", app.name);
                assert_eq!(v(&r.share), v(&p.share));
                assert_eq!(v(&r.write_ratio), v(&p.write_ratio));
            }
        }
    }
}
