//! rondpoint-sim's integration tests, in one test binary: each file is a module, so that the
//! simulator is compiled and linked once for all of them rather than once per file.
//! `cargo test -p rondpoint-sim --test sim machine::` runs one file's tests (a filter matches
//! anywhere in a test's name: `reproduction::` also picks the other `*_reproduction` files).

mod carrefour_reproduction;
mod listing_order;
mod machine;
mod multiprogram;
mod nmass_reproduction;
mod oaas_reproduction;
mod presets;
mod remote_reproduction;
mod reproduction;
