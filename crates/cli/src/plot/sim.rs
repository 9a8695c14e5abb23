//! `sim --plot`: speedup over first-touch per workload and policy (\[Dashti13\] Figures 5 and 6
//! style); for a single workload, each memory controller's and link's load per policy below
//! it (the traffic of \[Dashti13\] Figure 3, as bars).

use super::Figure;
use super::bars::Bars;
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use rondpoint_sim::experiment::RunResult;

/// The y axis label of the speedup chart.
pub const SPEEDUP_LABEL: &str = "speedup over first-touch (higher is better)";

/// The charts of one `sim` command's results.
#[derive(Debug)]
pub struct SimFigure {
    speedup: Bars,
    /// With a single workload: memory-controller load, and link load where the machine has
    /// links.
    traffic: Option<(Bars, Option<Bars>)>,
    /// With a single multiprogrammed workload: each program's slowdown over its solo run, per
    /// policy (\[Majo11\] Figure 7, \[Gaud10\] Figure 5, \[Choe21\] Figure 4 style).
    slowdown: Option<Bars>,
}

/// A series: its name and its value in each group.
type Series = (String, Vec<Option<f64>>);

/// A run's value in each group of a panel (`None`: no bar).
type Values<'a> = dyn Fn(&RunResult) -> Vec<Option<f64>> + 'a;

const WIDTH: u32 = 960;
const PANEL_HEIGHT: u32 = 480;

impl SimFigure {
    /// The charts of `results`, from the numbers the table and `--json` show (each value the
    /// mean over the seeds of a workload and policy). Every run needs its speedup over
    /// first-touch: first-touch must have run.
    pub fn new(results: &[RunResult]) -> Result<Self> {
        let workloads = distinct(results.iter().map(|r| r.workload.as_str()));
        let policies = distinct(results.iter().map(|r| r.policy.as_str()));
        let machine = results.first().map_or("", |r| r.machine.as_str());
        if results.iter().any(|r| r.speedup_vs_first_touch.is_none()) {
            bad_input!("--plot draws speedup over first-touch: add first-touch to --policy");
        }
        let seeds = distinct(results.iter().map(|r| r.seed)).len();
        let over = if seeds > 1 {
            format!(", mean over {seeds} seeds")
        } else {
            String::new()
        };
        let series = |value: &Values<'_>| {
            policies
                .iter()
                .map(|p| {
                    let runs: Vec<&RunResult> = results.iter().filter(|r| r.policy == *p).collect();
                    (p.to_string(), mean_by(&runs, value))
                })
                .collect::<Vec<_>>()
        };
        let speedup = Bars {
            caption: format!("{machine}: speedup over first-touch{over}"),
            y_label: SPEEDUP_LABEL.into(),
            groups: workloads.iter().map(|w| w.to_string()).collect(),
            series: series(&|r| {
                workloads
                    .iter()
                    .map(|w| {
                        (r.workload == *w)
                            .then_some(r.speedup_vs_first_touch)
                            .flatten()
                    })
                    .collect()
            }),
            reference: Some(1.0),
        };
        let traffic = match workloads.as_slice() {
            [w] => Some(traffic(results, w, &over, &series)),
            _ => None,
        };
        let slowdown = match workloads.as_slice() {
            [w] => slowdown(results, w, &over, &series),
            _ => None,
        };
        Ok(SimFigure {
            speedup,
            traffic,
            slowdown,
        })
    }
}

/// Memory-controller and link load of a single workload's runs, in % of bandwidth.
fn traffic(
    results: &[RunResult],
    workload: &str,
    over: &str,
    series: &dyn Fn(&Values<'_>) -> Vec<Series>,
) -> (Bars, Option<Bars>) {
    let nodes = distinct(
        results
            .iter()
            .flat_map(|r| r.mc_load.iter().map(|l| l.node.0)),
    );
    let mc = Bars {
        caption: format!("{workload}: memory-controller load{over}"),
        y_label: "memory-controller load (% of bandwidth)".into(),
        groups: nodes.iter().map(|n| format!("node {n}")).collect(),
        series: series(&|r| {
            nodes
                .iter()
                .map(|n| {
                    r.mc_load
                        .iter()
                        .find(|l| l.node.0 == *n)
                        .map(|l| 100.0 * l.utilisation)
                })
                .collect()
        }),
        reference: None,
    };
    let links = distinct(
        results
            .iter()
            .flat_map(|r| r.link_load.iter().map(|l| (l.from.0, l.to.0))),
    );
    let link = (!links.is_empty()).then(|| Bars {
        caption: format!("{workload}: link load{over}"),
        y_label: "link load (% of bandwidth)".into(),
        groups: links.iter().map(|(a, b)| format!("{a}→{b}")).collect(),
        series: series(&|r| {
            links
                .iter()
                .map(|(a, b)| {
                    r.link_load
                        .iter()
                        .find(|l| l.from.0 == *a && l.to.0 == *b)
                        .map(|l| 100.0 * l.utilisation)
                })
                .collect()
        }),
        reference: None,
    });
    // Links no run loaded measurably (rounding in the model's solver leaves loads of 1e-14%)
    // get no panel: bars of noise would say there was traffic.
    let measurable = |b: &Bars| {
        b.series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten())
            .any(|v| *v >= MEASURABLE_PCT)
    };
    (mc, link.filter(measurable))
}

/// The least load (% of bandwidth) a chart draws as traffic.
const MEASURABLE_PCT: f64 = 1e-3;

/// Each program's slowdown over its solo run, one group per program and the average, when
/// the runs are multiprogrammed.
fn slowdown(
    results: &[RunResult],
    workload: &str,
    over: &str,
    series: &dyn Fn(&Values<'_>) -> Vec<Series>,
) -> Option<Bars> {
    let programs = distinct(
        results
            .iter()
            .filter_map(|r| r.multiprogram.as_ref())
            .flat_map(|m| m.apps.iter().map(|a| a.name.as_str())),
    );
    if programs.is_empty() {
        return None;
    }
    let mut groups: Vec<String> = programs.iter().map(|p| p.to_string()).collect();
    groups.push("average".into());
    Some(Bars {
        caption: format!("{workload}: slowdown of each program over its solo run{over}"),
        y_label: "slowdown (%, lower is better)".into(),
        groups,
        series: series(&|r| {
            let Some(m) = &r.multiprogram else {
                return vec![None; programs.len() + 1];
            };
            programs
                .iter()
                .map(|p| m.apps.iter().find(|a| a.name == *p).map(|a| a.slowdown_pct))
                .chain(std::iter::once(Some(m.average_pct)))
                .collect()
        }),
        reference: None,
    })
}

/// The values `value` gives each run, averaged over the runs (the seeds) group by group; a
/// group no run has a value for has none.
fn mean_by(runs: &[&RunResult], value: &Values<'_>) -> Vec<Option<f64>> {
    let mut sums: Vec<(f64, u32)> = Vec::new();
    for r in runs {
        let values = value(r);
        sums.resize(sums.len().max(values.len()), (0.0, 0));
        for (sum, v) in sums.iter_mut().zip(values) {
            if let Some(v) = v {
                sum.0 += v;
                sum.1 += 1;
            }
        }
    }
    sums.into_iter()
        .map(|(s, n)| (n > 0).then(|| s / f64::from(n)))
        .collect()
}

/// The distinct items, in their first order.
fn distinct<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

impl Figure for SimFigure {
    fn size(&self) -> (u32, u32) {
        let panels = 1 + u32::from(self.traffic.is_some()) + u32::from(self.slowdown.is_some());
        (WIDTH, PANEL_HEIGHT * panels)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        root.fill(&WHITE).map_err(super::err)?;
        let Some((mc, link)) = &self.traffic else {
            return self.speedup.draw(root);
        };
        let (top, rest) = root.split_vertically(PANEL_HEIGHT);
        self.speedup.draw(&top)?;
        let bottom = match &self.slowdown {
            Some(slowdown) => {
                let (middle, bottom) = rest.split_vertically(PANEL_HEIGHT);
                slowdown.draw(&middle)?;
                bottom
            }
            None => rest,
        };
        match link {
            None => mc.draw(&bottom),
            Some(link) => {
                let (left, right) = bottom.split_horizontally(WIDTH / 2);
                mc.draw(&left)?;
                link.draw(&right)
            }
        }
    }
}
