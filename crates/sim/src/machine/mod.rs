//! `SimMachine`: the engine's simulated backend.
//!
//! Time advances in steps (10 ms of simulated time by default). Each step: allocate the regions
//! of applications that start, compute every running thread's access mix over the nodes and its
//! miss rate from the miss-ratio curve and its share of the LLC, solve the queueing network for
//! loaded latencies and throughputs, advance each thread by the instructions it retires, and
//! account counters (what policies may see) and totals (what reports use). Policies see
//! counters and samples only; the true access distributions stay in here.
//!
//! The parts: `build` places a scenario (threads on cores, regions in the address space),
//! `alloc` places pages as applications start, `access` says where each thread's accesses
//! go, `step` advances time, `sampling` draws what sampling and the hinting-fault scanner
//! report, `actions` carries out policy actions (`moves` those that place threads), and
//! `observe` closes an epoch; `probe` measures a run's pace before it starts.

mod access;
mod actions;
mod alloc;
mod build;
mod layout;
pub(crate) use build::thread_count;
mod moves;
mod observe;
mod probe;
mod sampling;
mod step;

use crate::placement::Region;
use crate::scenario::{FirstTouch, Pattern};
use crate::solver::SolverConfig;
use crate::spec::MachineSpec;
pub use probe::Pace;
use rand_pcg::Pcg64Mcg;
use rondpoint_engine::Machine;
use rondpoint_model::{
    Action, Capabilities, Collapse, CpuId, MemPolicy, NodeId, Observation, Outcome, PageRange, Pid,
    ProcessInfo, Sample, SamplingRequest, ThreadInfo, Tid, Topology,
};
use thiserror::Error;

/// Why a scenario cannot be simulated on a machine.
#[derive(Debug, Error, PartialEq)]
pub enum SimError {
    #[error("scenario '{scenario}' on '{machine}': {what}")]
    Impossible {
        scenario: String,
        machine: String,
        what: String,
    },
}

/// Simulator settings.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Seed of every random choice (samples, collapses): same seed, same results.
    pub seed: u64,
    /// Simulated time per step (ns).
    pub step_ns: u64,
    /// Share of each node's memory the OS keeps for itself (kernel, page cache).
    pub os_reserve: f64,
    /// Most samples kept per observation (the rest are dropped, uniformly).
    pub max_samples_per_epoch: usize,
    /// Kept samples per sampling interrupt. IBS and PEBS tag instructions, and only loads and
    /// stores carry an address: about a third of x86 instructions are memory operations
    /// (chosen; Carrefour keeps samples that hit L1 or went to DRAM, \[Dashti13\]
    /// section 3.3.1, which is most of them). The simulator draws kept samples from the DRAM
    /// access distribution.
    pub sample_yield: f64,
    pub solver: SolverConfig,
    /// Plan the pins of a batch during the run together (`moves`), so that two running threads
    /// can exchange cores, as the kernel lets a thread onto a busy core until the other leaves.
    /// Off by default: each pin is carried out alone, and one onto a busy core fails (the
    /// simulator runs one thread per core), so an exchange on a machine with every core busy
    /// fails both pins. (Pins before the start are always planned together.)
    pub exchange_pins: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            step_ns: 10_000_000,
            os_reserve: 0.03,
            max_samples_per_epoch: 1_000_000,
            sample_yield: 0.35,
            solver: SolverConfig {
                tolerance: 1e-6,
                max_iterations: 2_000,
            },
            exchange_pins: false,
        }
    }
}

#[derive(Clone, Debug)]
struct RegionModel {
    name: String,
    share: f64,
    write_ratio: f64,
    pattern: Pattern,
    halo: f64,
    first_touch: FirstTouch,
}

#[derive(Clone, Debug)]
struct Phase {
    at: f64,
    shares: Vec<f64>,
    mpki_scale: f64,
}

#[derive(Clone, Debug)]
struct App {
    name: String,
    pid: Pid,
    instructions: f64,
    cpi_base: f64,
    mlp: f64,
    mpki: f64,
    mrc_ref: f64,
    alpha: f64,
    start_ns: f64,
    threads: Vec<usize>,
    models: Vec<RegionModel>,
    regions: Vec<Region>,
    phases: Vec<Phase>,
    mempolicy: MemPolicy,
    allocated: bool,
    interleave_cursor: usize,
    /// Hinting-fault scanner: next (region, page), bytes it may still scan, when the current
    /// pass over the address space began, and the time before which it waits (a pass that
    /// reached the end waits for its period to be over).
    scan_cursor: (usize, usize),
    scan_credit: f64,
    scan_pass_ns: Option<f64>,
    scan_wait_ns: f64,
    done_ns: Option<f64>,
}

#[derive(Clone, Debug)]
struct Thread {
    app: usize,
    index: usize,
    tid: Tid,
    core: usize,
    remaining: f64,
    done_ns: Option<f64>,
    stall_ns: f64,
    mix: Vec<f64>,
    write_ratio: f64,
    mix_dirty: bool,
    phase: usize,
    /// Last step's LLC accesses per ns, to share the LLC among co-runners.
    llc_pressure: f64,
    latency_ns: f64,
    mpki: f64,
    // Epoch counters.
    e_instr: f64,
    e_cycles: f64,
    e_misses: f64,
    e_writes: f64,
}

/// Whole-run totals, the simulator's ground truth for reports.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// DRAM accesses served per node.
    pub mc_accesses: Vec<f64>,
    /// Bytes each node's controller moved for them: a line per access, and one more for each
    /// write-back.
    pub mc_bytes: Vec<f64>,
    /// DRAM accesses made by the threads of each node.
    pub accesses_by_source: Vec<f64>,
    /// Bytes per directed link.
    pub link_bytes: Vec<f64>,
    pub local_accesses: f64,
    pub accesses: f64,
    /// Sum over misses of their loaded latency (ns).
    pub latency_ns_sum: f64,
    pub instructions: f64,
    /// Thread-busy time (ns), stalls included.
    pub busy_ns: f64,
    /// Time threads spent on mechanisms: migrations, samples, collapses, refills (ns).
    pub overhead_ns: f64,
    pub samples: u64,
    /// Hinting faults taken (each one a sample of the hinting-fault kind).
    pub hinting_faults: u64,
    /// Bytes of address space the hinting-fault scanner protected.
    pub scanned_bytes: f64,
    pub collapses: u64,
    /// Pages (4 KiB units) placed by an interleaving allocation policy.
    pub alloc_interleaved_pages: u64,
    pub steps: u64,
    pub solver_iterations: u64,
}

/// A simulated machine running a scenario (cloned to probe its pace: [`SimMachine::probe`]).
#[derive(Clone, Debug)]
pub struct SimMachine {
    spec: MachineSpec,
    config: SimConfig,
    now_ns: f64,
    apps: Vec<App>,
    threads: Vec<Thread>,
    /// Bytes free per node.
    free: Vec<f64>,
    warm: Option<crate::solver::Warm>,
    sampling: SamplingRequest,
    rng: Pcg64Mcg,
    /// Background utilisation per resource for the next step (page copies).
    background: Vec<f64>,
    copy_bytes: Vec<f64>,
    totals: Totals,
    // Epoch accumulators.
    e_start_ns: f64,
    e_mc_by_source: Vec<f64>,
    e_mc_writes: Vec<f64>,
    e_link_bytes: Vec<f64>,
    e_samples: Vec<Sample>,
    e_samples_offered: u64,
    e_collapses: Vec<Collapse>,
    epoch: u64,
    /// Start finished applications again until each has finished once (`Scenario::restart`).
    restart: bool,
    /// A layout that places applications as they start in place of their allocation policy
    /// (the placement bound's), indexed like the groups of its problem.
    layout: Option<crate::bound::problem::Layout>,
}

impl SimMachine {
    /// The machine description.
    pub fn spec(&self) -> &MachineSpec {
        &self.spec
    }

    /// Whole-run totals so far.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// Simulated time (ns).
    pub fn now_ns(&self) -> f64 {
        self.now_ns
    }

    /// Completion time of each application (ns), in scenario order, when finished.
    pub fn app_completion_ns(&self) -> Vec<(String, Option<f64>)> {
        self.apps
            .iter()
            .map(|a| (a.name.clone(), a.done_ns))
            .collect()
    }

    /// Bytes of placement state the simulator keeps (for the memory benchmark).
    pub fn placement_state_bytes(&self) -> usize {
        self.apps
            .iter()
            .flat_map(|a| &a.regions)
            .map(Region::state_bytes)
            .sum()
    }

    /// The regions of a process: name and page range (for tests and the oracle's ground
    /// truth; policies learn addresses from samples).
    pub fn regions(&self, pid: Pid) -> Vec<(String, PageRange)> {
        self.apps
            .iter()
            .filter(|a| a.pid == pid)
            .flat_map(|a| a.models.iter().zip(&a.regions))
            .filter_map(|(m, r)| whole_range(pid, r).map(|range| (m.name.clone(), range)))
            .collect()
    }

    /// Simulated 4 KiB pages in all regions.
    pub fn simulated_base_pages(&self) -> u64 {
        self.apps
            .iter()
            .flat_map(|a| &a.regions)
            .map(|r| r.bytes() / 4096)
            .sum()
    }

    /// Pages of every region on each node (in units of each region's page size).
    pub fn pages_per_node(&self) -> Vec<u64> {
        self.per_node(self.apps.iter().flat_map(|a| &a.regions), |r| {
            r.page_size.base_pages()
        })
    }

    /// Per node, the pages `regions` hold there, each counted as `unit(region)`.
    fn per_node<'a>(
        &self,
        regions: impl IntoIterator<Item = &'a Region>,
        unit: impl Fn(&Region) -> u64,
    ) -> Vec<u64> {
        let mut v = vec![0; self.spec.nodes()];
        for r in regions {
            for (i, &p) in r.pages_on().iter().enumerate() {
                v[i] += p * unit(r);
            }
        }
        v
    }

    /// Each node's fallback order, as the default policy uses it when the node is full: by
    /// distance, then node number (the node itself first).
    pub(crate) fn fallback_orders(&self) -> Vec<Vec<NodeId>> {
        let ids = self.spec.topology.nodes();
        let distances = self.spec.topology.distances();
        (0..self.spec.nodes())
            .map(|from| {
                alloc::fallback_order(from, distances)
                    .into_iter()
                    .map(|d| ids[d].id)
                    .collect()
            })
            .collect()
    }

    fn node_of_thread(&self, t: usize) -> usize {
        self.spec.cores[self.threads[t].core].node
    }

    /// The threads of app `ai` that have not finished.
    fn running_threads(&self, ai: usize) -> impl Iterator<Item = usize> + '_ {
        self.apps[ai]
            .threads
            .iter()
            .copied()
            .filter(|&t| self.threads[t].done_ns.is_none())
    }

    fn app_of(&self, pid: Pid) -> Option<usize> {
        self.apps.iter().position(|a| a.pid == pid)
    }

    fn node_index(&self, id: NodeId) -> Option<usize> {
        self.spec.topology.index_of(id)
    }
}

/// The page range covering all of region `r` of process `pid`.
fn whole_range(pid: Pid, r: &Region) -> Option<PageRange> {
    PageRange::new(pid, r.base, r.len() as u64, r.page_size).ok()
}

impl Machine for SimMachine {
    type Error = SimError;

    fn topology(&self) -> &Topology {
        &self.spec.topology
    }

    /// The simulator counts, samples and does everything a policy may ask for, ground truth
    /// included; its kernel balances nothing by itself.
    fn capabilities(&mut self) -> Capabilities {
        Capabilities::simulated()
    }

    fn processes(&self) -> Vec<ProcessInfo> {
        self.apps
            .iter()
            .enumerate()
            .map(|(ai, a)| {
                let resident = self.per_node(&a.regions, |r| r.page_size.bytes());
                ProcessInfo {
                    pid: a.pid,
                    comm: a.name.clone(),
                    threads: self
                        .running_threads(ai)
                        .map(|t| {
                            let core = self.spec.cores[self.threads[t].core];
                            ThreadInfo {
                                tid: self.threads[t].tid,
                                cpu: core.cpu,
                                node: NodeId(core.node as u16),
                                allowed_cpus: self
                                    .spec
                                    .cores
                                    .iter()
                                    .map(|c| c.cpu)
                                    .collect::<Vec<CpuId>>(),
                            }
                        })
                        .collect(),
                    resident_bytes_by_node: resident,
                    mapping_policies: alloc::mapping_policies(&a.mempolicy, &a.regions),
                }
            })
            .collect()
    }

    fn observe(&mut self, until_ns: u64) -> Result<Observation, SimError> {
        let until = until_ns as f64;
        while self.now_ns < until - 1e-3 && !self.finished() {
            let dt = (self.config.step_ns as f64).min(until - self.now_ns);
            self.step(dt);
        }
        let end = if self.finished() {
            self.now_ns.min(until)
        } else {
            until
        };
        Ok(self.finish_epoch(end))
    }

    fn apply(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, SimError> {
        // Pins during the run are planned together when exchanges are on (two threads may
        // swap cores, as the kernel lets a thread onto a busy core until the other leaves).
        Ok(self.apply_batch(actions, self.config.exchange_pins, false))
    }

    /// The start decisions: nothing runs yet, so pins are planned with the moves (a policy
    /// may deal every thread to a core of its choice; see `moves`).
    fn start(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, SimError> {
        Ok(self.apply_batch(actions, true, true))
    }

    fn finished(&self) -> bool {
        self.apps.iter().all(|a| a.done_ns.is_some())
    }

    fn set_sampling(&mut self, request: &SamplingRequest) {
        self.sampling = request.clone();
    }
}
