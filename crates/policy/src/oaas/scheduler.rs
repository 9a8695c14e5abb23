//! OAAS, the online asymmetry-aware scheduler [Gaud10 §5]: applications with the highest MAPI
//! on the fast nodes, swapped with those on slow nodes only when the predicted gain passes a
//! threshold.
//!
//! Our choices where the paper is silent:
//! - An application's MAPI is its threads' main-memory accesses summed over the period, over
//!   their instructions summed over the period (the instruction-weighted mean of its threads'
//!   MAPI): §5.2 "checks the MAPI of all applications' threads" and sorts applications.
//! - Swaps pair the slow nodes' applications by decreasing predicted gap with the fast nodes'
//!   by increasing one, and stop at the first pair whose gain does not pass the threshold:
//!   the sorted assignment of §5.1 reached only through swaps worth making.
//! - An empty fast node (its application finished) counts as an application with a gap of 0:
//!   the slow application with the highest MAPI moves there when its own gap passes the
//!   threshold (§5.1: "applications with the highest MAPI indicator are assigned to fast
//!   processors").
//! - A move that passes the threshold is made only when it pays for itself over what is left
//!   of the applications' runs (see `amortise`): §5.1's "all migrations costs will be
//!   amortized over time". A pair that does not pay is skipped, the next pairs still tried.
//! - Applications without instructions in the period (finished, or not started) are left
//!   where they are.

use super::amortise::{Balance, Progress, Side, pages_to_move};
use super::config::{Curve, InitialPlacement, OAAS_BOUNDS, OaasConfig};
use super::{builtin_curve_for, cpu_nodes, home, nodes_of, one_per_node, place};
use crate::{Policy, PolicyError};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64Mcg;
use rondpoint_model::{
    Action, Capabilities, Capability, CounterGroup, GapCurve, Need, NodeClass, NodeId, Observation,
    Pid, ProcessInfo, Reason, Support, Topology,
};
use rondpoint_policy_api::Refusal;
use rondpoint_policy_api::bounds::check_config;
use std::collections::BTreeMap;

/// Which counter gives an application's main-memory accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapiSource {
    /// DRAM accesses per thread ([Gaud10 §3.1]: the CPU-to-DRAM counter).
    Dram,
    /// Last-level-cache misses per thread: our approximation where the machine counts no DRAM
    /// accesses per thread exactly (a miss of the last level goes to memory, but prefetches and
    /// write-backs are not counted the same way).
    LlcMisses,
}

/// The first move that passed the threshold but did not pay: who, where to, the balance.
type Unpaid = (Pid, NodeId, Balance);

/// What one decision found: the moves, why, the first move that did not pay, and the first
/// swap held back by `max_loss_points` (the slow node's application, the fast node's and its
/// predicted gap).
struct Swaps {
    actions: Vec<Action>,
    reasons: Vec<Reason>,
    unpaid: Option<Unpaid>,
    held: Option<(Pid, Pid, f64)>,
}

/// What OAAS last saw of one application.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AppView {
    pub pid: Pid,
    /// The node most of its threads ran on.
    pub node: NodeId,
    /// Main-memory accesses per retired instruction over the period.
    pub mapi: f64,
    /// The fast/slow gap the curve predicts from it (percent).
    pub gap_pct: f64,
}

/// `oaas` and `oaas-nopm`.
#[derive(Clone, Debug)]
pub struct Oaas {
    name: &'static str,
    with_memory: bool,
    config: OaasConfig,
    /// The curve read from the file the configuration names.
    /// The curve `curve` names, with where it came from.
    file_curve: Option<(String, GapCurve)>,
    /// The curve in use, once the machine is known and accepted.
    curve: Option<GapCurve>,
    /// Why the policy does nothing on this machine, once known.
    idle: Option<String>,
    source: MapiSource,
    /// Main-memory accesses and instructions per application since the last decision.
    counts: BTreeMap<Pid, (u64, u64)>,
    period_start_ns: Option<u64>,
    /// Length of the period that just ended (s).
    period_s: f64,
    /// Each application's work done so far, for the time left to gain in.
    progress: Progress,
    /// Whether a move that did not pay for itself was noted already.
    unpaid_noted: bool,
    last: Vec<AppView>,
    notes: Vec<String>,
    /// Why the last decision's moves were taken (asked once, then cleared).
    reasons: Vec<Reason>,
}

impl Oaas {
    /// `oaas`: moves carry the application's pages.
    pub(crate) fn with_pages(config: OaasConfig) -> Result<Self, PolicyError> {
        Self::new("oaas", true, config)
    }

    /// `oaas-nopm`: moves leave the pages where they are.
    pub(crate) fn without_pages(config: OaasConfig) -> Result<Self, PolicyError> {
        Self::new("oaas-nopm", false, config)
    }

    fn new(name: &'static str, with_memory: bool, config: OaasConfig) -> Result<Self, PolicyError> {
        check_config(name, OAAS_BOUNDS, &config)?;
        let file_curve = match &config.curve {
            Curve::Name(n) if n == "builtin" => None,
            Curve::Name(path) => {
                return Err(PolicyError::Config {
                    policy: name.to_string(),
                    message: format!(
                        "curve = '{path}': the file was not read (the program that builds the \
                         policy reads the files parameters name, see Registry::resolve_files)"
                    ),
                });
            }
            Curve::File { path, text } => {
                let curve = GapCurve::from_toml(text).map_err(|e| PolicyError::Config {
                    policy: name.to_string(),
                    message: format!("curve file '{path}': {e}"),
                })?;
                Some((path.clone(), curve))
            }
        };
        Ok(Self {
            name,
            with_memory,
            config,
            file_curve,
            curve: None,
            idle: None,
            source: MapiSource::Dram,
            counts: BTreeMap::new(),
            period_start_ns: None,
            period_s: 0.0,
            progress: Progress::default(),
            unpaid_noted: false,
            last: Vec::new(),
            notes: Vec::new(),
            reasons: Vec::new(),
        })
    }

    /// Which counter gives main-memory accesses (set by `configure`).
    pub fn source(&self) -> MapiSource {
        self.source
    }

    /// The curve in use, once the machine was accepted.
    pub fn curve(&self) -> Option<&GapCurve> {
        self.curve.as_ref()
    }

    /// Every application OAAS judged at its last decision, by pid.
    #[cfg(test)]
    pub(crate) fn last_decision(&self) -> &[AppView] {
        &self.last
    }

    fn note(&mut self, text: String) {
        if !self.notes.contains(&text) {
            self.notes.push(text);
        }
    }

    /// Takes the machine: refuses one it cannot schedule, finds the curve, or notes that there
    /// is nothing to do.
    fn prepare(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
        one_per_node(topology, processes)?;
        if let Some((_, c)) = &self.file_curve {
            c.check_machine(topology)
                .map_err(|e| Refusal(e.to_string()))?;
        }
        if nodes_of(topology, NodeClass::Slow).is_empty() {
            let why = "every CPU node of this machine is fast (no node needs more hops than \
                       the others to probe them, [Gaud10 §2]): there is no slow node to keep \
                       sensitive applications off, so it takes no action"
                .to_string();
            self.idle = Some(why.clone());
            self.note(why);
            return Ok(());
        }
        let (source, curve) = match &self.file_curve {
            Some((path, c)) => (format!("'{path}'"), c.clone()),
            None => ("built in".to_string(), builtin_curve_for(topology)?),
        };
        self.note(format!(
            "MAPI-to-gap curve {source}, measured on '{}' by {}",
            curve.machine, curve.measured_by
        ));
        if let Some((m0, g0, m1, g1)) = curve.falls(FALL_POINTS) {
            self.note(format!(
                "the MAPI-to-gap curve falls from {g0:.1}% at MAPI {m0} to {g1:.1}% at MAPI {m1}, \
                 where [Gaud10 §3.1] has the gap grow with MAPI: the applications are ranked by \
                 predicted gap, which then does not follow their MAPI (measure it again: rondpoint \
                 calibrate)"
            ));
        }
        self.curve = Some(curve);
        Ok(())
    }

    /// Adds the epoch's counters to the period's.
    fn count(&mut self, observation: &Observation) {
        for t in &observation.counters.threads {
            let memory = match self.source {
                MapiSource::Dram => t.dram_accesses,
                MapiSource::LlcMisses => t.llc_misses,
            };
            let e = self.counts.entry(t.pid).or_default();
            e.0 += memory;
            e.1 += t.instructions;
        }
    }

    /// Whether the period is over at the end of this epoch (and a new one starts).
    fn period_over(&mut self, observation: &Observation) -> bool {
        let period_ns = self.config.period_ms.saturating_mul(1_000_000);
        let epoch_ns = observation.counters.duration_ns;
        if epoch_ns > period_ns.saturating_add(1_000_000) {
            self.note(format!(
                "epochs of {} ms are longer than period_ms ({} ms): it decides once an epoch; \
                 run with --epoch-ms {} or less for the period of [Gaud10 §5.2]",
                epoch_ns / 1_000_000,
                self.config.period_ms,
                self.config.period_ms
            ));
        }
        let now = observation.start_ns.saturating_add(epoch_ns);
        let start = *self.period_start_ns.get_or_insert(observation.start_ns);
        if now.saturating_sub(start) < period_ns {
            return false;
        }
        self.period_s = now.saturating_sub(start) as f64 / 1e9;
        self.period_start_ns = Some(now);
        true
    }

    /// Each application's view from the period's counts; `None` (and a note) when two share a
    /// node or there are more than the CPU nodes.
    fn views(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Option<Vec<AppView>> {
        let running: Vec<&ProcessInfo> =
            processes.iter().filter(|p| !p.threads.is_empty()).collect();
        let owned: Vec<ProcessInfo> = running.iter().map(|p| (*p).clone()).collect();
        if let Err(e) = one_per_node(topology, &owned) {
            self.note(format!("{e}; it took no action while they ran"));
            return None;
        }
        let curve = self.curve.as_ref()?;
        let mut seen: BTreeMap<NodeId, Pid> = BTreeMap::new();
        let mut views = Vec::new();
        for p in running {
            let node = home(p)?;
            if let Some(other) = seen.insert(node, p.pid) {
                let text = format!(
                    "{other} and {} both run mostly on {node}: the policies of [Gaud10] give \
                     each application a node of its own (§4); it took no action then",
                    p.pid
                );
                self.note(text);
                return None;
            }
            let (memory, instructions) = self.counts.get(&p.pid).copied().unwrap_or((0, 0));
            if instructions == 0 {
                continue;
            }
            let mapi = memory as f64 / instructions as f64;
            views.push(AppView {
                pid: p.pid,
                node,
                mapi,
                gap_pct: curve.gap_pct(mapi),
            });
        }
        Some(views)
    }

    /// The swaps worth making: slow nodes' applications by decreasing gap against fast
    /// nodes' by increasing gap (an empty fast node counting 0), while the gain passes the
    /// threshold, each only if it pays for itself; and the first that did not, with its
    /// balance.
    fn swaps(&self, topology: &Topology, processes: &[ProcessInfo], views: &[AppView]) -> Swaps {
        let class = |n: NodeId| topology.class(n);
        let mut slow: Vec<&AppView> = views
            .iter()
            .filter(|v| class(v.node) == Some(NodeClass::Slow))
            .collect();
        slow.sort_by(|a, b| b.gap_pct.total_cmp(&a.gap_pct).then(a.pid.cmp(&b.pid)));
        // Fast nodes: their application's view, or none when empty; a node whose application
        // has no view (no instructions this period) is left alone.
        let occupied: Vec<NodeId> = processes.iter().filter_map(home).collect();
        let mut fast: Vec<(f64, Option<Pid>, NodeId)> = nodes_of(topology, NodeClass::Fast)
            .into_iter()
            .filter_map(|n| match views.iter().find(|v| v.node == n) {
                Some(v) => Some((v.gap_pct, Some(v.pid), n)),
                None if !occupied.contains(&n) => Some((0.0, None, n)),
                None => None,
            })
            .collect();
        fast.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
        let mut actions = Vec::new();
        let mut reasons = Vec::new();
        let to = |pid, to| Action::MoveApplication {
            pid,
            to,
            with_memory: self.with_memory,
        };
        let side = |pid: Pid, gap_pct: f64, to: NodeId| {
            let p = processes.iter().find(|p| p.pid == pid);
            Side {
                gap_pct,
                remaining_s: self.progress.remaining_s(pid, self.config.run_s),
                pages: match p {
                    Some(p) if self.with_memory => pages_to_move(topology, p, to),
                    _ => 0,
                },
                threads: p.map_or(1, |p| p.threads.len()),
            }
        };
        let bound = self.config.max_loss_points.unwrap_or(f64::INFINITY);
        let mut unpaid = None;
        let mut held = None;
        for (b, (p_a, a, a_node)) in slow.iter().zip(fast) {
            if b.gap_pct - p_a <= self.config.min_gain_points {
                break;
            }
            if let Some(a) = a.filter(|_| p_a > bound) {
                // Fast nodes come by increasing gap: every one left would lose more.
                held.get_or_insert((b.pid, a, p_a));
                break;
            }
            let a_side = a.map(|a| side(a, p_a, b.node));
            let balance = Balance::of(
                &side(b.pid, b.gap_pct, a_node),
                a_side.as_ref(),
                self.config.migrate_page_us,
            );
            if !balance.pays() {
                unpaid.get_or_insert((b.pid, a_node, balance));
                continue;
            }
            let before = actions.len();
            if let Some(a) = a {
                actions.push(to(a, b.node));
            }
            actions.push(to(b.pid, a_node));
            reasons.push(self.swap_reason(actions.len() - before, b, (p_a, a, a_node), &balance));
        }
        Swaps {
            actions,
            reasons,
            unpaid,
            held,
        }
    }

    /// Why B (on a slow node) and A (on fast node `a_node`, or nobody) swap.
    fn swap_reason(
        &self,
        actions: usize,
        b: &AppView,
        (p_a, a, a_node): (f64, Option<Pid>, NodeId),
        balance: &Balance,
    ) -> Reason {
        let other = match a {
            Some(a) => format!("{a} on fast {a_node}, predicted gap {p_a:.1}%"),
            None => format!("fast {a_node}, empty"),
        };
        let evidence = format!(
            "{} on slow {}: MAPI {:.4}, predicted fast/slow gap {:.1}% by the MAPI-to-gap \
             curve, against {other}: {:.1} points over min_gain_points {} [Gaud10 §5.1]",
            b.pid,
            b.node,
            b.mapi,
            b.gap_pct,
            b.gap_pct - p_a,
            self.config.min_gain_points
        );
        let expected = format!(
            "{:.3} s saved over what is left of the runs, against {:.3} s to move {} pages",
            balance.gain_s, balance.cost_s, balance.pages
        );
        Reason::new(actions, self.name, evidence).expecting(expected)
    }

    /// Counts the period's work of each application judged, for the time left of its run.
    fn advance(&mut self, topology: &Topology, views: &[AppView]) {
        for v in views {
            let slow = topology.class(v.node) == Some(NodeClass::Slow);
            self.progress.add(v.pid, self.period_s, slow, v.gap_pct);
        }
    }

    /// Says, once, that a swap passing the threshold was held back by `max_loss_points`.
    fn note_held(&mut self, now_ns: u64, held: Option<(Pid, Pid, f64)>) {
        let (Some((b, a, p_a)), Some(bound)) = (held, self.config.max_loss_points) else {
            return;
        };
        if self.notes.iter().any(|n| n.contains("max_loss_points")) {
            return;
        }
        self.note(format!(
            "swaps whose predicted gain passed min_gain_points were held back where the fast \
             node's application would lose more than max_loss_points ({bound} points), the \
             first at {:.1} s: {b} to the fast node of {a}, whose predicted gap is {p_a:.1}%",
            now_ns as f64 / 1e9
        ));
    }

    /// Says, once, that a move passing the threshold was left out because it did not pay.
    fn note_unpaid(&mut self, now_ns: u64, unpaid: Option<(Pid, NodeId, Balance)>) {
        let Some((pid, to, b)) = unpaid.filter(|_| !self.unpaid_noted) else {
            return;
        };
        self.unpaid_noted = true;
        self.note(format!(
            "moves whose predicted gain passed min_gain_points but would not pay for itself \
             were left out ([Gaud10 §5.1]: migration costs must be amortized), the first at \
             {:.1} s: {pid} to {to}, an expected {:.3} s saved over what is left of the runs \
             (run_s {} s) against {:.3} s to move {} pages (migrate_page_us {} µs)",
            now_ns as f64 / 1e9,
            b.gain_s,
            self.config.run_s,
            b.cost_s,
            b.pages,
            self.config.migrate_page_us
        ));
    }
}

/// How far (percentage points) a curve may fall below its highest gap at a lower MAPI before
/// the run says so: measurement noise, ours (calibration repeats within a fraction of a point).
const FALL_POINTS: f64 = 1.0;

impl Policy for Oaas {
    fn name(&self) -> &str {
        self.name
    }

    fn needs(&self) -> Vec<Need> {
        vec![
            Need::one(
                Capability::ThreadCounters,
                "for the instructions each thread retires, MAPI's denominator [Gaud10 §3.1]",
            )
            .exactly(),
            Need::any(
                &[Capability::ThreadDram, Capability::ThreadCounters],
                "for each thread's main-memory accesses, MAPI's numerator: DRAM accesses \
                 [Gaud10 §3.1], or LLC misses as our approximation",
            ),
            Need::one(
                Capability::MoveApplications,
                if self.with_memory {
                    "to move an application's threads to another node and its pages with them \
                     (sched_setaffinity and numa_migrate_pages, [Gaud10 §5.2])"
                } else {
                    "to move an application's threads to another node (sched_setaffinity, \
                     [Gaud10 §5.2])"
                },
            )
            .exactly(),
        ]
    }

    fn configure(&mut self, capabilities: &Capabilities) {
        match capabilities.support(Capability::ThreadDram) {
            Support::Full => self.source = MapiSource::Dram,
            other => {
                self.source = MapiSource::LlcMisses;
                let how = match other {
                    Support::Estimated(h) | Support::Substituted(h) => {
                        format!("only estimated: {h}")
                    }
                    Support::Missing(h) => h,
                    Support::Full => String::new(),
                };
                self.note(format!(
                    "MAPI from LLC misses, our approximation of [Gaud10 §3.1]'s CPU-to-DRAM \
                     counter: this machine counts no DRAM accesses per thread ({how})"
                ));
            }
        }
    }

    fn accepts(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
        self.prepare(topology, processes)
    }

    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        if self.idle.is_some() || self.curve.is_none() {
            return Vec::new();
        }
        let mut nodes = cpu_nodes(topology);
        let (actions, how) = match self.config.initial_placement {
            InitialPlacement::None => (Vec::new(), ""),
            InitialPlacement::InOrder => (place(processes, &nodes, false), "in order"),
            InitialPlacement::Random => {
                nodes.shuffle(&mut Pcg64Mcg::seed_from_u64(self.config.seed));
                (place(processes, &nodes, false), "at random (seeded)")
            }
        };
        let evidence = format!(
            "initial placement {how}: one application per CPU node before any is measured \
             [Gaud10 §4]"
        );
        self.reasons = vec![
            Reason::new(actions.len(), self.name, evidence)
                .expecting("none yet: later decisions move applications by measured MAPI"),
        ];
        actions
    }

    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        if self.idle.is_some() {
            return Vec::new();
        }
        if self.curve.is_none() {
            if let Err(e) = self.prepare(topology, &observation.processes) {
                self.note(format!("{e}; it took no action"));
            }
            if self.curve.is_none() {
                return Vec::new();
            }
        }
        let group = match self.source {
            MapiSource::Dram => CounterGroup::ThreadDram,
            MapiSource::LlcMisses => CounterGroup::LlcMisses,
        };
        if observation.counters.is_missing(CounterGroup::Instructions)
            || observation.counters.is_missing(group)
        {
            self.note(
                "the machine measured no instructions or memory accesses in some \
                       epochs: no MAPI, no decision then"
                    .into(),
            );
            return Vec::new();
        }
        self.count(observation);
        if !self.period_over(observation) {
            return Vec::new();
        }
        let views = self.views(topology, &observation.processes);
        self.counts.clear();
        let Some(views) = views else {
            return Vec::new();
        };
        self.advance(topology, &views);
        let swaps = self.swaps(topology, &observation.processes, &views);
        self.reasons = swaps.reasons;
        let now = observation
            .start_ns
            .saturating_add(observation.counters.duration_ns);
        self.note_unpaid(now, swaps.unpaid);
        self.note_held(now, swaps.held);
        self.last = views;
        swaps.actions
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn reasons(&mut self) -> Vec<Reason> {
        std::mem::take(&mut self.reasons)
    }

    fn sampling(&self) -> rondpoint_model::SamplingRequest {
        rondpoint_model::SamplingRequest {
            counters: true,
            ..rondpoint_model::SamplingRequest::NONE
        }
    }
}
