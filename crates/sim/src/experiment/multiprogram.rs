//! Multiprogrammed workloads measured as [Majo11 §4.1] measures them: each program's slowdown
//! relative to its solo run (alone on the machine, on its home node; on a machine with slow
//! nodes, on a fast node as [Gaud10 Figure 5] measures it), the workload's slowdown
//! as the average of its programs', and a policy that stands for several placements (the
//! `default` baseline of §4.3) run once per placement and averaged, with the spread. The solo
//! runs also profile each program the paper's way (§3.2): alone, once local and once remote,
//! for the policies that take per-program profiles (N-MASS's `inputs.profile`).

use super::result::{
    AppSlowdown, ExperimentError, Multiprogram, RunResult, SoloNode, TIME_LIMIT_S,
};
use crate::machine::{SimConfig, SimMachine, thread_count};
use crate::scenario::{AppSpec, Scenario, ThreadPlacement};
use crate::spec::MachineSpec;
use rondpoint_engine::{EngineConfig, VirtualClock};
use rondpoint_model::NodeClass;
use rondpoint_model::bounds::Invalid;
use rondpoint_policy_api::{FirstTouch, PolicyConfig, PolicyError, PolicyInfo};

/// One program alone on the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct SoloApp {
    pub name: String,
    /// Its home node (see `home_of`).
    pub home: u16,
    /// Completion alone on its home node (simulated seconds).
    pub local_s: f64,
    /// Completion alone where slowdowns are measured from (simulated seconds): on the first
    /// fast node with its memory there when the solo runs are on a fast node
    /// ([`Solo::reference`]), else `local_s`.
    pub reference_s: f64,
    /// LLC misses per thousand instructions alone on its home node.
    pub mpki: f64,
    /// Completion alone on the nearest other node with CPUs, its memory at home (simulated
    /// seconds), when measured.
    pub remote_s: Option<f64>,
}

impl SoloApp {
    /// Its NUMA penalty, CPI remote / CPI local [Majo11 Eq. 1]: the same instructions, so the
    /// ratio of the two times.
    pub fn numa_penalty(&self) -> Option<f64> {
        self.remote_s.map(|r| r / self.local_s)
    }
}

/// The solo runs of every program of a scenario, in its order.
#[derive(Clone, Debug, PartialEq)]
pub struct Solo {
    /// Where the reference runs are.
    pub reference: SoloNode,
    pub apps: Vec<SoloApp>,
}

/// The machine's first fast CPU node, when it has slow ones ([Gaud10]'s asymmetric machines).
fn fast_reference(machine: &MachineSpec) -> Option<u16> {
    let t = &machine.topology;
    let has = |class| {
        t.nodes()
            .iter()
            .zip(t.classes())
            .find(|(n, c)| **c == class && n.has_cpu())
            .map(|(n, _)| n.id.0)
    };
    has(NodeClass::Slow).and(has(NodeClass::Fast))
}

/// Whether an application has one home node: all but one placed over several nodes by its
/// scenario, by its threads (spread or filled over the CPU nodes, or dealt over a list of them:
/// [Dashti13 §4.3] runs each program on two nodes) or its memory, which runs alone as it is
/// placed.
fn has_home(machine: &MachineSpec, app: &AppSpec) -> bool {
    let several = |v: &[u16]| v.len() > 1;
    let threads = thread_count(machine, app);
    let cpu_nodes = machine.cpu_nodes();
    let placed_over_nodes = match &app.placement {
        ThreadPlacement::Spread => threads > 1 && cpu_nodes.len() > 1,
        ThreadPlacement::Fill => cpu_nodes
            .first()
            .is_some_and(|&n| threads > machine.cores_on(n)),
        ThreadPlacement::Nodes(v) => threads > 1 && several(v),
        ThreadPlacement::Node(_) => false,
    };
    !(placed_over_nodes || app.membind.as_deref().is_some_and(several))
}

/// An application's home: the one node its memory is bound to, else the node its placement
/// names, else node 0.
pub(crate) fn home_of(app: &AppSpec) -> u16 {
    match (&app.membind, &app.placement) {
        (Some(nodes), _) if nodes.len() == 1 => nodes[0],
        (_, ThreadPlacement::Node(n)) => *n,
        _ => 0,
    }
}

/// Runs each program of `scenario` alone: local (its threads and memory on its home node) and,
/// with `remote`, remote (its threads on the nearest other node with CPUs, its memory at home).
/// A program without a home node runs alone as placed, and has no remote run.
pub fn solo_runs(
    machine: &MachineSpec,
    scenario: &Scenario,
    sim: &SimConfig,
    engine: &EngineConfig,
    remote: bool,
) -> Result<Solo, ExperimentError> {
    let mut apps = Vec::with_capacity(scenario.apps.len());
    let fast = fast_reference(machine);
    for app in &scenario.apps {
        let home = home_of(app);
        let (local_s, mpki) = alone(machine, scenario, app, home, home, sim, engine)?;
        let reference_s = match fast.filter(|_| has_home(machine, app)) {
            Some(f) if f != home => alone(machine, scenario, app, f, f, sim, engine)?.0,
            _ => local_s,
        };
        let remote = remote && has_home(machine, app);
        let remote_s = match remote.then(|| nearest_other(machine, home)).flatten() {
            Some(r) => Some(alone(machine, scenario, app, r, home, sim, engine)?.0),
            None => None,
        };
        apps.push(SoloApp {
            name: app.name.clone(),
            home,
            local_s,
            reference_s,
            mpki,
            remote_s,
        });
    }
    let reference = if fast.is_some() {
        SoloNode::Fast
    } else {
        SoloNode::Home
    };
    Ok(Solo { reference, apps })
}

/// The nearest node with CPUs other than `home` (by distance, then number).
fn nearest_other(machine: &MachineSpec, home: u16) -> Option<u16> {
    let h = usize::from(home);
    let d = machine.topology.distances();
    (0..machine.nodes())
        .filter(|&n| n != h && machine.cores_on(n) > 0)
        .min_by_key(|&n| (d.get(h).and_then(|r| r.get(n)).copied(), n))
        .and_then(|n| u16::try_from(n).ok())
}

/// `app` alone with its threads on node `on` and its memory bound to `home` (as placed, when it
/// has no home node), from time 0: its completion (s) and MPKI.
fn alone(
    machine: &MachineSpec,
    scenario: &Scenario,
    app: &AppSpec,
    on: u16,
    home: u16,
    sim: &SimConfig,
    engine: &EngineConfig,
) -> Result<(f64, f64), ExperimentError> {
    let mut a = app.clone();
    if has_home(machine, app) {
        a.placement = ThreadPlacement::Node(on);
        a.membind = Some(vec![home]);
    }
    a.start_s = 0.0;
    let solo = Scenario {
        name: format!("{} alone ({})", app.name, scenario.name),
        description: String::new(),
        sources: Vec::new(),
        restart: false,
        apps: vec![a],
    };
    let mut m = SimMachine::new(machine.clone(), &solo, sim.clone())?;
    let cfg = EngineConfig {
        time_limit_ns: Some((TIME_LIMIT_S * 1e9) as u64),
        ..engine.clone()
    };
    let (mut misses, mut instructions) = (0.0, 0.0);
    rondpoint_engine::run(
        &mut m,
        &mut FirstTouch,
        &mut VirtualClock::default(),
        &cfg,
        |r| {
            for t in &r.observation.counters.threads {
                misses += t.llc_misses as f64;
                instructions += t.instructions as f64;
            }
        },
    )?;
    let done = m.app_completion_ns().first().and_then(|a| a.1);
    let Some(done) = done.filter(|_| rondpoint_engine::Machine::finished(&m)) else {
        return Err(ExperimentError::TimeLimit {
            workload: solo.name,
            policy: "first-touch".into(),
            limit_s: TIME_LIMIT_S,
        });
    };
    let mpki = if instructions > 0.0 {
        1000.0 * misses / instructions
    } else {
        0.0
    };
    Ok((done / 1e9, mpki))
}

/// Fills, in `config`, the per-program profile of the policy of row `info` (N-MASS's
/// `inputs.profile`, for a policy whose parameters have it) with what the solo runs measured,
/// for each program whose value the configuration does not give already.
pub fn fill_profiles(
    config: &mut PolicyConfig,
    info: &PolicyInfo,
    solo: &Solo,
) -> Result<(), PolicyError> {
    let Some(prefix) = profile_path(info) else {
        return Ok(());
    };
    for app in &solo.apps {
        let mut fill = |key: &str, value: Option<f64>| {
            let mut keys: Vec<&str> = prefix.iter().map(String::as_str).collect();
            keys.extend([app.name.as_str(), key]);
            match value {
                Some(v) if config.get_keys(info.name, &keys).is_none() => {
                    config.set_keys(info.name, &keys, toml::Value::Float(v))
                }
                _ => Ok(()),
            }
        };
        fill("numa_penalty", app.numa_penalty())?;
        fill("mpki", Some(app.mpki))?;
    }
    Ok(())
}

/// Whether a policy's parameters have a per-program profile for the solo runs to fill.
pub fn takes_profiles(info: &PolicyInfo) -> bool {
    profile_path(info).is_some()
}

/// The keys of a policy's per-program profile table (`inputs.profile`), in its own parameters
/// or in a lane's sub-table (`auto`'s `n-mass.inputs.profile`), from its defaults.
fn profile_path(info: &PolicyInfo) -> Option<Vec<String>> {
    let defaults = (info.defaults)();
    let has = |t: &toml::Table| {
        t.get("inputs")
            .and_then(toml::Value::as_table)
            .is_some_and(|t| t.get("profile").is_some_and(toml::Value::is_table))
    };
    let path = |lead: Option<&String>| {
        let mut p: Vec<String> = lead.into_iter().cloned().collect();
        p.extend(["inputs".to_string(), "profile".to_string()]);
        p
    };
    if has(&defaults) {
        return Some(path(None));
    }
    defaults
        .iter()
        .find(|(_, v)| v.as_table().is_some_and(has))
        .map(|(k, _)| path(Some(k)))
}

/// Each application's home, set from an allocation map [Majo11 §4.3]: one digit per
/// application, in order, the node its memory is bound to ("0001": the first three on node 0,
/// the fourth on node 1).
pub fn with_homes(
    machine: &MachineSpec,
    scenario: &Scenario,
    map: &str,
) -> Result<Scenario, Invalid> {
    let digits: Vec<char> = map.chars().collect();
    if digits.len() != scenario.apps.len() {
        return Err(Invalid(format!(
            "allocation map '{map}' has {} digits for the {} applications of '{}'",
            digits.len(),
            scenario.apps.len(),
            scenario.name
        )));
    }
    let mut s = scenario.clone();
    for (app, c) in s.apps.iter_mut().zip(digits) {
        let node = c
            .to_digit(10)
            .and_then(|d| u16::try_from(d).ok())
            .filter(|&d| usize::from(d) < machine.nodes() && machine.mem_bytes[usize::from(d)] > 0)
            .ok_or_else(|| {
                format!(
                    "allocation map '{map}': '{c}' is not a node of {} with memory (0 to {})",
                    machine.name,
                    machine.nodes().saturating_sub(1)
                )
            })?;
        app.membind = Some(vec![node]);
    }
    s.name = format!("{} [{map}]", scenario.name);
    Ok(s)
}

/// The slowdowns of one run against the solo runs.
pub fn slowdowns(run: &RunResult, scenario: &Scenario, solo: &Solo) -> Multiprogram {
    let apps: Vec<AppSlowdown> = run
        .apps
        .iter()
        .zip(&scenario.apps)
        .zip(&solo.apps)
        .map(|((r, spec), s)| AppSlowdown {
            name: r.name.clone(),
            solo_s: s.reference_s,
            slowdown_pct: 100.0 * ((r.completion_s - spec.start_s.max(0.0)) / s.reference_s - 1.0),
            range_pct: None,
        })
        .collect();
    let average_pct = mean(apps.iter().map(|a| a.slowdown_pct));
    Multiprogram {
        placements: 1,
        solo: solo.reference,
        apps,
        average_pct,
        average_range_pct: None,
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

fn range(xs: impl Iterator<Item = f64> + Clone) -> [f64; 2] {
    [
        xs.clone().fold(f64::INFINITY, f64::min),
        xs.fold(f64::NEG_INFINITY, f64::max),
    ]
}

/// The slowdowns of runs of several placements, averaged, with their range.
pub fn average(parts: &[Multiprogram]) -> Option<Multiprogram> {
    let first = parts.first()?;
    if parts.len() == 1 {
        return Some(first.clone());
    }
    let apps = (0..first.apps.len())
        .map(|i| {
            let each = parts
                .iter()
                .filter_map(move |p| p.apps.get(i))
                .map(|a| a.slowdown_pct);
            AppSlowdown {
                name: first.apps[i].name.clone(),
                solo_s: first.apps[i].solo_s,
                slowdown_pct: mean(each.clone()),
                range_pct: Some(range(each)),
            }
        })
        .collect();
    let averages = parts.iter().map(|p| p.average_pct);
    Some(Multiprogram {
        placements: parts.len(),
        solo: first.solo,
        apps,
        average_pct: mean(averages.clone()),
        average_range_pct: Some(range(averages)),
    })
}
