use super::*;
use crate::remote::tests::process;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{Counters, NodeCounters, NodeMemory};

const GIB: u64 = 1 << 30;

/// Mix-1 under first touch: mg (node 0) overflows onto node 1 next to mcf; node 1 serves
/// 60 local and 40 remote (from node 0) accesses, node 2 (fotonik3d) 90, node 3 (cam4) 30.
fn mix1(by_source: [[u64; 4]; 4]) -> Observation {
    Observation {
        counters: Counters {
            nodes: (0..4)
                .map(|d| NodeCounters {
                    node: NodeId(d as u16),
                    dram_accesses_by_source: by_source[d].to_vec(),
                    ..NodeCounters::default()
                })
                .collect(),
            ..Counters::default()
        },
        memory: (0..4)
            .map(|d| NodeMemory {
                node: NodeId(d),
                total_bytes: 16 * GIB,
                free_bytes: 2 * GIB,
            })
            .collect(),
        processes: vec![
            process(1, 0, vec![15 * GIB, 4 * GIB, 0, 0]),
            process(2, 1, vec![0, 9 * GIB, 0, 0]),
            process(3, 2, vec![0, 0, 13 * GIB, 0]),
            process(4, 3, vec![0, 0, 0, 13 * GIB]),
        ],
        ..Observation::default()
    }
}

const FT: [[u64; 4]; 4] = [[150, 0, 0, 0], [40, 60, 0, 0], [0, 0, 90, 0], [0, 0, 0, 30]];

#[test]
fn moves_the_noisy_tenant_from_the_stressed_node_to_the_least_busy_once_a_period() {
    let t = TopologyBuilder::new(4).build().unwrap();
    let mut r = Rebalancer::new(DmConfig::default());
    let o = mix1(FT);
    assert!(r.decide(&t, &o, |_| false).is_empty(), "first epoch of two");
    let a = r.decide(&t, &o, |_| false);
    // Node 1 served 200 over two epochs, node 3 60; mg's 80 remote accesses came from its
    // 4 GiB there: half the gap (70) is 3.5 GiB, capped at the 512 MiB batch.
    assert_eq!(
        a,
        vec![Action::MoveNodePages {
            pid: Pid(1),
            from: NodeId(1),
            to: NodeList::from_slice(&[NodeId(3)]),
            pages: 512 * 256,
        }]
    );
    // A process whose placement is under way is not moved.
    r.decide(&t, &o, |_| false);
    assert!(r.decide(&t, &o, |p| p == Pid(1)).is_empty());
}

#[test]
fn nothing_without_interference_or_imbalance() {
    let t = TopologyBuilder::new(4).build().unwrap();
    let one = DmConfig {
        period_epochs: 1,
        ..DmConfig::default()
    };
    // Every node serves only its own CPUs: no node is stressed by interference.
    let local = [[150, 0, 0, 0], [0, 60, 0, 0], [0, 0, 90, 0], [0, 0, 0, 30]];
    let mut r = Rebalancer::new(one.clone());
    assert!(r.decide(&t, &mix1(local), |_| false).is_empty());
    // Node 1 at 100 against node 3 at 90: under the 20% threshold.
    let even = [[150, 0, 0, 0], [40, 60, 0, 0], [0, 0, 90, 0], [0, 0, 0, 90]];
    let mut r = Rebalancer::new(one);
    assert!(r.decide(&t, &mix1(even), |_| false).is_empty());
    // Closing half the gap takes less than a batch: 20 accesses of 10 per GiB -> 1 GiB ...
    let small_gap = [[150, 0, 0, 0], [40, 60, 0, 0], [0, 0, 90, 0], [0, 0, 0, 80]];
    let mut r = Rebalancer::new(DmConfig {
        period_epochs: 1,
        batch_mib: 4096,
        ..DmConfig::default()
    });
    let a = r.decide(&t, &mix1(small_gap), |_| false);
    assert!(
        matches!(&a[..], [Action::MoveNodePages { pages, .. }] if *pages == GIB / 4096),
        "{a:?}"
    );
}

#[test]
fn never_farther_from_the_tenant_than_the_stressed_node() {
    // Node 3 is two hops from node 0 (distance 30), node 1 one (20): no destination.
    let d = vec![
        vec![10, 20, 20, 30],
        vec![20, 10, 30, 20],
        vec![20, 30, 10, 20],
        vec![30, 20, 20, 10],
    ];
    let t = TopologyBuilder::new(4).distances(d).build().unwrap();
    let mut r = Rebalancer::new(DmConfig {
        period_epochs: 1,
        ..DmConfig::default()
    });
    let busy_two = [
        [150, 0, 0, 0],
        [40, 60, 0, 0],
        [0, 0, 190, 0],
        [0, 0, 0, 30],
    ];
    let a = r.decide(&t, &mix1(busy_two), |_| false);
    assert!(
        a.is_empty(),
        "node 2 is busier than node 1, node 3 too far: {a:?}"
    );
}

/// `t` with HMAT figures: idle latency `lat[s][d]` (ns) from every node and each node's
/// bandwidth (GB/s).
fn with_hmat(mut t: Topology, lat: &[&[u64]], gbs: &[f64]) -> Topology {
    use rondpoint_model::{Hmat, HmatPerf};
    let ids: Vec<NodeId> = t.nodes().iter().map(|n| n.id).collect();
    let cpus: Vec<usize> = (0..ids.len()).filter(|&i| t.nodes()[i].has_cpu()).collect();
    for (d, &id) in ids.iter().enumerate() {
        let mib_s = (gbs[d] * 1e9 / 1_048_576.0) as u64;
        let hmat = Hmat {
            access1: Some(HmatPerf {
                read_latency_ns: Some(lat[d][d]),
                read_bandwidth_mib_s: Some(mib_s),
                initiators: vec![id],
                ..HmatPerf::default()
            }),
            latency_from_ns: cpus.iter().map(|&s| (ids[s], lat[s][d])).collect(),
            ..Hmat::default()
        };
        assert!(t.set_hmat(id, hmat));
    }
    t
}

/// An observation over `duration_ns` of `by_source` accesses, each node `total` bytes with `free`
/// free, and `processes`.
fn observed(
    by_source: &[Vec<u64>],
    mem: &[(u64, u64)],
    processes: Vec<ProcessInfo>,
) -> Observation {
    Observation {
        counters: Counters {
            duration_ns: 1_000_000_000,
            nodes: by_source
                .iter()
                .enumerate()
                .map(|(d, row)| NodeCounters {
                    node: NodeId(d as u16),
                    dram_accesses_by_source: row.clone(),
                    ..NodeCounters::default()
                })
                .collect(),
            ..Counters::default()
        },
        memory: mem
            .iter()
            .enumerate()
            .map(|(d, &(total, free))| NodeMemory {
                node: NodeId(d as u16),
                total_bytes: total,
                free_bytes: free,
            })
            .collect(),
        processes,
        ..Observation::default()
    }
}

fn one_epoch() -> DmConfig {
    DmConfig {
        period_epochs: 1,
        ..DmConfig::default()
    }
}

/// Accesses per second that load `gbs` GB/s to utilisation `u` (64-byte lines).
fn at(u: f64, gbs: f64) -> u64 {
    (u * gbs * 1e9 / 64.0) as u64
}

/// xeon-2s-cxl: sockets 0 and 1 (130 ns local, 235 remote, 80 GB/s) and CPU-less node 2 (CXL:
/// 266 ns from socket 0, 369 from socket 1, 30 GB/s), nearer socket 0 by SLIT (14) than socket 1
/// (21). gups on node 0 with 18 GiB of overflow on node 1, where mcf runs.
fn cxl(hmat: bool, u1: f64) -> (Topology, Observation) {
    let t = TopologyBuilder::new(3)
        .memory_only(&[2])
        .distances(vec![vec![10, 21, 14], vec![21, 10, 24], vec![14, 24, 10]])
        .build()
        .unwrap();
    let t = if hmat {
        with_hmat(
            t,
            &[&[130, 235, 266], &[235, 130, 369], &[266, 369, 266]],
            &[80.0, 80.0, 30.0],
        )
    } else {
        t
    };
    // Node 1 at utilisation u1, a third of it gups's (from node 0).
    let n1 = at(u1, 80.0);
    let by_source = vec![
        vec![at(0.9, 80.0), 0, 0],
        vec![n1 / 3, n1 - n1 / 3, 0],
        vec![0, 0, 0],
    ];
    let mem = [(64 * GIB, 0), (64 * GIB, 14 * GIB), (64 * GIB, 62 * GIB)];
    let procs = vec![
        process(1, 0, vec![62 * GIB, 18 * GIB, 0]),
        process(2, 1, vec![0, 30 * GIB, 0]),
    ];
    (t, observed(&by_source, &mem, procs))
}

#[test]
fn never_to_slower_memory_unless_the_model_says_it_pays() {
    // Without HMAT figures: no model, and the CXL node, nearer by SLIT and least busy by
    // counts (where the old rule sent 14.5 GiB of gups), is never a destination.
    for u1 in [0.5, 0.99] {
        let (t, o) = cxl(false, u1);
        let a = Rebalancer::new(one_epoch()).decide(&t, &o, |_| false);
        assert!(a.is_empty(), "u1 {u1}: {a:?}");
    }
    // With them: 31 ns slower than socket 1 for gups, and socket 1's wait at 80 GB/s is under
    // 4 ns up to utilisation 0.8: the wait removed cannot pay for the distance.
    for u1 in [0.5, 0.8] {
        let (t, o) = cxl(true, u1);
        let a = Rebalancer::new(one_epoch()).decide(&t, &o, |_| false);
        assert!(a.is_empty(), "u1 {u1}: {a:?}");
    }
    // CXL memory as fast as socket 1's DRAM from socket 0: relieving a saturated socket 1 pays.
    let (t, o) = cxl(true, 0.99);
    let t = with_hmat(
        t,
        &[&[130, 235, 235], &[235, 130, 369], &[235, 369, 235]],
        &[80.0, 80.0, 30.0],
    );
    let a = Rebalancer::new(one_epoch()).decide(&t, &o, |_| false);
    assert!(
        matches!(&a[..], [Action::MoveNodePages { pid: Pid(1), from: NodeId(1), to, .. }] if to.as_slice() == [NodeId(2)]),
        "{a:?}"
    );
}

/// Two sockets of two dies: 90 ns local, 100 to the sibling die (SLIT 12), 150 across (32); one
/// DDR4 channel each (18.8 GB/s). The tenant on node 0 overflows onto its sibling, node 1, at
/// utilisation `u1`; nodes 2 and 3 idle.
fn dies(u1: f64) -> (Topology, Observation) {
    let d = (0..4)
        .map(|a: usize| {
            (0..4)
                .map(|b: usize| match (a == b, a / 2 == b / 2) {
                    (true, _) => 10,
                    (false, true) => 12,
                    (false, false) => 32,
                })
                .collect()
        })
        .collect();
    let t = TopologyBuilder::new(4).distances(d).build().unwrap();
    let lat: Vec<Vec<u64>> = (0..4)
        .map(|a| {
            (0..4)
                .map(|b| {
                    if a == b {
                        90
                    } else if a / 2 == b / 2 {
                        100
                    } else {
                        150
                    }
                })
                .collect()
        })
        .collect();
    let rows: Vec<&[u64]> = lat.iter().map(Vec::as_slice).collect();
    let t = with_hmat(t, &rows, &[18.8; 4]);
    let n1 = at(u1, 18.8);
    let by_source = vec![
        vec![at(0.5, 18.8), 0, 0, 0],
        vec![n1 / 2, n1 - n1 / 2, 0, 0],
        vec![0, 0, at(0.05, 18.8), 0],
        vec![0, 0, 0, at(0.1, 18.8)],
    ];
    let mem = [
        (16 * GIB, 0),
        (16 * GIB, 2 * GIB),
        (16 * GIB, 8 * GIB),
        (16 * GIB, 8 * GIB),
    ];
    let procs = vec![
        process(1, 0, vec![16 * GIB, 4 * GIB, 0, 0]),
        process(2, 1, vec![0, 10 * GIB, 0, 0]),
        process(3, 2, vec![0, 0, 8 * GIB, 0]),
        process(4, 3, vec![0, 0, 0, 8 * GIB]),
    ];
    (t, observed(&by_source, &mem, procs))
}

#[test]
fn a_stressed_sibling_die_is_relieved_across_the_socket_when_it_pays() {
    // The old rule (no farther than the stressed node) had no destination here.
    let (t, o) = dies(0.9);
    let a = Rebalancer::new(one_epoch()).decide(&t, &o, |_| false);
    assert!(
        matches!(&a[..], [Action::MoveNodePages { pid: Pid(1), from: NodeId(1), to, pages }]
            if to.as_slice() == [NodeId(2)] && *pages > 0),
        "node 2, the least busy: {a:?}"
    );
    // A lightly loaded sibling: 50 ns more for each access moved is not worth its little wait.
    let (t, o) = dies(0.3);
    assert!(
        Rebalancer::new(one_epoch())
            .decide(&t, &o, |_| false)
            .is_empty()
    );
}

#[test]
fn a_destination_keeps_its_high_watermark() {
    let t = TopologyBuilder::new(4).build().unwrap();
    let mut o = mix1(FT);
    // Node 3 with 100 MiB free: the batch (512 MiB) is cut to what leaves its high watermark
    // (8 MiB of min_free_kbytes's 32 MiB, plus twice 0.1% of 16 GiB: 40.8 MiB).
    o.memory[3].free_bytes = 100 << 20;
    let hw = model::high_watermark(&o, NodeId(3), 10.0);
    assert!((hw / (1 << 20) as f64 - 40.77).abs() < 0.01, "{hw}");
    let a = Rebalancer::new(one_epoch()).decide(&t, &o, |_| false);
    let [Action::MoveNodePages { to, pages, .. }] = &a[..] else {
        panic!("{a:?}")
    };
    assert_eq!(to.as_slice(), [NodeId(3)]);
    let moved = (*pages * 4096) as f64;
    assert!(moved > 0.0 && moved <= (100 << 20) as f64 - hw, "{moved}");
    // Below it already: no destination (node 2, with room, is within 20% of node 1).
    o.memory[3].free_bytes = 40 << 20;
    let a = Rebalancer::new(one_epoch()).decide(&t, &o, |_| false);
    assert!(a.is_empty(), "{a:?}");
}

#[test]
fn the_busiest_and_least_busy_are_by_utilisation_not_counts() {
    // Four one-hop nodes; node 3 has a quarter of the others' bandwidth. By counts node 3 (30)
    // is the least busy; by utilisation (0.12) it is busier than node 2 (50: 0.05) and than the
    // stressed node 1 (100: 0.1).
    let t = with_hmat(
        TopologyBuilder::new(4).build().unwrap(),
        &[
            &[80, 130, 130, 130],
            &[130, 80, 130, 130],
            &[130, 130, 80, 130],
            &[130, 130, 130, 80],
        ],
        &[18.8, 18.8, 18.8, 4.7],
    );
    let scale = at(0.01, 18.8);
    let traffic = [[150, 0, 0, 0], [40, 60, 0, 0], [0, 0, 50, 0], [0, 0, 0, 30]];
    let by_source: Vec<Vec<u64>> = traffic
        .iter()
        .map(|r| r.iter().map(|&a| a * scale / 10).collect())
        .collect();
    let mut o = mix1(traffic);
    o.counters = observed(&by_source, &[], Vec::new()).counters;
    let a = Rebalancer::new(one_epoch()).decide(&t, &o, |_| false);
    assert!(
        matches!(&a[..], [Action::MoveNodePages { from: NodeId(1), to, .. }] if to.as_slice() == [NodeId(2)]),
        "{a:?}"
    );
}

proptest::proptest! {
    /// Whatever the traffic and free memory: a move leaves its destination above its high
    /// watermark, and reaches the CXL node (31 ns slower for gups than socket 1) only with HMAT
    /// figures and socket 1's controllers above utilisation 0.8 (below, their whole wait is under
    /// 4 ns).
    #[test]
    fn moves_keep_room_and_never_reach_slower_memory_that_does_not_pay(
        u in proptest::collection::vec(0.0f64..1.2, 3),
        share in 0.05f64..0.95,
        free_gib in proptest::collection::vec(0u64..64, 3),
        hmat: bool,
    ) {
        let (t, mut o) = cxl(hmat, u[1]);
        let n1 = at(u[1], 80.0);
        let gups = (n1 as f64 * share) as u64;
        o.counters.nodes[0].dram_accesses_by_source = vec![at(u[0], 80.0), 0, 0];
        o.counters.nodes[1].dram_accesses_by_source = vec![gups, n1 - gups, 0];
        o.counters.nodes[2].dram_accesses_by_source = vec![at(u[2], 30.0), 0, 0];
        for (m, &f) in o.memory.iter_mut().zip(&free_gib) {
            m.free_bytes = f * GIB;
        }
        let a = Rebalancer::new(one_epoch()).decide(&t, &o, |_| false);
        for x in &a {
            let Action::MoveNodePages { to, pages, .. } = x else { continue };
            if to.as_slice().contains(&NodeId(2)) {
                proptest::prop_assert!(hmat && u[1] > 0.8, "{a:?}");
            }
            let dest = to.as_slice()[0];
            let free = o.memory.iter().find(|m| m.node == dest).unwrap().free_bytes as f64;
            let hw = model::high_watermark(&o, dest, 10.0);
            proptest::prop_assert!((*pages * 4096) as f64 <= free - hw, "{a:?}");
        }
    }
}
