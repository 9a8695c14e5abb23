use super::*;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{
    CpuId, NodeId, NodeList, NodeMemory, ProcessInfo, ThreadCounters, ThreadInfo, Tid,
};

const GIB: u64 = 1 << 30;

/// Three nodes of 16 GiB; program 1 runs on node 0 with 8 GiB there and its overflow on node 1
/// (where the kernel put it); program 2 runs on node 2.
struct Machine {
    topology: Topology,
    /// Each program's bytes per node.
    memory: BTreeMap<Pid, Vec<u64>>,
    /// Program 2's loss of instructions per 10^9 cycles with so many GiB of program 1's
    /// overflow on node 2 (program 1 gains 5% per GiB).
    loss: fn(u64) -> u64,
    epoch: u64,
    counters: bool,
}

impl Machine {
    fn new(overflow_gib: u64, loss: fn(u64) -> u64) -> Self {
        let topology = TopologyBuilder::new(3).cores_per_llc(4).build().unwrap();
        let memory = BTreeMap::from([
            (Pid(1), vec![8 * GIB, overflow_gib * GIB, 0]),
            (Pid(2), vec![0, 0, GIB]),
        ]);
        Self {
            topology,
            memory,
            loss,
            epoch: 0,
            counters: true,
        }
    }

    fn on_node2(&self) -> u64 {
        self.memory[&Pid(1)][2] / GIB
    }

    fn observe(&mut self) -> Observation {
        let home = |pid: Pid| if pid == Pid(1) { 0 } else { 2 };
        let processes = self
            .memory
            .iter()
            .map(|(&pid, bytes)| ProcessInfo {
                pid,
                comm: format!("p{}", pid.0),
                threads: vec![ThreadInfo {
                    tid: Tid(pid.0),
                    cpu: CpuId(home(pid) * 4),
                    node: NodeId(home(pid) as u16),
                    allowed_cpus: (0..12).map(CpuId).collect(),
                }],
                resident_bytes_by_node: bytes.clone(),
                mapping_policies: vec![],
            })
            .collect();
        let used = |i: usize| self.memory.values().map(|b| b[i]).sum::<u64>();
        let mut obs = Observation {
            epoch: self.epoch,
            processes,
            memory: (0..3)
                .map(|i| NodeMemory {
                    node: NodeId(i as u16),
                    total_bytes: 16 * GIB,
                    free_bytes: 16 * GIB - used(i),
                })
                .collect(),
            ..Observation::default()
        };
        self.epoch += 1;
        obs.counters.duration_ns = 1_000_000_000;
        if !self.counters {
            obs.counters.missing.push(CounterGroup::Instructions);
            return obs;
        }
        for &pid in self.memory.keys() {
            obs.counters.threads.push(ThreadCounters {
                pid,
                tid: Tid(pid.0),
                instructions: self.rate(pid),
                cycles: 1_000_000_000,
                ..ThreadCounters::default()
            });
        }
        obs
    }

    fn rate(&self, pid: Pid) -> u64 {
        let gib = self.on_node2();
        match pid.0 {
            1 => 1_000_000_000 + 50_000_000 * gib,
            _ => 1_000_000_000 - (self.loss)(gib),
        }
    }

    fn apply(&mut self, actions: &[Action]) {
        for a in actions {
            let Action::MoveNodePages { from, to, .. } = a else {
                panic!("not a move: {a:?}");
            };
            let bytes = a.pages() * PAGE;
            let m = self.memory.get_mut(&a.pid()).unwrap();
            m[from.0 as usize] -= bytes;
            m[to.as_slice()[0].0 as usize] += bytes;
        }
    }

    /// The lane's rule: program 1's overflow to node 2, 1 GiB an epoch.
    fn lane(&self) -> Vec<Action> {
        match self.memory[&Pid(1)][1] {
            0 => Vec::new(),
            _ => vec![Action::MoveNodePages {
                pid: Pid(1),
                from: NodeId(1),
                to: NodeList::from_slice(&[NodeId(2)]),
                pages: GIB / PAGE,
            }],
        }
    }
}

const LIMITS: Limits = Limits {
    max_move_bytes: 2 * GIB,
    min_move_bytes: 64 << 20,
};

/// Runs `epochs` epochs as `auto` does: the trial observes, then the lane proposes unless
/// held; the trial and what each epoch moved (lane's, trial's).
fn run(m: &mut Machine, t: &mut OverflowTrial, epochs: usize) -> Vec<(usize, usize)> {
    (0..epochs)
        .map(|_| {
            let obs = m.observe();
            let back = t.observe(&m.topology, &obs).map(|(a, _)| a);
            let back = back.unwrap_or_default();
            m.apply(&back);
            let mut lane = Vec::new();
            if !t.holds_lane(false) {
                lane = m.lane();
                if t.proposed(&lane, &obs) {
                    m.apply(&lane);
                } else {
                    lane.clear();
                }
            }
            (lane.len(), back.len())
        })
        .collect()
}

fn trial() -> OverflowTrial {
    OverflowTrial::new(TrialConfig::default(), LIMITS)
}

/// Program 2's losses.
fn none(_: u64) -> u64 {
    0
}

fn per_gib_1_2pct(gib: u64) -> u64 {
    12_000_000 * gib
}

fn per_gib_3pct(gib: u64) -> u64 {
    30_000_000 * gib
}

#[test]
fn a_placement_that_pays_is_measured_against_the_kernels_and_kept() {
    let mut m = Machine::new(4, none);
    let mut t = trial();
    let log = run(&mut m, &mut t, 30);
    // Held while the kernel's placement is measured: the first proposal, then 1 epoch to
    // settle and 2 measured.
    assert_eq!(log[..3].iter().map(|l| l.0).sum::<usize>(), 0, "{log:?}");
    // Steps of 1, 2, then 4 epochs of moves (the last GiB), each measured over the 3 epochs
    // after it (1 to settle, 2 measured: the lane held in the first 2) before the next.
    let moves: Vec<usize> = log.iter().map(|l| l.0).collect();
    assert_eq!(moves[3..12], [1, 0, 0, 1, 1, 0, 0, 1, 0], "{log:?}");
    assert_eq!(m.on_node2(), 4, "the lane placed it all");
    assert!(log.iter().all(|l| l.1 == 0), "nothing moved back: {log:?}");
    assert!(
        matches!(t.verdict(), Some(Verdict::Kept(_))),
        "{:?}",
        t.verdict()
    );
    assert!(!t.holds_lane(false), "the lane goes on placing");
    assert!(t.notes()[0].starts_with("overflow trial 1: kept: programs' rates"));
}

#[test]
fn a_step_that_gains_too_little_ends_the_placement_where_it_is() {
    // At 1 GiB, program 1 +5% and program 2 -3%: +0.9% in geometric mean, under the 1% a
    // step must gain, and no program past the bound: kept, and no more placed.
    let mut m = Machine::new(4, per_gib_3pct);
    let mut t = trial();
    let log = run(&mut m, &mut t, 30);
    assert_eq!(m.on_node2(), 1, "{log:?}");
    assert!(log.iter().all(|l| l.1 == 0), "nothing moved back: {log:?}");
    let note = &t.notes()[0];
    assert!(
        note.starts_with("overflow trial 1: kept: 1024 MiB of overflow placed, then no more"),
        "{note}"
    );
    assert!(t.holds_lane(false), "the lane stops");
    // The same programs later: still stopped.
    run(&mut m, &mut t, 3);
    assert_eq!(t.take_retry(), None);
    // A program that had no overflow gets some: a new series of trials, no node avoided.
    m.memory.insert(Pid(3), vec![0, 2 * GIB, 0]);
    let obs = m.observe();
    assert_eq!(t.observe(&m.topology, &obs), None);
    assert_eq!(t.take_retry(), Some(vec![]));
    assert!(!t.holds_lane(false), "watching again");
    run(&mut m, &mut t, 3);
    assert_eq!(t.take_retry(), None, "once");
}

#[test]
fn a_placement_that_slows_a_bystander_past_the_bound_is_moved_back() {
    // 1.2% per GiB: only the whole placement (4 GiB, 4.8%) is past the bound.
    let mut m = Machine::new(4, per_gib_1_2pct);
    let mut t = trial();
    run(&mut m, &mut t, 40);
    assert!(
        matches!(t.verdict(), Some(Verdict::Undone(_))),
        "{:?}",
        t.verdict()
    );
    assert_eq!(
        m.memory[&Pid(1)],
        vec![8 * GIB, 4 * GIB, 0],
        "back as the kernel had it"
    );
    assert!(t.holds_lane(false), "the lane stops");
    let note = &t.notes()[0];
    assert!(note.contains("pid 2 -"), "{note}");
    assert!(note.ends_with("; 4096 MiB moved back"), "{note}");
    // Program 2 runs on node 2, which took the overflow: another trial without it.
    assert_eq!(t.stopped(), None);
    assert_eq!(t.take_retry(), Some(vec![NodeId(2)]));
    assert_eq!(t.take_retry(), None);
    assert!(!t.holds_lane(false), "watching again");
    let notes = t.notes();
    assert_eq!(notes.len(), 1, "no verdict yet for the second: {notes:?}");
    assert!(notes[0].starts_with("overflow trial 1: undone: "));
}

#[test]
fn a_placement_that_already_harms_a_bystander_is_stopped_before_its_step_ends() {
    // 12 GiB of overflow; program 2 is unharmed up to 3 GiB, then 5% slower per GiB: the
    // third step (4 epochs of moves, from 3 GiB) is stopped part way.
    fn past_three(gib: u64) -> u64 {
        50_000_000 * gib.saturating_sub(3)
    }
    let mut m = Machine::new(12, past_three);
    let mut t = trial();
    let log = run(&mut m, &mut t, 40);
    let placed: usize = log.iter().map(|l| l.0).sum();
    assert!((4..7).contains(&placed), "stopped early: {log:?}");
    let Some(Verdict::Undone(why)) = t.verdict() else {
        panic!("{:?}", t.verdict());
    };
    assert!(why.starts_with("stopped after "), "{why}");
    assert_eq!(m.on_node2(), 0);
}

#[test]
fn the_lane_waits_while_another_trial_measures_the_programs() {
    let t = trial();
    assert!(t.holds_lane(true));
    assert!(!t.holds_lane(false));
    assert!(!t.busy());
}

#[test]
fn without_instruction_counters_the_lane_places_as_its_paper_says() {
    let mut m = Machine::new(4, per_gib_3pct);
    m.counters = false;
    let mut t = trial();
    run(&mut m, &mut t, 6);
    assert_eq!(m.on_node2(), 4);
    assert!(matches!(t.verdict(), Some(Verdict::Abandoned(_))));
    assert!(!t.holds_lane(false));
}

#[test]
fn a_trial_switched_off_or_impossible_leaves_the_lane_alone() {
    let off = TrialConfig {
        overflow: false,
        ..TrialConfig::default()
    };
    let mut impossible = trial();
    impossible.skip("placed at allocation".into());
    for (mut t, note) in [(OverflowTrial::new(off, LIMITS), false), (impossible, true)] {
        let mut m = Machine::new(4, per_gib_3pct);
        run(&mut m, &mut t, 6);
        assert_eq!(m.on_node2(), 4);
        assert_eq!(t.notes().len(), usize::from(note), "{:?}", t.notes());
    }
    let mut t = trial();
    t.skip("the machine places it at allocation".into());
    assert_eq!(
        t.notes(),
        ["overflow trial 1: no verdict, kept: the machine places it at allocation"]
    );
}

#[test]
fn moves_back_stop_when_the_machine_refuses_them() {
    let mut m = Machine::new(4, per_gib_1_2pct);
    let mut t = trial();
    // Placed and judged, with the moves back refused: the trial stops asking.
    let mut asked = 0;
    for _ in 0..30 {
        let obs = m.observe();
        if let Some((back, _)) = t.observe(&m.topology, &obs) {
            asked += 1;
            assert!(!back.is_empty());
            continue;
        }
        if !t.holds_lane(false) {
            let lane = m.lane();
            if t.proposed(&lane, &obs) {
                m.apply(&lane);
            }
        }
    }
    assert!(matches!(t.verdict(), Some(Verdict::Undone(_))));
    assert!(
        (1..=MAX_STALLS as usize + 1).contains(&asked),
        "asked {asked} times"
    );
}
