//! Interleaving's odds (section 3.2.2): P_migrate, the chance that a page moves away from its
//! node, and P_node, the chance of each node to receive it.

use super::config::CarrefourConfig;
use super::global::AppDecision;
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use rondpoint_model::draw::weighted_index;
use rondpoint_model::metrics::GlobalMetrics;

/// Each decision's interleaving odds (`None` where it does not interleave): from the traffic
/// each node serves, the machine's, or in per-application mode the application's own when its
/// samples gave it. `memory_nodes` are the dense indices of the nodes with memory, of `nodes`.
pub(super) fn odds(
    decisions: &[AppDecision],
    global: &GlobalMetrics,
    cfg: &CarrefourConfig,
    memory_nodes: &[usize],
    nodes: usize,
) -> Vec<Option<Interleaving>> {
    decisions
        .iter()
        .map(|d| {
            d.interleaving.then(|| {
                let by_node = match (&d.metrics.maptu_by_node, cfg.per_application) {
                    (Some(own), true) => own.as_slice(),
                    _ => global.maptu_by_node.as_slice(),
                };
                Interleaving::new(by_node, memory_nodes, nodes)
            })
        })
        .collect()
}

/// P_migrate and P_node of one application's interleaving (section 3.2.2), worked out once an
/// epoch: a page moves away from its node with probability P_migrate (that node's share of the
/// traffic) to a node drawn with probability P_node (weights: the complement of each node's
/// share, so the least loaded node is the likeliest).
pub(super) struct Interleaving {
    /// P_migrate of a page by its home as a slot keeps it (0 unknown: 1; else dense index + 1:
    /// that node's share of the traffic).
    p_migrate: Vec<f64>,
    /// The memory nodes in order, with their weights.
    weights: Vec<(usize, f64)>,
}

impl Interleaving {
    fn new(maptu_by_node: &[f64], memory_nodes: &[usize], nodes: usize) -> Self {
        let total: f64 = maptu_by_node.iter().sum();
        let share: Vec<f64> = (0..nodes)
            .map(|n| {
                if total > 0.0 {
                    maptu_by_node.get(n).copied().unwrap_or(0.0) / total
                } else {
                    0.0
                }
            })
            .collect();
        let weights: Vec<(usize, f64)> = memory_nodes
            .iter()
            .map(|&n| (n, (1.0 - share.get(n).copied().unwrap_or(0.0)).max(0.0)))
            .collect();
        let p_migrate = std::iter::once(1.0).chain(share.iter().copied()).collect();
        Self { p_migrate, weights }
    }

    /// Where a page on `home` (0 unknown, else dense index + 1, as a slot keeps it) goes, if
    /// it moves.
    pub(super) fn draw(&self, rng: &mut Pcg64Mcg, home_code: u8) -> Option<usize> {
        let p_migrate = self
            .p_migrate
            .get(usize::from(home_code))
            .copied()
            .unwrap_or(0.0);
        if rng.random::<f64>() >= p_migrate {
            return None;
        }
        let home = home_code.checked_sub(1).map(usize::from);
        let candidates = || self.weights.iter().filter(move |&&(n, _)| Some(n) != home);
        let first = candidates().next()?.0;
        let sum: f64 = candidates().map(|&(_, w)| w).sum();
        if sum <= 0.0 {
            return Some(first);
        }
        let u = rng.random::<f64>();
        let pick = weighted_index(candidates().map(|&(_, w)| w), u)?;
        candidates().nth(pick).map(|&(n, _)| n)
    }
}
