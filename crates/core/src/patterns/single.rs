//! One-candle patterns: the doji family and the hammer family.
//!
//! Each function reproduces one TA-Lib `CDL*` function on a whole series
//! (one value per bar, 0 during the lookback); the conditions are TA-Lib's,
//! in the same floating-point form.

use super::candle::{
    CandleSetting::{BodyDoji, BodyShort, Near, ShadowLong, ShadowVeryShort},
    Window, body, body_bottom, body_gap_down, body_gap_up, lower_shadow, upper_shadow,
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
