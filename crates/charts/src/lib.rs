//! # tradeterm-charts
//!
//! Pictures of numbers: the charts tradeterm draws for the people and the AI
//! models that read its results.
//!
//! - [`equity`]: an equity panel over a drawdown panel, as SVG or PNG (the
//!   chart of `tradeterm backtest --chart`, of `backtest_strategy` and of
//!   `get_equity_curve`);
//! - [`render_tool_chart`]: the PNG of a catalog tool's result, by the
//!   tool's chart kind (`tradeterm_tools::ChartKind::name`): candles
//!   (`get_bars`), market structure over candles (`detect_structure`),
//!   equity and drawdown (`backtest_strategy`, `get_equity_curve`), a
//!   correlation heat map (`get_correlation_matrix`). It reads the tool's
//!   JSON output exactly as a client receives it (times as ISO 8601 strings,
//!   or unix milliseconds where the output carries those).
//!
//! The REST API (`Accept: image/png`, or a `chart` field) and the MCP server
//! (an image content next to the structured result) both call
//! [`render_tool_chart`], so one renderer serves every surface, and the CLI
//! draws its backtest chart with the same [`equity`] module.
//!
//! **Design decision: a pure renderer.** Data in, image bytes out: this crate
//! opens no file, reads no clock, speaks to no terminal and knows no tool
//! catalog (the catalog knows which tools have a chart and gathers the data;
//! the adapters pass it here). Every label is drawn with the embedded DejaVu
//! Sans subset (`assets/fonts/DejaVuSans-subset.ttf`) through plotters'
//! pure-Rust `ab_glyph` feature, so no system font library is needed, and the
//! PNG is encoded with the `png` crate.
//!
//! **Invariants:** a tool chart is at most [`TOOL_CHART_SIZE`] and at most
//! [`MAX_PNG_BYTES`] (a larger picture is drawn again smaller); a valid tool
//! output always gives a picture (no bars, no events or a single point draw
//! a chart that says so), so asking for a chart never turns a good answer
//! into an error. **Architecture invariant:** depends on `tradeterm-core`
//! (time helpers) and the plotting and encoding crates only; no I/O crate,
//! no other workspace crate (`cargo xtask layering`).

mod candles;
pub mod equity;
mod heatmap;
mod json;
mod structure;
mod style;

use std::sync::OnceLock;

use base64::Engine as _;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, VPos};
use serde_json::Value;

static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-subset.ttf");

/// The media type of every chart image.
pub const PNG_MIME: &str = "image/png";

/// Size of a tool chart: large enough for readable labels, small enough for
/// a model's image input (at most 1568 pixels on the long side for most).
pub const TOOL_CHART_SIZE: Size = Size {
    width: 1200,
    height: 800,
};

/// Largest PNG a tool chart may be, in bytes. A picture over it is drawn
/// again at [`FALLBACK_SIZES`] (in practice the charts are 40 to 150 KB).
pub const MAX_PNG_BYTES: usize = 600 * 1024;

/// Smaller sizes tried, in turn, when a tool chart exceeds [`MAX_PNG_BYTES`].
pub const FALLBACK_SIZES: [Size; 2] = [
    Size {
        width: 960,
        height: 640,
    },
    Size {
        width: 720,
        height: 480,
    },
];

// The bounds promised to AI clients, checked when compiling.
const _: () = assert!(
    TOOL_CHART_SIZE.width <= 1200
        && TOOL_CHART_SIZE.height <= 800
        && FALLBACK_SIZES[0].width < TOOL_CHART_SIZE.width
        && FALLBACK_SIZES[1].width < FALLBACK_SIZES[0].width
);

/// The chart kinds [`render_tool_chart`] draws, by name.
pub const KINDS: [&str; 5] = ["candles", "structure", "backtest", "equity_curve", "correlation"];

/// A chart failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChartError {
    /// The chart kind is not one of [`KINDS`].
    #[error("no chart kind `{0}`; kinds: candles, structure, backtest, equity_curve, correlation")]
    UnknownKind(String),
    /// The tool output (or the bars beside it) lacks what the chart draws.
    #[error("the data to chart is malformed: {0}")]
    BadData(String),
    /// Nothing to draw where a caller must give something (the CLI's empty curve).
    #[error("nothing to chart: {0}")]
    NoData(String),
    /// Drawing or encoding failed.
    #[error("drawing the chart: {0}")]
    Draw(String),
}

/// Chart size in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Size {
    /// Smallest accepted width and height.
    pub const MIN: (u32, u32) = (320, 240);
    /// Largest accepted width and height.
    pub const MAX: (u32, u32) = (10_000, 10_000);

    /// Parses `WIDTHxHEIGHT` (e.g. `1200x800`) within [`Size::MIN`] and [`Size::MAX`].
    pub fn parse(s: &str) -> Result<Size, String> {
        let (w, h) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("`{s}` is not WIDTHxHEIGHT, e.g. 1200x800"))?;
        let num = |v: &str| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{v}` is not a whole number"))
        };
        let (width, height) = (num(w)?, num(h)?);
        let (min, max) = (Size::MIN, Size::MAX);
        if !(min.0..=max.0).contains(&width) || !(min.1..=max.1).contains(&height) {
            return Err(format!(
                "{width}x{height} is outside {}x{} to {}x{}",
                min.0, min.1, max.0, max.1
            ));
        }
        Ok(Size { width, height })
    }

    fn dims(self) -> (u32, u32) {
        (self.width, self.height)
    }
}

/// An encoded PNG image.
#[derive(Clone, PartialEq, Eq)]
pub struct Png {
    /// The PNG file's bytes.
    pub bytes: Vec<u8>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl std::fmt::Debug for Png {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Png")
            .field("bytes", &self.bytes.len())
            .field("width", &self.width)
            .field("height", &self.height)
            .finish()
    }
}

impl Png {
    /// The bytes in standard base64 (MCP image content, the REST `chart` field).
    pub fn base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.bytes)
    }
}

/// The PNG chart of a tool's result.
///
/// `kind` is the tool's chart kind ([`KINDS`]); `output` is the tool's JSON
/// output; `bars` is the `get_bars` output over the same bars, for kinds
/// whose output does not carry its candles (`structure`).
///
/// # Errors
/// [`ChartError::UnknownKind`] for a kind outside [`KINDS`];
/// [`ChartError::BadData`] when `output` is not the kind's tool output.
pub fn render_tool_chart(kind: &str, output: &Value, bars: Option<&Value>) -> Result<Png, ChartError> {
    let draw: fn(&Area<'_>, &Value, Option<&Value>) -> Result<(), ChartError> = match kind {
        "candles" => candles::draw_bars_output,
        "structure" => structure::draw,
        "backtest" => equity::draw_backtest_output,
        "equity_curve" => equity::draw_equity_curve_output,
        "correlation" => heatmap::draw,
        other => return Err(ChartError::UnknownKind(other.to_owned())),
    };
    let mut png = bitmap(TOOL_CHART_SIZE, |area| draw(area, output, bars))?;
    for size in FALLBACK_SIZES {
        if png.bytes.len() <= MAX_PNG_BYTES {
            break;
        }
        png = bitmap(size, |area| draw(area, output, bars))?;
    }
    Ok(png)
}

/// A drawing area of the bitmap backend.
pub(crate) type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// Draws into an RGB buffer of `size` and encodes it as PNG.
pub(crate) fn bitmap(size: Size, draw: impl FnOnce(&Area<'_>) -> Result<(), ChartError>) -> Result<Png, ChartError> {
    register_font()?;
    let mut rgb = vec![255_u8; size.width as usize * size.height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size.dims()).into_drawing_area();
        draw(&root)?;
        root.present().or_draw()?;
    }
    encode_png(size, &rgb)
}

/// Encodes an RGB buffer of `size` as an 8-bit RGB PNG.
fn encode_png(size: Size, rgb: &[u8]) -> Result<Png, ChartError> {
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, size.width, size.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::High);
        let encode = |e: png::EncodingError| ChartError::Draw(format!("encoding the PNG: {e}"));
        let mut writer = encoder.write_header().map_err(encode)?;
        writer.write_image_data(rgb).map_err(encode)?;
        writer.finish().map_err(encode)?;
    }
    Ok(Png {
        bytes,
        width: size.width,
        height: size.height,
    })
}

/// Registers the embedded font as plotters' `sans-serif` (once per process).
pub(crate) fn register_font() -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(ChartError::Draw("the embedded chart font could not be loaded".into()))
    }
}

/// A white picture with a title and a centred message (nothing to plot).
pub(crate) fn message(root: &Area<'_>, title: &str, message: &str) -> Result<(), ChartError> {
    let (width, height) = root.dim_in_pixel();
    root.fill(&WHITE).or_draw()?;
    let (w, h) = (width as i32, height as i32);
    root.draw(&Text::new(
        title.to_owned(),
        (w / 2, 16),
        style::text(style::title_size(height), BLACK, HPos::Center, VPos::Top),
    ))
    .or_draw()?;
    root.draw(&Text::new(
        message.to_owned(),
        (w / 2, h / 2),
        style::text(style::title_size(height), style::GREY, HPos::Center, VPos::Center),
    ))
    .or_draw()?;
    Ok(())
}

/// Maps plotters' drawing errors onto [`ChartError::Draw`].
pub(crate) trait OrDraw<T> {
    fn or_draw(self) -> Result<T, ChartError>;
}

impl<T, E: std::error::Error + Send + Sync> OrDraw<T> for Result<T, DrawingAreaErrorKind<E>> {
    fn or_draw(self) -> Result<T, ChartError> {
        self.map_err(|e| ChartError::Draw(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_is_width_x_height_within_limits() {
        assert_eq!(
            Size::parse("800x600").unwrap(),
            Size {
                width: 800,
                height: 600
            }
        );
        for bad in ["800", "x600", "800x", "0x0", "100x100", "20000x600", "8a0x600"] {
            assert!(Size::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_kinds_are_refused() {
        let e = render_tool_chart("pie", &serde_json::json!({}), None).unwrap_err();
        assert_eq!(e, ChartError::UnknownKind("pie".into()));
        assert!(e.to_string().contains("candles, structure"));
    }
}
