//! Why the remote-placement policies acted, for the explanation trail: the overflow rule set
//! at allocation, the overflow moved off a full node, dynamic migration, AutoNUMA's moves.

use rondpoint_model::{NodeTiers, Observation, OverflowSpread, Reason};

/// The rule's name as [Choe21] gives it.
fn rule(spread: OverflowSpread) -> &'static str {
    match spread {
        OverflowSpread::Interleave => "interleaved over the tier's nodes (hybrid, [Choe21 §3.1])",
        OverflowSpread::FewestAllocated => {
            "to the tier's node with the least memory in use (usage-aware, [Choe21 §4])"
        }
        OverflowSpread::MostFree => {
            "to the tier's node with the most free memory (usage-aware, [Choe21 §3.3])"
        }
    }
}

/// Why `actions` overflow policies were set at allocation.
pub(super) fn at_allocation(
    name: &str,
    actions: usize,
    spread: OverflowSpread,
    tiers: &[NodeTiers],
) -> Reason {
    let first: Vec<String> = tiers
        .iter()
        .take(2)
        .map(|t| {
            let tiers: Vec<String> = t
                .tiers
                .iter()
                .map(|x| {
                    let nodes: Vec<String> = x.iter().map(|n| n.0.to_string()).collect();
                    format!("{{{}}}", nodes.join(","))
                })
                .collect();
            format!("from node {}: {}", t.local.0, tiers.join(" then "))
        })
        .collect();
    Reason::new(
        actions,
        name,
        format!(
            "memory goes to the local node while it has room, the overflow nearest tier first, \
             {} ({}{})",
            rule(spread),
            first.join("; "),
            if tiers.len() > 2 { "; ..." } else { "" }
        ),
    )
    .expecting(
        "overflow spread over the least used nodes of the nearest tier instead of piling onto \
         the kernel's single fallback node [Choe21 §2.2]",
    )
}

/// Free memory per node, for the evidence of a move made because a node is full.
fn free_mib(observation: &Observation) -> String {
    let v: Vec<String> = observation
        .memory
        .iter()
        .map(|m| format!("node {} {} MiB", m.node, m.free_bytes >> 20))
        .collect();
    format!("free: {}", v.join(", "))
}

/// The reasons for a decision's actions: `autonuma` AutoNUMA moves, then `overflow` moves off
/// full nodes (by `spread`), then `rebalance` dynamic-migration moves.
pub(super) fn decided(
    name: &str,
    observation: &Observation,
    (autonuma, overflow, rebalance): (usize, usize, usize),
    spread: Option<OverflowSpread>,
) -> Vec<Reason> {
    let mut out = Vec::new();
    if autonuma > 0 {
        out.push(
            Reason::new(
                autonuma,
                name,
                "hinting faults: pages used from another node than theirs (AutoNUMA, as \
                 Linux's NUMA balancing)",
            )
            .expecting("those pages local to the node that faulted on them"),
        );
    }
    if overflow > 0 {
        let how = spread.map_or("", rule);
        out.push(
            Reason::new(
                overflow,
                name,
                format!(
                    "memory left its program's node for the kernel's fallback node; moved {how}; {}",
                    free_mib(observation)
                ),
            )
            .expecting("the overflow where the rule puts it, as if placed at allocation"),
        );
    }
    if rebalance > 0 {
        out.push(
            Reason::new(
                rebalance,
                name,
                format!(
                    "the busiest memory node's load over its bandwidth; {}",
                    free_mib(observation)
                ),
            )
            .expecting(
                "a shorter loaded access latency: pages move only where the latency model \
                 says the move saves more than it adds ([Choe21 §3.2], M/M/1 per node)",
            ),
        );
    }
    out
}
