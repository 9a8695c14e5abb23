//! Closing an epoch: the counters, samples, memory and processes policies see, the ground
//! truth the oracle may ask for, and the epoch accumulators reset.

use super::SimMachine;
use super::access::share_of;
use crate::placement::{REPLICATED, UNALLOCATED, mask_nodes};
use rondpoint_engine::Machine;
use rondpoint_model::{
    AccessTruth, Counters, LinkCounters, NodeCounters, NodeId, NodeMemory, Observation, PageRange,
    ThreadCounters,
};

impl SimMachine {
    pub(super) fn finish_epoch(&mut self, until: f64) -> Observation {
        let n = self.spec.nodes();
        let mut nodes = self.node_counters();
        let threads = self.thread_counters(&mut nodes);
        let topo = &self.spec.topology;
        let obs = Observation {
            epoch: self.epoch,
            start_ns: self.e_start_ns as u64,
            counters: Counters {
                duration_ns: (until - self.e_start_ns).max(0.0) as u64,
                nodes,
                threads,
                links: self.link_counters(),
                estimated: Vec::new(),
                missing: Vec::new(),
            },
            samples: std::mem::take(&mut self.e_samples),
            memory: (0..n)
                .map(|i| NodeMemory {
                    node: topo.nodes()[i].id,
                    total_bytes: self.spec.mem_bytes[i],
                    free_bytes: self.free[i].max(0.0) as u64,
                })
                .collect(),
            processes: self.processes(),
            collapses: std::mem::take(&mut self.e_collapses),
            truth: self
                .sampling
                .truth
                .then(|| self.truth(until - self.e_start_ns)),
        };
        self.e_mc_by_source.iter_mut().for_each(|v| *v = 0.0);
        self.e_mc_writes.iter_mut().for_each(|v| *v = 0.0);
        self.e_link_bytes.iter_mut().for_each(|v| *v = 0.0);
        self.e_samples_offered = 0;
        self.e_start_ns = until;
        self.epoch += 1;
        obs
    }

    /// The epoch's DRAM traffic per node, by source node, reads and writes (the per-node
    /// instruction, cycle and miss counts come from [`Self::thread_counters`]).
    fn node_counters(&self) -> Vec<NodeCounters> {
        let n = self.spec.nodes();
        let topo = &self.spec.topology;
        let mut nodes: Vec<NodeCounters> = (0..n)
            .map(|d| NodeCounters {
                node: topo.nodes()[d].id,
                dram_accesses_by_source: (0..n)
                    .map(|s| self.e_mc_by_source[d * n + s].round() as u64)
                    .collect(),
                dram_reads: 0,
                dram_writes: self.e_mc_writes[d].round() as u64,
                instructions: 0,
                cycles: 0,
                llc_misses: 0,
            })
            .collect();
        for c in &mut nodes {
            c.dram_reads = c.dram_accesses().saturating_sub(c.dram_writes);
        }
        nodes
    }

    /// The epoch's counters of every thread that ran, added to its node's in `nodes` too; the
    /// threads' epoch counters start again from zero.
    fn thread_counters(&mut self, nodes: &mut [NodeCounters]) -> Vec<ThreadCounters> {
        let mut threads = Vec::new();
        for t in 0..self.threads.len() {
            let node = self.node_of_thread(t);
            let th = &mut self.threads[t];
            let app = &self.apps[th.app];
            if !app.allocated {
                continue;
            }
            nodes[node].instructions += th.e_instr.round() as u64;
            nodes[node].cycles += th.e_cycles.round() as u64;
            nodes[node].llc_misses += th.e_misses.round() as u64;
            if th.e_cycles > 0.0 {
                threads.push(ThreadCounters {
                    pid: app.pid,
                    tid: th.tid,
                    node: NodeId(node as u16),
                    instructions: th.e_instr.round() as u64,
                    cycles: th.e_cycles.round() as u64,
                    llc_misses: th.e_misses.round() as u64,
                    dram_accesses: th.e_misses.round() as u64,
                    dram_writes: th.e_writes.round() as u64,
                });
            }
            th.e_instr = 0.0;
            th.e_cycles = 0.0;
            th.e_misses = 0.0;
            th.e_writes = 0.0;
        }
        threads
    }

    /// The epoch's bytes over each link, both ways.
    fn link_counters(&self) -> Vec<LinkCounters> {
        let topo = &self.spec.topology;
        self.spec
            .links
            .iter()
            .enumerate()
            .map(|(i, &(a, b))| LinkCounters {
                a: topo.nodes()[a].id,
                b: topo.nodes()[b].id,
                bytes_a_to_b: self.e_link_bytes[2 * i].round() as u64,
                bytes_b_to_a: self.e_link_bytes[2 * i + 1].round() as u64,
                capacity_bytes_per_s: Some(self.spec.link_bw[i] * 1e9),
            })
            .collect()
    }

    /// True access rates per block of every region (for the oracle policy only).
    fn truth(&self, _duration_ns: f64) -> Vec<AccessTruth> {
        let n = self.spec.nodes();
        let mut out = Vec::new();
        for (ai, app) in self.apps.iter().enumerate() {
            let Some(runners) = self.running_blocks(ai) else {
                continue;
            };
            for (ri, region) in app.regions.iter().enumerate() {
                for b in 0..region.blocks() {
                    let (start, end) = region.block_range(b);
                    if end <= start {
                        continue;
                    }
                    let mut rates = vec![0.0; n];
                    for (t, blocks) in &runners {
                        rates[self.node_of_thread(*t)] +=
                            self.threads[*t].llc_pressure * share_of(blocks, ri, b) * 1e9;
                    }
                    let mut pages = vec![0u64; n];
                    for p in start..end {
                        match region.node_of(p) {
                            UNALLOCATED => {}
                            REPLICATED => {
                                for x in mask_nodes(region.replica_mask(p).unwrap_or(0)) {
                                    pages[x] += 1;
                                }
                            }
                            x => pages[usize::from(x)] += 1,
                        }
                    }
                    let Ok(range) = PageRange::new(
                        app.pid,
                        region.page_addr(start),
                        (end - start) as u64,
                        region.page_size,
                    ) else {
                        continue;
                    };
                    out.push(AccessTruth {
                        range,
                        accesses_per_s_by_node: rates,
                        write_fraction: app.models[ri].write_ratio,
                        pages_by_node: pages,
                    });
                }
            }
        }
        out
    }
}
