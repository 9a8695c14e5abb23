//! perf-event-data (crates.io) decoding the same bytes into rondpoint's types, to compare with
//! `ring::parse`. The crate reports neither how many bytes it consumed nor where a cut record
//! starts, so the records are framed here by their headers, as rondpoint's parser does, and
//! each is handed to the crate alone. Its `DataSource` keeps the raw u64 private: the value is
//! put back together from its field accessors (bits 0-45; the reserved bits 46-63 are lost).

use perf_event_data::endian::Little;
use perf_event_data::parse::{ParseConfig, ParseError, Parser};
use perf_event_data::{DataSource, Lost, RecordMetadata, Sample, Throttle, Visitor};
use rondpoint_linux::perf::{RawSample, Record};
use std::borrow::Cow;

/// The crate's configuration for an event opened with `sample_type` (and rondpoint's
/// read_format, sample_id_all unset): it takes them only from its bindings' perf_event_attr.
pub fn config(sample_type: u64) -> ParseConfig<Little> {
    let mut attr = perf_event_data_sys::bindings::perf_event_attr::default();
    attr.sample_type = sample_type;
    attr.read_format = rondpoint_linux::sys::READ_FORMAT_TIMES;
    ParseConfig::from(attr)
}

/// The records of `bytes` and the bytes they take; a record cut at the end is left out.
pub fn parse(
    bytes: &[u8],
    config: &ParseConfig<Little>,
) -> Result<(Vec<Record>, usize), ParseError> {
    let mut records = Vec::new();
    let mut offset = 0;
    while let Some(&[.., s0, s1]) = bytes.get(offset..offset + 8) {
        let size = usize::from(u16::from_le_bytes([s0, s1]));
        let Some(record) = bytes.get(offset..offset + size) else {
            break;
        };
        // A size below the header's 8 bytes is the crate's error to report.
        records.push(Parser::new(record, config.clone()).parse_record(Convert)?);
        offset += size;
    }
    Ok((records, offset))
}

/// PERF_SAMPLE_DATA_SRC from the crate's accessors, each field back at its bit offset.
pub fn data_src_bits(d: &DataSource) -> u64 {
    d.mem_op().bits()
        | d.mem_lvl().bits() << 5
        | d.mem_snoop().bits() // mem_snoop and mem_snoopx, already at bits 19 and 38
        | d.mem_lock().bits() << 24
        | d.mem_dtlb().bits() << 26
        | u64::from(u8::from(d.mem_lvl_num())) << 33
        | u64::from(d.mem_remote()) << 37
        | d.mem_blk().bits() << 40
        | u64::from(d.mem_hops()) << 43
}

fn sample(s: &Sample<'_>, misc: u16) -> RawSample {
    RawSample {
        misc,
        id: s.id(),
        ip: s.ip(),
        pid: s.pid(),
        tid: s.tid(),
        time: s.time(),
        addr: s.addr(),
        cpu: s.cpu(),
        period: s.period(),
        weight: s.weight(),
        data_src: s.data_src().as_ref().map(data_src_bits),
        phys_addr: s.phys_addr(),
        raw: s.raw().map(<[u8]>::to_vec),
    }
}

/// Turns each record the crate parses into rondpoint's [`Record`].
struct Convert;

impl<'a> Visitor<'a> for Convert {
    type Output = Record;

    fn visit_unimplemented(self, metadata: RecordMetadata) -> Record {
        Record::Other {
            kind: metadata.ty(),
        }
    }

    fn visit_sample(self, record: Sample<'a>, metadata: RecordMetadata) -> Record {
        Record::Sample(sample(&record, metadata.misc()))
    }

    fn visit_lost(self, record: Lost, _: RecordMetadata) -> Record {
        Record::Lost {
            id: record.id,
            lost: record.lost,
        }
    }

    fn visit_throttle(self, _: Throttle, _: RecordMetadata) -> Record {
        Record::Throttle
    }

    fn visit_unthrottle(self, _: Throttle, _: RecordMetadata) -> Record {
        Record::Unthrottle
    }

    fn visit_unknown(self, _: Cow<'a, [u8]>, metadata: RecordMetadata) -> Record {
        Record::Other {
            kind: metadata.ty(),
        }
    }
}
