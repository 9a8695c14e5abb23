//! Known machines and random distance matrices: checks, derived facts, links and routes.

use super::*;
use crate::synthetic::{TopologyBuilder, r905_distances};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn nid(v: &[u16]) -> Vec<NodeId> {
    v.iter().map(|&x| NodeId(x)).collect()
}

#[test]
fn r905_links_routes_and_classes() {
    let t = TopologyBuilder::new(4)
        .cores_per_llc(4)
        .distances(r905_distances())
        .build()
        .unwrap();
    let links: Vec<(u16, u16)> = t
        .interconnect()
        .links
        .iter()
        .map(|l| (l.a.0, l.b.0))
        .collect();
    assert_eq!(links, vec![(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]);
    assert_eq!(t.route(NodeId(0), NodeId(3)).unwrap().path, nid(&[0, 1, 3]));
    assert_eq!(t.route(NodeId(3), NodeId(0)).unwrap().path, nid(&[3, 1, 0]));
    assert_eq!(t.route(NodeId(1), NodeId(2)).unwrap().path, nid(&[1, 2]));
    assert_eq!(t.hops()[0][3], 2);
    assert_eq!(t.hops()[1][3], 1);
    assert_eq!(
        t.classes(),
        &[
            NodeClass::Slow,
            NodeClass::Fast,
            NodeClass::Fast,
            NodeClass::Slow
        ]
    );
    assert_eq!(t.distance_classes(), vec![10, 16, 22]);
}

#[test]
fn interconnect_file_overrides_routes() {
    let t = TopologyBuilder::new(4)
        .distances(r905_distances())
        .build()
        .unwrap();
    let spec = InterconnectSpec::from_toml(
        "links = [[0,1],[0,2],[1,2],[1,3],[2,3]]\n[[routes]]\nfrom = 0\nto = 3\nvia = [2]\n",
    )
    .unwrap();
    let t = t
        .with_interconnect(&spec, InterconnectOrigin::File("r905.toml".into()))
        .unwrap();
    assert_eq!(t.route(NodeId(0), NodeId(3)).unwrap().path, nid(&[0, 2, 3]));
    // The reverse was not pinned, so it stays the shortest path with the lowest relay.
    assert_eq!(t.route(NodeId(3), NodeId(0)).unwrap().path, nid(&[3, 1, 0]));
}

#[test]
fn interconnect_file_errors() {
    let t = TopologyBuilder::new(4)
        .distances(r905_distances())
        .build()
        .unwrap();
    let bad = |toml: &str| {
        let spec = InterconnectSpec::from_toml(toml)?;
        t.clone()
            .with_interconnect(&spec, InterconnectOrigin::File("x".into()))
    };
    assert!(matches!(
        bad("links = [[0,1],[1,2]]"),
        Err(TopologyError::Disconnected { .. })
    ));
    assert!(matches!(
        bad("links = [[0,9]]"),
        Err(TopologyError::UnknownNode {
            node: NodeId(9),
            ..
        })
    ));
    assert!(matches!(
        bad("links = [[1,1]]"),
        Err(TopologyError::SelfLink { .. })
    ));
    assert!(matches!(
        bad("links = [[0,1],[1,2],[2,3]]\n[[routes]]\nfrom=0\nto=3\nvia=[2]"),
        Err(TopologyError::RouteNotOnLinks { .. })
    ));
    assert!(matches!(
        bad("links = [[0,1],[1,2],[2,3]]\n[[routes]]\nfrom=0\nto=3\nvia=[1,0]"),
        Err(TopologyError::RouteLoops { .. })
    ));
    assert!(matches!(
        bad(
            "links = [[0,1],[1,2],[2,3]]\n[[routes]]\nfrom=0\nto=3\nvia=[1,2]\n\
             [[routes]]\nfrom=0\nto=3\nvia=[1,2]"
        ),
        Err(TopologyError::RouteTwice { .. })
    ));
    assert!(matches!(
        bad("linkz = []"),
        Err(TopologyError::InterconnectToml(_))
    ));
}

#[test]
fn symmetric_machines_are_all_fast_and_fully_linked() {
    let t = TopologyBuilder::new(4).uniform(10, 21).build().unwrap();
    assert!(t.classes().iter().all(|&c| c == NodeClass::Fast));
    assert_eq!(t.interconnect().links.len(), 6);
    let one = TopologyBuilder::new(1).build().unwrap();
    assert!(!one.is_numa());
    assert_eq!(one.classes(), &[NodeClass::Fast]);
    assert!(one.interconnect().routes.is_empty());
}

#[test]
fn cxl_node_is_memory_only_and_hangs_off_its_socket() {
    let t = TopologyBuilder::new(3)
        .memory_only(&[2])
        .distances(vec![vec![10, 21, 14], vec![21, 10, 24], vec![14, 24, 10]])
        .build()
        .unwrap();
    assert_eq!(
        t.classes(),
        &[NodeClass::Fast, NodeClass::Fast, NodeClass::MemoryOnly]
    );
    assert_eq!(t.route(NodeId(1), NodeId(2)).unwrap().path, nid(&[1, 0, 2]));
    assert_eq!(t.worst_cpu_distance(NodeId(2)), None);
    assert_eq!(t.worst_cpu_distance(NodeId(1)), Some(21));
}

#[test]
fn slower_tier_memory_follows_the_kernels_tiers_or_else_the_cpu_less_nodes() {
    // Sockets 0 and 1, CPU-less node 2, and node 3 with CPUs but no memory.
    let base = TopologyBuilder::new(4).memory_only(&[2]).build().unwrap();
    let mut nodes = base.nodes().to_vec();
    nodes[3].mem_total_bytes = 0;
    nodes[3].mem_free_bytes = 0;
    let with = |tiers: [Option<u32>; 4]| {
        let mut nodes = nodes.clone();
        for (n, t) in nodes.iter_mut().zip(tiers) {
            n.memory_tier = t;
        }
        Topology::new(nodes, base.distances().to_vec(), vec![]).unwrap()
    };
    // No kernel tiers: the CPU-less node with memory.
    assert_eq!(with([None; 4]).slower_tier(), nid(&[2]));
    // The kernel's defaults, DRAM in tier 4 and CXL (dax/kmem) in 22.
    let cxl = with([Some(4), Some(4), Some(22), None]);
    assert_eq!(cxl.slower_tier(), nid(&[2]));
    assert!(!cxl.is_slower_tier(NodeId(9)), "not a node");
    // No slower memory: HBM in flat mode, in DRAM's tier or a faster one; a tier between two
    // that hold CPU nodes (top tier, as in the kernel); a socket in a slower tier than another.
    for tiers in [[4, 4, 4], [4, 4, 3], [4, 6, 5], [4, 22, 22]] {
        let t = with([Some(tiers[0]), Some(tiers[1]), Some(tiers[2]), None]);
        assert!(t.slower_tier().is_empty(), "{tiers:?}");
    }
}

#[test]
fn rejects_bad_distances() {
    let b = |d: Vec<Vec<u32>>| TopologyBuilder::new(2).distances(d).build();
    assert!(matches!(
        b(vec![vec![10, 10], vec![20, 10]]),
        Err(TopologyError::RemoteNotFarther { .. })
    ));
    assert!(matches!(
        b(vec![vec![10, 255], vec![20, 10]]),
        Err(TopologyError::Unreachable { .. })
    ));
    assert!(matches!(
        b(vec![vec![10, 20]]),
        Err(TopologyError::DistanceRows { rows: 1, nodes: 2 })
    ));
    assert!(matches!(
        b(vec![vec![10, 20], vec![20]]),
        Err(TopologyError::DistanceRowLength { len: 1, .. })
    ));
}

#[test]
fn nodes_are_sorted_with_their_distance_rows() {
    let mk = |id: u16, cpu: u32| Node {
        id: NodeId(id),
        cpus: vec![CpuId(cpu)],
        mem_total_bytes: 1,
        mem_free_bytes: 1,
        hmat: Hmat::default(),
        memory_tier: None,
    };
    let t = Topology::new(
        vec![mk(2, 2), mk(0, 0)],
        vec![vec![10, 30], vec![30, 10]],
        vec![],
    )
    .unwrap();
    assert_eq!(t.nodes()[0].id, NodeId(0));
    assert_eq!(t.distance(NodeId(0), NodeId(2)), Some(30));
    assert_eq!(t.index_of(NodeId(2)), Some(1));
    assert_eq!(t.index_of(NodeId(1)), None);
    assert_eq!(t.node_of_cpu(CpuId(2)), Some(NodeId(2)));
    assert!(matches!(
        Topology::new(
            vec![mk(0, 0), mk(1, 0)],
            vec![vec![10, 20], vec![20, 10]],
            vec![]
        ),
        Err(TopologyError::CpuInTwoNodes { .. })
    ));
}

#[test]
fn serde_round_trip_keeps_the_interconnect() {
    let t = TopologyBuilder::new(4)
        .distances(r905_distances())
        .build()
        .unwrap();
    let json = serde_json::to_string(&t).unwrap();
    let back: Topology = serde_json::from_str(&json).unwrap();
    assert_eq!(back, t);
}

/// A random symmetric distance matrix with local 10 and remote values in 11..=40.
fn arb_distances() -> impl Strategy<Value = Vec<Vec<u32>>> {
    (1usize..9).prop_flat_map(|n| {
        proptest::collection::vec(11u32..=40, n * n).prop_map(move |v| {
            let mut d = vec![vec![10; n]; n];
            for i in 0..n {
                for j in i + 1..n {
                    d[i][j] = v[i * n + j];
                    d[j][i] = v[i * n + j];
                }
            }
            d
        })
    })
}

proptest! {
    #[test]
    fn derived_facts_are_consistent(d in arb_distances()) {
        let n = d.len();
        let t = TopologyBuilder::new(n).distances(d).build().unwrap();
        let links: BTreeSet<Link> = t.interconnect().links.iter().copied().collect();
        prop_assert_eq!(t.interconnect().routes.len(), n * (n - 1));
        for r in &t.interconnect().routes {
            // Every route starts and ends where it says and only crosses links.
            prop_assert_eq!(r.path.first(), Some(&r.from));
            prop_assert_eq!(r.path.last(), Some(&r.to));
            for l in r.links() {
                prop_assert!(links.contains(&l));
            }
            prop_assert_eq!(t.route(r.from, r.to), Some(r));
        }
        for i in 0..n {
            for j in 0..n {
                // Hop counts are symmetric, and one hop exactly on a link.
                prop_assert_eq!(t.hops()[i][j], t.hops()[j][i]);
                let linked = links.contains(&Link::new(t.nodes()[i].id, t.nodes()[j].id));
                prop_assert_eq!(i != j && t.hops()[i][j] == 1, linked);
            }
        }
        // At least one CPU node is fast, and the fast ones share the smallest worst case.
        let fast: Vec<_> = t.nodes().iter().filter(|x| t.class(x.id) == Some(NodeClass::Fast)).collect();
        prop_assert!(!fast.is_empty());
        let best = fast.iter().filter_map(|x| t.worst_cpu_distance(x.id)).min();
        for x in t.nodes() {
            let w = t.worst_cpu_distance(x.id);
            prop_assert_eq!(t.class(x.id) == Some(NodeClass::Fast), w == best);
        }
    }
}

#[test]
fn machines_past_the_limits_are_refused_with_the_limit() {
    let err = TopologyBuilder::new(65).build().unwrap_err();
    assert!(
        matches!(
            err,
            TopologyError::TooLarge {
                count: 65,
                max: 64,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("64"), "{err}");
    let err = TopologyBuilder::new(2)
        .cores_per_llc(2049)
        .build()
        .unwrap_err();
    assert!(
        matches!(err, TopologyError::TooLarge { max: 4096, .. }),
        "{err}"
    );
    // At the limits, building is quick (routes over 64 nodes).
    let t = TopologyBuilder::new(64).cores_per_llc(64).build().unwrap();
    assert_eq!(t.nodes().len(), 64);
}
