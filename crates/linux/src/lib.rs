//! rondpoint's live Linux backend.
//!
//! - [`sysfs`]: topology discovery, through a root prefix so that the same code reads `/sys`
//!   on a live machine and fixture trees in tests; [`procfs`]: processes, threads, placement.
//! - [`sys`]: every system call behind one trait, with the real kernel (the only `unsafe` code
//!   in rondpoint) and a recording fake.
//! - [`perf`]: the perf ring-buffer record parser; [`pmu`]: the machine's PMUs as sysfs lists
//!   them, the catalogue of the events rondpoint opens on each CPU family (with /proc/cpuinfo's
//!   CPU detection), and what perf_event_paranoid and capabilities allow.
//! - [`actuate`]: actions carried out with verified, batched system calls; [`thp`]: which
//!   addresses are THP-backed.
//! - [`machine`]: `LinuxMachine`, the engine's live backend.

// Unsafe code is allowed in one module only, `sys::real` (each block with a `// SAFETY:`).
#![deny(unsafe_code)]

pub mod actuate;
pub mod calibrate;
pub mod capabilities;
pub mod launch;
pub mod machine;
pub mod node_pages;
pub mod perf;
pub mod pmu;
pub mod procfs;
pub mod sys;
pub mod sysfs;
pub mod thp;

pub use sysfs::{Discovery, SysfsError, discover};
