//! The audit page: the license's trade audit log, newest first, with its
//! filters, the next (older) page and the CSV export of the same filters.

use maud::{Markup, html};
use tradeterm_protocol::TerminalStatus;

use super::{AUDIT_PATH, Nav, layout};
use crate::audit::{AuditQuery, CredentialChoice, DECISIONS, EXPORT_ROWS, Page, SURFACES, outcome, parse_time};
use crate::session::Owner;

/// Path of the CSV export.
pub(crate) const AUDIT_CSV_PATH: &str = "/dashboard/audit.csv";

/// A unix-ms time as `2026-11-18 12:00:05 UTC`.
fn time_s(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| "—".to_owned(), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
}

fn decision_badge(decision: &str) -> &'static str {
    match decision {
        "sent" | "applied" => "badge ok",
        "dry_run" => "badge info",
        "refused" => "badge warn",
        _ => "badge bad",
    }
}

fn with_query(path: &str, query: &str) -> String {
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    }
}

/// The value a `datetime-local` input shows for a range filter: the time
/// as UTC (`2026-11-18T12:00:05`), or what was typed when it is no time.
fn local_value(text: &str) -> String {
    let t = text.trim();
    parse_time(t)
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(|| t.to_owned(), |at| at.format("%Y-%m-%dT%H:%M:%S").to_string())
}

/// The page's link filtering by one credential (the other filters kept, from the first page).
fn credential_link(query: &AuditQuery, credential: &str) -> String {
    let q = AuditQuery {
        credential: credential.to_owned(),
        cursor: String::new(),
        ..query.clone()
    };
    with_query(AUDIT_PATH, &q.filters_query())
}

/// The audit page.
pub(crate) fn page(
    owner: &Owner,
    terminals: &[TerminalStatus],
    credentials: &[CredentialChoice],
    query: &AuditQuery,
    page: &Page,
) -> Markup {
    let filters = query.filters_query();
    let next = page.next_cursor.map(|c| {
        let q = if filters.is_empty() {
            format!("cursor={c}")
        } else {
            format!("{filters}&cursor={c}")
        };
        with_query(AUDIT_PATH, &q)
    });
    let export = {
        let cursor = query.cursor.trim();
        let q = match (filters.is_empty(), cursor.is_empty()) {
            (_, true) => filters.clone(),
            (true, false) => format!("cursor={cursor}"),
            (false, false) => format!("{filters}&cursor={cursor}"),
        };
        with_query(AUDIT_CSV_PATH, &q)
    };
    let terminal = query.terminal.trim();
    let known = terminals.iter().any(|t| t.id == terminal);
    let credential = query.credential.trim();
    let known_credential = credentials.iter().any(|c| c.id == credential);
    layout(
        "Audit log",
        Some(owner),
        Nav::Audit,
        html! {
            h1 { "Audit log" }
            p.lead {
                "Every trade call of this license, dry or live, from every surface (REST, MCP, managed exits, \
                 this dashboard), newest first. Each row is chained by SHA-256 to the one before it, so an \
                 edited or deleted row is detected (" code { "tradeterm admin verify-audit" } ")."
            }
            form.inline.filters method="get" action=(AUDIT_PATH) aria-label="Filter the audit log" {
                div.field {
                    label for="f-from" { "From (UTC)" }
                    input #f-from type="datetime-local" name="from" step="1" value=(local_value(&query.from));
                }
                div.field {
                    label for="f-to" { "To (UTC, exclusive)" }
                    input #f-to type="datetime-local" name="to" step="1" value=(local_value(&query.to));
                }
                div.field {
                    label for="f-credential" { "Credential" }
                    select #f-credential name="credential" {
                        option value="" selected[credential.is_empty()] { "All credentials" }
                        @for c in credentials {
                            option value=(c.id) selected[c.id == credential] { (c.label) }
                        }
                        @if !credential.is_empty() && !known_credential {
                            option value=(credential) selected { (credential) }
                        }
                    }
                }
                div.field {
                    label for="f-terminal" { "Terminal" }
                    select #f-terminal name="terminal" {
                        option value="" selected[terminal.is_empty()] { "All terminals" }
                        @for t in terminals {
                            option value=(t.id) selected[t.id == terminal] { (t.name) }
                        }
                        @if !terminal.is_empty() && !known {
                            option value=(terminal) selected { (terminal) }
                        }
                    }
                }
                div.field {
                    label for="f-tool" { "Tool" }
                    input #f-tool type="text" name="tool" value=(query.tool.trim()) placeholder="place_order" maxlength="64" spellcheck="false";
                }
                div.field {
                    label for="f-surface" { "Surface" }
                    select #f-surface name="surface" {
                        option value="" selected[query.surface.trim().is_empty()] { "All surfaces" }
                        @for s in SURFACES {
                            option value=(s) selected[query.surface.trim() == *s] { (s) }
                        }
                    }
                }
                div.field {
                    label for="f-decision" { "Decision" }
                    select #f-decision name="decision" {
                        option value="" selected[query.decision.trim().is_empty()] { "All decisions" }
                        @for d in DECISIONS {
                            option value=(d) selected[query.decision.trim() == *d] { (d) }
                        }
                    }
                }
                button.button.primary type="submit" { "Filter" }
                @if query.filtered() {
                    a.button href=(AUDIT_PATH) { "Clear" }
                }
            }
            p.small {
                a #export href=(export) download="audit.csv" { "Export these rows as CSV" }
                span.muted { " (up to " (EXPORT_ROWS) " rows from this page on, with every column and the hashes)" }
            }
            section aria-labelledby="audit-title" {
                h2 #audit-title.visually-hidden { "Rows" }
                @if page.rows.is_empty() {
                    p.empty #no-rows {
                        @if query.filtered() || !query.cursor.trim().is_empty() {
                            "No rows match."
                        } @else {
                            "No trade calls recorded yet."
                        }
                    }
                } @else {
                    div.table-wrap {
                        table.compact.audit {
                            caption.visually-hidden { "Trade audit log of this license, newest first" }
                            thead { tr {
                                th scope="col" { "#" } th scope="col" { "Time" } th scope="col" { "Credential" }
                                th scope="col" { "Surface" } th scope="col" { "Tool" } th scope="col" { "Terminal" }
                                th scope="col" { "Decision" } th scope="col" { "Retcode" } th scope="col" { "Ticket" }
                            } }
                            tbody {
                                @for r in &page.rows {
                                    @let (retcode, ticket) = outcome(r.answer.as_deref());
                                    tr data-audit=(r.id) {
                                        td { (r.seq) }
                                        td { time datetime=(tradeterm_core::time::to_iso(r.at)) { (time_s(r.at)) } }
                                        td {
                                            (r.credential_label.as_deref().unwrap_or("—"))
                                            br;
                                            a.id href=(credential_link(query, &r.credential_id)) title="Only this credential's rows" {
                                                (r.credential_id)
                                            }
                                        }
                                        td { (r.surface) }
                                        td { code { (r.tool) } }
                                        td { span.id { (r.terminal_id.as_deref().unwrap_or("—")) } }
                                        td {
                                            span class=(decision_badge(&r.decision)) { (r.decision) }
                                            @if let Some(code) = &r.code { br; span.small { (code) } }
                                        }
                                        td { (retcode.as_deref().unwrap_or("—")) }
                                        td { (ticket.as_deref().unwrap_or("—")) }
                                    }
                                }
                            }
                        }
                    }
                }
                @if !query.cursor.trim().is_empty() || next.is_some() {
                    nav.pager aria-label="Pages of the audit log" {
                        @if !query.cursor.trim().is_empty() {
                            a.button href=(with_query(AUDIT_PATH, &filters)) { "Newest" }
                        }
                        @if let Some(next) = &next {
                            a.button #older href=(next) rel="next" { "Older rows" }
                        }
                    }
                }
            }
        },
    )
}
