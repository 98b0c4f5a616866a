//! Equity over drawdown: an equity (or balance) panel over a drawdown panel.
//!
//! The chart of `tradeterm backtest --chart` ([`svg`], [`png`]), of
//! `backtest_strategy` (the equity curve of the output) and of
//! `get_equity_curve` (the balance after each deal, drawn as steps, with the
//! drawdown measured with deposits and withdrawals taken out, as the tool
//! measures it). Long series are reduced to the first, lowest, highest and
//! last value of each horizontal pixel (M4 decimation, [`decimate`]), which
//! draws the same picture as every point.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;

use crate::json::{self, num, text};
use crate::style::{self, BLUE, RED, fixed, padded_range, signed_pct, time_label};
use crate::{Area, ChartError, OrDraw, Png, Size};

/// What the chart shows.
#[derive(Debug)]
pub struct EquityChart<'a> {
    /// Title line (symbol or file name, strategy, return).
    pub title: &'a str,
    /// Times of the points, unix milliseconds, ascending.
    pub times: &'a [i64],
    /// Equity at each time (as long as `times`).
    pub equity: &'a [f64],
    /// Starting equity (drawn as a reference line, and the first drawdown peak).
    pub initial: f64,
}

/// The chart as an SVG document of `size` (labels stay `<text>` elements).
///
/// # Errors
/// [`ChartError::NoData`] when `times` is empty or not as long as `equity`.
pub fn svg(size: Size, data: &EquityChart<'_>) -> Result<String, ChartError> {
    let panels = Panels::of(data)?;
    crate::register_font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (size.width, size.height)).into_drawing_area();
        draw(&root, &panels)?;
        root.present().or_draw()?;
    }
    Ok(svg)
}

/// The chart as a PNG image of `size`.
///
/// # Errors
/// As [`svg`].
pub fn png(size: Size, data: &EquityChart<'_>) -> Result<Png, ChartError> {
    let panels = Panels::of(data)?;
    crate::bitmap(size, |root| draw(root, &panels))
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

/// Drawdown in percent (≤ 0) of a balance with cash flows: `flows[i]` is the
/// deposit (> 0) or withdrawal (< 0) booked at point `i`. A deposit is
/// neither a rise nor a fall: the drawdown at `t` is the fall from the
/// running peak of the balance less the flows so far, relative to that peak
/// plus the flows since it (the peak the tool's `max_drawdown` reports).
pub fn drawdown_pct_with_flows(balance: &[f64], flows: &[f64]) -> Vec<f64> {
    let mut cumulative = 0.0;
    let mut peak: Option<f64> = None;
    balance
        .iter()
        .zip(flows.iter().chain(std::iter::repeat(&0.0)))
        .map(|(&b, &f)| {
            cumulative += f;
            let adjusted = b - cumulative;
            let p = peak.map_or(adjusted, |p: f64| p.max(adjusted));
            peak = Some(p);
            let base = p + cumulative;
            if base > 0.0 {
                ((adjusted - p) / base * 100.0).min(0.0)
            } else {
                0.0
            }
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

/// Everything one equity chart draws.
struct Panels {
    title: String,
    times: Vec<i64>,
    equity: Vec<f64>,
    /// Reference line of the upper panel (the starting equity).
    initial: f64,
    drawdown: Vec<f64>,
    /// Name of the upper panel's axis.
    equity_axis: String,
}

impl Panels {
    fn of(data: &EquityChart<'_>) -> Result<Self, ChartError> {
        if data.times.is_empty() || data.times.len() != data.equity.len() {
            return Err(ChartError::NoData(format!(
                "{} times, {} equity values",
                data.times.len(),
                data.equity.len()
            )));
        }
        Ok(Self {
            title: data.title.to_owned(),
            times: data.times.to_vec(),
            equity: data.equity.to_vec(),
            initial: data.initial,
            drawdown: drawdown_pct(data.equity, data.initial),
            equity_axis: "Equity".into(),
        })
    }
}

fn equity_label(v: f64, span: f64) -> String {
    fixed(v, if span >= 100.0 { 0 } else { 2 })
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &Panels) -> Result<(), ChartError> {
    let (width, height) = root.dim_in_pixel();
    root.fill(&WHITE).or_draw()?;
    let title_size = style::title_size(height);
    let label_size = style::label_size(height);
    let body = root
        .margin(8, 0, 0, 0)
        .titled(&data.title, ("sans-serif", title_size).into_font())
        .or_draw()?;
    let (upper, lower) = body.split_vertically((68).percent());

    // x is milliseconds since the first point as f64: plotters' i64 axis
    // overflows while placing ticks on unix-millisecond ranges.
    let first = data.times[0];
    let span = data.times.last().map_or(0, |t| t - first);
    let x_range = 0.0..(span.max(1) as f64);
    let rel: Vec<f64> = data.times.iter().map(|t| (t - first) as f64).collect();
    let y_area = (f64::from(width) * 0.09).clamp(60.0, 110.0) as u32;
    let x_labels = (width / 160).clamp(3, 12) as usize;
    let buckets = (width.saturating_sub(y_area)).max(1) as usize;
    let font = ("sans-serif", label_size).into_font();

    let (e_lo, e_hi) = padded_range(data.equity.iter().copied(), Some(data.initial));
    let mut top = ChartBuilder::on(&upper)
        .margin(10)
        .margin_bottom(12)
        .x_label_area_size(0)
        .y_label_area_size(y_area)
        .build_cartesian_2d(x_range.clone(), e_lo..e_hi)
        .or_draw()?;
    top.configure_mesh()
        .x_labels(x_labels)
        .y_labels(8)
        .y_desc(data.equity_axis.as_str())
        .y_label_formatter(&|v| equity_label(*v, e_hi - e_lo))
        .label_style(font.clone())
        .axis_desc_style(font.clone())
        .max_light_lines(0)
        .bold_line_style(BLACK.mix(0.08))
        .draw()
        .or_draw()?;
    top.draw_series(LineSeries::new(
        [(0.0, data.initial), (x_range.end, data.initial)],
        BLACK.mix(0.35).stroke_width(1),
    ))
    .or_draw()?;
    top.draw_series(LineSeries::new(
        decimate(&rel, &data.equity, buckets),
        BLUE.stroke_width(if height >= 600 { 2 } else { 1 }),
    ))
    .or_draw()?;

    let (d_lo, _) = padded_range(data.drawdown.iter().copied(), Some(0.0));
    let d_lo = d_lo.min(-0.05);
    let dd_decimals = if d_lo > -2.0 { 2 } else { 1 };
    let mut bottom = ChartBuilder::on(&lower)
        .margin(10)
        .margin_top(12)
        .x_label_area_size((label_size * 3.2) as u32)
        .y_label_area_size(y_area)
        .build_cartesian_2d(x_range, d_lo..0.0)
        .or_draw()?;
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
        .or_draw()?;
    bottom
        .draw_series(
            AreaSeries::new(decimate(&rel, &data.drawdown, buckets), 0.0, RED.mix(0.25))
                .border_style(RED.stroke_width(1)),
        )
        .or_draw()?;
    Ok(())
}

/// `backtest_strategy`: the output's equity curve over its drawdown.
pub(crate) fn draw_backtest_output(root: &Area<'_>, output: &Value, _: Option<&Value>) -> Result<(), ChartError> {
    let points = json::array(output, "equity_curve", "backtest_strategy output")?;
    let metrics = output.get("metrics").unwrap_or(&Value::Null);
    let (times, equity): (Vec<i64>, Vec<f64>) = points
        .iter()
        .filter_map(|p| Some((json::time(p.get("time")?)?, num(p.get("equity")?)?)))
        .unzip();
    let initial = metrics
        .get("initial_equity")
        .and_then(num)
        .or_else(|| equity.first().copied())
        .unwrap_or(0.0);
    let trades = metrics.get("trades").and_then(Value::as_u64).unwrap_or(0);
    let title = format!(
        "{} {} \u{2014} backtest: return {}, max drawdown {} %, {trades} trade{}",
        text(output, "symbol"),
        text(output, "timeframe"),
        signed_pct(metrics.get("return_pct").and_then(num).unwrap_or(0.0)),
        fixed(metrics.get("max_drawdown_pct").and_then(num).unwrap_or(0.0), 2),
        if trades == 1 { "" } else { "s" },
    );
    if times.is_empty() {
        return crate::message(root, &title, "No equity points to draw");
    }
    let mut panels = Panels::of(&EquityChart {
        title: &title,
        times: &times,
        equity: &equity,
        initial,
    })?;
    panels.equity_axis = "Equity".into();
    draw(root, &panels)
}

/// `get_equity_curve`: the balance after each deal as steps (and the
/// current equity last), over the drawdown with cash flows taken out.
pub(crate) fn draw_equity_curve_output(root: &Area<'_>, output: &Value, _: Option<&Value>) -> Result<(), ChartError> {
    let points = json::array(output, "points", "get_equity_curve output")?;
    let currency = text(output, "currency");
    let dd = output.get("max_drawdown").unwrap_or(&Value::Null);
    let dd_text = match dd.get("percent").and_then(num) {
        Some(p) => format!("{} %", fixed(p, 2)),
        None => format!("{} {currency}", fixed(dd.get("amount").and_then(num).unwrap_or(0.0), 2)),
    };
    let title = format!(
        "Balance ({currency}) \u{2014} net profit {} {currency}, max drawdown {dd_text}, {} trade{}",
        fixed(output.get("net_profit").and_then(num).unwrap_or(0.0), 2),
        output.get("trades").and_then(Value::as_u64).unwrap_or(0),
        if output.get("trades").and_then(Value::as_u64) == Some(1) {
            ""
        } else {
            "s"
        },
    );
    let parsed: Vec<(i64, f64, f64)> = points
        .iter()
        .filter_map(|p| {
            let flow = match text(p, "kind") {
                "deposit" | "withdrawal" => p.get("change").and_then(num).unwrap_or(0.0),
                _ => 0.0,
            };
            Some((json::time(p.get("time")?)?, num(p.get("value")?)?, flow))
        })
        .collect();
    if parsed.is_empty() {
        return crate::message(root, &title, "No balance points to draw");
    }
    // Steps: the balance holds until the next deal changes it.
    let (mut times, mut values, mut flows) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &(t, v, f)) in parsed.iter().enumerate() {
        if i > 0 {
            times.push(t);
            values.push(parsed[i - 1].1);
            flows.push(0.0);
        }
        times.push(t);
        values.push(v);
        flows.push(f);
    }
    let start = output.get("starting_balance").and_then(num).unwrap_or(parsed[0].1);
    let drawdown = drawdown_pct_with_flows(&values, &flows);
    let panels = Panels {
        title,
        times,
        equity: values,
        initial: start,
        drawdown,
        equity_axis: format!("Balance ({currency})"),
    };
    draw(root, &panels)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn deposits_and_withdrawals_are_neither_peaks_nor_falls() {
        // 1000, lose 100, deposit 500 (1400), lose 140 (1260), withdraw 260 (1000).
        let balance = [1000.0, 900.0, 1400.0, 1260.0, 1000.0];
        let flows = [0.0, 0.0, 500.0, 0.0, -260.0];
        let dd = drawdown_pct_with_flows(&balance, &flows);
        // Peak 1000 (adjusted); at 1400 the adjusted balance is 900: -100 on a peak of 1500.
        let want = [
            0.0,
            -10.0,
            -100.0 / 1500.0 * 100.0,
            -240.0 / 1500.0 * 100.0,
            -240.0 / 1240.0 * 100.0,
        ];
        for (a, b) in dd.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{dd:?} vs {want:?}");
        }
        assert_eq!(drawdown_pct_with_flows(&[0.0, 0.0], &[0.0, 0.0]), [0.0, 0.0]);
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
    fn equity_labels_drop_decimals_on_wide_ranges() {
        assert_eq!(equity_label(10_250.4, 500.0), "10250");
        assert_eq!(equity_label(10_250.4, 50.0), "10250.40");
    }

    #[test]
    fn an_empty_or_ragged_curve_is_refused() {
        let chart = |times: &'static [i64], equity: &'static [f64]| EquityChart {
            title: "t",
            times,
            equity,
            initial: 1.0,
        };
        let size = Size {
            width: 400,
            height: 300,
        };
        assert!(matches!(svg(size, &chart(&[], &[])), Err(ChartError::NoData(_))));
        assert!(matches!(png(size, &chart(&[1, 2], &[1.0])), Err(ChartError::NoData(_))));
    }
}
