//! Hand-checked trade statistics and P&L.

use super::*;
use crate::time::parse_iso;

fn t(s: &str) -> UnixMs {
    parse_iso(s).unwrap()
}

#[allow(clippy::too_many_arguments, reason = "a table row of a deal history")]
fn deal(
    ticket: u64,
    position: u64,
    symbol: &str,
    side: Side,
    entry: DealEntry,
    vol: f64,
    price: f64,
    time: &str,
    profit: f64,
) -> Deal {
    Deal {
        ticket,
        order: ticket,
        position,
        symbol: symbol.into(),
        side,
        entry,
        volume: vol,
        price,
        time: t(time),
        profit,
        swap: 0.0,
        commission: 0.0,
        magic: 0,
        comment: String::new(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// A week of deals: a deposit, a partial close, a position opened before the
/// range, a break-even trade, a withdrawal, a still-open position.
fn history() -> Vec<Deal> {
    use DealEntry::{Balance, In, Out};
    use Side::{Buy, Sell};
    let mut v = vec![
        // Opened before the range (ignored itself); closed inside it.
        deal(1, 10, "EURUSD", Buy, In, 1.0, 1.1000, "2026-11-13T09:00:00Z", 0.0),
        deal(2, 0, "", Buy, Balance, 0.0, 0.0, "2026-11-16T08:00:00Z", 1_000.0),
        deal(3, 10, "EURUSD", Sell, Out, 1.0, 1.1010, "2026-11-16T09:30:00Z", 100.0),
        // Short XAUUSD, closed in two parts (Tuesday 10:00 entry).
        deal(4, 11, "XAUUSD", Sell, In, 0.2, 2000.0, "2026-11-17T10:00:00Z", 0.0),
        deal(5, 11, "XAUUSD", Buy, Out, 0.1, 2010.0, "2026-11-17T12:00:00Z", -100.0),
        deal(6, 11, "XAUUSD", Buy, Out, 0.1, 2020.0, "2026-11-17T14:00:00Z", -200.0),
        // Break-even EURUSD long (Wednesday 10:00).
        deal(7, 12, "EURUSD", Buy, In, 0.5, 1.1000, "2026-11-18T10:00:00Z", 0.0),
        deal(8, 12, "EURUSD", Sell, Out, 0.5, 1.1000, "2026-11-18T11:00:00Z", 0.0),
        // Winner with costs (Thursday 15:00), then a withdrawal.
        deal(9, 13, "EURUSD", Buy, In, 1.0, 1.1000, "2026-11-19T15:00:00Z", 0.0),
        deal(10, 13, "EURUSD", Sell, Out, 1.0, 1.1050, "2026-11-19T20:00:00Z", 500.0),
        deal(11, 0, "", Buy, Balance, 0.0, 0.0, "2026-11-20T08:00:00Z", -300.0),
        // Still open at the end.
        deal(12, 14, "EURUSD", Buy, In, 1.0, 1.1000, "2026-11-20T10:00:00Z", 0.0),
    ];
    v[8].commission = -7.0;
    v[9].commission = -7.0;
    v[9].swap = -4.0;
    v
}

fn req(anchor: Option<BalanceAnchor>) -> StatsRequest {
    StatsRequest {
        from: t("2026-11-16T00:00:00Z"),
        to: t("2026-11-21T00:00:00Z"),
        balance: anchor,
    }
}

#[test]
fn round_trips_group_partial_closes() {
    let r = round_trips(&history(), t("2026-11-16T00:00:00Z"), t("2026-11-21T00:00:00Z")).unwrap();
    assert_eq!(r.iter().map(|x| x.position).collect::<Vec<_>>(), vec![10, 11, 12, 13]);
    let gold = &r[1];
    assert_eq!(gold.side, Side::Sell);
    assert!(close(gold.volume_out, 0.2));
    assert!(close(gold.exit_price, 2015.0));
    assert_eq!(gold.net, -300.0);
    assert!(gold.fully_closed);
    assert_eq!(gold.holding_ms(), Some(4 * 3_600_000));
    // Opened before the range: side from the closing deal, no holding time.
    assert_eq!(r[0].side, Side::Buy);
    assert_eq!(r[0].open_time, None);
    assert_eq!(r[3].net, 482.0);
}

#[test]
fn stats_match_hand_computation() {
    let s = trade_stats(&history(), &req(Some(BalanceAnchor::Start { balance: 10_000.0 }))).unwrap();
    // Trades: +100, −300, 0, +482.
    assert_eq!((s.trades, s.wins, s.losses, s.breakeven), (4, 2, 1, 1));
    assert_eq!(s.win_rate, Some(0.5));
    assert!(close(s.profit_factor.unwrap(), 582.0 / 300.0));
    assert!(close(s.expectancy.unwrap(), 282.0 / 4.0));
    assert_eq!(s.average_win, Some(291.0));
    assert_eq!(s.average_loss, Some(-300.0));
    assert_eq!(s.best_trade.as_ref().unwrap().position, 13);
    assert_eq!(s.worst_trade.as_ref().unwrap().position, 11);
    // Sequence W L 0 W: streaks of 1.
    assert_eq!((s.longest_win_streak, s.longest_loss_streak), (1, 1));
    // Holding: 4 h, 1 h, 5 h over 3 trades with a known entry.
    assert_eq!(s.holding_sample, 3);
    assert!(close(s.average_holding_seconds.unwrap(), 10.0 * 3600.0 / 3.0));
    assert_eq!(s.open_positions, 1);
    // Cash flows are not profit.
    assert_eq!((s.deposits, s.withdrawals), (1_000.0, 300.0));
    assert!(close(s.net_profit, 282.0));
    assert_eq!(s.ending_balance, Some(10_000.0 + 1_000.0 + 282.0 - 300.0));
    // Drawdown: peak 11 100 after the first trade, trough 10 793 after Thursday's entry commission.
    assert!(close(s.max_drawdown.amount, 307.0));
    assert!(close(s.max_drawdown.percent.unwrap(), 307.0 / 11_100.0 * 100.0));
    assert_eq!(s.max_drawdown.trough_time, t("2026-11-19T15:00:00Z"));
    // Daily returns Mon..Fri: deposit at the start of Monday's period.
    let d = s.daily.as_ref().unwrap();
    let r = [100.0 / 11_000.0, -300.0 / 11_100.0, 0.0, 482.0 / 10_800.0, 0.0];
    assert_eq!(d.days, 5);
    let m = r.iter().sum::<f64>() / 5.0;
    assert!(close(d.mean.unwrap(), m));
    let sd = (r.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 4.0).sqrt();
    assert!(close(d.sharpe.unwrap(), m / sd * 252f64.sqrt()));
    let dd = ((-300.0f64 / 11_100.0).powi(2) / 5.0).sqrt();
    assert!(close(d.sortino.unwrap(), m / dd * 252f64.sqrt()));
    // Breakdowns with sample sizes.
    let eur = s.by_symbol.iter().find(|b| b.key == "EURUSD").unwrap();
    assert_eq!((eur.trades, eur.wins), (3, 2));
    assert_eq!(s.by_side[1].key, "short");
    assert_eq!(s.by_side[1].trades, 1);
    assert_eq!(s.by_weekday[1].key, "tuesday");
    assert_eq!(s.by_weekday[1].trades, 1);
    assert_eq!(
        s.by_weekday[0].trades, 1,
        "the trade opened before the range counts on its close day"
    );
    assert_eq!(s.by_hour[10].trades, 2);
    assert_eq!(s.by_hour[15].trades, 1);
    // The same with the anchor at the end.
    let end = trade_stats(&history(), &req(Some(BalanceAnchor::End { balance: 10_982.0 }))).unwrap();
    assert_eq!(end.starting_balance, Some(10_000.0));
    assert_eq!(end.daily, s.daily);
}

#[test]
fn stats_without_anchor_and_bad_input() {
    let s = trade_stats(&history(), &req(None)).unwrap();
    assert_eq!(s.daily, None);
    assert_eq!(s.max_drawdown.percent, None);
    assert!(close(s.max_drawdown.amount, 307.0));
    let empty = trade_stats(&[], &req(None)).unwrap();
    assert_eq!((empty.trades, empty.win_rate, empty.profit_factor), (0, None, None));
    let mut bad = history();
    bad[3].profit = f64::NAN;
    assert!(trade_stats(&bad, &req(None)).is_err());
    let backwards = StatsRequest {
        from: 10,
        to: 10,
        balance: None,
    };
    assert!(trade_stats(&history(), &backwards).is_err());
    let huge = StatsRequest {
        from: -8_000_000_000_000_000_000,
        to: 8_000_000_000_000_000_000,
        balance: Some(BalanceAnchor::Start { balance: 1.0 }),
    };
    assert!(
        trade_stats(&history(), &huge).is_err(),
        "a range this long would not end"
    );
    let min = StatsRequest {
        from: i64::MIN,
        to: 0,
        balance: None,
    };
    assert!(trade_stats(&history(), &min).is_err());
    assert!(pnl(&history(), i64::MIN, i64::MAX, PnlPeriod::Day, None).is_err());
}

#[test]
fn period_ends_fold_weekends() {
    // Friday 12:00 to Tuesday 12:00: Friday, Monday, Tuesday (cut at `to`).
    let ends = daily_period_ends(t("2026-11-20T12:00:00Z"), t("2026-11-24T12:00:00Z"));
    assert_eq!(
        ends,
        vec![
            t("2026-11-21T00:00:00Z"),
            t("2026-11-24T00:00:00Z"),
            t("2026-11-24T12:00:00Z")
        ]
    );
    // A weekend-only range is one period.
    assert_eq!(
        daily_period_ends(t("2026-11-21T00:00:00Z"), t("2026-11-22T00:00:00Z")),
        vec![t("2026-11-22T00:00:00Z")]
    );
}

#[test]
fn pnl_by_day_week_month() {
    let from = t("2026-11-16T00:00:00Z");
    let to = t("2026-11-21T00:00:00Z");
    let anchor = Some(BalanceAnchor::Start { balance: 10_000.0 });
    let days = pnl(&history(), from, to, PnlPeriod::Day, anchor).unwrap();
    assert_eq!(
        days.rows.iter().map(|r| r.period.as_str()).collect::<Vec<_>>(),
        vec!["2026-11-16", "2026-11-17", "2026-11-18", "2026-11-19", "2026-11-20"]
    );
    let mon = &days.rows[0];
    assert_eq!((mon.trading_profit, mon.deposits, mon.net), (100.0, 1_000.0, 100.0));
    assert_eq!(mon.balance_end, Some(11_100.0));
    let thu = &days.rows[3];
    assert_eq!(
        (thu.trading_profit, thu.swap, thu.commission, thu.net),
        (500.0, -4.0, -14.0, 482.0)
    );
    assert_eq!(days.total.net, 282.0);
    assert_eq!(days.total.withdrawals, 300.0);
    assert_eq!(days.total.balance_end, Some(10_982.0));
    let weeks = pnl(&history(), from, to, PnlPeriod::Week, anchor).unwrap();
    assert_eq!(weeks.rows.len(), 1);
    assert_eq!(weeks.rows[0].period, "2026-W47");
    assert_eq!(weeks.rows[0].closing_deals, 5);
    // ISO weeks across a year end: Friday 2027-01-01 is in 2026-W53.
    assert_eq!(
        period_label(PnlPeriod::Week, Timeframe::W1.bar_open(t("2027-01-01T12:00:00Z"))),
        "2026-W53"
    );
    let months = pnl(&history(), t("2026-10-01T00:00:00Z"), to, PnlPeriod::Month, None).unwrap();
    assert_eq!(
        months.rows.iter().map(|r| r.period.as_str()).collect::<Vec<_>>(),
        vec!["2026-11"]
    );
    assert_eq!(months.rows[0].balance_end, None);
}
