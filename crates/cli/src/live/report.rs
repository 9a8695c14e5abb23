//! The end report of a live run or daemon, like `perf stat`'s.

use crate::format;
use crate::live::LiveOptions;
use anyhow::Result;
use rondpoint_engine::Accounting;
use rondpoint_linux::capabilities;
use rondpoint_linux::machine::{LinuxMachine, LiveStats, Signals};
use rondpoint_linux::sys::RealSys;
use serde::Serialize;
use std::fmt::{Display, Write as _};
use std::time::Instant;

/// Why a machine with a single NUMA node is not managed.
pub const ONE_NODE: &str = "this machine has a single NUMA node: there is nothing to manage";

/// The report of a run or daemon on a machine with nothing to manage (a single node): the
/// program ran unchanged.
#[derive(Debug, Serialize)]
pub struct Unmanaged {
    /// Always false: nothing was observed or placed.
    pub managed: bool,
    pub reason: String,
    pub command: Vec<String>,
    pub policy: String,
    pub exit: Option<String>,
    pub wall_s: f64,
    pub notes: Vec<String>,
}

impl Unmanaged {
    /// The report of an unmanaged run of `command` (empty for the daemon).
    pub fn new(
        options: &LiveOptions,
        command: Vec<String>,
        exit: Option<String>,
        started: Instant,
        notes: Vec<String>,
    ) -> Self {
        Self {
            managed: false,
            reason: ONE_NODE.into(),
            command,
            policy: options.policy.clone(),
            exit,
            wall_s: started.elapsed().as_secs_f64(),
            notes,
        }
    }

    /// Prints the report as JSON on stdout (the notes on stderr said the rest already).
    pub fn print_json(&self) -> Result<()> {
        outln!("{}", serde_json::to_string_pretty(self)?);
        Ok(())
    }
}

/// The end report.
#[derive(Debug, Serialize)]
pub struct RunReport {
    /// Always true here ([`Unmanaged`] says false).
    pub managed: bool,
    pub command: Vec<String>,
    pub policy: String,
    pub dry_run: bool,
    pub exit: Option<String>,
    pub wall_s: f64,
    pub epochs: u64,
    pub signals: Signals,
    pub stats: LiveStats,
    pub actions: Accounting,
    pub rondpoint_cpu_s: f64,
    pub rondpoint_peak_rss_bytes: u64,
    pub notes: Vec<String>,
}

impl RunReport {
    /// The report of a finished live run, with notes on what limited what it could see.
    pub fn new(
        options: &LiveOptions,
        command: Vec<String>,
        exit: Option<String>,
        started: Instant,
        actions: Accounting,
        machine: &mut LinuxMachine<RealSys>,
        mut notes: Vec<String>,
    ) -> Self {
        let (cpu_ns, rss) = machine.own_usage();
        let signals = machine.signals();
        if let Some(e) = &signals.sampler_error {
            notes.push(format!("no samples: {e}"));
        }
        if let Some(e) = &signals.counters_error {
            notes.push(format!("no hardware counters: {e}"));
        }
        if let Some(e) = &signals.dram_counters_error {
            notes.push(format!("DRAM loads estimated from samples: {e}"));
        }
        let stats = machine.stats();
        if let Some(e) = &stats.lock_error {
            notes.push(format!(
                "managed nothing: the per-process locks could not be taken ({e})"
            ));
        }
        if !stats.managed_elsewhere.is_empty() {
            let list: Vec<String> = stats
                .managed_elsewhere
                .iter()
                .map(|(p, holder)| match holder {
                    Some(h) => format!("{p} (by rondpoint {h})"),
                    None => p.to_string(),
                })
                .collect();
            notes.push(format!(
                "left alone, managed by another rondpoint: {}",
                list.join(", ")
            ));
        }
        let mode = signals.numa_balancing;
        if capabilities::tiering_only(mode) {
            notes.push(
                "kernel.numa_balancing=2 (memory tiering alone): NUMA hinting faults were \
                 sampled only on slower-tier memory, first touches elsewhere (set it to 3 to \
                 sample hinting faults on every node)"
                    .into(),
            );
        } else if !capabilities::balances(mode) {
            notes.push(
                "kernel.numa_balancing is neither 1 nor 3: only first-touch page faults were \
                 sampled, so later accesses were not seen (set it to 1, or 3 with memory \
                 tiering, to sample NUMA hinting faults)"
                    .into(),
            );
        }
        Self {
            managed: true,
            command,
            policy: options.policy.clone(),
            dry_run: options.dry_run,
            exit,
            wall_s: started.elapsed().as_secs_f64(),
            epochs: actions.epochs,
            signals: signals.clone(),
            stats,
            actions,
            rondpoint_cpu_s: cpu_ns as f64 / 1e9,
            rondpoint_peak_rss_bytes: rss,
            notes,
        }
    }

    /// Prints the report: JSON on stdout, or the table on stderr.
    pub fn print(&self, json: bool) -> Result<()> {
        if json {
            outln!("{}", serde_json::to_string_pretty(self)?);
        } else {
            note!("{}", render(self));
        }
        Ok(())
    }
}

fn pages_row(label: &str, pages: &Option<Vec<u64>>) -> Vec<String> {
    let mut row = vec![label.to_string()];
    match pages {
        Some(p) => {
            let total: u64 = p.iter().sum::<u64>().max(1);
            row.extend(p.iter().map(|&x| {
                format!(
                    "{} ({:.0}%)",
                    format::bytes(x * 4096),
                    100.0 * x as f64 / total as f64
                )
            }));
        }
        None => row.push("-".into()),
    }
    row
}

/// The human-readable end report.
pub fn render(r: &RunReport) -> String {
    let mut out = String::new();
    header(&mut out, r);
    samples(&mut out, r);
    actions(&mut out, &r.actions);
    placement(&mut out, &r.stats);
    footer(&mut out, r);
    out
}

/// The end report's width: its longer lines wrap under their text.
const WIDTH: usize = 100;

/// One line of the figures column, `perf stat` style: the figure right-aligned, then what it
/// is, wrapped at [`WIDTH`] under itself.
fn stat(out: &mut String, figure: impl Display, what: impl Display) {
    let first = format!("   {figure:>12}   ");
    let rest = " ".repeat(first.len() + 2);
    wrapped(out, &format!("{first}{what}"), &rest);
}

/// `text` wrapped at [`WIDTH`], its continuation lines indented with `indent`.
fn wrapped(out: &mut String, text: &str, indent: &str) {
    let options = textwrap::Options::new(WIDTH).subsequent_indent(indent);
    for line in textwrap::wrap(text, options) {
        let _ = writeln!(out, "{line}");
    }
}

/// What ran, under which policy, for how long, and how it ended.
fn header(out: &mut String, r: &RunReport) {
    let _ = writeln!(
        out,
        "\n rondpoint report for '{}' (policy {}{}):\n",
        r.command.join(" "),
        r.policy,
        if r.dry_run {
            ", dry run: nothing was changed"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "   {:>12.3} s wall time, {} epochs",
        r.wall_s, r.epochs
    );
    stat(
        out,
        "",
        format_args!("program {}", r.exit.as_deref().unwrap_or("still running")),
    );
}

/// How many samples there were, from where, and what was estimated rather than counted.
fn samples(out: &mut String, r: &RunReport) {
    stat(
        out,
        r.stats.samples,
        format_args!(
            "samples ({} drained during epochs, {} lost, sampler throttled {} times), from {}",
            r.stats.samples_drained,
            r.stats.lost_samples,
            r.stats.sampler_throttled,
            r.signals.sampler.as_deref().unwrap_or("no sampler")
        ),
    );
    if !r.signals.estimated.is_empty() {
        stat(
            out,
            "",
            format_args!("estimated, not counted: {}", r.signals.estimated.join("; ")),
        );
    }
    if !r.signals.missing.is_empty() {
        stat(
            out,
            "",
            format_args!("not measured: {}", r.signals.missing.join(", ")),
        );
    }
}

/// The placement actions per technique, and why pages were not placed.
fn actions(out: &mut String, actions: &Accounting) {
    for (t, totals) in &actions.by_technique {
        stat(
            out,
            "",
            format_args!(
                "{t}: {} actions ({} applied, {} partial, {} failed, {} skipped, {} substituted), \
                 {} pages placed ({} moved, {} already there), {} copied",
                totals.actions,
                totals.applied,
                totals.partial,
                totals.failed,
                totals.skipped,
                totals.substituted,
                totals.pages_done,
                totals.pages_moved,
                totals.pages_done.saturating_sub(totals.pages_moved),
                format::bytes(totals.bytes_copied)
            ),
        );
        if !totals.pages_failed_by_reason.is_empty() {
            stat(
                out,
                "",
                format_args!(
                    "{t}: pages not placed: {}",
                    format::tally(&totals.pages_failed_by_reason)
                ),
            );
        }
    }
    if actions.by_technique.is_empty() {
        stat(out, "", "no placement actions");
    }
    for how in &actions.reduced {
        stat(out, "", format_args!("approximated: {how}"));
    }
    for note in &actions.notes {
        stat(out, "", format_args!("policy: {note}"));
    }
    for (by, t) in &actions.reasons {
        stat(
            out,
            "",
            format_args!(
                "why: {by}: {} actions ({}); last on: {}",
                t.actions,
                format::tally(&t.by_technique),
                t.last_evidence
            ),
        );
        if let Some(x) = &t.last_expected {
            stat(out, "", format_args!("why: {by}: expected: {x}"));
        }
    }
    for when in &actions.deferred {
        stat(out, "", format_args!("start: {when}"));
    }
}

/// Where the managed processes' pages were, per node, at the first and the last epoch.
fn placement(out: &mut String, stats: &LiveStats) {
    let n = stats
        .pages_first
        .as_ref()
        .or(stats.pages_last.as_ref())
        .map_or(0, Vec::len);
    if n == 0 {
        return;
    }
    let columns: Vec<String> = (0..n).map(format::node).collect();
    let table = format::labelled_table(
        "placement",
        &columns,
        vec![
            pages_row("first epoch", &stats.pages_first),
            pages_row("last epoch", &stats.pages_last),
        ],
    );
    out.push('\n');
    for line in table.lines() {
        let _ = writeln!(out, "   {line}");
    }
}

/// Locality, the kernel's own balancing, rondpoint's cost, and the notes.
fn footer(out: &mut String, r: &RunReport) {
    let lar = |v: Option<f64>| format::dash(v.map(|x| format!("{:.0}%", 100.0 * x)));
    let _ = writeln!(
        out,
        "\n   local access ratio of sampled accesses: {} first epoch, {} last epoch",
        lar(r.stats.lar_first),
        lar(r.stats.lar_last)
    );
    if let Some(k) = r.stats.kernel_balancing {
        let _ = writeln!(
            out,
            "   kernel NUMA balancing meanwhile (whole machine): {} hinting faults, {} pages \
             migrated by the kernel",
            k.hint_faults, k.pages_migrated
        );
    }
    let _ = writeln!(
        out,
        "   rondpoint itself: {:.3} s CPU ({:.2}% of one core), {} peak memory",
        r.rondpoint_cpu_s,
        100.0 * r.rondpoint_cpu_s / r.wall_s.max(1e-9),
        format::bytes(r.rondpoint_peak_rss_bytes)
    );
    for n in &r.notes {
        wrapped(out, &format!("   note: {n}"), "         ");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_engine::TechniqueTotals;
    use rondpoint_linux::machine::KernelBalancing;

    /// A report with every optional part present.
    fn full() -> RunReport {
        let mut actions = Accounting {
            epochs: 12,
            reduced: vec![
                "carrefour: for controller imbalance (node-traffic): from samples".into(),
            ],
            deferred: vec!["1 start decision (move-application) carried out at epoch 0".into()],
            ..Accounting::default()
        };
        actions.by_technique.insert(
            "interleave".into(),
            TechniqueTotals {
                actions: 3,
                applied: 2,
                partial: 1,
                pages_done: 5000,
                pages_moved: 4000,
                bytes_copied: 4000 * 4096,
                pages_failed_by_reason: [("EBUSY".to_string(), 7), ("ENOENT".to_string(), 2)]
                    .into(),
                ..TechniqueTotals::default()
            },
        );
        actions.by_technique.insert(
            "migrate".into(),
            TechniqueTotals {
                actions: 1,
                failed: 1,
                skipped: 4,
                substituted: 2,
                ..TechniqueTotals::default()
            },
        );
        RunReport {
            managed: true,
            command: vec!["memhog".into(), "1g".into()],
            policy: "carrefour".into(),
            dry_run: true,
            exit: Some("exit code 0".into()),
            wall_s: 2.5,
            epochs: 12,
            signals: Signals {
                sampler: Some("IBS".into()),
                sampler_error: None,
                numa_balancing: Some(1),
                estimated: vec!["cycles".into(), "DRAM traffic".into()],
                missing: vec!["instructions".into(), "LLC misses".into()],
                counters_error: None,
                dram_counters_error: None,
            },
            stats: LiveStats {
                samples: 1234,
                samples_drained: 1200,
                lost_samples: 3,
                sampler_throttled: 1,
                pages_first: Some(vec![1000, 0, 24, 0]),
                pages_last: Some(vec![256, 256, 256, 256]),
                lar_first: Some(0.25),
                lar_last: None,
                refused_unmanaged: 0,
                managed_elsewhere: Vec::new(),
                lock_error: None,
                kernel_balancing: Some(KernelBalancing {
                    hint_faults: 10,
                    pages_migrated: 4,
                }),
            },
            actions,
            rondpoint_cpu_s: 0.125,
            rondpoint_peak_rss_bytes: 6 << 20,
            notes: vec!["first note".into(), "second note".into()],
        }
    }

    #[test]
    fn full_report_renders_every_part() {
        let got = render(&full());
        assert_eq!(
            got,
            r#"
 rondpoint report for 'memhog 1g' (policy carrefour, dry run: nothing was changed):

          2.500 s wall time, 12 epochs
                  program exit code 0
           1234   samples (1200 drained during epochs, 3 lost, sampler throttled 1 times), from IBS
                  estimated, not counted: cycles; DRAM traffic
                  not measured: instructions, LLC misses
                  interleave: 3 actions (2 applied, 1 partial, 0 failed, 0 skipped, 0 substituted),
                    5000 pages placed (4000 moved, 1000 already there), 15.6 MiB copied
                  interleave: pages not placed: 7 EBUSY, 2 ENOENT
                  migrate: 1 actions (0 applied, 0 partial, 1 failed, 4 skipped, 2 substituted), 0
                    pages placed (0 moved, 0 already there), 0 B copied
                  approximated: carrefour: for controller imbalance (node-traffic): from samples
                  start: 1 start decision (move-application) carried out at epoch 0

   placement            node0          node1          node2          node3
   first epoch  3.9 MiB (98%)       0 B (0%)  96.0 KiB (2%)       0 B (0%)
   last epoch   1.0 MiB (25%)  1.0 MiB (25%)  1.0 MiB (25%)  1.0 MiB (25%)

   local access ratio of sampled accesses: 25% first epoch, - last epoch
   kernel NUMA balancing meanwhile (whole machine): 10 hinting faults, 4 pages migrated by the kernel
   rondpoint itself: 0.125 s CPU (5.00% of one core), 6.0 MiB peak memory
   note: first note
   note: second note
"#
        );
    }

    #[test]
    fn bare_report_says_what_is_missing() {
        let r = RunReport {
            dry_run: false,
            exit: None,
            signals: Signals::default(),
            stats: LiveStats::default(),
            actions: Accounting::default(),
            notes: Vec::new(),
            ..full()
        };
        let got = render(&r);
        assert_eq!(
            got,
            r#"
 rondpoint report for 'memhog 1g' (policy carrefour):

          2.500 s wall time, 12 epochs
                  program still running
              0   samples (0 drained during epochs, 0 lost, sampler throttled 0 times), from no
                    sampler
                  no placement actions

   local access ratio of sampled accesses: - first epoch, - last epoch
   rondpoint itself: 0.125 s CPU (5.00% of one core), 6.0 MiB peak memory
"#
        );
    }

    #[test]
    fn placement_without_a_first_epoch_shows_a_dash() {
        let mut r = full();
        r.stats.pages_first = None;
        let got = render(&r);
        assert!(
            got.contains(
                "\n   placement            node0          node1          node2          node3\n   \
                 first epoch              -\n   last epoch   1.0 MiB (25%)  1.0 MiB (25%)  \
                 1.0 MiB (25%)  1.0 MiB (25%)\n\n"
            ),
            "{got}"
        );
    }
}
