//! procfs reading on the fixture trees (fixtures/procfs, sources in fixtures/procfs/SOURCES.md),
//! on broken copies of them, and on this machine's own /proc.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_linux::procfs::{
    NodeWatermarks, NumaMapping, NumaVmstat, ProcError, ProcRoot, TaskStat, ThreadSnapshot,
    glob_match,
};
use rondpoint_model::{CpuId, NodeId, Pid, PolicyMode, Tid};
use std::fs;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/procfs")
        .join(name)
}

fn numa4() -> ProcRoot {
    ProcRoot::new(fixture("numa4"))
}

fn cpus(r: std::ops::RangeInclusive<u32>) -> Vec<CpuId> {
    r.map(CpuId).collect()
}

fn nodes(counts: &[(u16, u64)]) -> Vec<(NodeId, u64)> {
    counts.iter().map(|&(n, c)| (NodeId(n), c)).collect()
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A fresh copy of the numa4 fixture to break.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proc");
    copy_tree(&fixture("numa4"), &root);
    (dir, root)
}

/// The result is a Malformed error that names `file` (relative to `root`) and says `what`.
fn assert_malformed<T: std::fmt::Debug>(
    r: Result<T, ProcError>,
    root: &Path,
    file: &str,
    what: &str,
) {
    let err = match r {
        Ok(v) => panic!("{file} should be malformed ({what}), got {v:?}"),
        Err(e) => e,
    };
    assert!(matches!(err, ProcError::Malformed { .. }), "{err:?}");
    let msg = err.to_string();
    let path = root.join(file).display().to_string();
    assert!(msg.contains(&path), "message should name {path}: {msg}");
    assert!(msg.contains(what), "message should say {what:?}: {msg}");
}

#[test]
fn pids_are_the_numeric_entries_sorted() {
    let pids = numa4().pids().unwrap();
    assert_eq!(pids, [1, 4242, 4250, 4260, 5000, 6000].map(Pid));
}

#[test]
fn stat_of_every_process() {
    let p = numa4();
    assert_eq!(
        p.stat(Pid(1)).unwrap(),
        Some(TaskStat {
            pid: Pid(1),
            comm: "systemd".into(),
            state: 'S',
            ppid: Pid(0),
            flags: 4194304,
            utime_ticks: 312,
            stime_ticks: 148,
            num_threads: 1,
            rss_pages: Some(8565),
            processor: Some(CpuId(5)),
        })
    );
    assert_eq!(
        p.stat(Pid(4242)).unwrap(),
        Some(TaskStat {
            pid: Pid(4242),
            comm: "memhog".into(),
            state: 'S',
            ppid: Pid(1),
            flags: 4194304,
            utime_ticks: 10012,
            stime_ticks: 601,
            num_threads: 4,
            rss_pages: Some(8565),
            processor: Some(CpuId(2)),
        })
    );
    let worker = p.stat(Pid(4260)).unwrap().unwrap();
    assert_eq!(
        (worker.state, worker.ppid, worker.processor),
        ('R', Pid(4250), Some(CpuId(14)))
    );
    let zombie = p.stat(Pid(5000)).unwrap().unwrap();
    assert_eq!(
        (zombie.comm.as_str(), zombie.state, zombie.ppid),
        ("sh", 'Z', Pid(4242))
    );
}

#[test]
fn comm_with_spaces_and_parentheses() {
    let p = numa4();
    assert_eq!(p.comm(Pid(4250)).unwrap().as_deref(), Some("my) (app x"));
    assert_eq!(
        p.stat(Pid(4250)).unwrap(),
        Some(TaskStat {
            pid: Pid(4250),
            comm: "my) (app x".into(),
            state: 'S',
            ppid: Pid(4242),
            flags: 4194304,
            utime_ticks: 50,
            stime_ticks: 7,
            num_threads: 1,
            rss_pages: Some(8565),
            processor: Some(CpuId(13)),
        })
    );
    assert_eq!(p.comm(Pid(1)).unwrap().as_deref(), Some("systemd"));
}

#[test]
fn task_stat_of_threads() {
    let p = numa4();
    let t = p.task_stat(Pid(4242), Tid(4243)).unwrap().unwrap();
    assert_eq!(t.pid, Pid(4243));
    assert_eq!((t.state, t.utime_ticks, t.stime_ticks), ('R', 5000, 300));
    assert_eq!((t.num_threads, t.processor), (4, Some(CpuId(1))));
    assert_eq!(p.task_stat(Pid(4242), Tid(4246)).unwrap(), None);
    assert_eq!(p.task_stat(Pid(4242), Tid(9999)).unwrap(), None);
}

#[test]
fn threads_with_cpus_and_affinities() {
    let got = numa4().threads(Pid(4242)).unwrap();
    // 4246 is exiting: its task directory has a status but no stat, so it is left out.
    assert_eq!(
        got,
        [
            ThreadSnapshot {
                tid: Tid(4242),
                cpu: Some(CpuId(2)),
                state: 'S',
                cpu_ticks: 120,
                rss_pages: Some(8565),
                allowed_cpus: cpus(0..=15),
            },
            ThreadSnapshot {
                tid: Tid(4243),
                cpu: Some(CpuId(1)),
                state: 'R',
                cpu_ticks: 5300,
                rss_pages: Some(8565),
                allowed_cpus: cpus(0..=3),
            },
            ThreadSnapshot {
                tid: Tid(4244),
                cpu: Some(CpuId(9)),
                state: 'R',
                cpu_ticks: 5050,
                rss_pages: Some(8565),
                allowed_cpus: cpus(8..=11),
            },
        ]
    );
    assert_eq!(numa4().threads(Pid(4250)).unwrap().len(), 1);
}

#[test]
fn allowed_cpus_per_thread() {
    let p = numa4();
    assert_eq!(
        p.allowed_cpus(Pid(4242), Tid(4244)).unwrap(),
        Some(cpus(8..=11))
    );
    assert_eq!(
        p.allowed_cpus(Pid(4250), Tid(4250)).unwrap(),
        Some(cpus(12..=15))
    );
    assert_eq!(p.allowed_cpus(Pid(4242), Tid(4245)).unwrap(), None);
}

#[test]
fn vanished_processes_give_none() {
    let p = numa4();
    // Never there.
    assert_eq!(p.stat(Pid(9999)).unwrap(), None);
    assert_eq!(p.comm(Pid(9999)).unwrap(), None);
    assert_eq!(p.numa_maps(Pid(9999)).unwrap(), None);
    assert_eq!(p.thp_bytes(Pid(9999)).unwrap(), None);
    assert_eq!(p.allowed_cpus(Pid(9999), Tid(9999)).unwrap(), None);
    assert!(p.threads(Pid(9999)).unwrap().is_empty());
    // 6000 was listed, then exited: its files are gone.
    assert_eq!(p.stat(Pid(6000)).unwrap(), None);
    assert_eq!(p.comm(Pid(6000)).unwrap(), None);
    assert!(p.threads(Pid(6000)).unwrap().is_empty());
    // 4260 exited after its stat was read: numa_maps and smaps are gone.
    assert_eq!(p.numa_maps(Pid(4260)).unwrap(), None);
    assert_eq!(p.thp_bytes(Pid(4260)).unwrap(), None);
    // 5000 is a zombie: its memory files read empty.
    assert_eq!(p.numa_maps(Pid(5000)).unwrap(), None);
    assert_eq!(p.thp_bytes(Pid(5000)).unwrap(), None);
}

#[test]
fn process_directory_removed_between_reads() {
    let (_dir, root) = scratch();
    let p = ProcRoot::new(&root);
    assert!(p.stat(Pid(4250)).unwrap().is_some());
    fs::remove_dir_all(root.join("4250")).unwrap();
    assert_eq!(p.stat(Pid(4250)).unwrap(), None);
    assert_eq!(p.numa_maps(Pid(4250)).unwrap(), None);
    assert!(p.threads(Pid(4250)).unwrap().is_empty());
    // Its child 4260 is no longer reachable from 4242 either.
    assert_eq!(p.descendants(Pid(4242)).unwrap(), [Pid(5000)]);
    // A thread whose stat vanished is skipped; one whose status vanished too.
    fs::remove_file(root.join("4242/task/4243/stat")).unwrap();
    fs::remove_file(root.join("4242/task/4244/status")).unwrap();
    let tids: Vec<Tid> = p
        .threads(Pid(4242))
        .unwrap()
        .iter()
        .map(|t| t.tid)
        .collect();
    assert_eq!(tids, [Tid(4242)]);
}

#[test]
fn numa_maps_of_memhog() {
    let maps = numa4().numa_maps(Pid(4242)).unwrap().unwrap();
    assert_eq!(maps.len(), 15);
    let m = |start: u64| maps.iter().find(|m| m.start == start).unwrap().clone();

    // The THP-backed gigabyte: counts in base pages, kernelpagesize_kB=4.
    assert_eq!(
        m(0x7f1a_0000_0000),
        NumaMapping {
            start: 0x7f1a_0000_0000,
            policy: "default".into(),
            pages_by_node: nodes(&[(0, 131072), (1, 65536), (2, 32768), (3, 32768)]),
            page_size_kb: 4,
            anon: true,
            anon_pages: 262144,
            huge: false,
            file: None,
        }
    );
    assert_eq!(m(0x7f1a_0000_0000).bytes(), 1 << 30);
    let interleaved = m(0x7f1a_4000_0000);
    assert_eq!(interleaved.policy, "interleave:0-3");
    assert_eq!(
        interleaved.pages_by_node,
        nodes(&[(0, 16384), (1, 16384), (2, 16384), (3, 16384)])
    );
    assert_eq!(m(0x7f1a_5000_0000).policy, "bind=static:2-3");
    // Policy names with a space in them.
    let weighted = m(0x7f1a_5100_0000);
    assert_eq!(weighted.policy, "weighted interleave:0-3");
    assert_eq!(
        weighted.pages_by_node,
        nodes(&[(0, 1024), (1, 1024), (2, 512), (3, 512)])
    );
    assert_eq!(weighted.pages(), 3072);
    let many = m(0x7f1a_5200_0000);
    assert_eq!(many.policy, "prefer (many):1-2");
    assert_eq!((many.anon_pages, many.pages()), (512, 512));
    // The same, as policies rondpoint acts on.
    let ids = |v: &[u16]| v.iter().map(|&n| NodeId(n)).collect::<Vec<_>>();
    assert_eq!(m(0x7f1a_0000_0000).explicit_policy(), None);
    assert_eq!(
        interleaved.explicit_policy(),
        Some((PolicyMode::Interleave, ids(&[0, 1, 2, 3]), false))
    );
    assert_eq!(
        m(0x7f1a_5000_0000).explicit_policy(),
        Some((PolicyMode::Bind, ids(&[2, 3]), false))
    );
    assert_eq!(
        weighted.explicit_policy(),
        Some((PolicyMode::WeightedInterleave, ids(&[0, 1, 2, 3]), false))
    );
    assert_eq!(
        many.explicit_policy(),
        Some((PolicyMode::PreferMany, ids(&[1, 2]), false))
    );
    // hugetlbfs: counts in huge pages.
    assert_eq!(
        m(0x7f1a_6000_0000),
        NumaMapping {
            start: 0x7f1a_6000_0000,
            policy: "default".into(),
            pages_by_node: nodes(&[(0, 4), (3, 4)]),
            page_size_kb: 2048,
            anon: true,
            anon_pages: 8,
            huge: true,
            file: Some("/anon_hugepage (deleted)".into()),
        }
    );
    assert_eq!(m(0x7f1a_6000_0000).bytes(), 16 << 20);
    // A shared file with a space in its name, preferred on node 3.
    let shm = m(0x7f1a_8000_0000);
    assert_eq!(shm.policy, "prefer:3");
    assert_eq!(
        shm.explicit_policy(),
        Some((PolicyMode::Prefer, vec![NodeId(3)], false))
    );
    assert_eq!(shm.file.as_deref(), Some("/dev/shm/memhog buf"));
    assert_eq!(
        (shm.anon, shm.pages_by_node.clone()),
        (false, nodes(&[(3, 256)]))
    );
    // Nothing resident: no counts, no page size.
    assert_eq!(
        m(0x7f1a_9000_0000),
        NumaMapping {
            start: 0x7f1a_9000_0000,
            policy: "default".into(),
            ..NumaMapping::default()
        }
    );
    // Copy-on-write pages of a private file mapping are anonymous.
    let cow = m(0x55d4_c8a0_c000);
    assert_eq!(cow.file.as_deref(), Some("/usr/local/bin/memhog"));
    assert!(cow.anon);
    let heap = m(0x55d4_ca1f_2000);
    assert_eq!(
        (heap.file, heap.pages_by_node),
        (None, nodes(&[(0, 603), (1, 487)]))
    );
    let total: u64 = maps
        .iter()
        .filter(|m| !m.huge)
        .map(NumaMapping::pages)
        .sum();
    assert_eq!(
        total,
        3 + 9 + 2 + 1090 + 262144 + 65536 + 4096 + 3072 + 512 + 256 + 2 + 211 + 33
    );
}

#[test]
fn numa_maps_of_the_odd_child() {
    let maps = numa4().numa_maps(Pid(4250)).unwrap().unwrap();
    let starts: Vec<u64> = maps.iter().map(|m| m.start).collect();
    assert_eq!(
        starts,
        [
            0x5601_a2c0_0000,
            0x5601_a3e1_1000,
            0x7f0c_11a0_0000,
            0x7ffc_9a1b_2000
        ]
    );
    assert_eq!(
        maps[2].file.as_deref(),
        Some("/usr/lib/x86_64-linux-gnu/libc.so.6")
    );
    assert_eq!(maps[2].pages_by_node, nodes(&[(0, 160), (1, 51)]));
    assert!(!maps[2].anon);
    assert_eq!(maps[3].pages_by_node, nodes(&[(3, 3)]));
}

#[test]
fn thp_bytes_from_smaps_rollup_and_smaps() {
    assert_eq!(numa4().thp_bytes(Pid(4242)).unwrap(), Some(1 << 30));
    assert_eq!(numa4().thp_bytes(Pid(4250)).unwrap(), Some(0));
    // No smaps_rollup before 4.14: the sum over smaps.
    let old = ProcRoot::new(fixture("old-kernel"));
    assert_eq!(old.thp_bytes(Pid(777)).unwrap(), Some((4096 + 2048) << 10));
    // The full smaps, as text; none where the process has no such file.
    let smaps = old.smaps(Pid(777)).unwrap().unwrap_or_default();
    assert!(smaps.contains("AnonHugePages:"), "{smaps}");
    assert_eq!(numa4().smaps(Pid(4242)).unwrap(), None);
}

#[test]
fn descendants_through_ppid() {
    let p = numa4();
    assert_eq!(
        p.descendants(Pid(4242)).unwrap(),
        [4250, 4260, 5000].map(Pid)
    );
    assert_eq!(p.descendants(Pid(4250)).unwrap(), [Pid(4260)]);
    assert_eq!(
        p.descendants(Pid(1)).unwrap(),
        [4242, 4250, 4260, 5000].map(Pid)
    );
    assert!(p.descendants(Pid(4260)).unwrap().is_empty());
    assert!(p.descendants(Pid(9999)).unwrap().is_empty());
}

#[test]
fn descendants_through_children_files() {
    // With CONFIG_PROC_CHILDREN each task lists the children it created: those files are
    // followed (here they name 777, which the ppid scan could not find), not every stat.
    let (_dir, root) = scratch();
    fs::write(root.join("4242/task/4242/children"), "4250 ").unwrap();
    fs::write(root.join("4242/task/4243/children"), "5000 4242 ").unwrap();
    fs::write(root.join("4250/task/4250/children"), "4260 777 ").unwrap();
    let p = ProcRoot::new(&root);
    assert_eq!(
        p.descendants(Pid(4242)).unwrap(),
        [777, 4250, 4260, 5000].map(Pid)
    );
    // A process with no children file of its own is scanned through the ppids.
    assert_eq!(p.descendants(Pid(4260)).unwrap(), []);
}

#[test]
fn find_by_comm_exact_and_glob() {
    let p = numa4();
    assert_eq!(p.find_by_comm("memhog").unwrap(), [Pid(4242)]);
    assert_eq!(p.find_by_comm("my) (app x").unwrap(), [Pid(4250)]);
    assert_eq!(p.find_by_comm("mem*").unwrap(), [Pid(4242)]);
    assert_eq!(p.find_by_comm("worker-?").unwrap(), [Pid(4260)]);
    assert_eq!(p.find_by_comm("*) (*").unwrap(), [Pid(4250)]);
    assert_eq!(
        p.find_by_comm("*").unwrap(),
        [1, 4242, 4250, 4260, 5000].map(Pid)
    );
    assert!(p.find_by_comm("memho").unwrap().is_empty());
    assert!(p.find_by_comm("nope*").unwrap().is_empty());
}

#[test]
fn glob_matcher() {
    for (pat, text) in [
        ("", ""),
        ("*", ""),
        ("*", "abc"),
        ("a*c", "abbbc"),
        ("a*c", "ac"),
        ("*b*", "abc"),
        ("?", "x"),
        ("a?c", "abc"),
        ("*x*y", "axxbxy"),
        ("**a", "a"),
        ("kworker/*:*", "kworker/3:1H"),
        ("é?", "éà"),
    ] {
        assert!(glob_match(pat, text), "{pat:?} should match {text:?}");
    }
    for (pat, text) in [
        ("", "a"),
        ("a", ""),
        ("?", ""),
        ("a*c", "abcd"),
        ("a?c", "ac"),
        ("*x*y", "axxbx"),
        ("abc", "abd"),
    ] {
        assert!(!glob_match(pat, text), "{pat:?} should not match {text:?}");
    }
}

#[test]
fn vmstat_and_numa_balancing() {
    assert_eq!(
        numa4().vmstat_numa().unwrap(),
        NumaVmstat {
            numa_hit: Some(914733201),
            numa_miss: Some(20417),
            numa_foreign: Some(20417),
            numa_interleave: Some(66411),
            numa_local: Some(912004877),
            numa_other: Some(2748741),
            numa_pte_updates: Some(5817342),
            numa_hint_faults: Some(4420187),
            numa_hint_faults_local: Some(3311025),
            numa_pages_migrated: Some(512380),
            pgmigrate_success: Some(530114),
            pgmigrate_fail: Some(87),
            thp_migration_success: Some(211),
        }
    );
    assert_eq!(numa4().numa_balancing().unwrap(), Some(1));
}

#[test]
fn zoneinfo_watermarks_per_node() {
    let w = numa4().zoneinfo().unwrap().unwrap();
    assert_eq!(w.len(), 4);
    // Node 0: DMA, DMA32 and Normal populated; the empty Movable zone's watermarks (32) count
    // in the sums, its reserve does not (no managed pages); DMA's lowmem reserve exceeds its
    // managed pages, so all of DMA is reserve. The per-CPU pagesets' `high:` is not read.
    assert_eq!(
        w[&NodeId(0)],
        NodeWatermarks {
            low_pages: 5 + 1247 + 2193 + 32,
            high_pages: 8 + 1982 + 3485 + 32,
            reserve_pages: 3840 + (1982 + 5050) + 3485,
        }
    );
    // Node 1: Normal only.
    assert_eq!(
        w[&NodeId(1)],
        NodeWatermarks {
            low_pages: 3503 + 32,
            high_pages: 5567 + 32,
            reserve_pages: 5567,
        }
    );
    // An old kernel's tree without the file: none.
    assert_eq!(
        ProcRoot::new(fixture("old-kernel")).zoneinfo().unwrap(),
        None
    );
}

#[test]
fn zoneinfo_malformed_or_before_managed_pages() {
    let dir = tempfile::tempdir().unwrap();
    let p = ProcRoot::new(dir.path());
    // Before Linux 3.8 there is no `managed` line: the present pages cap the reserve.
    let old = "Node 0, zone      DMA\n  pages free     3977\n        min      5\n        \
               low      6\n        high     7\n        scanned  0\n        spanned  4080\n        \
               present  3922\n    nr_free_pages 3977\n        protection: (0, 3254, 24203, 24203)\n";
    fs::write(dir.path().join("zoneinfo"), old).unwrap();
    assert_eq!(
        p.zoneinfo().unwrap().unwrap()[&NodeId(0)],
        NodeWatermarks {
            low_pages: 6,
            high_pages: 7,
            reserve_pages: 3922,
        }
    );
    for (text, what) in [
        (
            "Node 0, zone DMA\n        low      6\n",
            "no low or high watermark",
        ),
        (
            "Node x, zone DMA\n        low 1\n        high 2\n",
            "not a node number",
        ),
        (
            "Node 0, zone DMA\n        low 1\n        high many\n",
            "not a number",
        ),
        ("nothing here\n", "no zone"),
    ] {
        fs::write(dir.path().join("zoneinfo"), text).unwrap();
        let err = p.zoneinfo().unwrap_err().to_string();
        assert!(err.contains(what), "{text:?}: {err}");
    }
}

#[test]
fn old_kernel_lacks_counters_and_fields() {
    let old = ProcRoot::new(fixture("old-kernel"));
    assert_eq!(
        old.vmstat_numa().unwrap(),
        NumaVmstat {
            numa_hit: Some(3341778),
            numa_miss: Some(1204),
            numa_foreign: Some(1204),
            numa_interleave: Some(15523),
            numa_local: Some(3340112),
            numa_other: Some(2870),
            ..NumaVmstat::default()
        }
    );
    assert_eq!(old.numa_balancing().unwrap(), None);
    // 44 stat fields: processor (39) is still there.
    let s = old.stat(Pid(777)).unwrap().unwrap();
    assert_eq!(
        (s.utime_ticks, s.num_threads, s.processor),
        (88000, 2, Some(CpuId(6)))
    );
    let threads = old.threads(Pid(777)).unwrap();
    assert_eq!(threads.len(), 2);
    assert_eq!(
        (threads[1].tid, threads[1].cpu, threads[1].cpu_ticks),
        (Tid(778), Some(CpuId(3)), 88000)
    );
    assert_eq!(threads[1].allowed_cpus, cpus(0..=7));
    // numa_maps before 3.2 prints no kernelpagesize_kB.
    let maps = old.numa_maps(Pid(777)).unwrap().unwrap();
    assert_eq!(maps[1].pages_by_node, nodes(&[(0, 1024), (1, 512)]));
    assert_eq!((maps[1].page_size_kb, maps[0].start), (0, 0x40_0000));
}

#[test]
fn vmstat_without_numa_counters() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("vmstat"),
        "nr_free_pages 1320894\npgfault 53478936\n",
    )
    .unwrap();
    let p = ProcRoot::new(dir.path());
    assert_eq!(p.vmstat_numa().unwrap(), NumaVmstat::default());
    assert_eq!(p.numa_balancing().unwrap(), None);
    assert!(p.pids().unwrap().is_empty());
}

#[test]
fn malformed_stat() {
    let (_dir, root) = scratch();
    let p = ProcRoot::new(&root);
    let file = "4242/stat";
    fs::write(
        root.join(file),
        "4242 (memhog) S 1 4242 8273 0 -1 4194304 1000\n",
    )
    .unwrap();
    assert_malformed(
        p.stat(Pid(4242)),
        &root,
        file,
        "10 fields, expected at least 20",
    );
    // descendants reads every stat, so it reports the same file.
    assert_malformed(p.descendants(Pid(1)), &root, file, "expected at least 20");

    let good = fs::read_to_string(fixture("numa4/4242/stat")).unwrap();
    fs::write(root.join(file), good.replace(" 10012 601 ", " 10012 6x1 ")).unwrap();
    assert_malformed(
        p.stat(Pid(4242)),
        &root,
        file,
        "field 15 (stime): '6x1' is not a number",
    );
    fs::write(
        root.join(file),
        good.replace("(memhog) S 1 ", "(memhog) S one "),
    )
    .unwrap();
    assert_malformed(p.stat(Pid(4242)), &root, file, "field 4 (ppid)");
    fs::write(root.join(file), good.replace("(memhog) S", "(memhog) SR")).unwrap();
    assert_malformed(p.stat(Pid(4242)), &root, file, "field 3 (state)");
    fs::write(root.join(file), "4242 memhog S 1\n").unwrap();
    assert_malformed(p.stat(Pid(4242)), &root, file, "no '(comm)' field");
    fs::write(
        root.join(file),
        good.replace(" 17 2 0 0 0 ", " 17 -2 0 0 0 "),
    )
    .unwrap();
    assert_malformed(p.stat(Pid(4242)), &root, file, "field 39 (processor)");

    let task = "4242/task/4243/stat";
    fs::write(root.join(task), "4243 (memhog) R\n").unwrap();
    assert_malformed(p.threads(Pid(4242)), &root, task, "3 fields");
}

#[test]
fn malformed_status_numa_maps_smaps_vmstat() {
    let (_dir, root) = scratch();
    let p = ProcRoot::new(&root);
    let status = "4242/task/4244/status";
    fs::write(
        root.join(status),
        "Name:\tmemhog\nCpus_allowed_list:\t8-x\n",
    )
    .unwrap();
    assert_malformed(
        p.allowed_cpus(Pid(4242), Tid(4244)),
        &root,
        status,
        "Cpus_allowed_list",
    );
    fs::write(root.join(status), "Name:\tmemhog\n").unwrap();
    assert_malformed(
        p.threads(Pid(4242)),
        &root,
        status,
        "no Cpus_allowed_list line",
    );

    let maps = "4250/numa_maps";
    let good = fs::read_to_string(root.join(maps)).unwrap();
    fs::write(root.join(maps), good.replace("N3=40", "N3=forty")).unwrap();
    assert_malformed(
        p.numa_maps(Pid(4250)),
        &root,
        maps,
        "line 2: N3: 'forty' is not a number",
    );
    fs::write(root.join(maps), good.replace("N3=40", "Nx=40")).unwrap();
    assert_malformed(p.numa_maps(Pid(4250)), &root, maps, "'Nx' is not a node");
    fs::write(
        root.join(maps),
        good.replace("5601a2c00000", "zz01a2c00000"),
    )
    .unwrap();
    assert_malformed(
        p.numa_maps(Pid(4250)),
        &root,
        maps,
        "line 1: 'zz01a2c00000' is not a hex address",
    );
    fs::write(
        root.join(maps),
        good.replace("kernelpagesize_kB=4\n", "kernelpagesize_kB=\n"),
    )
    .unwrap();
    assert_malformed(p.numa_maps(Pid(4250)), &root, maps, "kernelpagesize_kB");

    let rollup = "4250/smaps_rollup";
    let good = fs::read_to_string(root.join(rollup)).unwrap();
    let broken: String = good
        .lines()
        .map(|l| {
            if l.starts_with("AnonHugePages:") {
                "AnonHugePages:  0 MB\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    fs::write(root.join(rollup), broken).unwrap();
    assert_malformed(p.thp_bytes(Pid(4250)), &root, rollup, "AnonHugePages");

    let vmstat = "vmstat";
    fs::write(root.join(vmstat), "numa_hit 12\nnuma_miss lots\n").unwrap();
    assert_malformed(
        p.vmstat_numa(),
        &root,
        vmstat,
        "numa_miss: 'lots' is not a number",
    );
    fs::write(root.join("sys/kernel/numa_balancing"), "on\n").unwrap();
    assert_malformed(
        p.numa_balancing(),
        &root,
        "sys/kernel/numa_balancing",
        "'on'",
    );
}

#[test]
fn missing_root_and_vmstat_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let nothing = dir.path().join("nothing");
    let p = ProcRoot::new(&nothing);
    for err in [p.pids().unwrap_err(), p.vmstat_numa().unwrap_err()] {
        assert!(matches!(err, ProcError::Read { .. }), "{err:?}");
        assert!(
            err.to_string().contains(&nothing.display().to_string()),
            "{err}"
        );
    }
    assert!(p.find_by_comm("x").is_err());
    assert!(p.descendants(Pid(1)).is_err());
    // Per-process reads under it are just "gone".
    assert_eq!(p.stat(Pid(1)).unwrap(), None);
}

/// This machine's /proc, read for the test process itself.
#[test]
fn live_proc_self() {
    let p = ProcRoot::new("/proc");
    let me = Pid(std::process::id() as i32);
    assert!(p.pids().unwrap().contains(&me));

    let comm = p.comm(me).unwrap().unwrap();
    let stat = p.stat(me).unwrap().unwrap();
    assert_eq!((stat.pid, &stat.comm), (me, &comm));
    assert!(!comm.is_empty());
    assert!(stat.num_threads >= 1);
    assert!(stat.processor.is_some());

    let threads = p.threads(me).unwrap();
    assert!(!threads.is_empty());
    assert!(threads.iter().any(|t| t.tid == Tid(me.0)));
    assert!(threads.iter().any(|t| t.cpu.is_some()));
    assert!(threads.iter().all(|t| !t.allowed_cpus.is_empty()));

    let maps = p.numa_maps(me).unwrap().unwrap();
    let on_node0: u64 = maps
        .iter()
        .flat_map(|m| &m.pages_by_node)
        .filter(|(n, _)| *n == NodeId(0))
        .map(|&(_, c)| c)
        .sum();
    assert!(on_node0 > 0, "no pages on node 0 in {maps:?}");
    assert!(maps.iter().any(|m| m.anon && m.page_size_kb > 0));

    // This kernel's zoneinfo parses, with watermarks for node 0.
    let marks = p.zoneinfo().unwrap().unwrap();
    assert!(marks[&NodeId(0)].high_pages > marks[&NodeId(0)].low_pages);

    assert!(p.thp_bytes(me).unwrap().is_some());
    assert!(p.vmstat_numa().unwrap().numa_hit.is_some());
    assert!(p.descendants(stat.ppid).unwrap().contains(&me));
    assert!(p.find_by_comm(&comm).unwrap().contains(&me));
}
