//! `rondpoint-mgen`: known-answer memory workloads for the emulated NUMA testbed.
//!
//! Each workload first-touches its buffer from a known node, then uses it from known nodes for
//! a while, and finally reports where its pages are (a move_pages query on its own buffer,
//! which needs no privilege), one line per measurement:
//!
//! ```text
//! mgen placement buffer N0=8192 N1=0 N2=0 N3=0 huge_uniform=1
//! mgen block 2 N0=0 N1=0 N2=1024 N3=0
//! mgen thread 2 N0=0 N1=0 N2=0 N3=1024 home=3 cpus=3
//! ```
//!
//! The testbed's checks read these lines. CPUs are assumed numbered so that CPU i is on node i
//! (the testbed boots one CPU per node); `--cpus-per-node` says otherwise.

#![forbid(unsafe_code)]

mod verify;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use rondpoint_linux::actuate;
use rondpoint_linux::sys::{Errno, MemPolicyMode, NodeMask, RealSys, Sys};
use rondpoint_model::{CpuId, Pid, Tid};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Parser)]
#[command(
    name = "rondpoint-mgen",
    about = "Known-answer NUMA workloads for rondpoint's testbed"
)]
struct Cli {
    /// Nodes of the machine.
    #[arg(long, default_value_t = 4)]
    nodes: usize,
    /// CPUs per node (CPU i*k .. i*k+k-1 on node i).
    #[arg(long, default_value_t = 1)]
    cpus_per_node: usize,
    #[command(subcommand)]
    workload: Workload,
}

#[derive(Debug, Subcommand)]
enum Workload {
    /// One thread on node 0 touches a buffer and stamps every page; then one thread per node
    /// reads all of it; at the end, checks the stamps ("mgen checksum ok").
    SharedBuffer {
        #[arg(long, default_value_t = 32)]
        mib: usize,
        #[arg(long, default_value_t = 6.0)]
        secs: f64,
        /// Bind the buffer to node 0 with MPOL_F_NUMA_BALANCING first, and read it from the
        /// other nodes only: the kernel still scans it and takes hinting faults, but never
        /// moves its pages (a fault from a node outside a balancing binding is not misplaced,
        /// and no reader runs inside it), so any page that leaves node 0 was moved by someone
        /// else's move_pages.
        #[arg(long)]
        bound: bool,
    },
    /// A thread on node 0 touches the whole array; then thread i reads and writes only block i
    /// from node i.
    Partitioned {
        #[arg(long, default_value_t = 32)]
        mib: usize,
        #[arg(long, default_value_t = 6.0)]
        secs: f64,
        /// Bind the array to node 0 with MPOL_F_NUMA_BALANCING first: the kernel still takes
        /// hinting faults on it but moves none of its pages (faults on blocks 1 and up come
        /// from outside the binding, and block 0's from the node it is on), so any block that
        /// reaches its user's node was moved there by someone else's move_pages.
        #[arg(long)]
        bound: bool,
        /// Start the block threads this many seconds late, from a second thread that runs from
        /// the start (as a thread pool's manager would): for a sampler attached in between,
        /// they are threads created by a thread that already ran, which inherit none of its
        /// events. They then run for `secs`.
        #[arg(long, default_value_t = 0.0)]
        late: f64,
    },
    /// A table touched on node 0, read by every node, written rarely (one line per 10,000
    /// reads).
    ReadMostly {
        #[arg(long, default_value_t = 16)]
        mib: usize,
        #[arg(long, default_value_t = 6.0)]
        secs: f64,
    },
    /// Touches a buffer from node 0 and reports where it is ("mgen touched buffer ..."), then
    /// again after `secs` ("mgen placement buffer ...", with THP on whether 2 MiB pages).
    Touch {
        #[arg(long, default_value_t = 32)]
        mib: usize,
        /// Keep running this long after touching.
        #[arg(long, default_value_t = 0.0)]
        secs: f64,
    },
    /// Threads pinned to the wrong nodes, each using a block bound to another node (mbind
    /// with MPOL_F_NUMA_BALANCING, taken by 6.1 and 6.12: NUMA balancing scans the block but
    /// moves pages only within the policy's one node, that is never): threads 0 and 1 run on
    /// nodes 0 and 1 with their memory on nodes 1 and 0, and thread 2 runs on node 2 with its
    /// memory on node 3, whose CPUs are left idle. The kernel cannot move the pinned threads.
    /// Reports each thread's CPU affinity and where its block is at the end.
    Misplaced {
        #[arg(long, default_value_t = 12)]
        mib: usize,
        #[arg(long, default_value_t = 8.0)]
        secs: f64,
    },
    /// Touches memory, starts readers, and exits with code 3 after `secs`, while managed.
    ExitEarly {
        #[arg(long, default_value_t = 64)]
        mib: usize,
        #[arg(long, default_value_t = 1.5)]
        secs: f64,
    },
    /// From node 0, fills node 0's free memory and `over-mib` more (the overflow lands where
    /// the kernel's fallback, or a policy, puts it), each page written with a pattern; waits
    /// `secs`, checks every pattern byte, and reports where the pages are and whether the
    /// data is intact ("mgen checksum ok").
    Overflow {
        #[arg(long, default_value_t = 200)]
        over_mib: usize,
        #[arg(long, default_value_t = 6.0)]
        secs: f64,
    },
    /// One thread per node checks and rewrites its pages (every node-th page of a buffer first
    /// touched on node 0) for `secs` seconds; reports passes, stamps found wrong ("mgen checksum
    /// ok" when none) and where the pages are.
    Verify {
        #[arg(long, default_value_t = 64)]
        mib: usize,
        #[arg(long, default_value_t = 10.0)]
        secs: f64,
    },
    /// Holds `mib` MiB bound to `node` for `secs` seconds ("mgen holding" once touched), so
    /// that the node's usage is known.
    Hold {
        #[arg(long)]
        node: u16,
        #[arg(long)]
        mib: usize,
        #[arg(long, default_value_t = 60.0)]
        secs: f64,
    },
}

const PAGE: usize = 4096;

#[derive(Clone, Copy)]
struct Machine {
    nodes: usize,
    cpus_per_node: usize,
}

impl Machine {
    fn cpus_of(&self, node: usize) -> Vec<CpuId> {
        (0..self.cpus_per_node)
            .map(|k| CpuId((node * self.cpus_per_node + k) as u32))
            .collect()
    }

    /// Pins the calling thread to a node's CPUs.
    fn pin(&self, node: usize) -> Result<()> {
        RealSys::new()
            .sched_setaffinity(Tid(0), &self.cpus_of(node))
            .map_err(|e| anyhow::anyhow!("pinning to node {node}: {e}"))
    }

    /// Pages of `buf` per node, by querying our own placement.
    ///
    /// Before Linux 6.5, move_pages sees a page whose PTE the NUMA scanner has just made
    /// PROT_NONE as absent (-ENOENT) until the page is next accessed: since 6.1 ("mm/gup:
    /// replace FOLL_NUMA by gup_can_follow_protnone()") follow_page() fails on such PTEs, and
    /// the fix ("mm/gup: reintroduce FOLL_NUMA as FOLL_HONOR_NUMA_FAULT", 6.5) failed to apply
    /// to 6.1-stable. A scan just before the query can hide most of a buffer (seen on the
    /// testbed's 6.1). `settle` says how such pages are brought back:
    /// - [`Settle::WhileUsed`]: the workload's threads still run and will touch them, so the
    ///   query is repeated (every 100 ms, for at most 3 s) until none is absent. The querying
    ///   thread touches nothing: its own hinting fault could make the kernel move the page (a
    ///   page rondpoint just moved has no last accessor, so the kernel's two-fault filter does
    ///   not hold it back).
    /// - [`Settle::Touch`]: the caller is the page's only user and reads each absent page once,
    ///   which takes the hinting fault where the workload would anyway, then asks again.
    fn placement(&self, buf: &[AtomicU8], settle: Settle) -> Result<Placement> {
        Ok(self.tally(&Self::statuses(buf, settle)?))
    }

    /// Each page's node (or negative errno) in `buf`, as [`Self::placement`] settles them.
    fn statuses(buf: &[AtomicU8], settle: Settle) -> Result<Vec<i32>> {
        let base = buf.as_ptr() as u64;
        let pages: Vec<u64> = (0..buf.len() / PAGE)
            .map(|i| base + (i * PAGE) as u64)
            .collect();
        let mut sys = RealSys::new();
        let mut status = actuate::query(&mut sys, Pid(0), &pages)
            .map_err(|e| anyhow::anyhow!("move_pages query: {e}"))?;
        let started = Instant::now();
        loop {
            let absent: Vec<usize> = (0..status.len())
                .filter(|&i| status[i] == -Errno::ENOENT.0)
                .collect();
            if absent.is_empty() {
                break;
            }
            match settle {
                Settle::Touch => {
                    for &i in &absent {
                        std::hint::black_box(buf[i * PAGE].load(Ordering::Relaxed));
                    }
                }
                Settle::WhileUsed if started.elapsed() < Duration::from_secs(3) => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Settle::WhileUsed => break,
            }
            let again: Vec<u64> = absent.iter().map(|&i| pages[i]).collect();
            let retried = actuate::query(&mut sys, Pid(0), &again)
                .map_err(|e| anyhow::anyhow!("move_pages query: {e}"))?;
            for (&i, s) in absent.iter().zip(retried) {
                status[i] = s;
            }
            if settle == Settle::Touch {
                break;
            }
        }
        Ok(status)
    }

    /// Pages per node of a list of statuses.
    fn tally(&self, statuses: &[i32]) -> Placement {
        let mut p = Placement {
            per_node: vec![0u64; self.nodes],
            unplaced: BTreeMap::new(),
        };
        for &s in statuses {
            match usize::try_from(s) {
                Ok(n) if n < self.nodes => p.per_node[n] += 1,
                _ => *p.unplaced.entry(s).or_default() += 1,
            }
        }
        p
    }

    /// Whether every 2 MiB-aligned chunk of the buffer is on a single node.
    fn huge_uniform(&self, buf: &[AtomicU8]) -> Result<bool> {
        let base = buf.as_ptr() as u64;
        let huge = 2u64 << 20;
        let first = base.div_ceil(huge) * huge;
        let end = base + buf.len() as u64;
        let mut addr = first;
        let mut sys = RealSys::new();
        while addr + huge <= end {
            let pages: Vec<u64> = (0..512).map(|i| addr + i * PAGE as u64).collect();
            let status = actuate::query(&mut sys, Pid(0), &pages)
                .map_err(|e| anyhow::anyhow!("move_pages query: {e}"))?;
            if status.iter().any(|&s| s != status[0]) {
                return Ok(false);
            }
            addr += huge;
        }
        Ok(true)
    }
}

/// How [`Machine::placement`] deals with pages the kernel reports absent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Settle {
    /// Other threads still use the buffer: wait for them to touch the pages.
    WhileUsed,
    /// The caller alone uses the buffer: touch them.
    Touch,
}

/// Where a buffer's pages are: per node, and the pages whose query gave no node, by status
/// (a negative errno: -ENOENT not present, -EFAULT no page, ...).
struct Placement {
    per_node: Vec<u64>,
    unplaced: BTreeMap<i32, u64>,
}

fn line(label: &str, p: &Placement) -> String {
    let mut fields: Vec<String> = p
        .per_node
        .iter()
        .enumerate()
        .map(|(i, n)| format!("N{i}={n}"))
        .collect();
    fields.extend(p.unplaced.iter().map(|(s, n)| format!("status{s}={n}")));
    format!("mgen {label} {}", fields.join(" "))
}

/// A page-aligned buffer that several threads read and write. Its bytes are atomic, so that
/// sharing it is sound; relaxed loads and stores compile to plain byte accesses, so the
/// memory traffic is the workload's. It is allocated zeroed (calloc), so that no page is
/// touched until the workload touches it from a known node.
struct Buffer {
    whole: Box<[AtomicU8]>,
    offset: usize,
    len: usize,
}

impl Buffer {
    /// `bytes` (rounded down to whole pages), page-aligned, untouched.
    fn new(bytes: usize) -> Result<Self> {
        let len = bytes / PAGE * PAGE;
        let whole = bytemuck::allocation::try_zeroed_slice_box::<AtomicU8>(len + PAGE)
            .map_err(|()| anyhow::anyhow!("cannot allocate {len} bytes"))?;
        let base = whole.as_ptr() as usize;
        let offset = base.next_multiple_of(PAGE) - base;
        Ok(Self { whole, offset, len })
    }

    fn bytes(&self) -> &[AtomicU8] {
        &self.whole[self.offset..self.offset + self.len]
    }
}

/// A buffer touched page by page from the calling thread.
fn touched(mib: usize) -> Result<Buffer> {
    touched_in(mib << 20, None)
}

/// A buffer of `bytes` (whole pages) touched page by page from the calling thread after
/// binding it to node `bind` with MPOL_F_NUMA_BALANCING, when given.
fn touched_in(bytes: usize, bind: Option<u16>) -> Result<Buffer> {
    let buffer = Buffer::new(bytes)?;
    let buf = buffer.bytes();
    if let Some(node) = bind {
        RealSys::new()
            .mbind(
                buf.as_ptr() as u64,
                buf.len() as u64,
                MemPolicyMode::Bind,
                &NodeMask::of([node]),
                true,
            )
            .map_err(|e| anyhow::anyhow!("mbind to node {node}: {e}"))?;
    }
    for i in (0..buf.len()).step_by(PAGE) {
        buf[i].store(1, Ordering::Relaxed);
    }
    Ok(buffer)
}

/// Reads (and optionally writes) `buf` until `stop`, returning a checksum so the work is not
/// optimised away.
fn churn(buf: &[AtomicU8], stop: &AtomicBool, write_every: usize) -> u64 {
    let mut sum = 0u64;
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        for i in (0..buf.len()).step_by(64) {
            let v = buf[i].load(Ordering::Relaxed);
            sum = sum.wrapping_add(u64::from(v));
            n += 1;
            if write_every > 0 && n % write_every == 0 {
                buf[i].store(v.wrapping_add(1), Ordering::Relaxed);
            }
        }
    }
    sum
}

fn run_for(secs: f64, stop: &AtomicBool) {
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let m = Machine {
        nodes: cli.nodes,
        cpus_per_node: cli.cpus_per_node,
    };
    if m.nodes == 0 || m.cpus_per_node == 0 {
        bail!("--nodes and --cpus-per-node must be positive");
    }
    let stop = AtomicBool::new(false);
    match cli.workload {
        Workload::Touch { mib, secs } => {
            m.pin(0)?;
            let buf = touched(mib)?;
            // Where first touch put it, before anything moves it: a full node 0 sends part of
            // it to the kernel's fallback node, and the caller compares against this line.
            println!(
                "{}",
                line("touched buffer", &m.placement(buf.bytes(), Settle::Touch)?)
            );
            std::io::Write::flush(&mut std::io::stdout())?;
            std::thread::sleep(Duration::from_secs_f64(secs));
            println!(
                "{} huge_uniform={}",
                line(
                    "placement buffer",
                    &m.placement(buf.bytes(), Settle::Touch)?
                ),
                u8::from(m.huge_uniform(buf.bytes())?)
            );
        }
        Workload::SharedBuffer { mib, secs, .. } | Workload::ReadMostly { mib, secs } => {
            let write_every = if matches!(cli.workload, Workload::ReadMostly { .. }) {
                10_000
            } else {
                0
            };
            let bound = matches!(cli.workload, Workload::SharedBuffer { bound: true, .. });
            shared(m, mib, secs, bound, write_every, &stop)?;
        }
        Workload::Partitioned {
            mib,
            secs,
            bound,
            late,
        } => partitioned(m, mib, secs, bound, late, &stop)?,
        Workload::Misplaced { mib, secs } => misplaced(m, mib, secs, &stop)?,
        Workload::Overflow { over_mib, secs } => overflow(m, over_mib, secs)?,
        Workload::Verify { mib, secs } => verify::run(m, mib, secs)?,
        Workload::Hold { node, mib, secs } => {
            let held = touched_in(mib << 20, Some(node))?;
            println!("mgen holding {mib} MiB on node {node}");
            std::thread::sleep(Duration::from_secs_f64(secs));
            drop(held);
        }
        Workload::ExitEarly { mib, secs } => {
            m.pin(0)?;
            let buffer = touched(mib)?;
            let buf = buffer.bytes();
            std::thread::scope(|s| {
                for node in 0..m.nodes {
                    let cpus = m.cpus_of(node);
                    let stop = &stop;
                    s.spawn(move || {
                        let _ = RealSys::new().sched_setaffinity(Tid(0), &cpus);
                        churn(buf, stop, 0)
                    });
                }
                let started = Instant::now();
                while started.elapsed().as_secs_f64() < secs {
                    std::thread::sleep(Duration::from_millis(10));
                }
                println!("mgen exiting early");
                std::process::exit(3);
            });
        }
    }
    Ok(())
}

/// One thread on node 0 touches a buffer (bound to node 0 if `bound`); then one thread per
/// node (but node 0 if `bound`) reads it, writing a byte every `write_every` reads.
fn shared(
    m: Machine,
    mib: usize,
    secs: f64,
    bound: bool,
    write_every: usize,
    stop: &AtomicBool,
) -> Result<()> {
    m.pin(0)?;
    let buffer = touched_in(mib << 20, bound.then_some(0))?;
    let buf = buffer.bytes();
    // Stamps that the readers never write (they write only every 64th byte), checked at the
    // end: pages moved under the readers keep their data.
    stamp(buf, 1);
    let (placement, uniform) = std::thread::scope(|s| {
        for node in (0..m.nodes).filter(|&n| !(bound && n == 0)) {
            let cpus = m.cpus_of(node);
            s.spawn(move || -> Result<u64> {
                RealSys::new()
                    .sched_setaffinity(Tid(0), &cpus)
                    .map_err(|e| anyhow::anyhow!("pinning: {e}"))?;
                Ok(churn(buf, stop, write_every))
            });
        }
        // Measured while the readers still run (see `Machine::placement`).
        std::thread::sleep(Duration::from_secs_f64(secs));
        let placement = m.placement(buf, Settle::WhileUsed);
        let uniform = m.huge_uniform(buf);
        stop.store(true, Ordering::Relaxed);
        (placement, uniform)
    });
    println!(
        "{} huge_uniform={}",
        line("placement buffer", &placement?),
        u8::from(uniform?)
    );
    print_intact(stamps_changed(buf, 1));
    Ok(())
}

/// A thread on node 0 touches the whole array; then thread i reads and writes block i from
/// node i, started `late` seconds in by a manager thread.
fn partitioned(
    m: Machine,
    mib: usize,
    secs: f64,
    bound: bool,
    late: f64,
    stop: &AtomicBool,
) -> Result<()> {
    m.pin(0)?;
    let buffer = touched_in(mib << 20, bound.then_some(0))?;
    let buf = buffer.bytes();
    let block = buf.len() / m.nodes;
    let placements = std::thread::scope(|s| {
        // The block threads are started (after `late` seconds) and waited for by a manager
        // thread, which runs from the start, as a thread pool's would.
        s.spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(late));
            let workers: Vec<_> = buf
                .chunks(block)
                .take(m.nodes)
                .enumerate()
                .map(|(node, chunk)| {
                    let cpus = m.cpus_of(node);
                    s.spawn(move || -> Result<u64> {
                        RealSys::new()
                            .sched_setaffinity(Tid(0), &cpus)
                            .map_err(|e| anyhow::anyhow!("pinning: {e}"))?;
                        Ok(churn(chunk, stop, 16))
                    })
                })
                .collect();
            for w in workers {
                let _ = w.join();
            }
        });
        std::thread::sleep(Duration::from_secs_f64(late + secs));
        // The blocks are measured together, while their threads still run (see
        // `Machine::placement`).
        let placements =
            Machine::statuses(&buf[..block * m.nodes], Settle::WhileUsed).map(|statuses| {
                statuses
                    .chunks(block / PAGE)
                    .map(|b| m.tally(b))
                    .collect::<Vec<_>>()
            });
        stop.store(true, Ordering::Relaxed);
        placements
    });
    for (node, p) in placements?.iter().enumerate() {
        println!("{}", line(&format!("block {node}"), p));
    }
    Ok(())
}

/// Threads pinned to the wrong nodes, each using a block bound to another node.
fn misplaced(m: Machine, mib: usize, secs: f64, stop: &AtomicBool) -> Result<()> {
    if m.nodes < 4 {
        bail!("misplaced needs at least 4 nodes");
    }
    m.pin(0)?; // the main thread, so that it does not occupy node 3's CPUs
    let block = (mib << 20) / 3;
    let lines = std::thread::scope(|s| {
        let handles: Vec<_> = [(0usize, 1usize), (1, 0), (2, 3)]
            .into_iter()
            .map(|(i, home)| {
                s.spawn(move || -> Result<String> {
                    m.pin(i)?;
                    let buffer = touched_in(block, Some(home as u16))?;
                    let used = buffer.bytes();
                    churn(used, stop, 16);
                    let status = std::fs::read_to_string("/proc/thread-self/status")
                        .context("reading /proc/thread-self/status")?;
                    let allowed = status
                        .lines()
                        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                        .unwrap_or("?")
                        .trim()
                        .to_string();
                    // Its thread is the block's only user.
                    let per = m.placement(used, Settle::Touch)?;
                    Ok(format!(
                        "{} home={home} cpus={allowed}",
                        line(&format!("thread {i}"), &per)
                    ))
                })
            })
            .collect();
        run_for(secs, stop);
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(_) => bail!("a worker thread panicked"),
            })
            .collect::<Result<Vec<String>>>()
    })?;
    for l in lines {
        println!("{l}");
    }
    Ok(())
}

/// Free bytes of a node, from its sysfs meminfo.
fn node_free_bytes(node: usize) -> Result<usize> {
    let path = format!("/sys/devices/system/node/node{node}/meminfo");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let kb = text
        .lines()
        .find(|l| l.contains("MemFree:"))
        .and_then(|l| l.split_whitespace().rev().nth(1))
        .and_then(|v| v.parse::<usize>().ok())
        .with_context(|| format!("no MemFree in {path}"))?;
    Ok(kb * 1024)
}

/// The byte written at the start of page `i` (and its complement at the end).
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(31).wrapping_add(7) % 251) as u8
}

/// Fills node 0 and `over_mib` more from node 0, waits, checks the data, reports placement.
fn overflow(m: Machine, over_mib: usize, secs: f64) -> Result<()> {
    m.pin(0)?;
    let bytes = node_free_bytes(0)? + (over_mib << 20);
    let buffer = Buffer::new(bytes)?;
    let buf = buffer.bytes();
    stamp(buf, 0);
    std::thread::sleep(Duration::from_secs_f64(secs));
    report_intact(&m, buf, stamps_changed(buf, 0))
}

/// Stamps each page of `buf`: [`pattern`] at byte `at`, its complement at the last byte.
fn stamp(buf: &[AtomicU8], at: usize) {
    for (i, page) in buf.chunks(PAGE).enumerate() {
        page[at].store(pattern(i), Ordering::Relaxed);
        page[PAGE - 1].store(!pattern(i), Ordering::Relaxed);
    }
}

/// Pages of `buf` whose stamps ([`stamp`]) changed.
fn stamps_changed(buf: &[AtomicU8], at: usize) -> usize {
    buf.chunks(PAGE)
        .enumerate()
        .filter(|(i, page)| {
            page[at].load(Ordering::Relaxed) != pattern(*i)
                || page[PAGE - 1].load(Ordering::Relaxed) != !pattern(*i)
        })
        .count()
}

/// Prints where `buf` is and whether its data is intact ("mgen checksum ok", or how many pages
/// changed), for the testbed's checks.
fn report_intact(m: &Machine, buf: &[AtomicU8], bad: usize) -> Result<()> {
    println!(
        "{}",
        line("placement buffer", &m.placement(buf, Settle::Touch)?)
    );
    print_intact(bad);
    Ok(())
}

/// "mgen checksum ok" when no page changed, or how many did.
fn print_intact(bad: usize) {
    if bad == 0 {
        println!("mgen checksum ok");
    } else {
        println!("mgen checksum BAD: {bad} pages changed");
    }
}
