//! What the gateway and the rule engines call to publish: never blocking,
//! never dropping an event but conflatable quotes.
//!
//! One task appends every event in the order it was handed over (per
//! process), retrying a failing engine with backoff rather than dropping
//! anything. Quotes skip that queue: the latest of each terminal and symbol
//! waits in a slot and a second task broadcasts the slots every
//! [`PublisherSettings::quote_interval`], so a stalled engine costs at most
//! one quote per symbol of memory. Account readings are throttled per
//! terminal to one every [`PublisherSettings::account_interval`], the latest
//! reading winning (the last one is always sent).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tradeterm_protocol::agent::Permissions;

use crate::interest::BarInterests;
use crate::translate::{Out, Translator};
use crate::{Draft, EventBus, now_ms};

/// Settings of a [`Publisher`].
#[derive(Debug, Clone, Copy)]
pub struct PublisherSettings {
    /// Quotes of one symbol of one terminal are broadcast at most this often.
    pub quote_interval: Duration,
    /// `account.changed` of one terminal is appended at most this often.
    pub account_interval: Duration,
}

impl Default for PublisherSettings {
    fn default() -> Self {
        Self {
            quote_interval: Duration::from_millis(100),
            account_interval: Duration::from_secs(1),
        }
    }
}

enum Input {
    Agent {
        license: String,
        terminal: String,
        event: tradeterm_protocol::Event,
    },
    Connected {
        license: String,
        terminal: String,
        agent: (String, String),
        permissions: Permissions,
    },
    Disconnected {
        license: String,
        terminal: String,
        reason: String,
    },
    Draft {
        license: String,
        draft: Draft,
    },
}

type QuoteKey = (String, String, String);

struct Inner {
    tx: mpsc::UnboundedSender<Input>,
    quotes: Mutex<HashMap<QuoteKey, Draft>>,
    /// Inputs handed over and not yet appended.
    pending: AtomicUsize,
    drained: Notify,
    bus: Arc<dyn EventBus>,
    bar_interests: Arc<BarInterests>,
}

/// The publishing side of the pipeline. Cheap to clone; the tasks end when
/// the last clone is dropped (after appending what was handed over).
#[derive(Clone)]
pub struct Publisher {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("engine", &self.inner.bus.engine())
            .field("pending", &self.inner.pending.load(Ordering::Relaxed))
            .finish()
    }
}

impl Publisher {
    /// A publisher into `bus` (spawns its tasks on the current tokio runtime).
    pub fn spawn(bus: Arc<dyn EventBus>, settings: PublisherSettings) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            tx,
            quotes: Mutex::new(HashMap::new()),
            pending: AtomicUsize::new(0),
            drained: Notify::new(),
            bus,
            bar_interests: Arc::default(),
        });
        tokio::spawn(append_loop(Arc::downgrade(&inner), inner.bus.clone(), rx, settings));
        tokio::spawn(quote_loop(Arc::downgrade(&inner), settings.quote_interval));
        Self { inner }
    }

    /// The engine behind it.
    pub fn bus(&self) -> &Arc<dyn EventBus> {
        &self.inner.bus
    }

    /// The bars this process's subscribers asked for (`bar.closed`): the
    /// event stream registers them, the bar watcher reads them.
    pub fn bar_interests(&self) -> &Arc<BarInterests> {
        &self.inner.bar_interests
    }

    fn send(&self, input: Input) {
        self.inner.pending.fetch_add(1, Ordering::SeqCst);
        if self.inner.tx.send(input).is_err() {
            self.inner.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// An event pushed by the agent of `terminal`.
    pub fn agent_event(&self, license: &str, terminal: &str, event: &tradeterm_protocol::Event) {
        if let tradeterm_protocol::Event::Tick(tick) = event {
            let draft = Draft::new(
                crate::EventType::Quote,
                now_ms(),
                Some(terminal),
                &crate::model::QuoteData::from(tick),
            );
            let key = (license.to_owned(), terminal.to_owned(), tick.symbol.clone());
            self.inner
                .quotes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(key, draft);
            return;
        }
        self.send(Input::Agent {
            license: license.to_owned(),
            terminal: terminal.to_owned(),
            event: event.clone(),
        });
    }

    /// The agent of `terminal` connected.
    pub fn connected(&self, license: &str, terminal: &str, agent: (&str, &str), permissions: Permissions) {
        self.send(Input::Connected {
            license: license.to_owned(),
            terminal: terminal.to_owned(),
            agent: (agent.0.to_owned(), agent.1.to_owned()),
            permissions,
        });
    }

    /// The agent of `terminal` disconnected.
    pub fn disconnected(&self, license: &str, terminal: &str, reason: &str) {
        self.send(Input::Disconnected {
            license: license.to_owned(),
            terminal: terminal.to_owned(),
            reason: reason.to_owned(),
        });
    }

    /// An event decided by the server (a rule engine).
    pub fn publish(&self, license: &str, draft: Draft) {
        self.send(Input::Draft {
            license: license.to_owned(),
            draft,
        });
    }

    /// Waits until everything handed over so far is appended (or `limit`
    /// passes); `true` when it was.
    pub async fn flush(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let drained = self.inner.drained.notified();
            if self.inner.pending.load(Ordering::SeqCst) == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, drained).await.is_err() {
                return self.inner.pending.load(Ordering::SeqCst) == 0;
            }
        }
    }
}

/// Appends `draft`, retrying while the engine fails (an event is never dropped).
async fn append_retrying(bus: &dyn EventBus, license: &str, draft: Draft) {
    let mut backoff = Duration::from_millis(50);
    let mut warned = false;
    loop {
        match bus.append(license, draft.clone()).await {
            Ok(_) => {
                if warned {
                    tracing::info!("event engine reachable again: events are published");
                }
                return;
            }
            Err(e) => {
                if !warned {
                    tracing::warn!(error = %e, kind = %draft.kind, "event not appended; retrying until the engine answers");
                    warned = true;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// Throttle state of one terminal's account readings.
struct Throttle {
    last_sent: i64,
    waiting: Option<(String, Draft)>,
}

async fn append_loop(
    inner: std::sync::Weak<Inner>,
    bus: Arc<dyn EventBus>,
    mut rx: mpsc::UnboundedReceiver<Input>,
    settings: PublisherSettings,
) {
    let mut translator = Translator::default();
    let mut accounts: HashMap<(String, String), Throttle> = HashMap::new();
    let account_ms = settings.account_interval.as_millis() as i64;
    let mut tick = tokio::time::interval(settings.account_interval.max(Duration::from_millis(10)) / 4);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let input = tokio::select! {
            input = rx.recv() => input,
            _ = tick.tick() => {
                // Account readings held back by the throttle, once due.
                let now = now_ms();
                for throttle in accounts.values_mut() {
                    if now - throttle.last_sent >= account_ms && let Some((license, draft)) = throttle.waiting.take() {
                        throttle.last_sent = now;
                        append_retrying(bus.as_ref(), &license, draft).await;
                    }
                }
                continue;
            }
        };
        let Some(input) = input else { break };
        let now = now_ms();
        let (license, outs) = match input {
            Input::Agent {
                license,
                terminal,
                event,
            } => {
                let outs = translator.agent_event(&license, &terminal, &event, now);
                (license, outs)
            }
            Input::Connected {
                license,
                terminal,
                agent,
                permissions,
            } => {
                let outs = translator.connected(&license, &terminal, (&agent.0, &agent.1), permissions, now);
                (license, outs)
            }
            Input::Disconnected {
                license,
                terminal,
                reason,
            } => {
                let outs = translator.disconnected(&license, &terminal, &reason, now);
                (license, outs)
            }
            Input::Draft { license, draft } => (license, vec![Out::Append(draft)]),
        };
        for out in outs {
            match out {
                Out::Append(draft) => append_retrying(bus.as_ref(), &license, draft).await,
                Out::Quote(draft) => {
                    let _ = bus.broadcast(&license, draft).await;
                }
                Out::Account(draft) => {
                    let key = (license.clone(), draft.terminal_id.clone().unwrap_or_default());
                    let throttle = accounts.entry(key).or_insert(Throttle {
                        last_sent: i64::MIN / 2,
                        waiting: None,
                    });
                    if now - throttle.last_sent >= account_ms {
                        throttle.last_sent = now;
                        throttle.waiting = None;
                        append_retrying(bus.as_ref(), &license, draft).await;
                    } else {
                        throttle.waiting = Some((license.clone(), draft));
                    }
                }
            }
        }
        let Some(inner) = inner.upgrade() else { continue };
        if inner.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            inner.drained.notify_waiters();
        }
    }
}

async fn quote_loop(inner: std::sync::Weak<Inner>, every: Duration) {
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let quotes: Vec<(QuoteKey, Draft)> = inner
            .quotes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain()
            .collect();
        for ((license, _, _), draft) in quotes {
            if let Err(e) = inner.bus.broadcast(&license, draft).await {
                tracing::debug!(error = %e, "quote not broadcast (quotes are conflated; the next one follows)");
            }
        }
    }
}
