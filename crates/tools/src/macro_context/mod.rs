//! Macro tools: `get_economic_surprise`, `get_rate_expectations`,
//! `get_cb_stance`, `get_market_context`, `get_risk_regime`.
//!
//! They read the terminal (symbol list, bars) and the economic calendar
//! (through [`crate::events::fetch_events`], in chunks of at most 31 days) and
//! compute with [`tradeterm_core::macro_context`]. Inputs a terminal does not
//! offer are listed as missing, never zeroed; no probability is ever
//! invented. Rules and formulas: `docs/macro.md`.
//!
//! One file per tool; the symbol resolution and calendar helpers they share
//! are here.

mod get_cb_stance;
mod get_economic_surprise;
mod get_market_context;
mod get_rate_expectations;
mod get_risk_regime;

use futures_util::future::try_join_all;
use schemars::JsonSchema;
use serde::Serialize;
use tradeterm_core::events::EconomicEvent;
use tradeterm_core::macro_context as mc;
use tradeterm_core::time::{DAY_MS, UnixMs};
use tradeterm_core::{Bar, CoreError, Timeframe};
use tradeterm_protocol::{Command, CommandResult};

use crate::context::unexpected;
use crate::events::{CalendarSource, MAX_CALENDAR_DAYS, SourcePreference, fetch_events, is_currency};
use crate::market::{check_symbol, fetch_bars};
use crate::{Tool, ToolContext, ToolError};

/// Candidate symbol names of the US dollar index, tried in order.
pub const DXY_CANDIDATES: &[&str] = &["DXY", "USDX", "DX", "DOLLARINDEX"];
/// Candidate symbol names of the VIX.
pub const VIX_CANDIDATES: &[&str] = &["VIX", "VIX.F", "VOLX", "VIXX"];
/// Candidate symbol names of the US 10-year Treasury yield.
pub const US10Y_CANDIDATES: &[&str] = &["US10Y", "UST10Y", "TNX", "US10YR"];
/// Candidate symbol names of the equity index of the risk regime.
pub const EQUITY_CANDIDATES: &[&str] = &["US500", "SPX500", "SP500", "SPX", "US500.cash"];
/// Candidate symbol names of USDJPY.
pub const YEN_CANDIDATES: &[&str] = &["USDJPY"];
/// Candidate symbol names of USDCHF.
pub const FRANC_CANDIDATES: &[&str] = &["USDCHF"];
/// Candidate symbol names of gold.
pub const GOLD_CANDIDATES: &[&str] = &["XAUUSD", "GOLD"];

/// Default currencies of the surprise index.
/// Schema of a list of G10 currency codes (`get_cb_stance`,
/// `get_rate_expectations`), at most [`MAX_CURRENCY_CODES`].
pub(crate) fn g10_currencies(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let codes: Vec<&str> = mc::G10.iter().map(|(code, _)| *code).collect();
    schemars::json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": codes },
        "maxItems": MAX_CURRENCY_CODES,
    })
}

/// Most currency codes one call may list.
pub(crate) const MAX_CURRENCY_CODES: usize = 10;

const DEFAULT_SURPRISE_CURRENCIES: &[&str] = &["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD"];

fn core_err(e: CoreError) -> ToolError {
    match e {
        CoreError::InvalidParameter { name, reason } => ToolError::InvalidInput(format!("`{name}` {reason}")),
        other => ToolError::InvalidInput(other.to_string()),
    }
}

fn in_range(field: &str, v: Option<u32>, default: u32, min: u32, max: u32) -> Result<u32, ToolError> {
    let v = v.unwrap_or(default);
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(ToolError::InvalidInput(format!(
            "`{field}` must be between {min} and {max}"
        )))
    }
}

/// Symbols the terminal offers.
async fn terminal_symbols(ctx: &ToolContext) -> Result<Vec<String>, ToolError> {
    match ctx.run(Command::Symbols).await? {
        CommandResult::Symbols { symbols } => Ok(symbols),
        other => Err(unexpected("symbols", &other)),
    }
}

/// How an input was matched to a terminal symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedBy {
    /// The caller named the symbol.
    Explicit,
    /// The first candidate name the terminal offers (exactly, or with a broker suffix after `.`, `#`, `_` or `-`).
    Candidate,
}

struct Resolution {
    symbol: Option<String>,
    by: Option<ResolvedBy>,
    reason: Option<String>,
}

fn check_explicit(field: &str, v: &Option<String>) -> Result<(), ToolError> {
    if let Some(s) = v {
        check_symbol(s).map_err(|e| ToolError::InvalidInput(format!("`{field}`: {e}")))?;
    }
    Ok(())
}

fn resolve(explicit: Option<&str>, candidates: &[&str], symbols: &[String]) -> Resolution {
    if let Some(wanted) = explicit {
        return match symbols.iter().find(|found| found.eq_ignore_ascii_case(wanted)) {
            Some(found) => Resolution {
                symbol: Some(found.clone()),
                by: Some(ResolvedBy::Explicit),
                reason: None,
            },
            None => Resolution {
                symbol: None,
                by: None,
                reason: Some(format!("the terminal does not offer `{wanted}`")),
            },
        };
    }
    for candidate in candidates {
        let hit = symbols
            .iter()
            .find(|found| found.eq_ignore_ascii_case(candidate))
            .or_else(|| {
                symbols.iter().find(|found| {
                    found.len() > candidate.len()
                        && found.is_char_boundary(candidate.len())
                        && found[..candidate.len()].eq_ignore_ascii_case(candidate)
                        && found[candidate.len()..].starts_with(['.', '#', '_', '-'])
                })
            });
        if let Some(found) = hit {
            return Resolution {
                symbol: Some(found.clone()),
                by: Some(ResolvedBy::Candidate),
                reason: None,
            };
        }
    }
    Resolution {
        symbol: None,
        by: None,
        reason: Some(format!(
            "the terminal offers none of {}; name a symbol explicitly",
            candidates.join(", ")
        )),
    }
}

/// Bars of a resolved symbol; a symbol the terminal refuses becomes a reason.
async fn bars_or_reason(
    ctx: &ToolContext,
    symbol: &str,
    tf: Timeframe,
    count: u32,
) -> Result<Result<Vec<Bar>, String>, ToolError> {
    match fetch_bars(ctx, symbol, tf, Some(count), None, None).await {
        Ok(b) if b.is_empty() => Ok(Err(format!(
            "the terminal returned no {} bars of `{symbol}`",
            tf.as_str()
        ))),
        Ok(b) => Ok(Ok(b)),
        Err(ToolError::NotFound(m) | ToolError::InvalidInput(m)) => Ok(Err(format!("`{symbol}`: {m}"))),
        Err(e) => Err(e),
    }
}

/// The calendar of `[from, to)`, fetched in chunks of at most 31 days.
async fn fetch_calendar(
    ctx: &ToolContext,
    from: UnixMs,
    to: UnixMs,
    currencies: &[String],
    pref: SourcePreference,
) -> Result<(CalendarSource, Vec<EconomicEvent>, Option<String>), ToolError> {
    let mut ranges = Vec::new();
    let mut start = from;
    while start < to {
        let end = (start + MAX_CALENDAR_DAYS * DAY_MS).min(to);
        ranges.push((start, end));
        start = end;
    }
    let chunks = try_join_all(ranges.iter().map(|(f, t)| fetch_events(ctx, *f, *t, currencies, pref))).await?;
    let mut source = None;
    let mut note = None;
    let mut events = Vec::new();
    for (chunk_source, chunk_events, chunk_note) in chunks {
        match source {
            None => source = Some(chunk_source),
            Some(prev) if prev != chunk_source => {
                return Err(ToolError::Dispatch(
                    "the calendar source changed during the request (the terminal connected or disconnected); retry"
                        .into(),
                ));
            }
            Some(_) => {}
        }
        note = note.or(chunk_note);
        events.extend(chunk_events);
    }
    events.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    events.dedup_by(|a, b| a.id == b.id);
    Ok((source.unwrap_or(CalendarSource::None), events, note))
}

fn parse_currencies(list: &[String], default: &[&str], g10_only: bool) -> Result<Vec<String>, ToolError> {
    if list.is_empty() {
        return Ok(default.iter().map(|code| (*code).to_owned()).collect());
    }
    if list.len() > MAX_CURRENCY_CODES {
        return Err(ToolError::InvalidInput("`currencies` may list at most 10 codes".into()));
    }
    let mut out: Vec<String> = Vec::new();
    for code in list {
        if !is_currency(code) {
            return Err(ToolError::InvalidInput(format!(
                "invalid currency `{}`: use a 3-letter ISO code such as USD",
                code.chars().take(40).collect::<String>()
            )));
        }
        let code = code.to_ascii_uppercase();
        if g10_only && mc::central_bank(&code).is_none() {
            return Err(ToolError::InvalidInput(format!(
                "`{code}` is not a G10 currency (USD, EUR, GBP, JPY, CHF, CAD, AUD, NZD, SEK, NOK)"
            )));
        }
        if !out.contains(&code) {
            out.push(code);
        }
    }
    Ok(out)
}

fn g10() -> Vec<&'static str> {
    mc::G10.iter().map(|(c, _)| *c).collect()
}

/// The tools of this module, in catalog order.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        get_market_context::tool(),
        get_risk_regime::tool(),
        get_economic_surprise::tool(),
        get_rate_expectations::tool(),
        get_cb_stance::tool(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Capability;

    fn syms(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn resolution_tries_candidates_then_suffixes() {
        let symbols = syms(&["EURUSD", "usdx.a", "VIX"]);
        let resolution = resolve(None, DXY_CANDIDATES, &symbols);
        assert_eq!(
            (resolution.symbol.as_deref(), resolution.by),
            (Some("usdx.a"), Some(ResolvedBy::Candidate))
        );
        let resolution = resolve(None, VIX_CANDIDATES, &symbols);
        assert_eq!(resolution.symbol.as_deref(), Some("VIX"));
        let resolution = resolve(None, US10Y_CANDIDATES, &symbols);
        assert!(resolution.symbol.is_none());
        assert!(resolution.reason.unwrap().contains("US10Y"));
        let resolution = resolve(Some("eurusd"), VIX_CANDIDATES, &symbols);
        assert_eq!(
            (resolution.symbol.as_deref(), resolution.by),
            (Some("EURUSD"), Some(ResolvedBy::Explicit))
        );
        let resolution = resolve(Some("GBPUSD"), VIX_CANDIDATES, &symbols);
        assert!(
            resolution.symbol.is_none(),
            "an explicit symbol the terminal lacks is missing, not replaced"
        );
        // A prefix without a separator is another symbol.
        assert!(resolve(None, &["DX"], &syms(&["DXYZ"])).symbol.is_none());
    }

    #[test]
    fn currencies_are_checked() {
        assert_eq!(parse_currencies(&[], &["USD"], false).unwrap(), vec!["USD"]);
        assert_eq!(
            parse_currencies(&syms(&["usd", "USD", "eur"]), &[], true).unwrap(),
            vec!["USD", "EUR"]
        );
        assert!(parse_currencies(&syms(&["MXN"]), &[], true).is_err());
        assert!(parse_currencies(&syms(&["MXN"]), &[], false).is_ok());
        assert!(parse_currencies(&syms(&["dollars"]), &[], false).is_err());
        assert!(parse_currencies(&vec!["USD".to_owned(); 11], &[], false).is_err());
        assert!(in_range("x", Some(0), 5, 1, 10).is_err());
        assert_eq!(in_range("x", None, 5, 1, 10).unwrap(), 5);
    }

    #[test]
    fn catalog_lists_the_macro_tools_with_analytics() {
        let names: Vec<&str> = tools().iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "get_market_context",
                "get_risk_regime",
                "get_economic_surprise",
                "get_rate_expectations",
                "get_cb_stance"
            ]
        );
        for t in tools() {
            assert_eq!(t.capability, Capability::Analytics);
            assert!(t.annotations.read_only);
        }
    }
}
