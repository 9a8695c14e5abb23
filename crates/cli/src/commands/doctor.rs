//! `rondpoint doctor`: what rondpoint sees on this machine: its PMUs
//! (/sys/bus/event_source/devices), which signals they give and which rondpoint uses today,
//! what kernel.perf_event_paranoid and rondpoint's capabilities allow, and what each policy
//! can therefore do here.
//!
//! Today rondpoint reads generic hardware counters (instructions, cycles, LLC misses) through
//! the core PMU, samples page faults through the software PMU, and counts memory-controller
//! traffic per node with the uncore memory-controller PMUs (`uncore_imc_N`, `amd_umc_N`) where
//! their events are catalogued, samples memory accesses with IBS op, PEBS or Arm SPE, and
//! counts link traffic between sockets with UPI (`uncore_upi_N`) or xGMI (`amd_df`) counters
//! where their events are catalogued.

use crate::format;
use anyhow::{Context, Result};
use clap::Args;
use rondpoint_linux::capabilities::{McCounters, PreciseSampling, Probe};
use rondpoint_linux::machine::{precise_events_of, thread_dram_events_of};
use rondpoint_linux::pmu::access::Verdict;
use rondpoint_linux::pmu::attrs::{self, CpuIdent, PlannedAttr};
use rondpoint_linux::pmu::events::Signal;
use rondpoint_linux::pmu::{self, Access, Pmu, PmuKind, Scope};
use rondpoint_linux::procfs::ProcRoot;
use rondpoint_linux::sys::Errno;
use rondpoint_linux::sysfs::SysfsRoot;
use rondpoint_model::Capabilities;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Version of the `doctor --json` document.
const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Read the PMUs (DIR/bus/event_source/devices) from DIR instead of /sys, e.g. a
    /// fixture tree of another machine. The policies' capabilities are then inferred from
    /// the PMUs found there instead of probed on this machine.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    sysfs_root: PathBuf,
    /// Read kernel.perf_event_paranoid, kernel.numa_balancing and rondpoint's capabilities
    /// (self/status) from DIR instead of /proc.
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    proc_root: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Print the perf_event_attr of every event rondpoint would open on the machine, one
    /// tab-separated line each with the perf command that must print the same attr, then the
    /// signals left without one (the input of scripts/perf-equivalence).
    #[arg(long, hide = true)]
    attrs: bool,
    /// Compare rondpoint's hardware counters (instructions, cycles, LLC misses, DRAM loads,
    /// memory controllers, as its policies read them) with perf stat's, and its memory-access
    /// samples with perf record's, on memory walks on this machine: each must agree within its
    /// tolerance (exit status 1 if one does not). Needs a PMU and perf.
    #[arg(long, conflicts_with = "attrs")]
    self_check: bool,
    /// The self-check's workload: wait for a byte on standard input, touch MIB MiB, walk, say
    /// where, wait for standard input to close.
    #[arg(long, hide = true, value_name = "MIB")]
    self_check_workload: Option<usize>,
    /// With --self-check: compare page-fault counts instead of hardware counters (the
    /// self-check's own test, on machines without a PMU).
    #[arg(long, hide = true, requires = "self_check")]
    self_check_software: bool,
    /// With --attrs: the CPU as perf's PERF_CPUID names it (GenuineIntel-6-8F-8) instead of
    /// the first processor of PROC/cpuinfo.
    #[arg(long, hide = true, value_name = "CPUID", requires = "attrs")]
    cpuid: Option<String>,
}

/// What rondpoint does with a PMU or a signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Use {
    /// Read by rondpoint today.
    Used,
    /// Present here, not read by rondpoint yet.
    DetectedNotUsed,
    /// Present here, of no use to rondpoint.
    NotUsed,
    /// Absent here (or refused), with why.
    Missing,
}

impl Use {
    fn shown(self) -> &'static str {
        match self {
            Use::Used => "used",
            Use::DetectedNotUsed => "detected, not used yet",
            Use::NotUsed => "not used",
            Use::Missing => "missing",
        }
    }
}

#[derive(Debug, Serialize)]
struct PmuRow {
    name: String,
    #[serde(rename = "type")]
    pmu_type: u32,
    kind: PmuKind,
    #[serde(rename = "use")]
    used: Use,
    what: String,
    formats: usize,
    events: usize,
    problems: Vec<String>,
}

#[derive(Debug, Serialize)]
struct SignalRow {
    signal: &'static str,
    sources: Vec<String>,
    status: Use,
    why: String,
}

#[derive(Debug, Serialize)]
struct ScopeRow {
    scope: Scope,
    what: &'static str,
    #[serde(flatten)]
    verdict: Verdict,
}

/// A capability and whether rondpoint holds it.
#[derive(Debug, Serialize)]
struct Held {
    name: &'static str,
    held: bool,
}

#[derive(Debug, Serialize)]
struct PolicyRow {
    name: &'static str,
    runs: bool,
    /// Why it cannot run, or what it runs with in a reduced mode.
    notes: Vec<String>,
}

/// The `doctor --json` document.
#[derive(Debug, Serialize)]
struct Report {
    schema_version: u32,
    sysfs_root: String,
    proc_root: String,
    /// Whether the capabilities were probed on this machine (default roots) rather than
    /// inferred from the PMUs read.
    probed: bool,
    hardware_pmu: bool,
    pmus: Vec<PmuRow>,
    signals: Vec<SignalRow>,
    perf_event_paranoid: Option<i32>,
    /// Effective capabilities of this rondpoint, by name.
    privileges: Vec<Held>,
    access: Vec<ScopeRow>,
    capabilities: Capabilities,
    policies: Vec<PolicyRow>,
}

pub fn run(args: &DoctorArgs) -> Result<ExitCode> {
    if let Some(mib) = args.self_check_workload {
        return super::selfcheck::workload(mib);
    }
    if args.self_check {
        return super::selfcheck::run(args.json, args.self_check_software);
    }
    if args.attrs {
        return print_attrs(args);
    }
    let report = build(args)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--attrs`: the attrs of pmu::attrs::plan for the tree's PMUs and the CPU.
fn print_attrs(args: &DoctorArgs) -> Result<ExitCode> {
    let sysfs = SysfsRoot::new(&args.sysfs_root);
    let pmus = pmu::detect(&sysfs).context("reading the PMUs (bus/event_source/devices)")?;
    let cpu = match &args.cpuid {
        Some(text) => match CpuIdent::parse_perf_cpuid(text) {
            Some(cpu) => Some(cpu),
            None => bad_input!("--cpuid {text}: not VENDOR-FAMILY-MODEL[-STEPPING]"),
        },
        None => rondpoint_safeio::read_system_text(&args.proc_root.join("cpuinfo"))
            .ok()
            .and_then(|text| CpuIdent::from_cpuinfo(&text)),
    };
    out!("{}", attrs::plan(&pmus, cpu.as_ref()).perf_lines());
    Ok(ExitCode::SUCCESS)
}

fn build(args: &DoctorArgs) -> Result<Report> {
    for (flag, dir) in [
        ("--sysfs-root", &args.sysfs_root),
        ("--proc-root", &args.proc_root),
    ] {
        if !dir.is_dir() {
            bad_input!("{flag} {}: not a directory", dir.display());
        }
    }
    let sysfs = SysfsRoot::new(&args.sysfs_root);
    let pmus = named_tree(
        &args.sysfs_root,
        "/sys",
        pmu::detect(&sysfs).context("reading the PMUs (bus/event_source/devices)"),
    )?;
    let proc = ProcRoot::new(&args.proc_root);
    let access = named_tree(
        &args.proc_root,
        "/proc",
        Access::read(&proc).context("reading perf_event_paranoid and capabilities"),
    )?;
    let probed = args.sysfs_root == Path::new("/sys") && args.proc_root == Path::new("/proc");
    // The plan for these PMUs, its CPU taken from their own capabilities.
    let planned = attrs::plan(&pmus, None).attrs;
    let capabilities = if probed {
        super::list::live_capabilities(&args.sysfs_root)?
    } else {
        inferred_capabilities(&pmus, &planned, &access, &proc)
    };
    let policies = super::list::policies()?
        .into_iter()
        .map(|row| {
            let verdict = capabilities.check(row.name, &row.needs);
            PolicyRow {
                name: row.name,
                runs: verdict.is_ok(),
                notes: verdict.unwrap_or_else(|unmet| vec![unmet.to_string()]),
            }
        })
        .collect();
    Ok(Report {
        schema_version: SCHEMA_VERSION,
        sysfs_root: args.sysfs_root.display().to_string(),
        proc_root: args.proc_root.display().to_string(),
        probed,
        hardware_pmu: pmus.iter().any(|p| p.kind.is_hardware()),
        signals: signals(&pmus, &planned, &access),
        pmus: pmus.iter().map(pmu_row).collect(),
        perf_event_paranoid: access.paranoid,
        privileges: access
            .privileges
            .map(|p| p.reported())
            .unwrap_or_default()
            .into_iter()
            .map(|(name, held)| Held { name, held })
            .collect(),
        access: Scope::ALL
            .iter()
            .map(|&scope| ScopeRow {
                scope,
                what: scope.describe(),
                verdict: access.check(scope),
            })
            .collect(),
        capabilities,
        policies,
    })
}

/// A tree the user named that cannot be read is the user's input (exit status 2); the
/// machine's own failing is the machine's (1), as `rondpoint topo` has it.
fn named_tree<T>(root: &Path, default: &str, read: Result<T>) -> Result<T> {
    if root == Path::new(default) {
        read
    } else {
        crate::status::Input::input(read)
    }
}

/// The capabilities of a machine whose PMUs and procfs were read from trees rather than
/// probed: the probe's hardware counter opens when a core PMU is there and the paranoid
/// level allows per-process counters.
fn inferred_capabilities(
    pmus: &[Pmu],
    planned: &[PlannedAttr],
    access: &Access,
    proc: &ProcRoot,
) -> Capabilities {
    let core = pmus.iter().any(|p| p.kind == PmuKind::Core);
    let hardware_counters = match access.check(Scope::TaskUser) {
        Verdict::Refused(_) => Err(Errno::EACCES),
        Verdict::Allowed(_) if core => Ok(()),
        Verdict::Allowed(_) => Err(Errno::ENOENT),
    };
    let page_faults = match access.check(Scope::TaskKernel) {
        Verdict::Refused(_) => Err(Errno::EACCES),
        Verdict::Allowed(_) => Ok(()),
    };
    Probe {
        hardware_counters,
        page_faults,
        numa_balancing: proc.numa_balancing().ok().flatten(),
        slower_tier: Vec::new(),
        watermarks: proc.root().join("zoneinfo").exists(),
        launches: true,
        interleave_weights: None,
        mc_counters: inferred_mc_counters(planned, access),
        precise: inferred_precise(planned, access),
        links: Some(inferred_links(planned)),
        thread_dram: thread_dram_events_of(planned).err().map(|e| e.to_string()),
    }
    .capabilities()
}

/// Whether a plan has an attr for `signal`.
fn plans(planned: &[PlannedAttr], signal: Signal) -> bool {
    planned.iter().any(|a| a.event.signal == signal)
}

/// The memory-controller counters a machine with the plan `planned` would open: not opened
/// here, and its sockets' nodes unknown.
fn inferred_mc_counters(planned: &[PlannedAttr], access: &Access) -> McCounters {
    let planned = plans(planned, Signal::McReads);
    match (planned, access.check(Scope::Cpu)) {
        (false, _) => McCounters::Absent,
        (true, Verdict::Refused(why)) => McCounters::Failed(format!("not permitted: {why}")),
        (true, Verdict::Allowed(_)) => McCounters::Opened {
            partial: Some(
                "inferred from the PMUs, not opened: whether each node with memory has \
                 counters of its own depends on its socket's nodes (rondpoint run checks)"
                    .into(),
            ),
        },
    }
}

/// Why links would not be measured on a machine with the plan `planned`: `run` and `daemon`
/// count them with UPI or xGMI counters on sockets of one node each (UPI beyond two: whose
/// links the kernel maps), which the PMUs alone do not say.
fn inferred_links(planned: &[PlannedAttr]) -> String {
    if plans(planned, Signal::LinkTraffic) {
        "inferred from the PMUs, not opened: run and daemon count the UPI or xGMI links \
         between sockets of one node each (not with sub-NUMA clustering or NPS2/4, nor UPI \
         beyond two sockets on kernels before 5.19)"
            .into()
    } else {
        "no interconnect counters are read".into()
    }
}

/// The precise sampling a machine with the plan `planned` would open: not opened here.
fn inferred_precise(planned: &[PlannedAttr], access: &Access) -> PreciseSampling {
    match (precise_events_of(planned), access.check(Scope::Cpu)) {
        (Err(why), _) => PreciseSampling::Absent(why.to_string()),
        (Ok(_), Verdict::Refused(why)) => PreciseSampling::Failed(format!("not permitted: {why}")),
        (Ok(what), Verdict::Allowed(_)) => PreciseSampling::Available(what),
    }
}

fn pmu_row(p: &Pmu) -> PmuRow {
    let (used, what) = match p.kind {
        PmuKind::Core => {
            let mut what = "instructions, cycles, LLC misses (generic hardware events)".to_string();
            if let Some(pebs) = pebs(p) {
                let _ = write!(what, "; {pebs}, where its CPU's events are catalogued");
            }
            (Use::Used, what)
        }
        PmuKind::Kernel if p.name == "software" => (
            Use::Used,
            "page-fault samples (the page-fault sampler)".into(),
        ),
        PmuKind::IbsOp => (
            Use::Used,
            "precise memory-access samples (system-wide, one event per CPU)".into(),
        ),
        PmuKind::Spe => (
            Use::Used,
            "precise memory-access samples (system-wide, one event per CPU, from its AUX \
             buffer)"
                .into(),
        ),
        PmuKind::IntelImc | PmuKind::AmdUmc => (
            Use::Used,
            "memory-controller traffic per node (where its CPU's events are catalogued)".into(),
        ),
        PmuKind::AmdDf => (
            Use::Used,
            "interconnect link traffic: xGMI outbound data per link (where its CPU's events are \
             catalogued: Zen 4, Zen 5)"
                .into(),
        ),
        PmuKind::IntelUpi => (
            Use::Used,
            "interconnect link traffic (between sockets of one node each)".into(),
        ),
        kind => (Use::NotUsed, kind.describe().into()),
    };
    PmuRow {
        name: p.name.clone(),
        pmu_type: p.pmu_type,
        kind: p.kind,
        used,
        what,
        formats: p.formats.len(),
        events: p.events.len(),
        problems: p.problems.clone(),
    }
}

/// Intel PEBS on a core PMU: `caps/max_precise` of 1 or more and the `mem-loads` alias.
fn pebs(p: &Pmu) -> Option<String> {
    let precise = p.max_precise().filter(|&m| m > 0)?;
    p.events
        .contains_key("mem-loads")
        .then(|| format!("PEBS load sampling (max_precise {precise})"))
}

fn names(pmus: &[Pmu], pick: impl Fn(&Pmu) -> bool) -> Vec<String> {
    pmus.iter()
        .filter(|p| pick(p))
        .map(|p| p.name.clone())
        .collect()
}

/// Each signal rondpoint's policies use, where it could come from here and whether it does.
fn signals(pmus: &[Pmu], planned: &[PlannedAttr], access: &Access) -> Vec<SignalRow> {
    let refused = |scope| match access.check(scope) {
        Verdict::Refused(why) => Some(why),
        Verdict::Allowed(_) => None,
    };
    let no_pmu = "no core PMU: a virtual machine without a virtual PMU, or a kernel without \
                  a driver for this CPU's PMU";
    let mut rows = Vec::new();
    let core = names(pmus, |p| p.kind == PmuKind::Core);
    rows.push(used_signal(
        "thread counters",
        core.clone(),
        refused(Scope::TaskUser),
        no_pmu,
    ));
    // The core PMU's DRAM load events, where this CPU's are catalogued.
    let (dram, no_dram) = match thread_dram_events_of(planned) {
        Ok(_) => (core, String::new()),
        Err(why) => (Vec::new(), format!("{why}; estimated from samples")),
    };
    rows.push(used_signal(
        "thread DRAM loads",
        dram,
        refused(Scope::TaskUser),
        &no_dram,
    ));
    let software = names(pmus, |p| p.name == "software");
    rows.push(used_signal(
        "page-fault samples",
        software,
        refused(Scope::TaskKernel),
        "no software PMU: a kernel without perf events",
    ));
    // IBS op, PEBS and SPE are sampled system-wide, one event per CPU (machine/precise.rs).
    let precise = names(pmus, |p| {
        p.kind == PmuKind::IbsOp || p.kind == PmuKind::Spe || pebs(p).is_some()
    });
    rows.push(used_signal(
        "precise access samples",
        precise,
        refused(Scope::Cpu),
        "no IBS, PEBS or SPE; page-fault samples stand in",
    ));
    let controllers = names(pmus, |p| {
        matches!(p.kind, PmuKind::IntelImc | PmuKind::AmdUmc)
    });
    let fabric = names(pmus, |p| p.kind == PmuKind::AmdDf);
    rows.push(if controllers.is_empty() && !fabric.is_empty() {
        planned_signal(
            "node traffic",
            fabric,
            refused(Scope::Cpu),
            "",
            "estimated from page-fault samples",
        )
    } else {
        used_signal(
            "node traffic",
            controllers,
            refused(Scope::Cpu),
            "no memory-controller PMU (uncore_imc, amd_umc); estimated from page-fault samples",
        )
    });
    // UPI links; xGMI ones where this CPU's data-fabric events are catalogued.
    let xgmi = plans(planned, Signal::LinkTraffic);
    let links = names(pmus, |p| {
        p.kind == PmuKind::IntelUpi || (p.kind == PmuKind::AmdDf && xgmi)
    });
    let no_links = if !pmus.iter().any(|p| p.kind == PmuKind::AmdDf) {
        "no interconnect PMU (uncore_upi, amd_df); not measured"
    } else {
        "amd_df's xGMI events are catalogued for Zen 4 and Zen 5 only, told apart by \
         /proc/cpuinfo; not measured"
    };
    rows.push(used_signal(
        "link traffic",
        links,
        refused(Scope::Cpu),
        no_links,
    ));
    rows
}

/// A signal rondpoint reads today: used when a source is there and may be opened.
fn used_signal(
    signal: &'static str,
    sources: Vec<String>,
    refused: Option<String>,
    absent: &str,
) -> SignalRow {
    let (status, why) = match (sources.is_empty(), refused) {
        (true, _) => (Use::Missing, absent.to_string()),
        (false, Some(why)) => (Use::Missing, format!("not permitted: {why}")),
        (false, None) => (Use::Used, String::new()),
    };
    SignalRow {
        signal,
        sources,
        status,
        why,
    }
}

/// A signal rondpoint does not read yet: detected or missing, with what stands in for it.
fn planned_signal(
    signal: &'static str,
    sources: Vec<String>,
    refused: Option<String>,
    absent: &str,
    instead: &str,
) -> SignalRow {
    let (status, mut why) = if sources.is_empty() {
        (Use::Missing, format!("{absent}; {instead}"))
    } else {
        (Use::DetectedNotUsed, format!("not wired yet; {instead}"))
    };
    if let (false, Some(refusal)) = (sources.is_empty(), refused) {
        let _ = write!(why, "; opening it would also need: {refusal}");
    }
    SignalRow {
        signal,
        sources,
        status,
        why,
    }
}

/// A list of PMU names, runs of `name_N` shortened (`amd_umc_0..11`).
fn sources(names: &[String]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let split = names[i]
            .rsplit_once('_')
            .and_then(|(stem, n)| Some((stem, n.parse::<u32>().ok()?)));
        let Some((stem, first)) = split else {
            out.push(names[i].clone());
            i += 1;
            continue;
        };
        let mut last = first;
        let mut j = i + 1;
        while j < names.len() && names[j] == format!("{stem}_{}", last + 1) {
            last += 1;
            j += 1;
        }
        out.push(if last > first {
            format!("{stem}_{first}..{last}")
        } else {
            names[i].clone()
        });
        i = j;
    }
    if out.is_empty() {
        "-".into()
    } else {
        out.join(", ")
    }
}

fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "PMUs in {}/bus/event_source/devices:",
        r.sysfs_root.trim_end_matches('/')
    );
    if !r.hardware_pmu {
        let _ = writeln!(
            out,
            "  no hardware PMU: only the kernel's own event sources. A virtual machine without \
             a virtual PMU looks like this; rondpoint then samples page faults and estimates \
             the rest."
        );
    }
    let rows = r
        .pmus
        .iter()
        .map(|p| {
            let mut what = p.what.clone();
            for problem in &p.problems {
                let _ = write!(what, "; unreadable: {problem}");
            }
            vec![
                p.name.clone(),
                p.pmu_type.to_string(),
                p.used.shown().into(),
                what,
            ]
        })
        .collect();
    push_table(
        &mut out,
        &["pmu", "type", "rondpoint", "for"],
        &[false, true, false, false],
        rows,
    );
    let _ = writeln!(out, "\nSignals:");
    let rows = r
        .signals
        .iter()
        .map(|s| {
            vec![
                s.signal.into(),
                sources(&s.sources),
                s.status.shown().into(),
                s.why.clone(),
            ]
        })
        .collect();
    push_table(
        &mut out,
        &["signal", "from", "status", "why"],
        &[false; 4],
        rows,
    );
    render_access(&mut out, r);
    let _ = writeln!(
        out,
        "\nCapabilities ({}):",
        if r.probed {
            "probed on this machine, as `rondpoint list capabilities`"
        } else {
            "inferred from the PMUs and procfs read, not probed"
        }
    );
    for line in super::list::render_capabilities(&r.capabilities).lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(out, "\nPolicies:");
    for p in &r.policies {
        let verdict = if p.runs { "runs" } else { "refused" };
        let _ = writeln!(out, "  {}: {verdict}", p.name);
        for note in &p.notes {
            let _ = writeln!(out, "    {note}");
        }
    }
    out
}

fn render_access(out: &mut String, r: &Report) {
    let level = r
        .perf_event_paranoid
        .map_or("absent (no perf events)".to_string(), |l| l.to_string());
    let _ = writeln!(out, "\nPermissions:\n  kernel.perf_event_paranoid: {level}");
    let held: Vec<String> = r
        .privileges
        .iter()
        .map(|h| format!("{} {}", h.name, if h.held { "yes" } else { "no" }))
        .collect();
    let held = if held.is_empty() {
        "unknown (no CapEff in self/status)".to_string()
    } else {
        held.join(", ")
    };
    let _ = writeln!(out, "  capabilities held: {held}");
    for s in &r.access {
        let (verdict, why) = match &s.verdict {
            Verdict::Allowed(why) => ("allowed", why),
            Verdict::Refused(why) => ("refused", why),
        };
        let _ = writeln!(out, "  {}: {verdict}: {why}", s.what);
    }
}

fn push_table(out: &mut String, header: &[&str], right: &[bool], rows: Vec<Vec<String>>) {
    for line in format::table(header, right, rows).lines() {
        let _ = writeln!(out, "  {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_runs_are_shortened() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            sources(&v(&[
                "amd_df",
                "amd_umc_0",
                "amd_umc_1",
                "amd_umc_2",
                "ibs_op"
            ])),
            "amd_df, amd_umc_0..2, ibs_op"
        );
        assert_eq!(sources(&v(&["armv8_pmuv3_0"])), "armv8_pmuv3_0");
        assert_eq!(sources(&[]), "-");
    }

    #[test]
    fn a_planned_signal_is_never_reported_used() {
        let row = planned_signal("x", vec!["ibs_op".into()], None, "none", "instead");
        assert_eq!(row.status, Use::DetectedNotUsed);
        let row = planned_signal("x", vec![], Some("no".into()), "none", "instead");
        assert_eq!(
            (row.status, row.why.as_str()),
            (Use::Missing, "none; instead")
        );
        let row = used_signal("x", vec!["cpu".into()], Some("refused".into()), "none");
        assert_eq!(row.status, Use::Missing);
    }
}
