//! `default`: the scheduler baseline of [Majo11 §4.3]. An operating system that balances only
//! CPU load puts as many processes on each processor (two of four on each of two), and which
//! ones is left to chance, "equally probable"; the paper runs every such split (6 for four
//! processes on two processors) and reports the average. So this policy stands for a set of
//! placements: a simulator runs each split ([`Policy::variants`]) and averages them; one run
//! pins one split, chosen with [`Policy::select_variant`] or `split`; with neither (a live
//! run) it pins nothing and leaves the placement to the machine's own scheduler.
//!
//! The splits: the processes (by pid) dealt over the nodes with CPUs so that node counts
//! differ by at most one (which nodes take one more is part of the split), in lexicographic
//! order of the node each process gets. For 8 processes on 2 processors, where the paper says
//! nothing, this is C(8,4) = 70 splits, all run (ours: with a core per process every split is
//! 4 + 4, and nothing makes one likelier than another). More than `max_splits` splits are
//! sampled: `max_splits` balanced splits drawn at random with `seed` (ours).

use super::plan;
use super::view::Managed;
use crate::{Policy, PolicyError};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64Mcg;
use rondpoint_model::{Action, Capability, Need, Observation, ProcessInfo, Topology};
use rondpoint_policy_api::bounds::{Bounds, ParamBounds};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[default]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CfsAverageConfig {
    /// Run this split only (from 0, in the order of the module documentation), on any
    /// backend. Unset by default: a simulator runs every split and averages them, a live run
    /// pins nothing.
    pub split: Option<usize>,
    /// Most splits run and averaged (splits). Default 100: chosen, above the 70 of the
    /// paper's largest (8-process) workloads; beyond it, that many drawn at random.
    pub max_splits: usize,
    /// Seed of the draw of splits beyond `max_splits` (`rondpoint sim --seed` sets it unless
    /// given). Default 1.
    pub seed: u64,
}

impl Default for CfsAverageConfig {
    fn default() -> Self {
        Self {
            split: None,
            max_splits: 100,
            seed: 1,
        }
    }
}

/// The `default` baseline.
#[derive(Clone, Debug)]
pub struct CfsAverage {
    config: CfsAverageConfig,
    selected: Option<usize>,
}

impl CfsAverage {
    pub fn new(config: CfsAverageConfig) -> Result<Self, PolicyError> {
        if config.max_splits == 0 {
            return Err(PolicyError::Config {
                policy: "cfs-average".into(),
                message: "max_splits must be at least 1".into(),
            });
        }
        Ok(Self {
            config,
            selected: None,
        })
    }
}

/// Cores of each node (dense index) that has CPUs.
fn cpu_nodes(topology: &Topology) -> Vec<(usize, usize)> {
    topology
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.has_cpu())
        .map(|(i, n)| (i, n.cpus.len()))
        .collect()
}

/// Every balanced split of `n` processes over the nodes with CPUs (each the node, dense index,
/// of every process), in lexicographic order, stopping after `limit + 1`.
pub(crate) fn balanced_splits(topology: &Topology, n: usize, limit: usize) -> Vec<Vec<usize>> {
    let nodes = cpu_nodes(topology);
    if nodes.is_empty() {
        return Vec::new();
    }
    let base = n / nodes.len();
    let extra = n % nodes.len();
    let mut out = Vec::new();
    let mut split = Vec::with_capacity(n);
    let mut counts = vec![0usize; nodes.len()];
    deal(
        &nodes,
        base,
        extra,
        n,
        &mut split,
        &mut counts,
        &mut out,
        limit + 1,
    );
    out
}

#[allow(clippy::too_many_arguments)]
fn deal(
    nodes: &[(usize, usize)],
    base: usize,
    extra: usize,
    n: usize,
    split: &mut Vec<usize>,
    counts: &mut [usize],
    out: &mut Vec<Vec<usize>>,
    limit: usize,
) {
    if out.len() >= limit {
        return;
    }
    if split.len() == n {
        out.push(split.clone());
        return;
    }
    let over = counts.iter().filter(|&&c| c > base).count();
    let missing: usize = counts.iter().map(|&c| base.saturating_sub(c)).sum();
    let left = n - split.len();
    for (k, &(node, cores)) in nodes.iter().enumerate() {
        let c = counts[k];
        let allowed = c < base || (c == base && over < extra);
        let still_fits = missing - usize::from(c < base) < left;
        if allowed && c < cores && still_fits {
            counts[k] += 1;
            split.push(node);
            deal(nodes, base, extra, n, split, counts, out, limit);
            split.pop();
            counts[k] -= 1;
        }
    }
}

/// `count` balanced splits drawn at random with `seed`: the processes shuffled and dealt
/// round-robin, the node order rotated so that each node may take the extra ones.
fn drawn_splits(topology: &Topology, n: usize, count: usize, seed: u64) -> Vec<Vec<usize>> {
    let nodes: Vec<usize> = cpu_nodes(topology).into_iter().map(|x| x.0).collect();
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    (0..count)
        .map(|k| {
            let mut order: Vec<usize> = (0..n).collect();
            order.shuffle(&mut rng);
            let mut split = vec![0; n];
            for (slot, &p) in order.iter().enumerate() {
                split[p] = nodes[(slot + k) % nodes.len().max(1)];
            }
            split
        })
        .collect()
}

impl CfsAverage {
    /// The splits this policy averages over for `n` processes.
    pub(crate) fn splits(&self, topology: &Topology, n: usize) -> Vec<Vec<usize>> {
        let max = self.config.max_splits;
        let all = balanced_splits(topology, n, max);
        if all.len() <= max {
            all
        } else {
            drawn_splits(topology, n, max, self.config.seed)
        }
    }
}

impl Policy for CfsAverage {
    fn name(&self) -> &str {
        "cfs-average"
    }

    fn needs(&self) -> Vec<Need> {
        vec![Need::one(
            Capability::PinThreads,
            "to pin each process to the processor its split gives it",
        )]
    }

    fn variants(&self, topology: &Topology, processes: usize) -> usize {
        if self.config.split.is_some() {
            1
        } else {
            self.splits(topology, processes).len().max(1)
        }
    }

    fn select_variant(&mut self, k: usize) {
        self.selected = Some(k);
    }

    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let managed = Managed::all(topology, processes);
        let Some(k) = self.config.split.or(self.selected) else {
            return Vec::new();
        };
        let Some(split) = self.splits(topology, managed.len()).into_iter().nth(k) else {
            return Vec::new();
        };
        // Multi-threaded processes stay where the OS runs them, their cores taken (as under
        // n-mass: [Majo11]'s programs are single-threaded).
        let (_, _, taken) = Managed::split(topology, processes);
        let target: Vec<Option<usize>> = split
            .into_iter()
            .zip(&managed)
            .map(|(node, m)| (m.threads.len() == 1).then_some(node))
            .collect();
        plan::pins(topology, &managed, &target, &BTreeMap::new(), &taken)
    }

    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

/// The range of cfs-average's parameter ([`CfsAverageConfig`]): each split is a whole
/// simulated run.
pub const CFS_BOUNDS: &[ParamBounds] = &[
    ("max_splits", Bounds::new(1.0, 10_000.0, "runs")),
    ("seed", rondpoint_policy_api::bounds::SEED),
];
