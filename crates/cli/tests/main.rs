//! The rondpoint binary's end-to-end tests, in one test binary: each file is a module, so that
//! they are compiled and linked once rather than once per file. `cargo test -p rondpoint
//! --test cli doctor::` runs one file's tests.

mod auto;
mod budget;
mod calibrate;
mod cgroups;
mod common;
mod daemon;
mod doctor;
mod explain;
mod json;
mod matrix;
mod migrate;
mod plot;
mod record;
mod reload;
mod replay;
mod report;
mod run;
mod safety;
mod sim;
mod top;
mod topo;
