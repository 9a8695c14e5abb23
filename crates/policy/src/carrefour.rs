//! Carrefour: memory traffic management by co-location, interleaving and replication
//! (Dashti et al., ASPLOS'13, 000_4074eef64cabe9e6.txt; Gaud et al., ACM Queue 2015,
//! 001_cf26baf08725c02e.txt).
//!
//! Every epoch (1 s in the paper):
//!
//! 1. **Measure** (Table 2): machine-wide memory-controller imbalance, local access ratio and
//!    DRAM accesses per µs (MAPTU) from the counters; per application its MAPTU and memory read
//!    ratio (MRR); per page the sampled accesses by node and whether any was a write. At most
//!    30,000 pages are tracked (section 4.4); statistics are reset each epoch.
//! 2. **Global decisions** (Figure 4), per application: Carrefour runs for it only above
//!    50 MAPTU; replication is enabled only if free memory is at least 1 − 1/nodes and its MRR
//!    at least 95%; interleaving if MC imbalance exceeds 35%; co-location if LAR is below 80%.
//! 3. **Page-local decisions** (section 3.2.2), for pages with at least two samples: accessed
//!    from one node only, migrate it there (co-location); from several nodes and never written,
//!    replicate it on every node running the application's threads; otherwise interleave it:
//!    move it away from its node with probability P_migrate (that node's share of the
//!    machine's MAPTU) to a node drawn with probability P_node (the complement of each node's
//!    share, so the least loaded node is the likeliest).
//! 4. **Guards** (section 3.3): replication starts for an application only once 500 pages are
//!    marked for it; a page that collapsed more than 5 times is never replicated again;
//!    sampling runs at 1 sample per 65,000 cycles and drops to 1 per 260,000 cycles after an
//!    epoch with fewer than 10 actions (and back up when actions resume); applications below
//!    the MAPTU threshold are not sampled at all.
//!
//! Without a PMU (most VMs), a live backend estimates DRAM traffic from page-fault samples
//! and says so in the observation; Carrefour then enables itself for applications that yield
//! samples (`min_samples_when_estimated`) instead of comparing an estimate with the MAPTU
//! threshold, which is a real DRAM access rate. The first hinting-fault sample seen on a page
//! is not counted: with kernel.numa_balancing=1 a backend cannot tell a page's first-touch
//! fault from a hinting fault, and the first touch (often the initialising thread, which never
//! uses the page again) would weigh as much as a real access does (one hinting fault per page
//! per scan period), where an IBS sample of a one-time access is vanishingly rare.
//!
//! In the default *global* mode the imbalance and locality of Figure 4 are the machine's (as in
//! the paper's kernel implementation); in *per-application* mode (the per-pid variant of the
//! original user-level runtime) each application is judged on its own traffic, estimated from
//! its samples. `techniques` enables any subset of the three mechanisms (the ablation of
//! Table 4).

use crate::metrics::{self, AppMetrics, DenseNodes, GlobalMetrics, SampleTallies};
use crate::{Policy, PolicyError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rondpoint_model::draw::weighted_index;
use rondpoint_model::{
    Action, Capability, CounterGroup, Need, NodeId, NodeList, Observation, PageRange, PageSize,
    Pid, Sample, SamplingRequest, Topology,
};
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One of Carrefour's three mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Technique {
    Replication,
    Interleaving,
    CoLocation,
}

/// Carrefour's parameters, defaulted to the paper's values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CarrefourConfig {
    /// Run Carrefour for an application only above this many DRAM accesses per microsecond
    /// (MAPTU). 000_4074eef64cabe9e6.txt section 3.2.1 step 1: 50.
    pub maptu_threshold: f64,
    /// Replicate only if at least this fraction of memory is free; when unset, 1 − 1/nodes
    /// (enough to replicate the whole resident set). Section 3.2.1 step 2.
    pub replication_min_free_fraction: Option<f64>,
    /// Replicate only for applications whose DRAM accesses are at least this fraction reads
    /// (MRR). Section 3.2.1 step 2: 95%.
    pub mrr_threshold: f64,
    /// Interleave when memory-controller imbalance exceeds this (percent). Step 3: 35%.
    pub mc_imbalance_threshold_pct: f64,
    /// Co-locate when the local access ratio is below this. Step 4: 80%.
    pub lar_threshold: f64,
    /// Decide on a page only with at least this many samples. Section 3.2.2: 2.
    pub min_samples_per_page: u32,
    /// Start replicating for an application only once this many pages are marked for it.
    /// Section 3.3.2, footnote 6: 500.
    pub min_replication_candidates: usize,
    /// Never replicate again a page that collapsed more than this many times. Section 3.3.2: 5.
    pub max_collapses_per_page: u32,
    /// Sampling period while Carrefour is acting (cycles per sample). Section 3.3.1: 65,000.
    pub sampling_period_high_cycles: u64,
    /// Sampling period after a quiet epoch. Section 3.3.1: 260,000.
    pub sampling_period_low_cycles: u64,
    /// An epoch with fewer actions than this is quiet. Section 3.3.1: 10.
    pub min_actions_for_high_rate: usize,
    /// Most pages tracked per epoch. Section 4.4: 30,000.
    pub max_tracked_pages: usize,
    /// Judge each application on its own traffic (the per-pid runtime) instead of the
    /// machine's.
    pub per_application: bool,
    /// Mechanisms enabled (all three by default; Table 4 runs one at a time).
    pub techniques: Vec<Technique>,
    /// When the backend says its DRAM traffic counters are estimated from samples (a machine
    /// without a PMU, where the page-fault sampler is all there is), MAPTU is not a DRAM access
    /// rate and the threshold above means nothing: an application is then enabled once it
    /// yields this many samples in an epoch. Chosen: enough for a few pages to reach two
    /// samples.
    pub min_samples_when_estimated: u64,
    /// Shortest window, in epochs, over which a page's statistics are kept once a page fault or
    /// NUMA hinting fault is among its samples (statistics from IBS/PEBS samples alone last one
    /// epoch, as in the paper). A hinting fault comes at most once per page per scan of its
    /// process by the kernel (256 MB per scan period of 1 s to 60 s), so a page rarely gets two
    /// samples in one epoch; the paper's per-epoch reset would leave Carrefour blind. The
    /// window grows beyond this to hold three quarters of the gaps measured between successive
    /// fault samples of a page (rounded up to a power of two), so that it follows the
    /// scanner's actual pace. Chosen: 8 epochs. A page's statistics are also reset once
    /// Carrefour acts on it, and when it is found on another node than before (moved by someone
    /// else: its old samples are stale).
    pub fault_sample_window_epochs: u32,
    /// Longest fault-sample window (epochs) the measured gaps can make. Chosen: 256 epochs,
    /// about four of the kernel's slowest scan periods (numa_balancing_scan_period_max_ms,
    /// 60 s) at 1 s epochs; longer windows mostly fill the tracked pages with pages waiting
    /// for their second sample.
    pub fault_sample_window_max_epochs: u32,
    /// Seed of the P_migrate / P_node draws.
    pub seed: u64,
}

impl Default for CarrefourConfig {
    fn default() -> Self {
        Self {
            maptu_threshold: 50.0,
            replication_min_free_fraction: None,
            mrr_threshold: 0.95,
            mc_imbalance_threshold_pct: 35.0,
            lar_threshold: 0.80,
            min_samples_per_page: 2,
            min_replication_candidates: 500,
            max_collapses_per_page: 5,
            sampling_period_high_cycles: 65_000,
            sampling_period_low_cycles: 260_000,
            min_actions_for_high_rate: 10,
            max_tracked_pages: 30_000,
            per_application: false,
            techniques: vec![
                Technique::Replication,
                Technique::Interleaving,
                Technique::CoLocation,
            ],
            min_samples_when_estimated: 100,
            fault_sample_window_epochs: 8,
            fault_sample_window_max_epochs: 256,
            seed: 1,
        }
    }
}

pub use pages::COUNTED_NODES;
use pages::{PageKey, PageTable};

#[path = "carrefour_pages.rs"]
mod pages;

/// Sampled accesses to one page within the statistics window (see [`Carrefour::page_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageStats {
    /// Samples from each node (dense index, saturating at 255), for the first
    /// [`COUNTED_NODES`] nodes.
    pub by_node: [u8; COUNTED_NODES],
    /// Nodes that accessed it (bit per dense node index; up to 64 nodes).
    pub node_mask: u64,
    /// Samples (saturating at 65,535), and of them writes.
    pub samples: u32,
    pub writes: u32,
    /// Where the page was, per the latest sample that knew (dense index).
    pub home: Option<u16>,
}

/// What Carrefour decided for one application in the last epoch (for reports and tests).
#[derive(Clone, Debug, PartialEq)]
pub struct AppDecision {
    pub pid: Pid,
    pub enabled: bool,
    pub replication: bool,
    pub interleaving: bool,
    pub co_location: bool,
    pub metrics: AppMetrics,
}

/// The Carrefour policy.
#[derive(Debug)]
pub struct Carrefour {
    cfg: CarrefourConfig,
    rng: Pcg64Mcg,
    period: Option<u64>,
    /// Every page's statistics and what is remembered of it (replicated, collapses), in one
    /// table: a sample costs one memory access.
    pages: PageTable,
    /// Pages that have had a hinting-fault sample (the first is taken for the first touch);
    /// forgotten in one go beyond four times `max_tracked_pages`.
    faulted: FxHashSet<PageKey>,
    pending_replication: BTreeMap<Pid, FxHashSet<PageKey>>,
    replicating: FxHashSet<Pid>,
    last_global: Option<GlobalMetrics>,
    last_decisions: Vec<AppDecision>,
    /// Room for the lists of pages under each page-local rule, kept from epoch to epoch.
    scratch: Vec<u32>,
    /// The samples of the current epoch counted so far (delivered during it: `ingest`).
    counted: Option<Counted>,
}

/// How far the samples of an epoch have been counted before its decision.
#[derive(Debug)]
struct Counted {
    epoch: u64,
    /// Samples counted: the first this many of the epoch's observation.
    samples: usize,
    /// Their tallies by process.
    tallies: SampleTallies,
}

impl Carrefour {
    /// A Carrefour instance; checks the parameters.
    pub fn new(cfg: CarrefourConfig) -> Result<Self, PolicyError> {
        let bad = |m: String| PolicyError::Config {
            policy: "carrefour".into(),
            message: m,
        };
        if !(0.0..=1.0).contains(&cfg.mrr_threshold) || !(0.0..=1.0).contains(&cfg.lar_threshold) {
            return Err(bad(
                "mrr_threshold and lar_threshold are fractions in [0, 1]".into(),
            ));
        }
        if cfg.sampling_period_high_cycles == 0 || cfg.sampling_period_low_cycles == 0 {
            return Err(bad("sampling periods must be positive".into()));
        }
        if cfg.min_samples_per_page == 0 || cfg.min_samples_per_page > u32::from(u16::MAX) {
            return Err(bad(format!(
                "min_samples_per_page must be between 1 and {} (samples per page are counted \
                 in 16 bits)",
                u16::MAX
            )));
        }
        if cfg.max_collapses_per_page >= pages::MAX_COLLAPSES {
            return Err(bad(format!(
                "max_collapses_per_page must be below {} (collapses are counted up to that)",
                pages::MAX_COLLAPSES
            )));
        }
        if cfg.fault_sample_window_max_epochs > pages::MAX_WINDOW_EPOCHS {
            return Err(bad(format!(
                "fault_sample_window_max_epochs must be at most {}",
                pages::MAX_WINDOW_EPOCHS
            )));
        }
        if cfg.fault_sample_window_epochs > cfg.fault_sample_window_max_epochs {
            return Err(bad(format!(
                "fault_sample_window_epochs ({}) must be at most fault_sample_window_max_epochs \
                 ({})",
                cfg.fault_sample_window_epochs, cfg.fault_sample_window_max_epochs
            )));
        }
        if let Some(f) = cfg.replication_min_free_fraction {
            if !(0.0..=1.0).contains(&f) {
                return Err(bad(
                    "replication_min_free_fraction is a fraction in [0, 1]".into()
                ));
            }
        }
        Ok(Self {
            rng: Pcg64Mcg::seed_from_u64(cfg.seed),
            period: Some(cfg.sampling_period_high_cycles),
            pages: PageTable::default(),
            faulted: FxHashSet::default(),
            pending_replication: BTreeMap::new(),
            replicating: FxHashSet::default(),
            last_global: None,
            last_decisions: Vec::new(),
            scratch: Vec::new(),
            counted: None,
            cfg,
        })
    }

    /// The parameters.
    pub fn config(&self) -> &CarrefourConfig {
        &self.cfg
    }

    /// Per-application decisions of the last epoch.
    pub fn last_decisions(&self) -> &[AppDecision] {
        &self.last_decisions
    }

    /// Machine-wide metrics of the last epoch.
    pub fn last_global(&self) -> Option<&GlobalMetrics> {
        self.last_global.as_ref()
    }

    /// Pages tracked in the last epoch.
    pub fn tracked_pages(&self) -> usize {
        self.pages.tracked()
    }

    /// A page's sampled accesses within the statistics window (per-page access counts by node
    /// and by type, Table 2), if it is tracked; `addr` is any address in the page.
    pub fn page_stats(&self, pid: Pid, addr: u64, page_size: PageSize) -> Option<PageStats> {
        let (i, s) = self
            .pages
            .get(&(pid, page_size.align_down(addr), page_size))?;
        self.pages.is_current(i).then(|| PageStats {
            by_node: s.by_node,
            node_mask: s.node_mask,
            samples: u32::from(s.samples),
            writes: u32::from(s.writes),
            home: s.home().map(|h| h as u16),
        })
    }

    /// Bytes of state kept (the paper's figure for this is 5 MB, section 4.4).
    pub fn state_bytes(&self) -> usize {
        self.pages.state_bytes()
            + self.scratch.capacity() * std::mem::size_of::<u32>()
            + self.faulted.capacity() * (std::mem::size_of::<PageKey>() + 1)
            + self
                .pending_replication
                .values()
                .map(|v| v.len() * (std::mem::size_of::<PageKey>() + 8))
                .sum::<usize>()
    }

    fn has(&self, t: Technique) -> bool {
        self.cfg.techniques.contains(&t)
    }

    /// Folds samples of epoch `epoch` into per-page statistics (at most `max_tracked_pages`),
    /// and tallies them by process on the way (for the per-application metrics). The first
    /// samples of an epoch start it: the statistics of earlier epochs go out of date.
    fn count(&mut self, topology: &Topology, epoch: u64, samples: &[Sample]) {
        let mut counted = match self.counted.take() {
            Some(c) if c.epoch == epoch => c,
            _ => {
                self.pages.begin_epoch(
                    epoch,
                    self.cfg.fault_sample_window_epochs,
                    self.cfg.fault_sample_window_max_epochs,
                );
                if self.faulted.len() > self.cfg.max_tracked_pages.saturating_mul(4) {
                    self.faulted = FxHashSet::default();
                }
                Counted {
                    epoch,
                    samples: 0,
                    tallies: SampleTallies::default(),
                }
            }
        };
        let dense = DenseNodes::new(topology);
        self.pages.count(
            samples,
            &dense,
            &mut self.faulted,
            self.cfg.max_tracked_pages,
            &mut counted.tallies,
        );
        counted.samples += samples.len();
        self.counted = Some(counted);
    }

    /// Counts what of the observation's samples was not counted during the epoch, and returns
    /// the tallies of all of them.
    fn count_rest(&mut self, topology: &Topology, obs: &Observation) -> SampleTallies {
        let done = self
            .counted
            .as_ref()
            .filter(|c| c.epoch == obs.epoch)
            .map_or(0, |c| c.samples.min(obs.samples.len()));
        self.count(topology, obs.epoch, &obs.samples[done..]);
        self.counted.take().map(|c| c.tallies).unwrap_or_default()
    }
}

/// P_migrate and P_node of one application's interleaving (section 3.2.2), worked out once an
/// epoch: a page moves away from its node with probability P_migrate (that node's share of the
/// traffic) to a node drawn with probability P_node (weights: the complement of each node's
/// share, so the least loaded node is the likeliest).
struct Interleaving {
    /// P_migrate of a page by its home as a slot keeps it (0 unknown: 1; else dense index + 1:
    /// that node's share of the traffic).
    p_migrate: Vec<f64>,
    /// The memory nodes in order, with their weights.
    weights: Vec<(usize, f64)>,
}

impl Interleaving {
    fn new(maptu_by_node: &[f64], memory_nodes: &[usize], nodes: usize) -> Self {
        let total: f64 = maptu_by_node.iter().sum();
        let share: Vec<f64> = (0..nodes)
            .map(|n| {
                if total > 0.0 {
                    maptu_by_node.get(n).copied().unwrap_or(0.0) / total
                } else {
                    0.0
                }
            })
            .collect();
        let weights: Vec<(usize, f64)> = memory_nodes
            .iter()
            .map(|&n| (n, (1.0 - share.get(n).copied().unwrap_or(0.0)).max(0.0)))
            .collect();
        let p_migrate = std::iter::once(1.0).chain(share.iter().copied()).collect();
        Self { p_migrate, weights }
    }

    /// Where a page on `home` (0 unknown, else dense index + 1, as a slot keeps it) goes, if
    /// it moves.
    fn draw(&self, rng: &mut Pcg64Mcg, home_code: u8) -> Option<usize> {
        let p_migrate = self
            .p_migrate
            .get(usize::from(home_code))
            .copied()
            .unwrap_or(0.0);
        if rng.random::<f64>() >= p_migrate {
            return None;
        }
        let home = home_code.checked_sub(1).map(usize::from);
        let candidates = || self.weights.iter().filter(move |&&(n, _)| Some(n) != home);
        let first = candidates().next()?.0;
        let sum: f64 = candidates().map(|&(_, w)| w).sum();
        if sum <= 0.0 {
            return Some(first);
        }
        let u = rng.random::<f64>();
        let pick = weighted_index(candidates().map(|&(_, w)| w), u)?;
        candidates().nth(pick).map(|&(n, _)| n)
    }
}

/// What an application's global decisions allow (bits), as the page-local rules read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Allowed(u8);

impl Allowed {
    const NOTHING: Self = Self(0);
    const ENABLED: u8 = 1;
    const REPLICATION: u8 = 2;
    const INTERLEAVING: u8 = 4;
    const CO_LOCATION: u8 = 8;

    fn of(d: &AppDecision) -> Self {
        Self(
            (u8::from(d.enabled) * Self::ENABLED)
                | (u8::from(d.replication) * Self::REPLICATION)
                | (u8::from(d.interleaving) * Self::INTERLEAVING)
                | (u8::from(d.co_location) * Self::CO_LOCATION),
        )
    }

    const fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// The page-local rule that applies to a page (section 3.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Rule {
    /// Nothing to do: too few samples, its application not enabled or the mechanism off, a
    /// page already where it should be, or already replicated.
    None = 0,
    /// Accessed from one node only, and elsewhere: migrate it there (co-location).
    Migrate = 1,
    /// Accessed from several nodes, never written: mark it for replication.
    Mark = 2,
    /// Accessed from several nodes otherwise: interleave it (P_migrate, P_node).
    Interleave = 3,
}

/// What the page-local rules read of a page, as bits ([`Rule::facts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Facts(u8);

impl Facts {
    /// At least `min_samples_per_page` samples.
    const DECIDES: u8 = 1;
    /// Accessed from one node only.
    const SINGLE: u8 = 2;
    /// Known to be on the one node that accessed it.
    const THERE: u8 = 4;
    /// Never written.
    const READ_ONLY: u8 = 8;
    /// At most `max_collapses_per_page` collapses.
    const FEW_COLLAPSES: u8 = 16;
    /// Replicated.
    const REPLICATED: u8 = 32;

    const fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// The rule of every combination of a page's facts (64) under every [`Allowed`] (16), worked
/// out once: a page's rule is then one lookup.
static RULES: [[Rule; 64]; 16] = {
    let mut table = [[Rule::None; 64]; 16];
    let mut allowed = 0;
    while allowed < 16 {
        let mut facts = 0;
        while facts < 64 {
            table[allowed][facts] = Rule::of_facts(Facts(facts as u8), Allowed(allowed as u8));
            facts += 1;
        }
        allowed += 1;
    }
    table
};

impl Rule {
    /// The rule for `slot` (one table lookup: see [`RULES`]).
    fn of(slot: &pages::Slot, allowed: Allowed, cfg: &CarrefourConfig) -> Self {
        RULES[usize::from(allowed.0 & 15)][usize::from(Self::facts(slot, cfg).0)]
    }

    /// The facts the rules read of `slot`, worked out without branches.
    fn facts(slot: &pages::Slot, cfg: &CarrefourConfig) -> Facts {
        // The one node that accessed it, as the slot keeps its home (dense index + 1).
        let node = slot.node_mask.trailing_zeros() + 1;
        Facts(
            (u8::from(u32::from(slot.samples) >= cfg.min_samples_per_page) * Facts::DECIDES)
                | (u8::from(slot.node_mask.is_power_of_two()) * Facts::SINGLE)
                | (u8::from(u32::from(slot.home_code()) == node) * Facts::THERE)
                | (u8::from(slot.writes == 0) * Facts::READ_ONLY)
                | (u8::from(slot.collapses() <= cfg.max_collapses_per_page) * Facts::FEW_COLLAPSES)
                | (u8::from(slot.replicated()) * Facts::REPLICATED),
        )
    }

    /// The rule of a page with `facts` in an application allowed `allowed` (section 3.2.2,
    /// in the paper's order).
    const fn of_facts(facts: Facts, allowed: Allowed) -> Self {
        if !facts.has(Facts::DECIDES) || !allowed.has(Allowed::ENABLED) {
            Rule::None
        } else if facts.has(Facts::SINGLE) {
            if allowed.has(Allowed::CO_LOCATION) && !facts.has(Facts::THERE) {
                Rule::Migrate
            } else {
                Rule::None
            }
        } else if facts.has(Facts::READ_ONLY)
            && allowed.has(Allowed::REPLICATION)
            && facts.has(Facts::FEW_COLLAPSES)
        {
            if facts.has(Facts::REPLICATED) {
                Rule::None
            } else {
                Rule::Mark
            }
        } else if allowed.has(Allowed::INTERLEAVING) {
            Rule::Interleave
        } else {
            Rule::None
        }
    }
}

/// The group of an action for coalescing: (technique, pid, page size, target) in one integer,
/// the target in the low 29 bits: here a node number (the tests' reference coalescing also
/// puts a hash of a list of nodes there, above every node number).
fn group(technique: u64, pid: Pid, page_size: PageSize, target: u64) -> u64 {
    let huge = u64::from(page_size == PageSize::Huge2M);
    technique << 62 | u64::from(pid.0 as u32) << 30 | huge << 29 | target
}

/// A single-page migration or interleaving, as the integer it sorts by when coalescing: its
/// [`group`] (the target a single node) above the page's start address. Decisions are
/// gathered as these (no allocation each) and become actions once merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct PageMove(u128);

impl PageMove {
    const MIGRATE: u64 = 1;
    const INTERLEAVE: u64 = 2;

    fn new(technique: u64, (pid, start, page_size): PageKey, to: NodeId) -> Self {
        let group = group(technique, pid, page_size, u64::from(to.0));
        Self(u128::from(group) << 64 | u128::from(start))
    }

    /// The actions of sorted page moves, contiguous pages with the same target merged.
    fn merge(moves: &[PageMove]) -> Vec<Action> {
        let mut out: Vec<Action> = Vec::new();
        let mut last: Option<(u64, PageRange)> = None;
        let mut emit = |group: u64, range: PageRange| {
            let to = NodeId((group & ((1 << 29) - 1)) as u16);
            out.push(if group >> 62 == Self::MIGRATE {
                Action::MigratePages { range, to }
            } else {
                Action::Interleave {
                    range,
                    nodes: NodeList::from_slice(&[to]),
                }
            });
        };
        for m in moves {
            let (group, start) = ((m.0 >> 64) as u64, m.0 as u64);
            if let Some((g, r)) = &mut last {
                if *g == group && r.end() == start {
                    r.count += 1;
                    continue;
                }
                emit(*g, *r);
            }
            let page_size = if group >> 29 & 1 == 1 {
                PageSize::Huge2M
            } else {
                PageSize::Base4K
            };
            let pid = Pid((group >> 30) as u32 as i32);
            last = Some((group, PageRange::page_of(pid, start, page_size)));
        }
        if let Some((g, r)) = last {
            emit(g, r);
        }
        out
    }
}

/// The replications of one process's pages onto `nodes`: in (page size, address) order,
/// contiguous pages merged into one action.
fn replications(mut pages: Vec<PageKey>, nodes: &[NodeId]) -> Vec<Action> {
    pages.sort_unstable_by_key(|&(_, start, size)| (size == PageSize::Huge2M, start));
    let mut out: Vec<Action> = Vec::new();
    for (pid, start, size) in pages {
        let range = PageRange::page_of(pid, start, size);
        match out.last_mut() {
            Some(Action::Replicate { range: r, .. })
                if r.pid == pid && r.page_size == size && r.end() == start =>
            {
                r.count += 1;
            }
            _ => out.push(Action::Replicate {
                range,
                nodes: NodeList::from_slice(nodes),
            }),
        }
    }
    out
}

impl Policy for Carrefour {
    fn name(&self) -> &str {
        "carrefour"
    }

    /// Samples and per-node traffic always; each mechanism only when enabled. Estimates and
    /// substitutes are accepted: with DRAM traffic estimated from samples, an application is
    /// judged on its sample count (`min_samples_when_estimated`), and replication carried out
    /// as interleaving still relieves the controllers.
    fn needs(&self) -> Vec<Need> {
        let mut needs = vec![
            Need::any(
                &[Capability::AccessSamples, Capability::FaultSamples],
                "to see which nodes access which pages [Dashti13 §3.3.1]",
            ),
            Need::one(
                Capability::NodeTraffic,
                "for memory-controller imbalance and the local access ratio [Dashti13 §3.2.1]",
            ),
            Need::one(
                Capability::ThreadDram,
                "for each application's DRAM accesses per microsecond [Dashti13 §3.2.1]",
            ),
        ];
        for (t, cap, why) in [
            (
                Technique::CoLocation,
                Capability::MigratePages,
                "to co-locate pages with their accessors",
            ),
            (
                Technique::Interleaving,
                Capability::InterleavePages,
                "to interleave pages",
            ),
            (
                Technique::Replication,
                Capability::ReplicatePages,
                "to replicate read-mostly pages",
            ),
        ] {
            if self.cfg.techniques.contains(&t) {
                needs.push(Need::one(cap, why));
            }
        }
        needs
    }

    fn sampling(&self) -> SamplingRequest {
        SamplingRequest {
            period_cycles: self.period,
            ..SamplingRequest::NONE
        }
    }

    /// Counts samples as they are delivered during the epoch (the paper counts them in the
    /// IBS interrupt handler), so that the decision at its end counts only the rest.
    fn ingest(&mut self, topology: &Topology, epoch: u64, samples: &[Sample]) {
        self.count(topology, epoch, samples);
    }

    fn decide(&mut self, topology: &Topology, obs: &Observation) -> Vec<Action> {
        let n = topology.len();
        let global = metrics::global(obs);
        let tallies = self.count_rest(topology, obs);
        let apps = metrics::per_app_with(obs, topology, tallies);
        for c in &obs.collapses {
            let size = c.page.page_size.bytes();
            for k in 0..c.page.count {
                let key = (c.page.pid, c.page.start + k * size, c.page.page_size);
                if let Some(i) = self.pages.entry_for(&key) {
                    let slot = self.pages.slot_mut(i);
                    slot.add_collapses(c.count);
                    slot.set_replicated(false);
                }
            }
        }
        let min_free = self
            .cfg
            .replication_min_free_fraction
            .unwrap_or(1.0 - 1.0 / n as f64);
        let memory_nodes: Vec<usize> = obs
            .memory
            .iter()
            .filter(|m| m.total_bytes > 0)
            .filter_map(|m| topology.index_of(m.node))
            .collect();

        // Global decisions, per application (Figure 4).
        let estimated = obs.counters.is_estimated(CounterGroup::ThreadDram);
        let mut decisions = Vec::with_capacity(apps.len());
        for a in &apps {
            let enabled = if estimated {
                a.samples >= self.cfg.min_samples_when_estimated
            } else {
                a.maptu >= self.cfg.maptu_threshold
            };
            let (imbalance, lar) = if self.cfg.per_application {
                (
                    a.mc_imbalance_pct.unwrap_or(global.mc_imbalance_pct),
                    a.lar.unwrap_or(global.lar),
                )
            } else {
                (global.mc_imbalance_pct, global.lar)
            };
            decisions.push(AppDecision {
                pid: a.pid,
                enabled,
                replication: enabled
                    && self.has(Technique::Replication)
                    && global.free_fraction >= min_free
                    && a.mrr >= self.cfg.mrr_threshold,
                interleaving: enabled
                    && self.has(Technique::Interleaving)
                    && imbalance > self.cfg.mc_imbalance_threshold_pct,
                co_location: enabled
                    && self.has(Technique::CoLocation)
                    && lar < self.cfg.lar_threshold,
                metrics: a.clone(),
            });
        }

        // Nodes running each application's threads (where replicas go).
        let mut thread_nodes: HashMap<Pid, Vec<NodeId>> = HashMap::new();
        for p in &obs.processes {
            let mut v: Vec<NodeId> = p.threads.iter().map(|t| t.node).collect();
            v.sort_unstable();
            v.dedup();
            thread_nodes.insert(p.pid, v);
        }

        // Each space's (process, page size) application decision, what it allows, and its
        // interleaving odds.
        let decision_of: Vec<Option<usize>> = self
            .pages
            .spaces()
            .iter()
            .map(|(pid, _)| decisions.iter().position(|d| d.pid == *pid))
            .collect();
        let allowed: Vec<Allowed> = decision_of
            .iter()
            .map(|k| k.map_or(Allowed::NOTHING, |k| Allowed::of(&decisions[k])))
            .collect();
        let odds: Vec<Option<Interleaving>> = decisions
            .iter()
            .map(|d| {
                d.interleaving.then(|| {
                    let by_node = match (&d.metrics.maptu_by_node, self.cfg.per_application) {
                        (Some(own), true) => own.as_slice(),
                        _ => global.maptu_by_node.as_slice(),
                    };
                    Interleaving::new(by_node, &memory_nodes, n)
                })
            })
            .collect();
        let space_odds: Vec<Option<&Interleaving>> = decision_of
            .iter()
            .map(|k| k.and_then(|k| odds[k].as_ref()))
            .collect();

        // Page-local decisions (section 3.2.2), in two steps: every current page is given the
        // rule that applies to it (`Rule::of`, from its slot and its application's decisions
        // only); then the pages under each rule are acted on, each rule's in the order they
        // were first sampled (the interleaving draws are made in that order: deterministic).
        let current = self.pages.current();
        let n_current = current.len();
        // Each rule's pages, listed without a branch: a page is written to the end of its
        // rule's list (`Rule::None`'s is not read), one list after another in `lists`. What
        // the lists held last epoch is left in place (each list is read only as far as it was
        // written this epoch): only room added is written before use.
        let mut lists = std::mem::take(&mut self.scratch);
        lists.reserve_exact((4 * n_current).saturating_sub(lists.len()));
        lists.resize(4 * n_current, 0);
        let mut len = [0usize; 4];
        for (k, &i) in current.iter().enumerate() {
            if let Some(&ahead) = current.get(k + 16) {
                self.pages.prefetch(ahead as usize);
            }
            let slot = self.pages.slot(i as usize);
            let space = PageTable::space_of_key(slot.packed_key());
            let allowed = allowed.get(space).copied().unwrap_or(Allowed::NOTHING);
            let rule = Rule::of(slot, allowed, &self.cfg) as usize;
            if let Some(end) = lists.get_mut(rule * n_current + len[rule]) {
                *end = i;
            }
            len[rule] += 1;
        }
        let list = |rule: Rule| {
            let r = rule as usize;
            &lists[r * n_current..r * n_current + len[r]]
        };
        let mut moves = Vec::new();
        let mut acted = Vec::new();
        let (migrate, mark, interleave) = (
            list(Rule::Migrate),
            list(Rule::Mark),
            list(Rule::Interleave),
        );
        for (k, &i) in migrate.iter().enumerate() {
            if let Some(&ahead) = migrate.get(k + 16) {
                self.pages.prefetch(ahead as usize);
            }
            let slot = self.pages.slot(i as usize);
            let key = self.pages.page(slot.packed_key());
            let node = slot.node_mask.trailing_zeros() as usize;
            moves.push(PageMove::new(
                PageMove::MIGRATE,
                key,
                topology.nodes()[node].id,
            ));
            acted.push(i as usize);
        }
        for &i in mark {
            let key = self.pages.page(self.pages.slot(i as usize).packed_key());
            self.pending_replication
                .entry(key.0)
                .or_default()
                .insert(key);
        }
        for (k, &i) in interleave.iter().enumerate() {
            if let Some(&ahead) = interleave.get(k + 16) {
                self.pages.prefetch(ahead as usize);
            }
            let slot = self.pages.slot(i as usize);
            let space = PageTable::space_of_key(slot.packed_key());
            let Some(odds) = space_odds.get(space).copied().flatten() else {
                continue;
            };
            if let Some(dest) = odds.draw(&mut self.rng, slot.home_code()) {
                let key = self.pages.page(slot.packed_key());
                moves.push(PageMove::new(
                    PageMove::INTERLEAVE,
                    key,
                    topology.nodes()[dest].id,
                ));
                acted.push(i as usize);
            }
        }

        self.scratch = lists;
        // A page acted on starts afresh (statistics kept over a window would otherwise decide
        // it again on the same evidence).
        for i in acted {
            self.pages.slot_mut(i).reset_stats();
        }

        // Replication, once enough pages are marked (section 3.3.2): each process's pages in
        // (page size, address) order, contiguous ones merged into one action.
        let mut actions: Vec<Action> = Vec::new();
        let mut replicated = 0;
        let pids: Vec<Pid> = self.pending_replication.keys().copied().collect();
        for pid in pids {
            let still_allowed = decisions.iter().any(|d| d.pid == pid && d.replication);
            let ready = self.replicating.contains(&pid)
                || self
                    .pending_replication
                    .get(&pid)
                    .is_some_and(|v| v.len() >= self.cfg.min_replication_candidates);
            if !still_allowed {
                // Marks do not survive a change of heart (MRR or free memory fell).
                self.pending_replication.remove(&pid);
                continue;
            }
            if !ready {
                continue;
            }
            let nodes = thread_nodes.get(&pid).cloned().unwrap_or_default();
            if nodes.len() < 2 {
                continue;
            }
            self.replicating.insert(pid);
            let keys: Vec<PageKey> = self
                .pending_replication
                .remove(&pid)
                .unwrap_or_default()
                .into_iter()
                .collect();
            replicated += keys.len();
            for key in &keys {
                if let Some(i) = self.pages.entry_for(key) {
                    self.pages.slot_mut(i).set_replicated(true);
                }
            }
            actions.extend(replications(keys, &nodes));
        }
        // Bound the pending lists to the tracking capacity.
        for v in self.pending_replication.values_mut() {
            if v.len() > self.cfg.max_tracked_pages {
                let mut keys: Vec<PageKey> = v.drain().collect();
                keys.sort_unstable();
                keys.truncate(self.cfg.max_tracked_pages);
                v.extend(keys);
            }
        }

        // Adaptive sampling (section 3.3.1). Sampling stops while no application is above the
        // MAPTU threshold, which the counters keep measuring; when the traffic is estimated
        // from the samples themselves, stopping them would blind Carrefour for good, so it only
        // slows down.
        let acted = moves.len() + replicated;
        let any_enabled = decisions.iter().any(|d| d.enabled);
        let quiet = !any_enabled && !apps.is_empty();
        self.period = if quiet && !estimated {
            None
        } else if !quiet && (acted >= self.cfg.min_actions_for_high_rate || apps.is_empty()) {
            Some(self.cfg.sampling_period_high_cycles)
        } else {
            Some(self.cfg.sampling_period_low_cycles)
        };
        self.last_global = Some(global);
        self.last_decisions = decisions;
        // Migrations, then interleavings, then replications (by process, page size and
        // address): each technique's actions sorted by their group and start, as one
        // coalescing of every single-page action would list them.
        moves.sort_unstable();
        let mut merged = PageMove::merge(&moves);
        merged.extend(actions);
        merged
    }
}

#[cfg(test)]
#[path = "carrefour_tests.rs"]
mod tests;
