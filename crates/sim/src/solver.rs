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

/// The network: classes, resources and demands (`demand[t * resources + k]`, ns per visit).
#[derive(Clone, Debug, Default)]
pub struct Network {
    pub classes: Vec<Class>,
    pub resources: usize,
    pub demand: Vec<f64>,
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
    /// Queue lengths `queue[t * resources + k]` (warm start for the next solve).
    pub queue: Vec<f64>,
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

/// Solves the network, starting from `warm` queue lengths when they fit.
pub(crate) fn solve(net: &Network, warm: Option<&[f64]>, cfg: SolverConfig) -> Solution {
    let (c, r) = (net.classes.len(), net.resources);
    let mut q = match warm {
        Some(w) if w.len() == c * r => w.to_vec(),
        _ => vec![0.0; c * r],
    };
    let mut u = vec![0.0; c * r];
    let mut x = vec![0.0; c];
    let mut resid = vec![0.0; c * r];
    let mut qtot = vec![0.0; r];
    let mut utot = vec![0.0; r];
    let mut iterations = 0;
    let mut converged = false;
    // Utilisations consistent with the starting queues.
    compute_throughput(net, &q, &u, &mut resid, &mut x, &mut qtot, &mut utot);
    for t in 0..c {
        for k in 0..r {
            u[t * r + k] = x[t] * net.demand[t * r + k];
        }
    }
    while iterations < cfg.max_iterations {
        iterations += 1;
        compute_throughput(net, &q, &u, &mut resid, &mut x, &mut qtot, &mut utot);
        let mut delta: f64 = 0.0;
        for t in 0..c {
            for k in 0..r {
                let i = t * r + k;
                let q_new = x[t] * resid[i];
                delta = delta.max((q_new - q[i]).abs());
                q[i] = 0.5 * (q[i] + q_new);
                u[i] = x[t] * net.demand[i];
            }
        }
        if delta < cfg.tolerance {
            converged = true;
            break;
        }
    }
    compute_throughput(net, &q, &u, &mut resid, &mut x, &mut qtot, &mut utot);
    let latency_ns = (0..c)
        .map(|t| net.classes[t].idle_ns + resid[t * r..(t + 1) * r].iter().sum::<f64>())
        .collect();
    let mut utilisation = vec![0.0; r];
    for t in 0..c {
        for k in 0..r {
            utilisation[k] += x[t] * net.demand[t * r + k];
        }
    }
    Solution {
        throughput: x,
        latency_ns,
        utilisation,
        queue: q,
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
    let r = net.resources;
    qtot.iter_mut().for_each(|v| *v = 0.0);
    utot.iter_mut().for_each(|v| *v = 0.0);
    for t in 0..net.classes.len() {
        for k in 0..r {
            qtot[k] += q[t * r + k];
            utot[k] += u[t * r + k];
        }
    }
    for (t, class) in net.classes.iter().enumerate() {
        let n = class.customers.max(1.0);
        let mut total = class.think_ns + class.idle_ns;
        for k in 0..r {
            let i = t * r + k;
            let d = net.demand[i];
            if d == 0.0 {
                resid[i] = 0.0;
                continue;
            }
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

    fn one(customers: f64, think: f64, idle: f64, demand: f64) -> Network {
        Network {
            classes: vec![Class {
                customers,
                think_ns: think,
                idle_ns: idle,
            }],
            resources: 1,
            demand: vec![demand],
        }
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
        let net = Network {
            classes: vec![
                Class {
                    customers: 6.0,
                    think_ns: 200.0,
                    idle_ns: 90.0,
                };
                16
            ],
            resources: 4,
            demand: (0..64)
                .map(|i| if i % 4 == 0 { 4.0 } else { 0.5 })
                .collect(),
        };
        let cold = solve(&net, None, SolverConfig::default());
        let warm = solve(&net, Some(&cold.queue), SolverConfig::default());
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
            Network {
                classes: customers.iter().zip(&think).zip(&idle)
                    .map(|((&c, &z), &l)| Class { customers: c, think_ns: z, idle_ns: l })
                    .collect(),
                resources,
                demand,
            }
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
                let bare: f64 = c.idle_ns
                    + net.demand[t * net.resources..(t + 1) * net.resources].iter().sum::<f64>();
                prop_assert!(s.latency_ns[t] >= bare - 1e-9, "latency below idle + service");
                prop_assert!(s.throughput[t] > 0.0);
            }
        }

        #[test]
        fn latency_is_monotone_in_load(net in arb_network(), extra in 1.0f64..10.0) {
            // Adding one more class that uses every resource never makes anyone faster.
            let base = solve(&net, None, SolverConfig::default());
            let mut loaded = net.clone();
            loaded.classes.push(Class { customers: extra, think_ns: 0.0, idle_ns: 100.0 });
            loaded.demand.extend(std::iter::repeat_n(2.0, net.resources));
            let more = solve(&loaded, None, SolverConfig::default());
            for t in 0..net.classes.len() {
                prop_assert!(more.latency_ns[t] >= base.latency_ns[t] * (1.0 - 1e-6),
                    "class {t}: {} < {}", more.latency_ns[t], base.latency_ns[t]);
            }
        }
    }
}
