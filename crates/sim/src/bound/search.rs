//! The search for the best layout by the model: start from the best of a few simple layouts
//! (first touch, each group with the nodes that use it, everything interleaved), then improve
//! it by conditional gradient (Frank-Wolfe) steps over every group's node shares at once, the
//! gradient being each thread's loaded latency to each node weighted by how close the thread
//! is to the critical path, with a line search on the model's own estimate; then replicate the
//! read-only groups that several nodes use where that pays and fits, and improve again.

use super::eval::{Estimate, Evaluator};
use super::problem::{Layout, Place, Problem};
use crate::solver::SolverConfig;
use crate::spec::MachineSpec;

/// Settings of the search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchConfig {
    /// Most gradient steps per round (two rounds: before and after replication).
    pub max_steps: u32,
    /// Exponent of a thread's weight in the gradient, (its time / the longest)^k: high, so that
    /// the threads on the critical path dominate, as the completion time is theirs.
    pub critical_exponent: f64,
    /// A step is taken when it improves the estimate by more than this fraction.
    pub min_gain: f64,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            max_steps: 40,
            critical_exponent: 8.0,
            min_gain: 1e-6,
        }
    }
}

/// The search's result.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub layout: Layout,
    /// The model's estimate for it (ns) and for first touch.
    pub estimate_ns: f64,
    pub first_touch_ns: f64,
    pub solves: u32,
}

/// Step sizes the line search tries, largest first.
const STEPS: [f64; 6] = [1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125];

/// Finds the best layout of `problem` the model can tell.
pub(crate) fn search(
    spec: &MachineSpec,
    problem: &Problem,
    solver: SolverConfig,
    cfg: SearchConfig,
) -> Found {
    let mut ev = Evaluator::new(spec, problem, solver);
    let first = ev.estimate(&problem.first_touch);
    let first_touch_ns = first.objective;
    let mut best = (problem.first_touch.clone(), first);
    for seed in [
        by_accessors(problem, &ev),
        interleaved(problem, spec, true),
        interleaved(problem, spec, false),
    ] {
        if problem.fits(&seed) {
            let est = ev.estimate(&seed);
            if est.objective < best.1.objective {
                best = (seed, est);
            }
        }
    }
    let (mut layout, mut est) = best;
    descend(&mut ev, problem, &mut layout, &mut est, cfg);
    if replicate(&mut ev, problem, &mut layout, &mut est) {
        descend(&mut ev, problem, &mut layout, &mut est, cfg);
    }
    Found {
        layout,
        estimate_ns: est.objective,
        first_touch_ns,
        solves: ev.solves,
    }
}

/// Each group spread over the nodes whose threads use it, in proportion to their misses on it
/// (co-location for a private group).
fn by_accessors(problem: &Problem, ev: &Evaluator<'_>) -> Layout {
    ev.misses_by_node()
        .into_iter()
        .zip(&problem.first_touch)
        .map(|(s, ft)| normalised(s).unwrap_or_else(|| ft.clone()))
        .collect()
}

/// Every group interleaved evenly over the nodes with CPUs (`cpu_only`) or over all nodes.
fn interleaved(problem: &Problem, spec: &MachineSpec, cpu_only: bool) -> Layout {
    let nodes: Vec<usize> = if cpu_only {
        spec.cpu_nodes()
    } else {
        (0..spec.nodes()).collect()
    };
    let mut shares = vec![0.0; spec.nodes()];
    for &d in &nodes {
        shares[d] = 1.0 / nodes.len().max(1) as f64;
    }
    vec![Place::Spread(shares); problem.groups.len()]
}

fn normalised(v: Vec<f64>) -> Option<Place> {
    let sum: f64 = v.iter().sum();
    (sum > 0.0).then(|| Place::Spread(v.into_iter().map(|x| x / sum).collect()))
}

/// Conditional-gradient steps from `layout` while they pay.
fn descend(
    ev: &mut Evaluator<'_>,
    problem: &Problem,
    layout: &mut Layout,
    est: &mut Estimate,
    cfg: SearchConfig,
) {
    for _ in 0..cfg.max_steps {
        let targets = targets(ev, problem, layout, est, cfg);
        let mut taken = false;
        for gamma in STEPS {
            let candidate = step(layout, &targets, gamma);
            if !problem.fits(&candidate) {
                continue;
            }
            let e = ev.estimate(&candidate);
            if e.objective < est.objective * (1.0 - cfg.min_gain) {
                *layout = candidate;
                *est = e;
                taken = true;
                break;
            }
        }
        if !taken {
            return;
        }
    }
}

/// For each spread group, the node where one more unit of its accesses costs the threads
/// least (weighted toward the critical path), among the nodes with room for a share of it.
fn targets(
    ev: &Evaluator<'_>,
    problem: &Problem,
    layout: &Layout,
    est: &Estimate,
    cfg: SearchConfig,
) -> Vec<Option<usize>> {
    let n = problem.room.len();
    let longest = est
        .thread_ns
        .iter()
        .copied()
        .fold(0.0, f64::max)
        .max(1e-300);
    let mut cost = vec![vec![0.0; n]; problem.groups.len()];
    for (t, th) in problem.threads.iter().enumerate() {
        let weight = (est.thread_ns[t] / longest).powf(cfg.critical_exponent) * ev.misses(t);
        if weight <= 0.0 {
            continue;
        }
        let latency = ev.latency_to(t, &est.solution);
        for &(g, w) in &th.weights {
            for (c, l) in cost[g].iter_mut().zip(&latency) {
                *c += weight * w * l;
            }
        }
    }
    let used = problem.used(layout);
    problem
        .groups
        .iter()
        .zip(layout)
        .zip(&cost)
        .map(|((g, place), c)| {
            let Place::Spread(shares) = place else {
                return None;
            };
            (0..n)
                .filter(|&d| shares[d] > 0.999 || problem.room[d] - used[d] >= 0.03 * g.bytes())
                .min_by(|&a, &b| c[a].total_cmp(&c[b]))
        })
        .collect()
}

/// `layout` moved a fraction `gamma` of the way toward each group's target node.
fn step(layout: &Layout, targets: &[Option<usize>], gamma: f64) -> Layout {
    layout
        .iter()
        .zip(targets)
        .map(|(place, target)| match (place, target) {
            (Place::Spread(shares), Some(d)) => Place::Spread(
                shares
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (1.0 - gamma) * s + if i == *d { gamma } else { 0.0 })
                    .collect(),
            ),
            _ => place.clone(),
        })
        .collect()
}

/// Replicates, one at a time, the read-only groups used from several nodes, most accesses per
/// byte first, on the nodes that use them, each where it fits and lowers the estimate.
/// Whether any was.
fn replicate(
    ev: &mut Evaluator<'_>,
    problem: &Problem,
    layout: &mut Layout,
    est: &mut Estimate,
) -> bool {
    let n = problem.room.len();
    let by_node = ev.misses_by_node();
    let mut candidates: Vec<(usize, u64, f64)> = problem
        .groups
        .iter()
        .enumerate()
        .filter(|(_, g)| !g.written)
        .filter_map(|(i, g)| {
            let total: f64 = by_node[i].iter().sum();
            let mask = (0..n)
                .filter(|&d| by_node[i][d] > 0.01 * total)
                .fold(0u64, |m, d| m | 1 << d);
            (mask.count_ones() >= 2).then(|| (i, mask, total / g.bytes().max(1.0)))
        })
        .collect();
    candidates.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut any = false;
    for (g, mask, _) in candidates {
        let mut candidate = layout.clone();
        candidate[g] = Place::Replicated(mask);
        if !problem.fits(&candidate) {
            continue;
        }
        let e = ev.estimate(&candidate);
        if e.objective < est.objective {
            *layout = candidate;
            *est = e;
            any = true;
        }
    }
    any
}
