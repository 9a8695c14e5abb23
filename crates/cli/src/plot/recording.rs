//! `report --plot`: a recorded run over time: the managed programs' memory on each node, the
//! local access ratio and the memory-controller imbalance, and the actions of each technique
//! per epoch.

use super::Figure;
use super::lines::Lines;
use crate::commands::report::Timeline;
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

const WIDTH: u32 = 960;
const PANEL_HEIGHT: u32 = 360;

/// The three panels of a recording's chart.
#[derive(Debug)]
pub struct RecordingFigure {
    memory: Lines,
    locality: Lines,
    actions: Lines,
}

impl RecordingFigure {
    pub fn new(t: &Timeline) -> Self {
        let x_label = "time (s)".to_string();
        let memory = Lines {
            caption: "memory of the managed programs per node".into(),
            x_label: x_label.clone(),
            y_label: "resident (GiB)".into(),
            x: t.t_s.clone(),
            series: t
                .nodes
                .iter()
                .enumerate()
                .map(|(i, node)| {
                    let values = t
                        .memory_bytes_by_node
                        .iter()
                        .map(|m| m.get(i).map(|&b| b as f64 / f64::from(1u32 << 30)))
                        .collect();
                    (node.clone(), values)
                })
                .collect(),
        };
        let locality = Lines {
            caption: "locality and balance".into(),
            x_label: x_label.clone(),
            y_label: "%".into(),
            x: t.t_s.clone(),
            series: vec![
                (
                    "local access ratio (higher is better)".into(),
                    t.lar.iter().map(|v| Some(100.0 * v)).collect(),
                ),
                (
                    "controller imbalance (lower is better)".into(),
                    t.mc_imbalance_pct.iter().map(|v| Some(*v)).collect(),
                ),
            ],
        };
        let actions = Lines {
            caption: "actions per epoch".into(),
            x_label,
            y_label: "actions".into(),
            x: t.t_s.clone(),
            series: t
                .actions_by_technique
                .iter()
                .map(|(k, v)| (k.clone(), v.iter().map(|&n| Some(n as f64)).collect()))
                .collect(),
        };
        Self {
            memory,
            locality,
            actions,
        }
    }
}

impl Figure for RecordingFigure {
    fn size(&self) -> (u32, u32) {
        (WIDTH, PANEL_HEIGHT * 3)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        root.fill(&WHITE).map_err(super::err)?;
        let panels = root.split_evenly((3, 1));
        self.memory.draw(&panels[0])?;
        self.locality.draw(&panels[1])?;
        self.actions.draw(&panels[2])
    }
}
