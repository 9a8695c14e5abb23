//! The precise sampler on the fake kernel, over the PMU fixture trees: what it opens (IBS op on
//! a Zen 4, PEBS with its group leader on a Sapphire Rapids, SPE with its AUX buffer on a
//! Neoverse N1), the samples it makes of the
//! records the kernel would write, and the fallback to page faults when it cannot open.

use super::*;
use crate::machine::{LinuxMachine, LiveConfig};
use crate::sys::{Call, FakeSys};
use rondpoint_engine::Machine;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{Capability, SamplingRequest, Support};
use std::path::PathBuf;

const MEMHOG: Pid = Pid(4242);
const HEAP: u64 = 0x55d4_ca1f_2000;
/// ibs_op's `type` in the Zen 4 fixture.
const IBS_TYPE: u32 = 11;

fn machine(fixture: &str) -> LinuxMachine<FakeSys> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = LiveConfig {
        sysfs_root: root.join("tests/fixtures/pmu").join(fixture),
        proc_root: root.join("../../fixtures/procfs/numa4"),
        ring_pages: 8,
        ..LiveConfig::default()
    };
    // 4 nodes x 4 CPUs: CPUs 0-3 on node 0, 4-7 node 1, 8-11 node 2, 12-15 node 3.
    let topo = TopologyBuilder::new(4).cores_per_llc(4).build().unwrap();
    let sys = FakeSys::new().with_process(MEMHOG.0, &[(HEAP, 0), (HEAP + 4096, 1)]);
    LinuxMachine::to_manage(sys, topo, config, vec![MEMHOG])
}

fn sampling(period: u64) -> SamplingRequest {
    SamplingRequest {
        period_cycles: Some(period),
        ..SamplingRequest::NONE
    }
}

/// The perf_open calls: (attr, pid, cpu).
fn opens(m: &LinuxMachine<FakeSys>) -> Vec<(PerfAttr, i32, i32)> {
    m.sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpen { attr, pid, cpu } => Some((attr.clone(), pid.0, *cpu)),
            _ => None,
        })
        .collect()
}

/// A PERF_RECORD_SAMPLE of TID | ADDR | CPU | RAW | DATA_SRC, in the kernel's order
/// (perf_output_sample: tid, addr, cpu, raw, data_src), the raw part padded to 8 bytes with
/// its u32 size.
fn ibs_record(pid: u32, addr: u64, cpu: u32, raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&addr.to_ne_bytes());
    body.extend_from_slice(&cpu.to_ne_bytes());
    body.extend_from_slice(&0u32.to_ne_bytes());
    let padded = (raw.len() + 4).next_multiple_of(8) - 4;
    body.extend_from_slice(&(padded as u32).to_ne_bytes());
    body.extend_from_slice(raw);
    body.resize(body.len() + padded - raw.len(), 0);
    body.extend_from_slice(&0u64.to_ne_bytes());
    let mut b = Vec::new();
    b.extend_from_slice(&9u32.to_ne_bytes());
    b.extend_from_slice(&0u16.to_ne_bytes());
    b.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
    b.extend(body);
    b
}

/// IBS op raw registers (caps, then IbsOpCtl, Rip, Data, Data2, Data3, DcLinAd, DcPhysAd): a
/// load or store at `lin`, missing the data cache and served from DataSrc 3 (DRAM), remote
/// or not, after `latency` cycles.
fn ibs_raw(load: bool, store: bool, lin: u64, remote: bool, latency: u16) -> Vec<u8> {
    let data2 = 3 | (u64::from(remote) << 4);
    let data3 = u64::from(load)
        | (u64::from(store) << 1)
        | (1 << 7)
        | (1 << 17)
        | (u64::from(latency) << 32);
    let mut raw = 0u32.to_le_bytes().to_vec();
    for r in [0u64, 0x401000, 0, data2, data3, lin, 0x1234_5000] {
        raw.extend_from_slice(&r.to_le_bytes());
    }
    raw
}

#[test]
fn ibs_op_opens_on_every_cpu_system_wide_instead_of_page_faults() {
    let mut m = machine("zen4-genoa");
    assert_eq!(
        m.capabilities().support(Capability::AccessSamples),
        Support::Full
    );
    m.set_sampling(&sampling(65_000));
    let opened = opens(&m);
    // The probe's test open on CPU 0, then one per CPU, and no page-fault event.
    let ibs: Vec<&(PerfAttr, i32, i32)> = opened.iter().filter(|o| o.0.kind == IBS_TYPE).collect();
    assert_eq!(ibs.len(), 1 + 16, "{opened:?}");
    assert!(ibs.iter().all(|o| o.1 == -1 && !o.0.inherit));
    let cpus: Vec<i32> = ibs[1..].iter().map(|o| o.2).collect();
    assert_eq!(cpus, (0..16).collect::<Vec<_>>());
    // cnt_ctl (config:19): dispatched ops; the period rounded down to a multiple of 16.
    assert_eq!(ibs[1].0.config, 1 << 19);
    assert_eq!(ibs[1].0.sample_period, 64_992);
    assert!(
        opened.iter().all(|o| o.0.kind != 1 || o.1 != MEMHOG.0),
        "no page-fault sampler"
    );
    assert!(m.signals.sampler.as_deref().unwrap().contains("ibs-op"));
}

#[test]
fn ibs_records_become_samples_of_managed_processes_with_their_access() {
    let mut m = machine("zen4-genoa");
    m.set_sampling(&sampling(65_000));
    // The first sampling event is fd 101 (fd 100 was the probe's); CPU 5 is on node 1.
    let mut ring = ibs_record(
        4242,
        HEAP + 8,
        5,
        &ibs_raw(true, false, HEAP + 8, true, 300),
    );
    ring.extend(ibs_record(
        4242,
        HEAP + 4096,
        5,
        &ibs_raw(false, true, HEAP + 4096, false, 0),
    ));
    // Not managed: dropped. Neither load nor store: dropped.
    ring.extend(ibs_record(
        999,
        HEAP,
        5,
        &ibs_raw(true, false, HEAP, false, 9),
    ));
    ring.extend(ibs_record(4242, 0, 5, &ibs_raw(false, false, 0, false, 0)));
    // An access the process made in the kernel (IBS cannot exclude it): dropped.
    let kernel = 0xffff_8880_0000_1000;
    ring.extend(ibs_record(
        4242,
        kernel,
        5,
        &ibs_raw(true, false, kernel, false, 9),
    ));
    // Kernels before 6.1 leave PERF_SAMPLE_ADDR 0: the address comes from IbsDcLinAd.
    ring.extend(ibs_record(
        4242,
        0,
        5,
        &ibs_raw(true, false, HEAP + 16, false, 40),
    ));
    m.sys.ring_bytes.insert(101, ring);
    let obs = m.observe(0).unwrap();
    let got: Vec<_> = obs
        .samples
        .iter()
        .map(|s| (s.addr, s.kind, s.latency_cycles, s.dram, s.node.0, s.source))
        .collect();
    assert_eq!(
        got,
        [
            (
                HEAP + 8,
                AccessKind::Read,
                Some(300),
                Some(true),
                1,
                SampleSource::Ibs
            ),
            (
                HEAP + 4096,
                AccessKind::Write,
                None,
                None,
                1,
                SampleSource::Ibs
            ),
            (
                HEAP + 16,
                AccessKind::Read,
                Some(40),
                Some(true),
                1,
                SampleSource::Ibs
            ),
        ]
    );
    // Their pages' nodes, as for page-fault samples.
    let homes: Vec<Option<u16>> = obs
        .samples
        .iter()
        .map(|s| s.home_node.map(|n| n.0))
        .collect();
    assert_eq!(homes, [Some(0), Some(1), Some(0)]);
}

#[test]
fn the_policy_s_period_follows_without_reopening() {
    let mut m = machine("zen4-genoa");
    m.set_sampling(&sampling(65_000));
    let before = opens(&m).len();
    m.set_sampling(&sampling(130_000));
    assert_eq!(opens(&m).len(), before, "nothing opened again");
    let periods: Vec<u64> = m
        .sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfSetPeriod { period, .. } => Some(*period),
            _ => None,
        })
        .collect();
    assert_eq!(periods, vec![130_000; 16]);
    // No sampling asked: every event closes.
    m.set_sampling(&SamplingRequest::NONE);
    assert_eq!(m.sys().calls_named("perf_close").len(), 16);
}

#[test]
fn pebs_loads_open_under_their_aux_leader_and_stores_on_their_own() {
    let mut m = machine("spr-xeon-2s");
    m.set_sampling(&sampling(20_000));
    let members: Vec<(PerfAttr, i32, i32, i32)> = m
        .sys()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::PerfOpenMember {
                attr,
                pid,
                cpu,
                leader,
            } => Some((attr.clone(), pid.0, *cpu, leader.0)),
            _ => None,
        })
        .collect();
    assert_eq!(members.len(), 16, "one per CPU");
    // Each member's leader is the open just before it: mem-loads-aux, counting.
    for (attr, pid, cpu, leader) in &members {
        assert_eq!((*pid, attr.config & 0xffff), (-1, 0x01cd));
        assert_eq!(attr.precise_ip, 2);
        let call = m
            .sys()
            .calls
            .iter()
            .position(|c| matches!(c, Call::PerfOpenMember { leader: l, cpu: c2, .. } if l.0 == *leader && c2 == cpu))
            .unwrap();
        match &m.sys().calls[call - 1] {
            Call::PerfOpen {
                attr: l, cpu: lc, ..
            } => {
                assert_eq!((l.config & 0xffff, l.sample_period, lc), (0x8203, 0, cpu));
            }
            other => panic!("{other:?}"),
        }
    }
    let stores = opens(&m)
        .into_iter()
        .filter(|o| o.0.config & 0xffff == 0x02cd)
        .count();
    assert_eq!(stores, 16);
}

#[test]
fn a_refused_open_falls_back_to_page_faults_and_says_why() {
    let mut m = machine("zen4-genoa");
    m.sys
        .perf_refused
        .insert(IBS_TYPE, crate::sys::Errno::EACCES);
    let access = m.capabilities().support(Capability::AccessSamples);
    let Support::Estimated(why) = access else {
        panic!("{access:?}")
    };
    assert!(why.contains("CAP_PERFMON"), "{why}");
    m.set_sampling(&sampling(65_000));
    let opened = opens(&m);
    assert!(
        opened.iter().any(|o| o.0.kind == 1 && o.1 == MEMHOG.0),
        "page faults stand in: {opened:?}"
    );
}

/// arm_spe_0's `type` in the Neoverse N1 fixture.
const SPE_TYPE: u32 = 9;

/// A PERF_RECORD_SWITCH_CPU_WIDE switching `pid`/`tid` in at `time`, with the sample id of
/// TID | TIME | CPU.
fn switch_in(pid: u32, tid: u32, time: u64, cpu: u32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&15u32.to_ne_bytes());
    b.extend_from_slice(&0u16.to_ne_bytes());
    b.extend_from_slice(&40u16.to_ne_bytes());
    for v in [0u32, 0, pid, tid] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    b.extend_from_slice(&time.to_ne_bytes());
    b.extend_from_slice(&cpu.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b
}

/// An SPE record: data address, load or store, total latency, events, timestamp.
fn spe_record(va: u64, store: bool, latency: u16, events: u16, ts: u64) -> Vec<u8> {
    let mut b = vec![0xb2];
    b.extend_from_slice(&va.to_le_bytes());
    b.extend([0x98]);
    b.extend_from_slice(&latency.to_le_bytes());
    b.extend([0x49, u8::from(store), 0x52]);
    b.extend_from_slice(&events.to_le_bytes());
    b.push(0x71);
    b.extend_from_slice(&ts.to_le_bytes());
    b
}

#[test]
fn arm_spe_opens_on_every_cpu_with_an_aux_buffer_and_context_switches() {
    let mut m = machine("neoverse-n1");
    assert_eq!(
        m.capabilities().support(Capability::AccessSamples),
        Support::Full
    );
    m.set_sampling(&sampling(65_536));
    let spe: Vec<_> = opens(&m)
        .into_iter()
        .filter(|o| o.0.kind == SPE_TYPE)
        .collect();
    assert_eq!(spe.len(), 1 + 16);
    let cpus: Vec<i32> = spe[1..].iter().map(|o| o.2).collect();
    assert_eq!(cpus, (0..16).collect::<Vec<_>>());
    let a = &spe[1].0;
    assert_eq!(
        a.config,
        1 | 1 << 33 | 1 << 34,
        "ts_enable, load and store filters"
    );
    assert!(a.context_switch && a.aux_pages > 0 && a.ring_pages > 0);
    assert_eq!(
        a.sample_type,
        SampleFormat::TID | SampleFormat::TIME | SampleFormat::CPU
    );
    assert_eq!(a.sample_period, 65_536);
    assert!(m.signals.sampler.as_deref().unwrap().contains("spe"));
}

#[test]
fn spe_records_become_samples_of_the_task_that_ran_when_they_were_written() {
    let mut m = machine("neoverse-n1");
    m.set_sampling(&sampling(65_536));
    m.sys.time_conversion = Some(crate::sys::TimeConversion {
        zero: 0,
        mult: 1,
        shift: 0,
        short: None,
    });
    // fd 101 samples CPU 0 (node 0); fd 106, CPU 5 (node 1).
    let mut ring = switch_in(4242, 4243, 100, 0);
    ring.extend(switch_in(999, 999, 200, 0));
    m.sys.ring_bytes.insert(101, ring);
    let mut aux = spe_record(HEAP + 8, false, 300, 0x204, 50); // before any switch
    aux.extend(spe_record(HEAP + 8, false, 300, 0x204, 150)); // LLC refill
    aux.extend(spe_record(HEAP + 4096, true, 12, 0x004, 160));
    aux.extend(spe_record(HEAP + 16, false, 9, 0x004, 250)); // pid 999: not managed
    m.sys.aux_bytes.insert(101, aux);
    m.sys.ring_bytes.insert(106, switch_in(4242, 4242, 10, 5));
    // Cut in the middle: read whole at the next drain.
    let later = spe_record(HEAP + 4096, false, 500, 0x604, 20);
    m.sys.aux_bytes.insert(106, later[..7].to_vec());
    let obs = m.observe(0).unwrap();
    let got: Vec<_> = obs
        .samples
        .iter()
        .map(|s| (s.addr, s.kind, s.latency_cycles, s.dram, s.node.0, s.tid.0))
        .collect();
    assert_eq!(
        got,
        [
            (HEAP + 8, AccessKind::Read, Some(300), Some(true), 0, 4243),
            (
                HEAP + 4096,
                AccessKind::Write,
                Some(12),
                Some(false),
                0,
                4243
            ),
        ]
    );
    assert!(obs.samples.iter().all(|s| s.source == SampleSource::Spe));
    m.sys.aux_bytes.insert(106, later[7..].to_vec());
    let obs = m.observe(1).unwrap();
    let got: Vec<_> = obs.samples.iter().map(|s| (s.addr, s.node.0)).collect();
    assert_eq!(got, [(HEAP + 4096, 1)]);
    // The record written before any switch was seen is counted, not guessed.
    assert_eq!(m.precise_losses().0, 1);
    assert_eq!(m.signals.sampler_error, None);
}

#[test]
fn spe_records_without_a_clock_conversion_are_lost_and_said_so() {
    let mut m = machine("neoverse-n1");
    m.set_sampling(&sampling(65_536));
    m.sys.ring_bytes.insert(101, switch_in(4242, 4242, 100, 0));
    m.sys
        .aux_bytes
        .insert(101, spe_record(HEAP + 8, false, 300, 0x204, 150));
    let obs = m.observe(0).unwrap();
    assert!(obs.samples.is_empty());
    assert_eq!(m.precise_losses().0, 1);
    let why = m.signals.sampler_error.clone().unwrap();
    assert!(why.contains("cap_user_time_zero"), "{why}");
}

#[test]
fn periods_stay_in_range_and_ibs_takes_multiples_of_16() {
    assert_eq!(period_for(Role::Ibs, 65_000), 64_992);
    assert_eq!(period_for(Role::Ibs, 10), MIN_PERIOD);
    assert_eq!(period_for(Role::Loads, 1 << 40), MAX_PERIOD);
    assert_eq!(period_for(Role::Ibs, 1 << 40) % 16, 0);
}
