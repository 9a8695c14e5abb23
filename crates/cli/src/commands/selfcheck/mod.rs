//! `rondpoint doctor --self-check`: rondpoint's own hardware counters against `perf stat` on
//! one workload, on this machine, so that a user with a PMU can confirm what the project's
//! machines (which have none) cannot: that the counts rondpoint's policies read are the
//! kernel's, as perf reads them.
//!
//! The workload is rondpoint itself (`doctor --self-check-workload MIB`, hidden): once started
//! it says so and waits for one byte on its standard input, then allocates and touches a
//! buffer and walks it line by line. While it waits, rondpoint opens its three thread counters on it (as
//! `run` and `daemon` do: user space, inherited) and starts `perf stat -p PID` on it; once
//! perf's events are open (its perf_event descriptors are listed in /proc), the byte is sent,
//! and both count the same walk to the workload's exit. The counts must agree within a
//! tolerance per event.
//!
//! Then the samples (module `samples`): rondpoint's sampler, as `run` uses it, against `perf
//! record` of the same events on another walk.
//!
//! The same run with software events (`--self-check-software`, hidden: page faults, which
//! both count and sample the same way) tests all of this on machines without a PMU, such as
//! the project's.

mod samples;
mod wide;

use anyhow::{Context, Result};
use rondpoint_linux::machine::{LiveConfig, thread_counter_attrs, thread_dram_events_of};
use rondpoint_linux::pmu::access::Verdict;
use rondpoint_linux::pmu::attrs::{self, CpuIdent};
use rondpoint_linux::pmu::{self, Access, Pmu, Scope};
use rondpoint_linux::procfs::ProcRoot;
use rondpoint_linux::sys::{Errno, PerfAttr, PerfFd, PerfReading, RealSys, Sys};
use rondpoint_linux::sysfs::SysfsRoot;
use rondpoint_model::{Capability, Pid, Support};
use serde::Serialize;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// MiB the workload walks: larger than any last-level cache, so that it misses.
pub const WORKLOAD_MIB: usize = 256;
/// Passes over the buffer: a second or two of work on a server core.
const PASSES: usize = 8;
/// Bytes of a cache line: the walk's stride.
const LINE: usize = 64;

/// How far rondpoint's count may be from perf's, in percent of perf's, per event (in the order
/// of [`thread_counter_attrs`]). Both count the same task over the same interval, so they
/// differ only by what runs between the two openings (the workload blocked in read(2)) and by
/// multiplexing, which both scale the same way; chosen.
const TOLERANCE_PCT: [f64; 3] = [1.0, 2.0, 5.0];

/// How far rondpoint's count of DRAM loads may be from perf's (percent): as for LLC misses,
/// more multiplexed than the fixed-counter events; chosen.
const DRAM_TOLERANCE_PCT: f64 = 5.0;

/// Counts this close to perf's agree whatever the percentage: a walk of local memory makes
/// next to no remote DRAM loads, where a percentage of a handful means nothing. Chosen: a
/// thousandth of the lines the walk reads in one pass.
const AGREE_BELOW: u64 = WORKLOAD_MIB as u64 * 1024 * 1024 / LINE as u64 / 1000;

/// One event to compare: perf's name for it, rondpoint's attr, the tolerance (percent).
type Event = (String, PerfAttr, f64);

/// The hardware counters rondpoint's policies read: the three generic ones, and the core
/// PMU's DRAM loads where this machine's CPU has them (`machine`: its PMUs under /sys and
/// /proc/cpuinfo).
fn hardware_events(machine: Option<(&[Pmu], Option<&CpuIdent>)>) -> Vec<Event> {
    let generic = thread_counter_attrs()
        .into_iter()
        .zip(TOLERANCE_PCT)
        .map(|((name, attr), t)| (name.to_string(), attr, t));
    let dram = machine
        .and_then(|(pmus, cpu)| thread_dram_events_of(&attrs::plan(pmus, cpu).attrs).ok())
        .unwrap_or_default()
        .into_iter()
        .map(|(name, attr)| (name, attr, DRAM_TOLERANCE_PCT));
    generic.chain(dram).collect()
}

/// This machine's PMUs and CPU, for [`hardware_events`].
fn this_machine() -> (Vec<Pmu>, Option<CpuIdent>) {
    let pmus = pmu::detect(&SysfsRoot::new("/sys")).unwrap_or_default();
    let cpuinfo = rondpoint_safeio::read_system_text(Path::new("/proc/cpuinfo")).ok();
    let cpu = cpuinfo.as_deref().and_then(CpuIdent::from_cpuinfo);
    (pmus, cpu)
}

/// Page faults in user space, counted as the hardware counters are (inherited): the
/// self-check's own test where there is no PMU. perf's `page-faults:u` is the same event.
fn software_events() -> Vec<Event> {
    let attr = PerfAttr {
        kind: 1,   // PERF_TYPE_SOFTWARE
        config: 2, // PERF_COUNT_SW_PAGE_FAULTS
        exclude_kernel: true,
        inherit: true,
        ..PerfAttr::default()
    };
    vec![("page-faults:u".to_string(), attr, 1.0)]
}

/// perf stat's field separator (`-x`): not a comma, which events written with terms contain
/// (`cpu/event=0xd3,umask=0x1/u`).
const SEPARATOR: &str = ";";

/// How long perf may take to open its events on the workload.
const PERF_READY: Duration = Duration::from_secs(10);

/// One event's counts.
#[derive(Debug, Serialize, PartialEq)]
pub struct Compared {
    pub event: String,
    pub rondpoint: u64,
    pub perf: Option<u64>,
    pub difference_pct: Option<f64>,
    pub tolerance_pct: f64,
    pub ok: bool,
}

/// The `doctor --self-check --json` document.
#[derive(Debug, Serialize)]
struct SelfCheck {
    workload: String,
    events: Vec<Compared>,
    ok: bool,
}

/// The workload (`doctor --self-check-workload MIB`): says `ready` on standard output, waits
/// for a byte on standard input, then touches `mib` MiB and walks them [`PASSES`] times, says
/// where (`walked ADDR LEN`), and exits when its standard input closes.
pub fn workload(mib: usize) -> Result<ExitCode> {
    // Started: what runs from here to the byte is the read(2) that waits for it.
    let mut stdout = std::io::stdout();
    stdout
        .write_all(b"ready\n")
        .and_then(|()| stdout.flush())
        .context("telling the self-check the workload is ready")?;
    let mut go = [0u8; 1];
    std::io::stdin()
        .read_exact(&mut go)
        .context("waiting for the self-check to start the walk")?;
    let mut buffer = vec![1u8; mib << 20];
    let mut sum = 0u64;
    for _ in 0..PASSES {
        for i in (0..buffer.len()).step_by(LINE) {
            sum = sum.wrapping_add(u64::from(buffer[i]));
            buffer[i] = buffer[i].wrapping_add(1);
        }
    }
    std::hint::black_box(sum);
    stdout
        .write_all(format!("walked {:#x} {}\n", buffer.as_ptr() as usize, buffer.len()).as_bytes())
        .and_then(|()| stdout.flush())
        .context("telling the self-check where the walk was")?;
    // Alive until the self-check has drained its samples (a closed pipe ends the read).
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    drop(buffer);
    Ok(ExitCode::SUCCESS)
}

/// `perf` on the PATH.
fn find_perf() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("perf"))
        .find(|p| p.is_file())
}

/// Runs the self-check (on page faults with `software`), printing the comparison (JSON with
/// `json`): status 0 when every counter agrees with perf's, 1 when one does not.
pub fn run(json: bool, software: bool) -> Result<ExitCode> {
    let Some(perf) = find_perf() else {
        bad_input!(
            "perf is not installed (Debian: apt install linux-perf): the self-check compares \
             rondpoint's counters with perf stat's"
        );
    };
    let mut sys = RealSys::new();
    let events = if software {
        software_events()
    } else {
        let (pmus, cpu) = this_machine();
        hardware_events(Some((&pmus, cpu.as_ref())))
    };
    if let Err(e) = sys
        .perf_open(&events[0].1, Pid(0), -1)
        .map(|fd| sys.perf_close(fd))
    {
        bad_input!(
            "no hardware counters here (perf_event_open of instructions: {}{}): nothing to \
             compare. rondpoint samples page faults and estimates DRAM traffic on such a \
             machine; `rondpoint doctor` says what is missing",
            e.name(),
            if e == Errno::ENOENT {
                ", as on a virtual machine without a virtual PMU"
            } else {
                ""
            }
        );
    }
    eprintln!(
        "self-check: counting a {WORKLOAD_MIB} MiB memory walk with rondpoint's counters and \
         perf stat"
    );
    let mut events = count_both(&mut sys, &perf, &events)?;
    events.extend(system_wide(&mut sys, &perf, software)?);
    events.extend(sampled(&perf, software)?);
    let ok = events.iter().all(|e| e.ok);
    let report = SelfCheck {
        workload: format!("{WORKLOAD_MIB} MiB walked {PASSES} times, one line at a time"),
        events,
        ok,
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", render(&report));
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The system-wide comparison (module `wide`): the memory-controller counters where this
/// machine has them (page faults on every CPU with `software`), when system-wide events may
/// be opened here; nothing, with a note, otherwise.
fn system_wide(sys: &mut RealSys, perf: &Path, software: bool) -> Result<Vec<Compared>> {
    let events = if software {
        let online =
            rondpoint_safeio::read_system_text(Path::new("/sys/devices/system/cpu/online"))
                .context("reading the online CPUs")?;
        let cpus = rondpoint_model::cpulist::parse(&online)
            .map_err(|e| anyhow::anyhow!("/sys/devices/system/cpu/online: {e}"))?;
        wide::page_fault_events(&cpus)
    } else {
        let (pmus, cpu) = this_machine();
        wide::controller_events(&pmus, cpu.as_ref())
    };
    if events.is_empty() {
        eprintln!("self-check: no memory-controller counters here: those are not compared");
        return Ok(Vec::new());
    }
    let access = Access::read(&ProcRoot::new("/proc")).context("reading perf_event_paranoid")?;
    if let Verdict::Refused(why) = access.check(Scope::Cpu) {
        eprintln!("self-check: system-wide counters are not permitted ({why}): not compared");
        return Ok(Vec::new());
    }
    eprintln!("self-check: counting a second walk system-wide, with rondpoint and perf stat -a");
    wide::count(sys, perf, &events)
}

/// The samples' comparison (module `samples`): with the precise events the live machine
/// samples with here, else (and with `software`) page faults; nothing, with a note, where
/// neither may be sampled.
fn sampled(perf: &Path, software: bool) -> Result<Option<Compared>> {
    let topology = crate::options::discover(Path::new("/sys"))?.topology;
    let capabilities = crate::live::launch_capabilities(&topology, &LiveConfig::default());
    // Access samples: precise where they open (Full), page faults where those stand in.
    let precise = match capabilities.support(Capability::AccessSamples) {
        Support::Missing(why) => {
            eprintln!("self-check: samples are not compared ({why})");
            return Ok(None);
        }
        Support::Full if !software => {
            let (pmus, cpu) = this_machine();
            samples::precise_events(&pmus, cpu.as_ref())
        }
        _ => Vec::new(),
    };
    eprintln!(
        "self-check: sampling a walk with rondpoint's {} sampler and perf record",
        if precise.is_empty() {
            "page-fault"
        } else {
            "precise"
        }
    );
    samples::compare(perf, topology, &precise).map(Some)
}

/// Starts the workload, counts it with rondpoint's counters and perf stat, and compares.
fn count_both(sys: &mut RealSys, perf: &Path, events: &[Event]) -> Result<Vec<Compared>> {
    with_workload(WORKLOAD_MIB, |child| {
        let pid = Pid(i32::try_from(child.id()).context("the workload's pid")?);
        count_child(sys, perf, events, child, pid)
    })
}

/// Starts the workload (walking `mib` MiB) and runs `count` with it; however that goes, the
/// workload is not left running.
fn with_workload<T>(mib: usize, count: impl FnOnce(&mut Child) -> Result<T>) -> Result<T> {
    let exe = std::env::current_exe().context("finding rondpoint's own executable")?;
    let mut child = Command::new(exe)
        .args(["doctor", "--self-check-workload", &mib.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the workload")?;
    let result = count(&mut child);
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// Waits until the workload says it has started (its loader and runtime are not the walk's).
fn await_ready(child: &mut Child) -> Result<()> {
    let mut ready = [0u8; 6];
    if let Some(out) = child.stdout.as_mut() {
        out.read_exact(&mut ready)
            .context("waiting for the workload to start")?;
    }
    Ok(())
}

/// Starts the workload's walk and waits for it to end.
fn walk(child: &mut Child) -> Result<std::process::ExitStatus> {
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(b"g")
            .context("starting the workload's walk")?;
    }
    child.wait().context("waiting for the workload")
}

fn count_child(
    sys: &mut RealSys,
    perf: &Path,
    events: &[Event],
    child: &mut Child,
    pid: Pid,
) -> Result<Vec<Compared>> {
    await_ready(child)?;
    let mut fds: Vec<PerfFd> = Vec::new();
    for (name, attr, _) in events {
        let fd = sys
            .perf_open(attr, pid, -1)
            .map_err(|e| anyhow::anyhow!("perf_event_open of {name} on the workload: {e}"))?;
        fds.push(fd);
    }
    let names: Vec<&str> = events.iter().map(|a| a.0.as_str()).collect();
    // perf stat prints its counts on its standard error at the end.
    let mut perf_child = Command::new(perf)
        .args(["stat", "-x", SEPARATOR])
        .args(["-e", &names.join(","), "-p", &pid.0.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting perf stat")?;
    let ready = wait_for_events(&mut perf_child, names.len());
    if let Err(e) = ready {
        let _ = perf_child.kill();
        let _ = perf_child.wait();
        return Err(e);
    }
    let status = walk(child)?;
    let readings: Vec<PerfReading> = fds
        .iter()
        .map(|&fd| sys.perf_read(fd).unwrap_or_default())
        .collect();
    for fd in fds {
        sys.perf_close(fd);
    }
    let perf_status = wait_with_deadline(&mut perf_child, Duration::from_secs(10))?;
    if !status.success() {
        anyhow::bail!("the workload failed: {status}");
    }
    if !perf_status {
        anyhow::bail!("perf stat did not end after the workload did");
    }
    let mut text = String::new();
    if let Some(mut e) = perf_child.stderr.take() {
        e.read_to_string(&mut text)
            .context("reading perf stat's output")?;
    }
    let counted = parse_perf_csv(&text);
    Ok(compare(events, &readings, &counted))
}

/// Waits until process `perf` holds `n` perf_event descriptors (its events are open), or says
/// why not: it exited (with what it printed), or took too long.
fn wait_for_events(perf: &mut Child, n: usize) -> Result<()> {
    wait_for_perf(perf, "perf stat", |count, _| count >= n)
}

/// Waits until `ready(descriptors, how long their count has not changed)` holds for process
/// `perf` (`what`, for messages), or says why not: it exited (with what it printed), or took
/// longer than [`PERF_READY`].
fn wait_for_perf(
    perf: &mut Child,
    what: &str,
    ready: impl Fn(usize, Duration) -> bool,
) -> Result<()> {
    let start = Instant::now();
    let fd_dir = PathBuf::from(format!("/proc/{}/fd", perf.id()));
    let (mut last, mut since) = (0, Instant::now());
    loop {
        if let Some(status) = perf.try_wait()? {
            let mut err = String::new();
            if let Some(mut e) = perf.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            anyhow::bail!(
                "{what} ended before the workload ran ({status}): {}",
                err.trim()
            );
        }
        let n = perf_event_fds(&fd_dir);
        if n != last {
            (last, since) = (n, Instant::now());
        }
        if ready(n, since.elapsed()) {
            return Ok(());
        }
        if start.elapsed() > PERF_READY {
            anyhow::bail!(
                "{what} did not open its events within {} s",
                PERF_READY.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The perf_event descriptors a process holds (`anon_inode:[perf_event]` links).
fn perf_event_fds(fd_dir: &Path) -> usize {
    std::fs::read_dir(fd_dir)
        .map(|entries| {
            entries
                .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|target| target.to_string_lossy().contains("perf_event"))
                .count()
        })
        .unwrap_or(0)
}

/// Waits for a child to exit (true), interrupting it after `deadline` (false).
fn wait_with_deadline(child: &mut Child, deadline: Duration) -> Result<bool> {
    let start = Instant::now();
    while start.elapsed() < deadline {
        if child.try_wait()?.is_some() {
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    Ok(false)
}

/// perf stat's `-x ,` lines: event name to count (`None`: `<not counted>` or
/// `<not supported>`). Lines are `value,unit,event,run time,percent running,...`; comments
/// (`# started on ...`), blank lines and anything with fewer than three fields are skipped.
fn parse_perf_csv(text: &str) -> Vec<(String, Option<u64>)> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut fields = l.split(SEPARATOR);
            let value = fields.next()?.trim();
            let _unit = fields.next()?;
            let event = fields.next()?.trim().to_string();
            Some((event, value.parse().ok()))
        })
        .collect()
}

/// Each of rondpoint's counts (scaled for multiplexing, as its policies read them) against
/// perf's for the same event.
fn compare(
    events: &[Event],
    readings: &[PerfReading],
    counted: &[(String, Option<u64>)],
) -> Vec<Compared> {
    events
        .iter()
        .zip(readings)
        .map(|((name, _, tolerance_pct), reading)| {
            let theirs = counted
                .iter()
                .find(|(e, _)| e == name)
                .and_then(|(_, v)| *v);
            verdict(name.clone(), reading.scaled_total(), theirs, *tolerance_pct)
        })
        .collect()
}

/// rondpoint's count of `event` against perf's (`None`: perf did not count it).
fn verdict(event: String, ours: u64, theirs: Option<u64>, tolerance_pct: f64) -> Compared {
    let difference_pct = theirs
        .filter(|&t| t > 0)
        .map(|t| 100.0 * (ours as f64 - t as f64) / t as f64);
    let close = theirs.is_some_and(|t| t.abs_diff(ours) < AGREE_BELOW);
    Compared {
        event,
        rondpoint: ours,
        perf: theirs,
        difference_pct,
        tolerance_pct,
        ok: close || difference_pct.is_some_and(|d| d.abs() <= tolerance_pct),
    }
}

fn render(r: &SelfCheck) -> String {
    let mut s = format!(
        "self-check: rondpoint's counters against perf stat, its samples against perf \
         record, on {}\n",
        r.workload
    );
    let width = r
        .events
        .iter()
        .map(|e| e.event.len())
        .max()
        .unwrap_or(0)
        .max(16);
    s.push_str(&format!(
        "  {:<width$} {:>16} {:>16} {:>11} {:>7}\n",
        "event", "rondpoint", "perf", "difference", "within"
    ));
    for e in &r.events {
        let perf = e.perf.map_or("not counted".to_string(), |v| v.to_string());
        let diff = e
            .difference_pct
            .map_or("-".to_string(), |d| format!("{d:+.2}%"));
        s.push_str(&format!(
            "  {:<width$} {:>16} {:>16} {:>11} {:>6}%  {}\n",
            e.event,
            e.rondpoint,
            perf,
            diff,
            e.tolerance_pct,
            if e.ok { "ok" } else { "DIFFERS" }
        ));
    }
    s.push_str(if r.ok {
        "every count agrees with perf\n"
    } else {
        "a count differs from perf's: please report it with this output and `rondpoint doctor --json`\n"
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_csv_lines_give_counts_and_skip_the_rest() {
        // perf 6.1's `stat -x ';' -o FILE` output, lines this machine (no PMU) prints, and an
        // event written with terms (commas in its name).
        let text = "# started on Sun Nov 29 10:00:00 2026\n\n\
                    1234567;;instructions:u;1000000;100.00;;\n\
                    <not supported>;;cycles:u;0;100.00;;\n\
                    <not counted>;;cache-misses:u;0;0.00;;\n\
                    4321;;cpu/event=0xd3,umask=0x1/u;1000000;100.00;;\n";
        assert_eq!(
            parse_perf_csv(text),
            [
                ("instructions:u".to_string(), Some(1_234_567)),
                ("cycles:u".to_string(), None),
                ("cache-misses:u".to_string(), None),
                ("cpu/event=0xd3,umask=0x1/u".to_string(), Some(4321)),
            ]
        );
    }

    #[test]
    fn counts_agree_within_each_event_s_tolerance() {
        let attrs = hardware_events(None);
        let r = |v| PerfReading {
            value: v,
            enabled_ns: 10,
            running_ns: 10,
        };
        let counted = vec![
            ("instructions:u".to_string(), Some(1_000_000)),
            ("cycles:u".to_string(), Some(2_000_000)),
            ("cache-misses:u".to_string(), None),
        ];
        let got = compare(&attrs, &[r(1_005_000), r(2_100_000), r(5)], &counted);
        let verdicts: Vec<(bool, Option<f64>)> =
            got.iter().map(|c| (c.ok, c.difference_pct)).collect();
        assert_eq!(
            verdicts,
            [(true, Some(0.5)), (false, Some(5.0)), (false, None)],
            "{got:?}"
        );
        // Multiplexed: scaled by the time it ran, as the policies read it.
        let half = PerfReading {
            value: 500_000,
            enabled_ns: 20,
            running_ns: 10,
        };
        assert!(compare(&attrs, &[half, r(0), r(0)], &counted)[0].ok);
        // Counts near zero agree by their difference, not its percentage.
        let few = vec![("instructions:u".to_string(), Some(3))];
        assert!(compare(&attrs, &[r(AGREE_BELOW + 2)], &few)[0].ok);
        assert!(!compare(&attrs, &[r(AGREE_BELOW + 3)], &few)[0].ok);
    }

    #[test]
    fn dram_loads_are_compared_where_the_cpu_has_events_for_them() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../linux/tests/fixtures/pmu/spr-xeon-2s");
        let pmus = pmu::detect(&SysfsRoot::new(&root)).unwrap();
        let names: Vec<String> = hardware_events(Some((&pmus, None)))
            .into_iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(
            names,
            [
                "instructions:u",
                "cycles:u",
                "cache-misses:u",
                "cpu/event=0xd3,umask=0x1/u",
                "cpu/event=0xd3,umask=0x2/u"
            ]
        );
    }
}
