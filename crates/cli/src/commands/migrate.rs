//! `rondpoint migrate`: move a running process's pages to a node, verified.

use crate::format;
use anyhow::{Result, bail};
use clap::Args;
use rondpoint_linux::actuate;
use rondpoint_linux::procfs::ProcRoot;
use rondpoint_linux::sys::{Errno, RealSys};
use rondpoint_linux::thp::{self, ThpMapping};
use rondpoint_model::{NodeId, Pid};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The process whose pages to move.
    #[arg(long, value_name = "PID")]
    pid: i32,
    /// The node to move them to.
    #[arg(long, value_name = "NODE")]
    to: u16,
    /// Move only pages now on these nodes (comma-separated; default: every other node).
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',')]
    from: Vec<u16>,
    /// Most megabytes moved per second (0: no cap). Without a cap, the kernel moves every page
    /// of the process on those nodes in one migrate_pages(2) call, as `numactl --migratepages`
    /// does (its unshared file pages too; the report counts its private data pages); with one,
    /// the data pages go in paced move_pages(2) batches.
    #[arg(long, value_name = "MB", default_value_t = 0)]
    max_mb_per_s: u64,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Read the topology from DIR instead of /sys.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    sysfs_root: PathBuf,
}

#[derive(Debug, Serialize)]
struct MigrateReport {
    pid: i32,
    to: u16,
    pages_seen: u64,
    pages_requested: u64,
    pages_moved: u64,
    pages_already_there: u64,
    failures: BTreeMap<String, u64>,
    bytes_moved: u64,
    seconds: f64,
    mb_per_s: f64,
}

/// Private, writable mappings (where a process's own data lives) from /proc/PID/maps.
fn data_mappings(pid: i32) -> Result<Vec<(u64, u64)>> {
    let text = rondpoint_safeio::read_system_text(std::path::Path::new(&format!(
        "/proc/{pid}/maps"
    )))
    .map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::Error::new(crate::status::BadInput::msg(format!(
            "process {pid} is not running"
        ))),
        std::io::ErrorKind::PermissionDenied => anyhow::anyhow!(
            "reading /proc/{pid}/maps: permission denied (moving another user's pages needs \
             root or CAP_SYS_NICE, and reading its memory map the same user or CAP_SYS_PTRACE)"
        ),
        _ => anyhow::Error::new(e).context(format!("reading /proc/{pid}/maps")),
    })?;
    let mut out = Vec::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(range), Some(perms)) = (w.next(), w.next()) else {
            continue;
        };
        if !perms.starts_with("rw") || !perms.ends_with('p') {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
            out.push((a, b));
        }
    }
    Ok(out)
}

pub fn run(args: &MigrateArgs) -> Result<ExitCode> {
    crate::options::check_process(args.pid)?;
    check_nodes(args)?;
    let mappings = data_mappings(args.pid)?;
    let thp_maps = thp_mappings(Pid(args.pid));
    let pages = page_addresses(&mappings, &thp_maps);
    let report = move_pages(args, &pages, &thp_maps)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        outln!("{}", render(&report));
    }
    // Some pages may stay (shared with another process, pinned, under I/O): the report names
    // them. Nothing moved of what was asked is a failure.
    if report.pages_requested > 0 && report.pages_moved == 0 {
        bail!(
            "none of the {} pages asked for moved to node {}: {}",
            report.pages_requested,
            report.to,
            format::tally(&report.failures)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The process's THP-backed mappings: from its full smaps only when its rollup shows any
/// (each read walks its page tables; smaps formats every mapping besides).
fn thp_mappings(pid: Pid) -> Vec<ThpMapping> {
    let proc = ProcRoot::new("/proc");
    match proc.thp_bytes(pid) {
        Ok(Some(0)) => Vec::new(),
        _ => proc
            .smaps(pid)
            .ok()
            .flatten()
            .map(|t| thp::parse_smaps(&t))
            .unwrap_or_default(),
    }
}

/// Refuses nodes the machine does not have, before anything is read or moved.
fn check_nodes(args: &MigrateArgs) -> Result<()> {
    let topology = crate::options::discover(&args.sysfs_root)?.topology;
    for n in std::iter::once(&args.to).chain(&args.from) {
        if topology.index_of(NodeId(*n)).is_none() {
            bad_input!("node {n} does not exist on this machine");
        }
    }
    Ok(())
}

/// One address per page: per 2 MiB inside THP-backed parts, per 4 KiB elsewhere.
fn page_addresses(mappings: &[(u64, u64)], thp_maps: &[ThpMapping]) -> Vec<u64> {
    let mut pages = Vec::new();
    for &(a, b) in mappings {
        let mut addr = a;
        while addr < b {
            pages.push(addr);
            addr += thp::page_size_of(thp_maps, addr).bytes();
        }
    }
    pages
}

/// Moves the pages that are on the nodes asked for and says what happened: without a cap, all
/// of them in one migrate_pages(2) call (as `numactl --migratepages`); with `--max-mb-per-s`,
/// batch by batch with move_pages(2), paced.
fn move_pages(args: &MigrateArgs, pages: &[u64], thp_maps: &[ThpMapping]) -> Result<MigrateReport> {
    let pid = Pid(args.pid);
    let to = i32::from(args.to);
    let mut sys = RealSys::new();
    let started = Instant::now();
    let now = actuate::query(&mut sys, pid, pages).map_err(|e| refused("querying", args.pid, e))?;
    let from_ok = |n: i32| {
        n >= 0 && n != to && (args.from.is_empty() || args.from.iter().any(|&f| i32::from(f) == n))
    };
    // The pages to move, with where they are (the move need not ask again).
    let (todo, todo_now): (Vec<u64>, Vec<i32>) = pages
        .iter()
        .zip(&now)
        .filter(|&(_, &n)| from_ok(n))
        .map(|(&p, &n)| (p, n))
        .unzip();
    let mut moved = 0u64;
    let mut bytes = 0u64;
    let mut failures: BTreeMap<String, u64> = BTreeMap::new();
    let chunk = chunk_pages(args.max_mb_per_s);
    for (batch, before) in todo.chunks(chunk).zip(todo_now.chunks(chunk)) {
        let t0 = Instant::now();
        let r = if args.max_mb_per_s == 0 {
            actuate::move_node_pages(&mut sys, pid, batch, before, args.to)
        } else {
            let targets = vec![to; batch.len()];
            actuate::move_pages_from(&mut sys, pid, batch, before, &targets)
        }
        .map_err(|e| match e {
            // migrate_pages(2) refuses the whole call for a target node the kernel cannot
            // place on (move_pages says ENODEV page by page).
            Errno::EINVAL => anyhow::anyhow!(
                "moving the pages of process {}: node {} is not online here, has no memory, \
                 or is outside the process's cpuset ({e})",
                args.pid,
                args.to
            ),
            e => refused("moving", args.pid, e),
        })?;
        moved += r.moved;
        let batch_bytes: u64 = batch
            .iter()
            .take(r.moved as usize)
            .map(|&a| thp::page_size_of(thp_maps, a).bytes())
            .sum();
        bytes += batch_bytes;
        for (k, v) in r.failures {
            *failures.entry(k).or_default() += v;
        }
        if args.max_mb_per_s > 0 {
            let want =
                Duration::from_secs_f64(batch_bytes as f64 / (args.max_mb_per_s as f64 * 1e6));
            if let Some(rest) = want.checked_sub(t0.elapsed()) {
                std::thread::sleep(rest);
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(MigrateReport {
        pid: args.pid,
        to: args.to,
        pages_seen: pages.len() as u64,
        pages_requested: todo.len() as u64,
        pages_moved: moved,
        pages_already_there: now.iter().filter(|&&n| n == to).count() as u64,
        failures,
        bytes_moved: bytes,
        seconds,
        mb_per_s: bytes as f64 / 1e6 / seconds.max(1e-9),
    })
}

/// Pages per move: all of them at once without a cap (one migrate_pages call; each call that
/// moves costs the whole machine a drain of every CPU's LRU batches: actuate::pages), else
/// about a tenth of a second's worth of the cap, so that the cap is kept between calls.
fn chunk_pages(max_mb_per_s: u64) -> usize {
    if max_mb_per_s == 0 {
        return usize::MAX;
    }
    let tenth = max_mb_per_s as f64 * 1e6 / 10.0 / 4096.0;
    (tenth as usize).clamp(64, actuate::MOVE_BATCH)
}

/// The one-line human form of the report.
fn render(report: &MigrateReport) -> String {
    format!(
        "moved {} pages ({}) of process {} to node {} in {:.3} s ({:.0} MB/s); {} already there{}",
        report.pages_moved,
        format::bytes(report.bytes_moved),
        report.pid,
        report.to,
        report.seconds,
        report.mb_per_s,
        report.pages_already_there,
        if report.failures.is_empty() {
            String::new()
        } else {
            format!("; not moved: {}", format::tally(&report.failures))
        }
    )
}

/// A failed query or move of the process's pages, with the likely reason.
fn refused(doing: &str, pid: i32, e: Errno) -> anyhow::Error {
    let why = if e == Errno::EPERM || e == Errno::EACCES {
        " (moving another user's pages needs CAP_SYS_NICE)"
    } else if e == Errno::ESRCH {
        " (the process has exited)"
    } else {
        ""
    };
    anyhow::anyhow!("{doing} the pages of process {pid}: {e}{why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_what_was_not_moved() {
        let mut report = MigrateReport {
            pid: 42,
            to: 1,
            pages_seen: 10,
            pages_requested: 8,
            pages_moved: 5,
            pages_already_there: 2,
            failures: BTreeMap::new(),
            bytes_moved: 5 * 4096,
            seconds: 0.5,
            mb_per_s: 0.04096,
        };
        assert_eq!(
            render(&report),
            "moved 5 pages (20.0 KiB) of process 42 to node 1 in 0.500 s (0 MB/s); 2 already there"
        );
        report.failures = [("EBUSY".to_string(), 2), ("ENOENT".to_string(), 1)].into();
        assert!(
            render(&report).ends_with("; 2 already there; not moved: 2 EBUSY, 1 ENOENT"),
            "{}",
            render(&report)
        );
    }

    #[test]
    fn moves_go_in_one_call_unless_capped() {
        assert_eq!(chunk_pages(0), usize::MAX);
        // 100 MB/s: 10 MB a tenth of a second, 2,441 pages of 4 KiB.
        assert_eq!(chunk_pages(100), 2441);
        assert_eq!(chunk_pages(1), 64);
        assert_eq!(chunk_pages(u64::MAX / 2), actuate::MOVE_BATCH);
    }

    #[test]
    fn refusals_say_why() {
        let e = Errno::EPERM;
        assert_eq!(
            refused("moving", 42, e).to_string(),
            format!(
                "moving the pages of process 42: {e} (moving another user's pages needs \
                 CAP_SYS_NICE)"
            )
        );
        let e = Errno::ESRCH;
        assert_eq!(
            refused("querying", 42, e).to_string(),
            format!("querying the pages of process 42: {e} (the process has exited)")
        );
    }
}
