//! Arm SPE samples as the precise sampler drains them: the AUX buffer's records
//! ([`crate::perf::spe`]) of one CPU's event, each given the task that ran on the CPU when it
//! was written.
//!
//! SPE records carry no PID a kernel always fills in (the Context packet holds CONTEXTIDR,
//! which has the PID only in kernels built with CONFIG_PID_IN_CONTEXTIDR), so the event is
//! opened with `context_switch` and a sample id: the ring gets a PERF_RECORD_SWITCH_CPU_WIDE,
//! stamped with the perf clock, at every context switch on the CPU. A record's timestamp (the
//! generic timer's count) converts to the perf clock with the ring header's conversion, and
//! the task is the last one switched in at or before it, as perf's own SPE decoding does when
//! it finds no Context packets (tools/perf/util/arm-spe.c).
//!
//! The driver publishes AUX data when the buffer reaches its watermark, later than the switch
//! records of the same period reach the ring: the timeline of switches is kept until the
//! records it covers have been read (bounded: [`TIMELINE_MAX`] per CPU).

use crate::perf::spe::{self, SpeRecord};
use crate::sys::TimeConversion;
use std::collections::VecDeque;

/// The most context switches kept per CPU while their AUX data is still to come (a CPU
/// switching 10,000 times a second, with AUX data published every second or faster).
const TIMELINE_MAX: usize = 16_384;

/// A record whose task is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Attributed {
    pub record: SpeRecord,
    pub pid: u32,
    pub tid: u32,
    /// Perf-clock time, ns.
    pub time: u64,
}

/// One CPU's SPE event: the bytes of a record cut at the end of the last drain, and the
/// context switches seen.
#[derive(Debug, Default)]
pub(super) struct SpeState {
    pending: Vec<u8>,
    /// Where `pending` starts in the AUX stream (bytes since the event opened).
    position: u64,
    /// (perf time, pid, tid) of each task switched in, oldest first.
    timeline: VecDeque<(u64, u32, u32)>,
    /// Records that could not be given a task (no timestamp, no conversion, or before the
    /// first switch seen), over the sampler's life.
    pub unattributed: u64,
}

impl SpeState {
    /// A task switched in at `time` (perf clock).
    pub(super) fn switched_in(&mut self, time: u64, pid: u32, tid: u32) {
        if self.timeline.len() == TIMELINE_MAX {
            self.timeline.pop_front();
        }
        self.timeline.push_back((time, pid, tid));
    }

    /// The records of newly drained AUX bytes, with their tasks; the error says why the rest
    /// of the bytes were dropped (a packet that is not SPE's).
    pub(super) fn records(
        &mut self,
        bytes: &[u8],
        conversion: Option<TimeConversion>,
    ) -> (Vec<Attributed>, Option<spe::SpeError>) {
        self.pending.extend_from_slice(bytes);
        let (records, consumed, error) = spe::records(&self.pending, self.position);
        let consumed = if error.is_some() {
            self.pending.len()
        } else {
            consumed.min(self.pending.len())
        };
        self.pending.drain(..consumed);
        self.position = self.position.wrapping_add(consumed as u64);
        let mut out = Vec::with_capacity(records.len());
        let mut last = None;
        for record in records {
            let time = record
                .timestamp
                .zip(conversion)
                .map(|(ts, c)| c.perf_time(ts));
            match time.and_then(|t| self.task_at(t).map(|task| (t, task))) {
                Some((time, (pid, tid))) => {
                    out.push(Attributed {
                        record,
                        pid,
                        tid,
                        time,
                    });
                    last = Some(time);
                }
                None => self.unattributed += 1,
            }
        }
        if let Some(t) = last {
            self.forget_before(t);
        }
        (out, error)
    }

    /// The task that ran at `time`: the last switched in at or before it.
    fn task_at(&self, time: u64) -> Option<(u32, u32)> {
        let i = self.timeline.partition_point(|&(t, _, _)| t <= time);
        let &(_, pid, tid) = self.timeline.get(i.checked_sub(1)?)?;
        Some((pid, tid))
    }

    /// Drops the switches before the one in force at `time` (AUX data comes in order).
    fn forget_before(&mut self, time: u64) {
        let i = self.timeline.partition_point(|&(t, _, _)| t <= time);
        self.timeline.drain(..i.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(va: u64, store: bool, ts: u64) -> Vec<u8> {
        let mut b = vec![0xb2];
        b.extend(va.to_le_bytes());
        b.extend([0x49, u8::from(store)]);
        b.push(0x71);
        b.extend(ts.to_le_bytes());
        b
    }

    const IDENTITY: Option<TimeConversion> = Some(TimeConversion {
        zero: 0,
        mult: 1,
        shift: 0,
        short: None,
    });

    #[test]
    fn records_go_to_the_task_switched_in_before_them() {
        let mut s = SpeState::default();
        s.switched_in(100, 7, 7);
        s.switched_in(200, 9, 10);
        let mut b = record(0x1000, false, 50); // before any switch seen
        b.extend(record(0x2000, false, 150));
        b.extend(record(0x3000, true, 250));
        let (out, err) = s.records(&b, IDENTITY);
        assert_eq!(err, None);
        let got: Vec<_> = out.iter().map(|a| (a.record.va, a.pid, a.tid)).collect();
        assert_eq!(got, [(Some(0x2000), 7, 7), (Some(0x3000), 9, 10)]);
        assert_eq!(s.unattributed, 1);
        // The switch in force stays for records published later.
        assert_eq!(s.timeline.len(), 1);
        let (out, _) = s.records(&record(0x4000, false, 300), IDENTITY);
        assert_eq!((out[0].pid, out[0].tid), (9, 10));
    }

    #[test]
    fn a_record_cut_between_drains_is_read_whole() {
        let mut s = SpeState::default();
        s.switched_in(0, 5, 5);
        let b = record(0x5000, true, 10);
        let (first, _) = s.records(&b[..6], IDENTITY);
        assert!(first.is_empty());
        let (second, _) = s.records(&b[6..], IDENTITY);
        assert_eq!(second[0].record.va, Some(0x5000));
        assert_eq!(second[0].record.store, Some(true));
    }

    #[test]
    fn without_a_clock_conversion_no_record_is_attributed() {
        let mut s = SpeState::default();
        s.switched_in(0, 5, 5);
        let (out, _) = s.records(&record(0x5000, true, 10), None);
        assert!(out.is_empty());
        assert_eq!(s.unattributed, 1);
    }

    #[test]
    fn the_timestamp_converts_as_the_kernel_documents() {
        // 25 MHz generic timer: 40 ns per count, as mult / 2^shift.
        let c = TimeConversion {
            zero: 1_000,
            mult: 40 << 20,
            shift: 20,
            short: None,
        };
        assert_eq!(c.perf_time(25_000_000), 1_000 + 1_000_000_000);
        // A 56-bit counter: the count is taken relative to time_cycles.
        let short = TimeConversion {
            short: Some((1 << 56, (1 << 56) - 1)),
            ..c
        };
        assert_eq!(short.perf_time(10), c.perf_time((1 << 56) + 10));
    }
}
