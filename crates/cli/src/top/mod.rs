//! `rondpoint top`: a live terminal view of a daemon (through its state file) or of a
//! simulation (`rondpoint sim ... --top`), drawn with ratatui.
//!
//! The figures are a [`model::ViewModel`], filled each epoch from the engine's report by a
//! [`model::Tracker`]; the daemon writes it into its state file, the simulator hands it over
//! directly. Drawing ([`view::draw`]) is a pure function of the view and of what the user asked
//! ([`input::UiState`]), which the tests draw on ratatui's `TestBackend`.

pub mod input;
pub mod model;
mod screen;
pub mod sim;
pub mod snapshot;
#[cfg(test)]
mod tests;
pub mod view;

use anyhow::{Context, Result};
use clap::Args;
use model::ViewModel;
use screen::Screen;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};
use view::Feed;

/// Where `rondpoint top` looks for a daemon's state file when not told (the path
/// docs/service.md's unit gives `--state-file`).
pub const DEFAULT_STATE: &str = "/run/rondpoint/state.json";

#[derive(Debug, Args)]
pub struct TopArgs {
    /// The state file of the daemon to watch (the daemon's --state-file).
    #[arg(long, value_name = "FILE", default_value = DEFAULT_STATE)]
    state: PathBuf,
    /// How often to look for a new epoch in the state file (milliseconds); the screen changes
    /// when the daemon rewrites it, once per epoch.
    #[arg(long, value_name = "MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    refresh_ms: u64,
    /// Print what the screen would show, once, as JSON (docs/top.md), instead of drawing it:
    /// for scripts, and where standard output is not a terminal.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write what the screen would show, once, as a picture (FILE.svg or FILE.png; a 120 x 28
    /// terminal) instead of drawing it: for bug reports and documentation.
    #[arg(long, value_name = "FILE", conflicts_with = "json")]
    snapshot: Option<PathBuf>,
    /// Replace the --snapshot file even when it is not a picture rondpoint wrote.
    #[arg(long, requires = "snapshot")]
    force: bool,
}

/// The part of the daemon's state file `top` reads.
#[derive(Debug, Deserialize)]
struct StateFile {
    /// Absent from a state file written by a daemon older than `top`.
    top: Option<ViewModel>,
}

/// Reads the view out of a state file.
fn read_state(path: &Path) -> Result<ViewModel> {
    let text = rondpoint_safeio::read_text(path, rondpoint_safeio::InputKind::StateFile)?;
    let state: StateFile = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a daemon state file", path.display()))?;
    state.top.with_context(|| {
        format!(
            "{} has no `top` field: written by a rondpoint daemon older than `top`",
            path.display()
        )
    })
}

pub fn run(args: &TopArgs) -> Result<ExitCode> {
    if let Some(path) = &args.snapshot {
        let output = crate::plot::Output::create(path, args.force)?;
        let view = read_state(&args.state)?;
        output.write(&snapshot::Snapshot::new(&view, &Feed::Live)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        let view = read_state(&args.state)?;
        outln!("{}", serde_json::to_string_pretty(&view)?);
        return Ok(ExitCode::SUCCESS);
    }
    screen::require_terminal("rondpoint top --json, or read the state file itself")?;
    let mut watch = StateWatch::new(&args.state);
    let mut screen = Screen::open()?;
    let tick = Duration::from_millis(args.refresh_ms);
    let result = (|| {
        while !screen.quit() {
            if !screen.paused() {
                if let Some(view) = watch.poll() {
                    screen.show(view);
                }
                screen.set_feed(watch.feed.clone());
            }
            screen.wait(Instant::now() + tick)?;
        }
        Ok(())
    })();
    screen.close(result)?;
    Ok(ExitCode::SUCCESS)
}

/// A daemon's state file, watched for new epochs.
struct StateWatch {
    path: PathBuf,
    /// When the file last changed, as last read.
    modified: Option<SystemTime>,
    /// The last view read.
    last: Option<ViewModel>,
    feed: Feed,
}

impl StateWatch {
    fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            modified: None,
            last: None,
            feed: Feed::Waiting(format!("the daemon's state file {}", path.display())),
        }
    }

    /// A new view when the file changed since the last look; sets [`Self::feed`].
    fn poll(&mut self) -> Option<ViewModel> {
        let modified = match std::fs::metadata(&self.path).and_then(|m| m.modified()) {
            Ok(m) => m,
            Err(e) => {
                self.feed = self.gone(format!(
                    "state file gone ({}: {e}): daemon not running?",
                    self.path.display()
                ));
                return None;
            }
        };
        let changed = self.modified != Some(modified);
        let mut new = None;
        if changed {
            match read_state(&self.path) {
                Ok(view) => {
                    self.modified = Some(modified);
                    self.last = Some(view.clone());
                    new = Some(view);
                }
                Err(e) => {
                    self.feed = self.gone(format!("{e:#}"));
                    return None;
                }
            }
        }
        self.feed = self.liveness(modified);
        new
    }

    /// Whether the daemon behind the last view still runs and writes.
    fn liveness(&self, modified: SystemTime) -> Feed {
        let Some(view) = &self.last else {
            return self.feed.clone();
        };
        let age = modified.elapsed().unwrap_or_default().as_secs_f64();
        // A pid not found here is a daemon gone, or one in another pid namespace: the file
        // still being rewritten tells them apart.
        if let Some(pid) = view.writer_pid {
            let quiet = age > (2.0 * view.epoch_s).max(1.0);
            if quiet && !Path::new(&format!("/proc/{pid}")).exists() {
                return Feed::Gone(format!(
                    "daemon not running (pid {pid} exited): its last epoch"
                ));
            }
        }
        let late = (3.0 * view.epoch_s).max(5.0);
        if age > late {
            return Feed::Gone(format!("no new epoch for {age:.0} s: daemon stalled?"));
        }
        Feed::Live
    }

    /// `why`, when nothing was ever read; the same, said over the last view, otherwise.
    fn gone(&self, why: String) -> Feed {
        match self.last {
            None => Feed::Waiting(why),
            Some(_) => Feed::Gone(why),
        }
    }
}
