//! N-MASS and maximum-local \[Majo11\]: mapping single-threaded processes onto the cores of a
//! NUMA machine between data locality and cache contention.
//!
//! Each process has a home, the node holding its memory ([`home`]). `maximum-local`
//! (Algorithm 2) maps the processes homed on each node onto that node's cores in descending
//! order of their NUMA penalty (CPI remote / CPI local, Eq. 1), the lowest-penalty ones
//! overflowing to the nearest node. `n-mass` (Algorithm 1) then refines that mapping
//! (Algorithm 3, `refine.rs`): where a node's cache is under much more pressure (the sum of its
//! processes' MPKI) than another's, processes move to the other cache, their MPKI weighted by
//! their penalty there, unless that cache would pass THRESHOLD (60 MPKI, the pressure at which
//! the paper's interconnect saturates). Neither moves pages.
//!
//! Both decide at the end of an epoch (the engine's, 1 s by default as in §3.4), from each
//! process's MPKI over the epoch (its threads' `llc_misses` and `instructions`), and map
//! again only when the processes change or a process's MPKI changed by more than 20% since
//! the previous epoch (§3.4). Before the first epoch, at start, they map with MPKI unknown
//! (taken as 0), which is maximum-local, unless the MPKIs come from profiles
//! ([`MpkiSource::Profile`], the evaluated prototype's traces). A mapping is carried out by
//! pinning every thread of a process to one core (`plan.rs`).
//!
//! Ours, beside the readings of Algorithm 3's gaps (`refine.rs`): the home rule, the threshold
//! scaled by the link bandwidth, more than two nodes (Algorithm 2 merges all nodes' lists,
//! Algorithm 3 refines the most against the least pressured node; both reduce to the listings
//! on two nodes), exchanges when the destination is full, and processes beyond the number of
//! cores left where they run (a run that starts with more is refused, by `Policy::accepts`).

mod cfs;
mod config;
mod explain;
mod maxlocal;
mod plan;
mod refine;
mod view;

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use cfs::balanced_splits;
pub use cfs::{CFS_BOUNDS, CfsAverage, CfsAverageConfig};
pub use config::{
    Inputs, MAXIMUM_LOCAL_BOUNDS, MaximumLocalConfig, MpkiSource, NMASS_BOUNDS, NMassConfig,
    PenaltySource, Profile,
};
pub(crate) use maxlocal::map_maxlocal;
pub use maxlocal::{Proc, Processors};
pub(crate) use refine::refine_mapping;
pub use refine::{Decision, RefineParams, Refinement};
pub use view::{Managed, home};

use crate::{Policy, PolicyError};
use rondpoint_model::{
    Action, Capability, CpuId, Need, Observation, Outcome, OutcomeStatus, Pid, ProcessInfo, Reason,
    SamplingRequest, Tid, Topology,
};
use rondpoint_policy_api::Refusal;
use std::collections::{BTreeMap, BTreeSet};

/// The refinement's parameters as configured.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Refine {
    threshold_mpki: f64,
    scale_by_link: bool,
    reference_bytes_per_s: f64,
    swap_when_full: bool,
}

/// `maximum-local` or `n-mass`, and what it remembers between epochs.
#[derive(Clone, Debug)]
pub struct NMass {
    name: &'static str,
    inputs: Inputs,
    /// `None` for maximum-local.
    refine: Option<Refine>,
    /// Each process's MPKI over the previous epoch.
    last_mpki: BTreeMap<Pid, f64>,
    /// The processes of the last mapping.
    mapped: BTreeSet<Pid>,
    /// Where each thread was pinned, by the outcomes of our pins.
    pinned: BTreeMap<(Pid, Tid), CpuId>,
    /// The narrowest link's capacity per direction, once the machine has reported it.
    link_bytes_per_s: Option<f64>,
    /// The multi-threaded processes it has said it leaves alone.
    left_alone: BTreeSet<Pid>,
    notes: Vec<String>,
    /// Why the last mapping's pins were taken (asked once, then cleared).
    reasons: Vec<Reason>,
}

impl NMass {
    /// `maximum-local`: Algorithm 2 alone.
    pub fn maximum_local(config: MaximumLocalConfig) -> Result<Self, PolicyError> {
        config.inputs.check("maximum-local")?;
        Ok(Self::with("maximum-local", config.inputs, None))
    }

    /// `n-mass`: Algorithm 1 (2 then 3).
    pub fn refined(config: NMassConfig) -> Result<Self, PolicyError> {
        config.check("n-mass")?;
        let refine = Refine {
            threshold_mpki: config.threshold_mpki,
            scale_by_link: config.scale_threshold_by_link,
            reference_bytes_per_s: config.reference_link_gbs * 1e9,
            swap_when_full: config.swap_when_full,
        };
        Ok(Self::with("n-mass", config.inputs, Some(refine)))
    }

    fn with(name: &'static str, inputs: Inputs, refine: Option<Refine>) -> Self {
        Self {
            name,
            inputs,
            refine,
            last_mpki: BTreeMap::new(),
            mapped: BTreeSet::new(),
            pinned: BTreeMap::new(),
            link_bytes_per_s: None,
            left_alone: BTreeSet::new(),
            notes: Vec::new(),
            reasons: Vec::new(),
        }
    }

    /// Whether the decisions on process `m` read its measured MPKI.
    fn measures(&self, m: &Managed) -> bool {
        self.inputs.measures(&m.comm, self.refine.is_some())
    }

    /// The MPKI the decisions take for process `m`: profiled, else measured over the last
    /// epoch, else 0 (not known yet).
    fn mpki_of(&self, m: &Managed) -> f64 {
        self.inputs
            .profiled_mpki(&m.comm)
            .or_else(|| self.last_mpki.get(&m.pid).copied())
            .unwrap_or(0.0)
    }

    /// THRESHOLD as used on this machine.
    fn threshold(&self, r: &Refine) -> f64 {
        match self.link_bytes_per_s {
            Some(c) if r.scale_by_link => r.threshold_mpki * c / r.reference_bytes_per_s,
            _ => r.threshold_mpki,
        }
    }

    /// Algorithm 1: the node of every process (`None` for those beyond the cores), on the
    /// cores not `taken` by multi-threaded processes, for the processes as `procs` sees them.
    pub fn mapping(
        &self,
        topology: &Topology,
        procs: &[Proc],
        taken: &BTreeSet<CpuId>,
    ) -> Vec<Option<usize>> {
        let machine = Processors::of(topology).without(topology, taken);
        let maxlocal = map_maxlocal(procs, &machine);
        match &self.refine {
            Some(r) => {
                let params = RefineParams {
                    threshold: self.threshold(r),
                    swap_when_full: r.swap_when_full,
                };
                refine_mapping(procs, &machine, &maxlocal, params)
            }
            None => {
                let mut out = vec![None; procs.len()];
                for (p, node) in maxlocal {
                    out[p] = Some(node);
                }
                out
            }
        }
    }

    /// The mapping's view of each managed process: home, remote penalty and MPKI.
    fn procs(&self, managed: &[Managed]) -> Vec<Proc> {
        managed
            .iter()
            .map(|m| {
                let mpki = self.mpki_of(m);
                Proc {
                    home: m.home,
                    np: self.inputs.penalty_of(&m.comm, mpki),
                    mpki,
                }
            })
            .collect()
    }

    /// Whether to map again: new or gone processes, or a measured MPKI that moved by more
    /// than the re-decision fraction since the previous epoch (a process without a previous
    /// MPKI counts as moved).
    fn changed(&self, managed: &[Managed], mpki: &BTreeMap<Pid, f64>) -> bool {
        let pids: BTreeSet<Pid> = managed.iter().map(|m| m.pid).collect();
        if pids != self.mapped {
            return true;
        }
        let limit = self.inputs.mpki_change_to_redecide;
        managed.iter().filter(|m| self.measures(m)).any(|m| {
            match (mpki.get(&m.pid), self.last_mpki.get(&m.pid)) {
                (Some(&now), Some(&before)) => (now - before).abs() > limit * before,
                (Some(_), None) => true,
                _ => false,
            }
        })
    }

    /// Maps `managed` on the cores not `taken` and returns the pins that carry it out.
    fn map(
        &mut self,
        topology: &Topology,
        managed: &[Managed],
        taken: &BTreeSet<CpuId>,
    ) -> Vec<Action> {
        let procs = self.procs(managed);
        let target = self.mapping(topology, &procs, taken);
        self.mapped = managed.iter().map(|m| m.pid).collect();
        let pins = plan::pins(topology, managed, &target, &self.pinned, taken);
        self.reasons = explain::reasons(self.name, topology, managed, &procs, &target, &pins);
        pins
    }

    /// Says once which multi-threaded processes it leaves alone.
    fn note_left_alone(&mut self, multi: &[Managed]) {
        for m in multi {
            if self.left_alone.insert(m.pid) {
                self.notes.push(format!(
                    "{} ({}, {} threads) left where the OS runs it: {} maps \
                     single-threaded processes, each program one process of one thread \
                     [Majo11 §2]; its cores count as taken",
                    m.comm,
                    m.pid,
                    m.threads.len(),
                    self.name
                ));
            }
        }
    }
}

/// [Majo11 §3.3, Limitations]: at most one process per core, on the cores not `taken` by
/// multi-threaded processes.
fn check_fits(topology: &Topology, processes: usize, taken: usize) -> Result<(), Refusal> {
    let cores = topology.cpu_count().saturating_sub(taken);
    if processes <= cores {
        return Ok(());
    }
    let besides = if taken > 0 {
        format!(" (besides the {taken} that multi-threaded processes run on)")
    } else {
        String::new()
    };
    Err(Refusal(format!(
        "{processes} single-threaded processes on {cores} cores{besides}: N-MASS maps at most \
         one process per core; it decides spatial multiplexing, not temporal multiplexing \
         [Majo11 §3.3, Limitations]"
    )))
}

impl Policy for NMass {
    fn name(&self) -> &str {
        self.name
    }

    fn needs(&self) -> Vec<Need> {
        let mut needs = vec![Need::one(
            Capability::PinThreads,
            "to map each process onto a core",
        )];
        if self.inputs.needs_counters(self.refine.is_some()) {
            needs.push(
                Need::one(
                    Capability::ThreadCounters,
                    "to compute each process's MPKI (instructions and LLC misses per thread)",
                )
                .exactly(),
            );
        }
        needs
    }

    fn accepts(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
        // A process not started yet (no threads) counts as one to map.
        let (_, multi, taken) = Managed::split(topology, processes);
        check_fits(topology, processes.len() - multi.len(), taken.len())?;
        match self
            .inputs
            .unprofiled(processes.iter().map(|p| p.comm.as_str()))
        {
            // Not counted (the counters follow the mode), its MPKI would be taken as 0.
            Some(comm) => Err(Refusal(format!(
                "inputs.mpki = \"profile\" but program '{comm}' has no profiled MPKI: give \
                 inputs.profile.{comm}.mpki (its MPKI alone and local, [Majo11 §3.2]), or \
                 inputs.mpki = \"measured\""
            ))),
            None => Ok(()),
        }
    }

    /// Hardware counters when the decisions read a measured MPKI (a live machine counts only
    /// when asked).
    fn sampling(&self) -> SamplingRequest {
        SamplingRequest {
            counters: self.inputs.needs_counters(self.refine.is_some()),
            ..SamplingRequest::NONE
        }
    }

    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let (managed, multi, taken) = Managed::split(topology, processes);
        self.note_left_alone(&multi);
        self.map(topology, &managed, &taken)
    }

    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        if let Some(c) = view::narrowest_link(&observation.counters) {
            self.link_bytes_per_s = Some(c);
        }
        let (managed, multi, taken) = Managed::split(topology, &observation.processes);
        self.note_left_alone(&multi);
        let mpki: BTreeMap<Pid, f64> = managed
            .iter()
            .filter_map(|m| {
                let now = view::mpki(&observation.counters, m.pid)
                    .or_else(|| self.last_mpki.get(&m.pid).copied())?;
                Some((m.pid, now))
            })
            .collect();
        let changed = self.changed(&managed, &mpki);
        self.last_mpki = mpki;
        if changed {
            self.map(topology, &managed, &taken)
        } else {
            Vec::new()
        }
    }

    fn outcomes(&mut self, actions: &[Action], outcomes: &[Outcome]) {
        for (a, o) in actions.iter().zip(outcomes) {
            if let (Action::PinThread { pid, tid, cpus }, OutcomeStatus::Applied) = (a, o.status) {
                if let [cpu] = cpus.as_slice() {
                    self.pinned.insert((*pid, *tid), *cpu);
                }
            }
        }
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn reasons(&mut self) -> Vec<Reason> {
        std::mem::take(&mut self.reasons)
    }
}
