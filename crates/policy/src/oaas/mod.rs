//! Asymmetry-aware scheduling of applications \[Gaud10\]. On machines whose interconnect is not
//! fully connected, the nodes that need more hops to probe the others are slow even for local
//! accesses (the `fast`/`slow` node classes of [`rondpoint_model::Topology`], [Gaud10 §2]), and
//! memory-intensive applications run up to 15% slower there (Table 2).
//!
//! - `oaas` ([`Oaas`], [Gaud10 §5]): every 300 ms, each application's MAPI (main-memory
//!   accesses per retired instruction); the applications with the highest MAPI on the fast
//!   nodes, the others on the slow ones; A (fast) and B (slow) swap only when the gain the
//!   machine's MAPI-to-gap curve predicts, P_B - P_A, exceeds 5 points and the move pays for
//!   itself over what is left of the runs (§5.1); a move pins every thread to the new node and
//!   migrates the application's pages with it.
//! - `oaas-nopm`: the same without page migration (OAAS-noPM, §5.3).
//! - `static` ([`Static`]): the fixed mappings M0-M5 of Table 4.
//! - `random` ([`Random`]): each application on a node drawn at random (§4.2).
//! - `linux` ([`LinuxSpread`]): a model of Linux's scheduler for the simulator, which has none of
//!   its own: threads usually spread one per node (§4.1), exchanged at random between
//!   applications by load balancing (§4.2).
//!
//! All of them place one application per node, as the paper does (§4): more applications
//! than CPU nodes are refused before the run. On a machine without slow nodes `oaas` has
//! nothing to do and says so.

mod amortise;
mod config;
mod mapping;
mod scheduler;
mod spread;

#[cfg(test)]
mod tests;

pub use config::{
    CURVE_FILE, Curve, InitialPlacement, LinuxSpreadConfig, OAAS_BOUNDS, OaasConfig, RANDOM_BOUNDS,
    RandomConfig, SPREAD_BOUNDS, StaticConfig,
};
pub use mapping::{Random, Static, TABLE4};
pub use scheduler::{AppView, MapiSource, Oaas};
pub use spread::LinuxSpread;

use rondpoint_model::{
    Action, CurveError, CurveMachine, GapCurve, NodeClass, NodeId, ProcessInfo, Topology,
};
use rondpoint_policy_api::Refusal;

/// The MAPI-to-gap curves rondpoint ships: `rondpoint calibrate --machine PRESET` on the
/// simulator's presets with slow nodes (a test checks each still matches a fresh calibration).
const BUILTIN_CURVES: &[(&str, &str)] = &[(
    "r905-asymmetric",
    include_str!("curves/r905-asymmetric.toml"),
)];

/// The built-in curves, by the preset they were measured on.
pub fn builtin_curves() -> Result<Vec<(&'static str, GapCurve)>, CurveError> {
    BUILTIN_CURVES
        .iter()
        .map(|(name, text)| Ok((*name, GapCurve::from_toml(text)?)))
        .collect()
}

/// The built-in curve for a machine of this topology's shape, or why there is none.
fn builtin_curve_for(topology: &Topology) -> Result<GapCurve, Refusal> {
    let curves = builtin_curves().map_err(|e| Refusal(format!("built-in curve: {e}")))?;
    let mut shapes = Vec::new();
    for (name, c) in curves {
        if c.check_machine(topology).is_ok() {
            return Ok(c);
        }
        shapes.push(format!("{name}, {}", c.machine_shape().describe()));
    }
    Err(Refusal(format!(
        "no built-in MAPI-to-gap curve for a machine of {} (built-in: {}); run `rondpoint \
         calibrate -o FILE` on it and set oaas.curve = FILE",
        CurveMachine::of(topology).describe(),
        shapes.join("; ")
    )))
}

/// The CPU nodes of a class, by node number.
fn nodes_of(topology: &Topology, class: NodeClass) -> Vec<NodeId> {
    topology
        .nodes()
        .iter()
        .zip(topology.classes())
        .filter(|(n, c)| **c == class && n.has_cpu())
        .map(|(n, _)| n.id)
        .collect()
}

/// The CPU nodes, by node number.
fn cpu_nodes(topology: &Topology) -> Vec<NodeId> {
    topology
        .nodes()
        .iter()
        .filter(|n| n.has_cpu())
        .map(|n| n.id)
        .collect()
}

/// Refuses more applications than CPU nodes: the \[Gaud10\] policies give each application a
/// node of its own (§4: "assigning one processor to a given application").
fn one_per_node(topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
    let nodes = cpu_nodes(topology).len();
    if processes.len() > nodes {
        return Err(Refusal(format!(
            "{} applications for {nodes} CPU nodes: the policies of [Gaud10] give each \
             application a node of its own (§4), so at most {nodes} can be managed here",
            processes.len()
        )));
    }
    Ok(())
}

/// Each application moved to its node (`nodes[i]` for `processes[i]`), before it starts: its
/// memory is not allocated yet, so only its threads move.
fn place(processes: &[ProcessInfo], nodes: &[NodeId], with_memory: bool) -> Vec<Action> {
    processes
        .iter()
        .zip(nodes)
        .map(|(p, &to)| Action::MoveApplication {
            pid: p.pid,
            to,
            with_memory,
        })
        .collect()
}

/// The node most of a process's threads are on (the lowest of a tie); `None` without threads.
fn home(p: &ProcessInfo) -> Option<NodeId> {
    let mut count: std::collections::BTreeMap<NodeId, usize> = Default::default();
    for t in &p.threads {
        *count.entry(t.node).or_default() += 1;
    }
    count
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(n, _)| n)
}
