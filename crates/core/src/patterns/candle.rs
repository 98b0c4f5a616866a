//! TA-Lib's candle vocabulary: the candle settings ("long body", "very short
//! shadow", "near", ...), the ranges they average, and the running windows
//! ("period totals") the `CDL*` functions keep.

use serde::{Deserialize, Serialize};

use crate::market::Bar;

/// What a candle setting measures on one bar (TA-Lib `TA_RangeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeType {
    /// `|close - open|`.
    RealBody,
    /// `high - low`.
    HighLow,
    /// Upper plus lower shadow; the average is halved, so it reads as the
    /// average length of *one* shadow.
    Shadows,
}

/// The candle settings of TA-Lib (`TA_CandleSettingType`) with the defaults
/// of TA-Lib's `ta_global.c`.
///
/// A setting compares a bar's measure with
/// `factor · (sum of range over the `period` bars before it) / period`
/// (halved for [`RangeType::Shadows`]); a period of 0 means "the bar's own
/// range" instead of an average over earlier bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandleSetting {
    /// Long real body: real body, 10 bars, factor 1.0.
    BodyLong,
    /// Very long real body: real body, 10 bars, factor 3.0.
    BodyVeryLong,
    /// Short real body: real body, 10 bars, factor 1.0.
    BodyShort,
    /// Doji body: high-low range, 10 bars, factor 0.1.
    BodyDoji,
    /// Long shadow: real body of the bar itself (period 0), factor 1.0.
    ShadowLong,
    /// Very long shadow: real body of the bar itself (period 0), factor 2.0.
    ShadowVeryLong,
    /// Short shadow: shadows, 10 bars, factor 1.0.
    ShadowShort,
    /// Very short shadow: high-low range, 10 bars, factor 0.1.
    ShadowVeryShort,
    /// "Near": high-low range, 5 bars, factor 0.2.
    Near,
    /// "Far": high-low range, 5 bars, factor 0.6.
    Far,
    /// "Equal": high-low range, 5 bars, factor 0.05.
    Equal,
}

impl CandleSetting {
    /// The measure this setting averages.
    pub const fn range_type(self) -> RangeType {
        match self {
            Self::BodyLong | Self::BodyVeryLong | Self::BodyShort | Self::ShadowLong | Self::ShadowVeryLong => {
                RangeType::RealBody
            }
            Self::ShadowShort => RangeType::Shadows,
            Self::BodyDoji | Self::ShadowVeryShort | Self::Near | Self::Far | Self::Equal => RangeType::HighLow,
        }
    }

    /// Number of earlier bars averaged (0: the bar's own range).
    pub const fn period(self) -> usize {
        match self {
            Self::BodyLong
            | Self::BodyVeryLong
            | Self::BodyShort
            | Self::BodyDoji
            | Self::ShadowShort
            | Self::ShadowVeryShort => 10,
            Self::ShadowLong | Self::ShadowVeryLong => 0,
            Self::Near | Self::Far | Self::Equal => 5,
        }
    }

    /// Multiplier applied to the average.
    pub const fn factor(self) -> f64 {
        match self {
            Self::BodyLong | Self::BodyShort | Self::ShadowLong | Self::ShadowShort => 1.0,
            Self::BodyVeryLong => 3.0,
            Self::ShadowVeryLong => 2.0,
            Self::BodyDoji | Self::ShadowVeryShort => 0.1,
            Self::Near => 0.2,
            Self::Far => 0.6,
            Self::Equal => 0.05,
        }
    }

    /// The measure of one bar (TA-Lib `TA_CANDLERANGE`).
    pub fn range(self, bar: &Bar) -> f64 {
        match self.range_type() {
            RangeType::RealBody => body(bar),
            RangeType::HighLow => bar.high - bar.low,
            RangeType::Shadows => upper_shadow(bar) + lower_shadow(bar),
        }
    }
}

/// `|close - open|`.
pub(crate) fn body(b: &Bar) -> f64 {
    (b.close - b.open).abs()
}

/// TA-Lib's candle colour: white (`close >= open`, a flat bar counts as
/// white) or black.
pub(crate) fn white(b: &Bar) -> bool {
    b.close >= b.open
}

/// +1 for a white candle, -1 for a black one (TA-Lib `TA_CANDLECOLOR`).
pub(crate) fn color(b: &Bar) -> i32 {
    if white(b) { 1 } else { -1 }
}

/// High minus the top of the real body.
pub(crate) fn upper_shadow(b: &Bar) -> f64 {
    b.high - if white(b) { b.close } else { b.open }
}

/// Bottom of the real body minus the low.
pub(crate) fn lower_shadow(b: &Bar) -> f64 {
    (if white(b) { b.open } else { b.close }) - b.low
}

/// Top of the real body.
pub(crate) fn body_top(b: &Bar) -> f64 {
    b.open.max(b.close)
}

/// Bottom of the real body.
pub(crate) fn body_bottom(b: &Bar) -> f64 {
    b.open.min(b.close)
}

/// The real body of `later` lies entirely above the real body of `earlier`.
pub(crate) fn body_gap_up(later: &Bar, earlier: &Bar) -> bool {
    body_bottom(later) > body_top(earlier)
}

/// The real body of `later` lies entirely below the real body of `earlier`.
pub(crate) fn body_gap_down(later: &Bar, earlier: &Bar) -> bool {
    body_top(later) < body_bottom(earlier)
}

/// The whole range of `later` lies above the high of `earlier` (TA-Lib
/// `TA_CANDLEGAPUP`).
pub(crate) fn candle_gap_up(later: &Bar, earlier: &Bar) -> bool {
    later.low > earlier.high
}

/// The whole range of `later` lies below the low of `earlier` (TA-Lib
/// `TA_CANDLEGAPDOWN`).
pub(crate) fn candle_gap_down(later: &Bar, earlier: &Bar) -> bool {
    later.high < earlier.low
}

/// The running "period total" of one candle setting as a `CDL*` function
/// keeps it, for the bar `offset` places before the bar being evaluated.
///
/// TA-Lib sums the setting's range over the `period` bars before
/// `start - offset` once, then, after evaluating each bar `i`, adds the
/// range of bar `i - offset` and subtracts the range of the bar leaving the
/// window (`total += new - old`, in that order). The floating-point result
/// of that running sum depends on where it started, so every pattern keeps
/// its own windows, started at its own lookback, exactly as TA-Lib does.
#[derive(Debug)]
pub(crate) struct Window<'a> {
    bars: &'a [Bar],
    setting: CandleSetting,
    offset: usize,
    total: f64,
    /// Oldest bar inside the window.
    trailing: usize,
    /// The evaluated bar the total currently belongs to.
    current: usize,
}

impl<'a> Window<'a> {
    /// A window for evaluations starting at bar `start`. The caller
    /// guarantees `start >= offset + period` and `start < bars.len()`.
    pub(crate) fn new(bars: &'a [Bar], setting: CandleSetting, start: usize, offset: usize) -> Self {
        let end = start - offset;
        let trailing = end - setting.period();
        let mut total = 0.0;
        for bar in &bars[trailing..end] {
            total += setting.range(bar);
        }
        Self {
            bars,
            setting,
            offset,
            total,
            trailing,
            current: start,
        }
    }

    /// The setting's threshold for bar `i - offset` while bar `i` is being
    /// evaluated (TA-Lib `TA_CANDLEAVERAGE`). Calls must come with
    /// non-decreasing `i`; bars skipped in between are folded into the
    /// running total in order, so the sum is the one TA-Lib computes.
    pub(crate) fn avg(&mut self, i: usize) -> f64 {
        while self.current < i {
            let new = self.setting.range(&self.bars[self.current - self.offset]);
            let old = self.setting.range(&self.bars[self.trailing]);
            self.total += new - old;
            self.trailing += 1;
            self.current += 1;
        }
        let period = self.setting.period();
        let base = if period == 0 {
            self.setting.range(&self.bars[i - self.offset])
        } else {
            self.total / period as f64
        };
        let halve = if self.setting.range_type() == RangeType::Shadows {
            2.0
        } else {
            1.0
        };
        self.setting.factor() * base / halve
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(open: f64, high: f64, low: f64, close: f64) -> Bar {
        Bar {
            time: 0,
            open,
            high,
            low,
            close,
            volume: 0.0,
        }
    }

    #[test]
    fn ranges_follow_talib_definitions() {
        let b = bar(10.0, 14.0, 7.0, 12.0);
        assert_eq!(CandleSetting::BodyLong.range(&b), 2.0);
        assert_eq!(CandleSetting::BodyDoji.range(&b), 7.0);
        // upper 2 + lower 3
        assert_eq!(CandleSetting::ShadowShort.range(&b), 5.0);
        let black = bar(12.0, 14.0, 7.0, 10.0);
        assert_eq!(upper_shadow(&black), 2.0);
        assert_eq!(lower_shadow(&black), 3.0);
        assert!(white(&bar(1.0, 1.0, 1.0, 1.0)), "a flat bar is white");
    }

    #[test]
    fn window_averages_previous_bars_and_rolls() {
        let bars: Vec<Bar> = (0..8).map(|k| bar(0.0, k as f64, 0.0, 0.0)).collect();
        // Near: high-low, 5 bars, factor 0.2; evaluated bar 6, offset 1 → bars 0..5.
        let mut w = Window::new(&bars, CandleSetting::Near, 6, 1);
        assert_eq!(w.avg(6), 0.2 * ((0.0 + 1.0 + 2.0 + 3.0 + 4.0) / 5.0));
        // Bar 7 → bars 1..6.
        assert_eq!(w.avg(7), 0.2 * ((1.0 + 2.0 + 3.0 + 4.0 + 5.0) / 5.0));
        // ShadowShort halves the average of upper + lower shadows.
        let bars: Vec<Bar> = (0..12).map(|k| bar(1.0, 1.0 + k as f64, 0.5, 1.0)).collect();
        let mut s = Window::new(&bars, CandleSetting::ShadowShort, 10, 0);
        let sum: f64 = bars[..10].iter().map(|b| upper_shadow(b) + lower_shadow(b)).sum();
        assert_eq!(s.avg(10), sum / 10.0 / 2.0);
    }

    #[test]
    fn zero_period_uses_the_bar_itself() {
        let bars = vec![bar(1.0, 5.0, 0.0, 3.0), bar(3.0, 4.0, 2.0, 3.5)];
        let mut w = Window::new(&bars, CandleSetting::ShadowVeryLong, 0, 0);
        assert_eq!(w.avg(0), 4.0);
        assert_eq!(w.avg(1), 1.0);
    }
}
