//! Ring parser benchmark (not a timed test; `cargo bench -p rondpoint-linux --bench
//! ring_parse`): for each sample_type rondpoint opens an event with, a 64 KiB ring of samples
//! written as the kernel writes them, parsed into rondpoint's records by `ring::parse` and by
//! perf-event-data (framed as `theirs.rs` says); prints records/s of each and their ratio,
//! measured in the same run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)] // the differential test's oracle
mod abi;
mod theirs;

use abi::{Fields, Rec};
use rondpoint_linux::perf::{SampleFormat, parse};
use std::hint::black_box;
use std::time::{Duration, Instant};

const RING_BYTES: usize = 64 * 1024;

/// Samples with varied values (a linear congruential sequence) filling at most RING_BYTES;
/// RAW samples carry an IBS op payload (caps and seven registers, 60 bytes).
fn ring(sample_type: u64) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x
    };
    let mut bytes = Vec::with_capacity(RING_BYTES);
    loop {
        let mut raw = (next() as u32).to_le_bytes().to_vec();
        (0..7).for_each(|_| raw.extend_from_slice(&next().to_le_bytes()));
        let f = Fields {
            pid: next() as u32 & 0x3f_ffff,
            tid: next() as u32 & 0x3f_ffff,
            addr: next() & 0x7fff_ffff_f000,
            cpu: next() as u32 & 0xff,
            data_src: next() & ((1 << 46) - 1),
            raw,
            ..Fields::default()
        };
        let mut record = Vec::new();
        abi::write(&mut record, sample_type, &Rec::Sample(f));
        if bytes.len() + record.len() > RING_BYTES {
            return bytes;
        }
        bytes.extend_from_slice(&record);
    }
}

/// Records per second of `run` (which returns how many records it read), over at least
/// `budget` of repeated runs.
fn rate(budget: Duration, mut run: impl FnMut() -> usize) -> f64 {
    let start = Instant::now();
    let mut records = 0usize;
    while start.elapsed() < budget {
        records += run();
    }
    records as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let budget = Duration::from_millis(700);
    println!("sample_type  bytes  records  rondpoint rec/s  perf-event-data rec/s  ratio");
    for sample_type in abi::requested_sample_types() {
        let bytes = ring(sample_type);
        let format = SampleFormat::new(sample_type);
        let config = theirs::config(sample_type);
        let ours = parse(&bytes, &format).unwrap();
        let other = theirs::parse(&bytes, &config).unwrap();
        assert_eq!(ours, other, "both parsers read the ring alike");
        assert_eq!(ours.1, bytes.len());
        // Three rounds of each, alternated, so that neither gets a quieter machine.
        let mut ours_rate = 0.0;
        let mut theirs_rate = 0.0;
        for _ in 0..3 {
            ours_rate += rate(budget, || {
                parse(black_box(&bytes), &format).unwrap().0.len()
            });
            theirs_rate += rate(budget, || {
                theirs::parse(black_box(&bytes), &config).unwrap().0.len()
            });
        }
        println!(
            "{sample_type:#11x}  {:5}  {:7}  {:15.3e}  {:21.3e}  {:5.2}",
            bytes.len(),
            ours.0.len(),
            ours_rate / 3.0,
            theirs_rate / 3.0,
            ours_rate / theirs_rate
        );
    }
}
