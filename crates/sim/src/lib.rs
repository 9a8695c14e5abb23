//! rondpoint's NUMA machine simulator: machine presets and scenarios (data, with sources),
//! the machine model ([`SimMachine`]: placement, caches, a queueing solver for controllers and
//! links), and the run driver ([`experiment`]: one run, a policy's runs, multiprogrammed
//! slowdowns, summaries over seeds; [`calibrate`]: the MAPI-to-gap curve).
//!
//! Inputs: [`presets`] (built-in machines and workloads, users' files), [`machine_preset`]
//! (the machine file format), [`scenario`] (the workload file format), [`param`] (a number
//! with its source), [`bounds`] (the accepted range of every number), [`spec`] (a preset
//! turned into what the model runs on).

#![forbid(unsafe_code)]

pub mod bound;
pub mod bounds;
pub mod calibrate;
pub mod experiment;
pub mod machine;
pub mod machine_preset;
pub mod memory;
pub mod param;
pub mod placement;
pub mod presets;
pub mod scenario;
pub mod solver;
pub mod spec;
pub(crate) mod traffic;

pub use machine::{SimConfig, SimError, SimMachine, Totals};
