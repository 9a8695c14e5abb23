//! Carrefour's global decisions, per application (Figure 4): whether Carrefour runs for it and
//! which of its mechanisms it may use this epoch.

use super::config::{CarrefourConfig, Technique};
use crate::metrics::AppMetrics;
use rondpoint_model::Pid;
use rondpoint_model::metrics::GlobalMetrics;

/// What Carrefour decided for one application in the last epoch (for reports and tests).
#[derive(Clone, Debug, PartialEq)]
pub struct AppDecision {
    pub pid: Pid,
    /// Carrefour works for it: the paper's test passed and the payoff guard lets it.
    pub enabled: bool,
    pub replication: bool,
    pub interleaving: bool,
    pub co_location: bool,
    pub metrics: AppMetrics,
}

/// The global decisions (Figure 4) for each application, on a machine of `nodes` nodes;
/// `estimated` when the backend estimates DRAM traffic from samples; the applications the
/// payoff guard rests (`working` false) are not worked for.
pub(super) fn decide(
    cfg: &CarrefourConfig,
    global: &GlobalMetrics,
    apps: &[AppMetrics],
    estimated: bool,
    nodes: usize,
    working: impl Fn(Pid) -> bool,
) -> Vec<AppDecision> {
    let min_free = cfg.min_free_fraction(nodes);
    let mut decisions = Vec::with_capacity(apps.len());
    for a in apps {
        let enabled = working(a.pid)
            && if estimated {
                a.samples >= cfg.min_samples_when_estimated
            } else {
                a.maptu >= cfg.maptu_threshold
            };
        let (imbalance, lar) = if cfg.per_application {
            (
                a.mc_imbalance_pct.unwrap_or(global.mc_imbalance_pct),
                a.lar.unwrap_or(global.lar),
            )
        } else {
            (global.mc_imbalance_pct, global.lar)
        };
        decisions.push(AppDecision {
            pid: a.pid,
            enabled,
            replication: enabled
                && cfg.has(Technique::Replication)
                && global.free_fraction >= min_free
                && a.mrr >= cfg.mrr_threshold,
            interleaving: enabled
                && cfg.has(Technique::Interleaving)
                && imbalance > cfg.mc_imbalance_threshold_pct,
            co_location: enabled && cfg.has(Technique::CoLocation) && lar < cfg.lar_threshold,
            metrics: a.clone(),
        });
    }
    decisions
}
