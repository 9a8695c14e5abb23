//! Engine tests against a scripted fake machine.

use super::*;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{
    Capability, Need, NodeId, OutcomeStatus, PageCounts, PageRange, PageSize, Pid,
};
use rondpoint_policy_api::Refusal;
use std::convert::Infallible;

/// Runs for `epochs` observations, records every action applied.
struct Fake {
    topo: Topology,
    epochs_left: u32,
    observed_until: Vec<u64>,
    applied: Vec<Action>,
    caps: Capabilities,
    started: bool,
    interrupts: u32,
    /// Holds a start decision that moves an application until this many observations, then
    /// carries it out on pid 7 (a launched program, named by a placeholder before it ran).
    moves_after: Option<usize>,
}

impl Fake {
    fn new(epochs: u32) -> Self {
        Self {
            topo: TopologyBuilder::new(2).build().unwrap(),
            epochs_left: epochs,
            observed_until: Vec::new(),
            applied: Vec::new(),
            caps: Capabilities::all(),
            started: false,
            interrupts: 0,
            moves_after: None,
        }
    }

    /// A machine that launches its program, which runs from the `runs_after`-th observation.
    fn launching(epochs: u32, runs_after: usize) -> Self {
        Self {
            moves_after: Some(runs_after),
            ..Self::new(epochs)
        }
    }

    fn with_capabilities(caps: Capabilities) -> Self {
        Self {
            caps,
            ..Self::new(1)
        }
    }
}

impl Machine for Fake {
    type Error = Infallible;
    fn topology(&self) -> &Topology {
        &self.topo
    }
    fn capabilities(&mut self) -> Capabilities {
        self.caps.clone()
    }
    fn processes(&self) -> Vec<ProcessInfo> {
        vec![ProcessInfo {
            pid: Pid(1),
            comm: "x".into(),
            threads: vec![],
            resident_bytes_by_node: vec![],
            mapping_policies: Vec::new(),
        }]
    }
    fn observe(&mut self, until_ns: u64) -> Result<Observation, Infallible> {
        self.epochs_left -= 1;
        self.observed_until.push(until_ns);
        Ok(Observation::default())
    }
    fn apply(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, Infallible> {
        self.applied.extend_from_slice(actions);
        Ok(actions
            .iter()
            .enumerate()
            .map(|(i, a)| Outcome {
                action: i,
                status: OutcomeStatus::Applied,
                pages_requested: a.pages(),
                pages_done: a.pages(),
                pages_moved: a.pages(),
                bytes_copied: 0,
                failures: vec![],
                note: None,
            })
            .collect())
    }
    fn start(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, Infallible> {
        self.started = true;
        self.apply(actions)
    }
    fn start_ready(&self, action: &Action) -> Option<Action> {
        match (self.moves_after, action) {
            (
                Some(n),
                &Action::MoveApplication {
                    to, with_memory, ..
                },
            ) => (self.observed_until.len() >= n).then_some(Action::MoveApplication {
                pid: Pid(7),
                to,
                with_memory,
            }),
            _ => Some(action.clone()),
        }
    }
    fn finished(&self) -> bool {
        self.epochs_left == 0
    }
    fn interrupt(&mut self, signal: i32) {
        assert_eq!(signal, 15, "the signal received is passed on");
        self.interrupts += 1;
    }
}

/// Runs `policy` on `machine` on a virtual clock, without looking at the epochs.
fn run_quietly<M: Machine>(
    machine: &mut M,
    policy: &mut dyn Policy,
    config: &EngineConfig,
) -> Result<Accounting, EngineError> {
    run(
        machine,
        policy,
        &mut VirtualClock::default(),
        config,
        |_| {},
    )
}

/// Asks to migrate `n` one-page ranges every epoch.
struct Mover(u64);

impl Policy for Mover {
    fn name(&self) -> &str {
        "mover"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        (0..self.0)
            .map(|i| Action::MigratePages {
                range: PageRange::new(Pid(1), i * 4096, 1, PageSize::Base4K).unwrap(),
                to: NodeId(1),
            })
            .collect()
    }
}

#[test]
fn epochs_follow_the_clock_until_the_machine_finishes() {
    let mut m = Fake::new(3);
    let mut clock = VirtualClock::default();
    let mut seen = Vec::new();
    let acct = run(
        &mut m,
        &mut Mover(0),
        &mut clock,
        &EngineConfig::default(),
        |r| seen.push(r.epoch),
    )
    .unwrap();
    assert_eq!(
        m.observed_until,
        vec![1_000_000_000, 2_000_000_000, 3_000_000_000]
    );
    assert_eq!(seen, vec![0, 1, 2]);
    assert_eq!(acct.epochs, 3);
}

#[test]
fn rate_limit_refuses_the_excess_and_accounts_for_it() {
    let mut m = Fake::new(2);
    let cfg = EngineConfig {
        limits: RateLimits {
            max_pages_per_epoch: Some(3),
            max_bytes_per_epoch: None,
        },
        ..EngineConfig::default()
    };
    let acct = run_quietly(&mut m, &mut Mover(5), &cfg).unwrap();
    assert_eq!(m.applied.len(), 6, "3 per epoch for 2 epochs");
    let t = &acct.by_technique["migrate"];
    assert_eq!((t.actions, t.applied, t.skipped), (10, 6, 4));
    assert_eq!(acct.pages_done("migrate"), 6);
}

#[test]
fn byte_limit_applies_too() {
    let limits = RateLimits {
        max_pages_per_epoch: None,
        max_bytes_per_epoch: Some(2 * 4096),
    };
    let (a, r) = limits.admit(&Mover(3).decide(&Fake::new(1).topo, &Observation::default()));
    assert_eq!((a, r), (vec![0, 1], vec![2]));
}

#[test]
fn dry_run_applies_nothing_and_reports_everything() {
    let mut m = Fake::new(2);
    let mut reported = 0;
    let acct = run(
        &mut m,
        &mut Mover(2),
        &mut VirtualClock::default(),
        &dry(),
        |r| {
            assert!(r.outcomes.iter().all(
                |o| o.status == OutcomeStatus::Skipped && o.note.as_deref() == Some("dry run")
            ));
            reported += r.actions.len();
        },
    )
    .unwrap();
    assert_eq!(reported, 4);
    assert!(m.applied.is_empty());
    assert_eq!(acct.by_technique["migrate"].skipped, 4);

    // Start decisions too: the program starts without them.
    let mut m = Fake::new(1);
    let acct = run_quietly(&mut m, &mut SetsMemPolicy, &dry()).unwrap();
    assert!(m.applied.is_empty());
    assert_eq!(acct.by_technique["set-mempolicy"].skipped, 1);
}

fn dry() -> EngineConfig {
    EngineConfig {
        dry_run: true,
        ..EngineConfig::default()
    }
}

/// Migrates six one-page ranges each epoch; keeps the outcomes it is told of.
#[derive(Default)]
struct Listener {
    told: Vec<Vec<(Action, OutcomeStatus, Option<String>)>>,
}

impl Policy for Listener {
    fn name(&self) -> &str {
        "listener"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn decide(&mut self, t: &Topology, obs: &Observation) -> Vec<Action> {
        Mover(6).decide(t, obs)
    }
    fn outcomes(&mut self, actions: &[Action], outcomes: &[Outcome]) {
        self.told.push(
            actions
                .iter()
                .zip(outcomes)
                .map(|(a, o)| (a.clone(), o.status, o.note.clone()))
                .collect(),
        );
    }
}

#[test]
fn the_policy_is_told_every_outcome_including_refusals_and_dry_runs() {
    // Start (nothing), then two epochs of six migrations, the sixth refused by the rate limit.
    let mut p = Listener::default();
    let config = EngineConfig {
        limits: RateLimits {
            max_pages_per_epoch: Some(5),
            max_bytes_per_epoch: None,
        },
        ..EngineConfig::default()
    };
    let mut reported = Vec::new();
    run(
        &mut Fake::new(2),
        &mut p,
        &mut VirtualClock::default(),
        &config,
        |r| reported.push(r.outcomes.len()),
    )
    .unwrap();
    assert_eq!(p.told.len(), 3);
    assert!(p.told[0].is_empty());
    for epoch in &p.told[1..] {
        let statuses: Vec<OutcomeStatus> = epoch.iter().map(|t| t.1).collect();
        assert_eq!(statuses[..5], [OutcomeStatus::Applied; 5]);
        assert_eq!(statuses[5], OutcomeStatus::Skipped);
        assert_eq!(epoch[5].2.as_deref(), Some("rate limit"));
    }
    assert_eq!(
        reported,
        vec![6, 6],
        "what the policy is told is what is reported"
    );

    let mut p = Listener::default();
    run_quietly(&mut Fake::new(1), &mut p, &dry()).unwrap();
    assert!(
        p.told[1]
            .iter()
            .all(|t| t.1 == OutcomeStatus::Skipped && t.2.as_deref() == Some("dry run"))
    );
}

#[test]
fn start_actions_are_applied_before_the_first_epoch() {
    let mut m = Fake::new(1);
    let mut p = SetsMemPolicy;
    run_quietly(&mut m, &mut p, &EngineConfig::default()).unwrap();
    assert!(matches!(
        m.applied.as_slice(),
        [Action::SetMemPolicy { .. }]
    ));
}

/// Sets an allocation policy and moves the application to node 1 at the start; keeps the
/// outcomes it is told of.
#[derive(Default)]
struct PlacesAtStart {
    told: Vec<(Action, OutcomeStatus)>,
}

impl Policy for PlacesAtStart {
    fn name(&self) -> &str {
        "places-at-start"
    }
    fn needs(&self) -> Vec<Need> {
        Vec::new()
    }
    fn start(&mut self, t: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let mut actions = SetsMemPolicy.start(t, processes);
        actions.push(Action::MoveApplication {
            pid: processes[0].pid,
            to: NodeId(1),
            with_memory: false,
        });
        actions
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
    fn outcomes(&mut self, actions: &[Action], outcomes: &[Outcome]) {
        self.told.extend(
            actions
                .iter()
                .cloned()
                .zip(outcomes.iter().map(|o| o.status)),
        );
    }
}

#[test]
fn start_decisions_that_wait_for_the_program_are_carried_out_once_it_runs() {
    let mut m = Fake::launching(3, 2);
    let mut p = PlacesAtStart::default();
    let mut listed = 0;
    let acct = run(
        &mut m,
        &mut p,
        &mut VirtualClock::default(),
        &EngineConfig::default(),
        |r| listed += r.actions.len(),
    )
    .unwrap();
    // The allocation policy at the start; the move after the second observation, on the
    // program as the machine names it then.
    let moved = Action::MoveApplication {
        pid: Pid(7),
        to: NodeId(1),
        with_memory: false,
    };
    assert!(matches!(m.applied[0], Action::SetMemPolicy { .. }));
    assert_eq!(m.applied[1..], *std::slice::from_ref(&moved));
    assert_eq!(p.told.len(), 2);
    assert_eq!(p.told[1], (moved, OutcomeStatus::Applied));
    assert_eq!(acct.by_technique["move-application"].applied, 1);
    assert_eq!(
        acct.deferred,
        vec![
            "1 start decision (move-application) carried out at epoch 1, the first that saw the \
             program running (not possible before it started)"
                .to_string()
        ]
    );
    // They are the start's, not an epoch's decisions (a replay compares those).
    assert_eq!(listed, 0);
}

#[test]
fn start_decisions_still_waiting_when_the_run_ends_are_reported_skipped() {
    let mut m = Fake::launching(2, 5);
    let mut p = PlacesAtStart::default();
    let acct = run_quietly(&mut m, &mut p, &EngineConfig::default()).unwrap();
    assert_eq!(m.applied.len(), 1, "{:?}", m.applied);
    assert_eq!(acct.by_technique["move-application"].skipped, 1);
    assert_eq!(p.told[1].1, OutcomeStatus::Skipped);
    assert!(
        acct.deferred[0].starts_with(
            "1 start decision (move-application) not carried out: the program was not seen \
             running before the run ended"
        ),
        "{:?}",
        acct.deferred
    );
    // A dry run holds nothing back: every start decision is reported skipped at once.
    let mut m = Fake::launching(1, 0);
    let acct = run_quietly(&mut m, &mut PlacesAtStart::default(), &dry()).unwrap();
    assert_eq!(acct.by_technique["move-application"].skipped, 1);
    assert!(acct.deferred.is_empty() && m.applied.is_empty());
}

#[test]
fn zero_epoch_is_refused() {
    let cfg = EngineConfig {
        epoch_ns: 0,
        ..EngineConfig::default()
    };
    let r = run_quietly(&mut Fake::new(1), &mut Mover(0), &cfg);
    assert!(matches!(r, Err(EngineError::ZeroEpoch)));
}

#[test]
fn wall_clock_waits() {
    let mut c = WallClock::new();
    c.wait_until(2_000_000);
    assert!(c.now_ns() >= 2_000_000);
}

#[test]
fn wall_clock_wakes_early_when_done() {
    let mut c = WallClock::new();
    let mut polls = 0;
    c.wait_until_or(60_000_000_000, &mut || {
        polls += 1;
        if polls >= 3 { Poll::Done } else { Poll::Active }
    });
    assert!(c.now_ns() < 5_000_000_000, "returned early");
    assert_eq!(polls, 3);
}

#[test]
fn wall_clock_polls_less_often_while_nothing_happens() {
    use std::time::Duration;
    let ms = Duration::from_millis;
    let mut slice = WallClock::ACTIVE_SLICE;
    let mut quiet = Vec::new();
    for _ in 0..4 {
        slice = WallClock::next_slice(slice, Poll::Quiet).unwrap();
        quiet.push(slice);
    }
    assert_eq!(quiet, [ms(50), ms(100), ms(100), ms(100)]);
    // Work brings it back to the short interval at once; the end stops it.
    assert_eq!(WallClock::next_slice(slice, Poll::Active), Some(ms(25)));
    assert_eq!(WallClock::next_slice(slice, Poll::Done), None);
}

#[test]
fn pages_that_failed_are_accounted_by_reason() {
    let action = |n: u64| Action::MigratePages {
        range: PageRange {
            pid: Pid(1),
            start: 0x1000,
            count: n,
            page_size: PageSize::Base4K,
        },
        to: NodeId(1),
    };
    let mut acc = Accounting::default();
    acc.record(
        &action(10),
        &Outcome::for_pages(
            0,
            PageCounts {
                requested: 10,
                done: 7,
                moved: 5,
                bytes_copied: 5 * 4096,
            },
            vec![("EBUSY".into(), 2), ("ENOENT".into(), 1)],
        ),
    );
    acc.record(&action(4), &Outcome::failed(1, "move_pages: EPERM"));
    acc.record(
        &action(3),
        &Outcome::for_pages(
            2,
            PageCounts {
                requested: 3,
                done: 1,
                moved: 1,
                bytes_copied: 4096,
            },
            vec![("EBUSY".into(), 2)],
        ),
    );
    let t = &acc.by_technique["migrate"];
    assert_eq!((t.applied, t.partial, t.failed), (0, 2, 1));
    assert_eq!(
        (t.pages_done, t.pages_moved),
        (8, 6),
        "pages already in place not moved"
    );
    assert_eq!(
        t.pages_failed_by_reason,
        [("EBUSY", 4), ("ENOENT", 1), ("move_pages: EPERM", 4)]
            .into_iter()
            .map(|(r, n)| (r.to_string(), n))
            .collect()
    );
}

/// A clock that wakes `wakes` times on its way to each target (as a wall clock wakes every
/// 25 ms), and no more once `done` says so.
struct Waking {
    now: u64,
    wakes: u64,
}

impl Clock for Waking {
    fn now_ns(&self) -> u64 {
        self.now
    }
    fn wait_until(&mut self, t_ns: u64) {
        self.now = self.now.max(t_ns);
    }
    fn wait_until_or(&mut self, t_ns: u64, poll: &mut dyn FnMut() -> Poll) {
        let start = self.now;
        for k in 1..=self.wakes {
            self.now = start + (t_ns - start) * k / (self.wakes + 1);
            if poll() == Poll::Done {
                return;
            }
        }
        self.now = t_ns;
    }
}

/// [`Fake`] with a sampler: one sample taken at each drain and one more at each observation,
/// each on its own page (numbered in order); an observation holds the epoch's drained samples,
/// then its own. Its programs finish when `finish_at` samples have been taken.
struct Sampled {
    fake: Fake,
    taken: u64,
    drained: Vec<Sample>,
    finish_at: u64,
}

impl Sampled {
    fn take(&mut self) -> Sample {
        self.taken += 1;
        Sample {
            pid: Pid(1),
            tid: rondpoint_model::Tid(1),
            cpu: rondpoint_model::CpuId(0),
            node: NodeId(0),
            addr: self.taken * 4096,
            page_size: PageSize::Base4K,
            kind: rondpoint_model::AccessKind::Read,
            source: rondpoint_model::SampleSource::PageFault,
            latency_cycles: None,
            dram: None,
            home_node: None,
        }
    }
}

impl Machine for Sampled {
    type Error = Infallible;
    fn topology(&self) -> &Topology {
        self.fake.topology()
    }
    fn capabilities(&mut self) -> Capabilities {
        Capabilities::all()
    }
    fn processes(&self) -> Vec<ProcessInfo> {
        self.fake.processes()
    }
    fn observe(&mut self, until_ns: u64) -> Result<Observation, Infallible> {
        let mut obs = self.fake.observe(until_ns)?;
        let last = self.take();
        obs.samples = std::mem::take(&mut self.drained);
        obs.samples.push(last);
        Ok(obs)
    }
    fn drain_samples(&mut self, out: &mut Vec<Sample>) {
        let s = self.take();
        self.drained.push(s);
        out.push(s);
    }
    fn apply(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, Infallible> {
        self.fake.apply(actions)
    }
    fn finished(&self) -> bool {
        self.fake.finished()
    }
    fn poll_finished(&mut self) -> bool {
        self.taken >= self.finish_at || self.fake.finished()
    }
}

/// Records the pages (numbers) of the samples it is given, with the epoch, by `ingest` and by
/// `decide`.
#[derive(Default)]
struct Counts {
    ingested: Vec<(u64, Vec<u64>)>,
    decided: Vec<(u64, Vec<u64>)>,
}

fn numbers(samples: &[Sample]) -> Vec<u64> {
    samples.iter().map(|s| s.addr / 4096).collect()
}

impl Policy for Counts {
    fn name(&self) -> &str {
        "counts"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn ingest(&mut self, _: &Topology, epoch: u64, samples: &[Sample]) {
        self.ingested.push((epoch, numbers(samples)));
    }
    fn decide(&mut self, _: &Topology, obs: &Observation) -> Vec<Action> {
        self.decided.push((obs.epoch, numbers(&obs.samples)));
        Vec::new()
    }
}

#[test]
fn samples_drained_while_an_epoch_runs_reach_the_policy_before_its_observation() {
    let sampled = |epochs, finish_at| Sampled {
        fake: Fake::new(epochs),
        taken: 0,
        drained: Vec::new(),
        finish_at,
    };
    let mut p = Counts::default();
    let mut m = sampled(2, u64::MAX);
    let acct = run(
        &mut m,
        &mut p,
        &mut Waking { now: 0, wakes: 2 },
        &EngineConfig::default(),
        |_| {},
    )
    .unwrap();
    assert_eq!(
        p.ingested,
        vec![(0, vec![1]), (0, vec![2]), (1, vec![4]), (1, vec![5])]
    );
    assert_eq!(p.decided, vec![(0, vec![1, 2, 3]), (1, vec![4, 5, 6])]);
    assert_eq!(acct.samples_seen, 6, "each sample accounted once");

    // Through a dry run too; and once the programs finish, the epoch ends without another
    // drain (the machine finishes on its second sample).
    let mut p = Counts::default();
    run(
        &mut sampled(1, 2),
        &mut p,
        &mut Waking { now: 0, wakes: 5 },
        &dry(),
        |_| {},
    )
    .unwrap();
    assert_eq!(p.ingested, vec![(0, vec![1]), (0, vec![2])]);
    assert_eq!(p.decided, vec![(0, vec![1, 2, 3])]);

    // A virtual clock does not wake: the observation brings every sample.
    let mut p = Counts::default();
    run(
        &mut sampled(1, u64::MAX),
        &mut p,
        &mut VirtualClock::default(),
        &EngineConfig::default(),
        |_| {},
    )
    .unwrap();
    assert!(p.ingested.is_empty());
    assert_eq!(p.decided, vec![(0, vec![1])]);
}

/// Needs per-thread counters, exactly.
struct Counting;

impl Policy for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        vec![
            rondpoint_model::Need::one(
                rondpoint_model::Capability::ThreadCounters,
                "to compute MPKI",
            )
            .exactly(),
        ]
    }
    fn start(&mut self, _: &Topology, _: &[ProcessInfo]) -> Vec<Action> {
        vec![Action::SetMemPolicy {
            pid: Pid(1),
            policy: rondpoint_model::MemPolicy::Default,
        }]
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

#[test]
fn a_policy_whose_needs_are_unmet_is_refused_before_anything_starts() {
    use rondpoint_model::Support;
    let mut m = Fake::with_capabilities(Capabilities::none().with(
        Capability::ThreadCounters,
        Support::Missing("perf_event_open: ENOENT for PERF_TYPE_HARDWARE".into()),
    ));
    let err = run(
        &mut m,
        &mut Counting,
        &mut VirtualClock::default(),
        &EngineConfig::default(),
        |_| panic!("no epoch may run"),
    )
    .unwrap_err();
    assert!(matches!(err, EngineError::Unsupported(_)));
    assert_eq!(
        err.to_string(),
        "counting cannot run on this machine: it needs per-thread instructions, cycles and LLC \
         misses (thread-counters) to compute MPKI; this machine: thread-counters: \
         perf_event_open: ENOENT for PERF_TYPE_HARDWARE"
    );
    assert!(!m.started && m.applied.is_empty() && m.observed_until.is_empty());
}

/// Manages no process at all.
struct Refusing;

impl Policy for Refusing {
    fn name(&self) -> &str {
        "refusing"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn accepts(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
        Err(Refusal::new(format!(
            "{} processes on {} cores",
            processes.len(),
            topology.cpu_count()
        )))
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

#[test]
fn a_policy_that_cannot_manage_the_processes_is_refused_before_anything_starts() {
    let mut m = Fake::new(1);
    let err = run(
        &mut m,
        &mut Refusing,
        &mut VirtualClock::default(),
        &EngineConfig::default(),
        |_| panic!("no epoch may run"),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "refusing cannot run here: 1 processes on 2 cores"
    );
    assert!(!m.started && m.applied.is_empty());
}

#[test]
fn what_a_policy_runs_without_exactly_is_in_the_accounting() {
    use rondpoint_model::Support;
    let mut m = Fake::with_capabilities(Capabilities::all().with(
        Capability::FaultSamples,
        Support::Estimated("the kernel's own scan".into()),
    ));
    let mut p = WantsFaultSamples;
    let acct = run_quietly(&mut m, &mut p, &EngineConfig::default()).unwrap();
    assert_eq!(acct.reduced.len(), 1);
    assert!(
        acct.reduced[0].contains("the kernel's own scan"),
        "{acct:?}"
    );
}

#[test]
fn a_stop_signal_ends_the_run_or_interrupts_the_machine_once() {
    // A run of `epochs` epochs, the flag set after epoch 1: (epochs run, stopped, interrupts).
    let stopped_after_one = |epochs, on_stop| {
        let flag = Arc::new(AtomicBool::new(false));
        let config = EngineConfig {
            stop: Some(StopSignal {
                flag: Arc::clone(&flag),
                signal: Arc::new(AtomicUsize::new(15)),
                on_stop,
            }),
            ..EngineConfig::default()
        };
        let mut m = Fake::new(epochs);
        let acct = run(
            &mut m,
            &mut Mover(1),
            &mut VirtualClock::default(),
            &config,
            |r| {
                if r.epoch == 1 {
                    flag.store(true, Ordering::Relaxed);
                }
            },
        )
        .unwrap();
        (acct.epochs, acct.stopped, m.interrupts)
    };
    // End: the run stops at the next look, without another decision.
    assert_eq!(stopped_after_one(10, OnStop::End), (2, true, 0));
    // Interrupt: the machine is told once and the run goes on until its programs end.
    assert_eq!(stopped_after_one(4, OnStop::Interrupt), (4, false, 1));
}

/// Refuses machines of more than `max_nodes` nodes; says how many epochs it saw.
struct Picky {
    max_nodes: usize,
    epochs: u64,
}

impl Policy for Picky {
    fn name(&self) -> &str {
        "picky"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn accepts(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
        if topology.len() > self.max_nodes {
            return Err(Refusal::new(format!(
                "{} nodes for {} processes",
                topology.len(),
                processes.len()
            )));
        }
        Ok(())
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        self.epochs += 1;
        Vec::new()
    }
    fn notes(&self) -> Vec<String> {
        vec![format!("saw {} epochs", self.epochs)]
    }
}

#[test]
fn a_policy_that_refuses_the_machine_stops_the_run_before_anything_starts() {
    let run_picky = |max_nodes, m: &mut Fake| {
        let mut p = Picky {
            max_nodes,
            epochs: 0,
        };
        run(
            m,
            &mut p,
            &mut VirtualClock::default(),
            &EngineConfig::default(),
            |r| assert!(max_nodes >= 2, "no epoch may run: {}", r.epoch),
        )
    };
    let mut m = Fake::new(2);
    let err = run_picky(1, &mut m).unwrap_err();
    assert!(matches!(err, EngineError::Refused { .. }));
    assert_eq!(
        err.to_string(),
        "picky cannot run here: 2 nodes for 1 processes"
    );
    assert!(!m.started && m.applied.is_empty() && m.observed_until.is_empty());
    let acct = run_picky(2, &mut Fake::new(2)).unwrap();
    assert_eq!(acct.notes, vec!["saw 2 epochs".to_string()]);
}

/// Sets every process's memory policy before it starts, and decides nothing after.
struct SetsMemPolicy;

impl Policy for SetsMemPolicy {
    fn name(&self) -> &str {
        "sets-mempolicy"
    }

    fn needs(&self) -> Vec<Need> {
        vec![Need::one(Capability::MemPolicies, "to set memory policies")]
    }

    fn start(&mut self, _: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        processes
            .iter()
            .map(|p| Action::SetMemPolicy {
                pid: p.pid,
                policy: rondpoint_model::MemPolicy::Interleave {
                    nodes: vec![NodeId(0)],
                },
            })
            .collect()
    }

    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

/// Wants page-fault samples, and makes do with estimated ones.
struct WantsFaultSamples;

impl Policy for WantsFaultSamples {
    fn name(&self) -> &str {
        "wants-fault-samples"
    }

    fn needs(&self) -> Vec<Need> {
        vec![Need::one(
            Capability::FaultSamples,
            "to count hinting faults",
        )]
    }

    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

/// Migrations of 1, 2 and 1 pages, each with its own reason but for the last, which has none.
struct Explaining;

impl Policy for Explaining {
    fn name(&self) -> &str {
        "explaining"
    }
    fn needs(&self) -> Vec<rondpoint_model::Need> {
        Vec::new()
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        [(0, 1), (1, 2), (3, 1)]
            .into_iter()
            .map(|(page, count)| Action::MigratePages {
                range: PageRange::new(Pid(1), page * 4096, count, PageSize::Base4K).unwrap(),
                to: NodeId(1),
            })
            .collect()
    }
    fn reasons(&mut self) -> Vec<Reason> {
        vec![
            Reason::new(1, "lane a", "big").expecting("much"),
            Reason::new(1, "lane b", "small"),
        ]
    }
}

#[test]
fn every_action_keeps_its_reason_through_the_rate_limit_and_into_the_totals() {
    // A two-page limit admits the first and the third; the second comes back refused, last.
    let config = EngineConfig {
        limits: RateLimits {
            max_pages_per_epoch: Some(2),
            max_bytes_per_epoch: None,
        },
        ..EngineConfig::default()
    };
    let mut seen = Vec::new();
    let acct = run(
        &mut Fake::new(1),
        &mut Explaining,
        &mut VirtualClock::default(),
        &config,
        |r| {
            assert!(r.explained.is_consistent(r.actions.len()));
            for (i, a) in r.actions.iter().enumerate() {
                let why = r.explained.of(i).map(|x| x.evidence.clone());
                seen.push((a.pages(), why, r.outcomes[i].status));
            }
        },
    )
    .unwrap();
    let evidence: Vec<Option<&str>> = seen.iter().map(|s| s.1.as_deref()).collect();
    assert_eq!(
        evidence,
        [
            Some("big"),
            Some("the policy gave no reason"),
            Some("small")
        ]
    );
    assert_eq!(seen[2].0, 2);
    assert_eq!(seen[2].2, OutcomeStatus::Skipped);
    let a = &acct.reasons["lane a"];
    assert_eq!((a.actions, a.last_expected.as_deref()), (1, Some("much")));
    assert_eq!(acct.reasons["explaining"].by_technique["migrate"], 1);
}
