//! The `default` baseline's splits.

use super::*;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{CpuId, NodeId, Pid, ProcessInfo, ThreadInfo, Tid};

fn topo() -> Topology {
    TopologyBuilder::new(2).cores_per_llc(4).build().unwrap()
}

fn procs(n: i32) -> Vec<ProcessInfo> {
    (0..n)
        .map(|i| ProcessInfo {
            pid: Pid(i + 1),
            comm: format!("p{i}"),
            threads: vec![ThreadInfo {
                tid: Tid(i + 1),
                cpu: CpuId(i as u32),
                node: NodeId(u16::from(i >= 4)),
                allowed_cpus: Vec::new(),
            }],
            resident_bytes_by_node: vec![0, 0],
            mapping_policies: Vec::new(),
        })
        .collect()
}

#[test]
fn four_processes_on_two_processors_make_six_two_and_two_splits() {
    let s = balanced_splits(&topo(), 4, 100);
    assert_eq!(s.len(), 6);
    assert!(s.iter().all(|x| x.iter().filter(|&&n| n == 0).count() == 2));
    assert_eq!(s[0], vec![0, 0, 1, 1]);
    assert_eq!(s[5], vec![1, 1, 0, 0]);
    let mut d = s.clone();
    d.dedup();
    assert_eq!(d.len(), 6);
}

#[test]
fn eight_processes_make_seventy_and_an_odd_count_either_extra() {
    assert_eq!(balanced_splits(&topo(), 8, 100).len(), 70);
    assert_eq!(balanced_splits(&topo(), 5, 100).len(), 20);
    assert_eq!(
        balanced_splits(&topo(), 9, 100).len(),
        0,
        "more than the cores"
    );
}

#[test]
fn a_selected_split_is_pinned_and_none_selected_pins_nothing() {
    let t = topo();
    let p = procs(4);
    let mut d = CfsAverage::new(CfsAverageConfig::default()).unwrap();
    assert_eq!(d.variants(&t, 4), 6);
    assert!(d.start(&t, &p).is_empty(), "live: the OS's own placement");
    d.select_variant(5);
    // Split 5 is [1, 1, 0, 0]: processes 1 and 2 go to processor 1, 3 and 4 stay.
    let actions = d.start(&t, &p);
    let moved: Vec<(Pid, u32)> = actions
        .iter()
        .filter_map(|a| match a {
            Action::PinThread { pid, cpus, .. } => Some((*pid, cpus[0].0)),
            _ => None,
        })
        .collect();
    assert_eq!(
        moved,
        vec![(Pid(3), 2), (Pid(4), 3), (Pid(1), 4), (Pid(2), 5)]
    );
    let one = CfsAverage::new(CfsAverageConfig {
        split: Some(2),
        ..CfsAverageConfig::default()
    })
    .unwrap();
    assert_eq!(one.variants(&t, 4), 1);
}

#[test]
fn beyond_max_splits_a_seeded_draw_of_balanced_splits() {
    let t = TopologyBuilder::new(2).cores_per_llc(8).build().unwrap();
    let with_seed = |seed: u64| {
        CfsAverage::new(CfsAverageConfig {
            split: None,
            max_splits: 10,
            seed,
        })
        .unwrap()
    };
    let d = with_seed(1);
    assert_eq!(d.variants(&t, 12), 10);
    let drawn = d.splits(&t, 12);
    assert!(
        drawn
            .iter()
            .all(|s| s.iter().filter(|&&n| n == 0).count() == 6)
    );
    assert_eq!(drawn, with_seed(1).splits(&t, 12), "same seed, same draw");
    assert_ne!(
        drawn,
        with_seed(2).splits(&t, 12),
        "the seed reaches the draw"
    );
}
