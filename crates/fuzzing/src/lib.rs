//! Every kind of input rondpoint reads, as a function of raw bytes that must never panic,
//! hang or allocate without bound, whatever the bytes: the fuzz targets in `fuzz/` call these
//! (`scripts/fuzz`), and this crate's tests run them over the seed corpora in `fuzz/corpus`
//! and over random mutations of the seeds, on stable Rust, in every test run.
//!
//! An input that parses is then used as rondpoint would use it: a scenario or machine is built
//! and simulated for a few epochs, a policy configuration builds every policy, a recording is
//! replayed through a policy.

#![forbid(unsafe_code)]

use rondpoint_engine::{EngineConfig, VirtualClock, record};
use rondpoint_policy_api::PolicyConfig;
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, SimMachine, presets};

/// Simulated time a parsed scenario or machine runs for (three 1-s epochs).
const SIM_NS: u64 = 3_000_000_000;

/// Largest footprint simulated here (MiB): a bigger scenario is valid input but only checked,
/// as simulating it would take the fuzzer's memory and time (the simulator keeps a few bytes
/// per 4-KiB page; the limit on what rondpoint accepts is [`rondpoint_sim::bounds`]').
const SIM_MAX_MIB: f64 = 1024.0;

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Runs `policy` on `scenario` on `machine` for [`SIM_NS`] of simulated time (the engine
/// directly: `experiment::run` would go on until the programs end, up to an hour of simulated
/// time for a slow scenario); errors are fine, panics are not. Whether it ran.
fn simulate(
    machine: &MachineSpec,
    scenario: &rondpoint_sim::scenario::Scenario,
    policy: &str,
) -> bool {
    let Ok(mut policy) = rondpoint_policy::build(policy, &PolicyConfig::default()) else {
        return false;
    };
    let Ok(mut m) = SimMachine::new(machine.clone(), scenario, SimConfig::default()) else {
        return false;
    };
    let engine = EngineConfig {
        time_limit_ns: Some(SIM_NS),
        ..EngineConfig::default()
    };
    rondpoint_engine::run(
        &mut m,
        policy.as_mut(),
        &mut VirtualClock::default(),
        &engine,
        |_| {},
    )
    .is_ok()
}

fn footprint_mib(scenario: &rondpoint_sim::scenario::Scenario) -> f64 {
    scenario
        .apps
        .iter()
        .flat_map(|a| &a.regions)
        .map(|r| r.size_mib.get())
        .sum()
}

/// Machines a scenario is tried on, in order, until one can hold it (a scenario names nodes
/// and counts cores, so not every scenario fits every machine).
const SCENARIO_MACHINES: &[&str] = &["opteron-8385", "r905-asymmetric", "xeon-6242-4s"];

/// A scenario file, simulated under Carrefour on the first built-in machine that holds it.
pub fn scenario(data: &[u8]) -> bool {
    let Some(text) = text(data) else { return false };
    let Ok(scenario) = presets::workload_from_text("fuzz", text) else {
        return false;
    };
    let mib = footprint_mib(&scenario);
    if !mib.is_finite() || mib > SIM_MAX_MIB {
        return true;
    }
    SCENARIO_MACHINES.iter().any(|name| {
        presets::machine(name)
            .ok()
            .and_then(|p| MachineSpec::from_preset(&p).ok())
            .is_some_and(|m| simulate(&m, &scenario, "carrefour"))
    })
}

/// A machine preset file, simulated with a small built-in workload under first touch.
pub fn machine(data: &[u8]) -> bool {
    let Some(text) = text(data) else { return false };
    let Ok(preset) = presets::machine_from_text("fuzz", text) else {
        return false;
    };
    let Ok(machine) = MachineSpec::from_preset(&preset) else {
        return false;
    };
    let Ok(scenario) = presets::workload("streamcluster") else {
        return false;
    };
    simulate(&machine, &scenario, "first-touch")
}

/// A policy configuration file: checked, then every policy built from it.
pub fn policy_config(data: &[u8]) -> bool {
    let Some(text) = text(data) else { return false };
    let Ok(config) = PolicyConfig::from_toml(text) else {
        return false;
    };
    let registry = rondpoint_policy::registry();
    if registry.check(&config).is_err() {
        return false;
    }
    let names: Vec<&str> = registry.names().collect();
    names
        .iter()
        .filter(|name| registry.build(name, &config).is_ok())
        .count()
        == names.len()
}

/// A recording (JSON lines), replayed through Carrefour and the remote-placement policy.
pub fn recording(data: &[u8]) -> bool {
    let Ok(rec) = record::read(data) else {
        return false;
    };
    for name in ["carrefour", "hybrid"] {
        if let Ok(mut policy) = rondpoint_policy::build(name, &PolicyConfig::default()) {
            let _ = record::replay(policy.as_mut(), &rec);
        }
    }
    true
}

/// A CPU list as sysfs writes it (`0-3,8,10-11`).
pub fn cpulist(data: &[u8]) -> bool {
    text(data).is_some_and(|t| rondpoint_model::cpulist::parse(t).is_ok())
}

/// An interconnect file (`rondpoint topo --interconnect`), applied to a 4-node machine.
pub fn interconnect(data: &[u8]) -> bool {
    use rondpoint_model::synthetic::{TopologyBuilder, r905_distances};
    use rondpoint_model::topology::{InterconnectOrigin, InterconnectSpec};
    let Some(text) = text(data) else { return false };
    let Ok(spec) = InterconnectSpec::from_toml(text) else {
        return false;
    };
    let Ok(t) = TopologyBuilder::new(4).distances(r905_distances()).build() else {
        return false;
    };
    t.with_interconnect(&spec, InterconnectOrigin::File("fuzz".into()))
        .is_ok()
}

/// A MAPI-to-gap curve file (`rondpoint calibrate --output`, the oaas `curve` parameter).
pub fn gap_curve(data: &[u8]) -> bool {
    text(data).is_some_and(|t| rondpoint_model::gap_curve::GapCurve::from_toml(t).is_ok())
}

/// A perf ring's bytes as the kernel writes them, with the sample format rondpoint asks for.
pub fn perf_ring(data: &[u8]) -> bool {
    use rondpoint_linux::perf::ring::{self, SampleFormat};
    let format = SampleFormat {
        sample_type: SampleFormat::IP
            | SampleFormat::TID
            | SampleFormat::TIME
            | SampleFormat::ADDR
            | SampleFormat::CPU,
    };
    ring::parse(data, &format).is_ok()
}

/// Files of a tree from one input: sections `== RELATIVE/PATH` followed by the file's text.
/// Paths are relative, without `..`, at most 8 deep; at most 256 files. Written under `root`.
fn write_tree(root: &std::path::Path, text: &str) -> bool {
    let mut files = 0;
    for section in text.split("== ").skip(1) {
        let (name, body) = section.split_once('\n').unwrap_or((section, ""));
        let name = name.trim();
        let parts: Vec<&str> = name.split('/').collect();
        let safe = |p: &&str| {
            !p.is_empty()
                && *p != "."
                && *p != ".."
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        };
        if parts.len() > 8 || !parts.iter().all(safe) {
            return false;
        }
        files += 1;
        if files > 256 {
            return false;
        }
        let path = root.join(name);
        if let Some(dir) = path.parent() {
            if std::fs::create_dir_all(dir).is_err() {
                return false;
            }
        }
        if std::fs::write(&path, body).is_err() {
            return false;
        }
    }
    files > 0
}

/// A process's procfs files (`== 42/numa_maps`, `== 42/stat`, `== 42/task/42/status`,
/// `== vmstat`, ...), read as the live backend reads process 42.
pub fn procfs(data: &[u8]) -> bool {
    use rondpoint_linux::procfs::ProcRoot;
    use rondpoint_model::{Pid, Tid};
    let Some(text) = text(data) else { return false };
    let Ok(dir) = tempfile::tempdir() else {
        return false;
    };
    if !write_tree(dir.path(), text) {
        return false;
    }
    let proc = ProcRoot::new(dir.path());
    let pid = Pid(42);
    let results = [
        proc.comm(pid).is_ok(),
        proc.stat(pid).is_ok(),
        proc.threads(pid).is_ok(),
        proc.allowed_cpus(pid, Tid(42)).is_ok(),
        proc.numa_maps(pid).is_ok(),
        proc.thp_bytes(pid).is_ok(),
        proc.maps(pid).is_ok(),
        proc.vmstat_numa().is_ok(),
    ];
    results.iter().all(|&ok| ok)
}

/// A sysfs tree (`== devices/system/node/node0/distance`, ...), read as `rondpoint topo
/// --sysfs-root` reads it.
pub fn sysfs(data: &[u8]) -> bool {
    let Some(text) = text(data) else { return false };
    let Ok(dir) = tempfile::tempdir() else {
        return false;
    };
    write_tree(dir.path(), text) && rondpoint_linux::discover(dir.path()).is_ok()
}

/// A daemon's selection: a `--comm` pattern on the first line, then a tree of processes
/// (`== 42/stat`, ...) and a cgroup (`== cg/cgroup.procs`), matched as `rondpoint daemon
/// --comm PATTERN --cgroup DIR` matches them.
pub fn selection(data: &[u8]) -> bool {
    use rondpoint_linux::procfs::{ProcRoot, glob_match};
    let Some(text) = text(data) else { return false };
    let (pattern, tree) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(dir) = tempfile::tempdir() else {
        return false;
    };
    if pattern.is_empty() || !write_tree(dir.path(), tree) {
        return false;
    }
    let proc = ProcRoot::new(dir.path());
    let Ok(found) = proc.find_by_comm(pattern) else {
        return false;
    };
    // Every process found is one whose name the pattern matches.
    let consistent = found.iter().all(|&p| {
        proc.comm(p)
            .ok()
            .flatten()
            .is_some_and(|c| glob_match(pattern, &c))
    });
    let sysfs = rondpoint_linux::sysfs::SysfsRoot::new(dir.path());
    let cgroup = sysfs.cgroup_procs(std::path::Path::new("cg")).is_ok();
    assert!(
        consistent,
        "find_by_comm returned a process its pattern does not match"
    );
    cgroup
}

/// A fuzz target: takes any bytes, says whether they were a valid input.
pub type Target = fn(&[u8]) -> bool;

/// Every target by name, as `fuzz/` and the tests know them. Each says whether it took the
/// input as valid (the seeds must be, but those named `bad-*`).
pub const TARGETS: &[(&str, Target)] = &[
    ("scenario", scenario),
    ("machine", machine),
    ("policy_config", policy_config),
    ("recording", recording),
    ("cpulist", cpulist),
    ("interconnect", interconnect),
    ("gap_curve", gap_curve),
    ("perf_ring", perf_ring),
    ("procfs", procfs),
    ("sysfs", sysfs),
    ("selection", selection),
];
