//! The page-local decisions (section 3.2.2) and the replication guards (section 3.3.2): which
//! pages are co-located, replicated or interleaved, and where to.

use super::*;
use rondpoint_model::OutcomeStatus;
use std::collections::HashMap;

#[test]
fn page_used_from_one_node_is_co_located() {
    let mut c = carrefour();
    let obs = observe(Epoch {
        samples: vec![sample(page(0), 2, 0, true), sample(page(0), 2, 0, false)],
        ..Epoch::default()
    });
    assert_eq!(
        c.decide(&topo(), &obs),
        vec![Action::MigratePages {
            range: range(0, 1),
            to: NodeId(2)
        }]
    );
}

#[test]
fn page_already_local_is_not_moved() {
    let mut c = carrefour();
    let obs = observe(Epoch {
        samples: vec![sample(page(0), 2, 2, false), sample(page(0), 2, 2, false)],
        ..Epoch::default()
    });
    assert!(c.decide(&topo(), &obs).is_empty());
}

#[test]
fn one_sample_is_not_enough() {
    let mut c = carrefour();
    let obs = observe(Epoch {
        samples: vec![sample(page(0), 2, 0, false)],
        ..Epoch::default()
    });
    assert!(c.decide(&topo(), &obs).is_empty());
}

#[test]
fn replication_waits_for_500_candidates_then_replicates_them_all() {
    let mut c = carrefour();
    let obs = observe(Epoch {
        samples: shared_reads(0..300),
        ..Epoch::default()
    });
    assert!(
        c.decide(&topo(), &obs).is_empty(),
        "300 marked pages: not yet"
    );
    // 300 more (200 of them new): 500 marked, all replicated, as one coalesced range.
    let obs = observe(Epoch {
        samples: shared_reads(200..500),
        ..Epoch::default()
    });
    assert_eq!(c.decide(&topo(), &obs), replicated_everywhere(0, 500));
    // Once started, a new candidate is replicated at once; a replicated page is not redone.
    let obs = observe(Epoch {
        samples: [
            shared_reads(0..1),
            vec![
                sample(page(900), 1, 0, false),
                sample(page(900), 3, 0, false),
            ],
        ]
        .concat(),
        ..Epoch::default()
    });
    assert_eq!(c.decide(&topo(), &obs), replicated_everywhere(900, 1));
}

#[test]
fn a_collapse_over_a_range_forgets_the_replica_of_every_page_in_it() {
    // 500 pages replicated; the backend then reports pages 100-399 collapsed as one range (a
    // backend that cannot replicate says so for the whole action): those pages are candidates
    // again and are replicated again once sampled; the others are not redone. (Collapses for
    // most of an application's replicas stop it replicating: not checked here.)
    let mut c = Carrefour::new(CarrefourConfig {
        max_collapsed_fraction: 1.0,
        ..paper()
    })
    .unwrap();
    let again = replicate_then_collapse(&mut c, shared_reads(0..500), range(100, 300));
    assert_eq!(again, replicated_everywhere(100, 300));
}

/// Has `c` replicate pages 0-499 (checked), then decides on an epoch with `samples` in which
/// the backend reports `collapsed` collapsed.
fn replicate_then_collapse(
    c: &mut Carrefour,
    samples: Vec<Sample>,
    collapsed: PageRange,
) -> Vec<Action> {
    let obs = observe(Epoch {
        samples: shared_reads(0..500),
        ..Epoch::default()
    });
    assert_eq!(c.decide(&topo(), &obs), replicated_everywhere(0, 500));
    let mut obs = observe(Epoch {
        samples,
        collapses: vec![Collapse {
            page: collapsed,
            count: 1,
        }],
        ..Epoch::default()
    });
    obs.epoch = 1;
    c.decide(&topo(), &obs)
}

#[test]
fn an_application_whose_replicas_mostly_collapse_stops_replicating() {
    let mut c = carrefour();
    // 250 of its 500 replicas collapse: its writes reach the pages it reads.
    let actions = replicate_then_collapse(&mut c, shared_reads(0..1000), range(0, 250));
    assert!(!c.last_decisions()[0].replication);
    assert!(
        actions
            .iter()
            .all(|a| !matches!(a, Action::Replicate { .. }))
    );
    // (Replications that left no replica do not count: see
    // `replications_that_left_no_replica_are_asked_for_again`.)
}

#[test]
fn write_heavy_application_interleaves_instead_of_replicating() {
    let mut c = carrefour();
    let obs = observe(Epoch {
        app_writes: 40_000, // MRR 90% < 95%
        samples: shared_reads(0..600),
        ..Epoch::default()
    });
    let actions = c.decide(&topo(), &obs);
    assert!(!c.last_decisions()[0].replication);
    assert!(!actions.is_empty());
    // Node 0 serves all the traffic: P_migrate = 1 for pages there, and P_node is 0 for node 0
    // itself, so every page moves off node 0.
    let moved: u64 = actions
        .iter()
        .map(|a| match a {
            Action::Interleave { range, nodes } => {
                assert_eq!(nodes.len(), 1);
                assert_ne!(nodes[0], NodeId(0));
                range.count
            }
            other => panic!("unexpected {other:?}"),
        })
        .sum();
    assert_eq!(moved, 600);
}

#[test]
fn a_written_page_is_not_replicated() {
    let mut c = carrefour();
    let mut samples = shared_reads(0..600);
    samples.push(sample(page(7), 3, 0, true));
    let obs = observe(Epoch {
        samples,
        ..Epoch::default()
    });
    let actions = c.decide(&topo(), &obs);
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, Action::Interleave { range, .. } if range.contains(page(7))))
    );
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, Action::Replicate { range, .. } if range.contains(page(7))))
    );
}

#[test]
fn pages_that_collapsed_more_than_five_times_are_not_replicated_again() {
    let mut c = carrefour();
    let collapses = vec![Collapse {
        page: range(3, 1),
        count: 6,
    }];
    let obs = observe(Epoch {
        samples: shared_reads(0..600),
        collapses,
        ..Epoch::default()
    });
    let actions = c.decide(&topo(), &obs);
    let replicated: Vec<&PageRange> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Replicate { range, .. } => Some(range),
            _ => None,
        })
        .collect();
    assert_eq!(replicated.iter().map(|r| r.count).sum::<u64>(), 599);
    assert!(!replicated.iter().any(|r| r.contains(page(3))));
}

#[test]
fn interleave_destinations_follow_p_node() {
    // Traffic served: node 0 60%, node 1 10%, node 2 10%, node 3 20%. Pages on node 0 move away
    // with P_migrate = 0.6, to nodes 1, 2, 3 in proportion to 0.9 : 0.9 : 0.8.
    let n_pages = 6000u64;
    let samples: Vec<Sample> = (0..n_pages)
        .flat_map(|i| [sample(page(i), 1, 0, true), sample(page(i), 2, 0, false)])
        .collect();
    let obs = observe(Epoch {
        served: [600_000, 100_000, 100_000, 200_000],
        local: [150_000, 25_000, 25_000, 50_000],
        app_accesses: 1_000_000,
        samples,
        ..Epoch::default()
    });
    let mut c = Carrefour::new(CarrefourConfig {
        max_tracked_pages: 10_000,
        ..paper()
    })
    .unwrap();
    let mut to = [0u64; 4];
    for a in c.decide(&topo(), &obs) {
        if let Action::Interleave { range, nodes } = a {
            to[usize::from(nodes[0].0)] += range.count;
        }
    }
    let moved: u64 = to.iter().sum();
    let p_migrate = moved as f64 / n_pages as f64;
    assert!((p_migrate - 0.6).abs() < 0.03, "P_migrate {p_migrate}");
    assert_eq!(to[0], 0);
    for (n, w) in [(1, 0.9), (2, 0.9), (3, 0.8)] {
        let share = to[n] as f64 / moved as f64;
        assert!((share - w / 2.6).abs() < 0.03, "node {n}: {share}");
    }
}

proptest! {
    #[test]
    fn no_decision_on_a_page_with_fewer_than_two_samples(samples in arb_samples(), writes in 0u64..100_000) {
        let mut c = carrefour();
        let counts: HashMap<u64, usize> = samples.iter().fold(HashMap::new(), |mut m, s| {
            *m.entry(s.page()).or_default() += 1;
            m
        });
        let obs = observe(Epoch { samples, app_writes: writes, ..Epoch::default() });
        for a in c.decide(&topo(), &obs) {
            let r = match &a {
                Action::MigratePages { range, .. } | Action::Interleave { range, .. } | Action::Replicate { range, .. } => *range,
                other => panic!("unexpected {other:?}"),
            };
            for p in r.page_starts() {
                prop_assert!(counts.get(&p).copied().unwrap_or(0) >= 2, "page {p:#x} acted on with < 2 samples");
            }
        }
    }
}

/// The outcome of a replication of one page, as a backend reports it.
fn replication_outcome(status: OutcomeStatus, done: u64) -> Outcome {
    Outcome {
        action: 0,
        status,
        pages_requested: 500,
        pages_done: done,
        pages_moved: done,
        bytes_copied: 0,
        failures: Vec::new(),
        note: None,
    }
}

#[test]
fn replications_that_left_no_replica_are_asked_for_again() {
    // 500 pages replicated; the outcome says what was made. Where no replica was made and the
    // pages were not placed otherwise either (skipped by a dry run or a rate limit, failed,
    // partly made, substituted with pages left over), the pages are candidates again at the
    // next decision; where a substitute placed them all, or replicas were made, they are not.
    let cases = [
        (OutcomeStatus::Skipped, 0, true),
        (OutcomeStatus::Failed, 0, true),
        (OutcomeStatus::Partial, 300, true),
        (OutcomeStatus::Substituted, 499, true),
        (OutcomeStatus::Substituted, 500, false),
        (OutcomeStatus::Applied, 500, false),
    ];
    for (status, done, again) in cases {
        let mut c = carrefour();
        let obs = observe(Epoch {
            samples: shared_reads(0..500),
            ..Epoch::default()
        });
        let asked = c.decide(&topo(), &obs);
        assert_eq!(asked, replicated_everywhere(0, 500));
        c.outcomes(&asked, &[replication_outcome(status, done)]);
        let mut obs = observe(Epoch {
            samples: shared_reads(0..500),
            ..Epoch::default()
        });
        obs.epoch = 1;
        let expected = if again {
            replicated_everywhere(0, 500)
        } else {
            Vec::new()
        };
        assert_eq!(c.decide(&topo(), &obs), expected, "{status:?} {done}");
    }
}
