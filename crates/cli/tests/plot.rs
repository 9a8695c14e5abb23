//! End-to-end tests of `rondpoint sim --plot`: the SVG's structure (axis label, one bar per
//! workload and policy at the height of the run's speedup, the legend, the traffic panels of
//! a single workload), the PNG's bytes, and the refusals.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::rondpoint;
use crate::common::svg_texts as texts;
use predicates::prelude::*;
use serde_json::Value;

/// The chart's series colours, in series order (crates/cli/src/plot/bars.rs).
const COLORS: [&str; 3] = ["#4E79A7", "#F28E2B", "#E15759"];

/// A `<rect>` of the SVG: its fill and its top and height in pixels.
#[derive(Debug)]
struct Rect {
    fill: String,
    y: f64,
    height: f64,
}

/// The value of attribute `name` in the tag text `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}

/// Every `<rect>` of the SVG, in document order.
fn rects(svg: &str) -> Vec<Rect> {
    svg.split("<rect")
        .skip(1)
        .map(|t| {
            let tag = &t[..t.find('>').unwrap()];
            Rect {
                fill: attr(tag, "fill").unwrap_or("").to_string(),
                y: attr(tag, "y").unwrap().parse().unwrap(),
                height: attr(tag, "height").unwrap().parse().unwrap(),
            }
        })
        .collect()
}

/// Runs `sim ARGS --json --plot PATH`, returning the JSON and the file's bytes.
fn sim_plot(args: &[&str], file: &str) -> (Value, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    let mut all = vec!["sim", "-q", "--json", "--plot", path.to_str().unwrap()];
    all.extend(args);
    let out = rondpoint(&all)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    (
        serde_json::from_slice(&out).unwrap(),
        std::fs::read(&path).unwrap(),
    )
}

const POLICIES: [&str; 3] = ["first-touch", "interleave", "bound"];

#[test]
fn speedup_chart_has_a_bar_per_workload_and_policy_at_its_speedup() {
    let args = [
        "-m",
        "opteron-8385",
        "-w",
        "facerec,mg",
        "-p",
        "first-touch,interleave,bound",
    ];
    let (json, svg) = sim_plot(&args, "speedup.svg");
    let svg = String::from_utf8(svg).unwrap();
    assert!(
        svg.starts_with("<!-- rondpoint chart -->\n<svg"),
        "{}",
        &svg[..80]
    );
    let texts = texts(&svg);
    for t in [
        "speedup over first-touch (higher is better)",
        "facerec",
        "mg",
    ] {
        assert!(texts.iter().any(|x| x == t), "no text {t:?} in {texts:?}");
    }
    assert!(
        texts
            .iter()
            .any(|x| x == "opteron-8385: speedup over first-touch"),
        "{texts:?}"
    );
    // The legend names every policy; no traffic panel for two workloads.
    for p in POLICIES {
        assert_eq!(
            texts.iter().filter(|x| *x == p).count(),
            1,
            "{p}: {texts:?}"
        );
    }
    assert!(
        !texts.iter().any(|x| x.contains("memory-controller")),
        "{texts:?}"
    );
    // Each policy's colour: a bar per workload, then its legend swatch.
    let rects = rects(&svg);
    let bars: Vec<Vec<&Rect>> = COLORS
        .iter()
        .map(|c| rects.iter().filter(|r| r.fill == *c).collect())
        .collect();
    for (p, b) in POLICIES.iter().zip(&bars) {
        assert_eq!(b.len(), 2 + 1, "{p}: {rects:?}");
    }
    // Heights follow the JSON's speedups: first-touch's bars are 1.0 (and equal), the others
    // in proportion, to the pixel.
    let runs = json["runs"].as_array().unwrap();
    for (w, workload) in ["facerec", "mg"].iter().enumerate() {
        let unit = bars[0][w].height;
        assert!(unit > 100.0, "{unit}");
        for (p, policy) in POLICIES.iter().enumerate() {
            let run = runs
                .iter()
                .find(|r| r["workload"] == *workload && r["policy"] == *policy)
                .unwrap();
            let speedup = run["speedup_vs_first_touch"].as_f64().unwrap();
            let height = bars[p][w].height;
            assert!(
                (height - speedup * unit).abs() <= 1.5,
                "{workload} / {policy}: {height} px for speedup {speedup} ({unit} px per 1.0)"
            );
        }
    }
    // The line at 1.0 (the only horizontal polyline across the plot but the x axis, at the
    // bars' base; the others are ticks) is at the top of the first-touch bars.
    let base = bars[0][0].y + bars[0][0].height;
    let points = |t: &str| -> Vec<(f64, f64)> {
        attr(t, "points")
            .unwrap()
            .split_whitespace()
            .map(|xy| {
                let (x, y) = xy.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    };
    let lines: Vec<Vec<(f64, f64)>> = svg
        .split("<polyline")
        .skip(1)
        .map(points)
        .filter(|p| p.len() == 2 && p[0].1 == p[1].1 && p[1].0 - p[0].0 > 500.0)
        .filter(|p| (p[0].1 - base).abs() > 1.0)
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let top = bars[0][0].y;
    assert!(
        (lines[0][0].1 - top).abs() <= 1.0,
        "line {:?}, bar top {top}",
        lines[0]
    );
}

#[test]
fn a_single_workload_adds_controller_and_link_load_per_node() {
    let args = [
        "-m",
        "opteron-8385",
        "-w",
        "facerec",
        "-p",
        "first-touch,interleave",
    ];
    let (json, svg) = sim_plot(&args, "traffic.svg");
    let svg = String::from_utf8(svg).unwrap();
    let texts = texts(&svg);
    let run = &json["runs"][0];
    let nodes = run["mc_load"].as_array().unwrap().len();
    let links = run["link_load"].as_array().unwrap().len();
    assert!(nodes == 4 && links > 0, "{nodes} nodes, {links} links");
    for t in [
        "memory-controller load (% of bandwidth)",
        "link load (% of bandwidth)",
        "facerec: memory-controller load",
        "facerec: link load",
        "node 0",
        "node 3",
    ] {
        assert!(texts.iter().any(|x| x == t), "no text {t:?} in {texts:?}");
    }
    let l = &run["link_load"][0];
    let first_link = format!("{}→{}", l["from"], l["to"]);
    assert!(texts.contains(&first_link), "{first_link}: {texts:?}");
    // One legend per panel: each policy named three times; bars: one per workload (the
    // speedup panel), node and link direction, per policy, and a swatch per panel.
    for (p, c) in ["first-touch", "interleave"].iter().zip(COLORS) {
        assert_eq!(texts.iter().filter(|x| x == p).count(), 3, "{p}: {texts:?}");
        let n = rects(&svg).iter().filter(|r| r.fill == c).count();
        assert_eq!(n, 1 + nodes + links + 3, "{p}");
    }
}

#[test]
fn png_chart_is_a_png_rondpoint_wrote() {
    let args = [
        "-m",
        "opteron-8385",
        "-w",
        "facerec",
        "-p",
        "first-touch,interleave",
    ];
    let (_, png) = sim_plot(&args, "traffic.png");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR"),
        "{:?}",
        &png[..16]
    );
    assert_eq!(&png[33..59], b"\0\0\0\x12tEXtSoftware\0rondpoint");
    // 960 x 960: drawn, not blank (a blank RGB PNG of that size compresses to under 5 KB).
    assert_eq!(&png[16..24], &[0, 0, 3, 0xc0, 0, 0, 3, 0xc0]);
    assert!(png.len() > 20_000, "{} bytes", png.len());
}

#[test]
fn plot_refuses_other_formats_and_runs_without_first_touch_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = dir.path().join("chart.pdf");
    rondpoint(&["sim", "-q", "-m", "opteron-8385", "-w", "facerec", "--plot"])
        .arg(&pdf)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(".svg or .png"));
    let svg = dir.path().join("chart.svg");
    rondpoint(&[
        "sim",
        "-q",
        "-m",
        "opteron-8385",
        "-w",
        "facerec",
        "-p",
        "interleave",
    ])
    .arg("--plot")
    .arg(&svg)
    .assert()
    .code(2)
    .stderr(predicate::str::contains("add first-touch to --policy"));
    assert!(!pdf.exists() && !svg.exists());
}

#[test]
fn plot_replaces_its_own_chart_but_no_other_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chart.svg");
    std::fs::write(&path, "<svg/>").unwrap();
    let sim = |path: &std::path::Path| {
        let mut cmd = rondpoint(&["sim", "-q", "-m", "opteron-8385", "-w", "facerec", "--plot"]);
        cmd.arg(path);
        cmd.assert()
    };
    sim(&path)
        .code(2)
        .stderr(predicate::str::contains("not a rondpoint SVG chart"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "<svg/>");
    std::fs::remove_file(&path).unwrap();
    sim(&path).success();
    sim(&path).success();
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("<!-- rondpoint chart")
    );
}

#[test]
fn a_multiprogrammed_workload_adds_each_program_s_slowdown() {
    let (json, bytes) = sim_plot(
        &[
            "-m",
            "r905-asymmetric",
            "-w",
            "examples/scenarios/oaas/pg-1.toml",
            "-p",
            "first-touch,oaas",
        ],
        "pg1.svg",
    );
    let svg = String::from_utf8(bytes).unwrap();
    let t = texts(&svg);
    assert!(
        t.iter()
            .any(|s| s.contains("slowdown of each program over its solo run")),
        "{t:?}"
    );
    assert!(
        t.iter().any(|s| s == "slowdown (%, lower is better)"),
        "{t:?}"
    );
    // A group per program of the run, and the average.
    let apps = json["runs"][0]["multiprogram"]["apps"].as_array().unwrap();
    for a in apps {
        let name = a["name"].as_str().unwrap();
        assert!(t.iter().any(|s| s == name), "{name}: {t:?}");
    }
    assert!(t.iter().any(|s| s == "average"), "{t:?}");
}
