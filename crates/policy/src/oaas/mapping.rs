//! The fixed placements [Gaud10 §4.2] compares against: the static mappings of Table 4, and a
//! random one. Both place each application on a node of its own before it starts, and do
//! nothing after.

use super::config::{RandomConfig, StaticConfig};
use super::{cpu_nodes, nodes_of, one_per_node, place};
use crate::{Policy, PolicyError};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64Mcg;
use rondpoint_model::{
    Action, Capability, Need, NodeClass, NodeId, Observation, ProcessInfo, Topology,
};
use rondpoint_policy_api::Refusal;

/// [Gaud10 Table 4]: the node class of applications 1 to 4 of a group, on a machine with two
/// fast and two slow nodes.
pub const TABLE4: [(&str, &str); 6] = [
    ("M0", "FFSS"),
    ("M1", "FSFS"),
    ("M2", "FSSF"),
    ("M3", "SFFS"),
    ("M4", "SFSF"),
    ("M5", "SSFF"),
];

/// What `static` and `random` need: to put each application on its node.
fn placement_need() -> Need {
    Need::one(
        Capability::MoveApplications,
        "to put each application on its node before it starts (sched_setaffinity)",
    )
    .exactly()
}

/// `static`: a fixed mapping of applications to fast and slow nodes.
#[derive(Clone, Debug)]
pub struct Static {
    /// `true` for a fast node, per application in order.
    fast: Vec<bool>,
    mapping: String,
    with_memory: bool,
    nodes: Vec<NodeId>,
}

impl Static {
    pub fn new(config: StaticConfig) -> Result<Self, PolicyError> {
        let letters = TABLE4
            .iter()
            .find(|(m, _)| m.eq_ignore_ascii_case(config.mapping.trim()))
            .map_or(config.mapping.trim(), |(_, l)| l);
        let fast: Option<Vec<bool>> = letters
            .chars()
            .map(|c| match c.to_ascii_uppercase() {
                'F' => Some(true),
                'S' => Some(false),
                _ => None,
            })
            .collect();
        match fast {
            Some(fast) if !fast.is_empty() => Ok(Self {
                fast,
                mapping: config.mapping,
                with_memory: config.with_memory,
                nodes: Vec::new(),
            }),
            _ => Err(PolicyError::Config {
                policy: "static".into(),
                message: format!(
                    "mapping '{}' is neither M0 to M5 ([Gaud10 Table 4]) nor a string of F \
                     (fast node) and S (slow node), one letter per application",
                    config.mapping
                ),
            }),
        }
    }

    /// The node of each application: fast and slow nodes by increasing number.
    fn assign(
        &self,
        topology: &Topology,
        processes: &[ProcessInfo],
    ) -> Result<Vec<NodeId>, Refusal> {
        one_per_node(topology, processes)?;
        if processes.len() != self.fast.len() {
            return Err(Refusal(format!(
                "mapping '{}' places {} applications; there are {}",
                self.mapping,
                self.fast.len(),
                processes.len()
            )));
        }
        let (mut fast, mut slow) = (
            nodes_of(topology, NodeClass::Fast).into_iter(),
            nodes_of(topology, NodeClass::Slow).into_iter(),
        );
        let want = |f: bool| self.fast.iter().filter(|&&x| x == f).count();
        self.fast
            .iter()
            .map(|&f| if f { fast.next() } else { slow.next() })
            .collect::<Option<Vec<NodeId>>>()
            .ok_or_else(|| {
                Refusal(format!(
                    "mapping '{}' needs {} fast and {} slow nodes; this machine has {} and {}",
                    self.mapping,
                    want(true),
                    want(false),
                    nodes_of(topology, NodeClass::Fast).len(),
                    nodes_of(topology, NodeClass::Slow).len()
                ))
            })
    }
}

impl Policy for Static {
    fn name(&self) -> &str {
        "static"
    }

    fn needs(&self) -> Vec<Need> {
        vec![placement_need()]
    }

    fn accepts(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
        self.nodes = self.assign(topology, processes)?;
        Ok(())
    }

    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        if self.nodes.len() != processes.len() {
            self.nodes = self.assign(topology, processes).unwrap_or_default();
        }
        place(processes, &self.nodes, self.with_memory)
    }

    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

/// `random`: each application on a node of its own, drawn at random (every application as
/// likely to be on a fast node as on a slow one, [Gaud10 §4.2]).
#[derive(Clone, Debug)]
pub struct Random {
    seed: u64,
}

impl Random {
    pub fn new(config: RandomConfig) -> Self {
        Self { seed: config.seed }
    }
}

impl Policy for Random {
    fn name(&self) -> &str {
        "random"
    }

    fn needs(&self) -> Vec<Need> {
        vec![placement_need()]
    }

    fn accepts(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
        one_per_node(topology, processes)
    }

    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let mut nodes = cpu_nodes(topology);
        nodes.shuffle(&mut Pcg64Mcg::seed_from_u64(self.seed));
        place(processes, &nodes, false)
    }

    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}
