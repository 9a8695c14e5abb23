//! `bound`: the best placement the simulator's model allows for the true access rates, to
//! measure policies against. Where the `oracle` policy applies Carrefour's rules with perfect
//! knowledge, the bound optimises: for every group of pages with one access vector (a block of
//! a region: one per thread for partitioned data, one for shared data) it chooses the share of
//! the group's accesses each node serves, or a copy on every node that uses it when nothing
//! writes it, against the model's own loaded latencies and bandwidths (the `search` module),
//! and places the pages so from the start, at no cost. The result is the faster of that layout
//! and first touch's own, each run in full by the simulator.
//!
//! What it does not do (yet): move threads (it keeps the scenario's thread placement, as the
//! page policies it judges do), change the layout between phases (it optimises each group for
//! its accesses averaged over the run), or choose which pages of a group with skewed
//! popularity go where (a group's pages follow its access shares). A policy that does any of
//! these can beat it; the matrix reports by how much.

pub(crate) mod eval;
pub(crate) mod problem;
pub(crate) mod search;

pub use search::SearchConfig;

use crate::experiment::{self, ExperimentError, RunResult};
use crate::machine::{SimConfig, SimMachine};
use crate::scenario::Scenario;
use crate::spec::MachineSpec;
use rondpoint_engine::EngineConfig;
use rondpoint_policy_api::FirstTouch;

/// The name reports give the bound.
pub const NAME: &str = "bound";

/// Runs the bound of `scenario` on `machine`: the searched layout and first touch, each in
/// full, and returns the faster as policy [`NAME`], with a note saying which it was and what
/// the search did. `progress` as for [`experiment::run`].
pub fn run(
    machine: &MachineSpec,
    scenario: &Scenario,
    sim: &SimConfig,
    engine: &EngineConfig,
    cfg: SearchConfig,
    mut progress: impl FnMut(f64),
) -> Result<RunResult, ExperimentError> {
    let m = SimMachine::new(machine.clone(), scenario, sim.clone())?;
    let problem = m.problem();
    let found = search::search(machine, &problem, sim.solver, cfg);
    let mut planned = m.clone();
    planned.install(found.layout);
    let run_with = |m: SimMachine, progress: &mut dyn FnMut(f64)| {
        experiment::run_on(m, machine, scenario, &mut FirstTouch, sim, engine, progress)
    };
    let searched = run_with(planned, &mut progress)?;
    let first_touch = run_with(m, &mut progress)?;
    let searched_wins = searched.completion_s <= first_touch.completion_s;
    let mut best = if searched_wins { searched } else { first_touch };
    best.policy = NAME.to_string();
    best.notes = vec![format!(
        // No wall time here: a run's notes are part of its deterministic result.
        "{} (model: {:.3} s against first touch's {:.3} s; {} groups, {} solves)",
        if searched_wins {
            "searched layout"
        } else {
            "first touch's layout (the searched one ran slower)"
        },
        found.estimate_ns / 1e9,
        found.first_touch_ns / 1e9,
        problem.groups.len(),
        found.solves
    )];
    Ok(best)
}

#[cfg(test)]
mod tests;
