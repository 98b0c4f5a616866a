//! One protocol command → one answer. Read commands and `order_check` always
//! work; trade commands need both trading switches on.

use tradeterm_protocol::agent::{Command, CommandResult, ErrorBody, Permissions, Platform, codes};

use crate::feed::MAX_BARS;
use crate::{SimSettings, State, calendar};

fn invalid(message: impl Into<String>) -> ErrorBody {
    ErrorBody::new(codes::INVALID_ARGUMENT, message)
}

fn unknown_symbol(symbol: &str) -> ErrorBody {
    ErrorBody::new(
        codes::NOT_FOUND,
        format!("unknown symbol `{symbol}`; the `symbols` command lists them"),
    )
}

fn trading_disabled(p: Permissions) -> ErrorBody {
    let why = match (p.allow_trading, p.automated_trading) {
        (false, false) => "the agent's allow-trading input and the terminal's automated-trading switch are both off",
        (false, true) => "the agent's allow-trading input is off",
        _ => "the terminal's automated-trading (Algo Trading) switch is off",
    };
    ErrorBody::new(
        codes::TRADING_DISABLED,
        format!("live trading is disabled on this terminal: {why}"),
    )
}

fn check_range(from: i64, to: i64) -> Result<(), ErrorBody> {
    if from > to {
        Err(invalid(format!("`from` ({from}) is after `to` ({to})")))
    } else {
        Ok(())
    }
}

pub(crate) fn execute(
    st: &mut State,
    settings: &SimSettings,
    command: Command,
    now: i64,
) -> Result<CommandResult, ErrorBody> {
    if command.is_trade() && !st.permissions.trading_enabled() {
        return Err(trading_disabled(st.permissions));
    }
    let fingerprint = match command {
        Command::PlaceOrder { .. }
        | Command::ClosePosition { .. }
        | Command::ReversePosition { .. }
        | Command::ModifyOrder { .. }
        | Command::CloseBy { .. } => serde_json::to_string(&command).unwrap_or_default(),
        _ => String::new(),
    };
    let State {
        market, broker, books, ..
    } = st;
    match command {
        Command::AccountInfo => Ok(CommandResult::AccountInfo(broker.account_info(market))),
        Command::Positions { symbol } => Ok(CommandResult::Positions {
            positions: broker.positions(market, symbol.as_deref()),
        }),
        Command::Orders { symbol } => Ok(CommandResult::Orders {
            orders: broker.orders(symbol.as_deref()),
        }),
        Command::HistoryDeals { from, to } => {
            check_range(from, to)?;
            Ok(CommandResult::Deals {
                deals: broker.deals(from, to),
            })
        }
        Command::HistoryOrders { from, to } => {
            check_range(from, to)?;
            Ok(CommandResult::HistoryOrders {
                orders: broker.history_orders(from, to),
            })
        }
        Command::Symbols => Ok(CommandResult::Symbols {
            symbols: market.names(),
        }),
        Command::SymbolSpec { symbol } => {
            let idx = market.index(&symbol).ok_or_else(|| unknown_symbol(&symbol))?;
            Ok(CommandResult::SymbolSpec(market.feeds[idx].spec.clone()))
        }
        Command::Tick { symbol } => {
            let idx = market.index(&symbol).ok_or_else(|| unknown_symbol(&symbol))?;
            market
                .tick(idx)
                .map(CommandResult::Tick)
                .ok_or_else(|| ErrorBody::new(codes::NOT_FOUND, format!("{symbol} has no quote yet")))
        }
        Command::Bars {
            symbol,
            timeframe,
            count,
            from,
            to,
        } => {
            let idx = market.index(&symbol).ok_or_else(|| unknown_symbol(&symbol))?;
            if count.is_some_and(|c| c > MAX_BARS) {
                return Err(invalid(format!("count is limited to {MAX_BARS} bars")));
            }
            let feed = &mut market.feeds[idx];
            let bars = feed.bars(timeframe, count, from, to, now).map_err(invalid)?;
            Ok(CommandResult::Bars {
                symbol: feed.spec.name.clone(),
                timeframe,
                bars,
            })
        }
        Command::Ticks {
            symbol,
            from,
            to,
            limit,
        } => {
            let idx = market.index(&symbol).ok_or_else(|| unknown_symbol(&symbol))?;
            check_range(from, to)?;
            let ticks = market.ticks(idx, from, to, limit);
            Ok(CommandResult::Ticks {
                symbol: market.feeds[idx].spec.name.clone(),
                ticks,
            })
        }
        Command::OrderCheck { order } => broker.check(market, &order, now).map(CommandResult::OrderCheck),
        Command::PlaceOrder { order } => broker.idempotent(
            "place_order",
            order.idempotency_key.clone().as_deref(),
            fingerprint,
            |b| b.place(market, &order, now).map(CommandResult::Trade),
        ),
        Command::ClosePosition {
            ticket,
            volume,
            deviation_points: _,
            idempotency_key,
        } => broker.idempotent("close_position", idempotency_key.as_deref(), fingerprint, |b| {
            b.close(market, ticket, volume, now).map(CommandResult::Trade)
        }),
        Command::ModifyPosition {
            ticket,
            stop_loss,
            take_profit,
        } => broker
            .modify(market, ticket, stop_loss, take_profit, now)
            .map(CommandResult::Trade),
        Command::CancelOrder { ticket } => broker.cancel(market, ticket, now).map(CommandResult::Trade),
        Command::ReversePosition {
            ticket,
            idempotency_key,
        } => broker.idempotent("reverse_position", idempotency_key.as_deref(), fingerprint, |b| {
            b.reverse(market, ticket, now)
                .map(|(close, open)| CommandResult::Reverse { close, open })
        }),
        Command::ModifyOrder {
            ticket,
            price,
            stop_limit_price,
            stop_loss,
            take_profit,
            expiration_mode,
            expiration,
            idempotency_key,
        } => broker.idempotent("modify_order", idempotency_key.as_deref(), fingerprint, |b| {
            b.modify_order(
                market,
                ticket,
                price,
                stop_limit_price,
                stop_loss,
                take_profit,
                expiration_mode,
                expiration,
                now,
            )
            .map(CommandResult::Trade)
        }),
        Command::CloseBy {
            ticket,
            ticket_by,
            idempotency_key,
        } => broker.idempotent("close_by", idempotency_key.as_deref(), fingerprint, |b| {
            b.close_by(market, ticket, ticket_by, now).map(CommandResult::Trade)
        }),
        Command::MarketBookAdd { symbol }
        | Command::MarketBookRelease { symbol }
        | Command::MarketBookGet { symbol }
            if settings.platform == Platform::MT4 =>
        {
            Err(ErrorBody::new(
                codes::NOT_SUPPORTED,
                format!("MetaTrader 4 has no depth of market (asked for {symbol})"),
            ))
        }
        Command::MarketBookAdd { symbol } => {
            let idx = market.index(&symbol).ok_or_else(|| unknown_symbol(&symbol))?;
            let name = market.feeds[idx].spec.name.clone();
            books.insert(name.clone());
            Ok(CommandResult::MarketBookSubscription {
                symbol: name,
                subscribed: true,
            })
        }
        Command::MarketBookRelease { symbol } => {
            let idx = market.index(&symbol).ok_or_else(|| unknown_symbol(&symbol))?;
            let name = market.feeds[idx].spec.name.clone();
            if !books.remove(&name) {
                return Err(invalid(format!("{name}'s depth of market was not subscribed")));
            }
            Ok(CommandResult::MarketBookSubscription {
                symbol: name,
                subscribed: false,
            })
        }
        Command::MarketBookGet { symbol } => {
            let idx = market.index(&symbol).ok_or_else(|| unknown_symbol(&symbol))?;
            let spec = &market.feeds[idx].spec;
            if !books.contains(&spec.name) {
                return Err(invalid(format!(
                    "subscribe to {}'s depth of market first (market_book_add)",
                    spec.name
                )));
            }
            let tick = market
                .tick(idx)
                .ok_or_else(|| ErrorBody::new(codes::NOT_FOUND, format!("{symbol} has no quote yet")))?;
            Ok(CommandResult::MarketBook {
                symbol: spec.name.clone(),
                time: tick.time,
                levels: crate::book::levels(market.seed, spec, &tick),
            })
        }
        Command::Calendar { from, to, currencies } => {
            if settings.platform == Platform::MT4 {
                return Err(ErrorBody::new(
                    codes::NOT_SUPPORTED,
                    "MetaTrader 4 has no economic calendar",
                ));
            }
            check_range(from, to)?;
            if to.saturating_sub(from) > calendar::MAX_RANGE_MS {
                return Err(invalid("a calendar request may cover at most 400 days"));
            }
            Ok(CommandResult::Calendar {
                events: calendar::events(settings.seed, from, to, &currencies, now),
            })
        }
    }
}
