//! The oracle: Carrefour with perfect information. Instead of samples it reads the simulator's
//! ground truth ([`AccessTruth`]: the true DRAM access rate to every block of pages from each
//! node, the block's write share and where its pages are) and applies Carrefour's page-local
//! rules ([Dashti13 §3.2.2]) to every block at once, with no sampling
//! cost, no sampling error and no thresholds on traffic or imbalance:
//! - accessed from one node: migrate the block there (co-location);
//! - accessed from several nodes and (by default) never written: replicate it on those nodes;
//! - otherwise: interleave it over those nodes.
//!
//! A node counts as accessing a block when it makes at least `min_node_share` of the block's
//! accesses. A block is acted on only when its placement is not already what the rule asks
//! for, and at most once for a given decision: the decision taken for each block is remembered
//! and not repeated until the block's accessing nodes (hence the decision) change. Replication
//! falls back to interleaving when the nodes lack the free memory for the copies.
//!
//! It is an upper bound for page placement *given the threads' placement* (it never moves
//! threads), meant to show how far a real policy is from what its rules could achieve with
//! perfect knowledge; it is not a proof of optimality: it does not weigh migration costs,
//! memory-controller load (it interleaves round-robin rather than toward idle controllers), or
//! better thread placements. Only a simulator can feed it; on other backends it does nothing.

use crate::Policy;
use rondpoint_model::{
    AccessTruth, Action, Capability, Need, NodeList, Observation, Pid, SamplingRequest, Topology,
};
use rondpoint_policy_api::bounds::{Bounds, FRACTION, ParamBounds};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

/// `[oracle]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OracleConfig {
    /// A node accesses a block when it makes at least this share of the block's accesses
    /// (0 to 1). Default 0.1: chosen, so that stray accesses do not turn a private block into
    /// a shared one.
    pub min_node_share: f64,
    /// Replicate shared blocks whose write share is at most this (0 to 1). Default 0.0:
    /// Carrefour replicates only pages with no sampled write ([Dashti13 §3.2.2]; its
    /// application-wide guard is a memory read ratio of at least 95%, §3.2.1).
    pub max_write_fraction_for_replication: f64,
    /// Whether to replicate at all (false: shared blocks are interleaved). Default true.
    pub replicate: bool,
    /// An interleaved block is balanced when each node's share of its pages is within this
    /// fraction of its fair share (1/k on each of k accessing nodes, 0 elsewhere). Default
    /// 0.1: chosen.
    pub balance_tolerance: f64,
}

impl Default for OracleConfig {
    fn default() -> Self {
        Self {
            min_node_share: 0.1,
            max_write_fraction_for_replication: 0.0,
            replicate: true,
            balance_tolerance: 0.1,
        }
    }
}

/// The oracle policy and the decision it last took for each block.
#[derive(Clone, Debug)]
pub struct Oracle {
    config: OracleConfig,
    /// Block (pid, start address) -> the action its truth last called for.
    taken: HashMap<(Pid, u64), Action>,
}

impl Oracle {
    pub fn new(config: OracleConfig) -> Self {
        Self {
            config,
            taken: HashMap::new(),
        }
    }

    /// The action a block calls for, and whether its placement already satisfies it.
    fn judge(
        &self,
        topology: &Topology,
        block: &AccessTruth,
        free: &[Option<u64>],
    ) -> Option<(Action, bool)> {
        let total: f64 = block.accesses_per_s_by_node.iter().sum();
        if total.is_nan() || total <= 0.0 {
            return None;
        }
        let accessing: Vec<usize> = block
            .accesses_per_s_by_node
            .iter()
            .enumerate()
            .filter(|&(i, a)| i < topology.len() && *a >= self.config.min_node_share * total)
            .map(|(i, _)| i)
            .collect();
        let pages = |i: usize| block.pages_by_node.get(i).copied().unwrap_or(0);
        let resident: u64 = block.pages_by_node.iter().sum();
        if accessing.is_empty() || resident == 0 {
            return None;
        }
        let nodes: NodeList = accessing.iter().map(|&i| topology.nodes()[i].id).collect();
        let range = block.range;
        if let [only] = accessing[..] {
            let to = nodes[0];
            return Some((Action::MigratePages { range, to }, pages(only) == resident));
        }
        let page_bytes = range.page_size.bytes();
        let copies_fit = accessing.iter().all(|&i| {
            let missing = range.count.saturating_sub(pages(i));
            free.get(i)
                .copied()
                .flatten()
                .is_none_or(|f| f >= missing.saturating_mul(page_bytes))
        });
        if self.config.replicate
            && block.write_fraction <= self.config.max_write_fraction_for_replication
            && copies_fit
        {
            let done = accessing.iter().all(|&i| pages(i) >= range.count);
            return Some((Action::Replicate { range, nodes }, done));
        }
        // Balanced: no replicas, and each node within tolerance of its fair share.
        let k = accessing.len() as f64;
        let tol = self.config.balance_tolerance / k;
        let balanced = resident <= range.count
            && (0..topology.len()).all(|i| {
                let fair = if accessing.contains(&i) { 1.0 / k } else { 0.0 };
                (pages(i) as f64 / resident as f64 - fair).abs() <= tol
            });
        Some((Action::Interleave { range, nodes }, balanced))
    }
}

impl Policy for Oracle {
    fn name(&self) -> &str {
        "oracle"
    }

    fn needs(&self) -> Vec<Need> {
        vec![
            Need::one(Capability::Truth, "to decide on true access rates").exactly(),
            Need::one(Capability::MigratePages, "to co-locate pages"),
            Need::one(Capability::InterleavePages, "to interleave pages"),
            Need::one(Capability::ReplicatePages, "to replicate pages"),
        ]
    }

    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        let Some(truth) = &observation.truth else {
            return Vec::new();
        };
        let mut free: Vec<Option<u64>> = vec![None; topology.len()];
        for m in &observation.memory {
            if let Some(i) = topology.index_of(m.node) {
                free[i] = Some(m.free_bytes);
            }
        }
        let mut actions = Vec::new();
        let mut seen: BTreeSet<(Pid, u64)> = BTreeSet::new();
        for block in truth {
            let key = (block.range.pid, block.range.start);
            seen.insert(key);
            let Some((action, satisfied)) = self.judge(topology, block, &free) else {
                continue;
            };
            let repeat = self.taken.get(&key) == Some(&action);
            if !satisfied && !repeat {
                if let Action::Replicate { range, nodes } = &action {
                    // Charge the copies against the nodes' free memory.
                    for i in nodes.iter().filter_map(|&id| topology.index_of(id)) {
                        let have = block.pages_by_node.get(i).copied().unwrap_or(0);
                        let bytes = range.count.saturating_sub(have) * range.page_size.bytes();
                        if let Some(f) = free[i].as_mut() {
                            *f = f.saturating_sub(bytes);
                        }
                    }
                }
                actions.push(action.clone());
            }
            self.taken.insert(key, action);
        }
        self.taken.retain(|k, _| seen.contains(k));
        actions
    }

    fn sampling(&self) -> SamplingRequest {
        SamplingRequest {
            truth: true,
            ..SamplingRequest::NONE
        }
    }
}

/// The range of each parameter ([`OracleConfig`]).
pub const BOUNDS: &[ParamBounds] = &[
    ("min_node_share", FRACTION),
    ("max_write_fraction_for_replication", FRACTION),
    ("balance_tolerance", Bounds::new(0.0, 10.0, "")),
];

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::synthetic::TopologyBuilder;
    use rondpoint_model::{NodeId, NodeMemory, PageRange, PageSize};

    fn block(start: u64, accesses: [f64; 3], write: f64, pages: [u64; 3]) -> AccessTruth {
        AccessTruth {
            range: PageRange::new(Pid(1), start, 4, PageSize::Base4K).unwrap(),
            accesses_per_s_by_node: accesses.to_vec(),
            write_fraction: write,
            pages_by_node: pages.to_vec(),
        }
    }

    fn obs(truth: Vec<AccessTruth>) -> Observation {
        Observation {
            truth: Some(truth),
            ..Observation::default()
        }
    }

    fn nodes(n: &[u16]) -> NodeList {
        n.iter().map(|&x| NodeId(x)).collect()
    }

    fn run(config: OracleConfig, truth: Vec<AccessTruth>) -> Vec<Action> {
        let t = TopologyBuilder::new(3).build().unwrap();
        Oracle::new(config).decide(&t, &obs(truth))
    }

    #[test]
    fn the_three_rules() {
        let b = block(0x10000, [0.0, 100.0, 5.0], 0.5, [4, 0, 0]);
        let r = b.range;
        // One accessing node (node 2's 5% is below the 10% share): migrate.
        assert_eq!(
            run(OracleConfig::default(), vec![b]),
            vec![Action::MigratePages {
                range: r,
                to: NodeId(1)
            }]
        );
        // Read-only, shared by nodes 0 and 1: replicate on them.
        let b = block(0x10000, [50.0, 50.0, 0.0], 0.0, [4, 0, 0]);
        assert_eq!(
            run(OracleConfig::default(), vec![b.clone()]),
            vec![Action::Replicate {
                range: r,
                nodes: nodes(&[0, 1])
            }]
        );
        // Replication disabled: interleave instead.
        let off = OracleConfig {
            replicate: false,
            ..Default::default()
        };
        assert_eq!(
            run(off, vec![b]),
            vec![Action::Interleave {
                range: r,
                nodes: nodes(&[0, 1])
            }]
        );
        // Written and shared by all three nodes: interleave.
        let b = block(0x10000, [30.0, 30.0, 40.0], 0.2, [4, 0, 0]);
        assert_eq!(
            run(OracleConfig::default(), vec![b]),
            vec![Action::Interleave {
                range: r,
                nodes: nodes(&[0, 1, 2])
            }]
        );
    }

    #[test]
    fn good_placement_yields_nothing() {
        let truth = vec![
            block(0x0000, [0.0, 100.0, 0.0], 0.5, [0, 4, 0]),
            block(0x4000, [50.0, 50.0, 0.0], 0.0, [4, 4, 0]),
            block(0x8000, [50.0, 50.0, 0.0], 0.5, [2, 2, 0]),
            block(0xc000, [0.0, 0.0, 0.0], 0.0, [4, 0, 0]),
            block(0x10000, [10.0, 0.0, 0.0], 0.0, [0, 0, 0]),
        ];
        assert_eq!(run(OracleConfig::default(), truth), vec![]);
        // Replicas do not count as interleaved.
        let b = block(0x4000, [50.0, 50.0, 0.0], 0.5, [4, 4, 0]);
        assert_eq!(run(OracleConfig::default(), vec![b]).len(), 1);
    }

    #[test]
    fn acts_once_per_decision() {
        let t = TopologyBuilder::new(3).build().unwrap();
        let mut o = Oracle::new(OracleConfig::default());
        let b = block(0x0000, [100.0, 0.0, 0.0], 0.5, [0, 4, 0]);
        assert_eq!(o.decide(&t, &obs(vec![b.clone()])).len(), 1);
        // Same truth again (say the migration failed): nothing.
        assert_eq!(o.decide(&t, &obs(vec![b])), vec![]);
        // The accessing set changes: act again.
        let b = block(0x0000, [50.0, 50.0, 0.0], 0.5, [0, 4, 0]);
        assert_eq!(o.decide(&t, &obs(vec![b])).len(), 1);
        // No truth (a backend without it): nothing.
        assert_eq!(o.decide(&t, &Observation::default()), vec![]);
    }

    #[test]
    fn replication_needs_free_memory() {
        let t = TopologyBuilder::new(3).build().unwrap();
        let mut o = Oracle::new(OracleConfig::default());
        let b = block(0x0000, [50.0, 50.0, 0.0], 0.0, [4, 0, 0]);
        let mut ob = obs(vec![
            b.clone(),
            block(0x4000, [50.0, 50.0, 0.0], 0.0, [4, 0, 0]),
        ]);
        // Room for one block's copies on node 1, not two.
        ob.memory = vec![NodeMemory {
            node: NodeId(1),
            total_bytes: 1 << 30,
            free_bytes: 5 * 4096,
        }];
        let a = o.decide(&t, &ob);
        assert_eq!(
            a.iter().map(|a| a.technique()).collect::<Vec<_>>(),
            ["replicate", "interleave"]
        );
    }

    #[test]
    fn asks_for_truth_only() {
        let o = Oracle::new(OracleConfig::default());
        assert_eq!(o.name(), "oracle");
        assert_eq!(
            o.sampling(),
            SamplingRequest {
                truth: true,
                ..SamplingRequest::NONE
            }
        );
        let text = toml::to_string(&OracleConfig::default()).unwrap();
        assert_eq!(
            toml::from_str::<OracleConfig>(&text).unwrap(),
            OracleConfig::default()
        );
    }
}
