//! What the live machine says it can do, and refuses to do on the fake kernel: weighted
//! interleaving at launch as far as the kernel allows, and hardware counters (opened on every
//! thread, read per epoch, missing with the reason kept).

use super::*;

/// A sysfs copy of the fixture with the kernel's weighted-interleave weights, when given.
fn with_kernel_weights(weights: Option<&[(u16, u8)]>) -> (tempfile::TempDir, LiveConfig) {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = dir.path().join("sys");
    copy_dir(&config().sysfs_root, &sysfs);
    if let Some(weights) = weights {
        let wi = sysfs.join(crate::capabilities::WEIGHTED_INTERLEAVE_DIR);
        std::fs::create_dir_all(&wi).unwrap();
        for (n, w) in weights {
            std::fs::write(wi.join(format!("node{n}")), format!("{w}\n")).unwrap();
        }
    }
    let cfg = LiveConfig {
        sysfs_root: sysfs,
        ..config()
    };
    (dir, cfg)
}

fn launch_weighted(cfg: LiveConfig, weights: &[(u16, u8)]) -> (Outcome, Call) {
    let mut m = LinuxMachine::to_launch(FakeSys::new(), topo(), cfg, vec!["prog".into()]);
    let out = m
        .start(&[Action::SetMemPolicy {
            pid: PENDING,
            policy: MemPolicy::WeightedInterleave {
                weights: weights.iter().map(|&(n, w)| (NodeId(n), w)).collect(),
            },
        }])
        .unwrap();
    let spawn = m.sys().calls_named("spawn")[0].clone();
    (out[0].clone(), spawn)
}

#[test]
fn weighted_interleave_at_launch_is_applied_only_as_the_kernel_can_do_it() {
    use rondpoint_model::OutcomeStatus;
    // No weighted interleave in this kernel: the weighted nodes interleaved evenly, said so.
    let (_dir, cfg) = with_kernel_weights(None);
    let (out, spawn) = launch_weighted(cfg, &[(0, 3), (1, 1)]);
    assert_eq!(out.status, OutcomeStatus::Substituted);
    assert!(
        out.note.as_deref().unwrap_or("").contains("Linux 6.9+"),
        "{out:?}"
    );
    assert_eq!(
        spawn,
        Call::Spawn {
            argv: vec!["prog".into()],
            cgroup: None,
            policy: Some((MemPolicyMode::Interleave, vec![0, 1])),
            cpus: None,
        }
    );
    // The kernel's weights in the same proportions: done as asked.
    let (_dir, cfg) = with_kernel_weights(Some(&[(0, 6), (1, 2), (2, 1), (3, 1)]));
    let (out, spawn) = launch_weighted(cfg, &[(0, 3), (1, 1)]);
    assert_eq!(out.status, OutcomeStatus::Applied, "{out:?}");
    assert_eq!(
        spawn,
        Call::Spawn {
            argv: vec!["prog".into()],
            cgroup: None,
            policy: Some((MemPolicyMode::WeightedInterleave, vec![0, 1])),
            cpus: None,
        }
    );
    // Other weights: the kernel's are used, machine-wide settings are left alone, said so.
    let (_dir, cfg) = with_kernel_weights(Some(&[(0, 1), (1, 1), (2, 1), (3, 1)]));
    let (out, _) = launch_weighted(cfg, &[(0, 3), (1, 1)]);
    assert_eq!(out.status, OutcomeStatus::Substituted);
    assert!(
        out.note
            .as_deref()
            .unwrap_or("")
            .contains("machine-wide weights"),
        "{out:?}"
    );
}

/// Needs hardware counters, as N-MASS will.
struct NeedsCounters;

impl rondpoint_policy_api::Policy for NeedsCounters {
    fn name(&self) -> &str {
        "needs-counters"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        vec![
            rondpoint_model::Need::one(
                rondpoint_model::Capability::ThreadCounters,
                "to compute each process's MPKI",
            )
            .exactly(),
        ]
    }
    fn start(&mut self, _: &Topology, procs: &[ProcessInfo]) -> Vec<Action> {
        procs
            .iter()
            .map(|p| Action::SetMemPolicy {
                pid: p.pid,
                policy: MemPolicy::Interleave {
                    nodes: vec![NodeId(0), NodeId(1)],
                },
            })
            .collect()
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

#[test]
fn a_policy_needing_counters_is_refused_on_a_machine_without_a_pmu_before_anything_starts() {
    let mut sys = FakeSys::new();
    sys.fail_next.push_back(("perf_open", Errno::ENOENT));
    let mut m = LinuxMachine::to_launch(sys, topo(), config(), vec!["prog".into()]);
    let err = rondpoint_engine::run(
        &mut m,
        &mut NeedsCounters,
        &mut rondpoint_engine::VirtualClock::default(),
        &rondpoint_engine::EngineConfig::default(),
        |_| panic!("no epoch may run"),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "needs-counters cannot run on this machine: it needs per-thread instructions, cycles and \
         LLC misses (thread-counters) to compute each process's MPKI; this machine: \
         thread-counters: no hardware counters (perf_event_open: ENOENT for PERF_TYPE_HARDWARE)"
    );
    // The probe's counter and sampler event are all the kernel saw: nothing was started or
    // touched.
    let calls: Vec<&str> = m.sys().calls.iter().map(Call::name).collect();
    assert_eq!(calls, vec!["perf_open", "perf_open", "perf_close"]);
    assert!(m.launched().is_none());
}

/// The fake kernel knowing memhog's four threads.
fn memhog_threads(sys: FakeSys) -> FakeSys {
    [4242, 4243, 4244, 4246]
        .into_iter()
        .fold(sys, |sys, tid| sys.with_process(tid, &[]))
}

fn counting() -> SamplingRequest {
    SamplingRequest {
        counters: true,
        ..SamplingRequest::NONE
    }
}

/// Thread `tid`'s counters in an observation.
fn thread_of(obs: &rondpoint_model::Observation, tid: i32) -> rondpoint_model::ThreadCounters {
    obs.counters
        .threads
        .iter()
        .find(|t| t.tid == Tid(tid))
        .cloned()
        .unwrap()
}

#[test]
fn hardware_counters_open_on_every_thread_inherited_and_read_per_epoch() {
    let (_dir, proc_root, mut m) = on_proc_copy(memhog_threads(FakeSys::new()), vec![MEMHOG]);
    m.set_sampling(&counting());
    // The probe's instructions counter on rondpoint itself, then instructions, cycles and LLC
    // misses on each of memhog's three threads (its task 4246 has no stat: gone), user space
    // only, inherited, on every CPU.
    let opens = counter_opens(m.sys());
    assert_eq!(opens[0], (0, 1, -1, false, true), "the probe");
    let mut expected = Vec::new();
    for tid in [4242, 4243, 4244] {
        for config in [1, 0, 3] {
            expected.push((tid, config, -1, true, true));
        }
    }
    assert_eq!(opens[1..], expected);
    // Fds 102.. in that order (100 and 101 were the probe's): thread 4242's instructions are
    // fd 102, cycles 103, misses 104.
    m.sys.counters.insert(102, reading(1_000_000, 100, 100));
    m.sys.counters.insert(103, reading(2_000_000, 100, 100));
    m.sys.counters.insert(104, reading(5_000, 100, 100));
    // Thread 4243's instructions were multiplexed: counted half the time, so doubled.
    m.sys.counters.insert(105, reading(300, 100, 50));
    let obs = m.observe(0).unwrap();
    let t = |tid: i32| thread_of(&obs, tid);
    assert_eq!(
        (t(4242).instructions, t(4242).cycles, t(4242).llc_misses),
        (1_000_000, 2_000_000, 5_000)
    );
    assert_eq!(t(4243).instructions, 600);
    assert!(
        !obs.counters
            .is_missing(rondpoint_model::CounterGroup::Instructions)
    );
    assert!(
        !obs.counters
            .is_missing(rondpoint_model::CounterGroup::LlcMisses)
    );
    assert!(
        !obs.counters
            .is_estimated(rondpoint_model::CounterGroup::Cycles)
    );
    // The next epoch counts what came since. Thread 4244 exits: its counters keep their
    // final count (nothing new), and they stay open while the process is managed.
    m.sys.counters.insert(102, reading(1_500_000, 200, 200));
    std::fs::remove_dir_all(proc_root.join("4242/task/4244")).unwrap();
    let obs = m.observe(0).unwrap();
    let main = thread_of(&obs, 4242);
    assert_eq!(main.instructions, 500_000);
    assert!(obs.counters.threads.iter().all(|t| t.tid != Tid(4244)));
    assert_eq!(
        m.sys().calls_named("perf_close").len(),
        2,
        "the probe's two only"
    );
    // Once the process is gone, its counters close.
    std::fs::remove_dir_all(proc_root.join("4242")).unwrap();
    let _ = m.observe(0).unwrap();
    assert_eq!(
        m.sys().calls_named("perf_close").len(),
        9 + 2,
        "9 and the probe's two"
    );
}

#[test]
fn without_hardware_counters_the_counts_are_missing_and_the_reason_kept() {
    // No PMU: the probe fails, nothing is opened, the counts are missing.
    let mut sys = FakeSys::new();
    sys.fail_next.push_back(("perf_open", Errno::ENOENT));
    let (_dir, _proc_root, mut m) = on_proc_copy(memhog_threads(sys), vec![MEMHOG]);
    m.set_sampling(&counting());
    assert_eq!(counter_opens(m.sys()).len(), 1, "the probe only");
    let obs = m.observe(0).unwrap();
    assert!(
        obs.counters
            .is_missing(rondpoint_model::CounterGroup::Instructions)
    );
    assert!(
        obs.counters
            .is_estimated(rondpoint_model::CounterGroup::Cycles)
    );
    // Counters refused for the process (rights): the reason is kept for the report.
    let (_dir, _proc_root, mut m) = on_proc_copy(memhog_threads(FakeSys::new()), vec![MEMHOG]);
    let _ = m.capabilities();
    m.sys.fail_next.push_back(("perf_open", Errno::EACCES));
    m.set_sampling(&counting());
    let why = m.signals().counters_error.clone().unwrap_or_default();
    assert!(
        why.contains("EACCES") && why.contains("CAP_PERFMON"),
        "{why}"
    );
}

#[test]
fn page_faults_are_hinting_faults_as_kernel_numa_balancing_says() {
    use rondpoint_model::SampleSource::{HintingFault, PageFault};
    // Node 3 has memory and no CPUs: the slower tier. Page HEAP is on it, HEAP + 4 KiB on
    // node 1.
    let topology = TopologyBuilder::new(4)
        .cores_per_llc(4)
        .memory_only(&[3])
        .build()
        .unwrap();
    let sources = |mode: u32| {
        let sys = FakeSys::new().with_process(MEMHOG.0, &[(HEAP, 3), (HEAP + 4096, 1)]);
        let mut m = LinuxMachine::to_manage(sys, topology.clone(), config(), vec![MEMHOG]);
        m.signals.numa_balancing = Some(mode);
        m.set_sampling(&sampling());
        let mut bytes = record(4242, 4242, HEAP, 1);
        bytes.extend(record(4242, 4242, HEAP + 4096, 1));
        m.sys.ring_bytes.insert(100, bytes);
        let obs = m.observe(0).unwrap();
        obs.samples.iter().map(|s| s.source).collect::<Vec<_>>()
    };
    // 1 and 3: any fault may be a hinting fault; 2 (tiering alone): only on the slower tier;
    // 0: first touches only.
    assert_eq!(sources(1), [HintingFault, HintingFault]);
    assert_eq!(sources(3), [HintingFault, HintingFault]);
    assert_eq!(sources(2), [HintingFault, PageFault]);
    assert_eq!(sources(0), [PageFault, PageFault]);
}

/// A machine managing memhog's threads on the Sapphire Rapids fixture's PMUs (which has the
/// per-thread DRAM load events), counting.
fn counting_on_spr(sys: FakeSys) -> (tempfile::TempDir, LinuxMachine<FakeSys>) {
    let root = spr_sysfs("0", 16, 8);
    let cfg = LiveConfig {
        sysfs_root: root.path().to_path_buf(),
        ..config()
    };
    let m = LinuxMachine::to_manage(memhog_threads(sys), topo(), cfg, vec![MEMHOG]);
    (root, m)
}

/// The perf_open calls of a process's counters on the core PMU (`cpu`, type 4: counting,
/// inherited, user space only; not PEBS's group leader): (pid, config).
fn core_counter_opens(sys: &FakeSys) -> Vec<(i32, u64)> {
    sys.calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { attr, pid, .. }
                if attr.kind == 4 && attr.sample_period == 0 && attr.inherit =>
            {
                assert!(attr.exclude_kernel, "{attr:?}");
                Some((pid.0, attr.config))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn dram_loads_are_counted_per_thread_where_the_core_pmu_has_events() {
    use rondpoint_model::CounterGroup::{ThreadDram, ThreadDramWrites};
    let (_root, mut m) = counting_on_spr(FakeSys::new());
    assert_eq!(
        m.capabilities()
            .support(rondpoint_model::Capability::ThreadDram),
        rondpoint_model::Support::Full
    );
    m.set_sampling(&counting());
    // MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM (0x1d3) and REMOTE_DRAM (0x2d3): the probe's on
    // rondpoint itself, then on each of memhog's three threads after its generic three.
    let mut expected = vec![(0, 0x1d3), (0, 0x2d3)];
    for tid in [4242, 4243, 4244] {
        expected.extend([(tid, 0x1d3), (tid, 0x2d3)]);
    }
    assert_eq!(core_counter_opens(m.sys()), expected);
    // Thread 4242's five counters: the fds after those of every open before (each open
    // takes the next fd from 100).
    let opens: Vec<i32> = m
        .sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { pid, .. } | Call::PerfOpenMember { pid, .. } => Some(pid.0),
            _ => None,
        })
        .collect();
    let before = opens.iter().position(|&p| p == 4242).unwrap() as i32;
    let fds: Vec<i32> = (100 + before..).take(5).collect();
    m.sys.counters.insert(fds[3], reading(30_000, 100, 100));
    // Remote loads multiplexed: counted half the time, so doubled.
    m.sys.counters.insert(fds[4], reading(5_000, 100, 50));
    let obs = m.observe(0).unwrap();
    let main = thread_of(&obs, 4242);
    assert_eq!((main.dram_accesses, main.dram_writes), (40_000, 0));
    assert!(!obs.counters.is_estimated(ThreadDram));
    assert!(obs.counters.is_estimated(ThreadDramWrites));
    assert_eq!(m.signals().dram_counters_error, None);
}

#[test]
fn dram_loads_refused_are_estimated_from_samples_with_the_reason() {
    use rondpoint_model::CounterGroup::ThreadDram;
    // Refused when probed: the capability is estimated and says why; nothing is opened.
    let mut sys = FakeSys::new();
    sys.perf_refused.insert(4, Errno::EOPNOTSUPP);
    let (_root, mut m) = counting_on_spr(sys);
    match m
        .capabilities()
        .support(rondpoint_model::Capability::ThreadDram)
    {
        rondpoint_model::Support::Estimated(why) => assert!(why.contains("EOPNOTSUPP"), "{why}"),
        other => panic!("{other:?}"),
    }
    m.set_sampling(&counting());
    assert_eq!(
        core_counter_opens(m.sys()),
        [(0, 0x1d3)],
        "the probe's, refused"
    );
    assert!(m.observe(0).unwrap().counters.is_estimated(ThreadDram));
    // Refused for the process only (after the probe): counted without them, and why kept.
    let (_root, mut m) = counting_on_spr(FakeSys::new());
    let _ = m.capabilities();
    m.sys.perf_refused.insert(4, Errno::EACCES);
    m.set_sampling(&counting());
    let why = m.signals().dram_counters_error.clone().unwrap_or_default();
    assert!(
        why.contains("EACCES") && why.contains("CAP_PERFMON"),
        "{why}"
    );
    let obs = m.observe(0).unwrap();
    assert!(obs.counters.is_estimated(ThreadDram));
    assert!(
        !obs.counters
            .is_missing(rondpoint_model::CounterGroup::Instructions)
    );
}
