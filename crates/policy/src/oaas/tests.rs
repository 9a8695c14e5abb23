use super::*;
use crate::Policy;
use proptest::prelude::*;
use rondpoint_model::synthetic::{TopologyBuilder, r905_distances};
use rondpoint_model::{
    Capabilities, Counters, CpuId, Observation, Pid, Support, ThreadCounters, ThreadCpu,
    ThreadInfo, Tid,
};

/// The R905's shape: 4 nodes of 4 cores, 0 and 3 slow.
fn r905() -> Topology {
    TopologyBuilder::new(4)
        .cores_per_llc(4)
        .distances(r905_distances())
        .build()
        .unwrap()
}

fn symmetric() -> Topology {
    TopologyBuilder::new(4).cores_per_llc(4).build().unwrap()
}

/// Application `i` (pid 1000(i+1)) with four threads on `node`.
fn app(i: usize, node: u16) -> ProcessInfo {
    let pid = 1000 * (i as i32 + 1);
    ProcessInfo {
        pid: Pid(pid),
        comm: format!("app{i}"),
        threads: (0..4)
            .map(|k| ThreadInfo {
                tid: Tid(pid + k),
                cpu: CpuId(u32::from(node) * 4 + k as u32),
                node: NodeId(node),
                allowed_cpus: vec![],
            })
            .collect(),
        resident_bytes_by_node: vec![],
        mapping_policies: vec![],
    }
}

/// One epoch of `ms` ms from `start_ms`: applications on `nodes`, each with this MAPI
/// (1e9 instructions per thread).
fn epoch(start_ms: u64, ms: u64, nodes: &[u16], mapi: &[f64]) -> Observation {
    let processes: Vec<ProcessInfo> = nodes.iter().enumerate().map(|(i, &n)| app(i, n)).collect();
    let threads = processes
        .iter()
        .zip(mapi)
        .flat_map(|(p, &m)| {
            p.threads.iter().map(move |t| ThreadCounters {
                pid: p.pid,
                tid: t.tid,
                node: t.node,
                instructions: 1_000_000_000,
                cycles: 1,
                llc_misses: (m * 0.5e9) as u64,
                dram_accesses: (m * 1e9) as u64,
                dram_writes: 0,
            })
        })
        .collect();
    Observation {
        start_ns: start_ms * 1_000_000,
        counters: Counters {
            duration_ns: ms * 1_000_000,
            threads,
            ..Counters::default()
        },
        processes,
        ..Observation::default()
    }
}

fn oaas(config: OaasConfig, topology: &Topology, nodes: &[u16]) -> Oaas {
    let mut o = Oaas::with_pages(config).unwrap();
    o.configure(&Capabilities::all());
    let procs: Vec<ProcessInfo> = nodes.iter().enumerate().map(|(i, &n)| app(i, n)).collect();
    o.accepts(topology, &procs).unwrap();
    o
}

fn moves(actions: &[Action]) -> Vec<(i32, u16, bool)> {
    actions
        .iter()
        .map(|a| match a {
            Action::MoveApplication {
                pid,
                to,
                with_memory,
            } => (pid.0, to.0, *with_memory),
            other => panic!("not a move: {other:?}"),
        })
        .collect()
}

#[test]
fn the_builtin_curve_is_the_r905s_and_grows_with_mapi() {
    let curves = builtin_curves().unwrap();
    assert_eq!(curves.len(), 1);
    let (name, c) = &curves[0];
    assert_eq!(*name, "r905-asymmetric");
    assert!(c.check_machine(&r905()).is_ok());
    assert!(c.gap_pct(0.3) > c.gap_pct(0.001));
}

#[test]
fn the_most_sensitive_application_on_a_slow_node_swaps_with_the_least_on_a_fast_one() {
    let t = r905();
    // Applications on nodes 0 (slow), 1 (fast), 2 (fast), 3 (slow).
    let nodes = [0, 1, 2, 3];
    let mut o = oaas(OaasConfig::default(), &t, &nodes);
    let c = o.curve().unwrap().clone();
    // app0 (slow) is sensitive, app1 (fast) is not: they swap, pages and all.
    let mapi = [0.05, 0.0, 0.0005, 0.001];
    assert!(c.gap_pct(0.05) - c.gap_pct(0.0) > 5.0);
    let a = o.decide(&t, &epoch(0, 300, &nodes, &mapi));
    assert_eq!(moves(&a), vec![(2000, 0, true), (1000, 1, true)]);
    let last = o.last_decision();
    assert_eq!(last.len(), 4);
    assert!((last[0].mapi - 0.05).abs() < 1e-9);
    // Once in place, nothing moves.
    let a = o.decide(&t, &epoch(300, 300, &[1, 0, 2, 3], &mapi));
    assert!(a.is_empty(), "{a:?}");
}

#[test]
fn no_swap_when_the_predicted_gain_does_not_pass_the_threshold() {
    let t = r905();
    let nodes = [0, 1, 2, 3];
    let mut o = oaas(OaasConfig::default(), &t, &nodes);
    let c = o.curve().unwrap().clone();
    // Find two MAPIs whose gaps differ by 3 points: the slow one is higher, but not by enough.
    let low = 0.002;
    let high = (1..1000)
        .map(|k| low + f64::from(k) * 1e-5)
        .find(|&m| c.gap_pct(m) - c.gap_pct(low) >= 3.0)
        .unwrap();
    assert!(c.gap_pct(high) - c.gap_pct(low) < 5.0);
    let a = o.decide(&t, &epoch(0, 300, &nodes, &[high, low, low, 0.0]));
    assert!(a.is_empty(), "{a:?}");
    // With a lower threshold they swap.
    let mut o = oaas(
        OaasConfig {
            min_gain_points: 2.0,
            ..OaasConfig::default()
        },
        &t,
        &nodes,
    );
    let a = o.decide(&t, &epoch(0, 300, &nodes, &[high, low, low, 0.0]));
    assert_eq!(moves(&a), vec![(2000, 0, true), (1000, 1, true)]);
}

#[test]
fn two_pairs_swap_in_one_decision_and_nopm_leaves_pages() {
    let t = r905();
    let nodes = [0, 1, 2, 3];
    let mut o = Oaas::without_pages(OaasConfig::default()).unwrap();
    let procs: Vec<ProcessInfo> = nodes.iter().enumerate().map(|(i, &n)| app(i, n)).collect();
    o.accepts(&t, &procs).unwrap();
    assert_eq!(o.name(), "oaas-nopm");
    let a = o.decide(&t, &epoch(0, 300, &nodes, &[0.05, 0.0, 0.0001, 0.02]));
    // app0 (highest) against app1 (lowest fast), then app3 against app2.
    assert_eq!(
        moves(&a),
        vec![
            (2000, 0, false),
            (1000, 1, false),
            (3000, 3, false),
            (4000, 2, false)
        ]
    );
}

#[test]
fn under_a_loss_bound_no_application_that_would_lose_more_goes_to_a_slow_node() {
    let t = r905();
    let nodes = [0, 1, 2, 3];
    let bounded = |points: f64| OaasConfig {
        max_loss_points: Some(points),
        ..OaasConfig::default()
    };
    // Unbounded (the paper's): app0 swaps with app1 (gap 0), app3 with app2 (gap over 4).
    let mut o = oaas(OaasConfig::default(), &t, &nodes);
    let c = o.curve().unwrap().clone();
    let above = |gap: f64| {
        (1..100_000)
            .map(|k| f64::from(k) * 1e-6)
            .find(|&m| c.gap_pct(m) > gap)
            .unwrap()
    };
    let m2 = above(6.0);
    let m3 = above(c.gap_pct(m2) + 6.0);
    let mapi = [0.05, 0.0, m2, m3];
    assert!(c.gap_pct(0.05) >= c.gap_pct(m3) && c.gap_pct(0.0) < 1.0);
    let a = o.decide(&t, &epoch(0, 300, &nodes, &mapi));
    assert_eq!(moves(&a).len(), 4, "{a:?}");
    // Bounded at 4 points: app1 (gap under 1) may still go, app2 (gap over 4) may not, and
    // the note says which swap was held back.
    let mut o = oaas(bounded(4.0), &t, &nodes);
    let a = o.decide(&t, &epoch(0, 300, &nodes, &mapi));
    assert_eq!(moves(&a), vec![(2000, 0, true), (1000, 1, true)]);
    let notes = o.notes().join("\n");
    assert!(notes.contains("max_loss_points (4 points)"), "{notes}");
    assert!(
        notes.contains("pid 4000 to the fast node of pid 3000"),
        "{notes}"
    );
    // An empty fast node takes a slow application whatever the bound.
    let mut o = oaas(bounded(0.0), &t, &[0, 1, 3]);
    let a = o.decide(&t, &epoch(0, 300, &[0, 1, 3], &[0.05, 0.02, 0.0]));
    assert_eq!(moves(&a), vec![(1000, 2, true)]);
}

#[test]
fn a_slow_application_moves_to_an_empty_fast_node() {
    let t = r905();
    let mut o = oaas(OaasConfig::default(), &t, &[0, 1, 3]);
    let a = o.decide(&t, &epoch(0, 300, &[0, 1, 3], &[0.05, 0.02, 0.0]));
    assert_eq!(moves(&a), vec![(1000, 2, true)]);
}

#[test]
fn it_decides_once_a_period_over_the_whole_period() {
    let t = r905();
    let nodes = [0, 1, 2, 3];
    let mut o = oaas(OaasConfig::default(), &t, &nodes);
    // 100 ms epochs: the first two see a quiet app0, the third a busy one; only the third
    // decides, on the whole 300 ms (MAPI 0.05 / 3).
    assert!(
        o.decide(&t, &epoch(0, 100, &nodes, &[0.0, 0.0, 0.0, 0.0]))
            .is_empty()
    );
    assert!(
        o.decide(&t, &epoch(100, 100, &nodes, &[0.0, 0.0, 0.0, 0.0]))
            .is_empty()
    );
    let a = o.decide(&t, &epoch(200, 100, &nodes, &[0.15, 0.0, 0.0, 0.0]));
    assert!(!a.is_empty());
    assert!((o.last_decision()[0].mapi - 0.05).abs() < 1e-9);
    // Only the curve is noted: where it came from.
    assert_eq!(o.notes().len(), 1, "{:?}", o.notes());
    assert!(
        o.notes()[0].starts_with("MAPI-to-gap curve built in, measured on 'r905-asymmetric'"),
        "{:?}",
        o.notes()
    );
    // Epochs longer than the period: one decision each, and a note saying so.
    let mut o = oaas(OaasConfig::default(), &t, &nodes);
    o.decide(&t, &epoch(0, 1000, &nodes, &[0.0; 4]));
    assert!(o.notes()[1].contains("--epoch-ms 300"), "{:?}", o.notes());
}

#[test]
fn llc_misses_stand_in_for_dram_accesses_where_the_machine_has_none_and_it_says_so() {
    let t = r905();
    let nodes = [0, 1, 2, 3];
    let mut o = Oaas::with_pages(OaasConfig::default()).unwrap();
    let caps = Capabilities::all().with(
        rondpoint_model::Capability::ThreadDram,
        Support::Estimated("from page-fault samples".into()),
    );
    o.configure(&caps);
    assert_eq!(o.source(), MapiSource::LlcMisses);
    assert!(o.notes()[0].contains("LLC misses"), "{:?}", o.notes());
    let procs: Vec<ProcessInfo> = nodes.iter().enumerate().map(|(i, &n)| app(i, n)).collect();
    o.accepts(&t, &procs).unwrap();
    o.decide(&t, &epoch(0, 300, &nodes, &[0.1, 0.0, 0.0, 0.0]));
    // The epoch's LLC misses are half its DRAM accesses.
    assert!((o.last_decision()[0].mapi - 0.05).abs() < 1e-9);
}

#[test]
fn a_symmetric_machine_makes_it_a_no_op_that_says_so() {
    let t = symmetric();
    let mut o = Oaas::with_pages(OaasConfig::default()).unwrap();
    let procs: Vec<ProcessInfo> = (0..4).map(|i| app(i, i as u16)).collect();
    assert_eq!(o.accepts(&t, &procs), Ok(()));
    assert!(o.start(&t, &procs).is_empty());
    assert!(
        o.decide(&t, &epoch(0, 300, &[0, 1, 2, 3], &[0.1, 0.0, 0.0, 0.0]))
            .is_empty()
    );
    assert!(
        o.notes()[0].contains("every CPU node of this machine is fast"),
        "{:?}",
        o.notes()
    );
}

#[test]
fn a_curve_of_another_machine_and_too_many_applications_are_refused() {
    let (_, c) = builtin_curves().unwrap().remove(0);
    let config = OaasConfig {
        curve: Curve::File {
            path: "curve.toml".into(),
            text: c.to_toml().unwrap(),
        },
        ..OaasConfig::default()
    };
    let mut o = Oaas::with_pages(config.clone()).unwrap();
    let three = TopologyBuilder::new(3)
        .cores_per_llc(4)
        .distances(vec![vec![10, 16, 16], vec![16, 10, 22], vec![16, 22, 10]])
        .build()
        .unwrap();
    let err = o.accepts(&three, &[app(0, 0)]).unwrap_err().to_string();
    assert!(
        err.contains("measured on 'r905-asymmetric', 4 nodes"),
        "{err}"
    );
    assert!(
        err.contains("this machine has 3 nodes (fast 0; slow 1, 2)"),
        "{err}"
    );
    // The same file on the R905 is fine.
    assert!(o.accepts(&r905(), &[app(0, 0)]).is_ok());
    let procs: Vec<ProcessInfo> = (0..5).map(|i| app(i, 0)).collect();
    let err = o.accepts(&r905(), &procs).unwrap_err().to_string();
    assert!(err.contains("5 applications for 4 CPU nodes"), "{err}");
    // A file that was not read (the caller reads them) or is not a curve: an error when the
    // policy is built.
    let unread = OaasConfig {
        curve: Curve::Name("none.toml".into()),
        ..OaasConfig::default()
    };
    let err = Oaas::with_pages(unread).err().unwrap().to_string();
    assert!(
        err.starts_with("[oaas] configuration: curve = 'none.toml'"),
        "{err}"
    );
    let garbled = OaasConfig {
        curve: Curve::File {
            path: "x.toml".into(),
            text: "points = 3".into(),
        },
        ..OaasConfig::default()
    };
    let err = Oaas::with_pages(garbled).err().unwrap().to_string();
    assert!(
        err.starts_with("[oaas] configuration: curve file 'x.toml'"),
        "{err}"
    );
    // No built-in curve for the 3-node machine.
    let mut o = Oaas::with_pages(OaasConfig::default()).unwrap();
    let err = o.accepts(&three, &[app(0, 0)]).unwrap_err().to_string();
    assert!(err.contains("no built-in MAPI-to-gap curve"), "{err}");
}

#[test]
fn it_starts_from_the_random_placement_random_draws() {
    let t = r905();
    let procs: Vec<ProcessInfo> = (0..4).map(|i| app(i, i as u16)).collect();
    for seed in 1..20 {
        let mut o = oaas(
            OaasConfig {
                seed,
                ..OaasConfig::default()
            },
            &t,
            &[0, 1, 2, 3],
        );
        let mut r = Random::new(RandomConfig { seed });
        r.accepts(&t, &procs).unwrap();
        let start = o.start(&t, &procs);
        assert_eq!(start, r.start(&t, &procs));
        let mut to: Vec<u16> = moves(&start).iter().map(|m| m.1).collect();
        to.sort_unstable();
        assert_eq!(to, vec![0, 1, 2, 3], "one application per node");
    }
    let in_order = OaasConfig {
        initial_placement: InitialPlacement::InOrder,
        ..OaasConfig::default()
    };
    let mut o = oaas(in_order, &t, &[0, 1, 2, 3]);
    let to: Vec<u16> = moves(&o.start(&t, &procs)).iter().map(|m| m.1).collect();
    assert_eq!(to, vec![0, 1, 2, 3]);
}

#[test]
fn random_puts_every_application_on_both_classes_over_seeds() {
    let t = r905();
    let procs: Vec<ProcessInfo> = (0..4).map(|i| app(i, 0)).collect();
    let mut fast_count = [0u32; 4];
    for seed in 0..400 {
        let mut r = Random::new(RandomConfig { seed });
        for (i, m) in moves(&r.start(&t, &procs)).iter().enumerate() {
            if t.class(NodeId(m.1)) == Some(NodeClass::Fast) {
                fast_count[i] += 1;
            }
        }
    }
    for c in fast_count {
        assert!((160..240).contains(&c), "{fast_count:?}");
    }
}

#[test]
fn static_mappings_follow_table_4() {
    let t = r905();
    let procs: Vec<ProcessInfo> = (0..4).map(|i| app(i, i as u16)).collect();
    let nodes = |mapping: &str| -> Vec<u16> {
        let mut s = Static::new(StaticConfig {
            mapping: mapping.into(),
            ..StaticConfig::default()
        })
        .unwrap();
        s.accepts(&t, &procs).unwrap();
        moves(&s.start(&t, &procs)).iter().map(|m| m.1).collect()
    };
    // Fast nodes 1 and 2, slow 0 and 3, each taken by increasing number.
    assert_eq!(nodes("M0"), vec![1, 2, 0, 3]);
    assert_eq!(nodes("M1"), vec![1, 0, 2, 3]);
    assert_eq!(nodes("M2"), vec![1, 0, 3, 2]);
    assert_eq!(nodes("M3"), vec![0, 1, 2, 3]);
    assert_eq!(nodes("M4"), vec![0, 1, 3, 2]);
    assert_eq!(nodes("m5"), vec![0, 3, 1, 2]);
    assert_eq!(nodes("sffs"), nodes("M3"));
    let err = Static::new(StaticConfig {
        mapping: "M6".into(),
        ..StaticConfig::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("neither M0 to M5"), "{err}");
    let mut s = Static::new(StaticConfig {
        mapping: "FFF".into(),
        ..StaticConfig::default()
    })
    .unwrap();
    let err = s.accepts(&t, &procs[..3]).unwrap_err().to_string();
    assert!(
        err.contains("needs 3 fast and 0 slow nodes; this machine has 2 and 2"),
        "{err}"
    );
    let err = s.accepts(&t, &procs).unwrap_err().to_string();
    assert!(err.contains("places 3 applications; there are 4"), "{err}");
}

#[test]
fn linux_spreads_each_application_from_a_random_node_and_exchanges_some_threads() {
    let t = r905();
    let procs: Vec<ProcessInfo> = (0..4).map(|i| app(i, 0)).collect();
    let spread_only = LinuxSpread::new(LinuxSpreadConfig {
        exchange_probability: 0.0,
        seed: 3,
        ..LinuxSpreadConfig::default()
    })
    .unwrap();
    let dealt = spread_only.deal(&t, &procs);
    assert_eq!(dealt.len(), 16);
    let mut cpus: Vec<CpuId> = dealt.iter().map(|d| d.3).collect();
    cpus.sort_unstable();
    cpus.dedup();
    assert_eq!(cpus.len(), 16, "one CPU per thread");
    for p in &procs {
        let mut nodes: Vec<NodeId> = dealt.iter().filter(|d| d.0 == p.pid).map(|d| d.2).collect();
        nodes.sort_unstable();
        assert_eq!(nodes, (0..4).map(NodeId).collect::<Vec<_>>(), "S3");
    }
    // With exchanges, some applications end with two threads on one node; seeds differ.
    let concentrated = |seed| {
        let l = LinuxSpread::new(LinuxSpreadConfig {
            seed,
            ..LinuxSpreadConfig::default()
        })
        .unwrap();
        let d = l.deal(&t, &procs);
        procs
            .iter()
            .filter(|p| {
                let mut n: Vec<NodeId> = d.iter().filter(|x| x.0 == p.pid).map(|x| x.2).collect();
                n.sort_unstable();
                n.dedup();
                n.len() < 4
            })
            .count()
    };
    let counts: Vec<usize> = (1..30).map(concentrated).collect();
    assert!(
        counts.iter().any(|&c| c > 0) && counts.iter().any(|&c| c < 4),
        "{counts:?}"
    );
    assert!(
        LinuxSpread::new(LinuxSpreadConfig {
            exchange_probability: 1.5,
            ..LinuxSpreadConfig::default()
        })
        .is_err()
    );
}

/// The processes as `dealt` placed their threads.
fn as_dealt(procs: &[ProcessInfo], dealt: &[(Pid, Tid, NodeId, CpuId)]) -> Vec<ProcessInfo> {
    let mut placed = procs.to_vec();
    for p in &mut placed {
        for th in &mut p.threads {
            if let Some(d) = dealt.iter().find(|d| d.0 == p.pid && d.1 == th.tid) {
                (th.node, th.cpu) = (d.2, d.3);
            }
        }
    }
    placed
}

#[test]
fn linux_balances_during_the_run_by_exchanging_threads_across_applications_and_nodes() {
    let t = r905();
    let procs: Vec<ProcessInfo> = (0..4).map(|i| app(i, 0)).collect();
    let mut l = LinuxSpread::new(LinuxSpreadConfig {
        exchanges_per_s: 0.5,
        ..LinuxSpreadConfig::default()
    })
    .unwrap();
    let placed = as_dealt(&procs, &l.deal(&t, &procs));
    let node_of = |a: &ThreadCpu| {
        placed
            .iter()
            .flat_map(|p| &p.threads)
            .find(|th| th.tid == a.tid)
            .map(|th| th.node)
    };
    let mut total = 0;
    for epoch in 0..40u64 {
        let obs = Observation {
            epoch,
            start_ns: epoch * 100_000_000,
            processes: placed.clone(),
            ..Observation::default()
        };
        let actions = l.decide(&t, &obs);
        if epoch == 0 {
            assert!(actions.is_empty(), "no time has passed at the first epoch");
        }
        let mut seen = std::collections::BTreeSet::new();
        for a in &actions {
            let Action::ExchangeThreads { a, b } = a else {
                panic!("only exchanges during the run: {a:?}");
            };
            assert_ne!(a.pid, b.pid, "threads of two applications");
            assert_ne!(node_of(a), node_of(b), "on two nodes");
            assert!(
                seen.insert(a.tid) && seen.insert(b.tid),
                "a thread moves once"
            );
        }
        total += actions.len();
    }
    // 16 threads at 0.5/s over 3.9 s: about 31 draws hit, each taking two threads.
    assert!((5..=40).contains(&total), "{total} exchanges");
    let mut still = LinuxSpread::new(LinuxSpreadConfig {
        exchanges_per_s: 0.0,
        ..LinuxSpreadConfig::default()
    })
    .unwrap();
    let obs = Observation {
        start_ns: 10_000_000_000,
        processes: placed.clone(),
        ..Observation::default()
    };
    assert!(still.decide(&t, &obs).is_empty());
    assert!(
        LinuxSpread::new(LinuxSpreadConfig {
            exchanges_per_s: -1.0,
            ..LinuxSpreadConfig::default()
        })
        .is_err()
    );
}

proptest! {
    /// Whatever the MAPIs and the placement, every move is half of a fast/slow swap (or a
    /// slow application to an empty fast node) whose predicted gain passes the threshold.
    #[test]
    fn moves_only_cross_classes_and_only_for_a_gain(
        mapi in prop::collection::vec(0.0f64..0.1, 4),
        perm in Just([0u16, 1, 2, 3]).prop_shuffle(),
    ) {
        let t = r905();
        let mut o = oaas(OaasConfig::default(), &t, &perm);
        let curve = o.curve().unwrap().clone();
        let a = o.decide(&t, &epoch(0, 300, &perm, &mapi));
        let m = moves(&a);
        prop_assert!(m.len() % 2 == 0);
        for pair in m.chunks(2) {
            let (a_pid, to_slow, _) = pair[0];
            let (b_pid, to_fast, _) = pair[1];
            let idx = |pid: i32| (pid / 1000 - 1) as usize;
            prop_assert_eq!(t.class(NodeId(to_slow)), Some(NodeClass::Slow));
            prop_assert_eq!(t.class(NodeId(to_fast)), Some(NodeClass::Fast));
            prop_assert_eq!(perm[idx(a_pid)], to_fast);
            prop_assert_eq!(perm[idx(b_pid)], to_slow);
            let gain = curve.gap_pct(mapi[idx(b_pid)]) - curve.gap_pct(mapi[idx(a_pid)]);
            prop_assert!(gain > 5.0);
        }
    }
}

#[test]
fn a_run_names_its_curve_and_says_when_it_falls_with_mapi() {
    let (_, mut c) = builtin_curves().unwrap().remove(0);
    let last = c.points.len() - 1;
    c.points[last].gap_pct = 5.0;
    let config = OaasConfig {
        curve: Curve::File {
            path: "falling.toml".into(),
            text: c.to_toml().unwrap(),
        },
        ..OaasConfig::default()
    };
    let t = r905();
    let o = oaas(config, &t, &[0, 1]);
    let notes = o.notes();
    assert!(
        notes[0].starts_with("MAPI-to-gap curve 'falling.toml', measured on 'r905-asymmetric'"),
        "{notes:?}"
    );
    assert!(
        notes[1]
            .starts_with("the MAPI-to-gap curve falls from 30.6% at MAPI 0.5 to 5.0% at MAPI 0.6"),
        "{notes:?}"
    );
}

/// One 300 ms epoch from `start_ms` of the applications on `nodes` with these MAPIs, the first
/// with `pages` 4 KiB pages on its node, the third finished when `third_done`.
fn late_epoch(
    start_ms: u64,
    nodes: &[u16],
    mapi: &[f64],
    pages: u64,
    third_done: bool,
) -> Observation {
    let mut o = epoch(start_ms, 300, nodes, mapi);
    let mut bytes = vec![0; 4];
    bytes[usize::from(nodes[0])] = pages * 4096;
    o.processes[0].resident_bytes_by_node = bytes;
    if third_done {
        let pid = o.processes[2].pid;
        o.processes[2].threads.clear();
        o.counters.threads.retain(|t| t.pid != pid);
    }
    o
}

/// A fast node emptied near the end of the runs: moving a slow application there with its
/// 87,192 pages (ferret's, PG-3) would cost 0.109 s (5 µs a page over 4 threads) for 0.089 s
/// saved over the 0.8 s left of its 10 s run, so it stays; the same move early in the run
/// pays, and is made. The old rule (an empty fast node counts as gap 0, nothing else) moved
/// it.
#[test]
fn a_move_near_the_end_of_the_run_that_would_not_pay_is_not_made() {
    let t = r905();
    let nodes = [0, 1, 2, 3];
    // app0 (slow) at ferret's MAPI, app2 (fast) close enough that they never swap.
    let mapi = [0.0051, 0.03, 0.0045, 0.0];
    let mut o = oaas(OaasConfig::default(), &t, &nodes);
    let gap = o.curve().unwrap().gap_pct(0.0051);
    assert!(
        gap > 10.0 && gap - o.curve().unwrap().gap_pct(0.0045) < 5.0,
        "{gap}"
    );
    for k in 0..33 {
        let a = o.decide(&t, &late_epoch(300 * k, &nodes, &mapi, 87_192, false));
        assert!(a.is_empty(), "{k}: {a:?}");
    }
    // 9.9 s to 10.2 s: app2 has finished, fast node 2 is empty.
    let a = o.decide(&t, &late_epoch(9900, &nodes, &mapi, 87_192, true));
    assert!(a.is_empty(), "{a:?}");
    let note = o
        .notes()
        .into_iter()
        .find(|n| n.contains("would not pay"))
        .unwrap();
    assert!(note.contains("at 10.2 s: pid 1000 to node2"), "{note}");
    assert!(note.contains("87192 pages"), "{note}");
    // Without the cost (the old behaviour) it moves.
    let free = OaasConfig {
        migrate_page_us: 0.0,
        ..OaasConfig::default()
    };
    let mut o = oaas(free, &t, &nodes);
    for k in 0..33 {
        o.decide(&t, &late_epoch(300 * k, &nodes, &mapi, 87_192, false));
    }
    let a = o.decide(&t, &late_epoch(9900, &nodes, &mapi, 87_192, true));
    assert_eq!(moves(&a), vec![(1000, 2, true)]);
    // Early in the run the same move pays: 9.7 s left at 11%, 1.07 s saved.
    let mut o = oaas(OaasConfig::default(), &t, &nodes);
    let a = o.decide(&t, &late_epoch(0, &nodes, &mapi, 87_192, true));
    assert_eq!(moves(&a), vec![(1000, 2, true)]);
}

/// The cost counts both applications' pages not on their new nodes, and oaas-nopm, which
/// moves no pages, counts none.
#[test]
fn a_swap_costs_both_applications_pages_and_nopm_none() {
    let t = r905();
    let nodes = [0, 1, 2, 3];
    let mapi = [0.05, 0.0, 0.0, 0.0];
    let mut o = epoch(0, 300, &nodes, &mapi);
    // 2 M pages each: 2.5 s each to move at 5 µs over 4 threads, more than 10 s of runs
    // can save at a 26% gap.
    for p in &mut o.processes {
        let node = usize::from(p.threads[0].node.0);
        p.resident_bytes_by_node = vec![0; 4];
        p.resident_bytes_by_node[node] = 2_000_000 * 4096;
    }
    let mut with = oaas(OaasConfig::default(), &t, &nodes);
    assert!(with.decide(&t, &o).is_empty());
    let mut nopm = Oaas::without_pages(OaasConfig::default()).unwrap();
    nopm.accepts(&t, &o.processes).unwrap();
    assert_eq!(moves(&nopm.decide(&t, &o)).len(), 2);
}
