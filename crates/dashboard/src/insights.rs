//! The catalog's tools as the dashboard calls them: [`Insights`],
//! implemented by the binary (the dashboard must not know the catalog), and
//! what the pages read from the answers.
//!
//! Each [`Insight`] is one catalog tool run for the signed-in license: on
//! one terminal, the three parts of the rules panel (the prop-firm status,
//! `get_prop_firm_status`; the news guard, `get_news_guard_status`; the
//! latest alerts, `poll_alerts` without a cursor: the last hour); for the
//! license, the webhook page's calls ([`WebhookCall`]: the tools the
//! master-key routes `/api/webhooks…` serve, so the page and the routes
//! cannot disagree). The pages read the tools' JSON answers through the
//! lenient views below and in `webhooks.rs`; [`Insight::check`] lets a test
//! assert that the real tools' answers still fit them.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tradeterm_store::License;

use crate::Dashboard;
use crate::webhooks::WebhookCall;

/// One tool call of the dashboard for the signed-in license.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Insight {
    /// `get_prop_firm_status`: verdict, headroom per rule, `max_safe_risk_percent`.
    PropFirmStatus,
    /// `get_news_guard_status`: the news guard and the releases that will alert.
    NewsGuardStatus,
    /// `poll_alerts` without a cursor: the alerts of the last hour.
    LatestAlerts,
    /// A call of the webhook page: a license-level tool (master key only),
    /// asked with an empty terminal id, which it does not use.
    Webhook(WebhookCall),
}

impl Insight {
    /// The parts of the rules panel, in its order.
    pub const ALL: [Self; 3] = [Self::PropFirmStatus, Self::NewsGuardStatus, Self::LatestAlerts];

    /// The catalog tool that answers it.
    pub fn tool(&self) -> &'static str {
        match self {
            Self::PropFirmStatus => "get_prop_firm_status",
            Self::NewsGuardStatus => "get_news_guard_status",
            Self::LatestAlerts => "poll_alerts",
            Self::Webhook(call) => call.tool(),
        }
    }

    /// The tool's input.
    pub fn input(&self) -> Value {
        match self {
            Self::PropFirmStatus | Self::NewsGuardStatus => json!({}),
            Self::LatestAlerts => json!({ "limit": MAX_ALERTS }),
            Self::Webhook(call) => call.input(),
        }
    }

    /// Whether `output` (the tool's answer) is something the page can show.
    ///
    /// # Errors
    /// What does not fit the page's view of the answer.
    pub fn check(&self, output: &Value) -> Result<(), String> {
        let fits = match self {
            Self::PropFirmStatus => PropFirmView::deserialize(output).map(drop),
            Self::NewsGuardStatus => NewsGuardView::deserialize(output).map(drop),
            Self::LatestAlerts => AlertsView::deserialize(output).map(drop),
            Self::Webhook(call) => call.check(output),
        };
        fits.map_err(|e| format!("{}: {e}", self.tool()))
    }
}

/// Alerts shown at most.
const MAX_ALERTS: u32 = 20;

/// A failed insight: the tool's error code (`NOT_FOUND`, `FORBIDDEN`,
/// `TERMINAL_UNREACHABLE`, …) and a message for the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsightError {
    /// The error code of the tool call.
    pub code: String,
    /// What went wrong, for the owner (no internal details).
    pub message: String,
}

/// Runs the dashboard's tools for a license, as its master key would. The
/// single-node binary implements it with the catalog's `invoke` over its
/// services; a gateway without the catalog passes none.
#[async_trait]
pub trait Insights: Send + Sync + 'static {
    /// Runs `insight`'s tool ([`Insight::tool`], input [`Insight::input`])
    /// for `license` (as `master:<license>`, with its tier's capabilities)
    /// on its terminal `terminal_id` (which the dashboard has checked is the
    /// license's; empty for a license-level tool) and returns the tool's
    /// answer.
    async fn get(&self, license: &License, terminal_id: &str, insight: Insight) -> Result<Value, InsightError>;
}

/// The panel of one terminal.
#[derive(Debug)]
pub(crate) struct Panel {
    pub prop_firm: Section<PropFirmView>,
    pub news_guard: Section<NewsGuardView>,
    pub alerts: Section<AlertsView>,
}

/// One part of the panel.
#[derive(Debug)]
pub(crate) enum Section<T> {
    /// The tool answered.
    Ready(T),
    /// The tool failed.
    Failed(InsightError),
}

/// The panel of `terminal_id`, or `None` when this dashboard has no
/// insights source. The three tools run concurrently.
pub(crate) async fn panel(dash: &Dashboard, license: &License, terminal_id: &str) -> Option<Panel> {
    let source = dash.insights()?;
    let (p, n, a) = tokio::join!(
        source.get(license, terminal_id, Insight::PropFirmStatus),
        source.get(license, terminal_id, Insight::NewsGuardStatus),
        source.get(license, terminal_id, Insight::LatestAlerts),
    );
    Some(Panel {
        prop_firm: section(Insight::PropFirmStatus, p),
        news_guard: section(Insight::NewsGuardStatus, n),
        alerts: section(Insight::LatestAlerts, a),
    })
}

fn section<T: for<'de> Deserialize<'de>>(insight: Insight, answer: Result<Value, InsightError>) -> Section<T> {
    match answer.map(T::deserialize) {
        Ok(Ok(view)) => Section::Ready(view),
        Ok(Err(e)) => {
            tracing::error!(tool = insight.tool(), error = %e, "dashboard: a tool's answer does not fit the panel");
            Section::Failed(InsightError {
                code: "INTERNAL_ERROR".to_owned(),
                message: "the answer could not be read".to_owned(),
            })
        }
        Err(e) => Section::Failed(e),
    }
}

/// `get_prop_firm_status`, as the panel reads it.
#[derive(Debug, Deserialize)]
pub(crate) struct PropFirmView {
    pub verdict: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub enforcement: String,
    pub max_safe_risk_percent: Option<f64>,
    pub max_safe_risk_amount: Option<f64>,
    #[serde(default)]
    pub limits: Vec<LimitView>,
    #[serde(default)]
    pub objectives: Vec<ObjectiveView>,
    pub passed: Option<bool>,
    pub currency: Option<String>,
    pub balance: Option<f64>,
    pub equity: Option<f64>,
    #[serde(default)]
    pub as_of: String,
}

/// A loss limit with its headroom.
#[derive(Debug, Deserialize)]
pub(crate) struct LimitView {
    pub rule: String,
    pub limit: f64,
    pub used: f64,
    pub headroom: f64,
    pub headroom_percent: f64,
    pub floor_equity: f64,
    pub verdict: String,
}

/// An objective and its progress.
#[derive(Debug, Deserialize)]
pub(crate) struct ObjectiveView {
    pub rule: String,
    pub target: f64,
    pub achieved: Option<f64>,
    pub remaining: f64,
    pub met: bool,
}

/// `get_news_guard_status`, as the panel reads it.
#[derive(Debug, Deserialize)]
pub(crate) struct NewsGuardView {
    pub active: bool,
    pub guard: Option<GuardView>,
    pub upcoming: Option<Vec<UpcomingView>>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The news guard's settings.
#[derive(Debug, Deserialize)]
pub(crate) struct GuardView {
    pub currencies: Vec<String>,
    pub min_importance: String,
    pub lead_minutes: u32,
    pub include_news: bool,
}

/// A release that will alert.
#[derive(Debug, Deserialize)]
pub(crate) struct UpcomingView {
    pub alert_at: String,
    pub event: EventView,
}

/// An economic release.
#[derive(Debug, Deserialize)]
pub(crate) struct EventView {
    pub time: String,
    pub currency: String,
    pub name: String,
    pub importance: String,
}

/// `poll_alerts`, as the panel reads it.
#[derive(Debug, Deserialize)]
pub(crate) struct AlertsView {
    pub alerts: Vec<AlertView>,
    pub guard_active: bool,
    pub equity_guard_active: bool,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One alert.
#[derive(Debug, Deserialize)]
pub(crate) struct AlertView {
    pub kind: String,
    pub fired_at: String,
    pub title: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_read_the_documented_answers() {
        let status = json!({
            "terminal_id": "term_1", "verdict": "warning", "reason": "daily loss", "enforcement": "advisory",
            "max_safe_risk_percent": 1.5, "max_safe_risk_amount": 150.0,
            "limits": [{ "rule": "daily_loss", "limit": 500.0, "used": 300.0, "headroom": 200.0,
                         "headroom_percent": 40.0, "floor_equity": 9500.0, "verdict": "warning",
                         "breached_on_closed_balance": false }],
            "objectives": [{ "rule": "profit_target", "target": 800.0, "achieved": 10.0, "remaining": 790.0, "met": false }],
            "passed": false, "currency": "USD", "balance": 10000.0, "equity": 9800.0, "as_of": "2026-11-18T12:00:00Z",
            "intraday_breaches": [], "rules": {}
        });
        assert_eq!(Insight::PropFirmStatus.check(&status), Ok(()));
        assert!(Insight::PropFirmStatus.check(&json!({ "limits": [] })).is_err());
        let news = json!({ "active": false, "guard": null, "news_provider": false, "notes": [] });
        assert_eq!(Insight::NewsGuardStatus.check(&news), Ok(()));
        let alerts = json!({ "alerts": [{ "id": "x", "kind": "news", "fired_at": "2026-11-18T12:00:00Z",
                                          "title": "t", "currencies": [] }],
                              "next_cursor": "1", "more": false, "guard_active": true,
                              "equity_guard_active": false, "notes": [] });
        assert_eq!(Insight::LatestAlerts.check(&alerts), Ok(()));
        assert_eq!(Insight::LatestAlerts.input(), json!({ "limit": 20 }));
        assert_eq!(
            Insight::ALL.map(|i| i.tool()),
            ["get_prop_firm_status", "get_news_guard_status", "poll_alerts"]
        );
    }
}
