//! Patterns of four and five candles, and the hikkake family (an inside bar,
//! a false breakout and an optional confirmation up to three bars later).
//!
//! Each function reproduces one TA-Lib `CDL*` function on a whole series
//! (one value per bar, 0 during the lookback); the conditions are TA-Lib's,
//! in the same floating-point form.

use super::candle::{
    CandleSetting::{BodyLong, BodyShort, Near, ShadowVeryShort},
    Window, body, body_bottom, body_gap_down, body_gap_up, body_top, color, lower_shadow, upper_shadow, white,
};
use super::{Pattern, first_bar};
use crate::market::Bar;

/// CDL3LINESTRIKE: three candles of one colour, each opening inside or near
/// the previous body with closes moving in that colour's direction, then a
/// candle of the other colour opening beyond the third close and closing
/// beyond the first open. Sign = colour of the three.
pub(super) fn three_line_strike(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::ThreeLineStrike) else {
        return out;
    };
    let mut near = [3, 2].map(|k| Window::new(b, Near, start, k));
    for i in start..b.len() {
        let (c1, c2, c3, c) = (&b[i - 3], &b[i - 2], &b[i - 1], &b[i]);
        if color(c1) == color(c2)
            && color(c2) == color(c3)
            && color(c) == -color(c3)
            && c2.open >= body_bottom(c1) - near[0].avg(i)
            && c2.open <= body_top(c1) + near[0].avg(i)
            && c3.open >= body_bottom(c2) - near[1].avg(i)
            && c3.open <= body_top(c2) + near[1].avg(i)
            && ((white(c3) && c3.close > c2.close && c2.close > c1.close && c.open > c3.close && c.close < c1.open)
                || (!white(c3) && c3.close < c2.close && c2.close < c1.close && c.open < c3.close && c.close > c1.open))
        {
            out[i] = color(c3) * 100;
        }
    }
    out
}

/// CDLCONCEALBABYSWALL: two black marubozu, a black candle gapping down with
/// an upper shadow reaching into the second body, and a black candle whose
/// range engulfs the third. +100.
pub(super) fn concealing_baby_swallow(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::ConcealingBabySwallow) else {
        return out;
    };
    let mut very_short = [3, 2, 1].map(|k| Window::new(b, ShadowVeryShort, start, k));
    for i in start..b.len() {
        let (c1, c2, c3, c) = (&b[i - 3], &b[i - 2], &b[i - 1], &b[i]);
        if !white(c1)
            && !white(c2)
            && !white(c3)
            && !white(c)
            && lower_shadow(c1) < very_short[0].avg(i)
            && upper_shadow(c1) < very_short[0].avg(i)
            && lower_shadow(c2) < very_short[1].avg(i)
            && upper_shadow(c2) < very_short[1].avg(i)
            && body_gap_down(c3, c2)
            && upper_shadow(c3) > very_short[2].avg(i)
            && c3.high > c2.close
            && c.high > c3.high
            && c.low < c3.low
        {
            out[i] = 100;
        }
    }
    out
}

/// CDLBREAKAWAY: a long candle, a body gap in its direction, two more
/// candles extending the move, then a candle of the other colour closing
/// inside the gap. Sign = colour of the last candle.
pub(super) fn breakaway(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::Breakaway) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 4);
    for i in start..b.len() {
        let (c1, c2, c3, c4, c) = (&b[i - 4], &b[i - 3], &b[i - 2], &b[i - 1], &b[i]);
        let down = !white(c1)
            && body_gap_down(c2, c1)
            && c3.high < c2.high
            && c3.low < c2.low
            && c4.high < c3.high
            && c4.low < c3.low
            && c.close > c2.open
            && c.close < c1.close;
        let up = white(c1)
            && body_gap_up(c2, c1)
            && c3.high > c2.high
            && c3.low > c2.low
            && c4.high > c3.high
            && c4.low > c3.low
            && c.close < c2.open
            && c.close > c1.close;
        if body(c1) > long.avg(i)
            && color(c1) == color(c2)
            && color(c2) == color(c4)
            && color(c4) == -color(c)
            && (down || up)
        {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// CDLLADDERBOTTOM: three black candles with falling opens and closes, a
/// black candle with an upper shadow, then a white candle opening above its
/// open and closing above its high. +100.
pub(super) fn ladder_bottom(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::LadderBottom) else {
        return out;
    };
    let mut very_short = Window::new(b, ShadowVeryShort, start, 1);
    for i in start..b.len() {
        let (c1, c2, c3, c4, c) = (&b[i - 4], &b[i - 3], &b[i - 2], &b[i - 1], &b[i]);
        if !white(c1)
            && !white(c2)
            && !white(c3)
            && c1.open > c2.open
            && c2.open > c3.open
            && c1.close > c2.close
            && c2.close > c3.close
            && !white(c4)
            && upper_shadow(c4) > very_short.avg(i)
            && white(c)
            && c.open > c4.open
            && c.close > c4.high
        {
            out[i] = 100;
        }
    }
    out
}

/// CDLMATHOLD: a long white candle, a small black one gapping up, two more
/// small falling candles holding within the first body (penetrating it by
/// less than `penetration`), then a white candle opening above the previous
/// close and closing above the reaction highs. +100.
pub(super) fn mat_hold(b: &[Bar], penetration: f64) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::MatHold) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 4);
    let mut short = [3, 2, 1].map(|k| Window::new(b, BodyShort, start, k));
    for i in start..b.len() {
        let (c1, c2, c3, c4, c) = (&b[i - 4], &b[i - 3], &b[i - 2], &b[i - 1], &b[i]);
        let floor = c1.close - body(c1) * penetration;
        if white(c1)
            && !white(c2)
            && white(c)
            && body_gap_up(c2, c1)
            && body_bottom(c3) < c1.close
            && body_bottom(c4) < c1.close
            && body_bottom(c3) > floor
            && body_bottom(c4) > floor
            && body_top(c3) < c2.open
            && body_top(c4) < body_top(c3)
            && c.open > c4.close
            && c.close > c2.high.max(c3.high).max(c4.high)
            && body(c1) > long.avg(i)
            && body(c2) < short[0].avg(i)
            && body(c3) < short[1].avg(i)
            && body(c4) < short[2].avg(i)
        {
            out[i] = 100;
        }
    }
    out
}

/// CDLRISEFALL3METHODS: a long candle, three small candles of the other
/// colour moving against it inside its range, then a long candle of the
/// first colour opening beyond the previous close and closing beyond the
/// first close. Sign = colour of the first candle.
pub(super) fn rise_fall_three_methods(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::RiseFallThreeMethods) else {
        return out;
    };
    let mut long = [4, 0].map(|k| Window::new(b, BodyLong, start, k));
    let mut short = [3, 2, 1].map(|k| Window::new(b, BodyShort, start, k));
    for i in start..b.len() {
        let (c1, c2, c3, c4, c) = (&b[i - 4], &b[i - 3], &b[i - 2], &b[i - 1], &b[i]);
        // TA-Lib multiplies by the colour (±1) to test both directions at once.
        let d = f64::from(color(c1));
        let inside = |x: &Bar| body_bottom(x) < c1.high && body_top(x) > c1.low;
        if body(c1) > long[0].avg(i)
            && body(c2) < short[0].avg(i)
            && body(c3) < short[1].avg(i)
            && body(c4) < short[2].avg(i)
            && body(c) > long[1].avg(i)
            && color(c1) == -color(c2)
            && color(c2) == color(c3)
            && color(c3) == color(c4)
            && color(c4) == -color(c)
            && inside(c2)
            && inside(c3)
            && inside(c4)
            && c3.close * d < c2.close * d
            && c4.close * d < c3.close * d
            && c.open * d > c4.close * d
            && c.close * d > c1.close * d
        {
            out[i] = 100 * color(c1);
        }
    }
    out
}

/// The state TA-Lib's hikkake functions carry from bar to bar: the last
/// pattern's value and bar (0 once confirmed).
struct Hikkake {
    result: i32,
    at: usize,
}

impl Hikkake {
    /// The value at bar `i`: `signal` (±100) when a new pattern completes
    /// there, ±200 when bar `i` confirms the last pattern within three bars
    /// (closing beyond the high or low of the inside bar `at - 1`), else 0.
    fn step(&mut self, b: &[Bar], i: usize, signal: Option<i32>) -> i32 {
        if let Some(value) = signal {
            self.result = value;
            self.at = i;
            return value;
        }
        // `at == 0` means "no pending pattern" once i > 3; before that TA-Lib
        // never reaches the test with `at == 0` and a non-zero result.
        if self.at == 0 || i > self.at + 3 {
            return 0;
        }
        let inside = &b[self.at - 1];
        let confirmed = (self.result > 0 && b[i].close > inside.high) || (self.result < 0 && b[i].close < inside.low);
        if confirmed {
            self.at = 0;
            self.result + 100 * self.result.signum()
        } else {
            0
        }
    }
}

/// CDLHIKKAKE: an inside bar, then a bar breaking out on both ends in one
/// direction (+100 for a lower high and lower low, -100 for a higher high and
/// higher low); ±200 on a bar up to three bars later that closes beyond the
/// inside bar's high (low). A new pattern takes precedence over a
/// confirmation on the same bar.
pub(super) fn hikkake(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::Hikkake) else {
        return out;
    };
    let mut state = Hikkake { result: 0, at: 0 };
    // TA-Lib primes the state on the three bars before its lookback.
    for i in start - 3..b.len() {
        let (first, inside, c) = (&b[i - 2], &b[i - 1], &b[i]);
        let signal = (inside.high < first.high
            && inside.low > first.low
            && ((c.high < inside.high && c.low < inside.low) || (c.high > inside.high && c.low > inside.low)))
            .then_some(if c.high < inside.high { 100 } else { -100 });
        let value = state.step(b, i, signal);
        if i >= start {
            out[i] = value;
        }
    }
    out
}

/// CDLHIKKAKEMOD: the hikkake with one more inside bar before it, whose close
/// is near its low (bullish) or its high (bearish); values as the hikkake.
pub(super) fn modified_hikkake(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::ModifiedHikkake) else {
        return out;
    };
    let mut state = Hikkake { result: 0, at: 0 };
    // TA-Lib primes the state, and starts the "near" total of the second
    // candle, three bars before its lookback.
    let mut near = Window::new(b, Near, start - 3, 2);
    for i in start - 3..b.len() {
        let (c1, c2, inside, c) = (&b[i - 3], &b[i - 2], &b[i - 1], &b[i]);
        let signal = (c2.high < c1.high
            && c2.low > c1.low
            && inside.high < c2.high
            && inside.low > c2.low
            && ((c.high < inside.high && c.low < inside.low && c2.close <= c2.low + near.avg(i))
                || (c.high > inside.high && c.low > inside.low && c2.close >= c2.high - near.avg(i))))
        .then_some(if c.high < inside.high { 100 } else { -100 });
        let value = state.step(b, i, signal);
        if i >= start {
            out[i] = value;
        }
    }
    out
}
