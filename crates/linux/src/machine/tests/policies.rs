//! Live runs of the counter-driven policies (N-MASS, OAAS) on the fake kernel.

use super::*;

/// A /proc of single-threaded processes (command `prog`), each `(pid, cpu it last ran on,
/// node holding its 1,000 pages)`, allowed on CPUs 0-7.
fn processes_at(list: &[(i32, u32, u16)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let template = config().proc_root;
    for name in ["vmstat", "sys"] {
        copy_dir(&template.join(name), dir.path());
    }
    for &(pid, cpu, node) in list {
        let p = dir.path().join(pid.to_string());
        std::fs::create_dir_all(p.join(format!("task/{pid}"))).unwrap();
        let stat = format!(
            "{pid} (prog) R 1 {pid} {pid} 0 -1 4194304 1000 0 0 0 50 7 0 0 20 0 1 0 250000 \
             78036992 8565 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0 1 1 \
             1 1 1 1 1 0\n"
        );
        let status =
            format!("Name:\tprog\nTgid:\t{pid}\nPid:\t{pid}\nPPid:\t1\nCpus_allowed_list:\t0-7\n");
        for d in [p.clone(), p.join(format!("task/{pid}"))] {
            std::fs::write(d.join("stat"), &stat).unwrap();
            std::fs::write(d.join("status"), &status).unwrap();
        }
        std::fs::write(p.join("comm"), "prog\n").unwrap();
        std::fs::write(
            p.join("numa_maps"),
            format!("7f0000000000 default anon=1000 dirty=1000 N{node}=1000 kernelpagesize_kB=4\n"),
        )
        .unwrap();
    }
    dir
}

/// Four processes 7001-7004 on CPU 0, their pages on node 0.
fn four_processes_on_node0() -> tempfile::TempDir {
    processes_at(&[(7001, 0, 0), (7002, 0, 0), (7003, 0, 0), (7004, 0, 0)])
}

/// Runs n-mass for two epochs on [`four_processes_on_node0`], each process counting
/// `misses` LLC misses per billion instructions; the CPUs each was pinned to last.
fn n_mass_pins(misses: u64) -> (Vec<Vec<CpuId>>, usize) {
    let proc = four_processes_on_node0();
    let sys = [7001, 7002, 7003, 7004]
        .into_iter()
        .fold(FakeSys::new(), |s, p| s.with_process(p, &[]));
    let topology = TopologyBuilder::new(2).cores_per_llc(4).build().unwrap();
    let cfg = LiveConfig {
        proc_root: proc.path().to_path_buf(),
        ..config()
    };
    let pids = (7001..=7004).map(Pid).collect();
    let mut m = LinuxMachine::to_manage(sys, topology, cfg, pids);
    // Fds from 102 (100 and 101 are the capability probe's counter and sampler event):
    // instructions, cycles, LLC misses
    // for each process in pid order.
    for k in 0..4 {
        let fd = 102 + 3 * k;
        m.sys.counters.insert(fd, reading(1_000_000_000, 100, 100));
        m.sys
            .counters
            .insert(fd + 1, reading(2_000_000_000, 100, 100));
        m.sys.counters.insert(fd + 2, reading(misses, 100, 100));
    }
    let mut policy = rondpoint_policy::by_name("n-mass").unwrap();
    let engine = rondpoint_engine::EngineConfig {
        time_limit_ns: Some(2_000_000_000),
        ..rondpoint_engine::EngineConfig::default()
    };
    rondpoint_engine::run(
        &mut m,
        policy.as_mut(),
        &mut rondpoint_engine::VirtualClock::default(),
        &engine,
        |_| {},
    )
    .unwrap();
    let mut last: std::collections::BTreeMap<i32, Vec<CpuId>> = Default::default();
    for c in &m.sys().calls {
        if let Call::SetAffinity { tid, cpus } = c {
            last.insert(tid.0, cpus.clone());
        }
    }
    (last.into_values().collect(), counter_opens(m.sys()).len())
}

#[test]
fn a_live_n_mass_run_pins_the_processes_its_counters_call_for() {
    // Two nodes of four CPUs; four processes homed on node 0. Maximum-local puts all four on
    // node 0's cores. At 20 LLC misses per thousand instructions each (a penalty of 1.35 by
    // the regression of [Majo11 §4.5], no profile being given), N-MASS moves half of the
    // pressure to node 1: two of the four, well under the 60-MPKI threshold there.
    let (pins, opened) = n_mass_pins(20_000_000);
    assert_eq!(pins.len(), 4, "every process pinned: {pins:?}");
    assert!(pins.iter().all(|cpus| cpus.len() == 1), "{pins:?}");
    let on_node1 = |pins: &[Vec<CpuId>]| pins.iter().filter(|c| c[0].0 >= 4).count();
    assert_eq!(on_node1(&pins), 2, "{pins:?}");
    // Counters were opened on each process (3 each) besides the probe's.
    assert_eq!(opened, 1 + 4 * 3);
    // Without cache pressure there is nothing to balance: all four stay local.
    let (pins, _) = n_mass_pins(0);
    assert_eq!((pins.len(), on_node1(&pins)), (4, 0), "{pins:?}");
}

/// The asymmetric 4-node machine of \[Gaud10\]: one CPU a node (CPU n on node n); nodes 0 and
/// 3 slow, two hops apart.
fn gaud10_machine() -> Topology {
    TopologyBuilder::new(4)
        .distances(vec![
            vec![10, 16, 16, 22],
            vec![16, 10, 16, 16],
            vec![16, 16, 10, 16],
            vec![22, 16, 16, 10],
        ])
        .build()
        .unwrap()
}

/// Runs `policy` for 200 ms on [`gaud10_machine`], with 7001 on slow node 0 making 300 LLC misses per
/// thousand instructions (MAPI 0.3, the paper's plateau), 7002 on fast node 1 making almost
/// none and, when `third`, 7003 on fast node 2 making a few more. The system calls made.
fn oaas_calls(policy: &str, third: bool) -> Vec<Call> {
    let mut apps = vec![(7001, 0, 0, 300_000_000u64), (7002, 1, 1, 10_000)];
    if third {
        apps.push((7003, 2, 2, 20_000));
    }
    let at: Vec<(i32, u32, u16)> = apps.iter().map(|a| (a.0, a.1, a.2)).collect();
    let proc = processes_at(&at);
    let sys = apps
        .iter()
        .map(|a| a.0)
        .fold(FakeSys::new(), |s, p| s.with_process(p, &[]));
    let cfg = LiveConfig {
        proc_root: proc.path().to_path_buf(),
        ..config()
    };
    let pids = apps.iter().map(|a| Pid(a.0)).collect();
    let mut m = LinuxMachine::to_manage(sys, gaud10_machine(), cfg, pids);
    for (k, app) in apps.iter().enumerate() {
        let (fd, misses) = (102 + 3 * k as i32, app.3);
        m.sys.counters.insert(fd, reading(1_000_000_000, 100, 100));
        m.sys
            .counters
            .insert(fd + 1, reading(2_000_000_000, 100, 100));
        m.sys.counters.insert(fd + 2, reading(misses, 100, 100));
    }
    let mut config = rondpoint_policy_api::PolicyConfig::default();
    let registry = rondpoint_policy::registry();
    registry
        .set_arg(&mut config, &format!("{policy}.initial_placement=none"))
        .unwrap();
    // The machine stamps epochs with the time it measured, so the period runs on real time:
    // 20-ms epochs, a 50-ms period, a decision in the third epoch.
    registry
        .set_arg(&mut config, &format!("{policy}.period_ms=50"))
        .unwrap();
    let mut p = registry.build(policy, &config).unwrap();
    let engine = rondpoint_engine::EngineConfig {
        epoch_ns: 20_000_000,
        time_limit_ns: Some(200_000_000),
        ..rondpoint_engine::EngineConfig::default()
    };
    rondpoint_engine::run(
        &mut m,
        p.as_mut(),
        &mut rondpoint_engine::WallClock::new(),
        &engine,
        |_| {},
    )
    .unwrap();
    m.sys().calls.clone()
}

#[test]
fn a_live_oaas_run_moves_the_sensitive_application_to_a_fast_node() {
    let pinned = |calls: &[Call], tid: i32| {
        calls
            .iter()
            .rev()
            .find_map(|c| match c {
                Call::SetAffinity { tid: t, cpus } if t.0 == tid => Some(cpus.clone()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let moved = |calls: &[Call]| -> Vec<(i32, Vec<u16>)> {
        calls
            .iter()
            .filter_map(|c| match c {
                Call::MigratePages { pid, to, .. } => Some((pid.0, to.clone())),
                _ => None,
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    // Fast node 2 is empty: the memory-hungry 7001 moves there with its pages (migrate_pages
    // from its other nodes to node 2); 7002 stays where it is.
    let calls = oaas_calls("oaas", false);
    assert_eq!(pinned(&calls, 7001), vec![CpuId(2)], "{calls:?}");
    assert_eq!(pinned(&calls, 7002), Vec::<CpuId>::new(), "{calls:?}");
    assert_eq!(moved(&calls), vec![(7001, vec![2])], "{calls:?}");
    // Both fast nodes taken: 7001 swaps with the least sensitive of them, 7002, each with its
    // own pages.
    let calls = oaas_calls("oaas", true);
    assert_eq!(pinned(&calls, 7001), vec![CpuId(1)], "{calls:?}");
    assert_eq!(pinned(&calls, 7002), vec![CpuId(0)], "{calls:?}");
    assert_eq!(pinned(&calls, 7003), Vec::<CpuId>::new(), "{calls:?}");
    assert_eq!(
        moved(&calls),
        vec![(7001, vec![1]), (7002, vec![0])],
        "{calls:?}"
    );
    // Without its pages (oaas-nopm): the same move of threads, no page moves.
    let calls = oaas_calls("oaas-nopm", true);
    assert_eq!(pinned(&calls, 7001), vec![CpuId(1)], "{calls:?}");
    assert_eq!(moved(&calls), vec![], "{calls:?}");
}

/// Launches `prog` (the fake kernel's pid 4000) under `static` with mapping F for two epochs of
/// 1 s on [`gaud10_machine`], where /proc has it running on slow node 0 unless `gone` (it
/// exited before an epoch saw it); the accounting and the system calls made.
fn launched_under_static(gone: bool) -> (rondpoint_engine::Accounting, Vec<Call>) {
    let proc = processes_at(if gone { &[] } else { &[(4000, 0, 0)] });
    let cfg = LiveConfig {
        proc_root: proc.path().to_path_buf(),
        ..config()
    };
    let mut m = LinuxMachine::to_launch(FakeSys::new(), gaud10_machine(), cfg, vec!["prog".into()]);
    if gone {
        m.sys.exits.insert(4000, [ExitStatus::Code(0)].into());
    }
    let registry = rondpoint_policy::registry();
    let mut config = rondpoint_policy_api::PolicyConfig::default();
    registry.set_arg(&mut config, "static.mapping=F").unwrap();
    let mut p = registry.build("static", &config).unwrap();
    let engine = rondpoint_engine::EngineConfig {
        time_limit_ns: Some(2_000_000_000),
        ..rondpoint_engine::EngineConfig::default()
    };
    let acct = rondpoint_engine::run(
        &mut m,
        p.as_mut(),
        &mut rondpoint_engine::VirtualClock::default(),
        &engine,
        |_| {},
    )
    .unwrap();
    (acct, m.sys().calls.clone())
}

#[test]
fn a_launched_program_is_moved_where_the_start_decided_once_it_runs() {
    // `static` decides at the start, on the program not yet launched (no threads): to fast
    // node 1. The move waits for the program to run and is carried out on its pid.
    let (acct, calls) = launched_under_static(false);
    let spawned = calls
        .iter()
        .position(|c| matches!(c, Call::Spawn { .. }))
        .unwrap();
    let pinned = calls.iter().position(
        |c| matches!(c, Call::SetAffinity { tid, cpus } if tid.0 == 4000 && cpus == &[CpuId(1)]),
    );
    assert!(pinned.is_some_and(|p| p > spawned), "{calls:?}");
    let moves = &acct.by_technique["move-application"];
    assert_eq!((moves.actions, moves.applied), (1, 1), "{acct:?}");
    assert_eq!(acct.deferred.len(), 1);
    assert!(
        acct.deferred[0].starts_with("1 start decision (move-application) carried out at epoch 0"),
        "{:?}",
        acct.deferred
    );
    // A program that ended before an epoch saw it running was never moved, and the report
    // says so.
    let (acct, calls) = launched_under_static(true);
    assert!(
        !calls
            .iter()
            .any(|c| matches!(c, Call::SetAffinity { tid, .. } if tid.0 == 4000)),
        "{calls:?}"
    );
    assert_eq!(acct.by_technique["move-application"].skipped, 1);
    assert!(
        acct.deferred[0].contains("not carried out: the program was not seen running"),
        "{:?}",
        acct.deferred
    );
}
