//! The kernel's list format for CPUs and nodes (`0-3,8,10-11`), parsed and printed.
//!
//! Written by hand: the format is a dozen lines and the crates that parse it bring a whole
//! sysfs or hwloc binding with them.

// Parses bytes from outside (files, the kernel): no indexing that could panic on them.
#![deny(clippy::indexing_slicing)]

use thiserror::Error;

/// What was wrong with a list.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CpuListError {
    // The messages never quote the list: it may come from a file that is not what it should
    // be (a sysfs cpulist linked to a secret); the entry is kept for callers that want it.
    #[error("an entry is not a number")]
    NotANumber(String),
    #[error("a range runs backwards")]
    Backwards(String),
    #[error("a range is too large (more than {MAX_LIST_LEN} entries)")]
    TooLarge(String),
}

/// Largest list accepted: far above any real machine (the kernel's NR_CPUS tops out at 8192),
/// low enough that a corrupt file cannot make us allocate gigabytes.
pub const MAX_LIST_LEN: u64 = 1 << 16;

/// Parses `0-3,8,10-11` (whitespace around items and a trailing newline are fine; an empty
/// string is the empty list, as the kernel prints for a CPU-less node). The result is sorted
/// and free of duplicates.
pub fn parse(text: &str) -> Result<Vec<u32>, CpuListError> {
    let mut out = Vec::new();
    for item in text.trim().split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (number(a, item)?, number(b, item)?),
            None => {
                let n = number(item, item)?;
                (n, n)
            }
        };
        if hi < lo {
            return Err(CpuListError::Backwards(item.to_string()));
        }
        if u64::from(hi - lo) + out.len() as u64 >= MAX_LIST_LEN {
            return Err(CpuListError::TooLarge(item.to_string()));
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn number(s: &str, item: &str) -> Result<u32, CpuListError> {
    let s = s.trim();
    s.parse::<u32>().map_err(|_| {
        if s.is_empty() {
            CpuListError::NotANumber(item.to_string())
        } else {
            CpuListError::NotANumber(s.to_string())
        }
    })
}

/// Prints a list in the kernel's compact form: runs of consecutive numbers become ranges.
pub fn format<I: IntoIterator<Item = u32>>(items: I) -> String {
    let mut v: Vec<u32> = items.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    // Runs of consecutive numbers, as (start, end).
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for x in v {
        match runs.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(x) => *end = x,
            _ => runs.push((x, x)),
        }
    }
    let mut out = String::new();
    for (start, end) in runs {
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_kernel_forms() {
        assert_eq!(parse("0-3,8,10-11\n").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse("\n").unwrap(), Vec::<u32>::new());
        assert_eq!(parse("5").unwrap(), vec![5]);
        assert_eq!(parse("3,1,1-2").unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn rejects_malformed() {
        assert_eq!(parse("0-x"), Err(CpuListError::NotANumber("x".into())));
        assert_eq!(parse("4-2"), Err(CpuListError::Backwards("4-2".into())));
        assert_eq!(parse("-2"), Err(CpuListError::NotANumber("-2".into())));
        assert!(matches!(
            parse("0-4294967295"),
            Err(CpuListError::TooLarge(_))
        ));
    }

    #[test]
    fn formats_compactly() {
        assert_eq!(format([0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format([]), "");
        assert_eq!(format([7]), "7");
    }

    proptest! {
        #[test]
        fn format_then_parse_is_identity(mut v in proptest::collection::vec(0u32..512, 0..64)) {
            v.sort_unstable();
            v.dedup();
            prop_assert_eq!(parse(&format(v.clone())).unwrap(), v);
        }
    }
}
