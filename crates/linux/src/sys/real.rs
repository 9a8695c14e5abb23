//! The real system calls. This file holds all of rondpoint's `unsafe` code; every block says
//! why it is sound. Functions only translate arguments and errno; they decide nothing.

use super::{
    Errno, ExitStatus, MemPolicyMode, NodeMask, PerfAttr, PerfFd, PerfReading, SpawnSetup, Sys,
    TimeConversion,
};
use perf_event_open_sys as perf;
use rondpoint_model::{CpuId, Pid, Tid};
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command};
use std::sync::atomic::{Ordering, fence};

/// `MPOL_MF_MOVE` (include/uapi/linux/mempolicy.h): move pages owned only by the process.
const MPOL_MF_MOVE: libc::c_int = 1 << 1;
/// `MPOL_F_NUMA_BALANCING` (include/uapi/linux/mempolicy.h, Linux 5.12): a mode flag.
const MPOL_F_NUMA_BALANCING: libc::c_long = 1 << 13;

fn errno() -> Errno {
    Errno(
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL),
    )
}

/// A mapped perf ring buffer, and its AUX buffer when it has one.
#[derive(Debug)]
struct Ring {
    base: *mut libc::c_void,
    len: usize,
    page: usize,
    aux: Option<(*mut libc::c_void, usize)>,
}

/// The real kernel.
#[derive(Debug, Default)]
pub struct RealSys {
    children: HashMap<i32, Child>,
    rings: HashMap<i32, Ring>,
}

impl RealSys {
    pub fn new() -> Self {
        Self::default()
    }

    /// perf_event_open(2) of `attr` on `pid` and `cpu` in the group of `group_fd` (-1: its
    /// own group), its ring mapped when it has one, enabled.
    fn open_event(
        &mut self,
        attr: &PerfAttr,
        pid: Pid,
        cpu: i32,
        group_fd: i32,
    ) -> Result<PerfFd, Errno> {
        let k = attr.kernel(page_size() as u64);
        let mut a = perf::bindings::perf_event_attr {
            type_: k.kind,
            size: std::mem::size_of::<perf::bindings::perf_event_attr>() as u32,
            config: k.config,
            sample_type: k.sample_type,
            read_format: k.read_format,
            ..Default::default()
        };
        a.__bindgen_anon_1.sample_period = k.sample_period;
        a.__bindgen_anon_3.config1 = k.config1;
        a.__bindgen_anon_4.config2 = k.config2;
        a.set_disabled(u64::from(k.disabled));
        a.set_inherit(u64::from(k.inherit));
        a.set_exclude_kernel(u64::from(k.exclude_kernel));
        a.set_exclude_hv(u64::from(k.exclude_hv));
        a.set_precise_ip(u64::from(k.precise_ip));
        a.set_watermark(u64::from(k.watermark));
        a.set_context_switch(u64::from(k.context_switch));
        a.set_sample_id_all(u64::from(k.sample_id_all));
        a.__bindgen_anon_2.wakeup_watermark = k.wakeup_watermark;
        a.aux_watermark = k.aux_watermark;
        // SAFETY: `a` is a fully initialised perf_event_attr whose `size` is its own size; the
        // kernel only reads it. group_fd -1 opens a group leader (else it names an open
        // leader); cpu -1 follows the task.
        let fd = unsafe {
            perf::perf_event_open(
                &mut a,
                pid.0,
                cpu,
                group_fd,
                perf::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
            )
        };
        if fd < 0 {
            return Err(errno());
        }
        if attr.ring_pages > 0 {
            let page = page_size();
            let len = (attr.ring_pages + 1) * page;
            // A length of 1 + 2^n pages at offset 0 is the documented way to get an event's
            // ring buffer; we keep the mapping until perf_close unmaps it.
            let base = match map_shared(fd, len, 0) {
                Ok(base) => base,
                Err(e) => {
                    // SAFETY: `fd` is ours and open.
                    unsafe { libc::close(fd) };
                    return Err(e);
                }
            };
            self.rings.insert(
                fd,
                Ring {
                    base,
                    len,
                    page,
                    aux: None,
                },
            );
            if attr.aux_pages > 0 {
                if let Err(e) = self.map_aux(fd, attr.aux_pages) {
                    self.perf_close(PerfFd(fd));
                    return Err(e);
                }
            }
        }
        // SAFETY: ENABLE takes no pointer argument; `fd` is an open perf event.
        let r = unsafe { perf::ioctls::ENABLE(fd, 0) };
        if r < 0 {
            let e = errno();
            self.perf_close(PerfFd(fd));
            return Err(e);
        }
        Ok(PerfFd(fd))
    }
}

impl RealSys {
    /// Maps the AUX buffer of `fd`'s event (`pages` pages) after its ring: its place and size
    /// are written into the ring's header first (perf_event_open(2), "AUX area"). Mapped
    /// writable: rondpoint frees what it read by writing aux_tail, and the kernel never
    /// overwrites what it has not freed.
    fn map_aux(&mut self, fd: i32, pages: usize) -> Result<(), Errno> {
        let Some(ring) = self.rings.get_mut(&fd) else {
            return Err(Errno::EINVAL);
        };
        let size = pages * ring.page;
        let meta = ring.base.cast::<perf::bindings::perf_event_mmap_page>();
        // SAFETY: the first page of the ring mapping is the event's perf_event_mmap_page,
        // which user space fills in (aux_offset, aux_size) before mapping the AUX area.
        unsafe {
            std::ptr::write_volatile(&mut (*meta).aux_offset, ring.len as u64);
            std::ptr::write_volatile(&mut (*meta).aux_size, size as u64);
        }
        // Mapping the fd at the aux_offset just set, with the aux_size set, is the documented
        // way to get its AUX buffer; perf_close unmaps it.
        ring.aux = Some((map_shared(fd, size, ring.len)?, size));
        Ok(())
    }
}

/// Maps `len` bytes of perf event `fd` at `offset`, shared and writable (rondpoint writes the
/// tails it has read).
fn map_shared(fd: i32, len: usize, offset: usize) -> Result<*mut libc::c_void, Errno> {
    // SAFETY: a fresh mapping at an address the kernel chooses; the kernel checks `fd`,
    // `len` and `offset` (a perf event's ring or AUX area) and fails rather than map
    // anything else.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            offset as libc::off_t,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(errno());
    }
    Ok(base)
}

impl Drop for RealSys {
    fn drop(&mut self) {
        let fds: Vec<i32> = self.rings.keys().copied().collect();
        for fd in fds {
            self.perf_close(PerfFd(fd));
        }
    }
}

/// Appends the bytes from `tail` to `head` (positions that only grow) of a circular area of
/// `size` bytes at `data` to `out`.
///
/// # Safety
/// `data` points at `size` readable bytes, and `head - tail <= size`.
unsafe fn copy_wrapped(data: *const u8, size: u64, tail: u64, head: u64, out: &mut Vec<u8>) {
    let mut pos = tail;
    while pos != head {
        let offset = (pos % size) as usize;
        let chunk = ((head - pos) as usize).min(size as usize - offset);
        // SAFETY: the caller's; (pos % size) + chunk <= size.
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(data.add(offset), chunk) });
        pos += chunk as u64;
    }
}

/// The ring header's time conversion (see [`TimeConversion`]), read under its sequence
/// count; `None` when the kernel does not offer one (cap_user_time_zero clear).
///
/// # Safety
/// `meta` points at a mapped perf_event_mmap_page.
unsafe fn time_conversion(
    meta: *const perf::bindings::perf_event_mmap_page,
) -> Option<TimeConversion> {
    for _ in 0..100 {
        // SAFETY: the caller's; volatile reads of fields the kernel may be updating.
        let (seq, conv, again) = unsafe {
            let seq = std::ptr::read_volatile(&(*meta).lock);
            fence(Ordering::Acquire);
            let caps = std::ptr::read_volatile(&(*meta).__bindgen_anon_1.capabilities);
            // cap_user_time_zero: bit 4; cap_user_time_short: bit 5 (perf_event.h).
            let conv = (caps & (1 << 4) != 0).then(|| TimeConversion {
                zero: std::ptr::read_volatile(&(*meta).time_zero),
                mult: std::ptr::read_volatile(&(*meta).time_mult),
                shift: std::ptr::read_volatile(&(*meta).time_shift),
                short: (caps & (1 << 5) != 0).then(|| {
                    (
                        std::ptr::read_volatile(&(*meta).time_cycles),
                        std::ptr::read_volatile(&(*meta).time_mask),
                    )
                }),
            });
            fence(Ordering::Acquire);
            (seq, conv, std::ptr::read_volatile(&(*meta).lock))
        };
        if seq == again && seq % 2 == 0 {
            return conv;
        }
    }
    None
}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(4096)
}

impl Sys for RealSys {
    fn move_pages(
        &mut self,
        pid: Pid,
        pages: &[u64],
        nodes: Option<&[i32]>,
        status: &mut [i32],
    ) -> Result<(), Errno> {
        if status.len() != pages.len() || nodes.is_some_and(|n| n.len() != pages.len()) {
            return Err(Errno::EINVAL);
        }
        if pages.is_empty() {
            return Ok(());
        }
        let nodes_ptr = nodes.map_or(std::ptr::null(), |n| n.as_ptr());
        // SAFETY: the three arrays hold `pages.len()` elements each (checked above) and live
        // across the call; the kernel reads `pages` (as an array of pointers, which u64 matches
        // on 64-bit Linux) and `nodes`, and writes only `status`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                pid.0 as libc::c_long,
                pages.len() as libc::c_ulong,
                pages.as_ptr(),
                nodes_ptr,
                status.as_mut_ptr(),
                MPOL_MF_MOVE as libc::c_long,
            )
        };
        // A positive result is the number of pages the kernel could not move; it then stops
        // early and leaves the statuses of the rest as they were, which callers find out by
        // asking again (actuate verifies every move).
        if r >= 0 {
            return Ok(());
        }
        // The kernel reaches the process's memory through get_task_mm(), which has none once
        // the process has begun to exit (its memory released, the process not yet reaped):
        // move_pages then says EINVAL (find_mm_struct in mm/migrate.c, 6.1 to 6.12), where
        // every other error of its arguments has an errno of its own. Said as what it means.
        match errno() {
            e if e == Errno::EINVAL => Err(Errno::ESRCH),
            e => Err(e),
        }
    }

    fn migrate_pages(&mut self, pid: Pid, from: &NodeMask, to: &NodeMask) -> Result<u64, Errno> {
        let words = from.words().len().max(to.words().len()).max(1);
        let mut a = from.words().to_vec();
        let mut b = to.words().to_vec();
        a.resize(words, 0);
        b.resize(words, 0);
        // SAFETY: both masks hold `words` u64s, matching `maxnode = words * 64`; the kernel
        // only reads them.
        let r = unsafe {
            libc::syscall(
                libc::SYS_migrate_pages,
                pid.0 as libc::c_long,
                (words * 64) as libc::c_ulong,
                a.as_ptr(),
                b.as_ptr(),
            )
        };
        if r < 0 { Err(errno()) } else { Ok(r as u64) }
    }

    fn sched_setaffinity(&mut self, tid: Tid, cpus: &[CpuId]) -> Result<(), Errno> {
        // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        for c in cpus {
            let c = c.0 as usize;
            if c >= max {
                return Err(Errno::EINVAL);
            }
            // SAFETY: `c` is below the set's capacity (checked above).
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: `set` is an initialised cpu_set_t of the size passed.
        let r =
            unsafe { libc::sched_setaffinity(tid.0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if r < 0 { Err(errno()) } else { Ok(()) }
    }

    fn mbind(
        &mut self,
        addr: u64,
        len: u64,
        mode: MemPolicyMode,
        nodes: &NodeMask,
        numa_balancing: bool,
    ) -> Result<(), Errno> {
        let words = nodes.words();
        let ptr = if words.is_empty() {
            std::ptr::null()
        } else {
            words.as_ptr()
        };
        let flags = if numa_balancing {
            MPOL_F_NUMA_BALANCING
        } else {
            0
        };
        // SAFETY: mbind reads `maxnode - 1` bits from `ptr`, which points at `words` (exactly
        // that long, per NodeMask::maxnode) or is null for an empty mask; with no flags it only
        // changes the policy of the range, never the memory's contents, so no Rust reference
        // into the range is affected.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                addr as libc::c_ulong,
                len as libc::c_ulong,
                mode as libc::c_long | flags,
                ptr,
                nodes.maxnode() as libc::c_ulong,
                0 as libc::c_uint,
            )
        };
        if r < 0 { Err(errno()) } else { Ok(()) }
    }

    fn spawn(&mut self, argv: &[OsString], setup: &SpawnSetup) -> Result<Pid, Errno> {
        let Some((program, args)) = argv.split_first() else {
            return Err(Errno::EINVAL);
        };
        let mut cmd = Command::new(program);
        cmd.args(args);
        // Everything the child uses is made here, before the fork.
        let policy = setup
            .policy
            .as_ref()
            .map(|(mode, mask)| (*mode as libc::c_long, mask.words().to_vec(), mask.maxnode()));
        let cpus: Option<Vec<u64>> = setup.cpus.as_ref().map(|cpus| {
            let mut words = vec![
                0u64;
                cpus.iter()
                    .map(|c| c.0 as usize / 64 + 1)
                    .max()
                    .unwrap_or(1)
            ];
            for c in cpus {
                words[c.0 as usize / 64] |= 1 << (c.0 % 64);
            }
            words
        });
        // Opened before the fork (close-on-exec): the child only writes to it.
        let cgroup = match &setup.cgroup {
            Some(dir) => Some(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.join("cgroup.procs"))
                    .map_err(|e| Errno(e.raw_os_error().unwrap_or(libc::EACCES)))?,
            ),
            None => None,
        };
        if policy.is_some() || cpus.is_some() || cgroup.is_some() {
            // SAFETY: the closure runs in the child between fork and exec, where only
            // async-signal-safe work is allowed: it makes raw system calls (write(2) among
            // them) on data and descriptors made before the fork, and allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    if let Some(file) = &cgroup {
                        // "0": the writing process itself joins the cgroup (cgroup v2).
                        let fd = std::os::fd::AsRawFd::as_raw_fd(file);
                        let r = libc::write(fd, b"0".as_ptr().cast(), 1);
                        if r < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    if let Some((mode, words, maxnode)) = &policy {
                        let ptr = if words.is_empty() {
                            std::ptr::null()
                        } else {
                            words.as_ptr()
                        };
                        let r = libc::syscall(
                            libc::SYS_set_mempolicy,
                            *mode,
                            ptr,
                            *maxnode as libc::c_ulong,
                        );
                        if r < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    if let Some(words) = &cpus {
                        let r = libc::syscall(
                            libc::SYS_sched_setaffinity,
                            0 as libc::c_long,
                            (words.len() * 8) as libc::c_ulong,
                            words.as_ptr(),
                        );
                        if r < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        }
        let child = cmd
            .spawn()
            .map_err(|e| Errno(e.raw_os_error().unwrap_or(libc::ENOENT)))?;
        let pid = i32::try_from(child.id()).map_err(|_| Errno::EINVAL)?;
        self.children.insert(pid, child);
        Ok(Pid(pid))
    }

    fn try_wait(&mut self, pid: Pid) -> Result<Option<ExitStatus>, Errno> {
        let Some(child) = self.children.get_mut(&pid.0) else {
            return Err(Errno::ESRCH);
        };
        match child.try_wait() {
            Err(e) => Err(Errno(e.raw_os_error().unwrap_or(libc::EINVAL))),
            Ok(None) => Ok(None),
            Ok(Some(status)) => {
                self.children.remove(&pid.0);
                Ok(Some(match (status.code(), status.signal()) {
                    (Some(c), _) => ExitStatus::Code(c),
                    (None, Some(s)) => ExitStatus::Signal(s),
                    (None, None) => ExitStatus::Code(-1),
                }))
            }
        }
    }

    fn kill(&mut self, pid: Pid, signal: i32) -> Result<(), Errno> {
        // SAFETY: kill has no memory-safety preconditions.
        let r = unsafe { libc::kill(pid.0, signal) };
        if r < 0 { Err(errno()) } else { Ok(()) }
    }

    fn perf_open(&mut self, attr: &PerfAttr, pid: Pid, cpu: i32) -> Result<PerfFd, Errno> {
        self.open_event(attr, pid, cpu, -1)
    }

    fn perf_open_member(
        &mut self,
        attr: &PerfAttr,
        pid: Pid,
        cpu: i32,
        leader: PerfFd,
    ) -> Result<PerfFd, Errno> {
        self.open_event(attr, pid, cpu, leader.0)
    }

    fn perf_set_period(&mut self, fd: PerfFd, period: u64) -> Result<(), Errno> {
        // The kernel reads the new period through a pointer (perf_ioctl: copy_from_user of a
        // u64 from `arg`), although the crate types the argument as a u64: the pointer's
        // address is passed as that u64.
        let arg = std::ptr::addr_of!(period) as u64;
        // SAFETY: PERF_EVENT_IOC_PERIOD reads one u64 at `arg`, which points at `period`, alive
        // across the call; `fd` is an open perf event.
        let r = unsafe { perf::ioctls::PERIOD(fd.0, arg) };
        if r < 0 { Err(errno()) } else { Ok(()) }
    }

    fn perf_read(&mut self, fd: PerfFd) -> Result<PerfReading, Errno> {
        // value, time_enabled, time_running: the read_format every event is opened with.
        let mut words = [0u64; 3];
        // SAFETY: reading at most 24 bytes into a [u64; 3] that lives across the call.
        let r = unsafe { libc::read(fd.0, words.as_mut_ptr().cast::<libc::c_void>(), 24) };
        if r == 24 {
            Ok(PerfReading {
                value: words[0],
                enabled_ns: words[1],
                running_ns: words[2],
            })
        } else if r < 0 {
            Err(errno())
        } else {
            Err(Errno::EINVAL)
        }
    }

    fn perf_drain(&mut self, fd: PerfFd, out: &mut Vec<u8>) -> Result<(), Errno> {
        let Some(ring) = self.rings.get(&fd.0) else {
            return Err(Errno::EINVAL);
        };
        let meta = ring.base.cast::<perf::bindings::perf_event_mmap_page>();
        // SAFETY: the first page of the mapping is the kernel's perf_event_mmap_page. The
        // kernel writes data_head and reads data_tail concurrently, hence volatile accesses
        // with the fences perf_event_open(2) prescribes (read head, acquire; release, write
        // tail).
        let (head, tail) = unsafe {
            let head = std::ptr::read_volatile(&(*meta).data_head);
            fence(Ordering::Acquire);
            (head, std::ptr::read_volatile(&(*meta).data_tail))
        };
        let size = (ring.len - ring.page) as u64;
        let available = head.wrapping_sub(tail);
        if available > size {
            // The kernel never overruns the tail; anything else means a corrupt header.
            return Err(Errno::EINVAL);
        }
        // SAFETY: the data area is the `size` bytes after the first page of the mapping.
        unsafe {
            copy_wrapped(ring.base.cast::<u8>().add(ring.page), size, tail, head, out);
            fence(Ordering::Release);
            std::ptr::write_volatile(&mut (*meta).data_tail, head);
        }
        Ok(())
    }

    fn perf_drain_aux(
        &mut self,
        fd: PerfFd,
        out: &mut Vec<u8>,
    ) -> Result<Option<TimeConversion>, Errno> {
        let Some(ring) = self.rings.get(&fd.0) else {
            return Err(Errno::EINVAL);
        };
        let Some((aux, size)) = ring.aux else {
            return Err(Errno::EINVAL);
        };
        let meta = ring.base.cast::<perf::bindings::perf_event_mmap_page>();
        // SAFETY: as perf_drain, for the AUX area's head and tail (aux_head, aux_tail), whose
        // `size` bytes are mapped at `aux`; each copy stays within them. The time fields are
        // read as the kernel last wrote them (it updates them under `lock`, a sequence
        // count: read until it is even and unchanged).
        unsafe {
            let head = std::ptr::read_volatile(&(*meta).aux_head);
            fence(Ordering::Acquire);
            let tail = std::ptr::read_volatile(&(*meta).aux_tail);
            let available = head.wrapping_sub(tail);
            if available > size as u64 {
                return Err(Errno::EINVAL);
            }
            copy_wrapped(aux.cast::<u8>(), size as u64, tail, head, out);
            fence(Ordering::Release);
            std::ptr::write_volatile(&mut (*meta).aux_tail, head);
            Ok(time_conversion(meta))
        }
    }

    fn perf_close(&mut self, fd: PerfFd) {
        if let Some(ring) = self.rings.remove(&fd.0) {
            if let Some((aux, size)) = ring.aux {
                // SAFETY: the AUX mapping we created and have not unmapped.
                unsafe { libc::munmap(aux, size) };
            }
            // SAFETY: `ring` is a mapping we created and have not unmapped.
            unsafe { libc::munmap(ring.base, ring.len) };
        }
        // SAFETY: closing a descriptor we own; errors are of no use here.
        unsafe { libc::close(fd.0) };
    }

    fn own_cpu_time_ns(&mut self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write into.
        let r = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
        if r < 0 {
            return 0;
        }
        (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
    }

    fn page_bytes(&self) -> u64 {
        page_size() as u64
    }

    fn own_peak_rss_bytes(&mut self) -> u64 {
        // SAFETY: rusage is plain data; all zeroes is valid, and getrusage writes it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid rusage to write into.
        let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        if r < 0 {
            0
        } else {
            (usage.ru_maxrss as u64) * 1024
        }
    }
}

#[cfg(test)]
mod tests;
