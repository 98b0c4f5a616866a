//! The simulated depth of market (MT5 `MarketBookGet`): [`DEPTH`] offers
//! above the ask and [`DEPTH`] bids below the bid, [`SPACING_TICKS`] ticks
//! apart, with volumes drawn from (seed, symbol, quote time, level), so the
//! same quote always shows the same book. Market orders fill against it:
//! the volume of the opposite side is the liquidity a `FOK` order must fit
//! in and an `IOC` order is cut to.

use tradeterm_core::{SymbolSpec, Tick};
use tradeterm_protocol::agent::{BookLevel, BookSide};

use crate::rng::{hash, unit};

/// Levels on each side.
pub(crate) const DEPTH: usize = 5;
/// Distance between levels, in ticks.
pub(crate) const SPACING_TICKS: f64 = 5.0;

fn symbol_word(name: &str) -> u64 {
    name.bytes()
        .fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)))
}

/// Volume of level `i` (0 = best) of one side: about `(i + 1)` times a
/// twenty-fifth of the symbol's largest volume, between half and one and a
/// half times that, on the volume step.
fn volume(seed: u64, spec: &SymbolSpec, time: i64, side: u64, i: usize) -> f64 {
    let base = (spec.volume_max / 25.0).max(spec.volume_min);
    let draw = unit(hash(&[seed, symbol_word(&spec.name), time as u64, side, i as u64]));
    let raw = base * (i as f64 + 1.0) * (0.5 + draw);
    let step = if spec.volume_step > 0.0 { spec.volume_step } else { 0.01 };
    let v = ((raw / step).floor() * step * 1e8).round() / 1e8;
    v.max(spec.volume_min)
}

/// The book of one quote, ordered as MT5 lists it: offers from the highest
/// price down to the ask, then bids from the bid down.
pub(crate) fn levels(seed: u64, spec: &SymbolSpec, tick: &Tick) -> Vec<BookLevel> {
    let gap = spec.tick_size.max(spec.point) * SPACING_TICKS;
    let mut out = Vec::with_capacity(2 * DEPTH);
    for i in (0..DEPTH).rev() {
        out.push(BookLevel {
            side: BookSide::Sell,
            price: spec.normalize_price(tick.ask + gap * i as f64),
            volume: volume(seed, spec, tick.time, 1, i),
        });
    }
    for i in 0..DEPTH {
        out.push(BookLevel {
            side: BookSide::Buy,
            price: spec.normalize_price(tick.bid - gap * i as f64),
            volume: volume(seed, spec, tick.time, 2, i),
        });
    }
    out
}

/// Volume a market order of this direction can take now: the offers for a
/// buy, the bids for a sell.
pub(crate) fn liquidity(seed: u64, spec: &SymbolSpec, tick: &Tick, buy: bool) -> f64 {
    let side = if buy { BookSide::Sell } else { BookSide::Buy };
    let total: f64 = levels(seed, spec, tick)
        .iter()
        .filter(|l| l.side == side)
        .map(|l| l.volume)
        .sum();
    (total * 1e8).round() / 1e8
}
