//! Where every page of a region lives, with the per-node access mass kept up to date so that a
//! page move costs O(1), not a rescan.
//!
//! State per page is one byte (its node, or a marker for "not yet allocated" and "replicated");
//! replica sets live in a side table. A region is split into access *blocks* (one per thread
//! for partitioned and halo patterns, one for shared patterns); within a block, pages have a
//! weight (uniform, or Zipf by a scrambled rank) and the mass of a block on a node is the sum of
//! the weights of its pages there. A thread's access mix is then a weighted sum of block masses.

use rondpoint_model::PageSize;
use std::collections::BTreeMap;

/// Page not yet allocated.
pub const UNALLOCATED: u8 = u8::MAX;
/// Page replicated: its copies are in the replica table.
pub const REPLICATED: u8 = u8::MAX - 1;
/// Most nodes the simulator supports: rondpoint's bound (node indices must stay below the
/// markers, and replica sets are 64-bit masks).
pub use rondpoint_model::bounds::MAX_NODES;
const _: () = assert!(MAX_NODES <= 64 && MAX_NODES < REPLICATED as usize);

/// Popularity of pages within a block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Popularity {
    Uniform,
    /// Zipf with exponent `s` over a scrambled rank (hot pages spread through the block).
    Zipf(f64),
}

/// The placement state of one region.
#[derive(Clone, Debug)]
pub struct Region {
    /// First virtual address.
    pub base: u64,
    pub page_size: PageSize,
    pages: Vec<u8>,
    blocks: usize,
    block_len: usize,
    popularity: Popularity,
    nodes: usize,
    /// `mass[block * nodes + node]`.
    mass: Vec<f64>,
    /// Per block: replica mask -> mass.
    replica_mass: Vec<BTreeMap<u64, f64>>,
    /// Page -> replica mask.
    replicas: BTreeMap<u32, u64>,
    /// Allocated mass per block.
    total: Vec<f64>,
    /// Pages per node (replicated pages count on every node holding a copy).
    pages_on: Vec<u64>,
}

/// Multiplier used to scramble ranks: a large prime; coprime with any block length it does not
/// divide, and [`Region::new`] falls back to 1 when it does.
const SCRAMBLE: u64 = 2_654_435_761;

impl Region {
    /// A region of `pages` pages split into `blocks` access blocks, nothing allocated yet.
    pub fn new(
        base: u64,
        page_size: PageSize,
        pages: usize,
        blocks: usize,
        popularity: Popularity,
        nodes: usize,
    ) -> Self {
        let blocks = blocks.clamp(1, pages.max(1));
        let block_len = pages.div_ceil(blocks).max(1);
        Self {
            base,
            page_size,
            pages: vec![UNALLOCATED; pages],
            blocks,
            block_len,
            popularity,
            nodes,
            mass: vec![0.0; blocks * nodes],
            replica_mass: vec![BTreeMap::new(); blocks],
            replicas: BTreeMap::new(),
            total: vec![0.0; blocks],
            pages_on: vec![0; nodes],
        }
    }

    /// Pages in the region.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Bytes in the region.
    pub fn bytes(&self) -> u64 {
        self.pages.len() as u64 * self.page_size.bytes()
    }

    /// First virtual address of page `page`.
    pub(crate) fn page_addr(&self, page: usize) -> u64 {
        self.base + page as u64 * self.page_size.bytes()
    }

    /// How popular its pages are within a block.
    pub(crate) fn popularity(&self) -> Popularity {
        self.popularity
    }

    /// Access blocks.
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// The block a page belongs to.
    pub(crate) fn block_of(&self, page: usize) -> usize {
        (page / self.block_len).min(self.blocks - 1)
    }

    /// Pages `[start, end)` of a block.
    pub(crate) fn block_range(&self, block: usize) -> (usize, usize) {
        let start = (block * self.block_len).min(self.pages.len());
        let end = if block + 1 == self.blocks {
            self.pages.len()
        } else {
            ((block + 1) * self.block_len).min(self.pages.len())
        };
        (start, end)
    }

    fn scramble(len: usize) -> u64 {
        if len as u64 % SCRAMBLE == 0 {
            1
        } else {
            SCRAMBLE % len.max(1) as u64
        }
    }

    /// Access weight of a page (its share of its block's accesses, unnormalised).
    pub fn weight(&self, page: usize) -> f64 {
        match self.popularity {
            Popularity::Uniform => 1.0,
            Popularity::Zipf(s) => {
                let (start, end) = self.block_range(self.block_of(page));
                let len = (end - start) as u64;
                let m = Self::scramble(end - start);
                let rank = ((page - start) as u128 * m as u128 % len.max(1) as u128) as f64;
                (rank + 1.0).powf(-s)
            }
        }
    }

    /// The page of a block holding a given popularity rank (inverse of the scramble).
    pub(crate) fn page_of_rank(&self, block: usize, rank: u64) -> usize {
        let (start, end) = self.block_range(block);
        let len = (end - start) as u64;
        if len == 0 {
            return start;
        }
        let m = Self::scramble(end - start);
        let inv = mod_inverse(m % len, len).unwrap_or(1);
        start + ((rank % len) as u128 * inv as u128 % len as u128) as usize
    }

    /// The node holding a page (`UNALLOCATED`, `REPLICATED` or a node index).
    pub(crate) fn node_of(&self, page: usize) -> u8 {
        self.pages[page]
    }

    /// Replica mask of a replicated page.
    pub(crate) fn replica_mask(&self, page: usize) -> Option<u64> {
        self.replicas.get(&(page as u32)).copied()
    }

    /// Places (or moves) a non-replicated page on `node`. Returns the node it left, if any.
    pub fn place(&mut self, page: usize, node: usize) -> Option<usize> {
        let w = self.weight(page);
        let b = self.block_of(page);
        let old = self.pages[page];
        let left = match old {
            UNALLOCATED => {
                self.total[b] += w;
                None
            }
            REPLICATED => {
                let mask = self.replicas.remove(&(page as u32)).unwrap_or(0);
                self.remove_replica_mass(b, mask, w);
                for n in mask_nodes(mask) {
                    self.pages_on[n] -= 1;
                }
                None
            }
            n => {
                let n = usize::from(n);
                self.mass[b * self.nodes + n] -= w;
                self.pages_on[n] -= 1;
                Some(n)
            }
        };
        self.mass[b * self.nodes + node] += w;
        self.pages_on[node] += 1;
        self.pages[page] = node as u8;
        left
    }

    fn remove_replica_mass(&mut self, b: usize, mask: u64, w: f64) {
        if let Some(m) = self.replica_mass[b].get_mut(&mask) {
            *m -= w;
            if *m <= 1e-12 {
                self.replica_mass[b].remove(&mask);
            }
        }
    }

    /// Replicates an allocated page on every node of `mask` (which must include at least one
    /// node). Returns the nodes that got a new copy.
    pub fn replicate(&mut self, page: usize, mask: u64) -> Vec<usize> {
        let w = self.weight(page);
        let b = self.block_of(page);
        let before = match self.pages[page] {
            UNALLOCATED => return Vec::new(),
            REPLICATED => {
                let m = self.replicas.get(&(page as u32)).copied().unwrap_or(0);
                self.remove_replica_mass(b, m, w);
                m
            }
            n => {
                let n = usize::from(n);
                self.mass[b * self.nodes + n] -= w;
                1u64 << n
            }
        };
        let mask = mask | before;
        let added: Vec<usize> = mask_nodes(mask & !before).collect();
        for &n in &added {
            self.pages_on[n] += 1;
        }
        *self.replica_mass[b].entry(mask).or_insert(0.0) += w;
        self.replicas.insert(page as u32, mask);
        self.pages[page] = REPLICATED;
        added
    }

    /// Collapses a replicated page to a single copy on `node`. Returns the copies dropped.
    pub fn collapse(&mut self, page: usize, node: usize) -> usize {
        let Some(mask) = self.replica_mask(page) else {
            return 0;
        };
        let copies = mask.count_ones() as usize;
        self.place(page, node);
        copies.saturating_sub(1)
    }

    /// Replicated pages, in page order.
    pub(crate) fn replicated_pages(&self) -> Vec<usize> {
        self.replicas.keys().map(|&p| p as usize).collect()
    }

    /// Mass of a block on each node (non-replicated pages).
    pub(crate) fn block_mass(&self, block: usize) -> &[f64] {
        &self.mass[block * self.nodes..(block + 1) * self.nodes]
    }

    /// Mass of a block's replicated pages, by replica mask.
    pub(crate) fn block_replica_mass(&self, block: usize) -> &BTreeMap<u64, f64> {
        &self.replica_mass[block]
    }

    /// Allocated mass of a block.
    pub(crate) fn block_total(&self, block: usize) -> f64 {
        self.total[block]
    }

    /// Pages on each node (replicas counted on each node with a copy).
    pub(crate) fn pages_on(&self) -> &[u64] {
        &self.pages_on
    }

    /// Bytes of state per page beyond fixed costs (for the memory benchmark).
    pub fn state_bytes(&self) -> usize {
        self.pages.len() + self.replicas.len() * 16
    }
}

/// Nodes set in a mask.
pub(crate) fn mask_nodes(mask: u64) -> impl Iterator<Item = usize> {
    (0..MAX_NODES).filter(move |&n| mask & (1u64 << n) != 0)
}

fn mod_inverse(a: u64, m: u64) -> Option<u64> {
    if m == 1 {
        return Some(0);
    }
    let (mut t, mut new_t) = (0i128, 1i128);
    let (mut r, mut new_r) = (m as i128, a as i128);
    while new_r != 0 {
        let q = r / new_r;
        (t, new_t) = (new_t, t - q * new_t);
        (r, new_r) = (new_r, r - q * new_r);
    }
    if r > 1 {
        return None;
    }
    if t < 0 {
        t += m as i128;
    }
    Some(t as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn mass_follows_moves() {
        let mut r = Region::new(0, PageSize::Base4K, 8, 2, Popularity::Uniform, 2);
        for p in 0..8 {
            r.place(p, 0);
        }
        assert_eq!(r.block_mass(0), &[4.0, 0.0]);
        assert_eq!(r.place(1, 1), Some(0));
        assert_eq!(r.block_mass(0), &[3.0, 1.0]);
        assert_eq!(r.pages_on(), &[7, 1]);
        assert_eq!(r.block_total(1), 4.0);
    }

    #[test]
    fn replicate_and_collapse() {
        let mut r = Region::new(0, PageSize::Base4K, 4, 1, Popularity::Uniform, 3);
        for p in 0..4 {
            r.place(p, 0);
        }
        assert_eq!(r.replicate(2, 0b110), vec![1, 2]);
        assert_eq!(r.node_of(2), REPLICATED);
        assert_eq!(r.block_mass(0), &[3.0, 0.0, 0.0]);
        assert_eq!(r.block_replica_mass(0).get(&0b111), Some(&1.0));
        assert_eq!(r.pages_on(), &[4, 1, 1]);
        assert_eq!(r.collapse(2, 1), 2);
        assert_eq!(r.node_of(2), 1);
        assert!(r.block_replica_mass(0).is_empty());
        assert_eq!(r.pages_on(), &[3, 1, 0]);
    }

    #[test]
    fn one_byte_of_state_per_page() {
        let r = Region::new(0, PageSize::Base4K, 1 << 20, 16, Popularity::Uniform, 16);
        assert_eq!(r.state_bytes(), 1 << 20);
    }

    proptest! {
        #[test]
        fn zipf_rank_scramble_is_a_bijection(len in 1usize..3000, s in 0.5f64..1.5) {
            let r = Region::new(0, PageSize::Base4K, len, 1, Popularity::Zipf(s), 1);
            let mut seen = vec![false; len];
            for rank in 0..len as u64 {
                let p = r.page_of_rank(0, rank);
                prop_assert!(!seen[p]);
                seen[p] = true;
                let expected = (rank as f64 + 1.0).powf(-s);
                prop_assert!((r.weight(p) - expected).abs() < 1e-12);
            }
        }

        #[test]
        fn block_masses_sum_to_total(moves in proptest::collection::vec((0usize..64, 0usize..4), 1..200)) {
            let mut r = Region::new(0, PageSize::Base4K, 64, 4, Popularity::Zipf(0.9), 4);
            for (p, n) in moves {
                r.place(p, n);
            }
            for b in 0..4 {
                let sum: f64 = r.block_mass(b).iter().sum();
                prop_assert!((sum - r.block_total(b)).abs() < 1e-9);
            }
        }
    }
}
