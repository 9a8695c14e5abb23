//! LinuxMachine against the recording fake kernel and a fixture /proc (fixtures/procfs/numa4):
//! exact system calls, sample decoding, refusals.

use super::*;
use crate::sys::{Call, FakeSys, MemPolicyMode, PerfFd};
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{CpuId, MemPolicy, NodeList, PageRange, PageSize};

pub(crate) const MEMHOG: Pid = Pid(4242);
const HEAP: u64 = 0x55d4_ca1f_2000;

mod capabilities;
mod memory;
mod policies;

fn topo() -> Topology {
    // 4 nodes x 4 CPUs: CPUs 0-3 on node 0, 4-7 node 1, 8-11 node 2, 12-15 node 3.
    TopologyBuilder::new(4).cores_per_llc(4).build().unwrap()
}

pub(crate) fn config() -> LiveConfig {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    LiveConfig {
        sysfs_root: fixtures.join("sysfs/r905-asymmetric"),
        proc_root: fixtures.join("procfs/numa4"),
        ring_pages: 8,
        ..LiveConfig::default()
    }
}

/// A sysfs tree for the uncore counters' tests: the spr-xeon-2s PMUs with every uncore unit's
/// cpumask set to `cpumask`, and CPUs 0..cpus in packages of `per_package` CPUs.
pub(crate) fn spr_sysfs(cpumask: &str, cpus: u32, per_package: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let bus = dir.path().join("bus");
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pmu/spr-xeon-2s/bus");
    copy_dir(&fixture, &bus);
    for unit in std::fs::read_dir(bus.join("event_source/devices")).unwrap() {
        let unit = unit.unwrap().path();
        if unit.join("cpumask").exists() {
            std::fs::write(unit.join("cpumask"), format!("{cpumask}\n")).unwrap();
        }
    }
    for cpu in 0..cpus {
        let topo = dir
            .path()
            .join(format!("devices/system/cpu/cpu{cpu}/topology"));
        std::fs::create_dir_all(&topo).unwrap();
        std::fs::write(
            topo.join("physical_package_id"),
            format!("{}\n", cpu / per_package),
        )
        .unwrap();
    }
    dir
}

/// A machine managing process 4242 of the fixture /proc on `nodes` synthetic nodes of 4 CPUs,
/// its sysfs (PMUs and packages) from `root`.
pub(crate) fn machine_on_sysfs(root: &std::path::Path, nodes: usize) -> LinuxMachine<FakeSys> {
    let topo = TopologyBuilder::new(nodes)
        .cores_per_llc(4)
        .build()
        .unwrap();
    let cfg = LiveConfig {
        sysfs_root: root.to_path_buf(),
        ..config()
    };
    LinuxMachine::to_manage(FakeSys::new(), topo, cfg, vec![MEMHOG])
}

/// Copies a directory tree (`cp -r`).
pub(crate) fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    let copied = std::process::Command::new("cp")
        .args(["-r", "--"])
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(copied.success());
}

/// A machine managing `pids` on a copy of the fixture /proc, to change between epochs; the
/// copy's root, kept while the directory lives.
fn on_proc_copy(
    sys: FakeSys,
    pids: Vec<Pid>,
) -> (tempfile::TempDir, PathBuf, LinuxMachine<FakeSys>) {
    let dir = tempfile::tempdir().unwrap();
    let proc_root = dir.path().join("proc");
    copy_dir(&config().proc_root, &proc_root);
    let cfg = LiveConfig {
        proc_root: proc_root.clone(),
        ..config()
    };
    let m = LinuxMachine::to_manage(sys, topo(), cfg, pids);
    (dir, proc_root, m)
}

fn sampling() -> SamplingRequest {
    SamplingRequest {
        period_cycles: Some(65_000),
        ..SamplingRequest::NONE
    }
}

/// A machine managing memhog (and its descendants) on the fixture /proc.
fn memhog(sys: FakeSys) -> LinuxMachine<FakeSys> {
    LinuxMachine::to_manage(sys, topo(), config(), vec![MEMHOG])
}

/// The same, sampling.
fn sampling_memhog(sys: FakeSys) -> LinuxMachine<FakeSys> {
    let mut m = memhog(sys);
    m.set_sampling(&sampling());
    m
}

/// A PERF_RECORD_SAMPLE with TID | ADDR | CPU.
fn record(pid: u32, tid: u32, addr: u64, cpu: u32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&9u32.to_ne_bytes());
    b.extend_from_slice(&0u16.to_ne_bytes());
    b.extend_from_slice(&32u16.to_ne_bytes());
    b.extend_from_slice(&pid.to_ne_bytes());
    b.extend_from_slice(&tid.to_ne_bytes());
    b.extend_from_slice(&addr.to_ne_bytes());
    b.extend_from_slice(&cpu.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b
}

/// The sampler events opened so far: (pid or tid, CPU or -1, inherited).
fn perf_opens(m: &LinuxMachine<FakeSys>) -> Vec<(i32, i32, bool)> {
    m.sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { attr, pid, cpu } => Some((pid.0, *cpu, attr.inherit)),
            _ => None,
        })
        .collect()
}

/// The per-thread events (on every CPU) opened so far: (tid, inherited).
fn thread_opens(m: &LinuxMachine<FakeSys>) -> Vec<(i32, bool)> {
    perf_opens(m)
        .into_iter()
        .filter(|o| o.1 == -1)
        .map(|(tid, _, inherit)| (tid, inherit))
        .collect()
}

#[test]
fn manages_the_selected_process_and_its_descendants_only() {
    let m = memhog(FakeSys::new());
    // Its children 4250 and 5000 (a zombie) and its grandchild 4260 come along; pid 1 and
    // 6000 (gone) do not.
    assert_eq!(m.managed(), vec![MEMHOG, Pid(4250), Pid(4260), Pid(5000)]);
    let procs = m.processes();
    let memhog = procs.iter().find(|p| p.pid == MEMHOG).unwrap();
    assert_eq!(memhog.comm, "memhog");
    let cpus: Vec<(i32, u32)> = memhog.threads.iter().map(|t| (t.tid.0, t.cpu.0)).collect();
    assert!(cpus.contains(&(4244, 9)));
    let t = memhog.threads.iter().find(|t| t.tid == Tid(4244)).unwrap();
    assert_eq!(t.node, NodeId(2));
    // numa_maps: pages on every node (the 1 GiB anonymous mapping is spread 4:2:1:1).
    assert!(memhog.resident_bytes_by_node.iter().all(|&b| b > 0));
}

#[test]
fn sampling_opens_inherited_events_per_cpu_and_one_event_per_existing_thread() {
    let sys = FakeSys::new()
        .with_process(MEMHOG.0, &[])
        .with_process(4243, &[]) // memhog's threads, alive to the fake kernel
        .with_process(4244, &[])
        .with_process(4250, &[])
        .with_process(5000, &[]);
    let mut m = sampling_memhog(sys);
    let opens = perf_opens(&m);
    // 16 inherited CPU events for each of the three live processes, then one event on every
    // CPU for each thread memhog already had (4243 and 4244, which inherited events would
    // miss; its thread 4246 has exited); 4260 has exited: its first open says ESRCH and its
    // other CPUs are not tried.
    assert_eq!(opens.len(), 16 * 3 + 2 + 1, "{opens:?}");
    assert_eq!(&opens[..2], &[(MEMHOG.0, 0, true), (MEMHOG.0, 1, true)]);
    assert_eq!(&opens[16..18], &[(4243, -1, false), (4244, -1, false)]);
    assert_eq!(opens.iter().filter(|o| o.2).count(), 16 * 3 + 1);
    // Asking again opens nothing new; asking for no samples closes everything.
    let opened = m.sys().calls_named("perf_open").len();
    m.set_sampling(&sampling());
    assert_eq!(
        m.sys().calls_named("perf_open").len(),
        opened + 1,
        "only 4260 is retried"
    );
    m.set_sampling(&SamplingRequest::NONE);
    assert_eq!(m.sys().calls_named("perf_close").len(), 48 + 2);
}

#[test]
fn a_process_left_out_of_sampling_loses_its_events_until_it_is_sampled_again() {
    let sys = FakeSys::new()
        .with_process(MEMHOG.0, &[])
        .with_process(4250, &[])
        .with_process(5000, &[]);
    let mut m = sampling_memhog(sys);
    let opens_of =
        |m: &LinuxMachine<FakeSys>, pid: i32| perf_opens(m).iter().filter(|o| o.0 == pid).count();
    assert_eq!(opens_of(&m, 4250), 16);
    let closed = m.sys().calls_named("perf_close").len();
    let left_out = SamplingRequest {
        by_process: vec![(Pid(4250), None)],
        ..sampling()
    };
    m.set_sampling(&left_out);
    assert_eq!(m.sys().calls_named("perf_close").len(), closed + 16);
    m.set_sampling(&left_out);
    assert_eq!(opens_of(&m, 4250), 16, "not opened while left out");
    m.set_sampling(&sampling());
    assert_eq!(opens_of(&m, 4250), 32, "opened again");
    assert_eq!(m.sys().calls_named("perf_close").len(), closed + 16);
}

/// Memhog (4242) forks 4270: its entry appears under the copy of /proc at `proc_root`.
/// Memhog, its children 4250 and 5000 that already ran, and 4270, which `fork_child` forks.
fn memhog_and_children() -> FakeSys {
    FakeSys::new()
        .with_process(MEMHOG.0, &[])
        .with_process(4250, &[])
        .with_process(5000, &[])
        .with_process(4270, &[])
}

fn fork_child(proc_root: &std::path::Path) {
    let p = proc_root.join("4270");
    std::fs::create_dir_all(p.join("task/4270")).unwrap();
    let stat = "4270 (child) R 4242 4242 0 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 9 0 0 0 0 0 0 0 0 0 \
                0 0 0 0 0 0 0 0 0 3 0 0 0 0 0";
    std::fs::write(p.join("stat"), stat).unwrap();
    std::fs::write(p.join("task/4270/stat"), stat).unwrap();
    std::fs::write(p.join("comm"), "child\n").unwrap();
}

#[test]
fn a_process_forked_after_sampling_began_gets_no_events_of_its_own() {
    let sys = memhog_and_children();
    let (_dir, proc_root, mut m) = on_proc_copy(sys, vec![MEMHOG]);
    m.set_sampling(&sampling());
    let opened =
        |m: &LinuxMachine<FakeSys>| -> Vec<i32> { perf_opens(m).iter().map(|o| o.0).collect() };
    // Memhog and its children that already ran get events of their own.
    let before = opened(&m);
    assert!(before.contains(&4250) && before.contains(&5000));
    // Memhog forks 4270: it inherits memhog's events, so it gets none of its own.
    fork_child(&proc_root);
    m.observe(0).unwrap();
    assert!(m.managed().contains(&Pid(4270)));
    m.set_sampling(&sampling());
    let after = opened(&m);
    assert!(!after.contains(&4270), "{after:?}");
}

#[test]
fn a_process_forked_before_sampling_began_but_seen_after_gets_events_of_its_own() {
    // A launched shell forks its first program before the first epoch opens the sampler on
    // the shell: the child is first seen in a later round, yet carries none of the shell's
    // inherited events, and without events of its own none of its faults would be sampled.
    let sys = memhog_and_children();
    let (_dir, proc_root, mut m) = on_proc_copy(sys, vec![MEMHOG]);
    // Memhog forks 4270 after the selection, before the sampler opens.
    fork_child(&proc_root);
    m.set_sampling(&sampling());
    assert!(!m.managed().contains(&Pid(4270)));
    m.observe(0).unwrap();
    assert!(m.managed().contains(&Pid(4270)));
    m.set_sampling(&sampling());
    let opened: Vec<i32> = perf_opens(&m).iter().map(|o| o.0).collect();
    assert!(opened.contains(&4270), "{opened:?}");
}

#[test]
fn the_report_counts_the_kernels_own_balancing_over_the_run() {
    let sys = FakeSys::new().with_process(MEMHOG.0, &[]);
    let (_dir, proc_root, mut m) = on_proc_copy(sys, vec![MEMHOG]);
    // The fixture has 4,420,187 hinting faults and 512,380 migrated pages; the kernel then
    // takes 1,000 more faults and migrates 300 more pages.
    let vmstat = proc_root.join("vmstat");
    let text = std::fs::read_to_string(&vmstat)
        .unwrap()
        .replace("numa_hint_faults 4420187", "numa_hint_faults 4421187")
        .replace("numa_pages_migrated 512380", "numa_pages_migrated 512680");
    std::fs::write(&vmstat, text).unwrap();
    m.observe(0).unwrap();
    assert_eq!(
        m.stats().kernel_balancing,
        Some(KernelBalancing {
            hint_faults: 1000,
            pages_migrated: 300
        })
    );
}

#[test]
fn a_thread_with_its_own_event_is_not_counted_twice() {
    let sys = FakeSys::new()
        .with_process(MEMHOG.0, &[(HEAP, 1)])
        .with_process(4244, &[]);
    let mut m = sampling_memhog(sys);
    // fds 100-115: memhog's CPU events; 116: thread 4243's own event, refused (the fake knows
    // no such task), so none; 116 is 4244's. The same fault of 4244 reaches both its own
    // event and the CPU event; a fault of 4243 only the CPU event.
    let opens = m.sys().calls_named("perf_open");
    assert_eq!(opens.len(), 16 + 2 + 3, "the children are refused");
    let mut cpu_ring = record(4242, 4244, HEAP + 0x10, 9);
    cpu_ring.extend(record(4242, 4243, HEAP + 0x20, 1));
    m.sys.ring_bytes.insert(109, cpu_ring);
    m.sys
        .ring_bytes
        .insert(116, record(4242, 4244, HEAP + 0x10, 9));
    let obs = m.observe(0).unwrap();
    let tids: Vec<i32> = obs.samples.iter().map(|s| s.tid.0).collect();
    assert_eq!(tids.len(), 2, "{tids:?}");
    assert!(tids.contains(&4243) && tids.contains(&4244));
}

#[test]
fn a_fault_that_made_the_kernel_move_its_page_counts_where_the_page_was() {
    let sys = FakeSys::new()
        .with_process(MEMHOG.0, &[(HEAP, 0), (HEAP + 4096, 0)])
        .with_process(5000, &[]);
    let mut m = sampling_memhog(sys);
    let homes = |m: &mut LinuxMachine<FakeSys>, ring: Vec<u8>| {
        m.sys.ring_bytes.insert(100, ring);
        let obs = m.observe(0).unwrap();
        obs.samples
            .iter()
            .map(|s| (s.node.0, s.home_node.map(|h| h.0)))
            .collect::<Vec<_>>()
    };
    // Epoch 1: a fault from node 2 (CPU 9) on each page, both on node 0.
    let ring = |a: u64, b: u64| {
        let mut r = record(4242, 4244, a, 9);
        r.extend(record(4242, 4244, b, 9));
        r
    };
    assert_eq!(
        homes(&mut m, ring(HEAP, HEAP + 4096)),
        [(2, Some(0)), (2, Some(0))]
    );
    // Epoch 2: the kernel moved the first page to node 2 on its next fault from node 2: that
    // fault reached node 0. The second page stayed.
    m.sys.placement.insert((4242, HEAP), 2);
    assert_eq!(
        homes(&mut m, ring(HEAP, HEAP + 4096)),
        [(2, Some(0)), (2, Some(0))]
    );
    // Epoch 3: now it is local.
    assert_eq!(
        homes(&mut m, ring(HEAP, HEAP)),
        [(2, Some(2)), (2, Some(2))]
    );
    // A move by rondpoint is not mistaken for the kernel's.
    let to2 = Action::MigratePages {
        range: PageRange::new(MEMHOG, HEAP + 4096, 1, PageSize::Base4K).unwrap(),
        to: NodeId(2),
    };
    m.apply(&[to2]).unwrap();
    assert_eq!(
        homes(&mut m, ring(HEAP + 4096, HEAP)),
        [(2, Some(2)), (2, Some(2))]
    );
}

#[test]
fn samples_get_their_node_from_the_cpu_and_their_page_node_from_a_query() {
    let sys = FakeSys::new()
        .with_process(MEMHOG.0, &[(HEAP, 1)])
        .with_process(5000, &[]);
    let mut m = sampling_memhog(sys);
    // The first event opened is (4242, cpu 0), fd 100: give it two samples.
    let mut bytes = record(4242, 4244, HEAP + 0x10, 9);
    bytes.extend(record(4242, 4243, HEAP + 0x20, 1));
    m.sys.ring_bytes.insert(100, bytes);
    let obs = m.observe(0).unwrap();
    assert_eq!(obs.samples.len(), 2);
    let s = &obs.samples[0];
    assert_eq!(
        (s.pid, s.tid, s.cpu, s.node),
        (MEMHOG, Tid(4244), CpuId(9), NodeId(2))
    );
    assert_eq!(s.home_node, Some(NodeId(1)));
    assert_eq!(s.page(), HEAP);
    assert_eq!(obs.samples[1].node, NodeId(0));
    // One placement query for the one distinct page.
    assert!(m.sys().calls.contains(&Call::MovePages {
        pid: MEMHOG,
        pages: vec![HEAP],
        nodes: None
    }));
    // Counters are estimated from the samples, and say so.
    assert_eq!(
        obs.counters.nodes[1].dram_accesses_by_source,
        vec![1, 0, 1, 0]
    );
    assert!(
        obs.counters
            .is_estimated(rondpoint_model::CounterGroup::NodeDram)
    );
    assert!(
        obs.counters
            .is_estimated(rondpoint_model::CounterGroup::ThreadDram)
    );
    assert!(
        !obs.counters
            .is_estimated(rondpoint_model::CounterGroup::Instructions)
    );
    assert_eq!(m.stats().samples, 2);
}

#[test]
fn samples_drained_during_the_epoch_come_first_in_its_observation() {
    let sys = FakeSys::new()
        .with_process(MEMHOG.0, &[(HEAP, 1), (HEAP + 4096, 3)])
        .with_process(5000, &[]);
    let mut m = LinuxMachine::to_manage(
        sys,
        topo(),
        LiveConfig {
            max_queried_pages: 1,
            ..config()
        },
        vec![MEMHOG],
    );
    m.set_sampling(&sampling());
    // fd 100 is the first event opened (4242 on CPU 0). A drain during the epoch turns its
    // records into samples, with their page's node queried now.
    m.sys
        .ring_bytes
        .insert(100, record(4242, 4244, HEAP + 0x10, 9));
    let mut out = Vec::new();
    m.drain_samples(&mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].addr, out[0].node, out[0].home_node),
        (HEAP + 0x10, NodeId(2), Some(NodeId(1)))
    );
    // Nothing new: nothing drained, nothing queried.
    let queries = |m: &LinuxMachine<FakeSys>| {
        m.sys()
            .calls
            .iter()
            .filter(|c| matches!(c, Call::MovePages { .. }))
            .count()
    };
    m.drain_samples(&mut out);
    assert_eq!((out.len(), queries(&m)), (1, 1));
    // The observation lists the drained sample first, then what was left in the rings; the
    // epoch's one query was spent by the drain, so the second page's node is not known.
    m.sys
        .ring_bytes
        .insert(100, record(4242, 4243, HEAP + 4096, 1));
    let obs = m.observe(0).unwrap();
    let seen: Vec<(u64, Option<NodeId>)> =
        obs.samples.iter().map(|s| (s.addr, s.home_node)).collect();
    assert_eq!(
        seen,
        vec![(HEAP + 0x10, Some(NodeId(1))), (HEAP + 4096, None)]
    );
    assert_eq!(m.stats().samples, 2, "each sample counted once");
    assert_eq!(m.stats().samples_drained, 1);
    // The counters estimated from the samples place the one whose page node is known.
    let served: u64 = obs
        .counters
        .nodes
        .iter()
        .flat_map(|n| &n.dram_accesses_by_source)
        .sum();
    assert_eq!(
        served, 1,
        "only the sample with a known page node is placed"
    );
    // A new epoch has a new budget.
    m.sys
        .ring_bytes
        .insert(100, record(4242, 4243, HEAP + 4096, 1));
    let obs = m.observe(0).unwrap();
    assert_eq!(obs.samples[0].home_node, Some(NodeId(3)));
    assert_eq!(obs.epoch, 1);
}

#[test]
fn actions_on_processes_it_does_not_manage_are_refused_without_a_system_call() {
    let sys = FakeSys::new().with_process(MEMHOG.0, &[(HEAP, 0)]);
    let mut m = memhog(sys);
    let foreign = PageRange::new(Pid(1), HEAP, 1, rondpoint_model::PageSize::Base4K).unwrap();
    let ours = PageRange::new(MEMHOG, HEAP, 1, rondpoint_model::PageSize::Base4K).unwrap();
    let out = m
        .apply(&[
            Action::MigratePages {
                range: foreign,
                to: NodeId(1),
            },
            Action::MigratePages {
                range: ours,
                to: NodeId(1),
            },
        ])
        .unwrap();
    assert_eq!(out[0].status, rondpoint_model::OutcomeStatus::Skipped);
    assert!(out[0].note.as_deref().unwrap().contains("not managed"));
    assert_eq!(out[1].status, rondpoint_model::OutcomeStatus::Applied);
    assert!(
        m.sys()
            .calls
            .iter()
            .all(|c| !matches!(c, Call::MovePages { pid, .. } if *pid == Pid(4250)))
    );
    assert_eq!(m.stats().refused_unmanaged, 1);
}

#[test]
fn replications_come_out_substituted_with_the_pages_left_unplaced_counted() {
    // Linux cannot replicate another process's pages; they are interleaved over the readers
    // instead. The outcome says so, and counts the pages even that could not place (here the
    // kernel reports them absent): the engine tells the policy those left no replica
    // (`replicas_not_made`), so that Carrefour does not go on treating them as replicated.
    let size = rondpoint_model::PageSize::Base4K;
    let sys = FakeSys::new().with_process(
        MEMHOG.0,
        &[
            (HEAP, 0),
            (HEAP + 4096, 0),
            (HEAP + 8192, 0),
            (HEAP + 12288, 0),
        ],
    );
    let mut m = memhog(sys);
    m.sys
        .page_errors
        .insert((MEMHOG.0, HEAP + 8192), Errno::ENOENT);
    m.sys
        .page_errors
        .insert((MEMHOG.0, HEAP + 12288), Errno::ENOENT);
    let placed = PageRange::new(MEMHOG, HEAP, 2, size).unwrap();
    let absent = PageRange::new(MEMHOG, HEAP + 8192, 2, size).unwrap();
    let nodes = NodeList::from_slice(&[NodeId(0), NodeId(1)]);
    let out = m
        .apply(&[
            Action::Replicate {
                range: placed,
                nodes: nodes.clone(),
            },
            Action::Replicate {
                range: absent,
                nodes,
            },
        ])
        .unwrap();
    use rondpoint_model::OutcomeStatus::Substituted;
    assert_eq!(
        (out[0].status, out[0].pages_done, out[0].pages_requested),
        (Substituted, 2, 2)
    );
    assert_eq!(out[1].status, Substituted);
    assert!(out[1].pages_done < out[1].pages_requested, "{:?}", out[1]);
    assert_eq!(out[1].failures, vec![("ENOENT".to_string(), 1)]);
    // The backend itself reports no collapse: it makes no replicas.
    assert!(m.observe(0).unwrap().collapses.is_empty());
}

#[test]
fn launch_applies_the_start_allocation_policy_before_exec() {
    let mut m = LinuxMachine::to_launch(
        FakeSys::new(),
        topo(),
        config(),
        vec!["/usr/bin/prog".into(), "-x".into()],
    );
    // Before it starts, the program is named as the kernel will name it.
    assert_eq!(m.processes()[0].pid, PENDING);
    assert_eq!(m.processes()[0].comm, "prog");
    let out = m
        .start(&[Action::SetMemPolicy {
            pid: PENDING,
            policy: MemPolicy::Interleave {
                nodes: vec![NodeId(0), NodeId(1), NodeId(3)],
            },
        }])
        .unwrap();
    assert_eq!(out[0].status, rondpoint_model::OutcomeStatus::Applied);
    assert_eq!(
        m.sys().calls[0],
        Call::Spawn {
            argv: vec!["/usr/bin/prog".into(), "-x".into()],
            cgroup: None,
            policy: Some((MemPolicyMode::Interleave, vec![0, 1, 3])),
            cpus: None,
        }
    );
    let pid = m.launched().unwrap();
    assert!(!m.poll_finished());
    m.sys.exits.insert(pid.0, [ExitStatus::Code(0)].into());
    assert!(m.poll_finished());
    assert_eq!(m.exit_status(), Some(ExitStatus::Code(0)));
}

#[test]
fn the_command_line_s_launch_setup_wins_over_the_policy_s() {
    use crate::sys::{NodeMask, SpawnSetup};
    let mut m = LinuxMachine::to_launch(FakeSys::new(), topo(), config(), vec!["prog".into()])
        .with_launch_setup(SpawnSetup {
            cgroup: Some("/sys/fs/cgroup/job".into()),
            policy: Some((MemPolicyMode::Bind, NodeMask::of([2]))),
            cpus: Some(vec![CpuId(4), CpuId(5)]),
        });
    let out = m
        .start(&[Action::SetMemPolicy {
            pid: PENDING,
            policy: MemPolicy::Interleave {
                nodes: vec![NodeId(0), NodeId(1)],
            },
        }])
        .unwrap();
    assert_eq!(out[0].status, rondpoint_model::OutcomeStatus::Skipped);
    assert!(
        out[0]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("command line"),
        "{out:?}"
    );
    assert_eq!(
        m.sys().calls[0],
        Call::Spawn {
            argv: vec!["prog".into()],
            cgroup: Some("/sys/fs/cgroup/job".into()),
            policy: Some((MemPolicyMode::Bind, vec![2])),
            cpus: Some(vec![CpuId(4), CpuId(5)]),
        }
    );
}

#[test]
fn a_program_that_cannot_start_is_an_error_naming_it() {
    let mut sys = FakeSys::new();
    sys.fail_next.push_back(("spawn", Errno::ENOENT));
    let mut m = LinuxMachine::to_launch(sys, topo(), config(), vec!["nope".into()]);
    let err = m.start(&[]).unwrap_err().to_string();
    assert!(
        err.contains("cannot start nope") && err.contains("ENOENT"),
        "{err}"
    );
}

#[test]
fn missing_rights_to_sample_are_named() {
    let mut sys = FakeSys::new()
        .with_process(MEMHOG.0, &[])
        .with_process(5000, &[]);
    for _ in 0..2 {
        sys.fail_next.push_back(("perf_open", Errno::EACCES));
    }
    let m = sampling_memhog(sys);
    let e = m.signals().sampler_error.clone().unwrap();
    assert!(e.contains("CAP_PERFMON") && e.contains("EACCES"), "{e}");
}

#[test]
fn moving_an_application_pins_every_thread_procfs_lists() {
    let sys = FakeSys::new().with_process(MEMHOG.0, &[]);
    let mut m = memhog(sys);
    let out = m
        .apply(&[Action::MoveApplication {
            pid: MEMHOG,
            to: NodeId(3),
            with_memory: false,
        }])
        .unwrap();
    assert_eq!(out[0].status, rondpoint_model::OutcomeStatus::Applied);
    let pinned: Vec<i32> = m
        .sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::SetAffinity { tid, .. } => Some(tid.0),
            _ => None,
        })
        .collect();
    // fixtures/procfs/numa4/4242/task: 4242, 4243, 4244, and 4246, which is exiting (no stat)
    // and so not listed.
    assert_eq!(pinned, vec![4242, 4243, 4244]);
}

#[test]
fn throttling_and_unreadable_rings_are_reported() {
    let sys = FakeSys::new().with_process(MEMHOG.0, &[(HEAP, 1)]);
    let mut m = sampling_memhog(sys);
    // fd 100: a sample, then PERF_RECORD_THROTTLE (type 5: time, id, stream id).
    let mut bytes = record(4242, 4244, HEAP, 9);
    bytes.extend_from_slice(&5u32.to_ne_bytes());
    bytes.extend_from_slice(&0u16.to_ne_bytes());
    bytes.extend_from_slice(&32u16.to_ne_bytes());
    bytes.extend_from_slice(&[0u8; 24]);
    m.sys.ring_bytes.insert(100, bytes);
    assert_eq!(m.observe(0).unwrap().samples.len(), 1);
    assert_eq!(m.stats().sampler_throttled, 1);
    assert_eq!(m.signals().sampler_error, None);
    // fd 101: a record whose size is below its header: the process's sampling stops, and the
    // report says why.
    let mut bad = Vec::new();
    bad.extend_from_slice(&9u32.to_ne_bytes());
    bad.extend_from_slice(&0u16.to_ne_bytes());
    bad.extend_from_slice(&4u16.to_ne_bytes());
    m.sys.ring_bytes.insert(101, bad);
    m.observe(0).unwrap();
    let why = m.signals().sampler_error.clone().unwrap_or_default();
    assert!(
        why.contains("sampling of") && why.contains("unreadable"),
        "{why}"
    );
}

#[test]
fn a_thread_that_appears_later_gets_its_own_event_and_loses_it_when_gone() {
    let sys = FakeSys::new()
        .with_process(MEMHOG.0, &[(HEAP, 1)])
        .with_process(4243, &[])
        .with_process(4244, &[])
        .with_process(4245, &[]);
    let (_dir, proc_root, mut m) = on_proc_copy(sys, vec![MEMHOG]);
    m.set_sampling(&sampling());
    assert_eq!(thread_opens(&m), [(4243, false), (4244, false)]);
    // Thread 4244, which had its own event (not inherited), creates 4245: no event reaches
    // it. Its fault goes to no ring this epoch; from the next one it has its own event.
    let task = proc_root.join("4242/task");
    copy_dir(&task.join("4244"), &task.join("4245"));
    m.observe(0).unwrap();
    assert_eq!(
        thread_opens(&m),
        [(4243, false), (4244, false), (4245, false)]
    );
    // fds 100-115: memhog's CPU events, 116 and 117: 4243's and 4244's, 118: 4245's. Its
    // fault reaches its own event only; counted once.
    m.sys
        .ring_bytes
        .insert(118, record(4242, 4245, HEAP + 0x10, 9));
    let obs = m.observe(0).unwrap();
    let tids: Vec<i32> = obs.samples.iter().map(|s| s.tid.0).collect();
    assert_eq!(tids, [4245]);
    assert_eq!(thread_opens(&m).len(), 3, "nothing new: no second event");
    // 4244 exits: its event closes.
    std::fs::remove_dir_all(task.join("4244")).unwrap();
    m.observe(0).unwrap();
    let closes: Vec<&Call> = m
        .sys()
        .calls
        .iter()
        .filter(|c| matches!(c, Call::PerfClose { .. }))
        .collect();
    assert_eq!(closes, [&Call::PerfClose { fd: PerfFd(117) }]);
    // Nor is anything else kept of it (a daemon over short-lived threads would grow forever).
    assert!(m.cpu_ticks.contains_key(&(MEMHOG, Tid(4243))));
    assert!(!m.cpu_ticks.contains_key(&(MEMHOG, Tid(4244))));
}

#[test]
fn a_process_whose_threads_all_inherit_its_events_gets_no_thread_events() {
    // 4250 had only its main thread when sampling began: every thread it creates inherits
    // the main thread's events.
    let sys = FakeSys::new()
        .with_process(4250, &[])
        .with_process(4251, &[]);
    let (_dir, proc_root, mut m) = on_proc_copy(sys, vec![Pid(4250)]);
    m.set_sampling(&sampling());
    let task = proc_root.join("4250/task");
    copy_dir(&task.join("4250"), &task.join("4251"));
    m.observe(0).unwrap();
    assert_eq!(thread_opens(&m), []);
}

#[test]
fn node_memory_is_read_from_the_sysfs_root_every_epoch() {
    // The fixture's node meminfo (r905-asymmetric), not the synthetic topology's figures.
    let sys = FakeSys::new().with_process(MEMHOG.0, &[]);
    let mut m = memhog(sys);
    let memory = m.observe(0).unwrap().memory;
    assert_eq!(memory.len(), 4);
    assert_eq!(
        (memory[0].total_bytes, memory[0].free_bytes),
        (8_127_124 << 10, 6_412_380 << 10)
    );
    // A node whose meminfo cannot be read keeps what discovery found.
    let empty = tempfile::tempdir().unwrap();
    let cfg = LiveConfig {
        sysfs_root: empty.path().to_path_buf(),
        ..config()
    };
    let sys = FakeSys::new().with_process(MEMHOG.0, &[]);
    let mut m = LinuxMachine::to_manage(sys, topo(), cfg, vec![MEMHOG]);
    let memory = m.observe(0).unwrap().memory;
    let topology = topo();
    let node = &topology.nodes()[0];
    assert_eq!(
        (memory[0].total_bytes, memory[0].free_bytes),
        (
            node.mem_total_bytes,
            node.mem_free_bytes.min(node.mem_total_bytes)
        )
    );
}

#[test]
fn a_cgroup_selects_the_processes_its_cgroup_procs_lists_but_never_rondpoint() {
    let sysfs = tempfile::tempdir().unwrap();
    let job = sysfs.path().join("fs/cgroup/job");
    std::fs::create_dir_all(&job).unwrap();
    let procs = format!("4250\nnot a pid\n{}\n", std::process::id());
    std::fs::write(job.join("cgroup.procs"), procs).unwrap();
    let selection = Selection {
        cgroups: vec![job],
        ..Selection::default()
    };
    let m = LinuxMachine::to_select(FakeSys::new(), topo(), config(), selection);
    // 4250 and its child 4260.
    assert_eq!(m.managed(), vec![Pid(4250), Pid(4260)]);
    assert!(!m.finished(), "a cgroup may gain processes later");
}

#[test]
fn moves_by_quantity_find_the_pages_on_the_node_through_numa_maps_and_maps() {
    // memhog's heap: 1090 pages at HEAP, numa_maps says 487 on node 1 (the fake puts the
    // highest 487 there).
    let placement: Vec<(u64, i32)> = (0..1090u64)
        .map(|i| (HEAP + i * 4096, if i >= 1090 - 487 { 1 } else { 0 }))
        .collect();
    let (_dir, proc_root, mut m) = on_proc_copy(
        FakeSys::new().with_process(MEMHOG.0, &placement),
        vec![MEMHOG],
    );
    std::fs::write(
        proc_root.join("4242/maps"),
        format!(
            "55d4c8a00000-55d4c8a03000 r--p 00000000 08:01 1 /usr/local/bin/memhog\n\
             {:x}-{:x} rw-p 00000000 00:00 0 [heap]\n",
            HEAP,
            HEAP + 1090 * 4096
        ),
    )
    .unwrap();
    let out = m
        .apply(&[Action::MoveNodePages {
            pid: MEMHOG,
            from: NodeId(1),
            to: NodeList::from_slice(&[NodeId(2), NodeId(3)]),
            pages: 100,
        }])
        .unwrap();
    assert_eq!(
        out[0].status,
        rondpoint_model::OutcomeStatus::Applied,
        "{out:?}"
    );
    assert_eq!(out[0].pages_done, 100);
    let on = |node: i32| {
        (0..1090u64)
            .filter(|i| m.sys().placement.get(&(MEMHOG.0, HEAP + i * 4096)) == Some(&node))
            .count()
    };
    assert_eq!((on(1), on(2), on(3)), (387, 50, 50));
    // A node that does not exist is refused before anything is read.
    let out = m
        .apply(&[Action::MoveNodePages {
            pid: MEMHOG,
            from: NodeId(1),
            to: NodeList::from_slice(&[NodeId(9)]),
            pages: 1,
        }])
        .unwrap();
    assert_eq!(out[0].status, rondpoint_model::OutcomeStatus::Failed);
}

/// The counters opened so far: (pid, attr config, cpu, inherit, exclude_kernel) per call.
fn counter_opens(sys: &FakeSys) -> Vec<(i32, u64, i32, bool, bool)> {
    sys.calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { attr, pid, cpu } if attr.kind == 0 && attr.sample_period == 0 => {
                Some((pid.0, attr.config, *cpu, attr.inherit, attr.exclude_kernel))
            }
            _ => None,
        })
        .collect()
}

fn reading(value: u64, enabled_ns: u64, running_ns: u64) -> crate::sys::PerfReading {
    crate::sys::PerfReading {
        value,
        enabled_ns,
        running_ns,
    }
}
