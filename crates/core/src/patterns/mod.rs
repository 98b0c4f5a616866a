//! Candlestick pattern detection that equals TA-Lib's `CDL*` functions.
//!
//! One job: given closed bars, say at which bars a candlestick pattern
//! completes, with TA-Lib's output convention (`0` = none, `±100` = bullish
//! or bearish, `±80` for the weaker forms of engulfing and harami, `±200`
//! for a confirmed hikkake, `+100` for the doji family, the rickshaw man and
//! the takuri, which have no direction). The caller decides which
//! bars are closed: every bar passed in is treated as closed, so pass a
//! forming bar only if a provisional answer is wanted.
//!
//! **Invariant (reference):** [`detect`] returns, bar for bar, what TA-Lib
//! 0.8.2 (Python `talib`, C core 0.8.1) returns for the same function on the
//! same series with its default parameters (penetration 0.3 for the
//! morning/evening stars and the abandoned baby, 0.5 for dark cloud cover and
//! mat hold) and its default candle settings ([`CandleSetting`]). That includes TA-Lib's lookback (the first
//! [`Pattern::lookback`] bars are `0`) and its running averages: each
//! function keeps its own "period total" per candle setting, started at its
//! own lookback and updated by `total += new - old`, so every comparison sees
//! the very same floating-point number as TA-Lib. `tests/patterns_talib.rs`
//! checks exact equality for all 61 `CDL*` functions on every series of
//! `data/market/` (and on a series with the few patterns those lack planted
//! in it) against fixtures written by
//! `scripts/fixtures/talib_patterns_fixtures.py`.
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
mod long;
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
/// full conditions, parameters and an example from `data/market/` per
/// pattern (from the planted test series for the five that `data/market/`
/// lacks). "Long", "short", "doji", "very short", "near", "far" and "equal"
/// are the [`CandleSetting`]s, each compared with an average over the bars
/// before the candle concerned.
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
    /// `CDLMARUBOZU`: a long real body with very short shadows at both ends.
    /// ±100 by colour.
    #[doc(alias = "CDLMARUBOZU")]
    Marubozu,
    /// `CDLCLOSINGMARUBOZU`: a long real body with a very short shadow at its
    /// closing end. ±100 by colour.
    #[doc(alias = "CDLCLOSINGMARUBOZU")]
    ClosingMarubozu,
    /// `CDLLONGLINE`: a long real body with short shadows. ±100 by colour.
    #[doc(alias = "CDLLONGLINE")]
    LongLine,
    /// `CDLSHORTLINE`: a short real body with short shadows. ±100, the sign
    /// being the candle's colour.
    #[doc(alias = "CDLSHORTLINE")]
    ShortLine,
    /// `CDLSPINNINGTOP`: a short real body with both shadows longer than it.
    /// ±100, the sign being the candle's colour.
    #[doc(alias = "CDLSPINNINGTOP")]
    SpinningTop,
    /// `CDLHIGHWAVE`: a short real body with both shadows more than twice as
    /// long. ±100, the sign being the candle's colour.
    #[doc(alias = "CDLHIGHWAVE")]
    HighWave,
    /// `CDLRICKSHAWMAN`: a doji with two long shadows, its body near the middle
    /// of the range. +100 (no direction).
    #[doc(alias = "CDLRICKSHAWMAN")]
    RickshawMan,
    /// `CDLTAKURI`: a doji with a very short upper and a very long lower
    /// shadow. +100 (no direction).
    #[doc(alias = "CDLTAKURI")]
    Takuri,
    /// `CDLBELTHOLD`: a long real body with a very short shadow at its opening
    /// end. ±100 by colour.
    #[doc(alias = "CDLBELTHOLD")]
    BeltHold,
    /// `CDLCOUNTERATTACK`: two long bodies of opposite colours closing at the
    /// same level. Sign = colour of the second.
    #[doc(alias = "CDLCOUNTERATTACK")]
    Counterattack,
    /// `CDLINNECK`: a long black body, then a white candle opening below its
    /// low and closing at or just above its close. -100.
    #[doc(alias = "CDLINNECK")]
    InNeck,
    /// `CDLONNECK`: a long black body, then a white candle opening below its
    /// low and closing at that low. -100.
    #[doc(alias = "CDLONNECK")]
    OnNeck,
    /// `CDLTHRUSTING`: a long black body, then a white candle opening below its
    /// low and closing above its close but not above the middle of its body.
    /// -100.
    #[doc(alias = "CDLTHRUSTING")]
    Thrusting,
    /// `CDLSEPARATINGLINES`: opposite colours opening at the same level, the
    /// second a long belt hold. Sign = colour of the second.
    #[doc(alias = "CDLSEPARATINGLINES")]
    SeparatingLines,
    /// `CDLMATCHINGLOW`: two black candles with the same close. +100.
    #[doc(alias = "CDLMATCHINGLOW")]
    MatchingLow,
    /// `CDLHOMINGPIGEON`: a long black body, then a short black body inside it.
    /// +100.
    #[doc(alias = "CDLHOMINGPIGEON")]
    HomingPigeon,
    /// `CDLKICKING`: two marubozu of opposite colours with a gap between them.
    /// Sign = colour of the second.
    #[doc(alias = "CDLKICKING")]
    Kicking,
    /// `CDLKICKINGBYLENGTH`: the kicking pattern signed by the colour of the
    /// longer marubozu.
    #[doc(alias = "CDLKICKINGBYLENGTH")]
    KickingByLength,
    /// `CDL2CROWS`: a long white body, a black one gapping up, a black one
    /// closing inside the first body. -100.
    #[doc(alias = "CDL2CROWS")]
    TwoCrows,
    /// `CDL3INSIDE`: a harami confirmed by a close beyond the first open. Sign
    /// opposite to the first candle's colour.
    #[doc(alias = "CDL3INSIDE")]
    ThreeInside,
    /// `CDL3OUTSIDE`: an engulfing pair confirmed by a close beyond the second
    /// close. Sign = colour of the engulfing candle.
    #[doc(alias = "CDL3OUTSIDE")]
    ThreeOutside,
    /// `CDL3LINESTRIKE`: three candles of one colour stepping on, then one of
    /// the other colour wiping them out. Sign = colour of the three.
    #[doc(alias = "CDL3LINESTRIKE")]
    ThreeLineStrike,
    /// `CDL3STARSINSOUTH`: three shrinking black candles, the last a small
    /// marubozu inside the second range. +100.
    #[doc(alias = "CDL3STARSINSOUTH")]
    ThreeStarsInSouth,
    /// `CDLABANDONEDBABY`: a long body, a doji gapping away (ranges), a candle
    /// of the other colour gapping back and closing `penetration` (default 0.3)
    /// deep into the first body. Sign = colour of the third.
    #[doc(alias = "CDLABANDONEDBABY")]
    AbandonedBaby,
    /// `CDLADVANCEBLOCK`: three rising white candles whose advance weakens
    /// (shrinking bodies, long upper shadows). -100.
    #[doc(alias = "CDLADVANCEBLOCK")]
    AdvanceBlock,
    /// `CDLBREAKAWAY`: a long body, a gap and two more candles in its
    /// direction, then a candle of the other colour closing inside the gap.
    /// Sign = colour of the last.
    #[doc(alias = "CDLBREAKAWAY")]
    Breakaway,
    /// `CDLCONCEALBABYSWALL`: two black marubozu, a black candle gapping down
    /// with an upper shadow into the second body, a black candle engulfing its
    /// range. +100.
    #[doc(alias = "CDLCONCEALBABYSWALL")]
    ConcealingBabySwallow,
    /// `CDLGAPSIDESIDEWHITE`: two similar white candles side by side after a
    /// body gap. +100 after a gap up, -100 after a gap down.
    #[doc(alias = "CDLGAPSIDESIDEWHITE")]
    GapSideBySideWhite,
    /// `CDLHIKKAKE`: an inside bar, then a false breakout: +100 (lower high and
    /// low) or -100 (higher high and low); ±200 on a confirming close beyond
    /// the inside bar within three bars.
    #[doc(alias = "CDLHIKKAKE")]
    Hikkake,
    /// `CDLHIKKAKEMOD`: the hikkake after a second inside bar closing near its
    /// low (bullish) or high (bearish); ±100, ±200 on confirmation.
    #[doc(alias = "CDLHIKKAKEMOD")]
    ModifiedHikkake,
    /// `CDLIDENTICAL3CROWS`: three falling black candles, each opening at the
    /// previous close, with very short lower shadows. -100.
    #[doc(alias = "CDLIDENTICAL3CROWS")]
    IdenticalThreeCrows,
    /// `CDLLADDERBOTTOM`: three falling black candles, a black one with an
    /// upper shadow, then a white one closing above its high. +100.
    #[doc(alias = "CDLLADDERBOTTOM")]
    LadderBottom,
    /// `CDLMATHOLD`: a long white body, three small reaction candles holding
    /// within it (at most `penetration`, default 0.5, deep), then a white
    /// candle closing above them. +100.
    #[doc(alias = "CDLMATHOLD")]
    MatHold,
    /// `CDLRISEFALL3METHODS`: rising (falling) three methods: a long body,
    /// three small counter-moves inside its range, a long body of the first
    /// colour closing beyond it. Sign = colour of the first.
    #[doc(alias = "CDLRISEFALL3METHODS")]
    RiseFallThreeMethods,
    /// `CDLSTALLEDPATTERN`: two long rising white candles, then a small white
    /// one riding on the second's shoulder. -100.
    #[doc(alias = "CDLSTALLEDPATTERN")]
    StalledPattern,
    /// `CDLSTICKSANDWICH`: black, white above its close, black closing at the
    /// first close. +100.
    #[doc(alias = "CDLSTICKSANDWICH")]
    StickSandwich,
    /// `CDLTASUKIGAP`: a body gap, a candle in its direction, a similar candle
    /// of the other colour closing inside the gap. Sign = colour of the second.
    #[doc(alias = "CDLTASUKIGAP")]
    TasukiGap,
    /// `CDLTRISTAR`: three doji, the middle one gapping away. -100 (top) or
    /// +100 (bottom).
    #[doc(alias = "CDLTRISTAR")]
    Tristar,
    /// `CDLUNIQUE3RIVER`: a long black body, a black harami with a lower low, a
    /// short white candle opening above that low. +100.
    #[doc(alias = "CDLUNIQUE3RIVER")]
    UniqueThreeRiver,
    /// `CDLUPSIDEGAP2CROWS`: a long white body, a short black one gapping up, a
    /// black one engulfing it and closing above the first close. -100.
    #[doc(alias = "CDLUPSIDEGAP2CROWS")]
    UpsideGapTwoCrows,
    /// `CDLXSIDEGAP3METHODS`: upside/downside gap three methods: two candles of
    /// one colour with a body gap, then one of the other colour closing inside
    /// the first body. Sign = colour of the first two.
    #[doc(alias = "CDLXSIDEGAP3METHODS")]
    GapThreeMethods,
}

impl Pattern {
    /// Every pattern, in the order [`scan`] reports hits of one bar.
    pub const ALL: [Pattern; 61] = [
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
        Pattern::Marubozu,
        Pattern::ClosingMarubozu,
        Pattern::LongLine,
        Pattern::ShortLine,
        Pattern::SpinningTop,
        Pattern::HighWave,
        Pattern::RickshawMan,
        Pattern::Takuri,
        Pattern::BeltHold,
        Pattern::Counterattack,
        Pattern::InNeck,
        Pattern::OnNeck,
        Pattern::Thrusting,
        Pattern::SeparatingLines,
        Pattern::MatchingLow,
        Pattern::HomingPigeon,
        Pattern::Kicking,
        Pattern::KickingByLength,
        Pattern::TwoCrows,
        Pattern::ThreeInside,
        Pattern::ThreeOutside,
        Pattern::ThreeLineStrike,
        Pattern::ThreeStarsInSouth,
        Pattern::AbandonedBaby,
        Pattern::AdvanceBlock,
        Pattern::Breakaway,
        Pattern::ConcealingBabySwallow,
        Pattern::GapSideBySideWhite,
        Pattern::Hikkake,
        Pattern::ModifiedHikkake,
        Pattern::IdenticalThreeCrows,
        Pattern::LadderBottom,
        Pattern::MatHold,
        Pattern::RiseFallThreeMethods,
        Pattern::StalledPattern,
        Pattern::StickSandwich,
        Pattern::TasukiGap,
        Pattern::Tristar,
        Pattern::UniqueThreeRiver,
        Pattern::UpsideGapTwoCrows,
        Pattern::GapThreeMethods,
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
            Pattern::Marubozu => "marubozu",
            Pattern::ClosingMarubozu => "closing_marubozu",
            Pattern::LongLine => "long_line",
            Pattern::ShortLine => "short_line",
            Pattern::SpinningTop => "spinning_top",
            Pattern::HighWave => "high_wave",
            Pattern::RickshawMan => "rickshaw_man",
            Pattern::Takuri => "takuri",
            Pattern::BeltHold => "belt_hold",
            Pattern::Counterattack => "counterattack",
            Pattern::InNeck => "in_neck",
            Pattern::OnNeck => "on_neck",
            Pattern::Thrusting => "thrusting",
            Pattern::SeparatingLines => "separating_lines",
            Pattern::MatchingLow => "matching_low",
            Pattern::HomingPigeon => "homing_pigeon",
            Pattern::Kicking => "kicking",
            Pattern::KickingByLength => "kicking_by_length",
            Pattern::TwoCrows => "two_crows",
            Pattern::ThreeInside => "three_inside",
            Pattern::ThreeOutside => "three_outside",
            Pattern::ThreeLineStrike => "three_line_strike",
            Pattern::ThreeStarsInSouth => "three_stars_in_south",
            Pattern::AbandonedBaby => "abandoned_baby",
            Pattern::AdvanceBlock => "advance_block",
            Pattern::Breakaway => "breakaway",
            Pattern::ConcealingBabySwallow => "concealing_baby_swallow",
            Pattern::GapSideBySideWhite => "gap_side_by_side_white",
            Pattern::Hikkake => "hikkake",
            Pattern::ModifiedHikkake => "modified_hikkake",
            Pattern::IdenticalThreeCrows => "identical_three_crows",
            Pattern::LadderBottom => "ladder_bottom",
            Pattern::MatHold => "mat_hold",
            Pattern::RiseFallThreeMethods => "rise_fall_three_methods",
            Pattern::StalledPattern => "stalled_pattern",
            Pattern::StickSandwich => "stick_sandwich",
            Pattern::TasukiGap => "tasuki_gap",
            Pattern::Tristar => "tristar",
            Pattern::UniqueThreeRiver => "unique_three_river",
            Pattern::UpsideGapTwoCrows => "upside_gap_two_crows",
            Pattern::GapThreeMethods => "gap_three_methods",
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
            Pattern::Marubozu => "CDLMARUBOZU",
            Pattern::ClosingMarubozu => "CDLCLOSINGMARUBOZU",
            Pattern::LongLine => "CDLLONGLINE",
            Pattern::ShortLine => "CDLSHORTLINE",
            Pattern::SpinningTop => "CDLSPINNINGTOP",
            Pattern::HighWave => "CDLHIGHWAVE",
            Pattern::RickshawMan => "CDLRICKSHAWMAN",
            Pattern::Takuri => "CDLTAKURI",
            Pattern::BeltHold => "CDLBELTHOLD",
            Pattern::Counterattack => "CDLCOUNTERATTACK",
            Pattern::InNeck => "CDLINNECK",
            Pattern::OnNeck => "CDLONNECK",
            Pattern::Thrusting => "CDLTHRUSTING",
            Pattern::SeparatingLines => "CDLSEPARATINGLINES",
            Pattern::MatchingLow => "CDLMATCHINGLOW",
            Pattern::HomingPigeon => "CDLHOMINGPIGEON",
            Pattern::Kicking => "CDLKICKING",
            Pattern::KickingByLength => "CDLKICKINGBYLENGTH",
            Pattern::TwoCrows => "CDL2CROWS",
            Pattern::ThreeInside => "CDL3INSIDE",
            Pattern::ThreeOutside => "CDL3OUTSIDE",
            Pattern::ThreeLineStrike => "CDL3LINESTRIKE",
            Pattern::ThreeStarsInSouth => "CDL3STARSINSOUTH",
            Pattern::AbandonedBaby => "CDLABANDONEDBABY",
            Pattern::AdvanceBlock => "CDLADVANCEBLOCK",
            Pattern::Breakaway => "CDLBREAKAWAY",
            Pattern::ConcealingBabySwallow => "CDLCONCEALBABYSWALL",
            Pattern::GapSideBySideWhite => "CDLGAPSIDESIDEWHITE",
            Pattern::Hikkake => "CDLHIKKAKE",
            Pattern::ModifiedHikkake => "CDLHIKKAKEMOD",
            Pattern::IdenticalThreeCrows => "CDLIDENTICAL3CROWS",
            Pattern::LadderBottom => "CDLLADDERBOTTOM",
            Pattern::MatHold => "CDLMATHOLD",
            Pattern::RiseFallThreeMethods => "CDLRISEFALL3METHODS",
            Pattern::StalledPattern => "CDLSTALLEDPATTERN",
            Pattern::StickSandwich => "CDLSTICKSANDWICH",
            Pattern::TasukiGap => "CDLTASUKIGAP",
            Pattern::Tristar => "CDLTRISTAR",
            Pattern::UniqueThreeRiver => "CDLUNIQUE3RIVER",
            Pattern::UpsideGapTwoCrows => "CDLUPSIDEGAP2CROWS",
            Pattern::GapThreeMethods => "CDLXSIDEGAP3METHODS",
        }
    }

    /// Number of candles that make up the pattern (1 to 5; the white candle
    /// before three black crows and the hikkake's confirmation bar are not
    /// counted).
    pub const fn candles(self) -> usize {
        match self {
            Pattern::Hammer
            | Pattern::InvertedHammer
            | Pattern::ShootingStar
            | Pattern::HangingMan
            | Pattern::Doji
            | Pattern::DragonflyDoji
            | Pattern::GravestoneDoji
            | Pattern::LongLeggedDoji
            | Pattern::Marubozu
            | Pattern::ClosingMarubozu
            | Pattern::LongLine
            | Pattern::ShortLine
            | Pattern::SpinningTop
            | Pattern::HighWave
            | Pattern::RickshawMan
            | Pattern::Takuri
            | Pattern::BeltHold => 1,
            Pattern::Engulfing
            | Pattern::DojiStar
            | Pattern::Harami
            | Pattern::HaramiCross
            | Pattern::Piercing
            | Pattern::DarkCloudCover
            | Pattern::Counterattack
            | Pattern::InNeck
            | Pattern::OnNeck
            | Pattern::Thrusting
            | Pattern::SeparatingLines
            | Pattern::MatchingLow
            | Pattern::HomingPigeon
            | Pattern::Kicking
            | Pattern::KickingByLength => 2,
            Pattern::MorningStar
            | Pattern::EveningStar
            | Pattern::MorningDojiStar
            | Pattern::EveningDojiStar
            | Pattern::ThreeWhiteSoldiers
            | Pattern::ThreeBlackCrows
            | Pattern::TwoCrows
            | Pattern::ThreeInside
            | Pattern::ThreeOutside
            | Pattern::ThreeStarsInSouth
            | Pattern::AbandonedBaby
            | Pattern::AdvanceBlock
            | Pattern::GapSideBySideWhite
            | Pattern::Hikkake
            | Pattern::IdenticalThreeCrows
            | Pattern::StalledPattern
            | Pattern::StickSandwich
            | Pattern::TasukiGap
            | Pattern::Tristar
            | Pattern::UniqueThreeRiver
            | Pattern::UpsideGapTwoCrows
            | Pattern::GapThreeMethods => 3,
            Pattern::ThreeLineStrike | Pattern::ConcealingBabySwallow | Pattern::ModifiedHikkake => 4,
            Pattern::Breakaway | Pattern::LadderBottom | Pattern::MatHold | Pattern::RiseFallThreeMethods => 5,
        }
    }

    /// TA-Lib's lookback: the first bar that can carry a non-zero value.
    /// Bars before it are always `0` (TA-Lib `TA_CDL*_Lookback`).
    pub fn lookback(self) -> usize {
        use CandleSetting::{
            BodyDoji, BodyLong, BodyShort, Equal, Far, Near, ShadowLong, ShadowShort, ShadowVeryLong, ShadowVeryShort,
        };
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
            Pattern::Marubozu => max(&[BodyLong, ShadowVeryShort]),
            Pattern::ClosingMarubozu => max(&[BodyLong, ShadowVeryShort]),
            Pattern::LongLine => max(&[BodyLong, ShadowShort]),
            Pattern::ShortLine => max(&[BodyShort, ShadowShort]),
            Pattern::SpinningTop => BodyShort.period(),
            Pattern::HighWave => max(&[BodyShort, ShadowVeryLong]),
            Pattern::RickshawMan => max(&[BodyDoji, ShadowLong, Near]),
            Pattern::Takuri => max(&[BodyDoji, ShadowVeryShort, ShadowVeryLong]),
            Pattern::BeltHold => max(&[BodyLong, ShadowVeryShort]),
            Pattern::Counterattack => max(&[Equal, BodyLong]) + 1,
            Pattern::InNeck => max(&[Equal, BodyLong]) + 1,
            Pattern::OnNeck => max(&[Equal, BodyLong]) + 1,
            Pattern::Thrusting => max(&[Equal, BodyLong]) + 1,
            Pattern::SeparatingLines => max(&[ShadowVeryShort, BodyLong, Equal]) + 1,
            Pattern::MatchingLow => Equal.period() + 1,
            Pattern::HomingPigeon => max(&[BodyShort, BodyLong]) + 1,
            Pattern::Kicking => max(&[ShadowVeryShort, BodyLong]) + 1,
            Pattern::KickingByLength => max(&[ShadowVeryShort, BodyLong]) + 1,
            Pattern::TwoCrows => BodyLong.period() + 2,
            Pattern::ThreeInside => max(&[BodyShort, BodyLong]) + 2,
            Pattern::ThreeOutside => 3,
            Pattern::ThreeLineStrike => Near.period() + 3,
            Pattern::ThreeStarsInSouth => max(&[ShadowVeryShort, ShadowLong, BodyLong, BodyShort]) + 2,
            Pattern::AbandonedBaby => max(&[BodyDoji, BodyLong, BodyShort]) + 2,
            Pattern::AdvanceBlock => max(&[ShadowLong, ShadowShort, Far, Near, BodyLong]) + 2,
            Pattern::Breakaway => BodyLong.period() + 4,
            Pattern::ConcealingBabySwallow => ShadowVeryShort.period() + 3,
            Pattern::GapSideBySideWhite => max(&[Near, Equal]) + 2,
            Pattern::Hikkake => 5,
            Pattern::ModifiedHikkake => Near.period().max(1) + 5,
            Pattern::IdenticalThreeCrows => max(&[ShadowVeryShort, Equal]) + 2,
            Pattern::LadderBottom => ShadowVeryShort.period() + 4,
            Pattern::MatHold => max(&[BodyShort, BodyLong]) + 4,
            Pattern::RiseFallThreeMethods => max(&[BodyShort, BodyLong]) + 4,
            Pattern::StalledPattern => max(&[BodyLong, BodyShort, ShadowVeryShort, Near]) + 2,
            Pattern::StickSandwich => Equal.period() + 2,
            Pattern::TasukiGap => Near.period() + 2,
            Pattern::Tristar => BodyDoji.period() + 2,
            Pattern::UniqueThreeRiver => max(&[BodyShort, BodyLong]) + 2,
            Pattern::UpsideGapTwoCrows => max(&[BodyShort, BodyLong]) + 2,
            Pattern::GapThreeMethods => 2,
        }
    }

    /// TA-Lib's default penetration for the patterns that take one
    /// (`optInPenetration`): 0.3 for the morning/evening (doji) stars and the
    /// abandoned baby, 0.5 for dark cloud cover and mat hold; `None` for the
    /// others.
    pub const fn default_penetration(self) -> Option<f64> {
        match self {
            Pattern::MorningStar | Pattern::EveningStar | Pattern::MorningDojiStar | Pattern::EveningDojiStar => {
                Some(0.3)
            }
            Pattern::DarkCloudCover | Pattern::MatHold => Some(0.5),
            Pattern::AbandonedBaby => Some(0.3),
            _ => None,
        }
    }

    /// Whether the sign of the output means bullish/bearish. The doji family,
    /// the rickshaw man and the takuri always output +100 and have no
    /// direction of their own. (For the short line, spinning top and high
    /// wave TA-Lib's sign is the candle's colour; it is reported as a
    /// direction like the other colour-signed patterns.)
    pub const fn is_directional(self) -> bool {
        !matches!(
            self,
            Pattern::Doji
                | Pattern::DragonflyDoji
                | Pattern::GravestoneDoji
                | Pattern::LongLeggedDoji
                | Pattern::RickshawMan
                | Pattern::Takuri
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
    /// A doji-family pattern, rickshaw man or takuri (always +100):
    /// indecision, no direction.
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
    /// TA-Lib's value: ±100, ±80 for the weaker engulfing/harami forms,
    /// ±200 for a hikkake's confirmation bar.
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
        Pattern::Marubozu => single::marubozu(bars),
        Pattern::ClosingMarubozu => single::closing_marubozu(bars),
        Pattern::LongLine => single::long_line(bars),
        Pattern::ShortLine => single::short_line(bars),
        Pattern::SpinningTop => single::spinning_top(bars),
        Pattern::HighWave => single::high_wave(bars),
        Pattern::RickshawMan => single::rickshaw_man(bars),
        Pattern::Takuri => single::takuri(bars),
        Pattern::BeltHold => single::belt_hold(bars),
        Pattern::Counterattack => multi::counterattack(bars),
        Pattern::InNeck => multi::in_neck(bars),
        Pattern::OnNeck => multi::on_neck(bars),
        Pattern::Thrusting => multi::thrusting(bars),
        Pattern::SeparatingLines => multi::separating_lines(bars),
        Pattern::MatchingLow => multi::matching_low(bars),
        Pattern::HomingPigeon => multi::homing_pigeon(bars),
        Pattern::Kicking => multi::kicking(bars),
        Pattern::KickingByLength => multi::kicking_by_length(bars),
        Pattern::TwoCrows => multi::two_crows(bars),
        Pattern::ThreeInside => multi::three_inside(bars),
        Pattern::ThreeOutside => multi::three_outside(bars),
        Pattern::ThreeLineStrike => long::three_line_strike(bars),
        Pattern::ThreeStarsInSouth => multi::three_stars_in_south(bars),
        Pattern::AbandonedBaby => multi::abandoned_baby(bars, penetration),
        Pattern::AdvanceBlock => multi::advance_block(bars),
        Pattern::Breakaway => long::breakaway(bars),
        Pattern::ConcealingBabySwallow => long::concealing_baby_swallow(bars),
        Pattern::GapSideBySideWhite => multi::gap_side_by_side_white(bars),
        Pattern::Hikkake => long::hikkake(bars),
        Pattern::ModifiedHikkake => long::modified_hikkake(bars),
        Pattern::IdenticalThreeCrows => multi::identical_three_crows(bars),
        Pattern::LadderBottom => long::ladder_bottom(bars),
        Pattern::MatHold => long::mat_hold(bars, penetration),
        Pattern::RiseFallThreeMethods => long::rise_fall_three_methods(bars),
        Pattern::StalledPattern => multi::stalled_pattern(bars),
        Pattern::StickSandwich => multi::stick_sandwich(bars),
        Pattern::TasukiGap => multi::tasuki_gap(bars),
        Pattern::Tristar => multi::tristar(bars),
        Pattern::UniqueThreeRiver => multi::unique_three_river(bars),
        Pattern::UpsideGapTwoCrows => multi::upside_gap_two_crows(bars),
        Pattern::GapThreeMethods => multi::gap_three_methods(bars),
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
