//! `mgen verify`: data integrity while pages move under the program.
//!
//! One thread per node owns every node-th page of a buffer first touched on node 0. Each pass,
//! a thread checks the stamps of each of its pages (eight bytes spread over the page, a
//! function of the page's index and its generation), then bumps the generation and writes the
//! new stamps. A page lost, swapped, zeroed or a write dropped while rondpoint moves the page
//! shows as a stamp that does not match. The pages are spread over every node's threads, so
//! a placement policy moves them while they are read and written.

use super::{Machine, PAGE, report_intact, touched};
use anyhow::Result;
use rondpoint_linux::sys::{RealSys, Sys};
use rondpoint_model::Tid;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Offsets of the stamped bytes in a page.
const SPOTS: [usize; 8] = [0, 512, 1024, 1536, 2048, 2560, 3072, PAGE - 1];

fn stamp(page: usize, spot: usize, generation: u32) -> u8 {
    let v = page
        .wrapping_mul(31)
        .wrapping_add(spot * 7)
        .wrapping_add(generation as usize * 13)
        .wrapping_add(7);
    (v % 251) as u8
}

/// Pages stamped wrong at a check, and passes made, by one thread until `deadline`.
fn own_pages(buf: &[AtomicU8], first: usize, step: usize, deadline: Instant) -> (u64, u64) {
    let pages: Vec<usize> = (first..buf.len() / PAGE).step_by(step).collect();
    let mut generation = vec![0u32; pages.len()];
    let write = |i: usize, g: u32| {
        for (s, &off) in SPOTS.iter().enumerate() {
            buf[i * PAGE + off].store(stamp(i, s, g), Ordering::Relaxed);
        }
    };
    for &i in &pages {
        write(i, 0);
    }
    let (mut bad, mut passes) = (0u64, 0u64);
    while Instant::now() < deadline {
        for (k, &i) in pages.iter().enumerate() {
            let g = generation[k];
            let intact = SPOTS
                .iter()
                .enumerate()
                .all(|(s, &off)| buf[i * PAGE + off].load(Ordering::Relaxed) == stamp(i, s, g));
            if !intact {
                bad += 1;
            }
            generation[k] = g.wrapping_add(1);
            write(i, generation[k]);
        }
        passes += 1;
        // A breath between passes: with every virtual CPU of the testbed spinning, each page
        // move's TLB shootdown waits for all of them (docs/testbed.md).
        std::thread::sleep(Duration::from_millis(2));
    }
    (bad, passes)
}

/// Runs the threads for `secs`, then reports passes, mismatches and where the pages are.
pub(super) fn run(m: Machine, mib: usize, secs: f64) -> Result<()> {
    m.pin(0)?;
    let buffer = touched(mib)?;
    let buf = buffer.bytes();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let nodes = m.nodes;
    let results: Vec<Result<(u64, u64)>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..nodes)
            .map(|node| {
                let cpus = m.cpus_of(node);
                s.spawn(move || -> Result<(u64, u64)> {
                    RealSys::new()
                        .sched_setaffinity(Tid(0), &cpus)
                        .map_err(|e| anyhow::anyhow!("pinning: {e}"))?;
                    Ok(own_pages(buf, node, nodes, deadline))
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .map_err(|_| anyhow::anyhow!("a verify thread panicked"))?
            })
            .collect()
    });
    let (mut bad, mut min_passes) = (0u64, u64::MAX);
    for r in results {
        let (b, p) = r?;
        bad += b;
        min_passes = min_passes.min(p);
    }
    println!(
        "mgen verify pages={} min_passes={min_passes} bad={bad}",
        buf.len() / PAGE
    );
    report_intact(&m, buf, usize::try_from(bad).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_left_at_an_old_generation_is_caught() {
        let buf: Vec<AtomicU8> = (0..4 * PAGE).map(|_| AtomicU8::new(0)).collect();
        // Two passes at most in no time: nothing moves the pages, nothing is wrong.
        let (bad, _) = own_pages(&buf, 0, 1, Instant::now() + Duration::from_millis(20));
        assert_eq!(bad, 0);
        // Stamps of consecutive generations differ at every spot.
        for g in 0..300 {
            for s in 0..SPOTS.len() {
                assert_ne!(stamp(5, s, g), stamp(5, s, g + 1));
            }
        }
    }
}
