//! What a policy asks the backend to sample.

use crate::Pid;
use serde::{Deserialize, Serialize};

/// NUMA hinting-fault scanning, as Linux's automatic NUMA balancing does it: every `period_ms`
/// the kernel revokes access to the next `scan_bytes` of each managed process's address space,
/// and the next access to each of those pages faults, telling which CPU touched which page.
/// Linux scans 256 MB per period (`kernel.numa_balancing_scan_size_mb`), with a period between
/// 1 s and 60 s (`numa_balancing_scan_period_{min,max}_ms`; Documentation/admin-guide/sysctl/
/// kernel.rst).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HintingScan {
    pub scan_bytes: u64,
    pub period_ms: u64,
}

/// Samples a policy wants. The default asks for none, and a backend then pays nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingRequest {
    /// Instruction/memory-access sampling (IBS, PEBS): one sample per this many cycles per core.
    pub period_cycles: Option<u64>,
    /// Hinting-fault sampling.
    pub hinting: Option<HintingScan>,
    /// Ground truth (true access rates per block of pages). Only a simulator has it; only the
    /// oracle policy asks, to show how far a real policy is from the limit.
    #[serde(default)]
    pub truth: bool,
    /// Per-thread hardware counters (instructions, cycles, LLC misses): a live backend opens
    /// them only when asked, since counting costs the managed programs a little at every
    /// context switch. The simulator always counts.
    #[serde(default)]
    pub counters: bool,
    /// Exceptions to `period_cycles`, per process: a process listed is sampled at its own
    /// period, or not at all (`None`: its threads take no sampling interrupts). A policy that
    /// gains nothing for a program spares it the cost while it samples the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_process: Vec<(Pid, Option<u64>)>,
}

impl SamplingRequest {
    /// Nothing to sample.
    pub const NONE: SamplingRequest = SamplingRequest {
        period_cycles: None,
        hinting: None,
        truth: false,
        counters: false,
        by_process: Vec::new(),
    };

    /// Whether `pid` is listed as not sampled at all (a backend whose samples have no period,
    /// page faults, closes its events).
    pub fn left_out(&self, pid: Pid) -> bool {
        self.by_process
            .iter()
            .any(|&(p, period)| p == pid && period.is_none())
    }

    /// The sampling period of `pid`'s threads (`None`: not sampled).
    pub fn period_of(&self, pid: Pid) -> Option<u64> {
        self.by_process
            .iter()
            .find(|(p, _)| *p == pid)
            .map_or(self.period_cycles, |&(_, period)| period)
            .filter(|&p| p > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_listed_has_its_own_period_or_none() {
        let r = SamplingRequest {
            period_cycles: Some(65_000),
            by_process: vec![(Pid(1), None), (Pid(2), Some(260_000))],
            ..SamplingRequest::NONE
        };
        assert_eq!(r.period_of(Pid(1)), None);
        assert_eq!(r.period_of(Pid(2)), Some(260_000));
        assert_eq!(r.period_of(Pid(3)), Some(65_000));
        assert!(r.left_out(Pid(1)));
        assert!(!r.left_out(Pid(2)) && !r.left_out(Pid(3)));
        // Not listed, with no machine-wide period: unsampled but not left out (a backend
        // sampling page faults keeps its events).
        let faults = SamplingRequest::NONE;
        assert_eq!(faults.period_of(Pid(3)), None);
        assert!(!faults.left_out(Pid(3)));
    }
}
