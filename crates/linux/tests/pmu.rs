//! The PMU fixture trees (tests/fixtures/pmu, sources in SOURCES.md) read as a caller reads a
//! machine: every PMU found, every kernel alias encodable with the kernel's own formats, and
//! the encodings issue 41 checked against perf.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_linux::pmu::access::{self, Verdict};
use rondpoint_linux::pmu::{self, Access, ConfigWord, FormatField, Pmu, PmuKind, Scope};
use rondpoint_linux::procfs::ProcRoot;
use rondpoint_linux::sysfs::SysfsRoot;
use std::path::PathBuf;

const MACHINES: [&str; 4] = ["zen4-genoa", "spr-xeon-2s", "neoverse-n1", "vm-no-pmu"];

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
    let spr = kinds("spr-xeon-2s");
    for k in [PmuKind::Core, PmuKind::IntelImc, PmuKind::IntelUpi] {
        assert!(spr.contains(&k), "{k:?}");
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
