//! One-candle patterns: the doji family, the hammer family and the candle
//! shapes (marubozu, long and short lines, spinning top, high wave, belt
//! hold, rickshaw man, takuri).
//!
//! Each function reproduces one TA-Lib `CDL*` function on a whole series
//! (one value per bar, 0 during the lookback); the conditions are TA-Lib's,
//! in the same floating-point form.

use super::candle::{
    CandleSetting::{BodyDoji, BodyLong, BodyShort, Near, ShadowLong, ShadowShort, ShadowVeryLong, ShadowVeryShort},
    Window, body, body_bottom, body_gap_down, body_gap_up, body_top, color, lower_shadow, upper_shadow, white,
};
use super::{Pattern, first_bar};
use crate::market::Bar;

/// CDLDOJI: a real body no larger than 10 % of the average range.
pub(super) fn doji(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::Doji) else {
        return out;
    };
    let mut doji = Window::new(b, BodyDoji, start, 0);
    for i in start..b.len() {
        if body(&b[i]) <= doji.avg(i) {
            out[i] = 100;
        }
    }
    out
}

/// CDLDRAGONFLYDOJI: doji, very short upper shadow, lower shadow not very short.
pub(super) fn dragonfly_doji(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::DragonflyDoji) else {
        return out;
    };
    let mut doji = Window::new(b, BodyDoji, start, 0);
    let mut very_short = Window::new(b, ShadowVeryShort, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        if body(c) <= doji.avg(i) && upper_shadow(c) < very_short.avg(i) && lower_shadow(c) > very_short.avg(i) {
            out[i] = 100;
        }
    }
    out
}

/// CDLGRAVESTONEDOJI: doji, very short lower shadow, upper shadow not very short.
pub(super) fn gravestone_doji(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::GravestoneDoji) else {
        return out;
    };
    let mut doji = Window::new(b, BodyDoji, start, 0);
    let mut very_short = Window::new(b, ShadowVeryShort, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        if body(c) <= doji.avg(i) && lower_shadow(c) < very_short.avg(i) && upper_shadow(c) > very_short.avg(i) {
            out[i] = 100;
        }
    }
    out
}

/// CDLLONGLEGGEDDOJI: doji with at least one shadow longer than its own body.
pub(super) fn long_legged_doji(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::LongLeggedDoji) else {
        return out;
    };
    let mut doji = Window::new(b, BodyDoji, start, 0);
    let mut long = Window::new(b, ShadowLong, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        if body(c) <= doji.avg(i) && (lower_shadow(c) > long.avg(i) || upper_shadow(c) > long.avg(i)) {
            out[i] = 100;
        }
    }
    out
}

/// Which end of the previous candle a hammer-shaped candle is compared with.
#[derive(Clone, Copy)]
enum HammerKind {
    /// Body at or near the previous low: hammer (+100).
    Hammer,
    /// Body at or near the previous high: hanging man (-100).
    HangingMan,
}

/// Small body, long lower shadow, very short upper shadow, body near the
/// previous candle's low (hammer) or high (hanging man).
fn hammer_shape(b: &[Bar], kind: HammerKind) -> Vec<i32> {
    let pattern = match kind {
        HammerKind::Hammer => Pattern::Hammer,
        HammerKind::HangingMan => Pattern::HangingMan,
    };
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, pattern) else {
        return out;
    };
    let mut short = Window::new(b, BodyShort, start, 0);
    let mut long = Window::new(b, ShadowLong, start, 0);
    let mut very_short = Window::new(b, ShadowVeryShort, start, 0);
    let mut near = Window::new(b, Near, start, 1);
    for i in start..b.len() {
        let (c, p) = (&b[i], &b[i - 1]);
        let shape = body(c) < short.avg(i) && lower_shadow(c) > long.avg(i) && upper_shadow(c) < very_short.avg(i);
        let placed = match kind {
            HammerKind::Hammer => shape && body_bottom(c) <= p.low + near.avg(i),
            HammerKind::HangingMan => shape && body_bottom(c) >= p.high - near.avg(i),
        };
        if placed {
            out[i] = match kind {
                HammerKind::Hammer => 100,
                HammerKind::HangingMan => -100,
            };
        }
    }
    out
}

/// CDLHAMMER.
pub(super) fn hammer(b: &[Bar]) -> Vec<i32> {
    hammer_shape(b, HammerKind::Hammer)
}

/// CDLHANGINGMAN.
pub(super) fn hanging_man(b: &[Bar]) -> Vec<i32> {
    hammer_shape(b, HammerKind::HangingMan)
}

/// Small body, long upper shadow, very short lower shadow, real body gapping
/// down (inverted hammer, +100) or up (shooting star, -100) from the
/// previous one.
fn inverted_shape(b: &[Bar], pattern: Pattern) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, pattern) else {
        return out;
    };
    let star = pattern == Pattern::ShootingStar;
    let mut short = Window::new(b, BodyShort, start, 0);
    let mut long = Window::new(b, ShadowLong, start, 0);
    let mut very_short = Window::new(b, ShadowVeryShort, start, 0);
    for i in start..b.len() {
        let (c, p) = (&b[i], &b[i - 1]);
        let gap = if star { body_gap_up(c, p) } else { body_gap_down(c, p) };
        if gap && body(c) < short.avg(i) && upper_shadow(c) > long.avg(i) && lower_shadow(c) < very_short.avg(i) {
            out[i] = if star { -100 } else { 100 };
        }
    }
    out
}

/// CDLINVERTEDHAMMER.
pub(super) fn inverted_hammer(b: &[Bar]) -> Vec<i32> {
    inverted_shape(b, Pattern::InvertedHammer)
}

/// CDLSHOOTINGSTAR.
pub(super) fn shooting_star(b: &[Bar]) -> Vec<i32> {
    inverted_shape(b, Pattern::ShootingStar)
}

/// CDLMARUBOZU: a long real body with very short shadows at both ends.
/// ±100 by colour.
pub(super) fn marubozu(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::Marubozu) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 0);
    let mut very_short = Window::new(b, ShadowVeryShort, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        if body(c) > long.avg(i) && upper_shadow(c) < very_short.avg(i) && lower_shadow(c) < very_short.avg(i) {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// CDLCLOSINGMARUBOZU: a long real body with a very short shadow at its
/// closing end (upper for white, lower for black). ±100 by colour.
pub(super) fn closing_marubozu(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::ClosingMarubozu) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 0);
    let mut very_short = Window::new(b, ShadowVeryShort, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        let closing_shadow = if white(c) { upper_shadow(c) } else { lower_shadow(c) };
        if body(c) > long.avg(i) && closing_shadow < very_short.avg(i) {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// CDLBELTHOLD: a long real body with a very short shadow at its opening end
/// (lower for white, upper for black). ±100 by colour.
pub(super) fn belt_hold(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::BeltHold) else {
        return out;
    };
    let mut long = Window::new(b, BodyLong, start, 0);
    let mut very_short = Window::new(b, ShadowVeryShort, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        let opening_shadow = if white(c) { lower_shadow(c) } else { upper_shadow(c) };
        if body(c) > long.avg(i) && opening_shadow < very_short.avg(i) {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// CDLLONGLINE (`long == true`) and CDLSHORTLINE: a long (short) real body
/// with short shadows. ±100 by colour.
fn line(b: &[Bar], long: bool) -> Vec<i32> {
    let pattern = if long { Pattern::LongLine } else { Pattern::ShortLine };
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, pattern) else {
        return out;
    };
    let mut body_avg = Window::new(b, if long { BodyLong } else { BodyShort }, start, 0);
    let mut shadow = Window::new(b, ShadowShort, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        let sized = if long {
            body(c) > body_avg.avg(i)
        } else {
            body(c) < body_avg.avg(i)
        };
        if sized && upper_shadow(c) < shadow.avg(i) && lower_shadow(c) < shadow.avg(i) {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// CDLLONGLINE.
pub(super) fn long_line(b: &[Bar]) -> Vec<i32> {
    line(b, true)
}

/// CDLSHORTLINE.
pub(super) fn short_line(b: &[Bar]) -> Vec<i32> {
    line(b, false)
}

/// CDLSPINNINGTOP: a short real body with both shadows longer than it. ±100
/// by colour (TA-Lib: the sign is the colour, not a direction).
pub(super) fn spinning_top(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::SpinningTop) else {
        return out;
    };
    let mut short = Window::new(b, BodyShort, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        if body(c) < short.avg(i) && upper_shadow(c) > body(c) && lower_shadow(c) > body(c) {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// CDLHIGHWAVE: a short real body with both shadows very long (more than
/// twice the body). ±100 by colour.
pub(super) fn high_wave(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::HighWave) else {
        return out;
    };
    let mut short = Window::new(b, BodyShort, start, 0);
    let mut very_long = Window::new(b, ShadowVeryLong, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        if body(c) < short.avg(i) && upper_shadow(c) > very_long.avg(i) && lower_shadow(c) > very_long.avg(i) {
            out[i] = color(c) * 100;
        }
    }
    out
}

/// CDLRICKSHAWMAN: a doji with two long shadows and its body near the middle
/// of the range. +100 (no direction).
pub(super) fn rickshaw_man(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::RickshawMan) else {
        return out;
    };
    let mut doji = Window::new(b, BodyDoji, start, 0);
    let mut long = Window::new(b, ShadowLong, start, 0);
    let mut near = Window::new(b, Near, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        let mid = c.low + (c.high - c.low) / 2.0;
        if body(c) <= doji.avg(i)
            && lower_shadow(c) > long.avg(i)
            && upper_shadow(c) > long.avg(i)
            && body_bottom(c) <= mid + near.avg(i)
            && body_top(c) >= mid - near.avg(i)
        {
            out[i] = 100;
        }
    }
    out
}

/// CDLTAKURI: a doji with a very short upper shadow and a very long lower
/// shadow. +100 (no direction).
pub(super) fn takuri(b: &[Bar]) -> Vec<i32> {
    let mut out = vec![0; b.len()];
    let Some(start) = first_bar(b, Pattern::Takuri) else {
        return out;
    };
    let mut doji = Window::new(b, BodyDoji, start, 0);
    let mut very_short = Window::new(b, ShadowVeryShort, start, 0);
    let mut very_long = Window::new(b, ShadowVeryLong, start, 0);
    for i in start..b.len() {
        let c = &b[i];
        if body(c) <= doji.avg(i) && upper_shadow(c) < very_short.avg(i) && lower_shadow(c) > very_long.avg(i) {
            out[i] = 100;
        }
    }
    out
}
