//! Drawing one screen of `top` from a [`ViewModel`] and a [`UiState`]: pure, so that tests
//! draw it on ratatui's `TestBackend`.

use super::input::UiState;
use super::model::{ProcessView, ViewModel};
use crate::format;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table, Wrap};
use std::collections::BTreeMap;

/// Where the figures come from, as of now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Feed {
    /// Nothing seen yet: what is being waited for.
    Waiting(String),
    /// New epochs arrive.
    Live,
    /// The run is over; the last epoch stays on the screen.
    Finished,
    /// The source went away (the daemon stopped, the state file is gone): why.
    Gone(String),
}

/// The mark of an estimated figure.
const EST: &str = "~";

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, v: &ViewModel, ui: &UiState, feed: &Feed) {
    let area = frame.area();
    let lines = header(v, ui, feed);
    let high = u16::try_from(lines.len()).unwrap_or(3);
    let [top, body, foot] = Layout::vertical([
        Constraint::Length(high),
        Constraint::Min(4),
        Constraint::Length(2),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(lines), top);
    if ui.help {
        frame.render_widget(help(), body);
    } else {
        draw_body(frame, v, ui, body);
    }
    frame.render_widget(Paragraph::new(footer(v, ui)), foot);
}

/// The nodes and links side by side, then the processes.
fn draw_body(frame: &mut Frame<'_>, v: &ViewModel, ui: &UiState, area: Rect) {
    let shown = v.nodes.iter().filter(|n| ui.shows_node(n.node)).count();
    let high = u16::try_from(shown.max(v.links.len().min(8)) + 3).unwrap_or(u16::MAX);
    let groups = u16::try_from(v.cgroups.len()).unwrap_or(u16::MAX);
    let groups = if groups == 0 {
        0
    } else {
        groups.saturating_add(3)
    };
    let [machine, cgroup_area, procs] = Layout::vertical([
        Constraint::Length(high),
        Constraint::Length(groups),
        Constraint::Min(3),
    ])
    .areas(area);
    if groups > 0 {
        frame.render_widget(cgroups(v), cgroup_area);
    }
    if v.links.is_empty() {
        frame.render_widget(nodes(v, ui), machine);
    } else {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)])
                .areas(machine);
        frame.render_widget(nodes(v, ui), left);
        frame.render_widget(links(v), right);
    }
    frame.render_widget(processes(v, ui, procs.height), procs);
}

/// The first three lines: what is watched, its state, and the machine-wide figures.
fn header(v: &ViewModel, ui: &UiState, feed: &Feed) -> Vec<Line<'static>> {
    let (state, why) = match feed {
        Feed::Waiting(why) => ("waiting", Some(why)),
        Feed::Live if ui.paused => ("PAUSED (p resumes)", None),
        Feed::Live => ("live", None),
        Feed::Finished => ("finished (q quits)", None),
        Feed::Gone(why) => ("gone", Some(why)),
    };
    let est = |e: bool| if e { EST } else { "" };
    let figure = |x: Option<f64>, f: &dyn Fn(f64) -> String, e: bool| match x {
        Some(x) => format!("{}{}", est(e), f(x)),
        None => "n/a".to_string(),
    };
    let lar = figure(v.lar, &|x| format!("{:.0}%", 100.0 * x), v.dram_estimated);
    let mc = figure(
        v.mc_imbalance_pct,
        &|x| format!("{x:.0}%"),
        v.dram_estimated,
    );
    let ic = figure(
        v.ic_imbalance_pct,
        &|x| format!("{x:.0}%"),
        v.links_estimated,
    );
    let s = &v.sampling;
    let sources = if s.by_source.is_empty() {
        "none".to_string()
    } else {
        format::tally(&s.by_source)
    };
    let title = if v.source.is_empty() {
        format!("rondpoint top [{state}]")
    } else {
        format!(
            "rondpoint top [{state}]  {}  policy {}  epoch {}  t {:.1} s  epoch length {:.2} s",
            v.source, v.policy, v.epoch, v.time_s, v.epoch_s
        )
    };
    let mut lines = vec![
        Line::styled(title, Style::new().add_modifier(Modifier::BOLD)),
        Line::raw(format!(
            "local access ratio {lar}  MC imbalance {mc}  link imbalance {ic}  sampling: {} \
             samples ({:.0}/s; {sources})",
            s.samples, s.per_s
        )),
        Line::raw(format!(
            "actions this epoch: {}  since start: {}  pages placed {}  failed {}",
            techniques(&v.actions_epoch, "none"),
            techniques(&v.actions_total, "none"),
            v.pages_total,
            v.failed_total
        )),
    ];
    if let Some(why) = why {
        lines.push(Line::styled(
            why.clone(),
            Style::new().add_modifier(Modifier::REVERSED),
        ));
    }
    lines
}

/// Actions per technique, short: "mig 3 ilv 1".
fn techniques(m: &BTreeMap<String, u64>, empty: &str) -> String {
    if m.is_empty() {
        return empty.to_string();
    }
    m.iter()
        .map(|(t, n)| format!("{} {n}", short(t)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A technique's short name (the help screen lists them).
fn short(technique: &str) -> &str {
    match technique {
        "migrate" => "mig",
        "interleave" => "ilv",
        "replicate" => "rep",
        "pin-thread" => "pin",
        "move-application" => "app",
        "set-mempolicy" => "pol",
        "move-node-pages" => "mnp",
        other => other,
    }
}

/// A load bar of `width` cells for a share from 0 to 1.
fn bar(share: f64, width: usize) -> String {
    let full = ((share.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("{}{}", "#".repeat(full), ".".repeat(width - full))
}

/// The node table.
fn nodes<'a>(v: &ViewModel, ui: &UiState) -> Table<'a> {
    let e = if v.dram_estimated { EST } else { "" };
    let rows = v.nodes.iter().filter(|n| ui.shows_node(n.node)).map(|n| {
        let used = n.mem_total_bytes.saturating_sub(n.mem_free_bytes);
        Row::new(vec![
            format::node(n.node),
            format!("{e}{:.1}", n.mc_per_us),
            format!("{e}{:.0}% {}", 100.0 * n.mc_share, bar(n.mc_share, 10)),
            n.local_share
                .map_or("-".to_string(), |l| format!("{e}{:.0}%", 100.0 * l)),
            format!(
                "{} / {}",
                format::bytes(used),
                format::bytes(n.mem_total_bytes)
            ),
        ])
    });
    let title = if v.dram_estimated {
        " nodes (~ estimated) "
    } else {
        " nodes "
    };
    Table::new(
        rows,
        [
            Constraint::Length(7),
            Constraint::Length(9),
            Constraint::Length(16),
            Constraint::Length(7),
            Constraint::Min(19),
        ],
    )
    .header(
        Row::new(vec![
            "node",
            "MC acc/us",
            "MC share",
            "local",
            "memory used / total",
        ])
        .style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(title))
}

/// The link table.
fn links<'a>(v: &ViewModel) -> Table<'a> {
    let e = if v.links_estimated { EST } else { "" };
    let rows = v.links.iter().map(|l| {
        Row::new(vec![
            format!("{}-{}", l.a, l.b),
            format!("{e}{}/s", format::bytes(l.bytes_per_s as u64)),
            l.utilisation.map_or("-".to_string(), |u| {
                format!("{e}{:.0}% {}", 100.0 * u, bar(u, 6))
            }),
        ])
    });
    Table::new(
        rows,
        [
            Constraint::Length(6),
            Constraint::Length(13),
            Constraint::Min(11),
        ],
    )
    .header(
        Row::new(vec!["link", "traffic", "load"]).style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(if v.links_estimated {
        " links (~ estimated) "
    } else {
        " links "
    }))
}

/// The process table, from the scroll position.
fn processes<'a>(v: &ViewModel, ui: &UiState, height: u16) -> Table<'a> {
    let rows = ui.processes(v);
    let fit = usize::from(height.saturating_sub(3)).max(1);
    let first = ui.scroll.min(rows.len().saturating_sub(fit));
    let mut header = vec!["pid".to_string(), "comm".to_string()];
    header.extend(v.nodes.iter().map(|n| format!("pg n{}", n.node)));
    header.extend(["samples", "actions epoch", "actions total"].map(String::from));
    let mut widths = vec![Constraint::Length(8), Constraint::Length(16)];
    widths.extend(v.nodes.iter().map(|_| Constraint::Length(9)));
    widths.extend([
        Constraint::Length(8),
        Constraint::Length(16),
        Constraint::Min(16),
    ]);
    let body = rows.iter().skip(first).take(fit).map(|p| process_row(p));
    let filter = ui
        .filter
        .as_ref()
        .map_or(String::new(), |f| format!(", filter {}", f.describe()));
    let more = if v.processes_total > v.processes.len() {
        format!(" (the {} largest)", v.processes.len())
    } else {
        String::new()
    };
    let title = format!(
        " processes: {} of {}{more}, sorted by {}{filter}{} ",
        rows.len(),
        v.processes_total,
        ui.sort.name(),
        if first > 0 {
            format!(", from row {}", first + 1)
        } else {
            String::new()
        }
    );
    Table::new(body, widths)
        .header(Row::new(header).style(Style::new().add_modifier(Modifier::BOLD)))
        .block(Block::bordered().title(title))
}

/// The `daemon --cgroup` table: each cgroup's processes, pages, samples and actions.
fn cgroups<'a>(v: &ViewModel) -> Table<'a> {
    let mut header = vec!["cgroup".to_string(), "procs".to_string()];
    header.extend(v.nodes.iter().map(|n| format!("pg n{}", n.node)));
    header.extend(["samples", "actions total", "pages placed"].map(String::from));
    let mut widths = vec![Constraint::Length(24), Constraint::Length(6)];
    widths.extend(v.nodes.iter().map(|_| Constraint::Length(9)));
    widths.extend([
        Constraint::Length(8),
        Constraint::Min(16),
        Constraint::Length(12),
    ]);
    let rows = v.cgroups.iter().map(|g| {
        // The end of a long path says which cgroup it is.
        let name = match g.cgroup.char_indices().rev().nth(22) {
            Some((i, _)) => format!("…{}", &g.cgroup[i + 1..]),
            None => g.cgroup.clone(),
        };
        let mut cells = vec![name, g.processes.to_string()];
        cells.extend(g.pages_by_node.iter().map(u64::to_string));
        cells.push(g.samples.to_string());
        cells.push(techniques(&g.actions_total, "-"));
        cells.push(g.pages_placed.to_string());
        Row::new(cells)
    });
    Table::new(rows, widths)
        .header(Row::new(header).style(Style::new().add_modifier(Modifier::BOLD)))
        .block(Block::bordered().title(" cgroups (daemon --cgroup) "))
}

/// One process's row.
fn process_row<'a>(p: &ProcessView) -> Row<'a> {
    let mut cells = vec![p.pid.to_string(), p.comm.clone()];
    cells.extend(p.pages_by_node.iter().map(u64::to_string));
    cells.push(p.samples.to_string());
    cells.push(techniques(&p.actions_epoch, "-"));
    cells.push(techniques(&p.actions_total, "-"));
    Row::new(cells)
}

/// The last two lines: the keys, or the filter being typed, and the legend of estimates.
fn footer(v: &ViewModel, ui: &UiState) -> Vec<Line<'static>> {
    let keys = match &ui.editing {
        Some(text) => format!(
            "filter (n2 or node 2 for a node; a pid or part of a command name): {text}_  \
             Enter applies, Esc cancels"
        ),
        None => "q quit  p/space pause  s sort  / or f filter  Esc clear filter  h/? help  \
                 arrows scroll"
            .to_string(),
    };
    let legend = if v.estimates.is_empty() {
        "~ marks an estimated figure; none are estimated now (all counted or simulated)".to_string()
    } else {
        format!("~ estimated: {}", v.estimates.join("; "))
    };
    vec![Line::raw(keys), Line::raw(legend)]
}

/// The help screen.
fn help() -> Paragraph<'static> {
    let text = [
        "Keys",
        "  q, Ctrl-C     quit (the terminal is restored)",
        "  p, space      pause: the screen stays as it is (a simulation waits)",
        "  s             sort processes by the next column: pages, samples, actions this",
        "                epoch, actions in total, pid, comm",
        "  / or f        filter: n2 (or node 2) shows node 2 and the processes with pages",
        "                there; a pid or part of a command name shows those processes",
        "  Esc           clear the filter",
        "  arrows, j/k   scroll the processes; PgUp/PgDn by ten, Home to the top",
        "  h, ?          this help (any key closes it)",
        "",
        "Columns (docs/top.md)",
        "  MC acc/us     DRAM accesses per microsecond the node's memory controller served",
        "  MC share      its share of the machine's DRAM accesses, with a bar",
        "  local         of those accesses, the share made by the node's own CPUs",
        "  link traffic  bytes per second over a link, both ways; load: the busier",
        "                direction's share of its capacity, when known",
        "  pg nN         a process's resident 4 KiB pages on node N",
        "  samples       its sampled accesses in the last epoch",
        "  actions       placement actions on it: mig migrate, ilv interleave, rep replicate,",
        "                pin pin-thread, app move-application, pol set-mempolicy,",
        "                mnp move-node-pages",
        "",
        "A figure marked ~ was estimated, not counted (the legend says how); n/a: not measured.",
    ];
    Paragraph::new(text.map(Line::raw).to_vec())
        .wrap(Wrap { trim: false })
        .block(Block::bordered().title(" help "))
}
