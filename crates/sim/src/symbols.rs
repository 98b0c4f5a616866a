//! The simulated broker's instruments: contract specifications, trading
//! sessions and the parameters of their price models.

use tradeterm_core::account::{ExpirationMode, FillingMode};
use tradeterm_core::market::{MarginMode, SessionWindow, SwapMode, SymbolSpec};
use tradeterm_core::time::UnixMs;

/// Where a symbol's prices come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Source {
    /// Real hourly EUR/USD bars, replayed (see `feed::replay`).
    EurusdHourly,
    /// Real daily S&P 500 bars, replayed (see `feed::replay`).
    Sp500Daily,
    /// Seeded hourly random walk around `start` with hourly volatility
    /// `sigma_hour` (fraction of price) before the session multiplier.
    Model { start: f64, sigma_hour: f64 },
}

/// A symbol: its specification and its price model.
#[derive(Debug, Clone)]
pub(crate) struct SymbolDef {
    pub spec: SymbolSpec,
    /// Typical spread in points during the London session.
    pub spread_points: f64,
    pub source: Source,
}

/// Part of the trading day, by UTC hour. Drives spreads, tick frequency and
/// the volatility of modelled symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// 21:00–23:00: around the daily rollover, thin and wide.
    Rollover,
    /// 23:00–07:00: Tokyo / Sydney.
    Asia,
    /// 07:00–12:00.
    London,
    /// 12:00–16:00: London and New York both open.
    Overlap,
    /// 16:00–21:00.
    NewYork,
}

impl Phase {
    pub(crate) fn at(t: UnixMs) -> Self {
        match tradeterm_core::time::ms_of_day(t) / 3_600_000 {
            21 | 22 => Self::Rollover,
            7..=11 => Self::London,
            12..=15 => Self::Overlap,
            16..=20 => Self::NewYork,
            _ => Self::Asia,
        }
    }

    /// Spread multiplier.
    pub(crate) fn spread(self) -> f64 {
        match self {
            Self::Rollover => 3.0,
            Self::Asia => 1.5,
            Self::London => 1.0,
            Self::Overlap => 0.8,
            Self::NewYork => 1.1,
        }
    }

    /// Volatility multiplier of modelled symbols.
    pub(crate) fn volatility(self) -> f64 {
        match self {
            Self::Rollover => 0.4,
            Self::Asia => 0.6,
            Self::London => 1.1,
            Self::Overlap => 1.4,
            Self::NewYork => 1.0,
        }
    }

    /// Probability that a tick slot carries a tick.
    pub(crate) fn activity(self) -> f64 {
        match self {
            Self::Rollover => 0.3,
            Self::Asia => 0.45,
            Self::London => 0.85,
            Self::Overlap => 1.0,
            Self::NewYork => 0.8,
        }
    }
}

const DAY_MIN: u16 = 1440;

/// FX hours: Sunday 22:00 to Friday 22:00 UTC without a break.
fn fx_sessions() -> Vec<SessionWindow> {
    let mut s = vec![SessionWindow {
        day: 0,
        open: 22 * 60,
        close: DAY_MIN,
    }];
    s.extend((1..=4).map(|day| SessionWindow {
        day,
        open: 0,
        close: DAY_MIN,
    }));
    s.push(SessionWindow {
        day: 5,
        open: 0,
        close: 22 * 60,
    });
    s
}

/// Gold: FX hours with a daily break 21:00–22:00 UTC (Monday to Thursday)
/// and an earlier Friday close at 21:00.
fn metal_sessions() -> Vec<SessionWindow> {
    let mut s = vec![SessionWindow {
        day: 0,
        open: 22 * 60,
        close: DAY_MIN,
    }];
    for day in 1..=4 {
        s.push(SessionWindow {
            day,
            open: 0,
            close: 21 * 60,
        });
        s.push(SessionWindow {
            day,
            open: 22 * 60,
            close: DAY_MIN,
        });
    }
    s.push(SessionWindow {
        day: 5,
        open: 0,
        close: 21 * 60,
    });
    s
}

/// Index CFD: Monday 00:00 to Friday 21:00 UTC with a daily break
/// 21:00–22:00 UTC.
fn index_sessions() -> Vec<SessionWindow> {
    let mut s = Vec::new();
    for day in 1..=4 {
        s.push(SessionWindow {
            day,
            open: 0,
            close: 21 * 60,
        });
        s.push(SessionWindow {
            day,
            open: 22 * 60,
            close: DAY_MIN,
        });
    }
    s.push(SessionWindow {
        day: 5,
        open: 0,
        close: 21 * 60,
    });
    s
}

#[allow(clippy::too_many_arguments, reason = "a table row, read next to its call sites")]
fn fx(
    name: &str,
    description: &str,
    base: &str,
    quote: &str,
    digits: u32,
    swap_long: f64,
    swap_short: f64,
    tick_value: f64,
) -> SymbolSpec {
    let point = 10f64.powi(-(digits as i32));
    SymbolSpec {
        name: name.into(),
        description: description.into(),
        currency_base: base.into(),
        currency_profit: quote.into(),
        currency_margin: base.into(),
        digits,
        point,
        contract_size: 100_000.0,
        tick_size: point,
        tick_value,
        volume_min: 0.01,
        volume_max: 100.0,
        volume_step: 0.01,
        stops_level: 10,
        swap_long,
        swap_short,
        swap_mode: SwapMode::Points,
        swap_triple_day: 3,
        margin_mode: MarginMode::Forex,
        margin_rate: 1.0,
        sessions: fx_sessions(),
        expiration_modes: ALL_EXPIRATIONS.to_vec(),
        filling_modes: vec![FillingMode::Fok, FillingMode::Ioc],
    }
}

/// Every expiration mode (the FX symbols and gold allow them all).
const ALL_EXPIRATIONS: [ExpirationMode; 4] = [
    ExpirationMode::Gtc,
    ExpirationMode::Day,
    ExpirationMode::Specified,
    ExpirationMode::SpecifiedDay,
];

/// Every symbol, in the order `symbols` lists them.
pub(crate) fn all() -> Vec<SymbolDef> {
    vec![
        SymbolDef {
            spec: fx("EURUSD", "Euro vs US Dollar", "EUR", "USD", 5, -7.5, 2.1, 1.0),
            spread_points: 7.0,
            source: Source::EurusdHourly,
        },
        SymbolDef {
            spec: fx(
                "GBPUSD",
                "Great Britain Pound vs US Dollar",
                "GBP",
                "USD",
                5,
                -5.8,
                0.9,
                1.0,
            ),
            spread_points: 10.0,
            source: Source::Model {
                start: 1.27000,
                sigma_hour: 0.0012,
            },
        },
        SymbolDef {
            spec: fx(
                "USDJPY",
                "US Dollar vs Japanese Yen",
                "USD",
                "JPY",
                3,
                12.4,
                -25.6,
                100.0,
            ),
            spread_points: 9.0,
            source: Source::Model {
                start: 150.000,
                sigma_hour: 0.0011,
            },
        },
        SymbolDef {
            spec: SymbolSpec {
                name: "XAUUSD".into(),
                description: "Gold vs US Dollar".into(),
                currency_base: "XAU".into(),
                currency_profit: "USD".into(),
                currency_margin: "USD".into(),
                digits: 2,
                point: 0.01,
                contract_size: 100.0,
                tick_size: 0.01,
                tick_value: 1.0,
                volume_min: 0.01,
                volume_max: 50.0,
                volume_step: 0.01,
                stops_level: 50,
                swap_long: -35.6,
                swap_short: 15.2,
                swap_mode: SwapMode::Points,
                swap_triple_day: 3,
                margin_mode: MarginMode::CfdLeverage,
                margin_rate: 1.0,
                sessions: metal_sessions(),
                expiration_modes: ALL_EXPIRATIONS.to_vec(),
                filling_modes: vec![FillingMode::Fok, FillingMode::Ioc],
            },
            spread_points: 25.0,
            source: Source::Model {
                start: 2000.00,
                sigma_hour: 0.0022,
            },
        },
        SymbolDef {
            spec: SymbolSpec {
                name: "US500".into(),
                description: "US 500 index CFD (replayed S&P 500 daily data)".into(),
                currency_base: "US500".into(),
                currency_profit: "USD".into(),
                currency_margin: "USD".into(),
                digits: 2,
                point: 0.01,
                contract_size: 1.0,
                tick_size: 0.01,
                tick_value: 0.01,
                volume_min: 0.1,
                volume_max: 500.0,
                volume_step: 0.1,
                stops_level: 100,
                swap_long: -52.0,
                swap_short: 18.0,
                swap_mode: SwapMode::Points,
                swap_triple_day: 5,
                margin_mode: MarginMode::Cfd,
                margin_rate: 0.05,
                sessions: index_sessions(),
                // Like many index CFDs: no SPECIFIED_DAY, fill or kill only.
                expiration_modes: vec![ExpirationMode::Gtc, ExpirationMode::Day, ExpirationMode::Specified],
                filling_modes: vec![FillingMode::Fok],
            },
            spread_points: 50.0,
            source: Source::Sp500Daily,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use tradeterm_core::time::parse_iso;

    #[test]
    fn sessions() {
        let defs = all();
        let eur = &defs[0].spec;
        let us500 = &defs[4].spec;
        let sun_2130 = parse_iso("2026-11-22T21:30:00Z").unwrap();
        let sun_2230 = parse_iso("2026-11-22T22:30:00Z").unwrap();
        assert!(!eur.is_open(sun_2130));
        assert!(eur.is_open(sun_2230));
        assert!(!us500.is_open(sun_2230));
        let tue_2130 = parse_iso("2026-11-17T21:30:00Z").unwrap();
        assert!(eur.is_open(tue_2130));
        assert!(!us500.is_open(tue_2130), "daily break");
        assert!(!defs[3].spec.is_open(tue_2130), "gold daily break");
        assert_eq!(Phase::at(parse_iso("2026-11-17T13:00:00Z").unwrap()), Phase::Overlap);
        assert_eq!(Phase::at(parse_iso("2026-11-17T02:00:00Z").unwrap()), Phase::Asia);
        for d in &defs {
            assert!(
                (d.spec.point - 10f64.powi(-(d.spec.digits as i32))).abs() < 1e-15,
                "{}",
                d.spec.name
            );
        }
    }
}
