//! What every chart shares: colours, text sizes, number and time labels.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use tradeterm_core::time::{DAY_MS, to_iso};

/// Rising candles, bullish zones and breaks.
pub(crate) const GREEN: RGBColor = RGBColor(22, 150, 82);
/// Falling candles, bearish zones and breaks.
pub(crate) const RED: RGBColor = RGBColor(214, 39, 40);
/// Equity lines, bullish order blocks.
pub(crate) const BLUE: RGBColor = RGBColor(31, 119, 180);
/// Bearish order blocks.
pub(crate) const ORANGE: RGBColor = RGBColor(240, 140, 20);
/// Liquidity pools and sweeps.
pub(crate) const PURPLE: RGBColor = RGBColor(128, 60, 170);
/// Secondary text.
pub(crate) const GREY: RGBColor = RGBColor(90, 90, 90);

/// Title text size for a picture `height` pixels high.
pub(crate) fn title_size(height: u32) -> f64 {
    (f64::from(height) / 30.0).clamp(14.0, 28.0)
}

/// Axis label text size for a picture `height` pixels high.
pub(crate) fn label_size(height: u32) -> f64 {
    (f64::from(height) / 55.0).clamp(11.0, 18.0)
}

/// A text style of `size` pixels in `color`, anchored at `h`/`v`.
pub(crate) fn text(size: f64, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&color).pos(Pos::new(h, v))
}

/// `v` with `decimals` decimals, without a minus sign on a value that rounds to zero.
pub(crate) fn fixed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    match s.strip_prefix('-') {
        Some(abs) if abs.chars().all(|c| c == '0' || c == '.') => abs.to_owned(),
        _ => s,
    }
}

/// Decimals that tell ticks about a tenth of `span` apart (0 to 6).
pub(crate) fn decimals_for(span: f64) -> usize {
    if !(span.is_finite() && span > 0.0) {
        return 2;
    }
    let d = (-(span / 8.0).log10()).ceil() + 1.0;
    d.clamp(0.0, 6.0) as usize
}

/// A signed percentage with two decimals (`+4.20 %`, `-1.05 %`).
pub(crate) fn signed_pct(v: f64) -> String {
    let s = fixed(v, 2);
    if s.starts_with('-') || s.chars().all(|c| c == '0' || c == '.') {
        format!("{s} %")
    } else {
        format!("+{s} %")
    }
}

/// A `(low, high)` range around `values` (and `include`) with a 5 % margin, never empty.
pub(crate) fn padded_range(values: impl Iterator<Item = f64>, include: Option<f64>) -> (f64, f64) {
    let mut lo = include.unwrap_or(f64::INFINITY);
    let mut hi = include.unwrap_or(f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    let span = hi - lo;
    let pad = if span > 0.0 {
        span * 0.05
    } else {
        lo.abs().max(1.0) * 0.01
    };
    (lo - pad, hi + pad)
}

/// A time axis label: the date when the chart spans more than three days,
/// otherwise month, day and time.
pub(crate) fn time_label(ms: i64, span_ms: i64) -> String {
    let iso = to_iso(ms);
    if span_ms > 3 * DAY_MS {
        iso.get(..10).unwrap_or(&iso).to_owned()
    } else {
        iso.get(5..16).map(|s| s.replace('T', " ")).unwrap_or(iso)
    }
}

/// A bar time label: month, day and time for intraday bars over at most 20
/// days, otherwise the date.
pub(crate) fn bar_label(ms: i64, span_ms: i64, intraday: bool) -> String {
    let iso = to_iso(ms);
    if intraday && span_ms <= 20 * DAY_MS {
        iso.get(5..16).map(|s| s.replace('T', " ")).unwrap_or(iso)
    } else {
        iso.get(..10).unwrap_or(&iso).to_owned()
    }
}

/// A range of two instants as `2024-01-02 03:04 – 2024-02-01 00:00` (UTC).
pub(crate) fn span_text(from: i64, to: i64) -> String {
    let short = |ms: i64| {
        let iso = to_iso(ms);
        iso.get(..16).map(|s| s.replace('T', " ")).unwrap_or(iso)
    };
    format!("{} \u{2013} {} UTC", short(from), short(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_round_to_zero_have_no_sign() {
        assert_eq!(fixed(-0.004, 2), "0.00");
        assert_eq!(fixed(-0.0, 1), "0.0");
        assert_eq!(fixed(-0.06, 1), "-0.1");
        assert_eq!(signed_pct(4.2), "+4.20 %");
        assert_eq!(signed_pct(-1.049), "-1.05 %");
        assert_eq!(signed_pct(-0.001), "0.00 %");
    }

    #[test]
    fn price_decimals_follow_the_span() {
        assert_eq!(decimals_for(0.01), 4, "EURUSD over a day");
        assert_eq!(decimals_for(50.0), 1, "gold");
        assert_eq!(decimals_for(5000.0), 0);
        assert_eq!(decimals_for(0.0), 2);
        assert_eq!(decimals_for(f64::NAN), 2);
    }

    #[test]
    fn ranges_are_padded_and_never_empty() {
        assert_eq!(padded_range([1.0, 3.0].into_iter(), None), (0.9, 3.1));
        let (lo, hi) = padded_range([5.0].into_iter(), None);
        assert!(lo < 5.0 && hi > 5.0);
        assert_eq!(padded_range(std::iter::empty(), None), (0.0, 1.0));
        let (lo, _) = padded_range([1.0, 2.0].into_iter(), Some(0.0));
        assert!(lo < 0.0);
    }

    #[test]
    fn time_labels_follow_the_span() {
        let t = tradeterm_core::time::parse_iso("2024-03-05T14:30:00Z").unwrap();
        assert_eq!(time_label(t, 30 * DAY_MS), "2024-03-05");
        assert_eq!(time_label(t, DAY_MS), "03-05 14:30");
        assert_eq!(bar_label(t, 10 * DAY_MS, true), "03-05 14:30");
        assert_eq!(bar_label(t, 10 * DAY_MS, false), "2024-03-05");
        assert_eq!(bar_label(t, 40 * DAY_MS, true), "2024-03-05");
        assert_eq!(
            span_text(t, t + DAY_MS),
            "2024-03-05 14:30 \u{2013} 2024-03-06 14:30 UTC"
        );
    }
}
