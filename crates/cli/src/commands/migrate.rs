//! `rondpoint migrate`: move a running process's pages to a node, verified.

use crate::format;
use anyhow::{Context, Result, bail};
use clap::Args;
use rondpoint_linux::actuate;
use rondpoint_linux::sys::RealSys;
use rondpoint_linux::thp;
use rondpoint_model::{NodeId, PageSize, Pid};
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
    /// Most megabytes moved per second (0: no cap).
    #[arg(long, value_name = "MB", default_value_t = 0)]
    max_mb_per_s: u64,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
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
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .with_context(|| format!("reading /proc/{pid}/maps (is process {pid} running?)"))?;
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
    let topology = rondpoint_linux::discover(&args.sysfs_root)
        .context("reading the NUMA topology")?
        .topology;
    for n in std::iter::once(&args.to).chain(&args.from) {
        if topology.index_of(NodeId(*n)).is_none() {
            bail!("node {n} does not exist on this machine");
        }
    }
    let pid = Pid(args.pid);
    let mappings = data_mappings(args.pid)?;
    let thp_maps = std::fs::read_to_string(format!("/proc/{}/smaps", args.pid))
        .map(|t| thp::parse_smaps(&t))
        .unwrap_or_default();
    // One address per page: per 2 MiB inside THP-backed parts, per 4 KiB elsewhere.
    let mut pages = Vec::new();
    for (a, b) in mappings {
        let mut addr = a;
        while addr < b {
            let size = thp::page_size_of(&thp_maps, addr);
            pages.push(addr);
            addr += match size {
                PageSize::Huge2M => PageSize::Huge2M.bytes(),
                PageSize::Base4K => 4096,
            };
        }
    }
    let mut sys = RealSys::new();
    let started = Instant::now();
    let now = actuate::query(&mut sys, pid, &pages).map_err(|e| {
        anyhow::anyhow!(
            "querying the pages of process {}: {e}{}",
            args.pid,
            rights(e)
        )
    })?;
    let from_ok = |n: i32| {
        n >= 0
            && n != i32::from(args.to)
            && (args.from.is_empty() || args.from.iter().any(|&f| i32::from(f) == n))
    };
    let todo: Vec<u64> = pages
        .iter()
        .zip(&now)
        .filter(|&(_, &n)| from_ok(n))
        .map(|(&p, _)| p)
        .collect();
    let already = now.iter().filter(|&&n| n == i32::from(args.to)).count() as u64;
    let mut moved = 0u64;
    let mut bytes = 0u64;
    let mut failures: BTreeMap<String, u64> = BTreeMap::new();
    let chunk = actuate::BATCH;
    for batch in todo.chunks(chunk) {
        let t0 = Instant::now();
        let targets = vec![i32::from(args.to); batch.len()];
        let r = actuate::move_pages_to(&mut sys, pid, batch, &targets).map_err(|e| {
            anyhow::anyhow!("moving the pages of process {}: {e}{}", args.pid, rights(e))
        })?;
        moved += r.moved;
        let batch_bytes: u64 = batch
            .iter()
            .take(r.moved as usize)
            .map(|&a| thp::page_size_of(&thp_maps, a).bytes())
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
    let report = MigrateReport {
        pid: args.pid,
        to: args.to,
        pages_seen: pages.len() as u64,
        pages_requested: todo.len() as u64,
        pages_moved: moved,
        pages_already_there: already,
        failures,
        bytes_moved: bytes,
        seconds,
        mb_per_s: bytes as f64 / 1e6 / seconds.max(1e-9),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
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
                format!(
                    "; not moved: {}",
                    report
                        .failures
                        .iter()
                        .map(|(k, v)| format!("{v} {k}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn rights(e: rondpoint_linux::sys::Errno) -> &'static str {
    use rondpoint_linux::sys::Errno;
    if e == Errno::EPERM || e == Errno::EACCES {
        " (moving another user's pages needs CAP_SYS_NICE)"
    } else if e == Errno::ESRCH {
        " (the process has exited)"
    } else {
        ""
    }
}
