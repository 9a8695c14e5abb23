//! `rondpoint sim ... --top`: one simulated run drawn live, epoch by epoch, at a pace a person
//! can read; the last epoch stays on the screen until the user quits.

use super::model::Tracker;
use super::screen::{self, Screen};
use super::view::Feed;
use crate::commands::sim::plan::{Plan, Progress};
use anyhow::Result;
use rondpoint_engine::{EngineConfig, Machine, OnStop, StopSignal, VirtualClock};
use rondpoint_sim::scenario::Scenario;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Runs `scenario` under `policy` from `plan` in the live view, showing each simulated epoch
/// for `pace` of wall time (longer while paused).
pub fn run(plan: &Plan, scenario: &Scenario, policy: &str, pace: Duration) -> Result<ExitCode> {
    screen::require_terminal("rondpoint sim --json, or sim without --top")?;
    let Viewed {
        mut machine,
        mut built,
        engine,
        topology,
        mut tracker,
    } = viewed(plan, scenario, policy)?;
    let stop = Arc::new(AtomicBool::new(false));
    let engine = EngineConfig {
        stop: Some(StopSignal {
            flag: Arc::clone(&stop),
            signal: Arc::new(AtomicUsize::new(0)),
            on_stop: OnStop::End,
        }),
        ..engine
    };
    let mut screen = Screen::open()?;
    let mut failure: Option<anyhow::Error> = None;
    let ran = rondpoint_engine::run(
        &mut machine,
        built.as_mut(),
        &mut VirtualClock::default(),
        &engine,
        |r| {
            tracker.epoch(&topology, r, r.now_ns as f64 / 1e9);
            screen.show(tracker.view().clone());
            screen.set_feed(Feed::Live);
            if let Err(e) = linger(&mut screen, pace) {
                failure.get_or_insert(e);
            }
            if failure.is_some() || screen.quit() {
                stop.store(true, Ordering::Relaxed);
            }
        },
    );
    let result = match (failure, ran) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => {
            screen.set_feed(Feed::Gone(format!("the simulation failed: {e}")));
            hold(&mut screen).and(Err(e.into()))
        }
        (None, Ok(_)) => {
            tracker.finish();
            screen.show(tracker.view().clone());
            screen.set_feed(Feed::Finished);
            hold(&mut screen)
        }
    };
    screen.close(result)?;
    noteln!(
        "rondpoint: {} epochs of {} under {policy} ({:.1} simulated s)",
        tracker.view().epoch + 1,
        scenario.name,
        machine.now_ns() / 1e9
    );
    Ok(ExitCode::SUCCESS)
}

/// Keeps an epoch on the screen for `pace`, and for as long as the view is paused.
fn linger(screen: &mut Screen, pace: Duration) -> Result<()> {
    screen.wait(Instant::now() + pace)?;
    while screen.paused() && !screen.quit() {
        screen.wait(Instant::now() + Duration::from_millis(200))?;
    }
    Ok(())
}

/// Keeps the last screen until the user quits.
fn hold(screen: &mut Screen) -> Result<()> {
    while !screen.quit() {
        screen.wait(Instant::now() + Duration::from_secs(1))?;
    }
    Ok(())
}

/// Runs `scenario` under `policy` from `plan` to the end without a screen, and writes the last
/// epoch's screen into `output`.
pub fn snapshot(
    plan: &Plan,
    scenario: &Scenario,
    policy: &str,
    output: crate::plot::Output,
) -> Result<ExitCode> {
    let Viewed {
        mut machine,
        mut built,
        engine,
        topology,
        mut tracker,
    } = viewed(plan, scenario, policy)?;
    rondpoint_engine::run(
        &mut machine,
        built.as_mut(),
        &mut VirtualClock::default(),
        &engine,
        |r| tracker.epoch(&topology, r, r.now_ns as f64 / 1e9),
    )?;
    tracker.finish();
    output.write(&super::snapshot::Snapshot::new(
        tracker.view(),
        &Feed::Finished,
    )?)?;
    Ok(ExitCode::SUCCESS)
}

/// One run of `plan` made ready to be viewed: its machine, policy and engine settings, and a
/// tracker filling the view.
struct Viewed {
    machine: rondpoint_sim::SimMachine,
    built: Box<dyn rondpoint_policy_api::Policy>,
    engine: EngineConfig,
    topology: rondpoint_model::Topology,
    tracker: Tracker,
}

fn viewed(plan: &Plan, scenario: &Scenario, policy: &str) -> Result<Viewed> {
    let quiet = Progress {
        on: false,
        live: false,
        started: Arc::default(),
        total: 1,
    };
    let (machine, built, engine) = plan.one_run(scenario, policy, &quiet)?;
    let topology = machine.topology().clone();
    let source = format!("sim {} / {}", plan.spec.name, scenario.name);
    Ok(Viewed {
        machine,
        built,
        engine,
        topology,
        tracker: Tracker::new(&source, policy),
    })
}
