//! rondpoint's live Linux backend.
//!
//! Today: topology discovery from sysfs ([`sysfs`]), always through a root prefix so that the
//! same code reads `/sys` on a live machine and fixture trees in tests. The rest of the live
//! backend (procfs, perf counters and sampling, move_pages and friends behind one syscall
//! trait) grows here.

pub mod actuate;
pub mod sys;
pub mod sysfs;

pub use sysfs::{Discovery, SysfsError, discover};
