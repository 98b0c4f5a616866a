//! Two- and three-candle patterns.
//!
//! Each function reproduces one TA-Lib `CDL*` function on a whole series
//! (one value per bar, 0 during the lookback); the conditions are TA-Lib's,
//! in the same floating-point form.

use super::candle::{
    CandleSetting::{BodyDoji, BodyLong, BodyShort, Far, Near, ShadowVeryShort},
    Window, body, body_bottom, body_gap_down, body_gap_up, body_top, lower_shadow, upper_shadow, white,
};
use super::{Pattern, first_bar};
use crate::market::Bar;

/// +1 for a white candle, -1 for a black one (TA-Lib `TA_CANDLECOLOR`).
fn color(b: &Bar) -> i32 {
    if white(b) { 1 } else { -1 }
}

/// CDLENGULFING: the second real body engulfs the first, of opposite colour.
/// ±100 when it begins before and ends after the first; ±80 when the two
/// bodies share one end.
pub(super) fn engulfing(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::Engulfing) else {
        return out;
    };
    for i in start..b.len() {
        let (c, p) = (&b[i], &b[i - 1]);
        let bullish = white(c)
            && !white(p)
            && ((c.close >= p.open && c.open < p.close) || (c.close > p.open && c.open <= p.close));
        let bearish = !white(c)
            && white(p)
            && ((c.open >= p.close && c.close < p.open) || (c.open > p.close && c.close <= p.open));
        if bullish || bearish {
            let strength = if c.open != p.close && c.close != p.open {
                100
            } else {
                80
            };
            out[i] = color(c) * strength;
        }
    }
    out
}

/// CDLHARAMI (`cross == false`) and CDLHARAMICROSS (`cross == true`): a long
/// real body, then a short body (a doji for the cross) inside it. The sign is
/// opposite to the first candle's colour; 80 instead of 100 when the second
/// body touches one end of the first.
fn harami_shape(b: &[Bar], cross: bool) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let pattern = if cross { Pattern::HaramiCross } else { Pattern::Harami };
    let Some(start) = first_bar(b, pattern) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 1);
    let mut small = Window::new(b, if cross { BodyDoji } else { BodyShort }, start, 0);
    for i in start..b.len() {
        let (c, p) = (&b[i], &b[i - 1]);
        if !(body(p) > long.avg(i) && body(c) <= small.avg(i)) {
            continue;
        }
        let strength = if body_top(c) < body_top(p) && body_bottom(c) > body_bottom(p) {
            100
        } else if body_top(c) <= body_top(p) && body_bottom(c) >= body_bottom(p) {
            80
        } else {
            0
        };
        out[i] = -color(p) * strength;
    }
    out
}

/// CDLHARAMI.
pub(super) fn harami(b: &[Bar]) -> Vec<i32> {
    harami_shape(b, false)
}

/// CDLHARAMICROSS.
pub(super) fn harami_cross(b: &[Bar]) -> Vec<i32> {
    harami_shape(b, true)
}

/// CDLDOJISTAR: a long real body, then a doji whose body gaps away from it in
/// the direction of the first candle. TA-Lib signs it against the first
/// candle: -100 after a white candle (gap up), +100 after a black one.
pub(super) fn doji_star(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::DojiStar) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 1);
    let mut doji = Window::new(b, BodyDoji, start, 0);
    for i in start..b.len() {
        let (c, p) = (&b[i], &b[i - 1]);
        if body(p) > long.avg(i)
            && body(c) <= doji.avg(i)
            && ((white(p) && body_gap_up(c, p)) || (!white(p) && body_gap_down(c, p)))
        {
            out[i] = -color(p) * 100;
        }
    }
    out
}

/// CDLPIERCING: a long black candle, then a long white one opening below its
/// low and closing above the middle of its body (but below its open).
pub(super) fn piercing(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::Piercing) else {
        return out;
    };
    let mut long_first = Window::new(b, BodyLong, start, 1);
    let mut long_second = Window::new(b, BodyLong, start, 0);
    for i in start..b.len() {
        let (c, p) = (&b[i], &b[i - 1]);
        if !white(p)
            && body(p) > long_first.avg(i)
            && white(c)
            && body(c) > long_second.avg(i)
            && c.open < p.low
            && c.close < p.open
            && c.close > p.close + body(p) * 0.5
        {
            out[i] = 100;
        }
    }
    out
}

/// CDLDARKCLOUDCOVER: a long white candle, then a black one opening above its
/// high and closing inside its body, below `close - body · penetration`.
pub(super) fn dark_cloud_cover(b: &[Bar], penetration: f64) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::DarkCloudCover) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 1);
    for i in start..b.len() {
        let (c, p) = (&b[i], &b[i - 1]);
        if white(p)
            && body(p) > long.avg(i)
            && !white(c)
            && c.open > p.high
            && c.close > p.open
            && c.close < p.close - body(p) * penetration
        {
            out[i] = -100;
        }
    }
    out
}

/// The three-candle star family: a long first body, a star gapping away from
/// it (a short body, or a doji for the doji stars), and a third candle of the
/// opposite colour, not short, closing `penetration` deep into the first body.
fn star(b: &[Bar], pattern: Pattern, penetration: f64) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, pattern) else {
        return out;
    };
    let morning = matches!(pattern, Pattern::MorningStar | Pattern::MorningDojiStar);
    let doji_star = matches!(pattern, Pattern::MorningDojiStar | Pattern::EveningDojiStar);
    let mut long = Window::new(b, BodyLong, start, 2);
    let mut star_body = Window::new(b, if doji_star { BodyDoji } else { BodyShort }, start, 1);
    let mut third = Window::new(b, BodyShort, start, 0);
    for i in start..b.len() {
        let (first, second, c) = (&b[i - 2], &b[i - 1], &b[i]);
        let shape = if morning {
            !white(first)
                && white(c)
                && body_gap_down(second, first)
                && c.close > first.close + body(first) * penetration
        } else {
            white(first) && !white(c) && body_gap_up(second, first) && c.close < first.close - body(first) * penetration
        };
        if shape && body(first) > long.avg(i) && body(second) <= star_body.avg(i) && body(c) > third.avg(i) {
            out[i] = if morning { 100 } else { -100 };
        }
    }
    out
}

/// CDLMORNINGSTAR.
pub(super) fn morning_star(b: &[Bar], penetration: f64) -> Vec<i32> {
    star(b, Pattern::MorningStar, penetration)
}

/// CDLEVENINGSTAR.
pub(super) fn evening_star(b: &[Bar], penetration: f64) -> Vec<i32> {
    star(b, Pattern::EveningStar, penetration)
}

/// CDLMORNINGDOJISTAR.
pub(super) fn morning_doji_star(b: &[Bar], penetration: f64) -> Vec<i32> {
    star(b, Pattern::MorningDojiStar, penetration)
}

/// CDLEVENINGDOJISTAR.
pub(super) fn evening_doji_star(b: &[Bar], penetration: f64) -> Vec<i32> {
    star(b, Pattern::EveningDojiStar, penetration)
}

/// CDL3WHITESOLDIERS: three white candles with higher closes, very short
/// upper shadows, each opening inside or near the previous body and not far
/// shorter than it, the third not short.
pub(super) fn three_white_soldiers(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::ThreeWhiteSoldiers) else {
        return out;
    };
    let mut shadow = [2, 1, 0].map(|k| Window::new(b, ShadowVeryShort, start, k));
    let mut near = [2, 1].map(|k| Window::new(b, Near, start, k));
    let mut far = [2, 1].map(|k| Window::new(b, Far, start, k));
    let mut short = Window::new(b, BodyShort, start, 0);
    for i in start..b.len() {
        let (c1, c2, c3) = (&b[i - 2], &b[i - 1], &b[i]);
        if white(c1)
            && upper_shadow(c1) < shadow[0].avg(i)
            && white(c2)
            && upper_shadow(c2) < shadow[1].avg(i)
            && white(c3)
            && upper_shadow(c3) < shadow[2].avg(i)
            && c3.close > c2.close
            && c2.close > c1.close
            && c2.open > c1.open
            && c2.open <= c1.close + near[0].avg(i)
            && c3.open > c2.open
            && c3.open <= c2.close + near[1].avg(i)
            && body(c2) > body(c1) - far[0].avg(i)
            && body(c3) > body(c2) - far[1].avg(i)
            && body(c3) > short.avg(i)
        {
            out[i] = 100;
        }
    }
    out
}

/// CDL3BLACKCROWS: a white candle, then three black candles with lower
/// closes, each opening inside the previous body, with very short lower
/// shadows, the first closing under the white candle's high.
pub(super) fn three_black_crows(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::ThreeBlackCrows) else {
        return out;
    };
    let mut shadow = [2, 1, 0].map(|k| Window::new(b, ShadowVeryShort, start, k));
    for i in start..b.len() {
        let (w, c1, c2, c3) = (&b[i - 3], &b[i - 2], &b[i - 1], &b[i]);
        if white(w)
            && !white(c1)
            && !white(c2)
            && !white(c3)
            && c2.open < c1.open
            && c2.open > c1.close
            && c3.open < c2.open
            && c3.open > c2.close
            && w.high > c1.close
            && c1.close > c2.close
            && c2.close > c3.close
            && lower_shadow(c1) < shadow[0].avg(i)
            && lower_shadow(c2) < shadow[1].avg(i)
            && lower_shadow(c3) < shadow[2].avg(i)
        {
            out[i] = -100;
        }
    }
    out
}
