//! The machine side of the placement bound ([`crate::bound`]): the problem a machine poses
//! before it runs, and a layout installed in place of first touch, page by page as each
//! application starts (with those that start at the same time, as `alloc` interleaves them),
//! at no cost (the bound places as if it had known from the start).

use super::SimMachine;
use super::alloc::Walk;
use crate::bound::problem::{Group, Layout, Place, Problem, Thread};
use crate::placement::mask_nodes;
use std::collections::HashMap;

impl SimMachine {
    /// The placement problem of this machine's scenario, as it stands before the run.
    pub(crate) fn problem(&self) -> Problem {
        let keys = self.group_keys();
        let index: HashMap<(usize, usize, usize), usize> =
            keys.iter().enumerate().map(|(g, &k)| (k, g)).collect();
        let groups: Vec<Group> = keys
            .iter()
            .map(|&(ai, ri, b)| {
                let region = &self.apps[ai].regions[ri];
                let (start, end) = region.block_range(b);
                Group {
                    app: ai,
                    region: ri,
                    block: b,
                    pages: (end - start) as u64,
                    page_bytes: region.page_size.bytes() as f64,
                    written: self.apps[ai].models[ri].write_ratio > 0.0,
                }
            })
            .collect();
        let threads = (0..self.threads.len())
            .map(|t| self.problem_thread(t, &index))
            .collect();
        Problem {
            threads,
            first_touch: self.first_touch_layout(&groups),
            groups,
            room: self.free.clone(),
        }
    }

    /// Thread `t` as the bound sees it, its phases averaged by their share of its run.
    fn problem_thread(&self, t: usize, index: &HashMap<(usize, usize, usize), usize>) -> Thread {
        let th = &self.threads[t];
        let app = &self.apps[th.app];
        // (start, share vector, mpki scale) of each phase, the base behaviour first.
        let base: Vec<f64> = app.models.iter().map(|m| m.share).collect();
        let mut phases = vec![(0.0, base, 1.0)];
        phases.extend(
            app.phases
                .iter()
                .map(|p| (p.at, p.shares.clone(), p.mpki_scale)),
        );
        let mut weights: HashMap<usize, f64> = HashMap::new();
        let (mut mpki_scale, mut write_ratio) = (0.0, 0.0);
        for (k, (at, shares, scale)) in phases.iter().enumerate() {
            let end = phases.get(k + 1).map_or(1.0, |p| p.0);
            let span = (end - at).clamp(0.0, 1.0);
            let sum: f64 = shares.iter().sum();
            if span <= 0.0 || sum <= 0.0 {
                continue;
            }
            let norm: Vec<f64> = shares.iter().map(|s| s / sum).collect();
            mpki_scale += span * scale;
            for (ri, m) in app.models.iter().enumerate() {
                write_ratio += span * norm[ri] * m.write_ratio;
            }
            for (ri, b, w) in self.blocks_of(t, &norm) {
                if let Some(&g) = index.get(&(th.app, ri, b)) {
                    *weights.entry(g).or_insert(0.0) += span * w;
                }
            }
        }
        let total: f64 = weights.values().sum();
        let mut weights: Vec<(usize, f64)> = weights
            .into_iter()
            .map(|(g, w)| (g, w / total.max(1e-300)))
            .collect();
        weights.sort_by_key(|w| w.0);
        let core = self.spec.cores[th.core];
        Thread {
            node: core.node,
            llc: core.llc,
            instructions: app.instructions,
            cpi: app.cpi_base,
            mlp: app.mlp,
            mpki: app.mpki * mpki_scale,
            mrc_ref: app.mrc_ref,
            alpha: app.alpha,
            write_ratio,
            weights,
            start_ns: app.start_ns,
        }
    }

    /// Where first touch puts each group, from a copy of this machine that allocates every
    /// application now.
    fn first_touch_layout(&self, groups: &[Group]) -> Layout {
        let mut m = self.clone();
        m.layout = None;
        m.allocate_all();
        groups
            .iter()
            .map(|g| {
                let region = &m.apps[g.app].regions[g.region];
                let total = region.block_total(g.block).max(1e-300);
                Place::Spread(
                    region
                        .block_mass(g.block)
                        .iter()
                        .map(|x| x / total)
                        .collect(),
                )
            })
            .collect()
    }

    /// Places the next page of `w` as the installed layout's `place` for its group says, in
    /// place of its allocation policy: a page of a spread group on the node furthest below its
    /// share of the group's access mass that has room, a page of a replicated group on every
    /// node of its mask.
    pub(super) fn place_planned(&mut self, w: &mut Walk, place: &Place) {
        let n = self.spec.nodes();
        let (ai, ri, p) = (w.ai, w.ri, w.p);
        let region = &self.apps[ai].regions[ri];
        let (start, end) = region.block_range(region.block_of(p));
        if p == start {
            w.placed.iter_mut().for_each(|x| *x = 0.0);
            w.block_mass = (start..end).map(|q| region.weight(q)).sum();
        }
        let bytes = region.page_size.bytes() as f64;
        let weight = region.weight(p);
        let node = match place {
            Place::Spread(shares) => {
                let gap =
                    |d: usize| shares.get(d).copied().unwrap_or(0.0) * w.block_mass - w.placed[d];
                let fullest = |x: &usize, y: &usize| self.free[*x].total_cmp(&self.free[*y]);
                (0..n)
                    .filter(|&d| self.free[d] >= bytes)
                    .max_by(|&x, &y| gap(x).total_cmp(&gap(y)))
                    .or_else(|| (0..n).max_by(fullest))
                    .unwrap_or(0)
            }
            Place::Replicated(mask) => mask_nodes(*mask).next().unwrap_or(0),
        };
        w.placed[node] += weight;
        self.free[node] -= bytes;
        self.apps[ai].regions[ri].place(p, node);
        if let Place::Replicated(mask) = place {
            let added = self.apps[ai].regions[ri].replicate(p, *mask);
            for d in added {
                self.free[d] -= bytes;
            }
        }
    }

    /// Installs `layout` (indexed like the groups of [`Self::problem`]): applications that
    /// start from now on are placed by it.
    pub(crate) fn install(&mut self, layout: Layout) {
        self.layout = Some(layout);
    }

    /// The (application, region, block) of every page group, in the order of a problem's
    /// groups and of a layout's entries.
    fn group_keys(&self) -> Vec<(usize, usize, usize)> {
        let mut keys = Vec::new();
        for (ai, app) in self.apps.iter().enumerate() {
            for (ri, region) in app.regions.iter().enumerate() {
                keys.extend((0..region.blocks()).map(|b| (ai, ri, b)));
            }
        }
        keys
    }

    /// Allocates every application now, whatever its start time: in the order of their
    /// starts, those that start together together.
    pub(crate) fn allocate_all(&mut self) {
        let due = (0..self.apps.len())
            .filter(|&ai| !self.apps[ai].allocated)
            .collect();
        self.allocate_in_start_order(due);
    }
}
