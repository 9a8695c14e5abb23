//! `linux`: where Linux's scheduler puts the threads of applications that start together, for
//! a simulator, which has no scheduler of its own. On a live machine Linux itself is the
//! baseline (`first-touch`, which takes no action).
//!
//! [Gaud10 §4.1]: Linux "usually falls down to" spreading an application's threads one per
//! processor (strategy S3); §4.2: its results vary widely from run to run (10% standard
//! deviation) because of its load balancing. The model, drawn from `seed` before the programs
//! start: each application's threads are dealt one per CPU node, round-robin from a node drawn
//! at random (so its first thread, which first-touches the shared data, lands anywhere), each
//! on a free CPU of that node drawn at random, the next node when it is full; then each thread,
//! with probability `exchange_probability`, trades its CPU with a thread of another
//! application on another node, drawn at random, as the load balancer's migrations leave them.
//!
//! During the run the load balancer goes on moving threads: each epoch, each running thread
//! is exchanged, with probability `1 - exp(-exchanges_per_s × epoch length)`, with a running
//! thread of another application on another node, drawn at random
//! ([`Action::ExchangeThreads`]; every core is busy, so a move is an exchange). Its memory
//! stays where it was first touched, so a thread moved away from it runs remote until moved
//! back: Linux's run-to-run variation has the paper's cause, the balancing during the run, as
//! well as where the threads start.

use super::config::LinuxSpreadConfig;
use super::cpu_nodes;
use crate::{Policy, PolicyError};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rondpoint_model::{
    Action, Capability, CpuId, Need, NodeId, Observation, Pid, ProcessInfo, ThreadCpu, Tid,
    Topology,
};

/// Mixed into the seed of the balancing's draws (any odd constant: 2^64 / golden ratio).
const BALANCE_STREAM: u64 = 0x9e37_79b9_7f4a_7c15;

/// `linux`.
#[derive(Clone, Debug)]
pub struct LinuxSpread {
    config: LinuxSpreadConfig,
    /// The draws of the balancing during the run.
    rng: Pcg64Mcg,
    /// The start of the previous epoch decided (ns).
    last_ns: u64,
}

impl LinuxSpread {
    pub fn new(config: LinuxSpreadConfig) -> Result<Self, PolicyError> {
        let p = config.exchange_probability;
        if !(0.0..=1.0).contains(&p) {
            return Err(PolicyError::Config {
                policy: "linux-spread".into(),
                message: format!("exchange_probability must be between 0 and 1, not {p}"),
            });
        }
        let rate = config.exchanges_per_s;
        if !(rate.is_finite() && rate >= 0.0) {
            return Err(PolicyError::Config {
                policy: "linux-spread".into(),
                message: format!("exchanges_per_s must be 0 or more, not {rate}"),
            });
        }
        // A stream of its own, so that the start's deal does not depend on the run's length.
        let rng = Pcg64Mcg::seed_from_u64(config.seed ^ BALANCE_STREAM);
        Ok(Self {
            config,
            rng,
            last_ns: 0,
        })
    }

    /// The load balancer's exchanges over the `dt_ns` since the last epoch: each running
    /// thread, with probability `1 - exp(-rate × dt)`, with a running thread of another
    /// application on another node that has not moved this epoch.
    fn balance(&mut self, processes: &[ProcessInfo], dt_ns: u64) -> Vec<Action> {
        let p = 1.0 - (-self.config.exchanges_per_s * dt_ns as f64 / 1e9).exp();
        if p <= 0.0 {
            return Vec::new();
        }
        let threads: Vec<(ThreadCpu, NodeId)> = processes
            .iter()
            .flat_map(|pr| {
                pr.threads.iter().map(|t| {
                    let at = ThreadCpu {
                        pid: pr.pid,
                        tid: t.tid,
                        cpu: t.cpu,
                    };
                    (at, t.node)
                })
            })
            .collect();
        let mut moved = vec![false; threads.len()];
        let mut actions = Vec::new();
        for i in 0..threads.len() {
            if moved[i] || self.rng.random::<f64>() >= p {
                continue;
            }
            let (a, node) = threads[i];
            let partners: Vec<usize> = (0..threads.len())
                .filter(|&j| !moved[j] && threads[j].0.pid != a.pid && threads[j].1 != node)
                .collect();
            if let Some(&j) = partners.choose(&mut self.rng) {
                moved[i] = true;
                moved[j] = true;
                actions.push(Action::ExchangeThreads { a, b: threads[j].0 });
            }
        }
        actions
    }

    /// The CPU of every thread: `(pid, tid, node, cpu)`, in the processes' order.
    pub fn deal(
        &self,
        topology: &Topology,
        processes: &[ProcessInfo],
    ) -> Vec<(Pid, Tid, NodeId, CpuId)> {
        let mut rng = Pcg64Mcg::seed_from_u64(self.config.seed);
        let nodes = cpu_nodes(topology);
        if nodes.is_empty() {
            return Vec::new();
        }
        let mut free: Vec<Vec<CpuId>> = nodes
            .iter()
            .filter_map(|&n| topology.node(n).map(|n| n.cpus.clone()))
            .collect();
        let mut dealt = Vec::new();
        for p in processes {
            let first = rng.random_range(0..nodes.len());
            for (k, t) in p.threads.iter().enumerate() {
                let Some(i) = (0..nodes.len())
                    .map(|step| (first + k + step) % nodes.len())
                    .find(|&i| !free[i].is_empty())
                else {
                    break;
                };
                let pick = rng.random_range(0..free[i].len());
                let cpu = free[i].swap_remove(pick);
                dealt.push((p.pid, t.tid, nodes[i], cpu));
            }
        }
        self.exchange(&mut dealt, &mut rng);
        dealt
    }

    /// The load balancer's exchanges: each thread, with the configured probability, trades
    /// its place with a thread of another application on another node.
    fn exchange(&self, dealt: &mut [(Pid, Tid, NodeId, CpuId)], rng: &mut Pcg64Mcg) {
        for i in 0..dealt.len() {
            if rng.random::<f64>() >= self.config.exchange_probability {
                continue;
            }
            let (pid, _, node, _) = dealt[i];
            let partners: Vec<usize> = (0..dealt.len())
                .filter(|&j| dealt[j].0 != pid && dealt[j].2 != node)
                .collect();
            if let Some(&j) = partners.choose(rng) {
                let (node_j, cpu_j) = (dealt[j].2, dealt[j].3);
                dealt[j].2 = dealt[i].2;
                dealt[j].3 = dealt[i].3;
                dealt[i].2 = node_j;
                dealt[i].3 = cpu_j;
            }
        }
    }
}

impl Policy for LinuxSpread {
    fn name(&self) -> &str {
        "linux-spread"
    }

    fn needs(&self) -> Vec<Need> {
        vec![
            Need::one(
                Capability::PinThreads,
                "to put each thread on the CPU Linux's scheduler would have given it",
            )
            .exactly(),
        ]
    }

    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        self.deal(topology, processes)
            .into_iter()
            .map(|(pid, tid, _, cpu)| Action::PinThread {
                pid,
                tid,
                cpus: vec![cpu],
            })
            .collect()
    }

    fn decide(&mut self, _: &Topology, observation: &Observation) -> Vec<Action> {
        let dt = observation.start_ns.saturating_sub(self.last_ns);
        self.last_ns = observation.start_ns;
        self.balance(&observation.processes, dt)
    }
}
