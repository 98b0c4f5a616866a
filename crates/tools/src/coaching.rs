//! Coaching tools: `explain_setup` (a sourced explanation of the current
//! setup of a symbol) and `score_journal_entry` (a rubric score of a journal
//! entry).
//!
//! Both only assemble what `tradeterm-core` computes
//! ([`tradeterm_core::coaching`]) from terminal bars or from the entry's own
//! fields; nothing is invented. Rules: `docs/coaching.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::coaching::journal_score::{self, JournalFacts, JournalScore};
use tradeterm_core::coaching::setup::{self, SetupParams, SetupReport};
use tradeterm_core::regime::RegimeConfig;
use tradeterm_core::{Side, Timeframe};

use crate::journal::JournalBody;
use crate::market::{MAX_BARS, fetch_bars};
use crate::{Annotations, Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Fewest bars `explain_setup` accepts.
pub const MIN_SETUP_BARS: u32 = 100;
/// Most bars `explain_setup` accepts.
pub const MAX_SETUP_BARS: u32 = 5_000;
/// Default bars of `explain_setup`.
pub const DEFAULT_SETUP_BARS: u32 = 500;
/// Largest `swing_length` of `explain_setup`.
pub const MAX_SETUP_SWING_LENGTH: u32 = 100;

// ---------------------------------------------------------------- explain_setup

/// Input of `explain_setup`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainSetupInput {
    /// Instrument, e.g. `EURUSD`.
    #[schemars(pattern(crate::schema::SYMBOL_PATTERN))]
    pub symbol: String,
    /// Timeframe: M1, M5, M15, M30, H1, H4, D1, W1 or MN1.
    pub timeframe: Timeframe,
    /// Bars of history to analyse (100-5000, default 500). Fewer than 300 adds a `few_bars` caveat. Fewer than
    /// 3 × swing_length are raised to 3 × swing_length (said in `warnings`).
    #[serde(default)]
    #[schemars(range(min = MIN_SETUP_BARS, max = MAX_SETUP_BARS))]
    pub bars: Option<u32>,
    /// Swing window (1-100, default 10): a swing is confirmed `swing_length` bars after it forms. At least
    /// 3 × swing_length bars are read, whatever `bars` says.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_SETUP_SWING_LENGTH))]
    pub swing_length: Option<u32>,
    /// Side you are considering (`buy` or `sell`): adds whether it is with the bias and the nearest
    /// open levels ahead of and behind such a trade.
    #[serde(default)]
    pub side: Option<Side>,
}

/// Output of `explain_setup`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExplainSetupOutput {
    /// Instrument.
    pub symbol: String,
    /// Timeframe.
    pub timeframe: Timeframe,
    /// The explanation.
    #[serde(flatten)]
    pub report: SetupReport,
    /// What the input asked that was adjusted (`bars` raised to 3 × swing_length); empty otherwise.
    pub warnings: Vec<String>,
}

/// The bars to read and the swing length, with a warning when `bars` is
/// raised to 3 × swing_length (the fewest bars that confirm swings).
fn setup_args(input: &ExplainSetupInput) -> Result<(u32, usize, Option<String>), ToolError> {
    let bars = input.bars.unwrap_or(DEFAULT_SETUP_BARS);
    if !(MIN_SETUP_BARS..=MAX_SETUP_BARS).contains(&bars) {
        return Err(ToolError::InvalidInput(format!(
            "`bars` must be between {MIN_SETUP_BARS} and {MAX_SETUP_BARS}, got {bars}"
        )));
    }
    let swing = input.swing_length.unwrap_or(setup::DEFAULT_SWING_LENGTH as u32);
    if !(1..=MAX_SETUP_SWING_LENGTH).contains(&swing) {
        return Err(ToolError::InvalidInput(format!(
            "`swing_length` must be between 1 and {MAX_SETUP_SWING_LENGTH}, got {swing}"
        )));
    }
    if bars < 3 * swing {
        let raised = 3 * swing;
        let warning = format!("`bars` {bars} was raised to {raised}, 3 × swing_length {swing}: fewer confirm no swing");
        return Ok((raised, swing as usize, Some(warning)));
    }
    Ok((bars, swing as usize, None))
}

async fn explain_setup(ctx: ToolContext, input: ExplainSetupInput) -> Result<ExplainSetupOutput, ToolError> {
    let (bar_count, swing_length, warning) = setup_args(&input)?;
    let bars = fetch_bars(
        &ctx,
        &input.symbol,
        input.timeframe,
        Some(bar_count.min(MAX_BARS)),
        None,
        None,
    )
    .await?;
    // The terminal's history is shorter than any explanation needs: the data
    // is not there (404, as without bars), not a fault of the request.
    let need = RegimeConfig::default().min_bars().max(3 * swing_length);
    if bars.len() < need {
        return Err(ToolError::NotFound(format!(
            "the terminal has {} {} bars of {}; explaining a setup with swing_length {swing_length} needs at least {need}",
            bars.len(),
            input.timeframe,
            input.symbol
        )));
    }
    let params = SetupParams {
        swing_length,
        side: input.side,
    };
    let report = setup::explain(&bars, &params).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    Ok(ExplainSetupOutput {
        symbol: input.symbol,
        timeframe: input.timeframe,
        report,
        warnings: warning.into_iter().collect(),
    })
}

// ---------------------------------------------------------------- score_journal_entry

/// Input of `score_journal_entry`: exactly one of `entry_id` and `entry`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// Exactly one of `entry_id` and `entry` (inside `allOf`, which client generators merge)
#[schemars(extend("allOf" = [{ "oneOf": [
        { "required": ["entry_id"], "properties": { "entry_id": { "not": { "type": "null" } } } },
        { "required": ["entry"], "properties": { "entry": { "not": { "type": "null" } } } },
] }]))]
pub struct ScoreJournalInput {
    /// Id (`jrn_…`) of a journal entry of this license, as returned by `add_journal_entry`.
    #[serde(default)]
    pub entry_id: Option<String>,
    /// An entry given inline, with the fields of `add_journal_entry` (nothing is stored). The rubric reads
    /// `side`, `entry_price`, `exit_price`, `stop_loss`, `take_profit`, `setup`, `plan`, `rules_followed`,
    /// `emotions` and `tags`; the other fields are accepted and ignored.
    #[serde(default, deserialize_with = "crate::schema::optional_object")]
    pub entry: Option<JournalBody>,
    /// Risk of the trade in percent of account equity (0-100). Journal entries have no such field: give it
    /// here, or tag the entry `risk:1.5%`; this input wins over the tag. Without either, `risk_size` is not scored.
    #[serde(default)]
    #[schemars(range(min = 0, max = 100))]
    pub risk_percent: Option<f64>,
}

/// Output of `score_journal_entry`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScoreJournalOutput {
    /// The scored entry's id (null for an inline entry).
    pub entry_id: Option<String>,
    /// Score, grade, per-criterion points and reasons, criteria not scored, suggestions.
    #[serde(flatten)]
    pub result: JournalScore,
}

/// The fields of a stored entry the rubric reads; other fields are ignored.
#[derive(Debug, Default, Deserialize)]
struct StoredEntry {
    #[serde(default)]
    side: Option<Side>,
    #[serde(default)]
    entry_price: Option<f64>,
    #[serde(default)]
    exit_price: Option<f64>,
    #[serde(default)]
    stop_loss: Option<f64>,
    #[serde(default)]
    take_profit: Option<f64>,
    #[serde(default)]
    setup: Option<String>,
    #[serde(default)]
    plan: Option<String>,
    #[serde(default)]
    rules_followed: Option<bool>,
    #[serde(default)]
    emotions: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
}

impl StoredEntry {
    fn facts(self, risk_percent: Option<f64>) -> JournalFacts {
        JournalFacts {
            side: self.side,
            entry_price: self.entry_price,
            exit_price: self.exit_price,
            stop_loss: self.stop_loss,
            take_profit: self.take_profit,
            setup: self.setup,
            plan: self.plan,
            rules_followed: self.rules_followed,
            emotions: self.emotions,
            tags: self.tags,
            risk_percent,
        }
    }
}

impl From<JournalBody> for StoredEntry {
    fn from(b: JournalBody) -> Self {
        Self {
            side: b.side,
            entry_price: b.entry_price,
            exit_price: b.exit_price,
            stop_loss: b.stop_loss,
            take_profit: b.take_profit,
            setup: b.setup,
            plan: b.plan,
            rules_followed: b.rules_followed,
            emotions: b.emotions,
            tags: b.tags,
        }
    }
}

async fn score_journal_entry(ctx: ToolContext, input: ScoreJournalInput) -> Result<ScoreJournalOutput, ToolError> {
    let (entry_id, entry) = match (input.entry_id, input.entry) {
        (Some(_), Some(_)) => {
            return Err(ToolError::InvalidInput(
                "give either `entry_id` or `entry`, not both".into(),
            ));
        }
        (None, None) => {
            return Err(ToolError::InvalidInput(
                "give `entry_id` (a stored journal entry) or `entry` (an inline entry)".into(),
            ));
        }
        (None, Some(body)) => {
            // What `add_journal_entry` checks: the schema's rules of an entry (JournalBody's serde reads its shape only).
            body.validate_in("entry.")?;
            (None, StoredEntry::from(body))
        }
        (Some(id), None) => {
            // Another license's entry is reported exactly as a missing one: the store filters by license.
            let stored = ctx
                .services
                .store
                .journal_entry(&ctx.license_id, &id)
                .await?
                .ok_or_else(|| ToolError::NotFound(format!("no journal entry {id}")))?;
            let entry: StoredEntry = serde_json::from_value(stored.body)
                .map_err(|e| ToolError::Internal(format!("journal entry {id} has an unreadable body: {e}")))?;
            (Some(id), entry)
        }
    };
    let result =
        journal_score::score(&entry.facts(input.risk_percent)).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
    Ok(ScoreJournalOutput { entry_id, result })
}

// ---------------------------------------------------------------- catalog

const READ_STORE: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "explain_setup",
            title: "Explain the current setup",
            description: "A structured, sourced explanation of a symbol's current setup on one timeframe, as of the last bar's close: swing trend with the last BOS/CHoCH and its bar times, the volatility regime with its numbers (ADX, +DI/-DI, efficiency ratio, ATR and bandwidth percentiles), the nearest unmitigated fair value gap and order block and the nearest unswept liquidity pool above and below price (distance in price and in ATR), and the Fibonacci levels of the last swing leg. `observations` are sentences, each listing the exact values it was written from in `sources`; `bias` (bullish/bearish/neutral) follows a fixed rule (structure, vetoed to neutral when ADX >= 25 with the opposite DI on top); `caveats` says what limits the reading. Analysis of past bars, not a prediction. A terminal whose history of the symbol and timeframe is shorter than the analysis needs (the regime's indicators, 3 × swing_length) answers 404 NOT_FOUND saying how many bars it has, as it does without bars.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::Terminal,
            annotations: READ_TERMINAL,
        }
        .build(explain_setup),
        ToolSpec {
            name: "score_journal_entry",
            title: "Score a journal entry",
            description: "Scores a trading-journal entry 0-100 with a fixed rubric: plan and named setup (15), stop loss recorded (15), risk as % of equity (15: <= 2% good, <= 5% fair), planned reward:risk (10), realised R (10), rule adherence from `rules_followed` and breach tags like `moved_stop`/`exited_early` (20), emotion tags like `fomo`/`revenge` (15). Give `entry_id` (a stored entry of this license) or `entry` (inline). Each criterion reports points, max and a reason citing the entry's values; criteria without data are listed in `not_scored` with what is missing, and the score is normalised over the scored ones. Works without a terminal.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::License,
            annotations: READ_STORE,
        }
        .build(score_journal_entry),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(bars: Option<u32>, swing_length: Option<u32>) -> ExplainSetupInput {
        ExplainSetupInput {
            symbol: "EURUSD".into(),
            timeframe: Timeframe::H1,
            bars,
            swing_length,
            side: None,
        }
    }

    #[test]
    fn catalog_entries() {
        let tools = tools();
        assert_eq!(tools.len(), 2);
        for t in &tools {
            assert_eq!(t.capability, Capability::Analytics, "{}", t.name);
            assert_eq!(t.gate, Gate::Always);
            assert!(t.annotations.read_only && !t.annotations.destructive);
            assert_eq!(t.input_schema["type"], "object");
        }
        assert_eq!(tools[0].target, Target::Terminal);
        assert_eq!(tools[1].target, Target::License);
        assert!(!tools[1].annotations.open_world);
    }

    #[test]
    fn setup_argument_bounds() {
        assert_eq!(setup_args(&input(None, None)).unwrap(), (500, 10, None));
        assert!(setup_args(&input(Some(99), None)).is_err());
        assert!(setup_args(&input(Some(5001), None)).is_err());
        assert!(setup_args(&input(None, Some(0))).is_err());
        assert!(setup_args(&input(None, Some(101))).is_err());
        // Schema-valid: fewer bars than 3 × swing_length are raised, with a warning (no refusal).
        let (bars, swing, warning) = setup_args(&input(Some(200), Some(100))).unwrap();
        assert_eq!((bars, swing), (300, 100));
        let warning = warning.unwrap();
        assert!(warning.contains("raised to 300"), "{warning}");
    }

    /// No terminal at all: `score_journal_entry` with an inline entry needs none.
    struct NoTerminal;

    #[async_trait::async_trait]
    impl tradeterm_protocol::Dispatch for NoTerminal {
        async fn execute(
            &self,
            _license: &str,
            _terminal: &str,
            _command: tradeterm_protocol::Command,
            _timeout: std::time::Duration,
        ) -> Result<tradeterm_protocol::CommandResult, tradeterm_protocol::DispatchError> {
            Err(tradeterm_protocol::DispatchError::Unreachable)
        }

        async fn terminals(
            &self,
            _license: &str,
        ) -> Result<Vec<tradeterm_protocol::TerminalStatus>, tradeterm_protocol::DispatchError> {
            Ok(Vec::new())
        }
    }

    async fn score(input: serde_json::Value) -> Result<serde_json::Value, ToolError> {
        let store = tradeterm_store::SqlStore::connect("sqlite::memory:").await.unwrap();
        let services = crate::Services::new(std::sync::Arc::new(NoTerminal), std::sync::Arc::new(store));
        let caller = crate::Caller {
            license_id: "lic_test".into(),
            credential: "key_test".into(),
            caps: vec![Capability::Read, Capability::Analytics],
        };
        let ctx = ToolContext::new(std::sync::Arc::new(services), caller, None);
        crate::find("score_journal_entry").unwrap().call(ctx, input).await
    }

    #[tokio::test]
    async fn an_inline_entry_is_held_to_its_schema() {
        let ok = score(serde_json::json!({ "entry": { "symbol": "EURUSD", "tags": ["breakout"] } })).await;
        assert!(ok.is_ok(), "{ok:?}");
        for (entry, field) in [
            (serde_json::json!({ "tags": [""] }), "`entry.tags`"),
            (serde_json::json!({ "emotions": ["x".repeat(65)] }), "`entry.emotions`"),
            (serde_json::json!({ "symbol": "EUR USD" }), "`entry.symbol`"),
            (serde_json::json!({ "symbol": "" }), "`entry.symbol`"),
            (serde_json::json!({ "entry_price": 0 }), "`entry.entry_price`"),
            (serde_json::json!({ "opened_at": "yesterday" }), "`entry.opened_at`"),
        ] {
            let e = score(serde_json::json!({ "entry": entry })).await.unwrap_err();
            assert_eq!(e.code(), "VALIDATION_ERROR", "{entry}");
            assert!(e.to_string().contains(field), "{entry}: {e}");
        }
    }

    #[tokio::test]
    async fn a_history_too_short_to_explain_is_not_found_not_invalid() {
        let input = serde_json::json!({ "symbol": "EURUSD", "timeframe": "MN1", "bars": 388 });
        let e = crate::market_analysis::fake::call("explain_setup", 20, true, input.clone())
            .await
            .unwrap_err();
        assert_eq!(e.code(), "NOT_FOUND", "{e}");
        assert!(e.to_string().contains("the terminal has 20 MN1 bars of EURUSD"), "{e}");
        let out = crate::market_analysis::fake::call("explain_setup", 400, true, input).await;
        assert!(out.is_ok(), "{out:?}");
    }

    #[test]
    fn stored_bodies_map_onto_the_rubric() {
        let body = serde_json::json!({
            "symbol": "EURUSD", "side": "sell", "entry_price": 1.1, "stop_loss": 1.102,
            "take_profit": 1.095, "plan": "fade the high", "emotions": ["calm"], "tags": ["risk:1%"],
            "ticket": 7, "future_field": true
        });
        let e: StoredEntry = serde_json::from_value(body).unwrap();
        let f = e.facts(None);
        assert_eq!(f.side, Some(Side::Sell));
        assert_eq!(f.take_profit, Some(1.095));
        let s = journal_score::score(&f).unwrap();
        assert_eq!(s.risk_percent_source.as_deref(), Some("tag"));
        assert!(s.criteria.iter().any(|c| c.name == "planned_rr"));
        assert!(s.not_scored.iter().any(|c| c.name == "realised_r"));
    }
}
