//! Topology discovery on the fixture sysfs trees of real machines (fixtures/sysfs, sources in
//! fixtures/sysfs/SOURCES.md): node count, CPU lists, distances and classes of each.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_linux::discover;
use rondpoint_model::{NodeClass, NodeId, Topology, cpulist};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(name)
}

fn load(name: &str) -> Topology {
    match discover(&fixture(name)) {
        Ok(d) => d.topology,
        Err(e) => panic!("fixture {name}: {e}"),
    }
}

fn cpulists(t: &Topology) -> Vec<String> {
    t.nodes().iter().map(Topology::cpulist).collect()
}

fn classes(t: &Topology) -> Vec<NodeClass> {
    t.classes().to_vec()
}

use NodeClass::{Fast, MemoryOnly, Slow};

#[test]
fn vm_1node() {
    let t = load("vm-1node");
    assert_eq!(t.len(), 1);
    assert!(!t.is_numa());
    assert_eq!(cpulists(&t), ["0-1"]);
    assert_eq!(t.distances(), &[vec![10]]);
    assert_eq!(classes(&t), [Fast]);
    assert_eq!(t.llcs().len(), 1);
    assert!(t.interconnect().links.is_empty());
}

#[test]
fn r905_asymmetric() {
    let t = load("r905-asymmetric");
    assert_eq!(t.len(), 4);
    assert_eq!(cpulists(&t), ["0-3", "4-7", "8-11", "12-15"]);
    assert_eq!(
        t.distances(),
        &[
            vec![10, 16, 16, 22],
            vec![16, 10, 16, 16],
            vec![16, 16, 10, 16],
            vec![22, 16, 16, 10]
        ]
    );
    // [Gaud10 §2]: processors 0 and 3 are slow, 1 and 2 fast.
    assert_eq!(classes(&t), [Slow, Fast, Fast, Slow]);
    // Figure 1: no HyperTransport link between 0 and 3; 0 <-> 3 takes two hops.
    let links: Vec<(u16, u16)> = t
        .interconnect()
        .links
        .iter()
        .map(|l| (l.a.0, l.b.0))
        .collect();
    assert_eq!(links, [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]);
    assert_eq!(t.hops()[0][3], 2);
    // One shared 6 MB L3 per processor (section 2.1).
    assert_eq!(t.llcs().len(), 4);
    assert!(t.llcs().iter().all(|l| l.size_bytes == Some(6 << 20)));
    for n in t.nodes() {
        assert_eq!(
            n.mem_total_bytes / (1 << 30),
            7,
            "8 GB DDR2 per node, a little reserved"
        );
    }
}

#[test]
fn xeon_snc2_2s() {
    let t = load("xeon-snc2-2s");
    assert_eq!(t.len(), 4);
    assert_eq!(t.cpu_count(), 80);
    assert!(t.nodes().iter().all(|n| n.cpus.len() == 20));
    assert_eq!(
        t.distances(),
        &[
            vec![10, 11, 21, 21],
            vec![11, 10, 21, 21],
            vec![21, 21, 10, 11],
            vec![21, 21, 11, 10]
        ]
    );
    assert_eq!(classes(&t), [Fast, Fast, Fast, Fast]);
    assert_eq!(t.distance_classes(), [10, 11, 21]);
    // The L3 spans the socket even in SNC mode: one LLC domain per pair of sub-NUMA nodes.
    assert_eq!(t.llcs().len(), 2);
    assert_eq!(t.llc_nodes(&t.llcs()[0]), [NodeId(0), NodeId(1)]);
    // Sibling hyperthreads live on the same node.
    for n in t.nodes() {
        let lo: Vec<u32> = n.cpus.iter().map(|c| c.0).filter(|&c| c < 40).collect();
        let hi: Vec<u32> = n
            .cpus
            .iter()
            .map(|c| c.0)
            .filter(|&c| c >= 40)
            .map(|c| c - 40)
            .collect();
        assert_eq!(lo, hi, "node {} siblings", n.id);
    }
}

#[test]
fn epyc_nps4_2s() {
    let t = load("epyc-nps4-2s");
    assert_eq!(t.len(), 8);
    assert_eq!(
        cpulists(&t),
        [
            "0-15,128-143",
            "16-31,144-159",
            "32-47,160-175",
            "48-63,176-191",
            "64-79,192-207",
            "80-95,208-223",
            "96-111,224-239",
            "112-127,240-255"
        ]
    );
    for (i, row) in t.distances().iter().enumerate() {
        for (j, &d) in row.iter().enumerate() {
            let expected = if i == j {
                10
            } else if i / 4 == j / 4 {
                12
            } else {
                32
            };
            assert_eq!(d, expected, "distance {i}->{j}");
        }
    }
    assert!(classes(&t).iter().all(|&c| c == Fast));
    // 4 CCX of 4 cores (8 threads) per node, 16 MB L3 each.
    assert_eq!(t.llcs().len(), 32);
    assert!(t.llcs().iter().all(|l| l.cpus.len() == 8));
}

#[test]
fn xeon_2s_cxl() {
    let t = load("xeon-2s-cxl");
    assert_eq!(t.len(), 3);
    assert_eq!(cpulists(&t), ["0-51,104-155", "52-103,156-207", ""]);
    assert_eq!(
        t.distances(),
        &[vec![10, 21, 14], vec![21, 10, 24], vec![14, 24, 10]]
    );
    assert_eq!(classes(&t), [Fast, Fast, MemoryOnly]);
    let cxl = &t.nodes()[2];
    assert!(!cxl.has_cpu());
    assert!(cxl.mem_total_bytes > 0);
    // The CXL expander hangs off socket 0: socket 1 reaches it through socket 0.
    assert_eq!(
        t.route(NodeId(1), NodeId(2)).map(|r| r.path.clone()),
        Some(vec![NodeId(1), NodeId(0), NodeId(2)])
    );
    // HMAT: CXL memory is slower and narrower than local DRAM, seen from socket 0.
    let a = |n: usize| t.nodes()[n].hmat.access1.clone().unwrap_or_default();
    let (dram, cxl) = (a(0), a(2));
    assert_eq!(cxl.initiators, [NodeId(0)]);
    assert!(cxl.read_latency_ns > dram.read_latency_ns);
    assert!(cxl.read_bandwidth_mib_s < dram.read_bandwidth_mib_s);
    // No kernel memory tiers: the CPU-less node is slower memory by the fallback rule.
    assert!(t.nodes().iter().all(|n| n.memory_tier.is_none()));
    assert_eq!(t.slower_tier(), [NodeId(2)]);
}

/// A copy of the xeon-2s-cxl tree under a temporary root, with the kernel's memory tiers
/// (6.1+, Documentation/ABI/testing/sysfs-kernel-mm-memory-tiers) as `tiers` gives them:
/// (tier, nodelist) pairs.
fn with_tiers(tiers: &[(u32, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sys");
    let copied = std::process::Command::new("cp")
        .args(["-r", "--"])
        .arg(fixture("xeon-2s-cxl"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(copied.success());
    for (tier, nodes) in tiers {
        let d = root.join(format!("devices/virtual/memory_tiering/memory_tier{tier}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("nodelist"), format!("{nodes}\n")).unwrap();
    }
    (dir, root)
}

#[test]
fn xeon_2s_cxl_tiers() {
    // The kernel's default tiers (mm/memory-tiers.c, drivers/dax/kmem.c): DRAM's abstract
    // distance 576 gives tier 4; memory onlined through dax/kmem, as CXL Type-3 memory is,
    // 2880, tier 22.
    let (_d, root) = with_tiers(&[(4, "0-1"), (22, "2")]);
    let t = discover(&root).unwrap().topology;
    let tiers: Vec<Option<u32>> = t.nodes().iter().map(|n| n.memory_tier).collect();
    assert_eq!(tiers, [Some(4), Some(4), Some(22)]);
    assert_eq!(t.slower_tier(), [NodeId(2)]);
    assert_eq!(
        t.nodes(),
        load("xeon-2s-cxl")
            .nodes()
            .iter()
            .zip(tiers)
            .map(|(n, memory_tier)| rondpoint_model::Node {
                memory_tier,
                ..n.clone()
            })
            .collect::<Vec<_>>(),
        "otherwise the same machine"
    );
    // The same node in DRAM's tier, as HBM in flat mode would be: not slower memory.
    let (_d, root) = with_tiers(&[(4, "0-2")]);
    let flat = discover(&root).unwrap().topology;
    assert_eq!(flat.nodes()[2].memory_tier, Some(4));
    assert!(flat.slower_tier().is_empty());
}

#[test]
fn aws_m5a_24xlarge() {
    let t = load("aws-m5a-24xlarge");
    assert_eq!(t.len(), 6);
    assert_eq!(t.cpu_count(), 96);
    assert!(t.nodes().iter().all(|n| n.cpus.len() == 16));
    // [Choe21 Table 1]: node 0's row.
    assert_eq!(t.distances()[0], [10, 16, 16, 32, 32, 32]);
    assert_eq!(t.distance_classes(), [10, 16, 32]);
    assert!(classes(&t).iter().all(|&c| c == Fast));
    assert_eq!(
        cpulist::format(t.nodes()[0].cpus.iter().map(|c| c.0)),
        "0-7,48-55"
    );
}
