//! Recording observations to a file and replaying them through a policy offline.
//!
//! The format is JSON lines: a header (format version, where the recording came from, the
//! topology, the processes at the start), then for each epoch the observation and what the
//! recording policy did (its actions and their outcomes). Replaying feeds the observations to
//! any policy and collects its decisions, without a machine: regression tests, parameter
//! tuning, and bug reports from users' machines.

use crate::{EpochReport, Policy};
use rondpoint_model::{
    Action, Capabilities, Explained, Observation, Outcome, ProcessInfo, Reason, Topology,
};
use rondpoint_policy_api::PolicyConfig;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Read, Write};
use thiserror::Error;

/// Version of the record format; a reader refuses other versions.
pub const FORMAT_VERSION: u32 = 1;

/// Errors writing or reading a recording.
#[derive(Debug, Error)]
pub enum RecordError {
    #[error("cannot write the recording: {0}")]
    Write(#[source] std::io::Error),
    #[error("cannot read the recording: {0}")]
    Read(#[source] std::io::Error),
    #[error("line {line}: {message}")]
    Malformed { line: usize, message: String },
    #[error("the recording is empty (no header line)")]
    Empty,
    #[error("line 1: expected a header, found a {0} line")]
    NoHeader(&'static str),
    #[error("recording format version {found}, this rondpoint reads version {FORMAT_VERSION}")]
    Version { found: u32 },
}

/// One line of a recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RecordLine {
    Header {
        version: u32,
        /// Where the observations came from ("sim opteron-8385 streamcluster", "live host").
        source: String,
        topology: Topology,
        processes: Vec<ProcessInfo>,
        /// What the recorded machine could observe and do (absent from recordings made
        /// before rondpoint recorded it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        capabilities: Option<Capabilities>,
        /// The policy parameters the recording run used, with what the run filled in
        /// (per-program profiles, the seed): `replay` starts from them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config: Option<PolicyConfig>,
    },
    /// What the recording run's policy did before the first epoch (its start decisions), and
    /// what came of it; after the header, absent when it did nothing.
    Start {
        actions: Vec<Action>,
        outcomes: Vec<Outcome>,
        /// Why it took them (absent from recordings made before rondpoint kept reasons).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasons: Vec<Reason>,
        /// For each action, the index of its reason.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        why: Vec<u32>,
    },
    Epoch {
        observation: Observation,
        /// What the recording run's policy did after this observation.
        actions: Vec<Action>,
        outcomes: Vec<Outcome>,
        /// Why it took them (absent from recordings made before rondpoint kept reasons).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasons: Vec<Reason>,
        /// For each action, the index of its reason.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        why: Vec<u32>,
    },
}

impl RecordLine {
    fn kind(&self) -> &'static str {
        match self {
            RecordLine::Header { .. } => "header",
            RecordLine::Start { .. } => "start",
            RecordLine::Epoch { .. } => "epoch",
        }
    }
}

/// The machine a recording starts from.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    pub topology: &'a Topology,
    pub processes: &'a [ProcessInfo],
    pub capabilities: &'a Capabilities,
    /// The recording run's policy parameters.
    pub config: Option<&'a PolicyConfig>,
}

/// Writes a recording.
#[derive(Debug)]
pub struct Recorder<W: Write> {
    out: W,
    /// Most samples kept per epoch (recordings of sampled runs grow fast); the rest are
    /// dropped evenly.
    max_samples: Option<usize>,
    /// Whether an epoch was written (the start decisions go before the first only).
    started: bool,
}

impl<W: Write> Recorder<W> {
    /// Starts a recording with its header.
    pub fn new(
        mut out: W,
        source: &str,
        machine: &Header<'_>,
        max_samples: Option<usize>,
    ) -> Result<Self, RecordError> {
        let header = RecordLine::Header {
            version: FORMAT_VERSION,
            source: source.to_string(),
            topology: machine.topology.clone(),
            processes: machine.processes.to_vec(),
            capabilities: Some(machine.capabilities.clone()),
            config: machine.config.cloned(),
        };
        write_line(&mut out, &header)?;
        Ok(Self {
            out,
            max_samples,
            started: false,
        })
    }

    /// Appends one epoch.
    pub fn epoch(&mut self, report: &EpochReport<'_>) -> Result<(), RecordError> {
        let first = !std::mem::replace(&mut self.started, true);
        let start = report.start.filter(|(a, _, _)| first && !a.is_empty());
        if let Some((actions, outcomes, explained)) = start {
            write_line(
                &mut self.out,
                &RecordLine::Start {
                    actions: actions.to_vec(),
                    outcomes: outcomes.to_vec(),
                    reasons: explained.reasons.clone(),
                    why: explained.why.clone(),
                },
            )?;
        }
        let mut observation = report.observation.clone();
        if let Some(max) = self.max_samples {
            thin(&mut observation.samples, max);
        }
        write_line(
            &mut self.out,
            &RecordLine::Epoch {
                observation,
                actions: report.actions.to_vec(),
                outcomes: report.outcomes.to_vec(),
                reasons: report.explained.reasons.clone(),
                why: report.explained.why.clone(),
            },
        )
    }

    /// Writes out what is buffered, so that the epochs so far survive the process (a live
    /// recording of a daemon that is killed).
    /// Where the recording goes (to ask how much was written).
    pub fn output(&self) -> &W {
        &self.out
    }

    pub fn flush(&mut self) -> Result<(), RecordError> {
        self.out.flush().map_err(RecordError::Write)
    }

    /// Flushes and returns the writer.
    pub fn finish(mut self) -> Result<W, RecordError> {
        self.out.flush().map_err(RecordError::Write)?;
        Ok(self.out)
    }
}

/// Keeps `max` items spread evenly over the vector.
fn thin<T: Clone>(v: &mut Vec<T>, max: usize) {
    if v.len() <= max {
        return;
    }
    if max == 0 {
        v.clear();
        return;
    }
    let step = v.len() as f64 / max as f64;
    let kept: Vec<T> = (0..max)
        .filter_map(|i| v.get((i as f64 * step) as usize).cloned())
        .collect();
    *v = kept;
}

fn write_line<W: Write>(out: &mut W, line: &RecordLine) -> Result<(), RecordError> {
    serde_json::to_writer(&mut *out, line).map_err(|e| RecordError::Write(e.into()))?;
    out.write_all(b"\n").map_err(RecordError::Write)
}

/// A recording read back whole.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    pub header: Recorded,
    /// Observations with what the recording policy did.
    pub epochs: Vec<RecordedEpoch>,
}

/// One recorded epoch: the observation, and the recording policy's actions, their outcomes and
/// why it took them.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEpoch {
    pub observation: Observation,
    pub actions: Vec<Action>,
    pub outcomes: Vec<Outcome>,
    /// Empty in recordings made before rondpoint kept reasons.
    pub explained: Explained,
}

/// A run's start decisions, their outcomes and why it took them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StartDecisions {
    pub actions: Vec<Action>,
    pub outcomes: Vec<Outcome>,
    pub explained: Explained,
}

/// The reasons a recording gives, if they fit its `actions` actions (a hand-edited or
/// truncated line's do not: dropped rather than trusted).
fn explained(reasons: Vec<Reason>, why: Vec<u32>, actions: usize) -> Explained {
    let e = Explained { reasons, why };
    if e.is_consistent(actions) {
        e
    } else {
        Explained::default()
    }
}

/// A recording read an epoch at a time: its header at once, then each epoch as the iterator
/// reaches it, so that memory holds one epoch whatever the recording's length. A line longer
/// than the reader's limit is refused before it is parsed (a parsed epoch takes several times
/// its text: about 7x, measured on a 563 MB line).
#[derive(Debug)]
pub struct Reader<R: BufRead> {
    lines: Lines<R>,
}

/// What a recording's header says.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// Where the observations came from.
    pub source: String,
    pub topology: Topology,
    /// The processes at the start.
    pub processes: Vec<ProcessInfo>,
    /// What the recorded machine could observe and do, when the recording says.
    pub capabilities: Option<Capabilities>,
    /// The recording run's policy parameters, when the recording says.
    pub config: Option<PolicyConfig>,
    /// The recording run's start decisions and their outcomes (none: it took none, or the
    /// recording predates them).
    pub start: Option<StartDecisions>,
}

impl<R: BufRead> Reader<R> {
    /// Reads the header of `input`, and returns it with a reader of the epochs; no line may be
    /// longer than `line_limit` bytes.
    pub fn open(input: R, line_limit: u64) -> Result<(Recorded, Self), RecordError> {
        let mut lines = Lines {
            input,
            line: 0,
            limit: line_limit,
            pending: None,
        };
        match lines.next_line()? {
            None => Err(RecordError::Empty),
            Some(RecordLine::Header {
                version,
                source,
                topology,
                processes,
                capabilities,
                config,
            }) => {
                if version != FORMAT_VERSION {
                    return Err(RecordError::Version { found: version });
                }
                let start = lines.start()?;
                let header = Recorded {
                    source,
                    topology,
                    processes,
                    capabilities,
                    config,
                    start,
                };
                Ok((header, Self { lines }))
            }
            Some(other) => Err(RecordError::NoHeader(other.kind())),
        }
    }
}

/// The lines of a recording, each at most `limit` bytes.
#[derive(Debug)]
struct Lines<R> {
    input: R,
    /// Lines read so far (the number of the last one).
    line: usize,
    limit: u64,
    /// A line read ahead (after the header, to see whether it is the start line).
    pending: Option<Vec<u8>>,
}

impl<R: BufRead> Lines<R> {
    /// The next line that is not blank (its number is `self.line`).
    fn next_raw(&mut self) -> Result<Option<Vec<u8>>, RecordError> {
        if let Some(buf) = self.pending.take() {
            return Ok(Some(buf));
        }
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = (&mut self.input)
                .take(self.limit.saturating_add(1))
                .read_until(b'\n', &mut buf)
                .map_err(RecordError::Read)?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            if buf.len() as u64 > self.limit {
                return Err(RecordError::Malformed {
                    line: self.line,
                    message: format!(
                        "longer than the {} MiB a line may be here (an eighth of the memory \
                         available)",
                        self.limit >> 20
                    ),
                });
            }
            if !buf.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(buf));
            }
        }
    }

    fn malformed(&self, e: &serde_json::Error) -> RecordError {
        RecordError::Malformed {
            line: self.line,
            message: e.to_string(),
        }
    }

    /// The start line, if the next line is one; any other line is kept for the next read.
    fn start(&mut self) -> Result<Option<StartDecisions>, RecordError> {
        let Some(buf) = self.next_raw()? else {
            return Ok(None);
        };
        // Written by `write_line`: the tag first, no spaces.
        if !buf.starts_with(br#"{"kind":"start""#) {
            self.pending = Some(buf);
            return Ok(None);
        }
        match serde_json::from_slice(&buf) {
            Ok(RecordLine::Start {
                actions,
                outcomes,
                reasons,
                why,
            }) => Ok(Some(StartDecisions {
                explained: explained(reasons, why, actions.len()),
                actions,
                outcomes,
            })),
            Ok(_) => {
                self.pending = Some(buf);
                Ok(None)
            }
            Err(e) => Err(self.malformed(&e)),
        }
    }

    /// The next line that is not blank, parsed.
    fn next_line(&mut self) -> Result<Option<RecordLine>, RecordError> {
        let Some(buf) = self.next_raw()? else {
            return Ok(None);
        };
        serde_json::from_slice(&buf)
            .map(Some)
            .map_err(|e| self.malformed(&e))
    }

    /// The next epoch line, parsed straight into its fields: through [`RecordLine`], an
    /// internally tagged enum, serde first copies the whole line into a generic tree, and an
    /// epoch took about 7 times its text (measured: 1.4 GB for a 180 MB line).
    fn next_epoch(&mut self) -> Result<Option<RecordedEpoch>, RecordError> {
        let Some(buf) = self.next_raw()? else {
            return Ok(None);
        };
        match serde_json::from_slice::<EpochLine>(&buf) {
            Ok(e) => Ok(Some(RecordedEpoch {
                explained: explained(e.reasons, e.why, e.actions.len()),
                observation: e.observation,
                actions: e.actions,
                outcomes: e.outcomes,
            })),
            Err(e) => Err(match serde_json::from_slice::<RecordLine>(&buf) {
                Ok(RecordLine::Header { .. }) => RecordError::Malformed {
                    line: self.line,
                    message: "a second header".into(),
                },
                _ => self.malformed(&e),
            }),
        }
    }
}

/// An epoch line (see [`RecordLine::Epoch`]), read without going through the enum.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EpochLine {
    #[serde(rename = "kind")]
    _kind: EpochKind,
    observation: Observation,
    actions: Vec<Action>,
    outcomes: Vec<Outcome>,
    #[serde(default)]
    reasons: Vec<Reason>,
    #[serde(default)]
    why: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum EpochKind {
    Epoch,
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<RecordedEpoch, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.lines.next_epoch().transpose()
    }
}

/// Reads a whole recording (every epoch in memory: [`Reader`] reads one at a time).
pub fn read<R: BufRead>(input: R) -> Result<Recording, RecordError> {
    let (header, reader) = Reader::open(input, u64::MAX)?;
    let epochs = reader.collect::<Result<Vec<_>, _>>()?;
    Ok(Recording { header, epochs })
}

/// One epoch of a replay: the policy's decisions on a recorded observation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayedEpoch {
    pub epoch: u64,
    pub samples: usize,
    pub actions: Vec<Action>,
    /// Whether these are the recorded run's actions, in any order (the engine lists actions
    /// refused by its rate limits last). Replaying the recording policy over every sample
    /// gives its decisions again; thinned samples, or another policy, need not.
    pub same_as_recorded: bool,
    /// Why the replayed policy took them.
    #[serde(skip_serializing_if = "Explained::is_empty")]
    pub explained: Explained,
}

/// Whether two lists hold the same actions, in any order.
fn same_actions(a: &[Action], b: &[Action]) -> bool {
    if a == b {
        return true;
    }
    if a.len() != b.len() {
        return false;
    }
    let sorted = |v: &[Action]| {
        let mut v: Vec<String> = v.iter().map(|x| format!("{x:?}")).collect();
        v.sort_unstable();
        v
    };
    sorted(a) == sorted(b)
}

/// A policy replayed over recorded epochs (see [`replay`]), one epoch at a time.
pub struct Replayer<'a> {
    policy: &'a mut dyn Policy,
    topology: &'a Topology,
    /// Why the policy took its start decisions.
    pub start_explained: Explained,
}

impl std::fmt::Debug for Replayer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replayer")
            .field("policy", &self.policy.name())
            .finish_non_exhaustive()
    }
}

impl<'a> Replayer<'a> {
    /// Checks `policy` against the recorded machine (its `capabilities`; a simulator's for a
    /// recording that does not list them) and takes its start decisions on the recorded
    /// topology and processes.
    ///
    /// The policy is then told the recorded start outcomes when it decided as the recorded
    /// run did before its first epoch (`recorded`), and that nothing was carried out
    /// otherwise.
    pub fn start(
        policy: &'a mut dyn Policy,
        header: &'a Recorded,
    ) -> Result<(Self, Vec<Action>), crate::EngineError> {
        let (topology, processes) = (&header.topology, &header.processes);
        // A policy the recorded machine could not have run is refused, as `run` would refuse
        // it there.
        let simulated = Capabilities::simulated();
        let capabilities = header.capabilities.as_ref().unwrap_or(&simulated);
        crate::check_policy(capabilities, topology, processes, policy)?;
        let start = policy.start(topology, processes);
        let start_explained = Explained::new(policy.reasons(), start.len(), policy.name());
        let (recorded, outcomes) = header.start.as_ref().map_or((&[][..], &[][..]), |s| {
            (s.actions.as_slice(), s.outcomes.as_slice())
        });
        if same_actions(&start, recorded) {
            policy.outcomes(recorded, outcomes);
        } else {
            policy.outcomes(&start, &crate::dry_run_outcomes(&start, "replay"));
        }
        Ok((
            Self {
                policy,
                topology,
                start_explained,
            },
            start,
        ))
    }

    /// The policy's decisions after one recorded observation. The policy is then told the
    /// recorded outcomes when it decided as the recorded run did, and that nothing was carried
    /// out otherwise.
    pub fn epoch(&mut self, recorded_epoch: &RecordedEpoch) -> ReplayedEpoch {
        let obs = &recorded_epoch.observation;
        let (recorded, outcomes) = (&recorded_epoch.actions, &recorded_epoch.outcomes);
        let actions = self.policy.decide(self.topology, obs);
        let explained = Explained::new(self.policy.reasons(), actions.len(), self.policy.name());
        let same = same_actions(&actions, recorded);
        if same {
            // What the recorded run's machine did with these very actions.
            self.policy.outcomes(recorded, outcomes);
        } else {
            let nothing = crate::dry_run_outcomes(&actions, "replay");
            self.policy.outcomes(&actions, &nothing);
        }
        ReplayedEpoch {
            epoch: obs.epoch,
            samples: obs.samples.len(),
            same_as_recorded: same,
            actions,
            explained,
        }
    }
}

/// Runs `policy` over a recording. Returns its start decisions (taken on the recorded topology
/// and processes, before any observation) and its decisions after each recorded observation
/// (see [`Replayer`]). The policy is configured with the recorded machine's capabilities, so
/// that it works as it would have there; nothing is carried out.
pub fn replay(
    policy: &mut dyn Policy,
    rec: &Recording,
) -> Result<(Vec<Action>, Vec<ReplayedEpoch>), crate::EngineError> {
    let h = &rec.header;
    let (mut replayer, start) = Replayer::start(policy, h)?;
    let epochs = rec.epochs.iter().map(|e| replayer.epoch(e)).collect();
    Ok((start, epochs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rondpoint_model::synthetic::TopologyBuilder;
    use rondpoint_model::{NodeId, PageRange, PageSize, Pid};

    struct Echo;
    impl Policy for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        fn needs(&self) -> Vec<rondpoint_model::Need> {
            Vec::new()
        }
        fn decide(&mut self, _: &Topology, o: &Observation) -> Vec<Action> {
            vec![Action::MigratePages {
                range: PageRange::new(Pid(1), o.epoch * 4096, 1, PageSize::Base4K).unwrap(),
                to: NodeId(1),
            }]
        }
    }

    /// Writes a recording of `epochs` empty epochs whose run started with `start`, keeping at
    /// most `max_samples` samples an epoch.
    fn recording(
        start: Option<(&[Action], &[Outcome], &Explained)>,
        epochs: u64,
        max_samples: Option<usize>,
    ) -> Vec<u8> {
        let topo = TopologyBuilder::new(2).build().unwrap();
        let caps = Capabilities::none();
        let header = Header {
            topology: &topo,
            processes: &[],
            capabilities: &caps,
            config: None,
        };
        let mut rec = Recorder::new(Vec::new(), "test", &header, max_samples).unwrap();
        for e in 0..epochs {
            let obs = Observation {
                epoch: e,
                ..Observation::default()
            };
            rec.epoch(&EpochReport {
                start,
                epoch: e,
                now_ns: e,
                observation: &obs,
                actions: &[],
                outcomes: &[],
                explained: &Explained::default(),
                sampled: &crate::SampleTally::default(),
            })
            .unwrap();
        }
        rec.finish().unwrap()
    }

    #[test]
    fn the_start_decisions_are_recorded_once_before_the_epochs() {
        let pin = Action::PinThread {
            pid: Pid(1),
            tid: rondpoint_model::Tid(1),
            cpus: vec![rondpoint_model::CpuId(0)],
        };
        let applied = [Outcome::applied(0)];
        let why = Explained::new(vec![Reason::new(1, "p", "because")], 1, "p");
        let bytes = recording(Some((std::slice::from_ref(&pin), &applied, &why)), 2, None);
        let r = read(bytes.as_slice()).unwrap();
        let start = StartDecisions {
            actions: vec![pin],
            outcomes: vec![Outcome::applied(0)],
            explained: why,
        };
        assert_eq!(r.header.start, Some(start));
        assert_eq!(r.epochs.len(), 2);
        // No start decisions: no start line, and the first epoch read as such.
        let none = Explained::default();
        let r = read(recording(Some((&[], &[], &none)), 2, None).as_slice()).unwrap();
        assert_eq!((r.header.start, r.epochs.len()), (None, 2));
    }

    #[test]
    fn record_then_replay_round_trips() {
        let bytes = recording(None, 3, Some(2));
        // Epoch by epoch, a line longer than the limit refused before it is parsed.
        let header_len = bytes.iter().position(|&b| b == b'\n').unwrap() as u64 + 1;
        let (_, mut epochs) = Reader::open(bytes.as_slice(), header_len).unwrap();
        assert!(epochs.next().unwrap().is_ok(), "a shorter line passes");
        let (_, mut epochs) = Reader::open(bytes.as_slice(), header_len + 64).unwrap();
        assert_eq!(epochs.by_ref().filter(Result::is_ok).count(), 3);
        assert!(
            Reader::open(bytes.as_slice(), header_len - 1).is_err_and(|e| {
                e.to_string()
                    .starts_with("line 1: longer than the 0 MiB a line may be here")
            })
        );
        let back = read(bytes.as_slice()).unwrap();
        assert_eq!(
            back.header.topology,
            TopologyBuilder::new(2).build().unwrap()
        );
        assert_eq!(back.header.capabilities, Some(Capabilities::none()));
        assert_eq!(back.epochs.len(), 3);
        let (start, replayed) = replay(&mut Echo, &back).unwrap();
        assert!(start.is_empty());
        assert_eq!(replayed.len(), 3);
        assert_eq!(replayed[2].actions.len(), 1);
        assert!(!replayed[2].same_as_recorded, "nothing was recorded");
        // A policy the recorded machine could not have run is refused, as `run` refuses it.
        struct WantsTruth;
        impl Policy for WantsTruth {
            fn name(&self) -> &str {
                "wants-truth"
            }
            fn needs(&self) -> Vec<rondpoint_model::Need> {
                vec![rondpoint_model::Need::one(
                    rondpoint_model::Capability::Truth,
                    "to read true access rates",
                )]
            }
            fn decide(&mut self, _: &Topology, _: &Observation) -> Vec<Action> {
                Vec::new()
            }
        }
        let err = replay(&mut WantsTruth, &back).unwrap_err().to_string();
        assert!(err.contains("wants-truth"), "{err}");
    }

    #[test]
    fn the_same_actions_in_another_order_are_the_same() {
        let m = |p: u64, to: u16| Action::MigratePages {
            range: PageRange::new(Pid(1), p * 4096, 1, PageSize::Base4K).unwrap(),
            to: NodeId(to),
        };
        assert!(same_actions(&[m(1, 0), m(2, 1)], &[m(2, 1), m(1, 0)]));
        assert!(same_actions(&[], &[]));
        assert!(!same_actions(&[m(1, 0), m(2, 1)], &[m(2, 1), m(1, 1)]));
        assert!(!same_actions(&[m(1, 0), m(1, 0)], &[m(1, 0)]));
    }

    #[test]
    fn thinning_keeps_an_even_spread() {
        let mut v: Vec<u32> = (0..10).collect();
        thin(&mut v, 5);
        assert_eq!(v, vec![0, 2, 4, 6, 8]);
        thin(&mut v, 0);
        assert!(v.is_empty());
    }

    #[test]
    fn bad_recordings_are_explained() {
        assert!(matches!(read(&b""[..]), Err(RecordError::Empty)));
        let err = read(&b"{\"kind\":\"header\"}\n"[..]).unwrap_err();
        assert!(err.to_string().starts_with("line 1:"), "{err}");
        let err = read(&b"not json\n"[..]).unwrap_err();
        assert!(matches!(err, RecordError::Malformed { line: 1, .. }));
        let topo = TopologyBuilder::new(1).build().unwrap();
        let mut text = serde_json::to_string(&RecordLine::Header {
            version: 99,
            source: String::new(),
            topology: topo,
            processes: vec![],
            capabilities: None,
            config: None,
        })
        .unwrap();
        text.push('\n');
        assert!(matches!(
            read(text.as_bytes()),
            Err(RecordError::Version { found: 99 })
        ));
        let epoch = RecordLine::Epoch {
            observation: Observation::default(),
            actions: vec![],
            outcomes: vec![],
            reasons: vec![],
            why: vec![],
        };
        let text = format!("{}\n", serde_json::to_string(&epoch).unwrap());
        assert!(matches!(
            read(text.as_bytes()),
            Err(RecordError::NoHeader("epoch"))
        ));
    }
}
