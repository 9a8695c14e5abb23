//! `rondpoint explain`: the explanation trail of a recording, epoch by epoch: who decided each
//! action (the policy, or the lane of `auto`), on what evidence, expecting what.

use super::record::line_limit;
use crate::options::PolicyOptions;
use anyhow::{Context, Result, bail};
use clap::Args;
use rondpoint_engine::record;
use rondpoint_model::{Action, Explained};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A recording (`rondpoint record`, or `run`/`daemon --record`).
    #[arg(value_name = "FILE")]
    input: PathBuf,
    /// Replay this policy over the recorded observations and explain its decisions instead of
    /// the recorded run's.
    #[arg(long, short = 'p')]
    policy: Option<String>,
    #[command(flatten)]
    policy_options: PolicyOptions,
    /// Only this epoch (the start decisions are epoch "start": not selectable).
    #[arg(long, value_name = "N")]
    epoch: Option<u64>,
    /// Print the trail as JSON (one object per reason) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// One line of the trail: a reason and the actions it explains in one epoch.
#[derive(Debug, Serialize)]
struct Entry {
    /// The epoch, or none for the start decisions.
    epoch: Option<u64>,
    by: String,
    /// Actions by technique.
    actions: BTreeMap<String, u64>,
    /// Pages they asked for (4 KiB units).
    pages: u64,
    evidence: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<String>,
}

/// The trail of one batch of actions: one entry per reason, in the order of first use.
fn entries(epoch: Option<u64>, actions: &[Action], explained: &Explained) -> Vec<Entry> {
    let mut out: Vec<Entry> = explained
        .reasons
        .iter()
        .map(|r| Entry {
            epoch,
            by: r.by.clone(),
            actions: BTreeMap::new(),
            pages: 0,
            evidence: r.evidence.clone(),
            expected: r.expected.clone(),
        })
        .collect();
    for (a, &k) in actions.iter().zip(&explained.why) {
        if let Some(e) = out.get_mut(k as usize) {
            *e.actions.entry(a.technique().to_string()).or_default() += 1;
            e.pages += a.pages();
        }
    }
    out.retain(|e| !e.actions.is_empty());
    out
}

pub fn run(args: &ExplainArgs) -> Result<ExitCode> {
    let file = rondpoint_safeio::open_input(&args.input, rondpoint_safeio::InputKind::Recording)
        .context("opening the recording")?;
    let reading = || format!("reading {}", args.input.display());
    let (recorded, reader) =
        record::Reader::open(BufReader::new(file), line_limit()).with_context(reading)?;
    let mut trail = Vec::new();
    let mut actions_seen = 0usize;
    let mut unexplained = 0usize;
    let mut replaying = match &args.policy {
        Some(name) => {
            let mut config = args.policy_options.config()?;
            if let Some(base) = &recorded.config {
                config.fill_from(base);
            }
            Some(crate::policies::build(name, &config)?)
        }
        None => None,
    };
    let mut replayer = match replaying.as_mut() {
        Some(p) => {
            let (r, start) = record::Replayer::start(p.as_mut(), &recorded)?;
            if args.epoch.is_none() {
                trail.extend(entries(None, &start, &r.start_explained));
            }
            Some(r)
        }
        None => {
            if let (Some(s), None) = (&recorded.start, args.epoch) {
                actions_seen += s.actions.len();
                unexplained += s.actions.len() - s.explained.why.len().min(s.actions.len());
                trail.extend(entries(None, &s.actions, &s.explained));
            }
            None
        }
    };
    for epoch in reader {
        let epoch = epoch.with_context(reading)?;
        let n = epoch.observation.epoch;
        let (actions, explained) = match replayer.as_mut() {
            Some(r) => {
                let e = r.epoch(&epoch);
                (e.actions, e.explained)
            }
            None => (epoch.actions, epoch.explained),
        };
        if args.epoch.is_some_and(|want| want != n) {
            continue;
        }
        actions_seen += actions.len();
        unexplained += actions.len() - explained.why.len().min(actions.len());
        trail.extend(entries(Some(n), &actions, &explained));
    }
    if actions_seen > 0 && unexplained == actions_seen && replayer.is_none() {
        bail!(
            "{} has {actions_seen} actions but no reasons (recorded before rondpoint kept them); \
             `rondpoint explain --policy P {}` replays a policy over it and explains that",
            args.input.display(),
            args.input.display()
        );
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&trail)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_trail(&trail, &recorded.source, args.policy.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// The trail for a human: epoch by epoch, who decided what, on what evidence, expecting what.
fn print_trail(trail: &[Entry], source: &str, policy: Option<&str>) -> Result<()> {
    let whose = policy.map_or_else(
        || "the recorded run's decisions".to_string(),
        |p| format!("{p}'s decisions, replayed"),
    );
    outln!("{whose} over [{source}]");
    if trail.is_empty() {
        outln!("no action was taken");
        return Ok(());
    }
    let mut last: Option<Option<u64>> = None;
    for e in trail {
        if last != Some(e.epoch) {
            match e.epoch {
                Some(n) => outln!("epoch {n}:"),
                None => outln!("start:"),
            }
            last = Some(e.epoch);
        }
        let what: Vec<String> = e.actions.iter().map(|(t, n)| format!("{n} {t}")).collect();
        let pages = match e.pages {
            0 => String::new(),
            p => format!(" ({p} pages)"),
        };
        outln!("  {}: {}{pages}", e.by, what.join(", "));
        outln!("    evidence: {}", e.evidence);
        if let Some(x) = &e.expected {
            outln!("    expected: {x}");
        }
    }
    Ok(())
}
