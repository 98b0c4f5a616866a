//! The audit page's query: the license's trade audit log (`docs/audit.md`)
//! read through the store's `AuditStore::audit_page` with an
//! [`AuditFilter`], the same query `get_audit_log` (`GET /api/v1/audit`)
//! runs, and exported with the store's one CSV writer ([`audit_csv`]).
//!
//! The page's filters (terminal, tool, surface, decision) and its cursor
//! come from the query string ([`AuditQuery`]); [`AuditQuery::filter`]
//! checks them as the tool's input schema bounds them and answers the
//! store's filter, always for the session's license.

use serde::Deserialize;
use serde_json::Value;
use tradeterm_store::Store;
use tradeterm_store::audit::{AuditFilter, AuditRecord, MAX_AUDIT_PAGE, audit_csv};

/// Rows on one page.
pub(crate) const PAGE_ROWS: u32 = 50;

/// Rows of one CSV export (the log's largest page).
pub(crate) const EXPORT_ROWS: u32 = MAX_AUDIT_PAGE;

/// The surfaces a row may come from, as stored.
pub(crate) const SURFACES: &[&str] = &["rest", "mcp", "managed", "dashboard"];

/// The decisions of a row, as stored.
pub(crate) const DECISIONS: &[&str] = &["refused", "dry_run", "sent", "applied", "rejected", "failed"];

/// The page's query string: every field optional, an empty one is no filter.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct AuditQuery {
    #[serde(default)]
    pub terminal: String,
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub surface: String,
    #[serde(default)]
    pub decision: String,
    /// The `seq` the previous page ended at: the next, older page.
    #[serde(default)]
    pub cursor: String,
}

fn opt(text: &str) -> Option<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

impl AuditQuery {
    /// The store's filter for a page of `limit` rows; else a message for the owner.
    pub(crate) fn filter(&self, limit: u32) -> Result<AuditFilter, String> {
        for (name, value) in [("terminal", &self.terminal), ("tool", &self.tool)] {
            if value.trim().chars().count() > 64 {
                return Err(format!("The {name} filter has at most 64 characters."));
            }
        }
        let surface = opt(&self.surface);
        if let Some(s) = &surface
            && !SURFACES.contains(&s.as_str())
        {
            return Err(format!("Unknown surface `{s}`: one of {}.", SURFACES.join(", ")));
        }
        let decision = opt(&self.decision);
        if let Some(d) = &decision
            && !DECISIONS.contains(&d.as_str())
        {
            return Err(format!("Unknown decision `{d}`: one of {}.", DECISIONS.join(", ")));
        }
        let before_seq = match opt(&self.cursor) {
            None => None,
            Some(c) => Some(
                c.parse::<i64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| "This page link is not one the audit log gave.".to_owned())?,
            ),
        };
        Ok(AuditFilter {
            terminal_id: opt(&self.terminal),
            tool: opt(&self.tool),
            surface,
            decision,
            before_seq,
            limit,
            ..AuditFilter::default()
        })
    }

    /// The query string of these filters (without the cursor), `&`-joined and escaped.
    pub(crate) fn filters_query(&self) -> String {
        [
            ("terminal", &self.terminal),
            ("tool", &self.tool),
            ("surface", &self.surface),
            ("decision", &self.decision),
        ]
        .iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| format!("{k}={}", escape(v.trim())))
        .collect::<Vec<_>>()
        .join("&")
    }

    /// Whether any filter is set.
    pub(crate) fn filtered(&self) -> bool {
        !self.filters_query().is_empty()
    }
}

/// Percent-encodes a query value (everything but the unreserved characters).
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One page of the license's log, newest first, and the next page's cursor.
pub(crate) struct Page {
    pub rows: Vec<AuditRecord>,
    pub next_cursor: Option<i64>,
}

/// Reads a page for `license_id` (the session's license, never another).
pub(crate) async fn page(
    store: &dyn Store,
    license_id: &str,
    filter: &AuditFilter,
) -> Result<Page, tradeterm_store::StoreError> {
    let rows = store.audit_page(license_id, filter).await?;
    // As `get_audit_log`: a full page has a next one unless it reached `seq` 1.
    let next_cursor = (rows.len() == filter.limit as usize)
        .then(|| rows.last().map(|r| r.seq))
        .flatten()
        .filter(|seq| *seq > 1);
    Ok(Page { rows, next_cursor })
}

/// The CSV document of `rows` (the store's writer, as `format=csv` answers).
pub(crate) fn csv(rows: &[AuditRecord]) -> String {
    audit_csv(rows)
}

/// What the page shows of a row's answer: the trade server's retcode and
/// the ticket (order, else deal), when the answer has them.
pub(crate) fn outcome(answer: Option<&str>) -> (Option<String>, Option<String>) {
    let Some(v) = answer.and_then(|t| serde_json::from_str::<Value>(t).ok()) else {
        return (None, None);
    };
    let text = |v: &Value| match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let trade = &v["trade"];
    let retcode = text(&trade["retcode"]).or_else(|| text(&v["retcode"]));
    let ticket = [&trade["order"], &trade["deal"], &v["ticket"], &v["order"]]
        .into_iter()
        .find_map(|t| text(t).filter(|s| s != "0"));
    (retcode, ticket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_becomes_the_stores_filter_or_a_message() {
        let q = AuditQuery {
            terminal: " term_1 ".into(),
            surface: "mcp".into(),
            decision: "sent".into(),
            cursor: "41".into(),
            ..AuditQuery::default()
        };
        let f = q.filter(PAGE_ROWS).unwrap();
        assert_eq!(f.terminal_id.as_deref(), Some("term_1"));
        assert_eq!(f.tool, None);
        assert_eq!(f.surface.as_deref(), Some("mcp"));
        assert_eq!(f.decision.as_deref(), Some("sent"));
        assert_eq!((f.before_seq, f.limit), (Some(41), PAGE_ROWS));
        assert_eq!(q.filters_query(), "terminal=term_1&surface=mcp&decision=sent");
        for bad in [
            AuditQuery {
                surface: "fax".into(),
                ..AuditQuery::default()
            },
            AuditQuery {
                decision: "maybe".into(),
                ..AuditQuery::default()
            },
            AuditQuery {
                cursor: "-3".into(),
                ..AuditQuery::default()
            },
            AuditQuery {
                tool: "x".repeat(65),
                ..AuditQuery::default()
            },
        ] {
            assert!(bad.filter(PAGE_ROWS).is_err(), "{bad:?}");
        }
        assert_eq!(
            AuditQuery {
                tool: "a&b=c d".into(),
                ..AuditQuery::default()
            }
            .filters_query(),
            "tool=a%26b%3Dc%20d"
        );
    }

    #[test]
    fn the_outcome_is_the_retcode_and_the_ticket() {
        let sent = r#"{"dry_run":false,"trade":{"retcode":"TRADE_RETCODE_DONE","order":123,"deal":456,"price":1.1}}"#;
        assert_eq!(
            outcome(Some(sent)),
            (Some("TRADE_RETCODE_DONE".into()), Some("123".into()))
        );
        let rejected = r#"{"code":"ORDER_REJECTED","message":"no money","retcode":"TRADE_RETCODE_NO_MONEY"}"#;
        assert_eq!(outcome(Some(rejected)), (Some("TRADE_RETCODE_NO_MONEY".into()), None));
        assert_eq!(outcome(Some(r#"{"dry_run":true}"#)), (None, None));
        assert_eq!(outcome(None), (None, None));
        assert_eq!(outcome(Some("not json")), (None, None));
    }
}
