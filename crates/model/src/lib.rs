//! rondpoint's vocabulary: the plain data that policies, the engine and both backends share.
//!
//! Nothing here does I/O. A policy sees an [`Observation`] and returns [`Action`]s; a backend
//! reports an [`Outcome`] per action. The [`topology`] module also holds the pure derivations
//! every consumer needs (hop classes, links and routes inferred from distances, fast/slow node
//! classes), so that the simulator and the live backend classify a machine the same way.

#![forbid(unsafe_code)]

pub mod action;
pub mod bounds;
pub mod capability;
pub mod counters;
pub mod cpulist;
pub mod draw;
pub mod gap_curve;
pub mod ids;
pub mod metrics;
pub mod observation;
pub mod overflow;
pub mod page;
pub mod reason;
pub mod sample;
pub mod sampling;
pub mod synthetic;
pub mod toml_error;
pub mod topology;

pub use action::{Action, MemPolicy, NodeList, Outcome, OutcomeStatus, PageCounts, ThreadCpu};
pub use capability::{Capabilities, Capability, Need, Support, Unmet};
pub use counters::{CounterGroup, Counters, Estimate, LinkCounters, NodeCounters, ThreadCounters};
pub use gap_curve::{CurveError, CurveMachine, CurvePoint, GapCurve};
pub use ids::{CpuId, NodeId, Pid, Tid};
pub use observation::{
    AccessTruth, Collapse, MappingPolicy, NodeMemory, Observation, PolicyMode, ProcessInfo,
    ThreadInfo,
};
pub use overflow::{NodeRoom, NodeTiers, OverflowSpread};
pub use page::{PageRange, PageSize};
pub use reason::{Explained, Reason};
pub use sample::{AccessKind, Sample, SampleSource};
pub use sampling::{HintingScan, SamplingRequest};
pub use topology::{
    Hmat, HmatPerf, Interconnect, InterconnectOrigin, Link, LlcDomain, Node, NodeClass, Route,
    Topology, TopologyError,
};
