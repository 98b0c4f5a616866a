//! Two- and three-candle patterns.
//!
//! Each function reproduces one TA-Lib `CDL*` function on a whole series
//! (one value per bar, 0 during the lookback); the conditions are TA-Lib's,
//! in the same floating-point form.

use super::candle::{
    CandleSetting::{BodyDoji, BodyLong, BodyShort, Equal, Far, Near, ShadowLong, ShadowShort, ShadowVeryShort},
    Window, body, body_bottom, body_gap_down, body_gap_up, body_top, candle_gap_down, candle_gap_up, color,
    lower_shadow, upper_shadow, white,
};
use super::{Pattern, first_bar};
use crate::market::Bar;

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

/// CDLCOUNTERATTACK: two long candles of opposite colours closing at the same
/// level (within "equal"). Sign = colour of the second candle.
pub(super) fn counterattack(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::Counterattack) else {
        return out;
    };
    let mut equal = Window::new(b, Equal, start, 1);
    let mut long = [1, 0].map(|k| Window::new(b, BodyLong, start, k));
    for i in start..b.len() {
        let (p, c) = (&b[i - 1], &b[i]);
        if color(p) == -color(c)
            && body(p) > long[0].avg(i)
            && body(c) > long[1].avg(i)
            && c.close <= p.close + equal.avg(i)
            && c.close >= p.close - equal.avg(i)
        {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// Where the white candle of the neck family closes, after a long black one
/// and an open below its low.
#[derive(Clone, Copy)]
enum Neck {
    /// CDLONNECK: at the previous low (within "equal").
    On,
    /// CDLINNECK: at or a little above the previous close (within "equal").
    In,
    /// CDLTHRUSTING: above the previous close by more than "equal", but not
    /// above the middle of the previous body.
    Thrusting,
}

/// The neck family: a long black candle, then a white one opening below its
/// low and closing back up to a level given by `kind`. -100.
fn neck(b: &[Bar], kind: Neck) -> Vec<i32> {
    let pattern = match kind {
        Neck::On => Pattern::OnNeck,
        Neck::In => Pattern::InNeck,
        Neck::Thrusting => Pattern::Thrusting,
    };
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, pattern) else {
        return out;
    };
    let mut equal = Window::new(b, Equal, start, 1);
    let mut long = Window::new(b, BodyLong, start, 1);
    for i in start..b.len() {
        let (p, c) = (&b[i - 1], &b[i]);
        if white(p) || body(p) <= long.avg(i) || !white(c) || c.open >= p.low {
            continue;
        }
        let eq = equal.avg(i);
        let closes = match kind {
            Neck::On => c.close <= p.low + eq && c.close >= p.low - eq,
            Neck::In => c.close <= p.close + eq && c.close >= p.close,
            Neck::Thrusting => c.close > p.close + eq && c.close <= p.close + body(p) * 0.5,
        };
        if closes {
            out[i] = -100;
        }
    }
    out
}

/// CDLONNECK.
pub(super) fn on_neck(b: &[Bar]) -> Vec<i32> {
    neck(b, Neck::On)
}

/// CDLINNECK.
pub(super) fn in_neck(b: &[Bar]) -> Vec<i32> {
    neck(b, Neck::In)
}

/// CDLTHRUSTING.
pub(super) fn thrusting(b: &[Bar]) -> Vec<i32> {
    neck(b, Neck::Thrusting)
}

/// CDLSEPARATINGLINES: opposite colours opening at the same level, the second
/// a long belt hold (very short shadow at its opening end). Sign = colour of
/// the second candle.
pub(super) fn separating_lines(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::SeparatingLines) else {
        return out;
    };
    let mut very_short = Window::new(b, ShadowVeryShort, start, 0);
    let mut long = Window::new(b, BodyLong, start, 0);
    let mut equal = Window::new(b, Equal, start, 1);
    for i in start..b.len() {
        let (p, c) = (&b[i - 1], &b[i]);
        let opening_shadow = if white(c) { lower_shadow(c) } else { upper_shadow(c) };
        if color(p) == -color(c)
            && c.open <= p.open + equal.avg(i)
            && c.open >= p.open - equal.avg(i)
            && body(c) > long.avg(i)
            && opening_shadow < very_short.avg(i)
        {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// CDLMATCHINGLOW: two black candles closing at the same level. +100.
pub(super) fn matching_low(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::MatchingLow) else {
        return out;
    };
    let mut equal = Window::new(b, Equal, start, 1);
    for i in start..b.len() {
        let (p, c) = (&b[i - 1], &b[i]);
        if !white(p) && !white(c) && c.close <= p.close + equal.avg(i) && c.close >= p.close - equal.avg(i) {
            out[i] = 100;
        }
    }
    out
}

/// CDLHOMINGPIGEON: a long black candle, then a short black one inside its
/// body. +100.
pub(super) fn homing_pigeon(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::HomingPigeon) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 1);
    let mut short = Window::new(b, BodyShort, start, 0);
    for i in start..b.len() {
        let (p, c) = (&b[i - 1], &b[i]);
        if !white(p)
            && !white(c)
            && body(p) > long.avg(i)
            && body(c) <= short.avg(i)
            && c.open < p.open
            && c.close > p.close
        {
            out[i] = 100;
        }
    }
    out
}

/// CDLKICKING (`by_length == false`) and CDLKICKINGBYLENGTH: two marubozu of
/// opposite colours with a gap between their ranges. Sign = colour of the
/// second candle, or of the longer one for kicking by length.
fn kicking_shape(b: &[Bar], by_length: bool) -> Vec<i32> {
    let pattern = if by_length {
        Pattern::KickingByLength
    } else {
        Pattern::Kicking
    };
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, pattern) else {
        return out;
    };
    let mut very_short = [1, 0].map(|k| Window::new(b, ShadowVeryShort, start, k));
    let mut long = [1, 0].map(|k| Window::new(b, BodyLong, start, k));
    for i in start..b.len() {
        let (p, c) = (&b[i - 1], &b[i]);
        if color(p) == -color(c)
            && body(p) > long[0].avg(i)
            && upper_shadow(p) < very_short[0].avg(i)
            && lower_shadow(p) < very_short[0].avg(i)
            && body(c) > long[1].avg(i)
            && upper_shadow(c) < very_short[1].avg(i)
            && lower_shadow(c) < very_short[1].avg(i)
            && ((!white(p) && candle_gap_up(c, p)) || (white(p) && candle_gap_down(c, p)))
        {
            let decisive = if by_length && body(c) <= body(p) { p } else { c };
            out[i] = color(decisive) * 100;
        }
    }
    out
}

/// CDLKICKING.
pub(super) fn kicking(b: &[Bar]) -> Vec<i32> {
    kicking_shape(b, false)
}

/// CDLKICKINGBYLENGTH.
pub(super) fn kicking_by_length(b: &[Bar]) -> Vec<i32> {
    kicking_shape(b, true)
}

/// CDL2CROWS: a long white candle, a black one gapping up, and a black one
/// opening inside the second body and closing inside the first. -100.
pub(super) fn two_crows(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::TwoCrows) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 2);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if white(a)
            && body(a) > long.avg(i)
            && !white(m)
            && body_gap_up(m, a)
            && !white(c)
            && c.open < m.open
            && c.open > m.close
            && c.close > a.open
            && c.close < a.close
        {
            out[i] = -100;
        }
    }
    out
}

/// CDLUPSIDEGAP2CROWS: a long white candle, a short black one gapping up, and
/// a black one engulfing it while closing above the first close. -100.
pub(super) fn upside_gap_two_crows(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::UpsideGapTwoCrows) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 2);
    let mut short = Window::new(b, BodyShort, start, 1);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if white(a)
            && body(a) > long.avg(i)
            && !white(m)
            && body(m) <= short.avg(i)
            && body_gap_up(m, a)
            && !white(c)
            && c.open > m.open
            && c.close < m.close
            && c.close > a.close
        {
            out[i] = -100;
        }
    }
    out
}

/// CDL3INSIDE: a harami (long body, short body inside it), then a candle
/// closing beyond the first open. Sign opposite to the first candle's colour.
pub(super) fn three_inside(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::ThreeInside) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 2);
    let mut short = Window::new(b, BodyShort, start, 1);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if body(a) > long.avg(i)
            && body(m) <= short.avg(i)
            && body_top(m) < body_top(a)
            && body_bottom(m) > body_bottom(a)
            && ((white(a) && !white(c) && c.close < a.open) || (!white(a) && white(c) && c.close > a.open))
        {
            out[i] = -color(a) * 100;
        }
    }
    out
}

/// CDL3OUTSIDE: an engulfing pair, then a candle closing beyond the second
/// close in its direction. Sign = colour of the engulfing candle.
pub(super) fn three_outside(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::ThreeOutside) else {
        return out;
    };
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if (white(m) && !white(a) && m.close > a.open && m.open < a.close && c.close > m.close)
            || (!white(m) && white(a) && m.open > a.close && m.close < a.open && c.close < m.close)
        {
            out[i] = color(m) * 100;
        }
    }
    out
}

/// CDL3STARSINSOUTH: three black candles: a long one with a long lower
/// shadow, a smaller one trading above its low with a lower shadow, and a
/// small marubozu inside the second range. +100.
pub(super) fn three_stars_in_south(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::ThreeStarsInSouth) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 2);
    let mut shadow_long = Window::new(b, ShadowLong, start, 2);
    let mut very_short = [1, 0].map(|k| Window::new(b, ShadowVeryShort, start, k));
    let mut short = Window::new(b, BodyShort, start, 0);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if !white(a)
            && !white(m)
            && !white(c)
            && body(a) > long.avg(i)
            && lower_shadow(a) > shadow_long.avg(i)
            && body(m) < body(a)
            && m.open > a.close
            && m.open <= a.high
            && m.low < a.close
            && m.low >= a.low
            && lower_shadow(m) > very_short[0].avg(i)
            && body(c) < short.avg(i)
            && lower_shadow(c) < very_short[1].avg(i)
            && upper_shadow(c) < very_short[1].avg(i)
            && c.low > m.low
            && c.high < m.high
        {
            out[i] = 100;
        }
    }
    out
}

/// CDLABANDONEDBABY: a long body, a doji whose range gaps away from it, and a
/// candle of the opposite colour, not short, gapping back and closing
/// `penetration` deep into the first body. Sign = colour of the third candle.
pub(super) fn abandoned_baby(b: &[Bar], penetration: f64) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::AbandonedBaby) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 2);
    let mut doji = Window::new(b, BodyDoji, start, 1);
    let mut short = Window::new(b, BodyShort, start, 0);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if body(a) > long.avg(i)
            && body(m) <= doji.avg(i)
            && body(c) > short.avg(i)
            && ((white(a)
                && !white(c)
                && c.close < a.close - body(a) * penetration
                && candle_gap_up(m, a)
                && candle_gap_down(c, m))
                || (!white(a)
                    && white(c)
                    && c.close > a.close + body(a) * penetration
                    && candle_gap_down(m, a)
                    && candle_gap_up(c, m)))
        {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// CDLADVANCEBLOCK: three white candles with rising closes, each opening
/// inside or near the previous body, the first long with a short upper
/// shadow, the advance weakening (shrinking bodies and/or long upper
/// shadows). -100.
pub(super) fn advance_block(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::AdvanceBlock) else {
        return out;
    };
    let mut shadow_short = [2, 1, 0].map(|k| Window::new(b, ShadowShort, start, k));
    let mut shadow_long = Window::new(b, ShadowLong, start, 0);
    let mut near = [2, 1].map(|k| Window::new(b, Near, start, k));
    let mut far = [2, 1].map(|k| Window::new(b, Far, start, k));
    let mut long = Window::new(b, BodyLong, start, 2);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if !(white(a)
            && white(m)
            && white(c)
            && c.close > m.close
            && m.close > a.close
            && m.open > a.open
            && m.open <= a.close + near[0].avg(i)
            && c.open > m.open
            && c.open <= m.close + near[1].avg(i)
            && body(a) > long.avg(i)
            && upper_shadow(a) < shadow_short[0].avg(i))
        {
            continue;
        }
        let (ba, bm, bc) = (body(a), body(m), body(c));
        let blocked_second = bm < ba - far[0].avg(i) && bc < bm + near[1].avg(i);
        let blocked_third = bc < bm - far[1].avg(i);
        let shrinking = bc < bm
            && bm < ba
            && (upper_shadow(c) > shadow_short[2].avg(i) || upper_shadow(m) > shadow_short[1].avg(i));
        let long_shadow = bc < bm && upper_shadow(c) > shadow_long.avg(i);
        if blocked_second || blocked_third || shrinking || long_shadow {
            out[i] = -100;
        }
    }
    out
}

/// CDLSTALLEDPATTERN: two long white candles with rising closes (the second
/// with a very short upper shadow, opening inside or near the first body),
/// then a small white one riding on the second's shoulder. -100.
pub(super) fn stalled_pattern(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::StalledPattern) else {
        return out;
    };
    let mut long = [2, 1].map(|k| Window::new(b, BodyLong, start, k));
    let mut near = [2, 1].map(|k| Window::new(b, Near, start, k));
    let mut short = Window::new(b, BodyShort, start, 0);
    let mut very_short = Window::new(b, ShadowVeryShort, start, 1);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if white(a)
            && white(m)
            && white(c)
            && c.close > m.close
            && m.close > a.close
            && body(a) > long[0].avg(i)
            && body(m) > long[1].avg(i)
            && upper_shadow(m) < very_short.avg(i)
            && m.open > a.open
            && m.open <= a.close + near[0].avg(i)
            && body(c) < short.avg(i)
            && c.open >= m.close - body(c) - near[1].avg(i)
        {
            out[i] = -100;
        }
    }
    out
}

/// CDLGAPSIDESIDEWHITE: two white candles of about the same size opening at
/// about the same level, both gapping away from the candle before. +100 after
/// a gap up, -100 after a gap down.
pub(super) fn gap_side_by_side_white(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::GapSideBySideWhite) else {
        return out;
    };
    let mut near = Window::new(b, Near, start, 1);
    let mut equal = Window::new(b, Equal, start, 1);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        let up = body_gap_up(m, a) && body_gap_up(c, a);
        let down = body_gap_down(m, a) && body_gap_down(c, a);
        if (up || down)
            && white(m)
            && white(c)
            && body(c) >= body(m) - near.avg(i)
            && body(c) <= body(m) + near.avg(i)
            && c.open >= m.open - equal.avg(i)
            && c.open <= m.open + equal.avg(i)
        {
            out[i] = if body_gap_up(m, a) { 100 } else { -100 };
        }
    }
    out
}

/// CDLIDENTICAL3CROWS: three black candles with falling closes and very short
/// lower shadows, each opening at the previous close. -100.
pub(super) fn identical_three_crows(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::IdenticalThreeCrows) else {
        return out;
    };
    let mut very_short = [2, 1, 0].map(|k| Window::new(b, ShadowVeryShort, start, k));
    let mut equal = [2, 1].map(|k| Window::new(b, Equal, start, k));
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if !white(a)
            && lower_shadow(a) < very_short[0].avg(i)
            && !white(m)
            && lower_shadow(m) < very_short[1].avg(i)
            && !white(c)
            && lower_shadow(c) < very_short[2].avg(i)
            && a.close > m.close
            && m.close > c.close
            && m.open <= a.close + equal[0].avg(i)
            && m.open >= a.close - equal[0].avg(i)
            && c.open <= m.close + equal[1].avg(i)
            && c.open >= m.close - equal[1].avg(i)
        {
            out[i] = -100;
        }
    }
    out
}

/// CDLSTICKSANDWICH: black, white trading above the first close, black
/// closing at the first close. +100.
pub(super) fn stick_sandwich(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::StickSandwich) else {
        return out;
    };
    let mut equal = Window::new(b, Equal, start, 2);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if !white(a)
            && white(m)
            && !white(c)
            && m.low > a.close
            && c.close <= a.close + equal.avg(i)
            && c.close >= a.close - equal.avg(i)
        {
            out[i] = 100;
        }
    }
    out
}

/// CDLTASUKIGAP: a body gap, a candle in the gap's direction, then one of
/// the opposite colour and about the same size opening inside its body and
/// closing inside the gap. Sign = colour of the second candle.
pub(super) fn tasuki_gap(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::TasukiGap) else {
        return out;
    };
    let mut near = Window::new(b, Near, start, 1);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        let similar = (body(m) - body(c)).abs() < near.avg(i);
        let up = body_gap_up(m, a)
            && white(m)
            && !white(c)
            && c.open < m.close
            && c.open > m.open
            && c.close < m.open
            && c.close > body_top(a)
            && similar;
        let down = body_gap_down(m, a)
            && !white(m)
            && white(c)
            && c.open < m.open
            && c.open > m.close
            && c.close > m.open
            && c.close < body_bottom(a)
            && similar;
        if up || down {
            out[i] = color(m) * 100;
        }
    }
    out
}

/// CDLTRISTAR: three doji (all against the average before the first), the
/// middle one gapping away. -100 when it gaps up and the third body tops
/// below it, +100 when it gaps down and the third bottoms above it.
pub(super) fn tristar(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::Tristar) else {
        return out;
    };
    let mut doji = Window::new(b, BodyDoji, start, 2);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        let d = doji.avg(i);
        if !(body(a) <= d && body(m) <= d && body(c) <= d) {
            continue;
        }
        if body_gap_up(m, a) && body_top(c) < body_top(m) {
            out[i] = -100;
        }
        if body_gap_down(m, a) && body_bottom(c) > body_bottom(m) {
            out[i] = 100;
        }
    }
    out
}

/// CDLUNIQUE3RIVER: a long black candle, a black harami-like candle with a
/// lower low, then a short white candle opening above that low. +100.
pub(super) fn unique_three_river(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::UniqueThreeRiver) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 2);
    let mut short = Window::new(b, BodyShort, start, 0);
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if !white(a)
            && body(a) > long.avg(i)
            && !white(m)
            && m.close > a.close
            && m.open <= a.open
            && m.low < a.low
            && body(c) < short.avg(i)
            && white(c)
            && c.open > m.low
        {
            out[i] = 100;
        }
    }
    out
}

/// CDLXSIDEGAP3METHODS (upside/downside gap three methods): two candles of
/// one colour with a body gap between them, then one of the other colour
/// opening inside the second body and closing inside the first. Sign = colour
/// of the first two.
pub(super) fn gap_three_methods(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::GapThreeMethods) else {
        return out;
    };
    for i in start..b.len() {
        let (a, m, c) = (&b[i - 2], &b[i - 1], &b[i]);
        if color(a) == color(m)
            && color(m) == -color(c)
            && c.open < body_top(m)
            && c.open > body_bottom(m)
            && c.close < body_top(a)
            && c.close > body_bottom(a)
            && ((white(a) && body_gap_up(m, a)) || (!white(a) && body_gap_down(m, a)))
        {
            out[i] = color(a) * 100;
        }
    }
    out
}
