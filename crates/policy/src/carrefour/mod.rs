//! Carrefour: memory traffic management by co-location, interleaving and replication
//! (Dashti et al., ASPLOS'13, \[Dashti13\]; Gaud et al., ACM Queue 2015,
//! \[Gaud15\]).
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

mod actions;
mod config;
mod explain;
mod global;
mod interleave;
mod local;
mod pages;
mod replication;
mod rules;

pub use config::{BOUNDS, CarrefourConfig, Technique};
pub use global::AppDecision;
pub use pages::COUNTED_NODES;

use crate::guard::Guard;
use crate::metrics::{self, DenseNodes, SampleTallies};
use crate::{Policy, PolicyError};
use pages::{PageKey, PageTable};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use replication::Replication;
use rondpoint_model::metrics::{self as traffic, GlobalMetrics};
use rondpoint_model::{
    Action, Capability, Collapse, CounterGroup, Need, Observation, Outcome, Pid, Reason, Sample,
    SamplingRequest, Topology,
};
use rules::RuleLists;
use rustc_hash::FxHashSet;

/// Sampled accesses to one page within the statistics window (see `Carrefour::page_stats`, in tests).
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

/// The Carrefour policy.
#[derive(Debug)]
pub struct Carrefour {
    cfg: CarrefourConfig,
    rng: Pcg64Mcg,
    /// Every page's statistics and what is remembered of it (replicated, collapses), in one
    /// table: a sample costs one memory access.
    pages: PageTable,
    /// Pages that have had a hinting-fault sample (the first is taken for the first touch);
    /// forgotten in one go beyond four times `max_tracked_pages`.
    faulted: FxHashSet<PageKey>,
    /// Pages marked for replication, and the applications replicating.
    replication: Replication,
    last_global: Option<GlobalMetrics>,
    last_decisions: Vec<AppDecision>,
    /// Why the last decision's actions were taken (asked once, then cleared).
    reasons: Vec<Reason>,
    /// The lists of pages under each page-local rule, their room kept from epoch to epoch.
    rules: RuleLists,
    /// The samples of the current epoch counted so far (delivered during it: `ingest`).
    counted: Option<Counted>,
    /// Replications asked for that left no replica (the outcomes of the last decision), taken
    /// as collapses at the next decision, with those the backend reports.
    unmade: Vec<Collapse>,
    /// Whether working for each application pays.
    guard: Guard,
    /// Each application's sampling period next epoch (`None`: not sampled).
    by_process: Vec<(Pid, Option<u64>)>,
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
        cfg.validate()?;
        Ok(Self {
            rng: Pcg64Mcg::seed_from_u64(cfg.seed),
            pages: PageTable::default(),
            faulted: FxHashSet::default(),
            replication: Replication::default(),
            last_global: None,
            last_decisions: Vec::new(),
            reasons: Vec::new(),
            rules: RuleLists::default(),
            counted: None,
            unmade: Vec::new(),
            guard: Guard::new(cfg.guard.clone()),
            by_process: Vec::new(),
            cfg,
        })
    }

    /// The parameters.
    pub fn config(&self) -> &CarrefourConfig {
        &self.cfg
    }

    /// Per-application decisions of the last epoch.
    #[cfg(test)]
    pub(crate) fn last_decisions(&self) -> &[AppDecision] {
        &self.last_decisions
    }

    /// Pages tracked in the last epoch.
    pub fn tracked_pages(&self) -> usize {
        self.pages.tracked()
    }

    /// A page's sampled accesses within the statistics window (per-page access counts by node
    /// and by type, Table 2), if it is tracked; `addr` is any address in the page.
    #[cfg(test)]
    pub(crate) fn page_stats(
        &self,
        pid: rondpoint_model::Pid,
        addr: u64,
        page_size: rondpoint_model::PageSize,
    ) -> Option<PageStats> {
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
            + self.rules.state_bytes()
            + self.faulted.capacity() * (std::mem::size_of::<PageKey>() + 1)
            + self.replication.state_bytes()
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

impl Carrefour {
    /// Each application's sampling period for the next epoch: the paper's adaptive sampling
    /// (section 3.3.1), per application, so that one that gains nothing does not pay for
    /// another's. Not sampled: an application the guard pauses or rests, or one below the
    /// MAPTU threshold by its counters (with traffic estimated from samples, its samples are
    /// all there is); the high rate after an epoch with at least `min_actions_for_high_rate`
    /// pages acted on for it, the low rate otherwise.
    fn periods(
        &self,
        apps: &[metrics::AppMetrics],
        actions: &[Action],
        estimated: bool,
    ) -> Vec<(Pid, Option<u64>)> {
        let mut acted: rustc_hash::FxHashMap<Pid, u64> = Default::default();
        for a in actions {
            *acted.entry(a.pid()).or_default() += a.pages();
        }
        apps.iter()
            .map(|a| {
                let quiet = !estimated && a.maptu < self.cfg.maptu_threshold;
                let period = if quiet || !self.guard.working(a.pid) {
                    None
                } else if acted.get(&a.pid).copied().unwrap_or(0)
                    >= self.cfg.min_actions_for_high_rate as u64
                {
                    Some(self.cfg.sampling_period_high_cycles)
                } else {
                    Some(self.cfg.sampling_period_low_cycles)
                };
                (a.pid, period)
            })
            .collect()
    }
}

/// The dense indices of the nodes interleaving may place pages on: those with memory and
/// CPUs. A CPU-less node (CXL memory) is a slower tier, remote to every thread: balancing the
/// controllers' access counts onto it trades a queue for a longer trip on every access, which
/// the paper's machines (every node with CPUs) never asked of Carrefour; the tiering policies
/// place memory there.
fn memory_nodes(topology: &Topology, obs: &Observation) -> Vec<usize> {
    obs.memory
        .iter()
        .filter(|m| m.total_bytes > 0)
        .filter(|m| topology.node(m.node).is_some_and(|n| n.has_cpu()))
        .filter_map(|m| topology.index_of(m.node))
        .collect()
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
            // A process not seen yet is worked for, from the high rate (section 3.3.1); each
            // one seen has its own.
            period_cycles: Some(self.cfg.sampling_period_high_cycles),
            by_process: self.by_process.clone(),
            ..SamplingRequest::NONE
        }
    }

    /// Counts samples as they are delivered during the epoch (the paper counts them in the
    /// IBS interrupt handler), so that the decision at its end counts only the rest.
    fn ingest(&mut self, topology: &Topology, epoch: u64, samples: &[Sample]) {
        self.count(topology, epoch, samples);
    }

    /// Replications that left no replica are forgotten at the next decision, as collapses
    /// are (see `replication::unmade`).
    fn outcomes(&mut self, actions: &[Action], outcomes: &[Outcome]) {
        self.unmade.extend(replication::unmade(actions, outcomes));
    }

    fn decide(&mut self, topology: &Topology, obs: &Observation) -> Vec<Action> {
        let n = topology.len();
        let global = traffic::global(obs);
        let tallies = self.count_rest(topology, obs);
        let apps = metrics::per_app_with(obs, topology, tallies);
        replication::forget_collapsed(&mut self.pages, &obs.collapses);
        replication::forget_collapsed(&mut self.pages, &std::mem::take(&mut self.unmade));
        // Global decisions, per application (Figure 4).
        let estimated = obs.counters.is_estimated(CounterGroup::ThreadDram);
        self.guard.observe(obs);
        let guard = &self.guard;
        let mut decisions = global::decide(&self.cfg, &global, &apps, estimated, n, |p| {
            guard.may_act(p)
        });
        self.replication.count_collapses(&obs.collapses);
        for d in &mut decisions {
            d.replication &= !self
                .replication
                .collapsing(d.pid, self.cfg.max_collapsed_fraction);
        }
        let odds = interleave::odds(
            &decisions,
            &global,
            &self.cfg,
            &memory_nodes(topology, obs),
            n,
        );
        let moves = self.decide_pages(topology, &decisions, &odds);
        let replications = self.replication.replicate(
            &decisions,
            &replication::thread_nodes(obs),
            &mut self.pages,
            &self.cfg,
        );
        self.last_global = Some(global);
        self.last_decisions = decisions;
        let actions = actions::merged(moves, replications);
        self.by_process = self.periods(&apps, &actions, estimated);
        self.reasons = explain::reasons(
            &self.cfg,
            self.last_global.as_ref(),
            &self.last_decisions,
            &actions,
        );
        actions
    }

    fn reasons(&mut self) -> Vec<Reason> {
        std::mem::take(&mut self.reasons)
    }
}

#[cfg(test)]
mod tests;
