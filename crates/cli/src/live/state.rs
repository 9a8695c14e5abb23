//! The state file a live rondpoint rewrites every epoch (`--state-file`,
//! docs/json/daemon.md), for `rondpoint top --state` and scripts: what it manages and has done,
//! and the view `top` draws.

use super::LiveOptions;
use crate::commands::daemon::CgroupTotals;
use crate::top::model::{Tracker, ViewModel};
use anyhow::Result;
use rondpoint_engine::EpochReport;
use rondpoint_model::{OutcomeStatus, Topology};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// What the state file holds.
#[derive(Debug, Default, Serialize)]
pub struct State {
    schema_version: u32,
    policy: String,
    dry_run: bool,
    uptime_s: f64,
    epoch: u64,
    managed: Vec<i32>,
    samples_last_epoch: usize,
    /// Per technique: actions, pages placed.
    totals: BTreeMap<String, (u64, u64)>,
    failed_actions: u64,
    /// Per `daemon --cgroup`: its processes, memory, samples, actions and pages
    /// (`commands/daemon/cgroups.rs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<CgroupTotals>,
    /// What `rondpoint top` shows (docs/top.md).
    pub top: ViewModel,
    #[serde(skip)]
    tracker: Tracker,
}

impl State {
    /// The state of `source` (`daemon`, `run`) under `opts`.
    pub fn new(source: &str, opts: &LiveOptions) -> Self {
        let tracker = Tracker::new(source, &opts.policy);
        Self {
            schema_version: 1,
            policy: opts.policy.clone(),
            dry_run: opts.dry_run,
            top: tracker.view().clone(),
            tracker,
            ..Self::default()
        }
    }

    /// Takes in one epoch's report.
    pub fn update(&mut self, topology: &Topology, r: &EpochReport<'_>, started: Instant) {
        self.uptime_s = started.elapsed().as_secs_f64();
        self.tracker.epoch(topology, r, self.uptime_s);
        self.top = self.tracker.view().clone();
        self.epoch = r.epoch;
        self.managed = r.observation.processes.iter().map(|p| p.pid.0).collect();
        self.samples_last_epoch = r.observation.samples.len();
        for (a, o) in r.actions.iter().zip(r.outcomes) {
            let e = self.totals.entry(a.technique().to_string()).or_default();
            e.0 += 1;
            e.1 += o.pages_done;
            if o.status == OutcomeStatus::Failed {
                self.failed_actions += 1;
            }
        }
    }
}

/// Replaces the state file (atomically; never through a link, never over anything but a
/// regular file).
pub fn write_state(path: &Path, state: &State, force: bool) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(state)?;
    let replace = crate::options::replace(force, rondpoint_safeio::OutputKind::StateFile);
    rondpoint_safeio::write_replacing(path, &bytes, replace)?;
    Ok(())
}
