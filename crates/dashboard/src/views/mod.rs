//! The dashboard's HTML: one layout, and one module per page family. Every
//! page is built with maud, which escapes every interpolated value; nothing
//! here writes raw HTML from data.

pub(crate) mod api_keys;
pub(crate) mod audit;
pub(crate) mod insights;
pub(crate) mod scope;
pub(crate) mod settings;
pub(crate) mod sign_in;
pub(crate) mod terminals;
pub(crate) mod webhooks;

use actix_web::HttpResponse;
use actix_web::http::{StatusCode, header};
use maud::{DOCTYPE, Markup, html};

use crate::assets;
use crate::session::{CSRF_FIELD, Owner};

/// The sign-in page.
pub(crate) const SIGN_IN_PATH: &str = "/dashboard/sign-in";
/// The terminals page (the home page).
pub(crate) const TERMINALS_PATH: &str = "/dashboard/terminals";
/// The API keys page.
pub(crate) const API_KEYS_PATH: &str = "/dashboard/api-keys";
/// The webhooks page.
pub(crate) const WEBHOOKS_PATH: &str = "/dashboard/webhooks";
/// The audit log page.
pub(crate) const AUDIT_PATH: &str = "/dashboard/audit";
/// The license's settings page.
pub(crate) const SETTINGS_PATH: &str = "/dashboard/settings";

/// Content-Security-Policy of every page: same-origin only, no inline script
/// or style, no framing, forms post to this origin only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Which navigation entry is the current page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    None,
    Terminals,
    ApiKeys,
    Webhooks,
    Audit,
    Settings,
}

/// A whole page: head, header with navigation and sign-out (when signed
/// in), the main content, and the live region the script announces in.
pub(crate) fn layout(title: &str, owner: Option<&Owner>, nav: Nav, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                @if let Some(owner) = owner {
                    meta name="csrf-token" content=(owner.csrf);
                }
                title { (title) " · tradeterm dashboard" }
                link rel="stylesheet" href=(assets::url("dashboard.css"));
                script src=(assets::url("dashboard.js")) defer {}
            }
            body {
                a.skip href="#main" { "Skip to the content" }
                header.top {
                    div.brand { span.logo aria-hidden="true" { "◆" } " tradeterm " span.sub { "dashboard" } }
                    @if let Some(owner) = owner {
                        nav aria-label="Dashboard" {
                            ul {
                                li { a href=(TERMINALS_PATH) aria-current=[(nav == Nav::Terminals).then_some("page")] { "Terminals" } }
                                li { a href=(API_KEYS_PATH) aria-current=[(nav == Nav::ApiKeys).then_some("page")] { "API keys" } }
                                li { a href=(WEBHOOKS_PATH) aria-current=[(nav == Nav::Webhooks).then_some("page")] { "Webhooks" } }
                                li { a href=(AUDIT_PATH) aria-current=[(nav == Nav::Audit).then_some("page")] { "Audit log" } }
                                li { a href=(SETTINGS_PATH) aria-current=[(nav == Nav::Settings).then_some("page")] { "Settings" } }
                            }
                        }
                        div.who {
                            span.license title=(owner.license.id) {
                                (owner.license.name) " · " span.tier { (owner.license.tier.as_str()) }
                            }
                            form method="post" action="/dashboard/sign-out" {
                                (csrf_field(owner))
                                button.link type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                main #main tabindex="-1" { (main) }
                footer.foot {
                    p { "tradeterm · served by this gateway; nothing is loaded from elsewhere." }
                }
                div #announce .visually-hidden role="status" aria-live="polite" {}
            }
        }
    }
}

/// The hidden CSRF field of a form.
pub(crate) fn csrf_field(owner: &Owner) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(owner.csrf); }
}

/// A page with only a title and a message (errors).
pub(crate) fn message_page(title: &str, message: &str) -> Markup {
    layout(
        title,
        None,
        Nav::None,
        html! {
            h1 { (title) }
            p.lead { (message) }
            p { a.button href=(TERMINALS_PATH) { "Back to the dashboard" } }
        },
    )
}

/// A read-only field holding a secret (or any text to copy), with its label
/// and a copy button.
pub(crate) fn copy_field(id: &str, label: &str, value: &str) -> Markup {
    html! {
        div.copy {
            label for=(id) { (label) }
            div.copy-row {
                input.secret #(id) type="text" readonly value=(value) spellcheck="false" autocomplete="off";
                button.button type="button" data-copy=(id) { "Copy" }
            }
        }
    }
}

/// The answer for a page: HTML, never cached (pages may show a secret once),
/// with the Content-Security-Policy and the usual hardening headers.
pub(crate) fn page_response(status: StatusCode, page: Markup) -> HttpResponse {
    let mut response = HttpResponse::build(status);
    harden(&mut response);
    response.body(page.into_string())
}

/// A fragment (a part of a page the script refreshes).
pub(crate) fn fragment_response(fragment: Markup) -> HttpResponse {
    let mut response = HttpResponse::Ok();
    harden(&mut response);
    response.body(fragment.into_string())
}

/// `Referrer-Policy: same-origin`, not `no-referrer`: with the latter a
/// browser sends `Origin: null` on the pages' own form posts, which the
/// origin check (rightly) refuses.
fn harden(response: &mut actix_web::HttpResponseBuilder) {
    response
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "same-origin"));
}

/// A unix-ms time as `2026-11-18 12:00 UTC`.
pub(crate) fn time_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| "—".to_owned(), |t| t.format("%Y-%m-%d %H:%M UTC").to_string())
}

/// An ISO 8601 time as `2026-11-18 12:00:05 UTC` (as given when it does not parse).
pub(crate) fn time_iso(iso: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(iso).map_or_else(
        |_| iso.to_owned(),
        |t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M:%S UTC")
                .to_string()
        },
    )
}

/// A money amount with two decimals and the currency, if known.
pub(crate) fn money(amount: f64, currency: Option<&str>) -> String {
    match currency {
        Some(c) => format!("{amount:.2} {c}"),
        None => format!("{amount:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_escape_what_they_show() {
        let page = message_page("<script>x</script>", "a \"quoted\" & <b>bold</b>").into_string();
        assert!(!page.contains("<script>x</script>"));
        assert!(page.contains("&lt;script&gt;x&lt;/script&gt;"));
        assert!(page.contains("&lt;b&gt;bold&lt;/b&gt;"));
        let field = copy_field("k", "Key", "\"><img src=x>").into_string();
        assert!(!field.contains("<img"), "{field}");
    }

    #[test]
    fn times_and_amounts() {
        assert_eq!(time_ms(1_795_003_200_000), "2026-11-18 12:00 UTC");
        assert_eq!(time_iso("2026-11-18T12:00:05Z"), "2026-11-18 12:00:05 UTC");
        assert_eq!(time_iso("soon"), "soon");
        assert_eq!(money(1234.5, Some("USD")), "1234.50 USD");
    }
}
