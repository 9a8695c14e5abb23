//! The steady state of a layout: every thread running at once, its misses spread over the
//! nodes as the layout serves its page groups, the queueing network of the simulator's own
//! model ([`crate::traffic`], [`crate::solver`]) solved for each thread's throughput, and the
//! time each thread and application would take at that pace.

use super::problem::{Layout, Place, Problem};
use crate::solver::{self, Network, Solution, SolverConfig, Warm};
use crate::spec::MachineSpec;
use crate::traffic;

/// How fast a layout runs, by the model.
#[derive(Clone, Debug)]
pub(crate) struct Estimate {
    /// What the search minimises (ns): the last application's end, plus a hundredth of the
    /// mean thread time so that a layout that speeds up threads off the critical path wins a
    /// tie.
    pub objective: f64,
    /// Each thread's time to retire its instructions (ns).
    pub thread_ns: Vec<f64>,
    /// The solved network.
    pub solution: Solution,
}

/// Evaluates layouts of one problem, each solve warm-started from the last.
pub(crate) struct Evaluator<'a> {
    spec: &'a MachineSpec,
    problem: &'a Problem,
    /// Each thread's MPKI, from its share of its LLC under first touch.
    mpki: Vec<f64>,
    warm: Option<Warm>,
    solver: SolverConfig,
    /// Solves so far.
    pub solves: u32,
}

impl<'a> Evaluator<'a> {
    /// An evaluator whose MPKIs come from sharing each LLC by the threads' miss rates under
    /// first touch (a fixed point of the simulator's rule, a few rounds from equal shares).
    pub(crate) fn new(spec: &'a MachineSpec, problem: &'a Problem, solver: SolverConfig) -> Self {
        let mut e = Self {
            spec,
            problem,
            mpki: vec![0.0; problem.threads.len()],
            warm: None,
            solver,
            solves: 0,
        };
        let mut pressure = vec![1.0; problem.threads.len()];
        for _ in 0..4 {
            e.share_caches(&pressure);
            let est = e.estimate(&problem.first_touch);
            pressure = est
                .solution
                .throughput
                .iter()
                .map(|&x| x.max(1e-12))
                .collect();
        }
        e.share_caches(&pressure);
        e
    }

    /// Sets each thread's MPKI from its share of its LLC, in proportion to `pressure`.
    fn share_caches(&mut self, pressure: &[f64]) {
        let llcs = self.spec.topology.llcs().len().max(1);
        let mut total = vec![0.0; llcs];
        for (t, th) in self.problem.threads.iter().enumerate() {
            total[th.llc.min(llcs - 1)] += pressure[t];
        }
        for (t, th) in self.problem.threads.iter().enumerate() {
            let sum = total[th.llc.min(llcs - 1)];
            let share = if sum > 0.0 { pressure[t] / sum } else { 1.0 };
            let cache = self.spec.llc_bytes * share;
            self.mpki[t] = traffic::mpki_at(th.mpki, th.mrc_ref, th.alpha, cache);
        }
    }

    /// Thread `t`'s misses over the nodes under `layout`.
    pub(crate) fn mix(&self, t: usize, layout: &Layout) -> Vec<f64> {
        let th = &self.problem.threads[t];
        let mut mix = vec![0.0; self.spec.nodes()];
        for &(g, w) in &th.weights {
            match &layout[g] {
                Place::Spread(shares) => {
                    for (m, s) in mix.iter_mut().zip(shares) {
                        *m += w * s;
                    }
                }
                Place::Replicated(mask) => {
                    mix[traffic::serving_copy(self.spec, th.node, *mask)] += w;
                }
            }
        }
        let sum: f64 = mix.iter().sum();
        if sum > 0.0 {
            mix.iter_mut().for_each(|m| *m /= sum);
        } else {
            mix[th.node] = 1.0;
        }
        mix
    }

    /// The model's estimate for `layout`.
    pub(crate) fn estimate(&mut self, layout: &Layout) -> Estimate {
        let spec = self.spec;
        let mut net = Network::new(spec.nodes() + spec.directed_links());
        let mut row = Vec::new();
        for (t, th) in self.problem.threads.iter().enumerate() {
            let mix = self.mix(t, layout);
            row.clear();
            traffic::demand(spec, &mix, th.node, th.write_ratio, &[], &mut row);
            let class = traffic::class(spec, &mix, th.node, (th.mlp, th.cpi, self.mpki[t]), &row);
            net.push(class, &mut row);
        }
        let solution = solver::solve(&net, self.warm.as_ref(), self.solver);
        self.solves += 1;
        self.warm = Some(solution.warm.clone());
        let thread_ns: Vec<f64> = self
            .problem
            .threads
            .iter()
            .enumerate()
            .map(|(t, th)| {
                let ips = traffic::instructions_per_ns(
                    spec,
                    self.mpki[t],
                    th.cpi,
                    solution.throughput[t],
                );
                th.instructions / ips.max(1e-300)
            })
            .collect();
        let end = self
            .problem
            .threads
            .iter()
            .zip(&thread_ns)
            .map(|(th, ns)| th.start_ns + ns)
            .fold(0.0, f64::max);
        let mean = thread_ns.iter().sum::<f64>() / thread_ns.len().max(1) as f64;
        Estimate {
            objective: end + 0.01 * mean,
            thread_ns,
            solution,
        }
    }

    /// What one more unit of thread `t`'s misses costs it on each node (ns per miss, over its
    /// memory-level parallelism), under the queues of `solution`: the idle latency plus the
    /// queueing at every controller and link on the way, as the solver charges it.
    pub(crate) fn latency_to(&self, t: usize, solution: &Solution) -> Vec<f64> {
        let th = &self.problem.threads[t];
        let n = self.spec.nodes();
        let mut row = Vec::new();
        (0..n)
            .map(|d| {
                let mut one = vec![0.0; n];
                one[d] = 1.0;
                row.clear();
                traffic::demand(self.spec, &one, th.node, th.write_ratio, &[], &mut row);
                let queued: f64 = row
                    .iter()
                    .map(|&(k, dm)| dm * solution.queue.get(k).copied().unwrap_or(0.0))
                    .sum();
                (self.spec.idle_ns[th.node][d] + queued) / th.mlp.max(1.0)
            })
            .collect()
    }

    /// Misses thread `t` makes in its run.
    pub(crate) fn misses(&self, t: usize) -> f64 {
        self.problem.threads[t].instructions * self.mpki[t] / 1000.0
    }

    /// Per group, the misses the threads of each node make on it over the run (a thread that
    /// never misses counts for a trace, so that its private data still has an owner).
    pub(crate) fn misses_by_node(&self) -> Vec<Vec<f64>> {
        let mut by_node = vec![vec![0.0; self.spec.nodes()]; self.problem.groups.len()];
        for (t, th) in self.problem.threads.iter().enumerate() {
            let misses = self.misses(t).max(1e-12);
            for &(g, w) in &th.weights {
                by_node[g][th.node] += w * misses;
            }
        }
        by_node
    }
}
