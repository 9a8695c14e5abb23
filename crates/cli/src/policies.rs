//! The policies this binary offers: rondpoint's rows ([`rondpoint_policy::BUILTIN`]) with the
//! names they had before. Every command asks here, so the binary assembles its registry in
//! this one place.

use rondpoint_policy_api::{Policy, PolicyConfig, PolicyError, Registry};
use std::sync::OnceLock;

/// The registry every command uses.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(rondpoint_policy::registry)
}

/// Builds a policy by name with its parameters from `config` (defaults where absent).
pub fn build(name: &str, config: &PolicyConfig) -> Result<Box<dyn Policy>, PolicyError> {
    registry().build(name, config)
}
