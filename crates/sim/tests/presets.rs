//! Built-in presets: every one loads, builds, states a source for every number, and runs;
//! bad preset input is reported with the file, line and field.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_sim::presets::{self, MACHINES, PresetError, WORKLOADS};
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, SimMachine};

/// Keys whose numbers are identifiers or structure (node ids, link ends, thread counts), not
/// model parameters.
const ID_KEYS: &[&str] = &[
    "id", "a", "b", "from", "to", "via", "links", "thread", "node", "nodes", "threads",
];

/// Paths of numbers that are not inside a `{ value, source }` table.
fn unsourced(v: &toml::Value, path: &str, out: &mut Vec<String>) {
    match v {
        toml::Value::Table(t) => {
            // A `{ value, source }` parameter, or a table (a phase) that states its source.
            if t.contains_key("source") {
                return;
            }
            for (k, v) in t {
                if ID_KEYS.contains(&k.as_str()) && !matches!(v, toml::Value::Table(_)) {
                    continue;
                }
                unsourced(v, &format!("{path}.{k}"), out);
            }
        }
        toml::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                unsourced(v, &format!("{path}[{i}]"), out);
            }
        }
        toml::Value::Integer(_) | toml::Value::Float(_) => out.push(path.to_string()),
        _ => {}
    }
}

#[test]
fn every_number_in_a_builtin_preset_has_a_source() {
    for (name, text) in MACHINES.iter().chain(WORKLOADS) {
        let v: toml::Value = toml::from_str(text).unwrap();
        let mut missing = Vec::new();
        unsourced(&v, name, &mut missing);
        assert!(missing.is_empty(), "numbers without a source: {missing:?}");
    }
}

#[test]
fn every_machine_builds() {
    for (name, _) in MACHINES {
        let p = presets::machine(name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&p.name, name);
        let spec = MachineSpec::from_preset(&p).unwrap_or_else(|e| panic!("{e}"));
        for s in 0..spec.nodes() {
            for d in 0..spec.nodes() {
                if s != d && spec.cores.iter().any(|c| c.node == s) {
                    assert!(
                        spec.idle_ns[s][d] > spec.idle_ns[s][s],
                        "{name}: remote {s}->{d} not slower than local"
                    );
                }
            }
        }
    }
}

#[test]
fn every_workload_loads_and_fits_a_64_gib_machine() {
    let m = MachineSpec::from_preset(&presets::machine("opteron-8385").unwrap()).unwrap();
    for (name, _) in WORKLOADS {
        let s = presets::workload(name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&s.name, name);
        assert!(!s.sources.is_empty(), "{name}: no sources");
        SimMachine::new(m.clone(), &s, SimConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn unknown_names_list_the_valid_ones() {
    let err = presets::machine("opteron-9999").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, PresetError::Unknown { .. }));
    assert!(
        msg.contains("r905-asymmetric") && msg.contains("xeon-2s-cxl"),
        "{msg}"
    );
    let msg = presets::workload("streamclustre").unwrap_err().to_string();
    assert!(
        msg.contains("streamcluster") && msg.contains("gups"),
        "{msg}"
    );
}

#[test]
fn malformed_files_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let good = WORKLOADS
        .iter()
        .find(|(n, _)| *n == "streamcluster")
        .unwrap()
        .1;
    // A misspelt field.
    std::fs::write(&path, good.replacen("cpi_base", "cpi_bsae", 1)).unwrap();
    let msg = presets::workload(path.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("bad.toml"), "{msg}");
    assert!(msg.contains("line "), "{msg}");
    assert!(msg.contains("cpi_bsae"), "{msg}");
    // A wrong type.
    std::fs::write(&path, "name = 3\n").unwrap();
    let msg = presets::workload(path.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("line 1") && msg.contains("name"), "{msg}");
    // A missing file.
    let msg = presets::machine(dir.path().join("nope.toml").to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("nope.toml") && msg.contains("cannot read"),
        "{msg}"
    );
}

#[test]
fn an_app_can_take_a_preset_and_override_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mix.toml");
    let write = |text: &str| std::fs::write(&path, text).unwrap();
    write(
        "name = \"mix\"\ndescription = \"two\"\n[[app]]\npreset = \"soplex\"\n\
         [[app]]\npreset = \"soplex\"\nname = \"soplex-2\"\nmembind = [1]\n",
    );
    let s = presets::workload(path.to_str().unwrap()).unwrap();
    let soplex = presets::workload("soplex").unwrap().apps.remove(0);
    assert_eq!(s.apps[0], soplex);
    assert_eq!(s.apps[1].name, "soplex-2");
    assert_eq!(s.apps[1].membind, Some(vec![1]));
    assert_eq!(s.apps[1].instructions, soplex.instructions);
    write("name = \"mix\"\ndescription = \"x\"\n[[app]]\npreset = \"soplx\"\n");
    let err = presets::workload(path.to_str().unwrap()).unwrap_err();
    assert!(matches!(err, PresetError::Unknown { .. }), "{err}");
    assert!(err.to_string().contains("soplex"), "{err}");
    write("name = \"mix\"\ndescription = \"x\"\n[[app]]\npreset = 3\n");
    let msg = presets::workload(path.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("mix.toml") && msg.contains("app[0].preset"),
        "{msg}"
    );
    write("name = \"mix\"\ndescription = \"x\"\n[[app]]\npreset = \"mcf\"\nthreads = \"many\"\n");
    let msg = presets::workload(path.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("mix.toml") && msg.contains("threads"), "{msg}");
}

/// [Majo11 Table 2]: the programs of each workload, in order.
#[test]
fn the_nmass_scenarios_are_table_2() {
    let table2: [&[&str]; 11] = [
        &["soplex", "sphinx", "gamess", "namd"],
        &["soplex", "mcf", "gamess", "gobmk"],
        &["mcf", "libquantum", "povray", "gamess"],
        &["mcf", "omnetpp", "h264", "namd"],
        &["milc", "libquantum", "povray", "perlbench"],
        &["sphinx", "gcc", "namd", "gamess"],
        &["lbm", "milc", "sphinx", "gobmk"],
        &["lbm", "milc", "mcf", "namd"],
        &["mcf", "milc", "soplex", "lbm"],
        &[
            "lbm",
            "milc",
            "mcf",
            "namd",
            "gobmk",
            "perlbench",
            "h264",
            "povray",
        ],
        &[
            "mcf",
            "milc",
            "soplex",
            "lbm",
            "gobmk",
            "perlbench",
            "namd",
            "povray",
        ],
    ];
    let m = MachineSpec::from_preset(&presets::machine("nehalem-e5520-2s").unwrap()).unwrap();
    for (k, programs) in table2.iter().enumerate() {
        let path = format!(
            "{}/../../examples/scenarios/nmass/wl{}.toml",
            env!("CARGO_MANIFEST_DIR"),
            k + 1
        );
        let s = presets::workload(&path).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = s.apps.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(&names, programs, "WL{}", k + 1);
        assert!(s.restart);
        assert!(s.apps.iter().all(|a| a.membind == Some(vec![0])));
        SimMachine::new(m.clone(), &s, SimConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    }
}
