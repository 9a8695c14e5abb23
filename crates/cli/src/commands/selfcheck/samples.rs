//! The self-check's samples: rondpoint's sampler, as `run` and `daemon` use it (the live
//! machine managing the workload, at one period), against `perf record` of the same events on
//! the same walk. The number of samples whose data address falls in the walked buffer must
//! agree.
//!
//! With precise sampling (IBS op, PEBS, SPE: what the machine opens here), both sample every
//! [`PERIOD`] events system-wide (`perf record -a`, the plan's perf options); they start and
//! stop a few milliseconds apart, hence a tolerance. Without it (and with
//! `--self-check-software`), rondpoint's page-fault sampler takes every fault of the workload,
//! as `perf record -e page-faults -c 1 -p PID` does: a smaller walk ([`FAULT_MIB`]), whose
//! faults fit in the sampler's ring between two drains.

use super::{Compared, await_ready, verdict, wait_with_deadline, with_workload};
use anyhow::{Context, Result};
use rondpoint_engine::Machine;
use rondpoint_linux::machine::{LinuxMachine, LiveConfig};
use rondpoint_linux::pmu::attrs::{self, CpuIdent, PlannedAttr};
use rondpoint_linux::pmu::events::PRECISE_PERIOD;
use rondpoint_linux::pmu::events::Signal;
use rondpoint_linux::pmu::{Pmu, PmuKind};
use rondpoint_linux::sys::{RealSys, Sys};
use rondpoint_model::{Pid, SamplingRequest, Topology};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The sampling period (events): the plan's, which its perf options give perf (`-c`).
const PERIOD: u64 = PRECISE_PERIOD;

/// MiB the page-fault comparison walks: 4,096 faults, within the sampler's ring.
pub(super) const FAULT_MIB: usize = 16;

/// How far rondpoint's count of samples in the buffer may be from perf's (percent): precise
/// samplers start and stop apart (chosen); every fault is sampled, so page faults agree to
/// the fault, give or take the walk's first one.
const PRECISE_TOLERANCE_PCT: f64 = 10.0;
const FAULT_TOLERANCE_PCT: f64 = 1.0;

/// The catalogue's name of Sapphire Rapids' load-latency group leader.
const AUX_LEADER: &str = "mem-loads-aux";

/// How often rondpoint drains its sampler during the walk.
const DRAIN_EVERY: Duration = Duration::from_millis(20);

/// How perf records the workload's samples.
struct PerfRecord {
    /// `perf record` arguments before `-o FILE`.
    args: Vec<String>,
    /// More `perf script` arguments.
    script: Vec<String>,
    /// The row's name.
    row: String,
    tolerance_pct: f64,
}

/// What perf is asked to record: the machine's precise events with the plan's options, or
/// page faults of the workload.
fn perf_record(precise: &[&PlannedAttr], pid: Pid, mib: usize) -> PerfRecord {
    if precise.is_empty() {
        return PerfRecord {
            args: ["record", "-q", "-e", "page-faults", "-c", "1", "-d", "-p"]
                .map(String::from)
                .into_iter()
                .chain([pid.0.to_string()])
                .collect(),
            script: Vec::new(),
            row: format!("samples in a {mib} MiB walk (page faults)"),
            tolerance_pct: FAULT_TOLERANCE_PCT,
        };
    }
    // The options of every event's mode, once each (-W for PEBS loads applies to all).
    let mut options: Vec<String> = Vec::new();
    let mut events = Vec::new();
    let mut leader = None;
    for a in precise {
        let (event, opts) = a.perf_command();
        // The modes share `record -c PERIOD -d --sample-cpu`; flags of one (-W, -R) are added.
        if options.is_empty() {
            options = opts.split_whitespace().map(String::from).collect();
        }
        for o in opts.split_whitespace() {
            if o.starts_with('-') && !options.iter().any(|x| x == o) {
                options.push(o.to_string());
            }
        }
        if a.event.name == AUX_LEADER {
            leader = Some(event);
        } else {
            events.push((a.event.signal, event));
        }
    }
    // Sapphire Rapids' load latency needs its leader in the same group, as perf mem asks.
    let events: Vec<String> = events
        .into_iter()
        .map(|(signal, e)| match (&leader, signal) {
            (Some(l), Signal::PreciseLoads) => format!("{{{l},{e}}}"),
            _ => e,
        })
        .collect();
    let mut all = options;
    all.extend(["-q", "-a", "-e"].map(String::from));
    all.push(events.join(","));
    // perf script turns SPE's trace into one sample per memory operation with `m`.
    let spe = precise.iter().any(|a| a.event.pmu == PmuKind::Spe);
    PerfRecord {
        args: all,
        script: if spe {
            vec!["--itrace=m".into()]
        } else {
            Vec::new()
        },
        row: format!(
            "samples in a {mib} MiB walk ({})",
            precise
                .iter()
                .map(|a| a.event.name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        tolerance_pct: PRECISE_TOLERANCE_PCT,
    }
}

/// The precise events of this machine's plan that rondpoint's sampler opens.
pub(super) fn precise_events(pmus: &[Pmu], cpu: Option<&CpuIdent>) -> Vec<PlannedAttr> {
    attrs::plan(pmus, cpu)
        .attrs
        .into_iter()
        .filter(|a| matches!(a.event.signal, Signal::PreciseLoads | Signal::PreciseStores))
        .collect()
}

/// Walks a buffer with rondpoint's sampler and `perf record` both on; compares their samples
/// in it. `precise`: the machine's precise events, empty for page faults.
pub(super) fn compare(
    perf: &Path,
    topology: Topology,
    precise: &[PlannedAttr],
) -> Result<Compared> {
    let mib = if precise.is_empty() {
        FAULT_MIB
    } else {
        super::WORKLOAD_MIB
    };
    let dir = tempdir()?;
    let result = with_workload(mib, |child| {
        await_ready(child)?;
        let pid = Pid(i32::try_from(child.id()).context("the workload's pid")?);
        let events: Vec<&PlannedAttr> = precise.iter().collect();
        let record = perf_record(&events, pid, mib);
        sample_both(perf, topology, &record, child, pid, &dir)
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn tempdir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("rondpoint-self-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

fn sample_both(
    perf: &Path,
    topology: Topology,
    record: &PerfRecord,
    child: &mut Child,
    pid: Pid,
    dir: &Path,
) -> Result<Compared> {
    let mut machine =
        LinuxMachine::to_manage(RealSys::new(), topology, LiveConfig::default(), vec![pid]);
    machine.set_sampling(&SamplingRequest {
        period_cycles: Some(PERIOD),
        ..SamplingRequest::NONE
    });
    // The first observation attaches the sampler to the workload.
    machine.observe(0).context("observing the workload")?;
    let data = dir.join("perf.data");
    let mut perf_child = Command::new(perf)
        .args(&record.args)
        .arg("-o")
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting perf record")?;
    if let Err(e) = wait_until_open(&mut perf_child) {
        let _ = perf_child.kill();
        let _ = perf_child.wait();
        return Err(e);
    }
    // perf is stopped whatever the walk did: perf record -a would not end by itself.
    let walked = walk_sampled(&mut machine, child, pid);
    let stopped = stop(&mut perf_child);
    let (ours, buffer) = walked?;
    stopped?;
    let script = Command::new(perf)
        .args(["script", "-F", "pid,addr"])
        .args(&record.script)
        .arg("-i")
        .arg(&data)
        .output()
        .context("running perf script")?;
    if !script.status.success() {
        anyhow::bail!(
            "perf script could not read what perf record wrote ({}): {}",
            script.status,
            String::from_utf8_lossy(&script.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&script.stdout);
    let theirs = in_buffer(&samples_of(&text, pid), buffer);
    let ours = in_buffer(&ours, buffer);
    let mut row = verdict(record.row.clone(), ours, Some(theirs), record.tolerance_pct);
    // The near-zero allowance of counters does not apply: a handful of samples is a failure.
    row.ok = theirs > 0
        && row
            .difference_pct
            .is_some_and(|d| d.abs() <= row.tolerance_pct);
    Ok(row)
}

/// Waits until perf holds perf_event descriptors and their number has not changed for 200 ms
/// (perf opens one per CPU and event, then starts).
fn wait_until_open(perf: &mut Child) -> Result<()> {
    super::wait_for_perf(perf, "perf record", |n, steady| {
        n > 0 && steady >= Duration::from_millis(200)
    })
}

/// Starts the walk and drains rondpoint's samples of the workload until it has walked (it
/// then says where its buffer is and waits), and once more after: the sampled data
/// addresses, and the buffer (start, length).
fn walk_sampled(
    machine: &mut LinuxMachine<RealSys>,
    child: &mut Child,
    pid: Pid,
) -> Result<(Vec<u64>, (u64, u64))> {
    let mut stdin = child
        .stdin
        .take()
        .context("the workload's standard input")?;
    stdin
        .write_all(b"g")
        .and_then(|()| stdin.flush())
        .context("starting the workload's walk")?;
    let stdout = child
        .stdout
        .take()
        .context("the workload's standard output")?;
    let reader = std::thread::spawn(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    });
    let mut addrs = Vec::new();
    let mut drain = |m: &mut LinuxMachine<RealSys>| -> Result<()> {
        let o = m.observe(0).context("observing the workload")?;
        addrs.extend(o.samples.iter().filter(|s| s.pid == pid).map(|s| s.addr));
        Ok(())
    };
    while !reader.is_finished() {
        std::thread::sleep(DRAIN_EVERY);
        drain(machine)?;
    }
    drain(machine)?;
    let line = reader
        .join()
        .map_err(|_| anyhow::anyhow!("reading the workload's buffer"))?
        .context("reading the workload's buffer")?;
    // The workload exits when its standard input closes.
    drop(stdin);
    let buffer = parse_walked(&line)
        .with_context(|| format!("the workload said '{}', not where it walked", line.trim()))?;
    Ok((addrs, buffer))
}

/// Stops perf record (SIGINT, as Ctrl-C) once the workload has exited.
fn stop(perf: &mut Child) -> Result<()> {
    let perf_pid = Pid(i32::try_from(perf.id()).context("perf's pid")?);
    std::thread::sleep(Duration::from_millis(100));
    let _ = RealSys::new().kill(perf_pid, signal_hook::consts::SIGINT);
    if !wait_with_deadline(perf, Duration::from_secs(20))? {
        anyhow::bail!("perf record did not stop on SIGINT");
    }
    Ok(())
}

/// The workload's `walked ADDR LEN` line.
pub(super) fn parse_walked(line: &str) -> Option<(u64, u64)> {
    let mut words = line.split_whitespace();
    (words.next()? == "walked").then_some(())?;
    let addr = u64::from_str_radix(words.next()?.trim_start_matches("0x"), 16).ok()?;
    let len = words.next()?.parse().ok()?;
    Some((addr, len))
}

/// The data addresses of `pid`'s samples in `perf script -F pid,addr` output (lines `PID
/// ADDR`, the address in hex).
fn samples_of(text: &str, pid: Pid) -> Vec<u64> {
    text.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let p: i32 = words.next()?.parse().ok()?;
            let addr = u64::from_str_radix(words.last()?.trim_start_matches("0x"), 16).ok()?;
            (p == pid.0).then_some(addr)
        })
        .collect()
}

fn in_buffer(addrs: &[u64], (start, len): (u64, u64)) -> u64 {
    addrs
        .iter()
        .filter(|&&a| a >= start && a < start.saturating_add(len))
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_script_lines_give_the_workload_s_addresses() {
        let text = "  4242       7f0000001000\n  4242 7f0000002008\n   999 7f0000001000\n\
                    garbage\n";
        let addrs = samples_of(text, Pid(4242));
        assert_eq!(addrs, [0x7f00_0000_1000, 0x7f00_0000_2008]);
        assert_eq!(in_buffer(&addrs, (0x7f00_0000_2000, 4096)), 1);
        assert_eq!(
            parse_walked("walked 0x7f0000001000 16777216\n"),
            Some((0x7f00_0000_1000, 16 << 20))
        );
        assert_eq!(parse_walked("ready\n"), None);
    }

    #[test]
    fn perf_records_the_plan_s_precise_events_with_its_options() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../linux/tests/fixtures/pmu");
        let detect = |m: &str| {
            rondpoint_linux::pmu::detect(&rondpoint_linux::sysfs::SysfsRoot::new(root.join(m)))
                .unwrap()
        };
        let zen = precise_events(&detect("zen4-genoa"), None);
        let r = perf_record(&zen.iter().collect::<Vec<_>>(), Pid(1), 256);
        assert_eq!(
            r.args.join(" "),
            "record -c 16384 -d --sample-cpu -R -q -a -e ibs_op/cnt_ctl=1/"
        );
        let spr = precise_events(&detect("spr-xeon-2s"), None);
        let r = perf_record(&spr.iter().collect::<Vec<_>>(), Pid(1), 256);
        assert!(
            r.args.join(" ").contains(
                "-e {cpu/event=0x03,umask=0x82/upp,cpu/event=0xcd,umask=0x1,ldlat=30/upp},\
                 cpu/event=0xcd,umask=0x2/upp"
            ),
            "{:?}",
            r.args
        );
        let arm = precise_events(&detect("neoverse-n1"), None);
        let r = perf_record(&arm.iter().collect::<Vec<_>>(), Pid(1), 256);
        assert!(
            r.args
                .join(" ")
                .ends_with("-q -a -e arm_spe_0/ts_enable=1,load_filter=1,store_filter=1/u")
        );
        assert_eq!(r.script, ["--itrace=m"]);
        let faults = perf_record(&[], Pid(42), 16);
        assert_eq!(faults.row, "samples in a 16 MiB walk (page faults)");
        assert_eq!(
            faults.args.join(" "),
            "record -q -e page-faults -c 1 -d -p 42"
        );
    }
}
