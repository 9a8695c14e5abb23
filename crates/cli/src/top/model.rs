//! What `rondpoint top` shows, as plain data: one [`ViewModel`] per epoch, filled by a
//! [`Tracker`] from the engine's epoch reports. The daemon writes it into its state file
//! (`top` field, docs/json/daemon.md); `sim --top` sends it to the screen through a channel.

use rondpoint_engine::{EpochReport, SampleTally};
use rondpoint_model::{CounterGroup, Observation, OutcomeStatus, Topology, metrics};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most processes the view keeps (by resident memory), as the metrics endpoint does: a state
/// file rewritten every epoch must not grow with a cgroup of thousands of processes.
pub const MAX_PROCESSES: usize = crate::live::metrics::MAX_PROCESSES;

/// Bytes of a page as the table counts them.
const PAGE_BYTES: u64 = 4096;

/// Everything one screen of `top` shows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ViewModel {
    /// What is being watched: "daemon" or "sim MACHINE / WORKLOAD".
    pub source: String,
    pub policy: String,
    /// The process that writes the view (the daemon's pid), to tell a stopped daemon from a
    /// quiet one.
    #[serde(default)]
    pub writer_pid: Option<u32>,
    /// Epochs completed.
    pub epoch: u64,
    /// Seconds since the start (simulated seconds in the simulator).
    pub time_s: f64,
    /// Length of the last epoch (seconds).
    pub epoch_s: f64,
    pub nodes: Vec<NodeView>,
    /// Empty when the machine counts no link traffic.
    pub links: Vec<LinkView>,
    /// Machine-wide figures; `None` when the counters they come from are missing.
    pub lar: Option<f64>,
    pub mc_imbalance_pct: Option<f64>,
    pub ic_imbalance_pct: Option<f64>,
    /// Node DRAM traffic (controller load, local access ratio, imbalance) was estimated.
    pub dram_estimated: bool,
    /// Link traffic was estimated.
    pub links_estimated: bool,
    /// Each estimated counter group and how it was estimated, for the legend.
    pub estimates: Vec<String>,
    pub sampling: SamplingView,
    /// The processes, at most [`MAX_PROCESSES`] (the largest by resident memory).
    pub processes: Vec<ProcessView>,
    /// Managed processes in all (more than `processes` holds when some were left out).
    pub processes_total: usize,
    /// Actions per technique: this epoch, and since the start.
    pub actions_epoch: BTreeMap<String, u64>,
    pub actions_total: BTreeMap<String, u64>,
    /// Pages placed and actions that failed since the start.
    pub pages_total: u64,
    pub failed_total: u64,
    /// Whether the run is over (a simulation that finished).
    #[serde(default)]
    pub finished: bool,
    /// Per `daemon --cgroup`: its processes, pages, samples and actions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<CgroupView>,
}

/// One `daemon --cgroup`'s row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupView {
    /// The directory as given.
    pub cgroup: String,
    /// Managed processes in it (or below it), last epoch.
    pub processes: usize,
    /// Their resident pages (4 KiB) on each node.
    pub pages_by_node: Vec<u64>,
    /// Their samples, last epoch.
    pub samples: u64,
    /// Actions on them since the start, by technique, and the pages placed.
    pub actions_total: BTreeMap<String, u64>,
    pub pages_placed: u64,
}

/// One node's row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    pub node: u16,
    /// DRAM accesses per microsecond its memory controller served.
    pub mc_per_us: f64,
    /// Its share of the machine's DRAM accesses (0 to 1).
    pub mc_share: f64,
    /// Of the accesses its controller served, the share made by its own CPUs (`None` when it
    /// served none).
    pub local_share: Option<f64>,
    pub mem_total_bytes: u64,
    pub mem_free_bytes: u64,
}

/// One link's row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkView {
    pub a: u16,
    pub b: u16,
    /// Bytes per second, both directions together.
    pub bytes_per_s: f64,
    /// The busier direction's share of its capacity, when the capacity is known.
    pub utilisation: Option<f64>,
}

/// Where samples came from in the last epoch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingView {
    pub samples: u64,
    /// Samples per second of the epoch.
    pub per_s: f64,
    /// Samples per source (`ibs`, `page-fault`, `hinting-fault`, `simulated`, ...).
    pub by_source: BTreeMap<String, u64>,
}

/// One process's row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessView {
    pub pid: i32,
    pub comm: String,
    /// Resident 4 KiB pages per node, in node order.
    pub pages_by_node: Vec<u64>,
    /// Samples of its accesses in the last epoch.
    pub samples: u64,
    /// Actions on it per technique: this epoch, and since the start.
    pub actions_epoch: BTreeMap<String, u64>,
    pub actions_total: BTreeMap<String, u64>,
}

impl ProcessView {
    /// All its resident pages.
    pub fn pages(&self) -> u64 {
        self.pages_by_node.iter().sum()
    }
}

/// Builds a [`ViewModel`] from each epoch, keeping the totals since the start.
#[derive(Debug, Default)]
pub struct Tracker {
    view: ViewModel,
    /// Actions per process and technique since the start.
    by_pid: BTreeMap<i32, BTreeMap<String, u64>>,
}

impl Tracker {
    /// A tracker of `source` run by `policy`.
    pub fn new(source: &str, policy: &str) -> Self {
        Self {
            view: ViewModel {
                source: source.to_string(),
                policy: policy.to_string(),
                writer_pid: Some(std::process::id()),
                ..ViewModel::default()
            },
            by_pid: BTreeMap::new(),
        }
    }

    /// The view after the last epoch.
    pub fn view(&self) -> &ViewModel {
        &self.view
    }

    /// Marks the run over.
    pub fn finish(&mut self) {
        self.view.finished = true;
    }

    /// Takes in one epoch; `time_s` is the time since the start.
    pub fn epoch(&mut self, topology: &Topology, r: &EpochReport<'_>, time_s: f64) {
        let obs = r.observation;
        let v = &mut self.view;
        v.epoch = r.epoch;
        v.time_s = time_s;
        v.epoch_s = obs.counters.duration_ns as f64 / 1e9;
        v.nodes = nodes(obs);
        v.links = links(obs);
        traffic(v, topology, obs);
        v.sampling = sampling(obs, r.sampled);
        let mut epoch_by_pid: BTreeMap<i32, BTreeMap<String, u64>> = BTreeMap::new();
        v.actions_epoch.clear();
        for (i, a) in r.actions.iter().enumerate() {
            let t = a.technique().to_string();
            *v.actions_epoch.entry(t.clone()).or_default() += 1;
            *v.actions_total.entry(t.clone()).or_default() += 1;
            let pid = a.pid().0;
            *epoch_by_pid
                .entry(pid)
                .or_default()
                .entry(t.clone())
                .or_default() += 1;
            *self.by_pid.entry(pid).or_default().entry(t).or_default() += 1;
            if let Some(o) = r.outcomes.iter().find(|o| o.action == i) {
                v.pages_total += o.pages_done;
                v.failed_total += u64::from(o.status == OutcomeStatus::Failed);
            }
        }
        v.processes_total = obs.processes.len();
        v.processes = processes(obs, r.sampled, &mut epoch_by_pid, &self.by_pid);
    }
}

/// The node rows.
fn nodes(obs: &Observation) -> Vec<NodeView> {
    let g = metrics::global(obs);
    let total: f64 = g.maptu_by_node.iter().sum();
    obs.counters
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let served = n.dram_accesses();
            let local = n.dram_accesses_by_source.get(i).copied().unwrap_or(0);
            let mem = obs.memory.iter().find(|m| m.node == n.node);
            let per_us = g.maptu_by_node.get(i).copied().unwrap_or(0.0);
            NodeView {
                node: n.node.0,
                mc_per_us: per_us,
                mc_share: if total > 0.0 { per_us / total } else { 0.0 },
                local_share: (served > 0).then(|| local as f64 / served as f64),
                mem_total_bytes: mem.map_or(0, |m| m.total_bytes),
                mem_free_bytes: mem.map_or(0, |m| m.free_bytes),
            }
        })
        .collect()
}

/// The link rows.
fn links(obs: &Observation) -> Vec<LinkView> {
    let s = (obs.counters.duration_ns as f64 / 1e9).max(1e-9);
    obs.counters
        .links
        .iter()
        .map(|l| LinkView {
            a: l.a.0,
            b: l.b.0,
            bytes_per_s: (l.bytes_a_to_b + l.bytes_b_to_a) as f64 / s,
            utilisation: l
                .capacity_bytes_per_s
                .filter(|&c| c > 0.0)
                .map(|c| l.bytes_a_to_b.max(l.bytes_b_to_a) as f64 / s / c),
        })
        .collect()
}

/// The machine-wide figures and what of them was estimated.
fn traffic(v: &mut ViewModel, topology: &Topology, obs: &Observation) {
    let c = &obs.counters;
    let dram = !c.is_missing(CounterGroup::NodeDram) && !c.nodes.is_empty();
    let g = metrics::global(obs);
    v.lar = dram.then_some(g.lar);
    v.mc_imbalance_pct = dram.then_some(g.mc_imbalance_pct);
    v.ic_imbalance_pct = (!c.is_missing(CounterGroup::Links) && !c.links.is_empty())
        .then(|| ic_imbalance(topology, obs));
    v.dram_estimated = c.is_estimated(CounterGroup::NodeDram);
    v.links_estimated = c.is_estimated(CounterGroup::Links);
    v.estimates = c
        .estimated
        .iter()
        .map(|e| format!("{}: {}", group_name(e.group), e.how))
        .collect();
}

/// Interconnect imbalance over the link directions on routes in use, as the simulator's
/// reports measure it ([`metrics::links_in_use`]).
fn ic_imbalance(topology: &Topology, obs: &Observation) -> f64 {
    let links = &topology.interconnect().links;
    let mut bytes = vec![0.0; 2 * links.len()];
    for l in &obs.counters.links {
        let canonical = rondpoint_model::Link::new(l.a, l.b);
        let Ok(i) = links.binary_search(&canonical) else {
            continue;
        };
        let (ab, ba) = if canonical.a == l.a {
            (l.bytes_a_to_b, l.bytes_b_to_a)
        } else {
            (l.bytes_b_to_a, l.bytes_a_to_b)
        };
        bytes[2 * i] += ab as f64;
        bytes[2 * i + 1] += ba as f64;
    }
    let holding = metrics::carrying_nodes(obs);
    let mut running = vec![false; topology.nodes().len()];
    for t in obs.processes.iter().flat_map(|p| &p.threads) {
        if let Some(r) = topology.index_of(t.node).and_then(|i| running.get_mut(i)) {
            *r = true;
        }
    }
    metrics::imbalance_over(&bytes, &metrics::links_in_use(topology, &running, &holding))
}

/// A counter group's name as the JSON spells it.
fn group_name(g: CounterGroup) -> String {
    serde_json::to_value(g)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{g:?}"))
}

/// Samples of the epoch by source.
fn sampling(obs: &Observation, tally: &SampleTally) -> SamplingView {
    let by_source = tally
        .by_source
        .iter()
        .map(|&(source, n)| {
            let name = serde_json::to_value(source)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| format!("{source:?}"));
            (name, n)
        })
        .collect();
    let s = obs.counters.duration_ns as f64 / 1e9;
    SamplingView {
        samples: tally.total,
        per_s: if s > 0.0 { tally.total as f64 / s } else { 0.0 },
        by_source,
    }
}

/// The process rows, the largest [`MAX_PROCESSES`] by resident memory, in pid order.
fn processes(
    obs: &Observation,
    sampled: &SampleTally,
    epoch_by_pid: &mut BTreeMap<i32, BTreeMap<String, u64>>,
    total_by_pid: &BTreeMap<i32, BTreeMap<String, u64>>,
) -> Vec<ProcessView> {
    let mut rows: Vec<ProcessView> = obs
        .processes
        .iter()
        .map(|p| ProcessView {
            pid: p.pid.0,
            comm: p.comm.clone(),
            pages_by_node: p
                .resident_bytes_by_node
                .iter()
                .map(|b| b.div_ceil(PAGE_BYTES))
                .collect(),
            samples: sampled.by_pid.get(&p.pid).copied().unwrap_or(0),
            actions_epoch: epoch_by_pid.remove(&p.pid.0).unwrap_or_default(),
            actions_total: total_by_pid.get(&p.pid.0).cloned().unwrap_or_default(),
        })
        .collect();
    if rows.len() > MAX_PROCESSES {
        rows.sort_by_key(|p| std::cmp::Reverse(p.pages()));
        rows.truncate(MAX_PROCESSES);
        rows.sort_by_key(|p| p.pid);
    }
    rows
}
