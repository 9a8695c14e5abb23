use super::*;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{CpuId, NodeId, NodeMemory, Pid, ThreadInfo, Tid};

const GIB: u64 = 1 << 30;

fn topo() -> Topology {
    TopologyBuilder::new(4).build().unwrap()
}

/// A process with one thread on node `home` and `resident` bytes per node.
pub(super) fn process(pid: i32, home: u16, resident: Vec<u64>) -> ProcessInfo {
    ProcessInfo {
        pid: Pid(pid),
        comm: "app".into(),
        threads: vec![ThreadInfo {
            tid: Tid(pid),
            cpu: CpuId(0),
            node: NodeId(home),
            allowed_cpus: Vec::new(),
        }],
        resident_bytes_by_node: resident,
        mapping_policies: Vec::new(),
    }
}

/// An observation of `processes` on four 16 GiB nodes, nodes 0 and 1 full, 2 and 3 half free.
fn full_nodes(processes: Vec<ProcessInfo>) -> Observation {
    Observation {
        memory: (0..4)
            .map(|n| NodeMemory {
                node: NodeId(n),
                total_bytes: 16 * GIB,
                free_bytes: if n < 2 { 0 } else { 8 * GIB },
            })
            .collect(),
        processes,
        ..Observation::default()
    }
}

/// The live backend: page migration, no allocation-time overflow placement.
fn live() -> Capabilities {
    Capabilities::all().with(
        Capability::OverflowPlacement,
        Support::Missing("Linux has no such policy".into()),
    )
}

#[test]
fn auto_mode_places_at_allocation_where_the_machine_can_and_moves_pages_elsewhere() {
    let t = topo();
    let procs = [process(1, 0, vec![0; 4])];
    let mut p = hybrid(HybridConfig::default());
    assert!(Capabilities::all().check("hybrid", &p.needs()).is_ok());
    assert!(live().check("hybrid", &p.needs()).is_ok());
    p.configure(&Capabilities::all());
    assert!(p.places_at_allocation());
    let start = p.start(&t, &procs);
    let [Action::SetMemPolicy { pid, policy }] = &start[..] else {
        panic!("{start:?}");
    };
    assert_eq!(*pid, Pid(1));
    let MemPolicy::Overflow { spread, tiers } = policy else {
        panic!("{policy:?}");
    };
    assert_eq!(*spread, OverflowSpread::Interleave);
    assert_eq!(tiers.len(), 4);
    assert_eq!(tiers[0].tiers, vec![vec![NodeId(1), NodeId(2), NodeId(3)]]);

    let mut p = usage_aware(UsageAwareConfig::default());
    p.configure(&live());
    assert!(!p.places_at_allocation());
    assert!(p.start(&t, &procs).is_empty());
    // The kernel put the overflow on node 1: moved where usage-aware wants it.
    let o = full_nodes(vec![process(1, 0, vec![16 * GIB, 4 * GIB, 0, 0])]);
    let a = p.decide(&t, &o);
    assert!(!a.is_empty());
    assert!(a.iter().all(|x| matches!(
        x,
        Action::MoveNodePages { from, .. } if *from == NodeId(1)
    )));
}

#[test]
fn a_process_whose_user_bound_its_memory_is_left_alone() {
    let t = topo();
    let mut bound = process(2, 0, vec![16 * GIB, 4 * GIB, 0, 0]);
    bound.mapping_policies = vec![rondpoint_model::MappingPolicy {
        start: 0x1000,
        end: 0x2000,
        mode: PolicyMode::Bind,
        nodes: vec![NodeId(0), NodeId(1)],
        numa_balancing: false,
    }];
    let free = process(1, 0, vec![16 * GIB, 4 * GIB, 0, 0]);
    // At allocation: the free process gets the overflow policy, the bound one nothing.
    let mut p = usage_aware(UsageAwareConfig::default());
    p.configure(&Capabilities::all());
    let start = p.start(&t, &[free.clone(), bound.clone()]);
    assert_eq!(start.len(), 1, "{start:?}");
    assert_eq!(start[0].pid(), Pid(1));
    // Moving overflow after the fact: the bound process's pages on node 1 stay.
    let mut p = usage_aware(UsageAwareConfig::default());
    p.configure(&live());
    let o = full_nodes(vec![bound]);
    assert!(p.decide(&t, &o).is_empty());
}

#[test]
fn needs_follow_the_mode_and_refuse_what_the_machine_lacks() {
    let none = Capabilities::none();
    let allocation = hybrid(HybridConfig {
        mode: Mode::Allocation,
        ..HybridConfig::default()
    });
    let err = live()
        .check("hybrid", &allocation.needs())
        .unwrap_err()
        .to_string();
    assert!(err.contains("overflow-placement"), "{err}");
    let reactive = usage_aware(UsageAwareConfig {
        mode: Mode::Reactive,
        ..UsageAwareConfig::default()
    });
    assert!(live().check("usage-aware", &reactive.needs()).is_ok());
    let err = none
        .check("usage-aware", &reactive.needs())
        .unwrap_err()
        .to_string();
    assert!(err.contains("migrate-pages"), "{err}");
    // AutoNUMA beside brings its own needs and its hinting scans.
    let with = hybrid(HybridConfig {
        autonuma: true,
        ..HybridConfig::default()
    });
    assert!(with.needs().len() > allocation.needs().len());
    assert!(with.sampling().hinting.is_some());
    assert!(allocation.sampling().hinting.is_none());
}

#[test]
fn dm_needs_controller_traffic_and_runs_autonuma() {
    let p = dm(DmConfig::default());
    let needs = p.needs();
    assert!(
        needs
            .iter()
            .any(|n| n.any_of == vec![Capability::NodeTraffic])
    );
    assert!(
        needs
            .iter()
            .any(|n| n.any_of == vec![Capability::KernelBalancing, Capability::FaultSamples])
    );
    assert!(p.sampling().hinting.is_some());
    // A live machine whose kernel does not balance, and so makes no hinting faults: refused,
    // naming both ways AutoNUMA could have run.
    let off = live()
        .with(
            Capability::KernelBalancing,
            Support::Missing("kernel.numa_balancing is 0".into()),
        )
        .with(
            Capability::FaultSamples,
            Support::Missing("no hinting faults".into()),
        );
    let err = off.check("dm", &needs).unwrap_err().to_string();
    assert!(
        err.contains("kernel-balancing") && err.contains("fault-samples"),
        "{err}"
    );
    let mut u = ua_dm(UaDmConfig::default());
    u.configure(&Capabilities::all());
    assert!(u.places_at_allocation());
    assert_eq!(u.name(), "ua-dm");
}

/// Two hinting faults from node 1 on a page of process 1 on node 0: AutoNUMA's rule moves it.
fn two_remote_hinting_faults() -> Observation {
    let fault = |offset: u64| rondpoint_model::Sample {
        pid: Pid(1),
        tid: Tid(1),
        cpu: CpuId(1),
        node: NodeId(1),
        addr: 0x7f00_0000_0000 + offset,
        page_size: rondpoint_model::PageSize::Base4K,
        kind: rondpoint_model::AccessKind::Read,
        source: rondpoint_model::SampleSource::HintingFault,
        latency_cycles: None,
        dram: None,
        home_node: Some(NodeId(0)),
    };
    let mut o = full_nodes(vec![process(1, 1, vec![GIB, 0, 0, 0])]);
    for m in &mut o.memory {
        m.free_bytes = 8 * GIB;
    }
    o.samples = vec![fault(0), fault(8)];
    o
}

/// The page moves (`MigratePages`: AutoNUMA's) among `actions`.
fn page_moves(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::MigratePages { .. }))
        .count()
}

#[test]
fn autonuma_is_the_kernels_alone_where_the_kernel_balances() {
    let t = topo();
    let migrations = |caps: &Capabilities| {
        let mut p = dm(DmConfig::default());
        p.configure(caps);
        let moved = page_moves(&p.decide(&t, &two_remote_hinting_faults()));
        (moved, p.notes(), p.sampling().hinting.is_some())
    };
    // The simulator: the policy runs Linux's rules and moves the page to the faulting node.
    let (moved, notes, samples) = migrations(&Capabilities::simulated());
    assert_eq!((moved, samples), (1, true));
    assert!(notes.is_empty(), "{notes:?}");
    // A live kernel that balances: it moved the page at the fault; the policy does not move
    // it again, still asks for the samples (dm's traffic estimate), and says so.
    let (moved, notes, samples) = migrations(&live());
    assert_eq!((moved, samples), (0, true));
    assert!(notes[0].contains("kernel-balancing"), "{notes:?}");
    // hybrid with `autonuma = true` likewise.
    let mut h = hybrid(HybridConfig {
        autonuma: true,
        ..HybridConfig::default()
    });
    h.configure(&live());
    assert_eq!(page_moves(&h.decide(&t, &two_remote_hinting_faults())), 0);
}

#[test]
fn configs_round_trip_and_reject_unknown_keys() {
    let text = toml::to_string(&UaDmConfig::default()).unwrap();
    assert_eq!(
        toml::from_str::<UaDmConfig>(&text).unwrap(),
        UaDmConfig::default()
    );
    let c: UsageAwareConfig = toml::from_str("usage = \"free\"\nmode = \"reactive\"").unwrap();
    assert_eq!((c.usage, c.mode), (Usage::Free, Mode::Reactive));
    assert!(toml::from_str::<HybridConfig>("usage = \"free\"").is_err());
    assert!(toml::from_str::<HybridConfig>("tiers = \"random\"").is_err());
}

#[test]
fn nodes_to_avoid_get_no_overflow_and_must_exist() {
    let t = topo();
    let config = UsageAwareConfig {
        avoid_nodes: vec![NodeId(2)],
        ..UsageAwareConfig::default()
    };
    // At allocation: node 2 is in no tier.
    let mut p = usage_aware(config.clone());
    p.configure(&Capabilities::all());
    let procs = [process(1, 0, vec![0; 4])];
    assert_eq!(p.accepts(&t, &procs), Ok(()));
    let start = p.start(&t, &procs);
    let [Action::SetMemPolicy { policy, .. }] = &start[..] else {
        panic!("{start:?}");
    };
    let MemPolicy::Overflow { tiers, .. } = policy else {
        panic!("{policy:?}");
    };
    assert_eq!(tiers[0].tiers, vec![vec![NodeId(1), NodeId(3)]]);
    // After allocation: the overflow the kernel put on node 1 goes to node 3 only.
    let mut p = usage_aware(config);
    p.configure(&live());
    let o = full_nodes(vec![process(1, 0, vec![16 * GIB, 4 * GIB, 0, 0])]);
    let a = p.decide(&t, &o);
    assert!(!a.is_empty());
    for x in &a {
        let Action::MoveNodePages { to, .. } = x else {
            panic!("{x:?}");
        };
        assert_eq!(to.as_slice(), [NodeId(3)]);
    }
    // A node the machine does not have is refused before the run.
    let mut p = usage_aware(UsageAwareConfig {
        avoid_nodes: vec![NodeId(7)],
        ..UsageAwareConfig::default()
    });
    let Err(Refusal(why)) = p.accepts(&t, &procs) else {
        panic!("accepted node 7");
    };
    assert!(why.contains("avoid_nodes names node 7"), "{why}");
}
