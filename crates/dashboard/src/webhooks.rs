//! The webhook page's calls ([`WebhookCall`]): the catalog's webhook tools
//! (`list_webhooks`, `get_webhook`, `create_webhook`, `update_webhook`,
//! `delete_webhook`, `test_webhook`), which the master-key routes
//! `/api/webhooks…` serve too, run through the binary's [`Insights`] as
//! the signed-in license's master key would. The tools check the target
//! (`https://` in production, no private address unless allowed), the event
//! types and the ten-endpoint limit, and look every endpoint up among the
//! license's only; this module only reads their answers (lenient views) and
//! says what a failure means for the page ([`Failure`]).

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tradeterm_store::License;

use crate::{Dashboard, Insight, InsightError, Insights};

/// One call of the webhook page: a catalog tool and its input.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WebhookCall {
    /// `list_webhooks`: the endpoints, never their secrets.
    List,
    /// `get_webhook`: one endpoint, its deliveries by state and its log.
    Get {
        /// The endpoint (`whk_…`).
        webhook_id: String,
    },
    /// `create_webhook`: a new endpoint and its secret, shown once.
    Create {
        /// Where deliveries are posted.
        url: String,
        /// Event types delivered (empty: every type but `quote` and `stream.*`).
        types: Vec<String>,
    },
    /// `update_webhook`: what is `Some` changes.
    Update {
        /// The endpoint (`whk_…`).
        webhook_id: String,
        /// A new target.
        url: Option<String>,
        /// A new type filter.
        types: Option<Vec<String>>,
        /// Enabled (again) or disabled.
        enabled: Option<bool>,
    },
    /// `delete_webhook`: the endpoint with its pending deliveries and its log.
    Delete {
        /// The endpoint (`whk_…`).
        webhook_id: String,
    },
    /// `test_webhook`: a signed `webhook.test` body posted now.
    Test {
        /// The endpoint (`whk_…`).
        webhook_id: String,
    },
}

impl WebhookCall {
    /// The catalog tool.
    pub fn tool(&self) -> &'static str {
        match self {
            Self::List => "list_webhooks",
            Self::Get { .. } => "get_webhook",
            Self::Create { .. } => "create_webhook",
            Self::Update { .. } => "update_webhook",
            Self::Delete { .. } => "delete_webhook",
            Self::Test { .. } => "test_webhook",
        }
    }

    /// The tool's input (the fields of the tool's input schema, no more).
    pub fn input(&self) -> Value {
        match self {
            Self::List => json!({}),
            Self::Get { webhook_id } | Self::Delete { webhook_id } | Self::Test { webhook_id } => {
                json!({ "webhook_id": webhook_id })
            }
            Self::Create { url, types } => json!({ "url": url, "types": types }),
            Self::Update {
                webhook_id,
                url,
                types,
                enabled,
            } => {
                let mut input = json!({ "webhook_id": webhook_id });
                if let Some(url) = url {
                    input["url"] = json!(url);
                }
                if let Some(types) = types {
                    input["types"] = json!(types);
                }
                if let Some(enabled) = enabled {
                    input["enabled"] = json!(enabled);
                }
                input
            }
        }
    }

    /// Whether `output` fits the page's view of this tool's answer.
    pub(crate) fn check(&self, output: &Value) -> Result<(), serde_json::Error> {
        match self {
            Self::List => WebhookListView::deserialize(output).map(drop),
            Self::Get { .. } => WebhookDetailView::deserialize(output).map(drop),
            Self::Create { .. } => CreatedView::deserialize(output).map(drop),
            Self::Update { .. } => WebhookView::deserialize(output).map(drop),
            Self::Delete { .. } => DeletedView::deserialize(output).map(drop),
            Self::Test { .. } => TestedView::deserialize(output).map(drop),
        }
    }
}

/// Why a call gave no answer, as the page says it.
#[derive(Debug)]
pub(crate) enum Failure {
    /// This dashboard has no tool source (a gateway alone).
    Unavailable,
    /// No such endpoint on this license (`NOT_FOUND`).
    NotFound,
    /// The tool refused the input (`VALIDATION_ERROR`): its message, for the owner.
    Refused(String),
    /// Anything else: the tool's code and message (no internal detail).
    Failed(InsightError),
}

/// Runs `call` for `license` and reads its answer as `T`.
pub(crate) async fn run<T: DeserializeOwned>(
    dash: &Dashboard,
    license: &License,
    call: WebhookCall,
) -> Result<T, Failure> {
    let Some(source) = dash.insights() else {
        return Err(Failure::Unavailable);
    };
    run_on(source.as_ref(), license, call).await
}

async fn run_on<T: DeserializeOwned>(
    source: &dyn Insights,
    license: &License,
    call: WebhookCall,
) -> Result<T, Failure> {
    let tool = call.tool();
    match source.get(license, "", Insight::Webhook(call)).await {
        Ok(answer) => T::deserialize(answer).map_err(|e| {
            tracing::error!(tool, error = %e, "dashboard: a webhook tool's answer does not fit the page");
            Failure::Failed(InsightError {
                code: "INTERNAL_ERROR".to_owned(),
                message: "the answer could not be read".to_owned(),
            })
        }),
        Err(e) if e.code == "NOT_FOUND" => Err(Failure::NotFound),
        Err(e) if e.code == "VALIDATION_ERROR" || e.code == "WEBHOOK_LIMIT" => Err(Failure::Refused(e.message)),
        Err(e) => Err(Failure::Failed(e)),
    }
}

/// The event types of a form field: names separated by commas or spaces.
pub(crate) fn parse_types(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// An endpoint (`WebhookView` of the tools).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WebhookView {
    pub webhook_id: String,
    pub url: String,
    #[serde(default)]
    pub types: Vec<String>,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub failing_since: Option<String>,
    #[serde(default)]
    pub created_at: String,
}

/// `list_webhooks`.
#[derive(Debug, Deserialize)]
pub(crate) struct WebhookListView {
    pub webhooks: Vec<WebhookView>,
    pub limit: usize,
}

/// `get_webhook`.
#[derive(Debug, Deserialize)]
pub(crate) struct WebhookDetailView {
    pub webhook: WebhookView,
    pub deliveries: CountsView,
    #[serde(default)]
    pub attempts: Vec<AttemptView>,
}

/// Deliveries of an endpoint by state.
#[derive(Debug, Deserialize)]
pub(crate) struct CountsView {
    pub pending: i64,
    pub delivered: i64,
    pub failed: i64,
}

/// One attempt of the delivery log.
#[derive(Debug, Deserialize)]
pub(crate) struct AttemptView {
    pub event_id: String,
    pub attempt: i64,
    pub at: String,
    pub status: Option<i64>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub outcome: String,
}

/// `create_webhook`.
#[derive(Debug, Deserialize)]
pub(crate) struct CreatedView {
    pub webhook: WebhookView,
    pub secret: String,
}

/// `delete_webhook`.
#[derive(Debug, Deserialize)]
pub(crate) struct DeletedView {
    pub deleted: bool,
}

/// `test_webhook`.
#[derive(Debug, Deserialize)]
pub(crate) struct TestedView {
    pub delivered: bool,
    pub status: Option<u16>,
    pub latency_ms: u64,
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_name_their_tools_with_the_inputs_the_tools_take() {
        let id = || "whk_1".to_owned();
        assert_eq!(WebhookCall::List.input(), json!({}));
        assert_eq!(
            WebhookCall::Create {
                url: "https://example.com/h".into(),
                types: vec!["order.filled".into()]
            }
            .input(),
            json!({ "url": "https://example.com/h", "types": ["order.filled"] })
        );
        assert_eq!(
            WebhookCall::Update {
                webhook_id: id(),
                url: None,
                types: Some(vec![]),
                enabled: Some(false)
            }
            .input(),
            json!({ "webhook_id": "whk_1", "types": [], "enabled": false })
        );
        for (call, tool) in [
            (WebhookCall::Get { webhook_id: id() }, "get_webhook"),
            (WebhookCall::Delete { webhook_id: id() }, "delete_webhook"),
            (WebhookCall::Test { webhook_id: id() }, "test_webhook"),
        ] {
            assert_eq!(call.input(), json!({ "webhook_id": "whk_1" }));
            assert_eq!(Insight::Webhook(call).tool(), tool);
        }
        assert_eq!(
            parse_types(" order.filled,position.closed  deal.added,"),
            ["order.filled", "position.closed", "deal.added"]
        );
        assert!(parse_types(" , ").is_empty());
    }

    #[test]
    fn views_read_the_documented_answers() {
        let endpoint = json!({ "webhook_id": "whk_1", "url": "https://example.com/h", "types": [],
                               "enabled": false, "disabled_reason": "disabled by the owner",
                               "failing_since": "2026-11-18T12:00:00Z", "created_at": "2026-11-18T11:00:00Z" });
        let get = Insight::Webhook(WebhookCall::Get {
            webhook_id: "whk_1".into(),
        });
        let detail = json!({ "webhook": endpoint, "deliveries": { "pending": 1, "delivered": 2, "failed": 0 },
                             "attempts": [{ "event_id": "1-0", "attempt": 1, "at": "2026-11-18T12:00:00Z",
                                            "status": 500, "latency_ms": 12, "error": "HTTP 500",
                                            "outcome": "retrying" }] });
        assert_eq!(get.check(&detail), Ok(()));
        assert!(get.check(&json!({ "webhook": endpoint })).is_err());
        let list = Insight::Webhook(WebhookCall::List);
        assert_eq!(list.check(&json!({ "webhooks": [endpoint], "limit": 10 })), Ok(()));
        let test = Insight::Webhook(WebhookCall::Test {
            webhook_id: "whk_1".into(),
        });
        assert_eq!(
            test.check(&json!({ "delivered": false, "latency_ms": 3, "error": "no answer" })),
            Ok(())
        );
    }
}
