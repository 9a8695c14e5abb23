//! Interconnect traffic between the sockets of a machine, counted by its link counters instead
//! of left unmeasured: Intel's UPI (`uncore_upi_N`) and AMD's xGMI (`amd_df`).
//!
//! The counters are the plan's `link-traffic` events ([`crate::pmu::attrs::plan`]), opened
//! once with the probe, system-wide on each CPU of the PMU's `cpumask` (one per socket), as
//! the memory-controller counters are (machine/uncore.rs). Each counts what its socket sends
//! over one link:
//! - UPI: data flits sent, `UNC_UPI_TxL_FLITS.ALL_DATA`, on every `uncore_upi_N` unit (one per
//!   link). A 64-byte line takes 9 data flits: perf's own metric for UPI bandwidth multiplies
//!   the flits by 64/9 (`upi_data_transmit_bw`,
//!   tools/perf/pmu-events/arch/x86/sapphirerapids/spr-metrics.json:
//!   `UNC_UPI_TxL_FLITS.ALL_DATA * 7.111111111111111`).
//! - xGMI: the data fabric's outbound data beats of each link (`amd_df`, one event per link,
//!   Zen 4 links 0-7 and Zen 5 links 0-5 as perf's amdzen4/amdzen5 data-fabric.json list
//!   them), 64 bytes each; EPYC has at most two sockets.
//!
//! Where a link leads: with two sockets, to the other one. With more, the kernel says, from
//! Linux 5.19 on Skylake-SP, Ice Lake-SP and Sapphire Rapids: `uncore_upi_X/dieY` holds
//! `upi_Z,die_W`, link X of die Y goes to link Z of die W, and a link that is not connected
//! has no such file (Documentation/ABI/testing/sysfs-devices-mapping). The die numbers are
//! the logical dies, one per socket on these Xeons: taken as the sockets'
//! physical_package_id. Each pair of sockets that a link joins is one [`LinkCounters`], its
//! bytes each way the sums of the links' units.
//!
//! Measured only where the sockets and the topology's nodes match one to one: one node with
//! CPUs and memory per socket. With sub-NUMA clustering one socket's several nodes share its
//! links; on more than two sockets with an older kernel the links' ends are not known. There
//! the links stay unmeasured, and the capability says why.

use super::uncore::{MachinePmus, open_error, package_of, unit_cpus};
use crate::pmu::PmuKind;
use crate::pmu::events::Signal;
use crate::sys::{PerfFd, PerfReading, Sys};
use crate::sysfs::SysfsRoot;
use rondpoint_model::{LinkCounters, NodeId, Pid, Topology};
use thiserror::Error;

/// Why the links are not measured.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum LinksUnmeasured {
    #[error(
        "no interconnect counters are read (no uncore_upi or amd_df PMU with a catalogued \
         link event)"
    )]
    NoCounters,
    #[error("link counters present, links not measured: {0}")]
    Shape(String),
    #[error("{0}")]
    Open(String),
}

/// Bytes per UPI data flit: a 64-byte line is 9 flits (see the module's documentation).
const BYTES_PER_FLIT: f64 = 64.0 / 9.0;
/// Bytes per xGMI data beat (the event lists' "Data beats (64 bytes)").
const BYTES_PER_BEAT: f64 = 64.0;

/// One opened counter: a link's flits or beats on one socket's CPU, what one is worth, and
/// the sockets (indices into [`SocketLinks::nodes`]) its link joins, sender first.
#[derive(Debug)]
struct Counter {
    fd: PerfFd,
    last: PerfReading,
    bytes_per_count: f64,
    from: usize,
    to: usize,
}

/// The link counters (UPI or xGMI) of a machine of one node per socket, and the links they
/// measure.
#[derive(Debug)]
pub(super) struct SocketLinks {
    counters: Vec<Counter>,
    /// The node of each socket.
    nodes: Vec<NodeId>,
}

/// Each socket with memory and its node (physical_package_id, node), if the machine has two
/// or more sockets of one node each.
fn socket_nodes(
    sysfs: &SysfsRoot,
    topology: &Topology,
) -> Result<Vec<(u32, NodeId)>, LinksUnmeasured> {
    let mut found: Vec<(u32, NodeId)> = Vec::new();
    for n in topology.nodes() {
        let Some(&cpu) = n.cpus.first() else {
            continue;
        };
        if n.mem_total_bytes == 0 {
            continue;
        }
        let Some(package) = package_of(sysfs, cpu) else {
            return Err(LinksUnmeasured::Shape(format!(
                "the socket of {cpu} (its physical_package_id) is unreadable"
            )));
        };
        if found.iter().any(|(p, _)| *p == package) {
            return Err(LinksUnmeasured::Shape(format!(
                "socket {package} holds several nodes (sub-NUMA clustering): they share its \
                 links"
            )));
        }
        found.push((package, n.id));
    }
    if found.len() < 2 {
        return Err(LinksUnmeasured::Shape(format!(
            "{} socket with memory: no link between sockets",
            found.len()
        )));
    }
    Ok(found)
}

/// Where each unit's link leads from each socket: `ends(unit, socket index)` is the socket
/// index at its other end, `None` for a link that is not connected.
struct LinkEnds<'a> {
    sysfs: &'a SysfsRoot,
    sockets: &'a [(u32, NodeId)],
}

impl LinkEnds<'_> {
    fn file(&self, unit: &str, package: u32) -> String {
        format!("bus/event_source/devices/{unit}/die{package}")
    }

    /// With more than two sockets, the kernel must say where links lead (some unit has a
    /// `dieY` file).
    fn known(&self, units: &[&str]) -> Result<(), LinksUnmeasured> {
        if self.sockets.len() == 2
            || units.iter().any(|u| {
                self.sockets
                    .iter()
                    .any(|(p, _)| self.sysfs.path(&self.file(u, *p)).exists())
            })
        {
            return Ok(());
        }
        Err(LinksUnmeasured::Shape(format!(
            "{} sockets, and the kernel does not say which socket each UPI link leads to \
             (uncore_upi_N/dieY, Linux 5.19 and later)",
            self.sockets.len()
        )))
    }

    fn ends(&self, unit: &str, from: usize) -> Result<Option<usize>, LinksUnmeasured> {
        if self.sockets.len() == 2 {
            return Ok(Some(1 - from));
        }
        let (package, _) = self.sockets[from];
        let rel = self.file(unit, package);
        let Ok(Some(text)) = self.sysfs.read_optional(&rel) else {
            return Ok(None);
        };
        let die = text
            .trim()
            .split(',')
            .find_map(|f| f.strip_prefix("die_"))
            .and_then(|d| d.parse::<u32>().ok());
        let bad = || LinksUnmeasured::Shape(format!("{rel}: '{}' is not upi_Z,die_W", text.trim()));
        let die = die.ok_or_else(bad)?;
        let to = self.sockets.iter().position(|(p, _)| *p == die);
        to.filter(|&t| t != from).map(Some).ok_or_else(bad)
    }
}

impl SocketLinks {
    /// Opens the plan's UPI counters on this machine. `Err` says why the links are not
    /// measured (no such counters, a machine that is not sockets of one node each, links whose
    /// ends are not known, or a counter that did not open: those opened are closed again).
    pub(super) fn open(
        sys: &mut dyn Sys,
        sysfs: &SysfsRoot,
        machine: &MachinePmus,
        topology: &Topology,
    ) -> Result<Self, LinksUnmeasured> {
        let planned = machine.uncore(|s| s == Signal::LinkTraffic);
        if planned.is_empty() {
            return Err(LinksUnmeasured::NoCounters);
        }
        let sockets = socket_nodes(sysfs, topology)?;
        let ends = LinkEnds {
            sysfs,
            sockets: &sockets,
        };
        let units: Vec<&str> = planned.iter().map(|a| a.unit.as_str()).collect();
        ends.known(&units)?;
        let mut links = SocketLinks {
            counters: Vec::new(),
            nodes: sockets.iter().map(|s| s.1).collect(),
        };
        for a in planned {
            for cpu in unit_cpus(&machine.pmus, &a.unit) {
                let Some(from) =
                    package_of(sysfs, cpu).and_then(|p| sockets.iter().position(|(q, _)| *q == p))
                else {
                    continue;
                };
                let to = match ends.ends(&a.unit, from) {
                    Ok(Some(to)) => to,
                    Ok(None) => continue,
                    Err(e) => {
                        links.close(sys);
                        return Err(e);
                    }
                };
                let bytes_per_count = match a.event.pmu {
                    PmuKind::AmdDf => BYTES_PER_BEAT,
                    _ => BYTES_PER_FLIT,
                };
                match sys.perf_open(&a.attr, Pid(-1), cpu.0 as i32) {
                    Ok(fd) => links.counters.push(Counter {
                        fd,
                        last: PerfReading::default(),
                        bytes_per_count,
                        from,
                        to,
                    }),
                    Err(e) => {
                        links.close(sys);
                        return Err(LinksUnmeasured::Open(open_error(a, cpu, e)));
                    }
                }
            }
        }
        let all_counted = (0..sockets.len()).all(|s| links.counters.iter().any(|c| c.from == s));
        if !all_counted {
            links.close(sys);
            return Err(LinksUnmeasured::Shape(
                "the UPI units' cpumasks do not name a CPU of each socket".into(),
            ));
        }
        Ok(links)
    }

    fn close(&mut self, sys: &mut dyn Sys) {
        for c in self.counters.drain(..) {
            sys.perf_close(c.fd);
        }
    }

    /// Each linked pair of sockets' traffic since the last read, each way, scaled for
    /// multiplexing, pairs in socket order; `None` when a counter could not be read.
    pub(super) fn read(&mut self, sys: &mut dyn Sys) -> Option<Vec<LinkCounters>> {
        let n = self.nodes.len();
        let mut bytes = vec![vec![0f64; n]; n];
        let mut linked = vec![vec![false; n]; n];
        let mut complete = true;
        for c in &mut self.counters {
            match sys.perf_read(c.fd) {
                Ok(now) => {
                    bytes[c.from][c.to] += now.scaled_since(&c.last) as f64 * c.bytes_per_count;
                    c.last = now;
                }
                Err(_) => complete = false,
            }
            linked[c.from.min(c.to)][c.from.max(c.to)] = true;
        }
        let mut out = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                if linked[a][b] {
                    out.push(LinkCounters {
                        a: self.nodes[a],
                        b: self.nodes[b],
                        bytes_a_to_b: bytes[a][b].round() as u64,
                        bytes_b_to_a: bytes[b][a].round() as u64,
                        capacity_bytes_per_s: None,
                    });
                }
            }
        }
        complete.then_some(out)
    }
}

impl<S: Sys> super::LinuxMachine<S> {
    /// Opens the UPI link counters, if the machine has them and is sockets of one node each
    /// whose links' ends are known (once, with the probe); else why the links are not
    /// measured.
    pub(super) fn open_links(&mut self, machine: &MachinePmus) -> Option<String> {
        match SocketLinks::open(&mut self.sys, &self.sysfs, machine, &self.topology) {
            Ok(links) => {
                self.links = Some(links);
                None
            }
            Err(why) => Some(why.to_string()),
        }
    }

    /// The epoch's measured link traffic (empty without link counters, or when one could not
    /// be read this epoch).
    pub(super) fn measure_links(&mut self) -> Vec<LinkCounters> {
        let Some(links) = self.links.as_mut() else {
            return Vec::new();
        };
        links.read(&mut self.sys).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
