//! The memory-controller counters on the fake kernel: a sysfs tree with the Sapphire Rapids
//! PMU fixture (8 `uncore_imc_N`) over a synthetic two-socket topology, the counters the
//! machine opens, and the per-node traffic it reports from what the fake's counters read.

use super::*;
use crate::machine::LinuxMachine;
use crate::machine::tests::{machine_on_sysfs as machine, spr_sysfs as sysfs};
use crate::sys::{Call, FakeSys, PerfAttr};
use rondpoint_engine::Machine;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{Capability, CounterGroup, Support};

const UNITS: usize = 8;

/// The uncore counters opened: (fd, CPU, config), fds as the fake numbers them (100 up, in
/// the order of the perf_open calls, all of which succeed here).
fn uncore_opens(m: &LinuxMachine<FakeSys>) -> Vec<(i32, i32, u64)> {
    m.sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { attr, pid, cpu } => Some((attr, pid, cpu)),
            _ => None,
        })
        .enumerate()
        // System-wide on an uncore_imc_N (types 40-47 in the fixture): not the precise
        // sampler's test open on the core PMU, nor the UPI counters.
        .filter(|(_, (attr, pid, _))| pid.0 == -1 && (40..48).contains(&attr.kind))
        .map(|(i, (attr, _, cpu))| (100 + i as i32, *cpu, attr.config))
        .collect()
}

const CAS_READ: u64 = 0xcf05;
const CAS_WRITE: u64 = 0xf005;

/// Sets every uncore counter: per CPU, (reads, writes) per unit, run for `enabled` of which
/// `running` ns.
fn set(m: &mut LinuxMachine<FakeSys>, per_cpu: &[(i32, u64, u64)], enabled: u64, running: u64) {
    let opens = uncore_opens(m);
    for (fd, cpu, config) in opens {
        let &(_, reads, writes) = per_cpu.iter().find(|p| p.0 == cpu).unwrap();
        let value = if config == CAS_READ { reads } else { writes };
        m.sys.counters.insert(
            fd,
            PerfReading {
                value,
                enabled_ns: enabled,
                running_ns: running,
            },
        );
    }
}

fn node_bytes(m: &mut LinuxMachine<FakeSys>) -> (Vec<(u64, u64)>, rondpoint_model::Counters) {
    let obs = m.observe(0).unwrap();
    let bytes = obs
        .counters
        .nodes
        .iter()
        .map(|n| (n.dram_reads * 64, n.dram_writes * 64))
        .collect();
    (bytes, obs.counters)
}

#[test]
fn opens_each_unit_on_each_socket_s_cpu_and_measures_bytes_per_node() {
    // Two sockets of one node each: CPUs 0-3 (node 0) and 4-7 (node 1).
    let dir = sysfs("0,4", 8, 4);
    let mut m = machine(dir.path(), 2);
    assert_eq!(
        m.capabilities().support(Capability::NodeTraffic),
        Support::Full
    );
    let opens = uncore_opens(&m);
    assert_eq!(
        opens.len(),
        UNITS * 2 * 2,
        "8 units x read, write x 2 sockets"
    );
    for cpu in [0, 4] {
        for config in [CAS_READ, CAS_WRITE] {
            let n = opens.iter().filter(|o| (o.1, o.2) == (cpu, config)).count();
            assert_eq!(n, UNITS, "cpu {cpu} config {config:#x}");
        }
    }
    // As planned: each unit's own type, not inherited, excluding nothing.
    let planned: Vec<&PerfAttr> = m
        .sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { attr, pid, .. } if pid.0 == -1 && (40..48).contains(&attr.kind) => {
                Some(attr)
            }
            _ => None,
        })
        .collect();
    assert_eq!((planned[0].kind, planned[0].config), (40, CAS_READ));
    assert!(
        planned
            .iter()
            .all(|a| !a.inherit && !a.exclude_kernel && !a.exclude_hv)
    );
    // Epoch 1: socket 0 reads 1000 and writes 200 CAS per unit, socket 1 500 and 100.
    set(&mut m, &[(0, 1000, 200), (4, 500, 100)], 1_000, 1_000);
    let (bytes, counters) = node_bytes(&mut m);
    assert_eq!(
        bytes,
        [(8 * 1000 * 64, 8 * 200 * 64), (8 * 500 * 64, 8 * 100 * 64)]
    );
    for n in &counters.nodes {
        assert_eq!(n.dram_accesses(), n.dram_reads + n.dram_writes);
    }
    // Every node counted: the totals are measured, only their split by source estimated.
    assert!(!counters.is_estimated(CounterGroup::NodeDram));
    let how = &counters
        .estimated
        .iter()
        .find(|e| e.group == CounterGroup::NodeDramBySource)
        .unwrap()
        .how;
    assert!(how.contains("counted totals split"), "{how}");
    // Epoch 2: 300 more reads on socket 0 in the half of the epoch its counters ran
    // (multiplexed: scaled to 600); socket 1 idle.
    set(&mut m, &[(0, 1300, 200), (4, 500, 100)], 2_000, 1_500);
    let (bytes, _) = node_bytes(&mut m);
    assert_eq!(bytes, [(8 * 600 * 64, 0), (0, 0)]);
}

#[test]
fn a_socket_of_two_nodes_shares_its_count_and_says_so() {
    // SNC2: nodes 0 and 1 on socket 0 (CPUs 0-7), 2 and 3 on socket 1 (8-15).
    let dir = sysfs("0,8", 16, 8);
    let mut m = machine(dir.path(), 4);
    let Support::Estimated(why) = m.capabilities().support(Capability::NodeTraffic) else {
        panic!("{:?}", m.capabilities().support(Capability::NodeTraffic));
    };
    assert!(why.contains("socket 0 holds node0, node1"), "{why}");
    set(&mut m, &[(0, 1001, 0), (8, 10, 2)], 1_000, 1_000);
    let (bytes, counters) = node_bytes(&mut m);
    // Each node's share of its socket's count is estimated, and said so.
    let how = &counters
        .estimated
        .iter()
        .find(|e| e.group == CounterGroup::NodeDram)
        .unwrap()
        .how;
    assert!(
        how.contains("counted by the memory controllers") && how.contains("socket 0 holds"),
        "{how}"
    );
    // No samples: shared evenly.
    assert_eq!(
        bytes,
        [
            (4004 * 64, 0),
            (4004 * 64, 0),
            (40 * 64, 8 * 64),
            (40 * 64, 8 * 64)
        ]
    );
}

#[test]
fn a_counter_that_does_not_open_leaves_the_estimate_and_says_why() {
    let dir = sysfs("0,4", 8, 4);
    let topo = TopologyBuilder::new(2).cores_per_llc(4).build().unwrap();
    let mut sys = FakeSys::new();
    sys.fail_next.push_back(("perf_open", Errno::EACCES));
    let sysfs = SysfsRoot::new(dir.path());
    let pmus = MachinePmus::read(&sysfs, None);
    let Err(McCounters::Failed(why)) = Uncore::open(&mut sys, &sysfs, &pmus, &topo) else {
        panic!("opened");
    };
    assert!(
        why.contains("EACCES") && why.contains("CAP_PERFMON"),
        "{why}"
    );
    assert!(
        why.contains("mc-reads/cas-count-read/uncore_imc_0"),
        "{why}"
    );
    assert!(sys.calls_named("perf_close").is_empty(), "none had opened");
    // Without uncore PMUs (a VM, this build machine): absent, and the estimate unchanged.
    let bare = tempfile::tempdir().unwrap();
    let mut m = machine(bare.path(), 2);
    let Support::Estimated(how) = m.capabilities().support(Capability::NodeTraffic) else {
        panic!();
    };
    assert!(
        how.contains("no memory-controller counters are read"),
        "{how}"
    );
    assert!(uncore_opens(&m).is_empty());
    let counters = m.observe(0).unwrap().counters;
    assert!(
        counters.estimated[0]
            .how
            .starts_with("DRAM traffic per node: sampled")
    );
}

#[test]
fn a_unit_that_does_not_open_leaves_its_socket_estimated_and_the_others_counted() {
    // Two sockets of one node each; the first counter (uncore_imc_0 on CPU 0, socket 0) is
    // busy. Socket 0 is then estimated, socket 1 still counted.
    let dir = sysfs("0,4", 8, 4);
    let topo = TopologyBuilder::new(2).cores_per_llc(4).build().unwrap();
    let mut sys = FakeSys::new();
    sys.fail_next.push_back(("perf_open", Errno::EBUSY));
    let sysfs = SysfsRoot::new(dir.path());
    let pmus = MachinePmus::read(&sysfs, None);
    let Ok(mut uncore) = Uncore::open(&mut sys, &sysfs, &pmus, &topo) else {
        panic!("nothing opened");
    };
    let partial = uncore.partial.clone().unwrap();
    assert!(
        partial.contains(
            "socket 0: perf_event_open of mc-reads/cas-count-read/uncore_imc_0 on cpu0: EBUSY"
        ) && partial.contains("node0: no memory-controller counter covers it"),
        "{partial}"
    );
    let cpus: Vec<i32> = sys
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { cpu, .. } => Some(*cpu),
            _ => None,
        })
        .collect();
    assert_eq!(
        cpus.len(),
        1 + UNITS * 2,
        "one refused, then socket 1's only"
    );
    assert!(cpus[1..].iter().all(|&c| c == 4), "{cpus:?}");
    let measured = uncore.read(&mut sys, &[10, 10]);
    assert_eq!(measured[0], None, "socket 0: estimated");
    assert!(measured[1].is_some(), "socket 1: counted");
}

#[test]
fn unmeasured_nodes_are_scaled_from_samples_and_split_keeps_totals() {
    assert_eq!(split(10, &[1, 1, 2]), [2, 2, 6]);
    assert_eq!(split(7, &[0, 0]), [4, 3], "evenly, the rest to the first");
    assert_eq!(split(5, &[]), Vec::<u64>::new());
    // Node 0 measured (900 reads, 100 writes) with 10 samples, all from node 0; node 1 (CXL)
    // unmeasured with 4 samples from node 0: 100 lines per sample.
    let mut nodes = vec![
        NodeCounters {
            dram_accesses_by_source: vec![10, 0],
            dram_reads: 10,
            ..NodeCounters::default()
        },
        NodeCounters {
            dram_accesses_by_source: vec![4, 0],
            dram_reads: 4,
            ..NodeCounters::default()
        },
    ];
    apply(&mut nodes, &vec![Some([900, 100]), None], &[true, false]);
    assert_eq!((nodes[0].dram_reads, nodes[0].dram_writes), (900, 100));
    assert_eq!(nodes[0].dram_accesses_by_source, [1000, 0]);
    assert_eq!(nodes[1].dram_reads, 400);
    assert_eq!(nodes[1].dram_accesses_by_source, [400, 0]);
}
