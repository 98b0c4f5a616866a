//! Volatility regime, structural trend state and strategy style.
//!
//! Three small, deterministic classifiers built on the indicators and the
//! market-structure detector. Every threshold is a named constant, documented
//! in `docs/analytics.md`, and every result carries the numbers it was
//! decided from, so a caller can always say *why*.
//!
//! - [`volatility_regime`]: `compressed | expanding | trending | choppy` from
//!   ATR and Bollinger-bandwidth percentiles, ADX and Kaufman's efficiency
//!   ratio.
//! - [`trend_state`]: `bullish | bearish | ranging` from the last break of
//!   structure / change of character and the swing sequence (HH/HL, LH/LL).
//! - [`strategy_style`]: `trend-follow | mean-revert | breakout | stand-aside`
//!   from the two above.
//!
//! All functions are pure (bars in, result out) and return [`CoreError`] on
//! bad input; none panics.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::regime::efficiency_ratio;
//!
//! assert_eq!(efficiency_ratio(&[1.0, 2.0, 3.0, 4.0], 3), Some(1.0)); // a straight line
//! assert_eq!(efficiency_ratio(&[1.0, 2.0, 1.0, 2.0], 3), Some(1.0 / 3.0)); // net 1 over a path of 3
//! assert_eq!(efficiency_ratio(&[1.0, 2.0], 3), None); // too short
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::indicators::{AverageDirectionalIndex, AverageTrueRange, BollingerBands};
use crate::structure::{self, BosChochConfig, BreakKind, Direction, StructureConfig, StructureEvent, Swing, SwingKind};
use crate::time::UnixMs;
use crate::{Bar, CoreError};

/// ADX at or above which the market counts as directional (Wilder's 25).
pub const ADX_TRENDING: f64 = 25.0;
/// ADX below which a choppy market is considered safe to fade (mean-revert).
pub const ADX_WEAK: f64 = 20.0;
/// Efficiency ratio at or above which price moves efficiently (trending).
pub const ER_TRENDING: f64 = 0.30;
/// Bandwidth percentile at or below which volatility is compressed.
pub const BANDWIDTH_COMPRESSED_PCT: f64 = 20.0;
/// Bandwidth percentile at or above which volatility is expanding.
pub const BANDWIDTH_EXPANDING_PCT: f64 = 80.0;
/// ATR rise (percent, over [`ATR_CHANGE_BARS`] bars) at or above which volatility is expanding.
pub const ATR_RISE_EXPANDING_PCT: f64 = 20.0;
/// Bars over which the ATR change is measured.
pub const ATR_CHANGE_BARS: usize = 5;
/// Fewest indicator values a percentile is computed over.
pub const MIN_PERCENTILE_SAMPLES: usize = 20;

/// Parameters of [`volatility_regime`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegimeConfig {
    /// ATR period (default 14).
    pub atr_period: usize,
    /// Bollinger period (default 20, 2 standard deviations).
    pub bb_period: usize,
    /// ADX period (default 14).
    pub adx_period: usize,
    /// Efficiency-ratio window in bars (default 20).
    pub er_period: usize,
    /// Percentile lookback: how many of the latest ATR / bandwidth values the
    /// current one is ranked among (default 100).
    pub lookback: usize,
}

impl Default for RegimeConfig {
    fn default() -> Self {
        Self {
            atr_period: 14,
            bb_period: 20,
            adx_period: 14,
            er_period: 20,
            lookback: 100,
        }
    }
}

impl RegimeConfig {
    /// Fewest bars [`volatility_regime`] accepts with this configuration: the
    /// longest warm-up plus [`MIN_PERCENTILE_SAMPLES`] values to rank.
    pub fn min_bars(&self) -> usize {
        let warm = [
            self.atr_period + ATR_CHANGE_BARS,
            self.bb_period,
            2 * self.adx_period,
            self.er_period + 1,
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        warm + MIN_PERCENTILE_SAMPLES
    }

    fn validate(&self) -> Result<(), CoreError> {
        for (name, v, min) in [
            ("atr_period", self.atr_period, 1),
            ("bb_period", self.bb_period, 2),
            ("adx_period", self.adx_period, 2),
            ("er_period", self.er_period, 1),
            ("lookback", self.lookback, MIN_PERCENTILE_SAMPLES),
        ] {
            if v < min || v > crate::indicators::MAX_PERIOD {
                return Err(CoreError::param(
                    name,
                    format!("must be within [{min}, {}], got {v}", crate::indicators::MAX_PERIOD),
                ));
            }
        }
        Ok(())
    }
}

/// Volatility regime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Regime {
    /// Bandwidth in the bottom fifth of its recent history: a squeeze.
    Compressed,
    /// Volatility widening fast (bandwidth in the top fifth, or ATR up sharply).
    Expanding,
    /// Directional and efficient: ADX ≥ 25 and efficiency ratio ≥ 0.30.
    Trending,
    /// None of the above: normal volatility without direction.
    Choppy,
}

impl Regime {
    /// The serialised name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Compressed => "compressed",
            Self::Expanding => "expanding",
            Self::Trending => "trending",
            Self::Choppy => "choppy",
        }
    }
}

/// The numbers a regime was decided from (all at the last bar).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegimeMetrics {
    /// ATR, price units.
    pub atr: f64,
    /// Percent of the last `lookback` ATR values that are ≤ the current one (0-100).
    pub atr_percentile: f64,
    /// ATR change over [`ATR_CHANGE_BARS`] bars, percent.
    pub atr_change_pct: f64,
    /// Bollinger bandwidth `(upper − lower) / middle`.
    pub bandwidth: f64,
    /// Percent of the last `lookback` bandwidth values that are ≤ the current one (0-100).
    pub bandwidth_percentile: f64,
    /// ADX (0-100).
    pub adx: f64,
    /// +DI.
    pub plus_di: f64,
    /// −DI.
    pub minus_di: f64,
    /// Kaufman efficiency ratio `|close_t − close_{t−n}| / Σ|Δclose|` (0-1; 0 when price did not move).
    pub efficiency_ratio: f64,
    /// Values each percentile was computed over (≤ `lookback`).
    pub percentile_samples: usize,
}

/// Result of [`volatility_regime`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegimeReport {
    /// The regime.
    pub regime: Regime,
    /// The rule that decided it, with the numbers.
    pub rule: String,
    /// The numbers.
    pub metrics: RegimeMetrics,
}

/// Percent of `window` values `<= current` (0-100).
pub fn percentile_rank(window: &[f64], current: f64) -> Option<f64> {
    if window.is_empty() || !current.is_finite() {
        return None;
    }
    let below = window.iter().filter(|v| **v <= current).count();
    Some(100.0 * below as f64 / window.len() as f64)
}

/// Kaufman's efficiency ratio of the last `period` changes of `closes`
/// (`None` when fewer than `period + 1` closes). 0 when the closes never moved.
pub fn efficiency_ratio(closes: &[f64], period: usize) -> Option<f64> {
    if period == 0 || closes.len() < period + 1 {
        return None;
    }
    let w = &closes[closes.len() - period - 1..];
    let net = (w[w.len() - 1] - w[0]).abs();
    let path: f64 = w.windows(2).map(|p| (p[1] - p[0]).abs()).sum();
    Some(if path > 0.0 { (net / path).min(1.0) } else { 0.0 })
}

fn last_n_valid(series: &[Option<f64>], n: usize) -> Vec<f64> {
    let valid: Vec<f64> = series.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    valid[valid.len().saturating_sub(n)..].to_vec()
}

fn last(series: &[Option<f64>], what: &str) -> Result<f64, CoreError> {
    series
        .last()
        .copied()
        .flatten()
        .ok_or_else(|| CoreError::InvalidInput(format!("{what} is not available at the last bar")))
}

/// Classifies the volatility regime at the last bar of `bars`.
///
/// Rules, first match wins (thresholds are the constants of this module):
/// 1. `trending`: ADX ≥ 25 and efficiency ratio ≥ 0.30;
/// 2. `expanding`: bandwidth percentile ≥ 80, or ATR up ≥ 20 % over 5 bars;
/// 3. `compressed`: bandwidth percentile ≤ 20;
/// 4. `choppy`: otherwise.
///
/// # Errors
/// [`CoreError::InvalidParameter`] for a bad configuration;
/// [`CoreError::InvalidInput`] for an invalid series or fewer than
/// [`RegimeConfig::min_bars`] bars.
pub fn volatility_regime(bars: &[Bar], config: &RegimeConfig) -> Result<RegimeReport, CoreError> {
    config.validate()?;
    crate::bars::validate_series(bars)?;
    if bars.len() < config.min_bars() {
        return Err(CoreError::InvalidInput(format!(
            "the volatility regime needs at least {} bars with these periods; got {}",
            config.min_bars(),
            bars.len()
        )));
    }
    let atr = AverageTrueRange::new(config.atr_period)?.over(bars)?;
    let bb = BollingerBands::new(config.bb_period, 2.0, 2.0)?.over(bars)?;
    let adx = AverageDirectionalIndex::new(config.adx_period)?.over(bars)?;
    let bandwidth: Vec<Option<f64>> = bb
        .upper
        .iter()
        .zip(&bb.lower)
        .zip(&bb.middle)
        .map(|((u, l), m)| match (u, l, m) {
            (Some(u), Some(l), Some(m)) if *m != 0.0 => Some((u - l) / m.abs()),
            _ => None,
        })
        .collect();
    let atr_now = last(&atr, "ATR")?;
    let atr_prev = atr
        .len()
        .checked_sub(1 + ATR_CHANGE_BARS)
        .and_then(|i| atr[i])
        .ok_or_else(|| CoreError::InvalidInput("not enough bars for the ATR change".into()))?;
    let atr_change_pct = if atr_prev > 0.0 {
        100.0 * (atr_now / atr_prev - 1.0)
    } else {
        0.0
    };
    let bw_now = last(&bandwidth, "Bollinger bandwidth")?;
    let atr_window = last_n_valid(&atr, config.lookback);
    let bw_window = last_n_valid(&bandwidth, config.lookback);
    let samples = atr_window.len().min(bw_window.len());
    if samples < MIN_PERCENTILE_SAMPLES {
        return Err(CoreError::InvalidInput(format!(
            "only {samples} indicator values to rank; at least {MIN_PERCENTILE_SAMPLES} are needed"
        )));
    }
    let closes: Vec<f64> = bars.iter().map(|b| b.close).collect();
    let metrics = RegimeMetrics {
        atr: atr_now,
        atr_percentile: percentile_rank(&atr_window, atr_now).unwrap_or(0.0),
        atr_change_pct,
        bandwidth: bw_now,
        bandwidth_percentile: percentile_rank(&bw_window, bw_now).unwrap_or(0.0),
        adx: last(&adx.adx, "ADX")?,
        plus_di: last(&adx.plus_di, "+DI")?,
        minus_di: last(&adx.minus_di, "-DI")?,
        efficiency_ratio: efficiency_ratio(&closes, config.er_period)
            .ok_or_else(|| CoreError::InvalidInput("not enough bars for the efficiency ratio".into()))?,
        percentile_samples: samples,
    };
    let (regime, rule) = classify(&metrics);
    Ok(RegimeReport { regime, rule, metrics })
}

/// The rule table of [`volatility_regime`], on already computed metrics.
pub fn classify(m: &RegimeMetrics) -> (Regime, String) {
    if m.adx >= ADX_TRENDING && m.efficiency_ratio >= ER_TRENDING {
        return (
            Regime::Trending,
            format!(
                "ADX {:.1} >= {ADX_TRENDING} and efficiency ratio {:.2} >= {ER_TRENDING:.2}",
                m.adx, m.efficiency_ratio
            ),
        );
    }
    if m.bandwidth_percentile >= BANDWIDTH_EXPANDING_PCT {
        return (
            Regime::Expanding,
            format!(
                "Bollinger bandwidth percentile {:.0} >= {BANDWIDTH_EXPANDING_PCT}",
                m.bandwidth_percentile
            ),
        );
    }
    if m.atr_change_pct >= ATR_RISE_EXPANDING_PCT {
        return (
            Regime::Expanding,
            format!(
                "ATR rose {:.1}% over {ATR_CHANGE_BARS} bars (>= {ATR_RISE_EXPANDING_PCT}%)",
                m.atr_change_pct
            ),
        );
    }
    if m.bandwidth_percentile <= BANDWIDTH_COMPRESSED_PCT {
        return (
            Regime::Compressed,
            format!(
                "Bollinger bandwidth percentile {:.0} <= {BANDWIDTH_COMPRESSED_PCT}",
                m.bandwidth_percentile
            ),
        );
    }
    (
        Regime::Choppy,
        format!(
            "no rule matched: ADX {:.1}, efficiency ratio {:.2}, bandwidth percentile {:.0}, ATR change {:.1}%",
            m.adx, m.efficiency_ratio, m.bandwidth_percentile, m.atr_change_pct
        ),
    )
}

/// Structural trend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trend {
    /// Higher highs and higher lows, or a bullish break not contradicted by LH + LL.
    Bullish,
    /// Lower highs and lower lows, or a bearish break not contradicted by HH + HL.
    Bearish,
    /// Neither.
    Ranging,
}

impl Trend {
    /// The serialised name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Bullish => "bullish",
            Self::Bearish => "bearish",
            Self::Ranging => "ranging",
        }
    }
}

/// How the last swing compares with the one before of the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SwingLabel {
    /// Higher high.
    HH,
    /// Lower high (an equal high counts as lower: no new high was made).
    LH,
    /// Higher low (an equal low counts as higher: no new low was made).
    HL,
    /// Lower low.
    LL,
}

/// A confirmed swing point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SwingPoint {
    /// Bar index in the input series.
    pub index: usize,
    /// Open time of the swing bar, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// The swing's high (for a high) or low (for a low).
    pub price: f64,
    /// Index of the bar at whose close the swing became known.
    pub confirmed_at: usize,
}

/// The last break of structure or change of character.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LastBreak {
    /// `bos` (continuation) or `choch` (reversal).
    pub kind: BreakKind,
    /// `bullish` or `bearish`.
    pub direction: Direction,
    /// The broken swing level.
    pub level: f64,
    /// Open time of the swing whose level was broken.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub swing_time: UnixMs,
    /// Open time of the first bar that closed beyond the level.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub broken_time: UnixMs,
}

/// Result of [`trend_state`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrendReport {
    /// The trend.
    pub trend: Trend,
    /// The rule that decided it.
    pub rule: String,
    /// Last swing high compared with the previous one.
    pub high_label: Option<SwingLabel>,
    /// Last swing low compared with the previous one.
    pub low_label: Option<SwingLabel>,
    /// Last confirmed swing high.
    pub last_swing_high: Option<SwingPoint>,
    /// Last confirmed swing low.
    pub last_swing_low: Option<SwingPoint>,
    /// Last BOS / CHoCH.
    pub last_break: Option<LastBreak>,
    /// Confirmed swings (after supersession), oldest first.
    pub swings: usize,
}

/// Confirmed swings of `bars`, keeping only the final extreme of each leg
/// (a swing superseded by a more extreme one of the same leg is dropped),
/// oldest first, with the structure breaks.
pub(crate) fn swings_and_breaks(
    bars: &[Bar],
    swing_length: usize,
) -> Result<(Vec<Swing>, Vec<crate::structure::StructureBreak>), CoreError> {
    let config = StructureConfig {
        swing_length,
        fvg: None,
        order_blocks: None,
        liquidity: None,
        bos_choch: Some(BosChochConfig::default()),
    };
    let events = structure::detect(bars, &config)?;
    let mut swings: Vec<Swing> = Vec::new();
    let mut breaks = Vec::new();
    for e in events {
        match e {
            StructureEvent::Swing(s) => {
                if let Some(old) = s.supersedes {
                    swings.retain(|x| !(x.kind == s.kind && x.index == old));
                }
                swings.push(s);
            }
            StructureEvent::StructureBreak(b) => breaks.push(b),
            _ => {}
        }
    }
    swings.sort_by_key(|s| s.index);
    Ok((swings, breaks))
}

fn break_name(kind: BreakKind) -> &'static str {
    match kind {
        BreakKind::Bos => "BOS",
        BreakKind::Choch => "CHoCH",
    }
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Bullish => "bullish",
        Direction::Bearish => "bearish",
    }
}

fn point(s: &Swing) -> SwingPoint {
    SwingPoint {
        index: s.index,
        time: s.time,
        price: s.level,
        confirmed_at: s.confirmed_at,
    }
}

/// The structural trend at the last bar of `bars`.
///
/// Labels: the last swing high is `HH` when above the previous swing high,
/// else `LH`; the last swing low is `LL` when below the previous swing low,
/// else `HL`. Rules, first match wins:
/// 1. last BOS/CHoCH bullish and the swings are not `LH` + `LL` → bullish;
/// 2. last BOS/CHoCH bearish and the swings are not `HH` + `HL` → bearish;
/// 3. no break, `HH` + `HL` → bullish; no break, `LH` + `LL` → bearish;
/// 4. otherwise ranging.
///
/// # Errors
/// Those of [`structure::detect`]: a bad `swing_length`, an invalid series, or
/// fewer than `3 · swing_length` bars.
pub fn trend_state(bars: &[Bar], swing_length: usize) -> Result<TrendReport, CoreError> {
    let (swings, breaks) = swings_and_breaks(bars, swing_length)?;
    let of_kind = |k: SwingKind| -> Vec<&Swing> { swings.iter().filter(|s| s.kind == k).collect() };
    let highs = of_kind(SwingKind::High);
    let lows = of_kind(SwingKind::Low);
    let high_label = match highs.as_slice() {
        [.., a, b] => Some(if b.level > a.level {
            SwingLabel::HH
        } else {
            SwingLabel::LH
        }),
        _ => None,
    };
    let low_label = match lows.as_slice() {
        [.., a, b] => Some(if b.level < a.level {
            SwingLabel::LL
        } else {
            SwingLabel::HL
        }),
        _ => None,
    };
    let up = high_label == Some(SwingLabel::HH) && low_label == Some(SwingLabel::HL);
    let down = high_label == Some(SwingLabel::LH) && low_label == Some(SwingLabel::LL);
    let last_break = breaks
        .iter()
        .max_by_key(|b| (b.confirmed_at, b.broken_index))
        .map(|b| LastBreak {
            kind: b.kind,
            direction: b.direction,
            level: b.level,
            swing_time: b.time,
            broken_time: bars.get(b.broken_index).map(|x| x.time).unwrap_or(b.time),
        });
    let seq = format!(
        "{} + {}",
        high_label
            .map(|l| format!("{l:?}"))
            .unwrap_or_else(|| "no high pair".into()),
        low_label
            .map(|l| format!("{l:?}"))
            .unwrap_or_else(|| "no low pair".into())
    );
    let (trend, rule) = match last_break {
        Some(b) if b.direction == Direction::Bullish && !down => (
            Trend::Bullish,
            format!(
                "last break is a bullish {} at {} and swings are {seq}",
                break_name(b.kind),
                b.level
            ),
        ),
        Some(b) if b.direction == Direction::Bearish && !up => (
            Trend::Bearish,
            format!(
                "last break is a bearish {} at {} and swings are {seq}",
                break_name(b.kind),
                b.level
            ),
        ),
        Some(b) => (
            Trend::Ranging,
            format!(
                "last break ({} {}) is contradicted by swings {seq}",
                direction_name(b.direction),
                break_name(b.kind)
            ),
        ),
        None if up => (Trend::Bullish, format!("no break yet; swings are {seq}")),
        None if down => (Trend::Bearish, format!("no break yet; swings are {seq}")),
        None => (Trend::Ranging, format!("no break yet; swings are {seq}")),
    };
    Ok(TrendReport {
        trend,
        rule,
        high_label,
        low_label,
        last_swing_high: highs.last().map(|s| point(s)),
        last_swing_low: lows.last().map(|s| point(s)),
        last_break,
        swings: swings.len(),
    })
}

/// Strategy style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Style {
    /// Trade with the trend.
    TrendFollow,
    /// Fade moves back to the mean.
    MeanRevert,
    /// Trade the exit from a range or squeeze.
    Breakout,
    /// No edge: do not trade.
    StandAside,
}

/// Direction the style favours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Bias {
    /// Buy side.
    Long,
    /// Sell side.
    Short,
    /// Either side / none.
    Neutral,
}

/// Result of [`strategy_style`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StyleReport {
    /// The style.
    pub style: Style,
    /// Favoured direction.
    pub bias: Bias,
    /// Reasons, each citing the numbers it rests on.
    pub reasons: Vec<String>,
}

/// Chooses a strategy style from a regime and a structural trend.
///
/// | regime | structure | style |
/// |---|---|---|
/// | trending | bullish / bearish | trend-follow (with the structure) |
/// | trending | ranging | stand-aside (indicators and structure disagree) |
/// | expanding | bullish / bearish | breakout (with the structure) |
/// | expanding | ranging | stand-aside (volatile without direction) |
/// | compressed | any | breakout (bias from the structure, else neutral) |
/// | choppy | any, ADX < 20 | mean-revert (neutral) |
/// | choppy | any, ADX ≥ 20 | stand-aside |
pub fn strategy_style(regime: &RegimeReport, trend: &TrendReport) -> StyleReport {
    let m = &regime.metrics;
    let bias = match trend.trend {
        Trend::Bullish => Bias::Long,
        Trend::Bearish => Bias::Short,
        Trend::Ranging => Bias::Neutral,
    };
    let mut reasons = vec![
        format!("volatility regime is {} ({})", regime.regime.as_str(), regime.rule),
        format!("market structure is {} ({})", trend.trend.as_str(), trend.rule),
    ];
    let directional = trend.trend != Trend::Ranging;
    let (style, bias) = match regime.regime {
        Regime::Trending if directional => {
            reasons.push(format!(
                "trend-follow: ADX {:.1} and the {} structure agree",
                m.adx,
                trend.trend.as_str()
            ));
            (Style::TrendFollow, bias)
        }
        Regime::Trending => {
            reasons.push(format!(
                "stand-aside: ADX {:.1} says trending but the swing structure is ranging",
                m.adx
            ));
            (Style::StandAside, Bias::Neutral)
        }
        Regime::Expanding if directional => {
            reasons.push(format!(
                "breakout: volatility expanding (bandwidth percentile {:.0}, ATR change {:.1}%) in a {} structure",
                m.bandwidth_percentile,
                m.atr_change_pct,
                trend.trend.as_str()
            ));
            (Style::Breakout, bias)
        }
        Regime::Expanding => {
            reasons.push("stand-aside: volatility expanding without structural direction".to_string());
            (Style::StandAside, Bias::Neutral)
        }
        Regime::Compressed => {
            reasons.push(format!(
                "breakout: bandwidth percentile {:.0} is a squeeze; expansions follow compressions",
                m.bandwidth_percentile
            ));
            (Style::Breakout, bias)
        }
        Regime::Choppy if m.adx < ADX_WEAK => {
            reasons.push(format!(
                "mean-revert: ADX {:.1} < {ADX_WEAK} (no directional pressure)",
                m.adx
            ));
            (Style::MeanRevert, Bias::Neutral)
        }
        Regime::Choppy => {
            reasons.push(format!(
                "stand-aside: choppy with ADX {:.1} >= {ADX_WEAK}; too directional to fade, too inefficient to follow",
                m.adx
            ));
            (Style::StandAside, Bias::Neutral)
        }
    };
    StyleReport { style, bias, reasons }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn bar(i: usize, o: f64, h: f64, l: f64, c: f64) -> Bar {
        Bar {
            time: i as i64 * 3_600_000,
            open: o,
            high: h,
            low: l,
            close: c,
            volume: 1.0,
        }
    }

    /// Closes to bars with a fixed half-range around the close.
    pub(crate) fn from_closes(closes: &[f64], half: &[f64]) -> Vec<Bar> {
        closes
            .iter()
            .zip(half)
            .enumerate()
            .map(|(i, (c, h))| bar(i, *c, c + h, c - h, *c))
            .collect()
    }

    fn metrics(adx: f64, er: f64, bwp: f64, atr_change: f64) -> RegimeMetrics {
        RegimeMetrics {
            atr: 1.0,
            atr_percentile: 50.0,
            atr_change_pct: atr_change,
            bandwidth: 0.01,
            bandwidth_percentile: bwp,
            adx,
            plus_di: 20.0,
            minus_di: 20.0,
            efficiency_ratio: er,
            percentile_samples: 100,
        }
    }

    #[test]
    fn percentile_and_efficiency_by_hand() {
        assert_eq!(percentile_rank(&[1.0, 2.0, 3.0, 4.0], 3.0), Some(75.0));
        assert_eq!(percentile_rank(&[], 3.0), None);
        // Net 2, path 1 + 1 + 1 + 1 = 4 → 0.5.
        assert_eq!(efficiency_ratio(&[1.0, 2.0, 1.0, 2.0, 3.0], 4), Some(0.5));
        assert_eq!(efficiency_ratio(&[1.0, 2.0, 3.0], 2), Some(1.0));
        assert_eq!(efficiency_ratio(&[1.0, 1.0, 1.0], 2), Some(0.0));
        assert_eq!(efficiency_ratio(&[1.0], 2), None);
    }

    #[test]
    fn rule_table_each_branch() {
        assert_eq!(classify(&metrics(30.0, 0.5, 50.0, 0.0)).0, Regime::Trending);
        // ADX high but inefficient: not trending.
        assert_eq!(classify(&metrics(30.0, 0.1, 50.0, 0.0)).0, Regime::Choppy);
        assert_eq!(classify(&metrics(10.0, 0.1, 85.0, 0.0)).0, Regime::Expanding);
        assert_eq!(classify(&metrics(10.0, 0.1, 50.0, 25.0)).0, Regime::Expanding);
        assert_eq!(classify(&metrics(10.0, 0.1, 15.0, 0.0)).0, Regime::Compressed);
        assert_eq!(classify(&metrics(10.0, 0.1, 50.0, 0.0)).0, Regime::Choppy);
        // Boundaries are inclusive.
        assert_eq!(classify(&metrics(25.0, 0.30, 50.0, 0.0)).0, Regime::Trending);
        assert_eq!(classify(&metrics(10.0, 0.1, 20.0, 0.0)).0, Regime::Compressed);
        assert_eq!(classify(&metrics(10.0, 0.1, 80.0, 0.0)).0, Regime::Expanding);
    }

    fn wave(i: usize, period: f64, amp: f64) -> f64 {
        amp * (i as f64 * std::f64::consts::TAU / period).sin()
    }

    #[test]
    fn synthetic_trending_series() {
        let n = 200;
        let closes: Vec<f64> = (0..n).map(|i| 100.0 + i as f64 * 0.5 + wave(i, 7.0, 0.2)).collect();
        let bars = from_closes(&closes, &vec![0.3; n]);
        let r = volatility_regime(&bars, &RegimeConfig::default()).unwrap();
        assert_eq!(r.regime, Regime::Trending, "{r:?}");
        assert!(r.metrics.adx >= 25.0 && r.metrics.efficiency_ratio >= 0.3);
    }

    #[test]
    fn synthetic_compressed_series() {
        // A range whose swings shrink steadily: the last bandwidth is the smallest.
        let n = 200;
        let closes: Vec<f64> = (0..n)
            .map(|i| 100.0 + wave(i, 10.0, 3.0 * (1.0 - i as f64 / 220.0)))
            .collect();
        let bars = from_closes(&closes, &vec![0.5; n]);
        let r = volatility_regime(&bars, &RegimeConfig::default()).unwrap();
        assert_eq!(r.regime, Regime::Compressed, "{r:?}");
        assert!(r.metrics.bandwidth_percentile <= 20.0);
    }

    #[test]
    fn synthetic_expanding_series() {
        // A calm range, then the last bars swing far wider.
        let n = 200;
        let closes: Vec<f64> = (0..n)
            .map(|i| {
                let amp = if i >= n - 8 { 4.0 } else { 1.0 };
                100.0 + wave(i, 4.0, amp)
            })
            .collect();
        let half: Vec<f64> = (0..n).map(|i| if i >= n - 8 { 2.0 } else { 0.5 }).collect();
        let bars = from_closes(&closes, &half);
        let r = volatility_regime(&bars, &RegimeConfig::default()).unwrap();
        assert_eq!(r.regime, Regime::Expanding, "{r:?}");
    }

    #[test]
    fn synthetic_choppy_series() {
        // A steady oscillation: constant volatility, no direction.
        let n = 200;
        let closes: Vec<f64> = (0..n).map(|i| 100.0 + wave(i, 10.0, 2.0) + wave(i, 7.0, 1.0)).collect();
        let bars = from_closes(&closes, &vec![0.5; n]);
        let r = volatility_regime(&bars, &RegimeConfig::default()).unwrap();
        assert_eq!(r.regime, Regime::Choppy, "{r:?}");
    }

    #[test]
    fn bad_input_is_an_error() {
        let bars = from_closes(&[1.0; 10], &[0.1; 10]);
        assert!(matches!(
            volatility_regime(&bars, &RegimeConfig::default()),
            Err(CoreError::InvalidInput(_))
        ));
        assert!(volatility_regime(&[], &RegimeConfig::default()).is_err());
        let cfg = RegimeConfig {
            lookback: 5,
            ..RegimeConfig::default()
        };
        assert!(matches!(
            volatility_regime(&bars, &cfg),
            Err(CoreError::InvalidParameter { .. })
        ));
        assert!(trend_state(&bars, 0).is_err());
        assert!(trend_state(&bars, 5).is_err()); // 10 < 3 · 5
    }

    #[test]
    fn trend_state_on_a_staircase() {
        // Up-staircase of waves: higher highs and higher lows.
        let n = 120;
        let closes: Vec<f64> = (0..n).map(|i| 100.0 + i as f64 * 0.2 + wave(i, 12.0, 2.0)).collect();
        let bars = from_closes(&closes, &vec![0.2; n]);
        let t = trend_state(&bars, 3).unwrap();
        assert_eq!(t.trend, Trend::Bullish, "{t:?}");
        assert_eq!(
            (t.high_label, t.low_label),
            (Some(SwingLabel::HH), Some(SwingLabel::HL))
        );
        let down: Vec<f64> = closes.iter().map(|c| 300.0 - c).collect();
        let t = trend_state(&from_closes(&down, &vec![0.2; n]), 3).unwrap();
        assert_eq!(t.trend, Trend::Bearish, "{t:?}");
        let flat: Vec<f64> = (0..n).map(|i| 100.0 + wave(i, 12.0, 2.0)).collect();
        let t = trend_state(&from_closes(&flat, &vec![0.2; n]), 3).unwrap();
        assert_eq!(t.trend, Trend::Ranging, "{t:?}");
    }

    #[test]
    fn style_table() {
        let report = |regime: Regime, adx: f64| RegimeReport {
            regime,
            rule: "r".into(),
            metrics: metrics(adx, 0.5, 50.0, 0.0),
        };
        let trend = |trend: Trend| TrendReport {
            trend,
            rule: "t".into(),
            high_label: None,
            low_label: None,
            last_swing_high: None,
            last_swing_low: None,
            last_break: None,
            swings: 0,
        };
        let s = |r: Regime, adx: f64, t: Trend| {
            let o = strategy_style(&report(r, adx), &trend(t));
            (o.style, o.bias)
        };
        assert_eq!(
            s(Regime::Trending, 30.0, Trend::Bullish),
            (Style::TrendFollow, Bias::Long)
        );
        assert_eq!(
            s(Regime::Trending, 30.0, Trend::Ranging),
            (Style::StandAside, Bias::Neutral)
        );
        assert_eq!(
            s(Regime::Expanding, 15.0, Trend::Bearish),
            (Style::Breakout, Bias::Short)
        );
        assert_eq!(
            s(Regime::Expanding, 15.0, Trend::Ranging),
            (Style::StandAside, Bias::Neutral)
        );
        assert_eq!(
            s(Regime::Compressed, 15.0, Trend::Ranging),
            (Style::Breakout, Bias::Neutral)
        );
        assert_eq!(
            s(Regime::Choppy, 15.0, Trend::Bullish),
            (Style::MeanRevert, Bias::Neutral)
        );
        assert_eq!(
            s(Regime::Choppy, 22.0, Trend::Ranging),
            (Style::StandAside, Bias::Neutral)
        );
        let o = strategy_style(&report(Regime::Choppy, 15.0), &trend(Trend::Ranging));
        assert!(o.reasons.iter().any(|r| r.contains("15.0")), "{o:?}");
    }

    #[test]
    fn every_real_series_classifies_without_error() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/market");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .collect();
        files.sort();
        assert!(files.len() >= 5);
        for f in files {
            let bars = crate::bars::parse_csv(&std::fs::read_to_string(&f).unwrap()).unwrap();
            let tail = &bars[bars.len().saturating_sub(500)..];
            let r = volatility_regime(tail, &RegimeConfig::default()).unwrap();
            assert_eq!(r.metrics.percentile_samples, 100, "{f:?}");
            let t = trend_state(tail, 10).unwrap();
            // Labels agree with the swing prices they summarise.
            if let (Some(SwingLabel::HH), Some(h)) = (t.high_label, t.last_swing_high) {
                assert!(tail.iter().take(h.index).any(|b| b.high < h.price), "{f:?}");
            }
            if let Some(h) = t.last_swing_high {
                assert_eq!(tail[h.index].high, h.price);
                assert_eq!(h.confirmed_at, h.index + 10);
            }
            if let Some(l) = t.last_swing_low {
                assert_eq!(tail[l.index].low, l.price);
            }
            let s = strategy_style(&r, &t);
            assert!(s.reasons.len() >= 3, "{f:?}");
        }
    }

    #[test]
    fn real_data_runs() {
        let bars = crate::bars::parse_csv(include_str!("../../../data/market/eurusd_1h_backtesting.csv")).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for end in (300..bars.len()).step_by(97) {
            let r = volatility_regime(&bars[end - 300..end], &RegimeConfig::default()).unwrap();
            assert!((0.0..=100.0).contains(&r.metrics.bandwidth_percentile));
            assert!((0.0..=1.0).contains(&r.metrics.efficiency_ratio));
            seen.insert(r.regime.as_str());
            let t = trend_state(&bars[end - 300..end], 10).unwrap();
            let _ = strategy_style(&r, &t);
        }
        // Real EURUSD visits every regime over 5 000 hours.
        assert_eq!(seen.len(), 4, "{seen:?}");
    }
}
