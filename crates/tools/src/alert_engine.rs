//! The alert engine: evaluates every active alert rule (`set_alert`) from
//! what the agents push, and records each firing for `poll_alerts`.
//!
//! - **Quotes** (`tick` events) feed price rules, and tell when a bar has
//!   closed: at the first quote past the end of the forming bar, the engine
//!   reads that symbol's bars once per (terminal, symbol, timeframe) — not
//!   once per rule — and feeds the closed ones to every indicator and
//!   structure rule on them.
//! - **Account states** (`account` events) feed equity and drawdown rules.
//! - Without events (a split deployment's API instances, or a terminal whose
//!   agent pushes nothing for a while) the engine polls the quote of each
//!   watched symbol and the account of each watched terminal every
//!   [`EngineSettings::poll_interval`] (quotes are answered from the
//!   gateway's cache of pushed quotes, so this does not load the terminal).
//!
//! Rules are re-read from the store every [`EngineSettings::reload_interval`],
//! so a rule set on any instance is watched within that time. A state change
//! is written compare-and-swap together with the firings it produced
//! ([`tradeterm_store::Store::record_alert_step`]), so a restart neither
//! repeats nor loses a firing and two engines over one store record each
//! firing once. Firings are recorded at the server's time (`fired_at`, the
//! order `poll_alerts` delivers in) with the market time they observed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tradeterm_core::alert_rules::{AlertCondition, AlertState, Feed, Firing, on_account, on_closed_bars, on_quote};
use tradeterm_core::{AccountInfo, Tick, Timeframe};
use tradeterm_store::{AlertRuleRecord, NewAlertEvent};

use crate::alert_rules::{RULE_BARS, closed_bars};
use crate::{Caller, Services, ToolContext};

/// Timing of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineSettings {
    /// How often the rules are re-read from the store (default 1 s).
    pub reload_interval: Duration,
    /// How long a terminal may push nothing before the engine polls it (default 2 s).
    pub poll_interval: Duration,
    /// Dispatch timeout of one read (default 5 s).
    pub timeout: Duration,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            reload_interval: Duration::from_secs(1),
            poll_interval: Duration::from_secs(2),
            timeout: Duration::from_secs(5),
        }
    }
}

/// Something an agent pushed.
#[derive(Debug, Clone)]
pub enum EngineEvent {
    /// A quote.
    Quote {
        /// License owning the terminal.
        license_id: String,
        /// The terminal.
        terminal_id: String,
        /// The quote.
        tick: Tick,
    },
    /// An account state.
    Account {
        /// License owning the terminal.
        license_id: String,
        /// The terminal.
        terminal_id: String,
        /// The account now.
        account: AccountInfo,
    },
}

/// A running engine; [`EngineHandle::stop`] stops it.
#[derive(Debug)]
pub struct EngineHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl EngineHandle {
    /// Stops the engine and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// One rule in memory.
struct Rule {
    record: AlertRuleRecord,
    condition: AlertCondition,
    state: AlertState,
}

type TerminalKey = (String, String);
type BarsKey = (String, String, String, Timeframe);

struct Engine {
    services: Arc<Services>,
    settings: EngineSettings,
    rules: Vec<Rule>,
    /// Per (license, terminal, symbol, timeframe): when the forming bar ends
    /// (market time); bars are read at the first quote at or after it.
    next_bar_read: HashMap<BarsKey, i64>,
    /// Per terminal: when it last pushed a quote.
    last_quote: HashMap<TerminalKey, Instant>,
    /// Per terminal: when it last pushed an account state.
    last_account: HashMap<TerminalKey, Instant>,
}

/// Starts the engine. `events`: what the agents push (`None`: poll only).
pub fn spawn(
    services: Arc<Services>,
    settings: EngineSettings,
    events: Option<mpsc::Receiver<EngineEvent>>,
) -> EngineHandle {
    let (stop, mut stopped) = watch::channel(false);
    let mut engine = Engine {
        services,
        settings,
        rules: Vec::new(),
        next_bar_read: HashMap::new(),
        last_quote: HashMap::new(),
        last_account: HashMap::new(),
    };
    let task = tokio::spawn(async move {
        let mut events = events;
        let mut reload = tokio::time::interval(settings.reload_interval.max(Duration::from_millis(50)));
        reload.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut poll = tokio::time::interval(settings.poll_interval.max(Duration::from_millis(50)));
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stopped.changed() => break,
                event = next_event(&mut events) => match event {
                    Some(e) => engine.on_event(e).await,
                    None => events = None,
                },
                _ = reload.tick() => engine.reload().await,
                _ = poll.tick() => engine.poll_quiet().await,
            }
        }
    });
    EngineHandle { stop, task }
}

async fn next_event(events: &mut Option<mpsc::Receiver<EngineEvent>>) -> Option<EngineEvent> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Engine {
    fn context(&self, license_id: &str, terminal_id: &str) -> ToolContext {
        let caller = Caller {
            license_id: license_id.to_owned(),
            credential: "alert-engine".into(),
            caps: Vec::new(),
        };
        let mut ctx = ToolContext::new(self.services.clone(), caller, Some(terminal_id.to_owned()));
        ctx.timeout = self.settings.timeout.min(ctx.timeout);
        ctx
    }

    /// Re-reads the active rules, keeping the in-memory state of rules whose
    /// stored version is the one this engine wrote last.
    async fn reload(&mut self) {
        let records = match self.services.store.active_alert_rules().await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "alert engine: the rules could not be read");
                return;
            }
        };
        let mut old: HashMap<String, Rule> = self.rules.drain(..).map(|r| (r.record.id.clone(), r)).collect();
        for record in records {
            let rule = match old.remove(&record.id) {
                Some(kept) if kept.record.version == record.version => kept,
                _ => match serde_json::from_value::<AlertCondition>(record.condition.clone()) {
                    Ok(condition) => Rule {
                        state: serde_json::from_value(record.state.clone()).unwrap_or_default(),
                        condition,
                        record,
                    },
                    Err(_) => {
                        tracing::warn!(alert = %record.id, "alert engine: a stored condition is not valid; skipped");
                        continue;
                    }
                },
            };
            self.rules.push(rule);
        }
        let watched: BTreeSet<BarsKey> = self.rules.iter().filter_map(bars_key).collect();
        self.next_bar_read.retain(|k, _| watched.contains(k));
    }

    async fn on_event(&mut self, event: EngineEvent) {
        match event {
            EngineEvent::Quote {
                license_id,
                terminal_id,
                tick,
            } => {
                self.last_quote
                    .insert((license_id.clone(), terminal_id.clone()), Instant::now());
                self.on_quote(&license_id, &terminal_id, &tick).await;
            }
            EngineEvent::Account {
                license_id,
                terminal_id,
                account,
            } => {
                self.last_account
                    .insert((license_id.clone(), terminal_id.clone()), Instant::now());
                self.on_account(&license_id, &terminal_id, &account, now_ms()).await;
            }
        }
    }

    async fn on_quote(&mut self, license_id: &str, terminal_id: &str, tick: &Tick) {
        for i in 0..self.rules.len() {
            let rule = &mut self.rules[i];
            if !on_terminal(&rule.record, license_id, terminal_id) {
                continue;
            }
            let before = rule.state.clone();
            let fired: Vec<Firing> = on_quote(&rule.condition, &mut rule.state, tick).into_iter().collect();
            if rule.state != before {
                self.persist(i, before, fired).await;
            }
        }
        // Bars rules on this symbol: read the bars once the forming bar has ended.
        let due: BTreeSet<BarsKey> = self
            .rules
            .iter()
            .filter(|r| on_terminal(&r.record, license_id, terminal_id))
            .filter_map(bars_key)
            .filter(|k| k.2.eq_ignore_ascii_case(&tick.symbol))
            .filter(|k| self.next_bar_read.get(k).is_none_or(|at| tick.time >= *at))
            .collect();
        for key in due {
            self.read_bars(&key, tick.time).await;
        }
    }

    /// Reads the closed bars of `key` and feeds them to its rules.
    async fn read_bars(&mut self, key: &BarsKey, market_now: i64) {
        let (license_id, terminal_id, symbol, timeframe) = key;
        let ctx = self.context(license_id, terminal_id);
        let count = self
            .rules
            .iter()
            .filter(|r| bars_key(r).as_ref() == Some(key))
            .filter_map(|r| match r.condition.feed(RULE_BARS) {
                Feed::Bars(_, _, n) => Some(n),
                _ => None,
            })
            .max()
            .unwrap_or(RULE_BARS);
        let bars = match closed_bars(&ctx, symbol, *timeframe, count, market_now).await {
            Ok(b) => b,
            Err(e) => {
                tracing::debug!(terminal = %terminal_id, %symbol, error = %e, "alert engine: bars not read");
                // Try again at the next quote, but not more than once a second.
                self.next_bar_read.insert(key.clone(), market_now + 1_000);
                return;
            }
        };
        // The bar forming now ends one period after the last closed one (a
        // month is read again daily until the new bar shows).
        let next = match (bars.last(), timeframe) {
            (Some(last), Timeframe::MN1) => (last.time + 2 * 28 * 86_400_000).max(market_now + 86_400_000),
            (Some(last), tf) => last.time + 2 * tf.duration_ms(),
            (None, tf) => market_now + tf.duration_ms(),
        };
        self.next_bar_read.insert(key.clone(), next);
        for i in 0..self.rules.len() {
            if !self.rules[i].record.active || bars_key(&self.rules[i]).as_ref() != Some(key) {
                continue;
            }
            let rule = &mut self.rules[i];
            let before = rule.state.clone();
            let fired = match on_closed_bars(&rule.condition, &mut rule.state, &bars) {
                Ok(f) => f,
                Err(e) => {
                    tracing::debug!(alert = %rule.record.id, error = %e, "alert engine: rule not evaluated");
                    Vec::new()
                }
            };
            if rule.state != before {
                self.persist(i, before, fired).await;
            }
        }
    }

    async fn on_account(&mut self, license_id: &str, terminal_id: &str, account: &AccountInfo, at: i64) {
        for i in 0..self.rules.len() {
            let rule = &mut self.rules[i];
            if !on_terminal(&rule.record, license_id, terminal_id) {
                continue;
            }
            let before = rule.state.clone();
            let fired: Vec<Firing> = on_account(&rule.condition, &mut rule.state, account, at)
                .into_iter()
                .collect();
            // A new equity peak alone is kept in memory and written with the
            // next change (a restart then measures from a lower peak, never
            // misses a firing).
            let changed = rule.state.holds != before.holds || !fired.is_empty();
            if changed {
                self.persist(i, before, fired).await;
            }
        }
    }

    /// Writes rule `i`'s new state and firings. When another writer moved the
    /// rule first, the local step is undone and the rule re-read.
    async fn persist(&mut self, i: usize, before: AlertState, fired: Vec<Firing>) {
        let rule = &self.rules[i];
        let state = match serde_json::to_value(&rule.state) {
            Ok(s) => s,
            Err(_) => return,
        };
        let recorded_at = now_ms();
        let firings: Vec<NewAlertEvent> = fired
            .iter()
            .map(|f| NewAlertEvent {
                fired_at: recorded_at,
                payload: json!({
                    "label": rule.record.label,
                    "condition_kind": rule.condition.kind(),
                    "observed_at": f.time,
                    "value": f.value,
                    "level": f.level,
                    "message": f.message,
                }),
            })
            .collect();
        let deactivate = rule.record.once && !fired.is_empty();
        let result = self
            .services
            .store
            .record_alert_step(&rule.record.id, rule.record.version, &state, &firings, deactivate)
            .await;
        let rule = &mut self.rules[i];
        match result {
            Ok(Some(version)) => {
                rule.record.version = version;
                for (f, firing) in fired.iter().zip(&firings) {
                    tracing::info!(alert = %rule.record.id, terminal = %rule.record.terminal_id, message = %f.message, "alert fired");
                    if let Some(events) = &self.services.events {
                        let data = tradeterm_events::model::RuleData {
                            rule: rule.record.id.clone(),
                            message: f.message.clone(),
                            symbol: rule.condition.symbol().map(str::to_owned),
                            details: firing.payload.clone(),
                        };
                        let draft = tradeterm_events::Draft::new(
                            tradeterm_events::EventType::AlertFired,
                            firing.fired_at,
                            Some(&rule.record.terminal_id),
                            &data,
                        );
                        events.publish(&rule.record.license_id, draft);
                    }
                }
                if deactivate {
                    // Ended: skipped from now on, dropped at the next reload.
                    rule.record.active = false;
                }
            }
            Ok(None) => {
                // Another engine (or a removal) moved it: forget the local
                // step; the next reload brings the stored rule back.
                rule.state = before;
                rule.record.version = -1;
            }
            Err(e) => {
                rule.state = before;
                tracing::warn!(alert = %rule.record.id, error = %e, "alert engine: state not stored");
            }
        }
    }

    /// Polls what the agents did not push for a poll interval: the quotes of
    /// the watched symbols, and the account of terminals with account rules
    /// (an agent pushes its account only when it changes).
    async fn poll_quiet(&mut self) {
        let now = Instant::now();
        let interval = self.settings.poll_interval;
        let recent = move |seen: &HashMap<TerminalKey, Instant>, key: &TerminalKey| {
            seen.get(key).is_some_and(|at| now.duration_since(*at) < interval)
        };
        let terminals: BTreeSet<TerminalKey> = self
            .rules
            .iter()
            .filter(|r| r.record.active)
            .map(|r| (r.record.license_id.clone(), r.record.terminal_id.clone()))
            .collect();
        for key in terminals {
            let (license_id, terminal_id) = &key;
            let ctx = self.context(license_id, terminal_id);
            if !recent(&self.last_quote, &key) {
                let symbols: BTreeSet<String> = self
                    .rules
                    .iter()
                    .filter(|r| on_terminal(&r.record, license_id, terminal_id))
                    .filter_map(|r| r.condition.symbol().map(str::to_owned))
                    .collect();
                for symbol in symbols {
                    match ctx.tick(&symbol).await {
                        Ok(tick) => self.on_quote(license_id, terminal_id, &tick).await,
                        Err(e) => {
                            tracing::debug!(terminal = %terminal_id, %symbol, error = %e, "alert engine: no quote")
                        }
                    }
                }
            }
            let wants_account = self
                .rules
                .iter()
                .any(|r| on_terminal(&r.record, license_id, terminal_id) && r.condition.symbol().is_none());
            if wants_account && !recent(&self.last_account, &key) {
                match ctx.account().await {
                    Ok(account) => {
                        self.last_account.insert(key.clone(), Instant::now());
                        self.on_account(license_id, terminal_id, &account, now_ms()).await;
                    }
                    Err(e) => tracing::debug!(terminal = %terminal_id, error = %e, "alert engine: no account"),
                }
            }
        }
    }
}

/// Whether an active rule watches this terminal.
fn on_terminal(record: &AlertRuleRecord, license_id: &str, terminal_id: &str) -> bool {
    record.active && record.license_id == license_id && record.terminal_id == terminal_id
}

fn bars_key(rule: &Rule) -> Option<BarsKey> {
    match rule.condition.feed(RULE_BARS) {
        Feed::Bars(symbol, timeframe, _) => Some((
            rule.record.license_id.clone(),
            rule.record.terminal_id.clone(),
            symbol.to_owned(),
            timeframe,
        )),
        _ => None,
    }
}
