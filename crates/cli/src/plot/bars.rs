//! A grouped bar chart on one drawing area: one group per label along x, one bar per series
//! in each group, a legend naming the series, and an optional reference line.

use super::{FONT, err, legend};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Series colours (Tableau 10, told apart by most colour-blind readers), in series order.
pub const COLORS: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// The top of a y axis starting at 0: the highest of `values` (finite ones), and room above it
/// for a legend of `series` entries (about 18 pixels each) in a panel `height` pixels high.
pub fn axis_top(values: impl Iterator<Item = f64>, series: usize, height: u32) -> f64 {
    let high = values.filter(|v| v.is_finite()).fold(0.0, f64::max);
    let plot = f64::from(height.saturating_sub(100).max(100));
    let legend = (18.0 * series as f64 + 30.0) / plot;
    if high > 0.0 {
        high / (1.0 - legend.min(0.6))
    } else {
        1.0
    }
}

/// One panel of grouped bars.
#[derive(Debug)]
pub struct Bars {
    pub caption: String,
    pub y_label: String,
    /// The groups' labels, along x.
    pub groups: Vec<String>,
    /// Each series' name and its value in each group (`None`: no bar there).
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// A horizontal line at this value (1.0 on a speedup chart).
    pub reference: Option<f64>,
}

impl Bars {
    /// The top of the y axis: the highest bar or reference line, and the legend's room.
    fn top(&self, height: u32) -> f64 {
        let values = self.series.iter().flat_map(|(_, v)| v.iter().flatten());
        axis_top(
            values.copied().chain(self.reference),
            self.series.len(),
            height,
        )
    }

    /// The bottom of the y axis: 0, or a tenth below the lowest bar when one is negative (a
    /// program faster than alone has a negative slowdown).
    fn bottom(&self) -> f64 {
        let low = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten())
            .copied()
            .fold(0.0, f64::min);
        let high = self.top(400).max(1e-9);
        if low < 0.0 {
            low - 0.1 * (high - low)
        } else {
            0.0
        }
    }

    /// Draws the panel on `area`.
    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<()> {
        let n = self.groups.len().max(1) as f64;
        let top = self.top(area.dim_in_pixel().1);
        // Enough decimals that the axis's ticks differ (a link loaded 0.02% needs three), and
        // powers of ten below a thousandth.
        let decimals = 1.0 - (top - self.bottom()).max(1e-12).log10().floor();
        let y_format = move |v: &f64| match decimals {
            d if d > 4.0 => format!("{v:.1e}"),
            d => format!("{v:.prec$}", prec = d.max(0.0) as usize),
        };
        let mut chart = ChartBuilder::on(area)
            .caption(&self.caption, (FONT, 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..n - 0.5, self.bottom()..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE)
            .x_labels(0)
            .y_label_formatter(&y_format)
            .y_desc(self.y_label.as_str())
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(err)?;
        // At most 0.8 of a group's room, and no bar wider than a tenth of the plot (a single
        // group's bars would fill it).
        let k = self.series.len().max(1) as f64;
        let width = (0.8 / k).min(0.1 * n);
        for (s, (name, values)) in self.series.iter().enumerate() {
            let color = COLORS[s % COLORS.len()];
            let bars = values.iter().enumerate().filter_map(|(g, v)| {
                let x0 = g as f64 - k * width / 2.0 + s as f64 * width;
                v.map(|v| Rectangle::new([(x0, 0.0), (x0 + width, v)], color.filled()))
            });
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled())
                });
        }
        if let Some(r) = self.reference {
            let line = PathElement::new(vec![(-0.5, r), (n - 0.5, r)], BLACK.stroke_width(1));
            chart.draw_series(std::iter::once(line)).map_err(err)?;
        }
        let below = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        let labels = self.groups.iter().enumerate().map(|(g, label)| {
            EmptyElement::at((g as f64, 0.0)) + Text::new(label.clone(), (0, 8), below.clone())
        });
        chart.draw_series(labels).map_err(err)?;
        legend(&mut chart)
    }
}
