//! The N-MASS policies on observations: homes, MPKI, the re-decision rule, pins, needs and
//! the limit on processes.

use super::*;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{
    Capabilities, Counters, LinkCounters, MappingPolicy, NodeId, PolicyMode, Support,
    ThreadCounters, ThreadInfo,
};

fn topo() -> Topology {
    TopologyBuilder::new(2).cores_per_llc(4).build().unwrap()
}

/// Process `pid` (one thread, tid = pid) on `cpu`, its memory bound to `home`.
fn process(pid: i32, comm: &str, cpu: u32, home: u16) -> ProcessInfo {
    ProcessInfo {
        pid: Pid(pid),
        comm: comm.into(),
        threads: vec![ThreadInfo {
            tid: Tid(pid),
            cpu: CpuId(cpu),
            node: NodeId(u16::from(cpu >= 4)),
            allowed_cpus: (0..8).map(CpuId).collect(),
        }],
        resident_bytes_by_node: vec![0, 0],
        mapping_policies: vec![MappingPolicy {
            start: 0x1000,
            end: 0x2000,
            mode: PolicyMode::Bind,
            nodes: vec![NodeId(home)],
            numa_balancing: false,
        }],
    }
}

/// An observation of `procs` with each one's MPKI (a billion instructions each).
fn observed(procs: &[ProcessInfo], mpki: &[f64]) -> Observation {
    let threads = procs
        .iter()
        .zip(mpki)
        .map(|(p, &m)| ThreadCounters {
            pid: p.pid,
            tid: p.threads[0].tid,
            node: p.threads[0].node,
            instructions: 1_000_000_000,
            cycles: 2_000_000_000,
            llc_misses: (m * 1e6) as u64,
            ..ThreadCounters::default()
        })
        .collect();
    Observation {
        processes: procs.to_vec(),
        counters: Counters {
            duration_ns: 1_000_000_000,
            threads,
            links: vec![LinkCounters {
                a: NodeId(0),
                b: NodeId(1),
                capacity_bytes_per_s: Some(11.72e9),
                ..LinkCounters::default()
            }],
            ..Counters::default()
        },
        ..Observation::default()
    }
}

/// A profile with a NUMA penalty only.
fn np(numa_penalty: f64) -> Profile {
    Profile {
        numa_penalty: Some(numa_penalty),
        mpki: None,
    }
}

fn pin(pid: i32, cpu: u32) -> Action {
    Action::PinThread {
        pid: Pid(pid),
        tid: Tid(pid),
        cpus: vec![CpuId(cpu)],
    }
}

/// Carries pins out on `procs` and tells the policy they were applied.
fn apply(policy: &mut NMass, procs: &mut [ProcessInfo], actions: &[Action]) {
    let mut outcomes = Vec::new();
    for (i, a) in actions.iter().enumerate() {
        if let Action::PinThread { pid, cpus, .. } = a {
            let p = procs.iter_mut().find(|p| p.pid == *pid).unwrap();
            p.threads[0].cpu = cpus[0];
            p.threads[0].node = NodeId(u16::from(cpus[0].0 >= 4));
        }
        outcomes.push(Outcome::applied(i));
    }
    policy.outcomes(actions, &outcomes);
}

fn n_mass() -> NMass {
    let mut c = NMassConfig::default();
    c.inputs.profile.insert("a".into(), np(1.3));
    c.inputs.profile.insert("b".into(), np(1.2));
    NMass::refined(c).unwrap()
}

#[test]
fn start_maps_maximum_local_and_pins_every_process_once() {
    let mut p = n_mass();
    let t = topo();
    let mut procs = vec![process(1, "a", 4, 0), process(2, "b", 5, 0)];
    let start = p.start(&t, &procs);
    assert_eq!(start, vec![pin(1, 0), pin(2, 1)]);
    apply(&mut p, &mut procs, &start);
    // Nothing changed but the MPKI, known for the first time: the refinement splits them.
    let first = p.decide(&t, &observed(&procs, &[10.0, 10.0]));
    assert_eq!(
        first,
        vec![pin(2, 4)],
        "a is pinned already; b moves to processor 1"
    );
}

#[test]
fn maps_again_only_when_an_mpki_moves_by_more_than_20_percent() {
    let mut p = n_mass();
    let t = topo();
    let mut procs = vec![process(1, "a", 0, 0), process(2, "b", 1, 0)];
    let start = p.start(&t, &procs);
    apply(&mut p, &mut procs, &start);
    // b (penalty 1.2) at 44 MPKI weighs 52.8 on processor 1: under the threshold, moved.
    let a = p.decide(&t, &observed(&procs, &[44.0, 44.0]));
    assert_eq!(a, vec![pin(2, 4)]);
    apply(&mut p, &mut procs, &a);
    // +9%: at 48 it would no longer fit (57.6 is fine, but 60 x 1.2 is not), yet no re-decision.
    assert!(p.decide(&t, &observed(&procs, &[48.0, 48.0])).is_empty());
    // +30%: mapped again; 62.4 x 1.2 is over 60, so b comes home.
    let back = p.decide(&t, &observed(&procs, &[62.4, 62.4]));
    assert_eq!(back, vec![pin(2, 1)]);
}

#[test]
fn the_threshold_scales_with_the_narrowest_link() {
    let mut c = NMassConfig::default();
    c.inputs.profile.insert("a".into(), np(1.3));
    c.inputs.profile.insert("b".into(), np(1.2));
    let t = topo();
    let procs = vec![process(1, "a", 0, 0), process(2, "b", 1, 0)];
    let mut wide = observed(&procs, &[60.0, 60.0]);
    wide.counters.links[0].capacity_bytes_per_s = Some(2.0 * 11.72e9);
    // 72 weighted: over 60, under 120.
    let mut p = NMass::refined(c.clone()).unwrap();
    p.start(&t, &procs);
    assert_eq!(p.decide(&t, &wide), vec![pin(1, 0), pin(2, 4)]);
    c.scale_threshold_by_link = false;
    let mut p = NMass::refined(c).unwrap();
    p.start(&t, &procs);
    assert_eq!(p.decide(&t, &wide), vec![pin(1, 0), pin(2, 1)]);
}

#[test]
fn maximum_local_ignores_pressure_and_regression_penalties_follow_mpki() {
    let t = topo();
    let procs = vec![process(1, "a", 0, 0), process(2, "b", 1, 0)];
    let mut c = MaximumLocalConfig::default();
    c.inputs.profile.insert("a".into(), np(1.3));
    c.inputs.profile.insert("b".into(), np(1.2));
    let mut ml = NMass::maximum_local(c).unwrap();
    let mut seen = procs.clone();
    let start = ml.start(&t, &seen);
    apply(&mut ml, &mut seen, &start);
    assert_eq!(ml.decide(&t, &observed(&seen, &[40.0, 40.0])), Vec::new());
    // One core per node. With the regression, b's 30 MPKI (1.5) outranks a's 10 (1.2): b
    // takes processor 0 and a overflows, the two exchanging cores.
    let t = TopologyBuilder::new(2).build().unwrap();
    let mut c = MaximumLocalConfig::default();
    c.inputs.penalty = PenaltySource::Regression;
    let mut ml = NMass::maximum_local(c).unwrap();
    let mut seen = procs.clone();
    let start = ml.start(&t, &seen);
    assert_eq!(
        start,
        vec![pin(1, 0), pin(2, 1)],
        "MPKI unknown: equal penalties"
    );
    apply(&mut ml, &mut seen, &start);
    assert_eq!(
        ml.decide(&t, &observed(&seen, &[10.0, 30.0])),
        vec![pin(1, 1), pin(2, 0)]
    );
}

#[test]
fn homes_come_from_bindings_then_pages_then_the_cpu() {
    let t = topo();
    let mut p = process(1, "a", 5, 0);
    assert_eq!(home(&t, &p), 0);
    p.mapping_policies.clear();
    p.resident_bytes_by_node = vec![10, 30];
    assert_eq!(home(&t, &p), 1);
    p.resident_bytes_by_node = vec![30, 30];
    assert_eq!(home(&t, &p), 0, "ties to the lower node");
    p.resident_bytes_by_node = vec![0, 0];
    assert_eq!(home(&t, &p), 1, "no pages yet: where it runs");
}

#[test]
fn needs_thread_counters_exactly_when_it_reads_the_mpki() {
    let counters = |p: &dyn Policy| {
        p.needs()
            .iter()
            .any(|n| n.any_of == [Capability::ThreadCounters] && n.exact)
    };
    assert!(counters(&n_mass()));
    assert!(!counters(
        &NMass::maximum_local(MaximumLocalConfig::default()).unwrap()
    ));
    let mut c = MaximumLocalConfig::default();
    c.inputs.penalty = PenaltySource::Regression;
    assert!(counters(&NMass::maximum_local(c).unwrap()));
    let machine = Capabilities::all().with(
        Capability::ThreadCounters,
        Support::Missing("perf_event_open: ENOENT for PERF_TYPE_HARDWARE".into()),
    );
    let err = machine.check("n-mass", &n_mass().needs()).unwrap_err();
    assert!(
        err.to_string().contains("to compute each process's MPKI"),
        "{err}"
    );
}

#[test]
fn more_processes_than_cores_is_refused_with_the_papers_limitation() {
    let t = topo();
    assert!(crate::nmass::check_fits(&t, 8, 0).is_ok());
    let err = crate::nmass::check_fits(&t, 9, 0).unwrap_err().to_string();
    assert!(err.contains("spatial multiplexing, not temporal"), "{err}");
    assert!(err.contains("[Majo11 §3.3, Limitations]"), "{err}");
}

#[test]
fn bad_parameters_are_refused() {
    let c = NMassConfig {
        threshold_mpki: 0.0,
        ..NMassConfig::default()
    };
    assert!(NMass::refined(c).is_err());
    let mut c = NMassConfig::default();
    c.inputs.profile.insert("x".into(), np(-1.0));
    assert!(NMass::refined(c).is_err());
}

#[test]
fn with_profiled_mpki_the_whole_mapping_is_decided_at_start_and_kept() {
    let mut c = NMassConfig::default();
    c.inputs.mpki = MpkiSource::Profile;
    for (name, penalty) in [("a", 1.3), ("b", 1.2)] {
        c.inputs.profile.insert(
            name.into(),
            Profile {
                numa_penalty: Some(penalty),
                mpki: Some(10.0),
            },
        );
    }
    let mut p = NMass::refined(c).unwrap();
    let t = topo();
    let mut procs = vec![process(1, "a", 4, 0), process(2, "b", 5, 0)];
    let start = p.start(&t, &procs);
    assert_eq!(
        start,
        vec![pin(2, 5), pin(1, 0)],
        "b already on processor 1"
    );
    apply(&mut p, &mut procs, &start);
    assert!(
        p.needs()
            .iter()
            .all(|n| n.any_of != [Capability::ThreadCounters])
    );
    assert!(p.decide(&t, &observed(&procs, &[50.0, 50.0])).is_empty());
}

#[test]
fn with_profiled_mpki_a_program_without_a_profile_is_refused_by_name() {
    let mut c = NMassConfig::default();
    c.inputs.mpki = MpkiSource::Profile;
    c.inputs.profile.insert(
        "a".into(),
        Profile {
            numa_penalty: Some(1.3),
            mpki: Some(10.0),
        },
    );
    // "b" has a penalty but no MPKI: nothing would count it, and it would map on MPKI 0.
    c.inputs.profile.insert("b".into(), np(1.2));
    let mut p = NMass::refined(c).unwrap();
    let t = topo();
    let why = p
        .accepts(&t, &[process(1, "a", 4, 0), process(2, "b", 5, 0)])
        .unwrap_err();
    assert!(why.0.contains("'b' has no profiled MPKI"), "{}", why.0);
    assert!(why.0.contains("inputs.profile.b.mpki"), "{}", why.0);
    assert!(p.accepts(&t, &[process(1, "a", 4, 0)]).is_ok());
    // With measured MPKIs no profile is needed.
    assert!(n_mass().accepts(&t, &[process(3, "c", 4, 0)]).is_ok());
}

#[test]
fn multi_threaded_processes_are_left_alone_and_their_cores_taken() {
    // Node 0 has CPUs 0-3; a three-thread process runs on 0, 1 and 2, two single-threaded
    // processes homed on node 0 run on 4 and 5.
    let t = topo();
    let mut wide = process(9, "wide", 0, 0);
    wide.threads = (0..3)
        .map(|c| ThreadInfo {
            tid: Tid(90 + c),
            cpu: CpuId(c as u32),
            node: NodeId(0),
            allowed_cpus: (0..8).map(CpuId).collect(),
        })
        .collect();
    let procs = vec![wide, process(1, "a", 4, 0), process(2, "b", 5, 0)];
    let mut ml = NMass::maximum_local(MaximumLocalConfig::default()).unwrap();
    assert!(ml.accepts(&t, &procs).is_ok());
    let start = ml.start(&t, &procs);
    // One of a and b gets node 0's last free core (3); the other stays on node 1.
    assert!(
        start.contains(&pin(1, 3)) || start.contains(&pin(2, 3)),
        "{start:?}"
    );
    assert!(
        start
            .iter()
            .all(|a| !matches!(a, Action::PinThread { pid, .. } if *pid == Pid(9))),
        "{start:?}"
    );
    let notes = ml.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("wide (pid 9, 3 threads) left where the OS runs it"),
        "{notes:?}"
    );
    // Seven single-threaded processes beside it do not fit the five cores left.
    let mut many = procs.clone();
    many.extend((3..8).map(|p| process(p, "x", 4, 1)));
    let err = ml.accepts(&t, &many).unwrap_err().to_string();
    assert!(
        err.starts_with("7 single-threaded processes on 5 cores (besides the 3"),
        "{err}"
    );
}
