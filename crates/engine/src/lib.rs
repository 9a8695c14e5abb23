//! The policy engine: runs any [`Policy`] against any [`Machine`].
//!
//! The engine owns time. Each epoch it lets the machine run until the next epoch boundary on
//! its [`Clock`] (a simulated machine simulates up to it; a live machine waits for it), hands
//! the observation to the policy, admits the policy's actions through the rate limits, has the
//! machine carry them out, and accounts for every outcome. While a wall clock waits an epoch
//! out, the samples the machine can drain are handed to the policy as they come
//! ([`Machine::drain_samples`], [`Policy::ingest`]), so that the decision at the epoch's end
//! need not count them all.

#![forbid(unsafe_code)]

mod accounting;
mod clock;
mod rate;
pub mod record;

pub use accounting::{Accounting, ReasonTotals, TechniqueTotals};
pub use clock::{Clock, Poll, VirtualClock, WallClock};
pub use rate::RateLimits;

use rondpoint_model::{
    Action, Capabilities, Explained, Observation, Outcome, Pid, ProcessInfo, Reason, Sample,
    SampleSource, SamplingRequest, Topology, Unmet,
};
use rondpoint_policy_api::Policy;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use thiserror::Error;

/// A machine the engine can manage: the simulator or a live Linux machine.
pub trait Machine {
    type Error: std::error::Error + Send + Sync + 'static;

    /// The machine's topology.
    fn topology(&self) -> &Topology;

    /// What the machine can observe and do (a live machine probes what it needs to know the
    /// first time it is asked). The engine refuses to run a policy whose needs it does not
    /// meet, before anything is touched.
    fn capabilities(&mut self) -> Capabilities;

    /// The managed processes as they are now.
    fn processes(&self) -> Vec<ProcessInfo>;

    /// Lets the machine run until `until_ns` on the engine's clock and reports what was seen
    /// since the previous call. A simulated machine may stop early when every program is done.
    /// Observations are numbered from 0, one more each call (`Observation::epoch`; the engine
    /// sets the number it counts).
    fn observe(&mut self, until_ns: u64) -> Result<Observation, Self::Error>;

    /// Appends to `out` the samples taken since the last drain or observation, for the policy
    /// to count during the epoch (the engine asks each time its clock wakes while waiting an
    /// epoch out: every 25 ms on a wall clock, never on a virtual one). Every sample drained
    /// during an epoch is also in that epoch's observation, first and in the order drained,
    /// so that observations stay whole (for recording, and for policies that count at the
    /// epoch's end). By default nothing is drained: the observation brings every sample.
    fn drain_samples(&mut self, out: &mut Vec<Sample>) {
        let _ = out;
    }

    /// Carries out actions, in order, and reports one outcome per action.
    fn apply(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, Self::Error>;

    /// Carries out the policy's start decisions and starts the managed programs if the machine
    /// launches them (a live machine starts its program here, with the allocation policy asked
    /// for). By default, the same as [`Machine::apply`].
    fn start(&mut self, actions: &[Action]) -> Result<Vec<Outcome>, Self::Error> {
        self.apply(actions)
    }

    /// One of the policy's start decisions as the machine can carry it out now, or `None`
    /// while it must wait for the managed programs to run. A live machine that launches its
    /// program sets the program's allocation policy before exec ([`Machine::start`]), but can
    /// pin or move the program only once it runs, with threads, under the pid it was given
    /// (the policy named it by a placeholder). The engine holds back the decisions that must
    /// wait, asks again after each observation, and carries out those ready before that
    /// epoch's decision, through the rate limits (they are the start's: the epoch's report
    /// does not list them); those still held when the run ends are reported skipped
    /// ([`Accounting::deferred`] says which, and when or why). By default every decision is
    /// ready as it is.
    fn start_ready(&self, action: &Action) -> Option<Action> {
        Some(action.clone())
    }

    /// Whether every managed program has finished.
    fn finished(&self) -> bool;

    /// Checks, between epochs, whether every managed program has finished (a live machine reaps
    /// its child here), so that a run does not wait out the rest of an epoch.
    fn poll_finished(&mut self) -> bool {
        self.finished()
    }

    /// Tells the backend which samples the policy wants from now on.
    fn set_sampling(&mut self, request: &SamplingRequest) {
        let _ = request;
    }

    /// The user asked the run to stop with `signal` (SIGINT, SIGTERM, SIGHUP, SIGQUIT; 0 when
    /// unknown) and the run goes on until the managed programs end ([`OnStop::Interrupt`]): a
    /// machine that launched a program passes the signal on to it. By default nothing is done.
    fn interrupt(&mut self, signal: i32) {
        let _ = signal;
    }
}

/// What can stop a run.
#[derive(Debug, Error)]
pub enum EngineError {
    #[error("the machine failed: {0}")]
    Machine(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("epoch length must be positive")]
    ZeroEpoch,
    #[error(transparent)]
    Unsupported(#[from] Unmet),
    #[error("{policy} cannot run here: {why}")]
    Refused { policy: String, why: String },
}

/// Engine settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Epoch length (ns). Carrefour uses 1 s ([Dashti13 §4]).
    pub epoch_ns: u64,
    /// Stop after this much time on the clock even if programs still run (ns).
    pub time_limit_ns: Option<u64>,
    pub limits: RateLimits,
    /// Observe and decide, but carry nothing out: every action (the start decisions
    /// included) is reported skipped, "dry run".
    pub dry_run: bool,
    /// Set from outside (a signal handler) to stop the run.
    pub stop: Option<StopSignal>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            epoch_ns: 1_000_000_000,
            time_limit_ns: None,
            limits: RateLimits::default(),
            dry_run: false,
            stop: None,
        }
    }
}

/// A flag that stops a run when set, the signal that set it (0 when none is known), and what
/// stopping means.
#[derive(Clone, Debug)]
pub struct StopSignal {
    pub flag: Arc<AtomicBool>,
    pub signal: Arc<AtomicUsize>,
    pub on_stop: OnStop,
}

/// What the engine does once a [`StopSignal`] is set (it looks between epochs and each time
/// a wall clock wakes within one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnStop {
    /// End the run at once, without another decision (a daemon leaving its processes be).
    End,
    /// Tell the machine once ([`Machine::interrupt`]) and go on managing until its programs
    /// end, so that the report is complete (a launched program asked to terminate).
    Interrupt,
}

/// Where a run is with its stop signal.
#[derive(Debug, Default)]
struct Stopping {
    seen: bool,
}

impl Stopping {
    /// Whether the run must end now; tells the machine once if it is to be interrupted.
    fn poll<M: Machine + ?Sized>(&mut self, signal: Option<&StopSignal>, machine: &mut M) -> bool {
        let Some(signal) = signal else {
            return false;
        };
        if !signal.flag.load(Ordering::Relaxed) {
            return false;
        }
        if !self.seen {
            self.seen = true;
            if signal.on_stop == OnStop::Interrupt {
                let signal = signal.signal.load(Ordering::Relaxed);
                machine.interrupt(i32::try_from(signal).unwrap_or(0));
            }
        }
        signal.on_stop == OnStop::End
    }
}

/// One epoch as the engine saw it, for progress output and action logs.
#[derive(Debug)]
pub struct EpochReport<'a> {
    pub epoch: u64,
    pub now_ns: u64,
    pub observation: &'a Observation,
    pub actions: &'a [Action],
    pub outcomes: &'a [Outcome],
    /// Why each action was taken ([`Policy::reasons`]).
    pub explained: &'a Explained,
    /// With the first epoch only: the policy's start decisions, their outcomes and reasons.
    pub start: Option<(&'a [Action], &'a [Outcome], &'a Explained)>,
    /// Every sample of the epoch, counted: those drained while it ran (handed to the policy
    /// and gone from the observation) and the observation's own.
    pub sampled: &'a SampleTally,
}

/// Samples of one epoch, counted per process and per source (what a live view shows; the
/// samples themselves go to the policy).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleTally {
    pub total: u64,
    pub by_pid: BTreeMap<Pid, u64>,
    /// In the order the sources were first seen.
    pub by_source: Vec<(SampleSource, u64)>,
}

impl SampleTally {
    /// Counts `samples` in.
    pub fn add(&mut self, samples: &[Sample]) {
        for s in samples {
            self.total += 1;
            *self.by_pid.entry(s.pid).or_default() += 1;
            match self.by_source.iter_mut().find(|(src, _)| *src == s.source) {
                Some((_, n)) => *n += 1,
                None => self.by_source.push((s.source, 1)),
            }
        }
    }
}

/// Runs `policy` on `machine` until every program finishes, the time limit passes or a stop
/// signal ends it. The policy's needs are checked against the machine's capabilities first,
/// and the processes against what the policy can manage ([`Policy::accepts`]): either refusal
/// is an error before anything is touched. `on_epoch` is called after each
/// epoch (progress, logs, recording).
pub fn run<M: Machine + ?Sized, C: Clock>(
    machine: &mut M,
    policy: &mut dyn Policy,
    clock: &mut C,
    config: &EngineConfig,
    mut on_epoch: impl FnMut(&EpochReport<'_>),
) -> Result<Accounting, EngineError> {
    if config.epoch_ns == 0 {
        return Err(EngineError::ZeroEpoch);
    }
    let mut acct = admit(machine, policy)?;
    let boxed = |e: M::Error| EngineError::Machine(Box::new(e));
    machine.set_sampling(&policy.sampling());

    let Started {
        mut held,
        done: start,
        outcomes: start_outcomes,
        explained: start_explained,
    } = start(machine, policy, config, &mut acct)?;

    let mut epoch = 0u64;
    let mut stopping = Stopping::default();
    let mut drained: Vec<Sample> = Vec::new();
    while !machine.finished() {
        let mut sampled = SampleTally::default();
        let target = clock.now_ns().saturating_add(config.epoch_ns);
        let mut end = false;
        clock.wait_until_or(target, &mut || {
            end = stopping.poll(config.stop.as_ref(), machine);
            if end || machine.poll_finished() {
                return Poll::Done;
            }
            drained.clear();
            machine.drain_samples(&mut drained);
            if drained.is_empty() {
                return Poll::Quiet;
            }
            sampled.add(&drained);
            policy.ingest(machine.topology(), epoch, &drained);
            Poll::Active
        });
        if end || stopping.poll(config.stop.as_ref(), machine) {
            acct.stopped = true;
            break;
        }
        let until = clock.now_ns();
        let mut observation = machine.observe(until).map_err(boxed)?;
        // The engine numbers the epochs (the policy was given this number with the samples
        // drained during the epoch); a machine's own count, from 0, agrees.
        observation.epoch = epoch;
        acct.samples_seen += observation.samples.len() as u64;
        sampled.add(&observation.samples);
        release_held(machine, policy, config, &mut acct, &mut held, epoch)?;
        let wanted = policy.decide(machine.topology(), &observation);
        let explained = Explained::new(policy.reasons(), wanted.len(), policy.name());
        machine.set_sampling(&policy.sampling());
        let (actions, outcomes, explained) =
            carry_out(machine, policy, config, &mut acct, wanted, explained)?;
        acct.epochs += 1;
        on_epoch(&EpochReport {
            epoch,
            now_ns: until,
            observation: &observation,
            actions: &actions,
            outcomes: &outcomes,
            explained: &explained,
            start: (epoch == 0).then_some((
                start.as_slice(),
                start_outcomes.as_slice(),
                &start_explained,
            )),
            sampled: &sampled,
        });
        epoch += 1;
        if config.time_limit_ns.is_some_and(|l| until >= l) {
            break;
        }
    }
    never_released(policy, &mut acct, &held);
    acct.notes = policy.notes();
    Ok(acct)
}

/// The start decisions: those carried out at the start with their outcomes, and those held
/// until the programs run.
struct Started {
    /// Held until the programs run, each with its reason.
    held: Vec<(Action, Reason)>,
    done: Vec<Action>,
    outcomes: Vec<Outcome>,
    /// Why those carried out were taken.
    explained: Explained,
}

/// Carries out the policy's start decisions (all reported skipped in a dry run), but for those
/// the machine can carry out only once its programs run ([`Machine::start_ready`]), which it
/// returns, held.
fn start<M: Machine + ?Sized>(
    machine: &mut M,
    policy: &mut dyn Policy,
    config: &EngineConfig,
    acct: &mut Accounting,
) -> Result<Started, EngineError> {
    let boxed = |e: M::Error| EngineError::Machine(Box::new(e));
    let decided = policy.start(machine.topology(), &machine.processes());
    let why = Explained::new(policy.reasons(), decided.len(), policy.name());
    let mut held = Vec::new();
    let (now, outcomes, explained) = if config.dry_run {
        machine.start(&[]).map_err(boxed)?;
        let outcomes = dry_run_outcomes(&decided, "dry run");
        (decided, outcomes, why)
    } else {
        let mut now = Vec::with_capacity(decided.len());
        let mut order = Vec::with_capacity(decided.len());
        for (i, a) in decided.into_iter().enumerate() {
            match machine.start_ready(&a) {
                Some(ready) => {
                    now.push(ready);
                    order.push(i);
                }
                None => {
                    let why = why.of(i).cloned();
                    held.push((a, why.unwrap_or_else(|| Reason::new(1, policy.name(), ""))));
                }
            }
        }
        let outcomes = machine.start(&now).map_err(boxed)?;
        (now, outcomes, why.pick(&order))
    };
    for (i, (a, o)) in now.iter().zip(&outcomes).enumerate() {
        acct.record(a, o);
        acct.explain(a, explained.of(i));
    }
    policy.outcomes(&now, &outcomes);
    Ok(Started {
        held,
        done: now,
        outcomes,
        explained,
    })
}

/// Admits `wanted` through the rate limits, has the machine carry out what was admitted (or
/// reports it skipped in a dry run), accounts for every outcome and tells the policy; the
/// actions in the order reported, with their outcomes.
fn carry_out<M: Machine + ?Sized>(
    machine: &mut M,
    policy: &mut dyn Policy,
    config: &EngineConfig,
    acct: &mut Accounting,
    wanted: Vec<Action>,
    explained: Explained,
) -> Result<(Vec<Action>, Vec<Outcome>, Explained), EngineError> {
    let (admitted, refused) = config.limits.admit(&wanted);
    let explained = explained.pick(&[admitted.as_slice(), refused.as_slice()].concat());
    let mut slots: Vec<Option<Action>> = wanted.into_iter().map(Some).collect();
    let mut take = |i: &usize| slots.get_mut(*i).and_then(Option::take);
    let mut actions: Vec<Action> = admitted.iter().filter_map(&mut take).collect();
    let refused: Vec<Action> = refused.iter().filter_map(&mut take).collect();
    let mut outcomes = if config.dry_run {
        dry_run_outcomes(&actions, "dry run")
    } else {
        machine
            .apply(&actions)
            .map_err(|e| EngineError::Machine(Box::new(e)))?
    };
    for a in refused {
        let o = Outcome::skipped(actions.len(), a.pages(), "rate limit");
        actions.push(a);
        outcomes.push(o);
    }
    for (i, (a, o)) in actions.iter().zip(&outcomes).enumerate() {
        acct.record(a, o);
        acct.explain(a, explained.of(i));
    }
    policy.outcomes(&actions, &outcomes);
    Ok((actions, outcomes, explained))
}

/// Carries out the held start decisions the machine can carry out now, after the observation
/// of `epoch`; the others stay held.
fn release_held<M: Machine + ?Sized>(
    machine: &mut M,
    policy: &mut dyn Policy,
    config: &EngineConfig,
    acct: &mut Accounting,
    held: &mut Vec<(Action, Reason)>,
    epoch: u64,
) -> Result<(), EngineError> {
    let mut ready = Vec::new();
    let mut why = Explained::default();
    held.retain(|(a, reason)| match machine.start_ready(a) {
        Some(r) => {
            ready.push(r);
            why.push(reason.clone(), 1);
            false
        }
        None => true,
    });
    if ready.is_empty() {
        return Ok(());
    }
    let what = start_decisions(&ready);
    carry_out(machine, policy, config, acct, ready, why)?;
    acct.deferred.push(format!(
        "{what} carried out at epoch {epoch}, the first that saw the program running (not \
         possible before it started)"
    ));
    Ok(())
}

/// Reports the start decisions still held when the run ends as skipped.
fn never_released(policy: &mut dyn Policy, acct: &mut Accounting, held: &[(Action, Reason)]) {
    if held.is_empty() {
        return;
    }
    let why = "the program was not seen running before the run ended";
    let held: Vec<Action> = held.iter().map(|(a, _)| a.clone()).collect();
    let outcomes: Vec<Outcome> = held
        .iter()
        .enumerate()
        .map(|(i, a)| Outcome::skipped(i, a.pages(), why))
        .collect();
    for (a, o) in held.iter().zip(&outcomes) {
        acct.record(a, o);
    }
    policy.outcomes(&held, &outcomes);
    acct.deferred.push(format!(
        "{} not carried out: {why} (start decisions that pin or move it wait for its \
         threads)",
        start_decisions(&held)
    ));
}

/// "2 start decisions (move-application, pin-thread)".
fn start_decisions(actions: &[Action]) -> String {
    let mut techniques: Vec<&str> = actions.iter().map(Action::technique).collect();
    techniques.sort_unstable();
    techniques.dedup();
    format!(
        "{} start decision{} ({})",
        actions.len(),
        if actions.len() == 1 { "" } else { "s" },
        techniques.join(", ")
    )
}

/// Checks that the machine meets the policy's needs and that the policy can manage the
/// machine's processes, then tells the policy what the machine offers; the accounting starts
/// with what the policy runs without exactly.
fn admit<M: Machine + ?Sized>(
    machine: &mut M,
    policy: &mut dyn Policy,
) -> Result<Accounting, EngineError> {
    let capabilities = machine.capabilities();
    let processes = machine.processes();
    let reduced = check_policy(&capabilities, machine.topology(), &processes, policy)?;
    Ok(Accounting {
        reduced,
        ..Accounting::default()
    })
}

/// Whether `policy` can run with these capabilities, on this topology, for these processes:
/// its needs met (the list of those met only by estimates or substitutes), then configured
/// and asked whether it accepts them. The one check before a run, live, simulated or replayed.
pub fn check_policy(
    capabilities: &Capabilities,
    topology: &Topology,
    processes: &[ProcessInfo],
    policy: &mut dyn Policy,
) -> Result<Vec<String>, EngineError> {
    let reduced = capabilities.check(policy.name(), &policy.needs())?;
    policy.configure(capabilities);
    policy
        .accepts(topology, processes)
        .map_err(|why| EngineError::Refused {
            policy: policy.name().to_string(),
            why: why.to_string(),
        })?;
    Ok(reduced)
}

/// The outcomes of actions not carried out, for `why` ("dry run", "replay").
fn dry_run_outcomes(actions: &[Action], why: &str) -> Vec<Outcome> {
    actions
        .iter()
        .enumerate()
        .map(|(i, a)| Outcome::skipped(i, a.pages(), why))
        .collect()
}

#[cfg(test)]
mod tests;
