use super::*;
use crate::memory::MemoryReport;

fn run(machine: &str, workload: &str, policy: &str, completion_s: f64) -> Outcome {
    Ok(result(machine, workload, policy, completion_s))
}

fn result(machine: &str, workload: &str, policy: &str, completion_s: f64) -> RunResult {
    RunResult {
        machine: machine.into(),
        workload: workload.into(),
        policy: policy.into(),
        seed: 1,
        completion_s,
        speedup_vs_first_touch: None,
        to_bound: None,
        avg_latency_cycles: 0.0,
        lar: 1.0,
        mc_imbalance: 0.0,
        ic_imbalance: 0.0,
        mc_load: vec![],
        link_load: vec![],
        ipc: 1.0,
        pages_migrated: 0,
        pages_interleaved: 0,
        pages_replicated: 0,
        actions_skipped: 0,
        overhead_pct: 0.0,
        samples: 0,
        collapses: 0,
        apps: vec![],
        memory: MemoryReport::new(vec![]),
        multiprogram: None,
        notes: vec![],
        reasons: Default::default(),
    }
}

fn refused(machine: &str, workload: &str, policy: &str) -> Outcome {
    Err(Refused {
        machine: machine.into(),
        workload: workload.into(),
        policy: policy.into(),
        why: "no".into(),
    })
}

#[test]
fn speedups_are_over_the_baseline_of_the_same_machine_and_workload() {
    let outcomes = vec![
        run("a", "w1", "ft", 10.0),
        run("a", "w1", "cf", 8.0),
        run("a", "w2", "ft", 10.0),
        run("a", "w2", "cf", 10.5),
        run("b", "w1", "ft", 20.0),
        run("b", "w1", "cf", 25.0),
        refused("b", "w2", "cf"),
        run("b", "w2", "ft", 5.0),
    ];
    let m = Matrix::of(&outcomes, "ft", 4.0);
    assert_eq!(m.machines, ["a", "b"]);
    assert_eq!(m.workloads, ["w1", "w2"]);
    assert_eq!(m.policies, ["ft", "cf"]);
    assert_eq!(m.cells.len(), 8);
    let s = |mc: &str, w: &str, p: &str| m.cell(mc, w, p).and_then(|c| c.speedup);
    assert_eq!(s("a", "w1", "cf"), Some(1.25));
    assert_eq!(s("b", "w1", "cf"), Some(0.8));
    assert_eq!(s("b", "w1", "ft"), Some(1.0));
    assert_eq!(s("b", "w2", "cf"), None);
    assert_eq!(
        m.cell("b", "w2", "cf").and_then(|c| c.refused.clone()),
        Some("no".into())
    );
    // 10.5 s against 10 s is 5% slower: over a 4% bound; 25 s against 20 s is 25% slower.
    let broken: Vec<(&str, &str)> = m
        .violations
        .iter()
        .map(|v| (v.machine.as_str(), v.workload.as_str()))
        .collect();
    assert_eq!(broken, [("a", "w2"), ("b", "w1")]);
    assert!((m.violations[0].slower_pct - 5.0).abs() < 1e-9);
    let cf_a = &m.summary[1];
    assert_eq!((cf_a.machine.as_str(), cf_a.policy.as_str()), ("a", "cf"));
    let expected = (1.25f64 * (10.0 / 10.5)).sqrt();
    assert!((cf_a.geomean_speedup.unwrap_or(0.0) - expected).abs() < 1e-12);
    assert_eq!(cf_a.worst, Some(("w2".into(), 10.0 / 10.5)));
    assert_eq!((cf_a.runs, cf_a.refused, cf_a.violations), (2, 0, 1));
    let cf_b = &m.summary[3];
    assert_eq!((cf_b.runs, cf_b.refused, cf_b.violations), (1, 1, 1));
}

#[test]
fn a_bound_breaks_only_beyond_it_and_only_for_guarded_policies() {
    let outcomes = vec![
        run("a", "w", "ft", 10.0),
        run("a", "w", "cf", 10.39),
        run("a", "w", "il", 10.41),
    ];
    let m = Matrix::of(&outcomes, "ft", 4.0);
    assert_eq!(m.violations.len(), 1, "{:?}", m.violations);
    assert_eq!(m.violations[0].policy, "il");
    assert_eq!(m.violations_of(&["cf".into()]).count(), 0);
    assert_eq!(m.violations_of(&["il".into(), "cf".into()]).count(), 1);
}

#[test]
fn without_a_baseline_run_no_speedup_and_no_violation() {
    let outcomes = vec![refused("a", "w", "ft"), run("a", "w", "cf", 100.0)];
    let m = Matrix::of(&outcomes, "ft", 4.0);
    assert!(m.cells.iter().all(|c| c.speedup.is_none()));
    assert!(m.violations.is_empty());
    assert_eq!(m.summary[1].geomean_speedup, None);
}

#[test]
fn each_application_of_a_mix_is_judged_against_its_own_baseline_time() {
    use crate::experiment::AppResult;
    let mix = |policy: &str, a: f64, b: f64| {
        let mut r = result("m", "a+b", policy, a.max(b));
        r.apps = [("a", a), ("b", b)]
            .iter()
            .map(|&(name, completion_s)| AppResult {
                name: name.into(),
                completion_s,
                bytes_by_node: vec![],
            })
            .collect();
        Ok(r)
    };
    // The workload as a whole (the last to finish, b) is 20% faster, but a is 10% slower.
    let outcomes = vec![mix("ft", 10.0, 30.0), mix("cf", 11.0, 25.0)];
    let m = Matrix::of(&outcomes, "ft", 4.0);
    let c = m.cell("m", "a+b", "cf").unwrap();
    assert_eq!(c.speedup, Some(1.2));
    assert_eq!(
        c.apps,
        [("a".to_string(), 10.0 / 11.0), ("b".to_string(), 1.2)]
    );
    assert_eq!(m.violations.len(), 1);
    assert_eq!(m.violations[0].application.as_deref(), Some("a"));
    assert!((m.violations[0].slower_pct - 10.0).abs() < 1e-9);
    // One application: judged as a whole, no per-application list.
    let m = Matrix::of(
        &[run("m", "w", "ft", 1.0), run("m", "w", "cf", 1.0)],
        "ft",
        4.0,
    );
    assert!(m.cells.iter().all(|c| c.apps.is_empty()));
}

#[test]
fn each_run_has_its_ratio_to_the_bound_and_runs_well_past_it_are_listed() {
    let outcomes = vec![
        run("a", "w", "ft", 10.0),
        run("a", "w", "cf", 7.98),
        run("a", "w", "il", 16.0),
        run("a", "w", "bound", 8.0),
        run("a", "v", "ft", 10.0),
        run("a", "v", "cf", 8.0),
        run("a", "v", "bound", 9.0),
    ];
    let m = Matrix::of(&outcomes, "ft", 4.0);
    let r = |w: &str, p: &str| m.cell("a", w, p).and_then(|c| c.to_bound);
    assert_eq!(r("w", "ft"), Some(0.8));
    assert_eq!(r("w", "il"), Some(0.5));
    assert_eq!(r("w", "bound"), Some(1.0));
    // 0.25% faster than the bound: within the tolerance; 12.5% faster: listed.
    let beyond: Vec<(&str, &str)> = m
        .beyond_bound
        .iter()
        .map(|b| (b.workload.as_str(), b.policy.as_str()))
        .collect();
    assert_eq!(beyond, [("v", "cf")]);
    let cf = m.summary.iter().find(|s| s.policy == "cf").unwrap();
    let expected = (8.0f64 / 7.98 * 9.0 / 8.0).sqrt();
    assert!((cf.geomean_to_bound.unwrap_or(0.0) - expected).abs() < 1e-12);
    // Without a bound run, no ratio.
    let m = Matrix::of(&outcomes[..3], "ft", 4.0);
    assert!(m.cells.iter().all(|c| c.to_bound.is_none()));
    assert!(m.summary.iter().all(|s| s.geomean_to_bound.is_none()));
}
