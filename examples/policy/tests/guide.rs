//! The guide's example, held to the guide: every code block of docs/architecture.md that says
//! which file it comes from is that file's text, the row passes the checks every builtin row
//! passes, and the policy runs in the simulator beside rondpoint's own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_engine::{EngineConfig, Machine, VirtualClock};
use rondpoint_example_policy::ROWS;
use rondpoint_policy_api::PolicyConfig;
use rondpoint_policy_api::bounds::row_problems;
use rondpoint_sim::spec::MachineSpec;
use rondpoint_sim::{SimConfig, SimMachine, presets};
use std::path::Path;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The code blocks of a Markdown text that follow a line `<!-- from PATH -->`, with PATH.
fn sourced_blocks(markdown: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        let Some(path) = line
            .trim()
            .strip_prefix("<!-- from ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert!(fence.starts_with("```"), "a code block must follow {line}");
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        out.push((path.to_string(), body.join("\n")));
    }
    out
}

#[test]
fn every_sourced_code_block_of_the_guide_is_its_file_s_text() {
    let guide = std::fs::read_to_string(Path::new(ROOT).join("docs/architecture.md")).unwrap();
    let blocks = sourced_blocks(&guide);
    assert!(
        blocks.len() >= 2,
        "the guide shows the policy's file and its row"
    );
    for (path, body) in blocks {
        let file = std::fs::read_to_string(Path::new(ROOT).join(&path)).unwrap();
        assert!(
            file.contains(&body),
            "docs/architecture.md shows a block from {path} that is not in it:\n{body}"
        );
    }
}

#[test]
fn the_row_passes_the_checks_of_every_builtin_row() {
    for row in ROWS {
        assert_eq!(row_problems(row), Vec::<String>::new());
        // A name of its own, beside rondpoint's.
        assert!(rondpoint_policy::registry().with(row).is_ok());
    }
}

#[test]
fn the_example_policy_runs_in_the_simulator_and_spreads_the_threads() {
    let registry = rondpoint_policy::registry().with(&ROWS[0]).unwrap();
    let mut config = PolicyConfig::default();
    registry
        .set_arg(&mut config, "spread-threads.min_threads=4")
        .unwrap();
    registry.check(&config).unwrap();
    let mut policy = registry.build("spread-threads", &config).unwrap();

    let spec = MachineSpec::from_preset(&presets::machine("opteron-8385").unwrap()).unwrap();
    let scenario = presets::workload("streamcluster").unwrap();
    let mut machine = SimMachine::new(spec, &scenario, SimConfig::default()).unwrap();
    let engine = EngineConfig {
        time_limit_ns: Some(1_000_000_000),
        ..EngineConfig::default()
    };
    let acct = rondpoint_engine::run(
        &mut machine,
        policy.as_mut(),
        &mut VirtualClock::default(),
        &engine,
        |_| {},
    )
    .unwrap();
    // Streamcluster's 16 threads, pinned once, four to each of the four nodes.
    assert_eq!(acct.by_technique["pin-thread"].applied, 16, "{acct:?}");
    let mut per_node = [0; 4];
    for t in &machine.processes()[0].threads {
        per_node[usize::from(t.node.0)] += 1;
    }
    assert_eq!(per_node, [4, 4, 4, 4]);

    // Out of its range, refused before it is built, with the range.
    let mut bad = PolicyConfig::default();
    registry
        .set_arg(&mut bad, "spread-threads.min_threads=0")
        .unwrap();
    let err = registry.check(&bad).unwrap_err().to_string();
    assert!(
        err.contains("min_threads = 0: must be from 1 to 4096 threads"),
        "{err}"
    );
}
