//! The [`Policy`] trait: what every placement policy implements, and what the engine calls.

use rondpoint_model::{
    Action, Capabilities, Need, Observation, Outcome, ProcessInfo, Reason, Sample, SamplingRequest,
    Topology,
};
use thiserror::Error;

/// A placement policy.
pub trait Policy {
    /// The name users pass to `--policy`.
    fn name(&self) -> &str;

    /// What the policy needs of the machine, for the parameters it was built with. The engine
    /// refuses to run a policy whose needs the machine cannot meet, naming what is missing
    /// (see [`rondpoint_model::Capabilities::check`]).
    fn needs(&self) -> Vec<Need>;

    /// How many equally likely placements the policy stands for, for `processes` processes on
    /// `topology`: 1 for a policy that decides, more for a baseline that is a distribution of
    /// placements rather than one (the default scheduler of [Majo11 §4.3]: every split of the
    /// processes a CPU-load balancer would choose). A simulator runs each, chosen with
    /// [`Policy::select_variant`] before the run, and reports their average and spread.
    fn variants(&self, topology: &Topology, processes: usize) -> usize {
        let _ = (topology, processes);
        1
    }

    /// Takes placement `k` (from 0) of those [`Policy::variants`] counts, before the run. The
    /// default ignores it.
    fn select_variant(&mut self, k: usize) {
        let _ = k;
    }

    /// What the machine offers, given once before the run after [`Policy::needs`] was found
    /// met, so that a policy with more than one way of working (at allocation time where the
    /// machine can, by migration afterwards where it cannot) takes the one the machine
    /// supports. The default ignores it.
    fn configure(&mut self, capabilities: &Capabilities) {
        let _ = capabilities;
    }

    /// Whether the policy can work on this machine with these programs at all, asked once
    /// before the run, after its needs were found met: `Err(why)` stops the run before
    /// anything is touched, as an unmet need does (OAAS given a MAPI-to-gap curve measured on
    /// another machine); the policy may keep what it found (the curve it chose). A policy
    /// that can only do nothing here accepts, and says so in [`Policy::notes`]. N-MASS refuses
    /// more processes than cores ([Majo11 §3.3, Limitations]). The default accepts.
    fn accepts(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Result<(), Refusal> {
        let _ = (topology, processes);
        Ok(())
    }

    /// What the run's report should say about the policy: that it took no action and why,
    /// or what it approximated. The engine reads them when the run ends. The default has none.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Decisions taken before the managed programs start (allocation policies, pinning).
    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let _ = (topology, processes);
        Vec::new()
    }

    /// Samples of epoch `epoch` delivered before its end, as a backend drains its sampler
    /// during the epoch (the engine hands them over while it waits the epoch out). They are
    /// the first samples of that epoch's observation, in the same order: `decide` sees them
    /// again in `observation.samples`, so a policy that counts them here counts only the rest
    /// there, and one that ignores them (the default) loses nothing. A policy gains from this
    /// when counting is most of its decision (Carrefour: the paper counts each IBS sample in
    /// its interrupt handler, and decides once a second on what was counted).
    fn ingest(&mut self, topology: &Topology, epoch: u64, samples: &[Sample]) {
        let _ = (topology, epoch, samples);
    }

    /// Decisions at the end of an epoch.
    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action>;

    /// Why the policy took the actions of its last [`Policy::start`] or [`Policy::decide`],
    /// asked once right after each: reasons in the order of those actions, each covering the
    /// next [`Reason::actions`] of them, with the evidence (figures and the thresholds they
    /// passed) and the gain the policy expects. Recordings, reports and `rondpoint explain`
    /// carry them with every action. The default gives none; the engine then says so for
    /// each action.
    fn reasons(&mut self) -> Vec<Reason> {
        Vec::new()
    }

    /// What became of the actions of the start and of each decision, one outcome per action
    /// in the order carried out (those the rate limits refused, and every action of a dry
    /// run, come back skipped). A policy that keeps beliefs about the machine (Carrefour:
    /// which pages have replicas) corrects them here; the default ignores them.
    fn outcomes(&mut self, actions: &[Action], outcomes: &[Outcome]) {
        let _ = (actions, outcomes);
    }

    /// The samples the policy wants now (asked again after every decision, so a policy can
    /// adapt its rates). The default asks for none, and the backend then pays nothing.
    fn sampling(&self) -> SamplingRequest {
        SamplingRequest::NONE
    }
}

/// Why a policy cannot work on this machine with these programs ([`Policy::accepts`]): the
/// run stops before anything is touched, with this text as the reason.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{0}")]
pub struct Refusal(pub String);

impl Refusal {
    /// A refusal for the reason `why`.
    pub fn new(why: impl Into<String>) -> Self {
        Self(why.into())
    }
}

impl From<String> for Refusal {
    fn from(why: String) -> Self {
        Self(why)
    }
}
