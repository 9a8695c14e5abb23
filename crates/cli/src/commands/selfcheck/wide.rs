//! The self-check's system-wide part: rondpoint's memory-controller counters against
//! `perf stat -a` over a second walk. The workload starts and waits; perf stat counts the
//! machine from when its events are open; rondpoint opens its counters after perf's (one per
//! memory-controller unit on each CPU of the unit's `cpumask`, as `run` and `daemon` open
//! them), the walk runs, rondpoint reads its counters once the workload has exited, and then
//! stops perf (SIGINT). rondpoint's interval lies within perf's, a few milliseconds shorter at
//! each end: with a walk of some gigabytes, the traffic of those milliseconds is far below the
//! tolerance.
//!
//! On a machine without memory-controller counters, the same run with page faults on every
//! CPU (`--self-check-software`) tests this path.

use super::{
    Compared, SEPARATOR, await_ready, parse_perf_csv, verdict, wait_for_events, wait_with_deadline,
    walk, with_workload,
};
use anyhow::{Context, Result};
use rondpoint_linux::pmu::Pmu;
use rondpoint_linux::pmu::attrs::{self, CpuIdent, Target};
use rondpoint_linux::pmu::events::{Encoding, Signal};
use rondpoint_linux::sys::{PerfAttr, PerfFd, RealSys, Sys};
use rondpoint_model::Pid;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How far rondpoint's system-wide counts may be from perf's (percent): both count the
/// machine, over intervals a few milliseconds apart; chosen.
pub(super) const WIDE_TOLERANCE_PCT: f64 = 5.0;

/// One system-wide event: perf's name for it, rondpoint's attr, the CPUs both open it on,
/// and the row its count adds to.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct WideEvent {
    pub perf: String,
    pub attr: PerfAttr,
    pub cpus: Vec<i32>,
    pub row: &'static str,
}

/// The memory-controller events of a machine's plan: every unit's reads and writes, on the
/// CPUs of its `cpumask` (one per socket). None where the machine has none.
pub(super) fn controller_events(pmus: &[Pmu], cpu: Option<&CpuIdent>) -> Vec<WideEvent> {
    attrs::plan(pmus, cpu)
        .attrs
        .into_iter()
        .filter(|a| a.target == Target::Cpu)
        .filter_map(|a| {
            let row = match a.event.signal {
                Signal::McReads => "mc-reads",
                Signal::McWrites => "mc-writes",
                _ => return None,
            };
            let Encoding::Terms(terms) = a.event.encoding else {
                return None;
            };
            let cpus = pmus
                .iter()
                .find(|p| p.name == a.unit)
                .and_then(|p| p.cpus.clone())
                .unwrap_or_default()
                .into_iter()
                .filter_map(|c| i32::try_from(c.0).ok())
                .collect::<Vec<_>>();
            (!cpus.is_empty()).then(|| WideEvent {
                perf: format!("{}/{terms}/", a.unit),
                attr: a.attr,
                cpus,
                row,
            })
        })
        .collect()
}

/// Page faults on every CPU of `cpus`, user and kernel: perf's `page-faults` with `-a`.
pub(super) fn page_fault_events(cpus: &[u32]) -> Vec<WideEvent> {
    vec![WideEvent {
        perf: "page-faults".into(),
        attr: PerfAttr {
            kind: 1,   // PERF_TYPE_SOFTWARE
            config: 2, // PERF_COUNT_SW_PAGE_FAULTS
            ..PerfAttr::default()
        },
        cpus: cpus.iter().filter_map(|&c| i32::try_from(c).ok()).collect(),
        row: "page-faults (all CPUs)",
    }]
}

/// Counts a walk with `events` (rondpoint's) and `perf stat -a`, and compares each row's sum.
pub(super) fn count(sys: &mut RealSys, perf: &Path, events: &[WideEvent]) -> Result<Vec<Compared>> {
    with_workload(super::WORKLOAD_MIB, |child| {
        let names: Vec<&str> = events.iter().map(|e| e.perf.as_str()).collect();
        let mut perf_child = Command::new(perf)
            .args(["stat", "-a", "-x", SEPARATOR, "-e", &names.join(",")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting perf stat -a")?;
        let result = count_with(sys, events, child, &mut perf_child);
        let _ = perf_child.kill();
        let _ = perf_child.wait();
        result
    })
}

fn count_with(
    sys: &mut RealSys,
    events: &[WideEvent],
    child: &mut Child,
    perf: &mut Child,
) -> Result<Vec<Compared>> {
    await_ready(child)?;
    let fds_wanted = events.iter().map(|e| e.cpus.len()).sum();
    wait_for_events(perf, fds_wanted)?;
    let mut fds: Vec<(usize, PerfFd)> = Vec::new();
    let opened = open_all(sys, events, &mut fds);
    if let Err(e) = opened {
        for (_, fd) in fds {
            sys.perf_close(fd);
        }
        return Err(e);
    }
    let status = walk(child)?;
    let mut ours = vec![0u64; events.len()];
    for (i, fd) in fds {
        let count = sys.perf_read(fd).map(|r| r.scaled_total()).unwrap_or(0);
        ours[i] = ours[i].saturating_add(count);
        sys.perf_close(fd);
    }
    let perf_pid = Pid(i32::try_from(perf.id()).context("perf's pid")?);
    sys.kill(perf_pid, signal_hook::consts::SIGINT)
        .map_err(|e| anyhow::anyhow!("stopping perf stat: {e}"))?;
    if !wait_with_deadline(perf, Duration::from_secs(10))? {
        anyhow::bail!("perf stat -a did not stop on SIGINT");
    }
    if !status.success() {
        anyhow::bail!("the workload failed: {status}");
    }
    let mut text = String::new();
    if let Some(mut e) = perf.stderr.take() {
        e.read_to_string(&mut text)
            .context("reading perf stat's output")?;
    }
    Ok(rows(events, &ours, &parse_perf_csv(&text)))
}

/// Opens every event on each of its CPUs (system-wide), noting which event each fd counts.
fn open_all(sys: &mut RealSys, events: &[WideEvent], fds: &mut Vec<(usize, PerfFd)>) -> Result<()> {
    for (i, e) in events.iter().enumerate() {
        for &cpu in &e.cpus {
            let fd = sys.perf_open(&e.attr, Pid(-1), cpu).map_err(|errno| {
                anyhow::anyhow!("perf_event_open of {} on CPU {cpu}: {errno}", e.perf)
            })?;
            fds.push((i, fd));
        }
    }
    Ok(())
}

/// Each row's sum of rondpoint's counts (`ours`, per event) against the sum of perf's for the
/// same events (by name; by position when perf printed one line per event under other
/// names). A row one of whose events perf did not count has no perf count.
fn rows(events: &[WideEvent], ours: &[u64], counted: &[(String, Option<u64>)]) -> Vec<Compared> {
    let theirs = |i: usize, e: &WideEvent| -> Option<u64> {
        match counted.iter().find(|(name, _)| *name == e.perf) {
            Some((_, v)) => *v,
            None if counted.len() == events.len() => counted[i].1,
            None => None,
        }
    };
    let mut names: Vec<&'static str> = Vec::new();
    for e in events {
        if !names.contains(&e.row) {
            names.push(e.row);
        }
    }
    names
        .into_iter()
        .map(|row| {
            let mut sum_ours = 0u64;
            let mut sum_theirs = Some(0u64);
            for (i, e) in events.iter().enumerate().filter(|(_, e)| e.row == row) {
                sum_ours = sum_ours.saturating_add(ours[i]);
                sum_theirs = sum_theirs
                    .zip(theirs(i, e))
                    .map(|(a, b)| a.saturating_add(b));
            }
            verdict(row.to_string(), sum_ours, sum_theirs, WIDE_TOLERANCE_PCT)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_linux::pmu;
    use rondpoint_linux::sysfs::SysfsRoot;

    fn fixture(name: &str) -> Vec<Pmu> {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../linux/tests/fixtures/pmu")
            .join(name);
        pmu::detect(&SysfsRoot::new(&root)).unwrap()
    }

    #[test]
    fn each_memory_controller_unit_is_counted_on_its_cpumask() {
        let events = controller_events(&fixture("spr-xeon-2s"), None);
        // Eight IMC units, reads and writes each, on both sockets' CPUs.
        assert_eq!(events.len(), 16);
        let first = &events[0];
        assert_eq!(first.perf, "uncore_imc_0/cas_count_read/");
        assert_eq!(first.row, "mc-reads");
        assert_eq!(first.cpus.len(), 2, "{:?}", first.cpus);
        assert!(events.iter().any(|e| e.row == "mc-writes"));
        // No memory-controller PMU: nothing.
        assert!(controller_events(&fixture("vm-no-pmu"), None).is_empty());
    }

    #[test]
    fn rows_sum_their_units_and_match_perf_by_name_or_position() {
        let event = |perf: &str, row| WideEvent {
            perf: perf.into(),
            attr: PerfAttr::default(),
            cpus: vec![0],
            row,
        };
        let events = [
            event("a/x/", "mc-reads"),
            event("b/x/", "mc-reads"),
            event("a/y/", "mc-writes"),
        ];
        let counted = vec![
            ("a/x/".to_string(), Some(1_000)),
            ("b/x/".to_string(), Some(2_000)),
            ("a/y/".to_string(), Some(50_000)),
        ];
        let got = rows(&events, &[1_010, 2_000, 60_000], &counted);
        let summary: Vec<(&str, u64, Option<u64>, bool)> = got
            .iter()
            .map(|c| (c.event.as_str(), c.rondpoint, c.perf, c.ok))
            .collect();
        assert_eq!(
            summary,
            [
                ("mc-reads", 3_010, Some(3_000), true),
                ("mc-writes", 60_000, Some(50_000), false)
            ]
        );
        // perf's names differ (it rewrote the terms): matched by position.
        let renamed: Vec<(String, Option<u64>)> = counted
            .iter()
            .map(|(n, v)| (format!("{n}renamed"), *v))
            .collect();
        assert_eq!(
            rows(&events, &[1_000, 2_000, 50_000], &renamed)[0].perf,
            Some(3_000)
        );
        // One not counted: the row has no perf count, and does not agree.
        let missing = vec![
            ("a/x/".to_string(), Some(1_000)),
            ("b/x/".to_string(), None),
        ];
        let row = &rows(&events, &[1_000, 2_000, 50_000], &missing)[0];
        assert_eq!((row.perf, row.ok), (None, false));
    }
}
