//! Tests of the N-MASS policies: the algorithms line by line and as properties
//! (`algorithms`), the policies on observations (`policy`), and the `default` splits
//! (`splits`).

mod algorithms;
mod policy;
mod splits;

use super::*;

/// A process for the algorithms.
fn proc(home: usize, np: f64, mpki: f64) -> Proc {
    Proc { home, np, mpki }
}

/// `nodes` nodes of `cores` cores each, every other node at distance 20.
fn machine(nodes: usize, cores: usize) -> Processors {
    Processors {
        cores: vec![cores; nodes],
        fallback: (0..nodes)
            .map(|i| (0..nodes).filter(|&j| j != i).collect())
            .collect(),
    }
}

/// The paper's machine: two processors of four cores.
fn nehalem() -> Processors {
    machine(2, 4)
}

fn params(threshold: f64, swap: bool) -> RefineParams {
    RefineParams {
        threshold,
        swap_when_full: swap,
    }
}
