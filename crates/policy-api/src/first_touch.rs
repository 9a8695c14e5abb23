//! The policy that does nothing, which every comparison starts from.

use crate::Policy;
use rondpoint_model::{Action, Need, Observation, Topology};

/// Linux's default: pages go to the node of the CPU that first touches them, falling back by
/// distance when that node is full. Takes no action. It lives here, not with the other
/// policies, because the engine's users need it without them: the simulator runs programs
/// alone under it (solo runs, calibration), and every report compares against it.
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstTouch;

impl Policy for FirstTouch {
    fn name(&self) -> &str {
        "first-touch"
    }

    fn needs(&self) -> Vec<Need> {
        Vec::new()
    }

    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}
