use super::*;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{NodeId, ThreadCounters, ThreadInfo};

/// Two nodes of four CPUs; programs 1..=n, one thread each, starting on CPU pid - 1.
struct Machine {
    topology: Topology,
    on: BTreeMap<Pid, CpuId>,
    /// Instructions per 10^9 cycles of each program on each CPU.
    rate: fn(Pid, CpuId, u64) -> u64,
    epoch: u64,
}

impl Machine {
    fn new(n: i32, rate: fn(Pid, CpuId, u64) -> u64) -> Self {
        let topology = TopologyBuilder::new(2).cores_per_llc(4).build().unwrap();
        let on = (1..=n).map(|p| (Pid(p), CpuId(p as u32 - 1))).collect();
        Self {
            topology,
            on,
            rate,
            epoch: 0,
        }
    }

    fn processes(&self) -> Vec<ProcessInfo> {
        self.on
            .iter()
            .map(|(&pid, &cpu)| ProcessInfo {
                pid,
                comm: format!("p{}", pid.0),
                threads: vec![ThreadInfo {
                    tid: Tid(pid.0),
                    cpu,
                    node: NodeId((cpu.0 / 4) as u16),
                    allowed_cpus: (0..8).map(CpuId).collect(),
                }],
                resident_bytes_by_node: vec![],
                mapping_policies: vec![],
            })
            .collect()
    }

    /// One epoch run as the threads are placed now.
    fn observe(&mut self) -> Observation {
        let mut obs = Observation {
            epoch: self.epoch,
            processes: self.processes(),
            ..Observation::default()
        };
        self.epoch += 1;
        obs.counters.duration_ns = 1_000_000_000;
        for (&pid, &cpu) in &self.on {
            obs.counters.threads.push(ThreadCounters {
                pid,
                tid: Tid(pid.0),
                instructions: (self.rate)(pid, cpu, obs.epoch),
                cycles: 1_000_000_000,
                ..ThreadCounters::default()
            });
        }
        obs
    }

    /// Carries out pins one by one, as a one-thread-per-CPU backend does; the failure of the
    /// first that finds its CPU busy.
    fn apply(&mut self, actions: &[Action]) -> Option<String> {
        for a in actions {
            let Action::PinThread { pid, cpus, .. } = a else {
                return Some(format!("not a pin: {a:?}"));
            };
            let Some(to) = cpus
                .iter()
                .find(|c| self.on.iter().all(|(p, on)| p == pid || on != *c))
            else {
                return Some("every allowed CPU is busy".into());
            };
            self.on.insert(*pid, *to);
        }
        None
    }
}

/// The placement: program 1 to CPU 4 (node 1), program 2 stays.
fn placement() -> Vec<Action> {
    vec![Action::PinThread {
        pid: Pid(1),
        tid: Tid(1),
        cpus: vec![CpuId(4)],
    }]
}

/// Runs a trial of `placement()` for `epochs` epochs; the trial and the actions of each epoch.
fn run(m: &mut Machine, config: TrialConfig, epochs: usize) -> (Trial, Vec<Vec<Action>>) {
    let mut t = Trial::new(config);
    let start = placement();
    t.begin(&m.processes(), &start);
    let failed = m.apply(&start);
    assert_eq!(failed, None);
    let log = (0..epochs).map(|_| step(m, &mut t)).collect();
    (t, log)
}

/// One epoch: the trial observes it, and its switch is carried out.
fn step(m: &mut Machine, t: &mut Trial) -> Vec<Action> {
    let obs = m.observe();
    let acts = t
        .observe(&m.topology, &obs, false)
        .map(|(a, _)| a)
        .unwrap_or_default();
    t.outcome(m.apply(&acts));
    acts
}

/// Program 1 is 10% faster on node 1 than on node 0; program 2 the same everywhere.
fn one_faster_on_node1(pid: Pid, cpu: CpuId, _: u64) -> u64 {
    match (pid.0, cpu.0 >= 4) {
        (1, true) => 1_100_000_000,
        _ => 1_000_000_000,
    }
}

/// Program 1 is 10% slower on node 1.
fn one_slower_on_node1(pid: Pid, cpu: CpuId, _: u64) -> u64 {
    match (pid.0, cpu.0 >= 4) {
        (1, true) => 900_000_000,
        _ => 1_000_000_000,
    }
}

#[test]
fn a_placement_that_pays_is_measured_undone_for_a_while_and_put_back() {
    let mut m = Machine::new(2, one_faster_on_node1);
    let (t, log) = run(&mut m, TrialConfig::default(), 8);
    // Placed: one epoch to settle and two measured, then back home; the same, then back.
    let when: Vec<usize> = (0..log.len()).filter(|&e| !log[e].is_empty()).collect();
    assert_eq!(when, vec![2, 5], "{log:?}");
    assert!(
        matches!(t.verdict(), Some(Verdict::Kept(_))),
        "{:?}",
        t.verdict()
    );
    assert!(!t.holds_lane());
    assert_eq!(m.on[&Pid(1)], CpuId(4), "the placement is back");
    // The revert allows the CPUs of before, the one it ran on first.
    let Action::PinThread { cpus, .. } = &log[2][0] else {
        panic!("{log:?}");
    };
    assert_eq!(cpus[0], CpuId(0));
    assert_eq!(cpus.len(), 8);
    let note = t.note().unwrap();
    assert!(note.contains("kept") && note.contains("+4.88%"), "{note}");
}

#[test]
fn a_placement_that_does_not_pay_is_undone_and_holds_its_lane() {
    let mut m = Machine::new(2, one_slower_on_node1);
    let (t, log) = run(&mut m, TrialConfig::default(), 10);
    let switches = log.iter().filter(|a| !a.is_empty()).count();
    assert_eq!(switches, 1, "only the undoing: {log:?}");
    assert!(matches!(t.verdict(), Some(Verdict::Undone(_))));
    assert!(t.holds_lane());
    assert_eq!(m.on[&Pid(1)], CpuId(0));
}

#[test]
fn a_placement_that_slows_one_program_past_the_bound_is_undone_whatever_the_mean() {
    // Program 1 is 10% slower on node 1; with the mean's bar lowered to -50%, the loss bound
    // (4%) alone decides.
    let mut m = Machine::new(2, one_slower_on_node1);
    let config = TrialConfig {
        min_gain: -0.5,
        ..TrialConfig::default()
    };
    let (t, _) = run(&mut m, config, 10);
    let Some(Verdict::Undone(why)) = t.verdict() else {
        panic!("{:?}", t.verdict());
    };
    assert!(
        why.contains("none below -4.0%") && why.contains("-10.0%"),
        "{why}"
    );
    // Within the bound, the mean decides: kept.
    let config = TrialConfig {
        min_gain: -0.5,
        max_loss: 0.2,
        ..TrialConfig::default()
    };
    let (t, _) = run(&mut Machine::new(2, one_slower_on_node1), config, 10);
    assert!(
        matches!(t.verdict(), Some(Verdict::Kept(_))),
        "{:?}",
        t.verdict()
    );
}

#[test]
fn a_switch_that_fails_ends_the_trial_without_a_verdict_and_the_placement_stays() {
    // Program 3 sits on program 1's CPU of before, and no CPU of the revert's list is free:
    // the revert allows CPU 0 only.
    let mut m = Machine::new(2, one_faster_on_node1);
    let mut t = Trial::new(TrialConfig::default());
    let mut processes = m.processes();
    processes[0].threads[0].allowed_cpus = vec![CpuId(0)];
    t.begin(&processes, &placement());
    assert_eq!(m.apply(&placement()), None);
    m.on.insert(Pid(3), CpuId(0));
    for _ in 0..6 {
        step(&mut m, &mut t);
    }
    let Some(Verdict::Abandoned(why)) = t.verdict() else {
        panic!("{:?}", t.verdict());
    };
    assert!(why.contains("could not go back"), "{why}");
    assert_eq!(m.on[&Pid(1)], CpuId(4), "the placement stays");
}

#[test]
fn without_instruction_counters_nothing_is_measured_and_nothing_moves() {
    let mut m = Machine::new(2, one_slower_on_node1);
    let mut t = Trial::new(TrialConfig::default());
    t.begin(&m.processes(), &placement());
    m.apply(&placement());
    let mut obs = m.observe();
    obs.counters.missing = vec![CounterGroup::Instructions];
    assert_eq!(t.observe(&m.topology, &obs, false), None);
    assert!(matches!(t.verdict(), Some(Verdict::Abandoned(_))));
    assert!(!t.holds_lane());
}

#[test]
fn a_placement_that_moves_memory_is_not_tried() {
    let m = Machine::new(2, one_slower_on_node1);
    let mut t = Trial::new(TrialConfig::default());
    let moves = [Action::MoveApplication {
        pid: Pid(1),
        to: NodeId(1),
        with_memory: true,
    }];
    t.begin(&m.processes(), &moves);
    assert_eq!(t.stage, Stage::Idle);
    // Nor is any trial when it is off.
    let mut t = Trial::new(TrialConfig {
        placement: false,
        ..TrialConfig::default()
    });
    t.begin(&m.processes(), &placement());
    assert_eq!(t.stage, Stage::Idle);
}

#[test]
fn a_placement_kept_is_tried_again_and_undone_once_the_mix_makes_it_a_loss() {
    // Program 1 is 10% faster on node 1 until epoch 10, 10% slower after (its co-runners
    // changed).
    fn rate(pid: Pid, cpu: CpuId, epoch: u64) -> u64 {
        match epoch {
            0..10 => one_faster_on_node1(pid, cpu, epoch),
            _ => one_slower_on_node1(pid, cpu, epoch),
        }
    }
    let mut m = Machine::new(2, rate);
    let (t, log) = run(&mut m, TrialConfig::default(), 30);
    let when: Vec<usize> = (0..log.len()).filter(|&e| !log[e].is_empty()).collect();
    // Kept at the first trial (switches at 2 and 5); from 8 epochs on measured again for 2
    // (13, 14), sent home, measured there (16, 17 after one to settle): undone, nothing more.
    assert_eq!(when, vec![2, 5, 14], "{log:?}");
    let Some(Verdict::Undone(_)) = t.verdict() else {
        panic!("{:?}", t.verdict());
    };
    assert!(t.note().unwrap().contains("at trial 2"), "{:?}", t.note());
    assert_eq!(m.on[&Pid(1)], CpuId(0));
    // Without re-checks, the first verdict is the last.
    let config = TrialConfig {
        recheck_epochs: 0,
        ..TrialConfig::default()
    };
    let (t, log) = run(&mut Machine::new(2, rate), config, 30);
    assert_eq!(log.iter().filter(|a| !a.is_empty()).count(), 2);
    assert!(matches!(t.verdict(), Some(Verdict::Kept(_))));
}

#[test]
fn an_undone_placement_holds_its_lane_until_a_program_starts() {
    let mut m = Machine::new(2, one_slower_on_node1);
    let (mut t, _) = run(&mut m, TrialConfig::default(), 10);
    assert!(t.undone() && t.holds_lane());
    // The same programs: the lane stays held.
    assert!(!t.mix_changed(&m.observe()));
    // A third program starts: the lane may act again once `recheck_epochs` (8) have passed
    // since the undoing, and its next placement is tried.
    m.on.insert(Pid(3), CpuId(2));
    let wait = |m: &mut Machine, t: &Trial| (0..100).position(|_| t.mix_changed(&m.observe()));
    let first = wait(&mut m, &t);
    assert!(matches!(first, Some(1..=8)), "{first:?}");
    t.readmit();
    assert!(!t.holds_lane() && !t.undone());
    let start = placement();
    t.begin(&m.processes(), &start);
    assert_eq!(m.apply(&start), None);
    assert!(t.measuring());
    let log: Vec<Vec<Action>> = (0..10).map(|_| step(&mut m, &mut t)).collect();
    assert_eq!(log.iter().filter(|a| !a.is_empty()).count(), 1, "{log:?}");
    assert!(t.undone());
    let note = t.note().unwrap();
    assert!(
        note.contains("at trial 2") && note.contains("acted again 1 time"),
        "{note}"
    );
    // A program that ends changes nothing; one that starts does, once the doubled wait is over.
    m.on.remove(&Pid(2));
    assert_eq!(wait(&mut m, &t), None);
    m.on.insert(Pid(4), CpuId(3));
    let second = wait(&mut m, &t);
    assert!(matches!(second, Some(0..=16)), "{second:?}");
}
