//! A pure decoder of Arm SPE (Statistical Profiling Extension) data: the packets the profiling
//! unit writes into an event's AUX buffer, and the sample records they make.
//!
//! SPE does not write perf records: the driver (drivers/perf/arm_spe_pmu.c) hands the hardware
//! an AUX buffer, and each sampled operation leaves one record there, a run of packets ended
//! by an End or a Timestamp packet (Arm ARM, "Statistical Profiling Extension", section D10 of
//! DDI 0487: "Profiling data"). A packet is a 1-byte header, or a 2-byte extended header for
//! address and counter packets with an index above 7, and a payload of 1, 2, 4 or 8 bytes (header
//! bits 5:4), little-endian:
//!
//! | header             | packet        | what rondpoint reads                                |
//! |--------------------|---------------|-----------------------------------------------------|
//! | `0x00`             | Padding       |                                                     |
//! | `0x01`             | End           | the record ends (no timestamp)                      |
//! | `0x71`             | Timestamp     | the record ends at this counter value               |
//! | `0b01xx_0010`      | Events        | bit 9 LLC refill, bit 10 remote access              |
//! | `0b01xx_0011`      | Data source   | implementation-defined: kept raw                    |
//! | `0b0110_01xx`      | Context       | CONTEXTIDR (the PID when the kernel puts it there)  |
//! | `0b0100_10cc`      | Operation     | class 1 = load/store, payload bit 0: store          |
//! | `0b1011_0iii`      | Address       | index 0 PC, 1 branch target, 2 data VA, 3 data PA   |
//! | `0b1001_1iii`      | Counter       | index 0 total latency, 1 issue, 2 translation       |
//! | `0b0010_00ii` + h1 | extended      | h1 = 0: alignment padding; else address/counter     |
//!
//! The table's encodings are checked against perf's own decoder: the integration test
//! tests/spe.rs writes packets into a perf.data file and compares every packet with what `perf
//! report -D` prints for it. (Written by hand: no crate decodes SPE.)

// Decodes bytes from the hardware: no indexing that could panic on them.
#![deny(clippy::indexing_slicing)]

use thiserror::Error;

/// Event bit: the access missed the last-level cache (perf's LLC-REFILL).
pub const EV_LLC_MISS: u64 = 1 << 9;
/// Event bit: the access was served from another socket (perf's REMOTE-ACCESS).
pub const EV_REMOTE_ACCESS: u64 = 1 << 10;

/// Address packet index of a data virtual address.
pub const ADDR_DATA_VIRTUAL: u8 = 2;
/// Counter packet index of the total latency (cycles from dispatch to completion).
pub const COUNTER_TOTAL_LATENCY: u8 = 0;
/// Operation class of loads, stores and atomics.
pub const OP_CLASS_LOAD_STORE: u8 = 1;

/// One SPE packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    /// Padding (one byte, or an alignment run), and runs of them.
    Pad,
    /// End of a record without a timestamp.
    End,
    /// End of a record: the generic timer's count when it was written.
    Timestamp(u64),
    /// Events: the bits of what happened to the operation; `bytes` is the payload size.
    Events { bytes: u8, bits: u64 },
    /// Data source (implementation-defined encoding).
    DataSource(u64),
    /// Context (CONTEXTIDR_EL1, index 0, or CONTEXTIDR_EL2, index 1).
    Context { index: u8, value: u64 },
    /// Operation type: `class` (0 other, 1 load/store/atomic, 2 branch) and its payload.
    Operation { class: u8, payload: u64 },
    /// An address: `index` 0 PC, 1 branch target, 2 data virtual, 3 data physical.
    Address { index: u8, payload: u64 },
    /// A counter: `index` 0 total latency, 1 issue latency, 2 translation latency.
    Counter { index: u8, value: u64 },
}

/// A packet that cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum SpeError {
    #[error("SPE packet at byte {offset}: header {header:#04x} is not a known packet")]
    Bad { offset: usize, header: u8 },
    #[error("SPE packet at byte {offset}: cut at the end of the data")]
    Cut { offset: usize },
}

/// Payload size from a header's bits 5:4.
fn payload_len(header: u8) -> usize {
    1 << ((header >> 4) & 0b11)
}

/// Reads `len` little-endian payload bytes at `at`.
fn payload(buf: &[u8], at: usize, len: usize) -> Option<u64> {
    let bytes = buf.get(at..at.checked_add(len)?)?;
    Some(
        bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
    )
}

/// Decodes the packet at `buf[offset..]`: the packet and its length in bytes, `buf[0]` being
/// at an aligned place of the AUX buffer (which starts page-aligned).
pub fn packet_at(buf: &[u8], offset: usize) -> Result<(Packet, usize), SpeError> {
    packet_in(buf, offset, 0)
}

/// [`packet_at`] with `buf[0]` at byte `base` of the AUX stream: alignment padding pads to
/// a boundary of the buffer, not of `buf`.
fn packet_in(buf: &[u8], offset: usize, base: u64) -> Result<(Packet, usize), SpeError> {
    let cut = SpeError::Cut { offset };
    let rest = buf.get(offset..).ok_or(cut)?;
    let &header = rest.first().ok_or(cut)?;
    let with = |p: Packet, hdr: usize, value_len: usize| -> Result<(Packet, usize), SpeError> {
        Ok((p, hdr + value_len))
    };
    let value = |hdr: usize, h: u8| payload(rest, hdr, payload_len(h)).ok_or(cut);
    match header {
        0x00 => return with(Packet::Pad, 1, 0),
        0x01 => return with(Packet::End, 1, 0),
        0x71 => return with(Packet::Timestamp(value(1, header)?), 1, 8),
        _ => {}
    }
    let len = payload_len(header);
    if header & 0b1100_1111 == 0b0100_0010 {
        let bits = value(1, header)?;
        return with(
            Packet::Events {
                bytes: len as u8,
                bits,
            },
            1,
            len,
        );
    }
    if header & 0b1100_1111 == 0b0100_0011 {
        return with(Packet::DataSource(value(1, header)?), 1, len);
    }
    if header & 0b1111_1100 == 0b0110_0100 {
        let p = Packet::Context {
            index: header & 0b11,
            value: value(1, header)?,
        };
        return with(p, 1, len);
    }
    if header & 0b1111_1100 == 0b0100_1000 {
        let p = Packet::Operation {
            class: header & 0b11,
            payload: value(1, header)?,
        };
        return with(p, 1, len);
    }
    // Address and counter packets, with a short header or an extended one (whose second byte
    // is encoded as a short header, and whose first gives two more index bits).
    let (h, hdr, high_index) = if header & 0b1111_1100 == 0b0010_0000 {
        let &h1 = rest.get(1).ok_or(cut)?;
        if h1 == 0 {
            // Alignment: padding up to the next 2^(n+1)-byte boundary.
            let align = 1usize << ((header & 0xf) + 1);
            if rest.len() < align {
                return Err(cut);
            }
            let place = base.wrapping_add(offset as u64) % align as u64;
            return with(Packet::Pad, align - place as usize, 0);
        }
        (h1, 2, (header & 0b11) << 3)
    } else {
        (header, 1, 0)
    };
    let index = high_index | (h & 0b111);
    let len = payload_len(h);
    match h & 0b1111_1000 {
        0b1011_0000 => {
            let p = Packet::Address {
                index,
                payload: value(hdr, h)?,
            };
            with(p, hdr, len)
        }
        0b1001_1000 => {
            let p = Packet::Counter {
                index,
                value: value(hdr, h)?,
            };
            with(p, hdr, len)
        }
        _ => Err(SpeError::Bad { offset, header }),
    }
}

/// What one sampled operation's record says (the fields rondpoint uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpeRecord {
    /// The data virtual address (tag byte removed; kernel addresses sign-extended).
    pub va: Option<u64>,
    /// Whether it was a load/store and, if so, a store.
    pub store: Option<bool>,
    /// Total latency, cycles.
    pub latency: Option<u64>,
    /// The events packet's bits (0 without one).
    pub events: u64,
    /// The data source packet, raw.
    pub source: Option<u64>,
    /// The timestamp that ended the record (generic timer counts).
    pub timestamp: Option<u64>,
    /// The context packet (CONTEXTIDR_EL1 or _EL2).
    pub context: Option<u64>,
}

impl SpeRecord {
    /// Whether it was a load or store that missed the last-level cache (DRAM or another
    /// socket served it); `None` without an events packet.
    pub(crate) fn llc_miss(&self) -> Option<bool> {
        (self.events != 0).then_some(self.events & EV_LLC_MISS != 0)
    }
}

/// A data virtual address packet's address: bits 55:0, the top byte (a tag) replaced by the
/// sign extension of bits 55:48 as perf does (0xff there: a kernel address).
fn data_address(payload: u64) -> u64 {
    let addr = payload & 0x00ff_ffff_ffff_ffff;
    if addr >> 48 == 0xff {
        addr | 0xff00_0000_0000_0000
    } else {
        addr
    }
}

/// Decodes a run of SPE data, whose first byte is byte `base` of the AUX stream, into
/// records. A record still open at the end is returned with the byte it starts at, for the
/// caller to prepend to the next run; a bad packet ends the run (the error says where; the
/// records before it are kept).
pub fn records(buf: &[u8], base: u64) -> (Vec<SpeRecord>, usize, Option<SpeError>) {
    let mut out = Vec::new();
    let mut record = SpeRecord::default();
    let mut start = 0;
    let mut at = 0;
    while at < buf.len() {
        let (packet, len) = match packet_in(buf, at, base) {
            Ok(p) => p,
            Err(SpeError::Cut { .. }) => return (out, start, None),
            Err(e) => return (out, buf.len(), Some(e)),
        };
        at += len;
        match packet {
            Packet::Pad => {}
            Packet::End | Packet::Timestamp(_) => {
                if let Packet::Timestamp(t) = packet {
                    record.timestamp = Some(t);
                }
                out.push(std::mem::take(&mut record));
                start = at;
            }
            Packet::Events { bits, .. } => record.events = bits,
            Packet::DataSource(s) => record.source = Some(s),
            Packet::Context { value, .. } => record.context = Some(value),
            Packet::Operation { class, payload } => {
                record.store = (class == OP_CLASS_LOAD_STORE).then_some(payload & 1 == 1);
            }
            Packet::Address { index, payload } if index == ADDR_DATA_VIRTUAL => {
                record.va = Some(data_address(payload));
            }
            Packet::Counter { index, value } if index == COUNTER_TOTAL_LATENCY => {
                record.latency = Some(value);
            }
            Packet::Address { .. } | Packet::Counter { .. } => {}
        }
    }
    (out, start.min(buf.len()), None)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn a_load_record_decodes_to_its_fields() {
        let mut b = vec![0xb2];
        b.extend(0x0000_7f12_3456_7890u64.to_le_bytes());
        b.extend([0x98, 0x2c, 0x01]); // total latency 300
        b.extend([0x49, 0x00]); // load
        b.extend([0x52, 0x04, 0x06]); // L1D access, LLC refill, remote
        b.extend([0x65, 0x39, 0x05, 0x00, 0x00]); // context 1337 (4-byte payload: 0x20 set)
        b.push(0x71);
        b.extend(12_345u64.to_le_bytes());
        let (recs, rest, err) = records(&b, 0);
        assert_eq!((rest, err), (b.len(), None));
        assert_eq!(
            recs,
            [SpeRecord {
                va: Some(0x7f12_3456_7890),
                store: Some(false),
                latency: Some(300),
                events: 0x604,
                source: None,
                timestamp: Some(12_345),
                context: Some(1337),
            }]
        );
        assert_eq!(recs[0].llc_miss(), Some(true));
    }

    #[test]
    fn a_record_cut_at_the_end_is_left_for_the_next_run() {
        let mut b = vec![0x49, 0x01, 0x01]; // a store, ended
        b.extend([0xb2, 1, 2, 3]); // an address cut short
        let (recs, rest, err) = records(&b, 0);
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].store, Some(true));
        assert_eq!((rest, err), (3, None));
    }

    #[test]
    fn tags_are_dropped_and_kernel_addresses_sign_extended() {
        assert_eq!(data_address(0xf000_7f00_0000_1000), 0x7f00_0000_1000);
        assert_eq!(data_address(0x00ff_8000_0000_1000), 0xffff_8000_0000_1000);
    }

    #[test]
    fn extended_headers_and_alignment() {
        // Extended counter index 8 + 1 = 9; then padding to the 16-byte boundary.
        let mut b = vec![0x21, 0x99, 0x07, 0x00];
        b.extend([0x20, 0x00]); // align to 2^(0+1) = 2: at offset 4, two bytes
        let (p, len) = packet_at(&b, 0).unwrap();
        assert_eq!((p, len), (Packet::Counter { index: 9, value: 7 }, 4));
        assert_eq!(packet_at(&b, 4), Ok((Packet::Pad, 2)));
        // To 16 bytes, relative to the AUX stream: at stream byte 16 + 9, seven bytes.
        let pad16 = [0x23, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(packet_in(&pad16, 0, 16 + 9), Ok((Packet::Pad, 7)));
        assert_eq!(
            packet_at(&[0x0f], 0),
            Err(SpeError::Bad {
                offset: 0,
                header: 0x0f
            })
        );
    }
}
