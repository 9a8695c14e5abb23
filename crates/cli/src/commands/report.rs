//! `rondpoint report`: a recorded run over time, as damo's report of a record or perf's of a
//! perf.data: the managed programs' memory on each node, the local access ratio and the
//! memory-controller imbalance (rondpoint_model::metrics, as `top` and the metrics endpoint
//! compute them), and the actions and pages placed, epoch by epoch; summed up as text, given
//! whole with `--json`, drawn with `--plot`.

use super::record::line_limit;
use crate::plot::{self, RecordingFigure};
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_engine::record;
use rondpoint_model::metrics;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A recording (`rondpoint record`, or `run`/`daemon --record`).
    #[arg(value_name = "FILE")]
    input: PathBuf,
    /// Draw the run over time into FILE (.svg or .png): memory per node, local access ratio
    /// and controller imbalance, actions per epoch.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Replace the --plot file even when it is not a chart rondpoint wrote.
    #[arg(long, requires = "plot")]
    force: bool,
    /// Print every epoch's figures as JSON instead of the summary.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A recorded run, epoch by epoch.
#[derive(Debug, Default, Serialize)]
pub struct Timeline {
    /// Where the recording came from (its header's source).
    pub source: String,
    /// The nodes, as `node N`, in the order of every per-node series.
    pub nodes: Vec<String>,
    /// Each epoch's end, in seconds from the first epoch's start.
    pub t_s: Vec<f64>,
    /// Bytes the managed programs have resident on each node, per epoch.
    pub memory_bytes_by_node: Vec<Vec<u64>>,
    /// Local access ratio (0 to 1), per epoch.
    pub lar: Vec<f64>,
    /// Memory-controller imbalance (percent), per epoch.
    pub mc_imbalance_pct: Vec<f64>,
    /// Actions per epoch, by technique.
    pub actions_by_technique: BTreeMap<String, Vec<u64>>,
    /// Pages placed where asked (moved, or already there), per epoch.
    pub pages_done: Vec<u64>,
}

impl Timeline {
    fn push(&mut self, epoch: &record::RecordedEpoch, origin_ns: u64) {
        let obs = &epoch.observation;
        let end = obs.start_ns.saturating_add(obs.counters.duration_ns);
        self.t_s.push(end.saturating_sub(origin_ns) as f64 / 1e9);
        let mut memory = vec![0u64; self.nodes.len()];
        for p in &obs.processes {
            for (m, b) in memory.iter_mut().zip(&p.resident_bytes_by_node) {
                *m += b;
            }
        }
        self.memory_bytes_by_node.push(memory);
        let g = metrics::global(obs);
        self.lar.push(g.lar);
        self.mc_imbalance_pct.push(g.mc_imbalance_pct);
        let n = self.t_s.len();
        for a in &epoch.actions {
            let counts = self
                .actions_by_technique
                .entry(a.technique().to_string())
                .or_default();
            counts.resize(n, 0);
            counts[n - 1] += 1;
        }
        for counts in self.actions_by_technique.values_mut() {
            counts.resize(n, 0);
        }
        self.pages_done
            .push(epoch.outcomes.iter().map(|o| o.pages_done).sum());
    }

    /// Reads a recording through, one epoch in memory at a time.
    fn read(input: &std::path::Path) -> Result<Self> {
        let file = rondpoint_safeio::open_input(input, rondpoint_safeio::InputKind::Recording)
            .context("opening the recording")?;
        let reading = || format!("reading {}", input.display());
        let (recorded, reader) =
            record::Reader::open(BufReader::new(file), line_limit()).with_context(reading)?;
        let mut timeline = Timeline {
            source: recorded.source.clone(),
            nodes: recorded
                .topology
                .nodes()
                .iter()
                .map(|n| format!("node {}", n.id.0))
                .collect(),
            ..Timeline::default()
        };
        let mut origin = None;
        for epoch in reader {
            let epoch = epoch.with_context(reading)?;
            let origin = *origin.get_or_insert(epoch.observation.start_ns);
            timeline.push(&epoch, origin);
        }
        Ok(timeline)
    }
}

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    // A chart destination rondpoint may not replace is refused before the recording is read.
    let output = match &args.plot {
        Some(path) => Some(plot::Output::create(path, args.force)?),
        None => None,
    };
    let timeline = Timeline::read(&args.input)?;
    if let Some(output) = output {
        if timeline.t_s.is_empty() {
            bad_input!(
                "{} has no epoch to draw (a run stopped before its first epoch ended)",
                args.input.display()
            );
        }
        output.write(&RecordingFigure::new(&timeline))?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&timeline)?);
    } else {
        print_summary(&timeline, args)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The summary: first and last epoch of each series, and the actions over the run.
fn print_summary(t: &Timeline, args: &ReportArgs) -> Result<()> {
    let epochs = t.t_s.len();
    outln!(
        "{}: {epochs} epochs, {:.1} s ({})",
        args.input.display(),
        t.t_s.last().copied().unwrap_or(0.0),
        t.source
    );
    if epochs == 0 {
        return Ok(());
    }
    let last = epochs - 1;
    outln!("{:<28} {:>14} {:>14}", "", "first epoch", "last epoch");
    for (i, node) in t.nodes.iter().enumerate() {
        let at = |e: usize| t.memory_bytes_by_node[e].get(i).copied().unwrap_or(0);
        outln!(
            "{:<28} {:>14} {:>14}",
            format!("memory on {node}"),
            gib(at(0)),
            gib(at(last))
        );
    }
    let pct = |v: f64| format!("{:.0}%", v);
    outln!(
        "{:<28} {:>14} {:>14}",
        "local access ratio",
        pct(100.0 * t.lar[0]),
        pct(100.0 * t.lar[last])
    );
    outln!(
        "{:<28} {:>14} {:>14}",
        "memory-controller imbalance",
        pct(t.mc_imbalance_pct[0]),
        pct(t.mc_imbalance_pct[last])
    );
    let pages: u64 = t.pages_done.iter().sum();
    let actions: Vec<String> = t
        .actions_by_technique
        .iter()
        .map(|(k, v)| format!("{} {k}", v.iter().sum::<u64>()))
        .collect();
    outln!(
        "actions: {}; {pages} pages placed",
        if actions.is_empty() {
            "none".to_string()
        } else {
            actions.join(", ")
        }
    );
    outln!(
        "memory: the managed programs' resident bytes; local access ratio: higher is better; \
         imbalance: standard deviation of the controllers' load as % of the mean, lower is \
         better. --plot draws every epoch, --json lists them."
    );
    if let Some(path) = &args.plot {
        noteln!("rondpoint: chart written to {}", path.display());
    }
    Ok(())
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / f64::from(1u32 << 30))
}
