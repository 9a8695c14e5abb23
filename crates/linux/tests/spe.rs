//! rondpoint's Arm SPE packet decoder (src/perf/spe.rs) against perf's own: a stream of every
//! packet kind rondpoint reads, and some thousands of pseudo-random ones, is written into a
//! perf.data file as one AUXTRACE record of an arm_spe PMU, `perf report -D` dumps it with
//! perf's decoder (tools/perf/util/arm-spe-decoder, built into perf on every architecture), and
//! every packet's offset and description must be the same as rondpoint's decoding, written in
//! perf's words.
//!
//! Needs Debian's linux-perf. Without it the comparison is skipped with a message, unless
//! RONDPOINT_PERF=required (scripts/test sets it after installing perf), where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rondpoint_linux::perf::spe::{Packet, packet_at};
use std::process::Command;

/// A deterministic pseudo-random sequence (xorshift64*): the same stream on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Size bits (5:4) of a header for a payload of `len` bytes.
fn size_bits(len: usize) -> u8 {
    (len.trailing_zeros() as u8) << 4
}

fn push_value(out: &mut Vec<u8>, value: u64, len: usize) {
    out.extend(&value.to_le_bytes()[..len]);
}

/// Appends one random packet of the kinds rondpoint decodes, encoded per the Arm ARM.
fn random_packet(rng: &mut Rng, out: &mut Vec<u8>) {
    let value = rng.next();
    match rng.below(11) {
        0 => out.push(0x00),
        1 => out.push(0x01),
        2 => {
            out.push(0x71);
            push_value(out, value >> 8, 8);
        }
        3 => {
            let len = [1, 2, 4][rng.below(3) as usize];
            out.push(0x42 | size_bits(len));
            // Bits perf names: 0-11, 17 and 18.
            push_value(out, value & 0x6_0fff, len);
        }
        4 => {
            let len = [1, 2][rng.below(2) as usize];
            out.push(0x43 | size_bits(len));
            push_value(out, value, len);
        }
        5 => {
            out.push(0x64 | rng.below(2) as u8);
            push_value(out, value, 4);
        }
        6 => {
            // Classes 0 (other), 1 (load/store: GP register, load or store), 2 (branch).
            let class = rng.below(3) as u8;
            out.push(0x48 | class);
            out.push((value & 1) as u8);
        }
        7 | 8 => {
            let index = rng.below(4) as u8;
            out.push(0xb0 | index);
            push_value(out, value, 8);
        }
        9 => {
            let index = rng.below(3) as u8;
            out.push(0x98 | index);
            push_value(out, value, 2);
        }
        _ => {
            // An extended header: a counter of index 8-31 (perf prints no name for it).
            let index = 8 + rng.below(24) as u8;
            out.push(0x20 | (index >> 3));
            out.push(0x98 | (index & 7));
            push_value(out, value, 2);
        }
    }
}

/// The stream: one record of each kind rondpoint reads (a load, a store), then random packets.
fn stream() -> Vec<u8> {
    let mut b = vec![0xb2];
    b.extend(0x0000_7f12_3456_7890u64.to_le_bytes());
    b.extend([
        0x98, 0x2c, 0x01, 0x49, 0x00, 0x52, 0x04, 0x06, 0x65, 0x39, 0x05, 0x00, 0x00,
    ]);
    b.push(0x71);
    b.extend(12_345u64.to_le_bytes());
    b.extend([
        0xb2, 0x08, 0x10, 0, 0, 0x55, 0x55, 0, 0xf0, 0x49, 0x01, 0x01,
    ]);
    // Alignment padding to 4 bytes (perf aligns to its buffer's address, which is 8-byte
    // aligned: larger alignments are unit tests).
    b.extend([0x21, 0x00]);
    let mut rng = Rng(0x5eed_0000_0000_0001);
    for _ in 0..4000 {
        random_packet(&mut rng, &mut b);
    }
    b
}

/// A packet described in perf's words (arm_spe_pkt_desc in perf 6.1).
fn describe(p: Packet) -> String {
    const EVENTS: [(u32, &str); 14] = [
        (0, "EXCEPTION-GEN"),
        (1, "RETIRED"),
        (2, "L1D-ACCESS"),
        (3, "L1D-REFILL"),
        (4, "TLB-ACCESS"),
        (5, "TLB-REFILL"),
        (6, "NOT-TAKEN"),
        (7, "MISPRED"),
        (8, "LLC-ACCESS"),
        (9, "LLC-REFILL"),
        (10, "REMOTE-ACCESS"),
        (11, "ALIGNMENT"),
        (17, "SVE-PARTIAL-PRED"),
        (18, "SVE-EMPTY-PRED"),
    ];
    match p {
        Packet::Pad => "PAD".into(),
        Packet::End => "END".into(),
        Packet::Timestamp(t) => format!("TS {}", t as i64),
        Packet::Events { bits, .. } => {
            let mut s = String::from("EV");
            for (bit, name) in EVENTS {
                if bits & (1 << bit) != 0 {
                    s += &format!(" {name}");
                }
            }
            s
        }
        Packet::DataSource(v) => format!("DATA-SOURCE {}", v as i64),
        Packet::Context { index, value } => format!("CONTEXT {value:#x} el{}", index + 1),
        Packet::Operation { class, payload } => match (class, payload & 1) {
            (0, 0) => "OTHER INSN-OTHER".into(),
            (0, _) => "OTHER COND-SELECT".into(),
            (1, 0) => "LD GP-REG".into(),
            (1, _) => "ST GP-REG".into(),
            (_, 0) => "B".into(),
            (_, _) => "B COND".into(),
        },
        Packet::Address { index, payload } => {
            let addr = payload & 0x00ff_ffff_ffff_ffff;
            let ns = payload >> 63;
            match index {
                0 | 1 => format!(
                    "{} {addr:#x} el{} ns={ns}",
                    ["PC", "TGT"][index as usize],
                    (payload >> 61) & 3
                ),
                2 => format!("VA {payload:#x}"),
                3 => format!(
                    "PA {addr:#x} ns={ns} ch={} pat={:x}",
                    (payload >> 62) & 1,
                    (payload >> 56) & 0xf
                ),
                i => format!("ADDR {payload:#x} ({i})"),
            }
        }
        Packet::Counter { index, value } => {
            let kind = match index {
                0 => "TOT",
                1 => "ISSUE",
                2 => "XLAT",
                _ => "",
            };
            format!("LAT {} {kind}", value as u16)
        }
    }
}

/// rondpoint's decoding of the stream, a (offset, description) per packet, with runs of
/// padding merged as perf prints them (up to 16 bytes on one line).
fn ours(data: &[u8]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let (p, mut len) = packet_at(data, at).unwrap();
        if p == Packet::Pad {
            while len < 16 && data.get(at + len) == Some(&0) {
                len += 1;
            }
        }
        out.push((at, describe(p).trim_end().to_string()));
        at += len;
    }
    out
}

/// A perf.data file holding `data` as one arm_spe AUXTRACE record (PMU type 9): the file
/// header, one perf_event_attr (PERF_ATTR_SIZE_VER7, 128 bytes), and the data section's two
/// records (tools/perf/util/header.h, include/uapi/linux/perf_event.h, tools/lib/perf/include/
/// perf/event.h).
fn perf_data(data: &[u8]) -> Vec<u8> {
    const SPE_TYPE: u64 = 9;
    let mut attr = Vec::new();
    attr.extend((SPE_TYPE as u32).to_le_bytes());
    attr.extend(128u32.to_le_bytes());
    attr.extend(1u64.to_le_bytes()); // config: ts_enable
    attr.resize(128, 0);
    attr.extend([0u8; 16]); // the attr's ids section: none
    let mut body = Vec::new();
    // PERF_RECORD_AUXTRACE_INFO (70): type PERF_AUXTRACE_ARM_SPE (4), priv: PMU type, per-CPU.
    body.extend(70u32.to_le_bytes());
    body.extend(0u16.to_le_bytes());
    body.extend(32u16.to_le_bytes());
    body.extend(4u32.to_le_bytes());
    body.extend(0u32.to_le_bytes());
    body.extend(SPE_TYPE.to_le_bytes());
    body.extend(1u64.to_le_bytes());
    // PERF_RECORD_AUXTRACE (71): size, offset, reference, idx, tid, cpu, reserved; the data
    // follows the 48-byte record, padded to 8 bytes.
    let mut padded = data.to_vec();
    padded.resize(data.len().next_multiple_of(8), 0);
    body.extend(71u32.to_le_bytes());
    body.extend(0u16.to_le_bytes());
    body.extend(48u16.to_le_bytes());
    for v in [padded.len() as u64, 0, 0] {
        body.extend(v.to_le_bytes());
    }
    for v in [0u32, 1234, 0, 0] {
        body.extend(v.to_le_bytes());
    }
    body.extend(&padded);
    let header_size = 104u64;
    let mut f = Vec::new();
    f.extend(b"PERFILE2");
    for v in [
        header_size,
        attr.len() as u64,
        header_size,
        attr.len() as u64,
        header_size + attr.len() as u64,
        body.len() as u64,
        0,
        0,
    ] {
        f.extend(v.to_le_bytes());
    }
    f.extend([0u8; 32]); // no feature sections
    f.extend(&attr);
    f.extend(&body);
    f
}

/// perf's decoding: the (offset, description) lines of its SPE dump.
fn perfs(report: &str) -> Vec<(usize, String)> {
    report
        .lines()
        .skip_while(|l| !l.contains("ARM SPE data"))
        .skip(1)
        .take_while(|l| l.starts_with(".  "))
        .map(|l| {
            let (offset, rest) = l[3..].split_once(':').unwrap();
            // 16 bytes of hex, three columns each, after two spaces.
            let desc = rest.get(2 + 16 * 3..).unwrap_or("").trim();
            (usize::from_str_radix(offset, 16).unwrap(), desc.to_string())
        })
        .collect()
}

#[test]
fn the_decoder_reads_every_packet_as_perf_does() {
    let data = stream();
    let ours = ours(&data);
    assert!(ours.len() > 3500, "{} packets", ours.len());
    let required = std::env::var("RONDPOINT_PERF").as_deref() == Ok("required");
    if Command::new("perf").arg("version").output().is_err() {
        assert!(
            !required,
            "perf is not installed and RONDPOINT_PERF=required"
        );
        eprintln!("skipped: perf is not installed (Debian: apt-get install linux-perf)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("rondpoint-spe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("spe.data");
    std::fs::write(&file, perf_data(&data)).unwrap();
    let out = Command::new("perf")
        .args(["report", "-D", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let report = String::from_utf8_lossy(&out.stdout);
    let perfs = perfs(&report);
    // perf pads the data to 8 bytes; its last line may be that padding.
    let perfs: Vec<_> = perfs.into_iter().filter(|(o, _)| *o < data.len()).collect();
    for (p, o) in perfs.iter().zip(&ours) {
        assert_eq!(p, o, "perf (left) and rondpoint (right) differ");
    }
    assert_eq!(perfs.len(), ours.len(), "packets decoded");
}
