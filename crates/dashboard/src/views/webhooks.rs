//! The webhooks pages: the list with the create form (and the ten-endpoint
//! limit), a new endpoint's signing secret shown once, one endpoint (its
//! settings, a test delivery, its delivery log) and the deletion's
//! confirmation.

use maud::{Markup, html};

use super::{Nav, WEBHOOKS_PATH, copy_field, csrf_field, layout, time_iso};
use crate::insights::InsightError;
use crate::session::Owner;
use crate::webhooks::{AttemptView, CreatedView, TestedView, WebhookDetailView, WebhookListView, WebhookView};

/// Path of one endpoint's page (its update form posts there too).
pub(crate) fn webhook_path(id: &str) -> String {
    format!("{WEBHOOKS_PATH}/{id}")
}

/// Path of an endpoint's test delivery.
pub(crate) fn test_path(id: &str) -> String {
    format!("{WEBHOOKS_PATH}/{id}/test")
}

/// Path of an endpoint's deletion (confirmation, then the form).
pub(crate) fn delete_path(id: &str) -> String {
    format!("{WEBHOOKS_PATH}/{id}/delete")
}

/// What a redirect back to a page says (`?done=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notice {
    Updated,
    Deleted,
}

impl Notice {
    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "updated" => Some(Self::Updated),
            "deleted" => Some(Self::Deleted),
            _ => None,
        }
    }
}

/// What the list shows.
#[derive(Debug)]
pub(crate) enum Listing<'a> {
    Ready(&'a WebhookListView),
    /// This gateway runs no tool catalog.
    Unavailable,
    Failed(&'a InsightError),
}

/// The values of the create form, kept when it is refused.
#[derive(Debug, Default)]
pub(crate) struct Draft<'a> {
    pub url: &'a str,
    pub types: &'a str,
}

/// The webhooks page.
pub(crate) fn list_page(
    owner: &Owner,
    listing: Listing<'_>,
    notice: Option<Notice>,
    error: Option<&str>,
    draft: &Draft<'_>,
) -> Markup {
    layout(
        "Webhooks",
        Some(owner),
        Nav::Webhooks,
        html! {
            h1 { "Webhooks" }
            p.lead {
                "Endpoints that receive this license's events (fills, positions, alerts, breaches, connections) \
                 as signed " code { "POST" } "s, at least once: deduplicate by " code { "Tradeterm-Event-Id" }
                " and verify " code { "Tradeterm-Signature" } " with the endpoint's secret."
            }
            @if notice == Some(Notice::Deleted) {
                div.alert.success role="status" #notice { "The endpoint was deleted with its pending deliveries and its log." }
            }
            @match listing {
                Listing::Unavailable => (unavailable()),
                Listing::Failed(e) => div.alert.error role="alert" {
                    "The endpoints could not be read now (" (e.code) ": " (e.message) ")."
                },
                Listing::Ready(list) => (endpoints(owner, list, error, draft)),
            }
        },
    )
}

fn unavailable() -> Markup {
    html! {
        p.muted #webhooks-unavailable {
            "Webhooks are managed by the tool catalog, which this gateway process does not run. Manage them \
             with the license's master key on the REST API (" code { "POST /api/webhooks" } ", "
            code { "GET /api/webhooks" } ", …), or use " code { "tradeterm serve" } ", whose dashboard manages them here."
        }
    }
}

fn endpoints(owner: &Owner, list: &WebhookListView, error: Option<&str>, draft: &Draft<'_>) -> Markup {
    let full = list.webhooks.len() >= list.limit;
    html! {
        section aria-labelledby="webhooks-title" {
            h2 #webhooks-title { "Endpoints " span.muted { "(" (list.webhooks.len()) " of " (list.limit) ")" } }
            @if list.webhooks.is_empty() {
                p.empty { "No webhook endpoints yet." }
            } @else {
                div.table-wrap {
                    table.webhooks {
                        caption.visually-hidden { "Webhook endpoints of this license" }
                        thead { tr {
                            th scope="col" { "URL" } th scope="col" { "Event types" } th scope="col" { "Status" }
                            th scope="col" { "Failing" } th scope="col" { "Created" }
                        } }
                        tbody {
                            @for w in &list.webhooks {
                                tr data-webhook=(w.webhook_id) {
                                    th scope="row" {
                                        a href=(webhook_path(&w.webhook_id)) { (w.url) }
                                        br; span.id { (w.webhook_id) }
                                    }
                                    td { (types(&w.types)) }
                                    td { (status(w)) }
                                    td { (streak(w)) }
                                    td { (time_iso(&w.created_at)) }
                                }
                            }
                        }
                    }
                }
            }
        }
        section.card aria-labelledby="create-title" {
            h2 #create-title { "Add an endpoint" }
            @if let Some(error) = error {
                div.alert.error role="alert" #create-error { (error) }
            }
            @if full {
                div.alert.note role="note" #webhook-limit {
                    "This license has " (list.limit) " webhook endpoints, the most it may hold. "
                    "Delete one you no longer use to add another."
                }
            }
            form method="post" action=(WEBHOOKS_PATH) {
                (csrf_field(owner))
                div.field {
                    label for="webhook-url" { "URL" }
                    input #webhook-url type="url" name="url" required maxlength="2048" value=(draft.url)
                        placeholder="https://example.com/hooks/tradeterm" disabled[full];
                }
                (types_field("webhook-types", draft.types, full))
                button.button.primary type="submit" disabled[full] { "Add endpoint" }
            }
            p.help {
                "It receives the events that happen from now on. Its signing secret is shown once, after it is added."
            }
        }
    }
}

fn types_field(id: &str, value: &str, disabled: bool) -> Markup {
    html! {
        div.field {
            label for=(id) { "Event types" }
            input #(id) type="text" name="types" maxlength="2000" value=(value)
                placeholder="e.g. order.filled, position.closed" aria-describedby=(format!("{id}-help")) disabled[disabled];
            span.help #(format!("{id}-help")) {
                "Separated by commas or spaces; empty: every type but " code { "quote" } ". The types are listed in "
                code { "docs/events.md" } "."
            }
        }
    }
}

fn types(types: &[String]) -> Markup {
    html! {
        @if types.is_empty() {
            span.muted { "every type but quote" }
        } @else {
            @for (i, t) in types.iter().enumerate() {
                @if i > 0 { ", " }
                code { (t) }
            }
        }
    }
}

fn status(w: &WebhookView) -> Markup {
    html! {
        @if w.enabled {
            span.badge.ok data-status="enabled" { "enabled" }
        } @else {
            span.badge.off data-status="disabled" { "disabled" }
            @if let Some(reason) = &w.disabled_reason {
                br; span.muted.small { (reason) }
            }
        }
    }
}

/// The failure streak: since when its attempts have failed without a success.
fn streak(w: &WebhookView) -> Markup {
    html! {
        @match &w.failing_since {
            Some(since) => span.badge.warn data-failing=(since) { "failing since " (time_iso(since)) },
            None => span.muted { "no" },
        }
    }
}

/// A new endpoint: its secret, once.
pub(crate) fn created_page(owner: &Owner, created: &CreatedView) -> Markup {
    let w = &created.webhook;
    layout(
        "Webhook added",
        Some(owner),
        Nav::Webhooks,
        html! {
            h1 { "Endpoint added" }
            p { "Deliveries go to " code { (w.url) } " (" (types(&w.types)) ")." }
            div.alert.important role="alert" {
                strong { "Copy the signing secret now." }
                " It is shown only this once."
            }
            (copy_field("webhook-secret", "Signing secret", &created.secret))
            p.help {
                "Each delivery carries " code { "Tradeterm-Signature: t=<unix seconds>,v1=<hex>" } ": the hex "
                "HMAC-SHA256 of " code { "\"<t>.<raw body>\"" } " keyed with this secret. Recompute it over the raw "
                "body, compare in constant time and refuse an old " code { "t" } " (docs/events.md shows it in "
                "Python and Rust)."
            }
            p {
                a.button.primary href=(webhook_path(&w.webhook_id)) { "To the endpoint" }
                " "
                a.button href=(WEBHOOKS_PATH) { "Back to the webhooks" }
            }
        },
    )
}

/// The values of the update form, kept when it is refused.
#[derive(Debug)]
pub(crate) struct Edit<'a> {
    pub url: &'a str,
    pub types: &'a str,
    pub enabled: bool,
}

/// One endpoint: its settings (the update form), a test delivery, its
/// deliveries by state and its log.
pub(crate) fn detail_page(
    owner: &Owner,
    detail: &WebhookDetailView,
    notice: Option<Notice>,
    tested: Option<&TestedView>,
    error: Option<&str>,
    edit: Option<&Edit<'_>>,
) -> Markup {
    let w = &detail.webhook;
    let joined = w.types.join(", ");
    let shown = Edit {
        url: &w.url,
        types: &joined,
        enabled: w.enabled,
    };
    let edit = edit.unwrap_or(&shown);
    let d = &detail.deliveries;
    layout(
        "Webhook",
        Some(owner),
        Nav::Webhooks,
        html! {
            p.crumbs { a href=(WEBHOOKS_PATH) { "Webhooks" } " / " (w.webhook_id) }
            h1 { "Endpoint " span.id { (w.webhook_id) } }
            @if notice == Some(Notice::Updated) {
                div.alert.success role="status" #notice { "The endpoint was saved." }
            }
            @if let Some(t) = tested {
                (test_outcome(t))
            }
            div.grid {
                section.card aria-labelledby="state-title" {
                    h2 #state-title { "State" }
                    dl.status {
                        dt { "URL" } dd { code #webhook-url-now { (w.url) } }
                        dt { "Event types" } dd { (types(&w.types)) }
                        dt { "Status" } dd { (status(w)) }
                        dt { "Failing" } dd { (streak(w)) }
                        dt { "Created" } dd { (time_iso(&w.created_at)) }
                        dt { "Deliveries" } dd #deliveries {
                            (d.pending) " pending, " (d.delivered) " delivered, " (d.failed) " failed"
                        }
                    }
                    form method="post" action=(test_path(&w.webhook_id)) {
                        (csrf_field(owner))
                        button.button type="submit" { "Send a test event" }
                    }
                    p.help { "Posts a signed " code { "webhook.test" } " body now (not an event of the stream, not retried)." }
                }
                section.card aria-labelledby="edit-title" {
                    h2 #edit-title { "Settings" }
                    @if let Some(error) = error {
                        div.alert.error role="alert" #update-error { (error) }
                    }
                    form method="post" action=(webhook_path(&w.webhook_id)) {
                        (csrf_field(owner))
                        input type="hidden" name="was_enabled" value=(w.enabled);
                        div.field {
                            label for="edit-url" { "URL" }
                            input #edit-url type="url" name="url" required maxlength="2048" value=(edit.url);
                        }
                        (types_field("edit-types", edit.types, false))
                        div.check {
                            input #edit-enabled type="checkbox" name="enabled" value="on" checked[edit.enabled];
                            label for="edit-enabled" { "Deliveries enabled" }
                        }
                        p.help { "Enabling an endpoint disabled after failing resumes its pending deliveries." }
                        button.button.primary type="submit" { "Save" }
                    }
                }
            }
            section aria-labelledby="log-title" {
                h2 #log-title { "Delivery log " span.muted { "(latest attempts, newest first)" } }
                (log(&detail.attempts))
            }
            section.card.danger-zone aria-labelledby="delete-title" {
                h2 #delete-title { "Delete" }
                p { "Removes the endpoint with its pending deliveries and its log." }
                a.button.danger href=(delete_path(&w.webhook_id)) { "Delete…" }
            }
        },
    )
}

fn test_outcome(t: &TestedView) -> Markup {
    let answered = t.status.map(|s| format!("HTTP {s}"));
    html! {
        @if t.delivered {
            div.alert.success role="status" #test-outcome data-delivered="true" {
                "The test delivery was answered " (answered.as_deref().unwrap_or("")) " in " (t.latency_ms) " ms."
            }
        } @else {
            div.alert.error role="alert" #test-outcome data-delivered="false" {
                "The test delivery failed after " (t.latency_ms) " ms: "
                (t.error.as_deref().or(answered.as_deref()).unwrap_or("no answer")) "."
            }
        }
    }
}

fn log(attempts: &[AttemptView]) -> Markup {
    html! {
        @if attempts.is_empty() {
            p.empty #no-attempts { "No delivery attempts yet." }
        } @else {
            div.table-wrap {
                table.compact.attempts {
                    caption.visually-hidden { "Latest delivery attempts of this endpoint, newest first" }
                    thead { tr {
                        th scope="col" { "Time" } th scope="col" { "Event id" } th scope="col" { "Attempt" }
                        th scope="col" { "Status" } th scope="col" { "Latency" } th scope="col" { "Error" }
                        th scope="col" { "Outcome" }
                    } }
                    tbody {
                        @for a in attempts {
                            tr data-event=(a.event_id) {
                                td { (time_iso(&a.at)) }
                                td { code { (a.event_id) } }
                                td { (a.attempt) }
                                td { @match a.status { Some(s) => (s), None => span.muted { "none" } } }
                                td { (a.latency_ms) " ms" }
                                td { @match &a.error { Some(e) => (e), None => span.muted { "—" } } }
                                td { (outcome(&a.outcome)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn outcome(outcome: &str) -> Markup {
    html! {
        @match outcome {
            "delivered" => span.badge.ok { "delivered" },
            "retrying" => span.badge.warn { "retrying" },
            other => span.badge.bad { (other) },
        }
    }
}

/// The deletion's confirmation.
pub(crate) fn delete_confirm_page(owner: &Owner, w: &WebhookView) -> Markup {
    layout(
        "Delete a webhook",
        Some(owner),
        Nav::Webhooks,
        html! {
            p.crumbs { a href=(WEBHOOKS_PATH) { "Webhooks" } " / delete" }
            h1 { "Delete the endpoint " code { (w.url) } "?" }
            div.card {
                p.warning-text {
                    strong { "Its pending deliveries are dropped" } " with its delivery log. This cannot be undone; \
                     add the endpoint again (with a new secret) to receive events there later."
                }
                form method="post" action=(delete_path(&w.webhook_id)) {
                    (csrf_field(owner))
                    button.button.danger type="submit" { "Delete the endpoint" }
                    " "
                    a.button href=(webhook_path(&w.webhook_id)) { "Cancel" }
                }
            }
        },
    )
}
