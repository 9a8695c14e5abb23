//! Algorithms 2 and 3 of \[Majo11\], line by line and as properties.

use super::*;
use proptest::prelude::*;
use std::collections::VecDeque;

#[test]
fn maxlocal_merges_by_descending_penalty_and_ties_go_to_processor_1() {
    // Line 4: Processor 0's head goes first only with a strictly higher penalty.
    let procs = [
        proc(0, 1.3, 1.0),
        proc(1, 1.3, 1.0),
        proc(0, 1.1, 1.0),
        proc(1, 1.4, 1.0),
    ];
    let m = map_maxlocal(&procs, &nehalem());
    assert_eq!(m, vec![(3, 1), (1, 1), (0, 0), (2, 0)]);
}

#[test]
fn maxlocal_overflows_the_lowest_penalties_to_the_other_processor() {
    // Six processes homed on processor 0 (four cores): get_next_available_core falls back
    // to processor 1 for the two lowest penalties.
    let nps = [1.10, 1.40, 1.05, 1.30, 1.20, 1.00];
    let procs: Vec<Proc> = nps.iter().map(|&np| proc(0, np, 5.0)).collect();
    let m = map_maxlocal(&procs, &nehalem());
    assert_eq!(m, vec![(1, 0), (3, 0), (4, 0), (0, 0), (2, 1), (5, 1)]);
}

#[test]
fn maxlocal_leaves_out_what_finds_no_core() {
    let procs: Vec<Proc> = (0..3).map(|i| proc(0, 1.0 + f64::from(i), 1.0)).collect();
    let m = map_maxlocal(&procs, &machine(2, 1));
    assert_eq!(m, vec![(2, 0), (1, 1)]);
}

/// Four soplex clones homed on processor 0 (MPKI 27 each under contention, penalty 1.35):
/// the first pass moves the back of M0 to processor 1.
fn clones() -> Vec<Proc> {
    (0..4).map(|_| proc(0, 1.35, 27.0)).collect()
}

#[test]
fn line_11_and_12_the_source_loses_the_mpki_the_destination_gains_mpki_times_np() {
    let procs = [proc(0, 1.5, 10.0), proc(0, 1.2, 30.0)];
    let ml = map_maxlocal(&procs, &nehalem());
    assert_eq!(
        ml,
        vec![(0, 0), (1, 0)],
        "M0 = [b, a]: the back is the lower penalty"
    );
    let mut r = Refinement::new(&procs, &nehalem(), &ml);
    assert_eq!(r.pressure(), &[40.0, 0.0]);
    let d = r.pass(0, 1, params(60.0, false));
    assert_eq!(
        d,
        Decision::Move {
            process: 1,
            from: 0,
            to: 1
        }
    );
    assert!((r.pressure()[0] - 10.0).abs() < 1e-12);
    assert!((r.pressure()[1] - 36.0).abs() < 1e-12, "{:?}", r.pressure());
    // Next pass: moving the last process of M0 (15 more on processor 1) or bringing the
    // moved one home would both pull the pressures further apart than Δ = 26.
    assert_eq!(r.pass(0, 1, params(60.0, false)), Decision::Current);
}

#[test]
fn lines_15_16_the_threshold_is_strict_on_the_destination() {
    let procs = [proc(0, 1.5, 10.0), proc(0, 1.2, 30.0)];
    let ml = map_maxlocal(&procs, &nehalem());
    let mut r = Refinement::new(&procs, &nehalem(), &ml);
    assert_eq!(r.pass(0, 1, params(36.0, false)), Decision::Current);
    let mut r = Refinement::new(&procs, &nehalem(), &ml);
    assert_ne!(r.pass(0, 1, params(36.01, false)), Decision::Current);
}

#[test]
fn lines_13_15_a_full_destination_refuses_the_move_unless_we_exchange() {
    // Processor 1 has one core, taken by a process homed there.
    let m = Processors {
        cores: vec![4, 1],
        fallback: vec![vec![1], vec![0]],
    };
    let procs = [proc(0, 1.3, 20.0), proc(0, 1.2, 20.0), proc(1, 1.0, 0.5)];
    let ml = map_maxlocal(&procs, &m);
    let mut r = Refinement::new(&procs, &m, &ml);
    assert_eq!(r.pass(0, 1, params(60.0, false)), Decision::Current);
    let mut r = Refinement::new(&procs, &m, &ml);
    assert_eq!(
        r.pass(0, 1, params(60.0, true)),
        Decision::Swap {
            process: 1,
            with: 2,
            from: 0,
            to: 1
        }
    );
    // The exchanged process runs remotely on processor 0: its MPKI counts with its penalty.
    assert!((r.pressure()[0] - (20.0 + 0.5)).abs() < 1e-12);
    assert!((r.pressure()[1] - 24.0).abs() < 1e-12);
}

#[test]
fn line_18_the_moved_process_goes_to_the_front_of_the_destination() {
    let procs = [
        proc(0, 1.4, 20.0),
        proc(0, 1.3, 20.0),
        proc(0, 1.2, 20.0),
        proc(1, 1.1, 2.0),
    ];
    let ml = map_maxlocal(&procs, &nehalem());
    let mut r = Refinement::new(&procs, &nehalem(), &ml);
    r.pass(0, 1, params(60.0, false));
    assert_eq!(
        r.processes_on(1),
        vec![2, 3],
        "moved first, the back unchanged"
    );
    assert_eq!(r.processes_on(0), vec![0, 1]);
}

#[test]
fn line_28_the_passes_go_on_until_one_moves_nothing() {
    // As printed, the loop would stop after the first move.
    let procs = clones();
    let ml = map_maxlocal(&procs, &nehalem());
    let mut r = Refinement::new(&procs, &nehalem(), &ml);
    let moves = r.run(params(60.0, false));
    assert_eq!(
        moves.len(),
        1,
        "a second clone would take processor 1 to 72.9"
    );
    assert_eq!(r.mapping(), vec![Some(0), Some(0), Some(0), Some(1)]);
    let mut r = Refinement::new(&procs, &nehalem(), &ml);
    assert_eq!(
        r.run(params(100.0, false)).len(),
        2,
        "2 + 2, then no closer"
    );
}

#[test]
fn line_6_delta_no_move_that_pulls_the_pressures_apart() {
    // Well under the threshold, yet moving the back of M0 would leave the caches further
    // apart (23 against 1): the listing as printed would move it.
    let procs = [proc(0, 1.4, 10.0), proc(1, 1.0, 9.0)];
    let ml = map_maxlocal(&procs, &nehalem());
    let mut r = Refinement::new(&procs, &nehalem(), &ml);
    assert!(r.run(params(60.0, true)).is_empty());
}

#[test]
fn line_6_delta_no_move_that_only_flips_which_cache_is_pressured() {
    // A (MPKI 15, NP 1.258) and B (MPKI 2, NP 1.314), both homed on processor 0: moving A
    // brings the pressures closer (17 and 0 to 2 and 18.87) but leaves processor 1 more
    // pressured than processor 0 was, for A's penalty: both stay local.
    let procs = [proc(0, 1.258, 15.0), proc(0, 1.314, 2.0)];
    let ml = map_maxlocal(&procs, &nehalem());
    let mut r = Refinement::new(&procs, &nehalem(), &ml);
    assert!(r.run(params(60.0, true)).is_empty());
    assert_eq!(
        r.pressure(),
        &[17.0, 0.0],
        "a refused move changes no pressure"
    );
}

#[test]
fn line_10_which_processor_is_called_0_does_not_matter() {
    let procs = [
        proc(0, 1.4, 25.0),
        proc(0, 1.2, 8.0),
        proc(1, 1.1, 3.0),
        proc(0, 1.3, 20.0),
    ];
    let mirror: Vec<Proc> = procs
        .iter()
        .map(|p| proc(1 - p.home, p.np, p.mpki))
        .collect();
    let m = nehalem();
    let a = refine_mapping(&procs, &m, &map_maxlocal(&procs, &m), params(60.0, true));
    let b = refine_mapping(&mirror, &m, &map_maxlocal(&mirror, &m), params(60.0, true));
    let flipped: Vec<Option<usize>> = b.iter().map(|x| x.map(|n| 1 - n)).collect();
    assert_eq!(a, flipped);
}

/// Algorithm 2 transcribed from the listing, for two processors.
fn listing_algorithm_2(procs: &[Proc], cores: [usize; 2]) -> Vec<(usize, usize)> {
    let sorted = |home: usize| {
        let mut v: Vec<usize> = (0..procs.len())
            .filter(|&p| procs[p].home == home)
            .collect();
        v.sort_by(|&a, &b| procs[b].np.total_cmp(&procs[a].np));
        v.into_iter().collect::<VecDeque<usize>>()
    };
    let (mut l0, mut l1) = (sorted(0), sorted(1));
    let mut free = cores;
    let mut next_core = |p: usize| {
        let q = 1 - p;
        if free[p] > 0 {
            free[p] -= 1;
            Some(p)
        } else if free[q] > 0 {
            free[q] -= 1;
            Some(q)
        } else {
            None
        }
    };
    let mut m = Vec::new();
    let (mut p0, mut p1) = (l0.pop_front(), l1.pop_front());
    while p0.is_some() || p1.is_some() {
        let np = |p: Option<usize>| p.map(|p| procs[p].np);
        if p1.is_none() || np(p0) > np(p1) {
            if let (Some(p), Some(core)) = (p0, next_core(0)) {
                m.push((p, core));
            }
            p0 = l0.pop_front();
        } else {
            if let (Some(p), Some(core)) = (p1, next_core(1)) {
                m.push((p, core));
            }
            p1 = l1.pop_front();
        }
    }
    m
}

/// Algorithm 3 on two processors in the listing's terms (M0, M1, pressure_0, pressure_1),
/// with our readings of its gaps, and no exchanges.
fn listing_algorithm_3(
    procs: &[Proc],
    cores: [usize; 2],
    ml: &[(usize, usize)],
    t: f64,
) -> Vec<Option<usize>> {
    let mut m: [VecDeque<usize>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut pressure = [0.0, 0.0];
    let mut counted: Vec<f64> = procs.iter().map(|p| p.mpki).collect();
    for &(p, c) in ml {
        m[c].push_back(p);
        pressure[c] += procs[p].mpki;
    }
    let mut free = [cores[0] - m[0].len(), cores[1] - m[1].len()];
    let w = |p: usize, to: usize| {
        if procs[p].home == to {
            procs[p].mpki
        } else {
            procs[p].mpki * procs[p].np
        }
    };
    loop {
        let delta = (pressure[1] - pressure[0]).abs();
        let d01 = m[0].back().map_or(f64::INFINITY, |&p| w(p, 1));
        let d10 = m[1].back().map_or(f64::INFINITY, |&p| w(p, 0));
        let order = if d01 < d10 {
            [(0, 1), (1, 0)]
        } else {
            [(1, 0), (0, 1)]
        };
        let mut decision = false;
        for (from, to) in order {
            let Some(&p) = m[from].back() else { continue };
            let (pf, pt) = (pressure[from] - counted[p], pressure[to] + w(p, to));
            let fits = procs[p].home == to || pt < t;
            let relieves = pt.max(pf) < pressure[0].max(pressure[1]) - 1e-12;
            if free[to] > 0 && fits && (pt - pf).abs() < delta - 1e-12 && relieves {
                m[from].pop_back();
                m[to].push_front(p);
                free[to] -= 1;
                free[from] += 1;
                counted[p] = w(p, to);
                pressure = if from == 0 { [pf, pt] } else { [pt, pf] };
                decision = true;
                break;
            }
        }
        if !decision {
            break;
        }
    }
    let mut out = vec![None; procs.len()];
    for (node, list) in m.iter().enumerate() {
        for &p in list {
            out[p] = Some(node);
        }
    }
    out
}

fn procs_strategy(max: usize, nodes: usize) -> impl Strategy<Value = Vec<Proc>> {
    prop::collection::vec(
        (0..nodes, 100u32..150, 0u32..400)
            .prop_map(|(h, np, m)| proc(h, f64::from(np) / 100.0, f64::from(m) / 10.0)),
        0..=max,
    )
}

proptest! {
    #[test]
    fn maxlocal_on_two_processors_is_the_listing(procs in procs_strategy(8, 2), c0 in 1usize..5, c1 in 1usize..5) {
        let m = Processors { cores: vec![c0, c1], fallback: vec![vec![1], vec![0]] };
        prop_assert_eq!(map_maxlocal(&procs, &m), listing_algorithm_2(&procs, [c0, c1]));
    }

    #[test]
    fn refinement_on_two_processors_is_the_listing(procs in procs_strategy(8, 2), t in 20.0f64..120.0) {
        let m = nehalem();
        let ml = map_maxlocal(&procs, &m);
        prop_assert_eq!(
            refine_mapping(&procs, &m, &ml, params(t, false)),
            listing_algorithm_3(&procs, [4, 4], &ml, t)
        );
    }

    #[test]
    fn no_node_takes_more_processes_than_cores(
        procs in procs_strategy(12, 3),
        cores in prop::collection::vec(1usize..5, 3),
        swap in any::<bool>(),
    ) {
        let m = Processors { cores: cores.clone(), fallback: vec![vec![1, 2], vec![0, 2], vec![0, 1]] };
        let ml = map_maxlocal(&procs, &m);
        prop_assert_eq!(ml.len(), procs.len().min(cores.iter().sum()));
        for mapping in [
            ml.iter().fold(vec![None; procs.len()], |mut v, &(p, n)| { v[p] = Some(n); v }),
            refine_mapping(&procs, &m, &ml, params(60.0, swap)),
        ] {
            for (node, &c) in cores.iter().enumerate() {
                prop_assert!(mapping.iter().filter(|&&x| x == Some(node)).count() <= c);
            }
        }
    }

    #[test]
    fn maxlocal_puts_every_process_it_can_on_its_home_highest_penalty_first(
        procs in procs_strategy(12, 3),
        cores in prop::collection::vec(1usize..5, 3),
    ) {
        let m = Processors { cores: cores.clone(), fallback: vec![vec![1, 2], vec![0, 2], vec![0, 1]] };
        let ml = map_maxlocal(&procs, &m);
        for (node, &c) in cores.iter().enumerate() {
            let on = ml.iter().filter(|x| x.1 == node).count();
            let homed: Vec<usize> = (0..procs.len()).filter(|&p| procs[p].home == node).collect();
            let local: Vec<usize> = ml.iter().filter(|&&(p, n)| n == node && procs[p].home == node).map(|x| x.0).collect();
            let lowest_local = local.iter().map(|&p| procs[p].np).fold(f64::INFINITY, f64::min);
            for p in homed.iter().filter(|p| !local.contains(p)) {
                // Away from home only because every core there is taken, and after the
                // higher penalties homed there.
                prop_assert_eq!(on, c);
                prop_assert!(procs[*p].np <= lowest_local);
            }
        }
    }

    #[test]
    fn every_move_brings_its_pair_closer_and_stays_under_the_threshold(
        procs in procs_strategy(8, 2),
        t in 20.0f64..120.0,
        swap in any::<bool>(),
    ) {
        let m = machine(2, 4);
        let ml = map_maxlocal(&procs, &m);
        let mut r = Refinement::new(&procs, &m, &ml);
        loop {
            let before = (r.pressure()[0] - r.pressure()[1]).abs();
            let highest = r.pressure()[0].max(r.pressure()[1]);
            let d = r.pass(0, 1, params(t, swap));
            if d == Decision::Current {
                break;
            }
            prop_assert!((r.pressure()[0] - r.pressure()[1]).abs() < before);
            prop_assert!(r.pressure()[0].max(r.pressure()[1]) < highest);
            if let Decision::Move { process, to, .. } | Decision::Swap { process, to, .. } = d {
                prop_assert!(procs[process].home == to || r.pressure()[to] < t);
            }
        }
    }
}
