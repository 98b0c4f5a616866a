//! The live monitor of equity guards (and so of prop-firm rules, whose loss
//! limits are an equity guard): evaluates every guarded terminal on each
//! account change its agent pushes, and polls `account_info` through
//! dispatch every [`MonitorSettings::interval`] while positions are open
//! (every [`MonitorSettings::idle_interval`] otherwise), so an intraday
//! breach is recorded when it happens, not when someone asks.
//!
//! The monitor knows no gateway: the binary forwards the agents' `account`
//! events as [`AccountUpdate`]s (single node: from `Gateway::subscribe()`);
//! without events (a split deployment's API instances) it polls only.
//! Several monitors over one store are safe: guard states are written
//! compare-and-swap and breaches are latched, so each is recorded once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tradeterm_core::AccountInfo;

use crate::equity_guard::{needs_open_risk, observation_of, observe, reading_time};
use crate::{Caller, Services, ToolContext, ToolError};

/// Timing of the monitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonitorSettings {
    /// Poll interval of a guarded terminal with open positions (default 2 s).
    pub interval: Duration,
    /// Poll interval of a guarded terminal without open positions (default 30 s).
    pub idle_interval: Duration,
    /// Dispatch timeout of one poll (default 5 s).
    pub timeout: Duration,
}

impl Default for MonitorSettings {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(2),
            idle_interval: Duration::from_secs(30),
            timeout: Duration::from_secs(5),
        }
    }
}

/// An account state an agent pushed.
#[derive(Debug, Clone)]
pub struct AccountUpdate {
    /// License owning the terminal.
    pub license_id: String,
    /// The terminal.
    pub terminal_id: String,
    /// Its account now.
    pub account: AccountInfo,
}

/// A running monitor; dropping it does not stop it, [`MonitorHandle::stop`] does.
#[derive(Debug)]
pub struct MonitorHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl MonitorHandle {
    /// Stops the monitor and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Per-terminal polling memory.
#[derive(Debug, Clone, Copy)]
struct Seen {
    last: Instant,
    positions_open: bool,
}

struct Monitor {
    services: Arc<Services>,
    settings: MonitorSettings,
    seen: HashMap<(String, String), Seen>,
}

/// Starts the monitor on the tokio runtime. `events`: the agents' account
/// updates (`None`: poll only).
pub fn spawn(
    services: Arc<Services>,
    settings: MonitorSettings,
    events: Option<mpsc::Receiver<AccountUpdate>>,
) -> MonitorHandle {
    let (stop, mut stopped) = watch::channel(false);
    let mut monitor = Monitor {
        services,
        settings,
        seen: HashMap::new(),
    };
    let task = tokio::spawn(async move {
        let mut events = events;
        let mut tick = tokio::time::interval(settings.interval.max(Duration::from_millis(50)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stopped.changed() => break,
                update = next_event(&mut events) => match update {
                    Some(u) => monitor.on_event(u).await,
                    None => events = None,
                },
                _ = tick.tick() => monitor.poll_due().await,
            }
        }
    });
    MonitorHandle { stop, task }
}

async fn next_event(events: &mut Option<mpsc::Receiver<AccountUpdate>>) -> Option<AccountUpdate> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

impl Monitor {
    fn context(&self, license_id: &str, terminal_id: &str) -> ToolContext {
        let caller = Caller {
            license_id: license_id.to_owned(),
            credential: "monitor".into(),
            caps: Vec::new(),
        };
        let mut ctx = ToolContext::new(self.services.clone(), caller, Some(terminal_id.to_owned()));
        ctx.timeout = self.settings.timeout.min(ctx.timeout);
        ctx
    }

    /// Evaluates an account reading on the terminal's guards.
    async fn evaluate(
        &self,
        license_id: &str,
        terminal_id: &str,
        account: Option<AccountInfo>,
    ) -> Result<bool, ToolError> {
        let store = self.services.store.as_ref();
        let records = store.equity_guards(license_id, terminal_id).await?;
        if records.is_empty() {
            return Ok(false);
        }
        let ctx = self.context(license_id, terminal_id);
        let account = match account {
            Some(a) => a,
            None => ctx.account().await?,
        };
        let obs = observation_of(&ctx, &account, reading_time(&ctx), needs_open_risk(&records)).await?;
        let guards = observe(
            store,
            self.services.events.as_ref(),
            license_id,
            terminal_id,
            Some(&obs),
        )
        .await?;
        for guard in guards.iter().filter(|guard| guard.error.is_some()) {
            tracing::warn!(
                license = %license_id, terminal = %terminal_id, source = %guard.record.source,
                error = guard.error.as_deref().unwrap_or_default(),
                "equity guard not evaluated"
            );
        }
        Ok(account.margin > 0.0 || account.profit != 0.0)
    }

    async fn on_event(&mut self, update: AccountUpdate) {
        let key = (update.license_id.clone(), update.terminal_id.clone());
        match self
            .evaluate(&update.license_id, &update.terminal_id, Some(update.account))
            .await
        {
            Ok(positions_open) => {
                self.seen.insert(
                    key,
                    Seen {
                        last: Instant::now(),
                        positions_open,
                    },
                );
            }
            Err(e) => {
                tracing::warn!(terminal = %update.terminal_id, error = %e, "equity guard monitor: event not evaluated")
            }
        }
    }

    /// Polls every guarded terminal whose interval has passed, concurrently.
    async fn poll_due(&mut self) {
        let terminals = match self.services.store.guarded_terminals().await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "equity guard monitor: the guarded terminals could not be listed");
                return;
            }
        };
        let now = Instant::now();
        self.seen.retain(|k, _| terminals.contains(k));
        let due: Vec<(String, String)> = terminals
            .into_iter()
            .filter(|k| match self.seen.get(k) {
                None => true,
                Some(s) if s.positions_open => now.duration_since(s.last) >= self.settings.interval,
                Some(s) => now.duration_since(s.last) >= self.settings.idle_interval,
            })
            .collect();
        let this = &*self;
        let results = futures_util::future::join_all(due.iter().map(|(license, terminal)| async move {
            (this.evaluate(license, terminal, None).await, license, terminal)
        }))
        .await;
        let mut updates = Vec::new();
        for (result, license, terminal) in results {
            let positions_open = match result {
                Ok(open) => open,
                // An unreachable terminal is retried at the fast interval.
                Err(e) => {
                    tracing::debug!(terminal = %terminal, error = %e, "equity guard monitor: poll failed");
                    true
                }
            };
            updates.push((
                (license.clone(), terminal.clone()),
                Seen {
                    last: now,
                    positions_open,
                },
            ));
        }
        self.seen.extend(updates);
    }
}
