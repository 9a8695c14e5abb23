//! SIGHUP reloads `rondpoint daemon`'s configuration: a bad one is named and the daemon goes
//! on with the one it had, a good one starts the policy again with it, and the epochs and the
//! end report run on across reloads; a daemon that records keeps its policy.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::workspace;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Polls until `what` holds of `read()`, or fails naming `waiting`.
fn wait_until<T>(waiting: &str, read: impl Fn() -> Option<T>, what: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = read() {
            if what(&v) {
                return v;
            }
        }
        assert!(Instant::now() < deadline, "never saw {waiting}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn epoch_of(state: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(state).ok()?;
    serde_json::from_str::<Value>(&text).ok()?["epoch"].as_u64()
}

fn log_of(err: &Path) -> Option<String> {
    std::fs::read_to_string(err).ok()
}

fn hup(daemon: &Child) {
    let status = Command::new("kill")
        .args(["-HUP", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

struct Daemon {
    dir: tempfile::TempDir,
    victim: Child,
    daemon: Child,
}

impl Daemon {
    /// A daemon on the R905 fixture over a `sleep`, with `--config`, recording to `r.jsonl`
    /// when `record`.
    fn start(config: &str, record: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        let victim = Command::new("sleep").arg("60").spawn().unwrap();
        let err = std::fs::File::create(dir.path().join("stderr")).unwrap();
        let daemon = Command::new(assert_cmd::cargo::cargo_bin("rondpoint"))
            .current_dir(workspace())
            .args(["daemon", "--json", "--epoch-ms", "100", "--sysfs-root"])
            .arg("fixtures/sysfs/r905-asymmetric")
            .arg("--pid")
            .arg(victim.id().to_string())
            .arg("--config")
            .arg(dir.path().join("config.toml"))
            .arg("--state-file")
            .arg(dir.path().join("state.json"))
            .args(
                record
                    .then(|| dir.path().join("r.jsonl"))
                    .map(|r| {
                        let r = r.to_string_lossy().into_owned();
                        ["--record".to_string(), r]
                    })
                    .into_iter()
                    .flatten(),
            )
            .env_remove("JOURNAL_STREAM")
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .unwrap();
        Self {
            dir,
            victim,
            daemon,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn wait_epoch(&self, at_least: u64) -> u64 {
        let state = self.path("state.json");
        wait_until(
            &format!("epoch {at_least}"),
            || epoch_of(&state),
            |e| *e >= at_least,
        )
    }

    fn wait_log(&self, says: &str) -> String {
        let err = self.path("stderr");
        wait_until(says, || log_of(&err), |l| l.contains(says))
    }

    /// Stops the daemon with SIGTERM: its JSON report, its log and its directory.
    fn stop(mut self) -> (Value, String, tempfile::TempDir) {
        Command::new("kill")
            .args(["-TERM", &self.daemon.id().to_string()])
            .status()
            .unwrap();
        let err = self.path("stderr");
        let out = self.daemon.wait_with_output().unwrap();
        let log = log_of(&err).unwrap_or_default();
        assert!(out.status.success(), "{log}");
        assert!(self.victim.try_wait().unwrap().is_none(), "{log}");
        self.victim.kill().unwrap();
        self.victim.wait().unwrap();
        (serde_json::from_slice(&out.stdout).unwrap(), log, self.dir)
    }
}

#[test]
fn sighup_reloads_a_good_configuration_and_keeps_the_old_one_over_a_bad_one() {
    let d = Daemon::start("[auto.carrefour]\nlar_threshold = 0.8\n", false);
    d.wait_epoch(2);
    // A value out of range: named, and the daemon goes on undisturbed.
    std::fs::write(
        d.path("config.toml"),
        "[auto.carrefour]\nlar_threshold = 7.0\n",
    )
    .unwrap();
    hup(&d.daemon);
    let log = d.wait_log("SIGHUP: configuration not reloaded");
    assert!(log.contains("lar_threshold"), "{log}");
    assert!(log.contains("goes on with the one it had"), "{log}");
    let before = d.wait_epoch(0);
    d.wait_epoch(before + 2);
    // A good one: read, and the policy starts again with it; the epochs run on.
    std::fs::write(
        d.path("config.toml"),
        "[auto.carrefour]\nlar_threshold = 0.7\n",
    )
    .unwrap();
    hup(&d.daemon);
    d.wait_log("SIGHUP: configuration read again (policy configuration ");
    let at_reload = d.wait_epoch(0);
    d.wait_epoch(at_reload + 3);
    let (report, log, _) = d.stop();
    assert!(
        report["epochs"].as_u64().unwrap() > at_reload + 2,
        "{report}\n{log}"
    );
    let notes = report.to_string();
    assert!(notes.contains("reloaded 1 time(s) (SIGHUP)"), "{report}");
    // Neither SIGHUP stopped it: one start-up line, one stop line.
    assert_eq!(log.matches("INFO stopped after ").count(), 1, "{log}");
}

#[test]
fn a_recording_daemon_keeps_its_policy_on_sighup() {
    let d = Daemon::start("[auto.carrefour]\nlar_threshold = 0.8\n", true);
    d.wait_epoch(2);
    hup(&d.daemon);
    d.wait_log("SIGHUP: the configuration is not read again while the daemon records to ");
    let at = d.wait_epoch(0);
    d.wait_epoch(at + 2);
    let (report, log, dir) = d.stop();
    // One run, every epoch recorded once.
    let text = std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap();
    let lines = text.lines().count() as u64;
    assert_eq!(lines - 1, report["epochs"].as_u64().unwrap(), "{log}");
    assert!(!report.to_string().contains("reloaded"), "{report}");
}
