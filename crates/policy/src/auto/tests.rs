use super::*;
use rondpoint_model::synthetic::{TopologyBuilder, r905_distances};
use rondpoint_model::{
    Capability, Counters, CpuId, NodeId, NodeMemory, PageRange, PageSize, Pid, Support, ThreadInfo,
    Tid,
};

/// The R905's shape: 4 nodes of 4 cores sharing one cache each, 0 and 3 slow.
fn r905() -> Topology {
    TopologyBuilder::new(4)
        .cores_per_llc(4)
        .distances(r905_distances())
        .build()
        .unwrap()
}

fn symmetric(memory_only: &[usize]) -> Topology {
    TopologyBuilder::new(4)
        .cores_per_llc(4)
        .memory_only(memory_only)
        .build()
        .unwrap()
}

/// Process `pid` with `threads` threads from CPU `first` on (4 CPUs a node).
fn process(pid: i32, threads: u32, first: u32) -> ProcessInfo {
    ProcessInfo {
        pid: Pid(pid),
        comm: format!("p{pid}"),
        threads: (0..threads)
            .map(|k| ThreadInfo {
                tid: Tid(pid + k as i32),
                cpu: CpuId(first + k),
                node: NodeId(((first + k) / 4) as u16),
                allowed_cpus: vec![],
            })
            .collect(),
        resident_bytes_by_node: vec![],
        mapping_policies: vec![],
    }
}

fn built(config: AutoConfig) -> Auto {
    let mut a = Auto::new(config).unwrap();
    a.configure(&Capabilities::simulated());
    a
}

#[test]
fn placement_is_oaas_for_applications_on_an_asymmetric_machine_nmass_for_processes() {
    let apps = [process(100, 4, 0), process(200, 4, 4)];
    assert_eq!(detect::placement(&r905(), &apps), Placement::Oaas);
    let singles: Vec<ProcessInfo> = (0..4).map(|i| process(10 + i, 1, i as u32)).collect();
    assert_eq!(detect::placement(&r905(), &singles), Placement::NMass);
    // Both kinds: N-MASS maps the single-threaded ones, OAAS cannot give each its node.
    let mixed: Vec<ProcessInfo> = apps.iter().chain(&singles).cloned().collect();
    assert_eq!(detect::placement(&r905(), &mixed), Placement::NMass);
    // Symmetric, applications only: neither, and the reason names the interconnect.
    let Placement::Neither(why) = detect::placement(&symmetric(&[]), &apps) else {
        panic!("a symmetric machine has no placement lane");
    };
    assert!(why.contains("symmetric"), "{why}");
    // One core per cache: no cache to share.
    let lone = TopologyBuilder::new(4).build().unwrap();
    let Placement::Neither(why) = detect::placement(&lone, &singles) else {
        panic!("no shared cache, no N-MASS");
    };
    assert!(why.contains("last-level cache"), "{why}");
    // A program not started yet: not known.
    let waiting = [process(300, 0, 0)];
    assert_eq!(detect::placement(&r905(), &waiting), Placement::Unknown);
}

#[test]
fn lanes_without_their_signals_are_left_out_and_named() {
    let mut a = Auto::new(AutoConfig::default()).unwrap();
    let caps = Capabilities::simulated()
        .with(
            Capability::AccessSamples,
            Support::Missing("no IBS here".into()),
        )
        .with(
            Capability::FaultSamples,
            Support::Missing("no hinting faults".into()),
        )
        .with(
            Capability::ThreadCounters,
            Support::Missing("no PMU in this VM".into()),
        );
    a.configure(&caps);
    let procs = [process(100, 4, 0), process(200, 4, 4)];
    a.accepts(&r905(), &procs).unwrap();
    a.start(&r905(), &procs);
    let notes = a.notes().join("\n");
    assert!(
        notes.contains("pages lane: none acts: carrefour cannot run"),
        "{notes}"
    );
    assert!(
        notes.contains("placement lane: oaas left out: oaas cannot run"),
        "{notes}"
    );
    assert!(notes.contains("no PMU in this VM"), "{notes}");
    assert_eq!(a.acting(), [(Lane::Overflow, "usage-aware")]);
}

#[test]
fn a_single_node_machine_leaves_pages_and_overflow_out_with_the_reason() {
    let one = TopologyBuilder::new(1).cores_per_llc(4).build().unwrap();
    let mut a = built(AutoConfig::default());
    let procs = [process(100, 2, 0)];
    a.accepts(&one, &procs).unwrap();
    a.start(&one, &procs);
    assert!(a.acting().is_empty(), "{:?}", a.acting());
    let notes = a.notes().join("\n");
    assert!(notes.contains("1 node(s) with CPUs"), "{notes}");
    assert!(notes.contains("1 node(s) with memory"), "{notes}");
}

fn range(pid: i32, page: u64) -> PageRange {
    PageRange::new(Pid(pid), page * 4096, 1, PageSize::Base4K).unwrap()
}

fn observation(processes: Vec<ProcessInfo>, free_mib: &[u64]) -> Observation {
    Observation {
        epoch: 1,
        start_ns: 0,
        counters: Counters::default(),
        samples: Vec::new(),
        memory: free_mib
            .iter()
            .enumerate()
            .map(|(i, f)| NodeMemory {
                node: NodeId(i as u16),
                total_bytes: 16 << 30,
                free_bytes: f << 20,
            })
            .collect(),
        processes,
        collapses: Vec::new(),
        truth: None,
    }
}

/// The arbiter's verdict on untagged proposals.
fn judge(
    arb: &mut Arbiter,
    topology: &Topology,
    observation: Option<&Observation>,
    min_free_bytes: u64,
    proposed: Vec<Action>,
) -> (Vec<Action>, Vec<(Action, Rule)>) {
    let tagged = proposed.into_iter().map(|a| (a, ())).collect();
    let (kept, dropped) = arb.pages(topology, observation, min_free_bytes, tagged);
    (
        kept.into_iter().map(|k| k.0).collect(),
        dropped.into_iter().map(|(a, (), r)| (a, r)).collect(),
    )
}

#[test]
fn pages_lane_gives_way_to_nmass_placements() {
    let mut arb = Arbiter::default();
    arb.placed(
        PlacedBy::NMass,
        &[Action::PinThread {
            pid: Pid(10),
            tid: Tid(10),
            cpus: vec![CpuId(4)],
        }],
    );
    let obs = observation(vec![process(10, 1, 4)], &[4096; 4]);
    let moves = vec![
        Action::MigratePages {
            range: range(10, 1),
            to: NodeId(1),
        },
        Action::MigratePages {
            range: range(11, 1),
            to: NodeId(1),
        },
    ];
    let (kept, dropped) = judge(&mut arb, &symmetric(&[]), Some(&obs), 0, moves);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].pid(), Pid(11));
    assert_eq!(dropped[0].1, Rule::NMassPlaced);
}

#[test]
fn pages_lane_keeps_an_oaas_application_s_pages_on_its_nodes() {
    let mut arb = Arbiter::default();
    arb.placed(
        PlacedBy::Oaas,
        &[Action::MoveApplication {
            pid: Pid(100),
            to: NodeId(1),
            with_memory: true,
        }],
    );
    let obs = observation(vec![process(100, 4, 4)], &[4096; 4]);
    let to = |n: u16| Action::MigratePages {
        range: range(100, 1),
        to: NodeId(n),
    };
    let (kept, dropped) = judge(&mut arb, &r905(), Some(&obs), 0, vec![to(1), to(2)]);
    assert_eq!(kept, [to(1)]);
    assert_eq!(dropped[0].1, Rule::OaasMoved);
}

#[test]
fn pages_lane_never_fills_a_full_node_nor_a_slower_tier() {
    let mut arb = Arbiter::default();
    let topo = symmetric(&[3]);
    // Node 1 has 100 MiB free, under the 256 MiB kept; node 3 is memory-only.
    let obs = observation(vec![process(10, 2, 0)], &[4096, 100, 4096, 4096]);
    let interleave = Action::Interleave {
        range: range(10, 1),
        nodes: [NodeId(0), NodeId(1), NodeId(2), NodeId(3)]
            .into_iter()
            .collect(),
    };
    let onto_full = Action::MigratePages {
        range: range(10, 2),
        to: NodeId(1),
    };
    let onto_cxl = Action::MigratePages {
        range: range(10, 3),
        to: NodeId(3),
    };
    let (kept, dropped) = judge(
        &mut arb,
        &topo,
        Some(&obs),
        256 << 20,
        vec![interleave, onto_full, onto_cxl],
    );
    let trimmed = Action::Interleave {
        range: range(10, 1),
        nodes: [NodeId(0), NodeId(2)].into_iter().collect(),
    };
    assert_eq!(kept, [trimmed]);
    let rules: Vec<Rule> = dropped.iter().map(|d| d.1).collect();
    assert_eq!(rules, [Rule::Full, Rule::SlowerTier]);
    assert_eq!(arb.dropped.values().sum::<u64>(), 2);
}

#[test]
fn dropped_proposals_come_back_to_their_lane_as_skipped_with_the_rule() {
    let mut a = built(AutoConfig {
        lanes: vec![Lane::Pages],
        ..AutoConfig::default()
    });
    let topo = symmetric(&[]);
    let procs = [process(10, 2, 0)];
    a.accepts(&topo, &procs).unwrap();
    a.start(&topo, &procs);
    let act = Action::MigratePages {
        range: range(10, 1),
        to: NodeId(1),
    };
    a.pending.push((act.clone(), 0));
    a.dropped.push((act.clone(), 0, Rule::Full));
    a.route(std::slice::from_ref(&act), &[Outcome::applied(0)]);
    assert!(a.pending.is_empty() && a.dropped.is_empty());
}

#[test]
fn auto_builds_its_lanes_through_the_registry_and_names_their_tables_in_errors() {
    let c = AutoConfig {
        carrefour: Some(toml::toml! { lar_threshold = 7.0 }),
        ..AutoConfig::default()
    };
    let err = Auto::new(c)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.starts_with("[auto.carrefour] configuration:"), "{err}");
    let a = built(AutoConfig {
        lanes: vec![Lane::Pages],
        ..AutoConfig::default()
    });
    let names: Vec<&str> = a.slots.iter().map(|s| s.policy.name()).collect();
    assert_eq!(names, ["carrefour"]);
}

#[test]
fn oaas_takes_programs_where_they_run_and_keeps_the_loss_bound_unless_told() {
    let table = oaas_table(&AutoConfig::default());
    assert_eq!(table["initial_placement"].as_str(), Some("none"));
    assert_eq!(table["max_loss_points"].as_float(), Some(4.0));
    let mut c = AutoConfig {
        oaas: Some(toml::toml! { initial_placement = "random" }),
        ..AutoConfig::default()
    };
    c.trial.placement = false;
    let table = oaas_table(&c);
    assert_eq!(table["initial_placement"].as_str(), Some("random"));
    assert!(!table.contains_key("max_loss_points"));
    let c = AutoConfig {
        oaas: Some(toml::toml! { max_loss_points = 10.0 }),
        ..AutoConfig::default()
    };
    assert_eq!(oaas_table(&c)["max_loss_points"].as_float(), Some(10.0));
}

/// A lane policy that keeps the outcomes it is told.
struct Spy(std::rc::Rc<std::cell::RefCell<Vec<(Action, Outcome)>>>);

impl Policy for Spy {
    fn name(&self) -> &str {
        "spy"
    }
    fn needs(&self) -> Vec<Need> {
        Vec::new()
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
    fn outcomes(&mut self, actions: &[Action], outcomes: &[Outcome]) {
        for (a, o) in actions.iter().zip(outcomes) {
            self.0.borrow_mut().push((a.clone(), o.clone()));
        }
    }
}

#[test]
fn outcomes_reach_the_lane_that_proposed_them_in_any_order() {
    let mut a = built(AutoConfig {
        lanes: vec![Lane::Pages],
        ..AutoConfig::default()
    });
    let seen: Vec<_> = (0..2)
        .map(|_| std::rc::Rc::new(std::cell::RefCell::new(Vec::new())))
        .collect();
    a.slots = seen
        .iter()
        .map(|s| Slot {
            lane: Lane::Pages,
            policy: Box::new(Spy(s.clone())),
            out: None,
            notes: Vec::new(),
            taken: Default::default(),
        })
        .collect();
    let to = |page: u64, node: u16| Action::MigratePages {
        range: range(10, page),
        to: NodeId(node),
    };
    // Lane 0 proposed pages 1, 2 and 3; lane 1 page 4 and page 1 again (the same action).
    for (act, slot) in [
        (to(1, 1), 0),
        (to(2, 1), 0),
        (to(3, 1), 0),
        (to(4, 2), 1),
        (to(1, 1), 1),
    ] {
        a.pending.push((act, slot));
    }
    // A rate limit refused pages 2 and 4: reported after the others, as the engine does.
    let order = [to(1, 1), to(3, 1), to(1, 1), to(2, 1), to(4, 2)];
    let outcomes: Vec<Outcome> = (0..order.len()).map(Outcome::applied).collect();
    a.route(&order, &outcomes);
    let got = |k: usize| -> Vec<Action> { seen[k].borrow().iter().map(|x| x.0.clone()).collect() };
    assert_eq!(got(0), [to(1, 1), to(3, 1), to(2, 1)]);
    assert_eq!(got(1), [to(1, 1), to(4, 2)]);
    // Each lane's outcomes are numbered in its own batch.
    let numbers: Vec<usize> = seen[0].borrow().iter().map(|x| x.1.action).collect();
    assert_eq!(numbers, [0, 1, 2]);
    assert!(a.pending.is_empty());
}
