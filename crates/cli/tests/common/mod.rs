//! Helpers shared by the end-to-end tests.

#![allow(dead_code, clippy::unwrap_used)]

use assert_cmd::Command;
use std::path::PathBuf;

/// The workspace root: tests run the binary from there so fixture paths are relative and the
/// output is the same on every checkout.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `rondpoint ARGS...`, run from the workspace root.
pub fn rondpoint(args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("rondpoint").unwrap();
    cmd.current_dir(workspace()).args(args);
    cmd
}

/// The standard output of a successful run.
pub fn stdout(args: &[&str]) -> String {
    let out = rondpoint(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// Every `<text>`'s content of an SVG rondpoint drew, trimmed, in document order.
pub fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let body = &t[t.find('>').unwrap() + 1..];
            body[..body.find("</text>").unwrap()].trim().to_string()
        })
        .collect()
}
