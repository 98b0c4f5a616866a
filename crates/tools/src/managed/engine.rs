//! The evaluator of managed exits (`docs/managed-exits.md`).
//!
//! Every process that serves tools runs one (`tradeterm serve`, each
//! `tradeterm-api`); each rule is evaluated by exactly one of them: an
//! engine claims rules in the store every [`ManagedSettings::claim_interval`]
//! with a lease of [`ManagedSettings::lease`], renews what it holds, and
//! takes rules whose lease lapsed (their engine died) — within
//! `lease + claim_interval` (8 s by default). Every write of a rule's step is
//! compare-and-swap on its version *and* its owner, so an engine that lost
//! its claim cannot act on what it remembers.
//!
//! **Feed.** Quotes, trade events and connections come from what the agents
//! push ([`ManagedEvent`]: single node, the gateway's feed; a split
//! deployment, the event pipeline's live feed, [`feed_from_bus`]); a
//! terminal that pushes nothing for [`ManagedSettings::poll_interval`] is
//! polled. Each quote of a watched symbol is evaluated at once; the
//! terminal's positions and orders are read again after every trade event
//! and at least every [`ManagedSettings::book_max_age`].
//!
//! **Actions.** One at a time per rule, at most
//! [`ManagedSettings::max_actions_per_second`] per rule, each sent through
//! the tool catalog (`modify_position`, `cancel_order`, `close_position`:
//! every live-trading gate applies) with the rule's credential and the
//! idempotency key `mx:<rule>:<step>`. The step is written to the store
//! before the action is sent, so a retry, a restart or a takeover re-sends
//! the same action with the same key (the store and the agent then return
//! the first outcome instead of executing twice). An action refused for
//! good uses up its step; one whose outcome is unknown is sent again.
//!
//! **Pauses.** A terminal that cannot be reached pauses its rules
//! (`managed.paused`); when it is back they resume (`managed.resumed`) and
//! decide once on the current view: decisions depend on the view only, so
//! there is never a burst of stale modifications.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tradeterm_core::managed::{Action, Decision, ManagedSpec, View, apply, confirm, decide};
use tradeterm_core::{PendingOrder, Position, SymbolSpec, Tick};
use tradeterm_events::{EventType, Live};
use tradeterm_protocol::{Command, CommandResult, DispatchError};
use tradeterm_store::{ManagedOrderRecord, ManagedStatus, ManagedStep};

use super::protect::atr_now;
use super::{LogEntry, RuleCaller, Stored, publish};
use crate::{Caller, Invocation, Services, TerminalChoice, ToolContext, ToolError};

/// Timing and limits of the engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ManagedSettings {
    /// How often rules are claimed and leases renewed (default 2 s).
    pub claim_interval: Duration,
    /// How long a claim holds without renewal (default 6 s).
    pub lease: Duration,
    /// How long a terminal may push nothing before it is polled (default 1 s).
    pub poll_interval: Duration,
    /// How old the terminal's positions and orders may be when a rule decides (default 5 s).
    pub book_max_age: Duration,
    /// Most actions per second of one rule (default 2).
    pub max_actions_per_second: f64,
    /// Dispatch timeout of a read or an action (default 10 s).
    pub timeout: Duration,
}

impl Default for ManagedSettings {
    fn default() -> Self {
        Self {
            claim_interval: Duration::from_secs(2),
            lease: Duration::from_secs(6),
            poll_interval: Duration::from_secs(1),
            book_max_age: Duration::from_secs(5),
            max_actions_per_second: 2.0,
            timeout: Duration::from_secs(10),
        }
    }
}

/// Something an agent pushed (or the gateway saw).
#[derive(Debug, Clone)]
pub enum ManagedEvent {
    /// A quote.
    Quote {
        /// License owning the terminal.
        license_id: String,
        /// The terminal.
        terminal_id: String,
        /// The quote.
        tick: Tick,
    },
    /// A trade event: positions or orders changed.
    Trade {
        /// License owning the terminal.
        license_id: String,
        /// The terminal.
        terminal_id: String,
    },
    /// The terminal's agent connected or disconnected.
    Connection {
        /// License owning the terminal.
        license_id: String,
        /// The terminal.
        terminal_id: String,
        /// Connected now.
        connected: bool,
    },
}

/// A running engine; [`ManagedHandle::stop`] stops it (and gives up its claims).
#[derive(Debug)]
pub struct ManagedHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    /// This engine's owner id in the store's claims.
    pub owner: String,
}

impl ManagedHandle {
    /// Stops the engine, releases its claims, and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    /// Stops the engine without releasing its claims (as a crash would:
    /// another engine takes them once their lease lapsed). For tests.
    pub fn abort(self) {
        self.task.abort();
    }
}

type TerminalKey = (String, String);

struct Rule {
    record: ManagedOrderRecord,
    spec: ManagedSpec,
    stored: Stored,
    caller: RuleCaller,
    in_flight: bool,
    last_action: Option<Instant>,
    /// When a trading-disabled pause may be retried.
    retry_at: Option<Instant>,
}

impl Rule {
    fn key(&self) -> TerminalKey {
        (self.record.license_id.clone(), self.record.terminal_id.clone())
    }
}

struct Book {
    positions: Vec<Position>,
    orders: Vec<PendingOrder>,
    fetched: Instant,
    stale: bool,
}

impl Book {
    /// Takes in an action that succeeded, sent at `sent`. A book read before
    /// the action was sent cannot hold its effect: the action is applied to
    /// it. A book read since (a trade event refreshed it while the action
    /// was in flight) may or may not hold it — applying it again would, for
    /// a partial close, take the volume off twice and lose the position
    /// from the view — so it is read again before the next decision.
    fn done(&mut self, action: &Action, sent: Option<Instant>) {
        if sent.is_some_and(|s| self.fetched <= s) {
            apply(action, &mut self.positions, &mut self.orders);
        } else {
            self.stale = true;
        }
    }
}

struct Done {
    id: String,
    step: u64,
    action: Action,
    result: Result<Value, ToolError>,
}

struct Engine {
    services: Arc<Services>,
    settings: ManagedSettings,
    owner: String,
    rules: HashMap<String, Rule>,
    books: HashMap<TerminalKey, Book>,
    ticks: HashMap<(TerminalKey, String), Tick>,
    specs: HashMap<(TerminalKey, String), SymbolSpec>,
    last_quote: HashMap<TerminalKey, Instant>,
    done_tx: mpsc::UnboundedSender<Done>,
}

/// Starts the engine. `events`: what the agents push (`None`: poll only).
pub fn spawn(
    services: Arc<Services>,
    settings: ManagedSettings,
    events: Option<mpsc::Receiver<ManagedEvent>>,
) -> ManagedHandle {
    let owner = tradeterm_store::keys::new_id("inst_");
    let (stop, mut stopped) = watch::channel(false);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut engine = Engine {
        services,
        settings,
        owner: owner.clone(),
        rules: HashMap::new(),
        books: HashMap::new(),
        ticks: HashMap::new(),
        specs: HashMap::new(),
        last_quote: HashMap::new(),
        done_tx,
    };
    let task = tokio::spawn(async move {
        let mut events = events;
        let mut claim = tokio::time::interval(settings.claim_interval.max(Duration::from_millis(50)));
        claim.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut poll = tokio::time::interval(settings.poll_interval.max(Duration::from_millis(50)));
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stopped.changed() => break,
                Some(done) = done_rx.recv() => engine.on_done(done).await,
                event = next_event(&mut events) => match event {
                    Some(e) => engine.on_event(e).await,
                    None => events = None,
                },
                _ = claim.tick() => engine.claim().await,
                _ = poll.tick() => engine.poll().await,
            }
        }
        // Actions in flight finish (their outcome is recorded) before the claims go.
        while engine.rules.values().any(|r| r.in_flight) {
            match tokio::time::timeout(settings.timeout, done_rx.recv()).await {
                Ok(Some(done)) => engine.on_done(done).await,
                _ => break,
            }
        }
        if let Err(e) = engine.services.store.release_managed_orders(&engine.owner).await {
            tracing::warn!(error = %e, "managed exits: claims not released (they lapse)");
        }
    });
    ManagedHandle { stop, task, owner }
}

async fn next_event(events: &mut Option<mpsc::Receiver<ManagedEvent>>) -> Option<ManagedEvent> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Whether a tool error says the terminal cannot be reached.
fn unreachable(e: &ToolError) -> bool {
    matches!(e, ToolError::Dispatch(m) if m.starts_with("terminal unreachable"))
}

impl Engine {
    fn context(&self, rule: &Rule) -> ToolContext {
        let caller = Caller {
            license_id: rule.record.license_id.clone(),
            credential: format!("managed:{}", rule.record.id),
            caps: rule.caller.caps.clone(),
        };
        let mut ctx = ToolContext::new(self.services.clone(), caller, Some(rule.record.terminal_id.clone()));
        ctx.timeout = self.settings.timeout.min(ctx.timeout);
        ctx
    }

    /// Renews this engine's claims and takes lapsed ones.
    async fn claim(&mut self) {
        let now = now_ms();
        let lease_until = now + self.settings.lease.as_millis() as i64;
        let records = match self
            .services
            .store
            .claim_managed_orders(&self.owner, now, lease_until)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "managed exits: claims not renewed");
                return;
            }
        };
        let held: HashSet<String> = records.iter().map(|r| r.id.clone()).collect();
        self.rules.retain(|id, r| held.contains(id) || r.in_flight);
        let mut taken = Vec::new();
        for record in records {
            if let Some(rule) = self.rules.get_mut(&record.id) {
                if rule.record.version == record.version {
                    rule.record.owner = record.owner;
                    rule.record.lease_until = record.lease_until;
                    continue;
                }
                if rule.in_flight {
                    continue;
                }
            }
            let spec = match serde_json::from_value::<ManagedSpec>(record.spec.clone()) {
                Ok(s) => s,
                Err(_) => {
                    tracing::warn!(managed = %record.id, "managed exits: a stored rule is not readable; skipped");
                    continue;
                }
            };
            let caller = serde_json::from_value(record.caller.clone()).unwrap_or(RuleCaller {
                credential: String::new(),
                caps: Vec::new(),
            });
            tracing::info!(managed = %record.id, owner = %self.owner, "managed exit claimed");
            taken.push((record.license_id.clone(), record.terminal_id.clone()));
            let stored = Stored::of(&record);
            self.rules.insert(
                record.id.clone(),
                Rule {
                    record,
                    spec,
                    stored,
                    caller,
                    in_flight: false,
                    last_action: None,
                    retry_at: None,
                },
            );
        }
        // A rule just taken decides on a fresh view of its terminal.
        for key in taken {
            if let Some(b) = self.books.get_mut(&key) {
                b.stale = true;
            }
        }
    }

    async fn on_event(&mut self, event: ManagedEvent) {
        match event {
            ManagedEvent::Quote {
                license_id,
                terminal_id,
                tick,
            } => {
                let key = (license_id, terminal_id);
                let watched: Vec<String> = self
                    .rules
                    .values()
                    .filter(|r| r.key() == key && r.stored.symbol.eq_ignore_ascii_case(&tick.symbol))
                    .map(|r| r.record.id.clone())
                    .collect();
                if watched.is_empty() {
                    return;
                }
                self.last_quote.insert(key.clone(), Instant::now());
                let symbol = self.rules[&watched[0]].stored.symbol.clone();
                self.ticks.insert((key.clone(), symbol), tick);
                self.evaluate_terminal(&key, Some(&watched)).await;
            }
            ManagedEvent::Trade {
                license_id,
                terminal_id,
            } => {
                let key = (license_id, terminal_id);
                if !self.rules.values().any(|r| r.key() == key) {
                    return;
                }
                if let Some(b) = self.books.get_mut(&key) {
                    b.stale = true;
                }
                self.evaluate_terminal(&key, None).await;
            }
            ManagedEvent::Connection {
                license_id,
                terminal_id,
                connected,
            } => {
                let key = (license_id, terminal_id);
                if connected {
                    if let Some(b) = self.books.get_mut(&key) {
                        b.stale = true;
                    }
                    self.evaluate_terminal(&key, None).await;
                } else {
                    self.pause_terminal(&key, "terminal_unreachable", "the terminal's agent disconnected")
                        .await;
                }
            }
        }
    }

    /// Polls terminals that pushed nothing lately, and paused ones.
    async fn poll(&mut self) {
        let keys: HashSet<TerminalKey> = self.rules.values().map(Rule::key).collect();
        for key in keys {
            let quiet = self
                .last_quote
                .get(&key)
                .is_none_or(|t| t.elapsed() >= self.settings.poll_interval);
            if quiet {
                let symbols: HashSet<String> = self
                    .rules
                    .values()
                    .filter(|r| r.key() == key && r.record.status == ManagedStatus::Active)
                    .map(|r| r.stored.symbol.clone())
                    .collect();
                for symbol in symbols {
                    match self
                        .services
                        .dispatch
                        .execute(
                            &key.0,
                            &key.1,
                            Command::Tick { symbol: symbol.clone() },
                            self.settings.timeout,
                        )
                        .await
                    {
                        Ok(CommandResult::Tick(t)) => {
                            self.ticks.insert((key.clone(), symbol), t);
                        }
                        Ok(_) => {}
                        Err(DispatchError::Unreachable) => {
                            self.pause_terminal(
                                &key,
                                "terminal_unreachable",
                                "terminal unreachable: no agent is connected",
                            )
                            .await;
                        }
                        Err(e) => tracing::debug!(terminal = %key.1, error = %e, "managed exits: quote not read"),
                    }
                }
            }
            self.evaluate_terminal(&key, None).await;
        }
    }

    /// Reads the terminal's positions and orders.
    async fn refresh(&mut self, key: &TerminalKey) -> Result<(), DispatchError> {
        let dispatch = &self.services.dispatch;
        let timeout = self.settings.timeout;
        let (p, o) = futures_util::future::join(
            dispatch.execute(&key.0, &key.1, Command::Positions { symbol: None }, timeout),
            dispatch.execute(&key.0, &key.1, Command::Orders { symbol: None }, timeout),
        )
        .await;
        let positions = match p? {
            CommandResult::Positions { positions } => positions,
            _ => return Err(DispatchError::Gateway("unexpected answer to positions".into())),
        };
        let orders = match o? {
            CommandResult::Orders { orders } => orders,
            _ => return Err(DispatchError::Gateway("unexpected answer to orders".into())),
        };
        self.books.insert(
            key.clone(),
            Book {
                positions,
                orders,
                fetched: Instant::now(),
                stale: false,
            },
        );
        Ok(())
    }

    /// Evaluates the rules of a terminal (all, or those listed), reading its
    /// book first when it is stale, resuming paused rules when it answers.
    async fn evaluate_terminal(&mut self, key: &TerminalKey, only: Option<&[String]>) {
        let ids: Vec<String> = match only {
            Some(ids) => ids.to_vec(),
            None => self
                .rules
                .values()
                .filter(|r| &r.key() == key)
                .map(|r| r.record.id.clone())
                .collect(),
        };
        if ids.is_empty() {
            return;
        }
        let any_live = ids
            .iter()
            .any(|id| self.rules.get(id).is_some_and(|r| !r.record.dry_run));
        let any_paused = ids.iter().any(|id| {
            self.rules
                .get(id)
                .is_some_and(|r| r.record.status == ManagedStatus::Paused)
        });
        let needs_book = self
            .books
            .get(key)
            .is_none_or(|b| b.stale || b.fetched.elapsed() >= self.settings.book_max_age);
        if (any_live && needs_book) || any_paused {
            match self.refresh(key).await {
                Ok(()) => self.resume_terminal(key).await,
                Err(DispatchError::Unreachable) => {
                    self.pause_terminal(
                        key,
                        "terminal_unreachable",
                        "terminal unreachable: no agent is connected",
                    )
                    .await;
                    return;
                }
                Err(e) => {
                    tracing::debug!(terminal = %key.1, error = %e, "managed exits: positions and orders not read");
                    if any_live {
                        return;
                    }
                }
            }
        }
        for id in ids {
            self.evaluate(&id).await;
        }
    }

    async fn pause_terminal(&mut self, key: &TerminalKey, reason: &str, message: &str) {
        let ids: Vec<String> = self
            .rules
            .values()
            .filter(|r| &r.key() == key && r.record.status == ManagedStatus::Active && !r.record.dry_run)
            .map(|r| r.record.id.clone())
            .collect();
        for id in ids {
            self.pause(&id, reason, message).await;
        }
    }

    async fn pause(&mut self, id: &str, reason: &str, message: &str) {
        let Some(rule) = self.rules.get_mut(id) else { return };
        if rule.record.status != ManagedStatus::Active {
            return;
        }
        rule.record.status = ManagedStatus::Paused;
        rule.stored.error = Some(format!("paused: {message}"));
        if reason == "trading_disabled" {
            rule.retry_at = Some(Instant::now() + Duration::from_secs(30));
        }
        if self.persist(id, ManagedStatus::Paused, None).await {
            let rule = &self.rules[id];
            tracing::info!(managed = %id, reason, "managed exit paused");
            publish(
                &self.services,
                &rule.record,
                &rule.stored.symbol,
                EventType::ManagedPaused,
                format!("paused: {message}"),
                None,
                Some(reason),
            );
        }
    }

    async fn resume_terminal(&mut self, key: &TerminalKey) {
        let ids: Vec<String> = self
            .rules
            .values()
            .filter(|r| {
                &r.key() == key
                    && r.record.status == ManagedStatus::Paused
                    && r.retry_at.is_none_or(|t| Instant::now() >= t)
            })
            .map(|r| r.record.id.clone())
            .collect();
        if !ids.is_empty() {
            // Quotes from before the pause are stale: decide on a fresh one.
            self.ticks.retain(|(k, _), _| k != key);
            self.last_quote.remove(key);
        }
        for id in ids {
            let Some(rule) = self.rules.get_mut(&id) else { continue };
            rule.record.status = ManagedStatus::Active;
            rule.stored.error = None;
            rule.retry_at = None;
            if self.persist(&id, ManagedStatus::Active, None).await {
                let rule = &self.rules[&id];
                tracing::info!(managed = %id, "managed exit resumed");
                publish(
                    &self.services,
                    &rule.record,
                    &rule.stored.symbol,
                    EventType::ManagedResumed,
                    "the terminal is back: acting on the current price".into(),
                    None,
                    None,
                );
            }
        }
    }

    /// Writes the rule's state (compare-and-swap on version and owner).
    /// `false` when it could not be written: the rule is dropped from this
    /// engine (another took it, or the client ended it).
    async fn persist(&mut self, id: &str, status: ManagedStatus, ended: Option<&str>) -> bool {
        let Some(rule) = self.rules.get_mut(id) else {
            return false;
        };
        let state = serde_json::to_value(&rule.stored).unwrap_or(Value::Null);
        let step = ManagedStep {
            id,
            owner: &self.owner,
            expected_version: rule.record.version,
            state: &state,
            status,
            ended_reason: ended,
        };
        match self.services.store.record_managed_step(&step).await {
            Ok(Some(v)) => {
                rule.record.version = v;
                rule.record.status = status;
                rule.record.state = state;
                rule.record.ended_reason = ended.map(str::to_owned);
                if status == ManagedStatus::Ended {
                    self.rules.remove(id);
                }
                true
            }
            Ok(None) => {
                tracing::info!(managed = %id, "managed exit moved on elsewhere (taken by another instance, or removed); dropped here");
                if !rule.in_flight {
                    self.rules.remove(id);
                }
                false
            }
            Err(e) => {
                tracing::warn!(managed = %id, error = %e, "managed exit: state not written");
                false
            }
        }
    }

    async fn end(&mut self, id: &str, reason: tradeterm_core::managed::EndReason) {
        let Some(rule) = self.rules.get(id) else { return };
        let message = match reason {
            tradeterm_core::managed::EndReason::Completed => "done: it did what it was for".to_owned(),
            tradeterm_core::managed::EndReason::PositionClosed => "its position is no longer open".to_owned(),
            tradeterm_core::managed::EndReason::EntryCancelled => {
                "its entry order went away without filling".to_owned()
            }
            tradeterm_core::managed::EndReason::Removed => "removed".to_owned(),
        };
        let (record, symbol) = (rule.record.clone(), rule.stored.symbol.clone());
        if self.persist(id, ManagedStatus::Ended, Some(reason.as_str())).await {
            tracing::info!(managed = %id, reason = reason.as_str(), "managed exit ended");
            let mut record = record;
            record.status = ManagedStatus::Ended;
            publish(
                &self.services,
                &record,
                &symbol,
                EventType::ManagedEnded,
                message,
                None,
                Some(reason.as_str()),
            );
        }
    }

    async fn spec_of(&mut self, id: &str) -> Option<SymbolSpec> {
        let rule = self.rules.get(id)?;
        let k = (rule.key(), rule.stored.symbol.clone());
        if let Some(s) = self.specs.get(&k) {
            return Some(s.clone());
        }
        let ctx = self.context(rule);
        match ctx.spec(&k.1).await {
            Ok(s) => {
                self.specs.insert(k, s.clone());
                Some(s)
            }
            Err(e) => {
                tracing::debug!(managed = %id, error = %e, "managed exits: symbol specification not read");
                None
            }
        }
    }

    /// The trailing distance in price units (the ATR read again once its bar closed).
    async fn distance(&mut self, id: &str, spec: &SymbolSpec) -> Option<f64> {
        let rule = self.rules.get(id)?;
        let ManagedSpec::TrailingStop { distance, .. } = &rule.spec else {
            return None;
        };
        let distance = *distance;
        if matches!(distance, tradeterm_core::managed::TrailDistance::Atr { .. })
            && rule.stored.atr_until.is_none_or(|until| now_ms() >= until)
        {
            let ctx = self.context(rule);
            match atr_now(&ctx, &rule.stored.symbol, &distance).await {
                Ok(Some((atr, until))) => {
                    let rule = self.rules.get_mut(id)?;
                    rule.stored.atr = Some(atr);
                    rule.stored.atr_until = Some(until);
                }
                Ok(None) => {}
                Err(e) => tracing::debug!(managed = %id, error = %e, "managed exits: ATR not read"),
            }
        }
        let rule = self.rules.get(id)?;
        distance.price(spec, rule.stored.atr)
    }

    /// One evaluation of one rule on the latest quote.
    async fn evaluate(&mut self, id: &str) {
        let Some(rule) = self.rules.get(id) else { return };
        if rule.in_flight || rule.record.status != ManagedStatus::Active {
            return;
        }
        let key = rule.key();
        let Some(tick) = self.ticks.get(&(key.clone(), rule.stored.symbol.clone())).cloned() else {
            return;
        };
        let Some(spec) = self.spec_of(id).await else { return };
        let distance = self.distance(id, &spec).await;
        let Some(rule) = self.rules.get(id) else { return };
        if rule.record.dry_run {
            self.evaluate_paper(id, &spec, &tick, distance).await;
            return;
        }
        let Some(book) = self.books.get(&key) else { return };
        if book.stale {
            return;
        }
        let rule = self.rules.get_mut(id).expect("rule present");
        let before = rule.stored.core.clone();
        // An action whose outcome is not known is sent again, as it was, with
        // its key; unless what it acts on is gone.
        let action = if let Some(p) = rule.stored.core.pending {
            let target = match p.action {
                Action::SetStop { ticket, .. } | Action::ClosePartial { ticket, .. } => {
                    book.positions.iter().any(|x| x.ticket == ticket)
                }
                Action::CancelOrder { ticket } => book.orders.iter().any(|x| x.ticket == ticket),
            };
            if target {
                Some(p.action)
            } else {
                rule.stored.core.steps = p.step;
                rule.stored.core.pending = None;
                None
            }
        } else {
            None
        };
        let decision = match action {
            Some(a) => Decision::Act(a),
            None => {
                let view = View {
                    spec: &spec,
                    tick: &tick,
                    positions: &book.positions,
                    orders: &book.orders,
                };
                decide(&rule.spec, &mut rule.stored.core, &view, distance)
            }
        };
        match decision {
            Decision::Wait => {
                if rule.stored.core != before {
                    let status = rule.record.status;
                    self.persist(id, status, None).await;
                }
            }
            Decision::End(reason) => self.end(id, reason).await,
            Decision::Act(action) => {
                let min_gap = Duration::from_secs_f64(1.0 / self.settings.max_actions_per_second.max(0.01));
                if rule.last_action.is_some_and(|t| t.elapsed() < min_gap) {
                    // Decided again on the next quote or poll.
                    rule.stored.core = before;
                    return;
                }
                let step = rule.stored.core.next_step();
                rule.stored.core.pending = Some(tradeterm_core::managed::PendingStep { step, action });
                // Written before it is sent: a takeover re-sends this step with its key.
                if !self.persist(id, ManagedStatus::Active, None).await {
                    return;
                }
                let Some(rule) = self.rules.get_mut(id) else { return };
                rule.in_flight = true;
                rule.last_action = Some(Instant::now());
                self.send(id, step, action);
            }
        }
    }

    fn send(&self, id: &str, step: u64, action: Action) {
        let rule = &self.rules[id];
        let (tool, input) = match action {
            Action::SetStop { ticket, stop_loss } => (
                "modify_position",
                json!({ "ticket": ticket, "stop_loss": stop_loss, "dry_run": false }),
            ),
            Action::CancelOrder { ticket } => ("cancel_order", json!({ "ticket": ticket, "dry_run": false })),
            Action::ClosePartial { ticket, volume } => (
                "close_position",
                json!({ "ticket": ticket, "volume": volume, "dry_run": false }),
            ),
        };
        let caller = Caller {
            license_id: rule.record.license_id.clone(),
            credential: if rule.caller.credential.is_empty() {
                format!("managed:{id}")
            } else {
                rule.caller.credential.clone()
            },
            caps: rule.caller.caps.clone(),
        };
        let mut call = Invocation::new(
            "managed",
            caller,
            TerminalChoice::Bound(rule.record.terminal_id.clone()),
        );
        call.idempotency_key = Some(format!("mx:{id}:{step}"));
        call.credential_label = Some(format!("managed exit {id} ({})", rule.record.label));
        let services = self.services.clone();
        let tx = self.done_tx.clone();
        let id = id.to_owned();
        tracing::info!(managed = %id, step, tool, "managed exit acts");
        tokio::spawn(async move {
            let result = match crate::find(tool) {
                Some(t) => crate::invoke(&services, t, call, input).await,
                None => Err(ToolError::Internal(format!("{tool} missing from the catalog"))),
            };
            let _ = tx.send(Done {
                id,
                step,
                action,
                result,
            });
        });
    }

    async fn on_done(&mut self, done: Done) {
        let Some(rule) = self.rules.get_mut(&done.id) else {
            return;
        };
        rule.in_flight = false;
        let sent = rule.last_action;
        let key = rule.key();
        let symbol = rule.stored.symbol.clone();
        let describe = describe(&done.action);
        match done.result {
            Ok(_) => {
                confirm(&rule.spec, &mut rule.stored.core, &done.action);
                rule.stored.error = None;
                rule.stored.push(LogEntry {
                    time: now_ms(),
                    step: done.step,
                    action: done.action,
                    outcome: "done".into(),
                    message: describe.clone(),
                });
                if let Some(b) = self.books.get_mut(&key) {
                    b.done(&done.action, sent);
                }
                if self.persist(&done.id, ManagedStatus::Active, None).await {
                    let rule = &self.rules[&done.id];
                    publish(
                        &self.services,
                        &rule.record,
                        &symbol,
                        EventType::ManagedAction,
                        describe,
                        Some((&done.action, "done")),
                        None,
                    );
                }
            }
            Err(e) if unreachable(&e) => {
                self.pause(&done.id, "terminal_unreachable", &e.to_string()).await;
                return;
            }
            Err(ToolError::TradingDisabled(m)) => {
                rule.stored.core.steps = done.step;
                rule.stored.core.pending = None;
                self.pause(&done.id, "trading_disabled", &m).await;
                return;
            }
            Err(
                e @ (ToolError::Dispatch(_) | ToolError::Gateway(_) | ToolError::Internal(_) | ToolError::Conflict(_)),
            ) => {
                // Outcome unknown (or the same step still in progress
                // elsewhere): the step stays pending and is sent again.
                rule.stored.error = Some(format!("{describe}: {e}"));
                if let Some(b) = self.books.get_mut(&key) {
                    b.stale = true;
                }
                tracing::warn!(managed = %done.id, step = done.step, error = %e, "managed exit action: outcome unknown, will be sent again");
                let status = rule.record.status;
                self.persist(&done.id, status, None).await;
            }
            Err(e) => {
                // Refused for good: the step is used up; the next decision
                // is made on a fresh view.
                let outcome = if matches!(e, ToolError::Rejected { .. }) {
                    "rejected"
                } else {
                    "failed"
                };
                rule.stored.core.steps = done.step;
                rule.stored.core.pending = None;
                rule.stored.error = Some(format!("{describe}: {e}"));
                rule.stored.push(LogEntry {
                    time: now_ms(),
                    step: done.step,
                    action: done.action,
                    outcome: outcome.into(),
                    message: format!("{describe}: {e}"),
                });
                if let Some(b) = self.books.get_mut(&key) {
                    b.stale = true;
                }
                tracing::warn!(managed = %done.id, step = done.step, error = %e, "managed exit action refused");
                let status = rule.record.status;
                if self.persist(&done.id, status, None).await {
                    let rule = &self.rules[&done.id];
                    publish(
                        &self.services,
                        &rule.record,
                        &symbol,
                        EventType::ManagedAction,
                        format!("{describe}: {e}"),
                        Some((&done.action, outcome)),
                        None,
                    );
                }
            }
        }
        // Catch up on the latest quote at once.
        self.evaluate_terminal(&key, Some(&[done.id])).await;
    }

    /// A dry-run rule: the paper book moves with the quote, the rule acts on it.
    async fn evaluate_paper(&mut self, id: &str, spec: &SymbolSpec, tick: &Tick, distance: Option<f64>) {
        let Some(rule) = self.rules.get_mut(id) else { return };
        let paper = rule.stored.paper.get_or_insert_with(Default::default);
        let shape = |p: &tradeterm_core::managed::Paper| {
            (
                p.orders.len(),
                p.positions
                    .iter()
                    .map(|x| (x.ticket, x.stop_loss, x.volume.to_bits()))
                    .collect::<Vec<_>>(),
                p.fills.len(),
            )
        };
        let before = (shape(paper), rule.stored.core.clone());
        paper.on_tick(spec, tick);
        let mut actions = Vec::new();
        let mut ended = None;
        // A few steps at most on one quote (a bracket's close, then its stop).
        for _ in 0..4 {
            let paper = rule.stored.paper.as_mut().expect("paper book");
            let view = View {
                spec,
                tick,
                positions: &paper.positions,
                orders: &paper.orders,
            };
            match decide(&rule.spec, &mut rule.stored.core, &view, distance) {
                Decision::Wait => break,
                Decision::End(r) => {
                    ended = Some(r);
                    break;
                }
                Decision::Act(a) => {
                    let step = rule.stored.core.next_step();
                    paper.apply(&a);
                    confirm(&rule.spec, &mut rule.stored.core, &a);
                    let message = format!("would {}", describe(&a));
                    rule.stored.push(LogEntry {
                        time: tick.time,
                        step,
                        action: a,
                        outcome: "would_do".into(),
                        message: message.clone(),
                    });
                    actions.push((a, message));
                }
            }
        }
        let changed = (
            shape(rule.stored.paper.as_ref().expect("paper book")),
            rule.stored.core.clone(),
        ) != before;
        let (record, symbol) = (rule.record.clone(), rule.stored.symbol.clone());
        if let Some(reason) = ended {
            self.end(id, reason).await;
        } else if changed && !self.persist(id, ManagedStatus::Active, None).await {
            return;
        }
        for (a, message) in actions {
            publish(
                &self.services,
                &record,
                &symbol,
                EventType::ManagedAction,
                message,
                Some((&a, "would_do")),
                None,
            );
        }
    }
}

fn describe(a: &Action) -> String {
    match *a {
        Action::SetStop { ticket, stop_loss } => format!("move the stop loss of position {ticket} to {stop_loss}"),
        Action::CancelOrder { ticket } => format!("cancel order {ticket}"),
        Action::ClosePartial { ticket, volume } => format!("close {volume} lots of position {ticket}"),
    }
}

/// What the engine needs of the event pipeline's live feed (a split
/// deployment's API instances, which see no agent): quotes, trade events and
/// connections of every license, as [`ManagedEvent`]s. Quotes there are
/// conflated by the publisher (at most one per symbol per quote interval).
pub fn feed_from_bus(publisher: &tradeterm_events::Publisher) -> mpsc::Receiver<ManagedEvent> {
    let (tx, rx) = mpsc::channel(4096);
    forward_bus(publisher, tx, false);
    rx
}

/// Forwards the live feed's events into `tx`: every kind the engine uses,
/// or (`connections_only`, a node whose gateway feeds quotes and trades
/// directly) only the terminals' connections and disconnections.
pub fn forward_bus(publisher: &tradeterm_events::Publisher, tx: mpsc::Sender<ManagedEvent>, connections_only: bool) {
    let mut live = publisher.bus().live();
    tokio::spawn(async move {
        loop {
            let (license, event) = match live.recv().await {
                Ok(Live::Event { license, event }) => (license, event),
                Ok(Live::Resync) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::debug!(skipped = n, "managed exits: live events skipped (the poll covers them)");
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            };
            let Some(terminal_id) = event.terminal_id.clone() else {
                continue;
            };
            let license_id = license.to_string();
            use EventType::*;
            let out = match event.kind {
                Quote if !connections_only => {
                    match serde_json::from_value::<tradeterm_events::model::QuoteData>(event.data.clone()) {
                        Ok(q) => ManagedEvent::Quote {
                            license_id,
                            terminal_id,
                            tick: Tick {
                                symbol: q.symbol,
                                bid: q.bid,
                                ask: q.ask,
                                time: q.time,
                            },
                        },
                        Err(_) => continue,
                    }
                }
                OrderPlaced | OrderModified | OrderFilled | OrderCancelled | OrderExpired | PositionOpened
                | PositionModified | PositionClosed | DealAdded
                    if !connections_only =>
                {
                    ManagedEvent::Trade {
                        license_id,
                        terminal_id,
                    }
                }
                TerminalConnected => ManagedEvent::Connection {
                    license_id,
                    terminal_id,
                    connected: true,
                },
                TerminalDisconnected => ManagedEvent::Connection {
                    license_id,
                    terminal_id,
                    connected: false,
                },
                _ => continue,
            };
            // The engine may drop an event under load: it polls.
            if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(out) {
                break;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use tradeterm_core::Side;

    use super::*;

    fn book(volume: f64, fetched: Instant) -> Book {
        Book {
            positions: vec![Position {
                ticket: 7,
                symbol: "EURUSD".into(),
                side: Side::Buy,
                volume,
                open_price: 1.1,
                open_time: 0,
                stop_loss: None,
                take_profit: None,
                current_price: 1.1,
                swap: 0.0,
                commission: 0.0,
                profit: 0.0,
                magic: 0,
                comment: String::new(),
            }],
            orders: Vec::new(),
            fetched,
            stale: false,
        }
    }

    const HALF: Action = Action::ClosePartial { ticket: 7, volume: 0.1 };

    #[test]
    fn a_done_action_is_applied_to_a_book_read_before_it_was_sent() {
        let read = Instant::now();
        let sent = read + Duration::from_millis(5);
        let mut b = book(0.2, read);
        b.done(&HALF, Some(sent));
        assert!(!b.stale);
        assert_eq!(b.positions.len(), 1);
        assert!((b.positions[0].volume - 0.1).abs() < 1e-12);
    }

    #[test]
    fn a_book_read_while_the_action_was_in_flight_is_read_again_not_applied_twice() {
        // The trade event of the partial close refreshed the book (0.1 lots
        // left) before the close's answer came back: taking 0.1 off again
        // would drop the position from the view and end a bracket as if
        // its position had closed.
        let sent = Instant::now();
        let mut b = book(0.1, sent + Duration::from_millis(5));
        b.done(&HALF, Some(sent));
        assert!(b.stale, "the book is read again before the next decision");
        assert_eq!(b.positions.len(), 1, "the position is still in the view");
        assert!((b.positions[0].volume - 0.1).abs() < 1e-12);
    }
}
