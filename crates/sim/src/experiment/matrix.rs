//! The policy matrix (`rondpoint matrix`): every policy on every workload and machine, each
//! run's speedup over a baseline policy, and the runs that break the do-no-harm bound (more
//! than a given percentage slower than the baseline; [Dashti13 §5] has Carrefour never more
//! than 4% slower than Linux). In a workload of several applications each application is
//! judged too, against its own completion under the baseline (§4.3: Carrefour beats Linux for
//! every application).
//!
//! With the placement bound among the policies ([`crate::bound`]), each run also has its
//! ratio to the bound, and the runs faster than the bound by more than
//! [`BOUND_TOLERANCE_PCT`] are listed: each one a place where the bound is not the best
//! placement the model allows.
//!
//! This module only analyses results; running them is the caller's.

use crate::bound;
use crate::experiment::RunResult;
use serde::Serialize;

/// How much faster than the bound a run may be before the matrix lists it (percent): the
/// bound's search stops short of the exact optimum, and two runs of one layout differ by
/// their random draws (issue 38 sets 0.5%).
pub const BOUND_TOLERANCE_PCT: f64 = 0.5;

/// One cell: a workload under a policy on a machine, run or refused.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub machine: String,
    pub workload: String,
    pub policy: String,
    /// Time until the last application finished (simulated seconds); none when refused.
    pub completion_s: Option<f64>,
    /// The baseline's completion time over this one's (above 1: faster than the baseline);
    /// none when either was refused.
    pub speedup: Option<f64>,
    /// Why the policy refused this machine or workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// For a workload of several applications, each one's speedup: its completion time under
    /// the baseline over its completion time here ([Dashti13 §4.3] judges each application).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<(String, f64)>,
    /// The bound's completion time over this one's (1 at the bound, below 1 short of it,
    /// above 1 faster than the bound); none without a bound run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_bound: Option<f64>,
}

impl Cell {
    /// The speedup the do-no-harm bound judges: the workload's, or the slowest
    /// application's when that is lower, with that application's name.
    pub fn judged(&self) -> Option<(f64, Option<&str>)> {
        let whole = self.speedup?;
        let app = self.apps.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        Some(match app {
            Some((name, s)) if *s < whole => (*s, Some(name.as_str())),
            _ => (whole, None),
        })
    }
}

/// A run that broke the do-no-harm bound.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    pub machine: String,
    pub workload: String,
    pub policy: String,
    /// The application that broke it, in a workload of several, when it is one of them
    /// rather than the workload as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub application: Option<String>,
    pub speedup: f64,
    /// How much slower than the baseline (percent).
    pub slower_pct: f64,
}

/// A run faster than the bound by more than [`BOUND_TOLERANCE_PCT`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BeyondBound {
    pub machine: String,
    pub workload: String,
    pub policy: String,
    /// The bound's completion time over the run's.
    pub to_bound: f64,
}

/// One policy on one machine, over the workloads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicySummary {
    pub machine: String,
    pub policy: String,
    /// Workloads with a speedup (run, and the baseline run too).
    pub runs: usize,
    /// Workloads the policy refused.
    pub refused: usize,
    /// Geometric mean of the speedups; none without runs.
    pub geomean_speedup: Option<f64>,
    /// The lowest speedup and its workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst: Option<(String, f64)>,
    /// Runs more than the bound slower than the baseline.
    pub violations: usize,
    /// Geometric mean of the ratios to the bound; none without a bound run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geomean_to_bound: Option<f64>,
}

/// The analysed matrix (`matrix --json`, docs/json/matrix.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Matrix {
    pub baseline: String,
    /// The do-no-harm bound: a run more than this much slower than the baseline (percent)
    /// breaks it.
    pub max_slowdown_pct: f64,
    pub machines: Vec<String>,
    pub workloads: Vec<String>,
    pub policies: Vec<String>,
    /// In the order machines, then workloads, then policies.
    pub cells: Vec<Cell>,
    /// Per machine, then policy.
    pub summary: Vec<PolicySummary>,
    /// In the order of the cells.
    pub violations: Vec<Violation>,
    /// Runs faster than the bound by more than [`BOUND_TOLERANCE_PCT`], in the order of the
    /// cells (empty without a bound run).
    pub beyond_bound: Vec<BeyondBound>,
}

/// A cell's outcome: a result, or the policy's refusal.
pub type Outcome = Result<RunResult, Refused>;

/// A policy's refusal of a workload on a machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Refused {
    pub machine: String,
    pub workload: String,
    pub policy: String,
    pub why: String,
}

/// An outcome's machine, workload and policy.
fn key(o: &Outcome) -> (&str, &str, &str) {
    match o {
        Ok(r) => (&r.machine, &r.workload, &r.policy),
        Err(e) => (&e.machine, &e.workload, &e.policy),
    }
}

/// Names in their first order of appearance.
fn ordered<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}

impl Matrix {
    /// Analyses `outcomes` (one per machine, workload and policy; later duplicates are
    /// ignored) against `baseline` with the do-no-harm bound `max_slowdown_pct`.
    pub fn of(outcomes: &[Outcome], baseline: &str, max_slowdown_pct: f64) -> Self {
        let machines = ordered(outcomes.iter().map(|o| key(o).0));
        let workloads = ordered(outcomes.iter().map(|o| key(o).1));
        let policies = ordered(outcomes.iter().map(|o| key(o).2));
        let find = |m: &str, w: &str, p: &str| outcomes.iter().find(|o| key(o) == (m, w, p));
        let mut cells = Vec::new();
        for m in &machines {
            for w in &workloads {
                let base = match find(m, w, baseline) {
                    Some(Ok(r)) => Some(r),
                    _ => None,
                };
                let bound = match find(m, w, bound::NAME) {
                    Some(Ok(r)) => Some(r.completion_s),
                    _ => None,
                };
                for p in &policies {
                    let Some(o) = find(m, w, p) else { continue };
                    let run = o.as_ref().ok();
                    let completion_s = run.map(|r| r.completion_s);
                    cells.push(Cell {
                        machine: m.clone(),
                        workload: w.clone(),
                        policy: p.clone(),
                        completion_s,
                        speedup: base.zip(completion_s).map(|(b, c)| b.completion_s / c),
                        refused: o.as_ref().err().map(|e| e.why.clone()),
                        apps: base
                            .zip(run)
                            .map_or_else(Vec::new, |(b, r)| app_speedups(b, r)),
                        to_bound: bound.zip(completion_s).map(|(b, c)| b / c),
                    });
                }
            }
        }
        let violations = cells
            .iter()
            .filter_map(|c| {
                let (s, app) = c.judged()?;
                let slower_pct = 100.0 * (1.0 / s - 1.0);
                (slower_pct > max_slowdown_pct).then(|| Violation {
                    machine: c.machine.clone(),
                    workload: c.workload.clone(),
                    policy: c.policy.clone(),
                    application: app.map(str::to_string),
                    speedup: s,
                    slower_pct,
                })
            })
            .collect::<Vec<_>>();
        let beyond_bound = cells
            .iter()
            .filter_map(|c| {
                let r = c.to_bound?;
                (r > 1.0 + BOUND_TOLERANCE_PCT / 100.0).then(|| BeyondBound {
                    machine: c.machine.clone(),
                    workload: c.workload.clone(),
                    policy: c.policy.clone(),
                    to_bound: r,
                })
            })
            .collect();
        let summary = machines
            .iter()
            .flat_map(|m| policies.iter().map(move |p| (m, p)))
            .map(|(m, p)| summarize(&cells, &violations, m, p))
            .collect();
        Self {
            baseline: baseline.to_string(),
            max_slowdown_pct,
            machines,
            workloads,
            policies,
            cells,
            summary,
            violations,
            beyond_bound,
        }
    }

    /// The cell of a machine, workload and policy.
    pub fn cell(&self, machine: &str, workload: &str, policy: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.machine == machine && c.workload == workload && c.policy == policy)
    }

    /// Whether `cell` breaks the do-no-harm bound.
    pub fn breaks(&self, cell: &Cell) -> bool {
        self.violations.iter().any(|v| {
            v.machine == cell.machine && v.workload == cell.workload && v.policy == cell.policy
        })
    }

    /// The violations of the policies in `guarded`.
    pub fn violations_of<'a>(
        &'a self,
        guarded: &'a [String],
    ) -> impl Iterator<Item = &'a Violation> {
        self.violations
            .iter()
            .filter(|v| guarded.contains(&v.policy))
    }
}

/// Each application's speedup in a workload of several (none for one application): its
/// completion under `base` over its completion in `run`, matched by name.
fn app_speedups(base: &RunResult, run: &RunResult) -> Vec<(String, f64)> {
    if run.apps.len() < 2 {
        return Vec::new();
    }
    run.apps
        .iter()
        .filter_map(|a| {
            let b = base.apps.iter().find(|b| b.name == a.name)?;
            (a.completion_s > 0.0).then(|| (a.name.clone(), b.completion_s / a.completion_s))
        })
        .collect()
}

/// One policy's summary on one machine.
fn summarize(
    cells: &[Cell],
    violations: &[Violation],
    machine: &str,
    policy: &str,
) -> PolicySummary {
    let mine: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.machine == machine && c.policy == policy)
        .collect();
    let speedups: Vec<(&str, f64)> = mine
        .iter()
        .filter_map(|c| c.speedup.map(|s| (c.workload.as_str(), s)))
        .collect();
    let geomean_speedup = geomean(speedups.iter().map(|s| s.1));
    let geomean_to_bound = geomean(mine.iter().filter_map(|c| c.to_bound));
    let worst = speedups
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(w, s)| ((*w).to_string(), *s));
    PolicySummary {
        machine: machine.to_string(),
        policy: policy.to_string(),
        runs: speedups.len(),
        refused: mine.iter().filter(|c| c.refused.is_some()).count(),
        geomean_speedup,
        worst,
        violations: violations
            .iter()
            .filter(|v| v.machine == machine && v.policy == policy)
            .count(),
        geomean_to_bound,
    }
}

/// The geometric mean of `values`; none when there are none.
fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

#[cfg(test)]
mod tests;
