//! What a policy sees of the machine over one epoch, and nothing more.

use crate::counters::Counters;
use crate::ids::{CpuId, NodeId, Pid, Tid};
use crate::page::PageRange;
use crate::sample::Sample;
use serde::{Deserialize, Serialize};

/// Memory of one node at the end of an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeMemory {
    pub node: NodeId,
    pub total_bytes: u64,
    pub free_bytes: u64,
}

/// A thread of a managed process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    pub tid: Tid,
    /// The CPU it last ran on.
    pub cpu: CpuId,
    /// The node of that CPU.
    pub node: NodeId,
    /// CPUs it may run on.
    pub allowed_cpus: Vec<CpuId>,
}

/// A managed process (an application, in the papers' words).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: Pid,
    /// Command name.
    pub comm: String,
    pub threads: Vec<ThreadInfo>,
    /// Resident bytes per node, indexed like [`crate::Topology::nodes`].
    pub resident_bytes_by_node: Vec<u64>,
    /// Its mappings under an explicit memory policy, by address; mappings under the default
    /// (first-touch) policy are not listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mapping_policies: Vec<MappingPolicy>,
}

/// A memory policy mode as mbind(2) and set_mempolicy(2) know them (`mpol_to_str`'s names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyMode {
    /// MPOL_PREFERRED: one preferred node.
    Prefer,
    Bind,
    Interleave,
    /// MPOL_WEIGHTED_INTERLEAVE (Linux 6.9).
    WeightedInterleave,
    /// MPOL_LOCAL: the node of the allocating CPU (set explicitly, unlike the default).
    Local,
    /// MPOL_PREFERRED_MANY (Linux 5.15).
    PreferMany,
}

/// A range of a process's address space under an explicit memory policy (its own, from
/// mbind(2), or the process's, from set_mempolicy(2)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MappingPolicy {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    pub mode: PolicyMode,
    /// The policy's nodes (empty for [`PolicyMode::Local`]).
    pub nodes: Vec<NodeId>,
    /// Set with MPOL_F_NUMA_BALANCING (Linux 5.12, `=balancing` in numa_maps): NUMA balancing
    /// may still move the pages, within `nodes`.
    pub numa_balancing: bool,
}

impl MappingPolicy {
    /// Whether NUMA balancing may migrate a page of this range to `node` on a hinting fault
    /// from it: Linux's `mpol_misplaced` acts only on policies with MPOL_F_MOF, which the
    /// default policy has and a user's policy gets only from MPOL_F_NUMA_BALANCING (bind, and
    /// preferred-many on kernels that accept the flag for it), and then only toward a faulting
    /// node within the policy's nodes (mm/mempolicy.c, `sanitize_mpol_flags` and `mpol_misplaced`).
    pub fn allows_fault_migration_to(&self, node: NodeId) -> bool {
        self.numa_balancing
            && matches!(self.mode, PolicyMode::Bind | PolicyMode::PreferMany)
            && self.nodes.contains(&node)
    }
}

impl ProcessInfo {
    /// The explicit policy covering `addr`, if any (`mapping_policies` sorted by start).
    pub fn policy_at(&self, addr: u64) -> Option<&MappingPolicy> {
        let i = self.mapping_policies.partition_point(|m| m.start <= addr);
        let m = self.mapping_policies.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }
}

/// Replicated pages that collapsed to one copy during the epoch, `count` times each (writes
/// forced it), as a machine that replicates reports them. Replications that were never made
/// are told to the policy through their outcomes instead (`Policy::outcomes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collapse {
    pub page: PageRange,
    pub count: u32,
}

/// The true access rates to a block of pages, per accessing node. Given only by a simulator,
/// and only when the policy asks ([`crate::SamplingRequest::truth`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessTruth {
    pub range: PageRange,
    /// DRAM accesses per second to the block from CPUs of each node (dense node index).
    pub accesses_per_s_by_node: Vec<f64>,
    /// Share of those accesses that are writes.
    pub write_fraction: f64,
    /// Pages of the block on each node (dense node index; replicas count on each node).
    pub pages_by_node: Vec<u64>,
}

/// One epoch's view of the machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Epoch number, from 0.
    pub epoch: u64,
    /// Time at the start of the epoch (ns since the run began; virtual in the simulator).
    pub start_ns: u64,
    pub counters: Counters,
    pub samples: Vec<Sample>,
    pub memory: Vec<NodeMemory>,
    pub processes: Vec<ProcessInfo>,
    /// Replica collapses seen this epoch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collapses: Vec<Collapse>,
    /// Ground truth, for the oracle only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth: Option<Vec<AccessTruth>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(start: u64, end: u64, mode: PolicyMode, balancing: bool) -> MappingPolicy {
        MappingPolicy {
            start,
            end,
            mode,
            nodes: vec![NodeId(1), NodeId(2)],
            numa_balancing: balancing,
        }
    }

    #[test]
    fn policy_lookup_by_address() {
        let p = ProcessInfo {
            pid: Pid(1),
            comm: "x".into(),
            threads: vec![],
            resident_bytes_by_node: vec![],
            mapping_policies: vec![
                mapping(0x1000, 0x3000, PolicyMode::Bind, false),
                mapping(0x5000, 0x6000, PolicyMode::Interleave, false),
            ],
        };
        assert_eq!(p.policy_at(0xfff), None);
        assert_eq!(p.policy_at(0x1000).map(|m| m.mode), Some(PolicyMode::Bind));
        assert_eq!(p.policy_at(0x2fff).map(|m| m.mode), Some(PolicyMode::Bind));
        assert_eq!(p.policy_at(0x3000), None);
        assert_eq!(
            p.policy_at(0x5800).map(|m| m.mode),
            Some(PolicyMode::Interleave)
        );
        assert_eq!(p.policy_at(u64::MAX), None);
    }

    #[test]
    fn only_balancing_bind_lets_faults_migrate_and_only_within_its_nodes() {
        assert!(!mapping(0, 1, PolicyMode::Bind, false).allows_fault_migration_to(NodeId(1)));
        let b = mapping(0, 1, PolicyMode::Bind, true);
        assert!(b.allows_fault_migration_to(NodeId(2)));
        assert!(!b.allows_fault_migration_to(NodeId(0)));
        assert!(mapping(0, 1, PolicyMode::PreferMany, true).allows_fault_migration_to(NodeId(1)));
        for mode in [
            PolicyMode::Interleave,
            PolicyMode::Prefer,
            PolicyMode::Local,
        ] {
            assert!(!mapping(0, 1, mode, true).allows_fault_migration_to(NodeId(1)));
        }
    }
}
