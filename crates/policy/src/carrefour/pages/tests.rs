//! The page table on its own: keys, the statistics window, counting and rebuilding.

use super::*;
use crate::metrics::{DenseNodes, SampleTallies};
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{AccessKind, Sample, SampleSource};
use rondpoint_model::{CpuId, NodeId, Observation, Tid};
use rustc_hash::FxHashSet;

fn page(n: u64) -> PageKey {
    (Pid(7), 0x7f00_0000_0000 + n * 4096, PageSize::Base4K)
}

proptest::proptest! {
    /// Starting a slot afresh with a sample is forgetting its statistics, then counting
    /// the sample, and marking it tracked.
    #[test]
    fn restarting_is_resetting_then_recording(
        counts in proptest::collection::vec((0usize..10, proptest::bool::ANY), 0..6),
        marks in 0u8..=255,
        home in proptest::option::of(0usize..4),
        node in 0usize..70,
        write in proptest::bool::ANY,
    ) {
        let mut slot = Slot { marks, ..Slot::default() };
        for (n, w) in counts {
            slot.record(n, w);
        }
        if let Some(h) = home {
            slot.set_home(h);
        }
        let mut expected = slot;
        expected.reset_stats();
        expected.record(node, write);
        expected.marks |= TRACKED;
        slot.restart(node, write);
        proptest::prop_assert_eq!(format!("{slot:?}"), format!("{expected:?}"));
    }
}

#[test]
fn keys_round_trip_for_both_page_sizes_and_the_largest_address() {
    let mut t = PageTable::default();
    for p in [
        page(0),
        (Pid(1), 0x1ff_ffff_ffff_f000, PageSize::Base4K),
        (Pid(i32::MAX), 0x7f00_0020_0000, PageSize::Huge2M),
    ] {
        let space = t.space(p.0, p.2).unwrap();
        let key = t.key(space, p.1).unwrap();
        assert_eq!(t.page(key), p);
    }
    let space = t.space(Pid(1), PageSize::Base4K).unwrap();
    assert_eq!(t.key(space, 1 << 57), None, "beyond 57-bit addresses");
}

#[test]
fn statistics_last_one_epoch_and_marks_last_for_good() {
    let mut t = PageTable::default();
    t.begin_epoch(1, 1, 1);
    let i = t.entry_for(&page(1)).unwrap();
    t.touch(i);
    t.slot_mut(i).record(2, true);
    t.slot_mut(i).add_collapses(70);
    assert_eq!(t.tracked(), 1);
    assert_eq!(t.get(&page(1)).unwrap().1.samples, 1);
    assert_eq!(t.get(&page(1)).unwrap().1.collapses(), 31, "saturates");
    t.begin_epoch(2, 1, 1);
    assert_eq!(t.tracked(), 0);
    assert!(!t.is_current(i));
    t.touch(i);
    let s = t.slot(i);
    assert_eq!((s.samples, s.writes, s.node_mask), (0, 0, 0), "afresh");
    assert_eq!(s.collapses(), 31);
}

/// A sample of page `n` from node `node`, by `source`.
fn sample(n: u64, node: u16, source: SampleSource) -> Sample {
    Sample {
        pid: Pid(7),
        tid: Tid(7),
        cpu: CpuId(0),
        node: NodeId(node),
        addr: page(n).1 + 8,
        page_size: PageSize::Base4K,
        kind: AccessKind::Read,
        source,
        latency_cycles: None,
        dram: None,
        home_node: Some(NodeId(0)),
    }
}

/// Counts `samples` into `t` in a new epoch with a fixed fault-sample window, on a 2-node
/// machine.
fn epoch(t: &mut PageTable, epoch: u64, window: u32, samples: &[Sample]) -> SampleTallies {
    epoch_within(t, epoch, (window, window), samples)
}

/// [`epoch`], with the fault-sample window measured within `(min, max)`.
fn epoch_within(
    t: &mut PageTable,
    epoch: u64,
    (min, max): (u32, u32),
    samples: &[Sample],
) -> SampleTallies {
    let topo = TopologyBuilder::new(2).build().unwrap();
    let mut tallies = SampleTallies::default();
    t.begin_epoch(epoch, min, max);
    t.count(
        samples,
        &DenseNodes::new(&topo),
        &mut FxHashSet::default(),
        100,
        &mut tallies,
    );
    tallies
}

#[test]
fn fault_samples_are_kept_over_the_window_and_ibs_samples_one_epoch() {
    let mut t = PageTable::default();
    // Pages 0-2 by page faults, pages 10-11 by IBS, in epoch 10.
    let mut samples: Vec<Sample> = (0..3)
        .map(|n| sample(n, 1, SampleSource::PageFault))
        .collect();
    samples.extend((10..12).map(|n| sample(n, 1, SampleSource::Ibs)));
    epoch(&mut t, 10, 3, &samples);
    assert_eq!(t.tracked(), 5);
    // The next epoch, with nothing sampled: the fault-sampled pages are still current.
    epoch(&mut t, 11, 3, &[]);
    assert_eq!(t.tracked(), 3);
    assert!(t.get(&page(10)).is_some_and(|(i, _)| !t.is_current(i)));
    // A sample in the window's last epoch adds to what it holds.
    epoch(&mut t, 12, 3, &[sample(0, 0, SampleSource::PageFault)]);
    let (i, s) = t.get(&page(0)).unwrap();
    assert!(t.is_current(i));
    assert_eq!((s.samples, s.node_mask), (2, 0b11));
    // Beyond the window, the pages not sampled since epoch 10 are gone.
    epoch(&mut t, 13, 3, &[]);
    assert_eq!(t.tracked(), 1, "page 0, sampled in epoch 12");
    epoch(&mut t, 15, 3, &[]);
    assert_eq!(t.tracked(), 0);
}

#[test]
fn the_fault_window_grows_to_hold_the_gaps_between_faults_and_shrinks_back() {
    let mut t = PageTable::default();
    let faults = |node| -> Vec<Sample> {
        (0..10)
            .map(|n| sample(n, node, SampleSource::PageFault))
            .collect()
    };
    // Pages faulted in epoch 1, then 11 epochs later: the window (8 at least) grows to 32,
    // twice the power of two above the gap, and the next fault, 11 epochs later again, adds
    // to the one before.
    epoch_within(&mut t, 1, (8, 256), &faults(1));
    for e in 2..12 {
        epoch_within(&mut t, e, (8, 256), &[]);
        assert_eq!(t.window(), 8, "nothing measured yet");
    }
    epoch_within(&mut t, 12, (8, 256), &faults(0));
    assert_eq!(
        t.get(&page(0)).unwrap().1.samples,
        1,
        "the first had expired"
    );
    epoch_within(&mut t, 13, (8, 256), &[]);
    assert_eq!(t.window(), 32);
    for e in 14..23 {
        epoch_within(&mut t, e, (8, 256), &[]);
    }
    epoch_within(&mut t, 23, (8, 256), &faults(1));
    let (i, s) = t.get(&page(0)).unwrap();
    assert!(t.is_current(i));
    assert_eq!((s.samples, s.node_mask), (2, 0b11));
    // The longest window allowed caps it.
    epoch_within(&mut t, 24, (8, 10), &[]);
    assert_eq!(t.window(), 10);
    // Faults every epoch from then on: once they are most of what is measured (the older
    // gaps weigh less every epoch), the window is back to its shortest.
    let mut e = 25;
    while t.window() > 8 {
        epoch_within(&mut t, e, (8, 256), &faults(1));
        e += 1;
        assert!(e < 60, "the window never shrank: {}", t.window());
    }
    assert!(
        e > 26,
        "one epoch of short gaps is not three quarters of them"
    );
}

#[test]
fn one_process_s_base_and_huge_pages_are_counted_apart_however_their_samples_alternate() {
    // One process, runs of one sample each: a base page, then the huge page holding it
    // (the same address, another page size), and so on. Each sample must be keyed with
    // its own page size, and the runs must not be taken for one.
    let mut t = PageTable::default();
    let huge = |node| Sample {
        page_size: PageSize::Huge2M,
        ..sample(0, node, SampleSource::Ibs)
    };
    let samples = [
        sample(0, 0, SampleSource::Ibs),
        huge(1),
        sample(0, 0, SampleSource::Ibs),
        huge(1),
        huge(1),
    ];
    epoch(&mut t, 1, 1, &samples);
    let base = t.get(&page(0)).map(|(_, s)| (s.samples, s.node_mask));
    let start = page(0).1 & !(PageSize::Huge2M.bytes() - 1);
    let huge = t
        .get(&(Pid(7), start, PageSize::Huge2M))
        .map(|(_, s)| (s.samples, s.node_mask));
    assert_eq!(base, Some((2, 0b01)));
    assert_eq!(huge, Some((3, 0b10)));
    assert_eq!(t.tracked(), 2);
}

#[test]
fn counting_tallies_every_sample_by_process() {
    let mut t = PageTable::default();
    let mut samples = vec![
        sample(0, 0, SampleSource::Ibs),
        sample(1, 1, SampleSource::HintingFault),
        Sample {
            addr: 1 << 60,
            ..sample(2, 0, SampleSource::Ibs)
        },
    ];
    samples.push(Sample {
        pid: Pid(8),
        home_node: None,
        ..sample(3, 1, SampleSource::Ibs)
    });
    samples.push(sample(4, 1, SampleSource::PageFault));
    let tallies = epoch(&mut t, 1, 1, &samples);
    let topo = TopologyBuilder::new(2).build().unwrap();
    // Every sample is tallied, whether counted into a page or not (the first hinting fault
    // of a page, an address beyond 57 bits), and a process's runs add up.
    assert_eq!(tallies, SampleTallies::of(&samples, &topo));
    let apps = crate::metrics::per_app_with(&Observation::default(), &topo, tallies);
    assert_eq!(
        apps.iter()
            .map(|a| (a.pid, a.samples, a.fault_samples))
            .collect::<Vec<_>>(),
        vec![(Pid(7), 4, 2), (Pid(8), 1, 0)]
    );
    assert_eq!(
        apps[0].lar,
        Some(0.5),
        "homed on node 0, from nodes 0, 1, 0 and 1"
    );
    assert_eq!(apps[1].lar, None);
}

#[test]
fn growing_keeps_what_matters_and_drops_the_rest() {
    let mut t = PageTable::default();
    t.begin_epoch(1, 1, 1);
    // A replicated page from another process, then many pages sampled in epoch 1.
    let r = (Pid(9), 0x1000, PageSize::Base4K);
    let i = t.entry_for(&r).unwrap();
    t.slot_mut(i).set_replicated(true);
    for n in 0..5000 {
        let i = t.entry_for(&page(n)).unwrap();
        t.touch(i);
        t.slot_mut(i).record((n % 4) as usize, false);
    }
    assert!(t.slots.len() >= 5001 && t.slots.len().is_power_of_two());
    assert!(4 * t.used <= 3 * t.slots.len());
    for n in 0..5000 {
        let s = t.get(&page(n)).unwrap().1;
        assert_eq!(s.by_node[(n % 4) as usize], 1);
    }
    // The current slots are still listed in first-sample order, at their new places.
    let listed: Vec<PageKey> = t
        .current()
        .iter()
        .map(|&i| t.page(t.slot(i as usize).packed_key()))
        .collect();
    assert_eq!(listed, (0..5000).map(page).collect::<Vec<_>>());
    // Next epoch: 5000 other pages; the stale ones go at the next rebuild, and with them
    // a space nothing is kept for.
    t.begin_epoch(2, 1, 1);
    let gone = t.entry_for(&(Pid(11), 0x1000, PageSize::Base4K)).unwrap();
    t.slot_mut(gone).add_collapses(0);
    for n in 5000..10_000 {
        let i = t.entry_for(&page(n)).unwrap();
        t.touch(i);
    }
    t.rebuild(0, true);
    assert!(t.get(&page(0)).is_none(), "stale and not remembered");
    assert!(t.get(&page(9999)).is_some());
    assert!(t.get(&r).unwrap().1.replicated());
    assert_eq!(t.tracked(), 5000);
    assert!(4 * t.used <= 3 * t.slots.len());
    assert_eq!(t.spaces.len(), 2, "both spaces keep something");
}

#[test]
fn a_slot_unsampled_for_longer_than_the_epoch_counter_wraps_is_not_current() {
    let mut t = PageTable::default();
    t.begin_epoch(1, 1, 1);
    let i = t.entry_for(&page(1)).unwrap();
    t.touch(i);
    t.slot_mut(i).set_replicated(true);
    for e in (2..=65_537).step_by(1024) {
        t.begin_epoch(e, 1, 1);
    }
    t.begin_epoch(65_537, 1, 1);
    let i = t.get(&page(1)).unwrap().0;
    assert!(!t.is_current(i));
    assert!(t.slot(i).replicated());
}
