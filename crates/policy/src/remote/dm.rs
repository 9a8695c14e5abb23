//! Dynamic migration (DM), the AutoNUMA extension of [Choe21 §4] evaluated in §5.2:
//! "periodically move pages from the busiest node that has the most memory traffic to the
//! least busy one", to relieve a node "highly stressed due to excessive interference". The
//! paper gives no threshold, period or batch size; every one here is rondpoint's, named
//! "chosen" with its reason.
//!
//! Each period rondpoint:
//! 1. sums each node's DRAM accesses by source node over the period, from the memory
//!    controllers' counters ([`rondpoint_model::NodeCounters::dram_accesses_by_source`]; the
//!    paper estimates traffic from AutoNUMA's fault statistics, which count pages touched per
//!    scan, not how often they are touched);
//! 2. takes as stressed the busiest node among those serving at least `min_remote_share` of
//!    their accesses to other nodes' CPUs (interference: a node serving only its own CPUs has
//!    nothing to give away), and as its noisiest tenant the process on the node sending it the
//!    most remote accesses that has most memory there;
//! 3. takes as destination the least busy node with room that runs none of the tenant's
//!    threads and is no farther from the tenant than the stressed node;
//! 4. when the stressed node served `imbalance_pct` percent more than the destination, moves
//!    enough of the tenant's pages to close half the gap, at the accesses per byte the tenant
//!    made to the stressed node, at most `batch_mib` ([`Action::MoveNodePages`]).
//!
//! Halving the gap makes successive periods converge instead of swinging the traffic back
//! and forth. The moves cost what migrations cost (copies, and per-page work the simulator
//! charges to the process); AutoNUMA's hinting scans, which run beside (Linux's balancing, as
//! in the paper's runs: the kernel's own on a live machine, the policy's copy of its rules in
//! the simulator), cost what they cost.

use rondpoint_model::{Action, NodeId, NodeList, Observation, Pid, ProcessInfo, Topology};
use rondpoint_policy_api::bounds::{Bounds, FRACTION, MOVE_MIB, PERCENT, ParamBounds};
use serde::{Deserialize, Serialize};

/// Bytes of a base page: the unit of [`Action::MoveNodePages`].
const PAGE: f64 = 4096.0;

/// `[dm]` parameters (and `[ua-dm.dm]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DmConfig {
    /// Epochs of counters summed for one decision (at least 1). Default 2: chosen; two
    /// seconds at the default 1 s epoch smooth one epoch's noise (a phase, a program
    /// finishing) and still react within seconds on runs of tens of seconds.
    pub period_epochs: u64,
    /// How much more the stressed node must have served than the destination (percent).
    /// Default 20: chosen; below it the queueing removed is small beside the copies.
    pub imbalance_pct: f64,
    /// Share of a node's accesses that must come from other nodes' CPUs for it to count as
    /// stressed by interference (0 to 1). Default 0.1: chosen.
    pub min_remote_share: f64,
    /// Most memory moved per decision (MiB). Default 512: chosen; 4.5 GiB of overflow is
    /// rebalanced within half a minute, and 512 MiB over a 2 s period is under 2% of one DDR4
    /// channel's bandwidth (xeon-6242-4s: 18.8 GB/s).
    pub batch_mib: u64,
}

impl Default for DmConfig {
    fn default() -> Self {
        Self {
            period_epochs: 2,
            imbalance_pct: 20.0,
            min_remote_share: 0.1,
            batch_mib: 512,
        }
    }
}

/// The rebalancer and the counters of the current period.
#[derive(Clone, Debug)]
pub(crate) struct Rebalancer {
    config: DmConfig,
    /// DRAM accesses of the period, `[served by * n + made from]` (dense indices).
    accesses: Vec<f64>,
    epochs: u64,
}

impl Rebalancer {
    pub fn new(config: DmConfig) -> Self {
        let mut c = config;
        c.period_epochs = c.period_epochs.max(1);
        if !c.imbalance_pct.is_finite() || c.imbalance_pct < 0.0 {
            c.imbalance_pct = DmConfig::default().imbalance_pct;
        }
        if !c.min_remote_share.is_finite() {
            c.min_remote_share = DmConfig::default().min_remote_share;
        }
        c.min_remote_share = c.min_remote_share.clamp(0.0, 1.0);
        Self {
            config: c,
            accesses: Vec::new(),
            epochs: 0,
        }
    }

    /// Counts the epoch's traffic and, at the end of a period, the move to make, if any.
    /// Processes for which `busy` is true are not moved (their placement is under way).
    pub fn decide(
        &mut self,
        topology: &Topology,
        observation: &Observation,
        busy: impl Fn(Pid) -> bool,
    ) -> Vec<Action> {
        let n = topology.len();
        self.accesses.resize(n * n, 0.0);
        for c in &observation.counters.nodes {
            let Some(d) = topology.index_of(c.node) else {
                continue;
            };
            for (s, &a) in c.dram_accesses_by_source.iter().enumerate().take(n) {
                self.accesses[d * n + s] += a as f64;
            }
        }
        self.epochs += 1;
        if self.epochs < self.config.period_epochs {
            return Vec::new();
        }
        let traffic = Traffic {
            n,
            accesses: std::mem::take(&mut self.accesses),
        };
        self.epochs = 0;
        traffic
            .plan(topology, observation, &self.config, busy)
            .into_iter()
            .collect()
    }
}

/// One period's accesses.
struct Traffic {
    n: usize,
    accesses: Vec<f64>,
}

impl Traffic {
    fn served(&self, d: usize) -> f64 {
        self.accesses[d * self.n..(d + 1) * self.n].iter().sum()
    }

    fn from(&self, d: usize, s: usize) -> f64 {
        self.accesses[d * self.n + s]
    }

    /// The stressed node: the busiest with enough remote accesses.
    fn stressed(&self, min_remote_share: f64) -> Option<usize> {
        (0..self.n)
            .filter(|&d| {
                let all = self.served(d);
                all > 0.0 && (all - self.from(d, d)) >= min_remote_share * all
            })
            .max_by(|&a, &b| self.served(a).total_cmp(&self.served(b)).then(b.cmp(&a)))
    }

    /// The move of this period, if any.
    fn plan(
        &self,
        topology: &Topology,
        observation: &Observation,
        config: &DmConfig,
        busy: impl Fn(Pid) -> bool,
    ) -> Option<Action> {
        let ids: Vec<NodeId> = topology.nodes().iter().map(|x| x.id).collect();
        let hot = self.stressed(config.min_remote_share)?;
        let source = (0..self.n).filter(|&s| s != hot).max_by(|&a, &b| {
            self.from(hot, a)
                .total_cmp(&self.from(hot, b))
                .then(b.cmp(&a))
        })?;
        let runs_on = |p: &ProcessInfo, i: usize| p.threads.iter().any(|t| t.node == ids[i]);
        let tenant = observation
            .processes
            .iter()
            .filter(|p| !busy(p.pid) && runs_on(p, source) && !runs_on(p, hot))
            .max_by_key(|p| {
                (
                    p.resident_bytes_by_node.get(hot).copied().unwrap_or(0),
                    -p.pid.0,
                )
            })?;
        let on_hot = tenant.resident_bytes_by_node.get(hot).copied().unwrap_or(0) as f64;
        let free = |i: usize| {
            observation
                .memory
                .iter()
                .find(|m| m.node == ids[i])
                .map_or(0.0, |m| m.free_bytes as f64)
        };
        let d = topology.distances();
        let cold = (0..self.n)
            .filter(|&i| i != hot && !runs_on(tenant, i) && free(i) >= PAGE)
            .filter(|&i| d[source][i] <= d[source][hot])
            .min_by(|&a, &b| self.served(a).total_cmp(&self.served(b)).then(a.cmp(&b)))?;
        let (busiest, least) = (self.served(hot), self.served(cold));
        if busiest < (1.0 + config.imbalance_pct / 100.0) * least || on_hot <= 0.0 {
            return None;
        }
        // The tenant's accesses per byte on the stressed node: moving x bytes moves about
        // x * density accesses to the destination.
        let density = self.from(hot, source) / on_hot;
        let half_gap = if density > 0.0 {
            (busiest - least) / 2.0 / density
        } else {
            0.0
        };
        let batch = config.batch_mib as f64 * (1u64 << 20) as f64;
        let bytes = half_gap.min(batch).min(on_hot).min(free(cold));
        let pages = (bytes / PAGE) as u64;
        (pages > 0).then(|| Action::MoveNodePages {
            pid: tenant.pid,
            from: ids[hot],
            to: NodeList::from_slice(&[ids[cold]]),
            pages,
        })
    }
}

/// The range of each parameter ([`DmConfig`]).
pub const BOUNDS: &[ParamBounds] = &[
    ("period_epochs", Bounds::new(1.0, 1e6, "epochs")),
    ("imbalance_pct", PERCENT),
    ("min_remote_share", FRACTION),
    ("batch_mib", MOVE_MIB),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::tests::process;
    use rondpoint_model::synthetic::TopologyBuilder;
    use rondpoint_model::{Counters, NodeCounters, NodeMemory};

    const GIB: u64 = 1 << 30;

    /// Mix-1 under first touch: mg (node 0) overflows onto node 1 next to mcf; node 1 serves
    /// 60 local and 40 remote (from node 0) accesses, node 2 (fotonik3d) 90, node 3 (cam4) 30.
    fn mix1(by_source: [[u64; 4]; 4]) -> Observation {
        Observation {
            counters: Counters {
                nodes: (0..4)
                    .map(|d| NodeCounters {
                        node: NodeId(d as u16),
                        dram_accesses_by_source: by_source[d].to_vec(),
                        ..NodeCounters::default()
                    })
                    .collect(),
                ..Counters::default()
            },
            memory: (0..4)
                .map(|d| NodeMemory {
                    node: NodeId(d),
                    total_bytes: 16 * GIB,
                    free_bytes: 2 * GIB,
                })
                .collect(),
            processes: vec![
                process(1, 0, vec![15 * GIB, 4 * GIB, 0, 0]),
                process(2, 1, vec![0, 9 * GIB, 0, 0]),
                process(3, 2, vec![0, 0, 13 * GIB, 0]),
                process(4, 3, vec![0, 0, 0, 13 * GIB]),
            ],
            ..Observation::default()
        }
    }

    const FT: [[u64; 4]; 4] = [[150, 0, 0, 0], [40, 60, 0, 0], [0, 0, 90, 0], [0, 0, 0, 30]];

    #[test]
    fn moves_the_noisy_tenant_from_the_stressed_node_to_the_least_busy_once_a_period() {
        let t = TopologyBuilder::new(4).build().unwrap();
        let mut r = Rebalancer::new(DmConfig::default());
        let o = mix1(FT);
        assert!(r.decide(&t, &o, |_| false).is_empty(), "first epoch of two");
        let a = r.decide(&t, &o, |_| false);
        // Node 1 served 200 over two epochs, node 3 60; mg's 80 remote accesses came from its
        // 4 GiB there: half the gap (70) is 3.5 GiB, capped at the 512 MiB batch.
        assert_eq!(
            a,
            vec![Action::MoveNodePages {
                pid: Pid(1),
                from: NodeId(1),
                to: NodeList::from_slice(&[NodeId(3)]),
                pages: 512 * 256,
            }]
        );
        // A process whose placement is under way is not moved.
        r.decide(&t, &o, |_| false);
        assert!(r.decide(&t, &o, |p| p == Pid(1)).is_empty());
    }

    #[test]
    fn nothing_without_interference_or_imbalance() {
        let t = TopologyBuilder::new(4).build().unwrap();
        let one = DmConfig {
            period_epochs: 1,
            ..DmConfig::default()
        };
        // Every node serves only its own CPUs: no node is stressed by interference.
        let local = [[150, 0, 0, 0], [0, 60, 0, 0], [0, 0, 90, 0], [0, 0, 0, 30]];
        let mut r = Rebalancer::new(one.clone());
        assert!(r.decide(&t, &mix1(local), |_| false).is_empty());
        // Node 1 at 100 against node 3 at 90: under the 20% threshold.
        let even = [[150, 0, 0, 0], [40, 60, 0, 0], [0, 0, 90, 0], [0, 0, 0, 90]];
        let mut r = Rebalancer::new(one);
        assert!(r.decide(&t, &mix1(even), |_| false).is_empty());
        // Closing half the gap takes less than a batch: 20 accesses of 10 per GiB -> 1 GiB ...
        let small_gap = [[150, 0, 0, 0], [40, 60, 0, 0], [0, 0, 90, 0], [0, 0, 0, 80]];
        let mut r = Rebalancer::new(DmConfig {
            period_epochs: 1,
            batch_mib: 4096,
            ..DmConfig::default()
        });
        let a = r.decide(&t, &mix1(small_gap), |_| false);
        assert!(
            matches!(&a[..], [Action::MoveNodePages { pages, .. }] if *pages == GIB / 4096),
            "{a:?}"
        );
    }

    #[test]
    fn never_farther_from_the_tenant_than_the_stressed_node() {
        // Node 3 is two hops from node 0 (distance 30), node 1 one (20): no destination.
        let d = vec![
            vec![10, 20, 20, 30],
            vec![20, 10, 30, 20],
            vec![20, 30, 10, 20],
            vec![30, 20, 20, 10],
        ];
        let t = TopologyBuilder::new(4).distances(d).build().unwrap();
        let mut r = Rebalancer::new(DmConfig {
            period_epochs: 1,
            ..DmConfig::default()
        });
        let busy_two = [
            [150, 0, 0, 0],
            [40, 60, 0, 0],
            [0, 0, 190, 0],
            [0, 0, 0, 30],
        ];
        let a = r.decide(&t, &mix1(busy_two), |_| false);
        assert!(
            a.is_empty(),
            "node 2 is busier than node 1, node 3 too far: {a:?}"
        );
    }
}
