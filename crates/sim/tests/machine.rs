//! Behaviour of the simulated machine: allocation policies and capacity, actions and their
//! outcomes, what policies can see, determinism, and refusal of impossible scenarios.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_engine::{EngineConfig, Machine, VirtualClock};
use rondpoint_model::{
    Action, HintingScan, MemPolicy, NodeId, Observation, OutcomeStatus, PageRange, PageSize, Pid,
    ProcessInfo, SampleSource, SamplingRequest, ThreadCpu, Tid, Topology,
};
use rondpoint_policy_api::Policy;
use rondpoint_sim::machine_preset::MachinePreset;
use rondpoint_sim::scenario::Scenario;
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, SimError, SimMachine};

/// 4 nodes x 2 cores, 1 GiB each; distances make node 0's fallback order 0, 1, 2, 3.
fn small() -> MachineSpec {
    let p: MachinePreset = toml::from_str(
        r#"
name = "small"
description = "test machine"
nodes = 4
cores_per_node = 2
freq_ghz = 2.0
llc_bytes = 4194304
mem_bytes_per_node = 1073741824
mc_bandwidth_gbs = 10.0
link_bandwidth_gbs = 5.0
distances = [[10, 16, 16, 22], [16, 10, 22, 16], [16, 22, 10, 16], [22, 16, 16, 10]]
[latency]
model = "hops"
local_ns = 80.0
hop_ns = 30.0
"#,
    )
    .unwrap();
    MachineSpec::from_preset(&p).unwrap()
}

fn scenario(threads: u32, size_mib: f64, first_touch: &str, extra: &str) -> Scenario {
    toml::from_str(&format!(
        r#"
name = "t"
description = "test"
[[app]]
name = "a"
threads = {threads}
instructions = 1e9
cpi_base = 1.0
mlp = 4.0
mpki = 10.0
mrc_ref_bytes = 1048576
{extra}
[[app.region]]
name = "r"
size_mib = {size_mib}
first_touch = {first_touch}
pattern = "shared-uniform"
share = 1.0
write_ratio = 0.1
"#
    ))
    .unwrap()
}

fn start(m: &mut SimMachine, policy: MemPolicy) {
    let out = m
        .apply(&[Action::SetMemPolicy {
            pid: Pid(1000),
            policy,
        }])
        .unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Applied);
    m.observe(10_000_000).unwrap();
}

fn base_pages(mib: u64) -> u64 {
    mib * 256
}

#[test]
fn first_touch_spills_in_the_static_fallback_order() {
    // 1.5 GiB touched from node 0: node 0 fills (less the OS reserve), the rest goes to node 1,
    // the next in node 0's fallback order, not spread ([Choe21 Figure 1]).
    let mut m = SimMachine::new(
        small(),
        &scenario(1, 1536.0, "\"main\"", ""),
        SimConfig::default(),
    )
    .unwrap();
    start(&mut m, MemPolicy::Default);
    let p = m.pages_per_node();
    assert_eq!(p.iter().sum::<u64>(), base_pages(1536));
    let cap = (1073741824.0 * 0.97 / 4096.0) as u64;
    assert!(p[0] <= cap && p[0] > cap - 2, "{p:?}");
    assert_eq!(p[1], base_pages(1536) - p[0]);
    assert_eq!((p[2], p[3]), (0, 0));
}

#[test]
fn interleave_bind_preferred_and_weighted() {
    let mk = || {
        SimMachine::new(
            small(),
            &scenario(1, 400.0, "\"main\"", ""),
            SimConfig::default(),
        )
        .unwrap()
    };
    let all: Vec<NodeId> = (0..4).map(NodeId).collect();

    let mut m = mk();
    start(&mut m, MemPolicy::Interleave { nodes: all });
    assert_eq!(m.pages_per_node(), vec![base_pages(100); 4]);

    let mut m = mk();
    start(
        &mut m,
        MemPolicy::Bind {
            nodes: vec![NodeId(3)],
        },
    );
    assert_eq!(m.pages_per_node(), vec![0, 0, 0, base_pages(400)]);

    let mut m = mk();
    start(
        &mut m,
        MemPolicy::PreferredMany {
            nodes: vec![NodeId(2), NodeId(3)],
        },
    );
    // Nearest of the preferred nodes to the toucher (node 0): node 2 (distance 16).
    assert_eq!(m.pages_per_node(), vec![0, 0, base_pages(400), 0]);

    let mut m = mk();
    start(
        &mut m,
        MemPolicy::WeightedInterleave {
            weights: vec![(NodeId(0), 3), (NodeId(1), 1)],
        },
    );
    assert_eq!(
        m.pages_per_node(),
        vec![base_pages(300), base_pages(100), 0, 0]
    );
}

#[test]
fn partitioned_first_touch_puts_each_block_on_its_thread_node() {
    let mut m = SimMachine::new(
        small(),
        &scenario(8, 800.0, "\"partitioned\"", ""),
        SimConfig::default(),
    )
    .unwrap();
    start(&mut m, MemPolicy::Default);
    // 8 threads spread round-robin over 4 nodes: each node gets two blocks of 100 MiB.
    assert_eq!(m.pages_per_node(), vec![base_pages(200); 4]);
}

#[test]
fn impossible_scenarios_are_explained() {
    let err = SimMachine::new(
        small(),
        &scenario(9, 10.0, "\"main\"", ""),
        SimConfig::default(),
    )
    .unwrap_err();
    let SimError::Impossible { what, .. } = err;
    assert!(what.contains("wants 9 threads"), "{what}");
    let err = SimMachine::new(
        small(),
        &scenario(1, 5000.0, "\"main\"", ""),
        SimConfig::default(),
    )
    .unwrap_err();
    let SimError::Impossible { what, .. } = err;
    assert!(what.contains("exceeds the memory"), "{what}");
    let err = SimMachine::new(
        small(),
        &scenario(1, 10.0, "\"main\"", "placement = { node = 7 }"),
        SimConfig::default(),
    )
    .unwrap_err();
    let SimError::Impossible { what, .. } = err;
    assert!(what.contains("node 7"), "{what}");
}

fn region_base(m: &SimMachine) -> u64 {
    m.regions(Pid(1000))[0].1.start
}

#[test]
fn migrate_interleave_and_their_outcomes() {
    let mut m = SimMachine::new(
        small(),
        &scenario(1, 8.0, "\"main\"", ""),
        SimConfig::default(),
    )
    .unwrap();
    start(&mut m, MemPolicy::Default);
    let base = region_base(&m);
    let range = PageRange::new(Pid(1000), base, 2048, PageSize::Base4K).unwrap();
    let out = m
        .apply(&[Action::MigratePages {
            range,
            to: NodeId(2),
        }])
        .unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Applied);
    assert_eq!((out[0].pages_done, out[0].pages_moved), (2048, 2048));
    assert_eq!(out[0].bytes_copied, 8 << 20);
    assert_eq!(m.pages_per_node(), vec![0, 0, 2048, 0]);
    // Interleaving them over the four nodes leaves a quarter where they are: done, not moved.
    let out = m
        .apply(&[Action::Interleave {
            range,
            nodes: (0..4).map(NodeId).collect(),
        }])
        .unwrap();
    assert_eq!((out[0].pages_done, out[0].pages_moved), (2048, 1536));
    assert_eq!(out[0].bytes_copied, 1536 * 4096);
    assert_eq!(m.pages_per_node(), vec![512; 4]);
    // A range past the region fails page by page with EFAULT; an unknown process is skipped.
    let outside = PageRange::new(Pid(1000), base + (8 << 20), 4, PageSize::Base4K).unwrap();
    let stray = PageRange::new(Pid(42), base, 1, PageSize::Base4K).unwrap();
    let out = m
        .apply(&[
            Action::MigratePages {
                range: outside,
                to: NodeId(1),
            },
            Action::MigratePages {
                range: stray,
                to: NodeId(1),
            },
            Action::MigratePages {
                range,
                to: NodeId(9),
            },
        ])
        .unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Failed);
    assert_eq!(out[0].failures, vec![("EFAULT".to_string(), 4)]);
    assert_eq!(out[1].status, OutcomeStatus::Skipped);
    assert_eq!(out[2].status, OutcomeStatus::Failed);
}

#[test]
fn thp_regions_move_whole_huge_pages() {
    let s: Scenario = {
        let mut s = scenario(1, 8.0, "\"main\"", "");
        s.apps[0].regions[0].page_size = PageSize::Huge2M;
        s
    };
    let mut m = SimMachine::new(small(), &s, SimConfig::default()).unwrap();
    start(&mut m, MemPolicy::Default);
    let base = region_base(&m);
    // A 4 KiB-granular interleave of a THP-backed region: every request lands on the huge page
    // holding it, so each huge page ends on the node of the last request for it — not spread.
    let small_pages = PageRange::new(Pid(1000), base, 2048, PageSize::Base4K).unwrap();
    m.apply(&[Action::Interleave {
        range: small_pages,
        nodes: (0..4).map(NodeId).collect(),
    }])
    .unwrap();
    assert_eq!(
        m.pages_per_node(),
        vec![0, 0, 0, 2048],
        "all on the last request's node"
    );
    // At 2 MiB granularity the same request spreads the four huge pages.
    let huge = PageRange::new(Pid(1000), base, 4, PageSize::Huge2M).unwrap();
    m.apply(&[Action::Interleave {
        range: huge,
        nodes: (0..4).map(NodeId).collect(),
    }])
    .unwrap();
    assert_eq!(m.pages_per_node(), vec![512; 4]);
}

#[test]
fn replication_costs_memory_and_collapses_on_writes() {
    let mut m = SimMachine::new(
        small(),
        &scenario(4, 4.0, "\"main\"", ""),
        SimConfig::default(),
    )
    .unwrap();
    start(&mut m, MemPolicy::Default);
    let base = region_base(&m);
    let range = PageRange::new(Pid(1000), base, 1024, PageSize::Base4K).unwrap();
    let free_before = m.observe(20_000_000).unwrap().memory[1].free_bytes;
    let out = m
        .apply(&[Action::Replicate {
            range,
            nodes: (0..4).map(NodeId).collect(),
        }])
        .unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Applied);
    assert_eq!(out[0].bytes_copied, 3 * (4 << 20));
    let obs = m.observe(30_000_000).unwrap();
    assert!(obs.memory[1].free_bytes <= free_before - (4 << 20) || m.totals().collapses > 0);
    // The region is written (write_ratio 0.1): replicas collapse within a second.
    m.observe(1_000_000_000).unwrap();
    assert!(m.totals().collapses > 0);
    assert_eq!(
        m.pages_per_node().iter().sum::<u64>(),
        1024,
        "one copy per page again"
    );
    // Each page collapsed onto its writer's node (the four threads are on four nodes), not
    // back onto the first node, where the main thread first touched them all.
    let per_node = m.pages_per_node();
    assert!(per_node.iter().all(|&p| p > 100), "{per_node:?}");
}

#[test]
fn pin_thread_and_move_application() {
    let mut m = SimMachine::new(
        small(),
        &scenario(2, 8.0, "\"main\"", ""),
        SimConfig::default(),
    )
    .unwrap();
    start(&mut m, MemPolicy::Default);
    let procs = m.processes();
    let t0 = procs[0].threads[0].tid;
    assert_eq!(procs[0].threads[0].node, NodeId(0));
    // CPUs are numbered node by node: node 3 holds CPUs 6 and 7.
    let out = m
        .apply(&[Action::PinThread {
            pid: Pid(1000),
            tid: t0,
            cpus: vec![rondpoint_model::CpuId(6)],
        }])
        .unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Applied);
    assert_eq!(m.processes()[0].threads[0].node, NodeId(3));
    let out = m
        .apply(&[Action::PinThread {
            pid: Pid(1000),
            tid: Tid(5),
            cpus: vec![],
        }])
        .unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Skipped);
    let out = m
        .apply(&[Action::MoveApplication {
            pid: Pid(1000),
            to: NodeId(2),
            with_memory: true,
        }])
        .unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Applied);
    assert!(m.processes()[0].threads.iter().all(|t| t.node == NodeId(2)));
    assert_eq!(m.pages_per_node(), vec![0, 0, 2048, 0]);
}

/// A policy that samples and remembers what it saw.
struct Watcher {
    request: SamplingRequest,
    /// Actions to start with (a memory policy at launch).
    launch: Vec<Action>,
    samples: usize,
    hinting: usize,
    saw_counters: bool,
    /// Most mapping policies seen on one process.
    mapping_policies: usize,
}

impl Policy for Watcher {
    fn name(&self) -> &str {
        "watcher"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn start(&mut self, _: &Topology, _: &[ProcessInfo]) -> Vec<Action> {
        self.launch.clone()
    }
    fn decide(&mut self, _: &Topology, o: &Observation) -> Vec<Action> {
        let most = o.processes.iter().map(|p| p.mapping_policies.len()).max();
        self.mapping_policies = self.mapping_policies.max(most.unwrap_or(0));
        self.samples += o.samples.len();
        self.hinting += o
            .samples
            .iter()
            .filter(|s| s.source == SampleSource::HintingFault)
            .count();
        self.saw_counters |= o.counters.nodes.iter().any(|n| n.dram_accesses() > 0);
        Vec::new()
    }
    fn sampling(&self) -> SamplingRequest {
        self.request.clone()
    }
}

fn watch(request: SamplingRequest, seed: u64) -> (Watcher, f64, u64) {
    watch_launched(request, seed, Vec::new())
}

fn watch_launched(request: SamplingRequest, seed: u64, launch: Vec<Action>) -> (Watcher, f64, u64) {
    let mut m = SimMachine::new(
        small(),
        &scenario(8, 64.0, "\"main\"", ""),
        SimConfig {
            seed,
            ..SimConfig::default()
        },
    )
    .unwrap();
    let mut w = Watcher {
        request,
        launch,
        samples: 0,
        hinting: 0,
        saw_counters: false,
        mapping_policies: 0,
    };
    rondpoint_engine::run(
        &mut m,
        &mut w,
        &mut VirtualClock::default(),
        &EngineConfig::default(),
        |_| {},
    )
    .unwrap();
    (w, m.now_ns(), m.totals().scanned_bytes as u64)
}

fn ibs(period: u64) -> SamplingRequest {
    SamplingRequest {
        period_cycles: Some(period),
        ..SamplingRequest::NONE
    }
}

#[test]
fn samples_only_when_asked_and_runs_are_deterministic() {
    let (quiet, t_quiet, _) = watch(SamplingRequest::NONE, 1);
    assert_eq!(quiet.samples, 0);
    assert!(quiet.saw_counters);
    let (a, t_a, _) = watch(ibs(65_000), 1);
    let (b, t_b, _) = watch(ibs(65_000), 1);
    assert!(a.samples > 1000);
    assert_eq!(a.hinting, 0);
    assert_eq!((a.samples, t_a), (b.samples, t_b), "same seed, same run");
    assert!(t_a > t_quiet, "sampling interrupts cost time");
    // Four times the period, about a quarter of the samples.
    let (c, _, _) = watch(ibs(260_000), 1);
    let ratio = a.samples as f64 / c.samples as f64;
    assert!((3.5..4.5).contains(&ratio), "{ratio}");
}

#[test]
fn a_process_is_left_out_of_sampling_or_sampled_at_its_own_period() {
    // The scenario's one application is the simulator's first process.
    let pid = Pid(1000);
    let (_, t_quiet, _) = watch(SamplingRequest::NONE, 1);
    let left_out = SamplingRequest {
        by_process: vec![(pid, None)],
        ..ibs(65_000)
    };
    let (w, t, _) = watch(left_out, 1);
    assert_eq!(w.samples, 0);
    assert_eq!(t, t_quiet, "no interrupts, no cost");
    let own = SamplingRequest {
        by_process: vec![(pid, Some(260_000))],
        ..ibs(65_000)
    };
    let (a, t_a, _) = watch(own, 1);
    let (b, t_b, _) = watch(ibs(260_000), 1);
    assert_eq!((a.samples, t_a), (b.samples, t_b));
    // Another process listed changes nothing for this one.
    let other = SamplingRequest {
        by_process: vec![(Pid(2000), None)],
        ..ibs(260_000)
    };
    assert_eq!(watch(other, 1).0.samples, b.samples);
}

#[test]
fn hinting_faults_follow_the_scan_rate() {
    // 64 MiB region, 16 MiB scanned per 100 ms: the whole region every 400 ms, and every page
    // of a region all threads use uniformly is touched within a period, so about one fault per
    // scanned page.
    let scan = SamplingRequest {
        period_cycles: None,
        hinting: Some(HintingScan {
            scan_bytes: 16 << 20,
            period_ms: 100,
        }),
        ..SamplingRequest::NONE
    };
    let (w, t, scanned) = watch(scan.clone(), 3);
    let (_, t_quiet, _) = watch(SamplingRequest::NONE, 3);
    let expected_scanned = (16u64 << 20) as f64 * t / 1e8;
    assert!(
        (scanned as f64 - expected_scanned).abs() < 0.02 * expected_scanned + 4096.0,
        "{scanned} vs {expected_scanned}"
    );
    assert_eq!(w.samples, w.hinting, "only hinting-fault samples");
    let pages = scanned / 4096;
    assert!(
        w.hinting as u64 > pages * 9 / 10 && w.hinting as u64 <= pages,
        "{} of {pages}",
        w.hinting
    );
    assert!(t > t_quiet, "faults and scanning cost time");
    assert_eq!(w.mapping_policies, 0);
    // Under an explicit memory policy the scanner skips the application (Linux scans only
    // mappings whose policy has MPOL_F_MOF), and the policy shows on its mappings.
    let bind = Action::SetMemPolicy {
        pid: Pid(1000),
        policy: MemPolicy::Bind {
            nodes: vec![NodeId(1)],
        },
    };
    let (b, _, scanned) = watch_launched(scan, 3, vec![bind]);
    assert_eq!((b.hinting, scanned), (0, 0));
    assert!(b.mapping_policies > 0);
}

#[test]
fn a_process_smaller_than_the_scan_size_is_scanned_once_per_period() {
    // 64 MiB of memory, 256 MiB allowed per 100 ms: Linux's scanner stops at the end of the
    // address space and starts over at the next period (task_numa_work, reset_ptenuma_scan),
    // so 64 MiB per period are scanned, not 256.
    let scan = SamplingRequest {
        hinting: Some(HintingScan {
            scan_bytes: 256 << 20,
            period_ms: 100,
        }),
        ..SamplingRequest::NONE
    };
    let (w, t, scanned) = watch(scan, 3);
    let per_period = (64u64 << 20) as f64;
    let periods = t / 1e8;
    assert!(
        scanned as f64 <= per_period * periods.ceil() + 4096.0
            && scanned as f64 >= per_period * (periods.floor() - 1.0),
        "{scanned} bytes in {periods:.2} periods"
    );
    assert!(w.hinting as u64 <= scanned / 4096);
}

/// One single-threaded application on `small()` that first-touches `size_mib` from node 0.
fn one_app(size_mib: f64) -> SimMachine {
    SimMachine::new(
        small(),
        &scenario(1, size_mib, "\"main\"", ""),
        SimConfig::default(),
    )
    .unwrap()
}

/// The overflow policy of node 0 on `small()`: tiers {1, 2} (distance 16), then {3} (22).
fn overflow_policy(spread: rondpoint_model::OverflowSpread) -> MemPolicy {
    MemPolicy::Overflow {
        spread,
        tiers: vec![rondpoint_model::NodeTiers {
            local: NodeId(0),
            tiers: vec![vec![NodeId(1), NodeId(2)], vec![NodeId(3)]],
        }],
    }
}

#[test]
fn overflow_policy_spreads_the_spill_over_the_nearest_tier_first() {
    use rondpoint_model::OverflowSpread;
    let cap = (1073741824.0 * 0.97 / 4096.0) as u64;
    // 1.5 GiB touched from node 0: node 0 fills, the rest is interleaved over nodes 1 and 2
    // (first touch would put it all on node 1).
    let mut m = one_app(1536.0);
    start(&mut m, overflow_policy(OverflowSpread::Interleave));
    let p = m.pages_per_node();
    assert!(
        p[0] > cap - 2 && p[1].abs_diff(p[2]) <= 1 && p[3] == 0,
        "{p:?}"
    );
    // 3 GiB: nodes 1 and 2 fill before any page goes to node 3.
    let mut m = one_app(3072.0);
    start(&mut m, overflow_policy(OverflowSpread::FewestAllocated));
    let p = m.pages_per_node();
    assert!(p[1] > cap - 2 && p[2] > cap - 2 && p[3] > 0, "{p:?}");
    assert_eq!(p.iter().sum::<u64>(), base_pages(3072));
}

#[test]
fn move_node_pages_moves_the_latest_pages_off_a_node_and_pays_for_it() {
    let mut m = one_app(1536.0);
    start(&mut m, MemPolicy::Default);
    let before = m.pages_per_node();
    let overhead = m.totals().overhead_ns;
    let to = |v: &[u16]| v.iter().copied().map(NodeId).collect();
    let out = m
        .apply(&[Action::MoveNodePages {
            pid: Pid(1000),
            from: NodeId(1),
            to: to(&[2, 3]),
            pages: 1000,
        }])
        .unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Applied);
    assert_eq!(
        (out[0].pages_done, out[0].bytes_copied),
        (1000, 1000 * 4096)
    );
    let after = m.pages_per_node();
    assert_eq!(after, vec![before[0], before[1] - 1000, 500, 500]);
    assert!(m.totals().overhead_ns > overhead, "migrations cost time");
    // The pages moved are the last ones of the region: moving the region's tail back to node 1
    // with a range moves exactly those 1000 pages.
    let (_, region) = &m.regions(Pid(1000))[0];
    let tail = PageRange::new(
        Pid(1000),
        region.end() - 1000 * 4096,
        1000,
        PageSize::Base4K,
    )
    .unwrap();
    let out = m
        .apply(&[Action::MigratePages {
            range: tail,
            to: NodeId(1),
        }])
        .unwrap();
    assert_eq!(out[0].bytes_copied, 1000 * 4096);
    assert_eq!(m.pages_per_node(), before);
    // More than the targets can take: the rest fails ENOMEM. Fewer on the node than asked:
    // all of them, and a note. Bad nodes fail; an unknown process is skipped.
    let mv = |pid: i32, from: u16, dst: u16, pages: u64| Action::MoveNodePages {
        pid: Pid(pid),
        from: NodeId(from),
        to: to(&[dst]),
        pages,
    };
    let out = m
        .apply(&[
            mv(1000, 0, 1, before[0]),
            mv(1000, 1, 3, 1 << 30),
            mv(1000, 1, 1, 1),
            mv(1000, 9, 1, 1),
            mv(42, 1, 2, 1),
        ])
        .unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Partial);
    assert_eq!(out[0].failures[0].0, "ENOMEM");
    assert_eq!(out[0].pages_done + out[0].failures[0].1, before[0]);
    assert_eq!(out[1].status, OutcomeStatus::Applied);
    assert!(
        out[1]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("were on node1")
    );
    assert_eq!(m.pages_per_node()[1], 0);
    assert_eq!(out[2].status, OutcomeStatus::Failed);
    assert_eq!(out[3].status, OutcomeStatus::Failed);
    assert_eq!(out[4].status, OutcomeStatus::Skipped);
}

#[test]
fn hinting_scans_cover_overflow_policies_but_not_explicit_ones() {
    let faults = |policy: MemPolicy| {
        let mut m = one_app(64.0);
        m.set_sampling(&SamplingRequest {
            hinting: Some(HintingScan {
                scan_bytes: 64 << 20,
                period_ms: 100,
            }),
            ..SamplingRequest::NONE
        });
        start(&mut m, policy);
        m.observe(500_000_000).unwrap();
        m.totals().hinting_faults
    };
    assert!(faults(overflow_policy(rondpoint_model::OverflowSpread::Interleave)) > 0);
    assert!(faults(MemPolicy::Default) > 0);
    let all = (0..4).map(NodeId).collect();
    assert_eq!(faults(MemPolicy::Interleave { nodes: all }), 0);
}

/// Two applications of two threads, one on each of nodes 0 and 1 of `small()` (2 cores
/// each), both busy.
fn two_apps() -> SimMachine {
    let app = |name: &str, node: u16| {
        format!(
            r#"
[[app]]
name = "{name}"
threads = 2
placement = {{ node = {node} }}
instructions = 1e9
cpi_base = 1.0
mlp = 4.0
mpki = 10.0
mrc_ref_bytes = 1048576
[[app.region]]
name = "r"
size_mib = 4
first_touch = "main"
pattern = "shared-uniform"
share = 1.0
"#
        )
    };
    let s: Scenario = toml::from_str(&format!(
        "name = \"two\"\ndescription = \"two apps\"\n{}{}",
        app("a", 0),
        app("b", 1)
    ))
    .unwrap();
    SimMachine::new(small(), &s, SimConfig::default()).unwrap()
}

fn nodes_of(m: &SimMachine) -> Vec<Vec<u16>> {
    m.processes()
        .iter()
        .map(|p| p.threads.iter().map(|t| t.node.0).collect())
        .collect()
}

#[test]
fn two_applications_swap_nodes_in_one_batch_and_not_one_by_one() {
    let mut m = two_apps();
    m.observe(10_000_000).unwrap();
    let to = |pid: i32, node: u16| Action::MoveApplication {
        pid: Pid(pid),
        to: NodeId(node),
        with_memory: true,
    };
    // Alone, a move onto a busy node fails and changes nothing.
    let out = m.apply(&[to(1000, 1)]).unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Failed);
    assert_eq!(
        out[0].note.as_deref(),
        Some("node 1 has 0 free cores for 2 threads")
    );
    assert_eq!(nodes_of(&m), vec![vec![0, 0], vec![1, 1]]);
    // In one batch, each move counts the cores the other empties: they swap, pages and all.
    let out = m.apply(&[to(1000, 1), to(2000, 0)]).unwrap();
    assert!(
        out.iter().all(|o| o.status == OutcomeStatus::Applied),
        "{out:?}"
    );
    assert_eq!(nodes_of(&m), vec![vec![1, 1], vec![0, 0]]);
    assert_eq!(m.pages_per_node(), vec![1024, 1024, 0, 0]);
    assert!(out.iter().all(|o| o.pages_done == 1024));
    // A move to a node that does not exist empties no core: the other finds no room.
    let out = m.apply(&[to(1000, 0), to(2000, 7)]).unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Failed);
    assert_eq!(out[1].status, OutcomeStatus::Failed);
    assert_eq!(nodes_of(&m), vec![vec![1, 1], vec![0, 0]]);
    // Pins during the run are carried out one by one: a swap of two threads fails.
    let tid = |p: usize| m.processes()[p].threads[0].tid;
    let (ta, tb) = (tid(0), tid(1));
    let pin = |pid: i32, tid, cpu: u32| Action::PinThread {
        pid: Pid(pid),
        tid,
        cpus: vec![rondpoint_model::CpuId(cpu)],
    };
    let out = m.apply(&[pin(1000, ta, 0), pin(2000, tb, 2)]).unwrap();
    assert!(
        out.iter().all(|o| o.status == OutcomeStatus::Failed),
        "{out:?}"
    );
}

#[test]
fn two_running_threads_exchange_cores_in_one_action() {
    let mut m = two_apps();
    m.observe(10_000_000).unwrap();
    let side = |m: &SimMachine, p: usize| {
        let pr = &m.processes()[p];
        let t = &pr.threads[0];
        ThreadCpu {
            pid: pr.pid,
            tid: t.tid,
            cpu: t.cpu,
        }
    };
    let (a, b) = (side(&m, 0), side(&m, 1));
    let out = m.apply(&[Action::ExchangeThreads { a, b }]).unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Applied, "{out:?}");
    assert_eq!(nodes_of(&m), vec![vec![1, 0], vec![0, 1]]);
    assert_eq!((side(&m, 0).cpu, side(&m, 1).cpu), (b.cpu, a.cpu));
    // The same exchange again names CPUs the threads have left: refused, nothing moves.
    let out = m.apply(&[Action::ExchangeThreads { a, b }]).unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Failed);
    assert!(
        out[0]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("does not run on")
    );
    assert_eq!(nodes_of(&m), vec![vec![1, 0], vec![0, 1]]);
    let a = side(&m, 0);
    let out = m.apply(&[Action::ExchangeThreads { a, b: a }]).unwrap();
    assert_eq!(out[0].status, OutcomeStatus::Failed);
}

#[test]
fn start_pins_deal_every_thread_to_the_core_asked() {
    let mut m = two_apps();
    // Interleave the two applications over nodes 0 and 1 (CPUs 0-1 and 2-3): a permutation
    // of busy cores, possible only because nothing runs yet.
    let procs = m.processes();
    let pins: Vec<Action> = procs
        .iter()
        .enumerate()
        .flat_map(|(p, proc)| {
            proc.threads
                .iter()
                .enumerate()
                .map(move |(k, t)| Action::PinThread {
                    pid: proc.pid,
                    tid: t.tid,
                    cpus: vec![rondpoint_model::CpuId((2 * k + p) as u32)],
                })
        })
        .collect();
    let out = m.start(&pins).unwrap();
    assert!(
        out.iter().all(|o| o.status == OutcomeStatus::Applied),
        "{out:?}"
    );
    assert_eq!(nodes_of(&m), vec![vec![0, 1], vec![0, 1]]);
}
