//! The coverage tools end to end (`calculate_position_size`,
//! `get_portfolio_summary`, `get_trade_stats`, `get_pnl`, `get_key_levels`,
//! `detect_patterns`): REST over the real stack with simulated terminals
//! (`POST /api/v1/tools/{name}`), each answer checked against
//! `tradeterm_core` run on the data fetched through the other tools.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tradeterm_core::indicators::AverageTrueRange;
use tradeterm_core::levels::{self, KeyLevelsConfig, KeyLevelsInput};
use tradeterm_core::patterns;
use tradeterm_core::sizing::{
    self, AccountSnapshot, ConversionRates, PortfolioInput, RiskSpec, SizingRequest, StopSpec, TickValueSource,
};
use tradeterm_core::time::{DAY_MS, parse_iso, to_iso};
use tradeterm_core::trade_stats::{self, BalanceAnchor, PnlPeriod, StatsRequest};
use tradeterm_core::trading::Quote;
use tradeterm_core::{AccountInfo, Bar, Deal, Position, Side, SymbolSpec, Tick, Timeframe};

use crate::harness::data::{num, with_ms};
use crate::harness::{Expect, Options, TestStack, WEDNESDAY_NOON, assert_close, assert_json_contains, mcp, spawn};

const HOUR: i64 = 3_600_000;

/// The tools compute with core on the same inputs: the answers agree to
/// float formatting.
const REL: f64 = 1e-9;

async fn spec(t: &TestStack, symbol: &str) -> SymbolSpec {
    serde_json::from_value(t.tool("get_symbol_spec", &json!({ "symbol": symbol })).await.data()).unwrap()
}

async fn account(t: &TestStack) -> AccountInfo {
    serde_json::from_value(t.tool("get_account_info", &json!({})).await.data()).unwrap()
}

async fn tick(t: &TestStack, symbol: &str) -> Tick {
    with_ms(
        &t.tool("get_tick", &json!({ "symbol": symbol })).await.data(),
        &["time"],
    )
}

async fn positions(t: &TestStack) -> Vec<Position> {
    let p = t.tool("get_positions", &json!({})).await.data();
    p["positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| with_ms(p, &["open_time"]))
        .collect()
}

async fn deals(t: &TestStack, from: i64, to: i64) -> Vec<Deal> {
    let h = t
        .tool("get_deal_history", &json!({ "from": to_iso(from), "to": to_iso(to) }))
        .await
        .data();
    h["deals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| with_ms(d, &["time"]))
        .collect()
}

/// Bars of `[from, to)` through `get_bars`.
async fn bars(t: &TestStack, symbol: &str, tf: &str, from: i64, to: i64) -> Vec<Bar> {
    let b = t
        .tool(
            "get_bars",
            &json!({ "symbol": symbol, "timeframe": tf, "from": to_iso(from), "to": to_iso(to) }),
        )
        .await
        .data();
    b["bars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| with_ms(x, &["time"]))
        .collect()
}

fn mid_rate(bid: &Value, ask: &Value) -> f64 {
    (num(bid) + num(ask)) / 2.0
}

// ================================================================ calculate_position_size

#[tokio::test]
async fn position_size_matches_core_on_fx_a_jpy_pair_a_metal_and_an_index() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let acc = account(&t).await;
    let snapshot = AccountSnapshot::from(&acc);
    // (symbol, entry, stop, profit rate from the tool's own quote, margin rate)
    type Rates = fn(f64) -> (f64, f64);
    let cases: [(&str, Side, f64, Value, StopSpec, Rates); 5] = [
        (
            "EURUSD",
            Side::Buy,
            1.1,
            json!({ "type": "pips", "pips": 50 }),
            StopSpec::Pips { pips: 50.0 },
            |mid| (1.0, mid),
        ),
        (
            "USDJPY",
            Side::Sell,
            150.0,
            json!({ "type": "price", "price": 150.5 }),
            StopSpec::Price { price: 150.5 },
            |mid| (1.0 / mid, 1.0),
        ),
        (
            "XAUUSD",
            Side::Sell,
            2000.0,
            json!({ "type": "points", "points": 2250 }),
            StopSpec::Points { points: 2250.0 },
            |_| (1.0, 1.0),
        ),
        (
            "US500",
            Side::Buy,
            5000.0,
            json!({ "type": "points", "points": 5000 }),
            StopSpec::Points { points: 5000.0 },
            |_| (1.0, 1.0),
        ),
        (
            "GBPUSD",
            Side::Buy,
            1.27,
            json!({ "type": "pips", "pips": 20 }),
            StopSpec::Pips { pips: 20.0 },
            |mid| (1.0, mid),
        ),
    ];
    for (symbol, side, entry, stop_json, stop, rates_of) in cases {
        let input = json!({
            "symbol": symbol, "side": side, "entry_price": entry,
            "risk": { "type": "percent_of_balance", "percent": 1.0 },
            "stop": stop_json, "commission_per_lot": 7.0,
        });
        let out = t.tool("calculate_position_size", &input).await.data();
        let spec = spec(&t, symbol).await;
        let (profit, margin) = rates_of(mid_rate(&out["bid"], &out["ask"]));
        let want = sizing::calculate_position_size(
            &spec,
            &snapshot,
            &SizingRequest {
                side,
                entry_price: entry,
                risk: RiskSpec::PercentOfBalance { percent: 1.0 },
                stop,
                commission_per_lot: Some(7.0),
                tick_value_source: TickValueSource::Reported,
            },
            &ConversionRates {
                profit_to_account: Some(profit),
                margin_to_account: Some(margin),
            },
        )
        .unwrap();
        assert_eq!(out["symbol"], symbol);
        assert_eq!(out["currency"], acc.currency);
        assert_close(num(&out["volume"]), want.volume, REL, symbol);
        assert!(want.volume > 0.0);
        assert_close(num(&out["raw_volume"]), want.raw_volume.unwrap(), REL, symbol);
        assert_close(num(&out["loss_per_lot"]), want.loss_per_lot, REL, symbol);
        assert_close(num(&out["money_at_risk"]), want.money_at_risk, REL, symbol);
        assert_close(num(&out["conversion_rate"]), want.conversion_rate, REL, symbol);
        assert_close(num(&out["margin_required"]), want.margin_required.unwrap(), REL, symbol);
        assert_close(
            num(&out["free_margin_after"]),
            want.free_margin_after.unwrap(),
            REL,
            symbol,
        );
        assert_close(num(&out["stop_price"]), want.stop_price, REL, symbol);
        assert_eq!(out["clamp"], json!(want.clamp), "{symbol}");
        assert_eq!(out["exceeds_risk_budget"], want.exceeds_risk_budget);
        // The simulator's tick values are in the profit currency: consistent.
        assert_eq!(out["tick_value_check"]["consistent"], true, "{symbol}: {out}");
        assert!(out["atr"].is_null());
        // Never more than the budget unless raised to the minimum.
        assert!(num(&out["money_at_risk"]) <= num(&out["risk_budget"]) + 1e-9, "{out}");
    }

    // Hand-checked: EURUSD, 1 % of the balance, 50 pips = 500 USD per lot.
    let out = t
        .tool(
            "calculate_position_size",
            &json!({ "symbol": "EURUSD", "side": "buy", "entry_price": 1.1,
                 "risk": { "type": "money", "amount": 100 }, "stop": { "type": "pips", "pips": 50 } }),
        )
        .await
        .data();
    assert_close(num(&out["loss_per_lot"]), 500.0, REL, "EURUSD loss per lot");
    assert_close(num(&out["volume"]), 0.2, REL, "EURUSD volume");

    // A budget below the minimum volume: raised to it and flagged.
    let out = t
        .tool(
            "calculate_position_size",
            &json!({ "symbol": "US500", "side": "buy", "risk": { "type": "money", "amount": 1 },
                 "stop": { "type": "points", "points": 5000 } }),
        )
        .await
        .data();
    assert_eq!(out["clamp"], "raised_to_minimum");
    assert_eq!(out["exceeds_risk_budget"], true);
    assert_close(num(&out["volume"]), 0.1, REL, "US500 minimum");
    // Default entry: the ask of a buy.
    assert_eq!(out["entry_price"], out["ask"]);

    // ATR stop: the ATR of the closed H1 bars the answer names.
    let out = t
        .tool(
            "calculate_position_size",
            &json!({ "symbol": "EURUSD", "side": "sell", "risk": { "type": "percent_of_equity", "percent": 0.5 },
                 "stop": { "type": "atr", "multiple": 1.5, "timeframe": "H1", "period": 14 } }),
        )
        .await
        .data();
    let atr = &out["atr"];
    let bar_time = parse_iso(atr["bar_time"].as_str().unwrap()).unwrap();
    let n = atr["bars"].as_u64().unwrap() as usize;
    assert_eq!(n, 14 * 5 + 1);
    let history = bars(&t, "EURUSD", "H1", bar_time - 60 * DAY_MS, bar_time + 1).await;
    assert_eq!(history.last().map(|b| b.time), Some(bar_time));
    let window = &history[history.len() - n..];
    let want_atr = AverageTrueRange::new(14).unwrap().over(window).unwrap();
    assert_close(num(&atr["value"]), want_atr.last().unwrap().unwrap(), REL, "ATR");
    assert_close(
        num(&out["stop_distance"]),
        1.5 * num(&atr["value"]),
        REL,
        "ATR stop distance",
    );
    // The ATR bar is closed: a later bar has opened.
    let latest = bars(&t, "EURUSD", "H1", bar_time, bar_time + DAY_MS).await;
    assert!(latest.len() >= 2 && latest[0].time == bar_time, "{latest:?}");

    // Bad input.
    let base = json!({ "symbol": "EURUSD", "side": "buy", "risk": { "type": "percent_of_balance", "percent": 1 },
                       "stop": { "type": "pips", "pips": 10 } });
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    let p = "calculate_position_size";
    t.assert_invalid(
        p,
        &with("risk", json!({ "type": "percent_of_balance", "percent": 150 })),
        "percent",
    )
    .await;
    t.assert_invalid(p, &with("risk", json!({ "type": "money", "amount": -5 })), "amount")
        .await;
    t.assert_invalid(p, &with("stop", json!({ "type": "price", "price": 9.9 })), "stop")
        .await;
    t.assert_invalid(p, &with("stop", json!({ "type": "pips", "pips": 0 })), "pips")
        .await;
    t.assert_invalid(
        p,
        &with("stop", json!({ "type": "atr", "multiple": 1, "period": 0 })),
        "stop.period",
    )
    .await;
    t.assert_invalid(
        p,
        &with("stop", json!({ "type": "atr", "multiple": -1 })),
        "stop.multiple",
    )
    .await;
    t.assert_invalid(
        p,
        &with("stop", json!({ "type": "fixed", "pips": 3 })),
        "unknown variant",
    )
    .await;
    t.assert_invalid(p, &with("entry_price", json!(-1.0)), "entry_price")
        .await;
    t.assert_invalid(p, &with("commission_per_lot", json!(-7.0)), "commission_per_lot")
        .await;
    t.assert_invalid(p, &with("tick_value_source", json!("broker")), "unknown variant")
        .await;
    t.assert_invalid(p, &with("symbol", json!("EUR/USD")), "invalid symbol")
        .await;
    t.assert_invalid(p, &with("leverage", json!(30)), "unknown field").await;
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "side": "buy" }), "missing field")
        .await;
    t.tool("calculate_position_size", &with("symbol", json!("NOPE")))
        .await
        .failure(404, "NOT_FOUND");
    t.stack.stop().await;
}

// ================================================================ get_portfolio_summary

async fn open(t: &TestStack, symbol: &str, order_type: &str, volume: f64, sl: Option<f64>) -> u64 {
    let mut order = json!({ "symbol": symbol, "order_type": order_type, "volume": volume, "dry_run": false });
    if let Some(sl) = sl {
        order["stop_loss"] = json!(sl);
    }
    let placed = t.api().place_order(&order).await.data();
    placed["trade"]["position"].as_u64().unwrap()
}

#[tokio::test]
async fn portfolio_summary_matches_core_on_the_open_positions() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    // Nothing open: an empty, bounded summary.
    let empty = t.tool("get_portfolio_summary", &json!({})).await.data();
    assert_eq!(
        (empty["positions"].as_u64(), empty["risk_bounded"].as_bool()),
        (Some(0), Some(true))
    );

    let eur = tick(&t, "EURUSD").await;
    let gold = tick(&t, "XAUUSD").await;
    open(&t, "EURUSD", "BUY", 0.1, Some(eur.bid - 0.0050)).await;
    let naked = open(&t, "USDJPY", "SELL", 0.2, None).await;
    open(&t, "XAUUSD", "BUY", 0.05, Some(gold.bid - 10.0)).await;
    open(&t, "EURUSD", "SELL", 0.03, Some(eur.ask + 0.0030)).await;

    let symbols = ["EURUSD", "USDJPY", "XAUUSD"];
    let mut specs = BTreeMap::new();
    for s in symbols {
        specs.insert(s.to_owned(), spec(&t, s).await);
    }
    // Prices move: retry until the positions, account and quotes held still around the call.
    let snapshot = || async {
        let mut ticks = Vec::new();
        for s in symbols {
            ticks.push(tick(&t, s).await);
        }
        (positions(&t).await, account(&t).await, ticks)
    };
    for _ in 0..30 {
        let before = snapshot().await;
        let out = t.tool("get_portfolio_summary", &json!({})).await.data();
        let after = snapshot().await;
        if before != after {
            continue;
        }
        let (open, acc, ticks) = before;
        let quotes: Vec<Quote<'_>> = ticks.iter().map(|k| Quote::of(&specs[&k.symbol], k)).collect();
        let rates = sizing::rates_from_quotes(specs.values(), &acc.currency, &quotes);
        let want = sizing::portfolio_summary(&PortfolioInput {
            account: &AccountSnapshot::from(&acc),
            account_margin: acc.margin,
            positions: &open,
            specs: &specs,
            rates: &rates,
        })
        .unwrap();
        let want_json = serde_json::to_value(&want).unwrap();
        // Identical up to floating-point formatting: compare every number with a tolerance.
        assert_json_contains(&out, &want_json, REL, "");
        assert_eq!(out["positions"], 4);
        assert_eq!(out["risk_bounded"], false);
        let unbounded: Vec<u64> = out["by_symbol"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["unbounded"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()))
            .collect();
        assert_eq!(unbounded, vec![naked]);
        assert!(num(&out["at_risk"]) > 0.0, "{out}");
        assert!(out["unconverted"].as_array().unwrap().is_empty(), "{out}");
        assert_eq!(out["balance"], json!(acc.balance));

        // A symbol filter keeps only its positions.
        let one = t
            .tool("get_portfolio_summary", &json!({ "symbol": "EURUSD" }))
            .await
            .data();
        assert_eq!(one["positions"], 2);
        assert_eq!(one["symbol"], "EURUSD");
        assert_eq!(one["by_symbol"].as_array().unwrap().len(), 1);
        t.assert_invalid("get_portfolio_summary", &json!({ "symbol": "" }), "invalid symbol")
            .await;
        t.assert_invalid("get_portfolio_summary", &json!({ "group": "fx" }), "unknown field")
            .await;
        t.stack.stop().await;
        return;
    }
    panic!("the prices never held still across a call");
}

// ================================================================ get_trade_stats, get_pnl

#[tokio::test]
async fn trade_stats_and_pnl_match_core_on_the_deal_history() {
    let t = spawn(Options {
        sims: 1,
        allow_trading: true,
        ..Options::default()
    })
    .await;
    // Round trips: two full closes and a partial one, long and short, two symbols.
    for (symbol, side, volume) in [("EURUSD", "BUY", 0.1), ("USDJPY", "SELL", 0.2), ("EURUSD", "SELL", 0.3)] {
        let ticket = open(&t, symbol, side, volume, None).await;
        let close = json!({ "dry_run": false, "volume": if volume > 0.25 { json!(0.1) } else { Value::Null } });
        t.api().close_position(ticket, &close).await.data();
    }
    let (from, to) = (WEDNESDAY_NOON - HOUR, WEDNESDAY_NOON + DAY_MS);
    let range = json!({ "from": to_iso(from), "to": to_iso(to) });
    let stats = t.tool("get_trade_stats", &range).await.data();
    let history = deals(&t, from, to).await;
    let acc = account(&t).await;
    let anchor = Some(BalanceAnchor::End { balance: acc.balance });
    let want = trade_stats::trade_stats(
        &history,
        &StatsRequest {
            from,
            to,
            balance: anchor,
        },
    )
    .unwrap();
    assert_eq!(want.trades, 3);
    assert_eq!(want.partially_closed, 1);
    assert!(want.deposits > 0.0, "the initial deposit is a cash flow");
    assert_eq!(stats["from"], to_iso(from));
    assert_eq!(stats["currency"], acc.currency);
    for (k, v) in [
        ("trades", json!(want.trades)),
        ("wins", json!(want.wins)),
        ("losses", json!(want.losses)),
        ("win_rate", json!(want.win_rate)),
        ("profit_factor", json!(want.profit_factor)),
        ("expectancy", json!(want.expectancy)),
        ("net_profit", json!(want.net_profit)),
        ("net_trade_profit", json!(want.net_trade_profit)),
        ("deposits", json!(want.deposits)),
        ("withdrawals", json!(want.withdrawals)),
        ("starting_balance", json!(want.starting_balance)),
        ("ending_balance", json!(want.ending_balance)),
        ("longest_win_streak", json!(want.longest_win_streak)),
        ("longest_loss_streak", json!(want.longest_loss_streak)),
        ("average_holding_seconds", json!(want.average_holding_seconds)),
        ("partially_closed", json!(want.partially_closed)),
        ("daily", json!(want.daily)),
        ("by_symbol", json!(want.by_symbol)),
        ("by_side", json!(want.by_side)),
        ("by_weekday", json!(want.by_weekday)),
        ("by_hour", json!(want.by_hour)),
    ] {
        assert_json_contains(&stats[k], &v, REL, k);
    }
    assert_close(
        num(&stats["max_drawdown"]["amount"]),
        want.max_drawdown.amount,
        REL,
        "drawdown",
    );
    assert_eq!(
        stats["max_drawdown"]["trough_time"],
        to_iso(want.max_drawdown.trough_time)
    );
    let best = want.best_trade.unwrap();
    assert_eq!(stats["best_trade"]["position"], best.position);
    assert_eq!(stats["best_trade"]["close_time"], to_iso(best.close_time));
    // The deposit is never profit: net profit is the trades' results only.
    assert_close(
        num(&stats["net_profit"]),
        want.net_trade_profit,
        REL,
        "net profit without the deposit",
    );

    // The default range (the last 30 days) holds the same trades.
    let recent = t.tool("get_trade_stats", &json!({})).await.data();
    assert_eq!(recent["trades"], 3);

    // P&L by day, week and month equals core's rows.
    for (period, p) in [
        ("day", PnlPeriod::Day),
        ("week", PnlPeriod::Week),
        ("month", PnlPeriod::Month),
    ] {
        let mut input = range.clone();
        input["period"] = json!(period);
        let out = t.tool("get_pnl", &input).await.data();
        let want = trade_stats::pnl(&history, from, to, p, anchor).unwrap();
        assert_eq!(out["period"], period);
        let rows = out["rows"].as_array().unwrap();
        assert_eq!(rows.len(), want.rows.len());
        assert!(!rows.is_empty());
        for (row, w) in rows.iter().zip(&want.rows) {
            assert_eq!(row["period"], w.period);
            assert_eq!(row["start"], to_iso(w.start));
            let mut wj = serde_json::to_value(w).unwrap();
            wj.as_object_mut().unwrap().remove("start");
            assert_json_contains(row, &wj, REL, period);
        }
        let mut total = serde_json::to_value(&want.total).unwrap();
        total.as_object_mut().unwrap().remove("start");
        assert_json_contains(&out["total"], &total, REL, "total");
        assert_close(
            num(&out["total"]["balance_end"]),
            acc.balance,
            REL,
            "balance at the end",
        );
        assert!(num(&out["total"]["deposits"]) > 0.0);
    }

    // Bad input.
    for name in ["get_trade_stats", "get_pnl"] {
        t.assert_invalid(name, &json!({ "from": "last week" }), "ISO 8601")
            .await;
        // An inverted range is empty, a long one cut to 366 days before `to`.
        let empty = t
            .tool(
                name,
                &json!({ "from": to_iso(WEDNESDAY_NOON), "to": to_iso(WEDNESDAY_NOON - 1) }),
            )
            .await
            .data();
        assert_eq!(empty["to"], to_iso(WEDNESDAY_NOON - 1), "{name}");
        let long = t
            .tool(
                name,
                &json!({ "from": to_iso(WEDNESDAY_NOON - 400 * DAY_MS), "to": to_iso(WEDNESDAY_NOON) }),
            )
            .await
            .data();
        assert_eq!(long["from"], to_iso(WEDNESDAY_NOON - 366 * DAY_MS), "{name}");
        t.assert_invalid(name, &json!({ "symbol": "EURUSD" }), "unknown field")
            .await;
    }
    t.assert_invalid("get_pnl", &json!({ "period": "year" }), "unknown variant")
        .await;
    t.stack.stop().await;
}

// ================================================================ get_key_levels

#[tokio::test]
async fn key_levels_match_core_on_the_terminal_bars() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    for (symbol, tf, count, step) in [("EURUSD", "H1", 500u32, 0.01), ("XAUUSD", "M15", 300, 10.0)] {
        let input = json!({ "symbol": symbol, "timeframe": tf, "bars": count });
        let out = t.tool("get_key_levels", &input).await.data();
        let now = parse_iso(out["time"].as_str().unwrap()).unwrap();
        let timeframe: Timeframe = serde_json::from_value(json!(tf)).unwrap();
        let spec = spec(&t, symbol).await;
        assert_eq!(out["digits"], spec.digits);
        // The bars the tool used: H1 from the start of the previous month, and
        // the closed bars of the zone timeframe before the quote's bar.
        let month = Timeframe::MN1.bar_open(now);
        let period_bars = bars(&t, symbol, "H1", Timeframe::MN1.bar_open(month - 1), now + 1).await;
        // The last bar is left out when the quote falls in its period (forming).
        let mut all = bars(&t, symbol, tf, now - 120 * DAY_MS, now + DAY_MS).await;
        if all.last().is_some_and(|b| timeframe.bar_open(now) <= b.time) {
            all.pop();
        }
        let zone_bars = &all[all.len().saturating_sub(count as usize)..];
        assert_eq!(out["zones"]["bars"], zone_bars.len());
        let want = levels::key_levels(&KeyLevelsInput {
            period_bars: &period_bars,
            zone_bars,
            price: num(&out["price"]),
            digits: spec.digits,
            now: now + 1,
            config: KeyLevelsConfig::default(),
        })
        .unwrap();
        // Pivots come from the previous (closed) day.
        let pivots = json!(want.pivots);
        assert_json_contains(&out["pivots"], &pivots, REL, "pivots");
        assert_eq!(out["pivots"].as_array().unwrap().len(), 4, "{out}");
        for (got, w) in out["periods"].as_array().unwrap().iter().zip(&want.periods) {
            let prev = w.previous.as_ref().unwrap();
            assert_eq!(got["previous"]["start"], to_iso(prev.start));
            for k in ["open", "high", "low", "close"] {
                let v = json!(prev)[k].clone();
                assert_json_contains(&got["previous"][k], &v, REL, k);
            }
            assert!(num(&got["current"]["high"]) >= num(&got["current"]["low"]));
        }
        let zones = want.zones.unwrap();
        assert_close(num(&out["zones"]["width"]), zones.width, REL, "zone width");
        assert_eq!(out["zones"]["swings"], zones.swings);
        let got = out["zones"]["zones"].as_array().unwrap();
        assert_eq!(got.len(), zones.zones.len());
        assert!(!got.is_empty());
        for (g, w) in got.iter().zip(&zones.zones) {
            assert_close(num(&g["low"]), w.low, REL, "zone low");
            assert_close(num(&g["high"]), w.high, REL, "zone high");
            assert_eq!(g["touches"], w.touches);
            assert_eq!(g["role"], json!(w.role));
            assert_eq!(g["last_touch"], to_iso(w.last_touch));
        }
        let round = json!(want.round_numbers);
        assert_json_contains(&out["round_numbers"], &round, REL, "round numbers");
        assert_close(num(&out["round_numbers"]["step"]), step, REL, "round step");
    }

    // Settings reach core: weekly pivots, percent-wide zones.
    let out = t
        .tool(
            "get_key_levels",
            &json!({ "symbol": "EURUSD", "pivot_period": "week", "zone_width": { "type": "percent", "percent": 0.1 },
                 "max_zones": 3, "round_count": 1 }),
        )
        .await
        .data();
    assert_eq!(out["pivot_period"], "week");
    assert!(out["zones"]["zones"].as_array().unwrap().len() <= 3);
    assert_close(
        num(&out["zones"]["width"]),
        num(&out["price"]) * 0.001,
        REL,
        "percent width",
    );
    let week = &out["periods"][1];
    let prev_week = &week["previous"];
    let classic = &out["pivots"][0];
    assert_close(
        num(&classic["pivot"]),
        (num(&prev_week["high"]) + num(&prev_week["low"]) + num(&prev_week["close"])) / 3.0,
        REL,
        "weekly classic pivot",
    );

    let p = "get_key_levels";
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "bars": 5 }), "bars")
        .await;
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "swing_length": 0 }), "swing_length")
        .await;
    t.assert_invalid(
        p,
        &json!({ "symbol": "EURUSD", "zone_width": { "type": "percent", "percent": 50 } }),
        "percent",
    )
    .await;
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "max_zones": 0 }), "max_zones")
        .await;
    t.assert_invalid(
        p,
        &json!({ "symbol": "EURUSD", "pivot_period": "year" }),
        "unknown variant",
    )
    .await;
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "round_step": 0 }), "round_step")
        .await;
    t.assert_invalid(p, &json!({}), "missing field").await;
    t.stack.stop().await;
}

// ================================================================ detect_patterns

#[tokio::test]
async fn detect_patterns_equals_core_on_the_closed_bars() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    for (symbol, tf, lookback) in [("EURUSD", "H1", 300u64), ("US500", "D1", 500)] {
        let out = t
            .tool(
                "detect_patterns",
                &json!({ "symbol": symbol, "timeframe": tf, "lookback": lookback }),
            )
            .await
            .data();
        assert_eq!(
            out["patterns"].as_array().unwrap().len(),
            tradeterm_core::patterns::Pattern::ALL.len()
        );
        let scanned = out["bars_scanned"].as_u64().unwrap() as usize;
        assert_eq!(scanned as u64, lookback + 20, "{symbol}");
        assert_eq!(out["lookback"], lookback);
        let last = parse_iso(out["to"].as_str().unwrap()).unwrap();
        // A forming bar left out opened after the last scanned one.
        if let Some(f) = out["forming_bar_skipped"].as_str() {
            assert!(parse_iso(f).unwrap() > last, "{out}");
        }
        let days = if tf == "D1" { 1_000 } else { 60 };
        let all = bars(&t, symbol, tf, last - days * DAY_MS, last + 1).await;
        let series = &all[all.len() - scanned..];
        assert_eq!(out["from"], to_iso(series[20].time));
        let want: Vec<_> = patterns::scan(series)
            .unwrap()
            .into_iter()
            .filter(|h| h.index >= 20)
            .collect();
        let hits = out["hits"].as_array().unwrap();
        assert_eq!(hits.len(), want.len(), "{symbol}");
        assert!(!hits.is_empty(), "{symbol}: no pattern in {lookback} bars");
        for (g, w) in hits.iter().zip(&want) {
            assert_eq!(g["time"], to_iso(w.time));
            assert_eq!(g["pattern"], json!(w.pattern));
            assert_eq!(g["talib_name"], w.pattern.talib_name());
            assert_eq!(g["value"], w.value);
            assert_eq!(g["direction"], json!(w.direction));
            assert_eq!(g["close"], json!(series[w.index].close));
        }
        let count = |d: &str| hits.iter().filter(|h| h["direction"] == d).count();
        assert_eq!(out["bullish"], count("bullish"));
        assert_eq!(out["bearish"], count("bearish"));
        assert_eq!(out["neutral"], count("neutral"));
    }

    // A pattern list (TA-Lib names accepted) keeps only those patterns.
    let out = t
        .tool(
            "detect_patterns",
            &json!({ "symbol": "EURUSD", "patterns": ["CDLDOJI", "engulfing"], "lookback": 300 }),
        )
        .await
        .data();
    assert_eq!(out["patterns"], json!(["engulfing", "doji"]));
    let hits = out["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits.iter()
            .all(|h| h["pattern"] == "engulfing" || h["pattern"] == "doji")
    );
    // Default: H1, 50 bars.
    let out = t.tool("detect_patterns", &json!({ "symbol": "EURUSD" })).await.data();
    assert_eq!(
        (out["timeframe"].as_str(), out["lookback"].as_u64()),
        (Some("H1"), Some(50))
    );

    let p = "detect_patterns";
    t.assert_invalid(
        p,
        &json!({ "symbol": "EURUSD", "patterns": ["hammerhead"] }),
        "unknown pattern",
    )
    .await;
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "patterns": [] }), "at least one")
        .await;
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "lookback": 0 }), "lookback")
        .await;
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "lookback": 6000 }), "lookback")
        .await;
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "timeframe": "H2" }), "unknown variant")
        .await;
    t.assert_invalid(p, &json!({ "symbol": "EURUSD", "penetration": 0.3 }), "unknown field")
        .await;
    t.stack.stop().await;
}

// ================================================================ MCP

#[tokio::test]
async fn the_coverage_tools_answer_the_same_on_mcp() {
    let t = spawn(Options {
        sims: 1,
        ..Options::default()
    })
    .await;
    let client = mcp::connect(&mcp::url(t.stack.mcp_port), &t.creds.terminals[0].key)
        .await
        .unwrap();
    let listed = client.list_all_tools().await.unwrap();
    for name in [
        "calculate_position_size",
        "get_portfolio_summary",
        "get_trade_stats",
        "get_pnl",
        "get_key_levels",
        "detect_patterns",
    ] {
        assert!(listed.iter().any(|x| x.name == name), "{name} not listed on MCP");
    }
    // Closed bars only: the same hits on both surfaces.
    let args = json!({ "symbol": "EURUSD", "lookback": 100 });
    let rest = t.tool("detect_patterns", &args).await.data();
    let answer = mcp::call(&client, "detect_patterns", args).await;
    assert_eq!(mcp::ok(&answer), &rest);
    // Validation errors carry the same code.
    let refused = mcp::call(
        &client,
        "calculate_position_size",
        json!({ "symbol": "EURUSD", "side": "buy", "risk": { "type": "money", "amount": 0 },
                "stop": { "type": "pips", "pips": 10 } }),
    )
    .await;
    let (code, message) = mcp::err(&refused);
    assert_eq!(code, "VALIDATION_ERROR", "{message}");
    client.cancel().await.unwrap();
    t.stack.stop().await;
}
