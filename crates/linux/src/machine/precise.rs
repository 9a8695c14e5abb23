//! Precise memory-access sampling: AMD IBS op, Intel PEBS (load latency, and stores where
//! the core has a store event) and Arm SPE (loads and stores, from its AUX buffer: see
//! `machine/spe.rs`), the samples Carrefour was built on ([Dashti13 §3.1]: IBS,
//! "the accessed data address and the node it came from"), in place of page faults.
//!
//! The events are the plan's ([`crate::pmu::attrs::plan`]: `precise-loads` and
//! `precise-stores`, encoded with the PMU's own format files and checked against perf's
//! encoding by scripts/perf-equivalence), opened system-wide, one per CPU (pid -1), as the
//! original Carrefour and `perf mem record -a` do: IBS op cannot follow a task on the kernels
//! rondpoint supports (arch/x86/events/amd/ibs.c registers it with `perf_invalid_context`), and
//! one event per CPU costs the same for every process, however many threads they start. The
//! samples of processes rondpoint does not manage are dropped when drained. This needs
//! CAP_PERFMON (or CAP_SYS_ADMIN, or kernel.perf_event_paranoid <= 0); without it, or without
//! such a PMU (every VM here), the page-fault sampler stands in, and the report says why.
//!
//! A sample's page node is found as a page-fault sample's is (move_pages on its page); its
//! accessing node is its CPU's. What the event adds: whether it was a load or a store, its
//! latency, and where it was served from (IBS's DataSrc and RmtNode, PEBS's data source),
//! which makes `dram` known (SPE: its LLC-refill event, the access missed the last-level
//! cache).
//!
//! Sapphire Rapids' load-latency event must be scheduled with `mem-loads-aux` as its group
//! leader (arch/x86/events/intel/core.c, `require_mem_loads_aux_event`): the leader is opened
//! on each CPU as a plain counter, and the load event as its member.
//!
//! The period is the policy's ([`rondpoint_model::SamplingRequest::period_cycles`]), set on
//! every event when it changes (ioctl PERF_EVENT_IOC_PERIOD): for IBS op counting dispatched
//! ops (`cnt_ctl=1`) a period in cycles is taken as ops at one op per cycle, rounded to the 16
//! IBS needs; for PEBS, as that many qualifying loads or stores (the events count accesses, not
//! cycles), which samples a busier program more, as IBS does.

use super::LinuxMachine;
use super::spe::SpeState;
use super::uncore::MachinePmus;
use super::uncore::system_wide_hint;
use crate::capabilities::PreciseSampling;
use crate::perf::ring::{self, PERF_AUX_FLAG_TRUNCATED, RawSample, Record, SampleFormat};
use crate::perf::spe::SpeRecord;
use crate::perf::{DataSource, decode_data_src, decode_ibs_op};
use crate::pmu::PmuKind;
use crate::pmu::attrs::PlannedAttr;
use crate::pmu::events::Signal;
use crate::sys::{Errno, PerfAttr, PerfFd, Sys};
use rondpoint_model::{AccessKind, CpuId, Pid, Sample, SampleSource, Tid};
use thiserror::Error;

/// The catalogue's name of the group leader Sapphire Rapids' load-latency event needs.
const AUX_LEADER: &str = "mem-loads-aux";

/// IBS refuses a period with any of its low 4 bits set (`perf_ibs_init`).
const IBS_PERIOD_STEP: u64 = 16;

/// The shortest and longest periods rondpoint sets: below 1,024 events the sampling interrupt
/// alone would slow the program by several percent (chosen; the kernel throttles well before
/// `perf_event_max_sample_rate`); IBS op's count is 27 bits of 16 ops
/// (`IBS_OP_MAX_CNT << 4`, with the extended count).
const MIN_PERIOD: u64 = 1_024;
const MAX_PERIOD: u64 = (1 << 27) - 16;

/// Arm SPE's buffers, per CPU: the ring holds only context switches (24-byte records with
/// their sample id; 16 pages: 2,700 switches between drains), the AUX buffer the records
/// (at most 64 bytes each: 512 KiB, 8,000 records, published every 64 KiB by the
/// watermark). perf record's default AUX buffer for SPE is 4 MiB, for a file rather than a
/// drain every epoch (tools/perf/arch/arm64/util/arm-spe.c).
const SPE_RING_PAGES: usize = 16;
const SPE_AUX_PAGES: usize = 128;

/// Why precise sampling is not to be had.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum PreciseError {
    #[error("no IBS op or PEBS event is catalogued for this machine's PMUs")]
    NotCatalogued,
    #[error("perf_event_open of {what} on CPU {cpu}: {}{}", errno.name(), system_wide_hint(*errno))]
    Open {
        what: &'static str,
        cpu: u32,
        errno: Errno,
    },
}

/// One sampling event's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// IBS op: every op, loads and stores told apart by its registers.
    Ibs,
    /// PEBS load latency.
    Loads,
    /// PEBS stores.
    Stores,
    /// Arm SPE: loads and stores, from the AUX buffer.
    Spe,
}

/// The events of the plan that sample, each with its leader when it needs one.
#[derive(Clone, Debug)]
pub(super) struct PreciseEvents {
    samplers: Vec<(Role, PerfAttr, Option<PerfAttr>)>,
    /// What samples, in words.
    pub(super) describe: String,
}

impl PreciseEvents {
    /// The precise events of a plan's attrs; `Err` says why there are none usable.
    pub(super) fn of(planned: &[PlannedAttr]) -> Result<Self, PreciseError> {
        let precise: Vec<&PlannedAttr> = planned
            .iter()
            .filter(|a| matches!(a.event.signal, Signal::PreciseLoads | Signal::PreciseStores))
            .collect();
        if precise.is_empty() {
            return Err(PreciseError::NotCatalogued);
        }
        let leader = precise
            .iter()
            .find(|a| a.event.name == AUX_LEADER)
            .map(|a| counting(&a.attr));
        let mut samplers = Vec::new();
        let mut names = Vec::new();
        for a in precise.iter().filter(|a| a.event.name != AUX_LEADER) {
            let role = match (a.event.pmu, a.event.signal) {
                (PmuKind::IbsOp, _) => Role::Ibs,
                (PmuKind::Spe, _) => Role::Spe,
                (_, Signal::PreciseStores) => Role::Stores,
                _ => Role::Loads,
            };
            let needs_leader = role == Role::Loads && leader.is_some();
            let mut attr = a.attr.clone();
            // System-wide, one per CPU: nothing to inherit.
            attr.inherit = false;
            if role == Role::Spe {
                // The task of each record comes from the CPU's context switches (spe.rs).
                attr.sample_type = SampleFormat::TID | SampleFormat::TIME | SampleFormat::CPU;
                attr.context_switch = true;
                attr.ring_pages = SPE_RING_PAGES;
                attr.aux_pages = SPE_AUX_PAGES;
            }
            samplers.push((role, attr, needs_leader.then(|| leader.clone()).flatten()));
            names.push(a.id());
        }
        Ok(Self {
            samplers,
            describe: format!(
                "precise samples ({}), system-wide on every CPU",
                names.join(", ")
            ),
        })
    }

    /// The sample source of these events.
    fn source(&self) -> SampleSource {
        if self.samplers.iter().any(|s| s.0 == Role::Ibs) {
            SampleSource::Ibs
        } else if self.samplers.iter().any(|s| s.0 == Role::Spe) {
            SampleSource::Spe
        } else {
            SampleSource::Pebs
        }
    }
}

/// What the precise sampler would sample with a plan's attrs (its description), or why it
/// would not: for reports about a machine rondpoint does not run on (`rondpoint doctor`).
pub fn precise_events_of(planned: &[PlannedAttr]) -> Result<String, PreciseError> {
    PreciseEvents::of(planned).map(|e| e.describe)
}

/// A leader's attr as a plain counter: it only has to be there.
fn counting(attr: &PerfAttr) -> PerfAttr {
    PerfAttr {
        sample_period: 0,
        sample_type: 0,
        ring_pages: 0,
        precise_ip: 0,
        inherit: false,
        ..attr.clone()
    }
}

/// The period an event takes for a policy's period in cycles (see the module's documentation).
fn period_for(role: Role, cycles: u64) -> u64 {
    let p = cycles.clamp(MIN_PERIOD, MAX_PERIOD);
    match role {
        Role::Ibs => p / IBS_PERIOD_STEP * IBS_PERIOD_STEP,
        // SPE's interval counts operations, as IBS op's; the driver rounds it up to the
        // hardware's minimum (caps/min_interval).
        Role::Loads | Role::Stores | Role::Spe => p,
    }
}

/// One opened sampling event.
#[derive(Debug)]
struct Opened {
    fd: PerfFd,
    role: Role,
    /// Its records' layout (its attr's sample_type).
    format: SampleFormat,
    /// The CPU it samples.
    cpu: u32,
    /// SPE's AUX decoding state.
    spe: Option<SpeState>,
}

/// The precise sampler's open events.
#[derive(Debug)]
pub(super) struct Precise {
    describe: String,
    source: SampleSource,
    rings: Vec<Opened>,
    leaders: Vec<PerfFd>,
    period: Option<u64>,
    buffer: Vec<u8>,
    lost: u64,
    throttled: u64,
}

/// A precise sample as drained: its record, and what its event samples (for SPE, the
/// record decoded from the AUX buffer, whose task, CPU and address `raw` holds).
pub(super) struct Drawn {
    pub raw: RawSample,
    role: Role,
    spe: Option<SpeRecord>,
}

impl Precise {
    /// Opens the events on `cpus` (every one, or none: what opened is closed again on the
    /// first refusal, whose reason is the error).
    pub(super) fn open(
        sys: &mut dyn Sys,
        events: &PreciseEvents,
        cpus: &[u32],
        period_cycles: Option<u64>,
    ) -> Result<Self, PreciseError> {
        let mut p = Precise {
            describe: events.describe.clone(),
            source: events.source(),
            rings: Vec::new(),
            leaders: Vec::new(),
            period: None,
            buffer: Vec::new(),
            lost: 0,
            throttled: 0,
        };
        for &cpu in cpus {
            for (role, attr, leader) in &events.samplers {
                let mut attr = attr.clone();
                if let Some(c) = period_cycles {
                    attr.sample_period = period_for(*role, c);
                }
                let opened = match leader {
                    Some(l) => sys
                        .perf_open(l, Pid(-1), cpu as i32)
                        .map_err(|errno| PreciseError::Open {
                            what: AUX_LEADER,
                            cpu,
                            errno,
                        })
                        .and_then(|lfd| {
                            p.leaders.push(lfd);
                            sys.perf_open_member(&attr, Pid(-1), cpu as i32, lfd)
                                .map_err(|errno| PreciseError::Open {
                                    what: "the load-latency event",
                                    cpu,
                                    errno,
                                })
                        }),
                    None => sys.perf_open(&attr, Pid(-1), cpu as i32).map_err(|errno| {
                        PreciseError::Open {
                            what: "the precise sampler",
                            cpu,
                            errno,
                        }
                    }),
                };
                match opened {
                    Ok(fd) => p.rings.push(Opened {
                        fd,
                        role: *role,
                        format: SampleFormat {
                            sample_type: attr.sample_type,
                        },
                        cpu,
                        spe: (*role == Role::Spe).then(SpeState::default),
                    }),
                    Err(why) => {
                        p.close(sys);
                        return Err(why);
                    }
                }
            }
        }
        p.period = period_cycles;
        Ok(p)
    }

    /// What samples, in words.
    pub(super) fn describe(&self) -> &str {
        &self.describe
    }

    /// The samples' source.
    pub(super) fn source(&self) -> SampleSource {
        self.source
    }

    /// Follows the policy's period (cycles) when it changed; a refusal is returned once (the
    /// events keep their period, and the same period is not tried again).
    pub(super) fn set_period(&mut self, sys: &mut dyn Sys, cycles: u64) -> Result<(), Errno> {
        if self.period == Some(cycles) {
            return Ok(());
        }
        self.period = Some(cycles);
        for o in &self.rings {
            sys.perf_set_period(o.fd, period_for(o.role, cycles))?;
        }
        Ok(())
    }

    /// Records lost (to full rings; SPE's also to a full AUX buffer, and those no task
    /// could be found for), and throttlings, so far.
    pub(super) fn losses(&self) -> (u64, u64) {
        let unattributed: u64 = self
            .rings
            .iter()
            .filter_map(|o| o.spe.as_ref())
            .map(|s| s.unattributed)
            .sum();
        (self.lost + unattributed, self.throttled)
    }

    /// Closes every event.
    pub(super) fn close(&mut self, sys: &mut dyn Sys) {
        for o in self.rings.drain(..) {
            sys.perf_close(o.fd);
        }
        for fd in self.leaders.drain(..) {
            sys.perf_close(fd);
        }
    }

    /// Drains every ring: the samples of the processes `keep` accepts, counting the records
    /// lost and the throttlings (totals over the sampler's life). An unreadable ring's bytes are skipped (the error says why).
    pub(super) fn drain(
        &mut self,
        sys: &mut dyn Sys,
        keep: impl Fn(u32) -> bool,
    ) -> (Vec<Drawn>, Option<String>) {
        let mut out = Vec::new();
        let mut error = None;
        for o in &mut self.rings {
            self.buffer.clear();
            if sys.perf_drain(o.fd, &mut self.buffer).is_err() {
                continue;
            }
            let records = match ring::parse(&self.buffer, &o.format) {
                Ok((records, _)) => records,
                Err(e) => {
                    error = Some(format!("a precise sampler's ring is unreadable: {e}"));
                    continue;
                }
            };
            for r in records {
                match r {
                    Record::Sample(s) if s.pid.is_some_and(&keep) => out.push(Drawn {
                        raw: s,
                        role: o.role,
                        spe: None,
                    }),
                    Record::Switch {
                        pid,
                        tid,
                        time: Some(t),
                    } => {
                        if let Some(spe) = o.spe.as_mut() {
                            spe.switched_in(t, pid, tid);
                        }
                    }
                    Record::Aux { flags, .. } if flags & PERF_AUX_FLAG_TRUNCATED != 0 => {
                        self.lost += 1;
                    }
                    Record::Lost { lost, .. } => self.lost += lost,
                    Record::Throttle => self.throttled += 1,
                    _ => {}
                }
            }
            if let Some(e) = drain_spe(sys, o, &mut self.buffer, &keep, &mut out) {
                error = Some(e);
            }
        }
        (out, error)
    }
}

/// Drains an SPE event's AUX buffer (through `buffer`) into `out`: the records of the
/// processes `keep` accepts. Nothing for other events; the error says why the buffer was
/// unreadable.
fn drain_spe(
    sys: &mut dyn Sys,
    o: &mut Opened,
    buffer: &mut Vec<u8>,
    keep: &impl Fn(u32) -> bool,
    out: &mut Vec<Drawn>,
) -> Option<String> {
    let spe = o.spe.as_mut()?;
    buffer.clear();
    let conversion = match sys.perf_drain_aux(o.fd, buffer) {
        Ok(c) => c,
        Err(e) => return Some(format!("an SPE AUX buffer is unreadable: {}", e.name())),
    };
    let before = spe.unattributed;
    let (records, error) = spe.records(buffer, conversion);
    let untimed = conversion.is_none() && spe.unattributed > before;
    for a in records.into_iter().filter(|a| keep(a.pid)) {
        out.push(Drawn {
            raw: RawSample {
                pid: Some(a.pid),
                tid: Some(a.tid),
                time: Some(a.time),
                cpu: Some(o.cpu),
                addr: a.record.va,
                ..RawSample::default()
            },
            role: Role::Spe,
            spe: Some(a.record),
        });
    }
    if untimed {
        return Some(
            "SPE records cannot be given their task: the kernel offers no time conversion \
             for the event (cap_user_time_zero), so they are counted lost"
                .into(),
        );
    }
    error.map(|e| format!("SPE data dropped: {e}"))
}

/// Whether an address is in the kernel's half of the address space (x86-64 and arm64 both put
/// the kernel at the top: bit 63 set). IBS samples the kernel too (it cannot exclude it).
fn kernel_address(addr: u64) -> bool {
    addr >> 63 == 1
}

/// What a precise sample says of its access: address, load or store, latency in cycles, and
/// whether DRAM served it. `None` for a sample without a user-space data address (an IBS op
/// that was not a memory access, whose address the hardware did not latch, or that the
/// process made in the kernel).
pub(super) fn access_of(d: &Drawn) -> Option<(u64, AccessKind, Option<u32>, Option<bool>)> {
    let access = access_any(d)?;
    (!kernel_address(access.0)).then_some(access)
}

/// [`access_of`], kernel addresses included.
fn access_any(d: &Drawn) -> Option<(u64, AccessKind, Option<u32>, Option<bool>)> {
    if d.role == Role::Ibs {
        let op = d.raw.raw.as_deref().and_then(decode_ibs_op)?;
        if !op.is_load && !op.is_store {
            return None;
        }
        // The kernel fills PERF_SAMPLE_ADDR from IbsDcLinAd since 6.1; older kernels leave it
        // 0, and the raw registers have it.
        let addr = d.raw.addr.filter(|&a| a != 0).or(op.lin_addr)?;
        let kind = if op.is_store {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        let latency = (op.dc_miss && op.is_load).then_some(u32::from(op.dc_miss_latency));
        return Some((addr, kind, latency, dram(op.data_source())));
    }
    if let Some(r) = d.spe {
        // Only loads and stores sample (the event's filters); their data address.
        let kind = match r.store? {
            true => AccessKind::Write,
            false => AccessKind::Read,
        };
        let latency = r.latency.and_then(|l| u32::try_from(l).ok());
        return Some((r.va.filter(|&a| a != 0)?, kind, latency, r.llc_miss()));
    }
    let addr = d.raw.addr.filter(|&a| a != 0)?;
    let kind = if d.role == Role::Stores {
        AccessKind::Write
    } else {
        AccessKind::Read
    };
    let latency = d
        .raw
        .weight
        .and_then(|w| u32::try_from(w & 0xffff_ffff).ok());
    let source = d.raw.data_src.map_or(DataSource::Unknown, decode_data_src);
    Some((addr, kind, latency, dram(source)))
}

/// Whether a data source is DRAM (`None`: not said).
fn dram(source: DataSource) -> Option<bool> {
    match source {
        DataSource::LocalDram | DataSource::RemoteDram | DataSource::Cxl => Some(true),
        DataSource::Unknown => None,
        _ => Some(false),
    }
}

/// The precise sampler's state in the machine: the events the plan gives (found once), the
/// open sampler, and why it could not open (not tried again).
#[derive(Debug, Default)]
pub(super) struct PreciseState {
    events: Option<Result<PreciseEvents, PreciseError>>,
    open: Option<Precise>,
    failed: Option<PreciseError>,
}

impl<S: Sys> LinuxMachine<S> {
    /// The precise events of this machine's plan, found once: with the probe, or when
    /// sampling is asked for before it.
    fn precise_events(&mut self) -> Result<PreciseEvents, PreciseError> {
        if let Some(e) = &self.precise.events {
            return e.clone();
        }
        let events = PreciseEvents::of(&self.machine_pmus().attrs);
        self.precise.events = Some(events.clone());
        events
    }

    /// Whether precise sampling works here, for the probe (with the machine's plan): its
    /// events opened on the first CPU and closed again.
    pub(super) fn probe_precise(&mut self, machine: &MachinePmus) -> PreciseSampling {
        let events = PreciseEvents::of(&machine.attrs);
        self.precise.events = Some(events.clone());
        let events = match events {
            Ok(e) => e,
            Err(why) => return PreciseSampling::Absent(why.to_string()),
        };
        let first: Vec<u32> = self.all_cpus().into_iter().take(1).collect();
        match Precise::open(&mut self.sys, &events, &first, None) {
            Ok(mut p) => {
                p.close(&mut self.sys);
                PreciseSampling::Available(events.describe)
            }
            Err(why) => PreciseSampling::Failed(why.to_string()),
        }
    }

    /// Every CPU of the topology.
    pub(super) fn all_cpus(&self) -> Vec<u32> {
        self.topology
            .nodes()
            .iter()
            .flat_map(|n| n.cpus.iter().map(|c| c.0))
            .collect()
    }

    /// Opens (or closes) the precise sampler as the policy's request wants: open while it asks
    /// for access samples (a period), at that period. Whether it samples now: when it does
    /// not, page faults stand in.
    pub(super) fn attach_precise(&mut self) -> bool {
        let Some(period) = self.sampling.period_cycles else {
            if let Some(mut p) = self.precise.open.take() {
                p.close(&mut self.sys);
            }
            return false;
        };
        if let Some(p) = self.precise.open.as_mut() {
            if let Err(e) = p.set_period(&mut self.sys, period) {
                tracing::warn!(
                    "the precise sampler keeps its period: PERF_EVENT_IOC_PERIOD: {}",
                    e.name()
                );
            }
            return true;
        }
        if self.precise.failed.is_some() {
            return false;
        }
        let events = match self.precise_events() {
            Ok(e) => e,
            Err(_) => return false,
        };
        let cpus = self.all_cpus();
        match Precise::open(&mut self.sys, &events, &cpus, Some(period)) {
            Ok(p) => {
                self.signals.sampler = Some(p.describe().to_string());
                self.precise.open = Some(p);
                true
            }
            Err(why) => {
                tracing::warn!("precise sampling unavailable, page faults stand in: {why}");
                self.signals.sampler_error = Some(format!(
                    "precise sampling did not open ({why}): page faults stand in"
                ));
                self.precise.failed = Some(why);
                false
            }
        }
    }

    /// The precise sampler's losses so far: records lost, throttlings.
    pub(super) fn precise_losses(&self) -> (u64, u64) {
        self.precise.open.as_ref().map_or((0, 0), Precise::losses)
    }

    /// Drains the precise sampler's rings into samples of the managed processes the policy
    /// samples (without their page's node).
    pub(super) fn precise_samples(&mut self) -> Vec<Sample> {
        let Some(p) = self.precise.open.as_mut() else {
            return Vec::new();
        };
        let managed = &self.managed;
        let request = &self.sampling;
        let keep = |pid: u32| {
            let pid = Pid(pid as i32);
            managed.contains(&pid) && !request.left_out(pid)
        };
        let (drawn, error) = p.drain(&mut self.sys, keep);
        if let Some(e) = error {
            self.signals.sampler_error = Some(e);
        }
        let source = p.source();
        drawn
            .iter()
            .filter_map(|d| self.precise_sample(d, source))
            .collect()
    }

    fn precise_sample(&self, d: &Drawn, source: SampleSource) -> Option<Sample> {
        let (addr, kind, latency_cycles, dram) = access_of(d)?;
        let cpu = CpuId(d.raw.cpu?);
        let pid = Pid(d.raw.pid? as i32);
        let tid = d.raw.tid.map_or(Tid(pid.0), |t| Tid(t as i32));
        let node = self.topology.node_of_cpu(cpu)?;
        let page_size = self.page_size_at(pid, addr);
        Some(Sample {
            pid,
            tid,
            cpu,
            node,
            addr,
            page_size,
            kind,
            source,
            latency_cycles,
            dram,
            home_node: None,
        })
    }
}

#[cfg(test)]
mod tests;
