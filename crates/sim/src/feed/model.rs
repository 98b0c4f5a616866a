//! Seeded hourly bars for symbols without embedded data (GBPUSD, USDJPY,
//! XAUUSD): a mean-reverting geometric random walk whose volatility follows
//! the trading session (quiet in Asia, busiest in the London/New York
//! overlap). History starts a year before start-up; later hours are generated
//! on demand, each from a seed of its own, so the series does not depend on
//! when it is asked for.

use tradeterm_core::SymbolSpec;

use super::{BaseBar, HOUR};
use crate::rng::{Rng, hash};
use crate::symbols::Phase;

/// Hours of history generated before start-up.
const HISTORY_HOURS: i64 = 366 * 24;
/// Sub-steps of the walk inside an hour.
const STEPS: usize = 12;
/// Pull back to the starting price per hour (half-life about two weeks).
const REVERSION: f64 = 0.002;

#[derive(Debug, Clone, Copy)]
struct Ohlc {
    open: f64,
    high: f64,
    low: f64,
    close: f64,
}

/// Generated hourly bars (`None` for hours when the market is closed).
#[derive(Debug)]
pub(crate) struct HourlyModel {
    spec: SymbolSpec,
    h0: i64,
    bars: Vec<Option<Ohlc>>,
    last_close: f64,
    anchor_price: f64,
    sigma_hour: f64,
    key: u64,
}

impl HourlyModel {
    pub(crate) fn new(spec: &SymbolSpec, start: f64, sigma_hour: f64, anchor: i64, key: u64) -> Self {
        Self {
            spec: spec.clone(),
            h0: anchor.div_euclid(HOUR) - HISTORY_HOURS,
            bars: Vec::new(),
            last_close: start,
            anchor_price: start,
            sigma_hour,
            key,
        }
    }

    fn ensure(&mut self, h: i64) {
        while self.h0 + (self.bars.len() as i64) <= h {
            let hour = self.h0 + self.bars.len() as i64;
            let bar = self.generate(hour);
            self.bars.push(bar);
        }
    }

    fn generate(&mut self, hour: i64) -> Option<Ohlc> {
        let t = hour * HOUR;
        if !self.spec.is_open(t) {
            return None;
        }
        let mut rng = Rng::new(hash(&[self.key, hour as u64]));
        let sigma = self.sigma_hour * Phase::at(t).volatility() / (STEPS as f64).sqrt();
        let home = self.anchor_price.ln();
        let open = self.last_close;
        let (mut hi, mut lo, mut x) = (open, open, open.ln());
        for _ in 0..STEPS {
            x += -REVERSION / STEPS as f64 * (x - home) + sigma * rng.normal();
            let p = x.exp();
            hi = hi.max(p);
            lo = lo.min(p);
        }
        let close = self.spec.normalize_price(x.exp());
        let high = self.spec.normalize_price(hi * (1.0 + 0.3 * sigma * rng.normal().abs()));
        let low = self.spec.normalize_price(lo * (1.0 - 0.3 * sigma * rng.normal().abs()));
        let open = self.spec.normalize_price(open);
        self.last_close = close;
        Some(Ohlc {
            open,
            high: high.max(open).max(close),
            low: low.min(open).min(close),
            close,
        })
    }

    fn make(&self, hour: i64, o: Ohlc) -> BaseBar {
        BaseBar {
            start: hour * HOUR,
            end: (hour + 1) * HOUR,
            open: o.open,
            high: o.high,
            low: o.low,
            close: o.close,
            key: hash(&[self.key, hour as u64, 1]),
        }
    }

    fn get(&mut self, hour: i64) -> Option<BaseBar> {
        if hour < self.h0 {
            return None;
        }
        self.ensure(hour);
        let o = (*self.bars.get((hour - self.h0) as usize)?)?;
        Some(self.make(hour, o))
    }

    pub(crate) fn history_start(&self) -> i64 {
        self.h0 * HOUR
    }

    pub(crate) fn bar_at(&mut self, t: i64) -> Option<BaseBar> {
        self.get(t.div_euclid(HOUR))
    }

    pub(crate) fn prev_close(&mut self, t: i64) -> Option<f64> {
        let last = t.div_euclid(HOUR) - 1;
        let h0 = self.h0;
        (last - 24 * 10..=last)
            .rev()
            .take_while(|&h| h >= h0)
            .find_map(|h| self.get(h))
            .map(|b| b.close)
    }

    pub(crate) fn bars_between(&mut self, a: i64, b: i64) -> Vec<BaseBar> {
        if a >= b {
            return Vec::new();
        }
        (a.div_euclid(HOUR).max(self.h0)..=(b - 1).div_euclid(HOUR))
            .filter_map(|h| self.get(h))
            .collect()
    }
}
