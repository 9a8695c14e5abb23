use super::*;
use proptest::prelude::*;
use rondpoint_model::{NodeId, ThreadCounters, Tid};

/// An epoch in which each (pid, instructions) retired that many instructions in 10^9 cycles.
fn epoch(epoch: u64, apps: &[(i32, u64)]) -> Observation {
    let mut obs = Observation {
        epoch,
        ..Observation::default()
    };
    obs.counters.duration_ns = 1_000_000_000;
    for &(pid, instructions) in apps {
        obs.counters.threads.push(ThreadCounters {
            pid: Pid(pid),
            tid: Tid(pid),
            node: NodeId(0),
            instructions,
            cycles: 1_000_000_000,
            ..ThreadCounters::default()
        });
    }
    obs
}

/// Runs the guard over `epochs` epochs of one program whose instruction count in an epoch is
/// `rate(working)` (a model with its own state: placement the work left behind). Returns
/// whether the policy worked in each epoch.
fn run(cfg: GuardConfig, epochs: u64, mut rate: impl FnMut(bool) -> u64) -> Vec<bool> {
    let mut g = Guard::new(cfg);
    let mut working = g.working(Pid(7));
    let mut log = Vec::new();
    for e in 0..epochs {
        log.push(working);
        g.observe(&epoch(e, &[(7, rate(working))]));
        working = g.working(Pid(7));
    }
    log
}

fn epochs_where(log: &[bool], working: bool) -> Vec<usize> {
    (0..log.len()).filter(|&i| log[i] == working).collect()
}

#[test]
fn work_that_only_costs_is_rested_for_longer_and_longer() {
    // Working costs 5% and leaves nothing behind.
    let log = run(GuardConfig::default(), 60, |w| if w { 950 } else { 1000 });
    // Two epochs of work and a pause of three (one to settle), then rests of 4, 8 and 16
    // epochs, each followed by two epochs of work and a pause.
    assert_eq!(epochs_where(&log, true), vec![0, 1, 9, 10, 22, 23, 43, 44]);
}

#[test]
fn work_that_keeps_improving_placement_goes_on_with_rarer_pauses() {
    // Each epoch of work leaves the program 2% faster, and costs 5% while it lasts.
    let mut placed = 1000;
    let log = run(GuardConfig::default(), 60, |w| {
        if w {
            placed += 20;
        }
        placed - if w { 50 } else { 0 }
    });
    // The first stretch is judged by its rate while working (the 5% it costs hides the 2%
    // it leaves): a rest. From then on each stretch leaves the program faster at rest:
    // pauses after 2, 4, 8 and 16 epochs of work.
    let rested = epochs_where(&log, false);
    assert_eq!(&rested[..7], &[2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(
        &rested[7..],
        &[11, 12, 13, 18, 19, 20, 29, 30, 31, 48, 49, 50]
    );
}

#[test]
fn work_whose_gain_is_done_is_rested_and_what_it_left_stays() {
    // The first two epochs of work leave the program 30% faster; then there is nothing to do.
    let mut worked = 0;
    let log = run(GuardConfig::default(), 30, |w| {
        worked += u64::from(w);
        1000 + 150 * worked.min(2) - if w { 50 } else { 0 }
    });
    // The work's gain is kept at rest; work after a rest adds nothing, and the next rest is
    // longer.
    assert_eq!(&epochs_where(&log, true)[..4], &[0, 1, 9, 10]);
    assert!(log[11..22].iter().all(|w| !w));
}

#[test]
fn a_gain_below_the_threshold_does_not_keep_work_going() {
    let mut placed = 1000;
    let log = run(GuardConfig::default(), 12, |w| {
        placed += if w { 2 } else { 0 };
        placed
    });
    assert_eq!(epochs_where(&log, true), vec![0, 1, 9, 10]);
}

#[test]
fn without_instruction_counters_or_when_disabled_the_guard_never_rests() {
    let off = GuardConfig {
        enabled: false,
        ..GuardConfig::default()
    };
    assert!(
        run(off, 20, |w| if w { 500 } else { 1000 })
            .iter()
            .all(|&w| w)
    );
    let mut g = Guard::new(GuardConfig::default());
    for e in 0..20 {
        let mut obs = epoch(e, &[(7, 1000)]);
        obs.counters.missing.push(CounterGroup::Instructions);
        g.observe(&obs);
        assert!(g.working(Pid(7)));
        assert_eq!(g.phase(Pid(7)), None);
    }
}

#[test]
fn each_application_is_judged_on_its_own_rate() {
    let mut g = Guard::new(GuardConfig::default());
    let (mut a, mut b) = (g.working(Pid(1)), g.working(Pid(2)));
    let mut verdicts = Vec::new();
    // Work costs pid 1 10%, and makes pid 2 20% faster while it goes on.
    for e in 0..5 {
        g.observe(&epoch(
            e,
            &[
                (1, if a { 900 } else { 1000 }),
                (2, if b { 1200 } else { 1000 }),
            ],
        ));
        (a, b) = (g.working(Pid(1)), g.working(Pid(2)));
        verdicts.extend_from_slice(g.verdicts());
    }
    let calls = |pid| {
        let v = verdicts.iter().filter(|v| v.pid == Pid(pid));
        v.map(|v| v.call).collect::<Vec<_>>()
    };
    assert_eq!(calls(1), vec![Call::Rest]);
    assert_eq!(calls(2), vec![Call::Pays]);
    assert_eq!(g.phase(Pid(1)), Some(Phase::Resting { left: 4 }));
    assert_eq!(g.phase(Pid(2)), Some(Phase::Acting { epochs: 0, of: 4 }));
    // pid 2's first stretch is judged on its rate while working against the pause after it.
    let v = verdicts.iter().find(|v| v.pid == Pid(2));
    assert!(v.is_some_and(|v| (v.before - 1.2e-6).abs() < 1e-12 && (v.after - 1e-6).abs() < 1e-12));
}

#[test]
fn a_rate_that_moves_during_the_pause_gets_another_stretch_of_work() {
    let mut g = Guard::new(GuardConfig::default());
    let mut calls = Vec::new();
    // The program's own rate, whatever the guard does.
    let rates = [1000; 13]
        .into_iter()
        .chain([900; 5])
        .chain([850; 6])
        .chain([800]);
    for (e, rate) in rates.enumerate() {
        g.observe(&epoch(e as u64, &[(1, rate)]));
        calls.extend(g.verdicts().iter().map(|v| v.call));
    }
    // The first stretch gains nothing: rest. The rate falls during the next pause (1000 to
    // 900), which says nothing of the work: another stretch, judged against 900. It falls
    // again during that pause (900 to 850): a rest this time (one retry running), judged
    // from 850, and the fall to 800 ends it early.
    assert_eq!(calls, vec![Call::Rest, Call::Retry, Call::Rest]);
    assert!(matches!(g.phase(Pid(1)), Some(Phase::Acting { .. })));
}

#[test]
fn a_program_that_leaves_is_forgotten() {
    let mut g = Guard::new(GuardConfig::default());
    g.observe(&epoch(0, &[(1, 10), (2, 10)]));
    g.observe(&epoch(1, &[(2, 10)]));
    assert_eq!(g.phase(Pid(1)), None);
    assert!(g.working(Pid(1)));
    assert!(g.phase(Pid(2)).is_some());
}

proptest! {
    /// Whatever the rates, work never stops for longer than a pause and the longest rest.
    #[test]
    fn rests_are_bounded(rates in proptest::collection::vec((1u64..2000, 1u64..2000), 1..200)) {
        let cfg = GuardConfig::default();
        let longest = (cfg.settle_epochs + cfg.trial_epochs + cfg.max_rest_epochs) as usize;
        let mut g = Guard::new(cfg);
        let mut working = g.working(Pid(3));
        let mut idle = 0usize;
        for (e, (on, off)) in rates.iter().enumerate() {
            idle = if working { 0 } else { idle + 1 };
            prop_assert!(idle <= longest);
            g.observe(&epoch(e as u64, &[(3, if working { *on } else { *off })]));
            working = g.working(Pid(3));
        }
    }
}
