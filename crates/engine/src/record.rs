//! Recording observations to a file and replaying them through a policy offline.
//!
//! The format is JSON lines: a header (format version, where the recording came from, the
//! topology, the processes at the start), then for each epoch the observation and what the
//! recording policy did (its actions and their outcomes). Replaying feeds the observations to
//! any policy and collects its decisions, without a machine: regression tests, parameter
//! tuning, and bug reports from users' machines.

use crate::{EpochReport, Policy};
use rondpoint_model::{Action, Capabilities, Observation, Outcome, ProcessInfo, Topology};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
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
    },
    Epoch {
        observation: Observation,
        /// What the recording run's policy did after this observation.
        actions: Vec<Action>,
        outcomes: Vec<Outcome>,
    },
}

impl RecordLine {
    fn kind(&self) -> &'static str {
        match self {
            RecordLine::Header { .. } => "header",
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
}

/// Writes a recording.
#[derive(Debug)]
pub struct Recorder<W: Write> {
    out: W,
    /// Most samples kept per epoch (recordings of sampled runs grow fast); the rest are
    /// dropped evenly.
    max_samples: Option<usize>,
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
        };
        write_line(&mut out, &header)?;
        Ok(Self { out, max_samples })
    }

    /// Appends one epoch.
    pub fn epoch(&mut self, report: &EpochReport<'_>) -> Result<(), RecordError> {
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

/// A recording read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    pub source: String,
    pub topology: Topology,
    pub processes: Vec<ProcessInfo>,
    /// What the recorded machine could observe and do, when the recording says.
    pub capabilities: Option<Capabilities>,
    /// Observations with what the recording policy did.
    pub epochs: Vec<(Observation, Vec<Action>, Vec<Outcome>)>,
}

/// Reads a whole recording.
pub fn read<R: BufRead>(input: R) -> Result<Recording, RecordError> {
    let mut lines = input.lines().enumerate();
    let mut next = || -> Result<Option<(usize, RecordLine)>, RecordError> {
        for (i, line) in lines.by_ref() {
            let line = line.map_err(RecordError::Read)?;
            if line.trim().is_empty() {
                continue;
            }
            let parsed: RecordLine =
                serde_json::from_str(&line).map_err(|e| RecordError::Malformed {
                    line: i + 1,
                    message: e.to_string(),
                })?;
            return Ok(Some((i + 1, parsed)));
        }
        Ok(None)
    };
    let (source, topology, processes, capabilities) = match next()? {
        None => return Err(RecordError::Empty),
        Some((
            _,
            RecordLine::Header {
                version,
                source,
                topology,
                processes,
                capabilities,
            },
        )) => {
            if version != FORMAT_VERSION {
                return Err(RecordError::Version { found: version });
            }
            (source, topology, processes, capabilities)
        }
        Some((_, other)) => return Err(RecordError::NoHeader(other.kind())),
    };
    let mut epochs = Vec::new();
    while let Some((line, l)) = next()? {
        match l {
            RecordLine::Epoch {
                observation,
                actions,
                outcomes,
            } => epochs.push((observation, actions, outcomes)),
            RecordLine::Header { .. } => {
                return Err(RecordError::Malformed {
                    line,
                    message: "a second header".into(),
                });
            }
        }
    }
    Ok(Recording {
        source,
        topology,
        processes,
        capabilities,
        epochs,
    })
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

/// Runs `policy` over a recording. Returns its start decisions (taken on the recorded topology
/// and processes, before any observation) and its decisions after each recorded observation.
///
/// After each decision the policy is told the recorded outcomes when it decided as the
/// recorded run did, and that nothing was carried out otherwise.
///
/// The policy is configured with the recorded machine's capabilities (every capability for a
/// recording that does not list them), so that it works as it would have there; its needs are
/// not checked, since nothing is carried out.
pub fn replay(
    policy: &mut dyn Policy,
    rec: &Recording,
) -> Result<(Vec<Action>, Vec<ReplayedEpoch>), crate::EngineError> {
    // The recorded machine's capabilities (a recording from before they were recorded: a
    // simulator's, which has them all): a policy it could not have run is refused, as `run`
    // would refuse it there.
    let all = Capabilities::all();
    let capabilities = rec.capabilities.as_ref().unwrap_or(&all);
    crate::check_policy(capabilities, &rec.topology, &rec.processes, policy)?;
    let start = policy.start(&rec.topology, &rec.processes);
    let epochs = rec
        .epochs
        .iter()
        .map(|(obs, recorded, outcomes)| {
            let actions = policy.decide(&rec.topology, obs);
            let same = same_actions(&actions, recorded);
            if same {
                // What the recorded run's machine did with these very actions.
                policy.outcomes(recorded, outcomes);
            } else {
                policy.outcomes(&actions, &crate::dry_run_outcomes(&actions, "replay"));
            }
            ReplayedEpoch {
                epoch: obs.epoch,
                samples: obs.samples.len(),
                same_as_recorded: same,
                actions,
            }
        })
        .collect();
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

    #[test]
    fn record_then_replay_round_trips() {
        let topo = TopologyBuilder::new(2).build().unwrap();
        let caps = Capabilities::none();
        let header = Header {
            topology: &topo,
            processes: &[],
            capabilities: &caps,
        };
        let mut rec = Recorder::new(Vec::new(), "test", &header, Some(2)).unwrap();
        for e in 0..3u64 {
            let obs = Observation {
                epoch: e,
                samples: vec![],
                ..Observation::default()
            };
            rec.epoch(&EpochReport {
                epoch: e,
                now_ns: e,
                observation: &obs,
                actions: &[],
                outcomes: &[],
            })
            .unwrap();
        }
        let bytes = rec.finish().unwrap();
        let back = read(bytes.as_slice()).unwrap();
        assert_eq!(back.topology, topo);
        assert_eq!(back.capabilities, Some(caps));
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
        };
        let text = format!("{}\n", serde_json::to_string(&epoch).unwrap());
        assert!(matches!(
            read(text.as_bytes()),
            Err(RecordError::NoHeader("epoch"))
        ));
    }
}
