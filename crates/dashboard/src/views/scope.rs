//! A key's scope on the pages: its fields in a form (at creation and on the
//! key's scope page), the scope in words in a key's row, and the scope page
//! that changes or lifts it in place.

use maud::{Markup, html};
use serde_json::Value;
use tradeterm_core::license::Capability;

use super::{Nav, csrf_field, layout};
use crate::scope_form::{KeyKind, ScopeForm, describe};
use crate::session::Owner;

/// The scope's fields (inside a form); `prefix` keeps the ids apart when a
/// page has two such forms.
pub(crate) fn fields(form: &ScopeForm, kind: KeyKind, tier_caps: &[Capability], prefix: &str) -> Markup {
    let id = |name: &str| format!("{prefix}-{name}");
    html! {
        input type="hidden" name="caps_shown" value="1";
        fieldset.scope {
            legend { "Capabilities" }
            p.help { "Untick what the key must not do. All ticked: everything the tier allows." }
            @for cap in tier_caps {
                label.check {
                    input type="checkbox" name=(format!("cap_{}", cap.as_str())) checked[form.ticked(*cap)];
                    " " (cap.as_str())
                }
            }
            label.check {
                input type="checkbox" name="cap_audit" checked[form.ticked(Capability::Audit)];
                " audit " span.help { "(also read this license's trade audit log, which no tier grants)" }
            }
        }
        @if kind == KeyKind::Api {
            div.field {
                label for=(id("terminals")) { "Terminals" }
                input #(id("terminals")) type="text" name="terminals" value=(form.terminals)
                    placeholder="term_… (empty: every terminal)" maxlength="8000";
            }
        }
        div.field {
            label for=(id("symbols")) { "Symbols" }
            input #(id("symbols")) type="text" name="symbols" value=(form.symbols)
                placeholder="EURUSD, EUR*, *JPY (empty: every symbol)" maxlength="4000";
        }
        div.field {
            label for=(id("max-volume")) { "Largest volume per order (lots)" }
            input #(id("max-volume")) type="text" inputmode="decimal" name="max_volume_per_order"
                value=(form.max_volume_per_order) placeholder="no limit";
        }
        div.field {
            label for=(id("max-open")) { "Largest open volume per symbol (lots)" }
            input #(id("max-open")) type="text" inputmode="decimal" name="max_open_volume_per_symbol"
                value=(form.max_open_volume_per_symbol) placeholder="no limit";
        }
        div.field {
            label for=(id("max-orders")) { "Live orders per UTC day" }
            input #(id("max-orders")) type="text" inputmode="numeric" name="max_live_orders_per_day"
                value=(form.max_live_orders_per_day) placeholder="no limit";
        }
        label.check {
            input type="checkbox" name="dry_run_only" checked[form.dry_run_only.is_some()];
            " Dry runs only (no live trading)"
        }
        div.field {
            label for=(id("expires")) { "Expires (UTC)" }
            input #(id("expires")) type="datetime-local" name="expires_at" value=(form.expires_at);
        }
        div.field {
            label for=(id("networks")) { "Source networks" }
            input #(id("networks")) type="text" name="networks" value=(form.networks)
                placeholder="203.0.113.0/24, 2001:db8::/32 (empty: any address)" maxlength="8000";
        }
    }
}

/// A stored scope in words, for a key's row (never the secret).
pub(crate) fn summary(permissions: Option<&Value>) -> Markup {
    match describe(permissions) {
        Ok(words) if words.is_empty() => html! { span.muted.scope-summary { "everything the tier allows" } },
        Ok(words) => html! {
            ul.scope-summary {
                @for w in &words { li { (w) } }
            }
        },
        Err(_) => html! {
            span.badge.off.scope-summary { "unreadable scope: the key is refused; set the scope again" }
        },
    }
}

/// What the scope page is for.
pub(crate) struct ScopeTarget<'a> {
    /// The key's kind.
    pub kind: KeyKind,
    /// "API key “bot”" or "terminal “EU box”".
    pub name: &'a str,
    /// Where the form posts (`…/scope`); lifting posts to `…/scope/clear`.
    pub action: &'a str,
    /// Where "back" goes.
    pub back: &'a str,
    /// The page the target belongs to (navigation).
    pub nav: Nav,
}

/// The scope page of one key: its scope in words, the form that changes it
/// in place (the secret is kept) and the button that lifts it.
pub(crate) fn scope_page(
    owner: &Owner,
    target: &ScopeTarget<'_>,
    stored: Option<&Value>,
    form: &ScopeForm,
    error: Option<&str>,
) -> Markup {
    let caps = owner.license.tier.capabilities();
    layout(
        "Key scope",
        Some(owner),
        target.nav,
        html! {
            p.crumbs { a href=(target.back) { "Back" } " / scope" }
            h1 { "Scope of the " (target.name) }
            section.card aria-labelledby="current-title" {
                h2 #current-title { "Now" }
                (summary(stored))
            }
            section.card aria-labelledby="change-title" {
                h2 #change-title { "Change it" }
                p { "The key keeps its secret; its calls follow the new scope at once, on every instance." }
                @if let Some(error) = error {
                    div.alert.error role="alert" #scope-error { (error) }
                }
                form method="post" action=(target.action) {
                    (csrf_field(owner))
                    (fields(form, target.kind, caps, "scope"))
                    button.button.primary type="submit" { "Save the scope" }
                }
            }
            @if stored.is_some() {
                section.card aria-labelledby="lift-title" {
                    h2 #lift-title { "Lift it" }
                    p { "The key may then do everything the license's tier allows." }
                    form method="post" action=(format!("{}/clear", target.action)) {
                        (csrf_field(owner))
                        button.button.danger type="submit" { "Lift the scope" }
                    }
                }
            }
        },
    )
}
