//! From what an agent pushes (`tradeterm_protocol::Event`) to client events.
//!
//! | agent pushes | events |
//! |---|---|
//! | `tick` | `quote` |
//! | `account` | `account.changed` (throttled by the publisher) |
//! | `permissions` (a change) | `terminal.trading_permission_changed` |
//! | `trade_transaction` `deal_added`, entry `in` | `deal.added`, `order.filled`, then `position.opened` (or `position.modified` `added` when the position already had volume) |
//! | `deal_added`, entry `out` | `deal.added`, `order.filled`, then `position.closed` (reason from the deal: `sl`, `tp`, `stop_out`, `client`), or `position.modified` `partial_close` while volume is left |
//! | `deal_added`, entry `balance` | `deal.added` |
//! | `order_added` | `order.placed` |
//! | `order_modified` | `order.modified` |
//! | `order_removed` | `order.cancelled`, `order.expired` or `order.rejected` from its `order_state` (none for `filled`: the fill's own events follow); without a state, `order.cancelled` |
//! | `position_modified` | `position.modified` `levels` |
//!
//! The volume left in a position comes from the agent's `position_volume`
//! when it sends one; otherwise from the deals seen since the agent
//! connected (a position opened before that, closed in part, is reported
//! closed: the agent protocol documents `position_volume` for that reason).

use std::collections::HashMap;

use tradeterm_core::DealEntry;
use tradeterm_core::time::UnixMs;
use tradeterm_protocol::agent::{OrderState, Permissions, TransactionKind};

use crate::model::{
    AccountData, CloseReason, ConnectedData, DealData, DisconnectedData, ModifiedBy, OrderData, OrderFilledData,
    PermissionData, PositionClosedData, PositionModifiedData, PositionOpenedData, QuoteData,
};
use crate::{Draft, EventType};

/// Volumes below this are nothing (lots).
const VOLUME_EPSILON: f64 = 1e-9;

/// What a translation asks the publisher to do with a draft.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// Append it (every event but the two below).
    Append(Draft),
    /// A quote: conflate per symbol, broadcast, never retain.
    Quote(Draft),
    /// An account reading: throttle per terminal (the latest wins).
    Account(Draft),
}

#[derive(Debug, Default)]
struct TerminalState {
    permissions: Option<Permissions>,
    /// Volume of each position seen opened or added to since the agent connected.
    volumes: HashMap<u64, f64>,
}

/// The translation state of every terminal (permissions last reported,
/// position volumes seen).
#[derive(Debug, Default)]
pub struct Translator {
    terminals: HashMap<(String, String), TerminalState>,
}

fn permission_data(p: Permissions) -> PermissionData {
    PermissionData {
        allow_trading: p.allow_trading,
        automated_trading: p.automated_trading,
        trading_enabled: p.trading_enabled(),
    }
}

impl Translator {
    fn state(&mut self, license: &str, terminal: &str) -> &mut TerminalState {
        self.terminals
            .entry((license.to_owned(), terminal.to_owned()))
            .or_default()
    }

    /// An agent connected with these permissions.
    pub fn connected(
        &mut self,
        license: &str,
        terminal: &str,
        agent: (&str, &str),
        permissions: Permissions,
        now: UnixMs,
    ) -> Vec<Out> {
        let state = self.state(license, terminal);
        state.permissions = Some(permissions);
        let data = ConnectedData {
            agent: agent.0.to_owned(),
            agent_version: agent.1.to_owned(),
            trading_enabled: permissions.trading_enabled(),
        };
        vec![Out::Append(Draft::new(
            EventType::TerminalConnected,
            now,
            Some(terminal),
            &data,
        ))]
    }

    /// An agent disconnected.
    pub fn disconnected(&mut self, license: &str, terminal: &str, reason: &str, now: UnixMs) -> Vec<Out> {
        self.state(license, terminal).permissions = None;
        let data = DisconnectedData {
            reason: reason.to_owned(),
        };
        vec![Out::Append(Draft::new(
            EventType::TerminalDisconnected,
            now,
            Some(terminal),
            &data,
        ))]
    }

    /// What `event`, pushed by the agent of `terminal`, means for clients.
    pub fn agent_event(
        &mut self,
        license: &str,
        terminal: &str,
        event: &tradeterm_protocol::Event,
        now: UnixMs,
    ) -> Vec<Out> {
        use tradeterm_protocol::Event as Agent;
        let t = Some(terminal);
        match event {
            Agent::Tick(tick) => vec![Out::Quote(Draft::new(EventType::Quote, now, t, &QuoteData::from(tick)))],
            Agent::Account(a) => vec![Out::Account(Draft::new(
                EventType::AccountChanged,
                now,
                t,
                &AccountData::from(a),
            ))],
            Agent::Permissions(p) => {
                let state = self.state(license, terminal);
                if state.permissions == Some(*p) {
                    return Vec::new();
                }
                state.permissions = Some(*p);
                vec![Out::Append(Draft::new(
                    EventType::TradingPermissionChanged,
                    now,
                    t,
                    &permission_data(*p),
                ))]
            }
            Agent::TradeTransaction {
                transaction,
                deal,
                order,
                position,
                order_state,
                position_volume,
            } => {
                let order_data = OrderData {
                    order: *order,
                    position: *position,
                    symbol: None,
                    reason: None,
                };
                let state = self.state(license, terminal);
                let append = |kind, data: &dyn erased::Data| Out::Append(data.draft(kind, now, t));
                match transaction {
                    TransactionKind::OrderAdded => vec![append(EventType::OrderPlaced, &order_data)],
                    TransactionKind::OrderModified => vec![append(EventType::OrderModified, &order_data)],
                    TransactionKind::OrderRemoved => {
                        let kind = match order_state {
                            Some(OrderState::Filled) => return Vec::new(),
                            Some(OrderState::Expired) => EventType::OrderExpired,
                            Some(OrderState::Rejected) => EventType::OrderRejected,
                            Some(OrderState::Canceled) | None => EventType::OrderCancelled,
                        };
                        vec![append(kind, &order_data)]
                    }
                    TransactionKind::PositionModified => {
                        let data = PositionModifiedData {
                            position: *position,
                            change: ModifiedBy::Levels,
                            volume: position_volume.or_else(|| state.volumes.get(position).copied()),
                            deal: None,
                        };
                        vec![append(EventType::PositionModified, &data)]
                    }
                    TransactionKind::DealAdded => {
                        let Some(deal) = deal else {
                            // A deal the agent did not describe: nothing to tell.
                            return Vec::new();
                        };
                        let mut out = vec![append(EventType::DealAdded, &DealData { deal: deal.clone() })];
                        if deal.entry == DealEntry::Balance || deal.position == 0 {
                            return out;
                        }
                        let pos = deal.position;
                        out.push(append(
                            EventType::OrderFilled,
                            &OrderFilledData {
                                order: deal.order,
                                position: pos,
                                deal: deal.clone(),
                            },
                        ));
                        let known = state.volumes.get(&pos).copied();
                        match deal.entry {
                            DealEntry::In => {
                                let left = position_volume.unwrap_or(known.unwrap_or(0.0) + deal.volume);
                                state.volumes.insert(pos, left);
                                if left > deal.volume + VOLUME_EPSILON {
                                    out.push(append(
                                        EventType::PositionModified,
                                        &PositionModifiedData {
                                            position: pos,
                                            change: ModifiedBy::Added,
                                            volume: Some(left),
                                            deal: Some(deal.clone()),
                                        },
                                    ));
                                } else {
                                    out.push(append(
                                        EventType::PositionOpened,
                                        &PositionOpenedData {
                                            position: pos,
                                            deal: deal.clone(),
                                        },
                                    ));
                                }
                            }
                            DealEntry::Out | DealEntry::OutBy => {
                                let left = position_volume.or(known.map(|v| v - deal.volume));
                                match left {
                                    Some(left) if left > VOLUME_EPSILON => {
                                        state.volumes.insert(pos, left);
                                        out.push(append(
                                            EventType::PositionModified,
                                            &PositionModifiedData {
                                                position: pos,
                                                change: ModifiedBy::PartialClose,
                                                volume: Some(left),
                                                deal: Some(deal.clone()),
                                            },
                                        ));
                                    }
                                    _ => {
                                        state.volumes.remove(&pos);
                                        out.push(append(
                                            EventType::PositionClosed,
                                            &PositionClosedData {
                                                position: pos,
                                                symbol: deal.symbol.clone(),
                                                price: deal.price,
                                                profit: deal.profit,
                                                reason: CloseReason::of_comment(&deal.comment),
                                                deal: deal.clone(),
                                            },
                                        ));
                                    }
                                }
                            }
                            DealEntry::Balance => {}
                        }
                        out
                    }
                }
            }
        }
    }
}

/// Typed data behind one reference, so that a match arm can build a draft
/// of any data type.
mod erased {
    use serde::Serialize;
    use tradeterm_core::time::UnixMs;

    use crate::{Draft, EventType};

    pub trait Data {
        fn draft(&self, kind: EventType, now: UnixMs, terminal: Option<&str>) -> Draft;
    }

    impl<T: Serialize> Data for T {
        fn draft(&self, kind: EventType, now: UnixMs, terminal: Option<&str>) -> Draft {
            Draft::new(kind, now, terminal, self)
        }
    }
}

#[cfg(test)]
mod tests {
    use tradeterm_core::{Deal, Side};
    use tradeterm_protocol::Event as Agent;

    use super::*;

    fn deal(entry: DealEntry, volume: f64, comment: &str) -> Deal {
        Deal {
            ticket: 900,
            order: 70,
            position: 70,
            symbol: "EURUSD".into(),
            side: Side::Buy,
            entry,
            volume,
            price: 1.1,
            time: 1,
            profit: if entry == DealEntry::Out { -12.5 } else { 0.0 },
            swap: 0.0,
            commission: 0.0,
            magic: 0,
            comment: comment.into(),
        }
    }

    fn deal_added(d: Deal, position_volume: Option<f64>) -> Agent {
        Agent::TradeTransaction {
            transaction: TransactionKind::DealAdded,
            order: d.order,
            position: d.position,
            deal: Some(d),
            order_state: None,
            position_volume,
        }
    }

    fn kinds(outs: &[Out]) -> Vec<&'static str> {
        outs.iter()
            .map(|o| match o {
                Out::Append(d) | Out::Quote(d) | Out::Account(d) => d.kind.as_str(),
            })
            .collect()
    }

    fn data(outs: &[Out], i: usize) -> &serde_json::Value {
        match &outs[i] {
            Out::Append(d) | Out::Quote(d) | Out::Account(d) => &d.data,
        }
    }

    #[test]
    fn a_position_opened_added_to_closed_in_part_then_by_its_stop() {
        let mut t = Translator::default();
        let open = t.agent_event("L", "T", &deal_added(deal(DealEntry::In, 0.2, ""), Some(0.2)), 5);
        assert_eq!(kinds(&open), ["deal.added", "order.filled", "position.opened"]);
        let add = t.agent_event("L", "T", &deal_added(deal(DealEntry::In, 0.1, ""), None), 6);
        assert_eq!(kinds(&add), ["deal.added", "order.filled", "position.modified"]);
        assert_eq!(data(&add, 2)["change"], "added");
        assert!((data(&add, 2)["volume"].as_f64().unwrap() - 0.3).abs() < 1e-9);
        // Without the agent's position_volume, the volumes seen count.
        let part = t.agent_event("L", "T", &deal_added(deal(DealEntry::Out, 0.1, ""), None), 7);
        assert_eq!(kinds(&part), ["deal.added", "order.filled", "position.modified"]);
        assert_eq!(data(&part, 2)["change"], "partial_close");
        let closed = t.agent_event(
            "L",
            "T",
            &deal_added(deal(DealEntry::Out, 0.2, "[sl 1.09]"), Some(0.0)),
            8,
        );
        assert_eq!(kinds(&closed), ["deal.added", "order.filled", "position.closed"]);
        let c = data(&closed, 2);
        assert_eq!(
            (&c["reason"], &c["profit"], &c["symbol"]),
            (&"sl".into(), &(-12.5).into(), &"EURUSD".into())
        );
        // A close of a position opened before the agent connected (volume
        // unknown, none sent) is a close.
        let unknown = t.agent_event("L", "T2", &deal_added(deal(DealEntry::Out, 0.1, "tp"), None), 9);
        assert_eq!(kinds(&unknown)[2], "position.closed");
        assert_eq!(data(&unknown, 2)["reason"], "tp");
        // Balance deals are only deals.
        let mut balance = deal(DealEntry::Balance, 0.0, "deposit");
        balance.position = 0;
        assert_eq!(
            kinds(&t.agent_event("L", "T", &deal_added(balance, None), 10)),
            ["deal.added"]
        );
    }

    #[test]
    fn removed_orders_say_how_they_ended_and_permission_changes_only_when_they_change() {
        let mut t = Translator::default();
        let removed = |state| Agent::TradeTransaction {
            transaction: TransactionKind::OrderRemoved,
            deal: None,
            order: 5,
            position: 0,
            order_state: state,
            position_volume: None,
        };
        for (state, kind) in [
            (Some(OrderState::Canceled), vec!["order.cancelled"]),
            (Some(OrderState::Expired), vec!["order.expired"]),
            (Some(OrderState::Rejected), vec!["order.rejected"]),
            (Some(OrderState::Filled), vec![]),
            (None, vec!["order.cancelled"]),
        ] {
            assert_eq!(kinds(&t.agent_event("L", "T", &removed(state), 1)), kind, "{state:?}");
        }
        let on = Permissions {
            allow_trading: true,
            automated_trading: true,
        };
        let off = Permissions {
            allow_trading: true,
            automated_trading: false,
        };
        let connected = t.connected("L", "T", ("sim", "1"), on, 1);
        assert_eq!(kinds(&connected), ["terminal.connected"]);
        assert!(
            t.agent_event("L", "T", &Agent::Permissions(on), 2).is_empty(),
            "no change"
        );
        let changed = t.agent_event("L", "T", &Agent::Permissions(off), 3);
        assert_eq!(kinds(&changed), ["terminal.trading_permission_changed"]);
        assert_eq!(data(&changed, 0)["trading_enabled"], false);
        // Another license's terminal of the same id has its own state.
        assert_eq!(kinds(&t.agent_event("L2", "T", &Agent::Permissions(off), 4)).len(), 1);
        assert_eq!(kinds(&t.disconnected("L", "T", "closed", 5)), ["terminal.disconnected"]);
    }
}
