//! The view model filled from an epoch (hand-made, and a real simulated one) and from a
//! state file, and every screen drawn on ratatui's `TestBackend`.

use super::input::{Filter, SortKey, UiState};
use super::model::{Tracker, ViewModel};
use super::view::{Feed, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use rondpoint_engine::{EpochReport, SampleTally};
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{
    Action, CounterGroup, Counters, CpuId, Estimate, Explained, LinkCounters, NodeCounters, NodeId,
    NodeMemory, Observation, Outcome, PageRange, PageSize, Pid, ProcessInfo, SampleSource,
    ThreadInfo, Tid, Topology,
};

const MIB: u64 = 1 << 20;

fn process(pid: i32, comm: &str, node: u16, mib: [u64; 2]) -> ProcessInfo {
    ProcessInfo {
        pid: Pid(pid),
        comm: comm.into(),
        threads: vec![ThreadInfo {
            tid: Tid(pid),
            cpu: CpuId(0),
            node: NodeId(node),
            allowed_cpus: Vec::new(),
        }],
        resident_bytes_by_node: mib.iter().map(|m| m * MIB).collect(),
        mapping_policies: Vec::new(),
    }
}

/// A two-node machine whose node DRAM traffic was estimated from samples, with three
/// processes, a link of known capacity and two actions.
fn epoch_observation() -> Observation {
    let node = |i: u16, by_source: Vec<u64>| NodeCounters {
        node: NodeId(i),
        dram_accesses_by_source: by_source,
        ..NodeCounters::default()
    };
    Observation {
        epoch: 7,
        counters: Counters {
            duration_ns: 1_000_000_000,
            nodes: vec![
                node(0, vec![600_000_000, 200_000_000]),
                node(1, vec![0, 200_000_000]),
            ],
            links: vec![LinkCounters {
                a: NodeId(0),
                b: NodeId(1),
                bytes_a_to_b: 6 << 30,
                bytes_b_to_a: 2 << 30,
                capacity_bytes_per_s: Some(16e9),
            }],
            estimated: vec![Estimate {
                group: CounterGroup::NodeDram,
                how: "from page-fault samples".into(),
            }],
            ..Counters::default()
        },
        memory: vec![
            NodeMemory {
                node: NodeId(0),
                total_bytes: 16 << 30,
                free_bytes: 10 << 30,
            },
            NodeMemory {
                node: NodeId(1),
                total_bytes: 16 << 30,
                free_bytes: 14 << 30,
            },
        ],
        processes: vec![
            process(101, "redis-server", 0, [512, 0]),
            process(202, "mgen", 0, [2048, 1024]),
            process(303, "postgres", 1, [64, 256]),
        ],
        ..Observation::default()
    }
}

fn topology() -> Topology {
    let built = TopologyBuilder::new(2).uniform(10, 20).build();
    built.unwrap_or_else(|e| unreachable!("a two-node topology: {e}"))
}

/// The tracker after two epochs: a migration and a pin of mgen, then a pin of postgres.
fn sample_view() -> ViewModel {
    let topology = topology();
    let obs = epoch_observation();
    let mut tracker = Tracker::new("daemon", "auto");
    let range = PageRange {
        pid: Pid(202),
        start: 0x7f00_0000_0000,
        count: 512,
        page_size: PageSize::Base4K,
    };
    let pin = |pid: i32| Action::PinThread {
        pid: Pid(pid),
        tid: Tid(pid),
        cpus: vec![CpuId(1)],
    };
    let first = [
        Action::MigratePages {
            range,
            to: NodeId(1),
        },
        pin(202),
    ];
    let mut done = Outcome::applied(0);
    done.pages_done = 512;
    let outcomes = [done, Outcome::applied(1)];
    let tally = SampleTally {
        total: 1500,
        by_pid: [(Pid(202), 1200), (Pid(303), 300)].into(),
        by_source: vec![(SampleSource::PageFault, 1500)],
    };
    let explained = Explained::default();
    let report = |obs, actions, outcomes, sampled| EpochReport {
        epoch: 7,
        now_ns: 8_000_000_000,
        observation: obs,
        actions,
        outcomes,
        explained: &explained,
        start: None,
        sampled,
    };
    tracker.epoch(&topology, &report(&obs, &first, &outcomes, &tally), 8.0);
    let second = [pin(303)];
    tracker.epoch(
        &topology,
        &report(&obs, &second, &[Outcome::applied(0)], &tally),
        9.0,
    );
    let mut view = tracker.view().clone();
    // The pid of the process running the tests would differ from run to run.
    view.writer_pid = Some(4242);
    view
}

#[test]
fn an_epoch_fills_the_view() {
    let v = sample_view();
    assert_eq!(v.nodes.len(), 2);
    assert!((v.nodes[0].mc_per_us - 800.0).abs() < 1e-9);
    assert!((v.nodes[0].mc_share - 0.8).abs() < 1e-9);
    assert_eq!(v.nodes[0].local_share, Some(0.75));
    assert_eq!(v.nodes[1].local_share, Some(1.0));
    assert!(v.dram_estimated && !v.links_estimated);
    assert_eq!(v.estimates, ["node-dram: from page-fault samples"]);
    assert_eq!(v.lar.map(|l| (l * 100.0).round()), Some(80.0));
    let link = &v.links[0];
    assert!((link.bytes_per_s - (8u64 << 30) as f64).abs() < 1.0);
    assert!(
        link.utilisation
            .is_some_and(|u| (u - (6u64 << 30) as f64 / 16e9).abs() < 1e-9)
    );
    assert_eq!(v.sampling.samples, 1500);
    assert_eq!(v.sampling.by_source.get("page-fault"), Some(&1500));
    let mgen = &v.processes[1];
    assert_eq!((mgen.pid, mgen.pages()), (202, 3072 * 256));
    assert_eq!(mgen.samples, 1200);
    // Its actions came in the first epoch: none in the second, two in all.
    assert!(mgen.actions_epoch.is_empty());
    assert_eq!(mgen.actions_total.values().sum::<u64>(), 2);
    assert_eq!(v.processes[2].actions_epoch.get("pin-thread"), Some(&1));
    assert_eq!(v.actions_total.get("pin-thread"), Some(&2));
    assert_eq!(
        (v.pages_total, v.failed_total, v.processes_total),
        (512, 0, 3)
    );
}

#[test]
fn a_simulated_epoch_fills_the_view() {
    use rondpoint_engine::{EngineConfig, Machine, VirtualClock};
    use rondpoint_sim::{SimConfig, SimMachine, presets, spec::MachineSpec};
    let spec = presets::machine("xeon-2s")
        .map_err(anyhow::Error::from)
        .and_then(|p| Ok(MachineSpec::from_preset(&p)?));
    let spec = spec.unwrap_or_else(|e| unreachable!("the xeon-2s preset: {e}"));
    let scenario = presets::workload("streamcluster").unwrap_or_else(|e| unreachable!("{e}"));
    let mut machine = SimMachine::new(spec, &scenario, SimConfig::default())
        .unwrap_or_else(|e| unreachable!("{e}"));
    let topology = machine.topology().clone();
    let mut policy = crate::policies::build("autonuma", &Default::default())
        .unwrap_or_else(|e| unreachable!("{e}"));
    let engine = EngineConfig {
        epoch_ns: 1_000_000_000,
        time_limit_ns: Some(2_000_000_000),
        ..EngineConfig::default()
    };
    let mut tracker = Tracker::new("sim xeon-2s / streamcluster", "autonuma");
    let mut epochs = 0;
    rondpoint_engine::run(
        &mut machine,
        policy.as_mut(),
        &mut VirtualClock::default(),
        &engine,
        |r| {
            tracker.epoch(&topology, r, r.now_ns as f64 / 1e9);
            epochs += 1;
        },
    )
    .unwrap_or_else(|e| unreachable!("{e}"));
    let v = tracker.view();
    assert_eq!(v.epoch + 1, epochs);
    assert_eq!(v.nodes.len(), 2);
    assert_eq!(v.processes.len(), 1);
    assert_eq!(v.processes[0].comm, "streamcluster");
    assert!(v.processes[0].pages() > 0);
    assert!(v.nodes.iter().all(|n| n.mem_total_bytes > 0));
    // AutoNUMA samples by hinting faults; the per-process counts add up to the epoch's.
    assert!(v.sampling.samples > 0, "{:?}", v.sampling);
    assert_eq!(v.processes[0].samples, v.sampling.samples);
    assert!(v.lar.is_some() && !v.dram_estimated);
}

#[test]
fn a_state_file_fills_the_view() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/top/state.json");
    if std::env::var_os("RONDPOINT_REGENERATE_FIXTURES").is_some() {
        // What a daemon writes: its own fields, then the view.
        let state = serde_json::json!({
            "schema_version": 1, "policy": "auto", "dry_run": false, "uptime_s": 9.0,
            "epoch": 7, "managed": [101, 202, 303], "samples_last_epoch": 0,
            "totals": {"migrate": [1, 512], "pin-thread": [2, 0]}, "failed_actions": 0,
            "top": sample_view(),
        });
        let text = serde_json::to_string_pretty(&state).unwrap_or_default();
        std::fs::write(&path, text + "\n").unwrap_or_else(|e| unreachable!("{e}"));
    }
    let v = super::read_state(&path).unwrap_or_else(|e| unreachable!("{e:#}"));
    assert_eq!(
        v,
        sample_view(),
        "regenerate fixtures/top/state.json if the view changed"
    );
    let dir = tempfile::tempdir().unwrap_or_else(|e| unreachable!("{e}"));
    let old = dir.path().join("old.json");
    std::fs::write(&old, r#"{"schema_version": 1, "epoch": 3}"#).unwrap_or_default();
    let err = super::read_state(&old).err().map(|e| format!("{e:#}"));
    assert!(err.is_some_and(|e| e.contains("older than `top`")));
}

/// Draws a screen as text, 120 columns by 40 lines.
fn screen(v: &ViewModel, ui: &UiState, feed: &Feed) -> String {
    let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|e| unreachable!("{e}"));
    t.draw(|f| draw(f, v, ui, feed))
        .unwrap_or_else(|e| unreachable!("{e}"));
    t.backend().to_string()
}

fn press(ui: &mut UiState, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\u{1b}' => KeyCode::Esc,
            c => KeyCode::Char(c),
        };
        ui.key(KeyEvent::new(code, KeyModifiers::NONE));
    }
}

#[test]
fn main_screen() {
    insta::assert_snapshot!(screen(&sample_view(), &UiState::default(), &Feed::Live));
}

#[test]
fn sorted_screen() {
    let mut ui = UiState::default();
    press(&mut ui, "sssss");
    assert_eq!(ui.sort, SortKey::Comm);
    insta::assert_snapshot!(screen(&sample_view(), &ui, &Feed::Live));
}

#[test]
fn filtered_screens() {
    let v = sample_view();
    let mut ui = UiState::default();
    press(&mut ui, "/n1\n");
    assert_eq!(ui.filter, Some(Filter::Node(1)));
    insta::assert_snapshot!("filtered_node", screen(&v, &ui, &Feed::Live));
    press(&mut ui, "fred");
    insta::assert_snapshot!("filter_typed", screen(&v, &ui, &Feed::Live));
    press(&mut ui, "\n");
    assert_eq!(ui.filter, Some(Filter::Process("red".into())));
    insta::assert_snapshot!("filtered_process", screen(&v, &ui, &Feed::Live));
    press(&mut ui, "\u{1b}");
    assert_eq!(ui.filter, None);
}

#[test]
fn paused_screen() {
    let mut ui = UiState::default();
    press(&mut ui, "p");
    insta::assert_snapshot!(screen(&sample_view(), &ui, &Feed::Live));
    press(&mut ui, " ");
    assert!(!ui.paused);
}

#[test]
fn help_screen() {
    let mut ui = UiState::default();
    press(&mut ui, "?");
    insta::assert_snapshot!(screen(&sample_view(), &ui, &Feed::Live));
    press(&mut ui, "x");
    assert!(!ui.help && !ui.quit);
    press(&mut ui, "hq");
    assert!(ui.quit);
}

#[test]
fn screens_without_a_daemon() {
    let waiting = Feed::Waiting("state file gone (/run/rondpoint/state.json: No such file or directory (os error 2)): daemon not running?".into());
    insta::assert_snapshot!(
        "no_daemon",
        screen(&ViewModel::default(), &UiState::default(), &waiting)
    );
    let gone = Feed::Gone("daemon not running (pid 4242 exited): its last epoch".into());
    insta::assert_snapshot!(
        "daemon_gone",
        screen(&sample_view(), &UiState::default(), &gone)
    );
}

#[test]
fn finished_simulation_and_scrolling() {
    let mut v = sample_view();
    v.source = "sim xeon-2s / streamcluster".into();
    v.finished = true;
    v.estimates.clear();
    v.dram_estimated = false;
    let first = v.processes[0].clone();
    let many = (0..40).map(|i| {
        let mut p = first.clone();
        p.pid = 1000 + i;
        p.pages_by_node = vec![u64::try_from(i).unwrap_or(0) * 10, 5];
        p
    });
    v.processes.extend(many);
    v.processes_total = v.processes.len();
    let mut ui = UiState::default();
    ui.key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    ui.key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE));
    assert_eq!(ui.scroll, 11);
    insta::assert_snapshot!(screen(&v, &ui, &Feed::Finished));
    ui.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(ui.quit);
}

#[test]
fn a_daemon_s_cgroups_get_a_table_of_their_own() {
    let mut v = sample_view();
    v.cgroups = vec![super::model::CgroupView {
        cgroup: "/sys/fs/cgroup/workload.slice/tenant-a".into(),
        processes: 2,
        pages_by_node: vec![256, 1024],
        samples: 40,
        actions_total: [("migrate".to_string(), 3)].into_iter().collect(),
        pages_placed: 300,
    }];
    insta::assert_snapshot!(screen(&v, &UiState::default(), &Feed::Live));
}
