//! One time step: start applications, share the LLCs, solve the queueing network of the
//! running threads over the memory controllers and links, advance every thread by what it
//! retires, and account the traffic.

use super::SimMachine;
use crate::placement::mask_nodes;
use crate::solver::{self, Network};
use crate::traffic::{self, LINE, route};
use rand::Rng;
use rondpoint_model::{Collapse, PageRange};

impl SimMachine {
    /// Simulates one step of `dt` ns (less if the epoch boundary is nearer).
    pub(super) fn step(&mut self, dt: f64) {
        self.start_apps();
        let active: Vec<usize> = (0..self.threads.len())
            .filter(|&t| {
                let th = &self.threads[t];
                th.done_ns.is_none() && self.apps[th.app].allocated
            })
            .collect();
        if active.is_empty() {
            self.now_ns += dt;
            return;
        }
        self.enter_phases(&active);
        let net = self.network(&active);
        // Threads that never miss do not enter the network.
        let sol = solver::solve(&net, self.warm.as_ref(), self.config.solver);
        self.totals.solver_iterations += u64::from(sol.iterations);
        for (ci, &t) in active.iter().enumerate() {
            self.advance(t, dt, sol.throughput[ci], sol.latency_ns[ci]);
        }
        self.warm = Some(sol.warm);
        self.load_copies(dt);
        self.collapse_written_replicas(dt);
        if let Some(scan) = self
            .sampling
            .hinting
            .filter(|s| s.period_ms > 0 && s.scan_bytes > 0)
        {
            self.hinting_scan(dt, scan);
        }
        self.finish_apps();
        self.totals.steps += 1;
        self.now_ns += dt;
    }

    /// Allocates the regions of the applications whose start time has come: in the order of
    /// their starts, those that start at the same time together.
    fn start_apps(&mut self) {
        let due: Vec<usize> = (0..self.apps.len())
            .filter(|&ai| !self.apps[ai].allocated && self.apps[ai].start_ns <= self.now_ns)
            .collect();
        if !due.is_empty() {
            self.allocate_in_start_order(due);
        }
    }

    /// Moves each active thread to the phase its progress has reached and refreshes the access
    /// mixes that changed.
    fn enter_phases(&mut self, active: &[usize]) {
        for &t in active {
            let th = &self.threads[t];
            let app = &self.apps[th.app];
            let progress = 1.0 - th.remaining / app.instructions;
            let phase = app.phases.iter().take_while(|p| p.at <= progress).count();
            if phase != th.phase {
                self.threads[t].phase = phase;
                self.threads[t].mix_dirty = true;
            }
        }
        for &t in active {
            if self.threads[t].mix_dirty {
                self.refresh_mix(t);
            }
        }
    }

    /// The queueing network of the active threads, one class each, and each thread's MPKI for
    /// the step.
    fn network(&mut self, active: &[usize]) -> Network {
        let n = self.spec.nodes();
        // LLC sharing: each LLC is split among its running threads in proportion to their
        // last-step miss pressure; MPKI then follows each application's miss-ratio curve.
        let llcs = self.spec.topology.llcs().len().max(1);
        let mut pressure = vec![0.0; llcs];
        for &t in active {
            pressure[self.spec.cores[self.threads[t].core].llc] += self.threads[t].llc_pressure;
        }
        let mut net = Network::new(n + self.spec.directed_links());
        let mut row = Vec::new();
        for &t in active {
            let th = &self.threads[t];
            let app = &self.apps[th.app];
            let core = self.spec.cores[th.core];
            let h = core.node;
            let share = if pressure[core.llc] > 0.0 {
                th.llc_pressure / pressure[core.llc]
            } else {
                1.0
            };
            let cache = self.spec.llc_bytes * share;
            let scale = if th.phase > 0 {
                app.phases[th.phase - 1].mpki_scale
            } else {
                1.0
            };
            let mpki = traffic::mpki_at(app.mpki * scale, app.mrc_ref, app.alpha, cache);
            row.clear();
            traffic::demand(
                &self.spec,
                &th.mix,
                h,
                th.write_ratio,
                &self.background,
                &mut row,
            );
            let class = traffic::class(&self.spec, &th.mix, h, (app.mlp, app.cpi_base, mpki), &row);
            net.push(class, &mut row);
            self.threads[t].mpki = mpki;
        }
        net
    }

    /// Advances thread `t` by `dt` at the throughput (misses per ns) and loaded latency the
    /// network gives it, and accounts what it did.
    fn advance(&mut self, t: usize, dt: f64, throughput: f64, latency_ns: f64) {
        let f = self.spec.cycles_per_ns();
        let (mpki, w, h) = {
            let th = &self.threads[t];
            (th.mpki, th.write_ratio, self.node_of_thread(t))
        };
        let app_cpi = self.apps[self.threads[t].app].cpi_base;
        let ips = traffic::instructions_per_ns(&self.spec, mpki, app_cpi, throughput);
        let th = &mut self.threads[t];
        th.latency_ns = latency_ns;
        let stall = th.stall_ns.min(dt);
        th.stall_ns -= stall;
        let run = dt - stall;
        let mut instr = ips * run;
        let mut busy = dt;
        if instr >= th.remaining {
            instr = th.remaining;
            let used = stall + if ips > 0.0 { instr / ips } else { 0.0 };
            busy = used;
            th.done_ns = Some(self.now_ns + used);
        }
        th.remaining -= instr;
        let misses = instr * mpki / 1000.0;
        th.e_instr += instr;
        th.e_cycles += busy * f;
        th.e_misses += misses;
        th.e_writes += misses * w;
        th.llc_pressure = (misses / dt).max(1e-9);
        let lat = th.latency_ns;
        self.totals.instructions += instr;
        self.totals.busy_ns += busy;
        self.totals.latency_ns_sum += misses * lat;
        self.totals.accesses += misses;
        self.account_traffic(t, h, misses, w);
        let pid = self.apps[self.threads[t].app].pid;
        if let Some(period) = self.sampling.period_of(pid) {
            self.take_samples(t, busy * f, period as f64, lat * f);
        }
    }

    /// Accounts `misses` of thread `t` (on node `h`, write ratio `w`) on the controllers and
    /// links its access mix sends them to.
    fn account_traffic(&mut self, t: usize, h: usize, misses: f64, w: f64) {
        let n = self.spec.nodes();
        let mix = &self.threads[t].mix;
        self.totals.local_accesses += misses * mix[h];
        self.totals.accesses_by_source[h] += misses;
        for d in 0..n {
            let acc = misses * mix[d];
            self.totals.mc_accesses[d] += acc;
            self.totals.mc_bytes[d] += acc * LINE * (1.0 + w);
            self.e_mc_by_source[d * n + h] += acc;
            self.e_mc_writes[d] += acc * w;
            for (l, bytes) in route(&self.spec, d, h, w) {
                let b = acc * bytes;
                self.e_link_bytes[l] += b;
                self.totals.link_bytes[l] += b;
            }
        }
    }

    /// Copies queued by actions load the resources during the next step.
    fn load_copies(&mut self, dt: f64) {
        let n = self.spec.nodes();
        for k in 0..self.background.len() {
            let cap = if k < n {
                self.spec.mc_bw[k]
            } else {
                self.spec.link_bw[(k - n) / 2]
            } * dt;
            self.background[k] = (self.copy_bytes[k] / cap).min(0.9);
            self.copy_bytes[k] = (self.copy_bytes[k] - 0.9 * cap).max(0.0);
        }
    }

    /// Marks done the applications whose threads have all finished, at the last one's end;
    /// with restarts, starts them again while another has not finished once.
    fn finish_apps(&mut self) {
        for ai in 0..self.apps.len() {
            if self.apps[ai].done_ns.is_none()
                && self.apps[ai].allocated
                && self.running_threads(ai).next().is_none()
            {
                let done = self.apps[ai]
                    .threads
                    .iter()
                    .filter_map(|&t| self.threads[t].done_ns)
                    .fold(0.0, f64::max);
                self.apps[ai].done_ns = Some(done);
            }
        }
        if self.restart && self.apps.iter().any(|a| a.done_ns.is_none()) {
            for ai in 0..self.apps.len() {
                if self.apps[ai].allocated && self.running_threads(ai).next().is_none() {
                    self.rerun(ai);
                }
            }
        }
    }

    /// Starts app `ai` again: every thread back to its whole instruction budget and its first
    /// phase, on the core it has, with the memory the app has.
    fn rerun(&mut self, ai: usize) {
        let budget = self.apps[ai].instructions;
        for &t in &self.apps[ai].threads {
            let th = &mut self.threads[t];
            th.remaining = budget;
            th.done_ns = None;
            th.phase = 0;
            th.mix_dirty = true;
        }
    }

    /// A write to a replicated page collapses it ([Dashti13 §4.4]): each
    /// replicated page of a written region collapses with the probability that at least one of
    /// the step's writes hit it, onto the writer's node (§3.3.2: the faulting node keeps the
    /// page writable, the others lose theirs), the writer drawn among the app's threads by
    /// their misses.
    fn collapse_written_replicas(&mut self, dt: f64) {
        for ai in 0..self.apps.len() {
            // Each thread's node and misses this step.
            let writers: Vec<(usize, f64)> = self.apps[ai]
                .threads
                .iter()
                .map(|&t| {
                    let th = &self.threads[t];
                    (self.spec.cores[th.core].node, th.llc_pressure * dt)
                })
                .collect();
            let app_misses: f64 = writers.iter().map(|w| w.1).sum();
            for ri in 0..self.apps[ai].regions.len() {
                let wr = self.apps[ai].models[ri].write_ratio;
                if wr <= 0.0 {
                    continue;
                }
                let pages = self.apps[ai].regions[ri].replicated_pages();
                if pages.is_empty() {
                    continue;
                }
                let writes = app_misses * self.apps[ai].models[ri].share * wr;
                let mut collapsed = 0u64;
                for p in pages {
                    let region = &self.apps[ai].regions[ri];
                    let b = region.block_of(p);
                    let total = region.block_total(b).max(1e-12);
                    let hits = writes * region.weight(p) / total / region.blocks() as f64;
                    if self.rng.random::<f64>() < 1.0 - (-hits).exp() {
                        let mask = region.replica_mask(p).unwrap_or(1);
                        let writer = pick_weighted(&writers, self.rng.random::<f64>());
                        let keep = writer
                            .filter(|&n| mask & (1u64 << n) != 0)
                            .or_else(|| mask_nodes(mask).next())
                            .unwrap_or(0);
                        let bytes = region.page_size.bytes() as f64;
                        let (addr, size) = (region.page_addr(p), region.page_size);
                        self.apps[ai].regions[ri].collapse(p, keep);
                        for node in mask_nodes(mask).filter(|&x| x != keep) {
                            self.free[node] += bytes;
                        }
                        collapsed += 1;
                        self.e_collapses.push(Collapse {
                            page: PageRange::page_of(self.apps[ai].pid, addr, size),
                            count: 1,
                        });
                    }
                }
                if collapsed > 0 {
                    self.totals.collapses += collapsed;
                    let cost = collapsed as f64 * self.spec.costs.replica_collapse_ns;
                    self.charge_app(ai, cost);
                    self.mark_app_dirty(ai);
                }
            }
        }
    }
}

/// The node of the entry of `weighted` (node, weight) that `u` (0 to 1) falls on, in
/// proportion to the weights; none when every weight is zero.
fn pick_weighted(weighted: &[(usize, f64)], u: f64) -> Option<usize> {
    let total: f64 = weighted.iter().map(|w| w.1).sum();
    if total <= 0.0 {
        return None;
    }
    let mut left = u * total;
    for &(node, w) in weighted {
        if left < w {
            return Some(node);
        }
        left -= w;
    }
    weighted.iter().rev().find(|w| w.1 > 0.0).map(|w| w.0)
}
