//! The accepted range of every number in a machine preset and a scenario, checked before
//! anything is built from them (a typing slip must be refused, not allocate the host's memory
//! or spin for hours). Structural checks (a node that does not exist, a pattern without its
//! parameter) stay where the structure is built.

use crate::machine_preset::{LatencyModel, MachinePreset};
use crate::param::Param;
use crate::scenario::{AppSpec, RegionSpec, Scenario, ThreadCount};
use rondpoint_model::bounds::Invalid;
use rondpoint_model::bounds::{Bounds, MAX_CPUS, MAX_NODES, OutOfBounds};

/// Machine presets.
pub mod machine {
    use super::*;

    pub const NODES: Bounds = Bounds::new(1.0, MAX_NODES as f64, "nodes");
    pub const CORES_PER_NODE: Bounds = Bounds::new(0.0, MAX_CPUS as f64, "cores");
    pub const LLCS_PER_NODE: Bounds = Bounds::new(0.0, MAX_CPUS as f64, "LLCs");
    /// Clock: from a slow embedded core to past any shipping server part.
    pub const FREQ_GHZ: Bounds = Bounds::new(0.1, 10.0, "GHz");
    /// Last-level cache: 1 KiB to 16 GiB.
    pub const LLC_BYTES: Bounds = Bounds::new(1024.0, 17_179_869_184.0, "bytes");
    /// Memory of a node: none (a CPU-only node) to 1 PiB.
    pub const MEM_BYTES: Bounds = Bounds::new(0.0, 1_125_899_906_842_624.0, "bytes");
    /// A memory controller's or a link's bandwidth: 1 MB/s to 100 TB/s.
    pub const BANDWIDTH_GBS: Bounds = Bounds::new(0.001, 100_000.0, "GB/s");
    /// Latency of a memory access or a hop: up to a millisecond (far past CXL's microsecond).
    pub const LATENCY_NS: Bounds = Bounds::new(1.0, 1_000_000.0, "ns");
    pub const HOP_NS: Bounds = Bounds::new(0.0, 1_000_000.0, "ns");
    /// Mechanism costs (page migration, interrupts, faults, collapses): up to a second.
    pub const COST_US: Bounds = Bounds::new(0.0, 1_000_000.0, "us");
    /// SLIT distances (the kernel's are one byte).
    pub const DISTANCE: Bounds = Bounds::new(1.0, 255.0, "");
}

/// Scenarios.
pub mod scenario {
    use super::*;

    pub const THREADS: Bounds = Bounds::new(1.0, MAX_CPUS as f64, "threads");
    /// Instructions per thread: a day's work of a 10-GHz core at one instruction a cycle.
    pub const INSTRUCTIONS: Bounds = Bounds::new(1.0, 1e15, "instructions");
    pub const CPI_BASE: Bounds = Bounds::new(0.01, 1000.0, "cycles per instruction");
    pub const MLP: Bounds = Bounds::new(0.01, 1000.0, "misses in flight");
    pub const MPKI: Bounds = Bounds::new(0.0, 1000.0, "misses per thousand instructions");
    pub const MRC_REF_BYTES: Bounds = Bounds::new(1.0, 17_179_869_184.0, "bytes");
    pub const MRC_ALPHA: Bounds = Bounds::new(0.0, 10.0, "");
    pub const START_S: Bounds = Bounds::new(0.0, 1e6, "s");
    /// A region: up to 1 PiB (the machine's memory is checked against the sum after).
    pub const SIZE_MIB: Bounds = Bounds::new(1e-6, 1_073_741_824.0, "MiB");
    pub const SHARE: Bounds = Bounds::new(0.0, 1e6, "");
    pub const FRACTION: Bounds = Bounds::new(0.0, 1.0, "");
    pub const ZIPF_S: Bounds = Bounds::new(0.0, 10.0, "");
    pub const MPKI_SCALE: Bounds = Bounds::new(0.0, 1000.0, "");
    /// Pages the simulator tracks over all applications: one byte of state each, so at most
    /// 256 MiB of the host's memory (1 TiB of 4-KiB pages; 2-MiB pages count once).
    pub const PAGES: Bounds = Bounds::new(0.0, 268_435_456.0, "pages");
}

fn p<T: Copy + Into<f64>>(b: &Bounds, what: &str, v: &Param<T>) -> Result<(), OutOfBounds> {
    b.check(what, v.get().into()).map(drop)
}

/// Every number of a machine preset in its range.
pub fn check_machine(m: &MachinePreset) -> Result<(), OutOfBounds> {
    use machine::*;
    p(&NODES, "nodes", &m.nodes)?;
    p(&CORES_PER_NODE, "cores_per_node", &m.cores_per_node)?;
    p(&LLCS_PER_NODE, "llcs_per_node", &m.llcs_per_node)?;
    p(&FREQ_GHZ, "freq_ghz", &m.freq_ghz)?;
    LLC_BYTES.check("llc_bytes", m.llc_bytes.get() as f64)?;
    MEM_BYTES.check("mem_bytes_per_node", m.mem_bytes_per_node.get() as f64)?;
    p(&BANDWIDTH_GBS, "mc_bandwidth_gbs", &m.mc_bandwidth_gbs)?;
    p(&BANDWIDTH_GBS, "link_bandwidth_gbs", &m.link_bandwidth_gbs)?;
    for d in m.distances.value().iter().flatten() {
        DISTANCE.check("distances", f64::from(*d))?;
    }
    match &m.latency {
        LatencyModel::Matrix { ns } => {
            for v in ns.value().iter().flatten() {
                LATENCY_NS.check("latency.ns", *v)?;
            }
        }
        LatencyModel::Hops {
            local_ns,
            hop_ns,
            probe_hop_ns,
        } => {
            p(&LATENCY_NS, "latency.local_ns", local_ns)?;
            p(&HOP_NS, "latency.hop_ns", hop_ns)?;
            if let Some(v) = probe_hop_ns {
                p(&HOP_NS, "latency.probe_hop_ns", v)?;
            }
        }
    }
    for o in &m.node_overrides {
        if let Some(c) = &o.cores {
            p(&CORES_PER_NODE, "[[node]] cores", c)?;
        }
        if let Some(b) = &o.mem_bytes {
            MEM_BYTES.check("[[node]] mem_bytes", b.get() as f64)?;
        }
        if let Some(b) = &o.mc_bandwidth_gbs {
            p(&BANDWIDTH_GBS, "[[node]] mc_bandwidth_gbs", b)?;
        }
        if let Some(l) = &o.local_ns {
            p(&LATENCY_NS, "[[node]] local_ns", l)?;
        }
    }
    for o in &m.link_overrides {
        p(&BANDWIDTH_GBS, "[[link]] bandwidth_gbs", &o.bandwidth_gbs)?;
    }
    let c = &m.costs;
    for (name, v) in [
        ("costs.migrate_page_us", &c.migrate_page_us),
        ("costs.migrate_huge_page_us", &c.migrate_huge_page_us),
        ("costs.sample_interrupt_us", &c.sample_interrupt_us),
        ("costs.hinting_fault_us", &c.hinting_fault_us),
        ("costs.replica_collapse_us", &c.replica_collapse_us),
        ("costs.numa_scan_us_per_mib", &c.numa_scan_us_per_mib),
    ] {
        p(&COST_US, name, v)?;
    }
    Ok(())
}

/// Every number of a scenario in its range, each error naming the application (and region).
pub(crate) fn check_scenario(s: &Scenario) -> Result<(), Invalid> {
    for a in &s.apps {
        check_app(a).map_err(|e| Invalid(format!("app '{}': {e}", a.name)))?;
        for r in &a.regions {
            check_region(r)
                .map_err(|e| Invalid(format!("region '{}' of app '{}': {e}", r.name, a.name)))?;
        }
    }
    Ok(())
}

fn check_app(a: &AppSpec) -> Result<(), OutOfBounds> {
    use scenario::*;
    if let ThreadCount::Count(c) = a.threads {
        THREADS.check("threads", f64::from(c))?;
    }
    p(&INSTRUCTIONS, "instructions", &a.instructions)?;
    p(&CPI_BASE, "cpi_base", &a.cpi_base)?;
    p(&MLP, "mlp", &a.mlp)?;
    p(&MPKI, "mpki", &a.mpki)?;
    p(&MRC_REF_BYTES, "mrc_ref_bytes", &a.mrc_ref_bytes)?;
    p(&MRC_ALPHA, "mrc_alpha", &a.mrc_alpha)?;
    START_S.check("start_s", a.start_s)?;
    for ph in &a.phases {
        FRACTION.check("phase at", ph.at)?;
        if let Some(m) = ph.mpki_scale {
            MPKI_SCALE.check("phase mpki_scale", m)?;
        }
        for (name, v) in &ph.shares {
            SHARE.check(&format!("phase shares.{name}"), *v)?;
        }
    }
    Ok(())
}

fn check_region(r: &RegionSpec) -> Result<(), OutOfBounds> {
    use scenario::*;
    p(&SIZE_MIB, "size_mib", &r.size_mib)?;
    p(&SHARE, "share", &r.share)?;
    p(&FRACTION, "write_ratio", &r.write_ratio)?;
    if let Some(z) = &r.zipf_s {
        p(&ZIPF_S, "zipf_s", z)?;
    }
    if let Some(h) = &r.halo {
        p(&FRACTION, "halo", h)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets;

    #[test]
    fn every_built_in_preset_is_inside_the_bounds() {
        for (name, _) in presets::MACHINES {
            let m = presets::machine(name).unwrap();
            check_machine(&m).unwrap_or_else(|e| panic!("machine {name}: {e}"));
        }
        for (name, _) in presets::WORKLOADS {
            let s = presets::workload(name).unwrap();
            check_scenario(&s).unwrap_or_else(|e| panic!("workload {name}: {e}"));
        }
    }
}
