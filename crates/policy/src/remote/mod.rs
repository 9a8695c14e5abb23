//! Remote placement under memory pressure \[Choe21\]: where the memory of a program whose local
//! node is full should go. Linux takes the next node of a static fallback list [Choe21
//! Figure 1], so every overflowing program piles its remote memory on the same neighbour.
//!
//! - `hybrid` (HY, [Choe21 §3.1]): first touch on the local node; once it is full, the
//!   overflow interleaved page by page over the remote nodes.
//! - `usage-aware` (UA, [Choe21 §3.2]): the overflow on the least-used remote node.
//! - `dm` ([Choe21 §4, §5.2]): AutoNUMA, plus periodic moves of a noisy tenant's pages from
//!   the busiest node to the least busy one ([`dm`](mod@dm)); allocation stays first-touch.
//! - `ua-dm`: usage-aware at allocation, `dm` to rebalance traffic after.
//!
//! AutoNUMA (dm's, and hybrid's or usage-aware's with `autonuma = true`) has one owner. On a
//! machine whose kernel balances by itself ([`Capability::KernelBalancing`]: live Linux with
//! kernel.numa_balancing 1 or 3) it is the kernel's: the policy still asks for hinting-fault
//! samples but makes no AutoNUMA moves of its own, which would act on the same faults a second
//! time. Elsewhere (the simulator) the policy runs Linux's rules ([`AutoNuma`]).
//!
//! Both placements use the nearest tier of remote nodes with room first ([Choe21 §7];
//! [`tiers`]). Where the machine can place overflow at allocation
//! ([`Capability::OverflowPlacement`]: the simulator, as an in-kernel policy would), the
//! policy sets [`MemPolicy::Overflow`] before the programs start; elsewhere (a live Linux
//! machine) it lets the kernel fall back and moves the overflow where the rule would have put
//! it (`reactive`). `mode` chooses; `auto` takes allocation where the machine has it.
//!
//! A process whose memory is bound by its user (`numactl --membind`, a scenario's `membind`:
//! an explicit bind policy on its mappings) is left alone by all of them: its placement is
//! what was asked for, not overflow to place (`user_placed`).

pub mod dm;
mod explain;
pub(crate) mod reactive;
pub mod tiers;

use crate::Policy;
use crate::autonuma::AutoNuma;
use dm::{DmConfig, Rebalancer};
use reactive::{Limits, Reactive};
use rondpoint_model::{
    Action, Capabilities, Capability, MemPolicy, Need, NodeId, NodeTiers, Observation,
    OverflowSpread, PolicyMode, ProcessInfo, Reason, SamplingRequest, Support, Topology,
};
use rondpoint_policy_api::Refusal;
use rondpoint_policy_api::bounds::{Bounds, FRACTION, MOVE_MIB, PERCENT, ParamBounds};
use serde::{Deserialize, Serialize};
use tiers::Grouping;

/// How a placement policy places overflow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// At allocation where the machine can ([`Capability::OverflowPlacement`]), reactively
    /// elsewhere.
    #[default]
    Auto,
    /// At allocation, as an in-kernel policy (refused on machines that cannot).
    Allocation,
    /// After allocation: the kernel's fallback, then page moves.
    Reactive,
}

impl Mode {
    /// Whether overflow is placed at allocation on a machine with `capabilities`.
    pub fn at_allocation(self, capabilities: &Capabilities) -> bool {
        match self {
            Mode::Allocation => true,
            Mode::Reactive => false,
            Mode::Auto => capabilities.support(Capability::OverflowPlacement) == Support::Full,
        }
    }
}

/// Which node usage-aware takes as least used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Usage {
    /// Fewest allocated bytes (total minus free).
    #[default]
    Allocated,
    /// Most free bytes.
    Free,
}

impl Usage {
    fn spread(self) -> OverflowSpread {
        match self {
            Usage::Allocated => OverflowSpread::FewestAllocated,
            Usage::Free => OverflowSpread::MostFree,
        }
    }
}

/// `[hybrid]` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HybridConfig {
    /// `auto`, `allocation` or `reactive` (see [`Mode`]). Default `auto`.
    pub mode: Mode,
    /// `distance` (tiers by distance, slower-tier nodes last) or `flat` (one tier). Default
    /// `distance` [Choe21 §7].
    pub tiers: Grouping,
    /// Also run Linux's automatic NUMA balancing at its defaults ([`AutoNuma`]; the kernel's
    /// own where it balances by itself), as the kernel of [Choe21 §5] did in every run.
    /// Default false: chosen, the policy alone.
    pub autonuma: bool,
    /// Reactive mode: most memory moved per epoch, over all processes (MiB). Default 512:
    /// chosen; 4.5 GiB of overflow placed within 10 s, under 3% of a DDR4 channel's bandwidth
    /// (xeon-6242-4s: 18.8 GB/s) at 1 s epochs.
    pub max_move_mib_per_epoch: u64,
    /// Reactive mode: smallest move made, and how far a placed overflow must grow before it is
    /// placed again (MiB). Default 64: chosen, 0.4% of a 16 GiB node, so that rounding never
    /// moves pages back and forth.
    pub min_move_mib: u64,
    /// Nodes never given overflow (node ids; default none: every remote node with room).
    /// `auto`'s overflow trial sets it to the nodes whose programs the placement slowed past
    /// its bound (docs/policies.md, "auto"); a user may keep overflow off a node kept for a
    /// latency-bound program.
    pub avoid_nodes: Vec<NodeId>,
}

impl Default for HybridConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Auto,
            tiers: Grouping::Distance,
            autonuma: false,
            max_move_mib_per_epoch: 512,
            min_move_mib: 64,
            avoid_nodes: Vec::new(),
        }
    }
}

/// `[usage-aware]` parameters: those of `[hybrid]`, and which usage counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UsageAwareConfig {
    /// `allocated` (fewest allocated bytes: [Choe21 §4, §5.1]) or `free` (most free bytes:
    /// [Choe21 §3.3]). Default `allocated`: the paper's implementation and evaluation count
    /// allocated pages, and allocated pages are what draws traffic to a controller, which is
    /// what usage-aware avoids; free pages measure capacity, and would send every overflow to
    /// the largest node (a CXL expander) however busy. Capacity is kept by never choosing a
    /// node without room.
    pub usage: Usage,
    /// As `[hybrid]`'s.
    pub mode: Mode,
    /// As `[hybrid]`'s.
    pub tiers: Grouping,
    /// As `[hybrid]`'s.
    pub autonuma: bool,
    /// As `[hybrid]`'s.
    pub max_move_mib_per_epoch: u64,
    /// As `[hybrid]`'s.
    pub min_move_mib: u64,
    /// As `[hybrid]`'s.
    pub avoid_nodes: Vec<NodeId>,
}

impl Default for UsageAwareConfig {
    fn default() -> Self {
        let h = HybridConfig::default();
        Self {
            usage: Usage::Allocated,
            mode: h.mode,
            tiers: h.tiers,
            autonuma: h.autonuma,
            max_move_mib_per_epoch: h.max_move_mib_per_epoch,
            min_move_mib: h.min_move_mib,
            avoid_nodes: h.avoid_nodes,
        }
    }
}

/// `[ua-dm]` parameters: usage-aware's (AutoNUMA always runs), and `dm`'s in `[ua-dm.dm]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UaDmConfig {
    /// As `[usage-aware]`'s.
    pub usage: Usage,
    /// As `[hybrid]`'s.
    pub mode: Mode,
    /// As `[hybrid]`'s.
    pub tiers: Grouping,
    /// As `[hybrid]`'s.
    pub max_move_mib_per_epoch: u64,
    /// As `[hybrid]`'s.
    pub min_move_mib: u64,
    /// As `[hybrid]`'s.
    pub avoid_nodes: Vec<NodeId>,
    /// The rebalancing's parameters.
    pub dm: DmConfig,
}

impl Default for UaDmConfig {
    fn default() -> Self {
        let u = UsageAwareConfig::default();
        Self {
            usage: u.usage,
            mode: u.mode,
            tiers: u.tiers,
            max_move_mib_per_epoch: u.max_move_mib_per_epoch,
            min_move_mib: u.min_move_mib,
            avoid_nodes: u.avoid_nodes,
            dm: DmConfig::default(),
        }
    }
}

/// The placement part: the rule, the tiers, and how it is carried out.
#[derive(Clone, Debug)]
struct Placement {
    spread: OverflowSpread,
    grouping: Grouping,
    mode: Mode,
    /// Whether allocation mode was chosen (set by `configure`; for `auto` until then, false).
    at_allocation: bool,
    limits: Limits,
    reactive: Reactive,
    /// Nodes never given overflow.
    avoid: Vec<NodeId>,
    /// The tiers of every CPU node, without the nodes avoided, built once from the topology.
    tiers: Option<Vec<NodeTiers>>,
}

impl Placement {
    fn new(
        spread: OverflowSpread,
        grouping: Grouping,
        mode: Mode,
        move_mib: (u64, u64),
        avoid: Vec<NodeId>,
    ) -> Self {
        Self {
            spread,
            grouping,
            mode,
            at_allocation: mode == Mode::Allocation,
            limits: Limits::from_mib(move_mib.0, move_mib.1),
            reactive: Reactive::default(),
            avoid,
            tiers: None,
        }
    }

    fn needs(&self) -> Need {
        let why = "to place the memory of a program whose node is full where the policy wants \
                   it: at allocation, or by moving it there after";
        match self.mode {
            Mode::Auto => Need::any(
                &[Capability::OverflowPlacement, Capability::MigratePages],
                why,
            ),
            Mode::Allocation => Need::one(
                Capability::OverflowPlacement,
                "to place overflow at allocation (mode = \"allocation\")",
            ),
            Mode::Reactive => Need::one(
                Capability::MigratePages,
                "to move overflow off the kernel's fallback node (mode = \"reactive\")",
            ),
        }
    }

    fn tiers(&mut self, topology: &Topology) -> &[NodeTiers] {
        let avoid = &self.avoid;
        self.tiers.get_or_insert_with(|| {
            let mut all = tiers::all_tiers(topology, self.grouping);
            for t in &mut all {
                for tier in &mut t.tiers {
                    tier.retain(|id| !avoid.contains(id));
                }
                t.tiers.retain(|tier| !tier.is_empty());
            }
            all
        })
    }

    /// Why the nodes to avoid cannot be, if they cannot: one the machine does not have.
    fn check_avoid(&self, name: &str, topology: &Topology) -> Result<(), Refusal> {
        match self
            .avoid
            .iter()
            .find(|id| topology.index_of(**id).is_none())
        {
            Some(id) => Err(Refusal(format!(
                "{name}: avoid_nodes names node {}, which this machine does not have",
                id.0
            ))),
            None => Ok(()),
        }
    }
}

/// A remote-placement policy: a placement, dynamic migration, or both, with or without
/// AutoNUMA beside.
#[derive(Clone, Debug)]
pub struct RemotePlacement {
    name: &'static str,
    placement: Option<Placement>,
    rebalancer: Option<Rebalancer>,
    autonuma: Option<AutoNuma>,
    /// Whether the machine's kernel balances by itself ([`Capability::KernelBalancing`], set
    /// by `configure`): AutoNUMA is then the kernel's alone, and `autonuma` only asks for its
    /// hinting-fault samples (from which a live machine estimates the traffic dm reads).
    kernel_balances: bool,
    /// Why the last start's or decision's actions were taken (asked once, then cleared).
    reasons: Vec<Reason>,
}

/// `hybrid`.
pub fn hybrid(c: HybridConfig) -> RemotePlacement {
    RemotePlacement {
        name: "hybrid",
        placement: Some(Placement::new(
            OverflowSpread::Interleave,
            c.tiers,
            c.mode,
            (c.max_move_mib_per_epoch, c.min_move_mib),
            c.avoid_nodes,
        )),
        rebalancer: None,
        autonuma: c.autonuma.then(linux_autonuma),
        kernel_balances: false,
        reasons: Vec::new(),
    }
}

/// `usage-aware`.
pub(crate) fn usage_aware(c: UsageAwareConfig) -> RemotePlacement {
    RemotePlacement {
        name: "usage-aware",
        placement: Some(Placement::new(
            c.usage.spread(),
            c.tiers,
            c.mode,
            (c.max_move_mib_per_epoch, c.min_move_mib),
            c.avoid_nodes,
        )),
        rebalancer: None,
        autonuma: c.autonuma.then(linux_autonuma),
        kernel_balances: false,
        reasons: Vec::new(),
    }
}

/// `dm`.
pub fn dm(c: DmConfig) -> RemotePlacement {
    RemotePlacement {
        name: "dm",
        placement: None,
        rebalancer: Some(Rebalancer::new(c)),
        autonuma: Some(linux_autonuma()),
        kernel_balances: false,
        reasons: Vec::new(),
    }
}

/// `ua-dm`.
pub(crate) fn ua_dm(c: UaDmConfig) -> RemotePlacement {
    RemotePlacement {
        name: "ua-dm",
        placement: Some(Placement::new(
            c.usage.spread(),
            c.tiers,
            c.mode,
            (c.max_move_mib_per_epoch, c.min_move_mib),
            c.avoid_nodes,
        )),
        rebalancer: Some(Rebalancer::new(c.dm)),
        autonuma: Some(linux_autonuma()),
        kernel_balances: false,
        reasons: Vec::new(),
    }
}

/// Whether the user bound a process's memory (an explicit bind policy on any of its
/// mappings): remote placement never overrides it.
pub(crate) fn user_placed(p: &ProcessInfo) -> bool {
    p.mapping_policies
        .iter()
        .any(|m| m.mode == PolicyMode::Bind)
}

/// Linux's automatic NUMA balancing at its defaults.
fn linux_autonuma() -> AutoNuma {
    AutoNuma::linux_defaults()
}

impl RemotePlacement {
    /// Whether overflow is placed at allocation (after `configure`).
    #[cfg(test)]
    pub(crate) fn places_at_allocation(&self) -> bool {
        self.placement.as_ref().is_some_and(|p| p.at_allocation)
    }
}

impl Policy for RemotePlacement {
    fn name(&self) -> &str {
        self.name
    }

    fn needs(&self) -> Vec<Need> {
        let mut needs: Vec<Need> = self.placement.iter().map(Placement::needs).collect();
        if self.rebalancer.is_some() {
            needs.push(Need::one(
                Capability::NodeTraffic,
                "to find the busiest and least busy memory controllers",
            ));
            needs.push(Need::one(
                Capability::MigratePages,
                "to move pages from the busiest node to the least busy",
            ));
        }
        if let Some(a) = &self.autonuma {
            needs.push(Need::any(
                &[Capability::KernelBalancing, Capability::FaultSamples],
                "to run Linux's automatic NUMA balancing beside, as the kernel of [Choe21 §5] \
                 did: the machine's own, or its rules on hinting-fault samples",
            ));
            let own = |n: &Need| n.any_of != [Capability::FaultSamples];
            needs.extend(a.needs().into_iter().filter(own));
        }
        needs
    }

    fn accepts(&mut self, topology: &Topology, _: &[ProcessInfo]) -> Result<(), Refusal> {
        match &self.placement {
            Some(p) => p.check_avoid(self.name, topology),
            None => Ok(()),
        }
    }

    fn configure(&mut self, capabilities: &Capabilities) {
        self.kernel_balances = self.autonuma.is_some()
            && capabilities
                .support(Capability::KernelBalancing)
                .is_available();
        if let Some(p) = &mut self.placement {
            p.at_allocation = p.mode.at_allocation(capabilities);
        }
    }

    fn start(&mut self, topology: &Topology, processes: &[ProcessInfo]) -> Vec<Action> {
        let Some(p) = self.placement.as_mut().filter(|p| p.at_allocation) else {
            return Vec::new();
        };
        let spread = p.spread;
        let tiers = p.tiers(topology).to_vec();
        let actions: Vec<Action> = processes
            .iter()
            .filter(|x| !user_placed(x))
            .map(|x| Action::SetMemPolicy {
                pid: x.pid,
                policy: MemPolicy::Overflow {
                    spread,
                    tiers: tiers.clone(),
                },
            })
            .collect();
        self.reasons = vec![explain::at_allocation(
            self.name,
            actions.len(),
            spread,
            &tiers,
        )];
        actions
    }

    fn decide(&mut self, topology: &Topology, observation: &Observation) -> Vec<Action> {
        // AutoNUMA's page moves and task pins, unless the kernel makes them itself: both would
        // act on the same hinting faults, the kernel's at the fault and these an epoch later.
        let mut actions = match &mut self.autonuma {
            Some(a) if !self.kernel_balances => a.decide(topology, observation),
            _ => Vec::new(),
        };
        let autonuma = actions.len();
        let mut spread = None;
        if let Some(p) = self.placement.as_mut().filter(|p| !p.at_allocation) {
            let limits = p.limits;
            spread = Some(p.spread);
            let tiers = p.tiers(topology).to_vec();
            actions.extend(
                p.reactive
                    .plan(topology, observation, p.spread, &tiers, limits),
            );
        }
        let overflow = actions.len() - autonuma;
        if let Some(r) = &mut self.rebalancer {
            let placement = self.placement.as_ref();
            let bound: Vec<_> = observation
                .processes
                .iter()
                .filter(|p| user_placed(p))
                .map(|p| p.pid)
                .collect();
            let busy = |pid| {
                bound.contains(&pid)
                    || placement.is_some_and(|p| !p.at_allocation && !p.reactive.is_settled(pid))
            };
            actions.extend(r.decide(topology, observation, busy));
        }
        let counts = (autonuma, overflow, actions.len() - autonuma - overflow);
        self.reasons = explain::decided(self.name, observation, counts, spread);
        actions
    }

    fn reasons(&mut self) -> Vec<Reason> {
        std::mem::take(&mut self.reasons)
    }

    fn sampling(&self) -> SamplingRequest {
        self.autonuma
            .as_ref()
            .map_or(SamplingRequest::NONE, AutoNuma::sampling)
    }

    fn notes(&self) -> Vec<String> {
        if self.kernel_balances {
            vec![
                "AutoNUMA was the machine's kernel's own (kernel-balancing): its page moves and \
                 task moves were left to it, not made a second time by the policy"
                    .into(),
            ]
        } else {
            Vec::new()
        }
    }
}

/// The range of each parameter of hybrid and usage-aware ([`HybridConfig`], [`UsageAwareConfig`]).
pub const HYBRID_BOUNDS: &[ParamBounds] = &[
    ("max_move_mib_per_epoch", MOVE_MIB),
    ("min_move_mib", Bounds::new(0.0, 1_048_576.0, "MiB")),
];

/// The range of each parameter of ua-dm ([`UaDmConfig`]).
pub const UA_DM_BOUNDS: &[ParamBounds] = &[
    ("max_move_mib_per_epoch", MOVE_MIB),
    ("min_move_mib", Bounds::new(0.0, 1_048_576.0, "MiB")),
    ("dm.period_epochs", Bounds::new(1.0, 1e6, "epochs")),
    ("dm.imbalance_pct", PERCENT),
    ("dm.min_remote_share", FRACTION),
    ("dm.batch_mib", MOVE_MIB),
    ("dm.max_utilisation", FRACTION),
    ("dm.watermark_scale_factor", dm::WATERMARK_SCALE),
];

#[cfg(test)]
mod tests;
