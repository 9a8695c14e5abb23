//! Reproductions of \[Majo11\] (N-MASS) on `nehalem-e5520-2s`, each with an honest band;
//! docs/reproduction.md has the paper's numbers beside ours and says what is not reproduced.
//! `cargo test -p rondpoint-sim --test sim nmass_reproduction:: -- --nocapture` prints our figures.
//!
//! Slowdowns are the paper's (§4.1): each program's time in the workload over its time alone
//! on its home node; programs that finish first are restarted until each has run once. The
//! improvement of a policy over a reference, for one program, is the share of the reference's
//! time it saves: 1 - (1 + slowdown) / (1 + reference slowdown) (negative: a degradation).
//! `n-mass` is the policy as configured by default (profiled NUMA penalties, measured MPKI);
//! the 8-process workloads, where every core is busy, run with exchanges allowed
//! (`SimConfig::exchange_pins`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_engine::EngineConfig;
use rondpoint_model::{Action, Need, Observation, Pid, ProcessInfo, Topology};
use rondpoint_policy_api::{Policy, PolicyConfig};
use rondpoint_sim::experiment;
use rondpoint_sim::experiment::Multiprogram;
use rondpoint_sim::experiment::multiprogram::{self, Solo};
use rondpoint_sim::scenario::{Scenario, ThreadCount, ThreadPlacement};
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, presets};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

fn machine() -> MachineSpec {
    MachineSpec::from_preset(&presets::machine("nehalem-e5520-2s").unwrap()).unwrap()
}

fn wl(k: usize) -> Scenario {
    presets::workload(&format!(
        "{}/../../examples/scenarios/nmass/wl{k}.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn sim_for(s: &Scenario) -> SimConfig {
    SimConfig {
        exchange_pins: s.apps.len() > 4,
        ..SimConfig::default()
    }
}

/// A policy with its parameters, by name and `--set` arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Pol {
    Default,
    MaxLocal,
    NMass,
    /// N-MASS with the §4.5 regression for the NUMA penalty.
    Regression,
    /// N-MASS deciding on profiled (solo) MPKI, as the evaluated prototype (§3.4).
    ProfiledMpki,
}

impl Pol {
    fn name(self) -> &'static str {
        match self {
            Pol::Default => "cfs-average",
            Pol::MaxLocal => "maximum-local",
            _ => "n-mass",
        }
    }
    fn sets(self) -> &'static [&'static str] {
        match self {
            Pol::Regression => &["n-mass.inputs.penalty=regression"],
            Pol::ProfiledMpki => &["n-mass.inputs.mpki=profile"],
            _ => &[],
        }
    }
}

/// Each program of `s` alone, and with `remote` alone away from its home too.
fn alone(s: &Scenario, remote: bool) -> Solo {
    multiprogram::solo_runs(
        &machine(),
        s,
        &SimConfig::default(),
        &EngineConfig::default(),
        remote,
    )
    .unwrap()
}

/// Solo runs per workload and slowdowns per (workload, map, policy), computed once.
type Runs = HashMap<(usize, String, Pol), Multiprogram>;

fn solo_of(k: usize, s: &Scenario) -> Solo {
    static SOLO: OnceLock<Mutex<HashMap<usize, Solo>>> = OnceLock::new();
    let cache = SOLO.get_or_init(Default::default);
    if let Some(x) = cache.lock().unwrap().get(&k) {
        return x.clone();
    }
    let solo = alone(s, true);
    cache.lock().unwrap().insert(k, solo.clone());
    solo
}

/// WL`k` under allocation map `map` and policy `p`: its slowdowns.
fn slowdowns(k: usize, map: &str, p: Pol) -> Multiprogram {
    static RUNS: OnceLock<Mutex<Runs>> = OnceLock::new();
    let cache = RUNS.get_or_init(Default::default);
    let key = (k, map.to_string(), p);
    if let Some(x) = cache.lock().unwrap().get(&key) {
        return x.clone();
    }
    let m = machine();
    let s = multiprogram::with_homes(&m, &wl(k), map).unwrap();
    // Homes do not change a program's solo run on this symmetric machine.
    let solo = solo_of(k, &wl(k));
    let registry = rondpoint_policy::registry();
    let mut config = PolicyConfig::default();
    for set in p.sets() {
        registry.set_arg(&mut config, set).unwrap();
    }
    multiprogram::fill_profiles(&mut config, registry.info(p.name()).unwrap(), &solo).unwrap();
    let build = || rondpoint_policy::build(p.name(), &config);
    let r = experiment::run_policy(
        &m,
        &s,
        &build,
        &sim_for(&s),
        &EngineConfig::default(),
        Some(&solo),
        |_, _, _| {},
    )
    .unwrap();
    let mp = r.multiprogram.unwrap();
    cache.lock().unwrap().insert(key, mp.clone());
    mp
}

/// Per program: the share of `reference`'s time `policy` saves.
fn improvement(policy: &Multiprogram, reference: &Multiprogram) -> Vec<f64> {
    policy
        .apps
        .iter()
        .zip(&reference.apps)
        .map(|(a, r)| 1.0 - (1.0 + a.slowdown_pct / 100.0) / (1.0 + r.slowdown_pct / 100.0))
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn row(label: &str, m: &Multiprogram) {
    let apps: Vec<String> = m
        .apps
        .iter()
        .map(|a| format!("{} {:.1}%", a.name, a.slowdown_pct))
        .collect();
    println!(
        "{label}: {} | average {:.1}%",
        apps.join(", "),
        m.average_pct
    );
}

/// The allocation maps of [Majo11 Table 3].
const MAPS: [&str; 8] = [
    "1100", "1010", "1001", "1000", "0100", "0010", "0001", "0000",
];

// ---------------------------------------------------------------------------------------
// Figure 3: mcf and lbm, both homed on processor 0.

/// Pins process i to a core of node `nodes[i]` before the start.
struct Fixed(Vec<u16>);

impl Policy for Fixed {
    fn name(&self) -> &str {
        "fixed"
    }
    fn needs(&self) -> Vec<Need> {
        Vec::new()
    }
    fn start(&mut self, topology: &Topology, procs: &[ProcessInfo]) -> Vec<Action> {
        let mut used = Vec::new();
        procs
            .iter()
            .zip(&self.0)
            .map(|(p, &n)| {
                let cpu = topology.nodes()[usize::from(n)]
                    .cpus
                    .iter()
                    .copied()
                    .find(|c| !used.contains(c))
                    .unwrap();
                used.push(cpu);
                Action::PinThread {
                    pid: p.pid,
                    tid: p.threads[0].tid,
                    cpus: vec![cpu],
                }
            })
            .collect()
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

/// What a run with fixed nodes measured.
struct Fixed3 {
    /// Each program's slowdown over its solo run (percent).
    slowdown: Vec<f64>,
    /// Each program's MPKI over the run.
    mpki: Vec<f64>,
    /// Share of the DRAM accesses served by the accessing core's node.
    locality: f64,
    /// Share of the DRAM accesses made from processor 1 (the remote process's, all memory
    /// being on processor 0).
    from_1: f64,
    /// DRAM accesses per simulated second, all controllers.
    accesses_per_s: f64,
}

/// `s` with process i pinned to node `nodes[i]`.
fn fixed_run(s: &Scenario, nodes: &[u16], solo: &Solo) -> Fixed3 {
    let mut sim = rondpoint_sim::SimMachine::new(machine(), s, SimConfig::default()).unwrap();
    let mut counts: HashMap<Pid, (f64, f64)> = HashMap::new();
    let (mut local, mut all, mut from_1) = (0.0, 0.0, 0.0);
    rondpoint_engine::run(
        &mut sim,
        &mut Fixed(nodes.to_vec()),
        &mut rondpoint_engine::VirtualClock::default(),
        &EngineConfig::default(),
        |r| {
            for t in &r.observation.counters.threads {
                let c = counts.entry(t.pid).or_default();
                c.0 += t.llc_misses as f64;
                c.1 += t.instructions as f64;
            }
            for (i, n) in r.observation.counters.nodes.iter().enumerate() {
                local += n.dram_accesses_by_source[i] as f64;
                all += n.dram_accesses() as f64;
                from_1 += n.dram_accesses_by_source[1] as f64;
            }
        },
    )
    .unwrap();
    let slowdown = sim
        .app_completion_ns()
        .iter()
        .zip(&solo.apps)
        .map(|((_, done), a)| 100.0 * (done.unwrap() / 1e9 / a.local_s - 1.0))
        .collect();
    let mut pids: Vec<_> = counts.into_iter().collect();
    pids.sort_by_key(|x| x.0);
    Fixed3 {
        slowdown,
        mpki: pids.iter().map(|(_, (m, i))| 1000.0 * m / i).collect(),
        locality: local / all,
        from_1: from_1 / all,
        accesses_per_s: all / (sim.now_ns() / 1e9),
    }
}

/// Single-threaded copies of presets, homed on processor 0, restarted until each has run once.
fn homed_on_0(names: &[&str]) -> Scenario {
    let mut s = presets::workload(names[0]).unwrap();
    s.name = names.join("+");
    s.restart = true;
    s.apps = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut a = presets::workload(n).unwrap().apps.remove(0);
            a.name = format!("{n}-{i}");
            a.threads = ThreadCount::Count(1);
            a.placement = ThreadPlacement::Spread;
            a.membind = Some(vec![0]);
            a
        })
        .collect();
    s
}

/// [Majo11 §2, Figure 3]: mcf and lbm homed on processor 0. (a) both local, sharing the L3;
/// (b) lbm remote; (c) mcf remote. Paper: (a) raises MPKI by 47% (mcf) and 62% (lbm); in (b)
/// and (c) each MPKI rises at most 4%; slowdowns (a) mcf 23% lbm 11% (average 17%), (b) lbm
/// almost 30%, average "only a minor improvement" over (a), (c) mcf 21% lbm 1% (average 11%);
/// Figure 3b: the remote process makes 56% (lbm, b) resp. 33% (mcf, c) of the traffic, and
/// the total bandwidth of (a) is about 50% more than that of (b) and (c).
/// Band: sharing raises both MPKIs by more than 10%, (b) and (c) by at most 4%; lbm 25-35%
/// slower remote and mcf 15-30% slower remote; (c) the fastest on average, (b) faster than
/// (a); the remote share 50-62% in (b) (a prediction: mcf's MPKI is derived from (c)'s 33%)
/// and 28-38% in (c); (a)'s accesses per second 30-70% over (b)'s and (c)'s. Not reproduced
/// (docs/reproduction.md): the sizes of (a)'s MPKI rises and lbm's slowdown sharing the L3
/// (the test checks that it is over 15%, the paper's being 11%).
#[test]
fn nmass_fig3_mcf_and_lbm_between_locality_and_contention() {
    let s = homed_on_0(&["mcf-2006", "lbm"]);
    let solo = alone(&s, false);
    let solo_mpki: Vec<f64> = solo.apps.iter().map(|a| a.mpki).collect();
    let mut avg = Vec::new();
    let mut lbm = Vec::new();
    let mut mcf = Vec::new();
    let mut traffic = Vec::new();
    for (case, nodes) in [("a", [0, 0]), ("b", [0, 1]), ("c", [1, 0])] {
        let Fixed3 {
            slowdown,
            mpki,
            from_1,
            accesses_per_s,
            ..
        } = fixed_run(&s, &nodes, &solo);
        let rise: Vec<f64> = mpki
            .iter()
            .zip(&solo_mpki)
            .map(|(m, s)| 100.0 * (m / s - 1.0))
            .collect();
        let average = mean(&slowdown);
        println!(
            "fig3 ({case}): MPKI rise mcf {:+.0}% lbm {:+.0}%; slowdown mcf {:.1}% lbm {:.1}% \
             average {average:.1}%",
            rise[0], rise[1], slowdown[0], slowdown[1]
        );
        println!(
            "fig3 ({case}): remote process's share of the traffic {:.1}%, {:.1} million DRAM \
             accesses per second",
            100.0 * from_1,
            accesses_per_s / 1e6
        );
        traffic.push((from_1, accesses_per_s));
        if case == "a" {
            assert!(rise.iter().all(|&r| r > 10.0), "{rise:?}");
        } else {
            assert!(rise.iter().all(|&r| r <= 4.0), "{case}: {rise:?}");
        }
        avg.push(average);
        mcf.push(slowdown[0]);
        lbm.push(slowdown[1]);
    }
    assert!(
        lbm[0] > 15.0,
        "lbm sharing: {}: now reproduced? update the docs",
        lbm[0]
    );
    assert!((25.0..=35.0).contains(&lbm[1]), "lbm remote: {}", lbm[1]);
    assert!((15.0..=30.0).contains(&mcf[2]), "mcf remote: {}", mcf[2]);
    assert!(avg[2] < avg[1] && avg[1] < avg[0], "{avg:?}");
    assert!((0.50..=0.62).contains(&traffic[1].0), "(b): {traffic:?}");
    assert!((0.28..=0.38).contains(&traffic[2].0), "(c): {traffic:?}");
    for t in &traffic[1..] {
        let more = traffic[0].1 / t.1 - 1.0;
        assert!((0.30..=0.70).contains(&more), "(a) over {t:?}: {more}");
    }
}

/// [Majo11 §3.1, Figures 4 and 5]: four soplex clones homed on processor 0, from all four
/// local to all four remote. Paper: the average MPKI increase over solo falls from 35% at
/// 100% locality to 19% at 57% (two and two, the least contention); the average slowdown is
/// lowest near 80% locality (three local), below both. Band: the MPKI rise 25-45% with four
/// local and 10-25% at two and two, the least of all mappings; three local the fastest on
/// average, with a locality of 65-90%.
#[test]
fn nmass_fig4_fig5_soplex_clones_between_locality_and_contention() {
    let s = homed_on_0(&["soplex"; 4]);
    let solo = alone(&s, false);
    let mut rows = Vec::new();
    for local in (0..=4usize).rev() {
        let nodes: Vec<u16> = (0..4).map(|i| u16::from(i >= local)).collect();
        let r = fixed_run(&s, &nodes, &solo);
        let rise = mean(
            &r.mpki
                .iter()
                .zip(&solo.apps)
                .map(|(m, a)| 100.0 * (m / a.mpki - 1.0))
                .collect::<Vec<_>>(),
        );
        let slowdown = mean(&r.slowdown);
        println!(
            "fig4/5: {local} local: locality {:.0}%, MPKI +{rise:.0}%, average slowdown \
             {slowdown:.1}% (clone 1 {:.1}%, clone 4 {:.1}%)",
            100.0 * r.locality,
            r.slowdown[0],
            r.slowdown[3],
        );
        rows.push((local, r.locality, rise, slowdown));
    }
    let at = |k: usize| rows.iter().find(|r| r.0 == k).unwrap();
    assert!((25.0..=45.0).contains(&at(4).2), "4 local: {}", at(4).2);
    assert!((10.0..=25.0).contains(&at(2).2), "2 local: {}", at(2).2);
    assert!(
        rows.iter().all(|r| r.2 >= at(2).2 - 1e-9),
        "least contention at 2 + 2"
    );
    let best = rows.iter().min_by(|a, b| a.3.total_cmp(&b.3)).unwrap();
    assert_eq!(best.0, 3, "fastest: {rows:?}");
    assert!((0.65..=0.90).contains(&best.1), "locality {}", best.1);
}

/// Figure 10's runs: WL1 and WL9 under every allocation map of Table 3, each policy.
fn figure_10() -> Vec<(usize, &'static str, [Multiprogram; 3])> {
    let mut out = Vec::new();
    for k in [9, 1] {
        for map in MAPS {
            let runs = [Pol::Default, Pol::MaxLocal, Pol::NMass].map(|p| slowdowns(k, map, p));
            out.push((k, map, runs));
        }
    }
    out
}

/// [Majo11 §4.3, Figure 10]: WL9 and WL1 under the eight allocation maps. Paper: N-MASS
/// improves on default by up to 32% for single programs; maximum-local is worse than default
/// in the unbalanced maps (0000 for both workloads; 0001, 0010 and 1100 for WL1) where N-MASS
/// is not; N-MASS's average is never worse than default's, and at times slightly worse than
/// maximum-local's. Band: N-MASS's average at least default's in all 16 cases; its best
/// improvement of a single program over default 20-50%; maximum-local worse than default and
/// N-MASS better on WL9 with map 0000. Not reproduced: maximum-local losing to default on WL1
/// (docs/reproduction.md).
#[test]
fn nmass_fig10_allocation_maps() {
    let mut best = f64::NEG_INFINITY;
    for (k, map, [def, ml, nm]) in figure_10() {
        let vs_default = improvement(&nm, &def);
        let vs_maxlocal = improvement(&nm, &ml);
        println!(
            "fig10 WL{k} {map}: average slowdown default {:.1}% (range {:.1}..{:.1}), \
             maximum-local {:.1}%, n-mass {:.1}%; n-mass over default: programs {:+.0}%..{:+.0}%, \
             average {:+.1}%; over maximum-local: {:+.0}%..{:+.0}%",
            def.average_pct,
            def.average_range_pct.unwrap()[0],
            def.average_range_pct.unwrap()[1],
            ml.average_pct,
            nm.average_pct,
            100.0 * min(&vs_default),
            100.0 * max(&vs_default),
            100.0 * mean(&vs_default),
            100.0 * min(&vs_maxlocal),
            100.0 * max(&vs_maxlocal),
        );
        assert!(nm.average_pct <= def.average_pct, "WL{k} {map}");
        best = best.max(max(&vs_default));
    }
    println!(
        "fig10: best single-program improvement over default {:.0}%",
        100.0 * best
    );
    assert!((0.20..=0.50).contains(&best), "{best}");
    let wl9 = |p| slowdowns(9, "0000", p).average_pct;
    assert!(wl9(Pol::MaxLocal) > wl9(Pol::Default));
    assert!(wl9(Pol::NMass) < wl9(Pol::Default));
}

/// The workloads of Figures 11 (4 processes) and 12 (8), every program on processor 0.
fn figures_11_12() -> Vec<(usize, String)> {
    (1..=11)
        .map(|k| (k, "0".repeat(if k <= 9 { 4 } else { 8 })))
        .collect()
}

/// [Majo11 §4.4-4.5, Figures 11 and 12]: WL1 to WL11, every program homed on processor 0.
/// Paper: against maximum-local, N-MASS cuts individual programs' degradations by up to about
/// 10% (WL1, 7, 8, 9 and 11); the worst degradation relative to default falls from 12%
/// (maximum-local's, by context) to at most 3%. With the §4.5 regression for the penalty,
/// N-MASS still improves on maximum-local, but in four workloads leaves some program more than
/// 5% below default, its average degradation no worse than maximum-local's.
/// Band: N-MASS's best single-program gain over maximum-local 10-60%; maximum-local's worst
/// program against default 8-16% worse; with the regression, some program more than 5% below
/// default in three to five workloads, and the average slowdown over the eleven workloads at
/// most maximum-local's. Not reproduced: N-MASS's worst program within 3% of default; the test
/// checks that it is more than 8% worse, with measured and with profiled MPKI (the prototype's
/// mode), the program moved by the refinement paying its whole penalty (docs/reproduction.md).
/// The regression's count matches the paper's, but not its cause: our regression's worst
/// programs are mostly N-MASS's own (docs/reproduction.md).
#[test]
fn nmass_fig11_fig12_everything_homed_on_processor_0() {
    let mut gain_best = f64::NEG_INFINITY;
    let (mut worst_ml, mut worst_nm, mut worst_rg, mut worst_pm) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut regression_below_default = Vec::new();
    let mut averages = Vec::new();
    for (k, map) in figures_11_12() {
        let def = slowdowns(k, &map, Pol::Default);
        let ml = slowdowns(k, &map, Pol::MaxLocal);
        let nm = slowdowns(k, &map, Pol::NMass);
        let rg = slowdowns(k, &map, Pol::Regression);
        let pm = slowdowns(k, &map, Pol::ProfiledMpki);
        let gain = improvement(&nm, &ml);
        let (ml_def, nm_def, rg_def, pm_def) = (
            improvement(&ml, &def),
            improvement(&nm, &def),
            improvement(&rg, &def),
            improvement(&pm, &def),
        );
        println!(
            "fig11/12 WL{k}: average slowdown default {:.1}%, maximum-local {:.1}%, n-mass \
             {:.1}%, regression {:.1}%, profiled MPKI {:.1}%; n-mass over maximum-local \
             {:+.0}%..{:+.0}%; worst against default: maximum-local {:+.1}%, n-mass {:+.1}%, \
             regression {:+.1}%, profiled MPKI {:+.1}%",
            def.average_pct,
            ml.average_pct,
            nm.average_pct,
            rg.average_pct,
            pm.average_pct,
            100.0 * min(&gain),
            100.0 * max(&gain),
            100.0 * min(&ml_def),
            100.0 * min(&nm_def),
            100.0 * min(&rg_def),
            100.0 * min(&pm_def),
        );
        row(&format!("  WL{k} n-mass"), &nm);
        gain_best = gain_best.max(max(&gain));
        worst_ml = worst_ml.min(min(&ml_def));
        worst_nm = worst_nm.min(min(&nm_def));
        worst_rg = worst_rg.min(min(&rg_def));
        worst_pm = worst_pm.min(min(&pm_def));
        if min(&rg_def) < -0.05 {
            regression_below_default.push(k);
        }
        averages.push((ml.average_pct, rg.average_pct));
    }
    println!(
        "fig11/12: best gain over maximum-local {:.0}%; worst program against default: \
         maximum-local {:.0}%, n-mass {:.0}%, regression {:.0}%, profiled MPKI {:.0}%; \
         regression more than 5% below default in WL{regression_below_default:?}",
        100.0 * gain_best,
        100.0 * worst_ml,
        100.0 * worst_nm,
        100.0 * worst_rg,
        100.0 * worst_pm,
    );
    let (ml, rg): (Vec<f64>, Vec<f64>) = averages.into_iter().unzip();
    println!(
        "fig11/12: average over the workloads: maximum-local {:.1}%, regression {:.1}%",
        mean(&ml),
        mean(&rg)
    );
    assert!((0.10..=0.60).contains(&gain_best), "{gain_best}");
    assert!((-0.16..=-0.08).contains(&worst_ml), "{worst_ml}");
    assert!(
        worst_nm < -0.08 && worst_pm < -0.08,
        "n-mass's worst program {worst_nm} ({worst_pm} on profiled MPKI): now within reach of \
         3%? update the docs"
    );
    assert!(
        (3..=5).contains(&regression_below_default.len()),
        "{regression_below_default:?}"
    );
    assert!(mean(&rg) <= mean(&ml), "{} vs {}", mean(&rg), mean(&ml));
}

/// \[Majo11\] abstract and §1: "up to 32%, and 7% on average" over default. The paper does not
/// say how the 7% is averaged; ours is the mean, over every case of Figures 10 to 12 (WL1 and
/// WL9 under the eight maps, WL1 to WL11 with every program on processor 0; WL1 and WL9 at
/// map 0000 counted once), of the workload's average improvement over default, and "up to"
/// is the best single program. Band: up to 20-50%, on average 3-15%.
#[test]
fn nmass_headline_over_default() {
    let mut cases: Vec<(usize, String)> = figure_10()
        .into_iter()
        .map(|(k, map, _)| (k, map.to_string()))
        .collect();
    for c in figures_11_12() {
        if !cases.contains(&c) {
            cases.push(c);
        }
    }
    let mut averages = Vec::new();
    let mut best = f64::NEG_INFINITY;
    for (k, map) in &cases {
        let gain = improvement(
            &slowdowns(*k, map, Pol::NMass),
            &slowdowns(*k, map, Pol::Default),
        );
        averages.push(mean(&gain));
        best = best.max(max(&gain));
    }
    let average = mean(&averages);
    println!(
        "headline: over {} cases, n-mass improves on default by up to {:.0}% and {:.1}% on \
         average",
        cases.len(),
        100.0 * best,
        100.0 * average
    );
    assert!((0.20..=0.50).contains(&best), "{best}");
    assert!((0.03..=0.15).contains(&average), "{average}");
}

/// [Majo11 §4.3-4.4]: "N-MASS never performs worse than default". Every four-process workload
/// (WL1 to WL9) under every allocation map of Table 3, with measured and with profiled (solo)
/// MPKI: N-MASS's average slowdown at most cfs-average's. (WL10 and WL11, eight processes, are
/// checked with every program on processor 0 in `nmass_fig11_fig12_...`: cfs-average there is
/// 70 splits a map.) Not reproduced in two cases, which the test names: WL8 under maps 0000
/// and 0001 with profiled MPKI, where the refinement moves milc and mcf together to processor 1
/// (docs/reproduction.md).
#[test]
fn nmass_never_worse_than_default_in_any_map_or_input_mode() {
    let mut worse = Vec::new();
    for k in 1..=9 {
        for map in MAPS {
            let def = slowdowns(k, map, Pol::Default).average_pct;
            for p in [Pol::NMass, Pol::ProfiledMpki] {
                let nm = slowdowns(k, map, p).average_pct;
                if nm > def {
                    println!("WL{k} {map} {p:?}: {nm:.1}% against {def:.1}%");
                    worse.push(format!("WL{k} {map} {p:?}"));
                }
            }
        }
    }
    println!("n-mass worse than default: {worse:?}");
    assert_eq!(worse, ["WL8 0001 ProfiledMpki", "WL8 0000 ProfiledMpki"]);
}
