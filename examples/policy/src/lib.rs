//! The worked example of docs/architecture.md, "Adding a policy", compiled and tested so the
//! guide cannot rot: `spread_threads.rs` is the file a new policy is, and [`ROWS`] holds the
//! row it adds to `rondpoint_policy::BUILTIN`. The guide's code blocks are these files' text
//! (a test in `tests/guide.rs` compares them), and the same test runs the policy in the
//! simulator through a registry of rondpoint's rows and this one.

#![forbid(unsafe_code)]

pub mod spread_threads;

use rondpoint_policy_api::{Family, PolicyInfo, defaults_of};

/// The example's row, as it would stand in `rondpoint_policy::BUILTIN` (and formatted as it
/// stands there, which rustfmt would fold for a list of one).
#[rustfmt::skip]
pub static ROWS: &[PolicyInfo] = &[
    PolicyInfo {
        name: "spread-threads",
        family: Family::Rondpoint,
        summary: "the threads of each multi-threaded process pinned round-robin over the \
                  nodes with CPUs, once",
        source: "ours",
        in_all: false,
        build: |p| Ok(Box::new(spread_threads::SpreadThreads::new(p.parse()?))),
        defaults: defaults_of::<spread_threads::SpreadThreadsConfig>,
        bounds: spread_threads::BOUNDS,
        files: &[],
    },
];
