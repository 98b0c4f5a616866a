//! The trade audit log (`docs/audit.md`): the [`AuditStore`] section of the
//! store, a supertrait of [`crate::Store`].
//!
//! - **Append-only.** Rows are only ever appended ([`AuditStore::append_audit`])
//!   and, past the retention, pruned from the old end
//!   ([`AuditStore::prune_audit`]). No operation edits a row.
//! - **A hash chain per license.** Each row carries `seq` (its position in
//!   its license's chain, from 1), the previous row's hash and its own hash:
//!   SHA-256 over a canonical encoding of its fields and the previous hash
//!   ([`row_hash`], the encoding documented in `docs/audit.md`). The chain's
//!   head (last `seq` and hash) and its anchor (the last pruned row's `seq`
//!   and hash, or `0` and [`GENESIS_HASH`]) are kept apart in
//!   `audit_chains`, so [`verify_chain`] detects an edited row (its hash no
//!   longer matches), a deleted row (a gap in `seq`, or a chain shorter
//!   than its head) and a reordered one, and names the first broken row.
//! - **Race-free appends.** An append reads and advances the head in one
//!   write transaction that holds the head's row lock (PostgreSQL
//!   `SELECT … FOR UPDATE`; SQLite one writer), so concurrent appends from
//!   several instances still make one chain.
//!
//! **Invariants:** every method acting for a license touches nothing of
//! another license; nothing here holds a secret (the caller puts none in).

use async_trait::async_trait;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::StoreResult;

/// The previous hash of a chain's first row (and the anchor of a chain
/// nothing was pruned from): 64 zeros.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The tag that starts every hashed encoding (its version).
pub const HASH_TAG: &[u8] = b"tradeterm-audit-v1";

/// Largest page of [`AuditStore::audit_page`].
pub const MAX_AUDIT_PAGE: u32 = 1000;

/// Largest JSON text of a row's request or answer, bytes.
pub const MAX_AUDIT_JSON_BYTES: usize = 16 * 1024;

/// A row to append: what the caller knows. The store adds `id`, `seq` and
/// the hashes.
#[derive(Debug, Clone, Default)]
pub struct NewAuditRecord {
    /// License whose chain it joins.
    pub license_id: String,
    /// When the call started, unix ms.
    pub at: i64,
    /// Record id of the credential (never a secret).
    pub credential_id: String,
    /// The credential's label (an API key's label, `master key`, …).
    pub credential_label: Option<String>,
    /// `rest`, `mcp`, `managed`, `management`, …
    pub surface: String,
    /// The client's address.
    pub source: Option<String>,
    /// The request id (`X-Request-Id`).
    pub request_id: Option<String>,
    /// The tool called.
    pub tool: String,
    /// The terminal it acted on.
    pub terminal_id: Option<String>,
    /// The normalised request (JSON text, at most [`MAX_AUDIT_JSON_BYTES`]).
    pub request: String,
    /// `refused`, `dry_run`, `sent`, `rejected` or `failed`.
    pub decision: String,
    /// The error code of a refusal, rejection or failure (`FORBIDDEN`, …).
    pub code: Option<String>,
    /// The answer (JSON text: the agent's retcode, ticket and price, the
    /// dry run's outcome, or the error's message).
    pub answer: Option<String>,
    /// Time of the whole call, microseconds.
    pub latency_us: i64,
    /// Time of the tool's handler (terminal round trip included),
    /// microseconds; `None` when refused before it ran.
    pub handler_us: Option<i64>,
}

/// A stored row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditRecord {
    /// `aud_…`.
    pub id: String,
    /// Position in the license's chain, from 1.
    pub seq: i64,
    /// License.
    pub license_id: String,
    /// When the call started, unix ms.
    pub at: i64,
    /// Record id of the credential.
    pub credential_id: String,
    /// Its label.
    pub credential_label: Option<String>,
    /// The surface.
    pub surface: String,
    /// The client's address.
    pub source: Option<String>,
    /// The request id.
    pub request_id: Option<String>,
    /// The tool.
    pub tool: String,
    /// The terminal.
    pub terminal_id: Option<String>,
    /// The normalised request, JSON text as stored (and hashed).
    pub request: String,
    /// The decision.
    pub decision: String,
    /// The error code.
    pub code: Option<String>,
    /// The answer, JSON text as stored.
    pub answer: Option<String>,
    /// Microseconds of the whole call.
    pub latency_us: i64,
    /// Microseconds of the handler.
    pub handler_us: Option<i64>,
    /// The previous row's hash (or the anchor's).
    pub prev_hash: String,
    /// This row's hash.
    pub hash: String,
}

/// The head and anchor of a license's chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditChainHead {
    /// `seq` of the last appended row (0: none yet).
    pub last_seq: i64,
    /// Its hash ([`GENESIS_HASH`] when none).
    pub last_hash: String,
    /// `seq` of the last pruned row (0: nothing pruned).
    pub anchor_seq: i64,
    /// Its hash ([`GENESIS_HASH`] when nothing was pruned).
    pub anchor_hash: String,
}

impl AuditChainHead {
    /// The head of a chain with no row.
    pub fn empty() -> Self {
        Self {
            last_seq: 0,
            last_hash: GENESIS_HASH.to_owned(),
            anchor_seq: 0,
            anchor_hash: GENESIS_HASH.to_owned(),
        }
    }
}

/// Filters of [`AuditStore::audit_page`]; every one optional, all together.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Rows at or after this time, unix ms.
    pub from: Option<i64>,
    /// Rows before this time, unix ms.
    pub to: Option<i64>,
    /// One tool.
    pub tool: Option<String>,
    /// One terminal.
    pub terminal_id: Option<String>,
    /// One credential (record id).
    pub credential_id: Option<String>,
    /// One decision.
    pub decision: Option<String>,
    /// One surface (`rest`, `mcp`, `managed`, `dashboard`).
    pub surface: Option<String>,
    /// Rows with `seq` below this (the cursor of the previous page).
    pub before_seq: Option<i64>,
    /// Page size (0: 100; at most [`MAX_AUDIT_PAGE`]).
    pub limit: u32,
}

/// Where a chain breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainBreak {
    /// The row's hash is not the hash of its content: it was edited.
    Edited {
        /// The row.
        seq: i64,
        /// Its id.
        id: String,
    },
    /// The row does not follow the one before it (its previous hash is not
    /// that row's hash): a row before it was replaced, or the chain reordered.
    Unlinked {
        /// The row.
        seq: i64,
        /// Its id.
        id: String,
    },
    /// Rows are missing before this one (deleted).
    Gap {
        /// The `seq` expected.
        expected: i64,
        /// The row found instead.
        seq: i64,
        /// Its id.
        id: String,
    },
    /// The chain ends before its head: its last rows were deleted.
    Truncated {
        /// The last `seq` found (the anchor's when no row is left).
        last_found: i64,
        /// The head's `seq`.
        head: i64,
    },
    /// The head names a hash the last row does not have.
    HeadMismatch {
        /// The head's `seq`.
        seq: i64,
    },
}

impl std::fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChainBreak::Edited { seq, id } => {
                write!(f, "row {seq} ({id}) was edited: its hash does not match its content")
            }
            ChainBreak::Unlinked { seq, id } => write!(
                f,
                "row {seq} ({id}) does not follow row {}: its previous hash differs (a row was replaced or moved)",
                seq - 1
            ),
            ChainBreak::Gap { expected, seq, id } => {
                if seq - expected == 1 {
                    write!(
                        f,
                        "row {expected} was deleted (row {seq} ({id}) follows row {})",
                        expected - 1
                    )
                } else {
                    write!(
                        f,
                        "rows {expected}..={} were deleted (row {seq} ({id}) follows row {})",
                        seq - 1,
                        expected - 1
                    )
                }
            }
            ChainBreak::Truncated { last_found, head } => {
                write!(
                    f,
                    "rows {}..={head} were deleted from the end of the chain",
                    last_found + 1
                )
            }
            ChainBreak::HeadMismatch { seq } => {
                write!(
                    f,
                    "row {seq}, the chain's last, differs from the hash its head recorded"
                )
            }
        }
    }
}

/// What a verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainReport {
    /// The head.
    pub head: AuditChainHead,
    /// Rows checked.
    pub rows: u64,
    /// The first break, if any.
    pub broken: Option<ChainBreak>,
}

/// The store's section of the audit log.
#[async_trait]
pub trait AuditStore: Send + Sync + 'static {
    /// Appends a row to its license's chain and returns it as stored. A
    /// license that does not exist: [`crate::StoreError::NotFound`]; a
    /// request or answer over [`MAX_AUDIT_JSON_BYTES`]:
    /// [`crate::StoreError::Invalid`].
    async fn append_audit(&self, new: &NewAuditRecord) -> StoreResult<AuditRecord>;
    /// The license's rows matching `filter`, newest first (by `seq`).
    async fn audit_page(&self, license_id: &str, filter: &AuditFilter) -> StoreResult<Vec<AuditRecord>>;
    /// The license's rows with `seq` above `after_seq`, oldest first, at
    /// most `limit` (what [`verify_chain`] reads).
    async fn audit_chain(&self, license_id: &str, after_seq: i64, limit: u32) -> StoreResult<Vec<AuditRecord>>;
    /// The license's chain head ([`AuditChainHead::empty`] when it has no row).
    async fn audit_head(&self, license_id: &str) -> StoreResult<AuditChainHead>;
    /// Deletes every license's rows older than `before_ms` (unix ms), oldest
    /// first, and moves each chain's anchor to the last row deleted, so the
    /// rest stays verifiable. Returns the number of rows deleted.
    async fn prune_audit(&self, before_ms: i64) -> StoreResult<u64>;
}

/// Appends one field of the canonical encoding: its UTF-8 bytes behind
/// their length as a 4-byte big-endian integer; an absent field is the
/// length `0xFFFF_FFFF` alone.
fn field(h: &mut Sha256, value: Option<&str>) {
    match value {
        Some(v) => {
            h.update((v.len() as u32).to_be_bytes());
            h.update(v.as_bytes());
        }
        None => h.update(u32::MAX.to_be_bytes()),
    }
}

/// The hash of a row: SHA-256 over [`HASH_TAG`] and then, each as [`field`]
/// encodes it, `license_id`, `seq`, `id`, `at`, `credential_id`,
/// `credential_label`, `surface`, `source`, `request_id`, `tool`,
/// `terminal_id`, `request`, `decision`, `code`, `answer`, `latency_us`,
/// `handler_us` (integers in decimal) and `prev_hash`; lower-case hex.
pub fn row_hash(r: &AuditRecord) -> String {
    let mut h = Sha256::new();
    h.update(HASH_TAG);
    let seq = r.seq.to_string();
    let at = r.at.to_string();
    let latency = r.latency_us.to_string();
    let handler = r.handler_us.map(|v| v.to_string());
    for v in [
        Some(r.license_id.as_str()),
        Some(seq.as_str()),
        Some(r.id.as_str()),
        Some(at.as_str()),
        Some(r.credential_id.as_str()),
        r.credential_label.as_deref(),
        Some(r.surface.as_str()),
        r.source.as_deref(),
        r.request_id.as_deref(),
        Some(r.tool.as_str()),
        r.terminal_id.as_deref(),
        Some(r.request.as_str()),
        Some(r.decision.as_str()),
        r.code.as_deref(),
        r.answer.as_deref(),
        Some(latency.as_str()),
        handler.as_deref(),
        Some(r.prev_hash.as_str()),
    ] {
        field(&mut h, v);
    }
    hex::encode(h.finalize())
}

/// Rows read per page by [`verify_chain`].
const VERIFY_PAGE: u32 = 500;

/// Checks a license's chain from its anchor to its head: every row's hash
/// is its content's, each row follows the one before (`seq` + 1 and its
/// previous hash), and the last row is the head. Reports the first break.
pub async fn verify_chain(store: &dyn AuditStore, license_id: &str) -> StoreResult<ChainReport> {
    let head = store.audit_head(license_id).await?;
    let mut expected_seq = head.anchor_seq + 1;
    let mut prev_hash = head.anchor_hash.clone();
    let mut rows = 0u64;
    let mut after = head.anchor_seq;
    loop {
        let page = store.audit_chain(license_id, after, VERIFY_PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for r in &page {
            rows += 1;
            let broken = if r.seq != expected_seq {
                Some(ChainBreak::Gap {
                    expected: expected_seq,
                    seq: r.seq,
                    id: r.id.clone(),
                })
            } else if row_hash(r) != r.hash {
                Some(ChainBreak::Edited {
                    seq: r.seq,
                    id: r.id.clone(),
                })
            } else if r.prev_hash != prev_hash {
                Some(ChainBreak::Unlinked {
                    seq: r.seq,
                    id: r.id.clone(),
                })
            } else {
                None
            };
            if broken.is_some() {
                return Ok(ChainReport { head, rows, broken });
            }
            expected_seq += 1;
            prev_hash = r.hash.clone();
        }
    }
    let last_found = expected_seq - 1;
    let broken = if last_found < head.last_seq {
        Some(ChainBreak::Truncated {
            last_found,
            head: head.last_seq,
        })
    } else if last_found > head.last_seq || prev_hash != head.last_hash {
        Some(ChainBreak::HeadMismatch { seq: last_found })
    } else {
        None
    };
    Ok(ChainReport { head, rows, broken })
}

/// The CSV columns of an export of the log ([`audit_csv`]), in order.
pub const AUDIT_CSV_COLUMNS: &[&str] = &[
    "seq",
    "id",
    "at",
    "credential_id",
    "credential_label",
    "surface",
    "source",
    "request_id",
    "tool",
    "terminal_id",
    "decision",
    "code",
    "latency_ms",
    "handler_ms",
    "request",
    "answer",
    "prev_hash",
    "hash",
];

/// A CSV field (RFC 4180): quoted when it holds a comma, quote or line
/// break; a leading `=`, `+`, `-` or `@` is prefixed with `'` so that a
/// spreadsheet does not run it as a formula.
fn csv_field(out: &mut String, value: &str) {
    let value = if value.starts_with(['=', '+', '-', '@']) {
        format!("'{value}")
    } else {
        value.to_owned()
    };
    if value.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&value.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(&value);
    }
}

/// Rows of the log as a CSV document (`docs/audit.md`, "Reading it"): a
/// header of [`AUDIT_CSV_COLUMNS`], then one line per row in the given
/// order, `at` in ISO 8601, latencies in milliseconds, `request` and
/// `answer` as JSON text. The one CSV writer of the log: `get_audit_log`
/// (`format=csv`) and the dashboard's export both use it.
pub fn audit_csv(rows: &[AuditRecord]) -> String {
    let mut out = AUDIT_CSV_COLUMNS.join(",");
    out.push_str("\r\n");
    for r in rows {
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        // The JSON text as `serde_json` writes it (what the API's JSON shows).
        let json = |t: &str| {
            serde_json::from_str::<serde_json::Value>(t)
                .map_or_else(|_| serde_json::Value::from(t).to_string(), |v| v.to_string())
        };
        let cells = [
            r.seq.to_string(),
            r.id.clone(),
            tradeterm_core::time::to_iso(r.at),
            r.credential_id.clone(),
            opt(&r.credential_label),
            r.surface.clone(),
            opt(&r.source),
            opt(&r.request_id),
            r.tool.clone(),
            opt(&r.terminal_id),
            r.decision.clone(),
            opt(&r.code),
            (r.latency_us as f64 / 1000.0).to_string(),
            r.handler_us
                .map(|v| (v as f64 / 1000.0).to_string())
                .unwrap_or_default(),
            json(&r.request),
            r.answer.as_deref().map_or_else(|| "null".to_owned(), json),
            r.prev_hash.clone(),
            r.hash.clone(),
        ];
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            csv_field(&mut out, cell);
        }
        out.push_str("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_and_defuses_formulas() {
        let mut out = String::new();
        csv_field(&mut out, "a,b");
        out.push('|');
        csv_field(&mut out, "=cmd()");
        out.push('|');
        csv_field(&mut out, "say \"x\"");
        assert_eq!(out, "\"a,b\"|'=cmd()|\"say \"\"x\"\"\"");
        let row = AuditRecord {
            id: "aud_1".into(),
            seq: 1,
            license_id: "lic".into(),
            at: 1_795_003_200_000,
            credential_id: "key_1".into(),
            credential_label: Some("bot, v2".into()),
            surface: "rest".into(),
            source: None,
            request_id: None,
            tool: "place_order".into(),
            terminal_id: Some("term_1".into()),
            request: r#"{"dry_run":true}"#.into(),
            decision: "dry_run".into(),
            code: None,
            answer: None,
            latency_us: 1500,
            handler_us: None,
            prev_hash: GENESIS_HASH.into(),
            hash: "ab".into(),
        };
        let text = audit_csv(&[row]);
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert_eq!(lines[0], AUDIT_CSV_COLUMNS.join(","));
        assert_eq!(
            lines[1],
            format!(
                "1,aud_1,2026-11-18T12:00:00Z,key_1,\"bot, v2\",rest,,,place_order,term_1,dry_run,,1.5,,\"{{\"\"dry_run\"\":true}}\",null,{GENESIS_HASH},ab"
            )
        );
    }

    fn sample() -> AuditRecord {
        AuditRecord {
            id: "aud_1".into(),
            seq: 1,
            license_id: "lic_1".into(),
            at: 1_700_000_000_000,
            credential_id: "key_1".into(),
            credential_label: None,
            surface: "rest".into(),
            source: Some("127.0.0.1".into()),
            request_id: None,
            tool: "place_order".into(),
            terminal_id: Some("term_1".into()),
            request: "{}".into(),
            decision: "dry_run".into(),
            code: None,
            answer: Some("{}".into()),
            latency_us: 10,
            handler_us: Some(5),
            prev_hash: GENESIS_HASH.into(),
            hash: String::new(),
        }
    }

    #[test]
    fn every_field_changes_the_hash_and_absent_differs_from_empty() {
        let base = row_hash(&sample());
        assert_eq!(base.len(), 64);
        let mut r = sample();
        r.credential_label = Some(String::new());
        assert_ne!(row_hash(&r), base, "absent and empty differ");
        let mut r = sample();
        r.latency_us = 11;
        assert_ne!(row_hash(&r), base);
        let mut r = sample();
        r.prev_hash = "1".repeat(64);
        assert_ne!(row_hash(&r), base);
        // Moving a byte from one field to the next changes the hash.
        let mut r = sample();
        r.surface = "res".into();
        r.source = Some("t127.0.0.1".into());
        assert_ne!(row_hash(&r), base);
    }

    #[test]
    fn the_encoding_is_the_documented_one() {
        // docs/audit.md shows this value; a change here is a new version.
        let mut h = Sha256::new();
        h.update(HASH_TAG);
        let r = sample();
        for v in ["lic_1", "1", "aud_1", "1700000000000", "key_1"] {
            h.update((v.len() as u32).to_be_bytes());
            h.update(v.as_bytes());
        }
        h.update(u32::MAX.to_be_bytes());
        for v in [
            Some("rest"),
            Some("127.0.0.1"),
            None,
            Some("place_order"),
            Some("term_1"),
            Some("{}"),
            Some("dry_run"),
            None,
            Some("{}"),
            Some("10"),
            Some("5"),
            Some(GENESIS_HASH),
        ] {
            match v {
                Some(v) => {
                    h.update((v.len() as u32).to_be_bytes());
                    h.update(v.as_bytes());
                }
                None => h.update(u32::MAX.to_be_bytes()),
            }
        }
        assert_eq!(hex::encode(h.finalize()), row_hash(&r));
    }
}
