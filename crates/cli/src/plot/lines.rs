//! A line chart on one drawing area: one line per series over a shared x axis (time), a legend
//! naming the series.

use super::bars::{COLORS, axis_top};
use super::{FONT, err, legend};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One panel of lines.
#[derive(Debug)]
pub struct Lines {
    pub caption: String,
    pub x_label: String,
    pub y_label: String,
    /// The x of every point (the same for every series).
    pub x: Vec<f64>,
    /// Each series' name and its value at each x (`None`: a gap).
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

impl Lines {
    /// The y range's top: the highest point, and the legend's room.
    fn y_top(&self, height: u32) -> f64 {
        let values = self.series.iter().flat_map(|(_, v)| v.iter().flatten());
        axis_top(values.copied(), self.series.len(), height)
    }

    /// Draws the panel on `area`.
    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()> {
        // From 0: the run's start, before its first epoch ends.
        let x0 = self.x.first().copied().unwrap_or(0.0).min(0.0);
        let x1 = self.x.last().copied().unwrap_or(1.0).max(x0 + 1e-9);
        let mut chart = ChartBuilder::on(area)
            .caption(&self.caption, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, 0.0..self.y_top(area.dim_in_pixel().1))
            .map_err(err)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(err)?;
        for (s, (name, values)) in self.series.iter().enumerate() {
            let color = COLORS[s % COLORS.len()];
            // A gap (no value) ends one line and a later value starts another.
            let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for (x, v) in self.x.iter().zip(values) {
                match v {
                    Some(v) if v.is_finite() => runs.last_mut().map_or((), |r| r.push((*x, *v))),
                    _ => runs.push(Vec::new()),
                }
            }
            let style = color.stroke_width(2);
            let mut labelled = false;
            for run in runs.into_iter().filter(|r| !r.is_empty()) {
                let drawn = chart
                    .draw_series(std::iter::once(PathElement::new(run, style)))
                    .map_err(err)?;
                if !labelled {
                    labelled = true;
                    drawn.label(name.as_str()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(3))
                    });
                }
            }
        }
        legend(&mut chart)
    }
}
