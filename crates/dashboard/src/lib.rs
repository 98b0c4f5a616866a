//! # tradeterm-dashboard
//!
//! The license owner's web page, served by the gateway at `/dashboard` (and
//! so by `tradeterm serve`): sign-in with the license's master key, the
//! terminals with their live status, terminal keys (created and rotated, each
//! shown once, with the agents' set-up snippets), REST API keys (created and
//! revoked), key scopes (at creation, changed or lifted in place), each
//! terminal's rules and alerts at a glance, the license's webhook endpoints
//! (created with their signing secret shown once, updated, tested, deleted,
//! with their delivery log), the trade audit log (filtered, paged, exported
//! as CSV through the store's own audit query and CSV writer) and the
//! license's settings (trade confirmation over MCP). See `docs/dashboard.md`.
//!
//! **Design.** Server-rendered HTML ([maud] templates, which escape every
//! interpolated value) with one small script and one stylesheet embedded in
//! the binary ([`assets`]): every page works without the script; the script
//! copies secrets to the clipboard and refreshes the live parts of a page
//! (terminal status, rules and alerts) by fetching server-rendered fragments.
//! Nothing is loaded from another origin; the Content-Security-Policy says so.
//!
//! **Sessions** ([`session`]): the master key is exchanged once, in a POST
//! body, for a random session token held in an `HttpOnly`, `SameSite=Strict`
//! cookie (`Secure` over HTTPS) and stored hashed in the store
//! ([`tradeterm_store::SessionStore`]), with an idle expiry that moves while
//! the owner is active and an absolute one. Sign-out deletes the session.
//! Every state-changing form carries a CSRF token derived from the session
//! token (HMAC-SHA256), and cross-origin requests are refused.
//!
//! **Rules and alerts, and webhooks** are computed and managed by catalog
//! tools, which this crate must not know: the binary hands in an
//! [`Insights`] implementation (the single-node binary runs the tools in
//! process, as the license's master key); without one the panel and the
//! webhooks page say where to find them. The webhook page calls the same
//! tools as the master-key routes `/api/webhooks…` ([`WebhookCall`]), so the
//! two cannot disagree.
//!
//! **Architecture invariant:** the dashboard is a surface of the gateway: it
//! depends on the gateway, the store, the protocol and core, never on the
//! tool catalog, the REST or MCP adapters or the simulator (`cargo xtask
//! layering`). **Invariants:** the master key never appears in a page, a URL
//! or a log; a session acts for its own license only (another license's
//! terminal, key or webhook is "not found"); a request without the
//! session's CSRF token changes nothing; a webhook's signing secret is shown
//! once, in the answer to the form that created it.

mod assets;
mod audit;
mod error;
mod insights;
mod pages;
mod scope_form;
pub mod session;
mod snippets;
mod views;
mod webhooks;

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
pub use insights::{Insight, InsightError, Insights};
use tradeterm_gateway::Gateway;
pub use webhooks::WebhookCall;

/// Where the dashboard is mounted.
pub const PATH: &str = "/dashboard";

/// Settings of the dashboard.
#[derive(Debug, Clone)]
pub struct DashboardSettings {
    /// A session ends after this long without a request
    /// (`DASHBOARD_SESSION_MINUTES`, default 30 minutes).
    pub session_idle: Duration,
    /// A session ends this long after sign-in, however active (default 12 h).
    pub session_max: Duration,
    /// How often the pages refresh their live parts (default 5 s).
    pub refresh: Duration,
    /// The REST API's base URL for the usage example shown with a new API
    /// key (the single-node binary knows it; `None` shows a placeholder).
    pub rest_url: Option<String>,
}

impl Default for DashboardSettings {
    fn default() -> Self {
        Self {
            session_idle: Duration::from_secs(30 * 60),
            session_max: Duration::from_secs(12 * 3600),
            refresh: Duration::from_secs(5),
            rest_url: None,
        }
    }
}

/// The dashboard: the gateway it manages, its settings and the rules and
/// alerts source. Cheap to clone; mount it with [`Dashboard::configure`].
#[derive(Clone)]
pub struct Dashboard {
    inner: Arc<Inner>,
}

struct Inner {
    gateway: Gateway,
    settings: DashboardSettings,
    insights: Option<Arc<dyn Insights>>,
}

impl std::fmt::Debug for Dashboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dashboard")
            .field("settings", &self.inner.settings)
            .field("insights", &self.inner.insights.is_some())
            .finish_non_exhaustive()
    }
}

impl Dashboard {
    /// A dashboard over `gateway` (its store holds the sessions), without
    /// rules and alerts.
    pub fn new(gateway: Gateway, settings: DashboardSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                gateway,
                settings,
                insights: None,
            }),
        }
    }

    /// The same dashboard, showing rules and alerts from `insights`.
    #[must_use]
    pub fn with_insights(self, insights: Arc<dyn Insights>) -> Self {
        Self {
            inner: Arc::new(Inner {
                gateway: self.inner.gateway.clone(),
                settings: self.inner.settings.clone(),
                insights: Some(insights),
            }),
        }
    }

    /// Registers the dashboard's routes (everything under [`PATH`]); pass it
    /// to `Gateway::server_with`.
    pub fn configure(&self, cfg: &mut web::ServiceConfig) {
        pages::configure(cfg, self.clone());
    }

    pub(crate) fn gateway(&self) -> &Gateway {
        &self.inner.gateway
    }

    pub(crate) fn settings(&self) -> &DashboardSettings {
        &self.inner.settings
    }

    pub(crate) fn insights(&self) -> Option<&Arc<dyn Insights>> {
        self.inner.insights.as_ref()
    }
}
