//! rondpoint's NUMA machine simulator.

pub mod bounds;
pub mod calibrate;
pub mod machine;
pub mod memory;
pub mod param;
pub mod placement;
pub mod preset;
pub mod scenario;
pub mod solver;
pub mod spec;
pub mod summary;
pub use machine::{SimConfig, SimError, SimMachine, Totals};
pub mod experiment;
pub mod multiprogram;
pub mod presets;
