//! A recording fake of the kernel, for tests: every call is logged in order, and results come
//! from a scripted page placement, scripted per-page and per-call errors, and queued exits and
//! ring-buffer bytes.

use super::{
    Errno, ExitStatus, MemPolicyMode, NodeMask, PerfAttr, PerfFd, PerfReading, SpawnSetup, Sys,
    TimeConversion,
};
use rondpoint_model::{CpuId, Pid, Tid};
use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;

/// One recorded call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    MovePages {
        pid: Pid,
        pages: Vec<u64>,
        nodes: Option<Vec<i32>>,
    },
    MigratePages {
        pid: Pid,
        from: Vec<u16>,
        to: Vec<u16>,
    },
    SetAffinity {
        tid: Tid,
        cpus: Vec<CpuId>,
    },
    Mbind {
        addr: u64,
        len: u64,
        mode: MemPolicyMode,
        nodes: Vec<u16>,
        numa_balancing: bool,
    },
    Spawn {
        argv: Vec<OsString>,
        cgroup: Option<std::path::PathBuf>,
        policy: Option<(MemPolicyMode, Vec<u16>)>,
        cpus: Option<Vec<CpuId>>,
    },
    TryWait {
        pid: Pid,
    },
    Kill {
        pid: Pid,
        signal: i32,
    },
    PerfOpen {
        attr: PerfAttr,
        pid: Pid,
        cpu: i32,
    },
    PerfOpenMember {
        attr: PerfAttr,
        pid: Pid,
        cpu: i32,
        leader: PerfFd,
    },
    PerfSetPeriod {
        fd: PerfFd,
        period: u64,
    },
    PerfRead {
        fd: PerfFd,
    },
    PerfDrain {
        fd: PerfFd,
    },
    PerfDrainAux {
        fd: PerfFd,
    },
    PerfClose {
        fd: PerfFd,
    },
}

impl Call {
    /// The call's name, as used by [`FakeSys::fail_next`].
    pub fn name(&self) -> &'static str {
        match self {
            Call::MovePages { .. } => "move_pages",
            Call::MigratePages { .. } => "migrate_pages",
            Call::SetAffinity { .. } => "sched_setaffinity",
            Call::Mbind { .. } => "mbind",
            Call::Spawn { .. } => "spawn",
            Call::TryWait { .. } => "try_wait",
            Call::Kill { .. } => "kill",
            Call::PerfOpen { .. } => "perf_open",
            Call::PerfOpenMember { .. } => "perf_open_member",
            Call::PerfSetPeriod { .. } => "perf_set_period",
            Call::PerfRead { .. } => "perf_read",
            Call::PerfDrain { .. } => "perf_drain",
            Call::PerfDrainAux { .. } => "perf_drain_aux",
            Call::PerfClose { .. } => "perf_close",
        }
    }
}

/// The fake kernel.
#[derive(Debug, Default)]
pub struct FakeSys {
    /// Every call, in order.
    pub calls: Vec<Call>,
    /// Where each page is: (pid, page address) -> node. Moves update it.
    pub placement: HashMap<(i32, u64), i32>,
    /// Per-page failures of moves: (pid, page address) -> errno reported in `status`.
    pub page_errors: HashMap<(i32, u64), Errno>,
    /// Whole-call failures: the next call with this name fails with this errno (FIFO).
    pub fail_next: VecDeque<(&'static str, Errno)>,
    /// Processes that exist (others give ESRCH).
    pub live: Vec<i32>,
    /// Threads that have exited (sched_setaffinity on them gives ESRCH).
    pub exited_tids: Vec<Tid>,
    /// Results of try_wait per pid, in order (then `None` forever).
    pub exits: HashMap<i32, VecDeque<ExitStatus>>,
    /// perf_open of any event of these PMU types (`attr.kind`) fails with this errno.
    pub perf_refused: HashMap<u32, Errno>,
    /// Bytes the next drain of each ring returns.
    pub ring_bytes: HashMap<i32, Vec<u8>>,
    /// Bytes the next drain of each AUX buffer returns.
    pub aux_bytes: HashMap<i32, Vec<u8>>,
    /// The time conversion every AUX drain reports.
    pub time_conversion: Option<TimeConversion>,
    /// What each counter reads now, per fd (tests move them between epochs).
    pub counters: HashMap<i32, PerfReading>,
    next_pid: i32,
    next_fd: i32,
}

impl FakeSys {
    pub fn new() -> Self {
        Self {
            next_pid: 4000,
            next_fd: 100,
            ..Self::default()
        }
    }

    /// Pretends process `pid` exists with the given pages on the given nodes.
    #[cfg(test)]
    pub(crate) fn with_process(mut self, pid: i32, pages: &[(u64, i32)]) -> Self {
        self.live.push(pid);
        for &(addr, node) in pages {
            self.placement.insert((pid, addr), node);
        }
        self
    }

    fn check(&mut self, call: Call) -> Result<(), Errno> {
        let name = call.name();
        self.calls.push(call);
        if let Some(i) = self.fail_next.iter().position(|(n, _)| *n == name) {
            if let Some((_, e)) = self.fail_next.remove(i) {
                return Err(e);
            }
        }
        Ok(())
    }

    fn alive(&self, pid: Pid) -> Result<(), Errno> {
        if pid.0 == 0 || self.live.contains(&pid.0) {
            Ok(())
        } else {
            Err(Errno::ESRCH)
        }
    }

    /// The calls of one kind.
    #[cfg(test)]
    pub(crate) fn calls_named(&self, name: &str) -> Vec<&Call> {
        self.calls.iter().filter(|c| c.name() == name).collect()
    }
}

impl Sys for FakeSys {
    fn move_pages(
        &mut self,
        pid: Pid,
        pages: &[u64],
        nodes: Option<&[i32]>,
        status: &mut [i32],
    ) -> Result<(), Errno> {
        self.check(Call::MovePages {
            pid,
            pages: pages.to_vec(),
            nodes: nodes.map(<[i32]>::to_vec),
        })?;
        self.alive(pid)?;
        if status.len() != pages.len() || nodes.is_some_and(|n| n.len() != pages.len()) {
            return Err(Errno::EINVAL);
        }
        for (i, &page) in pages.iter().enumerate() {
            let key = (pid.0, page);
            status[i] = match (self.placement.get(&key).copied(), nodes) {
                (None, _) => -Errno::ENOENT.0,
                (Some(n), None) => n,
                (Some(_), Some(targets)) => match self.page_errors.get(&key) {
                    Some(e) => -e.0,
                    None => {
                        self.placement.insert(key, targets[i]);
                        targets[i]
                    }
                },
            };
        }
        Ok(())
    }

    fn migrate_pages(&mut self, pid: Pid, from: &NodeMask, to: &NodeMask) -> Result<u64, Errno> {
        self.check(Call::MigratePages {
            pid,
            from: from.nodes(),
            to: to.nodes(),
        })?;
        self.alive(pid)?;
        let (from, to) = (from.nodes(), to.nodes());
        let Some(&dest) = to.first() else {
            return Err(Errno::EINVAL);
        };
        for ((p, _), node) in self.placement.iter_mut() {
            if *p == pid.0 && from.contains(&(*node as u16)) {
                *node = i32::from(dest);
            }
        }
        Ok(0)
    }

    fn sched_setaffinity(&mut self, tid: Tid, cpus: &[CpuId]) -> Result<(), Errno> {
        self.check(Call::SetAffinity {
            tid,
            cpus: cpus.to_vec(),
        })?;
        if self.exited_tids.contains(&tid) {
            return Err(Errno::ESRCH);
        }
        Ok(())
    }

    fn mbind(
        &mut self,
        addr: u64,
        len: u64,
        mode: MemPolicyMode,
        nodes: &NodeMask,
        numa_balancing: bool,
    ) -> Result<(), Errno> {
        self.check(Call::Mbind {
            addr,
            len,
            mode,
            nodes: nodes.nodes(),
            numa_balancing,
        })
    }

    fn spawn(&mut self, argv: &[OsString], setup: &SpawnSetup) -> Result<Pid, Errno> {
        self.check(Call::Spawn {
            argv: argv.to_vec(),
            cgroup: setup.cgroup.clone(),
            policy: setup.policy.as_ref().map(|(m, n)| (*m, n.nodes())),
            cpus: setup.cpus.clone(),
        })?;
        let pid = self.next_pid;
        self.next_pid += 1;
        self.live.push(pid);
        Ok(Pid(pid))
    }

    fn try_wait(&mut self, pid: Pid) -> Result<Option<ExitStatus>, Errno> {
        self.check(Call::TryWait { pid })?;
        let next = self.exits.get_mut(&pid.0).and_then(VecDeque::pop_front);
        if next.is_some() {
            self.live.retain(|&p| p != pid.0);
        }
        Ok(next)
    }

    fn kill(&mut self, pid: Pid, signal: i32) -> Result<(), Errno> {
        self.check(Call::Kill { pid, signal })?;
        self.alive(pid)
    }

    fn perf_open(&mut self, attr: &PerfAttr, pid: Pid, cpu: i32) -> Result<PerfFd, Errno> {
        self.check(Call::PerfOpen {
            attr: attr.clone(),
            pid,
            cpu,
        })?;
        if let Some(&e) = self.perf_refused.get(&attr.kind) {
            return Err(e);
        }
        // pid -1: everything on one CPU (uncore counters).
        if pid.0 != -1 {
            self.alive(pid)?;
        }
        let fd = self.next_fd;
        self.next_fd += 1;
        Ok(PerfFd(fd))
    }

    fn perf_open_member(
        &mut self,
        attr: &PerfAttr,
        pid: Pid,
        cpu: i32,
        leader: PerfFd,
    ) -> Result<PerfFd, Errno> {
        self.check(Call::PerfOpenMember {
            attr: attr.clone(),
            pid,
            cpu,
            leader,
        })?;
        if pid.0 != -1 {
            self.alive(pid)?;
        }
        let fd = self.next_fd;
        self.next_fd += 1;
        Ok(PerfFd(fd))
    }

    fn perf_set_period(&mut self, fd: PerfFd, period: u64) -> Result<(), Errno> {
        self.check(Call::PerfSetPeriod { fd, period })
    }

    fn perf_read(&mut self, fd: PerfFd) -> Result<PerfReading, Errno> {
        self.check(Call::PerfRead { fd })?;
        Ok(self.counters.get(&fd.0).copied().unwrap_or_default())
    }

    fn perf_drain(&mut self, fd: PerfFd, out: &mut Vec<u8>) -> Result<(), Errno> {
        self.check(Call::PerfDrain { fd })?;
        if let Some(bytes) = self.ring_bytes.remove(&fd.0) {
            out.extend_from_slice(&bytes);
        }
        Ok(())
    }

    fn perf_drain_aux(
        &mut self,
        fd: PerfFd,
        out: &mut Vec<u8>,
    ) -> Result<Option<TimeConversion>, Errno> {
        self.check(Call::PerfDrainAux { fd })?;
        if let Some(bytes) = self.aux_bytes.remove(&fd.0) {
            out.extend_from_slice(&bytes);
        }
        Ok(self.time_conversion)
    }

    fn perf_close(&mut self, fd: PerfFd) {
        let _ = self.check(Call::PerfClose { fd });
    }

    fn own_cpu_time_ns(&mut self) -> u64 {
        0
    }

    fn own_peak_rss_bytes(&mut self) -> u64 {
        0
    }

    fn page_bytes(&self) -> u64 {
        4096
    }
}
