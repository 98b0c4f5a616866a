//! The dashboard of the single node: the gateway's web page
//! (`tradeterm-dashboard`) with its rules-and-alerts panel answered by the
//! tool catalog in process ([`ToolInsights`]), the same way the management
//! routes call tools: one `invoke` over the node's `Services`, as the
//! license's master key would (`master:<license>` credential, the tier's
//! capabilities).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tradeterm_dashboard::{Dashboard, DashboardSettings, Insight, InsightError, Insights};
use tradeterm_gateway::Gateway;
use tradeterm_store::License;
use tradeterm_tools::{Caller, Invocation, Services, TerminalChoice};

use crate::Settings;

/// The panel's tools, run in process.
#[derive(Debug, Clone)]
pub struct ToolInsights {
    services: Arc<Services>,
}

impl ToolInsights {
    /// Over the node's service bundle.
    pub fn new(services: Arc<Services>) -> Self {
        Self { services }
    }
}

#[async_trait]
impl Insights for ToolInsights {
    async fn get(&self, license: &License, terminal_id: &str, insight: Insight) -> Result<Value, InsightError> {
        let Some(tool) = tradeterm_tools::find(insight.tool()) else {
            return Err(InsightError {
                code: "INTERNAL_ERROR".into(),
                message: format!("the catalog has no `{}`", insight.tool()),
            });
        };
        let caller = Caller {
            license_id: license.id.clone(),
            credential: format!("master:{}", license.id),
            caps: license.tier.capabilities().to_vec(),
        };
        let call = Invocation::new(
            "dashboard",
            caller,
            TerminalChoice::Header(Some(terminal_id.to_owned())),
        );
        tradeterm_tools::invoke(&self.services, tool, call, insight.input())
            .await
            .map_err(|e| InsightError {
                code: e.code().to_owned(),
                message: if e.is_internal() {
                    "internal error (logged)".to_owned()
                } else {
                    e.to_string()
                },
            })
    }
}

/// The dashboard's settings from the node's (`DASHBOARD_SESSION_MINUTES`),
/// with the REST API's URL for the new keys' usage example.
pub fn settings(settings: &Settings, rest_url: Option<String>) -> DashboardSettings {
    DashboardSettings {
        session_idle: settings.dashboard_session_idle(),
        rest_url,
        ..DashboardSettings::default()
    }
}

/// The single node's dashboard: rules and alerts from the catalog.
pub fn dashboard(gateway: &Gateway, settings: DashboardSettings, services: Arc<Services>) -> Dashboard {
    Dashboard::new(gateway.clone(), settings).with_insights(Arc::new(ToolInsights::new(services)))
}
