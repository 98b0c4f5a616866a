//! MCP resources of the session's terminal (the one its terminal key is
//! bound to), read through the same tools as every surface, and
//! `resources/subscribe` fed by the event pipeline (`docs/events.md`): a
//! subscribed resource gets `notifications/resources/updated` when an event
//! that changes it arrives.
//!
//! | URI | read with | updated by |
//! |---|---|---|
//! | `tradeterm://terminals/{id}/account` | `get_account_info` | `account.changed`, `deal.added`, `position.*` |
//! | `…/positions` | `get_positions` | `position.*`, `deal.added` |
//! | `…/orders` | `get_orders` | `order.*` |
//! | `…/alerts` | `list_alerts` | `alert.fired`, `equity_guard.*` |
//! | `…/status` | `list_terminals` (this terminal's entry) | `terminal.*` |

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{Resource, ResourceContents};
use serde_json::Value;
use tradeterm_events::EventType;
use tradeterm_events::subscriber::{Filter, Item};

/// Scheme and authority of every resource URI.
pub const PREFIX: &str = "tradeterm://terminals/";

/// One kind of resource of a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The account.
    Account,
    /// Open positions.
    Positions,
    /// Pending orders.
    Orders,
    /// Alert rules and their state.
    Alerts,
    /// Connection and trading permission.
    Status,
}

impl Kind {
    /// Every kind, in listing order.
    pub const ALL: [Kind; 5] = [Kind::Account, Kind::Positions, Kind::Orders, Kind::Alerts, Kind::Status];

    /// The last segment of the URI.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Account => "account",
            Kind::Positions => "positions",
            Kind::Orders => "orders",
            Kind::Alerts => "alerts",
            Kind::Status => "status",
        }
    }

    /// The catalog tool that reads it.
    pub const fn tool(self) -> &'static str {
        match self {
            Kind::Account => "get_account_info",
            Kind::Positions => "get_positions",
            Kind::Orders => "get_orders",
            Kind::Alerts => "list_alerts",
            Kind::Status => "list_terminals",
        }
    }

    const fn description(self) -> &'static str {
        match self {
            Kind::Account => "Balance, equity, margin, free margin and floating profit of the terminal's account.",
            Kind::Positions => "The terminal's open positions (volume, prices, stops, floating profit).",
            Kind::Orders => "The terminal's pending orders.",
            Kind::Alerts => "The alert rules of the terminal (set_alert) and their state.",
            Kind::Status => "Whether the terminal's agent is connected, and its trading permissions.",
        }
    }

    fn of(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kinds an event changes.
    pub fn changed_by(kind: EventType) -> &'static [Kind] {
        use EventType::*;
        match kind {
            AccountChanged => &[Kind::Account],
            DealAdded | PositionOpened | PositionModified | PositionClosed | OrderFilled => {
                &[Kind::Account, Kind::Positions, Kind::Orders]
            }
            OrderPlaced | OrderModified | OrderCancelled | OrderExpired | OrderRejected => &[Kind::Orders],
            AlertFired | EquityGuardBreached | EquityGuardRecovered | NewsGuardAlert | PropFirmStatusChanged => {
                &[Kind::Alerts]
            }
            TerminalConnected | TerminalDisconnected | TradingPermissionChanged => &[Kind::Status],
            ManagedAction => &[Kind::Positions, Kind::Orders],
            _ => &[],
        }
    }
}

/// The URI of `kind` of `terminal`.
pub fn uri(terminal: &str, kind: Kind) -> String {
    format!("{PREFIX}{terminal}/{}", kind.name())
}

/// `(terminal, kind)` of a URI of this server.
pub fn parse(uri: &str) -> Option<(&str, Kind)> {
    let rest = uri.strip_prefix(PREFIX)?;
    let (terminal, kind) = rest.split_once('/')?;
    if terminal.is_empty() || kind.contains('/') {
        return None;
    }
    Some((terminal, Kind::of(kind)?))
}

/// The resources of `terminal`, as `resources/list` shows them.
pub fn list(terminal: &str) -> Vec<Resource> {
    Kind::ALL
        .into_iter()
        .map(|k| {
            Resource::new(uri(terminal, k), format!("{} of {terminal}", k.name()))
                .with_description(k.description())
                .with_mime_type("application/json")
        })
        .collect()
}

/// The text of a read: the tool's output as JSON, for `status` only this
/// terminal's entry of `list_terminals`.
pub fn contents(uri: &str, terminal: &str, kind: Kind, output: Value) -> ResourceContents {
    let value = match kind {
        Kind::Status => output["terminals"]
            .as_array()
            .and_then(|list| {
                list.iter()
                    .find(|t| t["id"] == terminal || t["terminal_id"] == terminal)
            })
            .cloned()
            .unwrap_or(Value::Null),
        _ => output,
    };
    ResourceContents::text(value.to_string(), uri).with_mime_type("application/json")
}

/// A session's subscriptions and the task that feeds them; the task stops
/// when the last subscription goes or the session ends.
#[derive(Default)]
pub(crate) struct Subscriptions {
    uris: Arc<Mutex<BTreeSet<String>>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Subscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriptions").finish_non_exhaustive()
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().ok().and_then(|mut t| t.take()) {
            task.abort();
        }
    }
}

impl Subscriptions {
    /// Adds `uri`; starts the feeding task at the first one.
    ///
    /// # Errors
    /// The event engine cannot be read now.
    pub(crate) async fn add(
        &self,
        subscribed: String,
        bus: Arc<dyn tradeterm_events::EventBus>,
        license: String,
        terminal: String,
        peer: rmcp::Peer<rmcp::RoleServer>,
    ) -> Result<(), String> {
        if let Ok(mut uris) = self.uris.lock() {
            uris.insert(subscribed);
        }
        let running = self
            .task
            .lock()
            .map(|t| t.as_ref().is_some_and(|t| !t.is_finished()))
            .unwrap_or(false);
        if running {
            return Ok(());
        }
        let filter = Filter {
            terminal_id: Some(terminal.clone()),
            ..Filter::default()
        };
        let mut sub = tradeterm_events::subscriber::subscribe(bus, license, None, filter, Default::default())
            .await
            .map_err(|e| e.to_string())?;
        let uris = self.uris.clone();
        let task = tokio::spawn(async move {
            while let Some(item) = sub.next().await {
                let Item::Event(event) = item else { continue };
                let changed: Vec<String> = {
                    let Ok(uris) = uris.lock() else { return };
                    Kind::changed_by(event.kind)
                        .iter()
                        .map(|k| uri(&terminal, *k))
                        .filter(|u| uris.contains(u))
                        .collect()
                };
                for u in changed {
                    let param = rmcp::model::ResourceUpdatedNotificationParam::new(u);
                    if peer.notify_resource_updated(param).await.is_err() {
                        // The session's transport is gone.
                        return;
                    }
                }
            }
        });
        if let Ok(mut t) = self.task.lock() {
            *t = Some(task);
        }
        Ok(())
    }

    /// Whether no URI is subscribed.
    pub(crate) fn is_empty(&self) -> bool {
        self.uris.lock().map(|u| u.is_empty()).unwrap_or(true)
    }

    /// Removes `uri`; stops the task after the last one.
    pub(crate) fn remove(&self, uri: &str) {
        let empty = self
            .uris
            .lock()
            .map(|mut u| {
                u.remove(uri);
                u.is_empty()
            })
            .unwrap_or(true);
        if empty && let Some(task) = self.task.lock().ok().and_then(|mut t| t.take()) {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_and_strangers_are_refused() {
        for kind in Kind::ALL {
            let u = uri("term_1", kind);
            assert_eq!(parse(&u), Some(("term_1", kind)));
        }
        for bad in [
            "tradeterm://terminals/term_1",
            "tradeterm://terminals//account",
            "tradeterm://terminals/term_1/account/x",
            "tradeterm://terminals/term_1/moon",
            "file:///etc/passwd",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(list("term_1").len(), 5);
    }

    #[test]
    fn fills_update_positions_and_account_and_connectivity_updates_status() {
        assert!(Kind::changed_by(EventType::PositionClosed).contains(&Kind::Positions));
        assert!(Kind::changed_by(EventType::PositionClosed).contains(&Kind::Account));
        assert_eq!(Kind::changed_by(EventType::TerminalDisconnected), &[Kind::Status]);
        assert!(Kind::changed_by(EventType::Quote).is_empty(), "quotes notify nothing");
    }
}
