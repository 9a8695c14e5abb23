//! Reproductions of the seed papers' results in the simulator, each with an honest tolerance
//! band. docs/reproduction.md has the table of what we get beside what the papers report;
//! `cargo test -p rondpoint-sim --test sim -- --nocapture --skip _reproduction:: reproduction::` prints our figures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_engine::EngineConfig;
use rondpoint_model::{Action, MemPolicy, NodeId, Observation, ProcessInfo, Topology};
use rondpoint_policy_api::Policy;
use rondpoint_sim::experiment::{self, RunResult};
use rondpoint_sim::scenario::{Scenario, ThreadCount, ThreadPlacement};
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, presets};

fn machine(name: &str) -> MachineSpec {
    MachineSpec::from_preset(&presets::machine(name).unwrap()).unwrap()
}

fn workload(name: &str) -> Scenario {
    presets::workload(name).unwrap()
}

fn run(m: &MachineSpec, s: &Scenario, policy: &mut dyn Policy) -> RunResult {
    experiment::run(
        m,
        s,
        policy,
        &SimConfig::default(),
        &EngineConfig::default(),
        |_| {},
    )
    .unwrap()
}

fn run_named(m: &MachineSpec, s: &Scenario, policy: &str) -> RunResult {
    run(m, s, rondpoint_policy::by_name(policy).unwrap().as_mut())
}

/// Binds every process's memory to one node before it starts (numactl --membind).
struct BindTo(u16);

impl Policy for BindTo {
    fn name(&self) -> &str {
        "bind"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn start(&mut self, _: &Topology, procs: &[ProcessInfo]) -> Vec<Action> {
        procs
            .iter()
            .map(|p| Action::SetMemPolicy {
                pid: p.pid,
                policy: MemPolicy::Bind {
                    nodes: vec![NodeId(self.0)],
                },
            })
            .collect()
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

/// A pointer-chasing read microbenchmark: one thread on `node`, every access a dependent miss.
fn pointer_chase(node: u16) -> Scenario {
    toml::from_str(&format!(
        r#"
name = "pointer-chase"
description = "dependent reads over a buffer far larger than the LLC"
[[app]]
name = "chase"
threads = 1
placement = {{ node = {node} }}
instructions = 2e7
cpi_base = 1.0
mlp = 1.0
mpki = 250.0
mrc_ref_bytes = 1048576
[[app.region]]
name = "buffer"
size_mib = 64
first_touch = "main"
pattern = "shared-uniform"
share = 1.0
"#
    ))
    .unwrap()
}

fn within(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want
}

/// [Gaud10 Table 1]: read latency (cycles) from each processor to its local
/// memory and to its farthest memory node on the Dell R905. The latency parameters of the
/// r905-asymmetric preset were fitted to this table, so this checks the model's structure
/// (hop count plus broadcast-probe term) carries all eight numbers, within 5%.
#[test]
fn r905_table1_local_and_farthest_latency() {
    let m = machine("r905-asymmetric");
    let farthest = [3u16, 0, 0, 0];
    let paper_local = [256.0, 193.0, 194.0, 263.0];
    let paper_far = [377.0, 287.0, 290.0, 376.0];
    for node in 0..4u16 {
        let s = pointer_chase(node);
        let local = run(&m, &s, &mut BindTo(node)).avg_latency_cycles;
        let far = run(&m, &s, &mut BindTo(farthest[node as usize])).avg_latency_cycles;
        println!(
            "r905 node {node}: local {local:.0} (paper {}), farthest {far:.0} (paper {})",
            paper_local[node as usize], paper_far[node as usize]
        );
        assert!(
            within(local, paper_local[node as usize], 0.05),
            "node {node} local {local}"
        );
        assert!(
            within(far, paper_far[node as usize], 0.05),
            "node {node} far {far}"
        );
    }
}

/// A single-threaded copy of a workload preset, on node 0.
fn single_threaded(name: &str) -> Scenario {
    let mut s = workload(name);
    for app in &mut s.apps {
        app.threads = ThreadCount::Count(1);
        app.placement = ThreadPlacement::Node(0);
    }
    s
}

/// [Dashti13 Figure 2a]: one thread, no congestion, all memory remote vs all
/// local on machine A: "at most 20%" slower over the paper's NAS, PARSEC and Metis set. The
/// paper does not say how far the remote node was; we put the memory one hop away (node 1) and
/// also report two hops (node 3). Band: every application slower remote than local (by more
/// than 1%) and at most 30% slower one hop away; at least three quarters of them at most 20%.
/// Our CG exceeds 20%: one CG thread with its chosen MLP of 6 asks more of an HT 1.0 link than
/// the link carries (docs/reproduction.md).
#[test]
fn carrefour_fig2a_remote_vs_local_single_thread() {
    let m = machine("opteron-8385");
    let apps = [
        "streamcluster",
        "pca",
        "facesim",
        "facerec",
        "mg",
        "sp",
        "cg",
        "bt",
        "lu",
        "ua",
    ];
    let mut within_20 = 0;
    for name in apps {
        let s = single_threaded(name);
        let local = run(&m, &s, &mut BindTo(0)).completion_s;
        let remote = run(&m, &s, &mut BindTo(1)).completion_s;
        let far = run(&m, &s, &mut BindTo(3)).completion_s;
        let slowdown = remote / local - 1.0;
        println!(
            "fig2a {name}: remote/local = {:.3} one hop, {:.3} two hops",
            remote / local,
            far / local
        );
        assert!(
            slowdown > 0.01,
            "{name}: remote should be slower ({slowdown})"
        );
        assert!(slowdown <= 0.30, "{name}: {slowdown} > 30%");
        assert!(far >= remote, "{name}: two hops no faster than one");
        within_20 += usize::from(slowdown <= 0.20);
    }
    assert!(
        4 * within_20 >= 3 * apps.len(),
        "only {within_20} of {} within 20%",
        apps.len()
    );
}

struct Row {
    latency: f64,
    mc_imbalance: f64,
    lar: f64,
    ipc: f64,
}

fn table1_row(m: &MachineSpec, name: &str, policy: &str) -> Row {
    let r = run_named(m, &workload(name), policy);
    println!(
        "table1 {name} {policy}: latency {:.0} cycles, MC imbalance {:.0}%, LAR {:.0}%, IC imbalance {:.0}%, IPC {:.2}",
        r.avg_latency_cycles,
        r.mc_imbalance,
        100.0 * r.lar,
        r.ic_imbalance,
        r.ipc
    );
    Row {
        latency: r.avg_latency_cycles,
        mc_imbalance: r.mc_imbalance,
        lar: r.lar,
        ipc: r.ipc,
    }
}

/// [Dashti13 Table 1] on machine A. Paper: streamcluster first-touch 1197 cycles,
/// MC imbalance 170%, LAR 25%, IPC 0.15; interleave 476, 8%, 25%, 0.29. PCA first-touch 660,
/// 130%, 33%, 0.36; interleave 465, 5%, 25%, 0.52.
/// Bands: directions always; first-touch imbalance and LAR close; latency and IPC within a
/// factor stated per check (see docs/reproduction.md for why the interleaved latency is high).
#[test]
fn carrefour_table1_streamcluster_and_pca() {
    let m = machine("opteron-8385");
    let ft = table1_row(&m, "streamcluster", "first-touch");
    let il = table1_row(&m, "streamcluster", "interleave");
    assert!(
        within(ft.latency, 1197.0, 0.30),
        "sc ft latency {}",
        ft.latency
    );
    assert!(
        within(ft.mc_imbalance, 170.0, 0.10),
        "sc ft imbalance {}",
        ft.mc_imbalance
    );
    assert!((ft.lar - 0.25).abs() < 0.03, "sc ft lar {}", ft.lar);
    assert!(within(ft.ipc, 0.15, 0.35), "sc ft ipc {}", ft.ipc);
    assert!(
        il.mc_imbalance < 15.0,
        "sc il imbalance {}",
        il.mc_imbalance
    );
    assert!((il.lar - 0.25).abs() < 0.03, "sc il lar {}", il.lar);
    assert!(il.latency < 0.75 * ft.latency, "interleave cuts latency");
    assert!(il.ipc > 1.3 * ft.ipc, "interleave raises IPC");

    let ft = table1_row(&m, "pca", "first-touch");
    let il = table1_row(&m, "pca", "interleave");
    assert!(
        ft.mc_imbalance > 80.0,
        "pca ft imbalance {}",
        ft.mc_imbalance
    );
    assert!(
        il.mc_imbalance < 15.0,
        "pca il imbalance {}",
        il.mc_imbalance
    );
    assert!(
        ft.lar > il.lar,
        "pca: first-touch is more local than interleave"
    );
    assert!(il.latency < ft.latency, "pca: interleave cuts latency");
    assert!(il.ipc > ft.ipc, "pca: interleave raises IPC");
}

/// [Majo11 Figure 4]: four soplex clones with all memory on processor 0; as
/// more clones run locally (higher locality) they share one LLC and their MPKI rises: +35% at
/// 100% locality, a minimum (+19%) near 57% locality. We check the rise is monotone in the
/// number of local clones beyond two, and the 4-local increase is 20-50%.
#[test]
fn nmass_fig4_soplex_mpki_rises_with_locality() {
    let m = machine("nehalem-e5520-2s");
    let solo = mpki_of_clones(&m, 1, 0);
    let mut rise = Vec::new();
    for local in (2..=4).rev() {
        let mpki = mpki_of_clones(&m, local, 4 - local);
        let r = mpki / solo - 1.0;
        println!(
            "fig4 soplex: {local} local, {} remote: MPKI +{:.0}%",
            4 - local,
            100.0 * r
        );
        rise.push(r);
    }
    assert!(rise[0] > rise[1] && rise[1] > rise[2] - 1e-9, "{rise:?}");
    assert!((0.20..=0.50).contains(&rise[0]), "4 local: {}", rise[0]);
}

/// Average MPKI of soplex clones: `local` on processor 0, `remote` on processor 1, every
/// clone's memory on processor 0.
fn mpki_of_clones(m: &MachineSpec, local: usize, remote: usize) -> f64 {
    let base = workload("soplex");
    let mut s = base.clone();
    s.apps.clear();
    for i in 0..local + remote {
        let mut app = base.apps[0].clone();
        app.name = format!("soplex-{i}");
        app.threads = ThreadCount::Count(1);
        app.placement = ThreadPlacement::Node(if i < local { 0 } else { 1 });
        s.apps.push(app);
    }
    let mut sim = rondpoint_sim::SimMachine::new(m.clone(), &s, SimConfig::default()).unwrap();
    let mut policy = BindTo(0);
    let mut misses = 0.0;
    let mut instr = 0.0;
    rondpoint_engine::run(
        &mut sim,
        &mut policy,
        &mut rondpoint_engine::VirtualClock::default(),
        &EngineConfig {
            time_limit_ns: Some(5_000_000_000),
            ..EngineConfig::default()
        },
        |r| {
            for t in &r.observation.counters.threads {
                misses += t.llc_misses as f64;
                instr += t.instructions as f64;
            }
        },
    )
    .unwrap();
    1000.0 * misses / instr
}
