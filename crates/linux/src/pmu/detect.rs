//! Reading `/sys/bus/event_source/devices` (Documentation/ABI/testing/sysfs-bus-event_source-devices-*
//! in the kernel tree): one directory per PMU, with `type`, and, when the driver has them,
//! `format/`, `events/`, `caps/`, `cpumask` or `cpus`.
//!
//! What is read is what perf reads (tools/perf/util/pmu.c): the `type` number, every format
//! file, every event file but the `.scale`, `.unit`, `.per-pkg` and `.snapshot` companions,
//! and `cpumask` before `cpus`. A device whose `type` cannot be read is left out, as perf
//! leaves it out; a malformed format or event file is noted on its PMU and the rest kept.

use super::format::FormatField;
use super::{Pmu, PmuKind};
use crate::sysfs::{SysfsError, SysfsRoot};
use rondpoint_model::{CpuId, cpulist};
use std::collections::BTreeMap;

/// The PMUs' directory, relative to the sysfs root.
pub const DEVICES_DIR: &str = "bus/event_source/devices";

/// Suffixes of the files beside an event alias that describe it (perf's
/// `pmu_alias_info_file`).
const ALIAS_INFO: [&str; 4] = [".scale", ".unit", ".per-pkg", ".snapshot"];

/// Every PMU under the root, sorted by name, numbered units in numeric order (`amd_umc_2`
/// before `amd_umc_10`). No devices directory (a kernel without
/// CONFIG_PERF_EVENTS, or a tree that is not sysfs) gives an empty list; a directory that
/// cannot be listed is an error.
pub fn detect(sysfs: &SysfsRoot) -> Result<Vec<Pmu>, SysfsError> {
    let mut pmus = Vec::new();
    for name in sysfs.list_optional(DEVICES_DIR)? {
        if let Some(pmu) = read_pmu(sysfs, &name)? {
            pmus.push(pmu);
        }
    }
    pmus.sort_by_cached_key(|p| unit_order(&p.name));
    Ok(pmus)
}

/// A name's stem and unit number (`amd_umc_10`: `amd_umc`, 10), for sorting.
fn unit_order(name: &str) -> (String, Option<u64>) {
    match name.rsplit_once('_') {
        Some((stem, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            (stem.to_string(), n.parse().ok())
        }
        _ => (name.to_string(), None),
    }
}

fn read_pmu(sysfs: &SysfsRoot, name: &str) -> Result<Option<Pmu>, SysfsError> {
    let dir = format!("{DEVICES_DIR}/{name}");
    let Some(type_text) = sysfs.read_optional(&format!("{dir}/type"))? else {
        return Ok(None);
    };
    let Ok(pmu_type) = type_text.trim().parse::<u32>() else {
        return Err(sysfs.malformed(&format!("{dir}/type"), "not a PMU type number"));
    };
    let mut problems = Vec::new();
    let mut formats = BTreeMap::new();
    for (field, text) in files(sysfs, &format!("{dir}/format"), &mut problems)? {
        match FormatField::parse(&text) {
            Ok(f) => {
                formats.insert(field, f);
            }
            Err(e) => problems.push(format!("{dir}/format/{field}: {e}")),
        }
    }
    let mut events = BTreeMap::new();
    for (event, text) in files(sysfs, &format!("{dir}/events"), &mut problems)? {
        if !ALIAS_INFO
            .iter()
            .any(|s| event.len() > s.len() && event.ends_with(s))
        {
            events.insert(event, text.trim().to_string());
        }
    }
    let caps = files(sysfs, &format!("{dir}/caps"), &mut problems)?
        .into_iter()
        .map(|(cap, text)| (cap, text.trim().to_string()))
        .collect();
    let mut cpus = None;
    let mut has_cpus = false;
    for file in ["cpumask", "cpus"] {
        let rel = format!("{dir}/{file}");
        let Some(text) = sysfs.read_optional(&rel)? else {
            continue;
        };
        has_cpus |= file == "cpus";
        match cpulist::parse(text.trim()) {
            Ok(list) => cpus = Some(list.into_iter().map(CpuId).collect()),
            Err(e) => problems.push(format!("{rel}: not a CPU list: {e}")),
        }
        break;
    }
    Ok(Some(Pmu {
        name: name.to_string(),
        pmu_type,
        kind: PmuKind::of(name, has_cpus),
        formats,
        events,
        cpus,
        caps,
        problems,
    }))
}

/// The regular files of a directory that may be absent, with their text. A file that cannot
/// be read (sysfs refuses some to unprivileged readers) is noted in `problems` and skipped.
fn files(
    sysfs: &SysfsRoot,
    dir: &str,
    problems: &mut Vec<String>,
) -> Result<Vec<(String, String)>, SysfsError> {
    let mut out = Vec::new();
    for name in sysfs.list_optional(dir)? {
        let rel = format!("{dir}/{name}");
        if sysfs.path(&rel).is_dir() {
            continue;
        }
        match sysfs.read_optional(&rel) {
            Ok(Some(text)) => out.push((name, text)),
            Ok(None) => {}
            Err(e) => problems.push(e.to_string()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(machine: &str) -> Vec<Pmu> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/pmu")
            .join(machine);
        detect(&SysfsRoot::new(root)).unwrap()
    }

    fn find<'a>(pmus: &'a [Pmu], name: &str) -> &'a Pmu {
        pmus.iter().find(|p| p.name == name).unwrap()
    }

    #[test]
    fn zen4_has_ibs_df_and_umcs() {
        let pmus = fixture("zen4-genoa");
        let cpu = find(&pmus, "cpu");
        assert_eq!((cpu.pmu_type, cpu.kind), (4, PmuKind::Core));
        assert_eq!(cpu.max_precise(), Some(0));
        assert_eq!(cpu.events["cpu-cycles"], "event=0x76");
        assert_eq!(cpu.encode("event=0x29,umask=0x7").unwrap().config, 0x729);
        let op = find(&pmus, "ibs_op");
        assert_eq!((op.pmu_type, op.kind), (11, PmuKind::IbsOp));
        assert_eq!(op.encode("cnt_ctl=1").unwrap().config, 0x80000);
        assert_eq!(op.caps["zen4_ibs_extensions"], "1");
        assert_eq!(find(&pmus, "amd_df").cpus, Some(vec![CpuId(0)]));
        let umcs: Vec<&str> = pmus
            .iter()
            .filter(|p| p.kind == PmuKind::AmdUmc)
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(umcs.len(), 12);
        assert_eq!(umcs[2..4], ["amd_umc_2", "amd_umc_3"], "numeric order");
        assert!(pmus.iter().all(|p| p.problems.is_empty()));
    }

    #[test]
    fn sapphire_rapids_has_pebs_imcs_and_upi_links() {
        let pmus = fixture("spr-xeon-2s");
        let cpu = find(&pmus, "cpu");
        assert_eq!(cpu.max_precise(), Some(3));
        assert_eq!(cpu.caps["pmu_name"], "sapphire_rapids");
        let w = cpu.encode("mem-loads,ldlat=30").unwrap();
        assert_eq!((w.config, w.config1), (0x1cd, 3 | 30));
        let imc = find(&pmus, "uncore_imc_0");
        assert_eq!(imc.kind, PmuKind::IntelImc);
        assert_eq!(imc.cpus, Some(vec![CpuId(0), CpuId(56)]));
        // The .scale and .unit companions are not aliases; the alias has no newline.
        assert_eq!(
            imc.events.keys().collect::<Vec<_>>(),
            ["cas_count_read", "cas_count_write", "clockticks"]
        );
        assert_eq!(imc.encode("cas_count_read").unwrap().config, 0xcf05);
        assert_eq!(
            pmus.iter().filter(|p| p.kind == PmuKind::IntelUpi).count(),
            4
        );
    }

    #[test]
    fn neoverse_has_a_core_pmu_with_cpus_and_spe() {
        let pmus = fixture("neoverse-n1");
        let core = find(&pmus, "armv8_pmuv3_0");
        assert_eq!(core.kind, PmuKind::Core);
        assert_eq!(core.cpus.as_ref().map(Vec::len), Some(80));
        assert_eq!(core.formats["long"].mask(), 1);
        let spe = find(&pmus, "arm_spe_0");
        assert_eq!(spe.kind, PmuKind::Spe);
        let w = spe
            .encode("ts_enable=1,load_filter=1,min_latency=0x20")
            .unwrap();
        assert_eq!((w.config, w.config2), (1 | 1 << 33, 0x20));
    }

    #[test]
    fn a_vm_without_a_pmu_has_only_the_kernels_sources() {
        let pmus = fixture("vm-no-pmu");
        let names: Vec<&str> = pmus.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["breakpoint", "msr", "software", "tracepoint", "uprobe"]
        );
        assert!(pmus.iter().all(|p| !p.kind.is_hardware()));
    }

    #[test]
    fn missing_trees_are_empty_and_bad_files_are_noted() {
        let dir = tempfile::tempdir().unwrap();
        assert!(detect(&SysfsRoot::new(dir.path())).unwrap().is_empty());
        let devices = dir.path().join(DEVICES_DIR);
        std::fs::create_dir_all(devices.join("cpu/format")).unwrap();
        std::fs::create_dir_all(devices.join("gone")).unwrap();
        std::fs::write(devices.join("cpu/type"), "4\n").unwrap();
        std::fs::write(devices.join("cpu/format/event"), "config:0-7\n").unwrap();
        std::fs::write(devices.join("cpu/format/bad"), "config:9-1\n").unwrap();
        std::fs::write(devices.join("cpu/cpus"), "0-x\n").unwrap();
        let pmus = detect(&SysfsRoot::new(dir.path())).unwrap();
        assert_eq!(pmus.len(), 1, "a device without a type is left out");
        assert_eq!(pmus[0].formats.len(), 1);
        assert_eq!(pmus[0].problems.len(), 2, "{:?}", pmus[0].problems);
        std::fs::write(devices.join("cpu/type"), "four\n").unwrap();
        assert!(detect(&SysfsRoot::new(dir.path())).is_err());
    }
}
