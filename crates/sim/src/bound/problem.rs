//! The placement problem the bound solves, as plain data taken from a machine before it runs
//! ([`crate::SimMachine::problem`]): each thread with its node, cache and access weights over
//! page groups, each page group with its size and whether it is written, and the memory each
//! node can give; and a solution, a [`Layout`] (where each group's accesses are served).

use crate::placement::mask_nodes;

/// One thread as the bound sees it.
#[derive(Clone, Debug)]
pub(crate) struct Thread {
    /// Node index of its core.
    pub node: usize,
    /// Index of its core's LLC.
    pub llc: usize,
    pub instructions: f64,
    pub cpi: f64,
    pub mlp: f64,
    /// Reference MPKI, averaged over its phases (each weighted by its share of the run).
    pub mpki: f64,
    pub mrc_ref: f64,
    pub alpha: f64,
    /// Share of its accesses that are writes, averaged over its phases.
    pub write_ratio: f64,
    /// (group, share of its DRAM accesses), averaged over its phases; shares sum to 1.
    pub weights: Vec<(usize, f64)>,
    /// When its application starts (ns).
    pub start_ns: f64,
}

/// A group of pages with one access vector: one block of one region of one application.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub app: usize,
    pub region: usize,
    pub block: usize,
    pub pages: u64,
    pub page_bytes: f64,
    /// Whether any access to it writes (a written replica collapses, so it is never
    /// replicated).
    pub written: bool,
}

impl Group {
    pub(crate) fn bytes(&self) -> f64 {
        self.pages as f64 * self.page_bytes
    }
}

/// Where a group's pages are.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Place {
    /// Share of the group's accesses (and, for uniformly popular pages, of its pages) on each
    /// node; the shares sum to 1.
    Spread(Vec<f64>),
    /// A copy of every page on each node of the mask; an access is served by the copy on its
    /// own node, or else the nearest.
    Replicated(u64),
}

/// A placement of every group, indexed like [`Problem::groups`].
pub(crate) type Layout = Vec<Place>;

/// The whole problem.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    pub threads: Vec<Thread>,
    pub groups: Vec<Group>,
    /// Bytes each node can give applications.
    pub room: Vec<f64>,
    /// The layout first touch gives (the start of the search).
    pub first_touch: Layout,
}

impl Problem {
    /// Bytes each node holds under `layout` (a replica on every node of its mask).
    pub(crate) fn used(&self, layout: &Layout) -> Vec<f64> {
        let mut used = vec![0.0; self.room.len()];
        for (g, place) in self.groups.iter().zip(layout) {
            match place {
                Place::Spread(shares) => {
                    for (u, s) in used.iter_mut().zip(shares) {
                        *u += s * g.bytes();
                    }
                }
                Place::Replicated(mask) => {
                    let n = used.len();
                    for d in mask_nodes(*mask).filter(|&d| d < n) {
                        used[d] += g.bytes();
                    }
                }
            }
        }
        used
    }

    /// Whether `layout` fits in every node's room (with a page of slack per group for
    /// rounding shares to pages).
    pub(crate) fn fits(&self, layout: &Layout) -> bool {
        let slack: f64 = self.groups.iter().map(|g| g.page_bytes).sum();
        self.used(layout)
            .iter()
            .zip(&self.room)
            .all(|(u, r)| *u <= r + slack)
    }
}
