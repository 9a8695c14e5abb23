//! `rondpoint sim`'s tables: the comparison, the spread over seeds, memory per node, the
//! slowdowns of several programs and the policies' notes.

use crate::format;
use rondpoint_sim::experiment::summary::Summary;
use rondpoint_sim::experiment::{RunResult, SoloNode};

/// Each application's completion time over the seeds: mean, standard deviation, extremes.
pub fn render_summary(summaries: &[Summary]) -> String {
    let mut rows = Vec::new();
    for s in summaries {
        let spreads = s
            .apps
            .iter()
            .map(|a| (a.name.as_str(), a.spread))
            .chain(std::iter::once(("(all)", s.completion)));
        for (name, sp) in spreads {
            rows.push(vec![
                s.workload.clone(),
                s.policy.clone(),
                s.seeds.len().to_string(),
                name.to_string(),
                format!("{:.2}", sp.mean_s),
                format!("{:.2}", sp.std_s),
                format!("{:.1}%", sp.std_pct()),
                format!("{:.2}", sp.min_s),
                format!("{:.2}", sp.max_s),
            ]);
        }
    }
    let mut out = format::table(
        &[
            "workload",
            "policy",
            "seeds",
            "application",
            "mean s",
            "std s",
            "std",
            "min s",
            "max s",
        ],
        &[false, false, true, false, true, true, true, true, true],
        rows,
    );
    out.push_str(
        "\n\nper application: completion time (simulated s) over the seeds: mean, sample \
         standard deviation (n - 1) in s and as % of the mean,\nleast and greatest; (all): \
         until the last application finished.\n",
    );
    out
}

/// One run's memory per node (GiB): size, fallback order, peak and final use, and each
/// application's memory at the end.
pub fn render_memory(r: &RunResult) -> String {
    let gib = |b: u64| format!("{:.2}", b as f64 / f64::from(1u32 << 30));
    let peak = r.memory.peak_used_bytes();
    let end = r
        .memory
        .last()
        .map(|p| p.used_bytes.clone())
        .unwrap_or_default();
    let rows = r
        .memory
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut row = vec![
                n.node.0.to_string(),
                gib(n.total_bytes),
                gib(peak.get(i).copied().unwrap_or(0)),
                gib(end.get(i).copied().unwrap_or(0)),
                n.fallback
                    .iter()
                    .map(|f| f.0.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            ];
            row.extend(
                r.apps
                    .iter()
                    .map(|a| gib(a.bytes_by_node.get(i).copied().unwrap_or(0))),
            );
            row
        })
        .collect();
    let mut header = vec!["node", "size", "peak", "end", "fallback"];
    header.extend(r.apps.iter().map(|a| a.name.as_str()));
    let mut right = vec![false, true, true, true, false];
    right.resize(header.len(), true);
    format!(
        "memory: {} / {} (GiB; peak and end: in use, the OS's share included; applications: \
         at the end)\n{}\n",
        r.workload,
        r.policy,
        format::table(&header, &right, rows)
    )
}

/// The comparison table.
pub fn render_table(results: &[RunResult], wide: bool) -> String {
    let mut out = if wide {
        wide_table(results)
    } else {
        narrow_tables(results)
    };
    out.push_str(&render_slowdowns(results));
    out.push_str(&render_notes(results));
    for r in results.iter().filter(|r| r.actions_skipped > 0) {
        out.push_str(&format!(
            "note: {} / {}: {} actions skipped over the per-epoch rate limit\n",
            r.workload, r.policy, r.actions_skipped
        ));
    }
    out
}

/// One table per workload, its name above it and its best policy below, the columns that say
/// what to conclude (fits 80 columns), then what they mean.
fn narrow_tables(results: &[RunResult]) -> String {
    let bound = results.iter().any(|r| r.to_bound.is_some());
    let mut out = String::new();
    for w in workloads_of(results) {
        let runs: Vec<&RunResult> = results.iter().filter(|r| r.workload == w).collect();
        let rows = runs
            .iter()
            .map(|r| {
                let mut row = vec![
                    r.policy.clone(),
                    format!("{:.2}", r.completion_s),
                    speedup(r),
                    format!("{:.0}%", 100.0 * r.lar),
                    format!("{:.0}%", r.mc_imbalance),
                    (r.pages_migrated + r.pages_interleaved + r.pages_replicated).to_string(),
                    format!("{:.1}%", r.overhead_pct),
                ];
                if bound {
                    row.insert(
                        3,
                        r.to_bound.map_or_else(|| "-".into(), |b| format!("{b:.2}")),
                    );
                }
                row
            })
            .collect();
        let mut header = vec![
            "policy", "time s", "speedup", "LAR", "MC imb", "moved", "overhead",
        ];
        if bound {
            header.insert(3, "to bound");
        }
        let mut right = vec![true; header.len()];
        right[0] = false;
        out.push_str(&format!("{w}\n"));
        out.push_str(&format::table(&header, &right, rows));
        out.push_str(&format!("\n{}\n\n", conclusion(&runs)));
    }
    out.push_str(
        "time: completion (simulated s), lower is better; speedup: over first-touch,\n\
         higher is better; LAR: local access ratio, higher is better; MC imb: std. dev.\n\
         of memory-controller load as % of the mean (the controllers that served the run,\n\
         ran its threads or held its memory), lower is better; moved: 4 KiB pages\n\
         migrated, interleaved or replicated; overhead: thread time spent on placement\n\
         mechanisms. --wide shows every column (latency, link load, IPC, pages by\n\
         technique).\n",
    );
    if bound {
        out.push_str(
            "to bound: the placement bound's time over the run's, higher is better (1.00: as\n\
             fast as the best placement the model allows, placing every page at no cost from\n\
             the start).\n",
        );
    }
    out
}

/// The workloads of `results`, in their order.
fn workloads_of(results: &[RunResult]) -> Vec<&str> {
    let mut workloads: Vec<&str> = Vec::new();
    for r in results {
        if !workloads.contains(&r.workload.as_str()) {
            workloads.push(&r.workload);
        }
    }
    workloads
}

/// The best policy of one workload's runs (the references, oracle and bound, aside).
fn conclusion(runs: &[&RunResult]) -> String {
    let reference = |p: &str| p == "oracle" || p == rondpoint_sim::bound::NAME;
    let best = runs
        .iter()
        .filter(|r| !reference(&r.policy))
        .min_by(|a, b| a.completion_s.total_cmp(&b.completion_s));
    match best {
        None => "best: no policy ran besides the references".into(),
        Some(b) if b.policy == "first-touch" => {
            "best: first-touch (no policy is faster than the baseline)".into()
        }
        Some(b) => {
            let vs = b
                .speedup_vs_first_touch
                .map_or_else(String::new, |s| format!(", {s:.2}x first-touch's speed"));
            let to = b
                .to_bound
                .map_or_else(String::new, |t| format!(", {t:.2} of the bound"));
            format!("best: {}{vs}{to}", b.policy)
        }
    }
}

fn speedup(r: &RunResult) -> String {
    r.speedup_vs_first_touch
        .map_or_else(|| "-".into(), |s| format!("{s:.2}x"))
}

/// Every column, one table for all workloads, then what they mean.
fn wide_table(results: &[RunResult]) -> String {
    let bound = results.iter().any(|r| r.to_bound.is_some());
    let rows = results
        .iter()
        .map(|r| {
            let mut row = vec![
                r.workload.clone(),
                r.policy.clone(),
                format!("{:.2}", r.completion_s),
                speedup(r),
                format!("{:.0}", r.avg_latency_cycles),
                format!("{:.0}%", 100.0 * r.lar),
                format!("{:.0}%", r.mc_imbalance),
                busiest(r.mc_load.iter().map(|l| l.utilisation)),
                format!("{:.0}%", r.ic_imbalance),
                busiest(r.link_load.iter().map(|l| l.utilisation)),
                format!("{:.2}", r.ipc),
                r.pages_migrated.to_string(),
                r.pages_interleaved.to_string(),
                r.pages_replicated.to_string(),
                format!("{:.1}%", r.overhead_pct),
            ];
            if bound {
                let to = r.to_bound.map_or_else(|| "-".into(), |b| format!("{b:.2}"));
                row.insert(4, to);
            }
            row
        })
        .collect();
    let mut header = vec![
        "workload",
        "policy",
        "time s",
        "speedup",
        "lat cyc",
        "LAR",
        "MC imb",
        "MC max",
        "IC imb",
        "IC max",
        "IPC",
        "migrated",
        "interleaved",
        "replicated",
        "overhead",
    ];
    if bound {
        header.insert(4, "to bound");
    }
    let mut right = vec![true; header.len()];
    right[..2].fill(false);
    let mut out = format::table(&header, &right, rows);
    out.push('\n');
    for w in workloads_of(results) {
        let runs: Vec<&RunResult> = results.iter().filter(|r| r.workload == w).collect();
        out.push_str(&format!("\n{w}: {}", conclusion(&runs)));
    }

    out.push_str(
        "\n\ntime: completion (simulated s); speedup over first-touch; lat: average DRAM access \
         latency in core cycles;\nLAR: local access ratio; MC/IC imb: std. dev. of memory-controller \
         / link load as % of the mean, over the controllers\nthat served the run, ran its threads \
         or held its memory, and the links on routes between them; MC/IC max: the busiest\n\
         controller's / link direction's average load over its bandwidth; pages in 4 KiB units; \
         overhead: thread time spent\non placement mechanisms.\n",
    );
    if bound {
        out.push_str(
            "to bound: the placement bound's time over the run's (1.00: as fast as the best \
             placement the model allows,\nwhich places every page at no cost from the start).\n",
        );
    }
    out
}

/// The highest of some utilisations, as a percentage ("-" for none).
fn busiest(utilisations: impl Iterator<Item = f64>) -> String {
    utilisations
        .reduce(f64::max)
        .map_or_else(|| "-".into(), |u| format!("{:.0}%", 100.0 * u))
}

/// The slowdowns of the multiprogrammed runs, one row per run, one column per program
/// (empty when no run has them).
fn render_slowdowns(results: &[RunResult]) -> String {
    let runs: Vec<(&RunResult, &rondpoint_sim::experiment::Multiprogram)> = results
        .iter()
        .filter_map(|r| r.multiprogram.as_ref().map(|m| (r, m)))
        .collect();
    let mut out = String::new();
    let mut names: Vec<&str> = Vec::new();
    for (_, m) in &runs {
        for a in &m.apps {
            if !names.contains(&a.name.as_str()) {
                names.push(&a.name);
            }
        }
    }
    if runs.is_empty() {
        return out;
    }
    let pct = |x: f64, range: Option<[f64; 2]>| match range {
        Some([lo, hi]) => format!("{x:.1}% ({lo:.0}..{hi:.0})"),
        None => format!("{x:.1}%"),
    };
    let rows = runs
        .iter()
        .map(|(r, m)| {
            let mut row = vec![r.workload.clone(), r.policy.clone()];
            row.extend(names.iter().map(|n| {
                m.apps
                    .iter()
                    .find(|a| a.name == *n)
                    .map_or_else(|| "-".into(), |a| pct(a.slowdown_pct, a.range_pct))
            }));
            row.push(pct(m.average_pct, m.average_range_pct));
            row
        })
        .collect();
    let mut header = vec!["workload", "policy"];
    header.extend(names.iter().copied());
    header.push("average");
    let mut right = vec![false, false];
    right.extend(std::iter::repeat_n(true, names.len() + 1));
    let fast = runs.iter().any(|(_, m)| m.solo == SoloNode::Fast);
    let (paper, solo) = if fast {
        (
            "[Gaud10 Figure 5]",
            "the program alone on the first fast node, its memory there (the machine has slow \
             nodes)",
        )
    } else {
        ("[Majo11 §4.1]", "the program alone on its home node")
    };
    out.push_str(&format!(
        "\nslowdown of each program over its solo run (the paper's way, {paper}):\n\n"
    ));
    out.push_str(&format::table(&header, &right, rows));
    out.push_str(&format!(
        "\n\nsolo run: {solo}; average: over the programs; (lo..hi): range over the placements \
         a policy stands for (default: every CPU-balanced split).\n"
    ));
    out
}

/// What the policies said about themselves, one line each (nothing when they said nothing).
pub fn render_notes(results: &[RunResult]) -> String {
    let mut out = String::new();
    let mut seen = std::collections::BTreeSet::new();
    for r in results {
        for n in &r.notes {
            if seen.insert((&r.workload, &r.policy, n)) {
                out.push_str(&format!("note: {} / {}: {n}\n", r.workload, r.policy));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::{NodeId, NodeMemory, Observation, Pid, ProcessInfo};
    use rondpoint_sim::experiment::AppResult;
    use rondpoint_sim::memory::{MemoryReport, NodeInfo};

    #[test]
    fn memory_lists_each_node_with_its_fallback_and_each_application() {
        const GIB: u64 = 1 << 30;
        let mut memory = MemoryReport::new(
            (0..2)
                .map(|n| NodeInfo {
                    node: NodeId(n),
                    total_bytes: 16 * GIB,
                    fallback: vec![NodeId(n), NodeId(1 - n)],
                })
                .collect(),
        );
        let at = |free: [u64; 2]| Observation {
            memory: (0..2)
                .map(|n| NodeMemory {
                    node: NodeId(n as u16),
                    total_bytes: 16 * GIB,
                    free_bytes: free[n],
                })
                .collect(),
            processes: vec![ProcessInfo {
                pid: Pid(1),
                comm: "big".into(),
                threads: vec![],
                resident_bytes_by_node: vec![16 * GIB - free[0], 16 * GIB - free[1]],
                mapping_policies: vec![],
            }],
            ..Observation::default()
        };
        memory.record(1.0, &at([0, 4 * GIB]));
        memory.record(2.0, &at([0, 8 * GIB]));
        let r = RunResult {
            machine: "m".into(),
            workload: "w".into(),
            policy: "p".into(),
            seed: 1,
            completion_s: 2.0,
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
            apps: vec![AppResult {
                name: "big".into(),
                completion_s: 2.0,
                bytes_by_node: vec![16 * GIB, 8 * GIB],
            }],
            memory,
            multiprogram: None,
            notes: vec![],
            reasons: Default::default(),
        };
        let out = render_memory(&r);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("memory: w / p"), "{out}");
        let cells = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            cells(lines[1]),
            ["node", "size", "peak", "end", "fallback", "big"]
        );
        assert_eq!(
            cells(lines[2]),
            ["0", "16.00", "16.00", "16.00", "0", "1", "16.00"]
        );
        assert_eq!(
            cells(lines[3]),
            ["1", "16.00", "12.00", "8.00", "1", "0", "8.00"]
        );
    }
}
