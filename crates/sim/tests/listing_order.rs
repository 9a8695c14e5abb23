//! Results do not depend on the order a scenario lists its programs (issue 39): programs that
//! start together allocate together, each at its own rate (`SimMachine` allocation, docs/
//! scenario-format.md), so that a program listed first does not take the still-empty home
//! node of one listed later. Every permutation of each scenario's `[[app]]` tables runs under
//! first-touch, usage-aware and hybrid; each program's bytes per node must match across
//! permutations exactly and its completion time within a relative 1e-12 (room for a change of
//! floating-point summation order: the solver's classes come in the listing's order; the
//! times are identical when written).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_engine::EngineConfig;
use rondpoint_sim::SimConfig;
use rondpoint_sim::experiment::{self, AppResult};
use rondpoint_sim::machine_preset::MachinePreset;
use rondpoint_sim::scenario::Scenario;
use rondpoint_sim::spec::MachineSpec;

const POLICIES: [&str; 3] = ["first-touch", "usage-aware", "hybrid"];
const GIB: f64 = (1u64 << 30) as f64;

/// `nodes` nodes of 2 cores and `mem_mib` MiB each, distances `distances`.
fn machine(nodes: usize, mem_mib: u64, distances: &[Vec<u32>]) -> MachineSpec {
    let p: MachinePreset = toml::from_str(&format!(
        r#"
name = "order-{nodes}"
description = "test machine"
nodes = {nodes}
cores_per_node = 2
freq_ghz = 2.0
llc_bytes = 4194304
mem_bytes_per_node = {}
mc_bandwidth_gbs = 10.0
link_bandwidth_gbs = 5.0
distances = {distances:?}
[latency]
model = "hops"
local_ns = 80.0
hop_ns = 30.0
"#,
        mem_mib << 20
    ))
    .unwrap();
    MachineSpec::from_preset(&p).unwrap()
}

/// 4 nodes of 1 GiB; node 0's fallback order is 0, 1, 2, 3.
fn four_nodes() -> MachineSpec {
    let d = vec![
        vec![10, 16, 16, 22],
        vec![16, 10, 22, 16],
        vec![16, 22, 10, 16],
        vec![22, 16, 16, 10],
    ];
    machine(4, 1024, &d)
}

/// 16 nodes of 512 MiB on a 4 x 4 mesh (10 + 6 per hop).
fn sixteen_nodes() -> MachineSpec {
    let hops = |a: usize, b: usize| (a % 4).abs_diff(b % 4) + (a / 4).abs_diff(b / 4);
    let d: Vec<Vec<u32>> = (0..16)
        .map(|a| (0..16).map(|b| 10 + 6 * hops(a, b) as u32).collect())
        .collect();
    machine(16, 512, &d)
}

/// A program of two threads on `node` with `mib` MiB, first touched `first_touch` (`main`:
/// by one thread, so at half the pace of `partitioned`).
fn program(name: &str, node: u16, mib: u32, mpki: f64, first_touch: &str) -> String {
    format!(
        r#"
[[app]]
name = "{name}"
threads = 2
placement = {{ node = {node} }}
instructions = 4e8
cpi_base = 1.0
mlp = 4.0
mpki = {mpki}
mrc_ref_bytes = 1048576
[[app.region]]
name = "data"
size_mib = {mib}
first_touch = "{first_touch}"
pattern = "partitioned"
share = 1.0
write_ratio = 0.3
"#
    )
}

fn scenario(programs: &[&String]) -> Scenario {
    let mut text = String::from("name = \"order\"\ndescription = \"listing order\"\n");
    for p in programs {
        text.push_str(p);
    }
    toml::from_str(&text).unwrap()
}

/// Every ordering of `items`.
fn permutations<T: Clone>(items: &[T]) -> Vec<Vec<T>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first.clone());
            out.push(p);
        }
    }
    out
}

/// Each program's result under `policy`, by name.
fn run(spec: &MachineSpec, s: &Scenario, policy: &str) -> Vec<AppResult> {
    let mut p = rondpoint_policy::by_name(policy).unwrap();
    let r = experiment::run(
        spec,
        s,
        p.as_mut(),
        &SimConfig::default(),
        &EngineConfig::default(),
        |_| {},
    )
    .unwrap();
    let mut apps = r.apps;
    apps.sort_by(|a, b| a.name.cmp(&b.name));
    apps
}

/// Runs every permutation of `programs` under each policy and checks each program's results
/// match the first permutation's; returns the first permutation's results per policy.
fn same_in_every_order(spec: &MachineSpec, programs: &[String]) -> Vec<Vec<AppResult>> {
    let refs: Vec<&String> = programs.iter().collect();
    let orders = permutations(&refs);
    let (mut firsts, mut worst) = (Vec::new(), 0.0f64);
    for policy in POLICIES {
        let first = run(spec, &scenario(&orders[0]), policy);
        for order in &orders[1..] {
            let got = run(spec, &scenario(order), policy);
            for (a, b) in first.iter().zip(&got) {
                assert_eq!(a.name, b.name);
                let rel = (a.completion_s - b.completion_s).abs() / a.completion_s;
                worst = worst.max(rel);
                assert!(
                    rel <= 1e-12,
                    "{policy}, {}: {} s listed first, {} s in another order",
                    a.name,
                    a.completion_s,
                    b.completion_s
                );
                assert_eq!(a.bytes_by_node, b.bytes_by_node, "{policy}, {}", a.name);
            }
        }
        for a in &first {
            let gib: Vec<f64> = a.bytes_by_node.iter().map(|&b| b as f64 / GIB).collect();
            println!(
                "{policy} {}: {:.3} s, GiB {gib:.2?}",
                a.name, a.completion_s
            );
        }
        firsts.push(first);
    }
    println!("largest relative difference of a completion time: {worst:.1e}");
    firsts
}

/// GiB of `app` off node `home`.
fn off_home(apps: &[AppResult], app: &str, home: usize) -> f64 {
    let a = apps.iter().find(|a| a.name == app).unwrap();
    let total: u64 = a.bytes_by_node.iter().sum();
    (total - a.bytes_by_node[home]) as f64 / GIB
}

/// Two programs on 4 nodes: `big` on node 0 overflows it by half a GiB while `small`, touched
/// by one thread, is still filling node 1 (first in node 0's fallback order), under every
/// policy.
#[test]
fn two_programs_on_four_nodes_place_alike_in_either_order() {
    let programs = [
        program("big", 0, 1536, 15.0, "partitioned"),
        program("small", 1, 800, 5.0, "main"),
    ];
    for apps in same_in_every_order(&four_nodes(), &programs) {
        assert!(off_home(&apps, "big", 0) > 0.5, "{apps:?}");
    }
}

/// Three programs on 4 nodes, all six orders: `big` overflows node 0 while `mid` (one
/// toucher) still fills node 1; `small` has filled node 2 by then.
#[test]
fn three_programs_on_four_nodes_place_alike_in_every_order() {
    let programs = [
        program("big", 0, 1536, 15.0, "partitioned"),
        program("mid", 1, 700, 8.0, "main"),
        program("small", 2, 400, 3.0, "partitioned"),
    ];
    for apps in same_in_every_order(&four_nodes(), &programs) {
        assert!(off_home(&apps, "big", 0) > 0.5, "{apps:?}");
    }
}

/// Two programs on 16 nodes: `big` on node 5 overflows it into node 1, first of its
/// fallback order and the home of `small`, which is still filling it.
#[test]
fn two_programs_on_sixteen_nodes_place_alike_in_either_order() {
    let programs = [
        program("big", 5, 1024, 15.0, "partitioned"),
        program("small", 1, 400, 5.0, "main"),
    ];
    for apps in same_in_every_order(&sixteen_nodes(), &programs) {
        assert!(off_home(&apps, "big", 5) > 0.4, "{apps:?}");
    }
}
