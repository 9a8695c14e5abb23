//! Reproductions of \[Gaud10\] (OAAS) in the simulator on `r905-asymmetric`, each with an
//! honest tolerance band; docs/reproduction.md has the table of what we get beside what the
//! paper reports. `cargo test -p rondpoint-sim --test sim oaas_reproduction:: -- --nocapture` prints
//! our figures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_engine::EngineConfig;
use rondpoint_model::{Action, Observation, Pid, Topology};
use rondpoint_policy::oaas::{TABLE4, builtin_curves};
use rondpoint_policy_api::{Policy, PolicyConfig};
use rondpoint_sim::calibrate::{CalibrationConfig, calibrate};
use rondpoint_sim::experiment::summary::Spread;
use rondpoint_sim::experiment::{self, RunResult};
use rondpoint_sim::scenario::{Scenario, ThreadCount, ThreadPlacement};
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, presets};
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

fn r905() -> MachineSpec {
    MachineSpec::from_preset(&presets::machine("r905-asymmetric").unwrap()).unwrap()
}

/// [Gaud10 Table 2]: S1 over S2 and S1 over S3, percent, in the paper's order.
const TABLE2: [(&str, f64, f64); 13] = [
    ("canneal", 15.0, 8.0),
    ("streamcluster", 14.0, 39.0),
    ("ferret", 10.0, 11.0),
    ("facesim", 5.0, 5.0),
    ("dedup", 4.0, 6.0),
    ("x264", 3.0, 5.0),
    ("fluidanimate", 2.0, 0.0),
    ("swaptions", 1.0, 4.0),
    ("blackscholes", 1.0, 2.0),
    ("raytrace", 1.0, 2.0),
    ("vips", 1.0, 2.0),
    ("bodytrack", 0.0, 5.0),
    ("freqmine", 0.0, 0.0),
];

/// Sums each process's main-memory accesses and instructions over the run.
#[derive(Default)]
struct MapiMeter {
    counts: BTreeMap<Pid, (u64, u64)>,
}

impl Policy for MapiMeter {
    fn name(&self) -> &str {
        "mapi-meter"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn decide(&mut self, _: &Topology, o: &Observation) -> Vec<Action> {
        for t in &o.counters.threads {
            let e = self.counts.entry(t.pid).or_default();
            e.0 += t.dram_accesses;
            e.1 += t.instructions;
        }
        Vec::new()
    }
}

impl MapiMeter {
    fn mapi(&self) -> f64 {
        let (m, i) = self
            .counts
            .values()
            .fold((0, 0), |a, &(m, i)| (a.0 + m, a.1 + i));
        m as f64 / i as f64
    }
}

/// A preset alone with 4 threads: S1 on fast node 1, S2 on slow node 0, S3 one thread per
/// node with the first (which first-touches the shared data) on node 1.
fn alone(name: &str, placement: ThreadPlacement) -> Scenario {
    let mut s = presets::workload(name).unwrap();
    for app in &mut s.apps {
        app.threads = ThreadCount::Count(4);
        app.placement = placement.clone();
    }
    s
}

/// The completion time (s) and MAPI of an application alone.
fn run_alone(m: &MachineSpec, name: &str, placement: ThreadPlacement) -> (f64, f64) {
    let mut meter = MapiMeter::default();
    let r: RunResult = experiment::run(
        m,
        &alone(name, placement),
        &mut meter,
        &SimConfig::default(),
        &EngineConfig::default(),
        |_| {},
    )
    .unwrap();
    (r.completion_s, meter.mapi())
}

/// One application's Table 2 row in the simulator.
#[derive(Clone, Copy, Debug)]
struct Table2Row {
    /// S1 over S2, S1 over S3 (percent).
    s2: f64,
    s3: f64,
    /// MAPI on the fast node.
    mapi: f64,
}

/// The 13 applications alone in S1, S2 and S3, run once for all tests on two threads.
fn table2() -> &'static BTreeMap<&'static str, Table2Row> {
    static ROWS: OnceLock<BTreeMap<&'static str, Table2Row>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let m = r905();
        let queue = Mutex::new(TABLE2.iter().map(|r| r.0).collect::<Vec<_>>());
        let out = Mutex::new(BTreeMap::new());
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    while let Some(name) = queue.lock().unwrap().pop() {
                        let (s1, mapi) = run_alone(&m, name, ThreadPlacement::Node(1));
                        let (s2, _) = run_alone(&m, name, ThreadPlacement::Node(0));
                        let (s3, _) = run_alone(&m, name, ThreadPlacement::Nodes(vec![1, 0, 2, 3]));
                        let row = Table2Row {
                            s2: 100.0 * (s2 / s1 - 1.0),
                            s3: 100.0 * (s3 / s1 - 1.0),
                            mapi,
                        };
                        out.lock().unwrap().insert(name, row);
                    }
                });
            }
        });
        out.into_inner().unwrap()
    })
}

/// [Gaud10 Table 2]: S1 over S2 and S1 over S3 for the 13 PARSEC applications; the four
/// sensitive applications (§3.2: 5% to 14% faster on a fast node) are ours too.
/// Bands: S1 over S2 within 3.5 points of the paper for every application (calibrated: the
/// presets' MPKI are Table 2's gaps inverted through the model, except streamcluster's); the
/// applications at 5% or more are exactly canneal, streamcluster, ferret and facesim. S1 over
/// S3: canneal and streamcluster at least 8% (paper 8% and 39%). Not reproduced, asserted the
/// other way: ferret, facesim, dedup, x264 and bodytrack gain nothing on one node over four
/// (within -5% to +2%; paper +5% to +11%): the model gives each thread its own share of the LLC
/// and cannot express data shared in one cache (docs/reproduction.md).
#[test]
fn oaas_table2_one_fast_node_against_one_slow_node_and_spread() {
    let rows = table2();
    for (name, p2, p3) in TABLE2 {
        let r = rows[name];
        println!(
            "table2 {name:13}: S1 over S2 {:+5.1}% (paper {p2:+.0}%), S1 over S3 {:+5.1}% (paper \
             {p3:+.0}%), MAPI {:.4}",
            r.s2, r.s3, r.mapi
        );
        assert!((r.s2 - p2).abs() <= 3.5, "{name}: S1 over S2 {:.1}", r.s2);
        let sensitive = ["canneal", "streamcluster", "ferret", "facesim"].contains(&name);
        assert_eq!(r.s2 >= 5.0, sensitive, "{name}: {:.1}", r.s2);
    }
    for name in ["canneal", "streamcluster"] {
        assert!(
            rows[name].s3 >= 8.0,
            "{name}: S1 over S3 {:.1}",
            rows[name].s3
        );
    }
    for name in ["ferret", "facesim", "dedup", "x264", "bodytrack"] {
        let s3 = rows[name].s3;
        assert!(
            (-5.0..=2.0).contains(&s3),
            "{name}: S1 over S3 {s3:.1} (not reproduced)"
        );
    }
}

/// [Gaud10 §4.1]: streamcluster's L3 miss rate grows from 12% under S1 to 47% under S3. Not
/// reproduced: the model has no shared data in the LLC, so its misses per instruction are the
/// same on one node and spread (asserted: within 1%).
#[test]
fn oaas_s4_1_streamcluster_shared_cache_not_modelled() {
    let m = r905();
    let (_, s1) = run_alone(&m, "streamcluster", ThreadPlacement::Node(1));
    let (_, s3) = run_alone(
        &m,
        "streamcluster",
        ThreadPlacement::Nodes(vec![1, 0, 2, 3]),
    );
    println!("s4.1 streamcluster MAPI: S1 {s1:.5}, S3 {s3:.5} (paper: L3 miss rate 12% -> 47%)");
    assert!((s3 / s1 - 1.0).abs() < 0.01);
}

/// [Gaud10 §3.1, Figure 3]: the microbenchmark's fast/slow gap grows with MAPI and stabilises
/// near 31% from MAPI 0.35. Bands: 0 at MAPI 0; never falling; 28% to 34% at 0.35 and every
/// point beyond within 1 point of it; below 60% of it at MAPI 0.01 (it grows). The built-in
/// curve of `oaas` is this calibration.
#[test]
fn oaas_fig3_calibration_curve() {
    let c = calibrate(&r905(), &CalibrationConfig::default()).unwrap();
    for p in &c.points {
        println!("fig3 MAPI {:.4}: gap {:.1}%", p.mapi, p.gap_pct);
    }
    let at = |m: f64| c.points.iter().find(|p| p.mapi == m).unwrap().gap_pct;
    assert!(at(0.0).abs() < 0.1);
    assert!(
        c.points
            .windows(2)
            .all(|w| w[1].gap_pct >= w[0].gap_pct - 0.05)
    );
    let plateau = at(0.35);
    assert!((28.0..=34.0).contains(&plateau), "{plateau}");
    assert!(
        c.points
            .iter()
            .filter(|p| p.mapi >= 0.35)
            .all(|p| (p.gap_pct - plateau).abs() <= 1.0)
    );
    assert!(at(0.01) < 0.6 * plateau);
    let builtin = builtin_curves().unwrap().remove(0).1;
    assert_eq!(builtin, c, "the built-in curve is a fresh calibration");
}

/// [Gaud10 §3.2, Figure 4]: the applications' fast/slow gaps against their MAPI follow the
/// microbenchmark's curve. Bands: every application within 3 points of the curve at its MAPI
/// but streamcluster (within 10: its cpi_base and MLP, fitted to [Dashti13 Table 1], hide
/// more of its latency than the curve's one read at a time); the four sensitive applications
/// have the four highest MAPIs.
#[test]
fn oaas_fig4_applications_follow_the_curve() {
    let rows = table2();
    let c = &builtin_curves().unwrap()[0].1;
    for (name, _, _) in TABLE2 {
        let r = rows[name];
        let curve = c.gap_pct(r.mapi);
        println!(
            "fig4 {name:13}: MAPI {:.4}, gap {:5.1}%, curve {curve:5.1}%",
            r.mapi, r.s2
        );
        let band = if name == "streamcluster" { 10.0 } else { 3.0 };
        assert!((r.s2 - curve).abs() <= band, "{name}");
    }
    let mut by_mapi: Vec<(&str, f64)> = rows.iter().map(|(n, r)| (*n, r.mapi)).collect();
    by_mapi.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut top: Vec<&str> = by_mapi[..4].iter().map(|x| x.0).collect();
    top.sort_unstable();
    assert_eq!(top, ["canneal", "facesim", "ferret", "streamcluster"]);
}

/// Seeds per policy in the Figure 5 runs: ten, as the paper ran each experiment (§4.2, §5.3).
const SEEDS: u64 = 10;

/// The groups of [Gaud10 Table 3], and which of their applications are sensitive.
const GROUPS: [&str; 5] = ["pg-0", "pg-1", "pg-2", "pg-3", "pg-4"];

/// The dynamic policies of Figure 5, run over the seeds.
const SEEDED: [&str; 4] = ["linux-spread", "random", "oaas", "oaas-nopm"];

fn group(name: &str) -> Scenario {
    let path = format!(
        "{}/../../examples/scenarios/oaas/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    presets::workload(&path).unwrap()
}

/// A run of a group under a policy (with `set` as `--set`) and a seed, 300 ms epochs (the
/// period of OAAS, [Gaud10 §5.2]).
fn run_group(m: &MachineSpec, s: &Scenario, policy: &str, set: &str, seed: u64) -> RunResult {
    let registry = rondpoint_policy::registry();
    let mut config = PolicyConfig::default();
    if !set.is_empty() {
        registry.set_arg(&mut config, set).unwrap();
    }
    let config = registry.seeded(&config, policy, seed).unwrap();
    let mut p = registry.build(policy, &config).unwrap();
    let sim = SimConfig {
        seed,
        ..SimConfig::default()
    };
    let engine = EngineConfig {
        epoch_ns: 300_000_000,
        ..EngineConfig::default()
    };
    experiment::run(m, s, p.as_mut(), &sim, &engine, |_| {}).unwrap()
}

fn times(r: &RunResult) -> Vec<f64> {
    r.apps.iter().map(|a| a.completion_s).collect()
}

/// One group's runs.
struct GroupRuns {
    names: Vec<String>,
    /// Each application alone with four threads on fast node 1: Figure 5's reference.
    alone: Vec<f64>,
    /// M0 to M5: each application's time.
    mappings: Vec<Vec<f64>>,
    /// Per policy: the runs over the seeds.
    seeded: BTreeMap<&'static str, Vec<RunResult>>,
}

impl GroupRuns {
    /// An application's slowdown over its time alone on a fast node (percent).
    fn slowdown(&self, app: usize, t: f64) -> f64 {
        100.0 * (t / self.alone[app] - 1.0)
    }

    /// The best mapping: the least mean slowdown over the applications.
    fn best(&self) -> usize {
        let mean = |m: &Vec<f64>| {
            m.iter()
                .enumerate()
                .map(|(i, &t)| self.slowdown(i, t))
                .sum::<f64>()
        };
        (0..6)
            .min_by(|&a, &b| mean(&self.mappings[a]).total_cmp(&mean(&self.mappings[b])))
            .unwrap()
    }

    /// Mean and sample standard deviation (percent of the mean) of each application's
    /// completion under a seeded policy.
    fn spread(&self, policy: &str) -> Vec<(f64, f64)> {
        let runs = &self.seeded[policy];
        (0..self.names.len())
            .map(|i| {
                let v: Vec<f64> = runs.iter().map(|r| r.apps[i].completion_s).collect();
                let s = Spread::of(&v);
                (s.mean_s, s.std_pct())
            })
            .collect()
    }
}

/// Every group under the six mappings and the seeded policies, run once for all tests on two
/// threads.
fn figure5() -> &'static BTreeMap<&'static str, GroupRuns> {
    static RUNS: OnceLock<BTreeMap<&'static str, GroupRuns>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let m = r905();
        let mut jobs: Vec<(&'static str, &'static str, String, u64)> = Vec::new();
        for g in GROUPS {
            for (k, _) in TABLE4.iter().enumerate() {
                jobs.push((g, "static", format!("static.mapping=M{k}"), 1));
            }
            for p in SEEDED {
                jobs.extend((1..=SEEDS).map(|seed| (g, p, String::new(), seed)));
            }
        }
        let scenarios: BTreeMap<&str, Scenario> = GROUPS.iter().map(|&g| (g, group(g))).collect();
        let queue = Mutex::new(jobs);
        let out = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    while let Some((g, p, set, seed)) = queue.lock().unwrap().pop() {
                        let r = run_group(&m, &scenarios[g], p, &set, seed);
                        out.lock().unwrap().push((g, p, set, r));
                    }
                });
            }
        });
        let mut out = out.into_inner().unwrap();
        out.sort_by_key(|(g, p, set, r)| (*g, *p, set.clone(), r.seed));
        GROUPS
            .iter()
            .map(|&g| {
                let s = &scenarios[g];
                let alone = s
                    .apps
                    .iter()
                    .map(|a| {
                        let mut one = s.clone();
                        one.apps = vec![a.clone()];
                        one.apps[0].placement = ThreadPlacement::Node(1);
                        run_group(&m, &one, "first-touch", "", 1).completion_s
                    })
                    .collect();
                let of = |p: &'static str| out.iter().filter(move |x| x.0 == g && x.1 == p);
                let runs = GroupRuns {
                    names: s.apps.iter().map(|a| a.name.clone()).collect(),
                    alone,
                    mappings: of("static").map(|x| times(&x.3)).collect(),
                    seeded: SEEDED
                        .iter()
                        .map(|&p| (p, of(p).map(|x| x.3.clone()).collect()))
                        .collect(),
                };
                (g, runs)
            })
            .collect()
    })
}

/// Performance relative to alone on a fast node, as Figure 5 plots it: -12% is 12% less.
fn perf(alone: f64, t: f64) -> f64 {
    100.0 * (alone / t - 1.0)
}

/// [Gaud10 Figure 5, §4.2]: the best static mapping puts the most sensitive applications on
/// the fast nodes (PG-1: canneal, by M2, M4 or M5; PG-2: streamcluster and canneal, M5 only);
/// on PG-2 the other mappings degrade canneal by up to 12% and streamcluster by up to 10%; on
/// PG-3 and PG-4 no mapping spares every application and the best protects streamcluster and
/// canneal; PG-0 is insensitive. Bands: the best mapping's fast applications as said (the
/// least mean slowdown over the group's applications, each against its time alone on a fast
/// node); PG-2's worst degradations within 4 points of the paper's; on PG-3 and PG-4 every
/// mapping slows some application by more than 5%; on PG-0 every mapping within 2% of alone.
#[test]
fn oaas_fig5_best_static_mapping() {
    let runs = figure5();
    for g in GROUPS {
        let r = &runs[g];
        for (k, m) in r.mappings.iter().enumerate() {
            let cells: Vec<String> = m
                .iter()
                .enumerate()
                .map(|(i, &t)| format!("{} {:+.1}%", r.names[i], perf(r.alone[i], t)))
                .collect();
            println!("fig5 {g} M{k} ({}): {}", TABLE4[k].1, cells.join(", "));
        }
        let best = r.best();
        let fast: Vec<&str> = TABLE4[best]
            .1
            .chars()
            .zip(&r.names)
            .filter(|(c, _)| *c == 'F')
            .map(|(_, n)| n.as_str())
            .collect();
        println!("fig5 {g}: best M{best}, fast: {fast:?}");
        match g {
            "pg-0" => assert!(
                r.mappings
                    .iter()
                    .flatten()
                    .enumerate()
                    .all(|(k, &t)| perf(r.alone[k % 4], t) > -2.0)
            ),
            "pg-1" => assert!(fast.contains(&"canneal")),
            _ => assert!(fast.contains(&"canneal") && fast.contains(&"streamcluster")),
        }
        if g == "pg-3" || g == "pg-4" {
            for m in &r.mappings {
                let worst = (0..4).map(|i| r.slowdown(i, m[i])).fold(0.0, f64::max);
                assert!(worst > 5.0, "{g}: a mapping spares every application");
            }
        }
    }
    let r = &runs["pg-2"];
    let worst = |app: usize| {
        r.mappings
            .iter()
            .map(|m| perf(r.alone[app], m[app]))
            .fold(0.0, f64::min)
    };
    let (canneal, streamcluster) = (worst(3), worst(2));
    println!(
        "fig5 pg-2: worst canneal {canneal:+.1}% (paper -12%), streamcluster {streamcluster:+.1}% (paper -10%)"
    );
    assert!((canneal + 12.0).abs() <= 4.0 && (streamcluster + 10.0).abs() <= 4.0);
}

/// [Gaud10 Figure 5, §5.3]: OAAS is nearly the same as the best static mapping on PG-0, PG-1
/// and PG-2, and below it by up to about 3% and 5% on PG-3 and PG-4. Bands (each application's
/// mean completion over the seeds against its completion under the best mapping): within 3%
/// on PG-0 to PG-2 (the paper's "within 3%" overall); on PG-3 and PG-4 the worst application
/// at most 6% and 8% behind. Ours differs in why: OAAS never swaps canneal and ferret (the
/// curve puts them 3.5 points apart, under the 5-point threshold), so canneal stays on a slow
/// node in the seeds that start it there with ferret on a fast one; the paper's OAAS made that
/// swap and lost its time moving their pages (asserted: canneal runs on a slow node, more than
/// 7% slower than alone on a fast one, in some seeds and no more than half).
#[test]
fn oaas_fig5_oaas_against_the_best_static_mapping() {
    let runs = figure5();
    for g in GROUPS {
        let r = &runs[g];
        let best = &r.mappings[r.best()];
        let oaas = r.spread("oaas");
        let behind: Vec<f64> = (0..4)
            .map(|i| 100.0 * (oaas[i].0 / best[i] - 1.0))
            .collect();
        let cells: Vec<String> = (0..4)
            .map(|i| format!("{} {:+.1}%", r.names[i], behind[i]))
            .collect();
        println!(
            "fig5 {g} oaas behind best M{}: {}",
            r.best(),
            cells.join(", ")
        );
        let worst = behind.iter().copied().fold(f64::MIN, f64::max);
        let band = match g {
            "pg-3" => 6.0,
            "pg-4" => 8.0,
            _ => 3.0,
        };
        assert!(worst <= band, "{g}: {worst:.1}% behind the best mapping");
    }
    for g in ["pg-3", "pg-4"] {
        let r = &runs[g];
        let slow = r.seeded["oaas"]
            .iter()
            .filter(|x| r.slowdown(3, x.apps[3].completion_s) > 7.0)
            .count();
        println!("fig5 {g}: canneal runs on a slow node in {slow} of {SEEDS} seeds");
        assert!(slow > 0 && 2 * slow <= SEEDS as usize);
    }
}

/// [Gaud10 §4.2, §5.3]: OAAS's spread over runs is under 1%; Linux's (10% standard
/// deviation) and random's (6%) are larger; OAAS-noPM's is very high, up to 30%. The spread
/// is the sample standard deviation of an application's completion time over the seeds, as a
/// percentage of its mean. Bands: OAAS at most 1% for every application of PG-0 to PG-2;
/// on PG-1 to PG-4 the mean spread of Linux's and of random's applications above OAAS's;
/// Linux's largest at least 5%, random's at least 3%; OAAS-noPM's largest between 15% and 40%.
/// Not reproduced, asserted the other way: OAAS on PG-3 and PG-4, where canneal and ferret
/// keep the class they start on (canneal above 1%).
#[test]
fn oaas_s5_3_spread_over_seeds() {
    let runs = figure5();
    let largest = |v: &[(f64, f64)]| v.iter().map(|x| x.1).fold(0.0, f64::max);
    let mean = |v: &[(f64, f64)]| v.iter().map(|x| x.1).sum::<f64>() / v.len() as f64;
    let (mut linux_max, mut random_max, mut nopm_max) = (0.0f64, 0.0f64, 0.0f64);
    for g in GROUPS {
        let r = &runs[g];
        let s: BTreeMap<&str, Vec<(f64, f64)>> = SEEDED.iter().map(|&p| (p, r.spread(p))).collect();
        for p in SEEDED {
            let cells: Vec<String> = s[p]
                .iter()
                .enumerate()
                .map(|(i, (m, sd))| format!("{} {m:.2} s ± {sd:.1}%", r.names[i]))
                .collect();
            println!("s5.3 {g} {p:9}: {}", cells.join(", "));
        }
        if ["pg-0", "pg-1", "pg-2"].contains(&g) {
            assert!(largest(&s["oaas"]) <= 1.0, "{g}: oaas spread");
        } else {
            assert!(
                s["oaas"][3].1 > 1.0,
                "{g}: canneal under oaas (not reproduced)"
            );
        }
        if g != "pg-0" {
            assert!(mean(&s["linux-spread"]) > mean(&s["oaas"]), "{g}: linux");
            assert!(mean(&s["random"]) > mean(&s["oaas"]), "{g}: random");
        }
        linux_max = linux_max.max(largest(&s["linux-spread"]));
        random_max = random_max.max(largest(&s["random"]));
        nopm_max = nopm_max.max(largest(&s["oaas-nopm"]));
    }
    println!(
        "s5.3 largest spread: linux {linux_max:.1}% (paper 10%), random {random_max:.1}% (paper \
         6%), oaas-nopm {nopm_max:.1}% (paper up to 30%)"
    );
    assert!(linux_max >= 5.0 && random_max >= 3.0);
    assert!((15.0..=40.0).contains(&nopm_max));
}

/// Moves the one application to node 1 without its pages at the end of epoch 3, and records
/// the share of its DRAM accesses its own node served, epoch by epoch, before and after.
#[derive(Default)]
struct MoveAndWatch {
    before: Vec<f64>,
    after: Vec<f64>,
}

impl Policy for MoveAndWatch {
    fn name(&self) -> &str {
        "move-and-watch"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn decide(&mut self, _: &Topology, o: &Observation) -> Vec<Action> {
        let Some(p) = o.processes.first() else {
            return Vec::new();
        };
        let Some(src) = p.threads.first().map(|t| usize::from(t.node.0)) else {
            return Vec::new();
        };
        let nodes = &o.counters.nodes;
        let total: u64 = nodes.iter().map(|n| n.dram_accesses_by_source[src]).sum();
        if total > 0 {
            let local = nodes[src].dram_accesses_by_source[src] as f64 / total as f64;
            if src == 1 {
                &mut self.after
            } else {
                &mut self.before
            }
            .push(local);
        }
        if o.epoch == 3 {
            return vec![Action::MoveApplication {
                pid: p.pid,
                to: rondpoint_model::NodeId(1),
                with_memory: false,
            }];
        }
        Vec::new()
    }
}

/// [Gaud10 §5.3]: without page migration, streamcluster's share of local accesses falls from
/// 99% on the node it was spawned on to 1% after a move (canneal alike); after a move facesim
/// has only 35% of remote accesses, because it works mostly on short-lived data allocated
/// where it runs. Bands: streamcluster and canneal at least 95% local before and at most 5%
/// after. Not reproduced, asserted the other way: facesim is at least 90% remote after a move
/// (the simulator allocates every region once, at the start, so nothing follows the threads).
#[test]
fn oaas_s5_3_local_accesses_after_a_move_without_pages() {
    let m = r905();
    let engine = EngineConfig {
        epoch_ns: 300_000_000,
        ..EngineConfig::default()
    };
    for (g, app) in [("pg-2", 2), ("pg-2", 3), ("pg-4", 0)] {
        let mut s = group(g);
        s.apps = vec![s.apps[app].clone()];
        s.apps[0].placement = ThreadPlacement::Node(0);
        let name = s.apps[0].name.clone();
        let mut w = MoveAndWatch::default();
        experiment::run(&m, &s, &mut w, &SimConfig::default(), &engine, |_| {}).unwrap();
        let before = w.before.iter().copied().fold(1.0, f64::min);
        let after = w.after.iter().copied().fold(0.0, f64::max);
        println!(
            "s5.3 {name}: local share {:.0}% before the move, {:.0}% after (paper: streamcluster \
             99% -> 1%, facesim 65% after)",
            100.0 * before,
            100.0 * after
        );
        assert!(before >= 0.95, "{name}");
        if name == "facesim" {
            assert!(after <= 0.10, "facesim (not reproduced)");
        } else {
            assert!(after <= 0.05, "{name}");
        }
    }
}

/// A move must pay for itself ([Gaud10 §5.1]: migration costs amortized over time). On PG-3,
/// when streamcluster or canneal finishes near 10 s, the old rule (an empty fast node counts as
/// gap 0, `migrate_page_us = 0` now) moved ferret (87,192 pages) there with a second of its run
/// left, and it finished later than unmoved; canneal's late move (45,802 pages) does pay, and
/// is still made. Bands: ferret never later with the amortisation test than without, and
/// earlier in some seeds; canneal the same in every seed.
#[test]
fn oaas_s5_1_a_late_move_that_does_not_pay_is_not_made() {
    let runs = figure5();
    let m = r905();
    let s = group("pg-3");
    let r = &runs["pg-3"];
    let mut earlier = 0;
    for (k, with) in r.seeded["oaas"].iter().enumerate() {
        let free = run_group(&m, &s, "oaas", "oaas.migrate_page_us=0", k as u64 + 1);
        let (f_with, f_free) = (with.apps[1].completion_s, free.apps[1].completion_s);
        println!(
            "s5.1 pg-3 seed {}: ferret {f_with:.2} s (moves free: {f_free:.2} s), canneal {:.2} \
             s ({:.2} s)",
            k + 1,
            with.apps[3].completion_s,
            free.apps[3].completion_s
        );
        assert!(f_with <= f_free + 1e-9, "seed {}", k + 1);
        earlier += usize::from(f_with < f_free - 0.01);
        assert!((with.apps[3].completion_s - free.apps[3].completion_s).abs() < 1e-9);
    }
    assert!(earlier > 0);
}

/// Why our OAAS never swaps canneal and ferret, which [Gaud10 §5.3]'s did: the prediction is
/// exact where it can be, and the model's numbers leave less than the 5-point threshold.
/// - The MAPI OAAS sees in the group is the one measured alone (each node has its own LLC).
/// - Their measured gaps (Table 2, ours) are 14.0% and 9.3%: under 5 points apart even for a
///   perfect predictor (the paper's are 15% and 10%, 5 points at the rounding).
/// - The curve is concave where they are: the microbenchmark's gap is about
///   m (L_slow - L_fast) / (c + m L_fast) for its CPU work's c cycles per instruction, so the
///   MAPI ratio of 1.59 becomes a gap ratio of 1.32. Whatever c (1 to 5 cycles; at 5 the curve
///   is still 4 points under its plateau at MAPI 0.1, nearer Figure 3's late rise), the curve
///   puts them under 4 points apart: a curve rising later predicts smaller gaps for both, not
///   a larger difference.
#[test]
fn oaas_s5_3_canneal_and_ferret_are_never_predicted_5_points_apart() {
    let rows = table2();
    let (canneal, ferret) = (rows["canneal"], rows["ferret"]);
    println!(
        "s5.3 measured gaps: canneal {:.1}% (MAPI {:.4}), ferret {:.1}% (MAPI {:.4})",
        canneal.s2, canneal.mapi, ferret.s2, ferret.mapi
    );
    assert!(canneal.s2 - ferret.s2 < 5.0);
    // In the group (M3: canneal on slow node 3, ferret on fast node 1), by pid, which follows
    // the scenario's order.
    let mut meter = MapiMeter::default();
    let engine = EngineConfig {
        epoch_ns: 300_000_000,
        ..EngineConfig::default()
    };
    let s = group("pg-3");
    experiment::run(
        &r905(),
        &s,
        &mut meter,
        &SimConfig::default(),
        &engine,
        |_| {},
    )
    .unwrap();
    let mapi: Vec<f64> = meter
        .counts
        .values()
        .map(|&(m, i)| m as f64 / i as f64)
        .collect();
    println!(
        "s5.3 MAPI in PG-3: ferret {:.4}, canneal {:.4}",
        mapi[1], mapi[3]
    );
    assert!((mapi[1] / ferret.mapi - 1.0).abs() < 0.02);
    assert!((mapi[3] / canneal.mapi - 1.0).abs() < 0.02);
    for cpu_cpi in [1.0, 1.5, 2.0, 3.0, 5.0] {
        let config = CalibrationConfig {
            mapi: vec![0.0, ferret.mapi, canneal.mapi, 0.1, 0.35],
            cpu_cpi,
            ..CalibrationConfig::default()
        };
        let c = calibrate(&r905(), &config).unwrap();
        let g: Vec<f64> = c.points.iter().map(|p| p.gap_pct).collect();
        println!(
            "s5.3 CPU work at {cpu_cpi} cycles/instruction: ferret {:.1}%, canneal {:.1}% \
             ({:.1} points apart); 0.1: {:.1}%, 0.35: {:.1}%",
            g[1],
            g[2],
            g[2] - g[1],
            g[3],
            g[4]
        );
        assert!(g[2] - g[1] < 4.0, "{cpu_cpi}");
    }
}
