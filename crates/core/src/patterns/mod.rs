//! Candlestick pattern detection that equals TA-Lib's `CDL*` functions.
//!
//! One job: given closed bars, say at which bars a candlestick pattern
//! completes, with TA-Lib's output convention (`0` = none, `±100` = bullish
//! or bearish, `±80` for the weaker forms of engulfing and harami, `+100`
//! for the doji family, which has no direction). The caller decides which
//! bars are closed: every bar passed in is treated as closed, so pass a
//! forming bar only if a provisional answer is wanted.
//!
//! **Invariant (reference):** [`detect`] returns, bar for bar, what TA-Lib
//! 0.8.2 (Python `talib`, C core 0.8.1) returns for the same function on the
//! same series with its default parameters (penetration 0.3 for the
//! morning/evening stars, 0.5 for dark cloud cover) and its default candle
//! settings ([`CandleSetting`]). That includes TA-Lib's lookback (the first
//! [`Pattern::lookback`] bars are `0`) and its running averages: each
//! function keeps its own "period total" per candle setting, started at its
//! own lookback and updated by `total += new - old`, so every comparison sees
//! the very same floating-point number as TA-Lib. `tests/patterns_talib.rs`
//! checks exact equality on every series of `data/market/` against fixtures
//! written by `scripts/fixtures/talib_patterns_fixtures.py`.
//!
//! **Invariant (no look-ahead):** the value at bar `i` depends only on bars
//! `0..=i`, so running [`detect`] on a prefix gives the prefix of the full
//! result.
//!
//! Pure and allocation-light: each pattern is one pass over the bars.
//! Errors are [`CoreError`]s (an empty series, a non-finite price, a bar
//! whose high is below its low or whose open/close lie outside its range, a
//! bad penetration); nothing here panics on input.
//!
//! # Example
//!
//! ```
//! use tradeterm_core::patterns::{self, Direction, Pattern};
//! use tradeterm_core::Bar;
//!
//! // Twelve quiet bars, then a black candle and a white one engulfing it.
//! let bar = |t: i64, open: f64, high: f64, low: f64, close: f64| Bar { time: t, open, high, low, close, volume: 0.0 };
//! let mut bars: Vec<Bar> = (0..12).map(|t| bar(t, 100.0, 100.6, 99.6, 100.2)).collect();
//! bars.push(bar(12, 100.5, 100.6, 99.4, 99.5)); // black
//! bars.push(bar(13, 99.3, 101.2, 99.2, 101.0)); // white, engulfs it
//!
//! let engulfing = patterns::detect(Pattern::Engulfing, &bars)?;
//! assert_eq!(engulfing.len(), bars.len());
//! assert_eq!(engulfing[13], 100);
//!
//! let hits = patterns::scan(&bars)?;
//! let last = hits.iter().find(|h| h.index == 13 && h.pattern == Pattern::Engulfing).ok_or("no hit")?;
//! assert_eq!(last.direction, Direction::Bullish);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod candle;
mod multi;
mod single;

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use candle::{CandleSetting, RangeType};

use crate::error::CoreError;
use crate::market::Bar;
use crate::time::UnixMs;

/// A candlestick pattern, named after the TA-Lib function it reproduces.
///
/// The formulas are summarised on each variant; `docs/patterns.md` has the
/// full conditions, parameters and an example bar from `data/market/` per
/// pattern. "Long", "short", "doji", "very short", "near" and "far" are the
/// [`CandleSetting`]s, each compared with an average over the bars before
/// the candle concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Pattern {
    /// `CDLENGULFING`: a real body engulfing the previous one of opposite
    /// colour. ±100, or ±80 when the bodies share one end; sign = colour of
    /// the engulfing candle.
    #[doc(alias = "CDLENGULFING")]
    Engulfing,
    /// `CDLHAMMER`: small body, lower shadow longer than the body, very short
    /// upper shadow, body at or near the previous low. +100.
    #[doc(alias = "CDLHAMMER")]
    Hammer,
    /// `CDLINVERTEDHAMMER`: small body gapping down, upper shadow longer than
    /// the body, very short lower shadow. +100.
    #[doc(alias = "CDLINVERTEDHAMMER")]
    InvertedHammer,
    /// `CDLSHOOTINGSTAR`: small body gapping up, upper shadow longer than the
    /// body, very short lower shadow. -100.
    #[doc(alias = "CDLSHOOTINGSTAR")]
    ShootingStar,
    /// `CDLHANGINGMAN`: the hammer shape with its body at or near the
    /// previous high. -100.
    #[doc(alias = "CDLHANGINGMAN")]
    HangingMan,
    /// `CDLDOJI`: real body at most 10 % of the average high-low range. +100
    /// (no direction).
    #[doc(alias = "CDLDOJI")]
    Doji,
    /// `CDLDRAGONFLYDOJI`: doji with a very short upper shadow and a lower
    /// shadow that is not very short. +100 (no direction).
    #[doc(alias = "CDLDRAGONFLYDOJI")]
    DragonflyDoji,
    /// `CDLGRAVESTONEDOJI`: doji with a very short lower shadow and an upper
    /// shadow that is not very short. +100 (no direction).
    #[doc(alias = "CDLGRAVESTONEDOJI")]
    GravestoneDoji,
    /// `CDLLONGLEGGEDDOJI`: doji with at least one shadow longer than its
    /// body. +100 (no direction).
    #[doc(alias = "CDLLONGLEGGEDDOJI")]
    LongLeggedDoji,
    /// `CDLDOJISTAR`: long body, then a doji gapping away in its direction.
    /// -100 after a white candle, +100 after a black one.
    #[doc(alias = "CDLDOJISTAR")]
    DojiStar,
    /// `CDLMORNINGSTAR`: long black body, a short body gapping down, a white
    /// body closing above `close₁ + penetration · body₁` (default 0.3). +100.
    #[doc(alias = "CDLMORNINGSTAR")]
    MorningStar,
    /// `CDLEVENINGSTAR`: long white body, a short body gapping up, a black
    /// body closing below `close₁ - penetration · body₁` (default 0.3). -100.
    #[doc(alias = "CDLEVENINGSTAR")]
    EveningStar,
    /// `CDLMORNINGDOJISTAR`: the morning star with a doji as the star. +100.
    #[doc(alias = "CDLMORNINGDOJISTAR")]
    MorningDojiStar,
    /// `CDLEVENINGDOJISTAR`: the evening star with a doji as the star. -100.
    #[doc(alias = "CDLEVENINGDOJISTAR")]
    EveningDojiStar,
    /// `CDLHARAMI`: long body, then a short body inside it. Sign opposite to
    /// the first candle's colour; ±80 when the bodies share one end.
    #[doc(alias = "CDLHARAMI")]
    Harami,
    /// `CDLHARAMICROSS`: the harami with a doji as the second candle.
    #[doc(alias = "CDLHARAMICROSS")]
    HaramiCross,
    /// `CDLPIERCING`: long black body, then a long white body opening below
    /// the previous low and closing above the middle of the previous body
    /// (below its open). +100.
    #[doc(alias = "CDLPIERCING")]
    Piercing,
    /// `CDLDARKCLOUDCOVER`: long white body, then a black candle opening
    /// above the previous high and closing inside the previous body, below
    /// `close₁ - penetration · body₁` (default 0.5). -100.
    #[doc(alias = "CDLDARKCLOUDCOVER")]
    DarkCloudCover,
    /// `CDL3WHITESOLDIERS`: three white candles with rising closes, very
    /// short upper shadows, each opening inside or near the previous body and
    /// not far shorter than it, the last not short. +100.
    #[doc(alias = "CDL3WHITESOLDIERS")]
    ThreeWhiteSoldiers,
    /// `CDL3BLACKCROWS`: a white candle, then three black candles with
    /// falling closes, very short lower shadows, each opening inside the
    /// previous body, the first closing under the white candle's high. -100.
    #[doc(alias = "CDL3BLACKCROWS")]
    ThreeBlackCrows,
}

impl Pattern {
    /// Every pattern, in the order [`scan`] reports hits of one bar.
    pub const ALL: [Pattern; 20] = [
        Pattern::Engulfing,
        Pattern::Hammer,
        Pattern::InvertedHammer,
        Pattern::ShootingStar,
        Pattern::HangingMan,
        Pattern::Doji,
        Pattern::DragonflyDoji,
        Pattern::GravestoneDoji,
        Pattern::LongLeggedDoji,
        Pattern::DojiStar,
        Pattern::MorningStar,
        Pattern::EveningStar,
        Pattern::MorningDojiStar,
        Pattern::EveningDojiStar,
        Pattern::Harami,
        Pattern::HaramiCross,
        Pattern::Piercing,
        Pattern::DarkCloudCover,
        Pattern::ThreeWhiteSoldiers,
        Pattern::ThreeBlackCrows,
    ];

    /// Snake-case name (`"morning_star"`), as serialized.
    pub const fn name(self) -> &'static str {
        match self {
            Pattern::Engulfing => "engulfing",
            Pattern::Hammer => "hammer",
            Pattern::InvertedHammer => "inverted_hammer",
            Pattern::ShootingStar => "shooting_star",
            Pattern::HangingMan => "hanging_man",
            Pattern::Doji => "doji",
            Pattern::DragonflyDoji => "dragonfly_doji",
            Pattern::GravestoneDoji => "gravestone_doji",
            Pattern::LongLeggedDoji => "long_legged_doji",
            Pattern::DojiStar => "doji_star",
            Pattern::MorningStar => "morning_star",
            Pattern::EveningStar => "evening_star",
            Pattern::MorningDojiStar => "morning_doji_star",
            Pattern::EveningDojiStar => "evening_doji_star",
            Pattern::Harami => "harami",
            Pattern::HaramiCross => "harami_cross",
            Pattern::Piercing => "piercing",
            Pattern::DarkCloudCover => "dark_cloud_cover",
            Pattern::ThreeWhiteSoldiers => "three_white_soldiers",
            Pattern::ThreeBlackCrows => "three_black_crows",
        }
    }

    /// The TA-Lib function this pattern reproduces (`"CDLMORNINGSTAR"`).
    pub const fn talib_name(self) -> &'static str {
        match self {
            Pattern::Engulfing => "CDLENGULFING",
            Pattern::Hammer => "CDLHAMMER",
            Pattern::InvertedHammer => "CDLINVERTEDHAMMER",
            Pattern::ShootingStar => "CDLSHOOTINGSTAR",
            Pattern::HangingMan => "CDLHANGINGMAN",
            Pattern::Doji => "CDLDOJI",
            Pattern::DragonflyDoji => "CDLDRAGONFLYDOJI",
            Pattern::GravestoneDoji => "CDLGRAVESTONEDOJI",
            Pattern::LongLeggedDoji => "CDLLONGLEGGEDDOJI",
            Pattern::DojiStar => "CDLDOJISTAR",
            Pattern::MorningStar => "CDLMORNINGSTAR",
            Pattern::EveningStar => "CDLEVENINGSTAR",
            Pattern::MorningDojiStar => "CDLMORNINGDOJISTAR",
            Pattern::EveningDojiStar => "CDLEVENINGDOJISTAR",
            Pattern::Harami => "CDLHARAMI",
            Pattern::HaramiCross => "CDLHARAMICROSS",
            Pattern::Piercing => "CDLPIERCING",
            Pattern::DarkCloudCover => "CDLDARKCLOUDCOVER",
            Pattern::ThreeWhiteSoldiers => "CDL3WHITESOLDIERS",
            Pattern::ThreeBlackCrows => "CDL3BLACKCROWS",
        }
    }

    /// Number of candles that make up the pattern (1, 2 or 3; the white
    /// candle before three black crows is not counted).
    pub const fn candles(self) -> usize {
        match self {
            Pattern::Hammer
            | Pattern::InvertedHammer
            | Pattern::ShootingStar
            | Pattern::HangingMan
            | Pattern::Doji
            | Pattern::DragonflyDoji
            | Pattern::GravestoneDoji
            | Pattern::LongLeggedDoji => 1,
            Pattern::Engulfing
            | Pattern::DojiStar
            | Pattern::Harami
            | Pattern::HaramiCross
            | Pattern::Piercing
            | Pattern::DarkCloudCover => 2,
            Pattern::MorningStar
            | Pattern::EveningStar
            | Pattern::MorningDojiStar
            | Pattern::EveningDojiStar
            | Pattern::ThreeWhiteSoldiers
            | Pattern::ThreeBlackCrows => 3,
        }
    }

    /// TA-Lib's lookback: the first bar that can carry a non-zero value.
    /// Bars before it are always `0` (TA-Lib `TA_CDL*_Lookback`).
    pub fn lookback(self) -> usize {
        use CandleSetting::{BodyDoji, BodyLong, BodyShort, Far, Near, ShadowLong, ShadowVeryShort};
        let max = |settings: &[CandleSetting]| settings.iter().map(|s| s.period()).max().unwrap_or(0);
        match self {
            Pattern::Engulfing => 2,
            Pattern::Hammer | Pattern::HangingMan => max(&[BodyShort, ShadowLong, ShadowVeryShort, Near]) + 1,
            Pattern::InvertedHammer | Pattern::ShootingStar => max(&[BodyShort, ShadowLong, ShadowVeryShort]) + 1,
            Pattern::Doji => BodyDoji.period(),
            Pattern::DragonflyDoji | Pattern::GravestoneDoji => max(&[BodyDoji, ShadowVeryShort]),
            Pattern::LongLeggedDoji => max(&[BodyDoji, ShadowLong]),
            Pattern::DojiStar | Pattern::HaramiCross => max(&[BodyDoji, BodyLong]) + 1,
            Pattern::Harami => max(&[BodyShort, BodyLong]) + 1,
            Pattern::MorningStar | Pattern::EveningStar => max(&[BodyShort, BodyLong]) + 2,
            Pattern::MorningDojiStar | Pattern::EveningDojiStar => max(&[BodyDoji, BodyLong, BodyShort]) + 2,
            Pattern::Piercing | Pattern::DarkCloudCover => BodyLong.period() + 1,
            Pattern::ThreeWhiteSoldiers => max(&[ShadowVeryShort, BodyShort, Far, Near]) + 2,
            Pattern::ThreeBlackCrows => ShadowVeryShort.period() + 3,
        }
    }

    /// TA-Lib's default penetration for the patterns that take one
    /// (`optInPenetration`): 0.3 for the morning/evening (doji) stars, 0.5
    /// for dark cloud cover; `None` for the others.
    pub const fn default_penetration(self) -> Option<f64> {
        match self {
            Pattern::MorningStar | Pattern::EveningStar | Pattern::MorningDojiStar | Pattern::EveningDojiStar => {
                Some(0.3)
            }
            Pattern::DarkCloudCover => Some(0.5),
            _ => None,
        }
    }

    /// Whether the sign of the output means bullish/bearish. The doji family
    /// always outputs +100 and has no direction of its own.
    pub const fn is_directional(self) -> bool {
        !matches!(
            self,
            Pattern::Doji | Pattern::DragonflyDoji | Pattern::GravestoneDoji | Pattern::LongLeggedDoji
        )
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Pattern {
    type Err = CoreError;

    /// Accepts the snake-case name (`"morning_star"`), the TA-Lib function
    /// name (`"CDLMORNINGSTAR"`) or it without the prefix
    /// (`"morningstar"`), in any case, with `-` or `_` or nothing between
    /// words.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let squash = |t: &str| -> String {
            t.chars()
                .filter(|c| *c != '_' && *c != '-' && *c != ' ')
                .collect::<String>()
                .to_ascii_lowercase()
        };
        let wanted = squash(s);
        Pattern::ALL
            .into_iter()
            .find(|p| {
                let talib = p.talib_name().to_ascii_lowercase();
                squash(p.name()) == wanted || talib == wanted || talib.strip_prefix("cdl") == Some(wanted.as_str())
            })
            .ok_or_else(|| {
                CoreError::param(
                    "pattern",
                    format!(
                        "unknown pattern {s:?}; known: {}",
                        Pattern::ALL.map(Pattern::name).join(", ")
                    ),
                )
            })
    }
}

/// Direction of a hit, read from the sign of TA-Lib's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Positive value of a directional pattern.
    Bullish,
    /// Negative value.
    Bearish,
    /// A doji-family pattern (always +100): indecision, no direction.
    Neutral,
}

/// One pattern completing at one bar.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PatternHit {
    /// 0-based position of the bar where the pattern completes (its last
    /// candle) in the slice passed in.
    pub index: usize,
    /// Open time of that bar, UTC.
    #[serde(with = "crate::time::iso")]
    #[schemars(with = "crate::time::iso::Schema")]
    pub time: UnixMs,
    /// The pattern.
    pub pattern: Pattern,
    /// Bullish, bearish, or neutral for the doji family.
    pub direction: Direction,
    /// TA-Lib's value: ±100, ±80 for the weaker engulfing/harami forms.
    pub value: i32,
}

/// The first bar at which `pattern` is evaluated, or `None` when the series
/// is not longer than its lookback.
fn first_bar(bars: &[Bar], pattern: Pattern) -> Option<usize> {
    let lookback = pattern.lookback();
    (bars.len() > lookback).then_some(lookback)
}

/// Rejects what TA-Lib would silently compute garbage for.
fn check_bars(bars: &[Bar]) -> Result<(), CoreError> {
    if bars.is_empty() {
        return Err(CoreError::InvalidInput("no bars".into()));
    }
    for (i, b) in bars.iter().enumerate() {
        if ![b.open, b.high, b.low, b.close].iter().all(|v| v.is_finite()) {
            return Err(CoreError::InvalidInput(format!(
                "bar {i} (time {}) has a non-finite price",
                b.time
            )));
        }
        if b.low > b.high || b.open > b.high || b.open < b.low || b.close > b.high || b.close < b.low {
            return Err(CoreError::InvalidInput(format!(
                "bar {i} (time {}) is inconsistent: low/high do not contain open/close",
                b.time
            )));
        }
    }
    Ok(())
}

/// Runs one pattern on checked bars.
fn run(pattern: Pattern, bars: &[Bar], penetration: f64) -> Vec<i32> {
    match pattern {
        Pattern::Engulfing => multi::engulfing(bars),
        Pattern::Hammer => single::hammer(bars),
        Pattern::InvertedHammer => single::inverted_hammer(bars),
        Pattern::ShootingStar => single::shooting_star(bars),
        Pattern::HangingMan => single::hanging_man(bars),
        Pattern::Doji => single::doji(bars),
        Pattern::DragonflyDoji => single::dragonfly_doji(bars),
        Pattern::GravestoneDoji => single::gravestone_doji(bars),
        Pattern::LongLeggedDoji => single::long_legged_doji(bars),
        Pattern::DojiStar => multi::doji_star(bars),
        Pattern::MorningStar => multi::morning_star(bars, penetration),
        Pattern::EveningStar => multi::evening_star(bars, penetration),
        Pattern::MorningDojiStar => multi::morning_doji_star(bars, penetration),
        Pattern::EveningDojiStar => multi::evening_doji_star(bars, penetration),
        Pattern::Harami => multi::harami(bars),
        Pattern::HaramiCross => multi::harami_cross(bars),
        Pattern::Piercing => multi::piercing(bars),
        Pattern::DarkCloudCover => multi::dark_cloud_cover(bars, penetration),
        Pattern::ThreeWhiteSoldiers => multi::three_white_soldiers(bars),
        Pattern::ThreeBlackCrows => multi::three_black_crows(bars),
    }
}

/// TA-Lib's output of `pattern` for every bar, with TA-Lib's default
/// parameters: one value per bar, `0` during the lookback and where the
/// pattern is absent.
///
/// # Errors
///
/// [`CoreError::InvalidInput`] for an empty series, a non-finite price or an
/// inconsistent bar (high below low, open or close outside the range).
pub fn detect(pattern: Pattern, bars: &[Bar]) -> Result<Vec<i32>, CoreError> {
    detect_with(pattern, bars, None)
}

/// [`detect`] with an explicit penetration (`optInPenetration`) for the
/// patterns that take one (see [`Pattern::default_penetration`]); `None`
/// means TA-Lib's default.
///
/// # Errors
///
/// As [`detect`], plus [`CoreError::InvalidParameter`] for a negative or
/// non-finite penetration, or a penetration given to a pattern without one.
pub fn detect_with(pattern: Pattern, bars: &[Bar], penetration: Option<f64>) -> Result<Vec<i32>, CoreError> {
    let penetration = match (pattern.default_penetration(), penetration) {
        (Some(default), None) => default,
        (Some(_), Some(p)) if p.is_finite() && p >= 0.0 => p,
        (Some(_), Some(p)) => {
            return Err(CoreError::param(
                "penetration",
                format!("must be a finite number >= 0, got {p}"),
            ));
        }
        (None, None) => 0.0,
        (None, Some(_)) => {
            return Err(CoreError::param(
                "penetration",
                format!("{pattern} takes no penetration"),
            ));
        }
    };
    check_bars(bars)?;
    Ok(run(pattern, bars, penetration))
}

/// Every pattern of [`Pattern::ALL`] over the bars, with TA-Lib's defaults:
/// one [`PatternHit`] per non-zero value, ordered by bar, then in the order
/// of [`Pattern::ALL`].
///
/// # Errors
///
/// As [`detect`].
pub fn scan(bars: &[Bar]) -> Result<Vec<PatternHit>, CoreError> {
    check_bars(bars)?;
    let outputs: Vec<(Pattern, Vec<i32>)> = Pattern::ALL
        .into_iter()
        .map(|p| (p, run(p, bars, p.default_penetration().unwrap_or(0.0))))
        .collect();
    let mut hits = Vec::new();
    for (index, bar) in bars.iter().enumerate() {
        for (pattern, values) in &outputs {
            let value = values[index];
            if value == 0 {
                continue;
            }
            let direction = if !pattern.is_directional() {
                Direction::Neutral
            } else if value > 0 {
                Direction::Bullish
            } else {
                Direction::Bearish
            };
            hits.push(PatternHit {
                index,
                time: bar.time,
                pattern: *pattern,
                direction,
                value,
            });
        }
    }
    Ok(hits)
}

#[cfg(test)]
mod tests;
