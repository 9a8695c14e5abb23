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

/// The UPI counters opened: (fd, unit index, CPU), fds as the fake numbers them (100 up, in
/// call order).
fn upi_opens(m: &LinuxMachine<FakeSys>) -> Vec<(i32, u32, i32)> {
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
            (100 + i as i32, attr.kind - UPI_TYPES.start, cpu)
        })
        .collect()
}

/// Counter `fd` reads `value`, running all the time it was enabled.
fn reads(m: &mut LinuxMachine<FakeSys>, fd: i32, value: u64) {
    m.sys.counters.insert(
        fd,
        PerfReading {
            value,
            enabled_ns: 10,
            running_ns: 10,
        },
    );
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
    for &(fd, _, cpu) in &opens {
        reads(&mut m, fd, if cpu == 0 { 900 } else { 90 });
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

/// A four-socket machine's link map as the kernel gives it (`uncore_upi_X/dieY` =
/// `upi_Z,die_W`, Documentation/ABI/testing/sysfs-devices-mapping): every socket's links 0-2
/// go to the other three sockets in order (a full mesh), link 3 is not connected (no file).
fn four_socket_links(root: &std::path::Path) {
    let others = |d: u32| (0..4).filter(move |&x| x != d).collect::<Vec<u32>>();
    for die in 0..4 {
        for (link, peer) in others(die).into_iter().enumerate() {
            let back = others(peer).iter().position(|&x| x == die).unwrap();
            std::fs::write(
                root.join(format!(
                    "bus/event_source/devices/uncore_upi_{link}/die{die}"
                )),
                format!("upi_{back},die_{peer}\n"),
            )
            .unwrap();
        }
    }
}

#[test]
fn four_sockets_count_each_pair_their_links_join() {
    // Sockets 0-3: CPUs 0-3, 4-7, 8-11, 12-15 (nodes 0-3).
    let dir = sysfs("0,4,8,12", 16, 4);
    four_socket_links(dir.path());
    let mut m = machine(dir.path(), 4);
    assert_eq!(
        m.capabilities().support(Capability::LinkTraffic),
        Support::Full
    );
    let opens = upi_opens(&m);
    assert_eq!(opens.len(), 3 * 4, "3 connected links x 4 sockets");
    // Socket `from`'s link to `to` sends 9 x (10 from + to + 1) flits: 64 x that in bytes.
    for &(fd, unit, cpu) in &opens {
        let from = cpu as u32 / 4;
        let to = (0..4).filter(|&x| x != from).nth(unit as usize).unwrap();
        reads(&mut m, fd, 9 * u64::from(10 * from + to + 1));
    }
    let counters = m.observe(0).unwrap().counters;
    let got: Vec<(u16, u16, u64, u64)> = counters
        .links
        .iter()
        .map(|l| (l.a.0, l.b.0, l.bytes_a_to_b, l.bytes_b_to_a))
        .collect();
    let want: Vec<(u16, u16, u64, u64)> = (0..4u16)
        .flat_map(|a| (a + 1..4).map(move |b| (a, b)))
        .map(|(a, b)| {
            let sent = |f: u16, t: u16| 64 * u64::from(10 * f + t + 1);
            (a, b, sent(a, b), sent(b, a))
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn four_sockets_without_the_kernel_s_link_map_say_so() {
    let dir = sysfs("0,4,8,12", 16, 4);
    let mut m = machine(dir.path(), 4);
    let Support::Missing(why) = m.capabilities().support(Capability::LinkTraffic) else {
        panic!();
    };
    assert!(why.contains("which socket each UPI link leads to"), "{why}");
    assert!(upi_opens(&m).is_empty());
}

#[test]
fn a_link_map_naming_no_socket_is_refused() {
    let dir = sysfs("0,4,8,12", 16, 4);
    four_socket_links(dir.path());
    std::fs::write(
        dir.path()
            .join("bus/event_source/devices/uncore_upi_0/die2"),
        "upi_0,die_9\n",
    )
    .unwrap();
    let mut m = machine(dir.path(), 4);
    let Support::Missing(why) = m.capabilities().support(Capability::LinkTraffic) else {
        panic!();
    };
    assert!(why.contains("uncore_upi_0/die2: 'upi_0,die_9'"), "{why}");
    // What opened before the bad file was read is closed again.
    let closed = m
        .sys()
        .calls
        .iter()
        .filter(|c| matches!(c, Call::PerfClose { .. }))
        .count();
    assert!(closed >= upi_opens(&m).len(), "{closed}");
}

/// amd_df's type in the Zen 4 fixture.
const DF_TYPE: u32 = 12;

#[test]
fn two_epyc_sockets_count_their_xgmi_links_in_64_byte_beats() {
    use crate::machine::tests::{MEMHOG, config, copy_dir};
    let fixtures = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // The Genoa fixture's PMUs, its data fabric on one CPU of each socket (CPUs 0 and 4).
    let sys_dir = tempfile::tempdir().unwrap();
    copy_dir(
        &fixtures.join("tests/fixtures/pmu/zen4-genoa/bus"),
        &sys_dir.path().join("bus"),
    );
    let df = sys_dir.path().join("bus/event_source/devices/amd_df");
    std::fs::write(df.join("cpumask"), "0,4\n").unwrap();
    for cpu in 0..8 {
        let topo = sys_dir
            .path()
            .join(format!("devices/system/cpu/cpu{cpu}/topology"));
        std::fs::create_dir_all(&topo).unwrap();
        std::fs::write(topo.join("physical_package_id"), format!("{}\n", cpu / 4)).unwrap();
    }
    // Its CPU from /proc/cpuinfo: family 0x19 model 0x11 (EPYC 9654), whose xGMI codes differ
    // from Zen 5's.
    let proc_dir = tempfile::tempdir().unwrap();
    copy_dir(
        &fixtures.join("../../fixtures/procfs/numa4"),
        proc_dir.path(),
    );
    std::fs::write(
        proc_dir.path().join("cpuinfo"),
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n",
    )
    .unwrap();
    let topo = rondpoint_model::synthetic::TopologyBuilder::new(2)
        .cores_per_llc(4)
        .build()
        .unwrap();
    let cfg = crate::machine::LiveConfig {
        sysfs_root: sys_dir.path().to_path_buf(),
        proc_root: proc_dir.path().to_path_buf(),
        ..config()
    };
    let mut m = LinuxMachine::to_manage(FakeSys::new(), topo, cfg, vec![MEMHOG]);
    assert_eq!(
        m.capabilities().support(Capability::LinkTraffic),
        Support::Full
    );
    let opens: Vec<(i32, i32)> = m
        .sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { attr, cpu, .. } => Some((attr.kind, *cpu)),
            Call::PerfOpenMember { attr, cpu, .. } => Some((attr.kind, *cpu)),
            _ => None,
        })
        .enumerate()
        .filter(|(_, (kind, _))| *kind == DF_TYPE)
        .map(|(i, (_, cpu))| (100 + i as i32, cpu))
        .collect();
    assert_eq!(opens.len(), 8 * 2, "links 0-7 on each socket");
    for &(fd, cpu) in &opens {
        reads(&mut m, fd, if cpu == 0 { 100 } else { 10 });
    }
    let links = m.observe(0).unwrap().counters.links;
    assert_eq!(
        links,
        [LinkCounters {
            a: NodeId(0),
            b: NodeId(1),
            bytes_a_to_b: 8 * 100 * 64,
            bytes_b_to_a: 8 * 10 * 64,
            capacity_bytes_per_s: None,
        }]
    );
}
