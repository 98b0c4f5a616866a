//! The one service bundle of a process ([`tradeterm_tools::Services`]) from
//! the settings: the server calendar, news provider and ETF flows, the rate
//! limits and the settings of tool calls. Behind the `services` feature, so
//! that a binary serving no tool (`tradeterm-gateway`) links no tool code.

use std::time::Duration;

use crate::Settings;

impl Settings {
    /// Requests per window per tier (`API_RATE_LIMIT_FREE/_PRO/_TEAM/_ENTERPRISE`).
    pub fn tier_limits(&self) -> tradeterm_tools::ratelimit::TierLimits {
        tradeterm_tools::ratelimit::TierLimits {
            free: self.api_rate_limit_free,
            pro: self.api_rate_limit_pro,
            team: self.api_rate_limit_team,
            enterprise: self.api_rate_limit_enterprise,
        }
    }

    /// Settings of tool calls: production mode and the dispatch timeout.
    pub fn service_settings(&self) -> tradeterm_tools::ServiceSettings {
        tradeterm_tools::ServiceSettings {
            production: self.production(),
            ..tradeterm_tools::ServiceSettings::default()
        }
    }

    /// The one bundle of server-side services of this process, over
    /// `dispatch` and `store`: the server calendar, news provider and ETF
    /// flows, the rate limits (`KEYVALUE_URL`, required in production) and the
    /// settings of tool calls. Every adapter of the process shares it.
    ///
    /// # Errors
    /// A configured file or URL is unusable (see [`Settings::server_calendar`],
    /// [`Settings::news_service`], [`Settings::etf_flows`]), or production
    /// without `KEYVALUE_URL` ([`Settings::redis_pool`]).
    pub fn services(
        &self,
        dispatch: std::sync::Arc<dyn tradeterm_protocol::Dispatch>,
        store: std::sync::Arc<dyn tradeterm_store::Store>,
    ) -> anyhow::Result<std::sync::Arc<tradeterm_tools::Services>> {
        let events = self.event_publisher()?;
        self.services_with_events(dispatch, store, events)
    }

    /// [`Settings::services`] publishing into `events` (the single node shares
    /// one pipeline between its gateway and its services).
    ///
    /// # Errors
    /// As [`Settings::services`].
    pub fn services_with_events(
        &self,
        dispatch: std::sync::Arc<dyn tradeterm_protocol::Dispatch>,
        store: std::sync::Arc<dyn tradeterm_store::Store>,
        events: tradeterm_events::Publisher,
    ) -> anyhow::Result<std::sync::Arc<tradeterm_tools::Services>> {
        // The trade audit log's retention: pruned hourly (`docs/audit.md`).
        if tokio::runtime::Handle::try_current().is_ok() {
            tradeterm_tools::audit::spawn_retention(store.clone(), self.audit_retention_days);
        }
        let redis = self.redis_pool()?;
        if redis.is_none() {
            tracing::info!("KEYVALUE_URL is not set: rate limiting is off (development)");
        }
        Ok(std::sync::Arc::new(tradeterm_tools::Services {
            calendar: self.server_calendar()?,
            news: self.news_service()?,
            etf_flows: self.etf_flows()?,
            rate_limits: tradeterm_tools::RateLimits {
                redis_url: redis.as_ref().and(self.keyvalue_url.clone()),
                redis,
                window: Duration::from_millis(self.api_rate_limit_window_ms),
                tiers: self.tier_limits(),
            },
            settings: self.service_settings(),
            events: Some(events),
            event_stream: self.event_stream_settings(),
            webhooks: self.webhook_settings(),
            ..tradeterm_tools::Services::new(dispatch, store)
        }))
    }

    /// Settings of webhook deliveries (`WEBHOOK_*`): `https://` targets only
    /// in production, private addresses only with `WEBHOOK_ALLOW_PRIVATE`.
    pub fn webhook_settings(&self) -> tradeterm_tools::webhooks::WebhookSettings {
        tradeterm_tools::webhooks::WebhookSettings {
            allow_private: self.webhook_allow_private,
            require_https: self.production(),
            timeout: Duration::from_millis(self.webhook_timeout_ms),
            retry_base: Duration::from_millis(self.webhook_retry_base_ms),
            retry_max: Duration::from_millis(self.webhook_retry_max_ms),
            ..Default::default()
        }
    }

    /// The server calendar: the file of `CALENDAR_FILE` (the override), else
    /// the feed of `CALENDAR_FEED_URL`, fetched at once and refreshed every
    /// `CALENDAR_FEED_REFRESH_SECS` in the background (needs a tokio
    /// runtime), else empty.
    ///
    /// # Errors
    /// The file is set but cannot be read or is not a valid calendar, or the
    /// feed URL is not http(s): the servers refuse to start rather than run
    /// without the fallback they were configured with. An unreachable feed is
    /// not an error (the calendar says it has not been fetched yet).
    pub fn server_calendar(&self) -> anyhow::Result<std::sync::Arc<tradeterm_tools::events::ServerCalendar>> {
        use tradeterm_tools::calendar_feed::{CalendarFeed, spawn_refresh};
        use tradeterm_tools::events::ServerCalendar;
        if let Some(path) = &self.calendar_file {
            let calendar = ServerCalendar::load(path).map_err(|e| anyhow::anyhow!("CALENDAR_FILE: {e}"))?;
            return Ok(std::sync::Arc::new(calendar));
        }
        let Some(url) = self.calendar_feed_url.as_deref().filter(|u| !u.trim().is_empty()) else {
            return Ok(std::sync::Arc::new(ServerCalendar::default()));
        };
        let feed = CalendarFeed::new(url).map_err(|e| anyhow::anyhow!("{e}"))?;
        let every = Duration::from_secs(self.calendar_feed_refresh_secs.max(1));
        let calendar = std::sync::Arc::new(ServerCalendar::for_feed(feed.url(), every));
        if spawn_refresh(&calendar, feed, every).is_none() {
            tracing::warn!("no async runtime: the calendar feed is not refreshed");
        }
        Ok(calendar)
    }

    /// The ETF flows of `ETF_FLOWS_FILE` (disabled when unset).
    ///
    /// # Errors
    /// The file is set but cannot be read or is not valid.
    pub fn etf_flows(&self) -> anyhow::Result<std::sync::Arc<tradeterm_tools::etf::EtfFlows>> {
        let flows = match &self.etf_flows_file {
            None => tradeterm_tools::etf::EtfFlows::default(),
            Some(path) => {
                tradeterm_tools::etf::EtfFlows::load(path).map_err(|e| anyhow::anyhow!("ETF_FLOWS_FILE: {e}"))?
            }
        };
        Ok(std::sync::Arc::new(flows))
    }

    /// The news provider of `NEWS_API_KEY` / `NEWS_API_URL` (a no-op without a key).
    ///
    /// # Errors
    /// `NEWS_API_URL` is not an http(s) URL.
    pub fn news_service(&self) -> anyhow::Result<std::sync::Arc<tradeterm_tools::news::NewsService>> {
        tradeterm_tools::news::NewsService::new(self.news_api_key.as_deref(), self.news_api_url.as_deref())
            .map(std::sync::Arc::new)
            .map_err(|e| anyhow::anyhow!(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_and_production_reach_the_services() {
        let env: Vec<(String, String)> = [("API_RATE_LIMIT_FREE", "3"), ("API_RATE_LIMIT_WINDOW_MS", "1000")]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let s = Settings::load_from(None, &env).unwrap();
        assert_eq!(
            s.tier_limits().free,
            3,
            "REST and MCP share the tier limits (in their own buckets)"
        );
        assert!(!s.service_settings().production);
        assert_eq!(
            Duration::from_millis(s.api_rate_limit_window_ms),
            Duration::from_secs(1)
        );
    }
}
