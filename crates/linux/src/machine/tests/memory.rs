//! A process's memory per node is read again (numa_maps, smaps: page-table walks) only when it
//! may have changed.

use super::*;
use rondpoint_model::OutcomeStatus;

/// memhog's stat, the process's and each thread's, with resident size `rss` pages (the
/// kernel gives every thread its process's).
fn write_stat(root: &std::path::Path, rss: u64) {
    let line = format!(
        "4242 (memhog) S 1 4242 8273 0 -1 4194304 1000 0 0 0 10012 601 0 0 20 0 4 0 250000 \
         78036992 {rss} 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 2 0 0 0 0 0 1 1 1 1 1 1 \
         1 0\n"
    );
    std::fs::write(root.join("4242/stat"), &line).unwrap();
    for task in std::fs::read_dir(root.join("4242/task")).unwrap() {
        let dir = task.unwrap().path();
        let tid = dir.file_name().unwrap().to_string_lossy().into_owned();
        std::fs::write(
            dir.join("stat"),
            line.replacen("4242 (memhog)", &format!("{tid} (memhog)"), 1),
        )
        .unwrap();
    }
}

/// memhog's numa_maps: one mapping of 1,000 pages on `node`.
fn write_numa_maps(root: &std::path::Path, node: u16) {
    let text =
        format!("7f1a00000000 default anon=1000 dirty=1000 N{node}=1000 kernelpagesize_kB=4\n");
    std::fs::write(root.join("4242/numa_maps"), text).unwrap();
}

/// memhog's resident bytes per node in an observation.
fn resident(m: &mut LinuxMachine<FakeSys>) -> Vec<u64> {
    let obs = m.observe(0).unwrap();
    let p = obs.processes.iter().find(|p| p.pid == MEMHOG).unwrap();
    p.resident_bytes_by_node.clone()
}

fn on(node: usize) -> Vec<u64> {
    let mut v = vec![0; 4];
    v[node] = 4_096_000;
    v
}

#[test]
fn memory_is_read_again_when_its_size_moves_when_rondpoint_moves_it_or_when_it_is_old() {
    let (_dir, root, mut m) = on_proc_copy(FakeSys::new(), vec![MEMHOG]);
    write_stat(&root, 100_000);
    write_numa_maps(&root, 0);
    assert_eq!(resident(&mut m), on(0));
    // The kernel moves the pages (its resident size does not change): not read again yet.
    write_numa_maps(&root, 1);
    assert_eq!(resident(&mut m), on(0));
    // A change of resident size under a thirty-second: still not; over it: read.
    write_stat(&root, 102_000);
    assert_eq!(resident(&mut m), on(0));
    write_stat(&root, 105_000);
    assert_eq!(resident(&mut m), on(1));
    // rondpoint moves its pages: read at the next observation.
    write_numa_maps(&root, 2);
    let range = PageRange::new(MEMHOG, 0x7f1a_0000_0000, 1, PageSize::Base4K).unwrap();
    m.apply(&[Action::MigratePages {
        range,
        to: NodeId(2),
    }])
    .unwrap();
    assert_eq!(resident(&mut m), on(2));
    // Nothing changes: read again once the last read is `memory_refresh_epochs` old.
    write_numa_maps(&root, 3);
    let every = LiveConfig::default().memory_refresh_epochs;
    for _ in 1..every {
        assert_eq!(resident(&mut m), on(2));
    }
    assert_eq!(resident(&mut m), on(3));
}

#[test]
fn room_on_a_node_is_the_kernels_estimate_or_the_conservative_rule_without_zoneinfo() {
    // Node 0 of the fixtures (meminfo of r905-asymmetric, zoneinfo of numa4, in kB): free
    // 6412380, less the reserve 57428 (14357 pages), plus the file cache 748484 less the low
    // watermarks 13908 (3477 pages), plus KReclaimable 41152 less 13908.
    let (_dir, root, m) = on_proc_copy(FakeSys::new(), vec![MEMHOG]);
    assert!(m.watermarks_known());
    let room = m.room();
    assert_eq!(room[&NodeId(0)], 7_116_772 << 10);
    // Node 1: free 7350236, reserve 22268 (5567 pages), file cache 395696 less the low
    // watermarks 14140 (3535 pages), KReclaimable 21752 less its half, 10876 (less than the
    // low watermarks).
    assert_eq!(
        room[&NodeId(1)],
        (7_350_236 - 22_268 + 395_696 - 14_140 + 21_752 - 10_876) << 10
    );
    // Without zoneinfo: free memory less the fixed reserve, and the probe says so.
    std::fs::remove_file(root.join("zoneinfo")).unwrap();
    assert!(!m.watermarks_known());
    let reserve = LiveConfig::default().reserve_free_bytes;
    assert_eq!(m.room()[&NodeId(0)], (6_412_380 << 10) - reserve);
}

#[test]
fn an_epochs_page_moves_of_a_process_go_in_one_move_call_in_action_order() {
    // Carrefour returns many small actions an epoch; each move_pages call that moves costs
    // the whole machine an LRU drain (actuate::pages), so the run of placements goes in one.
    let base = 0x7f1a_0000_0000u64;
    let placed: Vec<(u64, i32)> = (0..8).map(|k| (base + k * 4096, 0)).collect();
    let (_dir, _root, mut m) =
        on_proc_copy(FakeSys::new().with_process(MEMHOG.0, &placed), vec![MEMHOG]);
    let page = |k: u64| PageRange::new(MEMHOG, base + k * 4096, 1, PageSize::Base4K).unwrap();
    let pin = Action::PinThread {
        pid: MEMHOG,
        tid: Tid(MEMHOG.0),
        cpus: vec![CpuId(0)],
    };
    let mut actions: Vec<Action> = (0..3)
        .map(|k| Action::MigratePages {
            range: page(k),
            to: NodeId(1),
        })
        .collect();
    actions.push(pin);
    actions.push(Action::Interleave {
        range: PageRange::new(MEMHOG, base + 3 * 4096, 4, PageSize::Base4K).unwrap(),
        nodes: NodeList::from_slice(&[NodeId(2), NodeId(3)]),
    });
    actions.push(Action::Replicate {
        range: page(7),
        nodes: NodeList::from_slice(&[NodeId(0), NodeId(1)]),
    });
    m.sys.calls.clear();
    let out = m.apply(&actions).unwrap();
    let index: Vec<usize> = out.iter().map(|o| o.action).collect();
    assert_eq!(index, vec![0, 1, 2, 3, 4, 5]);
    assert!(
        out.iter().all(|o| o.status != OutcomeStatus::Failed),
        "{out:?}"
    );
    assert_eq!(out[5].status, OutcomeStatus::Substituted);
    let moves = m
        .sys
        .calls_named("move_pages")
        .into_iter()
        .filter(|c| matches!(c, Call::MovePages { nodes: Some(_), .. }))
        .count();
    // The three migrations before the pin, then the interleave and the replication after it.
    assert_eq!(moves, 2);
}
