//! What the subscribers of this process ask the server to produce on
//! demand: the bars (`bar.closed`) of the symbols and timeframes their
//! streams name.
//!
//! Watching every symbol and timeframe of every terminal would cost a bars
//! read per period for each of them; only what somebody asked for is
//! watched. A stream registers its (symbol, timeframe) pairs when it opens
//! and holds the [`BarInterest`] guard it gets; dropping the guard (the
//! stream ended) removes them. Registrations are reference counted: two
//! streams asking the same pair are one interest, which ends with the
//! second. The bar watcher (`tradeterm-tools`, `bar_watch`) asks on every
//! quote which timeframes of its symbol are wanted.
//!
//! Interests are per process (each API instance watches what its own
//! streams ask) and per license: a quote of one license's terminal never
//! matches another license's interest.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tradeterm_core::Timeframe;

/// A terminal (`Some`) or every terminal of the license (`None`), and a timeframe.
type Slot = (Option<String>, Timeframe);

/// license → symbol → (terminal, timeframe) → number of registrations.
type Map = HashMap<String, HashMap<String, HashMap<Slot, usize>>>;

/// The bar interests of this process's open streams. One per process,
/// reached through [`crate::Publisher::bar_interests`].
#[derive(Debug, Default)]
pub struct BarInterests {
    map: Mutex<Map>,
}

/// One stream's registered pairs; dropping it removes them.
#[derive(Debug)]
pub struct BarInterest {
    owner: Arc<BarInterests>,
    license: String,
    terminal: Option<String>,
    pairs: Vec<(String, Timeframe)>,
}

impl BarInterests {
    fn lock(&self) -> MutexGuard<'_, Map> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers every (symbol, timeframe) of `symbols` × `timeframes` for
    /// `license`, on `terminal` (`None`: every terminal of the license),
    /// until the returned guard is dropped.
    pub fn register(
        self: &Arc<Self>,
        license: &str,
        terminal: Option<&str>,
        symbols: &BTreeSet<String>,
        timeframes: &BTreeSet<Timeframe>,
    ) -> BarInterest {
        let pairs: Vec<(String, Timeframe)> = symbols
            .iter()
            .flat_map(|s| timeframes.iter().map(move |tf| (s.clone(), *tf)))
            .collect();
        let mut map = self.lock();
        let by_symbol = map.entry(license.to_owned()).or_default();
        for (symbol, tf) in &pairs {
            *by_symbol
                .entry(symbol.clone())
                .or_default()
                .entry((terminal.map(str::to_owned), *tf))
                .or_insert(0) += 1;
        }
        BarInterest {
            owner: self.clone(),
            license: license.to_owned(),
            terminal: terminal.map(str::to_owned),
            pairs,
        }
    }

    /// The timeframes of `symbol` wanted from `terminal` of `license` (by a
    /// stream on that terminal or on every terminal of the license).
    pub fn timeframes(&self, license: &str, terminal: &str, symbol: &str) -> BTreeSet<Timeframe> {
        let map = self.lock();
        let Some(slots) = map.get(license).and_then(|m| m.get(symbol)) else {
            return BTreeSet::new();
        };
        slots
            .keys()
            .filter(|(t, _)| t.as_deref().is_none_or(|t| t == terminal))
            .map(|(_, tf)| *tf)
            .collect()
    }

    /// Whether `timeframe` of `symbol` is wanted from `terminal` of `license`.
    pub fn wants(&self, license: &str, terminal: &str, symbol: &str, timeframe: Timeframe) -> bool {
        let map = self.lock();
        map.get(license).and_then(|m| m.get(symbol)).is_some_and(|slots| {
            slots
                .keys()
                .any(|(t, tf)| *tf == timeframe && t.as_deref().is_none_or(|t| t == terminal))
        })
    }

    /// The number of distinct (license, terminal or every terminal, symbol,
    /// timeframe) interests registered now.
    pub fn len(&self) -> usize {
        self.lock().values().flat_map(HashMap::values).map(HashMap::len).sum()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for BarInterest {
    fn drop(&mut self) {
        let mut map = self.owner.lock();
        let Some(by_symbol) = map.get_mut(&self.license) else {
            return;
        };
        for (symbol, tf) in &self.pairs {
            let Some(slots) = by_symbol.get_mut(symbol) else {
                continue;
            };
            let slot = (self.terminal.clone(), *tf);
            if let Some(n) = slots.get_mut(&slot) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    slots.remove(&slot);
                }
            }
            if slots.is_empty() {
                by_symbol.remove(symbol);
            }
        }
        if by_symbol.is_empty() {
            map.remove(&self.license);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set<T: Ord + Clone>(items: &[T]) -> BTreeSet<T> {
        items.iter().cloned().collect()
    }

    #[test]
    fn interests_are_counted_per_license_terminal_symbol_and_timeframe() {
        let interests = Arc::new(BarInterests::default());
        let eurusd = set(&["EURUSD".to_owned()]);
        let any = interests.register("lic_a", None, &eurusd, &set(&[Timeframe::M1, Timeframe::H1]));
        let one = interests.register("lic_a", Some("term_1"), &eurusd, &set(&[Timeframe::M5]));
        let again = interests.register("lic_a", None, &eurusd, &set(&[Timeframe::M1]));
        assert_eq!(interests.len(), 3);
        assert_eq!(
            interests.timeframes("lic_a", "term_1", "EURUSD"),
            set(&[Timeframe::M1, Timeframe::M5, Timeframe::H1])
        );
        assert_eq!(
            interests.timeframes("lic_a", "term_2", "EURUSD"),
            set(&[Timeframe::M1, Timeframe::H1]),
            "a stream of term_1 asks nothing of term_2"
        );
        assert!(
            interests.timeframes("lic_b", "term_1", "EURUSD").is_empty(),
            "another license"
        );
        assert!(
            interests.timeframes("lic_a", "term_1", "GBPUSD").is_empty(),
            "another symbol"
        );
        assert!(interests.wants("lic_a", "term_1", "EURUSD", Timeframe::M5));
        assert!(!interests.wants("lic_a", "term_2", "EURUSD", Timeframe::M5));

        drop(any);
        assert_eq!(
            interests.timeframes("lic_a", "term_2", "EURUSD"),
            set(&[Timeframe::M1]),
            "M1 is still asked by the second stream; H1 by nobody"
        );
        drop(again);
        drop(one);
        assert!(interests.is_empty());
        assert!(interests.lock().is_empty(), "nothing left behind");
    }
}
