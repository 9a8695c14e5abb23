//! The terminal side of `top`: raw mode and the alternate screen (restored on every way out:
//! quitting, an error, a signal, a panic), the keys, and redrawing when something changed.

use super::input::UiState;
use super::model::ViewModel;
use super::view::{self, Feed};
use crate::signals::Received;
use anyhow::{Context, Result};
use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Refuses to draw where standard output is not a terminal (a pipe, a file, a service's
/// journal), saying what to use instead.
pub fn require_terminal(instead: &str) -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bad_input!("the live view needs a terminal (standard input and output); use {instead}");
    }
    Ok(())
}

/// The terminal, taken over, and what it shows.
pub struct Screen {
    terminal: DefaultTerminal,
    ui: UiState,
    view: ViewModel,
    feed: Feed,
    /// Whether the screen must be drawn again.
    dirty: bool,
    signals: Received,
}

impl Screen {
    /// Takes the terminal over (raw mode, alternate screen; ratatui's panic hook gives it back
    /// before a panic's message). SIGINT, SIGTERM, SIGHUP and SIGQUIT end the view cleanly.
    pub fn open() -> Result<Self> {
        let signals = crate::signals::install()?;
        let terminal = match ratatui::try_init() {
            Ok(t) => t,
            Err(e) => {
                let _ = ratatui::try_restore();
                return Err(e).context("taking over the terminal");
            }
        };
        Ok(Self {
            terminal,
            ui: UiState::default(),
            view: ViewModel::default(),
            feed: Feed::Waiting("the first epoch".into()),
            dirty: true,
            signals,
        })
    }

    /// Gives the terminal back, then returns `result`.
    pub fn close(self, result: Result<()>) -> Result<()> {
        drop(self.terminal);
        let restored = ratatui::try_restore().context("restoring the terminal");
        result.and(restored)
    }

    /// Whether the user quit, or a signal asked to stop.
    pub fn quit(&self) -> bool {
        self.ui.quit || self.signals.stop.load(Ordering::Relaxed)
    }

    pub fn paused(&self) -> bool {
        self.ui.paused
    }

    /// Shows a new epoch.
    pub fn show(&mut self, view: ViewModel) {
        self.view = view;
        self.dirty = true;
    }

    pub fn set_feed(&mut self, feed: Feed) {
        if feed != self.feed {
            self.feed = feed;
            self.dirty = true;
        }
    }

    /// Draws when needed and takes keys until `until`, or until the user quits.
    pub fn wait(&mut self, until: Instant) -> Result<()> {
        loop {
            if self.dirty {
                let (v, ui, feed) = (&self.view, &self.ui, &self.feed);
                self.terminal
                    .draw(|f| view::draw(f, v, ui, feed))
                    .context("drawing")?;
                self.dirty = false;
            }
            let now = Instant::now();
            if self.quit() || now >= until {
                return Ok(());
            }
            // At most a tenth of a second between looks at the signals.
            let timeout = (until - now).min(Duration::from_millis(100));
            if event::poll(timeout).context("reading the terminal")? {
                match event::read().context("reading the terminal")? {
                    Event::Key(k) if k.kind == KeyEventKind::Press => {
                        self.ui.key(k);
                        self.dirty = true;
                    }
                    Event::Resize(..) => self.dirty = true,
                    _ => {}
                }
            }
        }
    }
}
