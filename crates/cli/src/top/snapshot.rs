//! A picture of `top`'s screen (`top --snapshot`, `sim --top --snapshot`): the view drawn on
//! ratatui's `TestBackend`, as the tests draw it, and each cell painted into an SVG or PNG (its
//! background, then its character in its colour) with the chart font, one character per cell
//! so that columns line up as on a terminal. For bug reports, documentation and dashboards that
//! take images; the figures are the screen's, not re-computed.

use super::input::UiState;
use super::model::ViewModel;
use super::view::{Feed, draw};
use crate::plot::{FONT, Figure, err};
use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color as TermColor, Modifier};

/// The screen's size in cells: wide and tall enough for every panel of a few nodes and ten
/// processes, as a terminal of 120 x 28.
pub const COLS: u16 = 120;
pub const ROWS: u16 = 28;

/// One cell's size in pixels, for the font at [`FONT_PX`].
const CELL_W: u32 = 9;
const CELL_H: u32 = 18;
const FONT_PX: f64 = 15.0;

/// The terminal's default colours (a dark terminal).
const BACKGROUND: RGBColor = RGBColor(0x1e, 0x1e, 0x1e);
const FOREGROUND: RGBColor = RGBColor(0xd4, 0xd4, 0xd4);

/// The screen drawn, ready to be painted.
#[derive(Debug)]
pub struct Snapshot {
    buffer: Buffer,
}

impl Snapshot {
    /// The screen `view` gives, as `feed` says where it stands.
    pub fn new(view: &ViewModel, feed: &Feed) -> Result<Self> {
        let mut terminal = Terminal::new(TestBackend::new(COLS, ROWS))
            .map_err(|e| anyhow!("drawing the screen: {e}"))?;
        let ui = UiState::default();
        terminal
            .draw(|f| draw(f, view, &ui, feed))
            .map_err(|e| anyhow!("drawing the screen: {e}"))?;
        Ok(Self {
            buffer: terminal.backend().buffer().clone(),
        })
    }

    /// The text of the screen, row by row (what the picture shows).
    #[cfg(test)]
    pub fn text(&self) -> String {
        let area = self.buffer.area;
        (0..area.height)
            .map(|y| {
                (0..area.width)
                    .map(|x| self.buffer[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A terminal colour as RGB: the xterm palette for the named and indexed colours.
fn rgb(c: TermColor, default: RGBColor) -> RGBColor {
    const NAMED: [(u8, u8, u8); 16] = [
        (0x00, 0x00, 0x00),
        (0xcd, 0x31, 0x31),
        (0x0d, 0xbc, 0x79),
        (0xe5, 0xe5, 0x10),
        (0x24, 0x72, 0xc8),
        (0xbc, 0x3f, 0xbc),
        (0x11, 0xa8, 0xcd),
        (0xe5, 0xe5, 0xe5),
        (0x66, 0x66, 0x66),
        (0xf1, 0x4c, 0x4c),
        (0x23, 0xd1, 0x8b),
        (0xf5, 0xf5, 0x43),
        (0x3b, 0x8e, 0xea),
        (0xd6, 0x70, 0xd6),
        (0x29, 0xb8, 0xdb),
        (0xff, 0xff, 0xff),
    ];
    let named = |i: usize| {
        let (r, g, b) = NAMED[i % 16];
        RGBColor(r, g, b)
    };
    match c {
        TermColor::Reset => default,
        TermColor::Black => named(0),
        TermColor::Red => named(1),
        TermColor::Green => named(2),
        TermColor::Yellow => named(3),
        TermColor::Blue => named(4),
        TermColor::Magenta => named(5),
        TermColor::Cyan => named(6),
        TermColor::Gray => named(7),
        TermColor::DarkGray => named(8),
        TermColor::LightRed => named(9),
        TermColor::LightGreen => named(10),
        TermColor::LightYellow => named(11),
        TermColor::LightBlue => named(12),
        TermColor::LightMagenta => named(13),
        TermColor::LightCyan => named(14),
        TermColor::White => named(15),
        TermColor::Rgb(r, g, b) => RGBColor(r, g, b),
        TermColor::Indexed(i) if i < 16 => named(usize::from(i)),
        TermColor::Indexed(i) if i >= 232 => {
            let v = 8 + 10 * (i - 232);
            RGBColor(v, v, v)
        }
        TermColor::Indexed(i) => {
            // The 6 x 6 x 6 cube of xterm's 256 colours.
            let i = i - 16;
            let level = |k: u8| if k == 0 { 0 } else { 55 + 40 * k };
            RGBColor(level(i / 36), level(i / 6 % 6), level(i % 6))
        }
    }
}

impl Figure for Snapshot {
    fn size(&self) -> (u32, u32) {
        let area = self.buffer.area;
        (
            u32::from(area.width) * CELL_W,
            u32::from(area.height) * CELL_H,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        root.fill(&BACKGROUND).map_err(err)?;
        let area = self.buffer.area;
        for y in 0..area.height {
            for x in 0..area.width {
                let cell = &self.buffer[(x, y)];
                let reversed = cell.modifier.contains(Modifier::REVERSED);
                let (mut fg, mut bg) = (rgb(cell.fg, FOREGROUND), rgb(cell.bg, BACKGROUND));
                if reversed {
                    std::mem::swap(&mut fg, &mut bg);
                }
                let (px, py) = (
                    i32::try_from(u32::from(x) * CELL_W).unwrap_or(i32::MAX),
                    i32::try_from(u32::from(y) * CELL_H).unwrap_or(i32::MAX),
                );
                if bg != BACKGROUND {
                    let corner = (px + CELL_W as i32, py + CELL_H as i32);
                    root.draw(&Rectangle::new([(px, py), corner], bg.filled()))
                        .map_err(err)?;
                }
                let symbol = cell.symbol();
                if symbol.trim().is_empty() {
                    continue;
                }
                // One face is shipped: bold text is drawn in it too.
                let style = TextStyle::from((FONT, FONT_PX).into_font())
                    .color(&fg)
                    .pos(Pos::new(HPos::Center, VPos::Center));
                let centre = (px + CELL_W as i32 / 2, py + CELL_H as i32 / 2);
                root.draw_text(symbol, &style, centre).map_err(err)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_colours_map_to_xterm_s() {
        let fallback = RGBColor(1, 2, 3);
        assert_eq!(rgb(TermColor::Reset, fallback), fallback);
        assert_eq!(rgb(TermColor::Rgb(9, 8, 7), fallback), RGBColor(9, 8, 7));
        assert_eq!(
            rgb(TermColor::Indexed(1), fallback),
            rgb(TermColor::Red, fallback)
        );
        // The cube's corners and the grey ramp's ends.
        assert_eq!(rgb(TermColor::Indexed(16), fallback), RGBColor(0, 0, 0));
        assert_eq!(
            rgb(TermColor::Indexed(231), fallback),
            RGBColor(255, 255, 255)
        );
        assert_eq!(rgb(TermColor::Indexed(196), fallback), RGBColor(255, 0, 0));
        assert_eq!(rgb(TermColor::Indexed(232), fallback), RGBColor(8, 8, 8));
        assert_eq!(
            rgb(TermColor::Indexed(255), fallback),
            RGBColor(238, 238, 238)
        );
    }

    #[test]
    fn the_picture_is_the_screen_the_terminal_would_show() {
        let feed = Feed::Waiting("the daemon's state file /x".into());
        let shot = Snapshot::new(&ViewModel::default(), &feed).unwrap_or_else(|e| panic!("{e}"));
        let text = shot.text();
        assert!(text.starts_with("rondpoint top [waiting]"), "{text}");
        assert!(text.contains("the daemon's state file /x"), "{text}");
        assert_eq!(shot.size(), (120 * CELL_W, 28 * CELL_H));
    }
}
