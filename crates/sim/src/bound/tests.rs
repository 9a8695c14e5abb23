use super::problem::{Place, Problem};
use super::search::{SearchConfig, search};
use super::*;
use crate::presets;
use crate::solver::SolverConfig;
use proptest::prelude::*;

/// A machine of `nodes` nodes of 4 cores, fully connected, remote 1.6x local.
fn machine(nodes: usize, mc_gbs: f64) -> MachineSpec {
    let d: Vec<Vec<u32>> = (0..nodes)
        .map(|a| (0..nodes).map(|b| if a == b { 10 } else { 20 }).collect())
        .collect();
    let text = format!(
        r#"
name = "test-{nodes}"
description = "test machine"
nodes = {nodes}
cores_per_node = 4
freq_ghz = 2.0
llc_bytes = 8388608
mem_bytes_per_node = 4294967296
mc_bandwidth_gbs = {mc_gbs}
link_bandwidth_gbs = 12.0
distances = {d:?}
[latency]
model = "hops"
local_ns = 80.0
hop_ns = 50.0
"#
    );
    let preset = presets::machine_from_text("test", &text).expect("test machine parses");
    MachineSpec::from_preset(&preset).expect("test machine builds")
}

/// One application of `threads` threads spread over the nodes, with one region.
fn scenario(threads: u32, region: &str) -> Scenario {
    let text = format!(
        r#"
name = "test"
description = "test scenario"
[[app]]
name = "app"
threads = {threads}
placement = "spread"
instructions = 2e9
cpi_base = 0.7
mlp = 6.0
mpki = 20.0
mrc_ref_bytes = 2097152
[[app.region]]
name = "data"
size_mib = 64
{region}
"#
    );
    presets::workload_from_text("test", &text).expect("test scenario parses")
}

fn problem(spec: &MachineSpec, sc: &Scenario) -> Problem {
    SimMachine::new(spec.clone(), sc, SimConfig::default())
        .expect("builds")
        .problem()
}

fn spread(place: &Place) -> &[f64] {
    match place {
        Place::Spread(s) => s,
        Place::Replicated(m) => panic!("replicated on {m:b}"),
    }
}

#[test]
fn private_data_first_touched_by_one_thread_goes_to_each_owner() {
    let spec = machine(2, 20.0);
    let sc = scenario(
        2,
        r#"first_touch = "main"
pattern = "partitioned"
share = 1.0
write_ratio = 0.3"#,
    );
    let p = problem(&spec, &sc);
    assert_eq!(p.groups.len(), 2);
    // First touch put both blocks on node 0.
    assert!(spread(&p.first_touch[1])[0] > 0.99);
    let found = search(&spec, &p, SolverConfig::default(), SearchConfig::default());
    assert!(spread(&found.layout[0])[0] > 0.9, "{:?}", found.layout);
    assert!(spread(&found.layout[1])[1] > 0.9, "{:?}", found.layout);
    assert!(found.estimate_ns < 0.95 * found.first_touch_ns);
}

#[test]
fn read_only_shared_data_is_replicated_and_written_data_is_not() {
    let spec = machine(2, 20.0);
    let region = |w: f64| {
        format!(
            "first_touch = \"main\"\npattern = \"shared-uniform\"\nshare = 1.0\nwrite_ratio = {w}"
        )
    };
    let p = problem(&spec, &scenario(8, &region(0.0)));
    let found = search(&spec, &p, SolverConfig::default(), SearchConfig::default());
    assert_eq!(found.layout, vec![Place::Replicated(0b11)]);
    let p = problem(&spec, &scenario(8, &region(0.3)));
    let found = search(&spec, &p, SolverConfig::default(), SearchConfig::default());
    // Eight threads saturate one controller: the written table is spread over both.
    let s = spread(&found.layout[0]);
    assert!(s[0] > 0.2 && s[1] > 0.2, "{s:?}");
}

#[test]
fn the_installed_layout_places_pages_as_planned() {
    let spec = machine(4, 20.0);
    let sc = scenario(
        4,
        "first_touch = \"main\"\npattern = \"shared-uniform\"\nshare = 1.0\nwrite_ratio = 0.5",
    );
    let mut m = SimMachine::new(spec.clone(), &sc, SimConfig::default()).expect("builds");
    let pages = m.problem().groups[0].pages as f64;
    m.install(vec![Place::Spread(vec![0.5, 0.25, 0.25, 0.0])]);
    m.allocate_all();
    let on = m.pages_per_node();
    for (got, want) in on.iter().zip([0.5, 0.25, 0.25, 0.0]) {
        assert!((*got as f64 - want * pages).abs() <= 1.0, "{on:?}");
    }
}

#[test]
fn the_bound_is_at_least_as_fast_as_first_touch_and_says_which_layout_won() {
    let spec = machine(2, 10.0);
    let sc = scenario(
        8,
        "first_touch = \"main\"\npattern = \"shared-uniform\"\nshare = 1.0\nwrite_ratio = 0.2",
    );
    let engine = EngineConfig::default();
    let sim = SimConfig::default();
    let b = run(&spec, &sc, &sim, &engine, SearchConfig::default(), |_| {}).expect("runs");
    let mut ft = FirstTouch;
    let f = experiment::run(&spec, &sc, &mut ft, &sim, &engine, |_| {}).expect("runs");
    assert_eq!(b.policy, NAME);
    assert!(
        b.completion_s < 0.9 * f.completion_s,
        "{} vs {}",
        b.completion_s,
        f.completion_s
    );
    assert!(b.notes[0].starts_with("searched layout"), "{:?}", b.notes);
}

prop_compose! {
    /// A scenario of one application on `nodes` nodes: a private region and a shared one.
    fn arb_case()(nodes in 2usize..5, threads in 1u32..9, mc in 5.0f64..40.0,
                  main in any::<bool>(), shared_write in prop_oneof![Just(0.0), 0.05f64..0.6],
                  share in 0.1f64..0.9)
        -> (MachineSpec, Scenario) {
        let spec = machine(nodes, mc);
        let touch = if main { "main" } else { "partitioned" };
        let text = format!(
            "first_touch = \"{touch}\"\npattern = \"partitioned\"\nshare = {share}\n\
             write_ratio = 0.3\n[[app.region]]\nname = \"table\"\nsize_mib = 32\n\
             first_touch = \"main\"\npattern = \"shared-uniform\"\nshare = {}\n\
             write_ratio = {shared_write}", 1.0 - share);
        (spec, scenario(threads, &text))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The search ends no worse, by the model, than any of the simple layouts a policy could
    /// reach: first touch, each private block with its thread, everything interleaved.
    #[test]
    fn the_search_beats_the_simple_layouts((spec, sc) in arb_case()) {
        let p = problem(&spec, &sc);
        let found = search(&spec, &p, SolverConfig::default(), SearchConfig::default());
        prop_assert!(p.fits(&found.layout));
        prop_assert!(found.estimate_ns <= found.first_touch_ns * (1.0 + 1e-9));
        let mut ev = super::eval::Evaluator::new(&spec, &p, SolverConfig::default());
        let n = spec.nodes();
        let even = Place::Spread(vec![1.0 / n as f64; n]);
        let mut local = p.first_touch.clone();
        for th in &p.threads {
            for &(g, w) in &th.weights {
                if w > 0.5 && p.groups[g].region == 0 {
                    let mut s = vec![0.0; n];
                    s[th.node] = 1.0;
                    local[g] = Place::Spread(s);
                }
            }
        }
        for other in [vec![even; p.groups.len()], local] {
            if p.fits(&other) {
                let e = ev.estimate(&other).objective;
                prop_assert!(found.estimate_ns <= e * 1.005, "{} > {e}", found.estimate_ns);
            }
        }
    }
}
