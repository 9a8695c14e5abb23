//! Carrefour's decisions on hand-built observations, with the exact actions expected: the
//! fixtures here, the tests by subject beside them.

use super::*;
use proptest::prelude::*;
use rondpoint_model::synthetic::TopologyBuilder;
use rondpoint_model::{
    AccessKind, Collapse, Counters, CpuId, NodeCounters, NodeId, NodeMemory, PageRange,
    ProcessInfo, Sample, SampleSource, ThreadCounters, ThreadInfo, Tid,
};
use rondpoint_model::{PageSize, Pid};

mod global;
mod local;
mod statistics;

const PID: Pid = Pid(100);
const PAGE: u64 = 0x7f00_0000_0000;

fn topo() -> Topology {
    TopologyBuilder::new(4).cores_per_llc(2).build().unwrap()
}

/// An epoch of 1 ms. `served[d]` DRAM accesses served by node d, of which `local[d]` came from
/// node d itself; the application made `app_accesses` accesses, `app_writes` of them writes.
struct Epoch {
    served: [u64; 4],
    local: [u64; 4],
    app_accesses: u64,
    app_writes: u64,
    free_fraction: f64,
    samples: Vec<Sample>,
    collapses: Vec<Collapse>,
}

impl Default for Epoch {
    fn default() -> Self {
        // Busy (400 accesses/µs), imbalanced (everything on node 0), LAR 25%, read-only.
        Self {
            served: [400_000, 0, 0, 0],
            local: [100_000, 0, 0, 0],
            app_accesses: 400_000,
            app_writes: 0,
            free_fraction: 0.9,
            samples: Vec::new(),
            collapses: Vec::new(),
        }
    }
}

fn sample(page: u64, node: u16, home: u16, write: bool) -> Sample {
    Sample {
        pid: PID,
        tid: Tid(101),
        cpu: CpuId(u32::from(node) * 2),
        node: NodeId(node),
        addr: page + 64,
        page_size: PageSize::Base4K,
        kind: if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        },
        source: SampleSource::Ibs,
        latency_cycles: None,
        dram: Some(true),
        home_node: Some(NodeId(home)),
    }
}

/// A hinting-fault sample on page `p` from `node`, the page being on `home`.
fn hinting_fault(p: u64, node: u16, home: u16) -> Sample {
    Sample {
        source: SampleSource::HintingFault,
        ..sample(page(p), node, home, false)
    }
}

fn observe(e: Epoch) -> Observation {
    let nodes = (0..4)
        .map(|d| {
            let mut by_source = vec![0; 4];
            by_source[d] = e.local[d];
            // The rest of node d's traffic comes from the next node (any remote node will do).
            by_source[(d + 1) % 4] = e.served[d] - e.local[d];
            NodeCounters {
                node: NodeId(d as u16),
                dram_accesses_by_source: by_source,
                dram_writes: 0,
                ..NodeCounters::default()
            }
        })
        .collect();
    let total = 1u64 << 30;
    Observation {
        counters: Counters {
            duration_ns: 1_000_000,
            nodes,
            threads: vec![ThreadCounters {
                pid: PID,
                tid: Tid(101),
                node: NodeId(0),
                instructions: 1_000_000,
                cycles: 2_000_000,
                llc_misses: e.app_accesses,
                dram_accesses: e.app_accesses,
                dram_writes: e.app_writes,
            }],
            ..Counters::default()
        },
        samples: e.samples,
        memory: (0..4)
            .map(|d| NodeMemory {
                node: NodeId(d),
                total_bytes: total,
                free_bytes: (total as f64 * e.free_fraction) as u64,
            })
            .collect(),
        processes: vec![ProcessInfo {
            pid: PID,
            comm: "app".into(),
            threads: (0..4)
                .map(|d| ThreadInfo {
                    tid: Tid(101 + d),
                    cpu: CpuId(d as u32 * 2),
                    node: NodeId(d as u16),
                    allowed_cpus: vec![],
                })
                .collect(),
            resident_bytes_by_node: vec![],
            mapping_policies: Vec::new(),
        }],
        collapses: e.collapses,
        ..Observation::default()
    }
}

/// The paper's Carrefour: the defaults without the payoff guard (tested on its own in
/// `guard.rs`, and with Carrefour in `global.rs`), so that each test sees the mechanism it
/// checks in every epoch.
fn paper() -> CarrefourConfig {
    CarrefourConfig {
        guard: crate::guard::GuardConfig {
            enabled: false,
            ..Default::default()
        },
        ..CarrefourConfig::default()
    }
}

fn carrefour() -> Carrefour {
    Carrefour::new(paper()).unwrap()
}

fn page(i: u64) -> u64 {
    PAGE + i * 4096
}

fn range(i: u64, count: u64) -> PageRange {
    PageRange::new(PID, page(i), count, PageSize::Base4K).unwrap()
}

/// Two read samples from nodes 1 and 2 for each of `pages`.
fn shared_reads(pages: std::ops::Range<u64>) -> Vec<Sample> {
    pages
        .flat_map(|i| [sample(page(i), 1, 0, false), sample(page(i), 2, 0, false)])
        .collect()
}

/// The action replicating pages `start..start + count` on all four nodes of [`topo`].
fn replicated_everywhere(start: u64, count: u64) -> Vec<Action> {
    vec![Action::Replicate {
        range: range(start, count),
        nodes: (0..4).map(NodeId).collect(),
    }]
}

fn arb_samples() -> impl Strategy<Value = Vec<Sample>> {
    proptest::collection::vec((0u64..40, 0u16..4, 0u16..4, any::<bool>()), 0..300).prop_map(|v| {
        v.into_iter()
            .map(|(p, n, h, w)| sample(page(p), n, h, w))
            .collect()
    })
}
