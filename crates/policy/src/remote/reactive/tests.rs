use super::*;
use crate::remote::tests::process;
use crate::remote::tiers::{Grouping, all_tiers};
use proptest::prelude::*;
use rondpoint_model::NodeMemory;
use rondpoint_model::synthetic::TopologyBuilder;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn topo(n: usize) -> Topology {
    TopologyBuilder::new(n).build().unwrap()
}

/// Nodes of `total` bytes, `used` of each in use; the processes given.
fn observation(total: u64, used: &[u64], processes: Vec<ProcessInfo>) -> Observation {
    Observation {
        memory: used
            .iter()
            .enumerate()
            .map(|(i, &u)| NodeMemory {
                node: NodeId(i as u16),
                total_bytes: total,
                free_bytes: total - u,
            })
            .collect(),
        processes,
        ..Observation::default()
    }
}

const UNLIMITED: Limits = Limits {
    max_move_bytes: u64::MAX,
    min_move_bytes: 64 * MIB,
};

/// Carries out node page moves on an observation, as a backend would.
fn apply(o: &mut Observation, actions: &[Action]) {
    for a in actions {
        let Action::MoveNodePages {
            pid,
            from,
            to,
            pages,
        } = a
        else {
            panic!("{a:?}");
        };
        let bytes = pages * PAGE;
        let (f, t) = (usize::from(from.0), usize::from(to[0].0));
        let p = o.processes.iter_mut().find(|p| p.pid == *pid).unwrap();
        assert!(
            p.resident_bytes_by_node[f] >= bytes,
            "moves only what is there"
        );
        p.resident_bytes_by_node[f] -= bytes;
        p.resident_bytes_by_node[t] += bytes;
        assert!(
            o.memory[t].free_bytes >= bytes,
            "never onto a node without room"
        );
        o.memory[t].free_bytes -= bytes;
        o.memory[f].free_bytes += bytes;
    }
}

/// [Choe21 §5.1] mix-1 under first touch: mg on node 0 overflows 4.5 GiB onto node 1, which
/// also holds mcf's 9.5 GiB; nodes 2 and 3 hold 13.5 GiB each.
fn mix1() -> Observation {
    let mg = process(1, 0, vec![16 * GIB, 9 * GIB / 2, 0, 0]);
    observation(
        16 * GIB,
        &[16 * GIB, 14 * GIB, 27 * GIB / 2, 27 * GIB / 2],
        vec![mg],
    )
}

/// A 4-node machine, its tiers, and a fresh planner.
fn setup() -> (Topology, Vec<NodeTiers>, Reactive) {
    let t = topo(4);
    let tiers = all_tiers(&t, Grouping::Distance);
    (t, tiers, Reactive::default())
}

/// Bytes the actions move.
fn moved(actions: &[Action]) -> u64 {
    actions
        .iter()
        .map(|x| match x {
            Action::MoveNodePages { pages, .. } => pages * PAGE,
            _ => 0,
        })
        .sum()
}

fn resident(o: &Observation) -> Vec<u64> {
    o.processes[0].resident_bytes_by_node.clone()
}

#[test]
fn hybrid_spreads_the_fallback_node_overflow_evenly_within_the_budget() {
    let (t, tiers, mut r) = setup();
    let mut o = mix1();
    let limits = Limits {
        max_move_bytes: GIB,
        ..UNLIMITED
    };
    let mut epochs = 0;
    loop {
        let a = r.plan(&t, &o, OverflowSpread::Interleave, &tiers, limits);
        if a.is_empty() {
            break;
        }
        assert!(moved(&a) <= GIB);
        apply(&mut o, &a);
        epochs += 1;
    }
    assert_eq!(epochs, 3, "3 GiB to move at 1 GiB an epoch");
    let m = resident(&o);
    assert!(r.is_settled(Pid(1)));
    assert_eq!(m[0], 16 * GIB, "local pages never move");
    for i in 1..4 {
        assert!(m[i].abs_diff(3 * GIB / 2) <= 4 * MIB, "{m:?}");
    }
}

#[test]
fn usage_aware_fills_the_least_used_node_to_the_others_level_first() {
    let (t, tiers, mut r) = setup();
    // Overflow spread evenly (as hybrid left it): usage-aware wants it on node 1, the least
    // used without it (9.5 GiB against 13.5), until node 1 is as used as the others.
    let mg = process(1, 0, vec![16 * GIB, 3 * GIB / 2, 3 * GIB / 2, 3 * GIB / 2]);
    let mut o = observation(
        16 * GIB,
        &[16 * GIB, 11 * GIB, 15 * GIB, 15 * GIB],
        vec![mg],
    );
    let a = r.plan(&t, &o, OverflowSpread::FewestAllocated, &tiers, UNLIMITED);
    apply(&mut o, &a);
    let m = resident(&o);
    assert!(m[1] >= 4 * GIB && m[1] <= 4 * GIB + 256 * MIB, "{m:?}");
    assert_eq!(m[1] + m[2] + m[3], 9 * GIB / 2);
    assert!(
        r.plan(&t, &o, OverflowSpread::FewestAllocated, &tiers, UNLIMITED)
            .is_empty()
    );
}

#[test]
fn a_settled_process_is_planned_again_only_when_its_overflow_grows() {
    let (t, tiers, mut r) = setup();
    let mut o = mix1();
    let a = r.plan(&t, &o, OverflowSpread::Interleave, &tiers, UNLIMITED);
    apply(&mut o, &a);
    assert!(
        r.plan(&t, &o, OverflowSpread::Interleave, &tiers, UNLIMITED)
            .is_empty()
    );
    // Someone else (dynamic migration) moves 1 GiB from node 3 to node 2: left alone.
    o.processes[0].resident_bytes_by_node[3] -= GIB;
    o.processes[0].resident_bytes_by_node[2] += GIB;
    assert!(
        r.plan(&t, &o, OverflowSpread::Interleave, &tiers, UNLIMITED)
            .is_empty()
    );
    // 1 GiB more overflow lands on node 1: the whole overflow is planned again.
    o.processes[0].resident_bytes_by_node[1] += GIB;
    o.memory[1].free_bytes -= GIB;
    assert!(
        !r.plan(&t, &o, OverflowSpread::Interleave, &tiers, UNLIMITED)
            .is_empty()
    );
    assert!(!r.is_settled(Pid(1)));
}

#[test]
fn moves_the_machine_does_not_carry_out_stop_after_three_epochs() {
    let (t, tiers, mut r) = setup();
    let o = mix1();
    let planned: Vec<bool> = (0..5)
        .map(|_| {
            !r.plan(&t, &o, OverflowSpread::Interleave, &tiers, UNLIMITED)
                .is_empty()
        })
        .collect();
    assert_eq!(planned, [true, true, true, false, false]);
    assert!(r.is_settled(Pid(1)));
}

#[test]
fn processes_without_threads_or_overflow_are_left_alone() {
    let (t, tiers, mut r) = setup();
    let mut gone = process(2, 0, vec![GIB, GIB, 0, 0]);
    gone.threads.clear();
    let local = process(3, 2, vec![0, 0, GIB, 0]);
    let o = observation(16 * GIB, &[GIB, GIB, GIB, 0], vec![gone, local]);
    assert!(
        r.plan(&t, &o, OverflowSpread::Interleave, &tiers, UNLIMITED)
            .is_empty()
    );
    assert!(r.is_settled(Pid(3)) && !r.is_settled(Pid(2)));
}

fn spreads() -> impl Strategy<Value = OverflowSpread> {
    prop_oneof![
        Just(OverflowSpread::Interleave),
        Just(OverflowSpread::FewestAllocated),
        Just(OverflowSpread::MostFree),
    ]
}

proptest! {
    /// On any machine state: moves only take what a process has off nodes running none of
    /// its threads, never onto a node without room (checked by `apply`), within the budget;
    /// and once carried out with an unlimited budget, nothing is left to move.
    #[test]
    fn plans_are_feasible_within_budget_and_settle(
        spread in spreads(),
        homes in proptest::collection::vec(0u16..4, 1..4),
        fill in proptest::collection::vec(0u64..=16, 16),
        budget_gib in 1u64..8,
    ) {
        let (t, tiers, mut r) = setup();
        let total = 64 * GIB;
        let mut used = [0u64; 4];
        let processes: Vec<ProcessInfo> = homes
            .iter()
            .enumerate()
            .map(|(k, &h)| {
                let resident: Vec<u64> = (0..4).map(|n| fill[k * 4 + n] * GIB).collect();
                for n in 0..4 {
                    used[n] += resident[n];
                }
                process(k as i32 + 1, h, resident)
            })
            .collect();
        let mut o = observation(total, &used, processes);
        let before = o.clone();
        let limits = Limits { max_move_bytes: budget_gib * GIB, min_move_bytes: 64 * MIB };
        let a = r.plan(&t, &o, spread, &tiers, limits);
        prop_assert!(moved(&a) <= budget_gib * GIB);
        for x in &a {
            let Action::MoveNodePages { pid, from, to, .. } = x else { unreachable!() };
            let p = before.processes.iter().find(|p| p.pid == *pid).unwrap();
            let home = p.threads[0].node;
            prop_assert!(*from != home && to[0] != home, "{x:?}");
        }
        apply(&mut o, &a);
        let mut r = Reactive::default();
        for _ in 0..64 {
            let a = r.plan(&t, &o, spread, &tiers, UNLIMITED);
            if a.is_empty() {
                break;
            }
            apply(&mut o, &a);
        }
        prop_assert!(r.plan(&t, &o, spread, &tiers, UNLIMITED).is_empty());
    }
}
