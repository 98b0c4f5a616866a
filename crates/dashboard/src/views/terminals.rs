//! The terminals pages: the list with live status, one terminal (status,
//! rules and alerts, agent set-up), a new terminal's key, and the key
//! rotation (confirmation, then the new key).

use maud::{Markup, html};
use tradeterm_gateway::KeyRotation;
use tradeterm_protocol::TerminalStatus;

use super::{Nav, TERMINALS_PATH, copy_field, csrf_field, layout, scope, time_iso};
use crate::insights::Panel;
use crate::scope_form::{KeyKind, ScopeForm};
use crate::session::Owner;
use crate::snippets::{self, AgentAddress};

/// Path of one terminal's page.
pub(crate) fn terminal_path(id: &str) -> String {
    format!("{TERMINALS_PATH}/{id}")
}

/// Path of the fragment with the live table of terminals.
pub(crate) const LIST_FRAGMENT: &str = "/dashboard/fragments/terminals";

/// Path of the fragment with one terminal's status.
pub(crate) fn status_fragment(id: &str) -> String {
    format!("/dashboard/fragments/terminals/{id}/status")
}

/// Path of the fragment with one terminal's rules and alerts.
pub(crate) fn insights_fragment(id: &str) -> String {
    format!("/dashboard/fragments/terminals/{id}/insights")
}

/// The terminals page: the live table and the form that creates one.
pub(crate) fn list_page(
    owner: &Owner,
    terminals: &[TerminalStatus],
    refresh_ms: u128,
    error: Option<&str>,
    draft: &ScopeForm,
) -> Markup {
    layout(
        "Terminals",
        Some(owner),
        Nav::Terminals,
        html! {
            h1 { "Terminals" }
            p.lead {
                "Each terminal is one MetaTrader installation with its own key. Its agent connects to this \
                 gateway; the table follows it live."
            }
            section aria-labelledby="list-title" {
                h2 #list-title { "Your terminals" }
                div #terminal-list data-refresh=(LIST_FRAGMENT) data-every=(refresh_ms) {
                    (table(terminals))
                }
            }
            section.card aria-labelledby="create-title" {
                h2 #create-title { "Create a terminal" }
                p { "You get its key once, with the agents' set-up; keep it like a password." }
                @if let Some(error) = error {
                    div.alert.error role="alert" { (error) }
                }
                form method="post" action=(TERMINALS_PATH) {
                    (csrf_field(owner))
                    div.field {
                        label for="terminal-name" { "Name" }
                        input #terminal-name type="text" name="name" required maxlength="100"
                            placeholder="e.g. MT5 demo at Broker";
                    }
                    details.scope open[error.is_some()] {
                        summary { "Key scope (optional): what this terminal's key may do" }
                        (scope::fields(draft, KeyKind::Terminal, owner.license.tier.capabilities(), "new-terminal"))
                    }
                    button.button.primary type="submit" { "Create terminal" }
                }
            }
        },
    )
}

/// The live table of terminals (also the list fragment).
pub(crate) fn table(terminals: &[TerminalStatus]) -> Markup {
    html! {
        @if terminals.is_empty() {
            p.empty { "No terminals yet. Create one below, then start its agent." }
        } @else {
            div.table-wrap {
                table.terminals {
                    caption.visually-hidden { "Terminals of this license and their live status" }
                    thead {
                        tr {
                            th scope="col" { "Terminal" }
                            th scope="col" { "Status" }
                            th scope="col" { "Platform" }
                            th scope="col" { "Account" }
                            th scope="col" { "Mode" }
                            th scope="col" { "Trading" }
                            th scope="col" { "Last seen" }
                        }
                    }
                    tbody {
                        @for t in terminals {
                            tr data-terminal=(t.id) {
                                td {
                                    a href=(terminal_path(&t.id)) { (t.name) }
                                    br; span.id { (t.id) }
                                }
                                td { (connection_badge(t)) }
                                td { (platform(t)) }
                                td { (account(t)) }
                                td { (trade_mode(t)) }
                                td { (trading(t)) }
                                td { (last_seen(t)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn connection_badge(t: &TerminalStatus) -> Markup {
    html! {
        @if t.connected {
            span.badge.ok data-status="connected" { "Connected" }
        } @else if t.bound {
            span.badge.off data-status="offline" { "Offline" }
        } @else {
            span.badge.off data-status="never" { "Never connected" }
        }
    }
}

fn platform(t: &TerminalStatus) -> Markup {
    html! {
        @match (&t.platform, t.build) {
            (Some(p), Some(b)) => { (format!("{p:?}")) " " span.muted { "build " (b) } },
            (Some(p), None) => { (format!("{p:?}")) },
            _ => { span.muted { "—" } },
        }
    }
}

fn account(t: &TerminalStatus) -> Markup {
    html! {
        @if let Some(login) = t.account_login {
            (login)
            @if let Some(server) = &t.account_server { " · " (server) }
            @if let Some(currency) = &t.account_currency { " · " (currency) }
        } @else {
            span.muted { "—" }
        }
    }
}

fn trade_mode(t: &TerminalStatus) -> Markup {
    html! {
        @match t.trade_mode {
            Some(mode) => span.badge.mode data-mode=(mode.as_str()) { (mode.as_str()) },
            None => span.muted { "—" },
        }
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

fn trading(t: &TerminalStatus) -> Markup {
    let p = t.permissions;
    // The switches are what the connected agent reports; offline, nothing is known.
    html! {
        @if t.connected {
            ul.switches {
                li { "Allow-trading input: " strong { (on_off(p.allow_trading)) } }
                li { "Algo trading switch: " strong { (on_off(p.automated_trading)) } }
            }
            @if p.trading_enabled() {
                span.badge.warn { "live trading possible" }
            } @else {
                span.badge.off { "read-only" }
            }
        } @else {
            span.muted { "—" }
        }
    }
}

fn last_seen(t: &TerminalStatus) -> Markup {
    html! {
        @match &t.last_seen {
            Some(ms) => {
                @let iso = tradeterm_core::time::to_iso(*ms);
                time datetime=(iso) { (time_iso(&iso)) }
            },
            None => span.muted { "never" },
        }
    }
}

/// One terminal's status as a description list (also the status fragment).
pub(crate) fn status(t: &TerminalStatus) -> Markup {
    html! {
        dl.status {
            dt { "Status" } dd { (connection_badge(t)) }
            dt { "Platform" } dd { (platform(t)) }
            dt { "Account" } dd { (account(t)) }
            dt { "Mode" } dd { (trade_mode(t)) }
            dt { "Trading" } dd { (trading(t)) }
            dt { "Last seen" } dd { (last_seen(t)) }
            @if let Some(since) = t.connected_since {
                @let since = tradeterm_core::time::to_iso(since);
                dt { "Connected since" } dd { time datetime=(since) { (time_iso(&since)) } }
            }
        }
    }
}

/// Path of a terminal key's scope page.
pub(crate) fn scope_path(id: &str) -> String {
    format!("{}/scope", terminal_path(id))
}

/// One terminal: status, rules and alerts, its key's scope, agent set-up,
/// key rotation. `key_scope`: `None` when the terminal has no active key,
/// else the key's stored scope.
pub(crate) fn terminal_page(
    owner: &Owner,
    t: &TerminalStatus,
    address: &AgentAddress,
    panel: Option<&Panel>,
    refresh_ms: u128,
    key_scope: Option<Option<&serde_json::Value>>,
) -> Markup {
    layout(
        &t.name,
        Some(owner),
        Nav::Terminals,
        html! {
            p.crumbs { a href=(TERMINALS_PATH) { "Terminals" } " / " (t.name) }
            h1 { (t.name) " " span.id { (t.id) } }
            div.grid {
                section.card aria-labelledby="status-title" {
                    h2 #status-title { "Status" }
                    div #terminal-status data-refresh=(status_fragment(&t.id)) data-every=(refresh_ms) {
                        (status(t))
                    }
                }
                section.card aria-labelledby="insights-title" {
                    h2 #insights-title { "Rules and alerts" }
                    div #terminal-insights data-refresh=(insights_fragment(&t.id)) data-every=(refresh_ms * 2) {
                        (super::insights::panel(panel))
                    }
                }
            }
            @if let Some(stored) = key_scope {
                section.card aria-labelledby="key-scope-title" {
                    h2 #key-scope-title { "Key scope" }
                    div #key-scope { (scope::summary(stored)) }
                    p { a.button href=(scope_path(&t.id)) { "Change the scope…" } }
                }
            }
            section aria-labelledby="setup-title" {
                h2 #setup-title { "Agent set-up" }
                p {
                    "The terminal key was shown once, when it was created or last rotated; these snippets \
                     show " code { (snippets::KEY_PLACEHOLDER) } " in its place. Lost it? Rotate the key below."
                }
                (snippet_list(address, None))
            }
            section.card.danger-zone aria-labelledby="rotate-title" {
                h2 #rotate-title { "Rotate the key" }
                p { "Issue a new key and revoke the current one (you will see what that disconnects first)." }
                a.button.danger href=(format!("{}/rotate-key", terminal_path(&t.id))) { "Rotate key…" }
            }
        },
    )
}

/// The agents' snippets, each with a copy button.
fn snippet_list(address: &AgentAddress, key: Option<&str>) -> Markup {
    html! {
        @for s in snippets::all(address, key) {
            section.snippet aria-labelledby=(format!("{}-title", s.id)) {
                h3 #(format!("{}-title", s.id)) { (s.title) }
                p { (s.intro) }
                pre #(s.id) tabindex="0" { code { (s.text) } }
                button.button type="button" data-copy=(s.id) aria-label=(format!("Copy the {} set-up", s.title)) { "Copy" }
            }
        }
    }
}

/// A new terminal: its key, shown once, and the set-up snippets with it.
pub(crate) fn created_page(
    owner: &Owner,
    id: &str,
    name: &str,
    key: &str,
    key_scope: Option<&serde_json::Value>,
    address: &AgentAddress,
) -> Markup {
    layout(
        "Terminal created",
        Some(owner),
        Nav::Terminals,
        html! {
            h1 { "Terminal “" (name) "” created" }
            div.alert.important role="alert" {
                strong { "Copy the terminal key now." }
                " It is shown only this once; the gateway keeps only its hash."
            }
            (copy_field("terminal-key", "Terminal key", key))
            p { "Terminal id: " code #terminal-id { (id) } }
            p { "Key scope: " (scope::summary(key_scope)) }
            section aria-labelledby="setup-title" {
                h2 #setup-title { "Start its agent" }
                p { "The first installation that connects with this key is bound to it." }
                (snippet_list(address, Some(key)))
            }
            p {
                a.button.primary href=(terminal_path(id)) { "Go to the terminal" }
                " "
                a.button href=(TERMINALS_PATH) { "All terminals" }
            }
        },
    )
}

/// The rotation's confirmation: what it revokes and disconnects.
pub(crate) fn rotate_confirm_page(owner: &Owner, t: &TerminalStatus) -> Markup {
    layout(
        "Rotate the key",
        Some(owner),
        Nav::Terminals,
        html! {
            p.crumbs { a href=(TERMINALS_PATH) { "Terminals" } " / " a href=(terminal_path(&t.id)) { (t.name) } " / rotate key" }
            h1 { "Rotate the key of “" (t.name) "”?" }
            div.card {
                h2 { "What this does" }
                ul #rotation-effects {
                    li { "A new key is issued and shown once; the current key stops working at once." }
                    @if t.connected {
                        li.warning-text {
                            strong { "The agent connected now is disconnected at once" }
                            @if let Some(login) = t.account_login { " (account " (login)
                                @if let Some(server) = &t.account_server { " on " (server) } ")" }
                            ". It reconnects only once it is given the new key."
                        }
                    } @else {
                        li { "No agent is connected now, so nothing is disconnected." }
                    }
                    li { "Session tokens that were exchanged for the current key are refused at once, on every instance." }
                    @if t.bound {
                        li { "The key stays bound to the same terminal installation: only it can connect with the new key." }
                    }
                }
                form method="post" action=(format!("{}/rotate-key", terminal_path(&t.id))) {
                    (csrf_field(owner))
                    button.button.danger type="submit" { "Rotate the key" }
                    " "
                    a.button href=(terminal_path(&t.id)) { "Cancel" }
                }
            }
        },
    )
}

/// The rotation's outcome: the new key, once, and what was disconnected.
pub(crate) fn rotated_page(
    owner: &Owner,
    t: &TerminalStatus,
    rotation: &KeyRotation,
    address: &AgentAddress,
) -> Markup {
    let key = rotation.terminal_key.expose();
    layout(
        "Key rotated",
        Some(owner),
        Nav::Terminals,
        html! {
            h1 { "New key for “" (t.name) "”" }
            div.alert.important role="alert" {
                strong { "Copy the new terminal key now." }
                " It is shown only this once."
            }
            (copy_field("terminal-key", "New terminal key", key))
            ul #rotation-outcome {
                li { (rotation.revoked_key_ids.len()) " old key(s) revoked." }
                @if rotation.agent_disconnected {
                    li { strong { "The connected agent was disconnected." } " Give it the new key to reconnect." }
                } @else {
                    li { "No agent was connected with the old key." }
                }
            }
            section aria-labelledby="setup-title" {
                h2 #setup-title { "Give the agent the new key" }
                (snippet_list(address, Some(key)))
            }
            p { a.button.primary href=(terminal_path(&t.id)) { "Back to the terminal" } }
        },
    )
}
