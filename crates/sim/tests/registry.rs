//! Adding a policy takes one row: a toy policy registered beside rondpoint's own, configured
//! with `--set` syntax, refused where its needs are unmet, and run end to end in the simulator.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_engine::{EngineConfig, Machine, VirtualClock};
use rondpoint_model::limits::Bounds;
use rondpoint_model::{
    Action, Capability, MemPolicy, Need, NodeId, Observation, ProcessInfo, Topology,
};
use rondpoint_policy::{Family, Policy, PolicyConfig, PolicyInfo, Registry, registry};
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, SimMachine, presets};
use serde::{Deserialize, Serialize};

/// `[toy-bind]` parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ToyConfig {
    /// The node every process's memory is bound to.
    node: u16,
}

/// Binds every process's memory to one node before it starts (numactl --membind).
struct ToyBind(ToyConfig);

impl Policy for ToyBind {
    fn name(&self) -> &str {
        "toy-bind"
    }
    fn needs(&self) -> Vec<Need> {
        vec![Need::one(
            Capability::MemPolicies,
            "to bind memory at launch",
        )]
    }
    fn start(&mut self, _: &Topology, procs: &[ProcessInfo]) -> Vec<Action> {
        procs
            .iter()
            .map(|p| Action::SetMemPolicy {
                pid: p.pid,
                policy: MemPolicy::Bind {
                    nodes: vec![NodeId(self.0.node)],
                },
            })
            .collect()
    }
    fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
        Vec::new()
    }
}

static TOY: PolicyInfo = PolicyInfo {
    name: "toy-bind",
    family: Family::Reference,
    summary: "every process's memory bound to one node",
    source: "test",
    in_all: false,
    build: |p| Ok(Box::new(ToyBind(p.parse()?))),
    defaults: registry::defaults_of::<ToyConfig>,
    bounds: &[("node", Bounds::new(0.0, 63.0, ""))],
};

#[test]
fn a_toy_policy_registered_by_one_row_runs_in_the_simulator() {
    let registry = Registry::builtin().with(&TOY).unwrap();
    let mut config = PolicyConfig::default();
    registry.set_arg(&mut config, "toy-bind.node=2").unwrap();
    registry.check(&config).unwrap();
    let mut policy = registry.build("toy-bind", &config).unwrap();

    let spec = MachineSpec::from_preset(&presets::machine("opteron-8385").unwrap()).unwrap();
    let scenario = presets::workload("mg").unwrap();
    let mut machine = SimMachine::new(spec, &scenario, SimConfig::default()).unwrap();
    let engine = EngineConfig {
        time_limit_ns: Some(2_000_000_000),
        ..EngineConfig::default()
    };
    let acct = rondpoint_engine::run(
        &mut machine,
        policy.as_mut(),
        &mut VirtualClock::default(),
        &engine,
        |_| {},
    )
    .unwrap();
    assert_eq!(acct.by_technique["set-mempolicy"].applied, 1);
    let pages = machine.pages_per_node();
    assert!(pages[2] > 0, "{pages:?}");
    assert_eq!(
        pages.iter().sum::<u64>(),
        pages[2],
        "all on node 2: {pages:?}"
    );

    // A bad value is refused when the configuration is checked, naming the key.
    let mut bad = PolicyConfig::default();
    registry.set_arg(&mut bad, "toy-bind.nodes=2").unwrap();
    let err = registry.check(&bad).unwrap_err().to_string();
    assert!(err.contains("[toy-bind]") && err.contains("nodes"), "{err}");
    // rondpoint's own registry does not know it.
    assert!(rondpoint_policy::by_name("toy-bind").is_err());
    assert!(
        machine
            .capabilities()
            .check("toy-bind", &policy.needs())
            .is_ok()
    );
}

#[test]
fn a_toy_policy_s_bounds_refuse_a_value_out_of_range() {
    let registry = Registry::builtin().with(&TOY).unwrap();
    let mut config = PolicyConfig::default();
    registry.set_arg(&mut config, "toy-bind.node=64").unwrap();
    let err = registry
        .build("toy-bind", &config)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("node = 64: must be from 0 to 63"), "{err}");
}
