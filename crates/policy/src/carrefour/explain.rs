//! Why Carrefour took its actions: per application and technique, the figures of Figure 4's
//! global decisions that let the technique run, for the explanation trail.

use super::config::CarrefourConfig;
use super::global::AppDecision;
use rondpoint_model::metrics::GlobalMetrics;
use rondpoint_model::{Action, Pid, Reason};

/// What the payoff guard does with the gain Carrefour does not model.
const CHECKED: &str = "no model of the gain: the payoff guard compares the program's rate \
                       after the work with its rate before, and rests it if it did not pay";

/// One reason per run of actions of one application and technique, in the actions' order.
pub(super) fn reasons(
    cfg: &CarrefourConfig,
    global: Option<&GlobalMetrics>,
    decisions: &[AppDecision],
    actions: &[Action],
) -> Vec<Reason> {
    let mut out: Vec<Reason> = Vec::new();
    let mut last: Option<(Pid, &str)> = None;
    for a in actions {
        let key = (a.pid(), a.technique());
        if last == Some(key) {
            if let Some(r) = out.last_mut() {
                r.actions += 1;
            }
            continue;
        }
        last = Some(key);
        let d = decisions.iter().find(|d| d.pid == key.0);
        out.push(reason(cfg, global, d, key));
    }
    out
}

/// The reason for one application's actions of one technique.
fn reason(
    cfg: &CarrefourConfig,
    global: Option<&GlobalMetrics>,
    d: Option<&AppDecision>,
    (pid, technique): (Pid, &str),
) -> Reason {
    let Some(d) = d else {
        return Reason::new(1, "carrefour", format!("{pid}: {technique}"));
    };
    let m = &d.metrics;
    let lar = m.lar.or(global.map(|g| g.lar)).unwrap_or(0.0);
    let imbalance = m
        .mc_imbalance_pct
        .or(global.map(|g| g.mc_imbalance_pct))
        .unwrap_or(0.0);
    let gate = format!(
        "{pid}: {:.0} DRAM accesses/µs (MAPTU, at least {:.0} to act, [Dashti13 §3.2.1])",
        m.maptu, cfg.maptu_threshold
    );
    let (evidence, expected) = match technique {
        "migrate" => (
            format!(
                "{gate}; local access ratio {:.0}% under {:.0}%: pages sampled from one node \
                 go to it (co-location)",
                lar * 100.0,
                cfg.lar_threshold * 100.0
            ),
            format!(
                "the local access ratio rises from {:.0}% as these pages' accesses become \
                 local; {CHECKED}",
                lar * 100.0
            ),
        ),
        "interleave" => (
            format!(
                "{gate}; memory-controller imbalance {imbalance:.0}% over {:.0}%: pages \
                 accessed from several nodes are spread (interleaving)",
                cfg.mc_imbalance_threshold_pct
            ),
            format!("the controller imbalance falls from {imbalance:.0}%; {CHECKED}"),
        ),
        "replicate" => (
            format!(
                "{gate}; {:.0}% of its DRAM accesses are reads (at least {:.0}%) and {:.0}% of \
                 memory is free: read-only pages get a copy on each node reading them \
                 (replication)",
                m.mrr * 100.0,
                cfg.mrr_threshold * 100.0,
                global.map_or(0.0, |g| g.free_fraction * 100.0)
            ),
            format!("every read of these pages is local; {CHECKED}"),
        ),
        other => (format!("{gate}: {other}"), CHECKED.to_string()),
    };
    Reason::new(1, "carrefour", evidence).expecting(expected)
}
