//! `auto`: one manager made of the four systems, each owning one kind of decision (a lane),
//! built from the other policies through the registry:
//!
//! - **placement** (which node a program runs on): OAAS where the interconnect is asymmetric and
//!   multi-threaded applications fill nodes \[Gaud10\], N-MASS where single-threaded processes
//!   share last-level caches \[Majo11\], neither elsewhere (`detect::placement`);
//! - **overflow** (where memory goes once a node is full): usage-aware, nearest tier first
//!   \[Choe21\];
//! - **pages** (where pages go by the traffic they draw): Carrefour, with its payoff guard
//!   \[Dashti13\].
//!
//! Each epoch the lanes decide in that order, and the arbiter (`arbiter.rs`) settles their conflicts by
//! stated rules: pages of a process N-MASS placed stay where its decision weighed them; pages
//! of an application OAAS moved are not sent off its nodes; no pages are moved onto a full
//! node or a slower tier by the pages lane. A lane whose signals the machine lacks, or that
//! does not apply to the machine or the programs, is left out with the reason in the notes,
//! never run on zeros. Each lane keeps its own guards (Carrefour's payoff guard, usage-aware's
//! move limits), and the placement lane's placement of threads is measured against the
//! operating system's, and the overflow lane's placement of overflow against the kernel's
//! fallback, each undone when it does not pay (`trial/`).

mod arbiter;
mod config;
mod detect;
mod exchange;
mod rebuild;
#[cfg(test)]
mod tests;
mod trial;

pub use arbiter::{PlacedBy, Rule};
pub use config::{AutoConfig, BOUNDS, LANE_POLICIES, Lane};
pub use detect::Placement;
pub use trial::{TrialConfig, Verdict as TrialVerdict};

use crate::remote::reactive::Limits;
use crate::remote::{Mode, UsageAwareConfig};
use crate::{Policy, PolicyError};
use arbiter::Arbiter;
use rondpoint_model::{
    Action, Capabilities, Explained, Need, Observation, Outcome, OutcomeStatus, ProcessInfo,
    Reason, Sample, SamplingRequest, Topology,
};
use rondpoint_policy_api::{PolicyConfig, Refusal};
use trial::overflow::OverflowTrial;
use trial::placement::Trial;

/// One lane's policy and whether it acts.
struct Slot {
    lane: Lane,
    policy: Box<dyn Policy>,
    /// Why it does not act, once known.
    out: Option<String>,
    /// What the lane's checks said (capabilities only estimated).
    notes: Vec<String>,
    /// Actions the lane took (through the arbiter), by technique.
    taken: std::collections::BTreeMap<&'static str, u64>,
}

impl Slot {
    fn acts(&self) -> bool {
        self.out.is_none()
    }

    /// Configures the slot's policy for what the machine can do, or leaves the slot out naming
    /// the needs the machine cannot meet.
    fn configure(&mut self, capabilities: &Capabilities) {
        match capabilities.check(self.policy.name(), &self.policy.needs()) {
            Ok(notes) => {
                self.notes = notes;
                self.policy.configure(capabilities);
            }
            Err(unmet) => self.out = Some(unmet.to_string()),
        }
    }
}

/// The composed manager (see the module documentation).
pub struct Auto {
    config: AutoConfig,
    /// Pages and overflow lanes, and both placement candidates; at most one slot of each lane
    /// acts.
    slots: Vec<Slot>,
    placement: Placement,
    arbiter: Arbiter,
    /// Whether the placement lane's placement pays (`trial/placement.rs`).
    trial: Trial,
    /// Whether the overflow lane's placement pays (`trial/overflow.rs`).
    spill: OverflowTrial,
    /// How the overflow lane places overflow (its `mode`).
    overflow_mode: Mode,
    /// Actions returned and not yet reported on, with the slot that proposed each
    /// ([`TRIAL`] for the trial's).
    pending: Vec<(Action, usize)>,
    /// Proposals the arbiter dropped, to report to their lane as skipped.
    dropped: Vec<(Action, usize, Rule)>,
    /// Why the actions of the last start or decision were taken, each lane's reasons under
    /// the lane's name.
    explained: Explained,
    notes: Vec<String>,
    /// What the machine can do, once told (to configure a lane built again).
    capabilities: Option<Capabilities>,
}

impl Auto {
    /// `auto` with its lanes built through the registry from `config`.
    pub fn new(config: AutoConfig) -> Result<Self, PolicyError> {
        rondpoint_policy_api::bounds::check_config("auto", BOUNDS, &config)?;
        let mut slots = Vec::new();
        let wanted = |l: Lane| config.lanes.contains(&l);
        if wanted(Lane::Placement) {
            slots.push(slot(
                Lane::Placement,
                "oaas",
                &Some(oaas_table(&config)),
                config.seed,
            )?);
            slots.push(slot(
                Lane::Placement,
                "n-mass",
                &config.n_mass,
                config.seed,
            )?);
        }
        if wanted(Lane::Overflow) {
            slots.push(slot(
                Lane::Overflow,
                "usage-aware",
                &Some(overflow_table(&config)),
                config.seed,
            )?);
        }
        if wanted(Lane::Pages) {
            slots.push(slot(
                Lane::Pages,
                "carrefour",
                &config.carrefour,
                config.seed,
            )?);
        }
        let mut notes = Vec::new();
        for lane in Lane::ALL.iter().filter(|l| !wanted(**l)) {
            notes.push(format!("{} lane off: not in `lanes`", lane.name()));
        }
        let (spill, overflow_mode) = overflow_trial(&config);
        Ok(Self {
            trial: Trial::new(config.trial.clone()),
            spill,
            overflow_mode,
            config,
            slots,
            placement: Placement::Unknown,
            arbiter: Arbiter::default(),
            pending: Vec::new(),
            dropped: Vec::new(),
            explained: Explained::default(),
            notes,
            capabilities: None,
        })
    }

    /// The placement lane chosen so far.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// Which lanes act, by the name of the policy that acts in each.
    pub fn acting(&self) -> Vec<(Lane, &str)> {
        self.slots
            .iter()
            .filter(|s| s.acts())
            .map(|s| (s.lane, s.policy.name()))
            .collect()
    }

    /// What the notes say of one lane: the policy acting in it and its own notes, or why no
    /// policy acts in it (once when every candidate was left out for the same reason).
    fn lane_notes(&self, lane: Lane) -> Vec<String> {
        let slots: Vec<&Slot> = self.slots.iter().filter(|s| s.lane == lane).collect();
        let l = lane.name();
        if let Some(s) = slots.iter().find(|s| s.acts()) {
            let name = s.policy.name();
            let own = s.notes.iter().cloned().chain(s.policy.notes());
            let taken: Vec<String> = s.taken.iter().map(|(t, n)| format!("{n} {t}")).collect();
            let taken = match taken.is_empty() {
                true => "nothing".to_string(),
                false => taken.join(", "),
            };
            return std::iter::once(format!("{l} lane: {name} (decided {taken})"))
                .chain(own.map(|n| format!("{l} ({name}): {n}")))
                .collect();
        }
        let whys: Vec<&str> = slots.iter().filter_map(|s| s.out.as_deref()).collect();
        match whys.as_slice() {
            [] => Vec::new(),
            [first, rest @ ..] if rest.iter().all(|w| w == first) => {
                vec![format!("{l} lane: none acts: {first}")]
            }
            _ => slots
                .iter()
                .filter_map(|s| {
                    let why = s.out.as_deref()?;
                    Some(format!("{l} lane: {} left out: {why}", s.policy.name()))
                })
                .collect(),
        }
    }

    /// Chooses the placement lane for `processes` (once every program runs), and has it accept
    /// them; the actions its start would have taken, now that it starts.
    fn choose_placement(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let chosen = detect::placement(topology, processes);
        let name = match &chosen {
            Placement::Unknown => return Vec::new(),
            Placement::Oaas => Some("oaas"),
            Placement::NMass => Some("n-mass"),
            Placement::Neither(_) => None,
        };
        let why = match (&chosen, name) {
            (Placement::Neither(why), _) => why.clone(),
            (_, Some(name)) => format!("another placement policy applies here ({name})"),
            _ => String::new(),
        };
        self.placement = chosen;
        let mut started = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            if s.lane != Lane::Placement || s.out.is_some() {
                continue;
            }
            if Some(s.policy.name()) != name {
                s.out = Some(why.clone());
                continue;
            }
            match s.policy.accepts(topology, processes) {
                Ok(()) => {
                    let acts = s.policy.start(topology, processes);
                    self.trial.begin(processes, &acts);
                    let why = lane_reasons(s, acts.len());
                    self.explained.extend(why);
                    started.extend(acts.into_iter().map(|a| (a, i)));
                }
                Err(Refusal(r)) => s.out = Some(r),
            }
        }
        self.take(started)
    }

    /// Records the placement lane's actions and hands back all of them, pending their
    /// outcomes.
    fn take(&mut self, proposed: Vec<(Action, usize)>) -> Vec<Action> {
        let mut out = Vec::with_capacity(proposed.len());
        for (a, i) in proposed {
            if self.slots[i].lane == Lane::Placement {
                let by = match self.placement {
                    Placement::Oaas => PlacedBy::Oaas,
                    _ => PlacedBy::NMass,
                };
                self.arbiter.placed(by, std::slice::from_ref(&a));
            }
            *self.slots[i].taken.entry(a.technique()).or_default() += 1;
            self.pending.push((a.clone(), i));
            out.push(a);
        }
        out
    }

    /// Every acting lane's proposals, in lane order, the pages lane's through the arbiter.
    fn gather(
        &mut self,
        topology: &Topology,
        observation: Option<&Observation>,
        lanes: &[Lane],
        mut propose: impl FnMut(&mut dyn Policy) -> Vec<Action>,
    ) -> Vec<Action> {
        let mut all = Vec::new();
        for &lane in lanes {
            for i in 0..self.slots.len() {
                let s = &mut self.slots[i];
                if s.lane != lane || !s.acts() {
                    continue;
                }
                let proposed = propose(s.policy.as_mut());
                if let (Lane::Overflow, Some(obs)) = (lane, observation) {
                    if !self.spill.proposed(&proposed, obs) {
                        continue;
                    }
                }
                let s = &mut self.slots[i];
                let why = lane_reasons(s, proposed.len());
                if lane == Lane::Placement {
                    self.trial.placing(&proposed);
                }
                if lane != Lane::Pages {
                    self.explained.extend(why);
                    all.extend(proposed.into_iter().map(|a| (a, i)));
                    continue;
                }
                let min_free = self.config.min_free_mib.saturating_mul(1 << 20);
                let indexed = proposed.into_iter().enumerate().map(|(k, a)| (a, k));
                let (kept, dropped) =
                    self.arbiter
                        .pages(topology, observation, min_free, indexed.collect());
                let order: Vec<usize> = kept.iter().map(|(_, k)| *k).collect();
                self.explained.extend(why.pick(&order));
                all.extend(kept.into_iter().map(|(a, _)| (a, i)));
                self.dropped
                    .extend(dropped.into_iter().map(|(a, _, r)| (a, i, r)));
            }
        }
        self.take(all)
    }

    /// Tells each lane what became of its proposals: the backend's outcomes for those carried
    /// out, skipped with the rule for those the arbiter dropped.
    ///
    /// Outcomes come in the order the actions were returned, but for those a rate limit
    /// refused, which the engine reports after the others (and start decisions held until the
    /// programs run, reported later): so each is looked for from where the last one was
    /// found, wrapping around, which takes one pass over `pending` per such run of outcomes
    /// (a search from the start took one per outcome, quadratic in Carrefour's thousands of
    /// actions an epoch).
    fn route(&mut self, actions: &[Action], outcomes: &[Outcome]) {
        let mut by_slot: Vec<(Vec<Action>, Vec<Outcome>)> =
            (0..self.slots.len()).map(|_| Default::default()).collect();
        let n = self.pending.len();
        let mut reported = vec![false; n];
        let mut cursor = 0;
        for (a, o) in actions.iter().zip(outcomes) {
            let found = (0..n)
                .map(|k| (cursor + k) % n)
                .find(|&k| !reported[k] && self.pending[k].0 == *a);
            let Some(k) = found else {
                continue;
            };
            reported[k] = true;
            cursor = k + 1;
            if self.pending[k].1 == OVERFLOW_TRIAL {
                // Moves back: what they left is measured next epoch.
                continue;
            }
            if self.pending[k].1 == TRIAL {
                let failed = o.status != OutcomeStatus::Applied;
                self.trial
                    .outcome(failed.then(|| o.note.clone().unwrap_or_default()));
                continue;
            }
            let (acts, outs) = &mut by_slot[self.pending[k].1];
            outs.push(Outcome {
                action: acts.len(),
                ..o.clone()
            });
            acts.push(a.clone());
        }
        let mut k = 0;
        self.pending.retain(|_| {
            k += 1;
            !reported[k - 1]
        });
        for (a, i, rule) in self.dropped.drain(..) {
            let (acts, outs) = &mut by_slot[i];
            outs.push(Outcome::skipped(acts.len(), a.pages(), rule.describe()));
            acts.push(a);
        }
        for (s, (acts, outs)) in self.slots.iter_mut().zip(by_slot) {
            if !acts.is_empty() {
                s.policy.outcomes(&acts, &outs);
            }
        }
    }
}

impl Auto {
    /// The placement trial's switch for this epoch, if any (its actions pending as the
    /// trial's); once it undoes the placement, the placement lane stops and its processes are
    /// no longer its own for the arbiter.
    fn try_placement(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        let switch = self.trial.observe(topology, observation, self.spill.busy());
        let placing = self
            .slots
            .iter_mut()
            .find(|s| s.lane == Lane::Placement && s.acts());
        let name = placing.as_ref().map_or("", |s| s.policy.name()).to_string();
        // Undone: the lane stops (once: it then no longer acts), until the programs change.
        if let (Some(TrialVerdict::Undone(w)), Some(s)) = (self.trial.verdict(), placing) {
            if self.trial.undone() {
                s.out = Some(format!("its placement did not pay, and was undone: {w}"));
                self.arbiter.unplace_all();
            }
        }
        let Some((acts, mut reason)) = switch else {
            return Vec::new();
        };
        reason.by = format!("{} lane: {name} (trial)", Lane::Placement.name());
        self.explained.push(reason, acts.len());
        self.pending.extend(acts.iter().map(|a| (a.clone(), TRIAL)));
        acts
    }
}

impl Auto {
    /// The overflow trial's moves back for this epoch, if any (pending as the trial's); once
    /// it undoes the lane's placement, the overflow lane stops.
    fn try_overflow(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        let back = self.spill.observe(topology, observation);
        if let Some(avoid) = self.spill.take_retry() {
            self.rebuild_overflow(topology, observation, &avoid);
        }
        let lane = self.slots.iter_mut().find(|s| s.lane == Lane::Overflow);
        let name = lane.as_ref().map_or("", |s| s.policy.name()).to_string();
        if let (Some(w), Some(s)) = (self.spill.stopped(), lane.filter(|s| s.acts())) {
            s.out = Some(format!(
                "its placement of overflow did not pay, and was undone: {w}"
            ));
        }
        let Some((acts, mut reason)) = back else {
            return Vec::new();
        };
        reason.by = format!("{} lane: {name} (trial)", Lane::Overflow.name());
        self.explained.push(reason, acts.len());
        self.pending
            .extend(acts.iter().map(|a| (a.clone(), OVERFLOW_TRIAL)));
        acts
    }
}

impl std::fmt::Debug for Auto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auto")
            .field("config", &self.config)
            .field("acting", &self.acting())
            .field("placement", &self.placement)
            .finish_non_exhaustive()
    }
}

/// The owners, in [`Auto::pending`], of the placement trial's actions and of the overflow
/// trial's.
const TRIAL: usize = usize::MAX;
const OVERFLOW_TRIAL: usize = usize::MAX - 1;

/// The reasons the policy of slot `s` gave for its last `n` actions, each under the lane's
/// name ("pages lane: carrefour").
fn lane_reasons(s: &mut Slot, n: usize) -> Explained {
    let mut why = Explained::new(s.policy.reasons(), n, s.policy.name());
    let by = format!("{} lane: {}", s.lane.name(), s.policy.name());
    for r in &mut why.reasons {
        r.by.clone_from(&by);
    }
    why
}

/// A lane's policy, built through the registry from its sub-table of `[auto]` (the run's seed
/// where the sub-table gives none); errors name the sub-table.
fn slot(
    lane: Lane,
    name: &str,
    table: &Option<toml::Table>,
    seed: u64,
) -> Result<Slot, PolicyError> {
    let registry = crate::registry();
    let info = registry.info(name)?;
    let mut table = table.clone().unwrap_or_default();
    if (info.defaults)().contains_key("seed") && !table.contains_key("seed") {
        let seed = i64::try_from(seed).unwrap_or(i64::MAX);
        table.insert("seed".into(), toml::Value::Integer(seed));
    }
    let config = PolicyConfig::from_table(toml::Table::from_iter([(
        name.to_string(),
        toml::Value::Table(table),
    )]))?;
    let policy = registry.build(name, &config).map_err(|e| match e {
        PolicyError::Config { policy, message } => PolicyError::Config {
            policy: format!("auto.{policy}"),
            message,
        },
        other => other,
    })?;
    Ok(Slot {
        lane,
        policy,
        out: None,
        notes: Vec::new(),
        taken: Default::default(),
    })
}

/// `[auto.usage-aware]`, with the overflow placed after allocation (`mode = "reactive"`)
/// where the overflow trial needs it and the table does not choose.
fn overflow_table(config: &AutoConfig) -> toml::Table {
    let mut table = config.usage_aware.clone().unwrap_or_default();
    if config.trial.overflow && !table.contains_key("mode") {
        table.insert("mode".into(), toml::Value::String("reactive".into()));
    }
    table
}

/// `[auto.oaas]`, with what a manager needs where the table does not choose: the programs
/// taken where the operating system runs them (`initial_placement = "none"`: the paper's
/// random start is its evaluation's setup [Gaud10 §5.3], not a decision), and, when the
/// placement trial is on, no swap that would send an application whose predicted gap exceeds
/// the do-no-harm bound to a slow node (`max_loss_points`): OAAS's moves carry their memory
/// and are not tried, so the bound is applied to the prediction.
pub(super) fn oaas_table(config: &AutoConfig) -> toml::Table {
    let mut table = config.oaas.clone().unwrap_or_default();
    if !table.contains_key("initial_placement") {
        table.insert("initial_placement".into(), "none".into());
    }
    if config.trial.placement && !table.contains_key("max_loss_points") {
        let points = config.trial.max_loss * 100.0;
        table.insert("max_loss_points".into(), toml::Value::Float(points));
    }
    table
}

/// The overflow trial of `config`, moving back within the overflow lane's own limits, and how
/// the lane places overflow.
fn overflow_trial(config: &AutoConfig) -> (OverflowTrial, Mode) {
    let table = overflow_table(config);
    let ua: UsageAwareConfig = toml::Value::Table(table).try_into().unwrap_or_default();
    let limits = Limits::from_mib(ua.max_move_mib_per_epoch, ua.min_move_mib);
    (OverflowTrial::new(config.trial.clone(), limits), ua.mode)
}

impl Policy for Auto {
    fn name(&self) -> &str {
        "auto"
    }

    /// None of its own: a lane whose needs the machine cannot meet is left out, with them
    /// named in the notes ([`Policy::configure`]).
    fn needs(&self) -> Vec<Need> {
        Vec::new()
    }

    fn configure(&mut self, capabilities: &Capabilities) {
        self.capabilities = Some(capabilities.clone());
        if self.overflow_mode.at_allocation(capabilities) {
            self.spill.skip(
                "the overflow lane places overflow at allocation ([auto.usage-aware] mode), \
                 which leaves no kernel placement to measure"
                    .into(),
            );
        }
        for s in &mut self.slots {
            s.configure(capabilities);
        }
    }

    fn accepts(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
        for s in &mut self.slots {
            let why_not = match s.lane {
                Lane::Pages => detect::pages(topology),
                Lane::Overflow => detect::overflow(topology),
                Lane::Placement => None,
            };
            if s.out.is_none() {
                s.out = why_not;
            }
            if s.lane != Lane::Placement && s.out.is_none() {
                if let Err(Refusal(r)) = s.policy.accepts(topology, processes) {
                    s.out = Some(r);
                }
            }
        }
        Ok(())
    }

    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        self.explained = Explained::default();
        let mut actions = self.choose_placement(topology, processes);
        // The placement lane started as it was chosen.
        let others = [Lane::Overflow, Lane::Pages];
        actions.extend(self.gather(topology, None, &others, |p| p.start(topology, processes)));
        actions
    }

    fn ingest(&mut self, topology: &Topology, epoch: u64, samples: &[Sample]) {
        for s in self.slots.iter_mut().filter(|s| s.acts()) {
            s.policy.ingest(topology, epoch, samples);
        }
    }

    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        self.explained = Explained::default();
        let mut actions = self.readmit_placement(topology, observation);
        if self.placement == Placement::Unknown {
            actions.extend(self.choose_placement(topology, &observation.processes));
        }
        actions.extend(self.try_placement(topology, observation));
        actions.extend(self.try_overflow(topology, observation));
        let measuring = self.trial.measuring();
        let lanes: Vec<Lane> = Lane::ALL
            .into_iter()
            .filter(|&l| match l {
                // Once chosen for the programs, and not held by its trial.
                Lane::Placement => {
                    matches!(self.placement, Placement::Oaas | Placement::NMass)
                        && !self.trial.holds_lane()
                }
                Lane::Overflow => !self.spill.holds_lane(measuring),
                Lane::Pages => true,
            })
            .collect();
        actions.extend(self.gather(topology, Some(observation), &lanes, |p| {
            p.decide(topology, observation)
        }));
        actions
    }

    fn reasons(&mut self) -> Vec<Reason> {
        std::mem::take(&mut self.explained).runs()
    }

    fn outcomes(&mut self, actions: &[Action], outcomes: &[Outcome]) {
        self.route(actions, outcomes);
    }

    fn sampling(&self) -> SamplingRequest {
        let mut out = SamplingRequest::NONE;
        for s in self.slots.iter().filter(|s| s.acts()) {
            let r = s.policy.sampling();
            if let Some(p) = r.period_cycles {
                if out.period_cycles.is_none_or(|q| p < q) {
                    out.period_cycles = Some(p);
                    out.by_process = r.by_process.clone();
                }
            }
            out.hinting = out.hinting.or(r.hinting);
            out.truth |= r.truth;
            out.counters |= r.counters;
        }
        out
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        for lane in Lane::ALL {
            notes.extend(self.lane_notes(lane));
        }
        notes.extend(self.trial.note());
        notes.extend(self.spill.notes());
        for (rule, n) in &self.arbiter.dropped {
            notes.push(format!(
                "arbiter: {n} pages-lane proposal(s) dropped: {}",
                rule.describe()
            ));
        }
        notes
    }
}
