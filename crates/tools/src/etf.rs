//! `get_etf_flows`: daily net flows of exchange-traded funds (for example
//! the spot bitcoin ETFs), from a data file the operator keeps up to date.
//! Disabled by default: the feature flag is the file itself
//! (`ETF_FLOWS_FILE`); unset, the tool answers 403 `FORBIDDEN` saying it is
//! disabled on this server. See `docs/etf-flows.md`.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::time::{DAY_MS, parse_iso};

use crate::{Annotations, Capability, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Most records a flows file may hold.
pub const MAX_FLOW_RECORDS: usize = 500_000;
/// Longest window of one call, days.
pub const MAX_FLOW_DAYS: u32 = 366;
/// An asset filter: 1–16 ASCII letters or digits.
pub const ASSET_PATTERN: &str = "^[A-Za-z0-9]{1,16}$";

/// One fund's net flow on one day.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRecord {
    /// Trading day, `YYYY-MM-DD`.
    date: String,
    /// Fund ticker (`IBIT`).
    fund: String,
    /// Underlying asset (`BTC`).
    asset: String,
    /// Net flow, US dollars (negative = outflow).
    flow_usd: f64,
}

#[derive(Debug, Clone, PartialEq)]
struct Record {
    /// Day start, unix ms UTC.
    day: i64,
    fund: String,
    asset: String,
    flow_usd: f64,
}

/// The flows data of the server; disabled (the default) without a file.
#[derive(Debug, Default)]
pub struct EtfFlows {
    records: Option<Vec<Record>>,
}

impl EtfFlows {
    /// Flows from the text of a flows file: a JSON array of `{ "date":
    /// "YYYY-MM-DD", "fund", "asset", "flow_usd" }`.
    ///
    /// # Errors
    /// A message naming the first bad record.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let raw: Vec<FileRecord> = serde_json::from_str(text).map_err(|e| format!("ETF flows file: {e}"))?;
        if raw.len() > MAX_FLOW_RECORDS {
            return Err(format!("ETF flows file: more than {MAX_FLOW_RECORDS} records"));
        }
        let mut records = Vec::with_capacity(raw.len());
        let mut seen = std::collections::HashSet::new();
        for (index, record) in raw.into_iter().enumerate() {
            let bad = |what: &str| {
                format!(
                    "ETF flows file: record {index} ({} {}): {what}",
                    record.fund, record.date
                )
            };
            let day = parse_iso(&format!("{}T00:00:00Z", record.date)).map_err(|_| bad("`date` must be YYYY-MM-DD"))?;
            let ticker = |s: &str| !s.is_empty() && s.len() <= 16 && s.chars().all(|c| c.is_ascii_alphanumeric());
            if !ticker(&record.fund) || !ticker(&record.asset) {
                return Err(bad("`fund` and `asset` must be 1-16 letters or digits"));
            }
            if !record.flow_usd.is_finite() {
                return Err(bad("`flow_usd` must be a finite number"));
            }
            let (fund, asset) = (record.fund.to_ascii_uppercase(), record.asset.to_ascii_uppercase());
            if !seen.insert((day, fund.clone())) {
                return Err(bad("a fund has one record per day"));
            }
            records.push(Record {
                day,
                fund,
                asset,
                flow_usd: record.flow_usd,
            });
        }
        records.sort_by(|a, b| a.day.cmp(&b.day).then_with(|| a.fund.cmp(&b.fund)));
        Ok(Self { records: Some(records) })
    }

    /// Loads a flows file.
    ///
    /// # Errors
    /// The file cannot be read or is not valid.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_json(&text)
    }

    /// Whether the feature is on (a file is configured).
    pub fn is_enabled(&self) -> bool {
        self.records.is_some()
    }
}

/// Input of `get_etf_flows`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EtfFlowsInput {
    /// Underlying asset, e.g. `BTC` (default: every asset in the data, each summed separately).
    #[serde(default)]
    #[schemars(pattern(ASSET_PATTERN))]
    pub asset: Option<String>,
    /// Days back from the latest day in the data (1-366, default 30).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_FLOW_DAYS))]
    pub days: Option<u32>,
}

/// One day of one asset.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FlowDay {
    /// Day (`YYYY-MM-DD`).
    pub date: String,
    /// Net flow of all funds of the asset, US dollars.
    pub net_usd: f64,
    /// Net flow per fund, US dollars.
    pub funds: BTreeMap<String, f64>,
}

/// One asset's flows.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AssetFlows {
    /// Underlying asset.
    pub asset: String,
    /// Days with data, oldest first.
    pub days: Vec<FlowDay>,
    /// Sum over the days, US dollars.
    pub total_usd: f64,
    /// Sum over the last five days with data, US dollars.
    pub last_5_days_usd: f64,
    /// Consecutive latest days of inflow (positive) or outflow (negative); 0 when the latest day is flat.
    pub streak_days: i32,
}

/// Output of `get_etf_flows`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EtfFlowsOutput {
    /// Per asset.
    pub assets: Vec<AssetFlows>,
    /// The latest day in the data (`YYYY-MM-DD`).
    pub latest_date: Option<String>,
    /// Whole days between the latest day in the data and today (UTC): how stale the file is.
    pub days_behind: Option<i64>,
}

/// `YYYY-MM-DD` of the UTC day starting at `day` (a date, not an instant).
fn date_of(day: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(day)
        .map(|t| t.date_naive().to_string())
        .unwrap_or_default()
}

async fn get_etf_flows(ctx: ToolContext, input: EtfFlowsInput) -> Result<EtfFlowsOutput, ToolError> {
    let Some(records) = &ctx.services.etf_flows.records else {
        return Err(ToolError::Forbidden(
            "get_etf_flows is disabled on this server (enable it with ETF_FLOWS_FILE)".into(),
        ));
    };
    let days = input.days.unwrap_or(30);
    if !(1..=MAX_FLOW_DAYS).contains(&days) {
        return Err(ToolError::InvalidInput(format!(
            "`days` must be between 1 and {MAX_FLOW_DAYS}, got {days}"
        )));
    }
    let asset = match &input.asset {
        Some(only) if only.is_empty() || only.len() > 16 || !only.chars().all(|c| c.is_ascii_alphanumeric()) => {
            return Err(ToolError::InvalidInput("`asset` must be 1-16 letters or digits".into()));
        }
        Some(only) => Some(only.to_ascii_uppercase()),
        None => None,
    };
    let latest = records.last().map(|record| record.day);
    let from = latest.map_or(0, |l| l - (i64::from(days) - 1) * DAY_MS);
    let mut by_asset: BTreeMap<String, BTreeMap<i64, BTreeMap<String, f64>>> = BTreeMap::new();
    for record in records
        .iter()
        .filter(|record| record.day >= from && asset.as_ref().is_none_or(|only| &record.asset == only))
    {
        by_asset
            .entry(record.asset.clone())
            .or_default()
            .entry(record.day)
            .or_default()
            .insert(record.fund.clone(), record.flow_usd);
    }
    if let Some(only) = &asset
        && !by_asset.contains_key(only)
    {
        return Err(ToolError::NotFound(format!(
            "no ETF flows for `{only}` in the last {days} days of the data"
        )));
    }
    let assets = by_asset
        .into_iter()
        .map(|(asset, days)| {
            let days: Vec<FlowDay> = days
                .into_iter()
                .map(|(day, funds)| FlowDay {
                    date: date_of(day),
                    net_usd: funds.values().sum(),
                    funds,
                })
                .collect();
            let total_usd = days.iter().map(|d| d.net_usd).sum();
            let last_5_days_usd = days.iter().rev().take(5).map(|d| d.net_usd).sum();
            let sign = |v: f64| {
                if v > 0.0 {
                    1
                } else if v < 0.0 {
                    -1
                } else {
                    0
                }
            };
            let latest_sign = days.last().map_or(0, |d| sign(d.net_usd));
            let run = days.iter().rev().take_while(|d| sign(d.net_usd) == latest_sign).count() as i32;
            AssetFlows {
                asset,
                streak_days: if latest_sign == 0 { 0 } else { latest_sign * run },
                days,
                total_usd,
                last_5_days_usd,
            }
        })
        .collect();
    Ok(EtfFlowsOutput {
        assets,
        latest_date: latest.map(date_of),
        days_behind: latest.map(|l| (ctx.now_ms - l).div_euclid(DAY_MS)),
    })
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_etf_flows",
            title: "ETF flows",
            description: "Daily net flows of exchange-traded funds (e.g. spot bitcoin ETFs) per asset and fund over the last `days` of the data, with totals, the last five days and the current inflow/outflow streak. Disabled by default: available only when the server is configured with a flows file (ETF_FLOWS_FILE); otherwise 403.",
            capability: Capability::Analytics,
            gate: Gate::Always,
            target: Target::License,
            annotations: Annotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
        }
        .build(get_etf_flows),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_files_are_validated() {
        let ok = r#"[
            {"date": "2026-11-20", "fund": "ibit", "asset": "btc", "flow_usd": 120000000},
            {"date": "2026-11-19", "fund": "FBTC", "asset": "BTC", "flow_usd": -5e6}
        ]"#;
        let flows = EtfFlows::from_json(ok).unwrap();
        assert!(flows.is_enabled());
        let records = flows.records.as_ref().unwrap();
        assert_eq!(
            (records[0].fund.as_str(), records[1].fund.as_str()),
            ("FBTC", "IBIT"),
            "by day"
        );
        for (bad, needle) in [
            (
                r#"[{"date": "20-11-2026", "fund": "A", "asset": "BTC", "flow_usd": 1}]"#,
                "date",
            ),
            (
                r#"[{"date": "2026-11-20", "fund": "", "asset": "BTC", "flow_usd": 1}]"#,
                "fund",
            ),
            (
                r#"[{"date": "2026-11-20", "fund": "A", "asset": "BTC", "flow_usd": 1, "x": 2}]"#,
                "unknown field",
            ),
            (
                r#"[{"date": "2026-11-20", "fund": "A", "asset": "BTC", "flow_usd": 1},
                    {"date": "2026-11-20", "fund": "a", "asset": "BTC", "flow_usd": 2}]"#,
                "one record per day",
            ),
        ] {
            let error = EtfFlows::from_json(bad).unwrap_err();
            assert!(error.contains(needle), "{error} should mention {needle}");
        }
        assert!(!EtfFlows::default().is_enabled());
    }
}
