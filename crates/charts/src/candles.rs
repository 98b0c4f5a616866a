//! Candlestick charts: the picture of `get_bars`, and the price panel the
//! structure chart draws its zones on.
//!
//! The x axis is the bar's position (so weekends and closed sessions leave
//! no gaps), labelled with the bar's open time; prices are on the right, as
//! trading terminals show them. More bars than [`MAX_CANDLES`] are merged
//! into candles of several bars each (first open, highest high, lowest low,
//! last close), so that every candle stays wide enough to see, and the
//! subtitle says so.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde_json::Value;
use tradeterm_core::time::DAY_MS;

use crate::json::{self, Candle, text};
use crate::style::{self, GREEN, GREY, RED, bar_label, decimals_for, fixed, padded_range, span_text};
use crate::{Area, ChartError, OrDraw};

/// Most candles one chart draws.
pub(crate) const MAX_CANDLES: usize = 200;

/// The price panel of a candle chart.
pub(crate) type PriceChart<'a, 'b> = ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The parts of a chart picture below its title and subtitle.
pub(crate) struct Layout<'b> {
    /// Where the price panel goes.
    pub plot: Area<'b>,
    /// A strip at the bottom for a legend, when asked for.
    pub legend: Option<Area<'b>>,
    /// Size of axis labels, pixels (from the whole picture's height).
    pub label: f64,
}

/// Fills `root` white, writes the title and the subtitle, and returns the
/// plot area (and a legend strip at the bottom when `legend`).
pub(crate) fn layout<'b>(root: &Area<'b>, title: &str, subtitle: &str, legend: bool) -> Result<Layout<'b>, ChartError> {
    let (width, height) = root.dim_in_pixel();
    root.fill(&WHITE).or_draw()?;
    let label = style::label_size(height);
    let body = root
        .margin(8, 0, 0, 0)
        .titled(title, ("sans-serif", style::title_size(height)).into_font())
        .or_draw()?;
    let sub_height = (label * 1.8) as u32;
    let (sub, rest) = body.split_vertically(sub_height);
    sub.draw(&Text::new(
        subtitle.to_owned(),
        (width as i32 / 2, 0),
        style::text(label, GREY, HPos::Center, VPos::Top),
    ))
    .or_draw()?;
    if !legend {
        return Ok(Layout {
            plot: rest,
            legend: None,
            label,
        });
    }
    let rest_height = rest.dim_in_pixel().1;
    let legend_height = (label * 2.6) as u32;
    let (plot, strip) = rest.split_vertically(rest_height.saturating_sub(legend_height));
    Ok(Layout {
        plot,
        legend: Some(strip),
        label,
    })
}

/// Whether bars `step_ms` apart are intraday bars.
pub(crate) fn intraday(timeframe: &str, candles: &[Candle]) -> bool {
    match timeframe {
        "D1" | "W1" | "MN1" => false,
        t if t.starts_with('M') || t.starts_with('H') => true,
        _ => candles
            .windows(2)
            .map(|w| w[1].time - w[0].time)
            .min()
            .is_some_and(|s| s < DAY_MS),
    }
}

/// The price panel over `candles` (axes, grid and time labels; no candles yet).
pub(crate) fn price_chart<'a, 'b>(
    plot: &'a Area<'b>,
    label: f64,
    candles: &[Candle],
    intraday: bool,
) -> Result<PriceChart<'a, 'b>, ChartError> {
    let (width, _) = plot.dim_in_pixel();
    let (lo, hi) = padded_range(candles.iter().flat_map(|c| [c.low, c.high]), None);
    let decimals = decimals_for(hi - lo);
    let n = candles.len().max(1) as f64;
    let y_area = (f64::from(width) * 0.085).clamp(60.0, 110.0) as u32;
    let mut chart = ChartBuilder::on(plot)
        .margin(10)
        .margin_left((label * 3.5) as u32)
        .x_label_area_size((label * 3.2) as u32)
        .right_y_label_area_size(y_area)
        .build_cartesian_2d(-0.75..n - 0.25, lo..hi)
        .or_draw()?;
    let first = candles.first().map_or(0, |c| c.time);
    let span = candles.last().map_or(0, |c| c.time) - first;
    let font = ("sans-serif", label).into_font();
    let x_label = |x: &f64| {
        let i = x.round();
        if (i - x).abs() > 0.01 || i < 0.0 {
            return String::new();
        }
        candles
            .get(i as usize)
            .map(|c| bar_label(c.time, span, intraday))
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .x_labels((width / 150).clamp(3, 10) as usize)
        .y_labels(8)
        .x_desc("Time (UTC)")
        .x_label_formatter(&x_label)
        .y_label_formatter(&|v| fixed(*v, decimals))
        .label_style(font.clone())
        .axis_desc_style(font)
        .max_light_lines(0)
        .bold_line_style(BLACK.mix(0.08))
        .draw()
        .or_draw()?;
    Ok(chart)
}

/// Draws the candles: a wick from low to high, a body from open to close
/// (green when the close is not below the open, red otherwise).
pub(crate) fn draw_candles(chart: &mut PriceChart<'_, '_>, candles: &[Candle]) -> Result<(), ChartError> {
    let half = 0.35;
    chart
        .draw_series(candles.iter().enumerate().map(|(i, c)| {
            let x = i as f64;
            let color = if c.close >= c.open { GREEN } else { RED };
            PathElement::new(vec![(x, c.low), (x, c.high)], color.stroke_width(1))
        }))
        .or_draw()?;
    chart
        .draw_series(candles.iter().enumerate().map(|(i, c)| {
            let x = i as f64;
            let color = if c.close >= c.open { GREEN } else { RED };
            Rectangle::new([(x - half, c.open), (x + half, c.close)], color.filled())
        }))
        .or_draw()?;
    Ok(())
}

/// Merges consecutive candles `per` at a time (first open, highest high,
/// lowest low, last close; the first bar's time).
pub(crate) fn merge(candles: &[Candle], per: usize) -> Vec<Candle> {
    candles
        .chunks(per.max(1))
        .filter_map(|group| {
            let (first, last) = (group.first()?, group.last()?);
            Some(Candle {
                time: first.time,
                open: first.open,
                high: group.iter().map(|c| c.high).fold(f64::MIN, f64::max),
                low: group.iter().map(|c| c.low).fold(f64::MAX, f64::min),
                close: last.close,
            })
        })
        .collect()
}

/// `get_bars`: the bars as candles.
pub(crate) fn draw_bars_output(root: &Area<'_>, output: &Value, _: Option<&Value>) -> Result<(), ChartError> {
    let bars = json::candles(output)?;
    let (symbol, timeframe) = (text(output, "symbol"), text(output, "timeframe"));
    let (Some(first), Some(last)) = (bars.first(), bars.last()) else {
        return crate::message(root, &format!("{symbol} {timeframe}"), "No bars to draw");
    };
    let per = bars.len().div_ceil(MAX_CANDLES);
    let candles = if per > 1 { merge(&bars, per) } else { bars.clone() };
    let high = bars.iter().map(|c| c.high).fold(f64::MIN, f64::max);
    let low = bars.iter().map(|c| c.low).fold(f64::MAX, f64::min);
    let decimals = decimals_for(high - low);
    let title = format!(
        "{symbol} {timeframe} \u{2014} {} bar{}",
        bars.len(),
        if bars.len() == 1 { "" } else { "s" }
    );
    let mut subtitle = format!(
        "{} \u{b7} last close {} \u{b7} high {} \u{b7} low {}",
        span_text(first.time, last.time),
        fixed(last.close, decimals + 1),
        fixed(high, decimals + 1),
        fixed(low, decimals + 1),
    );
    if per > 1 {
        subtitle.push_str(&format!(" \u{b7} each candle = {per} bars"));
    }
    let layout = layout(root, &title, &subtitle, false)?;
    let mut chart = price_chart(&layout.plot, layout.label, &candles, intraday(timeframe, &bars))?;
    draw_candles(&mut chart, &candles)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(time: i64, open: f64, high: f64, low: f64, close: f64) -> Candle {
        Candle {
            time,
            open,
            high,
            low,
            close,
        }
    }

    #[test]
    fn merged_candles_keep_the_range_of_their_bars() {
        let bars = [
            c(0, 1.0, 2.0, 0.5, 1.5),
            c(1, 1.5, 3.0, 1.0, 2.5),
            c(2, 2.5, 2.6, 0.2, 0.4),
            c(3, 0.4, 0.9, 0.3, 0.8),
            c(4, 0.8, 1.0, 0.7, 0.9),
        ];
        let m = merge(&bars, 2);
        assert_eq!(
            m,
            [
                c(0, 1.0, 3.0, 0.5, 2.5),
                c(2, 2.5, 2.6, 0.2, 0.8),
                c(4, 0.8, 1.0, 0.7, 0.9)
            ]
        );
        assert_eq!(merge(&bars, 1), bars);
    }

    #[test]
    fn intraday_follows_the_timeframe_or_the_bar_step() {
        assert!(intraday("H1", &[]));
        assert!(intraday("M15", &[]));
        assert!(!intraday("D1", &[]));
        assert!(!intraday("MN1", &[]));
        let hourly = [c(0, 1.0, 1.0, 1.0, 1.0), c(3_600_000, 1.0, 1.0, 1.0, 1.0)];
        assert!(intraday("", &hourly));
        let daily = [c(0, 1.0, 1.0, 1.0, 1.0), c(DAY_MS, 1.0, 1.0, 1.0, 1.0)];
        assert!(!intraday("", &daily));
    }
}
