//! The arbiter: one owner per decision, and the rules by which a lane's proposal gives way to
//! another lane's decision. Lanes never see each other; every conflict is settled here, each
//! rule by one function with its own test.

use rondpoint_model::{Action, NodeId, Observation, Pid, Topology};
use std::collections::BTreeMap;

/// Who placed a process on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacedBy {
    /// N-MASS pinned it where its decision wants it: its memory stays where it is, which is
    /// what the decision weighed ([Majo11 §3]: the remote penalty of memory left behind).
    NMass,
    /// OAAS moved the application (with its pages when it moves them, [Gaud10 §5.2]).
    Oaas,
}

/// Why the arbiter dropped (or trimmed) a proposal, counted for the notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// Pages of a process N-MASS placed stay where its decision left them.
    NMassPlaced,
    /// Pages of an application OAAS moved are not sent off the nodes it now runs on.
    OaasMoved,
    /// No pages onto a node with less free memory than `min_free_mib`: the overflow lane's
    /// placement is not rebalanced back onto the node that was full.
    Full,
    /// No pages onto a slower memory tier (CXL, a CPU-less node): that is the overflow lane's
    /// to decide, by capacity ([Choe21 §3]).
    SlowerTier,
}

impl Rule {
    /// What the rule says, for notes and skipped outcomes.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::NMassPlaced => {
                "the process was placed by N-MASS, whose decision weighed its memory where it is \
                 (pages lane gives way to placement)"
            }
            Rule::OaasMoved => {
                "the application was moved by OAAS with its pages; they are not sent off the \
                 nodes it runs on (pages lane gives way to placement)"
            }
            Rule::Full => {
                "the destination node is full by the overflow lane's measure (pages lane gives \
                 way to overflow)"
            }
            Rule::SlowerTier => {
                "the destination is a slower memory tier, which only the overflow lane fills \
                 (pages lane gives way to overflow)"
            }
        }
    }
}

/// The proposals the arbiter kept (as proposed or trimmed), and those it dropped with the
/// rule, each with its tag.
pub type Verdict<T> = (Vec<(Action, T)>, Vec<(Action, T, Rule)>);

/// The arbiter's memory: who placed which process, and what each rule dropped.
#[derive(Clone, Debug, Default)]
pub struct Arbiter {
    placed: BTreeMap<Pid, PlacedBy>,
    pub dropped: BTreeMap<Rule, u64>,
}

impl Arbiter {
    /// Takes note of the placement lane's actions: the processes it placed are its own.
    pub fn placed(&mut self, by: PlacedBy, actions: &[Action]) {
        for a in actions {
            match a {
                Action::PinThread { pid, .. } | Action::MoveApplication { pid, .. } => {
                    self.placed.insert(*pid, by);
                }
                Action::ExchangeThreads { a, b } => {
                    self.placed.insert(a.pid, by);
                    self.placed.insert(b.pid, by);
                }
                _ => {}
            }
        }
    }

    /// Forgets the placement lane's processes: its placement was undone, and their pages are
    /// the pages lane's again.
    pub(crate) fn unplace_all(&mut self) {
        self.placed.clear();
    }

    /// The pages lane's proposals that the other lanes' decisions allow, each as proposed or
    /// with fewer nodes; the others dropped, with the rule that dropped them. Each proposal
    /// keeps its tag (`T`: where it came from).
    pub fn pages<T>(
        &mut self,
        topology: &Topology,
        observation: Option<&Observation>,
        min_free_bytes: u64,
        proposed: Vec<(Action, T)>,
    ) -> Verdict<T> {
        let mut free: BTreeMap<NodeId, u64> = observation
            .map(|o| o.memory.iter().map(|m| (m.node, m.free_bytes)).collect())
            .unwrap_or_default();
        let mut kept = Vec::with_capacity(proposed.len());
        let mut dropped = Vec::new();
        for (a, tag) in proposed {
            match self.allow(topology, observation, min_free_bytes, &mut free, a) {
                Ok(a) => kept.push((a, tag)),
                Err((a, rule)) => {
                    *self.dropped.entry(rule).or_default() += 1;
                    dropped.push((a, tag, rule));
                }
            }
        }
        (kept, dropped)
    }

    /// One proposal through every rule, in order.
    fn allow(
        &self,
        topology: &Topology,
        observation: Option<&Observation>,
        min_free_bytes: u64,
        free: &mut BTreeMap<NodeId, u64>,
        action: Action,
    ) -> Result<Action, (Action, Rule)> {
        let pid = action.pid();
        match self.placed.get(&pid) {
            Some(PlacedBy::NMass) => return Err((action, Rule::NMassPlaced)),
            Some(PlacedBy::Oaas) => {
                let running = running_nodes(observation, pid);
                let off = destinations(&action)
                    .iter()
                    .any(|d| !running.is_empty() && !running.contains(d));
                if off {
                    return Err((action, Rule::OaasMoved));
                }
            }
            None => {}
        }
        let bytes = page_bytes(&action);
        keep_nodes(action, |d| {
            if topology.is_slower_tier(d) {
                return Err(Rule::SlowerTier);
            }
            match free.get_mut(&d) {
                // Without a measure of free memory (before the first epoch) nothing is full.
                None => Ok(()),
                Some(f) if f.saturating_sub(bytes) < min_free_bytes => Err(Rule::Full),
                Some(f) => {
                    *f -= bytes;
                    Ok(())
                }
            }
        })
    }
}

/// The action with only the destinations `ok` allows; dropped, with the first rule that
/// refused one, when none is left (or, for a move, when its one destination is refused).
fn keep_nodes(
    action: Action,
    mut ok: impl FnMut(NodeId) -> Result<(), Rule>,
) -> Result<Action, (Action, Rule)> {
    match action {
        Action::MigratePages { to, .. } => match ok(to) {
            Ok(()) => Ok(action),
            Err(rule) => Err((action, rule)),
        },
        Action::Interleave { range, ref nodes } | Action::Replicate { range, ref nodes } => {
            let mut refused = None;
            let left: rondpoint_model::NodeList = nodes
                .iter()
                .copied()
                .filter(|&d| match ok(d) {
                    Ok(()) => true,
                    Err(r) => {
                        refused.get_or_insert(r);
                        false
                    }
                })
                .collect();
            match refused {
                None => Ok(action),
                Some(rule) if left.is_empty() => Err((action, rule)),
                Some(_) => Ok(match action {
                    Action::Interleave { .. } => Action::Interleave { range, nodes: left },
                    _ => Action::Replicate { range, nodes: left },
                }),
            }
        }
        other => Ok(other),
    }
}

/// The nodes an action puts pages on.
fn destinations(action: &Action) -> Vec<NodeId> {
    match action {
        Action::MigratePages { to, .. } => vec![*to],
        Action::Interleave { nodes, .. } | Action::Replicate { nodes, .. } => nodes.to_vec(),
        Action::MoveApplication { to, .. } => vec![*to],
        Action::MoveNodePages { to, .. } => to.to_vec(),
        Action::PinThread { .. } | Action::ExchangeThreads { .. } | Action::SetMemPolicy { .. } => {
            Vec::new()
        }
    }
}

/// Bytes an action may put on each of its destinations (all its pages, at most).
fn page_bytes(action: &Action) -> u64 {
    match action {
        Action::MigratePages { range, .. }
        | Action::Interleave { range, .. }
        | Action::Replicate { range, .. } => range.count.saturating_mul(range.page_size.bytes()),
        other => other.pages().saturating_mul(4096),
    }
}

/// The nodes a process's threads ran on in this epoch.
fn running_nodes(observation: Option<&Observation>, pid: Pid) -> Vec<NodeId> {
    let Some(o) = observation else {
        return Vec::new();
    };
    let mut nodes: Vec<NodeId> = o
        .processes
        .iter()
        .filter(|p| p.pid == pid)
        .flat_map(|p| p.threads.iter().map(|t| t.node))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}
