//! What `rondpoint sim` and `rondpoint matrix` run on one machine: the workloads and policies,
//! checked, and how one cell (a workload under a policy, with one seed) runs, with its progress
//! line.

use crate::budget::{Estimate, Watch};
use crate::options::MAX_RUNS;
use crate::status::Input;
use anyhow::{Context, Result};
use rondpoint_engine::{EngineConfig, EngineError};
use rondpoint_policy_api::Policy;
use rondpoint_policy_api::PolicyConfig;
use rondpoint_sim::experiment::multiprogram::{self, Solo};
use rondpoint_sim::experiment::{self, ExperimentError, RunResult};
use rondpoint_sim::scenario::Scenario;
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, SimMachine, bound, presets};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The settings of a plan, as the command line gave them.
pub struct Settings<'a> {
    /// Machine preset name or file.
    pub machine: &'a str,
    /// Workload preset names or scenario files.
    pub workloads: &'a [String],
    /// Policy names, or "all".
    pub policies: &'a [String],
    pub seeds: Vec<u64>,
    pub options: RunOptions<'a>,
}

/// The options of a command that shaped its runs, besides machine, workload, policy and seed
/// (the `options` of `sim --json` and `matrix --json`).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RunOptions<'a> {
    pub epoch_ms: u64,
    pub max_pages_per_epoch: Option<u64>,
    /// MiB.
    pub max_mb_per_epoch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation_map: Option<&'a str>,
    pub exchange_pins: bool,
    /// Policy parameters given with --config and --set, one table per policy (the rest are
    /// the defaults `rondpoint list policies --params` prints).
    #[serde(rename = "parameters", serialize_with = "tables")]
    pub config: &'a PolicyConfig,
}

fn tables<S: serde::Serializer>(config: &&PolicyConfig, s: S) -> Result<S::Ok, S::Error> {
    config.tables().serialize(s)
}

/// Progress lines on stderr, numbered over every run of the command.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Whether to print a line per run.
    pub on: bool,
    /// Whether to rewrite the current line as simulated time passes (a terminal, one run at
    /// a time).
    pub live: bool,
    /// Runs started so far, over every plan of the command.
    pub started: Arc<AtomicUsize>,
    /// Runs in the command.
    pub total: usize,
}

/// What to run: the machine, the workloads and policies, and the settings, checked.
pub struct Plan {
    pub spec: MachineSpec,
    config: PolicyConfig,
    pub policies: Vec<String>,
    pub scenarios: Vec<Scenario>,
    sim: SimConfig,
    /// The runs' seeds (`--seed`, or `--seeds N` of them from it).
    seeds: Vec<u64>,
    engine: EngineConfig,
    /// The wall clock against `--budget`, shared by every plan of the command.
    watch: Arc<Watch>,
}

impl Plan {
    /// Checks `s`: the machine, every workload and every policy must exist and build.
    pub fn new(s: &Settings, watch: Arc<Watch>) -> Result<Self> {
        let preset = presets::machine(s.machine)?;
        let spec = MachineSpec::from_preset(&preset)?;
        let mut policies: Vec<String> = Vec::new();
        for p in s.policies {
            if p == "all" {
                policies.extend(crate::policies::registry().all().map(str::to_string));
            } else if p == bound::NAME {
                policies.push(p.clone());
            } else {
                crate::policies::build(p, s.options.config)?;
                policies.push(p.clone());
            }
        }
        let mut seen = std::collections::HashSet::new();
        policies.retain(|p| seen.insert(p.clone()));
        let mut scenarios = s
            .workloads
            .iter()
            .map(|w| presets::workload(w).map_err(anyhow::Error::from))
            .collect::<Result<Vec<_>>>()?;
        if let Some(map) = s.options.allocation_map {
            for sc in &mut scenarios {
                *sc = multiprogram::with_homes(&spec, sc, map)
                    .map_err(anyhow::Error::msg)
                    .input()?;
            }
        }
        let sim = SimConfig {
            seed: s.seeds.first().copied().unwrap_or(1),
            exchange_pins: s.options.exchange_pins,
            ..SimConfig::default()
        };
        let engine = EngineConfig {
            epoch_ns: s.options.epoch_ms.saturating_mul(1_000_000),
            limits: crate::options::rate_limits(
                s.options.max_pages_per_epoch,
                s.options.max_mb_per_epoch,
            ),
            stop: Some(watch.stop_signal()),
            ..EngineConfig::default()
        };
        // A curve measured at start (OAAS's) is the machine's: measured once for every run.
        let mut config = s.options.config.clone();
        let registry = crate::policies::registry();
        for p in policies.iter().filter(|p| *p != bound::NAME) {
            rondpoint_sim::calibrate::fill_curve(&mut config, registry.info(p)?, &spec)
                .with_context(|| format!("measuring {}'s MAPI-to-gap curve", spec.name))?;
        }
        let plan = Self {
            spec,
            config,
            policies,
            scenarios,
            sim,
            seeds: s.seeds.clone(),
            engine,
            watch,
        };
        let runs = plan.runs();
        if runs > MAX_RUNS as usize {
            bad_input!(
                "{runs} runs ({} seeds x {} policies x {} workloads): one command runs at most \
                 {MAX_RUNS}; split it",
                plan.seeds.len(),
                plan.policies.len(),
                plan.scenarios.len()
            );
        }
        Ok(plan)
    }

    /// The seed of the plan's first runs (`--seed`).
    pub fn seed(&self) -> u64 {
        self.sim.seed
    }

    /// Runs in the plan: seeds x policies x workloads (solo runs not counted).
    pub fn runs(&self) -> usize {
        [self.seeds.len(), self.policies.len(), self.scenarios.len()]
            .iter()
            .fold(1usize, |n, &k| n.saturating_mul(k))
    }

    /// Whether any policy takes per-program profiles (N-MASS's), which solo runs fill in.
    fn profiled(&self) -> bool {
        let registry = crate::policies::registry();
        self.policies
            .iter()
            .any(|p| registry.info(p).is_ok_and(multiprogram::takes_profiles))
    }

    /// Adds the plan's runs to `estimate`, from each workload's pace on its first steps (a
    /// workload the simulator cannot build is left for its run to report).
    pub fn estimate(&self, estimate: &mut Estimate) {
        let profiled = self.profiled();
        for s in &self.scenarios {
            let Ok(pace) = experiment::pace(&self.spec, s, &self.sim) else {
                continue;
            };
            let solo = if s.apps.len() > 1 || profiled {
                s.apps.len()
            } else {
                0
            };
            let runs = self.policies.len() * self.seeds.len() + solo;
            estimate.add(&self.spec.name, &s.name, pace, runs);
        }
    }

    /// Runs every policy on `scenario`, appending to `results`.
    pub fn run_scenario(
        &self,
        scenario: &Scenario,
        progress: &Progress,
        results: &mut Vec<RunResult>,
    ) -> Result<()> {
        let solo = self.solo(scenario, progress)?;
        for p in &self.policies {
            for &seed in &self.seeds {
                results.push(self.run_cell(scenario, p, seed, solo.as_ref(), progress)?);
            }
        }
        Ok(())
    }

    /// The runs of each program of `scenario` alone, when needed: for a workload of several
    /// programs (for slowdowns), or when a policy takes per-program profiles (N-MASS's), which
    /// the solo runs fill in.
    pub fn solo(&self, scenario: &Scenario, progress: &Progress) -> Result<Option<Solo>> {
        let profiled = self.profiled();
        if scenario.apps.len() <= 1 && !profiled {
            return Ok(None);
        }
        if progress.on {
            noteln!("{} / {}: each program alone", self.spec.name, scenario.name);
        }
        let solo = multiprogram::solo_runs(&self.spec, scenario, &self.sim, &self.engine, profiled)
            .map_err(|e| self.watch.spent().unwrap_or_else(|| e.into()))
            .with_context(|| format!("running the programs of {} alone", scenario.name))?;
        Ok(Some(solo))
    }

    /// What one run of `scenario` under `policy` (with the plan's first seed) needs when the
    /// caller drives the engine itself, epoch by epoch (`sim --top`): the machine, the policy
    /// (its first placement, for a policy that tries several) and the engine's configuration.
    pub fn one_run(
        &self,
        scenario: &Scenario,
        policy: &str,
        progress: &Progress,
    ) -> Result<(SimMachine, Box<dyn Policy>, EngineConfig)> {
        if policy == bound::NAME {
            bad_input!(
                "the placement bound is a search over placements, not one run to watch; \
                 give a policy"
            );
        }
        let solo = if self.profiled() {
            self.solo(scenario, progress)?
        } else {
            None
        };
        let config = cell_config(
            &self.spec,
            &self.config,
            policy,
            self.sim.seed,
            solo.as_ref(),
        )?;
        let built = crate::policies::build(policy, &config)?;
        let machine = SimMachine::new(self.spec.clone(), scenario, self.sim.clone())
            .with_context(|| format!("building {} for {}", self.spec.name, scenario.name))?;
        let engine = EngineConfig {
            time_limit_ns: Some((experiment::TIME_LIMIT_S * 1e9) as u64),
            ..self.engine.clone()
        };
        Ok((machine, built, engine))
    }

    /// `scenario` under `policy` with `seed`, with a progress line.
    pub fn run_cell(
        &self,
        scenario: &Scenario,
        policy: &str,
        seed: u64,
        solo: Option<&Solo>,
        progress: &Progress,
    ) -> Result<RunResult> {
        let config = if policy == bound::NAME {
            self.config.clone()
        } else {
            cell_config(&self.spec, &self.config, policy, seed, solo)?
        };
        let sim = SimConfig {
            seed,
            ..self.sim.clone()
        };
        let of_seed = if self.seeds.len() > 1 {
            format!(" / seed {seed}")
        } else {
            String::new()
        };
        let k = progress.started.fetch_add(1, Ordering::Relaxed) + 1;
        let label = format!(
            "[{k}/{}] {} / {} / {policy}{of_seed}",
            progress.total, self.spec.name, scenario.name
        );
        let slowdowns = solo.filter(|_| scenario.apps.len() > 1);
        let build = || crate::policies::build(policy, &config);
        let started = Instant::now();
        let live = progress.on && progress.live;
        let tick = |k: usize, n: usize, t: f64| {
            self.watch.tick();
            if live {
                let of = if n > 1 {
                    format!(" (placement {}/{n})", k + 1)
                } else {
                    String::new()
                };
                note!("\r{label}{of}: {t:.0} simulated s");
            }
        };
        let r = if policy == bound::NAME {
            bound::run(
                &self.spec,
                scenario,
                &sim,
                &self.engine,
                bound::SearchConfig::default(),
                |t| tick(0, 1, t),
            )
            .map(|mut r| {
                r.multiprogram = slowdowns.map(|s| multiprogram::slowdowns(&r, scenario, s));
                r
            })
        } else {
            experiment::run_policy(
                &self.spec,
                scenario,
                &build,
                &sim,
                &self.engine,
                slowdowns,
                tick,
            )
        }
        .map_err(|e| self.watch.spent().unwrap_or_else(|| e.into()))
        .with_context(|| format!("running {} under {policy}", scenario.name))?;
        if progress.on {
            noteln!(
                "{}{label}: {:.2} simulated s in {:.2} s of wall time",
                if live { "\r" } else { "" },
                r.completion_s,
                started.elapsed().as_secs_f64()
            );
        }
        Ok(r)
    }
}

/// Why a run could not be made, when the policy refused the machine or the workload (as
/// opposed to a failure): its message.
pub fn refusal(e: &anyhow::Error) -> Option<String> {
    e.chain()
        .find_map(|c| match c.downcast_ref::<ExperimentError>() {
            Some(ExperimentError::Engine(why @ EngineError::Refused { .. })) => {
                Some(why.to_string())
            }
            _ => None,
        })
}

/// The parameters `policy` runs with in one cell on `spec`: `config`, the per-program profiles
/// `solo` measured (for a policy that takes them, where `config` does not give them), the
/// machine's MAPI-to-gap curve measured at start (for a policy that takes one, where `config`
/// names none) and the cell's seed (unless `config` gives one). `sim` and `record` both run a
/// policy with these.
pub fn cell_config(
    spec: &MachineSpec,
    config: &PolicyConfig,
    policy: &str,
    seed: u64,
    solo: Option<&Solo>,
) -> Result<PolicyConfig> {
    let registry = crate::policies::registry();
    let info = registry.info(policy)?;
    let mut config = config.clone();
    if let Some(solo) = solo {
        multiprogram::fill_profiles(&mut config, info, solo)?;
    }
    rondpoint_sim::calibrate::fill_curve(&mut config, info, spec)
        .with_context(|| format!("measuring {}'s MAPI-to-gap curve", spec.name))?;
    Ok(registry.seeded(&config, policy, seed)?)
}
