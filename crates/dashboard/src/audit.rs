//! The audit page's query: the license's trade audit log (`docs/audit.md`)
//! read through the store's `AuditStore::audit_page` with an
//! [`AuditFilter`], the same query `get_audit_log` (`GET /api/v1/audit`)
//! runs, and exported with the store's one CSV writer ([`audit_csv`]).
//!
//! The page's filters (a time range, terminal, credential, tool, surface,
//! decision: those of `get_audit_log`) and its cursor come from the query
//! string ([`AuditQuery`]); [`AuditQuery::filter`] checks them as the
//! tool's input schema bounds them and answers the store's filter, always
//! for the session's license.
//!
//! The time range is what the page's `datetime-local` inputs send
//! (`2026-11-18T12:00`, seconds optional), read as UTC (the page says so,
//! and shows every time in UTC); a date alone is its midnight, and an RFC
//! 3339 time with an offset (`…Z`, `…+02:00`) is taken as written, as the
//! API takes it. `from` is inclusive and `to` exclusive, as in the store.

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
    /// Rows at or after this time (UTC unless it names an offset).
    #[serde(default)]
    pub from: String,
    /// Rows before this time.
    #[serde(default)]
    pub to: String,
    #[serde(default)]
    pub terminal: String,
    /// A credential's record id (`key_…`, `tkey_…`, `master:<license>`).
    #[serde(default)]
    pub credential: String,
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

/// A time of the range filter as unix ms: `YYYY-MM-DDTHH:MM[:SS]` (a
/// `datetime-local` value, UTC), `YYYY-MM-DD` (its midnight, UTC) or RFC 3339.
pub(crate) fn parse_time(text: &str) -> Option<i64> {
    use chrono::{NaiveDate, NaiveDateTime};
    let t = text.trim();
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(t) {
        return Some(at.timestamp_millis());
    }
    [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(t, f).ok())
    .or_else(|| NaiveDate::parse_from_str(t, "%Y-%m-%d").ok()?.and_hms_opt(0, 0, 0))
    .map(|at| at.and_utc().timestamp_millis())
}

/// The range filter's time `name` (`from` or `to`); else a message for the owner.
fn range_end(name: &str, text: &str) -> Result<Option<i64>, String> {
    let Some(t) = opt(text) else {
        return Ok(None);
    };
    if t.chars().count() > 64 {
        return Err(format!("The {name} time has at most 64 characters."));
    }
    parse_time(&t)
        .map(Some)
        .ok_or_else(|| format!("The {name} time `{t}` is not a date and time (2026-11-18T12:00, UTC, or RFC 3339)."))
}

impl AuditQuery {
    /// The store's filter for a page of `limit` rows; else a message for the owner.
    pub(crate) fn filter(&self, limit: u32) -> Result<AuditFilter, String> {
        for (name, value, max) in [
            ("terminal", &self.terminal, 64),
            ("tool", &self.tool, 64),
            ("credential", &self.credential, 255),
        ] {
            if value.trim().chars().count() > max {
                return Err(format!("The {name} filter has at most {max} characters."));
            }
        }
        let from = range_end("from", &self.from)?;
        let to = range_end("to", &self.to)?;
        if let (Some(f), Some(t)) = (from, to)
            && f >= t
        {
            return Err("The from time must be before the to time.".to_owned());
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
            from,
            to,
            terminal_id: opt(&self.terminal),
            credential_id: opt(&self.credential),
            tool: opt(&self.tool),
            surface,
            decision,
            before_seq,
            limit,
        })
    }

    /// The query string of these filters (without the cursor), `&`-joined and escaped.
    pub(crate) fn filters_query(&self) -> String {
        [
            ("from", &self.from),
            ("to", &self.to),
            ("terminal", &self.terminal),
            ("credential", &self.credential),
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

/// A credential the page offers as a filter: its record id, and what the
/// owner calls it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CredentialChoice {
    pub id: String,
    pub label: String,
}

/// The license's credentials, as the filter offers them: the master key,
/// every API key (revoked ones too: their rows stay), and each terminal's
/// active key. Any other id (a rotated terminal key) still filters when
/// typed or followed from a row.
pub(crate) async fn credentials(
    store: &dyn Store,
    license_id: &str,
    terminals: &[tradeterm_protocol::TerminalStatus],
) -> Result<Vec<CredentialChoice>, tradeterm_store::StoreError> {
    let mut out = vec![CredentialChoice {
        id: format!("master:{license_id}"),
        label: "Master key".to_owned(),
    }];
    for key in store.list_api_keys(license_id).await? {
        let revoked = if key.revoked_at.is_some() { ", revoked" } else { "" };
        out.push(CredentialChoice {
            label: format!("API key {} ({}…{revoked})", key.label, key.prefix),
            id: key.id,
        });
    }
    for t in terminals {
        if let Some(key) = store.terminal_key_record(license_id, &t.id).await? {
            out.push(CredentialChoice {
                id: key.id,
                label: format!("Terminal key of {}", t.name),
            });
        }
    }
    Ok(out)
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
    fn the_time_range_and_the_credential_reach_the_filter() {
        let q = AuditQuery {
            from: "2026-11-18T12:00".into(),
            to: "2026-11-18T13:30:05".into(),
            credential: " tkey_1 ".into(),
            ..AuditQuery::default()
        };
        let f = q.filter(PAGE_ROWS).unwrap();
        // 2026-11-18T12:00:00Z.
        assert_eq!(f.from, Some(1_795_003_200_000));
        assert_eq!(f.to, Some(1_795_003_200_000 + 90 * 60_000 + 5_000));
        assert_eq!(f.credential_id.as_deref(), Some("tkey_1"));
        assert_eq!(
            q.filters_query(),
            "from=2026-11-18T12%3A00&to=2026-11-18T13%3A30%3A05&credential=tkey_1"
        );
        // A date alone is its midnight; an offset is honoured.
        assert_eq!(parse_time("2026-11-18"), Some(1_795_003_200_000 - 12 * 3_600_000));
        assert_eq!(parse_time("2026-11-18T14:00:00+02:00"), Some(1_795_003_200_000));
        assert_eq!(parse_time("2026-11-18T12:00:00.250Z"), Some(1_795_003_200_250));
        for bad in [
            AuditQuery {
                from: "yesterday".into(),
                ..AuditQuery::default()
            },
            AuditQuery {
                to: "2026-13-01T00:00".into(),
                ..AuditQuery::default()
            },
            // An empty range.
            AuditQuery {
                from: "2026-11-18T12:00".into(),
                to: "2026-11-18T12:00".into(),
                ..AuditQuery::default()
            },
            AuditQuery {
                credential: "k".repeat(256),
                ..AuditQuery::default()
            },
        ] {
            assert!(bad.filter(PAGE_ROWS).is_err(), "{bad:?}");
        }
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
