//! Tool groups: a coarse topic for every catalog tool, so that an MCP client
//! can load only the tools it needs (`/mcp/v1?groups=market,trading`).
//!
//! The mapping lives here, by name, instead of as a field of every catalog
//! entry; [`explicit_group`] knows every catalog tool (a test checks it), and
//! [`group_of`] falls back to [`ToolGroup::Analysis`] for a tool not mapped yet.

use std::fmt;
use std::str::FromStr;

/// The topic of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolGroup {
    /// Quotes, symbols, bars, trading costs of a symbol.
    Market,
    /// Account, positions, orders, history, P&L, terminals.
    Account,
    /// Placing, modifying and closing orders and positions.
    Trading,
    /// Indicators, structure, regimes, levels, backtests.
    Analysis,
    /// Setup explanations and journal-entry scoring.
    Coaching,
    /// Exposure, holding risk, position sizing, the equity guard.
    Risk,
    /// Economic calendar, event risk, news, macro context.
    CalendarNewsMacro,
    /// Prop-firm rule sets and their status.
    PropFirm,
    /// News guards and alerts.
    Alerts,
    /// The trading journal, trade statistics and the equity curve.
    Journal,
}

impl ToolGroup {
    /// Every group, in a stable order.
    pub const ALL: [ToolGroup; 10] = [
        ToolGroup::Market,
        ToolGroup::Account,
        ToolGroup::Trading,
        ToolGroup::Analysis,
        ToolGroup::Coaching,
        ToolGroup::Risk,
        ToolGroup::CalendarNewsMacro,
        ToolGroup::PropFirm,
        ToolGroup::Alerts,
        ToolGroup::Journal,
    ];

    /// The group's name as written in settings and query parameters.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolGroup::Market => "market",
            ToolGroup::Account => "account",
            ToolGroup::Trading => "trading",
            ToolGroup::Analysis => "analysis",
            ToolGroup::Coaching => "coaching",
            ToolGroup::Risk => "risk",
            ToolGroup::CalendarNewsMacro => "calendar-news-macro",
            ToolGroup::PropFirm => "prop-firm",
            ToolGroup::Alerts => "alerts",
            ToolGroup::Journal => "journal",
        }
    }
}

impl fmt::Display for ToolGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A group name that is not one of [`ToolGroup::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown tool group `{0}`; groups: market, account, trading, analysis, coaching, risk, calendar-news-macro, prop-firm, alerts, journal"
)]
pub struct UnknownGroup(pub String);

impl FromStr for ToolGroup {
    type Err = UnknownGroup;

    /// Parses a group name (case-insensitive; `_` accepted for `-`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('_', "-");
        ToolGroup::ALL
            .into_iter()
            .find(|g| g.as_str() == norm)
            .ok_or_else(|| UnknownGroup(s.trim().to_owned()))
    }
}

/// Parses a comma-separated list of groups (`market,trading`); `all` (or
/// `*`) means every group. Blank items are ignored; an empty list is an
/// empty set.
pub fn parse_groups(list: &str) -> Result<Vec<ToolGroup>, UnknownGroup> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item.eq_ignore_ascii_case("all") || item == "*" {
            return Ok(ToolGroup::ALL.to_vec());
        }
        let g: ToolGroup = item.parse()?;
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out.sort();
    Ok(out)
}

/// The group of a tool the mapping knows, by name.
pub fn explicit_group(tool_name: &str) -> Option<ToolGroup> {
    use ToolGroup::*;
    Some(match tool_name {
        "get_tick" | "get_symbols" | "get_symbol_spec" | "get_bars" | "get_swap_calendar" | "estimate_fill"
        | "get_market_depth" => Market,
        "get_account_info"
        | "get_positions"
        | "get_position"
        | "get_orders"
        | "get_deal_history"
        | "get_order_history"
        | "list_terminals"
        | "get_state_delta"
        | "get_portfolio_summary"
        | "get_pnl" => Account,
        "place_order"
        | "close_position"
        | "modify_position"
        | "reverse_position"
        | "cancel_order"
        | "modify_order"
        | "close_by"
        | "close_all_positions"
        | "cancel_all_orders"
        | "set_trailing_stop"
        | "set_breakeven"
        | "place_oco"
        | "place_bracket"
        | "list_managed_orders"
        | "remove_managed_order" => Trading,
        "get_indicator"
        | "list_indicators"
        | "backtest_strategy"
        | "simulate_ea_action"
        | "detect_structure"
        | "get_volatility_regime"
        | "recommend_strategy_style"
        | "get_market_structure"
        | "check_confluence"
        | "get_fibonacci_levels"
        | "get_session_stats"
        | "get_symbol_session_profile"
        | "get_order_flow"
        | "get_correlation_matrix"
        | "get_key_levels"
        | "detect_patterns" => Analysis,
        "explain_setup" | "score_journal_entry" => Coaching,
        "check_portfolio_exposure"
        | "get_holding_risk"
        | "calculate_position_size"
        | "set_equity_guard"
        | "get_equity_guard"
        | "remove_equity_guard" => Risk,
        "get_economic_calendar"
        | "get_event_risk"
        | "get_event_sensitivity"
        | "get_market_context"
        | "get_risk_regime"
        | "get_economic_surprise"
        | "get_rate_expectations"
        | "get_cb_stance"
        | "get_news"
        | "get_etf_flows" => CalendarNewsMacro,
        "set_prop_firm_rules" | "get_prop_firm_status" | "remove_prop_firm_rules" => PropFirm,
        "set_news_guard"
        | "get_news_guard_status"
        | "remove_news_guard"
        | "poll_alerts"
        | "set_alert"
        | "list_alerts"
        | "remove_alert"
        | "create_webhook"
        | "list_webhooks"
        | "get_webhook"
        | "update_webhook"
        | "delete_webhook"
        | "test_webhook" => Alerts,
        "get_journal"
        | "get_journal_entry"
        | "add_journal_entry"
        | "update_journal_entry"
        | "delete_journal_entry"
        | "get_equity_curve"
        | "get_trade_stats"
        | "get_execution_quality"
        | "get_audit_log" => Journal,
        _ => return None,
    })
}

/// The group of a tool: [`explicit_group`], or [`ToolGroup::Analysis`] for a
/// tool the mapping does not know yet.
pub fn group_of(tool_name: &str) -> ToolGroup {
    explicit_group(tool_name).unwrap_or(ToolGroup::Analysis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_tool_has_a_group() {
        let missing: Vec<&str> = crate::catalog()
            .iter()
            .map(|t| t.name)
            .filter(|n| explicit_group(n).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "tools without a group (add them to crates/tools/src/groups.rs): {missing:?}"
        );
        // Every group holds at least one catalog tool.
        for g in ToolGroup::ALL {
            assert!(
                crate::catalog().iter().any(|t| group_of(t.name) == g),
                "group {g} is empty"
            );
        }
    }

    #[test]
    fn group_names_round_trip_and_lists_parse() {
        for g in ToolGroup::ALL {
            assert_eq!(g.as_str().parse::<ToolGroup>(), Ok(g));
        }
        assert_eq!("Prop_Firm".parse::<ToolGroup>(), Ok(ToolGroup::PropFirm));
        assert_eq!(
            parse_groups(" trading, market ,,market"),
            Ok(vec![ToolGroup::Market, ToolGroup::Trading])
        );
        assert_eq!(parse_groups("all").map(|v| v.len()), Ok(10));
        assert_eq!(parse_groups(""), Ok(vec![]));
        assert_eq!(parse_groups("market,nope"), Err(UnknownGroup("nope".into())));
        assert_eq!(group_of("not_a_tool_yet"), ToolGroup::Analysis);
    }
}
