//! Charts of a run, as SVG or PNG (`sim --plot`, `report --plot`).
//!
//! Text is laid out with the DejaVu Sans font shipped in `crates/cli/assets/` (Bitstream Vera
//! licence, beside it) through plotters' `ab_glyph` feature, so neither the SVG's text metrics
//! nor the PNG's glyphs depend on the fonts, fontconfig or freetype of the machine: a fresh
//! Debian draws the same chart. The PNG is plotters' RGB bitmap encoded by `png`, with a
//! "Software: rondpoint" text chunk first, which is how rondpoint knows a PNG it may replace
//! (`OutputKind::PngChart`).

mod bars;
mod lines;
mod recording;
mod sim;

use anyhow::{Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use rondpoint_safeio::{OutputKind, SVG_CHART_SIGNATURE, Staged};
use std::io::Write;
use std::path::Path;

pub use recording::RecordingFigure;
pub use sim::SimFigure;

/// The extensions `--plot` accepts, for messages.
pub const ACCEPTED: &str = ".svg or .png";

/// The file format of a chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

/// The format a path's extension names; any other extension is bad input.
pub fn format_of(path: &Path) -> Result<Format> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => Ok(Format::Svg),
        Some("png") => Ok(Format::Png),
        _ => bad_input!(
            "--plot {}: the chart's file name must end in {ACCEPTED}",
            path.display()
        ),
    }
}

/// A chart: its size in pixels and how to draw it on any of plotters' backends.
pub trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>;
}

/// A plotters error as an `anyhow` one (plotters' errors are generic over the backend's).
pub(crate) fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing the chart: {e}")
}

/// Draws a chart's legend, the series' labels, in its upper right corner over a light
/// background (every chart draws its own the same way).
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// The font family every text of a chart uses, plotters' default among them: the shipped
/// font is registered under it ([`register_font`]).
pub(crate) const FONT: &str = "sans-serif";

static FONT_BYTES: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// Registers the shipped font with plotters (once is enough; again is harmless).
fn register_font() -> Result<()> {
    plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES)
        .map_err(|_| anyhow::anyhow!("the shipped chart font cannot be read"))
}

/// The chart as SVG text, beginning with rondpoint's comment line.
fn svg(chart: &impl Figure) -> Result<String> {
    register_font()?;
    let mut body = String::new();
    {
        let root = SVGBackend::with_string(&mut body, chart.size()).into_drawing_area();
        chart.draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(format!("{SVG_CHART_SIGNATURE}\n{body}"))
}

/// The chart as PNG bytes.
fn png(chart: &impl Figure) -> Result<Vec<u8>> {
    register_font()?;
    let (w, h) = chart.size();
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, chart.size()).into_drawing_area();
        chart.draw(&root)?;
        root.present().map_err(err)?;
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .add_text_chunk("Software".into(), "rondpoint".into())
        .context("encoding the PNG chart")?;
    let mut writer = encoder.write_header().context("encoding the PNG chart")?;
    writer
        .write_image_data(&rgb)
        .context("encoding the PNG chart")?;
    writer.finish().context("encoding the PNG chart")?;
    Ok(out)
}

/// A chart file being written: opened (under a temporary name) before the runs it draws, so
/// that a destination rondpoint may not replace is refused before anything runs, and renamed
/// over the destination once drawn (atomically, through safeio).
#[derive(Debug)]
pub struct Output {
    staged: Staged,
    format: Format,
}

impl Output {
    /// Starts writing a chart to `path`, in the format its extension names; it replaces only
    /// a chart of that format rondpoint wrote, unless `force`.
    pub fn create(path: &Path, force: bool) -> Result<Self> {
        let format = format_of(path)?;
        let kind = match format {
            Format::Svg => OutputKind::SvgChart,
            Format::Png => OutputKind::PngChart,
        };
        let staged = rondpoint_safeio::create_staged(path, crate::options::replace(force, kind))?;
        Ok(Output { staged, format })
    }

    /// Draws `chart` into the file and puts it in place.
    pub fn write(mut self, chart: &impl Figure) -> Result<()> {
        let bytes = match self.format {
            Format::Svg => svg(chart)?.into_bytes(),
            Format::Png => png(chart)?,
        };
        self.staged.write_all(&bytes).context("writing the chart")?;
        self.staged.commit()?;
        Ok(())
    }
}
