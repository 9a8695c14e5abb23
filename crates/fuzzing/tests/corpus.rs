//! Every fuzz target over its seed corpus, then over random mutations of the seeds: byte
//! edits, cuts and splices, and numbers replaced by the values that break programs (0, -1,
//! NaN, infinities, 1e300, 2^32 - 1). A panic fails the test with the input that caused it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use rondpoint_fuzzing::{TARGETS, Target};
use std::path::PathBuf;

/// The seeds of a target: (file name, bytes).
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut seeds: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds
        .into_iter()
        .map(|(p, b)| (p.file_name().unwrap().to_string_lossy().into_owned(), b))
        .collect()
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    seeds(target).into_iter().map(|(_, b)| b).collect()
}

fn target(name: &str) -> Target {
    TARGETS.iter().find(|(n, _)| *n == name).unwrap().1
}

#[test]
fn every_target_has_seeds_and_takes_them() {
    for (name, f) in TARGETS {
        for (file, seed) in seeds(name) {
            assert_eq!(f(&seed), !file.starts_with("bad-"), "{name}/{file}");
        }
    }
}

const NASTY: &[&str] = &[
    "0",
    "-1",
    "nan",
    "inf",
    "-inf",
    "1e300",
    "-1e300",
    "1e-300",
    "4294967295",
    "-0.0",
    "18446744073709551615",
    "9223372036854775807",
    "65536",
    "\"\"",
    "[]",
    "{}",
];

/// One edit of an input.
#[derive(Clone, Debug)]
enum Edit {
    /// Overwrite the byte at this fraction of the length.
    Byte(f64, u8),
    /// Remove up to `len` bytes from here.
    Cut(f64, usize),
    /// Copy a span of the input to another place.
    Splice(f64, f64, usize),
    /// Replace the k-th number in the input (modulo their count) with a nasty value.
    Number(usize, usize),
    /// Keep only what comes before here.
    Truncate(f64),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0.0..1.0f64, any::<u8>()).prop_map(|(a, b)| Edit::Byte(a, b)),
        (0.0..1.0f64, 1..64usize).prop_map(|(a, n)| Edit::Cut(a, n)),
        (0.0..1.0f64, 0.0..1.0f64, 1..256usize).prop_map(|(a, b, n)| Edit::Splice(a, b, n)),
        (any::<usize>(), 0..NASTY.len()).prop_map(|(k, v)| Edit::Number(k, v)),
        (any::<usize>(), 0..NASTY.len()).prop_map(|(k, v)| Edit::Number(k, v)),
        (0.0..1.0f64).prop_map(Edit::Truncate),
    ]
}

fn at(len: usize, f: f64) -> usize {
    ((len as f64 * f) as usize).min(len)
}

/// Spans of ASCII digits (with a sign, a point or an exponent) in `b`.
fn numbers(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = if i > 0 && b[i - 1] == b'-' { i - 1 } else { i };
            while i < b.len() && (b[i].is_ascii_digit() || b"._eE+-".contains(&b[i])) {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

fn apply(mut b: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = b.len();
        match *e {
            Edit::Byte(a, v) if len > 0 => {
                let i = at(len - 1, a);
                b[i] = v;
            }
            Edit::Cut(a, n) => {
                let i = at(len, a);
                b.drain(i..(i + n).min(len));
            }
            Edit::Splice(a, c, n) => {
                let from = at(len, a);
                let span: Vec<u8> = b[from..(from + n).min(len)].to_vec();
                let to = at(len, c);
                b.splice(to..to, span);
            }
            Edit::Number(k, v) => {
                let spans = numbers(&b);
                if !spans.is_empty() {
                    let (s, t) = spans[k % spans.len()];
                    b.splice(s..t, NASTY[v].bytes());
                }
            }
            Edit::Truncate(a) => b.truncate(at(len, a)),
            Edit::Byte(..) => {}
        }
    }
    b
}

/// Runs `name` on mutations of its seeds.
fn mutate(name: &'static str, cases: u32) {
    let seeds = corpus(name);
    let f = target(name);
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(i in 0..seeds.len(), edits in prop::collection::vec(edit(), 1..6))| {
        let input = apply(seeds[i].clone(), &edits);
        let _ = f(&input);
    });
}

#[test]
fn scenario_mutations() {
    mutate("scenario", 48);
}

#[test]
fn machine_mutations() {
    mutate("machine", 48);
}

#[test]
fn policy_config_mutations() {
    mutate("policy_config", 256);
}

#[test]
fn recording_mutations() {
    mutate("recording", 64);
}

#[test]
fn cpulist_mutations() {
    mutate("cpulist", 512);
}

#[test]
fn interconnect_mutations() {
    mutate("interconnect", 256);
}

#[test]
fn gap_curve_mutations() {
    mutate("gap_curve", 256);
}

#[test]
fn perf_ring_mutations() {
    mutate("perf_ring", 512);
}

#[test]
fn the_number_edit_finds_numbers() {
    assert_eq!(numbers(b"a = -1.5e3, b = [2]"), vec![(4, 10), (17, 18)]);
    let out = apply(b"x = 12".to_vec(), &[Edit::Number(0, 2)]);
    assert_eq!(out, b"x = nan");
}

#[test]
fn procfs_mutations() {
    mutate("procfs", 128);
}

#[test]
fn sysfs_mutations() {
    mutate("sysfs", 128);
}

#[test]
fn selection_mutations() {
    mutate("selection", 128);
}
