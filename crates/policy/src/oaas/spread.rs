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
//! Migrations during the run are not modelled: the simulator runs one thread per core, so
//! there is no imbalance for a balancer to correct.

use super::config::LinuxSpreadConfig;
use super::cpu_nodes;
use crate::{Policy, PolicyError};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rondpoint_model::{
    Action, Capability, CpuId, Need, NodeId, Observation, Pid, ProcessInfo, Tid, Topology,
};

/// `linux`.
#[derive(Clone, Debug)]
pub struct LinuxSpread {
    config: LinuxSpreadConfig,
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
        Ok(Self { config })
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

    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}
