//! The memory system as a closed multi-class queueing network, solved by approximate Mean Value
//! Analysis (Schweitzer's approximation with a residual correction for deterministic service).
//!
//! Each running thread is a class whose customers are its misses in flight (its memory-level
//! parallelism, N). A customer "thinks" while the core computes between misses (Z), then visits
//! the memory controller of the node that holds the data and every interconnect link on the way
//! (service demands D in ns), and pays the idle latency (L0) as pure delay. Why closed rather
//! than open queues: a core has a bounded number of misses in flight, so throughput saturates at
//! the bottleneck instead of the open M/D/1 formula exploding near utilisation 1
//! (shared/design/simulator-model.md, section 2; Geist & Westall used multi-chain MVA for NUMA).
//!
//! Per iteration, for class t at resource k:
//!
//! ```text
//!   R[t][k] = D[t][k] * max(1, 1 + Σ_u φ Q[u][k] − ½ (1 − U[k]) Σ_u φ U[u][k]),
//!             φ = 1 for u ≠ t, (N−1)/N for u = t, U[k] = Σ_u U[u][k]
//!   X[t]    = N[t] / (Z[t] + L0[t] + Σ_k R[t][k])
//!   Q[t][k] = X[t] R[t][k],  U[t][k] = X[t] D[t][k]
//! ```
//!
//! (the residual term, −½ Σ φ U, corrects Schweitzer's exponential-service queues toward
//! deterministic service; it fades with (1 − U\[k\]) so that a saturated resource obeys the
//! bottleneck law, utilisation ≤ 1, exactly as plain Schweitzer does), iterated with damping
//! (Q ← (Q + Q_new)/2) to a fixed point, warm-started from the previous epoch's queues so that
//! it usually converges in a few iterations.

/// One class: a thread's misses in flight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Class {
    /// Misses in flight (≥ 1).
    pub customers: f64,
    /// Think time per customer between misses (ns).
    pub think_ns: f64,
    /// Pure delay of a miss (ns): its unloaded latency less the service demands of the
    /// resources it visits, which the network adds back.
    pub idle_ns: f64,
}

/// The network: classes, and for each the resources it visits with its service demand at
/// each (ns per visit). Stored sparse: a thread visits the controllers holding its data and
/// the links on the way there, a few of the machine's resources, and a dense class-by-resource
/// table made a 64-node, 1,024-thread machine cost 4 million cells per iteration (0.23 s a
/// step) where the visits are some 200 thousand.
#[derive(Clone, Debug)]
pub struct Network {
    pub classes: Vec<Class>,
    /// Resources in the network (controllers and directed links).
    pub resources: usize,
    /// Class `t` visits `visits[starts[t]..starts[t + 1]]`.
    starts: Vec<usize>,
    visits: Vec<Visit>,
}

/// A class's visit to one resource.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Visit {
    resource: usize,
    /// Service demand per miss (ns), above zero.
    demand_ns: f64,
}

impl Network {
    /// A network of `resources` resources and no class yet.
    pub fn new(resources: usize) -> Self {
        Self {
            classes: Vec::new(),
            resources,
            starts: vec![0],
            visits: Vec::new(),
        }
    }

    /// Adds a class with its demands `(resource, ns per miss)`, in any order: a resource named
    /// twice has the sum, zero demands are dropped (`demands` is left sorted, for reuse).
    pub fn push(&mut self, class: Class, demands: &mut [(usize, f64)]) {
        demands.sort_by_key(|&(k, _)| k);
        for &(k, d) in demands.iter() {
            debug_assert!(k < self.resources, "resource {k} of {}", self.resources);
            let start = self.starts[self.starts.len() - 1];
            match self.visits[start..].last_mut() {
                Some(v) if v.resource == k => v.demand_ns += d,
                _ => self.visits.push(Visit {
                    resource: k,
                    demand_ns: d,
                }),
            }
        }
        let start = self.starts[self.starts.len() - 1];
        let mut kept = start;
        for i in start..self.visits.len() {
            if self.visits[i].demand_ns > 0.0 {
                self.visits[kept] = self.visits[i];
                kept += 1;
            }
        }
        self.visits.truncate(kept);
        self.classes.push(class);
        self.starts.push(self.visits.len());
    }

    /// Class `t`'s total service demand per miss (ns).
    #[cfg(test)]
    fn service_ns(&self, t: usize) -> f64 {
        self.range(t).map(|i| self.visits[i].demand_ns).sum()
    }

    fn range(&self, t: usize) -> std::ops::Range<usize> {
        self.starts[t]..self.starts[t + 1]
    }
}

/// Queue lengths of a solved network, per visit, to start the next solve from.
#[derive(Clone, Debug, Default)]
pub struct Warm {
    starts: Vec<usize>,
    resources: Vec<usize>,
    queue: Vec<f64>,
}

impl Warm {
    /// Starting queues for `net`: a class's queue at a resource it visited in the last solve
    /// (the same class position; classes are threads in a fixed order), zero elsewhere.
    fn queues_for(&self, net: &Network) -> Vec<f64> {
        let mut q = vec![0.0; net.visits.len()];
        if self.starts.len() != net.starts.len() {
            return q;
        }
        for t in 0..net.classes.len() {
            let end = self.starts[t + 1];
            let mut j = self.starts[t];
            for i in net.range(t) {
                let k = net.visits[i].resource;
                while j < end && self.resources[j] < k {
                    j += 1;
                }
                if j < end && self.resources[j] == k {
                    q[i] = self.queue[j];
                }
            }
        }
        q
    }
}

/// The solution.
#[derive(Clone, Debug, Default)]
pub struct Solution {
    /// Misses completed per ns, per class.
    pub throughput: Vec<f64>,
    /// Loaded latency of a miss per class (ns): idle latency plus residence at every resource.
    pub latency_ns: Vec<f64>,
    /// Utilisation of each resource (0 to 1).
    pub utilisation: Vec<f64>,
    /// Misses queued or in service at each resource, all classes together.
    pub queue: Vec<f64>,
    /// Queue lengths at the fixed point (warm start for the next solve).
    pub warm: Warm,
    pub iterations: u32,
    pub converged: bool,
}

/// Solver settings.
#[derive(Clone, Copy, Debug)]
pub struct SolverConfig {
    /// Stop when no queue length changes by more than this (customers).
    pub tolerance: f64,
    pub max_iterations: u32,
}

impl Default for SolverConfig {
    fn default() -> Self {
        Self {
            tolerance: 1e-7,
            max_iterations: 5_000,
        }
    }
}

/// Solves the network, starting from the queues of `warm` where they apply.
pub(crate) fn solve(net: &Network, warm: Option<&Warm>, cfg: SolverConfig) -> Solution {
    let (c, r, v) = (net.classes.len(), net.resources, net.visits.len());
    let mut q = warm.map_or_else(|| vec![0.0; v], |w| w.queues_for(net));
    let mut u = vec![0.0; v];
    let mut x = vec![0.0; c];
    let mut resid = vec![0.0; v];
    let mut qtot = vec![0.0; r];
    let mut utot = vec![0.0; r];
    let mut iterations = 0;
    let mut converged = false;
    // Utilisations consistent with the starting queues.
    compute_throughput(net, &q, &u, &mut resid, &mut x, &mut qtot, &mut utot);
    for t in 0..c {
        for i in net.range(t) {
            u[i] = x[t] * net.visits[i].demand_ns;
        }
    }
    while iterations < cfg.max_iterations {
        iterations += 1;
        compute_throughput(net, &q, &u, &mut resid, &mut x, &mut qtot, &mut utot);
        let mut delta: f64 = 0.0;
        for t in 0..c {
            for i in net.range(t) {
                let q_new = x[t] * resid[i];
                delta = delta.max((q_new - q[i]).abs());
                q[i] = 0.5 * (q[i] + q_new);
                u[i] = x[t] * net.visits[i].demand_ns;
            }
        }
        if delta < cfg.tolerance {
            converged = true;
            break;
        }
    }
    compute_throughput(net, &q, &u, &mut resid, &mut x, &mut qtot, &mut utot);
    let latency_ns = (0..c)
        .map(|t| net.classes[t].idle_ns + net.range(t).map(|i| resid[i]).sum::<f64>())
        .collect();
    let mut utilisation = vec![0.0; r];
    let mut queue = vec![0.0; r];
    for (visit, &qi) in net.visits.iter().zip(&q) {
        queue[visit.resource] += qi;
    }
    for t in 0..c {
        for i in net.range(t) {
            utilisation[net.visits[i].resource] += x[t] * net.visits[i].demand_ns;
        }
    }
    Solution {
        throughput: x,
        latency_ns,
        utilisation,
        queue,
        warm: Warm {
            starts: net.starts.clone(),
            resources: net.visits.iter().map(|v| v.resource).collect(),
            queue: q,
        },
        iterations,
        converged,
    }
}

fn compute_throughput(
    net: &Network,
    q: &[f64],
    u: &[f64],
    resid: &mut [f64],
    x: &mut [f64],
    qtot: &mut [f64],
    utot: &mut [f64],
) {
    qtot.iter_mut().for_each(|v| *v = 0.0);
    utot.iter_mut().for_each(|v| *v = 0.0);
    for (i, visit) in net.visits.iter().enumerate() {
        qtot[visit.resource] += q[i];
        utot[visit.resource] += u[i];
    }
    for (t, class) in net.classes.iter().enumerate() {
        let n = class.customers.max(1.0);
        let mut total = class.think_ns + class.idle_ns;
        for i in net.range(t) {
            let Visit {
                resource: k,
                demand_ns: d,
            } = net.visits[i];
            let others_q = qtot[k] - q[i] / n;
            let others_u = utot[k] - u[i] / n;
            // The residual correction fades as the resource saturates, so the bottleneck law
            // (utilisation at most 1) holds at the fixed point.
            let fade = (1.0 - utot[k]).clamp(0.0, 1.0);
            let bracket = (1.0 + others_q - 0.5 * others_u * fade).max(1.0);
            resid[i] = d * bracket;
            total += resid[i];
        }
        x[t] = if total > 0.0 { n / total } else { 0.0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A network from a dense class-by-resource table of demands.
    fn dense(classes: Vec<Class>, resources: usize, demand: &[f64]) -> Network {
        let mut net = Network::new(resources);
        for (t, class) in classes.into_iter().enumerate() {
            let mut row: Vec<(usize, f64)> = demand[t * resources..(t + 1) * resources]
                .iter()
                .copied()
                .enumerate()
                .collect();
            net.push(class, &mut row);
        }
        net
    }

    fn one(customers: f64, think: f64, idle: f64, demand: f64) -> Network {
        let class = Class {
            customers,
            think_ns: think,
            idle_ns: idle,
        };
        dense(vec![class], 1, &[demand])
    }

    #[test]
    fn unloaded_network_has_idle_latency() {
        let s = solve(&one(1.0, 1000.0, 80.0, 0.0), None, SolverConfig::default());
        assert!(s.converged);
        assert!((s.latency_ns[0] - 80.0).abs() < 1e-9);
        assert!((s.throughput[0] - 1.0 / 1080.0).abs() < 1e-12);
    }

    #[test]
    fn saturated_resource_caps_throughput_at_one_over_demand() {
        // 8 misses in flight, no think time, 5 ns per miss at the controller: the controller is
        // the bottleneck, so throughput tends to 1/5 per ns and latency to N * D.
        let s = solve(&one(8.0, 0.0, 0.0, 5.0), None, SolverConfig::default());
        assert!(s.converged);
        assert!(s.utilisation[0] <= 1.0 + 1e-6, "{}", s.utilisation[0]);
        assert!(s.utilisation[0] > 0.95, "{}", s.utilisation[0]);
        assert!(s.latency_ns[0] > 35.0, "{}", s.latency_ns[0]);
    }

    #[test]
    fn warm_start_converges_faster() {
        let class = Class {
            customers: 6.0,
            think_ns: 200.0,
            idle_ns: 90.0,
        };
        let demand: Vec<f64> = (0..64)
            .map(|i| if i % 4 == 0 { 4.0 } else { 0.5 })
            .collect();
        let net = dense(vec![class; 16], 4, &demand);
        let cold = solve(&net, None, SolverConfig::default());
        let warm = solve(&net, Some(&cold.warm), SolverConfig::default());
        assert!(cold.converged && warm.converged);
        assert!(
            warm.iterations < cold.iterations / 2,
            "{} vs {}",
            warm.iterations,
            cold.iterations
        );
        for (a, b) in cold.throughput.iter().zip(&warm.throughput) {
            assert!((a - b).abs() / a < 1e-5);
        }
    }

    prop_compose! {
        fn arb_network()(classes in 1usize..12, resources in 1usize..8)
            (customers in proptest::collection::vec(1.0f64..12.0, classes),
             think in proptest::collection::vec(0.0f64..5000.0, classes),
             idle in proptest::collection::vec(50.0f64..400.0, classes),
             demand in proptest::collection::vec(
                 prop_oneof![Just(0.0), 0.01f64..20.0], classes * resources),
             resources in Just(resources))
            -> Network {
            let classes = customers.iter().zip(&think).zip(&idle)
                .map(|((&c, &z), &l)| Class { customers: c, think_ns: z, idle_ns: l })
                .collect();
            dense(classes, resources, &demand)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn converges_and_respects_physics(net in arb_network()) {
            let s = solve(&net, None, SolverConfig::default());
            prop_assert!(s.converged, "did not converge in {} iterations", s.iterations);
            for &u in &s.utilisation {
                prop_assert!(u <= 1.0 + 1e-6, "utilisation {u}");
            }
            for (t, c) in net.classes.iter().enumerate() {
                let bare: f64 = c.idle_ns + net.service_ns(t);
                prop_assert!(s.latency_ns[t] >= bare - 1e-9, "latency below idle + service");
                prop_assert!(s.throughput[t] > 0.0);
            }
        }

        #[test]
        fn latency_is_monotone_in_load(net in arb_network(), extra in 1.0f64..10.0) {
            // Adding one more class that uses every resource never makes anyone faster.
            let base = solve(&net, None, SolverConfig::default());
            let mut loaded = net.clone();
            let mut every: Vec<(usize, f64)> = (0..net.resources).map(|k| (k, 2.0)).collect();
            loaded.push(Class { customers: extra, think_ns: 0.0, idle_ns: 100.0 }, &mut every);
            let more = solve(&loaded, None, SolverConfig::default());
            for t in 0..net.classes.len() {
                prop_assert!(more.latency_ns[t] >= base.latency_ns[t] * (1.0 - 1e-6),
                    "class {t}: {} < {}", more.latency_ns[t], base.latency_ns[t]);
            }
        }
    }
}
