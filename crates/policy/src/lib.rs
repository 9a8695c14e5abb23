//! Placement policies. A policy is pure: it sees the [`Topology`] and each epoch's
//! [`Observation`] and returns [`Action`]s; it never calls the kernel and never looks inside
//! the simulator. State kept across epochs lives in the policy value.

pub mod baseline;

use rondpoint_model::{Action, Observation, ProcessInfo, SamplingRequest, Topology};
use thiserror::Error;

/// A placement policy.
pub trait Policy {
    /// The name users pass to `--policy`.
    fn name(&self) -> &str;

    /// Decisions taken before the managed programs start (allocation policies, pinning).
    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let _ = (topology, processes);
        Vec::new()
    }

    /// Decisions at the end of an epoch.
    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action>;

    /// The samples the policy wants now (asked again after every decision, so a policy can
    /// adapt its rates). The default asks for none, and the backend then pays nothing.
    fn sampling(&self) -> SamplingRequest {
        SamplingRequest::NONE
    }
}

/// Errors building a policy by name.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("unknown policy '{name}'; valid policies: {}", valid.join(", "))]
    Unknown { name: String, valid: Vec<String> },
}

/// Names of the policies [`by_name`] builds, in the order reports list them.
pub const NAMES: &[&str] = &["first-touch", "interleave"];

/// Builds a policy with its default parameters.
pub fn by_name(name: &str) -> Result<Box<dyn Policy>, PolicyError> {
    match name {
        "first-touch" => Ok(Box::new(baseline::FirstTouch)),
        "interleave" => Ok(Box::new(baseline::Interleave)),
        _ => Err(PolicyError::Unknown {
            name: name.to_string(),
            valid: NAMES.iter().map(|s| s.to_string()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_and_unknown_lists_them() {
        for n in NAMES {
            assert_eq!(
                by_name(n).map(|p| p.name().to_string()).ok().as_deref(),
                Some(*n)
            );
        }
        let err = by_name("carrefour2").err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("unknown policy 'carrefour2'; valid policies: first-touch, interleave")
        );
    }
}
