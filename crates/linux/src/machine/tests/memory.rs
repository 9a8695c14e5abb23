//! A process's memory per node is read again (numa_maps, smaps: page-table walks) only when it
//! may have changed.

use super::*;

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
