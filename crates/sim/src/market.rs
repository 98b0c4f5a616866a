//! All symbols' feeds, the latest quote of each and a bounded tick history.

use std::collections::VecDeque;

use serde::Serialize;
use tradeterm_core::Tick;
use tradeterm_core::trading::{Quote as RateQuote, conversion_rate};

use crate::feed::{Feed, HOUR, Quote, open_intervals};
use crate::symbols::SymbolDef;

/// The market side of the simulator.
#[derive(Debug)]
pub(crate) struct Market {
    pub feeds: Vec<Feed>,
    last: Vec<Option<Quote>>,
    prev: Vec<Option<Quote>>,
    history: Vec<VecDeque<Quote>>,
    capacity: usize,
    /// The simulator's seed (the depth of market is drawn from it).
    pub seed: u64,
}

/// What of the market goes into the state snapshot.
#[derive(Debug, Serialize)]
pub(crate) struct MarketSnapshot<'a> {
    last: &'a [Option<Quote>],
    history_len: Vec<usize>,
}

impl Market {
    /// Builds the feeds and fills each symbol's history with up to an hour of
    /// ticks ending at its latest tick at or before `now`.
    pub(crate) fn new(defs: &[SymbolDef], seed: u64, interval: i64, capacity: usize, now: i64) -> Self {
        let mut feeds: Vec<Feed> = defs
            .iter()
            .enumerate()
            .map(|(i, d)| Feed::new(d, i, seed, interval, now))
            .collect();
        let capacity = capacity.max(1);
        let mut last = Vec::with_capacity(feeds.len());
        let mut history = Vec::with_capacity(feeds.len());
        for feed in &mut feeds {
            let latest = feed.last_tick_at_or_before(now);
            let mut h = VecDeque::new();
            if let Some(q) = latest {
                for t in feed.ticks_between(q.time - HOUR, q.time) {
                    if h.len() == capacity {
                        h.pop_front();
                    }
                    h.push_back(t);
                }
            }
            last.push(latest);
            history.push(h);
        }
        let prev = vec![None; feeds.len()];
        Self {
            feeds,
            last,
            prev,
            history,
            capacity,
            seed,
        }
    }

    pub(crate) fn index(&self, symbol: &str) -> Option<usize> {
        self.feeds.iter().position(|f| f.spec.name.eq_ignore_ascii_case(symbol))
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.feeds.iter().map(|f| f.spec.name.clone()).collect()
    }

    pub(crate) fn quote(&self, idx: usize) -> Option<Quote> {
        self.last.get(idx).copied().flatten()
    }

    pub(crate) fn tick(&self, idx: usize) -> Option<Tick> {
        let q = self.quote(idx)?;
        Some(Tick {
            symbol: self.feeds[idx].spec.name.clone(),
            bid: q.bid,
            ask: q.ask,
            time: q.time,
        })
    }

    /// Every feed's ticks with time in `(a, b]`, merged in time order (ties by
    /// symbol order).
    pub(crate) fn collect(&mut self, a: i64, b: i64) -> Vec<(i64, usize, Quote)> {
        let mut all: Vec<(i64, usize, Quote)> = Vec::new();
        for (i, feed) in self.feeds.iter_mut().enumerate() {
            all.extend(feed.ticks_between(a, b).into_iter().map(|q| (q.time, i, q)));
        }
        all.sort_by_key(|e| (e.0, e.1));
        all
    }

    /// Makes `q` the symbol's latest quote.
    pub(crate) fn apply(&mut self, idx: usize, q: Quote) {
        self.prev[idx] = self.last[idx];
        self.last[idx] = Some(q);
        let h = &mut self.history[idx];
        if h.len() == self.capacity {
            h.pop_front();
        }
        h.push_back(q);
    }

    /// Whether the market traded without a break between the previous tick
    /// and the latest one (no weekend, daily break or start-up in between).
    pub(crate) fn continuous(&self, idx: usize) -> bool {
        match (self.prev[idx], self.last[idx]) {
            (Some(p), Some(l)) => {
                let spans = open_intervals(&self.feeds[idx].spec, p.time, l.time + 1);
                spans.len() == 1 && spans[0] == (p.time, l.time + 1)
            }
            _ => false,
        }
    }

    /// Ticks of the history in `[from, to)`, the most recent `limit` of them.
    pub(crate) fn ticks(&self, idx: usize, from: i64, to: i64, limit: Option<u32>) -> Vec<Tick> {
        let name = &self.feeds[idx].spec.name;
        let h = &self.history[idx];
        let lo = h.partition_point(|q| q.time < from);
        let hi = h.partition_point(|q| q.time < to);
        let lo = match limit {
            Some(l) => lo.max(hi.saturating_sub(l as usize)),
            None => lo,
        };
        h.range(lo..hi)
            .map(|q| Tick {
                symbol: name.clone(),
                bid: q.bid,
                ask: q.ask,
                time: q.time,
            })
            .collect()
    }

    /// Rate from currency `from` to `to` at the latest quotes.
    pub(crate) fn rate(&self, from: &str, to: &str) -> Option<f64> {
        let quotes: Vec<RateQuote<'_>> = self
            .feeds
            .iter()
            .zip(&self.last)
            .filter_map(|(f, q)| {
                q.map(|q| RateQuote {
                    base: &f.spec.currency_base,
                    quote: &f.spec.currency_profit,
                    bid: q.bid,
                    ask: q.ask,
                })
            })
            .collect();
        conversion_rate(from, to, &quotes)
    }

    pub(crate) fn snapshot(&self) -> MarketSnapshot<'_> {
        MarketSnapshot {
            last: &self.last,
            history_len: self.history.iter().map(VecDeque::len).collect(),
        }
    }
}
