//! The perf data layer on real and hand-built bytes: ring-buffer records captured with
//! `perf record` on the development VM (tests/data/pagefault-records.{bin,txt}), synthetic
//! records for every error path, and an AMD IBS payload through the parser. (The bit-level
//! PERF_SAMPLE_DATA_SRC and IBS decoding tests are unit tests in src/perf/datasrc.rs; CPU
//! detection from /proc/cpuinfo text is tested with the PMU catalogue, in tests/pmu.rs.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_linux::perf::{
    DataSource, Record, RingError, SampleFormat, decode_data_src, decode_ibs_op, parse,
};

type F = SampleFormat;

const PAGEFAULT_BIN: &[u8] = include_bytes!("data/pagefault-records.bin");
const PAGEFAULT_TXT: &str = include_str!("data/pagefault-records.txt");
/// The sample_type perf used (`perf evlist -v`): IP|TID|TIME|ADDR|CPU|DATA_SRC.
const PAGEFAULT_FORMAT: SampleFormat = SampleFormat {
    sample_type: 0x808f,
};

fn samples(records: &[Record]) -> Vec<&rondpoint_linux::perf::RawSample> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Sample(s) => Some(s),
            _ => None,
        })
        .collect()
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

// ---- real records ------------------------------------------------------------------------

#[test]
fn real_pagefault_records_decode_like_perf() {
    assert_eq!(
        PAGEFAULT_FORMAT.sample_type,
        F::IP | F::TID | F::TIME | F::ADDR | F::CPU | F::DATA_SRC
    );
    let (records, consumed) = parse(PAGEFAULT_BIN, &PAGEFAULT_FORMAT).unwrap();
    assert_eq!(
        consumed,
        PAGEFAULT_BIN.len(),
        "a perf.data data section ends on a record"
    );
    let samples = samples(&records);
    assert_eq!(samples.len(), 103, "perf script printed 103 samples");
    // The non-sample records perf wrote around them are skipped, not misread.
    assert!(
        records
            .iter()
            .any(|r| matches!(r, Record::Other { kind: 10 })),
        "MMAP2"
    );
    assert!(
        records
            .iter()
            .any(|r| matches!(r, Record::Other { kind: 3 })),
        "COMM"
    );

    let expected: Vec<Vec<&str>> = PAGEFAULT_TXT
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(expected.len(), 5);
    for row in &expected {
        let n: usize = row[0].parse().unwrap();
        let s = samples[n];
        assert_eq!(s.time, Some(row[1].parse().unwrap()), "sample {n} time");
        assert_eq!(s.pid, Some(row[2].parse().unwrap()), "sample {n} pid");
        assert_eq!(s.tid, Some(row[3].parse().unwrap()), "sample {n} tid");
        assert_eq!(s.cpu, Some(row[4].parse().unwrap()), "sample {n} cpu");
        assert_eq!(s.ip, Some(hex(row[5])), "sample {n} ip");
        assert_eq!(s.addr, Some(hex(row[6])), "sample {n} addr");
        assert_eq!(s.data_src, Some(hex(row[7])), "sample {n} data_src");
        assert_eq!(s.period, None);
        assert_eq!(s.raw, None);
    }
    // perf script: every sample 10274/10274 on CPU 1, the last at 7f2ce83a2dec.
    assert!(
        samples
            .iter()
            .all(|s| s.pid == Some(10274) && s.tid == Some(10274))
    );
    assert!(samples.iter().all(|s| s.cpu == Some(1)));
    assert_eq!(samples.last().unwrap().addr, Some(0x7f2c_e83a_2dec));
    // Samples are in time order within one CPU's buffer.
    assert!(samples.windows(2).all(|w| w[0].time <= w[1].time));
    // A software event has no memory-level information: PERF_MEM_NA in every field.
    assert_eq!(
        decode_data_src(samples[0].data_src.unwrap()),
        DataSource::Unknown
    );
}

#[test]
fn real_records_split_anywhere_give_the_same_records() {
    let (whole, _) = parse(PAGEFAULT_BIN, &PAGEFAULT_FORMAT).unwrap();
    for split in [1, 7, 8, 9, 100, 1157, 4096, 6000, PAGEFAULT_BIN.len() - 3] {
        let (mut first, consumed) = parse(&PAGEFAULT_BIN[..split], &PAGEFAULT_FORMAT).unwrap();
        assert!(consumed <= split);
        // The caller keeps the unconsumed tail and prepends it to the next read.
        let (rest, consumed_rest) = parse(&PAGEFAULT_BIN[consumed..], &PAGEFAULT_FORMAT).unwrap();
        assert_eq!(
            consumed + consumed_rest,
            PAGEFAULT_BIN.len(),
            "split at {split}"
        );
        first.extend(rest);
        assert_eq!(first, whole, "split at {split}");
    }
}

#[test]
fn real_records_with_the_wrong_sample_type_are_refused() {
    let without_data_src = SampleFormat::new(PAGEFAULT_FORMAT.sample_type & !F::DATA_SRC);
    let err = parse(PAGEFAULT_BIN, &without_data_src).unwrap_err();
    assert!(
        matches!(err, RingError::SampleTooLong { extra: 8, .. }),
        "{err}"
    );
    let with_period = SampleFormat::new(PAGEFAULT_FORMAT.sample_type | F::PERIOD);
    let err = parse(PAGEFAULT_BIN, &with_period).unwrap_err();
    assert!(
        matches!(
            err,
            RingError::SampleTooShort {
                field: "data_src",
                ..
            }
        ),
        "{err}"
    );
}

// ---- synthetic records --------------------------------------------------------------------

/// A record: header (type, misc, size) then the body.
fn record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let size = u16::try_from(8 + body.len()).unwrap();
    let mut out = kind.to_le_bytes().to_vec();
    out.extend(misc.to_le_bytes());
    out.extend(size.to_le_bytes());
    out.extend(body);
    out
}

fn u64s(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn size_below_header_is_an_error() {
    for size in [0u16, 4, 7] {
        let mut bytes = record(99, 0, &[]);
        bytes[6..8].copy_from_slice(&size.to_le_bytes());
        let err = parse(&bytes, &SampleFormat::default()).unwrap_err();
        assert_eq!(err, RingError::SizeBelowHeader { offset: 0, size });
    }
}

#[test]
fn partial_record_at_the_end_is_not_consumed() {
    let full = record(9, 0, &u64s(&[0x1234]));
    let format = SampleFormat::new(F::ADDR);
    let mut bytes = full.clone();
    bytes.extend(&full[..5]); // not even a whole header
    assert_eq!(parse(&bytes, &format).unwrap().1, full.len());
    let mut bytes = full.clone();
    bytes.extend(&full[..12]); // header, half the body
    let (records, consumed) = parse(&bytes, &format).unwrap();
    assert_eq!((records.len(), consumed), (1, full.len()));
    assert_eq!(parse(&[], &format).unwrap(), (vec![], 0));
}

#[test]
fn short_sample_names_the_missing_field() {
    let format = SampleFormat::new(F::IP | F::TID | F::ADDR);
    let bytes = record(9, 0, &u64s(&[0xffff_0000, 42 | (43 << 32)])); // no addr
    let err = parse(&bytes, &format).unwrap_err();
    assert_eq!(
        err,
        RingError::SampleTooShort {
            offset: 0,
            field: "addr",
            need: 8,
            have: 0
        }
    );
    assert!(err.to_string().contains("addr"));
    let bytes = record(9, 0, &[1, 2, 3, 4]);
    let err = parse(&bytes, &SampleFormat::new(F::CPU)).unwrap_err();
    assert!(
        matches!(
            err,
            RingError::SampleTooShort {
                field: "cpu reserved",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn lost_throttle_and_unknown_records() {
    let mut bytes = record(2, 0, &u64s(&[7, 1500]));
    bytes.extend(record(5, 0, &u64s(&[1, 7, 7]))); // THROTTLE: time, id, stream_id
    bytes.extend(record(6, 0, &u64s(&[2, 7, 7])));
    bytes.extend(record(99, 0, &[0xaa; 24])); // unknown: skipped by its size
    bytes.extend(record(9, 0, &u64s(&[0x5000])));
    let (records, consumed) = parse(&bytes, &SampleFormat::new(F::ADDR)).unwrap();
    assert_eq!(consumed, bytes.len());
    assert_eq!(records[0], Record::Lost { id: 7, lost: 1500 });
    assert_eq!(records[1], Record::Throttle);
    assert_eq!(records[2], Record::Unthrottle);
    assert_eq!(records[3], Record::Other { kind: 99 });
    let Record::Sample(s) = &records[4] else {
        panic!("{:?}", records[4])
    };
    assert_eq!(s.addr, Some(0x5000));

    let err = parse(&record(2, 0, &u64s(&[7])), &SampleFormat::default()).unwrap_err();
    assert_eq!(
        err,
        RingError::RecordTooShort {
            offset: 0,
            kind: 2,
            need: 16,
            have: 8
        }
    );
}

#[test]
fn every_supported_field_in_kernel_order() {
    let format = SampleFormat::new(
        F::IDENTIFIER
            | F::IP
            | F::TID
            | F::TIME
            | F::ADDR
            | F::STREAM_ID
            | F::CPU
            | F::PERIOD
            | F::CALLCHAIN
            | F::RAW
            | F::WEIGHT_STRUCT
            | F::DATA_SRC
            | F::TRANSACTION
            | F::PHYS_ADDR
            | F::CGROUP
            | F::DATA_PAGE_SIZE
            | F::CODE_PAGE_SIZE
            | F::AUX,
    );
    let mut body = u64s(&[77, 0x40_1000, 10 | (11 << 32), 123_456, 0x7f00_0000_1000, 5]);
    body.extend(u64s(&[3 | (1 << 32), 4000])); // cpu 3, res 1; period
    body.extend(u64s(&[2, 0xa, 0xb])); // callchain nr 2
    body.extend(12u32.to_le_bytes()); // raw: size 12 (8 data + 4 padding, aligning u32 + data)
    body.extend([1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0]);
    body.extend(u64s(&[(9 << 48) | (8 << 32) | 250])); // weight struct: var1_dw = 250
    body.extend(u64s(&[0x1234, 0, 0x1_2345_6000, 99, 4096, 4096])); // data_src .. code_page
    body.extend(u64s(&[16, 0, 0])); // aux: size 16, then 16 bytes
    let bytes = record(9, 2, &body);
    let (records, consumed) = parse(&bytes, &format).unwrap();
    assert_eq!(consumed, bytes.len());
    let Record::Sample(s) = &records[0] else {
        panic!()
    };
    assert_eq!(s.misc, 2);
    assert_eq!(s.id, Some(77));
    assert_eq!((s.ip, s.pid, s.tid), (Some(0x40_1000), Some(10), Some(11)));
    assert_eq!(
        (s.time, s.addr, s.cpu),
        (Some(123_456), Some(0x7f00_0000_1000), Some(3))
    );
    assert_eq!(s.period, Some(4000));
    assert_eq!(
        s.raw.as_deref(),
        Some(&[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0][..])
    );
    assert_eq!(s.weight, Some(250));
    assert_eq!(
        (s.data_src, s.phys_addr),
        (Some(0x1234), Some(0x1_2345_6000))
    );

    // WEIGHT (the plain u64) and ID after ADDR.
    let format = SampleFormat::new(F::ADDR | F::ID | F::WEIGHT);
    let (records, _) = parse(&record(9, 0, &u64s(&[1, 2, 1 << 40])), &format).unwrap();
    let Record::Sample(s) = &records[0] else {
        panic!()
    };
    assert_eq!((s.addr, s.id, s.weight), (Some(1), Some(2), Some(1 << 40)));
}

#[test]
fn raw_size_beyond_the_body_is_an_error() {
    let mut body = 100u32.to_le_bytes().to_vec();
    body.extend([0u8; 12]);
    let err = parse(&record(9, 0, &body), &SampleFormat::new(F::RAW)).unwrap_err();
    assert!(matches!(
        err,
        RingError::SampleTooShort {
            field: "raw data",
            need: 100,
            ..
        }
    ));
    let err = parse(
        &record(9, 0, &u64s(&[u64::MAX])),
        &SampleFormat::new(F::CALLCHAIN),
    );
    assert!(matches!(
        err,
        Err(RingError::SampleTooShort {
            field: "callchain ips",
            ..
        })
    ));
}

#[test]
fn ibs_raw_payload_through_the_parser() {
    // caps, then IbsOpCtl, IbsOpRip, IbsOpData, IbsOpData2 (DRAM, remote node), IbsOpData3
    // (load, DC miss, linear and physical address valid), IbsDcLinAd, IbsDcPhysAd: 60 bytes, so
    // that with its u32 size the RAW field is 64 bytes and needs no padding.
    let mut raw = 0x3ffu32.to_le_bytes().to_vec();
    let op_data3 = 1 | (1 << 7) | (1 << 17) | (1 << 18);
    raw.extend(u64s(&[
        1 << 18,
        0x40_1234,
        0,
        3 | (1 << 4),
        op_data3,
        0x7f00_1000,
        0x9_1000,
    ]));
    let mut body = u64s(&[0x40_1234, 12 | (12 << 32)]);
    body.extend(u32::try_from(raw.len()).unwrap().to_le_bytes());
    body.extend(&raw);
    let format = SampleFormat::new(F::IP | F::TID | F::RAW);
    let (records, consumed) = parse(&record(9, 0, &body), &format).unwrap();
    assert_eq!(consumed, 8 + body.len());
    let Record::Sample(s) = &records[0] else {
        panic!("{:?}", records[0])
    };
    assert_eq!(s.raw.as_deref(), Some(&raw[..]));
    let op = decode_ibs_op(s.raw.as_deref().unwrap()).unwrap();
    assert_eq!(
        (op.lin_addr, op.phys_addr),
        (Some(0x7f00_1000), Some(0x9_1000))
    );
    assert_eq!(op.data_source(), DataSource::RemoteDram);
}

#[test]
fn refused_sample_type_bits() {
    let bytes = record(9, 0, &[0; 64]);
    for bits in [
        F::READ,
        F::BRANCH_STACK,
        F::REGS_USER,
        F::STACK_USER,
        F::REGS_INTR,
        1 << 30,
    ] {
        let err = parse(&bytes, &SampleFormat::new(F::IP | bits)).unwrap_err();
        assert_eq!(err, RingError::Unsupported { bits });
    }
    // Refused even when the buffer holds no sample.
    assert!(parse(&[], &SampleFormat::new(F::READ)).is_err());
    let both = F::WEIGHT | F::WEIGHT_STRUCT;
    assert_eq!(
        parse(&[], &SampleFormat::new(both)),
        Err(RingError::Unsupported { bits: both })
    );
}

#[test]
fn aux_and_cpu_wide_switch_records() {
    // SPE's event: sample_type TID | TIME | CPU with sample_id_all (machine/precise.rs).
    let f = SampleFormat::new(F::TID | F::TIME | F::CPU);
    // PERF_RECORD_AUX: offset, size, flags (TRUNCATED), then its sample id.
    let mut bytes = record(11, 0, &u64s(&[4096, 65536, 1, 0, 0, 0]));
    // Switch in: the sample id's task (pid 40, tid 41 at 1000 ns) starts running.
    let mut switch_in = u64s(&[0]);
    switch_in.extend(u64s(&[41 << 32 | 40, 1000, 3]));
    bytes.extend(record(15, 0, &switch_in));
    // Switch out (misc bit 13) of that task: the next one is the record's own pid/tid.
    let mut switch_out = u64s(&[51 << 32 | 50]);
    switch_out.extend(u64s(&[41 << 32 | 40, 2000, 3]));
    bytes.extend(record(15, 1 << 13, &switch_out));
    // Without a sample id (sample_id_all off), a switch in says nothing usable.
    bytes.extend(record(15, 0, &u64s(&[0])));
    let (records, consumed) = parse(&bytes, &f).unwrap();
    assert_eq!(consumed, bytes.len());
    assert_eq!(
        records,
        [
            Record::Aux {
                offset: 4096,
                size: 65536,
                flags: 1
            },
            Record::Switch {
                pid: 40,
                tid: 41,
                time: Some(1000)
            },
            Record::Switch {
                pid: 50,
                tid: 51,
                time: Some(2000)
            },
            Record::Other { kind: 15 },
        ]
    );
    let err = parse(&record(11, 0, &u64s(&[1])), &f).unwrap_err();
    assert!(
        matches!(err, RingError::RecordTooShort { kind: 11, .. }),
        "{err}"
    );
}
