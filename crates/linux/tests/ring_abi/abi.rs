//! A writer of perf ring records as the kernel lays them out, independent of both parsers it
//! checks: the order and sizes are those of `struct perf_event_header` and the
//! PERF_RECORD_SAMPLE / LOST / THROTTLE / COMM comments of include/uapi/linux/perf_event.h,
//! with PERF_SAMPLE_RAW sized and padded as perf_prepare_sample does (the u32 size counts the
//! padding, so that size + 4 is a multiple of 8) and PERF_SAMPLE_AUX data a multiple of 8
//! bytes. The constants are retyped from the header on purpose, not taken from either parser.
//! rondpoint never sets sample_id_all, so no record carries the sample_id trailer.

use rondpoint_linux::machine::PAGE_FAULT_FORMAT;
use rondpoint_linux::perf::{RawSample, Record};
use rondpoint_linux::pmu::{self, attrs::CpuIdent};
use rondpoint_linux::sysfs::SysfsRoot;
use std::collections::BTreeSet;
use std::path::PathBuf;

pub const IP: u64 = 1 << 0;
pub const TID: u64 = 1 << 1;
pub const TIME: u64 = 1 << 2;
pub const ADDR: u64 = 1 << 3;
pub const CALLCHAIN: u64 = 1 << 5;
pub const ID: u64 = 1 << 6;
pub const CPU: u64 = 1 << 7;
pub const PERIOD: u64 = 1 << 8;
pub const STREAM_ID: u64 = 1 << 9;
pub const RAW: u64 = 1 << 10;
pub const WEIGHT: u64 = 1 << 14;
pub const DATA_SRC: u64 = 1 << 15;
pub const IDENTIFIER: u64 = 1 << 16;
pub const TRANSACTION: u64 = 1 << 17;
pub const PHYS_ADDR: u64 = 1 << 19;
pub const AUX: u64 = 1 << 20;
pub const CGROUP: u64 = 1 << 21;
pub const DATA_PAGE_SIZE: u64 = 1 << 22;
pub const CODE_PAGE_SIZE: u64 = 1 << 23;
pub const WEIGHT_STRUCT: u64 = 1 << 24;

const RECORD_COMM: u32 = 3;
const RECORD_LOST: u32 = 2;
const RECORD_THROTTLE: u32 = 5;
const RECORD_UNTHROTTLE: u32 = 6;
const RECORD_SAMPLE: u32 = 9;

/// Every value a PERF_RECORD_SAMPLE can carry in the fields rondpoint's parser reads or skips.
#[derive(Clone, Debug, Default)]
pub struct Fields {
    pub misc: u16,
    /// Written for both IDENTIFIER and ID: the kernel writes `data->id` for each.
    pub id: u64,
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub addr: u64,
    pub stream_id: u64,
    pub cpu: u32,
    pub period: u64,
    pub callchain: Vec<u64>,
    /// The payload before the kernel's padding.
    pub raw: Vec<u8>,
    /// The u64 of PERF_SAMPLE_WEIGHT, or `union perf_sample_weight` (var1_dw in the low 32
    /// bits) for PERF_SAMPLE_WEIGHT_STRUCT.
    pub weight: u64,
    pub data_src: u64,
    pub transaction: u64,
    pub phys_addr: u64,
    pub cgroup: u64,
    pub data_page_size: u64,
    pub code_page_size: u64,
    /// A multiple of 8 bytes.
    pub aux: Vec<u8>,
}

/// One record to write.
#[derive(Clone, Debug)]
pub enum Rec {
    Sample(Fields),
    Lost { id: u64, lost: u64 },
    Throttle { time: u64, id: u64, stream_id: u64 },
    Unthrottle { time: u64, id: u64, stream_id: u64 },
    Comm { pid: u32, tid: u32, comm: Vec<u8> },
}

/// PERF_SAMPLE_RAW's `u32 size`: the payload rounded up so that size + 4 is a multiple of 8.
pub fn raw_size(len: usize) -> usize {
    (len + 4).next_multiple_of(8) - 4
}

/// The body of a PERF_RECORD_SAMPLE, in perf_output_sample's order.
fn sample_body(sample_type: u64, f: &Fields) -> Vec<u8> {
    let mut b = Vec::new();
    let has = |bit: u64| sample_type & bit != 0;
    let u64s = |b: &mut Vec<u8>, bit: u64, v: u64| {
        if has(bit) {
            b.extend_from_slice(&v.to_le_bytes());
        }
    };
    u64s(&mut b, IDENTIFIER, f.id);
    u64s(&mut b, IP, f.ip);
    if has(TID) {
        b.extend_from_slice(&f.pid.to_le_bytes());
        b.extend_from_slice(&f.tid.to_le_bytes());
    }
    u64s(&mut b, TIME, f.time);
    u64s(&mut b, ADDR, f.addr);
    u64s(&mut b, ID, f.id);
    u64s(&mut b, STREAM_ID, f.stream_id);
    if has(CPU) {
        b.extend_from_slice(&f.cpu.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // res
    }
    u64s(&mut b, PERIOD, f.period);
    if has(CALLCHAIN) {
        b.extend_from_slice(&(f.callchain.len() as u64).to_le_bytes());
        f.callchain
            .iter()
            .for_each(|ip| b.extend_from_slice(&ip.to_le_bytes()));
    }
    if has(RAW) {
        let size = raw_size(f.raw.len());
        b.extend_from_slice(&(size as u32).to_le_bytes());
        b.extend_from_slice(&f.raw);
        b.resize(b.len() + size - f.raw.len(), 0);
    }
    u64s(&mut b, WEIGHT | WEIGHT_STRUCT, f.weight);
    u64s(&mut b, DATA_SRC, f.data_src);
    u64s(&mut b, TRANSACTION, f.transaction);
    u64s(&mut b, PHYS_ADDR, f.phys_addr);
    u64s(&mut b, CGROUP, f.cgroup);
    u64s(&mut b, DATA_PAGE_SIZE, f.data_page_size);
    u64s(&mut b, CODE_PAGE_SIZE, f.code_page_size);
    if has(AUX) {
        b.extend_from_slice(&(f.aux.len() as u64).to_le_bytes());
        b.extend_from_slice(&f.aux);
    }
    b
}

fn u64_body(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Appends one record, header included.
pub fn write(out: &mut Vec<u8>, sample_type: u64, rec: &Rec) {
    let (kind, misc, body) = match rec {
        Rec::Sample(f) => (RECORD_SAMPLE, f.misc, sample_body(sample_type, f)),
        Rec::Lost { id, lost } => (RECORD_LOST, 0, u64_body(&[*id, *lost])),
        Rec::Throttle {
            time,
            id,
            stream_id,
        } => (RECORD_THROTTLE, 0, u64_body(&[*time, *id, *stream_id])),
        Rec::Unthrottle {
            time,
            id,
            stream_id,
        } => (RECORD_UNTHROTTLE, 0, u64_body(&[*time, *id, *stream_id])),
        Rec::Comm { pid, tid, comm } => {
            // `char comm[]`: NUL-terminated, padded with NULs to a multiple of 8.
            let mut b = [pid.to_le_bytes(), tid.to_le_bytes()].concat();
            b.extend_from_slice(comm);
            b.resize((b.len() + 1).next_multiple_of(8), 0);
            (RECORD_COMM, 0, b)
        }
    };
    let size = u16::try_from(8 + body.len()).expect("test records fit a u16 size");
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&body);
}

/// What a parser should return for `rec`, in rondpoint's types: the values written, the RAW
/// payload with its padding, WEIGHT_STRUCT's var1_dw.
pub fn expected(sample_type: u64, rec: &Rec) -> Record {
    let f = match rec {
        Rec::Sample(f) => f,
        Rec::Lost { id, lost } => {
            return Record::Lost {
                id: *id,
                lost: *lost,
            };
        }
        Rec::Throttle { .. } => return Record::Throttle,
        Rec::Unthrottle { .. } => return Record::Unthrottle,
        Rec::Comm { .. } => return Record::Other { kind: RECORD_COMM },
    };
    let has = |bit: u64| sample_type & bit != 0;
    let when = |bit: u64, v: u64| has(bit).then_some(v);
    Record::Sample(RawSample {
        misc: f.misc,
        id: when(ID | IDENTIFIER, f.id),
        ip: when(IP, f.ip),
        pid: has(TID).then_some(f.pid),
        tid: has(TID).then_some(f.tid),
        time: when(TIME, f.time),
        addr: when(ADDR, f.addr),
        cpu: has(CPU).then_some(f.cpu),
        period: when(PERIOD, f.period),
        weight: when(WEIGHT, f.weight).or(when(WEIGHT_STRUCT, f.weight & 0xffff_ffff)),
        data_src: when(DATA_SRC, f.data_src),
        phys_addr: when(PHYS_ADDR, f.phys_addr),
        raw: has(RAW).then(|| {
            let mut raw = f.raw.clone();
            raw.resize(raw_size(raw.len()), 0);
            raw
        }),
    })
}

/// A ring of `recs` cut after `cut` bytes, with the records a parser should return from it
/// and the bytes it should consume (the end of the last whole record).
pub fn ring(sample_type: u64, recs: &[Rec], cut: usize) -> (Vec<u8>, Vec<Record>, usize) {
    let mut bytes = Vec::new();
    let mut whole = Vec::new();
    let mut consumed = 0;
    for rec in recs {
        write(&mut bytes, sample_type, rec);
        if bytes.len() <= cut {
            whole.push(expected(sample_type, rec));
            consumed = bytes.len();
        }
    }
    bytes.truncate(cut);
    (bytes, whole, consumed)
}

/// The PMU fixture trees (tests/fixtures/pmu), each as its PMUs and perf's CPU id.
fn pmu_fixtures() -> Vec<(String, Vec<pmu::Pmu>, Option<CpuIdent>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pmu");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&root).expect("tests/fixtures/pmu") {
        let dir = entry.expect("a fixture").path();
        if !dir.join("bus").is_dir() {
            continue; // proc/, SOURCES.md
        }
        let pmus = pmu::detect(&SysfsRoot::new(&dir)).expect("a PMU fixture tree");
        let cpu = std::fs::read_to_string(dir.join("perf-cpuid"))
            .ok()
            .and_then(|t| CpuIdent::parse_perf_cpuid(&t));
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        out.push((name.unwrap_or_default(), pmus, cpu));
    }
    out
}

/// Every sample_type rondpoint opens a sampling event with, from the code that opens them:
/// the page-fault sampler's, and each precise sampler that `pmu::attrs::plan` gives on the
/// PMU fixtures (IBS op on Zen 4, PEBS on Sapphire Rapids, SPE on Neoverse).
pub fn requested_sample_types() -> BTreeSet<u64> {
    let mut types = BTreeSet::from([PAGE_FAULT_FORMAT.sample_type]);
    for (_, pmus, cpu) in pmu_fixtures() {
        let plan = pmu::attrs::plan(&pmus, cpu.as_ref());
        types.extend(
            plan.attrs
                .iter()
                .filter(|a| a.attr.sample_period != 0)
                .map(|a| a.attr.sample_type),
        );
    }
    types
}
