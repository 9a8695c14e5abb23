//! Interconnect traffic between the two sockets of a two-socket Intel machine, counted by its
//! UPI link counters (`uncore_upi_N`) instead of left unmeasured.
//!
//! The counters are the plan's `link-traffic` events ([`crate::pmu::attrs::plan`]: data flits
//! sent, `UNC_UPI_TxL_FLITS.ALL_DATA`, on every unit of such a PMU), opened once with the
//! probe, system-wide on each CPU of the unit's `cpumask` (one per socket), as the
//! memory-controller counters are (machine/uncore.rs). A socket's units together count every
//! data flit it sends over UPI; with two sockets, all of it goes to the other one. A 64-byte
//! line takes 9 data flits: perf's own metric for UPI bandwidth multiplies the flits by 64/9
//! (`upi_data_transmit_bw`, tools/perf/pmu-events/arch/x86/sapphirerapids/spr-metrics.json:
//! `UNC_UPI_TxL_FLITS.ALL_DATA * 7.111111111111111`).
//!
//! Measured only where the sockets and the topology's nodes match one to one: exactly two
//! sockets, one node with CPUs and memory each. Which UPI port leads to which socket is not in
//! sysfs on older kernels, so on four or eight sockets a socket's flits cannot be told apart by
//! link; and with sub-NUMA clustering one socket's several nodes share its links. There the
//! links stay unmeasured, and the capability says why.

use super::uncore::{MachinePmus, open_error, package_of, unit_cpus};
use crate::pmu::events::Signal;
use crate::sys::{PerfFd, PerfReading, Sys};
use crate::sysfs::SysfsRoot;
use rondpoint_model::{LinkCounters, NodeId, Pid, Topology};
use thiserror::Error;

/// Why the links are not measured.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum LinksUnmeasured {
    #[error("no interconnect counters are read (no uncore_upi PMU with a catalogued event)")]
    NoCounters,
    #[error("UPI counters present, links not measured: {0}")]
    Shape(String),
    #[error("{0}")]
    Open(String),
}

/// Bytes per data flit: a 64-byte line is 9 flits (see the module's documentation).
const BYTES_PER_FLIT: f64 = 64.0 / 9.0;

/// One opened counter: a unit's flits on one socket's CPU.
#[derive(Debug)]
struct Counter {
    fd: PerfFd,
    last: PerfReading,
    /// 0 or 1: which of the two sockets sends what it counts.
    side: usize,
}

/// The UPI counters of a two-socket machine and the link they measure.
#[derive(Debug)]
pub(super) struct UpiLinks {
    counters: Vec<Counter>,
    /// The node of each socket (side 0, side 1).
    nodes: [NodeId; 2],
}

/// The node of each of the machine's two sockets, if it has two sockets of one node each.
fn socket_nodes(
    sysfs: &SysfsRoot,
    topology: &Topology,
) -> Result<[(u32, NodeId); 2], LinksUnmeasured> {
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
    match found.as_slice() {
        [a, b] => Ok([*a, *b]),
        _ => Err(LinksUnmeasured::Shape(format!(
            "{} sockets: which UPI port leads to which socket is not known, so flits are told \
             apart by link only between two sockets",
            found.len()
        ))),
    }
}

impl UpiLinks {
    /// Opens the plan's UPI counters on this machine. `Err` says why the links are not
    /// measured (no such counters, a machine that is not two sockets of one node each, or a
    /// counter that did not open: those opened are closed again).
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
        let sides = socket_nodes(sysfs, topology)?;
        let mut links = UpiLinks {
            counters: Vec::new(),
            nodes: [sides[0].1, sides[1].1],
        };
        for a in planned {
            for cpu in unit_cpus(&machine.pmus, &a.unit) {
                let Some(side) =
                    package_of(sysfs, cpu).and_then(|p| sides.iter().position(|(q, _)| *q == p))
                else {
                    continue;
                };
                match sys.perf_open(&a.attr, Pid(-1), cpu.0 as i32) {
                    Ok(fd) => links.counters.push(Counter {
                        fd,
                        last: PerfReading::default(),
                        side,
                    }),
                    Err(e) => {
                        links.close(sys);
                        return Err(LinksUnmeasured::Open(open_error(a, cpu, e)));
                    }
                }
            }
        }
        let sides_counted = (0..2).all(|s| links.counters.iter().any(|c| c.side == s));
        if !sides_counted {
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

    /// The link's traffic since the last read, each way, scaled for multiplexing; `None` when
    /// a counter could not be read.
    pub(super) fn read(&mut self, sys: &mut dyn Sys) -> Option<LinkCounters> {
        let mut flits = [0u64; 2];
        let mut complete = true;
        for c in &mut self.counters {
            match sys.perf_read(c.fd) {
                Ok(now) => {
                    flits[c.side] = flits[c.side].saturating_add(now.scaled_since(&c.last));
                    c.last = now;
                }
                Err(_) => complete = false,
            }
        }
        let bytes = |f: u64| (f as f64 * BYTES_PER_FLIT).round() as u64;
        complete.then(|| LinkCounters {
            a: self.nodes[0],
            b: self.nodes[1],
            bytes_a_to_b: bytes(flits[0]),
            bytes_b_to_a: bytes(flits[1]),
            capacity_bytes_per_s: None,
        })
    }
}

impl<S: Sys> super::LinuxMachine<S> {
    /// Opens the UPI link counters, if the machine has them and is two sockets of one node
    /// each (once, with the probe); else why the links are not measured.
    pub(super) fn open_upi(&mut self, machine: &MachinePmus) -> Option<String> {
        match UpiLinks::open(&mut self.sys, &self.sysfs, machine, &self.topology) {
            Ok(links) => {
                self.upi = Some(links);
                None
            }
            Err(why) => Some(why.to_string()),
        }
    }

    /// The epoch's measured link traffic (empty without UPI counters, or when one could not
    /// be read this epoch).
    pub(super) fn measure_links(&mut self) -> Vec<LinkCounters> {
        let Some(upi) = self.upi.as_mut() else {
            return Vec::new();
        };
        upi.read(&mut self.sys).into_iter().collect()
    }
}

#[cfg(test)]
mod tests;
