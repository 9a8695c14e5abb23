//! What a policy asks for, and what a backend reports it did.

use crate::ids::{CpuId, NodeId, Pid, Tid};
use crate::observation::PolicyMode;
use crate::overflow::{NodeTiers, OverflowSpread};
use crate::page::PageRange;
use serde::{Deserialize, Serialize};

/// A memory allocation policy, as set_mempolicy(2) knows them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum MemPolicy {
    /// First touch: allocate on the node of the touching CPU, falling back by distance.
    Default,
    Bind {
        nodes: Vec<NodeId>,
    },
    Interleave {
        nodes: Vec<NodeId>,
    },
    /// MPOL_PREFERRED_MANY (Linux 5.15).
    PreferredMany {
        nodes: Vec<NodeId>,
    },
    /// MPOL_WEIGHTED_INTERLEAVE (Linux 6.9): pages in proportion to the weights.
    WeightedInterleave {
        weights: Vec<(NodeId, u8)>,
    },
    /// First touch on the local node; once it is full, the overflow spread over the local
    /// node's remote tiers, nearest tier first, as `spread` says ([Choe21 §3], tiers §7; the
    /// rule is [`crate::overflow::overflow_node`]). Not a Linux policy: an in-kernel allocation
    /// policy, which only a machine with [`crate::Capability::OverflowPlacement`] applies. A
    /// page touched from a node `tiers` does not list, or whose tiers are all full, falls back
    /// as under the default policy.
    Overflow {
        spread: OverflowSpread,
        tiers: Vec<NodeTiers>,
    },
}

impl MemPolicy {
    /// The nodes the policy names (none for the default; a weighted interleave's nodes in
    /// the order of its weights, zero weights included).
    pub fn nodes(&self) -> Vec<NodeId> {
        match self {
            MemPolicy::Default => Vec::new(),
            MemPolicy::Bind { nodes }
            | MemPolicy::Interleave { nodes }
            | MemPolicy::PreferredMany { nodes } => nodes.clone(),
            MemPolicy::WeightedInterleave { weights } => weights.iter().map(|w| w.0).collect(),
            MemPolicy::Overflow { tiers, .. } => {
                let mut v: Vec<NodeId> = tiers
                    .iter()
                    .flat_map(|t| std::iter::once(t.local).chain(t.tiers.iter().flatten().copied()))
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            }
        }
    }

    /// The mode as a kernel lists it in numa_maps (`None` for the default policy, and for the
    /// overflow policy, which changes the default policy's fallback and sets no mode of its
    /// own: NUMA balancing still scans and moves its pages, as it did in [Choe21 §5]'s runs).
    pub fn mode(&self) -> Option<PolicyMode> {
        Some(match self {
            MemPolicy::Default | MemPolicy::Overflow { .. } => return None,
            MemPolicy::Bind { .. } => PolicyMode::Bind,
            MemPolicy::Interleave { .. } => PolicyMode::Interleave,
            MemPolicy::PreferredMany { .. } => PolicyMode::PreferMany,
            MemPolicy::WeightedInterleave { .. } => PolicyMode::WeightedInterleave,
        })
    }
}

/// The nodes of an interleaving or a replication: up to four kept inline, more on the heap.
/// Carrefour's interleavings name one node each and its replications the nodes running the
/// process's threads; a list always on the heap cost one allocation an action (2.5% of
/// Carrefour's decision in its benchmark, `cargo bench -p rondpoint-policy`).
pub type NodeList = smallvec::SmallVec<[NodeId; 4]>;

/// A placement decision. Plain data: the backend decides nothing, it only carries it out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Action {
    /// Move every page of `range` to node `to`.
    MigratePages { range: PageRange, to: NodeId },
    /// Spread the pages of `range` round-robin over `nodes`.
    Interleave { range: PageRange, nodes: NodeList },
    /// Keep a read-only copy of `range` on each of `nodes`.
    Replicate { range: PageRange, nodes: NodeList },
    /// Restrict one thread to `cpus`.
    PinThread {
        pid: Pid,
        tid: Tid,
        cpus: Vec<CpuId>,
    },
    /// Exchange two running threads' CPUs at once: `a` is pinned to `b.cpu` and `b` to
    /// `a.cpu`, as a scheduler's load balancer exchanges two tasks. A kernel carries it out as
    /// two pins (it lets a thread onto a busy CPU until the other leaves); a backend that runs
    /// one thread per CPU, as the simulator does, needs both moves as one step.
    ExchangeThreads { a: ThreadCpu, b: ThreadCpu },
    /// Move all threads of a process to node `to`, and its pages too if `with_memory`.
    MoveApplication {
        pid: Pid,
        to: NodeId,
        with_memory: bool,
    },
    /// Set the allocation policy a process's future allocations follow.
    SetMemPolicy { pid: Pid, policy: MemPolicy },
    /// Move up to `pages` (in 4 KiB units: a 2 MiB page counts 512) of the process's pages that
    /// are on node `from`, round-robin over `to` (a node without room is passed over). The
    /// backend chooses which pages (the simulator takes the most recently allocated first), so
    /// a policy that knows where a process's memory is (resident bytes per node) but not its
    /// addresses can still move it.
    MoveNodePages {
        pid: Pid,
        from: NodeId,
        to: NodeList,
        pages: u64,
    },
}

/// A thread and the CPU it runs on: one side of an [`Action::ExchangeThreads`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadCpu {
    pub pid: Pid,
    pub tid: Tid,
    pub cpu: CpuId,
}

impl Action {
    /// The process the action touches (for an exchange, the first thread's).
    pub fn pid(&self) -> Pid {
        match self {
            Action::MigratePages { range, .. }
            | Action::Interleave { range, .. }
            | Action::Replicate { range, .. } => range.pid,
            Action::PinThread { pid, .. }
            | Action::MoveApplication { pid, .. }
            | Action::SetMemPolicy { pid, .. }
            | Action::MoveNodePages { pid, .. } => *pid,
            Action::ExchangeThreads { a, .. } => a.pid,
        }
    }

    /// Pages the action places (of its range's page size; 4 KiB pages for `MoveNodePages`),
    /// 0 for one that places threads or sets a policy.
    pub fn pages(&self) -> u64 {
        match self {
            Action::MigratePages { range, .. }
            | Action::Interleave { range, .. }
            | Action::Replicate { range, .. } => range.count,
            Action::MoveNodePages { pages, .. } => *pages,
            Action::PinThread { .. }
            | Action::ExchangeThreads { .. }
            | Action::MoveApplication { .. }
            | Action::SetMemPolicy { .. } => 0,
        }
    }

    /// A short name for reports ("migrate", "interleave", ...).
    pub fn technique(&self) -> &'static str {
        match self {
            Action::MigratePages { .. } => "migrate",
            Action::Interleave { .. } => "interleave",
            Action::Replicate { .. } => "replicate",
            Action::PinThread { .. } => "pin-thread",
            Action::ExchangeThreads { .. } => "exchange-threads",
            Action::MoveApplication { .. } => "move-application",
            Action::SetMemPolicy { .. } => "set-mempolicy",
            Action::MoveNodePages { .. } => "move-node-pages",
        }
    }
}

/// How an action ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeStatus {
    /// Done in full.
    Applied,
    /// Done for some pages and not others (see the failure counts).
    Partial,
    /// Nothing was done.
    Failed,
    /// Not attempted (a rate limit, a dry run, a process that is gone).
    Skipped,
    /// Something else was done instead (for example a replication request carried out as an
    /// interleave on a kernel that cannot replicate), described in `note`.
    Substituted,
}

/// The page counts of an action's outcome (see [`Outcome`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageCounts {
    pub requested: u64,
    /// Ended where asked (moved, or already there).
    pub done: u64,
    /// Placed by the action (not already there).
    pub moved: u64,
    pub bytes_copied: u64,
}

/// What a backend did with one action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Index of the action in the batch it came in.
    pub action: usize,
    pub status: OutcomeStatus,
    /// Pages (of the range's page size) the action asked about.
    pub pages_requested: u64,
    /// Pages that ended where they were asked to be.
    pub pages_done: u64,
    /// Of those, the pages this action placed: moved, interleaved or replicated from
    /// elsewhere. A page already where it was asked to be is done but not moved, and costs
    /// nothing (older recordings lack it: 0).
    #[serde(default)]
    pub pages_moved: u64,
    /// Bytes copied to carry it out.
    pub bytes_copied: u64,
    /// Pages that failed, by reason (an errno name such as "EBUSY", or a short phrase).
    pub failures: Vec<(String, u64)>,
    /// Free text for the report: why it was skipped, what was done instead.
    pub note: Option<String>,
}

impl Outcome {
    /// An action that moves no pages, done in full.
    pub fn applied(action: usize) -> Self {
        Self {
            action,
            status: OutcomeStatus::Applied,
            pages_requested: 0,
            pages_done: 0,
            pages_moved: 0,
            bytes_copied: 0,
            failures: Vec::new(),
            note: None,
        }
    }

    /// An action that could not be done at all, and why.
    pub fn failed(action: usize, why: impl Into<String>) -> Self {
        Self {
            status: OutcomeStatus::Failed,
            note: Some(why.into()),
            ..Self::applied(action)
        }
    }

    /// A page action's outcome, its status derived from the counts: applied when nothing
    /// failed, failed when nothing was done, partial otherwise.
    pub fn for_pages(action: usize, counts: PageCounts, failures: Vec<(String, u64)>) -> Self {
        let failed: u64 = failures.iter().map(|f| f.1).sum();
        let status = if failed == 0 {
            OutcomeStatus::Applied
        } else if counts.done == 0 {
            OutcomeStatus::Failed
        } else {
            OutcomeStatus::Partial
        };
        Self {
            action,
            status,
            pages_requested: counts.requested,
            pages_done: counts.done,
            pages_moved: counts.moved,
            bytes_copied: counts.bytes_copied,
            failures,
            note: None,
        }
    }

    /// An action that moves no pages, done another way, described in `note`.
    pub fn substituted(action: usize, note: impl Into<String>) -> Self {
        Self {
            status: OutcomeStatus::Substituted,
            note: Some(note.into()),
            ..Self::applied(action)
        }
    }

    /// An outcome for an action that was not attempted.
    pub fn skipped(action: usize, pages_requested: u64, why: impl Into<String>) -> Self {
        Self {
            action,
            status: OutcomeStatus::Skipped,
            pages_requested,
            pages_done: 0,
            pages_moved: 0,
            bytes_copied: 0,
            failures: Vec::new(),
            note: Some(why.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::PageSize;

    #[test]
    fn actions_serialise_tagged() {
        let a = Action::MigratePages {
            range: PageRange::new(Pid(7), 0x20_0000, 1, PageSize::Huge2M).unwrap(),
            to: NodeId(2),
        };
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"migrate-pages","range":{"pid":7,"start":2097152,"count":1,"page_size":"2MiB"},"to":2}"#
        );
        assert_eq!(serde_json::from_str::<Action>(&json).unwrap(), a);
        assert_eq!(a.pid(), Pid(7));
        assert_eq!(a.technique(), "migrate");
    }

    #[test]
    fn node_lists_serialise_as_arrays_whether_kept_inline_or_not() {
        let range = PageRange::new(Pid(7), 0x1000, 2, PageSize::Base4K).unwrap();
        let few = Action::Interleave {
            range,
            nodes: NodeList::from_slice(&[NodeId(1), NodeId(3)]),
        };
        let many = Action::Replicate {
            range,
            nodes: (0..6).map(NodeId).collect(),
        };
        assert!(!spilled(&few) && spilled(&many));
        let json = serde_json::to_string(&few).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"interleave","range":{"pid":7,"start":4096,"count":2,"page_size":"4KiB"},"nodes":[1,3]}"#
        );
        assert_eq!(serde_json::from_str::<Action>(&json).unwrap(), few);
        let json = serde_json::to_string(&many).unwrap();
        assert!(json.ends_with(r#""nodes":[0,1,2,3,4,5]}"#), "{json}");
        assert_eq!(serde_json::from_str::<Action>(&json).unwrap(), many);
    }

    #[test]
    fn node_page_moves_and_overflow_policies_serialise_tagged() {
        let a = Action::MoveNodePages {
            pid: Pid(7),
            from: NodeId(1),
            to: NodeList::from_slice(&[NodeId(2), NodeId(3)]),
            pages: 512,
        };
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"move-node-pages","pid":7,"from":1,"to":[2,3],"pages":512}"#
        );
        assert_eq!(serde_json::from_str::<Action>(&json).unwrap(), a);
        assert_eq!((a.pid(), a.technique()), (Pid(7), "move-node-pages"));
        let p = MemPolicy::Overflow {
            spread: OverflowSpread::Interleave,
            tiers: vec![NodeTiers {
                local: NodeId(0),
                tiers: vec![vec![NodeId(2), NodeId(1)], vec![NodeId(3)]],
            }],
        };
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(
            json,
            r#"{"mode":"overflow","spread":"interleave","tiers":[{"local":0,"tiers":[[2,1],[3]]}]}"#
        );
        assert_eq!(serde_json::from_str::<MemPolicy>(&json).unwrap(), p);
        assert_eq!(p.nodes(), (0..4).map(NodeId).collect::<Vec<_>>());
        assert_eq!(p.mode(), None);
    }

    /// Whether an action's node list is on the heap.
    fn spilled(a: &Action) -> bool {
        match a {
            Action::Interleave { nodes, .. } | Action::Replicate { nodes, .. } => nodes.spilled(),
            _ => false,
        }
    }

    #[test]
    fn page_outcome_status_follows_counts() {
        let f = |done, failed| {
            let failures = if failed > 0 {
                vec![("EBUSY".to_string(), failed)]
            } else {
                vec![]
            };
            let counts = PageCounts {
                requested: done + failed,
                done,
                moved: done,
                bytes_copied: 0,
            };
            Outcome::for_pages(0, counts, failures).status
        };
        assert_eq!(f(4, 0), OutcomeStatus::Applied);
        assert_eq!(f(0, 4), OutcomeStatus::Failed);
        assert_eq!(f(2, 2), OutcomeStatus::Partial);
        assert_eq!(Outcome::failed(3, "x").status, OutcomeStatus::Failed);
    }
}
