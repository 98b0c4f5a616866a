//! Live trades confirmed by the person behind the MCP client, with MCP
//! elicitation (`elicitation/create`, form mode): the
//! [`tradeterm_tools::confirm::TradeConfirmer`] of an MCP session
//! (`docs/mcp.md`, "Trade confirmation").
//!
//! The request goes out from inside the `tools/call` handler, so rmcp sends
//! it on that call's SSE stream. Its `requestedSchema` is the flat object the
//! MCP specification allows (revision 2025-06-18 and later): one required
//! boolean, `confirm`. Only `accept` with `"confirm": true` executes;
//! `decline`, `cancel`, `accept` without `true`, an error answer and no
//! answer within the session's limit all send nothing.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::{ElicitationMode, Peer, ServiceError};
use serde_json::json;
use tradeterm_tools::confirm::{AnswerFuture, ConfirmAnswer, TradeConfirmer, TradeSummary};

/// The property of the requested schema the user sets to `true`.
pub const CONFIRM_PROPERTY: &str = "confirm";

/// Asks the client of one MCP session.
pub(crate) struct Elicitation {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) timeout: Duration,
}

/// The `elicitation/create` parameters for `summary`.
fn request(summary: &TradeSummary) -> Result<ElicitRequestParams, serde_json::Error> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": summary.message(),
        "requestedSchema": {
            "type": "object",
            "properties": {
                CONFIRM_PROPERTY: {
                    "type": "boolean",
                    "title": "Send this live trade",
                    "description": "true sends the trade to the terminal now; anything else sends nothing",
                    "default": false
                }
            },
            "required": [CONFIRM_PROPERTY]
        }
    }))
}

/// The answer an `elicitation/create` result stands for.
fn answer(action: ElicitationAction, content: Option<&serde_json::Value>) -> ConfirmAnswer {
    match action {
        ElicitationAction::Accept if content.and_then(|c| c.get(CONFIRM_PROPERTY)) == Some(&json!(true)) => {
            ConfirmAnswer::Accept
        }
        // Accepted without saying yes: nothing is sent.
        ElicitationAction::Accept => ConfirmAnswer::Decline,
        ElicitationAction::Decline => ConfirmAnswer::Decline,
        ElicitationAction::Cancel => ConfirmAnswer::Cancel,
        // An action of a later revision: not an accept.
        _ => ConfirmAnswer::Decline,
    }
}

impl TradeConfirmer for Elicitation {
    fn can_ask(&self) -> bool {
        self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form)
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn ask<'a>(&'a self, summary: &'a TradeSummary) -> AnswerFuture<'a> {
        Box::pin(async move {
            let params = match request(summary) {
                Ok(p) => p,
                Err(e) => return ConfirmAnswer::Failed(format!("the elicitation request could not be built: {e}")),
            };
            match self
                .peer
                .create_elicitation_with_timeout(params, Some(self.timeout))
                .await
            {
                Ok(result) => answer(result.action, result.content.as_ref()),
                Err(ServiceError::Timeout { .. }) => ConfirmAnswer::Timeout,
                Err(e) => ConfirmAnswer::Failed(e.to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_a_form_with_one_required_boolean() {
        let summary = TradeSummary {
            tool: "place_order".into(),
            terminal: "term_a".into(),
            answer_within_secs: 120,
            ..TradeSummary::default()
        };
        let wire = serde_json::to_value(request(&summary).unwrap()).unwrap();
        assert_eq!(wire["mode"], "form");
        assert!(wire["message"].as_str().unwrap().contains("LIVE trade (place_order)"));
        let schema = &wire["requestedSchema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!([CONFIRM_PROPERTY]));
        assert_eq!(schema["properties"][CONFIRM_PROPERTY]["type"], "boolean");
        // Flat: every property is a primitive.
        for (_, p) in schema["properties"].as_object().unwrap() {
            assert!(p.get("properties").is_none() && p["type"] != "object" && p["type"] != "array");
        }
    }

    #[test]
    fn only_an_accept_saying_true_confirms() {
        let yes = json!({ CONFIRM_PROPERTY: true });
        assert_eq!(answer(ElicitationAction::Accept, Some(&yes)), ConfirmAnswer::Accept);
        for content in [
            None,
            Some(json!({})),
            Some(json!({ CONFIRM_PROPERTY: false })),
            Some(json!({ CONFIRM_PROPERTY: "true" })),
        ] {
            assert_eq!(
                answer(ElicitationAction::Accept, content.as_ref()),
                ConfirmAnswer::Decline,
                "{content:?}"
            );
        }
        assert_eq!(answer(ElicitationAction::Decline, Some(&yes)), ConfirmAnswer::Decline);
        assert_eq!(answer(ElicitationAction::Cancel, None), ConfirmAnswer::Cancel);
    }
}
