//! Whether this process may open perf events, and which: `kernel.perf_event_paranoid` and the
//! effective capabilities (`CapEff` of `/proc/self/status`), read through a procfs root.
//!
//! The kernel's rules (kernel/events/core.c and include/linux/perf_event.h, Linux 6.12;
//! Documentation/admin-guide/perf-security.rst), for a process without the capabilities
//! named:
//! - level 3 or more (`perf_paranoid_any`, from a patch some distributions carry, Debian's
//!   among them; upstream stops at 2): no perf_event_open at all without CAP_SYS_ADMIN;
//! - above 1 (`perf_allow_kernel`): no event that counts or samples in the kernel
//!   (`exclude_kernel` clear) without CAP_PERFMON or CAP_SYS_ADMIN;
//! - above 0 (`perf_allow_cpu`): no event on a whole CPU (pid -1, as uncore counters and
//!   system-wide sampling open) without CAP_PERFMON or CAP_SYS_ADMIN.
//!
//! Another user's process can be watched only with ptrace rights over it (CAP_SYS_PTRACE),
//! and its pages moved only with CAP_SYS_NICE (migrate_pages(2)).

use crate::procfs::{ProcError, ProcRoot};
use serde::Serialize;
use std::io;

/// Capability numbers (include/uapi/linux/capability.h).
pub const CAP_SYS_PTRACE: u32 = 19;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYS_NICE: u32 = 23;
pub const CAP_PERFMON: u32 = 38;

/// The capabilities rondpoint reports, with their names.
const REPORTED: [(u32, &str); 4] = [
    (CAP_PERFMON, "CAP_PERFMON"),
    (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
    (CAP_SYS_NICE, "CAP_SYS_NICE"),
    (CAP_SYS_PTRACE, "CAP_SYS_PTRACE"),
];

/// A set of effective capabilities (the `CapEff` bit mask).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Privileges {
    pub cap_eff: u64,
}

impl Privileges {
    /// Whether the set holds capability number `cap`.
    pub fn has(&self, cap: u32) -> bool {
        cap < 64 && self.cap_eff & (1 << cap) != 0
    }

    /// `perfmon_capable()`: CAP_PERFMON or CAP_SYS_ADMIN.
    pub fn perfmon(&self) -> bool {
        self.has(CAP_PERFMON) || self.has(CAP_SYS_ADMIN)
    }

    /// The reported capabilities, each with whether it is held.
    pub fn reported(&self) -> Vec<(&'static str, bool)> {
        REPORTED
            .iter()
            .map(|&(cap, name)| (name, self.has(cap)))
            .collect()
    }
}

/// The kinds of perf events rondpoint opens, by what the kernel checks for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Counters on a process's threads, user space only (instructions, cycles, LLC misses).
    TaskUser,
    /// Events on a process's threads that include the kernel: the page-fault sampler, and
    /// AMD IBS, which cannot exclude the kernel.
    TaskKernel,
    /// Events on whole CPUs: uncore counters (memory controllers, links) and system-wide
    /// sampling.
    Cpu,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::TaskUser, Scope::TaskKernel, Scope::Cpu];

    /// What it covers, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Scope::TaskUser => {
                "per-process counters, user space (instructions, cycles, LLC misses)"
            }
            Scope::TaskKernel => "per-process events with the kernel (page-fault samples, IBS)",
            Scope::Cpu => "per-CPU events (uncore counters, system-wide sampling)",
        }
    }
}

/// Whether a kind of event may be opened, and on what grounds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "why", rename_all = "kebab-case")]
pub enum Verdict {
    Allowed(String),
    Refused(String),
}

/// What the kernel lets this process do with perf events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Access {
    /// `kernel.perf_event_paranoid` (`None`: no such file, a kernel without perf events).
    pub paranoid: Option<i32>,
    /// The effective capabilities (`None` when `self/status` has no `CapEff`).
    pub privileges: Option<Privileges>,
}

impl Access {
    /// Reads `sys/kernel/perf_event_paranoid` and `self/status` under the procfs root.
    pub fn read(proc: &ProcRoot) -> Result<Self, ProcError> {
        let paranoid = match read_optional(proc, "sys/kernel/perf_event_paranoid")? {
            None => None,
            Some(text) => Some(parse_paranoid(&text).ok_or_else(|| ProcError::Malformed {
                path: proc.root().join("sys/kernel/perf_event_paranoid"),
                what: format!("'{}' is not a paranoid level", text.trim()),
            })?),
        };
        let privileges = read_optional(proc, "self/status")?
            .and_then(|text| parse_cap_eff(&text))
            .map(|cap_eff| Privileges { cap_eff });
        Ok(Self {
            paranoid,
            privileges,
        })
    }

    /// Whether events of `scope` may be opened (on this process's own processes).
    pub fn check(&self, scope: Scope) -> Verdict {
        let Some(level) = self.paranoid else {
            return Verdict::Refused(
                "this kernel has no perf events (no kernel.perf_event_paranoid)".into(),
            );
        };
        let privs = self.privileges.unwrap_or(Privileges { cap_eff: 0 });
        let shown = format!("kernel.perf_event_paranoid={level}");
        if level > 2 && !privs.has(CAP_SYS_ADMIN) {
            return Verdict::Refused(format!(
                "{shown} refuses every perf event without CAP_SYS_ADMIN (a distribution \
                 patch; sysctl kernel.perf_event_paranoid=2 restores the upstream rules)"
            ));
        }
        let (limit, needed) = match scope {
            Scope::TaskUser => (2, "2"),
            Scope::TaskKernel => (1, "1"),
            Scope::Cpu => (0, "0"),
        };
        if level <= limit {
            Verdict::Allowed(format!("{shown} allows it"))
        } else if privs.perfmon() {
            let cap = if privs.has(CAP_PERFMON) {
                "CAP_PERFMON"
            } else {
                "CAP_SYS_ADMIN"
            };
            Verdict::Allowed(format!("{cap} allows it despite {shown}"))
        } else {
            Verdict::Refused(format!(
                "{shown} needs CAP_PERFMON (or kernel.perf_event_paranoid <= {needed})"
            ))
        }
    }
}

/// `perf_event_paranoid`'s text as a level.
pub fn parse_paranoid(text: &str) -> Option<i32> {
    text.trim().parse().ok()
}

/// The `CapEff:` line of a `/proc/PID/status` text, a 64-bit hex mask.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

fn read_optional(proc: &ProcRoot, rel: &str) -> Result<Option<String>, ProcError> {
    let path = proc.root().join(rel);
    match rondpoint_safeio::read_system(&path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ProcError::Read { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(level: i32, caps: &[u32]) -> Access {
        let cap_eff = caps.iter().fold(0, |m, c| m | 1 << c);
        Access {
            paranoid: Some(level),
            privileges: Some(Privileges { cap_eff }),
        }
    }

    fn allowed(a: &Access, scope: Scope) -> bool {
        matches!(a.check(scope), Verdict::Allowed(_))
    }

    #[test]
    fn status_and_paranoid_texts_parse() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\n\
                      CapEff:\t0000004000800000\n";
        let caps = Privileges {
            cap_eff: parse_cap_eff(status).unwrap(),
        };
        assert!(caps.has(CAP_PERFMON) && caps.has(CAP_SYS_NICE));
        assert!(!caps.has(CAP_SYS_ADMIN) && !caps.has(CAP_SYS_PTRACE));
        assert!(caps.perfmon());
        assert_eq!(parse_cap_eff("Name:\tx\n"), None);
        assert_eq!(parse_cap_eff("CapEff:\tzz\n"), None);
        assert_eq!(parse_paranoid("-1\n"), Some(-1));
        assert_eq!(parse_paranoid("4\n"), Some(4));
        assert_eq!(parse_paranoid("two"), None);
        assert!(!Privileges { cap_eff: u64::MAX }.has(64));
    }

    #[test]
    fn the_kernels_rules_by_level() {
        // Level, then whether task-user, task-kernel and CPU events open without privileges.
        for (level, expect) in [
            (-1, [true, true, true]),
            (0, [true, true, true]),
            (1, [true, true, false]),
            (2, [true, false, false]),
            (3, [false, false, false]),
        ] {
            let got = Scope::ALL.map(|s| allowed(&access(level, &[]), s));
            assert_eq!(got, expect, "level {level}");
        }
        // CAP_PERFMON lifts levels 1 and 2, not the distributions' level 3.
        let perfmon = access(2, &[CAP_PERFMON]);
        assert!(Scope::ALL.iter().all(|&s| allowed(&perfmon, s)));
        assert!(!allowed(&access(3, &[CAP_PERFMON]), Scope::TaskUser));
        assert!(allowed(&access(3, &[CAP_SYS_ADMIN]), Scope::Cpu));
        let Verdict::Refused(why) = access(2, &[]).check(Scope::Cpu) else {
            panic!()
        };
        assert!(why.contains("CAP_PERFMON"), "{why}");
        let none = Access {
            paranoid: None,
            privileges: None,
        };
        assert!(!allowed(&none, Scope::TaskUser));
    }

    #[test]
    fn fixture_roots_are_read() {
        let root =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pmu/proc");
        let a = Access::read(&ProcRoot::new(root.join("perfmon"))).unwrap();
        assert_eq!(a.paranoid, Some(2));
        assert!(a.privileges.is_some_and(|p| p.has(CAP_PERFMON)));
        let a = Access::read(&ProcRoot::new(root.join("debian-restricted"))).unwrap();
        assert_eq!(a.paranoid, Some(3));
        let empty = tempfile::tempdir().unwrap();
        let a = Access::read(&ProcRoot::new(empty.path())).unwrap();
        assert_eq!((a.paranoid, a.privileges), (None, None));
        let kernel = empty.path().join("sys/kernel");
        std::fs::create_dir_all(&kernel).unwrap();
        std::fs::write(kernel.join("perf_event_paranoid"), "high\n").unwrap();
        assert!(Access::read(&ProcRoot::new(empty.path())).is_err());
    }
}
