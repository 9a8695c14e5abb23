//! `SimMachine`: the engine's simulated backend.
//!
//! Time advances in steps (10 ms of simulated time by default). Each step: allocate the regions
//! of applications that start, compute every running thread's access mix over the nodes and its
//! miss rate from the miss-ratio curve and its share of the LLC, solve the queueing network for
//! loaded latencies and throughputs, advance each thread by the instructions it retires, and
//! account counters (what policies may see) and totals (what reports use). Policies see
//! counters and samples only; the true access distributions stay in here.

use crate::placement::{MAX_NODES, Popularity, REPLICATED, Region, UNALLOCATED, mask_nodes};
use crate::scenario::{
    AppSpec, FirstTouch, NamedCount, Pattern, Scenario, ThreadCount, ThreadPlacement,
};
use crate::solver::{self, Class, Network, SolverConfig};
use crate::spec::MachineSpec;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rondpoint_engine::Machine;
use rondpoint_model::draw::weighted_index;
use rondpoint_model::{
    AccessKind, AccessTruth, Action, Collapse, Counters, CpuId, HintingScan, LinkCounters,
    MappingPolicy, MemPolicy, NodeCounters, NodeId, NodeMemory, Observation, Outcome,
    OutcomeStatus, PageRange, PageSize, Pid, ProcessInfo, Sample, SampleSource, SamplingRequest,
    ThreadCounters, ThreadInfo, Tid, Topology,
};
use thiserror::Error;

/// (region, block, share of the thread's accesses) triples.
type BlockShares = Vec<(usize, usize, f64)>;

/// The weight `blocks` give block `b` of region `ri`.
fn share_of(blocks: &BlockShares, ri: usize, b: usize) -> f64 {
    blocks
        .iter()
        .filter(|&&(r, bb, _)| r == ri && bb == b)
        .map(|x| x.2)
        .sum()
}

/// Bytes of one cache line.
const LINE: f64 = 64.0;
/// Header bytes of a request or response message on a link (HyperTransport/UPI packets carry
/// 8-16 bytes of header per 64-byte line; 16 chosen).
const HEADER: f64 = 16.0;

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
    /// (chosen; Carrefour keeps samples that hit L1 or went to DRAM, 000_4074eef64cabe9e6.txt
    /// section 3.3.1, which is most of them). The simulator draws kept samples from the DRAM
    /// access distribution.
    pub sample_yield: f64,
    pub solver: SolverConfig,
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
    /// Hinting-fault scanner: next (region, page), and bytes it may still scan.
    scan_cursor: (usize, usize),
    scan_credit: f64,
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

/// A simulated machine running a scenario.
#[derive(Debug)]
pub struct SimMachine {
    spec: MachineSpec,
    config: SimConfig,
    now_ns: f64,
    apps: Vec<App>,
    threads: Vec<Thread>,
    /// Bytes free per node.
    free: Vec<f64>,
    warm: Option<Vec<f64>>,
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
}

impl SimMachine {
    /// Places a scenario on a machine. Refuses scenarios that cannot run: more threads than
    /// cores, a footprint larger than the machine's memory, nodes that do not exist.
    pub fn new(
        spec: MachineSpec,
        scenario: &Scenario,
        config: SimConfig,
    ) -> Result<Self, SimError> {
        let n = spec.nodes();
        let impossible = |what: String| SimError::Impossible {
            scenario: scenario.name.clone(),
            machine: spec.name.clone(),
            what,
        };
        if n > MAX_NODES {
            return Err(impossible(format!("more than {MAX_NODES} nodes")));
        }
        if scenario.apps.is_empty() {
            return Err(impossible("the scenario has no [[app]]".into()));
        }
        let cpu_nodes: Vec<usize> = (0..n)
            .filter(|&i| spec.cores.iter().any(|c| c.node == i))
            .collect();
        let cores_per_node = |node: usize| spec.cores.iter().filter(|c| c.node == node).count();
        let mut used = vec![false; spec.cores.len()];
        let mut apps = Vec::new();
        let mut threads = Vec::new();
        let mut footprint = 0.0;
        let capacity: f64 = spec
            .mem_bytes
            .iter()
            .map(|&b| b as f64 * (1.0 - config.os_reserve))
            .sum();
        for (ai, a) in scenario.apps.iter().enumerate() {
            let count = match &a.threads {
                ThreadCount::Count(c) => *c as usize,
                ThreadCount::Named(NamedCount::AllCores) => spec.cores.len(),
                ThreadCount::Named(NamedCount::NodeCores) => cores_per_node(cpu_nodes[0]),
            };
            if count == 0 {
                return Err(impossible(format!("app '{}' has no threads", a.name)));
            }
            let order = node_order(&a.placement, &cpu_nodes, n).map_err(&impossible)?;
            let mut mine = Vec::with_capacity(count);
            for t in 0..count {
                let core = pick_core(&spec, &used, &order, &a.placement, t).ok_or_else(|| {
                    impossible(format!(
                        "app '{}' wants {count} threads but only {} of the machine's {} cores are \
                         free where its placement allows",
                        a.name,
                        t,
                        spec.cores.len()
                    ))
                })?;
                used[core] = true;
                mine.push(threads.len());
                threads.push(Thread {
                    app: ai,
                    index: t,
                    tid: Tid(1000 * (ai as i32 + 1) + t as i32),
                    core,
                    remaining: a.instructions.get(),
                    done_ns: None,
                    stall_ns: 0.0,
                    mix: vec![0.0; n],
                    write_ratio: 0.0,
                    mix_dirty: true,
                    phase: 0,
                    llc_pressure: a.mpki.get().max(1e-3),
                    latency_ns: 0.0,
                    mpki: a.mpki.get(),
                    e_instr: 0.0,
                    e_cycles: 0.0,
                    e_misses: 0.0,
                    e_writes: 0.0,
                });
            }
            let app = build_app(a, ai, mine, n).map_err(&impossible)?;
            footprint += app.regions.iter().map(|r| r.bytes() as f64).sum::<f64>();
            apps.push(app);
        }
        if footprint > capacity {
            return Err(impossible(format!(
                "the footprint, {:.1} GiB, exceeds the memory the machine can give applications, \
                 {:.1} GiB",
                footprint / f64::from(1 << 30),
                capacity / f64::from(1 << 30)
            )));
        }
        let resources = n + spec.directed_links();
        Ok(Self {
            free: spec
                .mem_bytes
                .iter()
                .map(|&b| b as f64 * (1.0 - config.os_reserve))
                .collect(),
            rng: Pcg64Mcg::seed_from_u64(config.seed),
            background: vec![0.0; resources],
            copy_bytes: vec![0.0; resources],
            totals: Totals {
                mc_accesses: vec![0.0; n],
                link_bytes: vec![0.0; spec.directed_links()],
                ..Totals::default()
            },
            e_start_ns: 0.0,
            e_mc_by_source: vec![0.0; n * n],
            e_mc_writes: vec![0.0; n],
            e_link_bytes: vec![0.0; spec.directed_links()],
            e_samples: Vec::new(),
            e_samples_offered: 0,
            e_collapses: Vec::new(),
            epoch: 0,
            now_ns: 0.0,
            warm: None,
            sampling: SamplingRequest::NONE,
            spec,
            config,
            apps,
            threads,
        })
    }

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
            .filter_map(|(m, r)| {
                PageRange::new(pid, r.base, r.len() as u64, r.page_size)
                    .ok()
                    .map(|range| (m.name.clone(), range))
            })
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
        let mut v = vec![0; self.spec.nodes()];
        for r in self.apps.iter().flat_map(|a| &a.regions) {
            for (i, &p) in r.pages_on().iter().enumerate() {
                v[i] += p * r.page_size.base_pages();
            }
        }
        v
    }

    fn node_of_thread(&self, t: usize) -> usize {
        self.spec.cores[self.threads[t].core].node
    }

    fn allocate(&mut self, ai: usize) {
        let n = self.spec.nodes();
        let app_threads = self.apps[ai].threads.clone();
        let thread_nodes: Vec<usize> = app_threads
            .iter()
            .map(|&t| self.node_of_thread(t))
            .collect();
        let policy = self.apps[ai].mempolicy.clone();
        let distances = self.spec.topology.distances().to_vec();
        for ri in 0..self.apps[ai].regions.len() {
            let len = self.apps[ai].regions[ri].len();
            let page_bytes = self.apps[ai].regions[ri].page_size.bytes() as f64;
            let blocks = thread_nodes.len();
            for p in 0..len {
                let toucher = match &self.apps[ai].models[ri].first_touch {
                    FirstTouch::Main => thread_nodes[0],
                    FirstTouch::Thread(i) => thread_nodes[(*i as usize).min(blocks - 1)],
                    FirstTouch::Partitioned => {
                        let per = len.div_ceil(blocks).max(1);
                        thread_nodes[(p / per).min(blocks - 1)]
                    }
                };
                let cursor = &mut self.apps[ai].interleave_cursor;
                let node = choose_node(
                    &policy, toucher, &self.free, page_bytes, &distances, cursor, n,
                );
                if matches!(
                    policy,
                    MemPolicy::Interleave { .. } | MemPolicy::WeightedInterleave { .. }
                ) {
                    self.totals.alloc_interleaved_pages +=
                        self.apps[ai].regions[ri].page_size.base_pages();
                }
                self.free[node] -= page_bytes;
                self.apps[ai].regions[ri].place(p, node);
            }
        }
        self.apps[ai].allocated = true;
        for &t in &app_threads {
            self.threads[t].mix_dirty = true;
        }
    }

    fn current_shares(&self, t: usize) -> Vec<f64> {
        let th = &self.threads[t];
        let app = &self.apps[th.app];
        let mut shares: Vec<f64> = app.models.iter().map(|m| m.share).collect();
        if th.phase > 0 {
            shares.clone_from(&app.phases[th.phase - 1].shares);
        }
        let sum: f64 = shares.iter().sum();
        if sum > 0.0 {
            shares.iter_mut().for_each(|s| *s /= sum);
        }
        shares
    }

    /// The threads of app `ai` that run now, each with the blocks it uses (see
    /// [`Self::blocks_of`]); `None` while the app has not started or once it has finished.
    fn running_blocks(&self, ai: usize) -> Option<Vec<(usize, BlockShares)>> {
        let app = &self.apps[ai];
        if !app.allocated || app.done_ns.is_some() {
            return None;
        }
        let runners = app
            .threads
            .iter()
            .copied()
            .filter(|&t| self.threads[t].done_ns.is_none())
            .map(|t| (t, self.blocks_of(t, &self.current_shares(t))))
            .collect();
        Some(runners)
    }

    /// (region, block, weight) triples of a thread's accesses.
    fn blocks_of(&self, t: usize, shares: &[f64]) -> BlockShares {
        let th = &self.threads[t];
        let app = &self.apps[th.app];
        let mut out = Vec::new();
        for (ri, m) in app.models.iter().enumerate() {
            let share = shares[ri];
            if share <= 0.0 {
                continue;
            }
            let k = app.regions[ri].blocks();
            match m.pattern {
                Pattern::Partitioned => out.push((ri, th.index % k, share)),
                Pattern::Halo => {
                    let b = th.index % k;
                    if k == 1 {
                        out.push((ri, b, share));
                    } else {
                        out.push((ri, b, share * (1.0 - m.halo)));
                        out.push((ri, (b + k - 1) % k, share * m.halo / 2.0));
                        out.push((ri, (b + 1) % k, share * m.halo / 2.0));
                    }
                }
                Pattern::SharedUniform | Pattern::Zipf | Pattern::RandomReadWrite => {
                    out.push((ri, 0, share))
                }
            }
        }
        out
    }

    fn nearest_in(&self, from: usize, mask: u64) -> usize {
        mask_nodes(mask)
            .min_by(|&a, &b| self.spec.idle_ns[from][a].total_cmp(&self.spec.idle_ns[from][b]))
            .unwrap_or(from)
    }

    fn refresh_mix(&mut self, t: usize) {
        let n = self.spec.nodes();
        let h = self.node_of_thread(t);
        let shares = self.current_shares(t);
        let blocks = self.blocks_of(t, &shares);
        let app = &self.apps[self.threads[t].app];
        let mut mix = vec![0.0; n];
        let mut wr = 0.0;
        for (ri, m) in app.models.iter().enumerate() {
            wr += shares[ri] * m.write_ratio;
        }
        for &(ri, b, w) in &blocks {
            let r = &app.regions[ri];
            let total = r.block_total(b);
            if total <= 0.0 {
                continue;
            }
            for (node, &m) in r.block_mass(b).iter().enumerate() {
                mix[node] += w * m / total;
            }
            for (&mask, &m) in r.block_replica_mass(b) {
                let serve = if mask & (1u64 << h) != 0 {
                    h
                } else {
                    self.nearest_in(h, mask)
                };
                mix[serve] += w * m / total;
            }
        }
        let sum: f64 = mix.iter().sum();
        if sum > 0.0 {
            mix.iter_mut().for_each(|v| *v /= sum);
        } else {
            mix[h] = 1.0;
        }
        let th = &mut self.threads[t];
        th.mix = mix;
        th.write_ratio = wr;
        th.mix_dirty = false;
    }

    fn mark_app_dirty(&mut self, ai: usize) {
        for &t in &self.apps[ai].threads {
            self.threads[t].mix_dirty = true;
        }
    }

    /// Simulates one step of `dt` ns (less if the epoch boundary is nearer).
    fn step(&mut self, dt: f64) {
        let n = self.spec.nodes();
        let f = self.spec.cycles_per_ns();
        for ai in 0..self.apps.len() {
            if !self.apps[ai].allocated && self.apps[ai].start_ns <= self.now_ns {
                self.allocate(ai);
            }
        }
        let active: Vec<usize> = (0..self.threads.len())
            .filter(|&t| {
                let th = &self.threads[t];
                th.done_ns.is_none() && self.apps[th.app].allocated
            })
            .collect();
        if active.is_empty() {
            self.now_ns += dt;
            return;
        }
        // Phases.
        for &t in &active {
            let th = &self.threads[t];
            let app = &self.apps[th.app];
            let progress = 1.0 - th.remaining / app.instructions;
            let phase = app.phases.iter().take_while(|p| p.at <= progress).count();
            if phase != th.phase {
                self.threads[t].phase = phase;
                self.threads[t].mix_dirty = true;
            }
        }
        for &t in &active {
            if self.threads[t].mix_dirty {
                self.refresh_mix(t);
            }
        }
        // LLC sharing: each LLC is split among its running threads in proportion to their
        // last-step miss pressure; MPKI then follows each application's miss-ratio curve.
        let llcs = self.spec.topology.llcs().len().max(1);
        let mut pressure = vec![0.0; llcs];
        for &t in &active {
            pressure[self.spec.cores[self.threads[t].core].llc] += self.threads[t].llc_pressure;
        }
        let resources = n + self.spec.directed_links();
        let mut net = Network {
            classes: Vec::with_capacity(active.len()),
            resources,
            demand: vec![0.0; active.len() * resources],
        };
        for (ci, &t) in active.iter().enumerate() {
            let th = &self.threads[t];
            let app = &self.apps[th.app];
            let core = self.spec.cores[th.core];
            let h = core.node;
            let share = if pressure[core.llc] > 0.0 {
                th.llc_pressure / pressure[core.llc]
            } else {
                1.0
            };
            let cache = (self.spec.llc_bytes * share).max(1.0);
            let scale = if th.phase > 0 {
                app.phases[th.phase - 1].mpki_scale
            } else {
                1.0
            };
            let ratio = (cache / app.mrc_ref).clamp(1.0 / 64.0, 64.0);
            let mpki = app.mpki * scale * ratio.powf(-app.alpha);
            let w = th.write_ratio;
            let idle: f64 = (0..n).map(|d| th.mix[d] * self.spec.idle_ns[h][d]).sum();
            let think = if mpki > 0.0 {
                app.mlp * app.cpi_base * 1000.0 / (mpki * f)
            } else {
                f64::INFINITY
            };
            net.classes.push(Class {
                customers: app.mlp,
                think_ns: think,
                idle_ns: idle,
            });
            let row = &mut net.demand[ci * resources..(ci + 1) * resources];
            for d in 0..n {
                let a = th.mix[d];
                if a == 0.0 {
                    continue;
                }
                row[d] += a * LINE * (1.0 + w) / self.spec.mc_bw[d] / (1.0 - self.background[d]);
                if d != h {
                    // Data comes back d -> h; requests (and write-backs) go h -> d.
                    for &l in &self.spec.path[d][h] {
                        let bw = self.spec.link_bw[l / 2] * (1.0 - self.background[n + l]);
                        row[n + l] += a * (LINE + HEADER + HEADER * w) / bw;
                    }
                    for &l in &self.spec.path[h][d] {
                        let bw = self.spec.link_bw[l / 2] * (1.0 - self.background[n + l]);
                        row[n + l] += a * (HEADER + (LINE + HEADER) * w) / bw;
                    }
                }
            }
            // The idle latency of a preset is a measured unloaded latency: it already contains
            // the service time of every controller and link on the way. Only the rest is pure
            // delay; queueing is what the network adds on top.
            let service: f64 = row.iter().sum();
            net.classes[ci].idle_ns = (idle - service).max(0.0);
            self.threads[t].mpki = mpki;
        }
        // Threads that never miss do not enter the network.
        let sol = solver::solve(&net, self.warm.as_deref(), self.config.solver);
        self.totals.solver_iterations += u64::from(sol.iterations);
        self.warm = Some(sol.queue.clone());

        for (ci, &t) in active.iter().enumerate() {
            let (mpki, mix, w, h) = {
                let th = &self.threads[t];
                (
                    th.mpki,
                    th.mix.clone(),
                    th.write_ratio,
                    self.node_of_thread(t),
                )
            };
            let app_cpi = self.apps[self.threads[t].app].cpi_base;
            let ips = if mpki > 0.0 && sol.throughput[ci] > 0.0 {
                sol.throughput[ci] * 1000.0 / mpki
            } else {
                f / app_cpi
            };
            let th = &mut self.threads[t];
            th.latency_ns = sol.latency_ns[ci];
            let stall = th.stall_ns.min(dt);
            th.stall_ns -= stall;
            let run = dt - stall;
            let mut instr = ips * run;
            let mut busy = dt;
            if instr >= th.remaining {
                instr = th.remaining;
                let used = stall + if ips > 0.0 { instr / ips } else { 0.0 };
                busy = used;
                th.done_ns = Some(self.now_ns + used);
            }
            th.remaining -= instr;
            let misses = instr * mpki / 1000.0;
            th.e_instr += instr;
            th.e_cycles += busy * f;
            th.e_misses += misses;
            th.e_writes += misses * w;
            th.llc_pressure = (misses / dt).max(1e-9);
            let lat = th.latency_ns;
            self.totals.instructions += instr;
            self.totals.busy_ns += busy;
            self.totals.latency_ns_sum += misses * lat;
            self.totals.accesses += misses;
            self.totals.local_accesses += misses * mix[h];
            for d in 0..n {
                let acc = misses * mix[d];
                self.totals.mc_accesses[d] += acc;
                self.e_mc_by_source[d * n + h] += acc;
                self.e_mc_writes[d] += acc * w;
                if d != h {
                    for &l in &self.spec.path[d][h] {
                        let b = acc * (LINE + HEADER + HEADER * w);
                        self.e_link_bytes[l] += b;
                        self.totals.link_bytes[l] += b;
                    }
                    for &l in &self.spec.path[h][d] {
                        let b = acc * (HEADER + (LINE + HEADER) * w);
                        self.e_link_bytes[l] += b;
                        self.totals.link_bytes[l] += b;
                    }
                }
            }
            if let Some(period) = self.sampling.period_cycles.filter(|&p| p > 0) {
                self.take_samples(t, busy * f, period as f64, lat * f);
            }
        }
        // Copies queued by actions load the resources during the next step.
        for k in 0..resources {
            let cap = if k < n {
                self.spec.mc_bw[k]
            } else {
                self.spec.link_bw[(k - n) / 2]
            } * dt;
            self.background[k] = (self.copy_bytes[k] / cap).min(0.9);
            self.copy_bytes[k] = (self.copy_bytes[k] - 0.9 * cap).max(0.0);
        }
        self.collapse_written_replicas(dt);
        if let Some(scan) = self
            .sampling
            .hinting
            .filter(|s| s.period_ms > 0 && s.scan_bytes > 0)
        {
            self.hinting_scan(dt, scan);
        }
        for ai in 0..self.apps.len() {
            if self.apps[ai].done_ns.is_none()
                && self.apps[ai].allocated
                && self.apps[ai]
                    .threads
                    .iter()
                    .all(|&t| self.threads[t].done_ns.is_some())
            {
                let done = self.apps[ai]
                    .threads
                    .iter()
                    .filter_map(|&t| self.threads[t].done_ns)
                    .fold(0.0, f64::max);
                self.apps[ai].done_ns = Some(done);
            }
        }
        self.totals.steps += 1;
        self.now_ns += dt;
    }

    fn take_samples(&mut self, t: usize, cycles: f64, period: f64, latency_cycles: f64) {
        let expected = cycles / period;
        let mut count = expected.floor() as u64;
        if self.rng.random::<f64>() < expected.fract() {
            count += 1;
        }
        if count == 0 {
            return;
        }
        self.threads[t].stall_ns += count as f64 * self.spec.costs.sample_interrupt_ns;
        self.totals.overhead_ns += count as f64 * self.spec.costs.sample_interrupt_ns;
        // Interrupts cost time; only some carry a memory address worth keeping.
        let kept = (0..count)
            .filter(|_| self.rng.random::<f64>() < self.config.sample_yield)
            .count();
        self.totals.samples += kept as u64;
        let shares = self.current_shares(t);
        let blocks = self.blocks_of(t, &shares);
        let th = &self.threads[t];
        let (ai, h, tid, cpu) = (
            th.app,
            self.node_of_thread(t),
            th.tid,
            self.spec.cores[th.core].cpu,
        );
        for _ in 0..kept {
            let u = self.rng.random::<f64>();
            let Some(pick) = weighted_index(blocks.iter().map(|b| b.2), u) else {
                continue;
            };
            let (ri, b, _) = blocks[pick];
            let region = &self.apps[ai].regions[ri];
            let (start, end) = region.block_range(b);
            if end <= start {
                continue;
            }
            let page = match region.popularity() {
                Popularity::Zipf(s) => {
                    let rank = zipf_rank(&mut self.rng, (end - start) as u64, s);
                    region.page_of_rank(b, rank)
                }
                Popularity::Uniform => self.rng.random_range(start..end),
            };
            let write = self.rng.random::<f64>() < self.apps[ai].models[ri].write_ratio;
            let offset = self.rng.random_range(0..region.page_size.bytes() / 64) * 64;
            let home = match region.node_of(page) {
                UNALLOCATED => None,
                REPLICATED => Some(match region.replica_mask(page) {
                    Some(m) if m & (1u64 << h) != 0 => h,
                    Some(m) => self.nearest_in(h, m),
                    None => h,
                }),
                n => Some(usize::from(n)),
            };
            let sample = Sample {
                pid: self.apps[ai].pid,
                tid,
                cpu,
                node: NodeId(h as u16),
                addr: region.base + page as u64 * region.page_size.bytes() + offset,
                page_size: region.page_size,
                kind: if write {
                    AccessKind::Write
                } else {
                    AccessKind::Read
                },
                source: SampleSource::Simulated,
                latency_cycles: Some(latency_cycles.round() as u32),
                dram: Some(true),
                home_node: home.map(|n| NodeId(n as u16)),
            };
            self.keep_sample(sample);
        }
    }

    /// Keeps a sample, or a uniform subset once the epoch's cap is reached (reservoir sampling).
    fn keep_sample(&mut self, sample: Sample) {
        self.e_samples_offered += 1;
        let cap = self.config.max_samples_per_epoch;
        if self.e_samples.len() < cap {
            self.e_samples.push(sample);
        } else {
            let j = self.rng.random_range(0..self.e_samples_offered) as usize;
            if j < cap {
                self.e_samples[j] = sample;
            }
        }
    }

    /// Linux's NUMA hinting-fault scanner (task_numa_work): each period it revokes access to
    /// the next `scan_bytes` of every process's address space, cyclically; the first access to
    /// a revoked page faults and records which CPU touched it. Here a scanned page faults
    /// within the period with the probability that some thread touches it (Poisson, from each
    /// thread's DRAM access rate to that page), from the thread drawn in proportion to its
    /// rate. Costs: the protection change per MiB scanned, and one fault per sample, both
    /// charged to the application's threads.
    fn hinting_scan(&mut self, dt: f64, scan: HintingScan) {
        let period_ns = scan.period_ms as f64 * 1e6;
        let f = self.spec.cycles_per_ns();
        for ai in 0..self.apps.len() {
            // Linux's scanner (`task_numa_work`) skips mappings whose policy lacks MPOL_F_MOF:
            // every explicit policy set here, since the sim has no MPOL_F_NUMA_BALANCING.
            if self.apps[ai].mempolicy != MemPolicy::Default {
                continue;
            }
            let runners = self.running_blocks(ai).unwrap_or_default();
            if runners.is_empty() {
                continue;
            }
            self.apps[ai].scan_credit += scan.scan_bytes as f64 * dt / period_ns;
            let mut scanned = 0.0;
            let mut rates = vec![0.0; runners.len()];
            loop {
                let (ri, page) = self.apps[ai].scan_cursor;
                let region = &self.apps[ai].regions[ri];
                let here = region.node_of(page);
                let (bytes, len, allocated) = (
                    region.page_size.bytes() as f64,
                    region.len(),
                    here != UNALLOCATED,
                );
                let (b, base, page_size) = (region.block_of(page), region.base, region.page_size);
                let total = region.block_total(b);
                let w = if total > 0.0 {
                    region.weight(page) / total
                } else {
                    0.0
                };
                if self.apps[ai].scan_credit < bytes {
                    break;
                }
                self.apps[ai].scan_credit -= bytes;
                scanned += bytes;
                self.apps[ai].scan_cursor = if page + 1 < len {
                    (ri, page + 1)
                } else {
                    ((ri + 1) % self.apps[ai].regions.len(), 0)
                };
                if !allocated || w <= 0.0 {
                    continue;
                }
                let mut sum = 0.0;
                for (k, (t, blocks)) in runners.iter().enumerate() {
                    rates[k] = self.threads[*t].llc_pressure * share_of(blocks, ri, b) * w;
                    sum += rates[k];
                }
                if sum <= 0.0 || self.rng.random::<f64>() >= 1.0 - (-sum * period_ns).exp() {
                    continue;
                }
                let u = self.rng.random::<f64>();
                let pick = weighted_index(rates.iter().copied(), u).unwrap_or(0);
                let t = runners[pick].0;
                let home = if here == REPLICATED {
                    self.node_of_thread(t)
                } else {
                    usize::from(here)
                };
                let write = self.rng.random::<f64>() < self.apps[ai].models[ri].write_ratio;
                let sample = Sample {
                    pid: self.apps[ai].pid,
                    tid: self.threads[t].tid,
                    cpu: self.spec.cores[self.threads[t].core].cpu,
                    node: NodeId(self.node_of_thread(t) as u16),
                    addr: base + page as u64 * page_size.bytes(),
                    page_size,
                    kind: if write {
                        AccessKind::Write
                    } else {
                        AccessKind::Read
                    },
                    source: SampleSource::HintingFault,
                    latency_cycles: Some((self.threads[t].latency_ns * f).round() as u32),
                    dram: None,
                    home_node: Some(NodeId(home as u16)),
                };
                self.keep_sample(sample);
                self.threads[t].stall_ns += self.spec.costs.hinting_fault_ns;
                self.totals.overhead_ns += self.spec.costs.hinting_fault_ns;
                self.totals.hinting_faults += 1;
            }
            self.totals.scanned_bytes += scanned;
            let cost = scanned / 1_048_576.0 * self.spec.costs.numa_scan_ns_per_mib;
            self.charge_app(ai, cost);
        }
    }

    /// A write to a replicated page collapses it (000_4074eef64cabe9e6.txt, section 4.4): each
    /// replicated page of a written region collapses with the probability that at least one of
    /// the step's writes hit it.
    fn collapse_written_replicas(&mut self, dt: f64) {
        for ai in 0..self.apps.len() {
            let app_misses: f64 = self.apps[ai]
                .threads
                .iter()
                .map(|&t| self.threads[t].llc_pressure * dt)
                .sum();
            for ri in 0..self.apps[ai].regions.len() {
                let wr = self.apps[ai].models[ri].write_ratio;
                let pages = self.apps[ai].regions[ri].replicated_pages();
                if wr <= 0.0 || pages.is_empty() {
                    continue;
                }
                let writes = app_misses * self.apps[ai].models[ri].share * wr;
                let mut collapsed = 0u64;
                for p in pages {
                    let region = &self.apps[ai].regions[ri];
                    let b = region.block_of(p);
                    let total = region.block_total(b).max(1e-12);
                    let hits = writes * region.weight(p) / total / region.blocks() as f64;
                    if self.rng.random::<f64>() < 1.0 - (-hits).exp() {
                        let mask = region.replica_mask(p).unwrap_or(1);
                        let keep = mask_nodes(mask).next().unwrap_or(0);
                        let bytes = region.page_size.bytes() as f64;
                        let (base, size) = (region.base, region.page_size);
                        self.apps[ai].regions[ri].collapse(p, keep);
                        for node in mask_nodes(mask).filter(|&x| x != keep) {
                            self.free[node] += bytes;
                        }
                        collapsed += 1;
                        self.e_collapses.push(Collapse {
                            page: PageRange::page_of(
                                self.apps[ai].pid,
                                base + p as u64 * size.bytes(),
                                size,
                            ),
                            count: 1,
                        });
                    }
                }
                if collapsed > 0 {
                    self.totals.collapses += collapsed;
                    let cost = collapsed as f64 * self.spec.costs.replica_collapse_ns;
                    self.charge_app(ai, cost);
                    self.mark_app_dirty(ai);
                }
            }
        }
    }

    /// True access rates per block of every region (for the oracle policy only).
    fn truth(&self, _duration_ns: f64) -> Vec<AccessTruth> {
        let n = self.spec.nodes();
        let mut out = Vec::new();
        for (ai, app) in self.apps.iter().enumerate() {
            let Some(runners) = self.running_blocks(ai) else {
                continue;
            };
            for (ri, region) in app.regions.iter().enumerate() {
                for b in 0..region.blocks() {
                    let (start, end) = region.block_range(b);
                    if end <= start {
                        continue;
                    }
                    let mut rates = vec![0.0; n];
                    for (t, blocks) in &runners {
                        rates[self.node_of_thread(*t)] +=
                            self.threads[*t].llc_pressure * share_of(blocks, ri, b) * 1e9;
                    }
                    let mut pages = vec![0u64; n];
                    for p in start..end {
                        match region.node_of(p) {
                            UNALLOCATED => {}
                            REPLICATED => {
                                for x in mask_nodes(region.replica_mask(p).unwrap_or(0)) {
                                    pages[x] += 1;
                                }
                            }
                            x => pages[usize::from(x)] += 1,
                        }
                    }
                    let Ok(range) = PageRange::new(
                        app.pid,
                        region.base + start as u64 * region.page_size.bytes(),
                        (end - start) as u64,
                        region.page_size,
                    ) else {
                        continue;
                    };
                    out.push(AccessTruth {
                        range,
                        accesses_per_s_by_node: rates,
                        write_fraction: app.models[ri].write_ratio,
                        pages_by_node: pages,
                    });
                }
            }
        }
        out
    }

    /// Spreads `ns` of mechanism time over an application's running threads.
    fn charge_app(&mut self, ai: usize, ns: f64) {
        let running: Vec<usize> = self.apps[ai]
            .threads
            .iter()
            .copied()
            .filter(|&t| self.threads[t].done_ns.is_none())
            .collect();
        if running.is_empty() {
            return;
        }
        let each = ns / running.len() as f64;
        for t in running {
            self.threads[t].stall_ns += each;
        }
        self.totals.overhead_ns += ns;
    }

    fn queue_copy(&mut self, from: usize, to: usize, bytes: f64) {
        let n = self.spec.nodes();
        self.copy_bytes[from] += bytes;
        self.copy_bytes[to] += bytes;
        for &l in &self.spec.path[from][to] {
            self.copy_bytes[n + l] += bytes;
        }
    }

    fn app_of(&self, pid: Pid) -> Option<usize> {
        self.apps.iter().position(|a| a.pid == pid)
    }

    /// The region holding `addr`, and the page index in it.
    fn locate(&self, ai: usize, addr: u64) -> Option<(usize, usize)> {
        self.apps[ai]
            .regions
            .iter()
            .enumerate()
            .find_map(|(ri, r)| {
                (addr >= r.base && addr < r.base + r.bytes())
                    .then(|| (ri, ((addr - r.base) / r.page_size.bytes()) as usize))
            })
    }

    /// Moves the pages of `range` to nodes chosen by `target(i)` (i = page index in the range).
    fn move_range(
        &mut self,
        index: usize,
        range: &PageRange,
        target: &dyn Fn(u64) -> usize,
    ) -> Outcome {
        let Some(ai) = self.app_of(range.pid) else {
            return Outcome::skipped(index, range.count, format!("no process {}", range.pid));
        };
        let mut done = 0;
        let mut copied = 0u64;
        let mut failures: Vec<(String, u64)> = Vec::new();
        let mut fail = |why: &str| {
            if let Some(f) = failures.iter_mut().find(|f| f.0 == why) {
                f.1 += 1;
            } else {
                failures.push((why.to_string(), 1));
            }
        };
        let mut fixed_ns = 0.0;
        for (i, addr) in range.page_starts().enumerate() {
            let to = target(i as u64);
            let Some((ri, page)) = self.locate(ai, addr) else {
                fail("EFAULT");
                continue;
            };
            let (bytes, page_size, current) = {
                let region = &self.apps[ai].regions[ri];
                (
                    region.page_size.bytes(),
                    region.page_size,
                    region.node_of(page),
                )
            };
            match current {
                UNALLOCATED => fail("ENOENT"),
                REPLICATED => fail("EBUSY"),
                from if usize::from(from) == to => done += 1,
                from => {
                    if self.free[to] < bytes as f64 {
                        fail("ENOMEM");
                        continue;
                    }
                    let from = usize::from(from);
                    self.apps[ai].regions[ri].place(page, to);
                    self.free[to] -= bytes as f64;
                    self.free[from] += bytes as f64;
                    self.queue_copy(from, to, bytes as f64);
                    copied += bytes;
                    done += 1;
                    fixed_ns += match page_size {
                        PageSize::Base4K => self.spec.costs.migrate_page_ns,
                        PageSize::Huge2M => self.spec.costs.migrate_huge_page_ns,
                    };
                }
            }
        }
        if copied > 0 {
            self.charge_app(ai, fixed_ns);
            self.mark_app_dirty(ai);
        }
        Outcome::for_pages(index, range.count, done, copied, failures)
    }

    fn node_index(&self, id: NodeId) -> Option<usize> {
        self.spec.topology.index_of(id)
    }

    fn apply_one(&mut self, index: usize, action: &Action) -> Outcome {
        let failed = |why: String| Outcome::failed(index, why);
        match action {
            Action::SetMemPolicy { pid, policy } => {
                let Some(ai) = self.app_of(*pid) else {
                    return Outcome::skipped(index, 0, format!("no process {pid}"));
                };
                if let Some(bad) = policy
                    .nodes()
                    .iter()
                    .find(|id| self.node_index(**id).is_none())
                {
                    return failed(format!("{bad} does not exist"));
                }
                self.apps[ai].mempolicy = policy.clone();
                let mut o = Outcome::applied(index);
                o.note = if self.apps[ai].allocated {
                    Some("applies to allocations from now on".into())
                } else {
                    None
                };
                o
            }
            Action::MigratePages { range, to } => match self.node_index(*to) {
                Some(to) => self.move_range(index, range, &|_| to),
                None => failed(format!("{to} does not exist")),
            },
            Action::Interleave { range, nodes } => {
                let idx: Option<Vec<usize>> = nodes.iter().map(|id| self.node_index(*id)).collect();
                match idx {
                    Some(idx) if !idx.is_empty() => {
                        let k = idx.len() as u64;
                        self.move_range(index, range, &|i| idx[(i % k) as usize])
                    }
                    _ => failed("interleave needs existing nodes".into()),
                }
            }
            Action::Replicate { range, nodes } => {
                let Some(ai) = self.app_of(range.pid) else {
                    return Outcome::skipped(
                        index,
                        range.count,
                        format!("no process {}", range.pid),
                    );
                };
                let mut mask = 0u64;
                for id in nodes {
                    match self.node_index(*id) {
                        Some(i) => mask |= 1 << i,
                        None => return failed(format!("{id} does not exist")),
                    }
                }
                let mut done = 0;
                let mut copied = 0;
                let mut nomem = 0;
                for addr in range.page_starts() {
                    let Some((ri, page)) = self.locate(ai, addr) else {
                        continue;
                    };
                    let bytes = self.apps[ai].regions[ri].page_size.bytes();
                    let from = self.apps[ai].regions[ri].node_of(page);
                    if from == UNALLOCATED {
                        continue;
                    }
                    let have = self.apps[ai].regions[ri]
                        .replica_mask(page)
                        .unwrap_or(1u64 << from.min(63));
                    let new: Vec<usize> = mask_nodes(mask & !have).collect();
                    if new.iter().any(|&x| self.free[x] < bytes as f64) {
                        nomem += 1;
                        continue;
                    }
                    let src = mask_nodes(have).next().unwrap_or(0);
                    for x in self.apps[ai].regions[ri].replicate(page, mask) {
                        self.free[x] -= bytes as f64;
                        self.queue_copy(src, x, bytes as f64);
                        copied += bytes;
                    }
                    done += 1;
                }
                if copied > 0 {
                    self.charge_app(ai, done as f64 * self.spec.costs.migrate_page_ns);
                    self.mark_app_dirty(ai);
                }
                let failures = if nomem > 0 {
                    vec![("ENOMEM".into(), nomem)]
                } else {
                    vec![]
                };
                Outcome::for_pages(index, range.count, done, copied, failures)
            }
            Action::PinThread { pid, tid, cpus } => {
                let Some(t) = self
                    .threads
                    .iter()
                    .position(|th| th.tid == *tid && self.apps[th.app].pid == *pid)
                else {
                    return Outcome::skipped(index, 0, format!("no thread {tid} in {pid}"));
                };
                let Some(core) = cpus.iter().find_map(|c| {
                    let core = self.spec.cores.iter().position(|k| k.cpu == *c)?;
                    let busy = self
                        .threads
                        .iter()
                        .enumerate()
                        .any(|(u, th)| u != t && th.core == core && th.done_ns.is_none());
                    (!busy).then_some(core)
                }) else {
                    return failed("every allowed CPU is busy or does not exist".into());
                };
                self.move_thread(t, core);
                Outcome::applied(index)
            }
            Action::MoveApplication {
                pid,
                to,
                with_memory,
            } => {
                let Some(ai) = self.app_of(*pid) else {
                    return Outcome::skipped(index, 0, format!("no process {pid}"));
                };
                let Some(to) = self.node_index(*to) else {
                    return failed(format!("{to} does not exist"));
                };
                let threads: Vec<usize> = self.apps[ai]
                    .threads
                    .iter()
                    .copied()
                    .filter(|&t| self.threads[t].done_ns.is_none())
                    .collect();
                let mut free_cores: Vec<usize> = (0..self.spec.cores.len())
                    .filter(|&c| self.spec.cores[c].node == to)
                    .filter(|&c| {
                        !self
                            .threads
                            .iter()
                            .any(|th| th.core == c && th.done_ns.is_none() && th.app != ai)
                    })
                    .collect();
                if free_cores.len() < threads.len() {
                    return failed(format!(
                        "node {to} has {} free cores for {} threads",
                        free_cores.len(),
                        threads.len()
                    ));
                }
                free_cores.sort_unstable();
                for (&t, &c) in threads.iter().zip(&free_cores) {
                    self.move_thread(t, c);
                }
                let mut outcome = Outcome::applied(index);
                if *with_memory {
                    let ranges: Vec<PageRange> = self.apps[ai]
                        .regions
                        .iter()
                        .filter(|r| !r.is_empty())
                        .filter_map(|r| {
                            PageRange::new(*pid, r.base, r.len() as u64, r.page_size).ok()
                        })
                        .collect();
                    for r in ranges {
                        let o = self.move_range(index, &r, &|_| to);
                        outcome.pages_requested += o.pages_requested * r.page_size.base_pages();
                        outcome.pages_done += o.pages_done * r.page_size.base_pages();
                        outcome.bytes_copied += o.bytes_copied;
                        outcome.failures.extend(o.failures);
                    }
                    if !outcome.failures.is_empty() {
                        outcome.status = OutcomeStatus::Partial;
                    }
                }
                outcome
            }
        }
    }

    /// Moves a thread to another core; it refetches its LLC footprint there.
    fn move_thread(&mut self, t: usize, core: usize) {
        if self.threads[t].core == core {
            return;
        }
        let old = self.spec.cores[self.threads[t].core];
        let new = self.spec.cores[core];
        self.threads[t].core = core;
        self.threads[t].mix_dirty = true;
        if old.llc != new.llc {
            // Refill: its LLC share, one line per miss, at the idle local latency with MLP.
            let app = &self.apps[self.threads[t].app];
            let lines = app.mrc_ref.min(self.spec.llc_bytes) / LINE;
            let cost = lines * self.spec.idle_ns[new.node][new.node] / app.mlp.max(1.0);
            self.threads[t].stall_ns += cost;
            self.totals.overhead_ns += cost;
        }
    }

    fn finish_epoch(&mut self, until: f64) -> Observation {
        let n = self.spec.nodes();
        let topo = &self.spec.topology;
        let mut nodes: Vec<NodeCounters> = (0..n)
            .map(|d| NodeCounters {
                node: topo.nodes()[d].id,
                dram_accesses_by_source: (0..n)
                    .map(|s| self.e_mc_by_source[d * n + s].round() as u64)
                    .collect(),
                dram_reads: 0,
                dram_writes: self.e_mc_writes[d].round() as u64,
                instructions: 0,
                cycles: 0,
                llc_misses: 0,
            })
            .collect();
        for c in &mut nodes {
            c.dram_reads = c.dram_accesses().saturating_sub(c.dram_writes);
        }
        let mut threads = Vec::new();
        for t in 0..self.threads.len() {
            let node = self.node_of_thread(t);
            let th = &mut self.threads[t];
            let app = &self.apps[th.app];
            if !app.allocated {
                continue;
            }
            nodes[node].instructions += th.e_instr.round() as u64;
            nodes[node].cycles += th.e_cycles.round() as u64;
            nodes[node].llc_misses += th.e_misses.round() as u64;
            if th.e_cycles > 0.0 {
                threads.push(ThreadCounters {
                    pid: app.pid,
                    tid: th.tid,
                    node: NodeId(node as u16),
                    instructions: th.e_instr.round() as u64,
                    cycles: th.e_cycles.round() as u64,
                    llc_misses: th.e_misses.round() as u64,
                    dram_accesses: th.e_misses.round() as u64,
                    dram_writes: th.e_writes.round() as u64,
                });
            }
            th.e_instr = 0.0;
            th.e_cycles = 0.0;
            th.e_misses = 0.0;
            th.e_writes = 0.0;
        }
        let links = self
            .spec
            .links
            .iter()
            .enumerate()
            .map(|(i, &(a, b))| LinkCounters {
                a: topo.nodes()[a].id,
                b: topo.nodes()[b].id,
                bytes_a_to_b: self.e_link_bytes[2 * i].round() as u64,
                bytes_b_to_a: self.e_link_bytes[2 * i + 1].round() as u64,
                capacity_bytes_per_s: Some(self.spec.link_bw[i] * 1e9),
            })
            .collect();
        let obs = Observation {
            epoch: self.epoch,
            start_ns: self.e_start_ns as u64,
            counters: Counters {
                duration_ns: (until - self.e_start_ns).max(0.0) as u64,
                nodes,
                threads,
                links,
                estimated: Vec::new(),
            },
            samples: std::mem::take(&mut self.e_samples),
            memory: (0..n)
                .map(|i| NodeMemory {
                    node: topo.nodes()[i].id,
                    total_bytes: self.spec.mem_bytes[i],
                    free_bytes: self.free[i].max(0.0) as u64,
                })
                .collect(),
            processes: self.processes(),
            collapses: std::mem::take(&mut self.e_collapses),
            truth: self
                .sampling
                .truth
                .then(|| self.truth(until - self.e_start_ns)),
        };
        self.e_mc_by_source.iter_mut().for_each(|v| *v = 0.0);
        self.e_mc_writes.iter_mut().for_each(|v| *v = 0.0);
        self.e_link_bytes.iter_mut().for_each(|v| *v = 0.0);
        self.e_samples_offered = 0;
        self.e_start_ns = until;
        self.epoch += 1;
        obs
    }
}

/// A Zipf-distributed rank in `[0, n)` by inverting the continuous approximation of the CDF.
fn zipf_rank(rng: &mut Pcg64Mcg, n: u64, s: f64) -> u64 {
    let u: f64 = rng.random();
    let nf = n as f64;
    let x = if (s - 1.0).abs() < 1e-9 {
        (u * (nf + 1.0).ln()).exp() - 1.0
    } else {
        let a = 1.0 - s;
        ((u * ((nf + 1.0).powf(a) - 1.0)) + 1.0).powf(1.0 / a) - 1.0
    };
    (x.max(0.0) as u64).min(n - 1)
}

/// An application's memory policy as the mapping policies a kernel would list (the sim sets one
/// policy per application, at launch, so it covers every region; none for the default).
fn mapping_policies(p: &MemPolicy, regions: &[Region]) -> Vec<MappingPolicy> {
    let Some(mode) = p.mode() else {
        return Vec::new();
    };
    let mut out: Vec<MappingPolicy> = regions
        .iter()
        .map(|r| MappingPolicy {
            start: r.base,
            end: r.base + r.bytes(),
            mode,
            nodes: p.nodes(),
            numa_balancing: false,
        })
        .collect();
    out.sort_by_key(|m| m.start);
    out
}

/// The kernel's fallback order from node `from`: by distance, then node number (static, as
/// 004_3f7e99ce3837118e.txt Figure 1 shows).
fn fallback_order(from: usize, distances: &[Vec<u32>]) -> Vec<usize> {
    let mut v: Vec<usize> = (0..distances.len()).collect();
    v.sort_by_key(|&d| (distances[from][d], d));
    v
}

/// Where a page touched from node `toucher` goes under an allocation policy.
fn choose_node(
    policy: &MemPolicy,
    toucher: usize,
    free: &[f64],
    bytes: f64,
    distances: &[Vec<u32>],
    cursor: &mut usize,
    n: usize,
) -> usize {
    let fits = |d: usize| free[d] >= bytes;
    let first_fit = |allowed: &dyn Fn(usize) -> bool| {
        fallback_order(toucher, distances)
            .into_iter()
            .find(|&d| allowed(d) && fits(d))
    };
    let idx = |id: &NodeId| usize::from(id.0).min(n - 1);
    let any = || first_fit(&|_| true).unwrap_or(toucher);
    match policy {
        MemPolicy::Default => any(),
        MemPolicy::Bind { nodes } => {
            let set: Vec<usize> = nodes.iter().map(idx).collect();
            first_fit(&|d| set.contains(&d)).unwrap_or_else(any)
        }
        MemPolicy::PreferredMany { nodes } => {
            let set: Vec<usize> = nodes.iter().map(idx).collect();
            first_fit(&|d| set.contains(&d)).unwrap_or_else(any)
        }
        MemPolicy::Interleave { nodes } => {
            let set: Vec<usize> = nodes.iter().map(idx).collect();
            for _ in 0..set.len().max(1) {
                let d = set[*cursor % set.len().max(1)];
                *cursor += 1;
                if fits(d) {
                    return d;
                }
            }
            any()
        }
        MemPolicy::WeightedInterleave { weights } => {
            let total: u64 = weights.iter().map(|w| u64::from(w.1)).sum();
            if total == 0 {
                return any();
            }
            for _ in 0..weights.len().max(1) {
                let mut k = (*cursor as u64) % total;
                *cursor += 1;
                for (id, w) in weights {
                    if k < u64::from(*w) {
                        let d = idx(id);
                        if fits(d) {
                            return d;
                        }
                        break;
                    }
                    k -= u64::from(*w);
                }
            }
            any()
        }
    }
}

fn node_order(p: &ThreadPlacement, cpu_nodes: &[usize], n: usize) -> Result<Vec<usize>, String> {
    let check = |id: u16| {
        let i = usize::from(id);
        if i < n && cpu_nodes.contains(&i) {
            Ok(i)
        } else {
            Err(format!(
                "placement names node {id}, which does not exist or has no CPUs"
            ))
        }
    };
    match p {
        ThreadPlacement::Spread | ThreadPlacement::Fill => Ok(cpu_nodes.to_vec()),
        ThreadPlacement::Node(id) => Ok(vec![check(*id)?]),
        ThreadPlacement::Nodes(ids) if ids.is_empty() => Err("placement lists no nodes".into()),
        ThreadPlacement::Nodes(ids) => ids.iter().map(|&i| check(i)).collect(),
    }
}

fn pick_core(
    spec: &MachineSpec,
    used: &[bool],
    order: &[usize],
    p: &ThreadPlacement,
    t: usize,
) -> Option<usize> {
    let free_on =
        |node: usize| (0..spec.cores.len()).find(|&c| !used[c] && spec.cores[c].node == node);
    match p {
        ThreadPlacement::Fill | ThreadPlacement::Node(_) => order.iter().find_map(|&n| free_on(n)),
        ThreadPlacement::Spread | ThreadPlacement::Nodes(_) => {
            (0..order.len()).find_map(|k| free_on(order[(t + k) % order.len()]))
        }
    }
}

fn build_app(a: &AppSpec, ai: usize, threads: Vec<usize>, n: usize) -> Result<App, String> {
    let positive = |v: f64, what: &str| {
        if v > 0.0 && v.is_finite() {
            Ok(v)
        } else {
            Err(format!(
                "app '{}': {what} must be positive, not {v}",
                a.name
            ))
        }
    };
    let instructions = positive(a.instructions.get(), "instructions")?;
    let cpi_base = positive(a.cpi_base.get(), "cpi_base")?;
    let mlp = positive(a.mlp.get(), "mlp")?.max(1.0);
    let mrc_ref = positive(a.mrc_ref_bytes.get(), "mrc_ref_bytes")?;
    let mpki = a.mpki.get();
    if !(mpki >= 0.0 && mpki.is_finite()) {
        return Err(format!("app '{}': mpki must not be negative", a.name));
    }
    if a.regions.is_empty() {
        return Err(format!("app '{}' has no [[app.region]]", a.name));
    }
    let mut base: u64 = 0x7f00_0000_0000 + (ai as u64) * (1 << 40);
    let mut regions = Vec::new();
    let mut models = Vec::new();
    for r in &a.regions {
        let size = r.size_mib.get();
        if !(size > 0.0 && size.is_finite()) {
            return Err(format!(
                "region '{}' of app '{}': size_mib must be positive",
                r.name, a.name
            ));
        }
        let share = r.share.get();
        let wr = r.write_ratio.get();
        if !(0.0..=1.0).contains(&wr) || share < 0.0 {
            return Err(format!(
                "region '{}' of app '{}': write_ratio must be in [0, 1] and share not negative",
                r.name, a.name
            ));
        }
        let page = r.page_size.bytes();
        let pages = ((size * 1048576.0) / page as f64).ceil().max(1.0) as usize;
        let blocks = match r.pattern {
            Pattern::Partitioned | Pattern::Halo => threads.len(),
            _ => 1,
        };
        let popularity = match (r.pattern, &r.zipf_s) {
            (Pattern::Zipf, Some(s)) => Popularity::Zipf(s.get()),
            (Pattern::Zipf, None) => {
                return Err(format!(
                    "region '{}' of app '{}': pattern zipf needs zipf_s",
                    r.name, a.name
                ));
            }
            _ => Popularity::Uniform,
        };
        let halo = match (r.pattern, &r.halo) {
            (Pattern::Halo, Some(h)) if (0.0..=1.0).contains(&h.get()) => h.get(),
            (Pattern::Halo, _) => {
                return Err(format!(
                    "region '{}' of app '{}': pattern halo needs halo in [0, 1]",
                    r.name, a.name
                ));
            }
            _ => 0.0,
        };
        base = base.div_ceil(PageSize::Huge2M.bytes()) * PageSize::Huge2M.bytes();
        regions.push(Region::new(base, r.page_size, pages, blocks, popularity, n));
        base += pages as u64 * page + PageSize::Huge2M.bytes();
        models.push(RegionModel {
            name: r.name.clone(),
            share,
            write_ratio: wr,
            pattern: r.pattern,
            halo,
            first_touch: r.first_touch.clone(),
        });
    }
    if models.iter().all(|m| m.share == 0.0) {
        return Err(format!("app '{}': every region has share 0", a.name));
    }
    let mut phases = Vec::new();
    for p in &a.phases {
        if !(0.0..=1.0).contains(&p.at) {
            return Err(format!(
                "app '{}': phase at = {} is not in [0, 1]",
                a.name, p.at
            ));
        }
        let mut shares: Vec<f64> = models.iter().map(|m| m.share).collect();
        for (name, &s) in &p.shares {
            let Some(i) = models.iter().position(|m| &m.name == name) else {
                return Err(format!(
                    "app '{}': phase names region '{name}', which does not exist",
                    a.name
                ));
            };
            shares[i] = s;
        }
        phases.push(Phase {
            at: p.at,
            shares,
            mpki_scale: p.mpki_scale.unwrap_or(1.0),
        });
    }
    phases.sort_by(|x, y| x.at.total_cmp(&y.at));
    Ok(App {
        name: a.name.clone(),
        pid: Pid(1000 * (ai as i32 + 1)),
        instructions,
        cpi_base,
        mlp,
        mpki,
        mrc_ref,
        alpha: a.mrc_alpha.get(),
        start_ns: a.start_s.max(0.0) * 1e9,
        threads,
        models,
        regions,
        phases,
        mempolicy: MemPolicy::Default,
        allocated: false,
        interleave_cursor: 0,
        scan_cursor: (0, 0),
        scan_credit: 0.0,
        done_ns: None,
    })
}

impl Machine for SimMachine {
    type Error = SimError;

    fn topology(&self) -> &Topology {
        &self.spec.topology
    }

    fn processes(&self) -> Vec<ProcessInfo> {
        self.apps
            .iter()
            .map(|a| {
                let mut resident = vec![0u64; self.spec.nodes()];
                for r in &a.regions {
                    for (i, &p) in r.pages_on().iter().enumerate() {
                        resident[i] += p * r.page_size.bytes();
                    }
                }
                ProcessInfo {
                    pid: a.pid,
                    comm: a.name.clone(),
                    threads: a
                        .threads
                        .iter()
                        .filter(|&&t| self.threads[t].done_ns.is_none())
                        .map(|&t| {
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
                    mapping_policies: mapping_policies(&a.mempolicy, &a.regions),
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
        Ok(actions
            .iter()
            .enumerate()
            .map(|(i, a)| self.apply_one(i, a))
            .collect())
    }

    fn finished(&self) -> bool {
        self.apps.iter().all(|a| a.done_ns.is_some())
    }

    fn set_sampling(&mut self, request: &SamplingRequest) {
        self.sampling = *request;
    }
}
