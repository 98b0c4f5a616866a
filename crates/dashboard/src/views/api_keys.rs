//! The API keys pages: the list with the create form (and the five-key
//! limit), a new key's secret shown once, and the revocation's confirmation.

use maud::{Markup, html};
use tradeterm_store::{ApiKey, MAX_ACTIVE_API_KEYS};

use super::{API_KEYS_PATH, Nav, copy_field, csrf_field, layout, scope, time_ms};
use crate::scope_form::{KeyKind, ScopeForm};
use crate::session::Owner;

/// Path of a key's revocation.
pub(crate) fn revoke_path(id: &str) -> String {
    format!("{API_KEYS_PATH}/{id}/revoke")
}

/// Path of a key's scope page.
pub(crate) fn scope_path(id: &str) -> String {
    format!("{API_KEYS_PATH}/{id}/scope")
}

/// What a redirect back to the list says (`?done=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notice {
    Revoked,
    Scoped,
}

impl Notice {
    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "revoked" => Some(Self::Revoked),
            "scoped" => Some(Self::Scoped),
            _ => None,
        }
    }
}

/// The API keys page.
pub(crate) fn list_page(
    owner: &Owner,
    keys: &[ApiKey],
    notice: Option<Notice>,
    error: Option<&str>,
    draft: &ScopeForm,
) -> Markup {
    let active = keys.iter().filter(|k| k.revoked_at.is_none()).count();
    let full = active >= MAX_ACTIVE_API_KEYS;
    layout(
        "API keys",
        Some(owner),
        Nav::ApiKeys,
        html! {
            h1 { "API keys" }
            p.lead {
                "REST API keys (" code { "svc_api_…" } ") let programs call " code { "/api/v1" }
                " with this license's capabilities (" (owner.license.tier.as_str()) " tier). A license may hold at most "
                (MAX_ACTIVE_API_KEYS) " active keys."
            }
            @if notice == Some(Notice::Revoked) {
                div.alert.success role="status" #notice { "The key was revoked. Programs using it are refused from now on." }
            }
            @if notice == Some(Notice::Scoped) {
                div.alert.success role="status" #notice { "The key's scope was changed. Its calls follow it from now on." }
            }
            section aria-labelledby="keys-title" {
                h2 #keys-title { "Keys " span.muted { "(" (active) " of " (MAX_ACTIVE_API_KEYS) " active)" } }
                @if keys.is_empty() {
                    p.empty { "No API keys yet." }
                } @else {
                    div.table-wrap {
                        table.keys {
                            caption.visually-hidden { "API keys of this license" }
                            thead { tr {
                                th scope="col" { "Label" } th scope="col" { "Key" } th scope="col" { "Created" }
                                th scope="col" { "Last used" } th scope="col" { "Scope" } th scope="col" { "Status" }
                                th scope="col" { span.visually-hidden { "Actions" } }
                            } }
                            tbody {
                                @for k in keys {
                                    tr data-key=(k.id) {
                                        th scope="row" { (k.label) }
                                        td { code { (k.prefix) "…" } }
                                        td { (time_ms(k.created_at)) }
                                        td { @match k.last_used_at { Some(t) => (time_ms(t)), None => span.muted { "never" } } }
                                        td { (scope::summary(k.permissions.as_ref())) }
                                        td {
                                            @match k.revoked_at {
                                                Some(t) => { span.badge.off { "revoked" } " " span.muted.small { (time_ms(t)) } },
                                                None => span.badge.ok { "active" },
                                            }
                                        }
                                        td {
                                            @if k.revoked_at.is_none() {
                                                a.button.small href=(scope_path(&k.id))
                                                    aria-label=(format!("Change the scope of the key {}", k.label)) { "Scope…" }
                                                " "
                                                a.button.small.danger href=(revoke_path(&k.id))
                                                    aria-label=(format!("Revoke the key {}", k.label)) { "Revoke…" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            section.card aria-labelledby="create-title" {
                h2 #create-title { "Create an API key" }
                @if let Some(error) = error {
                    div.alert.error role="alert" { (error) }
                }
                @if full {
                    div.alert.note role="note" #key-limit {
                        "This license has " (MAX_ACTIVE_API_KEYS) " active API keys, the most it may hold. "
                        "Revoke one you no longer use to create another."
                    }
                }
                form method="post" action=(API_KEYS_PATH) {
                    (csrf_field(owner))
                    div.field {
                        label for="key-label" { "Label" }
                        input #key-label type="text" name="label" required maxlength="100"
                            placeholder="e.g. backtest server" disabled[full];
                    }
                    details.scope open[error.is_some()] {
                        summary { "Scope (optional): what this key may do" }
                        (scope::fields(draft, KeyKind::Api, owner.license.tier.capabilities(), "new-key"))
                    }
                    button.button.primary type="submit" disabled[full] { "Create key" }
                }
                p.help { "The secret is shown once; only its hash is kept. The scope can be changed later." }
            }
        },
    )
}

/// A new key: its secret, once, with a usage example.
pub(crate) fn created_page(owner: &Owner, key: &ApiKey, secret: &str, rest_url: Option<&str>) -> Markup {
    let base = rest_url.unwrap_or("https://<REST API>");
    layout(
        "API key created",
        Some(owner),
        Nav::ApiKeys,
        html! {
            h1 { "API key “" (key.label) "” created" }
            div.alert.important role="alert" {
                strong { "Copy the API key now." }
                " It is shown only this once; the gateway keeps only its hash."
            }
            (copy_field("api-key", "API key", secret))
            p { "Scope: " (scope::summary(key.permissions.as_ref())) }
            h2 { "Use it" }
            pre #api-key-usage tabindex="0" { code {
                "curl -s " (base) "/api/v1/terminals \\\n     -H \"Authorization: Bearer " (secret) "\""
            } }
            button.button type="button" data-copy="api-key-usage" aria-label="Copy the example" { "Copy" }
            p { a.button.primary href=(API_KEYS_PATH) { "Back to the API keys" } }
        },
    )
}

/// The revocation's confirmation.
pub(crate) fn revoke_confirm_page(owner: &Owner, key: &ApiKey) -> Markup {
    layout(
        "Revoke an API key",
        Some(owner),
        Nav::ApiKeys,
        html! {
            p.crumbs { a href=(API_KEYS_PATH) { "API keys" } " / revoke" }
            h1 { "Revoke the API key “" (key.label) "”?" }
            div.card {
                p { "Key " code { (key.prefix) "…" } ", created " (time_ms(key.created_at)) ", last used "
                    @match key.last_used_at { Some(t) => (time_ms(t)), None => "never" } "." }
                p.warning-text {
                    strong { "Programs using it are refused at once" } ", on every instance. This cannot be undone; \
                     create a new key if they need access again."
                }
                form method="post" action=(revoke_path(&key.id)) {
                    (csrf_field(owner))
                    button.button.danger type="submit" { "Revoke the key" }
                    " "
                    a.button href=(API_KEYS_PATH) { "Cancel" }
                }
            }
        },
    )
}
