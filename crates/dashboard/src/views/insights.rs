//! The rules-and-alerts panel of a terminal: prop-firm status, news guard,
//! latest alerts (also the insights fragment).

use maud::{Markup, html};

use super::{money, time_iso};
use crate::insights::{AlertsView, InsightError, NewsGuardView, Panel, PropFirmView, Section};

/// The panel, or a note when this gateway has no insights source.
pub(crate) fn panel(panel: Option<&Panel>) -> Markup {
    html! {
        @match panel {
            None => p.muted #insights-unavailable {
                "Rules and alerts are computed by the tool catalog, which this gateway process does not run. \
                 Read them from the REST API (" code { "GET /api/prop-firm-rules" } ", "
                 code { "GET /api/news-guard" } ", " code { "poll_alerts" } "), or use "
                 code { "tradeterm serve" } ", whose dashboard shows them here."
            },
            Some(panel) => {
                section.insight #prop-firm aria-labelledby="prop-firm-title" {
                    h3 #prop-firm-title { "Prop-firm status" }
                    @match &panel.prop_firm {
                        Section::Ready(status) => (prop_firm(status)),
                        Section::Failed(e) if e.code == "NOT_FOUND" => p.muted {
                            "No prop-firm rules on this terminal. Set them with " code { "set_prop_firm_rules" }
                            " or " code { "PUT /api/prop-firm-rules" } "."
                        },
                        Section::Failed(e) => (failure(e)),
                    }
                }
                section.insight #news-guard aria-labelledby="news-guard-title" {
                    h3 #news-guard-title { "News guard" }
                    @match &panel.news_guard {
                        Section::Ready(guard) => (news_guard(guard)),
                        Section::Failed(e) => (failure(e)),
                    }
                }
                section.insight #alerts aria-labelledby="alerts-title" {
                    h3 #alerts-title { "Latest alerts " span.muted { "(last hour)" } }
                    @match &panel.alerts {
                        Section::Ready(alerts) => (alert_list(alerts)),
                        Section::Failed(e) => (failure(e)),
                    }
                }
            }
        }
    }
}

fn failure(e: &InsightError) -> Markup {
    let why = match e.code.as_str() {
        "FORBIDDEN" => "This license's tier does not include it.",
        "TERMINAL_UNREACHABLE" | "TERMINAL_TIMEOUT" | "NO_TERMINAL_CONNECTED" => "The terminal is not reachable now.",
        _ => "It could not be read now.",
    };
    html! { p.muted.failure data-code=(e.code) { (why) " " span.detail { "(" (e.code) ": " (e.message) ")" } } }
}

fn verdict_class(verdict: &str) -> &'static str {
    match verdict {
        "ok" => "ok",
        "warning" => "warn",
        _ => "bad",
    }
}

fn rule_name(rule: &str) -> String {
    match rule {
        "daily_loss" => "Daily loss".to_owned(),
        "max_loss" => "Maximum loss".to_owned(),
        "profit_target" => "Profit target".to_owned(),
        "min_trading_days" => "Trading days".to_owned(),
        "consistency" => "Consistency".to_owned(),
        other => other.replace('_', " "),
    }
}

/// An objective's figure: days whole, the consistency share in % (what it
/// still needs is profit, money), money otherwise.
fn objective_amount(rule: &str, value: f64, currency: Option<&str>, remaining: bool) -> String {
    match (rule, remaining) {
        ("min_trading_days", _) => format!("{value:.0} days"),
        ("consistency", false) => format!("{value:.1} %"),
        _ => money(value, currency),
    }
}

fn prop_firm(s: &PropFirmView) -> Markup {
    let currency = s.currency.as_deref();
    html! {
        p.verdict {
            span.badge.(verdict_class(&s.verdict)) #prop-firm-verdict data-verdict=(s.verdict) { (s.verdict.to_uppercase()) }
            " " (s.reason)
        }
        dl.status {
            dt { "Max safe risk per trade" }
            dd #max-safe-risk {
                @match s.max_safe_risk_percent {
                    Some(p) => { (format!("{p:.2} %")) " of equity"
                        @if let Some(a) = s.max_safe_risk_amount { " (" (money(a, currency)) ")" } },
                    None => span.muted { "no loss limits" },
                }
            }
            @if let (Some(b), Some(e)) = (s.balance, s.equity) {
                dt { "Balance / equity" } dd { (money(b, currency)) " / " (money(e, currency)) }
            }
            @if !s.enforcement.is_empty() {
                dt { "Enforcement" } dd { (s.enforcement) }
            }
            @if let Some(passed) = s.passed {
                dt { "Challenge" } dd { @if passed { "passed" } @else { "in progress" } }
            }
        }
        @if !s.limits.is_empty() {
            div.table-wrap {
                table.compact {
                    caption { "Headroom per rule" }
                    thead { tr {
                        th scope="col" { "Rule" } th scope="col" { "Limit" } th scope="col" { "Used" }
                        th scope="col" { "Headroom" } th scope="col" { "Floor equity" } th scope="col" { "Verdict" }
                    } }
                    tbody {
                        @for l in &s.limits {
                            tr {
                                th scope="row" { (rule_name(&l.rule)) }
                                td { (money(l.limit, currency)) }
                                td { (money(l.used, currency)) }
                                td { (money(l.headroom, currency)) " " span.muted { (format!("({:.0} %)", l.headroom_percent)) } }
                                td { (money(l.floor_equity, currency)) }
                                td { span.badge.(verdict_class(&l.verdict)) { (l.verdict) } }
                            }
                        }
                    }
                }
            }
        }
        @if !s.objectives.is_empty() {
            ul.objectives {
                @for o in &s.objectives {
                    li {
                        (rule_name(&o.rule)) ": "
                        @if o.met { strong { "met" } } @else {
                            (objective_amount(&o.rule, o.achieved.unwrap_or(0.0), currency, false)) " of "
                            (objective_amount(&o.rule, o.target, currency, false)) ", "
                            (objective_amount(&o.rule, o.remaining, currency, true)) " to go"
                        }
                    }
                }
            }
        }
        @if !s.as_of.is_empty() { p.muted.small { "As of " (time_iso(&s.as_of)) } }
    }
}

fn news_guard(g: &NewsGuardView) -> Markup {
    html! {
        @match (&g.guard, g.active) {
            (Some(guard), true) => {
                p {
                    span.badge.ok { "ACTIVE" } " watching " strong { (guard.currencies.join(", ")) }
                    ", " (guard.min_importance) " importance and up, " (guard.lead_minutes) " min ahead"
                    @if guard.include_news { ", with news" }
                }
                @match &g.upcoming {
                    Some(upcoming) if !upcoming.is_empty() => ul.upcoming {
                        @for u in upcoming.iter().take(5) {
                            li { (time_iso(&u.alert_at)) ": " strong { (u.event.currency) } " " (u.event.name)
                                 " " span.muted { "(" (u.event.importance) ", at " (time_iso(&u.event.time)) ")" } }
                        }
                    },
                    _ => p.muted { "No watched release in the next 24 hours." },
                }
            },
            _ => p.muted { "No news guard is set. Set one with " code { "set_news_guard" } " or " code { "PUT /api/news-guard" } "." },
        }
        @for note in &g.notes { p.muted.small { (note) } }
    }
}

fn alert_list(a: &AlertsView) -> Markup {
    html! {
        @if a.alerts.is_empty() {
            p.muted #no-alerts {
                "No alerts in the last hour."
                @if !a.guard_active && !a.equity_guard_active { " (No news guard or equity guard is set.)" }
            }
        } @else {
            ol.alerts reversed {
                @for alert in a.alerts.iter().rev() {
                    li data-kind=(alert.kind) {
                        time datetime=(alert.fired_at) { (time_iso(&alert.fired_at)) } " "
                        span.badge.(if alert.kind.ends_with("breach") { "bad" } else { "info" }) { (alert.kind.replace('_', " ")) }
                        " " (alert.title)
                    }
                }
            }
        }
        @for note in &a.notes { p.muted.small { (note) } }
    }
}
