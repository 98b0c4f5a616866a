//! The news guard's push side: `news_guard.alert` events (`docs/events.md`).
//!
//! `poll_alerts` computes the guard's alerts when it is asked; this watcher
//! computes the same alerts (`alerts::news_alerts`: watched releases
//! `lead_minutes` ahead, news items about watched currencies) every
//! [`NewsWatchSettings::interval`] for every enabled license with a guard,
//! over the time since its previous round, and publishes each new one once
//! into the event pipeline. Every API process runs one; each alert is
//! published once across them (a `SET NX` in Redis per license and alert
//! id, kept 48 h; in memory without Redis). A process that starts looks
//! back one interval; alerts due while no process ran are still delivered
//! by `poll_alerts`, which computes them from the calendar.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tradeterm_events::model::RuleData;
use tradeterm_events::{Draft, EventType};

use crate::alerts::{NewsGuard, news_alerts};
use crate::{Caller, Services, ToolContext};

/// How long an alert id is remembered (longer than any lead and lookback).
const REMEMBER_MS: i64 = 48 * 3_600_000;

/// Timing of the watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewsWatchSettings {
    /// How often the guards are evaluated (default 15 s).
    pub interval: Duration,
}

impl Default for NewsWatchSettings {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(15),
        }
    }
}

/// A running watcher; [`NewsWatchHandle::stop`] stops it.
#[derive(Debug)]
pub struct NewsWatchHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl NewsWatchHandle {
    /// Stops the watcher and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Starts the watcher (nothing is published without an event pipeline).
pub fn spawn(services: Arc<Services>, settings: NewsWatchSettings) -> NewsWatchHandle {
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        let interval = settings.interval.max(Duration::from_millis(50));
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut after = now_ms() - interval.as_millis() as i64;
        let mut seen: HashMap<(String, String), i64> = HashMap::new();
        loop {
            tokio::select! {
                _ = stopped.changed() => break,
                _ = tick.tick() => {
                    let now = now_ms();
                    round(&services, after, &mut seen).await;
                    after = now;
                    seen.retain(|_, at| *at > now - REMEMBER_MS);
                }
            }
        }
    });
    NewsWatchHandle { stop, task }
}

/// One round: every guard's alerts since `after`, each new one published.
async fn round(services: &Arc<Services>, after: i64, seen: &mut HashMap<(String, String), i64>) {
    if services.events.is_none() {
        return;
    }
    let guards = match services.store.all_news_guards().await {
        Ok(g) => g,
        Err(e) => {
            tracing::warn!(error = %e, "news guard watcher: the guards could not be read");
            return;
        }
    };
    for record in guards {
        let Ok(guard) = serde_json::from_value::<NewsGuard>(record.config.clone()) else {
            tracing::warn!(license = %record.license_id, "news guard watcher: a stored guard is not valid; skipped");
            continue;
        };
        let caller = Caller {
            license_id: record.license_id.clone(),
            credential: "news-guard".into(),
            caps: Vec::new(),
        };
        let ctx = ToolContext::new(services.clone(), caller, None);
        let mut notes = Vec::new();
        let alerts = match news_alerts(&ctx, &guard, after, &mut notes).await {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(license = %record.license_id, error = %e, "news guard watcher: alerts not computed");
                continue;
            }
        };
        for (at, alert) in alerts {
            if !first_time(services, seen, &record.license_id, &alert.id, at).await {
                continue;
            }
            let data = RuleData {
                rule: "news_guard".into(),
                message: alert.title.clone(),
                symbol: None,
                details: serde_json::to_value(&alert).unwrap_or_default(),
            };
            if let Some(events) = &services.events {
                events.publish(
                    &record.license_id,
                    Draft::new(EventType::NewsGuardAlert, at, None, &data),
                );
            }
        }
    }
}

/// Whether this is the first time any instance publishes this alert.
async fn first_time(
    services: &Services,
    seen: &mut HashMap<(String, String), i64>,
    license: &str,
    id: &str,
    at: i64,
) -> bool {
    let key = (license.to_owned(), id.to_owned());
    if seen.contains_key(&key) {
        return false;
    }
    seen.insert(key, at);
    let Some(pool) = &services.rate_limits.redis else {
        return true;
    };
    let redis_key = format!("tt:news-alert:{license}:{id}");
    let claimed: Result<Option<String>, String> = async {
        let mut conn = pool.get().await.map_err(|e| e.to_string())?;
        deadpool_redis::redis::cmd("SET")
            .arg(&redis_key)
            .arg(1)
            .arg("NX")
            .arg("EX")
            .arg(REMEMBER_MS / 1000)
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    match claimed {
        Ok(v) => v.is_some(),
        // Redis away: publish (a duplicate is better than a lost warning;
        // events carry the alert's stable id in `details.id`).
        Err(e) => {
            tracing::warn!(error = %e, "news guard watcher: Redis unavailable; publishing without the cross-instance check");
            true
        }
    }
}
