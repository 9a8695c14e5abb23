//! The MAPI-to-gap curve of a machine [Gaud10 §3.1, Figure 3]: how much faster the cores of a
//! fast node read memory than those of a slow node, as a function of MAPI (main-memory
//! accesses per retired instruction). OAAS predicts each application's fast/slow gap from its
//! MAPI through this curve [Gaud10 §5.1, §5.2].
//!
//! A curve is measured by a microbenchmark (`rondpoint calibrate`: the simulator's, or a live
//! machine's) and kept in a TOML file that names the machine it was measured on: its node
//! count and which nodes are fast and slow. A curve is only valid on a machine of that shape
//! ([`GapCurve::check_machine`]).
//!
//! ```toml
//! format = 1
//! machine = "r905-asymmetric"
//! measured_by = "rondpoint calibrate --machine r905-asymmetric (simulator)"
//! nodes = 4
//! fast = [1, 2]
//! slow = [0, 3]
//! compared = [1, 0]
//!
//! [[point]]
//! mapi = 0.0
//! gap_pct = 0.0
//!
//! [[point]]
//! mapi = 0.35
//! gap_pct = 32.5
//! fast_reads_per_s = 1.5e8
//! slow_reads_per_s = 1.13e8
//! ```

// Parses bytes from outside (files, the kernel): no indexing that could panic on them.
#![deny(clippy::indexing_slicing)]

use crate::ids::NodeId;
use crate::topology::{NodeClass, Topology};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The version of the file format [`GapCurve::to_toml`] writes.
pub const CURVE_FORMAT: u32 = 1;

/// The MAPI values the calibration microbenchmark runs at, by default: dense where
/// applications are (PARSEC programs: MAPI below 0.03 in rondpoint's presets) and up to 0.6,
/// past the 0.35 from which [Gaud10 §3.1] finds the gap stable.
pub const DEFAULT_MAPI_POINTS: &[f64] = &[
    0.0, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3,
    0.35, 0.4, 0.5, 0.6,
];

/// Why a curve cannot be used.
#[derive(Debug, Error, PartialEq)]
pub enum CurveError {
    #[error("MAPI-to-gap curve is not valid TOML: {0}")]
    Toml(String),
    #[error(
        "MAPI-to-gap curve: format {0} is not known (this rondpoint reads format {CURVE_FORMAT})"
    )]
    Format(u32),
    #[error("MAPI-to-gap curve: {0}")]
    Invalid(String),
    #[error(
        "the MAPI-to-gap curve was measured on {measured}; this machine has {here}: a curve \
         holds only for the machine it was measured on (run `rondpoint calibrate` here)"
    )]
    OtherMachine { measured: String, here: String },
}

/// One measured point: at `mapi`, the fast node's cores read `gap_pct` percent faster than
/// the slow node's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurvePoint {
    /// Main-memory accesses per retired instruction.
    pub mapi: f64,
    /// Throughput improvement of the fast node over the slow one (percent).
    pub gap_pct: f64,
    /// Reads per second of all the fast node's cores together, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_reads_per_s: Option<f64>,
    /// Reads per second of all the slow node's cores together, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_reads_per_s: Option<f64>,
}

/// The shape of the machine a curve was measured on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurveMachine {
    /// Number of NUMA nodes (memory-only ones included).
    pub nodes: usize,
    /// Its fast CPU nodes.
    pub fast: Vec<NodeId>,
    /// Its slow CPU nodes.
    pub slow: Vec<NodeId>,
}

impl CurveMachine {
    /// The shape of a topology.
    pub fn of(topology: &Topology) -> Self {
        let with = |class: NodeClass| -> Vec<NodeId> {
            topology
                .nodes()
                .iter()
                .zip(topology.classes())
                .filter(|(_, c)| **c == class)
                .map(|(n, _)| n.id)
                .collect()
        };
        Self {
            nodes: topology.len(),
            fast: with(NodeClass::Fast),
            slow: with(NodeClass::Slow),
        }
    }

    /// In words, for messages: "4 nodes (fast 1, 2; slow 0, 3)".
    pub fn describe(&self) -> String {
        let list = |v: &[NodeId]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.iter()
                    .map(|n| n.0.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        format!(
            "{} nodes (fast {}; slow {})",
            self.nodes,
            list(&self.fast),
            list(&self.slow)
        )
    }
}

/// A MAPI-to-gap curve and the machine it was measured on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GapCurve {
    /// File format version ([`CURVE_FORMAT`]).
    pub format: u32,
    /// The machine's name (a preset, or a host name), for reports.
    pub machine: String,
    /// How the curve was measured, for reports.
    #[serde(default)]
    pub measured_by: String,
    /// Number of NUMA nodes.
    pub nodes: usize,
    pub fast: Vec<NodeId>,
    pub slow: Vec<NodeId>,
    /// The fast node and the slow node whose cores were compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared: Option<(NodeId, NodeId)>,
    /// The points, by increasing MAPI.
    #[serde(rename = "point")]
    pub points: Vec<CurvePoint>,
}

impl GapCurve {
    /// Reads a curve file's text and checks it (points by strictly increasing MAPI, finite
    /// numbers, disjoint fast and slow nodes).
    pub fn from_toml(text: &str) -> Result<Self, CurveError> {
        #[derive(Deserialize)]
        struct Version {
            format: Option<u32>,
        }
        let v: Version = toml::from_str(text)
            .map_err(|e| CurveError::Toml(crate::toml_error::describe(text, &e)))?;
        match v.format {
            Some(CURVE_FORMAT) => {}
            Some(f) => return Err(CurveError::Format(f)),
            None => return Err(CurveError::Invalid("`format` is missing".into())),
        }
        let curve: GapCurve = toml::from_str(text)
            .map_err(|e| CurveError::Toml(crate::toml_error::describe(text, &e)))?;
        curve.check()?;
        Ok(curve)
    }

    /// The curve as a file's text (a comment line first).
    pub fn to_toml(&self) -> Result<String, CurveError> {
        let body = toml::to_string(self).map_err(|e| CurveError::Toml(e.to_string()))?;
        Ok(format!(
            "# MAPI-to-gap curve [Gaud10 §3.1, Figure 3]: gap_pct is how much faster the cores \
             of a fast node\n# read memory than those of a slow node, at `mapi` main-memory \
             accesses per instruction.\n{body}"
        ))
    }

    /// Checks the points and the machine description.
    pub fn check(&self) -> Result<(), CurveError> {
        let bad = |s: String| Err(CurveError::Invalid(s));
        if self.points.is_empty() {
            return bad("it has no [[point]]".into());
        }
        for (i, p) in self.points.iter().enumerate() {
            if !(p.mapi.is_finite() && p.mapi >= 0.0) {
                return bad(format!(
                    "point {i}: mapi must be a number >= 0, not {}",
                    p.mapi
                ));
            }
            if !p.gap_pct.is_finite() {
                return bad(format!("point {i}: gap_pct must be a number"));
            }
            let previous = i.checked_sub(1).and_then(|j| self.points.get(j));
            if let Some(q) = previous.filter(|q| p.mapi <= q.mapi) {
                return bad(format!(
                    "point {i}: mapi {} does not increase over the previous point's {}",
                    p.mapi, q.mapi
                ));
            }
        }
        if self.nodes == 0 {
            return bad("nodes must be at least 1".into());
        }
        if let Some(n) = self.fast.iter().find(|n| self.slow.contains(n)) {
            return bad(format!("{n} is listed as both fast and slow"));
        }
        Ok(())
    }

    /// Where the curve falls with MAPI by more than `points` percentage points below the
    /// highest gap at a lower MAPI, the largest such fall: (MAPI and gap of that highest
    /// point, MAPI and gap of the lowest after it). [Gaud10 §3.1] finds the gap growing with
    /// MAPI, then flat.
    pub fn falls(&self, points: f64) -> Option<(f64, f64, f64, f64)> {
        let mut top: Option<&CurvePoint> = None;
        let mut worst: Option<(f64, f64, f64, f64)> = None;
        for p in &self.points {
            match top {
                Some(t) if p.gap_pct < t.gap_pct - points => {
                    let fall = t.gap_pct - p.gap_pct;
                    if worst.is_none_or(|w| fall > w.1 - w.3) {
                        worst = Some((t.mapi, t.gap_pct, p.mapi, p.gap_pct));
                    }
                }
                Some(t) if p.gap_pct <= t.gap_pct => {}
                _ => top = Some(p),
            }
        }
        worst
    }

    /// The shape of the machine the curve was measured on.
    pub fn machine_shape(&self) -> CurveMachine {
        CurveMachine {
            nodes: self.nodes,
            fast: self.fast.clone(),
            slow: self.slow.clone(),
        }
    }

    /// Whether the curve was measured on a machine of this topology's shape: the same number
    /// of nodes, and the same fast and slow nodes.
    pub fn check_machine(&self, topology: &Topology) -> Result<(), CurveError> {
        let mut measured = self.machine_shape();
        measured.fast.sort_unstable();
        measured.slow.sort_unstable();
        let here = CurveMachine::of(topology);
        if measured == here {
            Ok(())
        } else {
            Err(CurveError::OtherMachine {
                measured: format!("'{}', {}", self.machine, measured.describe()),
                here: here.describe(),
            })
        }
    }

    /// The predicted gap (percent) at `mapi`: linear between measured points, the first
    /// point's gap below it and the last point's above it (the curve is flat there [Gaud10
    /// §3.1]).
    pub fn gap_pct(&self, mapi: f64) -> f64 {
        let pts = &self.points;
        let (Some(first), Some(last)) = (pts.first(), pts.last()) else {
            return 0.0;
        };
        if mapi.is_nan() || mapi <= first.mapi {
            return first.gap_pct;
        }
        if mapi >= last.mapi {
            return last.gap_pct;
        }
        // first.mapi < mapi < last.mapi: a point on each side.
        let i = pts.partition_point(|p| p.mapi <= mapi);
        let (Some(a), Some(b)) = (i.checked_sub(1).and_then(|j| pts.get(j)), pts.get(i)) else {
            return last.gap_pct;
        };
        a.gap_pct + (b.gap_pct - a.gap_pct) * (mapi - a.mapi) / (b.mapi - a.mapi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::TopologyBuilder;

    #[test]
    fn a_curve_that_falls_with_mapi_is_found() {
        let mut c = curve();
        assert_eq!(c.falls(1.0), None);
        let last = |c: &mut GapCurve, gap| {
            if let Some(p) = c.points.last_mut() {
                p.gap_pct = gap;
            }
        };
        last(&mut c, 19.5);
        assert_eq!(c.falls(1.0), None, "within a point of the top");
        last(&mut c, 12.0);
        assert_eq!(c.falls(1.0), Some((0.1, 20.0, 0.3, 12.0)));
    }

    fn curve() -> GapCurve {
        GapCurve {
            format: CURVE_FORMAT,
            machine: "m".into(),
            measured_by: "test".into(),
            nodes: 4,
            fast: vec![NodeId(1), NodeId(2)],
            slow: vec![NodeId(0), NodeId(3)],
            compared: Some((NodeId(1), NodeId(0))),
            points: vec![
                CurvePoint {
                    mapi: 0.0,
                    gap_pct: 0.0,
                    fast_reads_per_s: None,
                    slow_reads_per_s: None,
                },
                CurvePoint {
                    mapi: 0.1,
                    gap_pct: 20.0,
                    fast_reads_per_s: Some(2e8),
                    slow_reads_per_s: Some(1.6e8),
                },
                CurvePoint {
                    mapi: 0.3,
                    gap_pct: 30.0,
                    fast_reads_per_s: None,
                    slow_reads_per_s: None,
                },
            ],
        }
    }

    #[test]
    fn interpolates_linearly_and_is_flat_outside() {
        let c = curve();
        assert_eq!(c.gap_pct(0.0), 0.0);
        assert!((c.gap_pct(0.05) - 10.0).abs() < 1e-12);
        assert!((c.gap_pct(0.2) - 25.0).abs() < 1e-12);
        assert_eq!(c.gap_pct(0.1), 20.0);
        assert_eq!(c.gap_pct(0.9), 30.0);
        assert_eq!(c.gap_pct(-1.0), 0.0);
        assert_eq!(c.gap_pct(f64::NAN), 0.0);
    }

    #[test]
    fn round_trips_through_toml() {
        let c = curve();
        let text = c.to_toml().unwrap();
        assert!(text.starts_with("# MAPI-to-gap curve"), "{text}");
        assert!(text.contains("[[point]]"), "{text}");
        assert_eq!(GapCurve::from_toml(&text).unwrap(), c);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let c = curve();
        let text = c.to_toml().unwrap();
        let err = |t: &str| GapCurve::from_toml(t).unwrap_err().to_string();
        assert!(err("x = [").contains("not valid TOML"));
        assert!(err(&text.replace("format = 1", "format = 7")).contains("format 7"));
        assert!(err(&text.replace("format = 1\n", "")).contains("`format` is missing"));
        assert!(err(&text.replace("mapi = 0.3", "mapi = 0.05")).contains("does not increase"));
        assert!(
            err(&text.replace("slow = [0, 3]", "slow = [0, 1]")).contains("both fast and slow")
        );
        assert!(err(&text.replace("nodes = 4", "nodes = 4\nextra = 1")).contains("extra"));
        let mut empty = c;
        empty.points.clear();
        assert!(
            empty
                .check()
                .unwrap_err()
                .to_string()
                .contains("no [[point]]")
        );
    }

    #[test]
    fn a_curve_holds_only_on_a_machine_of_its_shape() {
        let c = curve();
        let r905 = TopologyBuilder::new(4)
            .distances(crate::synthetic::r905_distances())
            .build()
            .unwrap();
        assert_eq!(c.check_machine(&r905), Ok(()));
        let two = TopologyBuilder::new(2).build().unwrap();
        let err = c.check_machine(&two).unwrap_err().to_string();
        assert!(
            err.contains("'m', 4 nodes (fast 1, 2; slow 0, 3)")
                && err.contains("this machine has 2 nodes (fast 0, 1; slow none)"),
            "{err}"
        );
        let square = TopologyBuilder::new(4).build().unwrap();
        assert!(c.check_machine(&square).is_err());
    }
}
