//! The global decisions (Figure 4): when Carrefour runs for an application and which
//! mechanisms it may use; and the sampling rate (section 3.3.1).

use super::*;

#[test]
fn quiet_application_is_left_alone_and_not_sampled() {
    let mut c = carrefour();
    let obs = observe(Epoch {
        app_accesses: 40_000, // 40 per µs, under the threshold of 50
        samples: vec![sample(page(0), 2, 0, false), sample(page(0), 2, 0, false)],
        ..Epoch::default()
    });
    assert!(c.decide(&topo(), &obs).is_empty());
    assert!(!c.last_decisions()[0].enabled);
    assert_eq!(c.sampling().period_of(PID), None);
    // A process not seen yet is sampled, from the high rate.
    assert_eq!(c.sampling().period_of(Pid(PID.0 + 1)), Some(65_000));
}

#[test]
fn a_quiet_epoch_does_not_stop_sampling_when_traffic_is_estimated_from_samples() {
    // Without a PMU the samples are the only sign of traffic: an epoch with too few of them
    // disables Carrefour for the epoch, but sampling goes on (slower), or the application
    // could never be seen again.
    let mut c = carrefour();
    let mut obs = observe(Epoch {
        app_accesses: 2,
        samples: vec![sample(page(0), 2, 0, false), sample(page(0), 2, 0, false)],
        ..Epoch::default()
    });
    obs.counters.estimated = vec![rondpoint_model::Estimate {
        group: CounterGroup::ThreadDram,
        how: "sampled accesses".into(),
    }];
    assert!(c.decide(&topo(), &obs).is_empty());
    assert!(!c.last_decisions()[0].enabled);
    assert_eq!(c.sampling().period_of(PID), Some(260_000));
}

#[test]
fn good_locality_disables_co_location() {
    let mut c = carrefour();
    let obs = observe(Epoch {
        served: [100_000, 100_000, 100_000, 100_000],
        local: [90_000, 90_000, 90_000, 90_000], // LAR 90%
        samples: vec![sample(page(0), 2, 0, false), sample(page(0), 2, 0, false)],
        ..Epoch::default()
    });
    assert!(c.decide(&topo(), &obs).is_empty());
    let d = &c.last_decisions()[0];
    assert!(d.enabled && !d.co_location && !d.interleaving);
}

#[test]
fn little_free_memory_disables_replication() {
    let mut c = carrefour();
    let obs = observe(Epoch {
        free_fraction: 0.7, // below 1 - 1/4
        samples: shared_reads(0..600),
        ..Epoch::default()
    });
    c.decide(&topo(), &obs);
    assert!(!c.last_decisions()[0].replication);
    assert!(c.last_decisions()[0].interleaving);
}

#[test]
fn balanced_traffic_is_not_interleaved() {
    let mut c = carrefour();
    let obs = observe(Epoch {
        served: [100_000; 4],
        local: [25_000; 4], // LAR 25%, imbalance 0
        app_writes: 40_000,
        samples: shared_reads(0..10),
        ..Epoch::default()
    });
    assert!(c.decide(&topo(), &obs).is_empty());
    assert!(!c.last_decisions()[0].interleaving);
}

#[test]
fn sampling_slows_down_after_a_quiet_epoch_and_speeds_up_again() {
    let mut c = carrefour();
    assert_eq!(c.sampling().period_cycles, Some(65_000));
    let quiet = observe(Epoch {
        samples: vec![],
        ..Epoch::default()
    });
    c.decide(&topo(), &quiet);
    assert_eq!(c.sampling().by_process, vec![(PID, Some(260_000))]);
    let busy: Vec<Sample> = (0..10)
        .flat_map(|i| [sample(page(i), 2, 0, false), sample(page(i), 2, 0, false)])
        .collect();
    c.decide(
        &topo(),
        &observe(Epoch {
            samples: busy,
            ..Epoch::default()
        }),
    );
    assert_eq!(c.sampling().by_process, vec![(PID, Some(65_000))]);
}

#[test]
fn work_that_leaves_the_program_no_faster_is_rested_unsampled() {
    // With the payoff guard (the default): the program's instructions per cycle never change,
    // whatever Carrefour does, and it keeps finding pages to co-locate.
    let mut c = Carrefour::new(CarrefourConfig::default()).unwrap();
    let mut log = Vec::new();
    for epoch in 0..12 {
        let fresh: Vec<Sample> = (0..20)
            .map(|i| page(epoch * 100 + i))
            .flat_map(|p| [sample(p, 2, 0, false), sample(p, 2, 0, false)])
            .collect();
        let mut obs = observe(Epoch {
            samples: fresh,
            ..Epoch::default()
        });
        obs.epoch = epoch;
        let acted = !c.decide(&topo(), &obs).is_empty();
        log.push((acted, c.sampling().period_of(PID).is_some()));
    }
    // Two epochs of work (sampled, acting); a pause of three (its first epoch takes the moves
    // of the last epoch of work); it left the program no faster than while working: a rest of
    // four; then work again.
    let acted: Vec<bool> = log.iter().map(|l| l.0).collect();
    let sampled: Vec<bool> = log.iter().map(|l| l.1).collect();
    let (t, f) = (true, false);
    assert_eq!(acted, [t, t, f, f, f, f, f, f, f, t, t, f]);
    assert_eq!(sampled, [t, f, f, f, f, f, f, f, t, t, f, f]);
}

#[test]
fn techniques_can_be_switched_off_one_by_one() {
    let cfg = CarrefourConfig {
        techniques: vec![Technique::Interleaving],
        ..paper()
    };
    let mut c = Carrefour::new(cfg).unwrap();
    let mut samples = shared_reads(0..600);
    samples.extend([
        sample(page(1000), 2, 0, false),
        sample(page(1000), 2, 0, false),
    ]);
    let actions = c.decide(
        &topo(),
        &observe(Epoch {
            samples,
            ..Epoch::default()
        }),
    );
    assert!(
        actions
            .iter()
            .all(|a| matches!(a, Action::Interleave { .. })),
        "{actions:?}"
    );
    let d = &c.last_decisions()[0];
    assert!(!d.replication && !d.co_location && d.interleaving);
}

#[test]
fn per_application_mode_judges_the_application_on_its_own_samples() {
    // The machine is balanced and local, but this application's samples all come from node 2
    // for pages on node 0: on its own traffic, LAR is 0 and co-location applies.
    let cfg = CarrefourConfig {
        per_application: true,
        ..paper()
    };
    let mut c = Carrefour::new(cfg).unwrap();
    let obs = observe(Epoch {
        served: [100_000; 4],
        local: [90_000; 4],
        samples: vec![sample(page(0), 2, 0, false), sample(page(0), 2, 0, false)],
        ..Epoch::default()
    });
    assert_eq!(
        c.decide(&topo(), &obs),
        vec![Action::MigratePages {
            range: range(0, 1),
            to: NodeId(2)
        }]
    );
    let mut global = carrefour();
    assert!(
        global.decide(&topo(), &obs).is_empty(),
        "global mode sees LAR 90%"
    );
}

#[test]
fn estimated_counters_enable_on_sample_activity_instead_of_maptu() {
    // Counted traffic far below the MAPTU threshold, but the backend says it is an estimate:
    // 150 samples are enough activity.
    let mut c = carrefour();
    let samples: Vec<Sample> = (0..75)
        .flat_map(|i| [sample(page(i), 2, 0, false), sample(page(i), 2, 0, false)])
        .collect();
    let mut obs = observe(Epoch {
        app_accesses: 150,
        samples,
        ..Epoch::default()
    });
    obs.counters.estimated = vec![rondpoint_model::Estimate {
        group: CounterGroup::ThreadDram,
        how: "sampled accesses".into(),
    }];
    let actions = c.decide(&topo(), &obs);
    assert!(c.last_decisions()[0].enabled);
    assert_eq!(
        actions,
        vec![Action::MigratePages {
            range: range(0, 75),
            to: NodeId(2)
        }]
    );
    // Without the estimate flag, 150 accesses in 1 ms is under the threshold.
    let mut c = carrefour();
    obs.counters.estimated.clear();
    assert!(c.decide(&topo(), &obs).is_empty());
}

proptest! {
    #[test]
    fn never_replicates_below_the_mrr_threshold(samples in arb_samples(), write_share in 0.051f64..1.0) {
        let mut c = carrefour();
        let obs = observe(Epoch {
            samples: [samples, shared_reads(0..600)].concat(),
            app_writes: (400_000.0 * write_share) as u64,
            ..Epoch::default()
        });
        let actions = c.decide(&topo(), &obs);
        let replicates = actions.iter().filter(|a| matches!(a, Action::Replicate { .. })).count();
        prop_assert_eq!(replicates, 0);
    }
}
