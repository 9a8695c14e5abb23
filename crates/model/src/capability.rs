//! What a machine can observe and do, and what a policy needs of it.
//!
//! A backend declares its [`Capabilities`]: for each [`Capability`], whether it provides it in
//! full, only as an estimate (an observation) or a substitute (an action), or not at all, with
//! the reason in words a user can act on ("perf_event_open: ENOENT for PERF_TYPE_HARDWARE").
//! A policy declares its [`Need`]s. [`Capabilities::check`] matches the two before anything
//! runs, so that a policy whose signals the machine lacks is refused with a message naming
//! them, never run on zeros.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Something a machine may be able to observe or do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Capability {
    /// Instructions, cycles and last-level-cache misses per thread, counted by hardware
    /// (`Counters::threads`: MPKI, IPC).
    ThreadCounters,
    /// DRAM accesses per thread (`ThreadCounters::dram_accesses`: MAPI, MAPTU).
    ThreadDram,
    /// DRAM traffic served by each memory controller, by source node
    /// (`NodeCounters::dram_accesses_by_source`: controller imbalance, local access ratio).
    NodeTraffic,
    /// Traffic over each interconnect link (`Counters::links`).
    LinkTraffic,
    /// Memory-access samples with address and accessing CPU at a period the policy chooses
    /// (AMD IBS, Intel PEBS, the simulator's sampler).
    AccessSamples,
    /// NUMA hinting-fault samples from a scan the policy sets (and first-touch faults).
    FaultSamples,
    /// True access rates per block of pages (a simulator only).
    Truth,
    /// Move pages of a running process to a node.
    MigratePages,
    /// Spread pages of a running process round-robin over nodes.
    InterleavePages,
    /// Keep read-only copies of pages on several nodes.
    ReplicatePages,
    /// Restrict a thread to a set of CPUs.
    PinThreads,
    /// Move every thread of a process to a node, with or without its pages.
    MoveApplications,
    /// Allocation policies for a process's future allocations: bind, interleave,
    /// preferred-many (set when the machine launches the program).
    MemPolicies,
    /// Weighted interleave with the weights a policy gives (MPOL_WEIGHTED_INTERLEAVE).
    WeightedInterleave,
    /// Allocation-time spreading of a process's overflow over remote nodes once its local node
    /// is full ([`crate::MemPolicy::Overflow`]): an in-kernel allocation policy [Choe21 §3],
    /// which Linux does not have.
    OverflowPlacement,
    /// The machine's kernel balances memory by itself: Linux's automatic NUMA balancing
    /// migrates pages on hinting faults and moves tasks toward their memory. A policy that would
    /// run Linux's rules beside its own leaves them to the kernel rather than doing them twice
    /// (a simulated machine has no such kernel: policies run the rules themselves).
    KernelBalancing,
}

impl Capability {
    /// Every capability, in the order reports list them.
    pub const ALL: [Capability; 16] = [
        Capability::ThreadCounters,
        Capability::ThreadDram,
        Capability::NodeTraffic,
        Capability::LinkTraffic,
        Capability::AccessSamples,
        Capability::FaultSamples,
        Capability::Truth,
        Capability::MigratePages,
        Capability::InterleavePages,
        Capability::ReplicatePages,
        Capability::PinThreads,
        Capability::MoveApplications,
        Capability::MemPolicies,
        Capability::WeightedInterleave,
        Capability::OverflowPlacement,
        Capability::KernelBalancing,
    ];

    /// The name used in messages and JSON ("thread-counters").
    pub fn name(self) -> &'static str {
        match self {
            Capability::ThreadCounters => "thread-counters",
            Capability::ThreadDram => "thread-dram",
            Capability::NodeTraffic => "node-traffic",
            Capability::LinkTraffic => "link-traffic",
            Capability::AccessSamples => "access-samples",
            Capability::FaultSamples => "fault-samples",
            Capability::Truth => "truth",
            Capability::MigratePages => "migrate-pages",
            Capability::InterleavePages => "interleave-pages",
            Capability::ReplicatePages => "replicate-pages",
            Capability::PinThreads => "pin-threads",
            Capability::MoveApplications => "move-applications",
            Capability::MemPolicies => "mem-policies",
            Capability::WeightedInterleave => "weighted-interleave",
            Capability::OverflowPlacement => "overflow-placement",
            Capability::KernelBalancing => "kernel-balancing",
        }
    }

    /// What it is, in a few words for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Capability::ThreadCounters => "per-thread instructions, cycles and LLC misses",
            Capability::ThreadDram => "per-thread DRAM accesses",
            Capability::NodeTraffic => "per-node memory-controller traffic",
            Capability::LinkTraffic => "per-link interconnect traffic",
            Capability::AccessSamples => "memory-access samples (IBS, PEBS, SPE)",
            Capability::FaultSamples => "NUMA hinting-fault samples",
            Capability::Truth => "true access rates (simulator only)",
            Capability::MigratePages => "page migration",
            Capability::InterleavePages => "interleaving of existing pages",
            Capability::ReplicatePages => "page replication",
            Capability::PinThreads => "thread pinning",
            Capability::MoveApplications => "moving applications with their pages",
            Capability::MemPolicies => "allocation policies (bind, interleave, preferred-many)",
            Capability::WeightedInterleave => "weighted interleave with chosen weights",
            Capability::OverflowPlacement => {
                "allocation-time spreading of overflow memory (an in-kernel policy)"
            }
            Capability::KernelBalancing => "the kernel's own automatic NUMA balancing",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How far a machine provides a capability.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "support", content = "how", rename_all = "kebab-case")]
pub enum Support {
    /// Measured or done as asked.
    Full,
    /// An observation the machine can only estimate, and how (reports say so).
    Estimated(String),
    /// An action the machine carries out another way, and how (its outcomes are
    /// `Substituted`).
    Substituted(String),
    /// Not available, and why.
    Missing(String),
}

impl Support {
    /// Whether there is something at all (full, estimated or substituted).
    pub fn is_available(&self) -> bool {
        !matches!(self, Support::Missing(_))
    }
}

/// What a machine can observe and do. A capability it does not list is missing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    support: BTreeMap<Capability, Support>,
}

impl Capabilities {
    /// None at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// Every capability in full (test machines).
    pub fn all() -> Self {
        let mut c = Self::none();
        for cap in Capability::ALL {
            c.set(cap, Support::Full);
        }
        c
    }

    /// A simulated machine's: every capability in full but [`Capability::KernelBalancing`],
    /// since the simulated kernel balances nothing by itself (a policy that wants Linux's
    /// automatic NUMA balancing runs its rules).
    pub fn simulated() -> Self {
        Self::all().with(
            Capability::KernelBalancing,
            Support::Missing(
                "the simulated kernel does not balance memory by itself: policies run Linux's \
                 rules (the autonuma policy's) instead"
                    .into(),
            ),
        )
    }

    /// Sets how one capability is provided.
    pub fn set(&mut self, cap: Capability, support: Support) -> &mut Self {
        self.support.insert(cap, support);
        self
    }

    /// With one capability set (builder style).
    pub fn with(mut self, cap: Capability, support: Support) -> Self {
        self.set(cap, support);
        self
    }

    /// How a capability is provided (missing, with a generic reason, when not listed).
    pub fn support(&self, cap: Capability) -> Support {
        self.support
            .get(&cap)
            .cloned()
            .unwrap_or_else(|| Support::Missing("this machine does not provide it".into()))
    }

    /// Every capability with its support, in [`Capability::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Capability, Support)> + '_ {
        Capability::ALL.into_iter().map(|c| (c, self.support(c)))
    }

    /// Matches a policy's needs against the machine: the reduced-mode notes (what is
    /// estimated or substituted, and for which need) when every need is met, or the unmet
    /// needs, each with why the policy needs it and why the machine lacks it.
    pub fn check(&self, policy: &str, needs: &[Need]) -> Result<Vec<String>, Unmet> {
        let mut notes = Vec::new();
        let mut unmet = Vec::new();
        for need in needs {
            let offers: Vec<(Capability, Support)> =
                need.any_of.iter().map(|&c| (c, self.support(c))).collect();
            if offers.iter().any(|(_, s)| *s == Support::Full) {
                continue;
            }
            let usable = offers.iter().find(|(_, s)| s.is_available() && !need.exact);
            match usable {
                Some((cap, Support::Estimated(how) | Support::Substituted(how))) => {
                    notes.push(format!("{policy}: {} ({cap}): {how}", need.why));
                }
                _ => unmet.push(UnmetNeed {
                    why: need.why.to_string(),
                    offers,
                    exact: need.exact,
                }),
            }
        }
        if unmet.is_empty() {
            Ok(notes)
        } else {
            Err(Unmet {
                policy: policy.to_string(),
                needs: unmet,
            })
        }
    }
}

/// Something a policy needs of the machine: one of `any_of` (in the policy's order of
/// preference), for the reason `why`. An `exact` need accepts only full support; otherwise an
/// estimate or a substitute will do, and the run says so.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Need {
    pub any_of: Vec<Capability>,
    pub why: &'static str,
    pub exact: bool,
}

impl Need {
    /// One capability, estimates and substitutes accepted.
    pub fn one(cap: Capability, why: &'static str) -> Self {
        Self {
            any_of: vec![cap],
            why,
            exact: false,
        }
    }

    /// One of several capabilities, estimates and substitutes accepted.
    pub fn any(caps: &[Capability], why: &'static str) -> Self {
        Self {
            any_of: caps.to_vec(),
            why,
            exact: false,
        }
    }

    /// The same, accepting only full support.
    pub fn exactly(self) -> Self {
        Self {
            exact: true,
            ..self
        }
    }
}

/// A need the machine does not meet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmetNeed {
    pub why: String,
    /// What the machine offers for each capability that would have met it.
    pub offers: Vec<(Capability, Support)>,
    pub exact: bool,
}

/// The needs of a policy that a machine does not meet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Unmet {
    pub policy: String,
    pub needs: Vec<UnmetNeed>,
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} cannot run on this machine:", self.policy)?;
        for (i, need) in self.needs.iter().enumerate() {
            let caps: Vec<String> = need
                .offers
                .iter()
                .map(|(c, _)| format!("{} ({c})", c.describe()))
                .collect();
            write!(
                f,
                "{} it needs {} {}; this machine: ",
                if i == 0 { "" } else { ";" },
                caps.join(" or "),
                need.why
            )?;
            let why: Vec<String> = need
                .offers
                .iter()
                .map(|(c, s)| match s {
                    Support::Missing(why) => format!("{c}: {why}"),
                    Support::Estimated(how) | Support::Substituted(how) => {
                        format!("{c}: only approximated ({how}), and the policy needs it exact")
                    }
                    Support::Full => format!("{c}: available"),
                })
                .collect();
            f.write_str(&why.join("; "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters_need() -> Need {
        Need::one(Capability::ThreadCounters, "to compute each process's MPKI").exactly()
    }

    #[test]
    fn full_support_meets_every_need_without_notes() {
        let c = Capabilities::all();
        assert_eq!(c.check("n-mass", &[counters_need()]), Ok(vec![]));
    }

    #[test]
    fn a_missing_capability_is_named_with_both_reasons() {
        let c = Capabilities::none().with(
            Capability::ThreadCounters,
            Support::Missing("perf_event_open: ENOENT for PERF_TYPE_HARDWARE".into()),
        );
        let err = c.check("n-mass", &[counters_need()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "n-mass cannot run on this machine: it needs per-thread instructions, cycles and LLC \
             misses (thread-counters) to compute each process's MPKI; this machine: \
             thread-counters: perf_event_open: ENOENT for PERF_TYPE_HARDWARE"
        );
    }

    #[test]
    fn an_estimate_meets_a_lenient_need_with_a_note_and_not_an_exact_one() {
        let c = Capabilities::none().with(
            Capability::NodeTraffic,
            Support::Estimated("from page-fault samples".into()),
        );
        let lenient = Need::one(Capability::NodeTraffic, "for controller imbalance");
        assert_eq!(
            c.check("carrefour", std::slice::from_ref(&lenient)),
            Ok(vec![
                "carrefour: for controller imbalance (node-traffic): from page-fault samples"
                    .to_string()
            ])
        );
        let err = c.check("x", &[lenient.exactly()]).unwrap_err().to_string();
        assert!(err.contains("only approximated"), "{err}");
    }

    #[test]
    fn alternatives_take_the_first_full_one_or_else_a_usable_one() {
        let need = Need::any(
            &[Capability::AccessSamples, Capability::FaultSamples],
            "to see which node touches which page",
        );
        let faults = Capabilities::none().with(Capability::FaultSamples, Support::Full);
        assert_eq!(
            faults.check("carrefour", std::slice::from_ref(&need)),
            Ok(vec![])
        );
        let err = Capabilities::none()
            .check("carrefour", &[need])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("access-samples: this machine does not provide it; fault-samples:"),
            "{err}"
        );
    }

    #[test]
    fn capabilities_serialise_by_name() {
        let c = Capabilities::none().with(
            Capability::ReplicatePages,
            Support::Substituted("interleaved over the readers".into()),
        );
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(
            json,
            r#"{"support":{"replicate-pages":{"support":"substituted","how":"interleaved over the readers"}}}"#
        );
        assert_eq!(serde_json::from_str::<Capabilities>(&json).unwrap(), c);
        assert_eq!(Capability::ALL.len(), Capabilities::all().iter().count());
        // A simulated machine has everything but a kernel that balances by itself.
        let sim = Capabilities::simulated();
        for (cap, support) in sim.iter() {
            assert_eq!(support.is_available(), cap != Capability::KernelBalancing);
        }
    }
}
