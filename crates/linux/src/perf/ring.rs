//! A pure parser of perf_event ring-buffer records.
//!
//! The kernel writes records into the mmap'ed ring buffer as `struct perf_event_header { u32
//! type; u16 misc; u16 size; }` followed by `size - 8` bytes of body; the data section of a
//! perf.data file holds the same bytes. [`parse`] reads a contiguous run of them (the syscall
//! layer copies a wrapped region of the ring into one buffer first) and returns the records and
//! how many bytes it consumed: a record cut at the end of the buffer is left for the next call.
//!
//! PERF_RECORD_SAMPLE bodies depend on the event's `attr.sample_type`; [`SampleFormat`] gives it
//! and the fields are read in the kernel's order (`include/uapi/linux/perf_event.h`, checked
//! against `perf_output_sample` in kernel/events/core.c for the fields after PHYS_ADDR):
//! IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD, READ, CALLCHAIN, RAW,
//! BRANCH_STACK, REGS_USER, STACK_USER, WEIGHT | WEIGHT_STRUCT, DATA_SRC, TRANSACTION, REGS_INTR,
//! PHYS_ADDR, CGROUP, DATA_PAGE_SIZE, CODE_PAGE_SIZE, AUX. The fields whose length depends on
//! other attr fields (READ, BRANCH_STACK, REGS_USER, STACK_USER, REGS_INTR) are refused rather
//! than guessed. Everything is little-endian: rondpoint runs on x86-64.
//!
//! Decoding what a sample says about memory lives in `perf/datasrc.rs`
//! ([`decode_data_src`], [`decode_ibs_op`]), re-exported here.
//!
//! Kept rather than the perf-event-data crate (0.1.8), which tests/ring_abi shows reads the
//! same values on every sample_type rondpoint opens: on a 64 KiB ring of each, this parser
//! reads 9-15x (page faults), 12-14x (PEBS, SPE) and 4.3-4.8x (IBS) more records/s (three runs
//! of `cargo bench -p rondpoint-linux --bench ring_parse`). The crate allocates a buffer list
//! per record, cannot say where a cut record starts, ignores a wrong sample_type's leftover
//! bytes, hides DATA_SRC's u64 behind accessors, and misreads WEIGHT_STRUCT.

// Parses bytes from outside (files, the kernel): no indexing that could panic on them.
#![deny(clippy::indexing_slicing)]

use thiserror::Error;

pub use super::datasrc::{DataSource, IbsOp, decode_data_src, decode_ibs_op};

/// PERF_RECORD_LOST.
pub const PERF_RECORD_LOST: u32 = 2;
/// PERF_RECORD_THROTTLE.
pub const PERF_RECORD_THROTTLE: u32 = 5;
/// PERF_RECORD_UNTHROTTLE.
pub const PERF_RECORD_UNTHROTTLE: u32 = 6;
/// PERF_RECORD_SAMPLE.
pub const PERF_RECORD_SAMPLE: u32 = 9;
/// PERF_RECORD_AUX: the kernel wrote into the AUX buffer.
pub const PERF_RECORD_AUX: u32 = 11;
/// PERF_RECORD_SWITCH_CPU_WIDE: a context switch on the event's CPU (attr.context_switch).
pub const PERF_RECORD_SWITCH_CPU_WIDE: u32 = 15;
/// `misc` bit of a switch record: the task named by the sample id is switched out.
pub const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;
/// PERF_RECORD_AUX flag: the AUX buffer was full, data was lost.
pub const PERF_AUX_FLAG_TRUNCATED: u64 = 1;

/// Size of `struct perf_event_header`.
pub const HEADER_SIZE: usize = 8;

/// The `attr.sample_type` the records were produced with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleFormat {
    pub sample_type: u64,
}

impl SampleFormat {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;

    /// The bits [`parse`] reads (or skips by their self-described length).
    pub const SUPPORTED: u64 = Self::IP
        | Self::TID
        | Self::TIME
        | Self::ADDR
        | Self::CALLCHAIN
        | Self::ID
        | Self::CPU
        | Self::PERIOD
        | Self::STREAM_ID
        | Self::RAW
        | Self::WEIGHT
        | Self::DATA_SRC
        | Self::IDENTIFIER
        | Self::TRANSACTION
        | Self::PHYS_ADDR
        | Self::AUX
        | Self::CGROUP
        | Self::DATA_PAGE_SIZE
        | Self::CODE_PAGE_SIZE
        | Self::WEIGHT_STRUCT;

    pub fn new(sample_type: u64) -> Self {
        SampleFormat { sample_type }
    }

    fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }

    /// Refuses the bits [`parse`] cannot read: READ, BRANCH_STACK, REGS_USER, STACK_USER,
    /// REGS_INTR (their length depends on other attr fields), bits the kernel does not define
    /// yet, and WEIGHT together with WEIGHT_STRUCT (the kernel refuses that too).
    pub fn check(&self) -> Result<(), RingError> {
        let unsupported = self.sample_type & !Self::SUPPORTED;
        if unsupported != 0 {
            return Err(RingError::Unsupported { bits: unsupported });
        }
        if self.has(Self::WEIGHT) && self.has(Self::WEIGHT_STRUCT) {
            return Err(RingError::Unsupported {
                bits: Self::WEIGHT | Self::WEIGHT_STRUCT,
            });
        }
        Ok(())
    }
}

/// The fields of one PERF_RECORD_SAMPLE that rondpoint uses; `None` when the sample_type did
/// not ask for the field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawSample {
    /// `perf_event_header.misc` (cpumode in bits 0-2, PERF_RECORD_MISC_EXACT_IP = bit 14).
    pub misc: u16,
    /// PERF_SAMPLE_IDENTIFIER or PERF_SAMPLE_ID: the event id, to tell events sharing a ring
    /// buffer apart (ioctl PERF_EVENT_IOC_ID gives each event's id).
    pub id: Option<u64>,
    pub ip: Option<u64>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    /// Nanoseconds, perf clock (CLOCK_MONOTONIC-like unless attr.use_clockid).
    pub time: Option<u64>,
    /// The data address (PERF_SAMPLE_ADDR): the faulting address for page-fault events.
    pub addr: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    /// PERF_SAMPLE_WEIGHT (the u64), or with PERF_SAMPLE_WEIGHT_STRUCT its `var1_dw` (the
    /// low 32 bits: the access latency on Intel).
    pub weight: Option<u64>,
    /// PERF_SAMPLE_DATA_SRC, see [`decode_data_src`].
    pub data_src: Option<u64>,
    pub phys_addr: Option<u64>,
    /// PERF_SAMPLE_RAW bytes, including the kernel's alignment padding: AMD IBS registers here,
    /// see [`decode_ibs_op`].
    pub raw: Option<Vec<u8>>,
}

/// One ring-buffer record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Sample(RawSample),
    /// PERF_RECORD_LOST: `lost` records of event `id` were dropped because the ring was full.
    Lost {
        id: u64,
        lost: u64,
    },
    /// PERF_RECORD_THROTTLE: the kernel throttled sampling (too many interrupts).
    Throttle,
    Unthrottle,
    /// PERF_RECORD_AUX: `size` bytes at `offset` of the AUX buffer were written; `flags`
    /// (PERF_AUX_FLAG_*) say whether some were lost.
    Aux {
        offset: u64,
        size: u64,
        flags: u64,
    },
    /// PERF_RECORD_SWITCH_CPU_WIDE: the task `pid`/`tid` starts running on the CPU at `time`
    /// (perf clock ns), read from the record's sample id (attr.sample_id_all with TID and
    /// TIME), `None` without one.
    Switch {
        pid: u32,
        tid: u32,
        time: Option<u64>,
    },
    /// Any other record type (MMAP, COMM, FORK, EXIT, perf's own types >= 64, ...), skipped.
    Other {
        kind: u32,
    },
}

/// A record that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RingError {
    #[error("record at byte {offset}: size {size} is smaller than its 8-byte header")]
    SizeBelowHeader { offset: usize, size: u16 },
    #[error(
        "sample at byte {offset}: body ends before field {field} ({need} bytes needed, {have} left)"
    )]
    SampleTooShort {
        offset: usize,
        field: &'static str,
        need: usize,
        have: usize,
    },
    #[error(
        "sample at byte {offset}: {extra} bytes left after the last field (wrong sample_type?)"
    )]
    SampleTooLong { offset: usize, extra: usize },
    #[error("record type {kind} at byte {offset}: body of {have} bytes, {need} needed")]
    RecordTooShort {
        offset: usize,
        kind: u32,
        need: usize,
        have: usize,
    },
    #[error("sample_type bits {bits:#x} are not supported by this parser")]
    Unsupported { bits: u64 },
}

/// Parses the records in `bytes`. Returns them with the number of bytes consumed: a trailing
/// record cut short (fewer than 8 bytes, or fewer than its header's size) is not consumed and
/// should be passed again with the bytes that follow it.
pub fn parse(bytes: &[u8], format: &SampleFormat) -> Result<(Vec<Record>, usize), RingError> {
    format.check()?;
    let mut records = Vec::new();
    let mut offset = 0;
    while let Some(&[k0, k1, k2, k3, m0, m1, s0, s1]) = bytes
        .get(offset..)
        .and_then(<[u8]>::first_chunk::<HEADER_SIZE>)
    {
        let kind = u32::from_le_bytes([k0, k1, k2, k3]);
        let misc = u16::from_le_bytes([m0, m1]);
        let size = u16::from_le_bytes([s0, s1]);
        if usize::from(size) < HEADER_SIZE {
            return Err(RingError::SizeBelowHeader { offset, size });
        }
        let Some(body) = bytes.get(offset + HEADER_SIZE..offset + usize::from(size)) else {
            break; // partial record at the end
        };
        let record = match kind {
            PERF_RECORD_SAMPLE => Record::Sample(parse_sample(body, misc, format, offset)?),
            PERF_RECORD_LOST => {
                let mut r = Reader::new(body, offset);
                let short = |_| too_short(offset, kind, 16, body);
                let id = r.u64("id").map_err(short)?;
                let lost = r.u64("lost").map_err(short)?;
                Record::Lost { id, lost }
            }
            PERF_RECORD_THROTTLE => Record::Throttle,
            PERF_RECORD_UNTHROTTLE => Record::Unthrottle,
            PERF_RECORD_AUX => parse_aux(body, offset)?,
            PERF_RECORD_SWITCH_CPU_WIDE => parse_switch(body, misc, format, offset)?,
            other => Record::Other { kind: other },
        };
        records.push(record);
        offset += usize::from(size);
    }
    Ok((records, offset))
}

fn too_short(offset: usize, kind: u32, need: usize, body: &[u8]) -> RingError {
    RingError::RecordTooShort {
        offset,
        kind,
        need,
        have: body.len(),
    }
}

/// PERF_RECORD_AUX's body: aux_offset, aux_size, flags (then a sample id, not read).
fn parse_aux(body: &[u8], offset: usize) -> Result<Record, RingError> {
    let mut r = Reader::new(body, offset);
    let short = |_| too_short(offset, PERF_RECORD_AUX, 24, body);
    Ok(Record::Aux {
        offset: r.u64("aux_offset").map_err(short)?,
        size: r.u64("aux_size").map_err(short)?,
        flags: r.u64("flags").map_err(short)?,
    })
}

/// PERF_RECORD_SWITCH_CPU_WIDE's body: the other task's pid and tid, then the sample id
/// (`struct sample_id`: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER, as the sample_type has
/// them) of the task switched out (misc SWITCH_OUT) or in. The sample id is read only when the
/// body holds exactly it (attr.sample_id_all set).
fn parse_switch(
    body: &[u8],
    misc: u16,
    f: &SampleFormat,
    offset: usize,
) -> Result<Record, RingError> {
    type F = SampleFormat;
    let mut r = Reader::new(body, offset);
    let short = |_| too_short(offset, PERF_RECORD_SWITCH_CPU_WIDE, 8, body);
    let other = (
        r.u32("next_prev_pid").map_err(short)?,
        r.u32("next_prev_tid").map_err(short)?,
    );
    let id_len = [F::TID, F::TIME, F::ID, F::STREAM_ID, F::CPU, F::IDENTIFIER]
        .iter()
        .filter(|&&bit| f.has(bit))
        .count()
        * 8;
    let mut id = (None, None);
    if f.has(F::TID) && body.len() == 8 + id_len {
        id.0 = Some((r.u32("pid")?, r.u32("tid")?));
        if f.has(F::TIME) {
            id.1 = Some(r.u64("time")?);
        }
    }
    let switched_out = misc & PERF_RECORD_MISC_SWITCH_OUT != 0;
    // Switched out: the incoming task is the other; switched in: the sample id's.
    let incoming = if switched_out { Some(other) } else { id.0 };
    Ok(match incoming {
        Some((pid, tid)) => Record::Switch {
            pid,
            tid,
            time: id.1,
        },
        None => Record::Other {
            kind: PERF_RECORD_SWITCH_CPU_WIDE,
        },
    })
}

/// Reads one sample body in the kernel's field order.
fn parse_sample(
    body: &[u8],
    misc: u16,
    f: &SampleFormat,
    offset: usize,
) -> Result<RawSample, RingError> {
    type F = SampleFormat;
    let mut r = Reader::new(body, offset);
    let mut s = RawSample {
        misc,
        ..RawSample::default()
    };
    if f.has(F::IDENTIFIER) {
        s.id = Some(r.u64("identifier")?);
    }
    if f.has(F::IP) {
        s.ip = Some(r.u64("ip")?);
    }
    if f.has(F::TID) {
        s.pid = Some(r.u32("pid")?);
        s.tid = Some(r.u32("tid")?);
    }
    if f.has(F::TIME) {
        s.time = Some(r.u64("time")?);
    }
    if f.has(F::ADDR) {
        s.addr = Some(r.u64("addr")?);
    }
    if f.has(F::ID) {
        s.id = Some(r.u64("id")?);
    }
    if f.has(F::STREAM_ID) {
        r.u64("stream_id")?;
    }
    if f.has(F::CPU) {
        s.cpu = Some(r.u32("cpu")?);
        r.u32("cpu reserved")?;
    }
    if f.has(F::PERIOD) {
        s.period = Some(r.u64("period")?);
    }
    if f.has(F::CALLCHAIN) {
        let nr = r.u64("callchain nr")?;
        let len = usize::try_from(nr).ok().and_then(|n| n.checked_mul(8));
        r.skip(len, "callchain ips")?;
    }
    if f.has(F::RAW) {
        let size = r.u32("raw size")?;
        let len = usize::try_from(size).ok();
        s.raw = Some(r.take(len, "raw data")?.to_vec());
    }
    if f.has(F::WEIGHT) {
        s.weight = Some(r.u64("weight")?);
    }
    if f.has(F::WEIGHT_STRUCT) {
        s.weight = Some(r.u64("weight struct")? & 0xffff_ffff);
    }
    if f.has(F::DATA_SRC) {
        s.data_src = Some(r.u64("data_src")?);
    }
    if f.has(F::TRANSACTION) {
        r.u64("transaction")?;
    }
    if f.has(F::PHYS_ADDR) {
        s.phys_addr = Some(r.u64("phys_addr")?);
    }
    if f.has(F::CGROUP) {
        r.u64("cgroup")?;
    }
    if f.has(F::DATA_PAGE_SIZE) {
        r.u64("data_page_size")?;
    }
    if f.has(F::CODE_PAGE_SIZE) {
        r.u64("code_page_size")?;
    }
    if f.has(F::AUX) {
        let size = r.u64("aux size")?;
        r.skip(usize::try_from(size).ok(), "aux data")?;
    }
    // The kernel sizes samples exactly (RAW carries its own padding): leftover bytes mean the
    // sample_type given is not the one the event was opened with.
    if r.pos != body.len() {
        return Err(RingError::SampleTooLong {
            offset,
            extra: body.len() - r.pos,
        });
    }
    Ok(s)
}

/// A cursor over one record body; errors name the field that did not fit.
struct Reader<'a> {
    body: &'a [u8],
    pos: usize,
    /// Offset of the record in the whole buffer, for error messages.
    offset: usize,
}

impl<'a> Reader<'a> {
    fn new(body: &'a [u8], offset: usize) -> Self {
        Reader {
            body,
            pos: 0,
            offset,
        }
    }

    /// The next `len` bytes (`None` = a length that overflows, which never fits).
    fn take(&mut self, len: Option<usize>, field: &'static str) -> Result<&'a [u8], RingError> {
        let have = self.body.len().saturating_sub(self.pos);
        let slice = len
            .and_then(|len| self.pos.checked_add(len))
            .and_then(|end| self.body.get(self.pos..end));
        match slice {
            Some(bytes) => {
                self.pos += bytes.len();
                Ok(bytes)
            }
            None => Err(RingError::SampleTooShort {
                offset: self.offset,
                field,
                need: len.unwrap_or(usize::MAX),
                have,
            }),
        }
    }

    fn skip(&mut self, len: Option<usize>, field: &'static str) -> Result<(), RingError> {
        self.take(len, field).map(|_| ())
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], RingError> {
        let offset = self.offset;
        let have = self.body.len().saturating_sub(self.pos);
        self.take(Some(N), field)?
            .first_chunk::<N>()
            .copied()
            .ok_or(RingError::SampleTooShort {
                offset,
                field,
                need: N,
                have,
            })
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, RingError> {
        self.array(field).map(u64::from_le_bytes)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, RingError> {
        self.array(field).map(u32::from_le_bytes)
    }
}
