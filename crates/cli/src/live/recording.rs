//! `--record` of `rondpoint run` and `rondpoint daemon`: the same recording as `rondpoint
//! record` makes, of a live machine.

use anyhow::{Context, Result};
use rondpoint_engine::EpochReport;
use rondpoint_engine::record::{Header, Recorder};
use rondpoint_model::{Capabilities, ProcessInfo, Topology};
use rondpoint_policy_api::PolicyConfig;
use rondpoint_safeio::Staged;
use std::path::{Path, PathBuf};

/// A recording of a live run (`--record`). The file is staged (written under a temporary name
/// beside it, renamed at the end) before anything is managed, so that a path that cannot be
/// written is an error up front; the header is written with the first epoch, whose processes
/// it lists (a launched program exists only once the run starts). A write error ends the
/// recording, not the run: it is reported in the run's notes, and nothing is saved.
pub struct LiveRecording {
    path: PathBuf,
    run: RecordedRun,
    max_samples: Option<usize>,
    state: LiveState,
    epochs: u64,
    /// Held until the recording ends: no other rondpoint writes this file meanwhile.
    _lock: Option<super::OutputLock>,
}

/// What the header of a live recording says besides its processes.
pub struct RecordedRun {
    pub source: String,
    pub topology: Topology,
    pub capabilities: Capabilities,
    /// The run's policy parameters.
    pub config: PolicyConfig,
}

/// Where a [`LiveRecording`] is.
enum LiveState {
    /// Created, the header not yet written.
    Created(Staged),
    Recording(Recorder<Staged>),
    /// Stopped by a write error.
    Failed(String),
}

impl LiveRecording {
    pub fn create(
        path: &Path,
        run: RecordedRun,
        max_samples: Option<usize>,
        replace: rondpoint_safeio::Replace,
        lock: Option<super::OutputLock>,
    ) -> Result<Self> {
        let file =
            rondpoint_safeio::create_staged(path, replace).context("creating the recording")?;
        Ok(Self {
            path: path.to_path_buf(),
            run,
            max_samples,
            state: LiveState::Created(file),
            epochs: 0,
            _lock: lock,
        })
    }

    /// The recorder, its header written (listing `processes`) if it was not yet; `None` once
    /// the recording has failed.
    fn recorder(&mut self, processes: &[ProcessInfo]) -> Option<&mut Recorder<Staged>> {
        let state = std::mem::replace(&mut self.state, LiveState::Failed(String::new()));
        self.state = match state {
            LiveState::Created(file) => match Recorder::new(
                file,
                &self.run.source,
                &Header {
                    topology: &self.run.topology,
                    processes,
                    capabilities: &self.run.capabilities,
                    config: Some(&self.run.config),
                },
                self.max_samples,
            ) {
                Ok(recorder) => LiveState::Recording(recorder),
                Err(e) => LiveState::Failed(e.to_string()),
            },
            other => other,
        };
        match &mut self.state {
            LiveState::Recording(recorder) => Some(recorder),
            _ => None,
        }
    }

    /// Appends an epoch (with the header first), and writes it out.
    pub fn epoch(&mut self, r: &EpochReport<'_>) {
        let Some(recorder) = self.recorder(&r.observation.processes) else {
            return;
        };
        let written = recorder.epoch(r).and_then(|()| recorder.flush());
        // A live run's length is not known: the recording stops when the disk is nearly full.
        let room = recorder.output().check_room(None);
        match (written, room) {
            (Ok(()), Ok(())) => self.epochs += 1,
            (Err(e), _) => self.state = LiveState::Failed(e.to_string()),
            (_, Err(e)) => self.state = LiveState::Failed(e.to_string()),
        }
    }

    /// Ends a run's recording, if any: why it stopped early goes to `notes` (the run's
    /// report); what was saved is returned, to print after the report.
    pub fn end(recording: Option<Self>, notes: &mut Vec<String>) -> Option<String> {
        match recording.map(Self::finish)? {
            Ok(saved) => Some(saved),
            Err(e) => {
                notes.push(e);
                None
            }
        }
    }

    /// Ends the recording (with no epoch, the header alone, listing no process): `Ok` says
    /// what was saved, `Err` why the recording stopped early.
    fn finish(mut self) -> Result<String, String> {
        self.recorder(&[]);
        let error = match self.state {
            LiveState::Recording(recorder) => match recorder.finish() {
                Ok(staged) => staged.commit().err().map(|e| e.to_string()),
                Err(e) => Some(e.to_string()),
            },
            LiveState::Failed(e) => Some(e),
            LiveState::Created(staged) => staged.commit().err().map(|e| e.to_string()),
        };
        match error {
            None => Ok(format!(
                "recorded {} epochs to {} (rondpoint replay {} --policy P)",
                self.epochs,
                self.path.display(),
                self.path.display()
            )),
            Some(e) => Err(format!(
                "the recording {} was not saved (it failed after {} epochs): {e}",
                self.path.display(),
                self.epochs
            )),
        }
    }
}

/// Where a live recording came from: "live run 'CMD' policy=P kernel=K".
pub fn live_source(what: &str, policy: &str) -> String {
    let kernel =
        rondpoint_safeio::read_system_text(std::path::Path::new("/proc/sys/kernel/osrelease"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
    format!("live {what} policy={policy} kernel={kernel}")
}
