//! The UPI link counters on the fake kernel: the Sapphire Rapids PMU fixture (4
//! `uncore_upi_N`, cpumask 0,56) over synthetic topologies, what opens, the link's bytes each
//! way, and the machines where links are not measured.

use super::*;
use crate::machine::LinuxMachine;
use crate::machine::tests::{machine_on_sysfs as machine, spr_sysfs as sysfs};
use crate::sys::{Call, FakeSys};
use rondpoint_engine::Machine;
use rondpoint_model::{Capability, CounterGroup, Support};

const UNITS: usize = 4;
/// The types of uncore_upi_0..3 in the fixture, and the data-flit event's config.
const UPI_TYPES: std::ops::Range<u32> = 60..64;
const TXL_DATA: u64 = 0x0f02;

/// The UPI counters opened: (fd, CPU), fds as the fake numbers them (100 up, in call order).
fn upi_opens(m: &LinuxMachine<FakeSys>) -> Vec<(i32, i32)> {
    m.sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { attr, cpu, .. } => Some((attr, *cpu)),
            Call::PerfOpenMember { attr, cpu, .. } => Some((attr, *cpu)),
            _ => None,
        })
        .enumerate()
        .filter(|(_, (attr, _))| UPI_TYPES.contains(&attr.kind))
        .map(|(i, (attr, cpu))| {
            assert_eq!(attr.config, TXL_DATA);
            (100 + i as i32, cpu)
        })
        .collect()
}

#[test]
fn two_sockets_of_one_node_count_their_link_each_way() {
    // Socket 0: CPUs 0-3 (node 0); socket 1: CPUs 4-7 (node 1).
    let dir = sysfs("0,4", 8, 4);
    let mut m = machine(dir.path(), 2);
    assert_eq!(
        m.capabilities().support(Capability::LinkTraffic),
        Support::Full
    );
    let opens = upi_opens(&m);
    assert_eq!(opens.len(), UNITS * 2, "4 units x 2 sockets");
    // Socket 0's units send 900 data flits each, socket 1's 90, in a fully running epoch.
    for &(fd, cpu) in &opens {
        let value = if cpu == 0 { 900 } else { 90 };
        m.sys.counters.insert(
            fd,
            PerfReading {
                value,
                enabled_ns: 10,
                running_ns: 10,
            },
        );
    }
    let counters = m.observe(0).unwrap().counters;
    assert!(!counters.is_missing(CounterGroup::Links));
    assert_eq!(
        counters.links,
        [LinkCounters {
            a: NodeId(0),
            b: NodeId(1),
            // 3,600 flits of 64/9 bytes, and 360.
            bytes_a_to_b: 25_600,
            bytes_b_to_a: 2_560,
            capacity_bytes_per_s: None,
        }]
    );
}

#[test]
fn sub_numa_clusters_leave_the_links_unmeasured_and_say_why() {
    // SNC2: nodes 0 and 1 on socket 0, 2 and 3 on socket 1.
    let dir = sysfs("0,8", 16, 8);
    let mut m = machine(dir.path(), 4);
    let Support::Missing(why) = m.capabilities().support(Capability::LinkTraffic) else {
        panic!();
    };
    assert!(why.contains("sub-NUMA clustering"), "{why}");
    assert!(upi_opens(&m).is_empty());
    let counters = m.observe(0).unwrap().counters;
    assert!(counters.is_missing(CounterGroup::Links) && counters.links.is_empty());
}

#[test]
fn a_machine_without_upi_counters_says_none_are_read() {
    let bare = tempfile::tempdir().unwrap();
    let mut m = machine(bare.path(), 2);
    let Support::Missing(why) = m.capabilities().support(Capability::LinkTraffic) else {
        panic!();
    };
    assert!(why.contains("no interconnect counters are read"), "{why}");
}
