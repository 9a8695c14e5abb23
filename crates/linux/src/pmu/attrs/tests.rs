use super::*;
use crate::sysfs::SysfsRoot;
use std::path::PathBuf;

fn fixture(machine: &str) -> Vec<Pmu> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pmu")
        .join(machine);
    super::super::detect(&SysfsRoot::new(root)).unwrap()
}

fn cpuid(machine: &str) -> CpuIdent {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pmu")
        .join(machine)
        .join("perf-cpuid");
    CpuIdent::parse_perf_cpuid(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn signals(plan: &Plan) -> Vec<Signal> {
    let mut s: Vec<Signal> = plan.attrs.iter().map(|a| a.event.signal).collect();
    s.dedup();
    s
}

fn find<'a>(plan: &'a Plan, id: &str) -> &'a PlannedAttr {
    plan.attrs.iter().find(|a| a.id() == id).unwrap()
}

#[test]
fn zen4_opens_ibs_umcs_dram_fills_and_xgmi_links() {
    let pmus = fixture("zen4-genoa");
    let plan = plan(&pmus, Some(&cpuid("zen4-genoa")));
    assert_eq!(
        plan.families,
        [
            Family::AnyCore,
            Family::AmdZen4,
            Family::AmdZen4Only,
            Family::AmdIbs
        ]
    );
    let all = Signal::ALL;
    assert_eq!(signals(&plan), &all[..9]);
    assert_eq!(plan.attrs.len(), 3 + 2 + 12 * 2 + 8 + 1);
    // xGMI link 0's outbound beats: event 0xb5f over config 0-7 and 32-37, umask 0xf3e
    // over 8-15 and 24-27 (the fixture's amd_df formats).
    let link0 = &find(&plan, "link-traffic/xgmi-out-link0/amd_df").attr;
    assert_eq!((link0.kind, link0.config), (12, 0xb_0f00_3e5f));
    assert!(!link0.exclude_hv && !link0.inherit);
    // Without /proc/cpuinfo the PMUs say Zen 4 or 5, not which: no xGMI codes.
    let blind = super::plan(&pmus, None);
    assert!(!blind.families.contains(&Family::AmdZen4Only));
    assert_eq!(signals(&blind), [&all[..7], &all[8..9]].concat());
    assert!(
        blind.degraded[0].why.contains("xGMI"),
        "{:?}",
        blind.degraded
    );
    let near = &find(&plan, "dram-local/dram-io-near/cpu").attr;
    assert_eq!((near.kind, near.config), (4, 0x844));
    assert!(near.exclude_kernel && near.exclude_hv && near.inherit);
    let umc = &find(&plan, "mc-writes/umc-cas-wr/amd_umc_11").attr;
    assert_eq!((umc.kind, umc.config), (25, 0x20a));
    assert!(!umc.exclude_hv && !umc.inherit && umc.sample_period == 0);
    let ibs = find(&plan, "precise-loads/ibs-op/ibs_op");
    assert_eq!((ibs.attr.kind, ibs.attr.config), (11, 1 << 19));
    assert!(
        !ibs.attr.exclude_kernel && !ibs.attr.exclude_hv,
        "IBS excludes nothing"
    );
    assert_eq!(ibs.attr.sample_type & SAMPLE_RAW, SAMPLE_RAW);
    assert_eq!(
        ibs.perf_command(),
        (
            "ibs_op/cnt_ctl=1/".to_string(),
            "record -c 16384 -d --sample-cpu -R".to_string()
        )
    );
    let why: Vec<Signal> = plan.degraded.iter().map(|d| d.signal).collect();
    assert_eq!(why, [Signal::PreciseStores]);
}

#[test]
fn zen5_takes_its_own_xgmi_codes() {
    // The Genoa PMUs with a Zen 5 CPU (family 0x1A): links 0-5, event 0xd5f + 0x40 N.
    let pmus = fixture("zen4-genoa");
    let turin = CpuIdent::parse_perf_cpuid("AuthenticAMD-26-2-0").unwrap();
    let plan = plan(&pmus, Some(&turin));
    assert!(plan.families.contains(&Family::AmdZen5));
    let links: Vec<u64> = plan
        .attrs
        .iter()
        .filter(|a| a.event.signal == Signal::LinkTraffic)
        .map(|a| a.attr.config)
        .collect();
    assert_eq!(links.len(), 6);
    assert_eq!(links[0], 0xd_0f00_3e5f);
    assert_eq!(links[5], 0xe_0f00_3e9f);
}

#[test]
fn sapphire_rapids_opens_pebs_imcs_and_upi() {
    let pmus = fixture("spr-xeon-2s");
    let plan = plan(&pmus, Some(&cpuid("spr-xeon-2s")));
    assert_eq!(
        plan.families,
        [Family::AnyCore, Family::IntelSapphireRapids]
    );
    assert_eq!(signals(&plan), Signal::ALL);
    assert!(plan.degraded.is_empty(), "{:?}", plan.degraded);
    assert_eq!(plan.attrs.len(), 3 + 2 + 8 * 2 + 4 + 2 + 1);
    let loads = find(&plan, "precise-loads/mem-loads/cpu");
    assert_eq!(
        (loads.attr.config, loads.attr.config1, loads.attr.precise_ip),
        (0x1cd, 30, 2),
        "ldlat 30 exactly: the mem-loads alias would OR its ldlat=3 in (31)"
    );
    assert_eq!(
        loads.perf_command().0,
        "cpu/event=0xcd,umask=0x1,ldlat=30/upp"
    );
    let rd = find(&plan, "mc-reads/cas-count-read/uncore_imc_7");
    assert_eq!((rd.attr.kind, rd.attr.config), (47, 0xcf05));
    assert_eq!(rd.target, Target::Cpu);
    assert_eq!(rd.perf_named().as_deref(), Some("unc_m_cas_count.rd"));
    let upi = &find(&plan, "link-traffic/upi-txl-flits-data/uncore_upi_3").attr;
    assert_eq!((upi.kind, upi.config), (63, 0xf02));
    let local = find(&plan, "dram-local/local-dram/cpu");
    assert_eq!(
        local.perf_named().as_deref(),
        Some("mem_load_l3_miss_retired.local_dram:u")
    );
    let fields = find(&plan, "instructions/instructions/").fields();
    assert!(fields.starts_with("type=0 config=0x1 "), "{fields}");
    assert!(fields.contains(" read_format=TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING "));
}

#[test]
fn ice_lake_opens_pebs_without_a_leader_imcs_and_upi() {
    let pmus = fixture("icx-xeon-2s");
    let plan = plan(&pmus, Some(&cpuid("icx-xeon-2s")));
    assert_eq!(
        plan,
        super::plan(&pmus, None),
        "the PMUs say Ice Lake-SP too"
    );
    assert_eq!(plan.families, [Family::AnyCore, Family::IntelIceLakeSp]);
    assert_eq!(signals(&plan), Signal::ALL);
    assert!(plan.degraded.is_empty(), "{:?}", plan.degraded);
    assert_eq!(plan.attrs.len(), 3 + 2 + 12 * 2 + 3 + 1 + 1);
    let loads = find(&plan, "precise-loads/mem-loads/cpu");
    assert_eq!(
        (loads.attr.config, loads.attr.config1, loads.attr.precise_ip),
        (0x1cd, 30, 2)
    );
    assert!(
        plan.attrs.iter().all(|a| a.event.name != "mem-loads-aux"),
        "Ice Lake needs no aux leader"
    );
    let stores = find(&plan, "precise-stores/mem-stores/cpu");
    assert_eq!((stores.attr.config, stores.attr.precise_ip), (0x82d0, 2));
    assert_eq!(
        stores.perf_named().as_deref(),
        Some("mem_inst_retired.all_stores:upp")
    );
    let rd = find(&plan, "mc-reads/cas-count-read/uncore_imc_11");
    assert_eq!((rd.attr.kind, rd.attr.config), (95, 0x0f04));
    assert_eq!(rd.target, Target::Cpu);
    assert_eq!(rd.perf_named().as_deref(), Some("unc_m_cas_count.rd"));
    let wr = &find(&plan, "mc-writes/cas-count-write/uncore_imc_0").attr;
    assert_eq!((wr.kind, wr.config), (84, 0x3004));
    let upi = &find(&plan, "link-traffic/upi-txl-flits-data/uncore_upi_2").attr;
    assert_eq!((upi.kind, upi.config), (14, 0xf02));
    let remote = &find(&plan, "dram-remote/remote-dram/cpu").attr;
    assert_eq!((remote.kind, remote.config), (4, 0x2d3));
    // An Ice Lake client has `icelake` too, but no numbered uncore_imc_N: no ICX entries.
    let client: Vec<Pmu> = pmus
        .into_iter()
        .filter(|p| p.kind != PmuKind::IntelImc)
        .collect();
    assert_eq!(families(&client, None), [Family::AnyCore]);
}

#[test]
fn zen3_opens_ibs_and_dram_fills_and_says_why_not_the_data_fabric() {
    let pmus = fixture("zen3-milan");
    let plan = plan(&pmus, Some(&cpuid("zen3-milan")));
    assert_eq!(plan, super::plan(&pmus, None), "the PMUs say Zen 3 too");
    assert_eq!(
        plan.families,
        [Family::AnyCore, Family::AmdZen3, Family::AmdIbs]
    );
    assert_eq!(plan.attrs.len(), 3 + 2 + 1);
    let near = find(&plan, "dram-local/mem-io-local/cpu");
    assert_eq!((near.attr.kind, near.attr.config), (4, 0x844));
    assert_eq!(
        near.perf_named().as_deref(),
        Some("ls_any_fills_from_sys.mem_io_local:u")
    );
    let far = &find(&plan, "dram-remote/mem-io-remote/cpu").attr;
    assert_eq!(far.config, 0x4044);
    let ibs = &find(&plan, "precise-loads/ibs-op/ibs_op").attr;
    assert_eq!((ibs.kind, ibs.config), (11, 1 << 19));
    let why: Vec<Signal> = plan.degraded.iter().map(|d| d.signal).collect();
    assert_eq!(
        why,
        [
            Signal::McReads,
            Signal::McWrites,
            Signal::LinkTraffic,
            Signal::PreciseStores
        ]
    );
    assert!(
        plan.degraded[0].why.contains("amd_df"),
        "{:?}",
        plan.degraded
    );
    // Zen 2 has the same core and DF formats but family 17h L3 formats: not Zen 3.
    let mut zen2 = pmus.clone();
    let l3 = zen2.iter_mut().find(|p| p.name == "amd_l3").unwrap();
    l3.formats.remove("enallcores");
    assert_eq!(families(&zen2, None), [Family::AnyCore, Family::AmdIbs]);
    // Zen 4's amd_l3 has the same formats; its IBS capability tells it apart.
    let mut zen4 = pmus.clone();
    let op = zen4.iter_mut().find(|p| p.kind == PmuKind::IbsOp).unwrap();
    op.caps.insert("zen4_ibs_extensions".into(), "1".into());
    assert_eq!(
        families(&zen4, None),
        [Family::AnyCore, Family::AmdZen4, Family::AmdIbs]
    );
}

#[test]
fn neoverse_counts_generically_and_samples_with_spe() {
    let plan = plan(&fixture("neoverse-n1"), None);
    assert_eq!(plan.families, [Family::AnyCore, Family::ArmSpe]);
    let spe = find(&plan, "precise-loads/spe-loads-stores/arm_spe_0");
    assert_eq!((spe.attr.kind, spe.attr.config), (9, 1 | 1 << 33 | 1 << 34));
    let why: Vec<Signal> = plan.degraded.iter().map(|d| d.signal).collect();
    assert_eq!(
        why,
        [
            Signal::DramLocal,
            Signal::DramRemote,
            Signal::McReads,
            Signal::McWrites,
            Signal::LinkTraffic,
            Signal::PreciseStores
        ]
    );
}

#[test]
fn a_vm_without_a_pmu_degrades_every_signal_with_a_reason() {
    let plan = plan(&fixture("vm-no-pmu"), None);
    assert!(plan.attrs.is_empty() && plan.families.is_empty());
    assert_eq!(plan.degraded.len(), Signal::ALL.len());
    for d in &plan.degraded[..5] {
        assert!(d.why.starts_with("no core PMU"), "{d:?}");
    }
    assert!(
        plan.degraded[5]
            .why
            .contains("estimated from page-fault samples")
    );
    assert!(plan.degraded[8].why.contains("page-fault samples stand in"));
    let lines = plan.perf_lines();
    assert_eq!(lines.lines().count(), 10);
    assert!(lines.lines().all(|l| l.starts_with("degraded\t")));
}

#[test]
fn a_cpu_says_more_than_the_pmus_and_bad_units_are_reasons() {
    let mut pmus = fixture("spr-xeon-2s");
    let skx = CpuIdent::parse_perf_cpuid("GenuineIntel-6-55-4").unwrap();
    assert_eq!(skx.model, 0x55);
    let plan = plan(&pmus, Some(&skx));
    assert_eq!(plan.families, [Family::AnyCore], "no Skylake-SP entries");
    assert!(
        plan.degraded[0].why.contains("catalogued"),
        "{:?}",
        plan.degraded
    );
    // A core PMU without PEBS: the load and store samplers say why.
    let cpu = pmus.iter_mut().find(|p| p.name == "cpu").unwrap();
    cpu.caps.insert("max_precise".into(), "0".into());
    let plan = super::plan(&pmus, None);
    let stores = plan
        .degraded
        .iter()
        .find(|d| d.signal == Signal::PreciseStores);
    assert!(
        stores.unwrap().why.contains("max_precise"),
        "{:?}",
        plan.degraded
    );
    assert_eq!(
        CpuIdent::from_cpuinfo("vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"),
        CpuIdent::parse_perf_cpuid("AuthenticAMD-25-11")
    );
}
