//! The PMU fixture trees (tests/fixtures/pmu, sources in SOURCES.md) read as a caller reads a
//! machine: every PMU found, every kernel alias encodable with the kernel's own formats, and
//! the encodings issue 41 checked against perf; and the CPU families of the catalogue as
//! /proc/cpuinfo text names them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_linux::pmu::access::{self, Verdict};
use rondpoint_linux::pmu::attrs::{CpuIdent, families, parse_cpuinfo};
use rondpoint_linux::pmu::events::Family;
use rondpoint_linux::pmu::{self, Access, ConfigWord, FormatField, Pmu, PmuKind, Scope};
use rondpoint_linux::procfs::ProcRoot;
use rondpoint_linux::sysfs::SysfsRoot;
use std::path::PathBuf;

const MACHINES: [&str; 6] = [
    "zen4-genoa",
    "zen3-milan",
    "spr-xeon-2s",
    "icx-xeon-2s",
    "neoverse-n1",
    "vm-no-pmu",
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pmu")
}

fn machine(name: &str) -> Vec<Pmu> {
    pmu::detect(&SysfsRoot::new(fixtures().join(name))).unwrap()
}

#[test]
fn every_kernel_alias_encodes_with_its_pmus_formats() {
    for m in MACHINES {
        for p in machine(m) {
            assert!(p.problems.is_empty(), "{m}/{}: {:?}", p.name, p.problems);
            for (alias, terms) in &p.events {
                let by_terms = p.encode(terms);
                assert!(by_terms.is_ok(), "{m}/{}/{alias}: {by_terms:?}", p.name);
                assert_eq!(
                    p.encode(alias).ok(),
                    by_terms.ok(),
                    "{m}/{}/{alias}",
                    p.name
                );
            }
        }
    }
}

#[test]
fn each_machine_has_the_pmus_its_signals_need() {
    let kinds = |m| machine(m).iter().map(|p| p.kind).collect::<Vec<_>>();
    let zen4 = kinds("zen4-genoa");
    for k in [
        PmuKind::Core,
        PmuKind::IbsOp,
        PmuKind::AmdDf,
        PmuKind::AmdUmc,
    ] {
        assert!(zen4.contains(&k), "{k:?}");
    }
    let zen3 = kinds("zen3-milan");
    for k in [PmuKind::Core, PmuKind::IbsOp, PmuKind::AmdDf] {
        assert!(zen3.contains(&k), "{k:?}");
    }
    assert!(!zen3.contains(&PmuKind::AmdUmc), "UMC PMUs came with Zen 4");
    for m in ["spr-xeon-2s", "icx-xeon-2s"] {
        let intel = kinds(m);
        for k in [PmuKind::Core, PmuKind::IntelImc, PmuKind::IntelUpi] {
            assert!(intel.contains(&k), "{m}: {k:?}");
        }
    }
    let n1 = kinds("neoverse-n1");
    assert!(n1.contains(&PmuKind::Core) && n1.contains(&PmuKind::Spe));
    assert!(kinds("vm-no-pmu").iter().all(|k| !k.is_hardware()));
    assert_eq!(PmuKind::of("armv8_pmuv3_0", true), PmuKind::Core);
}

#[test]
fn the_encodings_issue_41_saw_perf_print() {
    let zen4 = machine("zen4-genoa");
    let find = |name: &str| zen4.iter().find(|p| p.name == name).unwrap();
    let cpu = find("cpu");
    assert_eq!(cpu.pmu_type, 4);
    assert_eq!(cpu.encode("event=0x29,umask=0x7").unwrap().config, 0x729);
    let op = find("ibs_op");
    assert_eq!(op.pmu_type, 11);
    assert_eq!(op.encode("cnt_ctl=1").unwrap().config, 0x80000);
    let spr = machine("spr-xeon-2s");
    let cpu = spr.iter().find(|p| p.name == "cpu").unwrap();
    assert_eq!(cpu.max_precise(), Some(3));
    let w = cpu.encode("event=0xcd,umask=0x1,ldlat=30").unwrap();
    assert_eq!((w.config, w.get(ConfigWord::Config1)), (0x1cd, 30));
    assert!(cpu.encode("ldlat=0x10000").is_err(), "16 bits at most");
    assert!(cpu.encode("cnt_ctl=1").is_err(), "an IBS term on Intel");
}

#[test]
fn format_fields_round_trip_their_largest_value() {
    for m in MACHINES {
        for p in machine(m) {
            for (name, f) in &p.formats {
                let again = FormatField::parse(&format!("{}:{}", f.word, ranges(f))).unwrap();
                assert_eq!(&again, f, "{m}/{}/{name}", p.name);
                assert_eq!(f.extract(f.place(f.max_value())), f.max_value());
                assert_eq!(f.place(f.max_value()), f.mask());
                assert_eq!(f.mask().count_ones(), f.width());
            }
        }
    }
}

fn ranges(f: &FormatField) -> String {
    let parts: Vec<String> = f
        .ranges
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect();
    parts.join(",")
}

#[test]
fn procfs_cases_say_what_may_be_opened() {
    let read = |case: &str| Access::read(&ProcRoot::new(fixtures().join("proc").join(case)));
    let unprivileged = read("unprivileged").unwrap();
    assert!(matches!(
        unprivileged.check(Scope::TaskUser),
        Verdict::Allowed(_)
    ));
    assert!(matches!(
        unprivileged.check(Scope::Cpu),
        Verdict::Refused(_)
    ));
    let perfmon = read("perfmon").unwrap();
    let privileges = perfmon.privileges.unwrap();
    assert!(privileges.perfmon() && privileges.has(access::CAP_SYS_NICE));
    assert!(matches!(perfmon.check(Scope::Cpu), Verdict::Allowed(_)));
    let debian = read("debian-restricted").unwrap();
    assert!(matches!(debian.check(Scope::TaskUser), Verdict::Refused(_)));
    assert_eq!(access::parse_paranoid(" 1\n"), Some(1));
    assert_eq!(
        access::parse_cap_eff("CapEff:\t0000000000200000\n"),
        Some(1 << access::CAP_SYS_ADMIN)
    );
}

/// The head of /proc/cpuinfo as Linux prints it for one processor.
fn cpuinfo(vendor: &str, family: u32, model: u32, name: &str, stepping: u32) -> String {
    format!(
        "processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n\
         model name\t: {name}\nstepping\t: {stepping}\n\nprocessor\t: 1\nvendor_id\t: Other\n"
    )
}

/// The catalogue families a CPU is in by its /proc/cpuinfo alone (no PMU: no `AnyCore`).
fn cpu_families(text: &str) -> Vec<Family> {
    families(&[], CpuIdent::from_cpuinfo(text).as_ref())
}

#[test]
fn catalogue_families_from_cpuinfo() {
    let intel = "GenuineIntel";
    let amd = "AuthenticAMD";
    let xeon = |model, name, stepping| cpuinfo(intel, 6, model, name, stepping);
    let epyc = |family, model, name| cpuinfo(amd, family, model, name, 1);
    let cases = [
        (
            xeon(106, "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz", 6),
            Family::IntelIceLakeSp,
        ),
        (
            xeon(143, "Intel(R) Xeon(R) Platinum 8480+", 8),
            Family::IntelSapphireRapids,
        ),
        (
            xeon(207, "INTEL(R) XEON(R) PLATINUM 8592+", 2),
            Family::IntelSapphireRapids,
        ),
        (
            epyc(25, 1, "AMD EPYC 7763 64-Core Processor"),
            Family::AmdZen3,
        ),
    ];
    for (text, want) in &cases {
        assert_eq!(cpu_families(text), [*want], "{text}");
    }
    // Zen 4: the entries Zen 4 and 5 share, and those of Zen 4 alone (its xGMI codes).
    let genoa = epyc(25, 17, "AMD EPYC 9654 96-Core Processor");
    assert_eq!(cpu_families(&genoa), [Family::AmdZen4, Family::AmdZen4Only]);
    // This project's VM (real /proc/cpuinfo): AMD family 26 model 2 is Zen 5, whose core and
    // memory-controller codes the catalogue's Zen 4 entries hold (identical in Linux's
    // amdzen4 and amdzen5 tables); its data-fabric codes are its own.
    let vm = include_str!("data/cpuinfo-epyc-family26-vm.txt");
    assert_eq!(parse_cpuinfo(vm), Some(("AuthenticAMD".to_string(), 26, 2)));
    assert_eq!(cpu_families(vm), [Family::AmdZen4, Family::AmdZen5]);
    // Not catalogued (docs/pmu.md): Skylake-SP and Cascade Lake, Zen 2 (Rome), Zen 1 (Naples),
    // Broadwell-EP; and a vendor mix-up.
    for text in [
        xeon(85, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", 4),
        xeon(85, "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", 7),
        epyc(23, 49, "AMD EPYC 7742 64-Core Processor"),
        epyc(23, 1, "AMD EPYC 7601 32-Core Processor"),
        xeon(79, "Intel(R) Xeon(R) CPU E5-2699 v4", 1),
        cpuinfo(amd, 6, 85, "a vendor mix-up", 4),
    ] {
        assert!(cpu_families(&text).is_empty(), "{text}");
    }
}

#[test]
fn parse_cpuinfo_takes_the_first_processor_and_needs_all_fields() {
    let text = cpuinfo("GenuineIntel", 6, 85, "model 99 lookalike", 4);
    assert_eq!(
        parse_cpuinfo(&text),
        Some(("GenuineIntel".to_string(), 6, 85))
    );
    assert_eq!(
        parse_cpuinfo("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"),
        None
    );
    assert_eq!(parse_cpuinfo(""), None);
    assert_eq!(
        parse_cpuinfo("vendor_id : X\ncpu family : six\nmodel : 1\n"),
        None
    );
}
