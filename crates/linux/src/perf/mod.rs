//! perf_event data, without syscalls: how to read what the kernel writes back. (What to count
//! and sample on a CPU is the PMU catalogue's: [`crate::pmu::events`], [`crate::pmu::attrs`].)
//!
//! - [`ring`]: the parser of ring-buffer records (PERF_RECORD_SAMPLE for a given sample_type,
//!   LOST, THROTTLE), with the decoding of PERF_SAMPLE_DATA_SRC values and AMD IBS op payloads
//!   (in `datasrc`, re-exported from [`ring`]).
//! - [`spe`]: the decoder of Arm SPE packets, which the hardware writes into an AUX buffer
//!   rather than as perf records.
//!
//! Opening events, mapping the ring buffer and reading counters are the syscall layer's job;
//! this module is pure so that it can be tested on recorded bytes on any machine.

mod datasrc;
pub mod ring;
pub mod spe;

pub use ring::{
    DataSource, IbsOp, RawSample, Record, RingError, SampleFormat, decode_data_src, decode_ibs_op,
    parse,
};
