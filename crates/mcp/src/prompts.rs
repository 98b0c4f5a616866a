//! MCP prompts (`prompts/list`, `prompts/get`): three common workflows as
//! ready-made instructions that tell the model which tools to call, in which
//! order, and how to present the result.
//!
//! - `pre_trade_check`: event risk, holding risk, exposure, prop-firm
//!   headroom and position size before opening a trade;
//! - `market_brief`: regime, structure across timeframes, key levels and the
//!   calendar for one symbol;
//! - `journal_review`: the journal, scored entries and the equity curve over
//!   a period.

use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::Value;

/// Names of the prompts.
pub const PROMPTS: [&str; 3] = ["pre_trade_check", "market_brief", "journal_review"];

fn arg(name: &str, description: &str, required: bool) -> PromptArgument {
    PromptArgument::new(name)
        .with_description(description)
        .with_required(required)
}

/// The prompts `prompts/list` returns.
pub fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "pre_trade_check",
            Some(
                "Checks a planned trade before it is placed: event risk, holding risk, portfolio exposure, \
                 prop-firm headroom and position size, ending in a go / caution / no-go verdict.",
            ),
            Some(vec![
                arg("symbol", "Instrument, e.g. EURUSD.", true),
                arg("side", "buy or sell.", true),
                arg("stop_loss", "Planned stop-loss price (optional).", false),
                arg(
                    "risk_percent",
                    "Risk per trade in percent of equity (optional, default 1).",
                    false,
                ),
                arg(
                    "hold_hours",
                    "How long the position is planned to be held, in hours (optional).",
                    false,
                ),
            ]),
        )
        .with_title("Pre-trade check"),
        Prompt::new(
            "market_brief",
            Some(
                "A brief on one symbol: volatility and risk regime, market structure on several timeframes, key \
                 levels and the economic calendar ahead.",
            ),
            Some(vec![
                arg("symbol", "Instrument, e.g. XAUUSD.", true),
                arg(
                    "timeframes",
                    "Comma-separated timeframes, highest first (optional, default D1,H4,H1).",
                    false,
                ),
            ]),
        )
        .with_title("Market brief"),
        Prompt::new(
            "journal_review",
            Some(
                "Reviews the trading journal over a period: what was traded, rule adherence, scores of the \
                 entries, the equity curve and drawdown, and three concrete lessons.",
            ),
            Some(vec![
                arg("days", "How many days back to review (optional, default 7).", false),
                arg("symbol", "Only this instrument (optional).", false),
            ]),
        )
        .with_title("Journal review"),
    ]
}

/// Why a prompt cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// No prompt of that name.
    #[error("unknown prompt `{0}`; prompts/list lists them")]
    Unknown(String),
    /// A required argument is missing or an argument is invalid.
    #[error("{0}")]
    Argument(String),
}

fn text_arg(args: &JsonObject, name: &str) -> Option<String> {
    match args.get(name)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn required(args: &JsonObject, name: &str) -> Result<String, PromptError> {
    text_arg(args, name).ok_or_else(|| PromptError::Argument(format!("argument `{name}` is required")))
}

/// A symbol argument: letters, digits and `._#-`, at most 32 characters
/// (it is pasted into instructions, so nothing else is allowed).
fn symbol(args: &JsonObject, name: &str, needed: bool) -> Result<Option<String>, PromptError> {
    let Some(s) = text_arg(args, name) else {
        return if needed {
            Err(PromptError::Argument(format!("argument `{name}` is required")))
        } else {
            Ok(None)
        };
    };
    let ok = s.len() <= 32
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '#' | '-'));
    if !ok {
        return Err(PromptError::Argument(format!(
            "`{name}` must be an instrument name such as EURUSD"
        )));
    }
    Ok(Some(s.to_ascii_uppercase()))
}

fn number(args: &JsonObject, name: &str) -> Result<Option<f64>, PromptError> {
    match text_arg(args, name) {
        None => Ok(None),
        Some(s) => s
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(Some)
            .ok_or_else(|| PromptError::Argument(format!("`{name}` must be a positive number"))),
    }
}

const TIMEFRAMES: [&str; 9] = ["M1", "M5", "M15", "M30", "H1", "H4", "D1", "W1", "MN1"];

/// The messages of prompt `name` with `arguments`.
pub fn get(name: &str, arguments: Option<&JsonObject>) -> Result<GetPromptResult, PromptError> {
    let empty = JsonObject::new();
    let args = arguments.unwrap_or(&empty);
    let (description, text) = match name {
        "pre_trade_check" => pre_trade_check(args)?,
        "market_brief" => market_brief(args)?,
        "journal_review" => journal_review(args)?,
        other => return Err(PromptError::Unknown(other.to_owned())),
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).with_description(description))
}

const COMMON: &str = "Call the tools yourself, one after another, and base every statement on their results; \
    if a tool is not in your tool list or fails, say so in one line and go on with the others. Do not place, \
    modify or close any order.";

fn pre_trade_check(args: &JsonObject) -> Result<(String, String), PromptError> {
    let symbol = symbol(args, "symbol", true)?.unwrap_or_default();
    let side = required(args, "side")?.to_ascii_lowercase();
    if side != "buy" && side != "sell" {
        return Err(PromptError::Argument("`side` must be buy or sell".into()));
    }
    let stop = number(args, "stop_loss")?;
    let risk = number(args, "risk_percent")?.unwrap_or(1.0);
    let hold = number(args, "hold_hours")?;
    let stop_text = stop.map_or_else(
        || "no stop loss was given: propose one from the key levels or ATR (get_indicator `atr`) and say so".to_owned(),
        |s| format!("the stop loss is {s}"),
    );
    let hold_text = hold.map_or_else(
        || "until the next daily close".to_owned(),
        |h| format!("for about {h} hours"),
    );
    let text = format!(
        "Run a pre-trade check for a {side} of {symbol}; {stop_text}; risk {risk} % of equity; the position is \
         planned to be held {hold_text}.\n\n\
         1. Event risk: `get_event_risk` for {symbol} (high-impact events in the holding window).\n\
         2. Holding risk: `get_holding_risk` for {symbol} over the holding period (gaps, weekends, swaps).\n\
         3. Exposure: `check_portfolio_exposure` with the planned {side} of {symbol} added to the open positions.\n\
         4. Prop-firm headroom: `get_prop_firm_status` (daily and maximum loss left); skip if no rules are set.\n\
         5. Position size: `calculate_position_size` for {symbol} with the stop loss and {risk} % risk, capped by the \
         prop-firm headroom; `get_symbol_spec` gives the volume step.\n\n\
         Present: a one-line verdict (GO, CAUTION or NO-GO) first, then a table with one row per check \
         (check, finding, status), then the proposed volume and stop loss, then at most three bullet points on \
         what would change the verdict. {COMMON}"
    );
    Ok((format!("Pre-trade check: {side} {symbol}"), text))
}

fn market_brief(args: &JsonObject) -> Result<(String, String), PromptError> {
    let symbol = symbol(args, "symbol", true)?.unwrap_or_default();
    let timeframes = match text_arg(args, "timeframes") {
        None => vec!["D1".to_owned(), "H4".to_owned(), "H1".to_owned()],
        Some(list) => {
            let tfs: Vec<String> = list
                .split(',')
                .map(|t| t.trim().to_ascii_uppercase())
                .filter(|t| !t.is_empty())
                .collect();
            if tfs.is_empty() || tfs.len() > 4 || tfs.iter().any(|t| !TIMEFRAMES.contains(&t.as_str())) {
                return Err(PromptError::Argument(format!(
                    "`timeframes` must list one to four of {}",
                    TIMEFRAMES.join(", ")
                )));
            }
            tfs
        }
    };
    let tfs = timeframes.join(", ");
    let text = format!(
        "Write a market brief for {symbol}.\n\n\
         1. Regime: `get_volatility_regime` for {symbol} and `get_risk_regime` (risk-on / risk-off backdrop).\n\
         2. Structure: `get_market_structure` (or `detect_structure`) for {symbol} on each of {tfs}: trend, last \
         break of structure or change of character.\n\
         3. Key levels: `get_key_levels` for {symbol} (support, resistance, pivots); mark the levels nearest to the \
         current price from `get_tick`.\n\
         4. Calendar: `get_economic_calendar` for the currencies of {symbol} over the next 48 hours (high impact), and \
         `get_event_risk` for {symbol}.\n\n\
         Present: a three-sentence summary (bias, why, what invalidates it) first; then a table of the timeframes \
         ({tfs}) with trend and last structure event; then the key levels as a list from highest to lowest with the \
         current price placed among them; then the upcoming events with their times in UTC. {COMMON}"
    );
    Ok((format!("Market brief: {symbol}"), text))
}

fn journal_review(args: &JsonObject) -> Result<(String, String), PromptError> {
    let days = match number(args, "days")? {
        None => 7,
        Some(d) if d <= 366.0 => d.ceil() as u32,
        Some(_) => return Err(PromptError::Argument("`days` must be at most 366".into())),
    };
    let symbol = symbol(args, "symbol", false)?;
    let scope = symbol
        .as_ref()
        .map_or_else(|| "all instruments".to_owned(), |s| format!("{s} only"));
    let text = format!(
        "Review my trading journal for the last {days} days ({scope}).\n\n\
         1. Entries: `get_journal` for the period; `get_deal_history` for trades that have no journal entry.\n\
         2. Scores: `score_journal_entry` for each entry (at most 10, most recent first).\n\
         3. Results: `get_equity_curve` for the period (return, maximum drawdown).\n\n\
         Present: a short summary (trades, win rate, net result, maximum drawdown); then a table of the entries \
         (date, symbol, side, result, score, rules followed); then the recurring mistakes and strengths; then \
         exactly three concrete lessons for the next week. Be direct and specific, quoting entries by date. {COMMON}"
    );
    Ok((format!("Journal review: last {days} days"), text))
}

#[cfg(test)]
mod tests {
    use rmcp::model::ContentBlock;
    use serde_json::json;

    use super::*;

    fn args(v: Value) -> JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    fn text(r: &GetPromptResult) -> &str {
        match &r.messages[0].content {
            ContentBlock::Text(t) => &t.text,
            other => panic!("text expected, got {other:?}"),
        }
    }

    #[test]
    fn prompts_are_listed_with_their_arguments() {
        let list = prompts();
        assert_eq!(list.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), PROMPTS);
        let pre = &list[0];
        let required: Vec<&str> = pre
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true))
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(required, ["symbol", "side"]);
    }

    #[test]
    fn pre_trade_check_names_the_tools_and_the_trade() {
        let r = get(
            "pre_trade_check",
            Some(&args(json!({ "symbol": "eurusd", "side": "BUY", "stop_loss": "1.08" }))),
        )
        .unwrap();
        let t = text(&r);
        for tool in [
            "get_event_risk",
            "get_holding_risk",
            "check_portfolio_exposure",
            "get_prop_firm_status",
            "calculate_position_size",
        ] {
            assert!(t.contains(tool), "{tool} missing: {t}");
        }
        assert!(t.contains("buy of EURUSD") && t.contains("stop loss is 1.08"), "{t}");
        assert_eq!(r.messages[0].role, Role::User);
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(matches!(
            get("pre_trade_check", Some(&args(json!({ "symbol": "EURUSD" })))),
            Err(PromptError::Argument(_))
        ));
        assert!(matches!(
            get("market_brief", Some(&args(json!({ "symbol": "EUR USD; ignore" })))),
            Err(PromptError::Argument(_))
        ));
        assert!(matches!(
            get(
                "market_brief",
                Some(&args(json!({ "symbol": "XAUUSD", "timeframes": "H4,Q9" })))
            ),
            Err(PromptError::Argument(_))
        ));
        assert!(matches!(get("nope", None), Err(PromptError::Unknown(_))));
        let brief = get(
            "market_brief",
            Some(&args(json!({ "symbol": "XAUUSD", "timeframes": "h4,m15" }))),
        )
        .unwrap();
        assert!(text(&brief).contains("get_key_levels") && text(&brief).contains("H4, M15"));
        let review = get("journal_review", None).unwrap();
        assert!(text(&review).contains("last 7 days") && text(&review).contains("score_journal_entry"));
    }
}
