//! What policies see of accesses: samples from sampling interrupts (IBS, PEBS) and from the
//! NUMA hinting-fault scanner, drawn from the true access distribution, and the reservoir that
//! keeps an epoch's samples.

use super::SimMachine;
use super::access::{BlockShares, share_of};
use crate::placement::{Popularity, REPLICATED, UNALLOCATED};
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use rondpoint_model::draw::weighted_index;
use rondpoint_model::{AccessKind, HintingScan, NodeId, PageSize, Sample, SampleSource};

impl SimMachine {
    pub(super) fn take_samples(&mut self, t: usize, cycles: f64, period: f64, latency_cycles: f64) {
        let expected = cycles / period;
        let mut count = expected.floor() as u64;
        if self.rng.random::<f64>() < expected.fract() {
            count += 1;
        }
        if count == 0 {
            return;
        }
        self.threads[t].stall_ns += count as f64 * self.spec.costs.sample_interrupt_ns;
        self.totals.overhead_ns += count as f64 * self.spec.costs.sample_interrupt_ns;
        // Interrupts cost time; only some carry a memory address worth keeping.
        let kept = (0..count)
            .filter(|_| self.rng.random::<f64>() < self.config.sample_yield)
            .count();
        self.totals.samples += kept as u64;
        let shares = self.current_shares(t);
        let blocks = self.blocks_of(t, &shares);
        for _ in 0..kept {
            if let Some(sample) = self.draw_sample(t, &blocks, latency_cycles) {
                self.keep_sample(sample);
            }
        }
    }

    /// One sampled DRAM access of thread `t`: a block drawn from its `blocks`, a page in it by
    /// the region's popularity, a line in the page; `None` when the draw lands nowhere.
    fn draw_sample(
        &mut self,
        t: usize,
        blocks: &BlockShares,
        latency_cycles: f64,
    ) -> Option<Sample> {
        let (ai, h) = (self.threads[t].app, self.node_of_thread(t));
        let u = self.rng.random::<f64>();
        let pick = weighted_index(blocks.iter().map(|b| b.2), u)?;
        let (ri, b, _) = blocks[pick];
        let region = &self.apps[ai].regions[ri];
        let (start, end) = region.block_range(b);
        if end <= start {
            return None;
        }
        let page = match region.popularity() {
            Popularity::Zipf(s) => {
                let rank = zipf_rank(&mut self.rng, (end - start) as u64, s);
                region.page_of_rank(b, rank)
            }
            Popularity::Uniform => self.rng.random_range(start..end),
        };
        let write = self.rng.random::<f64>() < self.apps[ai].models[ri].write_ratio;
        let offset = self.rng.random_range(0..region.page_size.bytes() / 64) * 64;
        let home = match region.node_of(page) {
            UNALLOCATED => None,
            REPLICATED => Some(
                region
                    .replica_mask(page)
                    .map_or(h, |m| self.replica_serving(h, m)),
            ),
            n => Some(usize::from(n)),
        };
        let addr = region.page_addr(page) + offset;
        Some(Sample {
            latency_cycles: Some(latency_cycles.round() as u32),
            dram: Some(true),
            home_node: home.map(|n| NodeId(n as u16)),
            ..self.sample_of(t, write, addr, region.page_size, SampleSource::Simulated)
        })
    }

    /// A sample of an access by thread `t` at `addr`, with no latency, DRAM flag or home node.
    fn sample_of(
        &self,
        t: usize,
        write: bool,
        addr: u64,
        page_size: PageSize,
        source: SampleSource,
    ) -> Sample {
        let th = &self.threads[t];
        Sample {
            pid: self.apps[th.app].pid,
            tid: th.tid,
            cpu: self.spec.cores[th.core].cpu,
            node: NodeId(self.node_of_thread(t) as u16),
            addr,
            page_size,
            kind: if write {
                AccessKind::Write
            } else {
                AccessKind::Read
            },
            source,
            latency_cycles: None,
            dram: None,
            home_node: None,
        }
    }

    /// Keeps a sample, or a uniform subset once the epoch's cap is reached (reservoir sampling).
    fn keep_sample(&mut self, sample: Sample) {
        self.e_samples_offered += 1;
        let cap = self.config.max_samples_per_epoch;
        if self.e_samples.len() < cap {
            self.e_samples.push(sample);
        } else {
            let j = self.rng.random_range(0..self.e_samples_offered) as usize;
            if j < cap {
                self.e_samples[j] = sample;
            }
        }
    }

    /// Linux's NUMA hinting-fault scanner (task_numa_work): once a period it revokes access to
    /// the next `scan_bytes` of every process's address space, stopping at its end (the next
    /// period starts over at the beginning: `reset_ptenuma_scan`), so a process smaller than
    /// `scan_bytes` is scanned once per period, not more; the first access to a revoked page
    /// faults and records which CPU touched it. Here the scan runs at `scan_bytes` per period,
    /// a pass that reaches the end waits for its period to be over, and a scanned page faults
    /// within the period with the probability that some thread touches it (Poisson, from each
    /// thread's DRAM access rate to that page), from the thread drawn in proportion to its
    /// rate. Costs: the protection change per MiB scanned, and one fault per sample, both
    /// charged to the application's threads.
    pub(super) fn hinting_scan(&mut self, dt: f64, scan: HintingScan) {
        let period_ns = scan.period_ms as f64 * 1e6;
        for ai in 0..self.apps.len() {
            // Linux's scanner (`task_numa_work`) skips mappings whose policy lacks MPOL_F_MOF:
            // every explicit policy set here, since the sim has no MPOL_F_NUMA_BALANCING. The
            // overflow policy is the default policy with another fallback: scanned.
            if self.apps[ai].mempolicy.mode().is_some() || self.now_ns < self.apps[ai].scan_wait_ns
            {
                continue;
            }
            let runners = self.running_blocks(ai).unwrap_or_default();
            if runners.is_empty() {
                continue;
            }
            let now = self.now_ns;
            let app = &mut self.apps[ai];
            app.scan_pass_ns.get_or_insert(now);
            app.scan_credit += scan.scan_bytes as f64 * dt / period_ns;
            let scanned = self.scan_pages(ai, &runners, period_ns, now + dt);
            self.totals.scanned_bytes += scanned;
            let cost = scanned / 1_048_576.0 * self.spec.costs.numa_scan_ns_per_mib;
            self.charge_app(ai, cost);
        }
    }

    /// Scans app `ai`'s pages from its cursor while its credit lasts or until the end of its
    /// address space (in the step that ends at `step_end`); returns the bytes scanned.
    fn scan_pages(
        &mut self,
        ai: usize,
        runners: &[(usize, BlockShares)],
        period_ns: f64,
        step_end: f64,
    ) -> f64 {
        let mut scanned = 0.0;
        // Each runner's access rate to the current block, per unit of page weight: the same
        // for every page of a block, so computed once per block.
        let mut block: Option<(usize, usize)> = None;
        let mut rates = vec![0.0; runners.len()];
        let mut rate_sum = 0.0;
        loop {
            let (ri, page) = self.apps[ai].scan_cursor;
            let region = &self.apps[ai].regions[ri];
            let bytes = region.page_size.bytes() as f64;
            if self.apps[ai].scan_credit < bytes {
                break;
            }
            let allocated = region.node_of(page) != UNALLOCATED;
            let b = region.block_of(page);
            let total = region.block_total(b);
            let w = if total > 0.0 {
                region.weight(page) / total
            } else {
                0.0
            };
            let last = page + 1 >= region.len();
            let app = &mut self.apps[ai];
            app.scan_credit -= bytes;
            scanned += bytes;
            app.scan_cursor = if !last {
                (ri, page + 1)
            } else {
                ((ri + 1) % app.regions.len(), 0)
            };
            if allocated && w > 0.0 {
                if block != Some((ri, b)) {
                    block = Some((ri, b));
                    for (k, (t, blocks)) in runners.iter().enumerate() {
                        rates[k] = self.threads[*t].llc_pressure * share_of(blocks, ri, b);
                    }
                    rate_sum = rates.iter().sum();
                }
                let sum = rate_sum * w;
                if sum > 0.0 && self.rng.random::<f64>() < 1.0 - (-sum * period_ns).exp() {
                    let u = self.rng.random::<f64>();
                    let pick = weighted_index(rates.iter().copied(), u).unwrap_or(0);
                    self.hinting_fault(runners[pick].0, ri, page);
                }
            }
            if last && self.apps[ai].scan_cursor == (0, 0) {
                // The end of the address space, reached by the end of this step: the pass is
                // over until the period it ended in is (a process larger than `scan_bytes`
                // takes several periods, one scan each).
                let app = &mut self.apps[ai];
                let began = app.scan_pass_ns.unwrap_or(step_end);
                let periods = ((step_end - began) / period_ns - 1e-9).ceil().max(1.0);
                let next = began + periods * period_ns;
                app.scan_credit = 0.0;
                app.scan_wait_ns = next;
                app.scan_pass_ns = Some(next);
                break;
            }
        }
        scanned
    }

    /// Thread `t` faults on the scanned page `page` of region `ri` of its app: a sample of the
    /// hinting-fault kind, and the fault's cost.
    fn hinting_fault(&mut self, t: usize, ri: usize, page: usize) {
        let f = self.spec.cycles_per_ns();
        let ai = self.threads[t].app;
        let region = &self.apps[ai].regions[ri];
        let (addr, page_size, here) = (
            region.page_addr(page),
            region.page_size,
            region.node_of(page),
        );
        let home = if here == REPLICATED {
            self.node_of_thread(t)
        } else {
            usize::from(here)
        };
        let write = self.rng.random::<f64>() < self.apps[ai].models[ri].write_ratio;
        let sample = Sample {
            latency_cycles: Some((self.threads[t].latency_ns * f).round() as u32),
            home_node: Some(NodeId(home as u16)),
            ..self.sample_of(t, write, addr, page_size, SampleSource::HintingFault)
        };
        self.keep_sample(sample);
        self.threads[t].stall_ns += self.spec.costs.hinting_fault_ns;
        self.totals.overhead_ns += self.spec.costs.hinting_fault_ns;
        self.totals.hinting_faults += 1;
    }
}

/// A Zipf-distributed rank in `[0, n)` by inverting the continuous approximation of the CDF.
fn zipf_rank(rng: &mut Pcg64Mcg, n: u64, s: f64) -> u64 {
    let u: f64 = rng.random();
    let nf = n as f64;
    let x = if (s - 1.0).abs() < 1e-9 {
        (u * (nf + 1.0).ln()).exp() - 1.0
    } else {
        let a = 1.0 - s;
        ((u * ((nf + 1.0).powf(a) - 1.0)) + 1.0).powf(1.0 / a) - 1.0
    };
    (x.max(0.0) as u64).min(n - 1)
}
