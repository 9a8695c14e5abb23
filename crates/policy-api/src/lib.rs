//! What a placement policy is, for everything that runs one: the [`Policy`] trait, a policy's
//! parameters ([`PolicyConfig`], [`Params`], [`bounds`]) and the table that names, builds and
//! documents policies ([`Registry`], [`PolicyInfo`]).
//!
//! The engine and both backends depend on this crate alone; the policies themselves live in
//! `rondpoint-policy`, whose rows the binary hands to [`Registry::new`]. A policy is pure: it
//! sees the [`Topology`](rondpoint_model::Topology) and each epoch's
//! [`Observation`](rondpoint_model::Observation) and returns
//! [`Action`](rondpoint_model::Action)s; it never calls the kernel and never looks inside the
//! simulator. docs/architecture.md walks through adding one.

#![forbid(unsafe_code)]

pub mod bounds;
mod config;
mod first_touch;
mod policy;
mod registry;

pub use config::{Params, PolicyConfig, PolicyError};
pub use first_touch::FirstTouch;
pub use policy::{Policy, Refusal};
pub use registry::{Family, FileParam, PolicyInfo, Registry, defaults_of, no_parameters};
