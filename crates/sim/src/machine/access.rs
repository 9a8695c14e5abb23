//! Where each thread's accesses go: its share of each region, the blocks it touches, and the
//! resulting mix of DRAM accesses over the nodes (the truth that policies never see).

use super::SimMachine;
use crate::scenario::Pattern;

/// (region, block, share of the thread's accesses) triples.
pub(super) type BlockShares = Vec<(usize, usize, f64)>;

/// The weight `blocks` give block `b` of region `ri`.
pub(super) fn share_of(blocks: &BlockShares, ri: usize, b: usize) -> f64 {
    blocks
        .iter()
        .filter(|&&(r, bb, _)| r == ri && bb == b)
        .map(|x| x.2)
        .sum()
}

impl SimMachine {
    pub(super) fn current_shares(&self, t: usize) -> Vec<f64> {
        let th = &self.threads[t];
        let app = &self.apps[th.app];
        let mut shares: Vec<f64> = app.models.iter().map(|m| m.share).collect();
        if th.phase > 0 {
            shares.clone_from(&app.phases[th.phase - 1].shares);
        }
        let sum: f64 = shares.iter().sum();
        if sum > 0.0 {
            shares.iter_mut().for_each(|s| *s /= sum);
        }
        shares
    }

    /// The threads of app `ai` that run now, each with the blocks it uses (see
    /// [`Self::blocks_of`]); `None` while the app has not started or once it has finished.
    pub(super) fn running_blocks(&self, ai: usize) -> Option<Vec<(usize, BlockShares)>> {
        let app = &self.apps[ai];
        if !app.allocated || app.done_ns.is_some() {
            return None;
        }
        let runners = self
            .running_threads(ai)
            .map(|t| (t, self.blocks_of(t, &self.current_shares(t))))
            .collect();
        Some(runners)
    }

    /// (region, block, weight) triples of a thread's accesses.
    pub(super) fn blocks_of(&self, t: usize, shares: &[f64]) -> BlockShares {
        let th = &self.threads[t];
        let app = &self.apps[th.app];
        let mut out = Vec::new();
        for (ri, m) in app.models.iter().enumerate() {
            let share = shares[ri];
            if share <= 0.0 {
                continue;
            }
            let k = app.regions[ri].blocks();
            match m.pattern {
                Pattern::Partitioned => out.push((ri, th.index % k, share)),
                Pattern::Halo => {
                    let b = th.index % k;
                    if k == 1 {
                        out.push((ri, b, share));
                    } else {
                        out.push((ri, b, share * (1.0 - m.halo)));
                        out.push((ri, (b + k - 1) % k, share * m.halo / 2.0));
                        out.push((ri, (b + 1) % k, share * m.halo / 2.0));
                    }
                }
                Pattern::SharedUniform | Pattern::Zipf | Pattern::RandomReadWrite => {
                    out.push((ri, 0, share))
                }
            }
        }
        out
    }

    /// The node that serves an access from node `from` to a page replicated on `mask`.
    pub(super) fn replica_serving(&self, from: usize, mask: u64) -> usize {
        crate::traffic::serving_copy(&self.spec, from, mask)
    }

    pub(super) fn refresh_mix(&mut self, t: usize) {
        let n = self.spec.nodes();
        let h = self.node_of_thread(t);
        let shares = self.current_shares(t);
        let blocks = self.blocks_of(t, &shares);
        let app = &self.apps[self.threads[t].app];
        let mut mix = vec![0.0; n];
        let mut wr = 0.0;
        for (ri, m) in app.models.iter().enumerate() {
            wr += shares[ri] * m.write_ratio;
        }
        for &(ri, b, w) in &blocks {
            let r = &app.regions[ri];
            let total = r.block_total(b);
            if total <= 0.0 {
                continue;
            }
            for (node, &m) in r.block_mass(b).iter().enumerate() {
                mix[node] += w * m / total;
            }
            for (&mask, &m) in r.block_replica_mass(b) {
                mix[self.replica_serving(h, mask)] += w * m / total;
            }
        }
        let sum: f64 = mix.iter().sum();
        if sum > 0.0 {
            mix.iter_mut().for_each(|v| *v /= sum);
        } else {
            mix[h] = 1.0;
        }
        let th = &mut self.threads[t];
        th.mix = mix;
        th.write_ratio = wr;
        th.mix_dirty = false;
    }

    pub(super) fn mark_app_dirty(&mut self, ai: usize) {
        for &t in &self.apps[ai].threads {
            self.threads[t].mix_dirty = true;
        }
    }
}
