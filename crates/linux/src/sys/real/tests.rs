use super::*;

#[test]
fn query_own_pages_with_move_pages() {
    // Our own stack page is resident, so the query gives a node (0 on a one-node machine).
    let x = [0u8; 4096];
    let addr = (x.as_ptr() as u64) & !4095;
    let mut status = [i32::MIN];
    let mut sys = RealSys::new();
    sys.move_pages(Pid(0), &[addr], None, &mut status).unwrap();
    assert!(status[0] >= 0, "status {}", status[0]);
    assert_eq!(
        sys.move_pages(Pid(0), &[addr], None, &mut []),
        Err(Errno::EINVAL)
    );
}

#[test]
fn move_pages_of_an_exited_unreaped_process_is_esrch() {
    let mut sys = RealSys::new();
    let pid = sys.spawn(&["true".into()], &SpawnSetup::default()).unwrap();
    // Until it is reaped, the exited child is a zombie: its task is found, its memory is
    // gone, and the kernel says EINVAL.
    let zombie = (0..2000).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::read_to_string(format!("/proc/{}/stat", pid.0)).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
    });
    assert!(zombie, "the child never became a zombie");
    let mut status = [i32::MIN];
    assert_eq!(
        sys.move_pages(pid, &[0x10000], None, &mut status),
        Err(Errno::ESRCH)
    );
    assert_eq!(sys.try_wait(pid).unwrap(), Some(ExitStatus::Code(0)));
    assert_eq!(
        sys.move_pages(pid, &[0x10000], None, &mut status),
        Err(Errno::ESRCH)
    );
}

#[test]
fn mbind_own_buffer() {
    let mut buf = vec![0u8; 64 << 10];
    let addr = (buf.as_ptr() as u64).next_multiple_of(4096);
    let mut sys = RealSys::new();
    let node0 = NodeMask::of([0]);
    sys.mbind(addr, 16 << 10, MemPolicyMode::Bind, &node0, false)
        .unwrap();
    let i = (addr - buf.as_ptr() as u64) as usize;
    buf[i] = 1;
    let mut status = [i32::MIN];
    sys.move_pages(Pid(0), &[addr], None, &mut status).unwrap();
    assert_eq!(status[0], 0);
    // Unaligned, and a node this machine does not have.
    assert_eq!(
        sys.mbind(addr + 1, 4096, MemPolicyMode::Bind, &node0, false),
        Err(Errno::EINVAL)
    );
    let far = NodeMask::of([63]);
    assert!(
        sys.mbind(addr, 4096, MemPolicyMode::Bind, &far, false)
            .is_err()
    );
    // Interleave cannot take MPOL_F_NUMA_BALANCING.
    assert_eq!(
        sys.mbind(addr, 4096, MemPolicyMode::Interleave, &node0, true),
        Err(Errno::EINVAL)
    );
    sys.mbind(
        addr,
        16 << 10,
        MemPolicyMode::Default,
        &NodeMask::of([]),
        false,
    )
    .unwrap();
}

#[test]
fn spawn_wait_and_exit_codes() {
    let mut sys = RealSys::new();
    let pid = sys
        .spawn(
            &["sh".into(), "-c".into(), "exit 3".into()],
            &SpawnSetup::default(),
        )
        .unwrap();
    let status = loop {
        if let Some(s) = sys.try_wait(pid).unwrap() {
            break s;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert_eq!(status, ExitStatus::Code(3));
    assert_eq!(sys.try_wait(pid), Err(Errno::ESRCH));
    assert_eq!(
        sys.spawn(&["/no/such/program".into()], &SpawnSetup::default()),
        Err(Errno::ENOENT)
    );
    // A memory policy bound to node 0 is accepted on any NUMA kernel.
    let pid = sys
        .spawn(
            &["true".into()],
            &SpawnSetup {
                policy: Some((MemPolicyMode::Bind, NodeMask::of([0]))),
                cpus: Some(vec![CpuId(0)]),
                ..SpawnSetup::default()
            },
        )
        .unwrap();
    while sys.try_wait(pid).unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn page_fault_sampling_on_own_process() {
    // The software page-fault event works without a PMU (linux-mechanisms.md, section 3).
    let mut sys = RealSys::new();
    let attr = PerfAttr {
        kind: perf::bindings::PERF_TYPE_SOFTWARE,
        config: u64::from(perf::bindings::PERF_COUNT_SW_PAGE_FAULTS),
        sample_period: 1,
        sample_type: u64::from(
            perf::bindings::PERF_SAMPLE_TID
                | perf::bindings::PERF_SAMPLE_ADDR
                | perf::bindings::PERF_SAMPLE_CPU,
        ),
        ring_pages: 8,
        ..PerfAttr::default()
    };
    let fd = match sys.perf_open(&attr, Pid(0), -1) {
        Ok(fd) => fd,
        // perf_event_paranoid may forbid it; that is a configuration, not a bug.
        Err(e) if e == Errno::EACCES || e == Errno::EPERM => return,
        Err(e) => panic!("{e}"),
    };
    // Fresh pages to touch: 40 MiB is above glibc's largest dynamic mmap threshold
    // (32 MiB), so the buffer is a new mapping, not heap pages another test faulted in.
    let v: Vec<u8> = vec![1; 40 << 20];
    assert_eq!(
        v.iter().step_by(4096).map(|&b| u64::from(b)).sum::<u64>(),
        10 * 1024
    );
    let mut bytes = Vec::new();
    sys.perf_drain(fd, &mut bytes).unwrap();
    sys.perf_close(fd);
    assert!(bytes.len() >= 8 * 16, "{} bytes of records", bytes.len());
}

#[test]
fn counters_read_with_their_enabled_and_running_times() {
    // A software counter (page faults) reads like a hardware one, without a PMU.
    let mut sys = RealSys::new();
    let attr = PerfAttr {
        kind: perf::bindings::PERF_TYPE_SOFTWARE,
        config: u64::from(perf::bindings::PERF_COUNT_SW_PAGE_FAULTS),
        inherit: true,
        ..PerfAttr::default()
    };
    let fd = match sys.perf_open(&attr, Pid(0), -1) {
        Ok(fd) => fd,
        Err(e) if e == Errno::EACCES || e == Errno::EPERM => return,
        Err(e) => panic!("{e}"),
    };
    let before = sys.perf_read(fd).unwrap();
    // Touch 64 fresh pages: an allocation over glibc's largest mmap threshold (32 MiB on
    // 64-bit) is a fresh mapping, where a smaller one may reuse heap pages that other
    // tests of this process already faulted in.
    let mut v: Vec<u8> = Vec::with_capacity(40 << 20);
    for page in v.spare_capacity_mut().chunks_mut(4096).take(64) {
        page[0].write(1);
    }
    let after = sys.perf_read(fd).unwrap();
    drop(v);
    sys.perf_close(fd);
    assert!(after.value >= before.value + 32, "{before:?} {after:?}");
    assert!(
        after.enabled_ns > 0 && after.running_ns <= after.enabled_ns,
        "{after:?}"
    );
    assert!(after.scaled_since(&before) >= 32);
}

#[test]
fn own_usage_is_measured() {
    let mut sys = RealSys::new();
    assert!(sys.own_peak_rss_bytes() > 0);
    let mut x = 0u64;
    for i in 0..1_000_000u64 {
        x = x.wrapping_mul(31).wrapping_add(i);
    }
    assert!(x != 1 && sys.own_cpu_time_ns() > 0);
}
