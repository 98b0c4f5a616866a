//! The equity chart of `tradeterm backtest --chart`: an equity panel over a
//! drawdown panel, drawn with plotters to SVG or PNG.
//!
//! Both formats use the embedded DejaVu Sans subset
//! (`assets/fonts/DejaVuSans-subset.ttf`) through plotters' pure-Rust
//! `ab_glyph` feature, so no system font library is needed. SVG keeps its
//! labels as `<text>` elements; PNG is rasterised into an RGB buffer and
//! encoded with the `png` crate. Long series are reduced to the first, lowest,
//! highest and last value of each horizontal pixel (M4 decimation), which
//! draws the same picture as every point.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, anyhow, bail};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-subset.ttf");

/// The chart's file format, chosen by the output file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartFormat {
    /// Scalable vector graphics (`.svg`).
    Svg,
    /// RGB PNG image (`.png`).
    Png,
}

impl ChartFormat {
    /// The format of `path` from its extension (case-insensitive).
    pub fn from_path(path: &Path) -> anyhow::Result<Self> {
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => Ok(Self::Svg),
            Some("png") => Ok(Self::Png),
            Some(other) => bail!(
                "--chart {}: unsupported extension `.{other}` (use .svg or .png)",
                path.display()
            ),
            None => bail!("--chart {}: no file extension (use .svg or .png)", path.display()),
        }
    }
}

/// Chart size in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChartSize {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl ChartSize {
    /// Smallest accepted width and height.
    pub const MIN: (u32, u32) = (320, 240);
    /// Largest accepted width and height.
    pub const MAX: (u32, u32) = (10_000, 10_000);
}

/// Parses `WIDTHxHEIGHT` (e.g. `1200x800`) within [`ChartSize::MIN`] and [`ChartSize::MAX`].
pub fn parse_size(s: &str) -> Result<ChartSize, String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("`{s}` is not WIDTHxHEIGHT, e.g. 1200x800"))?;
    let num = |v: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{v}` is not a whole number"))
    };
    let (width, height) = (num(w)?, num(h)?);
    let (min, max) = (ChartSize::MIN, ChartSize::MAX);
    if !(min.0..=max.0).contains(&width) || !(min.1..=max.1).contains(&height) {
        return Err(format!(
            "{width}x{height} is outside {}x{} to {}x{}",
            min.0, min.1, max.0, max.1
        ));
    }
    Ok(ChartSize { width, height })
}

/// What the chart shows.
#[derive(Debug)]
pub struct ChartData<'a> {
    /// Title line (symbol or file name, strategy, return).
    pub title: &'a str,
    /// Bar open times, unix milliseconds, ascending.
    pub times: &'a [i64],
    /// Equity at each bar's close (as long as `times`).
    pub equity: &'a [f64],
    /// Starting equity (drawn as a reference line, and the first drawdown peak).
    pub initial: f64,
}

/// Draws `data` to `path` in `format` at `size`.
pub fn write(path: &Path, format: ChartFormat, size: ChartSize, data: &ChartData<'_>) -> anyhow::Result<()> {
    if data.times.is_empty() || data.times.len() != data.equity.len() {
        bail!(
            "nothing to chart: {} times, {} equity values",
            data.times.len(),
            data.equity.len()
        );
    }
    register_font()?;
    let dims = (size.width, size.height);
    match format {
        ChartFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, dims).into_drawing_area();
                draw(&root, data)?;
                root.present().map_err(|e| anyhow!("drawing the chart: {e}"))?;
            }
            std::fs::write(path, svg).with_context(|| format!("writing {}", path.display()))
        }
        ChartFormat::Png => {
            let mut rgb = vec![255_u8; size.width as usize * size.height as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, dims).into_drawing_area();
                draw(&root, data)?;
                root.present().map_err(|e| anyhow!("drawing the chart: {e}"))?;
            }
            let file = std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
            let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), size.width, size.height);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder
                .write_header()
                .with_context(|| format!("writing {}", path.display()))?;
            writer
                .write_image_data(&rgb)
                .with_context(|| format!("writing {}", path.display()))?;
            writer.finish().with_context(|| format!("writing {}", path.display()))
        }
    }
}

fn register_font() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        bail!("the embedded chart font could not be loaded")
    }
}

/// Drawdown in percent of the running peak (≤ 0) at each point; the peak starts at `initial`.
pub fn drawdown_pct(equity: &[f64], initial: f64) -> Vec<f64> {
    let mut peak = initial;
    equity
        .iter()
        .map(|&e| {
            peak = peak.max(e);
            if peak > 0.0 { (e / peak - 1.0) * 100.0 } else { 0.0 }
        })
        .collect()
}

/// Keeps, for each of `buckets` consecutive index ranges, the first, lowest, highest
/// and last point (in index order, without repeats). Returns every point when there
/// are at most `4 × buckets`.
pub fn decimate<T: Copy>(times: &[T], values: &[f64], buckets: usize) -> Vec<(T, f64)> {
    let n = times.len().min(values.len());
    let buckets = buckets.max(1);
    if n <= 4 * buckets {
        return (0..n).map(|i| (times[i], values[i])).collect();
    }
    let mut out = Vec::with_capacity(4 * buckets);
    for b in 0..buckets {
        let (lo, hi) = (b * n / buckets, (b + 1) * n / buckets);
        if lo >= hi {
            continue;
        }
        let (mut min, mut max) = (lo, lo);
        for i in lo..hi {
            if values[i] < values[min] {
                min = i;
            }
            if values[i] > values[max] {
                max = i;
            }
        }
        let mut keep = [lo, min, max, hi - 1];
        keep.sort_unstable();
        let mut last = None;
        for i in keep {
            if last != Some(i) {
                out.push((times[i], values[i]));
                last = Some(i);
            }
        }
    }
    out
}

/// A `(low, high)` range around `values` with a margin, never empty.
fn padded_range(values: impl Iterator<Item = f64>, include: f64) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((include, include), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let span = hi - lo;
    let pad = if span > 0.0 {
        span * 0.05
    } else {
        lo.abs().max(1.0) * 0.01
    };
    (lo - pad, hi + pad)
}

/// Formats a time axis label: the date when the chart spans more than three days,
/// otherwise month, day and time.
fn time_label(ms: i64, span_ms: i64) -> String {
    let iso = tradeterm_core::time::to_iso(ms);
    if span_ms > 3 * tradeterm_core::time::DAY_MS {
        iso.get(..10).unwrap_or(&iso).to_owned()
    } else {
        iso.get(5..16).map(|s| s.replace('T', " ")).unwrap_or(iso)
    }
}

fn equity_label(v: f64, span: f64) -> String {
    fixed(v, if span >= 100.0 { 0 } else { 2 })
}

/// `v` with `decimals` decimals, without a minus sign on a value that rounds to zero.
fn fixed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    match s.strip_prefix('-') {
        Some(abs) if abs.chars().all(|c| c == '0' || c == '.') => abs.to_owned(),
        _ => s,
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ChartData<'_>) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing the chart: {e}");
    let (width, height) = root.dim_in_pixel();
    root.fill(&WHITE).map_err(err)?;
    let title_size = (f64::from(height) / 30.0).clamp(14.0, 28.0);
    let label_size = (f64::from(height) / 55.0).clamp(10.0, 18.0);
    let body = root
        .margin(8, 0, 0, 0)
        .titled(data.title, ("sans-serif", title_size).into_font())
        .map_err(err)?;
    let (upper, lower) = body.split_vertically((68).percent());

    // x is milliseconds since the first bar as f64: plotters' i64 axis overflows
    // while placing ticks on unix-millisecond ranges.
    let first = data.times[0];
    let span = data.times.last().map_or(0, |t| t - first);
    let x_range = 0.0..(span.max(1) as f64);
    let rel: Vec<f64> = data.times.iter().map(|t| (t - first) as f64).collect();
    let y_area = (f64::from(width) * 0.09).clamp(60.0, 110.0) as u32;
    let x_labels = (width / 160).clamp(3, 12) as usize;
    let buckets = (width.saturating_sub(y_area)).max(1) as usize;
    let font = ("sans-serif", label_size).into_font();
    let blue = RGBColor(31, 119, 180);
    let red = RGBColor(214, 39, 40);

    let (e_lo, e_hi) = padded_range(data.equity.iter().copied(), data.initial);
    let mut top = ChartBuilder::on(&upper)
        .margin(10)
        .margin_bottom(12)
        .x_label_area_size(0)
        .y_label_area_size(y_area)
        .build_cartesian_2d(x_range.clone(), e_lo..e_hi)
        .map_err(err)?;
    top.configure_mesh()
        .x_labels(x_labels)
        .y_labels(8)
        .y_desc("Equity")
        .y_label_formatter(&|v| equity_label(*v, e_hi - e_lo))
        .label_style(font.clone())
        .axis_desc_style(font.clone())
        .max_light_lines(0)
        .bold_line_style(BLACK.mix(0.08))
        .draw()
        .map_err(err)?;
    top.draw_series(LineSeries::new(
        [(0.0, data.initial), (x_range.end, data.initial)],
        BLACK.mix(0.35).stroke_width(1),
    ))
    .map_err(err)?;
    top.draw_series(LineSeries::new(
        decimate(&rel, data.equity, buckets),
        blue.stroke_width(1),
    ))
    .map_err(err)?;

    let dd = drawdown_pct(data.equity, data.initial);
    let (d_lo, _) = padded_range(dd.iter().copied(), 0.0);
    let d_lo = d_lo.min(-0.05);
    let dd_decimals = if d_lo > -2.0 { 2 } else { 1 };
    let mut bottom = ChartBuilder::on(&lower)
        .margin(10)
        .margin_top(12)
        .x_label_area_size((label_size * 3.2) as u32)
        .y_label_area_size(y_area)
        .build_cartesian_2d(x_range, d_lo..0.0)
        .map_err(err)?;
    bottom
        .configure_mesh()
        .x_labels(x_labels)
        .y_labels(5)
        .x_desc("Time (UTC)")
        .y_desc("Drawdown %")
        .x_label_formatter(&|x| time_label(first + x.round() as i64, span))
        .y_label_formatter(&|v| fixed(*v, dd_decimals))
        .label_style(font.clone())
        .axis_desc_style(font)
        .max_light_lines(0)
        .bold_line_style(BLACK.mix(0.08))
        .draw()
        .map_err(err)?;
    bottom
        .draw_series(
            AreaSeries::new(decimate(&rel, &dd, buckets), 0.0, red.mix(0.25)).border_style(red.stroke_width(1)),
        )
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_comes_from_the_extension() {
        assert_eq!(ChartFormat::from_path(Path::new("a/b.SVG")).unwrap(), ChartFormat::Svg);
        assert_eq!(ChartFormat::from_path(Path::new("b.png")).unwrap(), ChartFormat::Png);
        let e = ChartFormat::from_path(Path::new("b.jpg")).unwrap_err().to_string();
        assert!(e.contains(".jpg") && e.contains(".svg or .png"), "{e}");
        assert!(ChartFormat::from_path(Path::new("chart")).is_err());
    }

    #[test]
    fn size_is_width_x_height_within_limits() {
        assert_eq!(
            parse_size("800x600").unwrap(),
            ChartSize {
                width: 800,
                height: 600
            }
        );
        for bad in ["800", "x600", "800x", "0x0", "100x100", "20000x600", "8a0x600"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn drawdown_is_measured_from_the_running_peak() {
        let dd = drawdown_pct(&[100.0, 110.0, 99.0, 121.0], 100.0);
        let want = [0.0, 0.0, -10.0, 0.0];
        for (a, b) in dd.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{dd:?}");
        }
        assert!(
            (drawdown_pct(&[90.0], 100.0)[0] + 10.0).abs() < 1e-12,
            "the start is a peak"
        );
    }

    #[test]
    fn decimation_keeps_ends_and_extremes_of_each_bucket() {
        let n = 10_000;
        let times: Vec<i64> = (0..n).collect();
        let values: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64).collect();
        let small = decimate(&times[..40], &values[..40], 10);
        assert_eq!(small.len(), 40, "short series are kept whole");
        let d = decimate(&times, &values, 100);
        assert!(d.len() <= 400 && d.len() >= 200, "{}", d.len());
        assert_eq!(d.first(), Some(&(0, values[0])));
        assert_eq!(d.last(), Some(&(n - 1, values[n as usize - 1])));
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "in time order");
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        assert!(d.iter().any(|p| p.1 == max) && d.iter().any(|p| p.1 == min));
    }

    #[test]
    fn numbers_that_round_to_zero_have_no_sign() {
        assert_eq!(fixed(-0.004, 2), "0.00");
        assert_eq!(fixed(-0.0, 1), "0.0");
        assert_eq!(fixed(-0.06, 1), "-0.1");
        assert_eq!(equity_label(10_250.4, 500.0), "10250");
    }

    #[test]
    fn time_labels_follow_the_span() {
        let t = tradeterm_core::time::parse_iso("2024-03-05T14:30:00Z").unwrap();
        assert_eq!(time_label(t, 30 * tradeterm_core::time::DAY_MS), "2024-03-05");
        assert_eq!(time_label(t, tradeterm_core::time::DAY_MS), "03-05 14:30");
    }
}
