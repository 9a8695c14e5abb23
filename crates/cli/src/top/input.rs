//! What the user has asked of the screen (sort, filter, pause, help, scroll) and the keys
//! that change it. Kept apart from the terminal so that tests drive it with plain key codes.

use super::model::{ProcessView, ViewModel};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The process table's sort column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortKey {
    /// Resident pages, largest first.
    #[default]
    Pages,
    /// Samples this epoch, most first.
    Samples,
    /// Actions this epoch, most first.
    ActionsEpoch,
    /// Actions since the start, most first.
    ActionsTotal,
    /// Process id, smallest first.
    Pid,
    /// Command name, alphabetical.
    Comm,
}

impl SortKey {
    /// The next column, for `s`.
    pub fn next(self) -> Self {
        match self {
            SortKey::Pages => SortKey::Samples,
            SortKey::Samples => SortKey::ActionsEpoch,
            SortKey::ActionsEpoch => SortKey::ActionsTotal,
            SortKey::ActionsTotal => SortKey::Pid,
            SortKey::Pid => SortKey::Comm,
            SortKey::Comm => SortKey::Pages,
        }
    }

    /// The column's name as the header shows it.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Pages => "pages",
            SortKey::Samples => "samples",
            SortKey::ActionsEpoch => "actions (epoch)",
            SortKey::ActionsTotal => "actions (total)",
            SortKey::Pid => "pid",
            SortKey::Comm => "comm",
        }
    }
}

/// A filter on what the screen shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    /// One node: its row, and the processes holding pages on it.
    Node(u16),
    /// Processes whose pid is this number or whose command name contains this text.
    Process(String),
}

impl Filter {
    /// Parses what was typed: `n2` or `node 2` for a node, anything else for processes;
    /// `None` for nothing.
    pub fn parse(text: &str) -> Option<Self> {
        let t = text.trim();
        if t.is_empty() {
            return None;
        }
        let node = t
            .strip_prefix("node")
            .or_else(|| t.strip_prefix('n'))
            .map(|rest| rest.trim_start_matches([' ', ':', '=']))
            .and_then(|n| n.parse::<u16>().ok());
        Some(match node {
            Some(n) => Filter::Node(n),
            None => Filter::Process(t.to_string()),
        })
    }

    /// How the header says it.
    pub fn describe(&self) -> String {
        match self {
            Filter::Node(n) => format!("node {n}"),
            Filter::Process(p) => format!("process '{p}'"),
        }
    }
}

/// What the user has asked of the screen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UiState {
    pub sort: SortKey,
    pub filter: Option<Filter>,
    /// The filter being typed, while `/` or `f` is open.
    pub editing: Option<String>,
    pub paused: bool,
    pub help: bool,
    /// First process row shown.
    pub scroll: usize,
    /// Whether `q` (or Ctrl-C) was pressed.
    pub quit: bool,
}

impl UiState {
    /// Takes in one key.
    pub fn key(&mut self, key: KeyEvent) {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        if let Some(text) = self.editing.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    self.filter = Filter::parse(text);
                    self.editing = None;
                    self.scroll = 0;
                }
                KeyCode::Esc => self.editing = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) => text.push(c),
                _ => {}
            }
            return;
        }
        if self.help {
            // Any key closes the help; q still quits.
            self.help = false;
            self.quit = key.code == KeyCode::Char('q');
            return;
        }
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('p' | ' ') => self.paused = !self.paused,
            KeyCode::Char('s') => self.sort = self.sort.next(),
            KeyCode::Char('/' | 'f') => self.editing = Some(String::new()),
            KeyCode::Esc => self.filter = None,
            KeyCode::Char('h' | '?') => self.help = true,
            KeyCode::Down | KeyCode::Char('j') => self.scroll = self.scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_add(10),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::Home => self.scroll = 0,
            _ => {}
        }
    }

    /// The processes to show, filtered and sorted.
    pub fn processes<'a>(&self, v: &'a ViewModel) -> Vec<&'a ProcessView> {
        let node_index = match &self.filter {
            Some(Filter::Node(n)) => v.nodes.iter().position(|x| x.node == *n),
            _ => None,
        };
        let mut rows: Vec<&ProcessView> = v
            .processes
            .iter()
            .filter(|p| match &self.filter {
                None => true,
                Some(Filter::Node(_)) => node_index
                    .and_then(|i| p.pages_by_node.get(i))
                    .is_some_and(|&n| n > 0),
                Some(Filter::Process(text)) => {
                    p.pid.to_string() == *text || p.comm.contains(text.as_str())
                }
            })
            .collect();
        let sum = |m: &std::collections::BTreeMap<String, u64>| m.values().sum::<u64>();
        match self.sort {
            SortKey::Pages => rows.sort_by_key(|p| std::cmp::Reverse(p.pages())),
            SortKey::Samples => rows.sort_by_key(|p| std::cmp::Reverse(p.samples)),
            SortKey::ActionsEpoch => rows.sort_by_key(|p| std::cmp::Reverse(sum(&p.actions_epoch))),
            SortKey::ActionsTotal => rows.sort_by_key(|p| std::cmp::Reverse(sum(&p.actions_total))),
            SortKey::Pid => rows.sort_by_key(|p| p.pid),
            SortKey::Comm => rows.sort_by(|a, b| a.comm.cmp(&b.comm).then(a.pid.cmp(&b.pid))),
        }
        rows
    }

    /// Whether node `n` is shown.
    pub fn shows_node(&self, n: u16) -> bool {
        !matches!(self.filter, Some(Filter::Node(f)) if f != n)
    }
}
