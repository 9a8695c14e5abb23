//! Per-cgroup totals of `daemon --cgroup`, on this machine's cgroup v2 hierarchy (as root): a
//! process placed in a cgroup is counted for it in the state file and the metrics, one made
//! outside it is not. Skipped, saying so, where no cgroup can be made.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::workspace;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A cgroup made in this machine's cgroup v2 hierarchy, removed when dropped (its processes
/// killed first).
struct Cgroup(PathBuf, Vec<Child>);

impl Cgroup {
    fn make(name: &str) -> Option<Self> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
        let mount = mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 2 && f[2] == "cgroup2")
            .map(|f| PathBuf::from(f[1]))?;
        let dir = mount.join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        Some(Self(dir, Vec::new()))
    }

    /// Starts `sleep` and moves it into the cgroup.
    fn sleeper(&mut self) -> u32 {
        let child = Command::new("sleep").arg("60").spawn().unwrap();
        let pid = child.id();
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string()).unwrap();
        self.1.push(child);
        pid
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for c in &mut self.1 {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn state_of(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

#[test]
fn a_daemon_counts_each_cgroup_s_processes_memory_and_actions() {
    let Some(mut cg) = Cgroup::make("rondpoint-cgroups") else {
        eprintln!("skipped: no cgroup v2 hierarchy where a cgroup can be made here");
        return;
    };
    let inside = cg.sleeper();
    let mut outside = Command::new("sleep").arg("60").spawn().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let err = dir.path().join("stderr");
    let mut daemon = Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
        .current_dir(workspace())
        .args(["daemon", "--epoch-ms", "100", "--metrics", "0", "--cgroup"])
        .arg(&cg.0)
        .arg("--pid")
        .arg(outside.id().to_string())
        .args([
            "--sysfs-root",
            "fixtures/sysfs/r905-asymmetric",
            "--state-file",
        ])
        .arg(&state)
        .env_remove("JOURNAL_STREAM")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let s = loop {
        if let Some(s) = state_of(&state).filter(|s| s["epoch"].as_u64().unwrap_or(0) >= 2) {
            break s;
        }
        assert!(Instant::now() < deadline, "no state");
        std::thread::sleep(Duration::from_millis(50));
    };
    // Both managed; only the one inside counts for the cgroup.
    assert_eq!(s["managed"].as_array().unwrap().len(), 2, "{s}");
    let g = &s["cgroups"][0];
    assert_eq!(g["cgroup"], cg.0.display().to_string(), "{s}");
    let name = cg.0.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(g["path"], format!("/{name}"), "{s}");
    assert_eq!(g["processes"], 1, "{s}");
    assert_eq!(
        g["memory_bytes_by_node"].as_array().unwrap().len(),
        4,
        "{s}"
    );
    assert!(
        g["actions"].is_object() && g["pages_placed"].is_u64(),
        "{s}"
    );
    // The metrics carry it under the cgroup's label.
    let log = std::fs::read_to_string(&err).unwrap();
    let addr = log
        .lines()
        .find_map(|l| l.split("serving metrics on http://").nth(1))
        .unwrap()
        .trim_end_matches("/metrics")
        .to_string();
    let body = {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    };
    let series = format!(
        "rondpoint_cgroup_processes{{cgroup=\"{}\"}} 1",
        cg.0.display()
    );
    assert!(body.contains(&series), "{series}\n{body}");
    assert!(body.contains("rondpoint_cgroup_memory_bytes{"), "{body}");
    let _ = inside;
    Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(daemon.wait().unwrap().success());
    outside.kill().unwrap();
    outside.wait().unwrap();
}
