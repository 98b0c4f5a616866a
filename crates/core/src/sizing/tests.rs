//! Hand-computed sizing cases on an FX major, a JPY cross, a metal and an
//! index CFD (USD accounts), and a portfolio summary.

use super::*;
use crate::market::{MarginMode, SwapMode};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[allow(clippy::too_many_arguments, reason = "a table row of a contract specification")]
fn spec(
    name: &str,
    base: &str,
    profit: &str,
    margin: &str,
    digits: u32,
    contract_size: f64,
    tick_value: f64,
    (vmin, vmax, vstep): (f64, f64, f64),
    margin_mode: MarginMode,
    margin_rate: f64,
) -> SymbolSpec {
    let point = 10f64.powi(-(digits as i32));
    SymbolSpec {
        name: name.into(),
        description: String::new(),
        currency_base: base.into(),
        currency_profit: profit.into(),
        currency_margin: margin.into(),
        digits,
        point,
        contract_size,
        tick_size: point,
        tick_value,
        volume_min: vmin,
        volume_max: vmax,
        volume_step: vstep,
        stops_level: 0,
        swap_long: 0.0,
        swap_short: 0.0,
        swap_mode: SwapMode::Disabled,
        swap_triple_day: 3,
        margin_mode,
        margin_rate,
        sessions: vec![],
        expiration_modes: Vec::new(),
        filling_modes: Vec::new(),
    }
}

fn eurusd() -> SymbolSpec {
    spec(
        "EURUSD",
        "EUR",
        "USD",
        "EUR",
        5,
        100_000.0,
        1.0,
        (0.01, 100.0, 0.01),
        MarginMode::Forex,
        1.0,
    )
}

fn eurjpy(tick_value: f64) -> SymbolSpec {
    spec(
        "EURJPY",
        "EUR",
        "JPY",
        "EUR",
        3,
        100_000.0,
        tick_value,
        (0.01, 100.0, 0.01),
        MarginMode::Forex,
        1.0,
    )
}

fn xauusd() -> SymbolSpec {
    spec(
        "XAUUSD",
        "XAU",
        "USD",
        "USD",
        2,
        100.0,
        1.0,
        (0.01, 50.0, 0.01),
        MarginMode::CfdLeverage,
        1.0,
    )
}

fn us500() -> SymbolSpec {
    spec(
        "US500",
        "US500",
        "USD",
        "USD",
        2,
        1.0,
        0.01,
        (0.1, 500.0, 0.1),
        MarginMode::Cfd,
        0.05,
    )
}

fn usdjpy() -> SymbolSpec {
    spec(
        "USDJPY",
        "USD",
        "JPY",
        "USD",
        3,
        100_000.0,
        100.0,
        (0.01, 100.0, 0.01),
        MarginMode::Forex,
        1.0,
    )
}

fn account(balance: f64, equity: f64) -> AccountSnapshot {
    AccountSnapshot {
        currency: "USD".into(),
        balance,
        equity,
        free_margin: equity,
        leverage: 100,
    }
}

fn req(side: Side, entry: f64, risk: RiskSpec, stop: StopSpec) -> SizingRequest {
    SizingRequest {
        side,
        entry_price: entry,
        risk,
        stop,
        commission_per_lot: None,
        tick_value_source: TickValueSource::Reported,
    }
}

fn rates(profit: f64, margin: f64) -> ConversionRates {
    ConversionRates {
        profit_to_account: Some(profit),
        margin_to_account: Some(margin),
    }
}

#[test]
fn eurusd_one_percent_fifty_pips() {
    // 1 % of 10 000 = 100 USD; 50 pips = 500 points × 1 USD = 500 USD per lot → 0.20 lots.
    let r = req(
        Side::Buy,
        1.10000,
        RiskSpec::PercentOfBalance { percent: 1.0 },
        StopSpec::Pips { pips: 50.0 },
    );
    let out = calculate_position_size(&eurusd(), &account(10_000.0, 10_000.0), &r, &rates(1.0, 1.1)).unwrap();
    assert_eq!(out.volume, 0.2);
    assert_eq!(out.clamp, VolumeClamp::None);
    assert!(close(out.loss_per_lot, 500.0), "{}", out.loss_per_lot);
    assert!(close(out.money_at_risk, 100.0));
    assert!(close(out.stop_price, 1.095));
    assert!(close(out.stop_points, 500.0));
    // Forex margin: 0.2 × 100 000 / 100 = 200 EUR × 1.1 = 220 USD.
    assert!(close(out.margin_required.unwrap(), 220.0));
    assert!(close(out.free_margin_after.unwrap(), 9_780.0));
    assert!(out.tick_value_check.consistent);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[test]
fn eurusd_commission_and_equity_risk() {
    // 1 % of equity 9 000 = 90; loss per lot 500 + 7 commission = 507 → 0.1775 → 0.17 lots.
    let mut r = req(
        Side::Sell,
        1.10000,
        RiskSpec::PercentOfEquity { percent: 1.0 },
        StopSpec::Price { price: 1.10500 },
    );
    r.commission_per_lot = Some(7.0);
    let out = calculate_position_size(&eurusd(), &account(10_000.0, 9_000.0), &r, &rates(1.0, 1.1)).unwrap();
    assert!(close(out.risk_budget, 90.0));
    assert!(close(out.loss_per_lot, 507.0));
    assert_eq!(out.volume, 0.17);
    assert!(close(out.money_at_risk, 0.17 * 507.0));
    assert!(!out.exceeds_risk_budget);
}

#[test]
fn eurjpy_cross_converts_yen() {
    // Buy at 160.000, stop 159.500: 500 points × 100 JPY = 50 000 JPY per lot = 333.33 USD at USDJPY 150.
    // 1 % of 10 000 = 100 USD → 0.30 lots.
    let r = req(
        Side::Buy,
        160.0,
        RiskSpec::PercentOfBalance { percent: 1.0 },
        StopSpec::Price { price: 159.5 },
    );
    let out = calculate_position_size(
        &eurjpy(100.0),
        &account(10_000.0, 10_000.0),
        &r,
        &rates(1.0 / 150.0, 1.08),
    )
    .unwrap();
    assert!(close(out.loss_per_lot, 50_000.0 / 150.0), "{}", out.loss_per_lot);
    assert_eq!(out.volume, 0.3);
    assert!(close(out.money_at_risk, 100.0));
    // Margin: 0.3 × 100 000 / 100 = 300 EUR × 1.08 = 324 USD.
    assert!(close(out.margin_required.unwrap(), 324.0));
    assert!(out.tick_value_check.consistent);
    assert!(close(out.tick_value_account, 100.0 / 150.0));
}

#[test]
fn eurjpy_tick_value_in_account_currency_is_flagged() {
    // A broker reporting the tick value already in USD (MetaTrader 5's way): 0.6667.
    let spec = eurjpy(100.0 / 150.0);
    let r = req(
        Side::Buy,
        160.0,
        RiskSpec::PercentOfBalance { percent: 1.0 },
        StopSpec::Points { points: 500.0 },
    );
    let rates = rates(1.0 / 150.0, 1.08);
    let out = calculate_position_size(&spec, &account(10_000.0, 10_000.0), &r, &rates).unwrap();
    assert!(!out.tick_value_check.consistent);
    assert!(out.tick_value_check.matches_account_currency);
    assert!(
        out.warnings.iter().any(|w| w.contains("converts twice")),
        "{:?}",
        out.warnings
    );
    // Sizing with the reported value overstates the volume 150-fold: 45 lots instead of 0.30.
    assert_eq!(out.volume, 45.0);
    // The contract value gives the right answer.
    let mut r2 = r;
    r2.tick_value_source = TickValueSource::Contract;
    let out2 = calculate_position_size(&spec, &account(10_000.0, 10_000.0), &r2, &rates).unwrap();
    assert_eq!(out2.volume, 0.3);
    assert_eq!(out2.tick_value_check.used, TickValueSource::Contract);
}

#[test]
fn xauusd_atr_stop() {
    // ATR 15 × 1.5 = 22.5 USD distance = 2 250 ticks × 1 USD → 2 250 USD per lot.
    // 500 USD budget → 0.2222 → 0.22 lots, 495 USD at risk.
    let r = req(
        Side::Sell,
        2000.0,
        RiskSpec::Money { amount: 500.0 },
        StopSpec::Atr {
            atr: 15.0,
            multiple: 1.5,
        },
    );
    let out = calculate_position_size(&xauusd(), &account(50_000.0, 50_000.0), &r, &rates(1.0, 1.0)).unwrap();
    assert!(close(out.loss_per_lot, 2250.0));
    assert_eq!(out.volume, 0.22);
    assert!(close(out.money_at_risk, 495.0));
    assert!(close(out.stop_price, 2022.5));
    // CFD with leverage: 0.22 × 100 × 2000 / 100 = 440 USD.
    assert!(close(out.margin_required.unwrap(), 440.0));
}

#[test]
fn index_cfd_and_minimum_clamp() {
    // US500: contract 1, tick 0.01 worth 0.01 USD; stop 5 000 points = 50 index points → 50 USD per lot.
    // 0.5 % of equity 20 000 = 100 USD → 2.0 lots; margin 2 × 1 × 5000 × 0.05 = 500 USD.
    let r = req(
        Side::Buy,
        5000.0,
        RiskSpec::PercentOfEquity { percent: 0.5 },
        StopSpec::Points { points: 5000.0 },
    );
    let out = calculate_position_size(&us500(), &account(20_000.0, 20_000.0), &r, &rates(1.0, 1.0)).unwrap();
    assert!(close(out.loss_per_lot, 50.0));
    assert_eq!(out.volume, 2.0);
    assert!(close(out.margin_required.unwrap(), 500.0));
    // 1 USD budget: 0.02 lots rounds down to 0, raised to the 0.1 minimum (5 USD at risk).
    let r = req(
        Side::Buy,
        5000.0,
        RiskSpec::Money { amount: 1.0 },
        StopSpec::Points { points: 5000.0 },
    );
    let out = calculate_position_size(&us500(), &account(20_000.0, 20_000.0), &r, &rates(1.0, 1.0)).unwrap();
    assert_eq!(out.clamp, VolumeClamp::RaisedToMinimum);
    assert_eq!(out.volume, 0.1);
    assert!(close(out.money_at_risk, 5.0));
    assert!(out.exceeds_risk_budget);
    assert!(out.warnings.iter().any(|w| w.contains("minimum")));
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let acc = account(10_000.0, 10_000.0);
    let ok = req(
        Side::Buy,
        1.1,
        RiskSpec::PercentOfBalance { percent: 1.0 },
        StopSpec::Pips { pips: 10.0 },
    );
    let mut zero_tick = eurusd();
    zero_tick.tick_size = 0.0;
    assert!(matches!(
        calculate_position_size(&zero_tick, &acc, &ok, &rates(1.0, 1.1)),
        Err(SizingError::Invalid { field, .. }) if field == "symbol.tick_size"
    ));
    let no_rate = ConversionRates {
        profit_to_account: None,
        margin_to_account: None,
    };
    assert!(matches!(
        calculate_position_size(&eurjpy(100.0), &acc, &ok, &no_rate),
        Err(SizingError::NoConversion { from, to }) if from == "JPY" && to == "USD"
    ));
    let mut nan = ok;
    nan.entry_price = f64::NAN;
    assert!(calculate_position_size(&eurusd(), &acc, &nan, &rates(1.0, 1.1)).is_err());
    let wrong_side = req(
        Side::Buy,
        1.1,
        RiskSpec::Money { amount: 10.0 },
        StopSpec::Price { price: 1.2 },
    );
    assert!(calculate_position_size(&eurusd(), &acc, &wrong_side, &rates(1.0, 1.1)).is_err());
    let big = req(
        Side::Buy,
        1.1,
        RiskSpec::PercentOfBalance { percent: 150.0 },
        StopSpec::Pips { pips: 10.0 },
    );
    assert!(calculate_position_size(&eurusd(), &acc, &big, &rates(1.0, 1.1)).is_err());
    // Margin without a rate: the size is still computed, the margin is not.
    let half = ConversionRates {
        profit_to_account: Some(1.0),
        margin_to_account: None,
    };
    let out = calculate_position_size(&eurusd(), &acc, &ok, &half).unwrap();
    assert_eq!(out.margin_required, None);
    assert!(out.warnings.iter().any(|w| w.contains("margin not computed")));
    // 10 M USD on a 1-pip stop: 1 000 lots, lowered to the 100-lot maximum.
    let huge = req(
        Side::Buy,
        1.1,
        RiskSpec::Money { amount: 1e7 },
        StopSpec::Pips { pips: 1.0 },
    );
    let out = calculate_position_size(&eurusd(), &acc, &huge, &rates(1.0, 1.1)).unwrap();
    assert_eq!((out.clamp, out.volume), (VolumeClamp::LoweredToMaximum, 100.0));
    assert!(close(out.money_at_risk, 1_000.0));
    assert!(out.free_margin_after.unwrap() < 0.0);
    assert!(out.warnings.iter().any(|w| w.contains("not enough free margin")));
}

#[test]
fn floor_to_step_handles_binary_noise() {
    assert_eq!(floor_to_step(0.3 / 1.0, 0.01), 0.3);
    assert_eq!(floor_to_step(0.299_999_999_999_999_96, 0.01), 0.3);
    assert_eq!(floor_to_step(0.2999, 0.01), 0.29);
    assert_eq!(floor_to_step(2.05, 0.1), 2.0);
    assert_eq!(pip_size(&eurusd()), 0.0001);
    assert_eq!(pip_size(&xauusd()), 0.01);
}

fn position(ticket: u64, symbol: &str, side: Side, volume: f64, open: f64, current: f64, sl: Option<f64>) -> Position {
    Position {
        ticket,
        symbol: symbol.into(),
        side,
        volume,
        open_price: open,
        open_time: 0,
        stop_loss: sl,
        take_profit: None,
        current_price: current,
        swap: -1.0,
        commission: -2.0,
        profit: 10.0,
        magic: 0,
        comment: String::new(),
    }
}

#[test]
fn portfolio_groups_and_risk() {
    let acc = account(100_000.0, 100_000.0);
    let positions = vec![
        position(1, "EURUSD", Side::Buy, 1.0, 1.10, 1.11, Some(1.105)),
        position(2, "EURUSD", Side::Sell, 0.5, 1.12, 1.11, None),
        position(3, "USDJPY", Side::Sell, 1.0, 150.5, 150.0, Some(151.0)),
        position(4, "GER40", Side::Buy, 1.0, 18_000.0, 18_010.0, Some(0.0)),
    ];
    let mut specs = BTreeMap::new();
    specs.insert("EURUSD".to_string(), eurusd());
    specs.insert("USDJPY".to_string(), usdjpy());
    let mut rates = BTreeMap::new();
    rates.insert("EUR".to_string(), 1.11);
    rates.insert("JPY".to_string(), 1.0 / 150.0);
    let input = PortfolioInput {
        account: &acc,
        account_margin: 3_000.0,
        positions: &positions,
        specs: &specs,
        rates: &rates,
    };
    let s = portfolio_summary(&input).unwrap();
    assert_eq!(s.positions, 4);
    assert_eq!(s.unknown_symbols, vec!["GER40".to_string()]);
    let eur = s.by_symbol.iter().find(|x| x.symbol == "EURUSD").unwrap();
    assert!(close(eur.net_lots, 0.5));
    assert!(close(eur.net_units.unwrap(), 50_000.0));
    assert!(close(eur.gross_notional.unwrap(), 166_500.0));
    assert!(close(eur.net_notional.unwrap(), 55_500.0));
    assert!(close(eur.at_risk, 500.0), "{}", eur.at_risk);
    assert_eq!(eur.unbounded, vec![2]);
    // Forex margin: 1.5 lots × 100 000 / 100 × 1.11.
    assert!(close(eur.margin.unwrap(), 1_665.0));
    // Short USDJPY from 150 to a 151 stop: 1 000 JPY per pip-lot… 100 000 × 1 / 150 = 666.67 USD.
    let jpy_risk = s.position_risk.iter().find(|r| r.ticket == 3).unwrap();
    assert!(close(jpy_risk.at_risk.unwrap(), 100_000.0 / 150.0));
    // From the open 150.5 to the stop 151: −0.5 × 100 000 / 150 − 3 costs.
    assert!(close(jpy_risk.pnl_at_stop.unwrap(), -50_000.0 / 150.0 - 3.0));
    assert!(close(s.at_risk, 500.0 + 100_000.0 / 150.0));
    assert!(!s.risk_bounded);
    // A 0.0 stop is "none": GER40 is unbounded too.
    let ger = s.by_symbol.iter().find(|x| x.symbol == "GER40").unwrap();
    assert_eq!(ger.unbounded, vec![4]);
    assert_eq!(ger.gross_notional, None);
    // Currencies: EUR +50 000; USD −55 500 (EURUSD) − 100 000 (short USDJPY); JPY +15 000 000.
    let c = |n: &str| s.by_currency.iter().find(|x| x.currency == n).unwrap();
    assert!(close(c("EUR").net_units, 50_000.0));
    assert!(close(c("EUR").net_lots_as_base, 0.5));
    assert!(close(c("USD").net_units, -155_500.0));
    assert!(close(c("USD").net_lots_as_base, -1.0));
    assert!(close(c("USD").net_lots_as_quote, -0.5));
    assert!(close(c("JPY").net_units, 15_000_000.0));
    assert!(close(c("JPY").net_account.unwrap(), 100_000.0));
    assert!(close(s.net_exposure, 55_500.0 + 100_000.0));
    assert!(close(s.gross_exposure, 166_500.0 + 100_000.0));
    assert!(close(s.floating_profit, 40.0));
    assert!(close(s.swap, -4.0));
    assert_eq!(s.margin_level, Some(100_000.0 / 3_000.0 * 100.0));
    let risk = s.open_risk();
    assert_eq!(risk.unbounded_positions, 2);
    assert!(close(risk.amount, s.at_risk));
    let mut bad = positions.clone();
    bad[0].volume = f64::NAN;
    let input = PortfolioInput {
        positions: &bad,
        ..input
    };
    assert!(portfolio_summary(&input).is_err());
}

#[test]
fn request_reads_from_tool_json_and_has_a_schema() {
    let r: SizingRequest = serde_json::from_value(serde_json::json!({
        "side": "sell",
        "entry_price": 1.1,
        "risk": {"type": "money", "amount": 50},
        "stop": {"type": "atr", "atr": 0.0012, "multiple": 1.5}
    }))
    .unwrap();
    assert_eq!(r.tick_value_source, TickValueSource::Reported);
    assert_eq!(r.commission_per_lot, None);
    assert!(matches!(r.stop, StopSpec::Atr { multiple, .. } if multiple == 1.5));
    let schema = serde_json::to_value(schemars::schema_for!(SizingRequest)).unwrap();
    assert!(schema.to_string().contains("percent_of_balance"));
    let bad = serde_json::from_value::<SizingRequest>(serde_json::json!({
        "side": "buy", "entry_price": 1.1, "risk": {"type": "all_in"}, "stop": {"type": "pips", "pips": 5}
    }));
    assert!(bad.is_err());
}

#[test]
fn rates_from_terminal_quotes() {
    use crate::trading::Quote;
    let quotes = [
        Quote {
            base: "EUR",
            quote: "USD",
            bid: 1.0799,
            ask: 1.0801,
        },
        Quote {
            base: "USD",
            quote: "JPY",
            bid: 149.99,
            ask: 150.01,
        },
    ];
    let r = ConversionRates::from_quotes(&eurjpy(100.0), "USD", &quotes);
    assert!(close(r.profit_to_account.unwrap(), 1.0 / 150.0));
    assert!(close(r.margin_to_account.unwrap(), 1.08));
    // No quote links CHF: no rate, never a guess.
    let chf = spec(
        "USDCHF",
        "USD",
        "CHF",
        "USD",
        5,
        100_000.0,
        1.0,
        (0.01, 100.0, 0.01),
        MarginMode::Forex,
        1.0,
    );
    assert_eq!(
        ConversionRates::from_quotes(&chf, "USD", &quotes).profit_to_account,
        None
    );
    let map = rates_from_quotes([&eurusd(), &usdjpy(), &chf], "USD", &quotes);
    assert_eq!(map.keys().cloned().collect::<Vec<_>>(), vec!["EUR", "JPY", "USD"]);
}

#[test]
fn a_buy_stop_distance_past_zero_is_sized_with_a_warning() {
    // 1.1 of entry, a 20 000-pip (2.0) stop: the stop would be at −0.9.
    // 1 % of 10 000 = 100 USD; 2.0 = 200 000 points × 1 USD = 200 000 USD per lot → 0.0005, raised to 0.01.
    let r = req(
        Side::Buy,
        1.10000,
        RiskSpec::PercentOfBalance { percent: 1.0 },
        StopSpec::Pips { pips: 20_000.0 },
    );
    let out = calculate_position_size(&eurusd(), &account(10_000.0, 10_000.0), &r, &rates(1.0, 1.1)).unwrap();
    assert!(close(out.stop_distance, 2.0) && close(out.stop_price, -0.9), "{out:?}");
    assert!(close(out.loss_per_lot, 200_000.0), "{}", out.loss_per_lot);
    assert!(close(out.raw_volume.unwrap(), 0.0005));
    assert_eq!((out.volume, out.clamp), (0.01, VolumeClamp::RaisedToMinimum));
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("at or below zero") && w.contains("-0.9")),
        "{:?}",
        out.warnings
    );
    // The same distance on a sell puts the stop above the entry: no warning of it.
    let r = req(
        Side::Sell,
        1.1,
        RiskSpec::PercentOfBalance { percent: 1.0 },
        StopSpec::Pips { pips: 20_000.0 },
    );
    let out = calculate_position_size(&eurusd(), &account(10_000.0, 10_000.0), &r, &rates(1.0, 1.1)).unwrap();
    assert!(
        close(out.stop_price, 3.1) && !out.warnings.iter().any(|w| w.contains("zero")),
        "{out:?}"
    );
}

#[test]
fn a_stop_too_close_to_lose_anything_is_sized_at_the_maximum() {
    // 1e-310 points of EURUSD: the loss per lot is (about) 0, any volume fits the budget.
    let r = req(
        Side::Buy,
        1.10000,
        RiskSpec::PercentOfBalance { percent: 1.0 },
        StopSpec::Points { points: 1e-310 },
    );
    let spec = eurusd();
    let out = calculate_position_size(&spec, &account(10_000.0, 10_000.0), &r, &rates(1.0, 1.1)).unwrap();
    assert_eq!(out.raw_volume, None, "{out:?}");
    assert_eq!(
        (out.volume, out.clamp),
        (spec.volume_max, VolumeClamp::LoweredToMaximum)
    );
    assert!(out.money_at_risk.is_finite() && out.loss_per_lot.is_finite(), "{out:?}");
    assert!(
        out.warnings.iter().any(|w| w.contains("any volume fits the budget")),
        "{:?}",
        out.warnings
    );
    assert!(serde_json::to_value(&out).unwrap()["raw_volume"].is_null());
}
