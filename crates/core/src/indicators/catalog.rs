//! The name-based entry point: [`catalog`] describes every indicator and
//! [`compute`] runs one by name with a map of parameters.
//!
//! The catalog is a closed list; service tools, REST routes and the CLI are
//! generated from it, so adding an indicator means adding one entry here and
//! one arm in [`compute`] (a test checks the two agree).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    AbsolutePriceOscillator, AccelerationBands, AcceleratorOscillator, AccumulationDistribution, AnyMovingAverage,
    Aroon, AroonOscillator, AverageDailyRange, AverageDeviation, AverageDirectionalIndex,
    AverageDirectionalIndexRating, AveragePrice, AverageTrueRange, AwesomeOscillator, BalanceOfPower, BandsSeries,
    Beta, BollingerBands, ChaikinMoneyFlow, ChaikinOscillator, ChaikinVolatility, ChandeMomentumOscillator,
    ChandeMomentumOscillatorUnsmoothed, CommodityChannelIndex, CoppockCurve, DetrendedPriceOscillator,
    DirectionalMovementIndex, DonchianChannels, DoubleExponentialMovingAverage, EfficiencyRatio, ElderForceIndex,
    ElderRayIndex, ExponentialMovingAverage, FastStochastic, ForecastOscillator, Fractal, HeikinAshi,
    HilbertDominantCyclePeriod, HilbertDominantCyclePhase, HilbertPhasor, HilbertSineWave, HilbertTrendMode,
    HilbertTrendline, HullMovingAverage, IchimokuCloud, IntradayMomentumIndex, KaufmanAdaptiveMovingAverage, Kdj,
    KeltnerChannels, LinearRegressionAngle, LinearRegressionIntercept, LinearRegressionSlope, LinearRegressionValue,
    MAX_PERIOD, MarketFacilitationIndex, MassIndex, MedianPrice, MesaAdaptiveMovingAverage, Midpoint, MidpointPrice,
    MinusDirectionalIndicator, MinusDirectionalMovement, Momentum, MoneyFlowIndex, MovingAverageConvergenceDivergence,
    MovingAverageConvergenceDivergenceExt, MovingAverageConvergenceDivergenceFixed, NegativeVolumeIndex,
    NormalizedAverageTrueRange, OnBalanceVolume, ParabolicSar, ParabolicSarExtended, PearsonCorrelation, PercentRank,
    PercentagePriceOscillator, PercentageVolumeOscillator, PlusDirectionalIndicator, PlusDirectionalMovement,
    PositiveVolumeIndex, PriceVolumeTrend, Qstick, RateOfChange, RateOfChangePercentage, RateOfChangeRatio,
    RateOfChangeRatio100, RelativeStrengthIndex, RelativeVolatilityIndex, RelativeVolume, RollingPercentile,
    SimpleMovingAverage, StandardDeviation, StochasticMomentumIndex, StochasticOscillator, StochasticRsi, SuperTrend,
    T3MovingAverage, TimeSeriesForecast, TriangularMovingAverage, TripleExponentialMovingAverage, Trix, TrueRange,
    TrueStrengthIndex, TypicalPrice, UltimateOscillator, VariablePeriodMovingAverage, Variance,
    VerticalHorizontalFilter, VolumeWeightedAveragePrice, VolumeWeightedMovingAverage, Vortex, VwapAnchor,
    WeightedClosePrice, WeightedMovingAverage, WildersMovingAverage, WilliamsAccumulationDistribution,
    WilliamsPercentRange, ZeroLagExponentialMovingAverage,
};
use crate::{Bar, CoreError};

/// How a parameter's number is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A whole number (a period); a fractional value is refused.
    Integer,
    /// Any finite number within the bounds.
    Real,
    /// An instant in unix milliseconds (whole number).
    Timestamp,
}

/// One parameter of an indicator.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ParamInfo {
    /// Key in the parameter map.
    pub name: &'static str,
    /// What it controls.
    pub description: &'static str,
    /// Integer, real or timestamp.
    pub kind: ParamKind,
    /// Value used when the key is absent; `None` for an optional parameter
    /// whose absence selects a different behaviour.
    pub default: Option<f64>,
    /// Smallest accepted value (inclusive).
    pub min: f64,
    /// Largest accepted value (inclusive).
    pub max: f64,
}

/// One indicator of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IndicatorInfo {
    /// Canonical name (lower case), accepted by [`compute`].
    pub name: &'static str,
    /// Human title.
    pub title: &'static str,
    /// `trend`, `momentum`, `volatility`, `volume`, `price`, `statistics` or `cycle`.
    pub family: &'static str,
    /// Other accepted names (case-insensitive).
    pub aliases: &'static [&'static str],
    /// One-sentence description, written for the AI clients that read it.
    pub description: &'static str,
    /// Bar fields read.
    pub inputs: &'static [&'static str],
    /// Parameters, in the order they are usually given.
    pub params: &'static [ParamInfo],
    /// Names of the output series, in order.
    pub outputs: &'static [&'static str],
    /// The TA-Lib function the values equal (to 1e-9 relative), if any.
    pub talib: Option<&'static str>,
    /// First index with a value, with the default parameters, in words.
    pub warmup: &'static str,
}

/// One named output series of [`compute`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutputSeries {
    /// Output name (see [`IndicatorInfo::outputs`]).
    pub name: String,
    /// Index of the first non-null value, if any.
    pub first_valid: Option<usize>,
    /// One value per input bar; `null` during warm-up.
    pub values: Vec<Option<f64>>,
}

/// Result of [`compute`]: the resolved parameters and the output series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IndicatorOutput {
    /// Canonical indicator name.
    pub indicator: String,
    /// Parameters actually used (defaults filled in).
    pub params: BTreeMap<String, f64>,
    /// Output series, each as long as the input.
    pub series: Vec<OutputSeries>,
}

impl IndicatorOutput {
    /// The series called `name`, if present.
    pub fn get(&self, name: &str) -> Option<&[Option<f64>]> {
        self.series.iter().find(|s| s.name == name).map(|s| s.values.as_slice())
    }
}

const MAXP: f64 = MAX_PERIOD as f64;

const fn period(default: f64, min: f64, description: &'static str) -> ParamInfo {
    ParamInfo {
        name: "period",
        description,
        kind: ParamKind::Integer,
        default: Some(default),
        min,
        max: MAXP,
    }
}

const fn int(name: &'static str, default: f64, min: f64, description: &'static str) -> ParamInfo {
    ParamInfo {
        name,
        description,
        kind: ParamKind::Integer,
        default: Some(default),
        min,
        max: MAXP,
    }
}

const fn real(name: &'static str, default: f64, min: f64, max: f64, description: &'static str) -> ParamInfo {
    ParamInfo {
        name,
        description,
        kind: ParamKind::Real,
        default: Some(default),
        min,
        max,
    }
}

const CLOSE: &[&str] = &["close"];
const HLC: &[&str] = &["high", "low", "close"];
const HL: &[&str] = &["high", "low"];
const OHLC: &[&str] = &["open", "high", "low", "close"];
const OC: &[&str] = &["open", "close"];
const CV: &[&str] = &["close", "volume"];
const HLV: &[&str] = &["high", "low", "volume"];
const VOLUME: &[&str] = &["volume"];
const HLCV: &[&str] = &["high", "low", "close", "volume"];
const BANDS: &[&str] = &["upper", "middle", "lower"];

/// `fast`, `slow` and `matype` of APO and PPO.
const MA_OSC: &[ParamInfo] = &[
    int("fast", 12.0, 2.0, "Fast moving-average period."),
    int(
        "slow",
        26.0,
        2.0,
        "Slow moving-average period (swapped with `fast` when shorter).",
    ),
    ParamInfo {
        name: "matype",
        description: "TA-Lib moving-average type: 0 SMA, 1 EMA, 2 WMA, 3 DEMA, 4 TEMA, 5 TRIMA, 6 KAMA, 7 MAMA, 8 T3.",
        kind: ParamKind::Integer,
        default: Some(1.0),
        min: 0.0,
        max: 8.0,
    },
];

/// A TA-Lib moving-average type parameter (default 0, SMA).
const fn matype_param(name: &'static str, description: &'static str) -> ParamInfo {
    ParamInfo {
        name,
        description,
        kind: ParamKind::Integer,
        default: Some(0.0),
        min: 0.0,
        max: 8.0,
    }
}

/// `slowk_matype` and `slowd_matype` of KDJ: TA-Lib 0.8's 14 types, default 13.
const KDJ_MATYPE: [ParamInfo; 2] = [
    ParamInfo {
        name: "slowk_matype",
        description: KDJ_MATYPES,
        kind: ParamKind::Integer,
        default: Some(13.0),
        min: 0.0,
        max: 13.0,
    },
    ParamInfo {
        name: "slowd_matype",
        description: KDJ_MATYPES,
        kind: ParamKind::Integer,
        default: Some(13.0),
        min: 0.0,
        max: 13.0,
    },
];

/// TA-Lib 0.8's moving-average types as KDJ takes them.
const KDJ_MATYPES: &str = "TA-Lib moving-average type: 0 SMA, 1 EMA, 2 WMA, 3 DEMA, 4 TEMA, 5 TRIMA, 6 KAMA, 7 MAMA, 8 T3, 9 HMA, 10 none, 11 default (13), 12 ZLEMA, 13 Wilder.";

/// The moving-average types, as TA-Lib numbers them.
const MATYPES: &str = "TA-Lib moving-average type: 0 SMA, 1 EMA, 2 WMA, 3 DEMA, 4 TEMA, 5 TRIMA, 6 KAMA, 7 MAMA, 8 T3.";

/// `fastd_matype` of STOCHF and STOCHRSI.
const FASTD_MATYPE: ParamInfo = ParamInfo {
    name: "fastd_matype",
    description: "TA-Lib moving-average type of %D: 0 SMA, 1 EMA, 2 WMA, 3 DEMA, 4 TEMA, 5 TRIMA, 6 KAMA, 7 MAMA, 8 T3.",
    kind: ParamKind::Integer,
    default: Some(0.0),
    min: 0.0,
    max: 8.0,
};

static CATALOG: &[IndicatorInfo] = &[
    IndicatorInfo {
        name: "sma",
        title: "Simple moving average",
        family: "trend",
        aliases: &["simple_moving_average"],
        description: "Arithmetic mean of the last `period` closes.",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "Number of bars averaged.")],
        outputs: &["sma"],
        talib: Some("SMA"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "ema",
        title: "Exponential moving average",
        family: "trend",
        aliases: &["exponential_moving_average"],
        description: "Exponentially weighted mean of the closes (k = 2/(period+1)), seeded with the SMA of the first `period` closes.",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "Smoothing period.")],
        outputs: &["ema"],
        talib: Some("EMA"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "wma",
        title: "Weighted moving average",
        family: "trend",
        aliases: &["lwma", "weighted_moving_average"],
        description: "Linearly weighted mean of the last `period` closes, newest weighted most.",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "Number of bars averaged.")],
        outputs: &["wma"],
        talib: Some("WMA"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "macd",
        title: "Moving average convergence/divergence",
        family: "trend",
        aliases: &["moving_average_convergence_divergence"],
        description: "Fast EMA minus slow EMA of the closes, its signal EMA and the histogram (macd - signal).",
        inputs: CLOSE,
        params: &[
            int("fast", 12.0, 2.0, "Fast EMA period (at most `slow`)."),
            int("slow", 26.0, 2.0, "Slow EMA period."),
            int("signal", 9.0, 1.0, "Signal EMA period."),
        ],
        outputs: &["macd", "signal", "histogram"],
        talib: Some("MACD"),
        warmup: "slow + signal - 2 (33)",
    },
    IndicatorInfo {
        name: "adx",
        title: "Average directional index (DMI)",
        family: "trend",
        aliases: &["dmi", "average_directional_index", "directional_movement"],
        description: "Wilder's trend strength (ADX, 0-100) with the directional indicators +DI and -DI.",
        inputs: HLC,
        params: &[period(14.0, 2.0, "Wilder smoothing period.")],
        outputs: &["adx", "plus_di", "minus_di"],
        talib: Some("ADX, PLUS_DI, MINUS_DI"),
        warmup: "+DI/-DI: period (14); ADX: 2*period - 1 (27)",
    },
    IndicatorInfo {
        name: "sar",
        title: "Parabolic SAR",
        family: "trend",
        aliases: &["psar", "parabolic_sar"],
        description: "Wilder's parabolic stop-and-reverse trailing level.",
        inputs: HL,
        params: &[
            real(
                "acceleration",
                0.02,
                0.0001,
                1.0,
                "Acceleration factor step and initial value.",
            ),
            real(
                "maximum",
                0.2,
                0.0001,
                1.0,
                "Maximum acceleration factor (at least `acceleration`).",
            ),
        ],
        outputs: &["sar"],
        talib: Some("SAR"),
        warmup: "1",
    },
    IndicatorInfo {
        name: "ichimoku",
        title: "Ichimoku cloud",
        family: "trend",
        aliases: &["ichimoku_cloud", "ichimoku_kinko_hyo"],
        description: "Tenkan, kijun, senkou spans A/B (plotted `displacement` bars ahead) and chikou (close plotted `displacement` bars back).",
        inputs: &["high", "low", "close"],
        params: &[
            int("tenkan", 9.0, 1.0, "Conversion line period."),
            int("kijun", 26.0, 1.0, "Base line period."),
            int("senkou_b", 52.0, 1.0, "Leading span B period."),
            int(
                "displacement",
                26.0,
                0.0,
                "Bars the spans are shifted forward and the chikou back.",
            ),
        ],
        outputs: &["tenkan", "kijun", "senkou_a", "senkou_b", "chikou"],
        talib: None,
        warmup: "tenkan 8, kijun 25, senkou_a 51, senkou_b 77; chikou empty on the last 26 bars",
    },
    IndicatorInfo {
        name: "supertrend",
        title: "SuperTrend",
        family: "trend",
        aliases: &["super_trend"],
        description: "ATR band around the median price that trails price and flips with the trend; direction is 1 (up) or -1 (down).",
        inputs: HLC,
        params: &[
            period(10.0, 2.0, "ATR period."),
            real("multiplier", 3.0, 0.0, 100.0, "Band width in ATRs."),
        ],
        outputs: &["supertrend", "direction"],
        talib: Some("SUPERTREND"),
        warmup: "period (10)",
    },
    IndicatorInfo {
        name: "rsi",
        title: "Relative strength index",
        family: "momentum",
        aliases: &["relative_strength_index"],
        description: "Wilder's RSI of the closes, 0-100.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Wilder smoothing period.")],
        outputs: &["rsi"],
        talib: Some("RSI"),
        warmup: "period (14)",
    },
    IndicatorInfo {
        name: "stoch",
        title: "Stochastic oscillator (slow)",
        family: "momentum",
        aliases: &["stochastic", "stochastic_oscillator"],
        description: "Slow %K (moving average of the fast %K, SMA by default) and %D (moving average of %K), 0-100.",
        inputs: HLC,
        params: &[
            int("fastk", 5.0, 1.0, "Look-back of the highest high / lowest low."),
            int(
                "slowk",
                3.0,
                1.0,
                "Moving-average period smoothing the fast %K into the slow %K.",
            ),
            int("slowd", 3.0, 1.0, "Moving-average period of %D."),
            matype_param(
                "slowk_matype",
                "TA-Lib moving-average type of the slow %K: 0 SMA, 1 EMA, 2 WMA, 3 DEMA, 4 TEMA, 5 TRIMA, 6 KAMA, 7 MAMA, 8 T3.",
            ),
            matype_param(
                "slowd_matype",
                "TA-Lib moving-average type of %D: 0 SMA, 1 EMA, 2 WMA, 3 DEMA, 4 TEMA, 5 TRIMA, 6 KAMA, 7 MAMA, 8 T3.",
            ),
        ],
        outputs: &["k", "d"],
        talib: Some("STOCH"),
        warmup: "fastk + slowk + slowd - 3 (8)",
    },
    IndicatorInfo {
        name: "willr",
        title: "Williams %R",
        family: "momentum",
        aliases: &["williams_r", "williams_percent_r", "wpr", "%r"],
        description: "Position of the close in the high-low range of the last `period` bars, 0 (high) to -100 (low).",
        inputs: HLC,
        params: &[period(14.0, 2.0, "Look-back in bars.")],
        outputs: &["willr"],
        talib: Some("WILLR"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "cci",
        title: "Commodity channel index",
        family: "momentum",
        aliases: &["commodity_channel_index"],
        description: "Typical price's distance from its mean in units of 0.015 mean absolute deviations.",
        inputs: HLC,
        params: &[period(14.0, 2.0, "Look-back in bars.")],
        outputs: &["cci"],
        talib: Some("CCI"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "mom",
        title: "Momentum",
        family: "momentum",
        aliases: &["momentum"],
        description: "Close minus the close `period` bars earlier.",
        inputs: CLOSE,
        params: &[period(10.0, 1.0, "Look-back in bars.")],
        outputs: &["mom"],
        talib: Some("MOM"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "roc",
        title: "Rate of change",
        family: "momentum",
        aliases: &["rate_of_change"],
        description: "Percentage change of the close over `period` bars.",
        inputs: CLOSE,
        params: &[period(10.0, 1.0, "Look-back in bars.")],
        outputs: &["roc"],
        talib: Some("ROC"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "atr",
        title: "Average true range",
        family: "volatility",
        aliases: &["average_true_range"],
        description: "Wilder-smoothed true range, in price units.",
        inputs: HLC,
        params: &[period(14.0, 1.0, "Wilder smoothing period.")],
        outputs: &["atr"],
        talib: Some("ATR"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "bbands",
        title: "Bollinger Bands",
        family: "volatility",
        aliases: &["bollinger", "bollinger_bands", "bb"],
        description: "Moving average of the closes (SMA by default, any TA-Lib matype) with bands `nbdev` population standard deviations above and below.",
        inputs: CLOSE,
        params: &[
            period(20.0, 2.0, "Window of the SMA and of the deviation."),
            real("nbdev_up", 2.0, 0.0, 100.0, "Standard deviations above the middle."),
            real("nbdev_dn", 2.0, 0.0, 100.0, "Standard deviations below the middle."),
            matype_param("matype", MATYPES),
        ],
        outputs: BANDS,
        talib: Some("BBANDS"),
        warmup: "max(period - 1, lookback of the matype's average) (19)",
    },
    IndicatorInfo {
        name: "stddev",
        title: "Standard deviation",
        family: "volatility",
        aliases: &["std", "stdev", "standard_deviation"],
        description: "Population standard deviation of the last `period` closes, times `nbdev`.",
        inputs: CLOSE,
        params: &[
            period(5.0, 2.0, "Window length."),
            real("nbdev", 1.0, 0.0, 100.0, "Multiplier."),
        ],
        outputs: &["stddev"],
        talib: Some("STDDEV"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "donchian",
        title: "Donchian channels",
        family: "volatility",
        aliases: &["dc", "donchian_channels", "price_channel"],
        description: "Highest high and lowest low of the last `period` bars and their midpoint.",
        inputs: HL,
        params: &[period(20.0, 2.0, "Look-back in bars.")],
        outputs: BANDS,
        talib: Some("DONCHIAN"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "keltner",
        title: "Keltner channels",
        family: "volatility",
        aliases: &["kc", "keltner_channels"],
        description: "EMA of the typical price with bands `multiplier` ATRs above and below.",
        inputs: HLC,
        params: &[
            period(20.0, 2.0, "EMA period of the middle line."),
            int("atr_period", 10.0, 1.0, "ATR period."),
            real("multiplier", 2.0, 0.0, 100.0, "Band width in ATRs."),
        ],
        outputs: BANDS,
        talib: Some("KC"),
        warmup: "max(period - 1, atr_period) (19)",
    },
    IndicatorInfo {
        name: "obv",
        title: "On-balance volume",
        family: "volume",
        aliases: &["on_balance_volume"],
        description: "Running sum of volume, added on up closes and subtracted on down closes.",
        inputs: &["close", "volume"],
        params: &[],
        outputs: &["obv"],
        talib: Some("OBV"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "mfi",
        title: "Money flow index",
        family: "volume",
        aliases: &["money_flow_index"],
        description: "Volume-weighted RSI of the typical price, 0-100.",
        inputs: HLCV,
        params: &[period(14.0, 2.0, "Look-back in bars.")],
        outputs: &["mfi"],
        talib: Some("MFI"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "vwap",
        title: "Volume-weighted average price",
        family: "volume",
        aliases: &["volume_weighted_average_price"],
        description: "Volume-weighted mean of the typical price since 00:00 UTC of each bar's day, or since `anchor` when given.",
        inputs: HLCV,
        params: &[ParamInfo {
            name: "anchor",
            description: "Optional start instant (unix ms): accumulate from the first bar at or after it, without daily resets.",
            kind: ParamKind::Timestamp,
            default: None,
            min: -8_640_000_000_000_000.0,
            max: 8_640_000_000_000_000.0,
        }],
        outputs: &["vwap"],
        talib: Some("VWAP (anchored at the first bar)"),
        warmup: "0 (null while no volume has traded)",
    },
    IndicatorInfo {
        name: "var",
        title: "Variance",
        family: "statistics",
        aliases: &["variance"],
        description: "Population variance of the last `period` closes (`nbdev` has no effect, as in TA-Lib).",
        inputs: CLOSE,
        params: &[
            period(5.0, 1.0, "Window length."),
            real(
                "nbdev",
                1.0,
                -3e37,
                3e37,
                "Accepted for TA-Lib compatibility; no effect.",
            ),
        ],
        outputs: &["var"],
        talib: Some("VAR"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "linearreg",
        title: "Linear regression",
        family: "statistics",
        aliases: &[],
        description: "Least-squares line of the last `period` closes, its value at the newest bar.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Regression window in bars.")],
        outputs: &["linearreg"],
        talib: Some("LINEARREG"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "linearreg_slope",
        title: "Linear regression slope",
        family: "statistics",
        aliases: &[],
        description: "Slope per bar of the least-squares line of the last `period` closes.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Regression window in bars.")],
        outputs: &["linearreg_slope"],
        talib: Some("LINEARREG_SLOPE"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "linearreg_intercept",
        title: "Linear regression intercept",
        family: "statistics",
        aliases: &[],
        description: "Value at the oldest bar of the window of the least-squares line of the last `period` closes.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Regression window in bars.")],
        outputs: &["linearreg_intercept"],
        talib: Some("LINEARREG_INTERCEPT"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "linearreg_angle",
        title: "Linear regression angle",
        family: "statistics",
        aliases: &[],
        description: "atan(slope) in degrees of the least-squares line of the last `period` closes.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Regression window in bars.")],
        outputs: &["linearreg_angle"],
        talib: Some("LINEARREG_ANGLE"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "tsf",
        title: "Time series forecast",
        family: "statistics",
        aliases: &[],
        description: "Least-squares line of the last `period` closes extended one bar ahead.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Regression window in bars.")],
        outputs: &["tsf"],
        talib: Some("TSF"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "correl",
        title: "Pearson correlation",
        family: "statistics",
        aliases: &[],
        description: "Correlation coefficient of the high and the low over the last `period` bars (TA-Lib's default inputs), -1 to 1.",
        inputs: HL,
        params: &[period(30.0, 1.0, "Window length.")],
        outputs: &["correl"],
        talib: Some("CORREL (high, low)"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "beta",
        title: "Beta",
        family: "statistics",
        aliases: &[],
        description: "Beta of the low's one-bar returns against the high's over the last `period` returns (TA-Lib's default inputs).",
        inputs: HL,
        params: &[period(5.0, 1.0, "Number of returns.")],
        outputs: &["beta"],
        talib: Some("BETA (high, low)"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "mama",
        title: "MESA adaptive moving average",
        family: "trend",
        aliases: &[],
        description: "Ehlers' MAMA of the closes (factor from the Hilbert-transform phase rate) and its following average FAMA.",
        inputs: CLOSE,
        params: &[
            real("fastlimit", 0.5, 0.01, 0.99, "Upper limit of the factor."),
            real("slowlimit", 0.05, 0.01, 0.99, "Lower limit of the factor."),
        ],
        outputs: &["mama", "fama"],
        talib: Some("MAMA"),
        warmup: "32",
    },
    IndicatorInfo {
        name: "dema",
        title: "Double exponential moving average",
        family: "trend",
        aliases: &[],
        description: "2 * EMA - EMA(EMA) of the closes.",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "EMA period.")],
        outputs: &["dema"],
        talib: Some("DEMA"),
        warmup: "2*(period - 1) (58)",
    },
    IndicatorInfo {
        name: "tema",
        title: "Triple exponential moving average",
        family: "trend",
        aliases: &[],
        description: "3 * EMA - 3 * EMA(EMA) + EMA(EMA(EMA)) of the closes.",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "EMA period.")],
        outputs: &["tema"],
        talib: Some("TEMA"),
        warmup: "3*(period - 1) (87)",
    },
    IndicatorInfo {
        name: "trima",
        title: "Triangular moving average",
        family: "trend",
        aliases: &[],
        description: "Moving average of the closes with triangular weights (an SMA of an SMA).",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "Number of bars averaged.")],
        outputs: &["trima"],
        talib: Some("TRIMA"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "kama",
        title: "Kaufman adaptive moving average",
        family: "trend",
        aliases: &[],
        description: "EMA of the closes whose factor follows the efficiency ratio (2 to 30 bars).",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "Efficiency-ratio period.")],
        outputs: &["kama"],
        talib: Some("KAMA"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "t3",
        title: "T3 moving average",
        family: "trend",
        aliases: &["tillson_t3"],
        description: "Tillson's T3: six cascaded EMAs of the closes combined with the volume factor.",
        inputs: CLOSE,
        params: &[
            period(5.0, 1.0, "EMA period."),
            real("vfactor", 0.7, 0.0, 1.0, "Volume factor."),
        ],
        outputs: &["t3"],
        talib: Some("T3"),
        warmup: "6*(period - 1) (24)",
    },
    IndicatorInfo {
        name: "trix",
        title: "TRIX",
        family: "momentum",
        aliases: &[],
        description: "One-bar percentage change of the triple EMA of the closes.",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "EMA period.")],
        outputs: &["trix"],
        talib: Some("TRIX"),
        warmup: "3*(period - 1) + 1 (88)",
    },
    IndicatorInfo {
        name: "apo",
        title: "Absolute price oscillator",
        family: "momentum",
        aliases: &[],
        description: "Fast minus slow moving average of the closes.",
        inputs: CLOSE,
        params: MA_OSC,
        outputs: &["apo"],
        talib: Some("APO"),
        warmup: "the slow average's (25)",
    },
    IndicatorInfo {
        name: "ppo",
        title: "Percentage price oscillator",
        family: "momentum",
        aliases: &[],
        description: "100 * (fast - slow) / slow moving average of the closes.",
        inputs: CLOSE,
        params: MA_OSC,
        outputs: &["ppo"],
        talib: Some("PPO"),
        warmup: "the slow average's (25)",
    },
    IndicatorInfo {
        name: "macdfix",
        title: "MACD with fixed 12/26 factors",
        family: "trend",
        aliases: &[],
        description: "MACD 12/26 with TA-Lib's fixed EMA factors 0.15 and 0.075, its signal EMA and the histogram.",
        inputs: CLOSE,
        params: &[int("signal", 9.0, 1.0, "Signal EMA period.")],
        outputs: &["macd", "signal", "histogram"],
        talib: Some("MACDFIX"),
        warmup: "25 + signal - 1 (33)",
    },
    IndicatorInfo {
        name: "plus_dm",
        title: "Plus directional movement",
        family: "trend",
        aliases: &[],
        description: "Wilder-smoothed sum of the upward moves (+DM).",
        inputs: HL,
        params: &[period(14.0, 1.0, "Wilder smoothing period.")],
        outputs: &["plus_dm"],
        talib: Some("PLUS_DM"),
        warmup: "period - 1 (1 for period 1)",
    },
    IndicatorInfo {
        name: "minus_dm",
        title: "Minus directional movement",
        family: "trend",
        aliases: &[],
        description: "Wilder-smoothed sum of the downward moves (-DM).",
        inputs: HL,
        params: &[period(14.0, 1.0, "Wilder smoothing period.")],
        outputs: &["minus_dm"],
        talib: Some("MINUS_DM"),
        warmup: "period - 1 (1 for period 1)",
    },
    IndicatorInfo {
        name: "plus_di",
        title: "Plus directional indicator",
        family: "trend",
        aliases: &[],
        description: "100 * smoothed +DM / smoothed true range (period 1: the unscaled ratio, as TA-Lib).",
        inputs: HLC,
        params: &[period(14.0, 1.0, "Wilder smoothing period.")],
        outputs: &["plus_di"],
        talib: Some("PLUS_DI"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "minus_di",
        title: "Minus directional indicator",
        family: "trend",
        aliases: &[],
        description: "100 * smoothed -DM / smoothed true range (period 1: the unscaled ratio, as TA-Lib).",
        inputs: HLC,
        params: &[period(14.0, 1.0, "Wilder smoothing period.")],
        outputs: &["minus_di"],
        talib: Some("MINUS_DI"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "dx",
        title: "Directional movement index",
        family: "trend",
        aliases: &[],
        description: "100 * |+DI - -DI| / (+DI + -DI), the unsmoothed ADX.",
        inputs: HLC,
        params: &[period(14.0, 2.0, "Wilder smoothing period.")],
        outputs: &["dx"],
        talib: Some("DX"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "adxr",
        title: "Average directional movement rating",
        family: "trend",
        aliases: &[],
        description: "Mean of the ADX and the ADX `period - 1` bars earlier.",
        inputs: HLC,
        params: &[period(14.0, 2.0, "Wilder smoothing period.")],
        outputs: &["adxr"],
        talib: Some("ADXR"),
        warmup: "3*period - 2 (40)",
    },
    IndicatorInfo {
        name: "aroon",
        title: "Aroon",
        family: "momentum",
        aliases: &[],
        description: "How recently (0-100) the highest high (up) and lowest low (down) of the last `period` + 1 bars occurred.",
        inputs: HL,
        params: &[period(14.0, 2.0, "Look-back in bars.")],
        outputs: &["down", "up"],
        talib: Some("AROON"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "aroonosc",
        title: "Aroon oscillator",
        family: "momentum",
        aliases: &[],
        description: "Aroon up minus Aroon down, -100 to 100.",
        inputs: HL,
        params: &[period(14.0, 2.0, "Look-back in bars.")],
        outputs: &["aroonosc"],
        talib: Some("AROONOSC"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "ultosc",
        title: "Ultimate oscillator",
        family: "momentum",
        aliases: &["ultimate_oscillator"],
        description: "Weighted (4:2:1, shortest period first) mean of buying pressure / true range over three periods, 0-100.",
        inputs: HLC,
        params: &[
            int("period1", 7.0, 1.0, "First period."),
            int("period2", 14.0, 1.0, "Second period."),
            int("period3", 28.0, 1.0, "Third period."),
        ],
        outputs: &["ultosc"],
        talib: Some("ULTOSC"),
        warmup: "max(period1, period2, period3) (28)",
    },
    IndicatorInfo {
        name: "stochf",
        title: "Stochastic oscillator (fast)",
        family: "momentum",
        aliases: &["fast_stochastic"],
        description: "Fast %K and its moving average %D (SMA by default), 0-100.",
        inputs: HLC,
        params: &[
            int("fastk", 5.0, 1.0, "Look-back of the highest high / lowest low."),
            int("fastd", 3.0, 1.0, "Moving-average period of %D."),
            FASTD_MATYPE,
        ],
        outputs: &["k", "d"],
        talib: Some("STOCHF"),
        warmup: "fastk + fastd - 2 (6)",
    },
    IndicatorInfo {
        name: "stochrsi",
        title: "Stochastic RSI",
        family: "momentum",
        aliases: &["stoch_rsi"],
        description: "Fast stochastic (%K, %D: SMA by default) of the RSI of the closes, 0-100.",
        inputs: CLOSE,
        params: &[
            period(14.0, 2.0, "RSI period."),
            int("fastk", 5.0, 1.0, "Look-back of the RSI's highest / lowest."),
            int("fastd", 3.0, 1.0, "Moving-average period of %D."),
            FASTD_MATYPE,
        ],
        outputs: &["k", "d"],
        talib: Some("STOCHRSI"),
        warmup: "period + fastk + fastd - 2 (20)",
    },
    IndicatorInfo {
        name: "avgprice",
        title: "Average price",
        family: "price",
        aliases: &[],
        description: "Mean of the bar's open, high, low and close.",
        inputs: OHLC,
        params: &[],
        outputs: &["avgprice"],
        talib: Some("AVGPRICE"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "medprice",
        title: "Median price",
        family: "price",
        aliases: &["median_price"],
        description: "Midpoint of the bar's high and low.",
        inputs: HL,
        params: &[],
        outputs: &["medprice"],
        talib: Some("MEDPRICE"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "typprice",
        title: "Typical price",
        family: "price",
        aliases: &["typical_price"],
        description: "Mean of the bar's high, low and close.",
        inputs: HLC,
        params: &[],
        outputs: &["typprice"],
        talib: Some("TYPPRICE"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "wclprice",
        title: "Weighted close price",
        family: "price",
        aliases: &[],
        description: "(high + low + 2 close) / 4 of the bar.",
        inputs: HLC,
        params: &[],
        outputs: &["wclprice"],
        talib: Some("WCLPRICE"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "trange",
        title: "True range",
        family: "volatility",
        aliases: &["true_range"],
        description: "Greatest of high - low and the distances of the high and low from the previous close.",
        inputs: HLC,
        params: &[],
        outputs: &["trange"],
        talib: Some("TRANGE"),
        warmup: "1",
    },
    IndicatorInfo {
        name: "natr",
        title: "Normalized average true range",
        family: "volatility",
        aliases: &[],
        description: "ATR as a percentage of the close (period 1: the plain true range, as TA-Lib).",
        inputs: HLC,
        params: &[period(14.0, 1.0, "Wilder smoothing period.")],
        outputs: &["natr"],
        talib: Some("NATR"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "rocp",
        title: "Rate of change (fraction)",
        family: "momentum",
        aliases: &[],
        description: "(close - close `period` bars earlier) / that earlier close.",
        inputs: CLOSE,
        params: &[period(10.0, 1.0, "Look-back in bars.")],
        outputs: &["rocp"],
        talib: Some("ROCP"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "rocr",
        title: "Rate of change (ratio)",
        family: "momentum",
        aliases: &[],
        description: "Close / close `period` bars earlier.",
        inputs: CLOSE,
        params: &[period(10.0, 1.0, "Look-back in bars.")],
        outputs: &["rocr"],
        talib: Some("ROCR"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "rocr100",
        title: "Rate of change (ratio x 100)",
        family: "momentum",
        aliases: &[],
        description: "100 * close / close `period` bars earlier.",
        inputs: CLOSE,
        params: &[period(10.0, 1.0, "Look-back in bars.")],
        outputs: &["rocr100"],
        talib: Some("ROCR100"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "bop",
        title: "Balance of power",
        family: "momentum",
        aliases: &["balance_of_power"],
        description: "(close - open) / (high - low) of each bar, -1 to 1.",
        inputs: OHLC,
        params: &[],
        outputs: &["bop"],
        talib: Some("BOP"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "cmo",
        title: "Chande momentum oscillator",
        family: "momentum",
        aliases: &[],
        description: "100 * (gain - loss) / (gain + loss) of Wilder-smoothed close changes, -100 to 100.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Wilder smoothing period.")],
        outputs: &["cmo"],
        talib: Some("CMO"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "midpoint",
        title: "Midpoint",
        family: "trend",
        aliases: &[],
        description: "(highest + lowest close) / 2 over the last `period` bars.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Look-back in bars.")],
        outputs: &["midpoint"],
        talib: Some("MIDPOINT"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "midprice",
        title: "Midpoint price",
        family: "trend",
        aliases: &[],
        description: "(highest high + lowest low) / 2 over the last `period` bars.",
        inputs: HL,
        params: &[period(14.0, 2.0, "Look-back in bars.")],
        outputs: &["midprice"],
        talib: Some("MIDPRICE"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "ad",
        title: "Chaikin accumulation/distribution line",
        family: "volume",
        aliases: &["adl", "accumulation_distribution"],
        description: "Running sum of volume weighted by where the close sits in the bar's range.",
        inputs: HLCV,
        params: &[],
        outputs: &["ad"],
        talib: Some("AD"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "adosc",
        title: "Chaikin A/D oscillator",
        family: "volume",
        aliases: &["chaikin_oscillator"],
        description: "Fast EMA minus slow EMA of the accumulation/distribution line (both started at the first bar).",
        inputs: HLCV,
        params: &[
            int("fast", 3.0, 2.0, "Fast EMA period."),
            int("slow", 10.0, 2.0, "Slow EMA period."),
        ],
        outputs: &["adosc"],
        talib: Some("ADOSC"),
        warmup: "max(fast, slow) - 1 (9)",
    },
    IndicatorInfo {
        name: "ma",
        title: "Moving average (any type)",
        family: "trend",
        aliases: &["moving_average"],
        description: "Moving average of the closes of a TA-Lib matype (0 SMA, 1 EMA, 2 WMA, 3 DEMA, 4 TEMA, 5 TRIMA, 6 KAMA, 7 MAMA, 8 T3); period 1 copies the closes.",
        inputs: CLOSE,
        params: &[
            period(30.0, 1.0, "Moving-average period (not used by MAMA)."),
            matype_param("matype", MATYPES),
        ],
        outputs: &["ma"],
        talib: Some("MA"),
        warmup: "lookback of the matype: period - 1 for SMA/EMA/WMA/TRIMA, 2(period-1) DEMA, 3(period-1) TEMA, period KAMA, 32 MAMA, 6(period-1) T3 (29)",
    },
    IndicatorInfo {
        name: "macdext",
        title: "MACD with controllable moving-average types",
        family: "trend",
        aliases: &["macd_ext"],
        description: "Fast MA minus slow MA of the closes (each of its own TA-Lib matype, SMA by default), its signal MA and the histogram.",
        inputs: CLOSE,
        params: &[
            int(
                "fast",
                12.0,
                2.0,
                "Fast moving-average period (swapped with `slow` when longer).",
            ),
            matype_param("fast_matype", MATYPES),
            int("slow", 26.0, 2.0, "Slow moving-average period."),
            matype_param("slow_matype", MATYPES),
            int("signal", 9.0, 1.0, "Signal moving-average period."),
            matype_param("signal_matype", MATYPES),
        ],
        outputs: &["macd", "signal", "histogram"],
        talib: Some("MACDEXT"),
        warmup: "max(lookback fast, lookback slow) + lookback signal (33)",
    },
    IndicatorInfo {
        name: "mavp",
        title: "Moving average with variable period",
        family: "trend",
        aliases: &["variable_period_moving_average"],
        description: "Moving average of the closes whose period is read per bar from the bar's `volume` field (truncated, clamped to min_period..max_period).",
        inputs: &["close", "volume"],
        params: &[
            int("min_period", 2.0, 2.0, "Smallest period (at most `max_period`)."),
            int("max_period", 30.0, 2.0, "Largest period."),
            matype_param("matype", MATYPES),
        ],
        outputs: &["mavp"],
        talib: Some("MAVP"),
        warmup: "lookback of the matype with max_period (29)",
    },
    IndicatorInfo {
        name: "sarext",
        title: "Parabolic SAR (extended)",
        family: "trend",
        aliases: &["sar_ext", "psar_ext"],
        description: "Parabolic SAR with a start value, an offset on reversal and separate long/short acceleration factors; short positions are negative values.",
        inputs: HL,
        params: &[
            real(
                "start_value",
                0.0,
                -1.0e12,
                1.0e12,
                "0: direction from the first bars; > 0: start long at this SAR; < 0: start short at |value|.",
            ),
            real(
                "offset_on_reverse",
                0.0,
                0.0,
                3.0e37,
                "Fraction of the SAR added (to short) or removed (to long) on a reversal.",
            ),
            real(
                "acceleration_init_long",
                0.02,
                0.0,
                3.0e37,
                "Initial long factor (lowered to the maximum).",
            ),
            real(
                "acceleration_long",
                0.02,
                0.0,
                3.0e37,
                "Long factor step (lowered to the maximum).",
            ),
            real("acceleration_max_long", 0.2, 0.0, 3.0e37, "Long factor maximum."),
            real(
                "acceleration_init_short",
                0.02,
                0.0,
                3.0e37,
                "Initial short factor (lowered to the maximum).",
            ),
            real(
                "acceleration_short",
                0.02,
                0.0,
                3.0e37,
                "Short factor step (lowered to the maximum).",
            ),
            real("acceleration_max_short", 0.2, 0.0, 3.0e37, "Short factor maximum."),
        ],
        outputs: &["sarext"],
        talib: Some("SAREXT"),
        warmup: "1",
    },
    IndicatorInfo {
        name: "ht_trendline",
        title: "Hilbert transform instantaneous trendline",
        family: "trend",
        aliases: &["instantaneous_trendline"],
        description: "Ehlers' instantaneous trendline: the mean close over one dominant cycle (Hilbert-transform period), smoothed by a 4-bar WMA.",
        inputs: CLOSE,
        params: &[],
        outputs: &["ht_trendline"],
        talib: Some("HT_TRENDLINE"),
        warmup: "63",
    },
    IndicatorInfo {
        name: "ht_dcperiod",
        title: "Hilbert transform dominant cycle period",
        family: "cycle",
        aliases: &["dominant_cycle_period"],
        description: "Period in bars (6 to 50) of the dominant cycle of the closes, from Ehlers' Hilbert transform and homodyne discriminator.",
        inputs: CLOSE,
        params: &[],
        outputs: &["ht_dcperiod"],
        talib: Some("HT_DCPERIOD"),
        warmup: "32",
    },
    IndicatorInfo {
        name: "ht_dcphase",
        title: "Hilbert transform dominant cycle phase",
        family: "cycle",
        aliases: &["dominant_cycle_phase"],
        description: "Phase in degrees (-45 to 315) of the dominant cycle of the closes (Ehlers' Hilbert transform).",
        inputs: CLOSE,
        params: &[],
        outputs: &["ht_dcphase"],
        talib: Some("HT_DCPHASE"),
        warmup: "63",
    },
    IndicatorInfo {
        name: "ht_phasor",
        title: "Hilbert transform phasor components",
        family: "cycle",
        aliases: &["phasor"],
        description: "In-phase and quadrature components of the detrended closes (Ehlers' Hilbert transform).",
        inputs: CLOSE,
        params: &[],
        outputs: &["inphase", "quadrature"],
        talib: Some("HT_PHASOR"),
        warmup: "32",
    },
    IndicatorInfo {
        name: "ht_sine",
        title: "Hilbert transform sine wave",
        family: "cycle",
        aliases: &["sine_wave"],
        description: "Sine of the dominant cycle phase and the lead sine (phase + 45 degrees); their crossings mark cycle turns.",
        inputs: CLOSE,
        params: &[],
        outputs: &["sine", "leadsine"],
        talib: Some("HT_SINE"),
        warmup: "63",
    },
    IndicatorInfo {
        name: "ht_trendmode",
        title: "Hilbert transform trend vs cycle mode",
        family: "cycle",
        aliases: &["trend_mode"],
        description: "1 while the closes trend, 0 while they cycle (Ehlers' sine-wave crossings, phase rate and distance to the instantaneous trendline).",
        inputs: CLOSE,
        params: &[],
        outputs: &["ht_trendmode"],
        talib: Some("HT_TRENDMODE"),
        warmup: "63",
    },
    IndicatorInfo {
        name: "imi",
        title: "Intraday momentum index",
        family: "momentum",
        aliases: &["intraday_momentum_index"],
        description: "100 * up / (up + down) of the bar bodies (close - open) over the last `period` bars, 0 to 100 (50 where every body is empty, as TA-Lib).",
        inputs: OC,
        params: &[period(14.0, 2.0, "Number of bars.")],
        outputs: &["imi"],
        talib: Some("IMI"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "rma",
        title: "Wilder's moving average (RMA)",
        family: "trend",
        aliases: &["wilders_moving_average", "smma"],
        description: "Wilder's smoothing of the closes: seeded with the simple average, then (period - 1)/period of the previous value plus 1/period of the close.",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "Number of bars.")],
        outputs: &["rma"],
        talib: Some("RMA"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "hma",
        title: "Hull moving average",
        family: "trend",
        aliases: &["hull_moving_average"],
        description: "WMA over floor(sqrt(period)) bars of 2 WMA(period/2) - WMA(period): a fast, smooth average.",
        inputs: CLOSE,
        params: &[period(20.0, 1.0, "Number of bars.")],
        outputs: &["hma"],
        talib: Some("HMA"),
        warmup: "period - 1 + floor(sqrt(period)) - 1",
    },
    IndicatorInfo {
        name: "vwma",
        title: "Volume-weighted moving average",
        family: "trend",
        aliases: &["volume_weighted_moving_average"],
        description: "Sum of close * volume over sum of volume across the last `period` bars (null where the volume is 0).",
        inputs: CV,
        params: &[period(30.0, 1.0, "Number of bars.")],
        outputs: &["vwma"],
        talib: Some("VWMA"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "zlema",
        title: "Zero-lag exponential moving average",
        family: "trend",
        aliases: &["zero_lag_ema"],
        description: "EMA of 2 * close - close (period - 1)/2 bars back, which removes most of the EMA's lag.",
        inputs: CLOSE,
        params: &[period(30.0, 1.0, "Number of bars.")],
        outputs: &["zlema"],
        talib: Some("ZLEMA"),
        warmup: "(period - 1)/2 + period - 1",
    },
    IndicatorInfo {
        name: "dpo",
        title: "Detrended price oscillator",
        family: "momentum",
        aliases: &["detrended_price_oscillator"],
        description: "Close period/2 + 1 bars back minus the simple average of the last `period` closes.",
        inputs: CLOSE,
        params: &[period(20.0, 2.0, "Number of bars.")],
        outputs: &["dpo"],
        talib: Some("DPO"),
        warmup: "max(period - 1, period/2 + 1)",
    },
    IndicatorInfo {
        name: "qstick",
        title: "Qstick",
        family: "momentum",
        aliases: &["q_stick"],
        description: "Simple average of the bar bodies (close - open) over the last `period` bars.",
        inputs: OC,
        params: &[period(10.0, 1.0, "Number of bars.")],
        outputs: &["qstick"],
        talib: Some("QSTICK"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "ao",
        title: "Awesome oscillator",
        family: "momentum",
        aliases: &["awesome_oscillator"],
        description: "SMA(fast) - SMA(slow) of the median price (high + low)/2.",
        inputs: HL,
        params: &[
            int("fast", 5.0, 2.0, "Fast average period."),
            int("slow", 34.0, 2.0, "Slow average period."),
        ],
        outputs: &["ao"],
        talib: Some("AO"),
        warmup: "max(fast, slow) - 1",
    },
    IndicatorInfo {
        name: "ac",
        title: "Accelerator oscillator",
        family: "momentum",
        aliases: &["accelerator_oscillator"],
        description: "Awesome oscillator minus its simple average over `signal` bars.",
        inputs: HL,
        params: &[
            int("fast", 5.0, 2.0, "Fast average period."),
            int("slow", 34.0, 2.0, "Slow average period."),
            int("signal", 5.0, 2.0, "Signal average period."),
        ],
        outputs: &["ac"],
        talib: Some("AC"),
        warmup: "max(fast, slow) + signal - 2",
    },
    IndicatorInfo {
        name: "er",
        title: "Kaufman efficiency ratio",
        family: "momentum",
        aliases: &["efficiency_ratio"],
        description: "|close - close `period` bars back| over the sum of the absolute one-bar changes, 0 to 1 (1 on a flat window).",
        inputs: CLOSE,
        params: &[period(10.0, 2.0, "Number of bars.")],
        outputs: &["er"],
        talib: Some("ER"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "fosc",
        title: "Forecast oscillator",
        family: "momentum",
        aliases: &["forecast_oscillator"],
        description: "100 * (close - the previous bar's linear-regression forecast) / close.",
        inputs: CLOSE,
        params: &[period(5.0, 2.0, "Regression window in bars.")],
        outputs: &["fosc"],
        talib: Some("FOSC"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "vhf",
        title: "Vertical horizontal filter",
        family: "momentum",
        aliases: &["vertical_horizontal_filter"],
        description: "(highest - lowest close) over the sum of the absolute one-bar changes across the last `period` bars: high when trending.",
        inputs: CLOSE,
        params: &[period(28.0, 2.0, "Number of bars.")],
        outputs: &["vhf"],
        talib: Some("VHF"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "avgdev",
        title: "Average deviation",
        family: "price",
        aliases: &["average_deviation", "mean_absolute_deviation"],
        description: "Mean absolute deviation of the last `period` closes from their mean.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Number of bars.")],
        outputs: &["avgdev"],
        talib: Some("AVGDEV"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "adr",
        title: "Average daily range",
        family: "volatility",
        aliases: &["average_daily_range"],
        description: "Simple average of high - low over the last `period` bars.",
        inputs: HL,
        params: &[period(14.0, 1.0, "Number of bars.")],
        outputs: &["adr"],
        talib: Some("ADR"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "massi",
        title: "Mass index",
        family: "volatility",
        aliases: &["mass_index"],
        description: "Sum over `slow` bars of EMA(high - low, fast) / EMA(EMA(high - low, fast), fast); bulges flag reversals.",
        inputs: HL,
        params: &[
            int("fast", 9.0, 2.0, "EMA period."),
            int("slow", 25.0, 2.0, "Sum period."),
        ],
        outputs: &["massi"],
        talib: Some("MASSI"),
        warmup: "2 * (fast - 1) + slow - 1",
    },
    IndicatorInfo {
        name: "pvt",
        title: "Price-volume trend",
        family: "volume",
        aliases: &["price_volume_trend"],
        description: "Running sum of volume * relative close change, from 0.",
        inputs: CV,
        params: &[],
        outputs: &["pvt"],
        talib: Some("PVT"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "nvi",
        title: "Negative volume index",
        family: "volume",
        aliases: &["negative_volume_index"],
        description: "Index from 1000 that follows the close's relative change only on bars whose volume fell.",
        inputs: CV,
        params: &[],
        outputs: &["nvi"],
        talib: Some("NVI"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "pvi",
        title: "Positive volume index",
        family: "volume",
        aliases: &["positive_volume_index"],
        description: "Index from 1000 that follows the close's relative change only on bars whose volume rose.",
        inputs: CV,
        params: &[],
        outputs: &["pvi"],
        talib: Some("PVI"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "cmf",
        title: "Chaikin money flow",
        family: "volume",
        aliases: &["chaikin_money_flow"],
        description: "Sum of money flow volume ((close - low) - (high - close))/(high - low) * volume over the sum of volume, last `period` bars.",
        inputs: HLCV,
        params: &[period(20.0, 2.0, "Number of bars.")],
        outputs: &["cmf"],
        talib: Some("CMF"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "efi",
        title: "Elder force index",
        family: "volume",
        aliases: &["force_index", "elder_force_index"],
        description: "EMA of (close - previous close) * volume.",
        inputs: CV,
        params: &[period(13.0, 1.0, "EMA period.")],
        outputs: &["efi"],
        talib: Some("EFI"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "marketfi",
        title: "Market facilitation index",
        family: "volume",
        aliases: &["market_facilitation_index", "bw_mfi"],
        description: "(high - low) / volume of each bar (0 where the volume is 0).",
        inputs: HLV,
        params: &[],
        outputs: &["marketfi"],
        talib: Some("MARKETFI"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "accbands",
        title: "Acceleration bands",
        family: "trend",
        aliases: &["acceleration_bands"],
        description: "SMA of high * (1 + f) and of low * (1 - f), f = 4 (high - low)/(high + low), around the SMA of the closes.",
        inputs: HLC,
        params: &[period(20.0, 2.0, "Number of bars.")],
        outputs: BANDS,
        talib: Some("ACCBANDS"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "cmou",
        title: "Chande momentum oscillator (unsmoothed)",
        family: "momentum",
        aliases: &["cmo_unsmoothed"],
        description: "100 * (sum of gains - sum of losses)/(their total) over the last `period` one-bar changes, plain sums.",
        inputs: CLOSE,
        params: &[period(14.0, 2.0, "Number of bars.")],
        outputs: &["cmou"],
        talib: Some("CMOU"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "coppock",
        title: "Coppock curve",
        family: "momentum",
        aliases: &["coppock_curve"],
        description: "WMA over `wma` bars of ROC(roc1) + ROC(roc2) of the closes.",
        inputs: CLOSE,
        params: &[
            int("wma", 10.0, 1.0, "WMA period."),
            int("roc1", 11.0, 1.0, "First rate-of-change period."),
            int("roc2", 14.0, 1.0, "Second rate-of-change period."),
        ],
        outputs: &["coppock"],
        talib: Some("COPPOCK"),
        warmup: "max(roc1, roc2) + wma - 1",
    },
    IndicatorInfo {
        name: "eri",
        title: "Elder ray index",
        family: "momentum",
        aliases: &["elder_ray"],
        description: "Bull power high - EMA(close) and bear power low - EMA(close).",
        inputs: HLC,
        params: &[period(13.0, 1.0, "EMA period.")],
        outputs: &["bull", "bear"],
        talib: Some("ERI"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "tsi",
        title: "True strength index",
        family: "momentum",
        aliases: &["true_strength_index"],
        description: "100 * double-smoothed EMA of the one-bar change over the double-smoothed EMA of its absolute value.",
        inputs: CLOSE,
        params: &[
            int("first", 25.0, 2.0, "First EMA period."),
            int("second", 13.0, 2.0, "Second EMA period."),
        ],
        outputs: &["tsi"],
        talib: Some("TSI"),
        warmup: "first + second - 1",
    },
    IndicatorInfo {
        name: "vortex",
        title: "Vortex indicator",
        family: "momentum",
        aliases: &["vortex_indicator"],
        description: "VI+ = sum |high - previous low| / sum true range, VI- = sum |low - previous high| / sum true range over `period` bars.",
        inputs: HLC,
        params: &[period(14.0, 1.0, "Number of bars.")],
        outputs: &["plus_vi", "minus_vi"],
        talib: Some("VORTEX"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "wad",
        title: "Williams accumulation/distribution",
        family: "momentum",
        aliases: &["williams_ad"],
        description: "Running sum from 0 of close - min(low, previous close) on up bars and close - max(high, previous close) on down bars.",
        inputs: HLC,
        params: &[],
        outputs: &["wad"],
        talib: Some("WAD"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "ha",
        title: "Heikin-Ashi candles",
        family: "price",
        aliases: &["heikin_ashi"],
        description: "Heikin-Ashi open, high, low and close: close (O + H + L + C)/4, open the mean of the previous candle's open and close.",
        inputs: OHLC,
        params: &[],
        outputs: &["ha_open", "ha_high", "ha_low", "ha_close"],
        talib: Some("HA"),
        warmup: "0",
    },
    IndicatorInfo {
        name: "percentile",
        title: "Rolling percentile",
        family: "statistics",
        aliases: &["rolling_percentile"],
        description: "The nearest-rank `percentile` of the last `period` closes (no interpolation).",
        inputs: CLOSE,
        params: &[
            period(30.0, 2.0, "Number of bars."),
            real("percentile", 50.0, 0.0, 100.0, "Percentile, 0 to 100."),
        ],
        outputs: &["percentile"],
        talib: Some("PERCENTILE"),
        warmup: "period - 1",
    },
    IndicatorInfo {
        name: "percentrank",
        title: "Percent rank",
        family: "statistics",
        aliases: &["percent_rank"],
        description: "Percent of the previous `period` closes strictly below the current close.",
        inputs: CLOSE,
        params: &[period(100.0, 2.0, "Number of bars.")],
        outputs: &["percentrank"],
        talib: Some("PERCENTRANK"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "cvi",
        title: "Chaikin volatility",
        family: "volatility",
        aliases: &["chaikin_volatility"],
        description: "Rate of change over `roc` bars of the EMA of high - low.",
        inputs: HL,
        params: &[
            period(10.0, 2.0, "EMA period."),
            int("roc", 10.0, 1.0, "Rate-of-change period."),
        ],
        outputs: &["cvi"],
        talib: Some("CVI"),
        warmup: "period - 1 + roc",
    },
    IndicatorInfo {
        name: "rvi",
        title: "Relative volatility index",
        family: "volatility",
        aliases: &["relative_volatility_index"],
        description: "RSI-like 0-100 ratio of the standard deviation of the closes on up bars to that on all moving bars, Wilder-smoothed.",
        inputs: CLOSE,
        params: &[
            period(14.0, 1.0, "Smoothing period."),
            int("stddev", 10.0, 2.0, "Standard-deviation period."),
        ],
        outputs: &["rvi"],
        talib: Some("RVI"),
        warmup: "stddev - 1 + period - 1",
    },
    IndicatorInfo {
        name: "pvo",
        title: "Percentage volume oscillator",
        family: "volume",
        aliases: &["percentage_volume_oscillator"],
        description: "100 * (MA(volume, fast) - MA(volume, slow)) / MA(volume, slow).",
        inputs: VOLUME,
        params: &[
            int("fast", 12.0, 2.0, "Fast moving-average period."),
            int(
                "slow",
                26.0,
                2.0,
                "Slow moving-average period (swapped with `fast` when shorter).",
            ),
            ParamInfo {
                name: "matype",
                description: MATYPES,
                kind: ParamKind::Integer,
                default: Some(1.0),
                min: 0.0,
                max: 8.0,
            },
        ],
        outputs: &["pvo"],
        talib: Some("PVO"),
        warmup: "the slow MA's lookback",
    },
    IndicatorInfo {
        name: "rvol",
        title: "Relative volume",
        family: "volume",
        aliases: &["relative_volume"],
        description: "Volume over the average volume of the `period` bars before it (null where that average is 0).",
        inputs: VOLUME,
        params: &[period(20.0, 1.0, "Number of bars.")],
        outputs: &["rvol"],
        talib: Some("RVOL"),
        warmup: "period",
    },
    IndicatorInfo {
        name: "fractal",
        title: "Williams fractals",
        family: "momentum",
        aliases: &["williams_fractal", "swing_points"],
        description: "100 on the bar that confirms a swing high (swing_high) or low (swing_low): the bar `right` bars back has the highest high (lowest low) of the `left + 1 + right` bars, strictly; else 0.",
        inputs: HL,
        params: &[
            int("left", 2.0, 1.0, "Bars before the pivot."),
            int("right", 2.0, 1.0, "Bars after the pivot (the confirmation delay)."),
        ],
        outputs: &["swing_high", "swing_low"],
        talib: Some("FRACTAL"),
        warmup: "left + right",
    },
    IndicatorInfo {
        name: "kdj",
        title: "KDJ",
        family: "momentum",
        aliases: &["kdj_stochastic"],
        description: "Slow stochastic with Wilder-smoothed K and D (by default) and J = 3K - 2D.",
        inputs: HLC,
        params: &[
            int("fastk", 9.0, 1.0, "Fast %K window in bars."),
            int("slowk", 3.0, 1.0, "K smoothing period."),
            KDJ_MATYPE[0],
            int("slowd", 3.0, 1.0, "D smoothing period."),
            KDJ_MATYPE[1],
        ],
        outputs: &["k", "d", "j"],
        talib: Some("KDJ"),
        warmup: "fastk - 1 + the two averages' lookbacks",
    },
    IndicatorInfo {
        name: "smi",
        title: "Stochastic momentum index",
        family: "momentum",
        aliases: &["stochastic_momentum_index"],
        description: "100 * double-smoothed (close - midpoint of the `period`-bar range) over half the double-smoothed range, -100 to 100, with an EMA signal line.",
        inputs: HLC,
        params: &[
            period(13.0, 2.0, "High/low window in bars."),
            int("fast", 2.0, 2.0, "Second (fast) EMA period."),
            int("slow", 25.0, 2.0, "First (slow) EMA period."),
            int("signal", 9.0, 2.0, "Signal EMA period."),
        ],
        outputs: &["smi", "signal"],
        talib: Some("SMI"),
        warmup: "period + fast + slow + signal - 4",
    },
];

/// Every indicator, with its aliases, parameters (defaults and bounds) and outputs.
pub fn catalog() -> &'static [IndicatorInfo] {
    CATALOG
}

/// The outputs of the pseudo-indicator `price` of confluence conditions.
pub const PRICE_OUTPUTS: [&str; 4] = ["close", "open", "high", "low"];

/// JSON Schemas of the indicator choices an input may make, one per
/// indicator of the catalog (and the pseudo-indicator `price` with
/// `with_price`): an object whose `indicator` is the indicator's name or an
/// alias (lower case), whose `params` hold only its parameters, each with
/// its kind and bounds, and, with `with_output`, whose `output` is one of
/// its outputs or null. An input choosing an indicator is `oneOf` these (the
/// names are disjoint, so exactly one matches: as a `oneOf`, a generator
/// such as schemathesis need not multiply two choices in one object), so
/// its schema states what [`compute`] accepts.
pub fn choice_schemas(with_price: bool, with_output: bool) -> Vec<serde_json::Value> {
    use serde_json::{Value, json};
    let choice = |names: Vec<&str>, params: Value, outputs: &[&str]| {
        let mut properties = json!({
            "indicator": { "enum": names },
            "params": params,
        });
        if with_output {
            let mut values: Vec<Value> = outputs.iter().map(|o| json!(o)).collect();
            values.push(Value::Null);
            properties["output"] = json!({ "enum": values });
        }
        json!({ "properties": properties })
    };
    let mut out: Vec<Value> = CATALOG
        .iter()
        .map(|info| {
            let params: serde_json::Map<String, Value> = info
                .params
                .iter()
                .map(|p| {
                    let kind = match p.kind {
                        ParamKind::Real => "number",
                        ParamKind::Integer | ParamKind::Timestamp => "integer",
                    };
                    (
                        p.name.to_owned(),
                        json!({ "type": kind, "minimum": p.min, "maximum": p.max }),
                    )
                })
                .collect();
            let names = std::iter::once(info.name).chain(info.aliases.iter().copied()).collect();
            choice(
                names,
                json!({ "type": "object", "properties": params, "additionalProperties": false }),
                info.outputs,
            )
        })
        .collect();
    if with_price {
        out.push(choice(
            vec!["price"],
            json!({ "type": "object", "maxProperties": 0 }),
            &PRICE_OUTPUTS,
        ));
    }
    out
}

/// Checks an indicator choice exactly as [`choice_schemas`] states it (what
/// a client validating against the published schema is told): `indicator` is
/// a name or alias of the catalog as listed (lower case) or, with
/// `with_price`, `price`; `params` holds only the indicator's parameters
/// (none for `price`), each finite, whole for an integer or timestamp, and
/// within its bounds; `output`, when given, is one of the indicator's
/// outputs as listed. `field` prefixes the names in errors (`value.` for the
/// series on the right of a condition). [`find`] and [`compute`] are more
/// lenient (any case, `-` or spaces for `_`): an input whose schema makes a
/// choice is checked with this first.
///
/// # Errors
/// [`CoreError::InvalidParameter`] naming the field (`indicator`,
/// `params.<name>`, `output`, prefixed by `field`).
pub fn check_choice(
    field: &str,
    indicator: &str,
    params: &BTreeMap<String, f64>,
    output: Option<&str>,
    with_price: bool,
) -> Result<(), CoreError> {
    let named = |name: &str| format!("{field}{name}");
    let listed = |items: &[&str]| items.join(", ");
    let (params_allowed, outputs): (&[ParamInfo], &[&str]) = if with_price && indicator == "price" {
        (&[], &PRICE_OUTPUTS)
    } else {
        match CATALOG
            .iter()
            .find(|i| i.name == indicator || i.aliases.contains(&indicator))
        {
            Some(info) => (info.params, info.outputs),
            None => {
                let hint = find(indicator).map_or_else(String::new, |i| format!(" (did you mean `{}`?)", i.name));
                return Err(CoreError::param(
                    named("indicator"),
                    format!(
                        "unknown indicator `{indicator}`{hint}: a name or alias of list_indicators as listed (lower case){}",
                        if with_price { ", or `price`" } else { "" }
                    ),
                ));
            }
        }
    };
    for (key, value) in params {
        let Some(p) = params_allowed.iter().find(|p| p.name == key) else {
            let allowed: Vec<&str> = params_allowed.iter().map(|p| p.name).collect();
            return Err(CoreError::param(
                named(&format!("params.{key}")),
                format!(
                    "not a parameter of `{indicator}`; allowed: {}",
                    if allowed.is_empty() {
                        "none".to_owned()
                    } else {
                        listed(&allowed)
                    }
                ),
            ));
        };
        let whole = matches!(p.kind, ParamKind::Integer | ParamKind::Timestamp);
        if !value.is_finite() || (whole && value.fract() != 0.0) || *value < p.min || *value > p.max {
            return Err(CoreError::param(
                named(&format!("params.{key}")),
                format!(
                    "must be {} within [{}, {}], got {value}",
                    if whole { "a whole number" } else { "a number" },
                    p.min,
                    p.max
                ),
            ));
        }
    }
    if let Some(o) = output
        && !outputs.contains(&o)
    {
        return Err(CoreError::param(
            named("output"),
            format!(
                "unknown output `{o}` of `{indicator}`; one of: {} (or null)",
                listed(outputs)
            ),
        ));
    }
    Ok(())
}

fn normalise(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(['-', ' '], "_")
}

/// Looks an indicator up by name or alias (case-insensitive; `-` and spaces
/// count as `_`).
pub fn find(name: &str) -> Option<&'static IndicatorInfo> {
    let key = normalise(name);
    CATALOG
        .iter()
        .find(|i| i.name == key || i.aliases.iter().any(|a| *a == key))
}

/// Parameters resolved against an [`IndicatorInfo`].
struct Resolved(BTreeMap<String, f64>);

impl Resolved {
    fn new(info: &IndicatorInfo, given: &BTreeMap<String, f64>) -> Result<Self, CoreError> {
        let allowed: Vec<&str> = info.params.iter().map(|p| p.name).collect();
        for key in given.keys() {
            if !allowed.contains(&key.as_str()) {
                let list = if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                };
                return Err(CoreError::param(
                    key.as_str(),
                    format!("unknown parameter for `{}`; allowed: {list}", info.name),
                ));
            }
        }
        let mut out = BTreeMap::new();
        for p in info.params {
            let Some(value) = given.get(p.name).copied().or(p.default) else {
                continue;
            };
            if !value.is_finite() {
                return Err(CoreError::param(
                    p.name,
                    format!("must be a finite number, got {value}"),
                ));
            }
            if matches!(p.kind, ParamKind::Integer | ParamKind::Timestamp) && value.fract() != 0.0 {
                return Err(CoreError::param(p.name, format!("must be a whole number, got {value}")));
            }
            if value < p.min || value > p.max {
                return Err(CoreError::param(
                    p.name,
                    format!("must be within [{}, {}], got {value}", p.min, p.max),
                ));
            }
            out.insert(p.name.to_string(), value);
        }
        Ok(Self(out))
    }

    fn real(&self, name: &str) -> Result<f64, CoreError> {
        self.0
            .get(name)
            .copied()
            .ok_or_else(|| CoreError::param(name, "missing value"))
    }

    fn int(&self, name: &str) -> Result<usize, CoreError> {
        // Bounds were checked above: a whole number within [0, MAX_PERIOD].
        let v = self.real(name)?;
        if !(0.0..=MAXP).contains(&v) {
            return Err(CoreError::param(name, format!("out of range: {v}")));
        }
        Ok(v as usize)
    }
}

fn bands(s: BandsSeries) -> Vec<(&'static str, Vec<Option<f64>>)> {
    vec![("upper", s.upper), ("middle", s.middle), ("lower", s.lower)]
}

/// Runs the indicator called `name` (or one of its aliases) over `bars`.
///
/// `params` maps parameter names to values; absent keys take their
/// defaults (see [`catalog`]). Every output series is as long as `bars`,
/// with `None` during warm-up.
///
/// # Errors
///
/// - [`CoreError::InvalidParameter`] for an unknown indicator (the message
///   lists the known names), an unknown parameter key (the message lists the
///   allowed keys), a non-whole period or an out-of-bounds value.
/// - [`CoreError::InvalidInput`] for an empty series, a non-finite price or
///   volume, or (volume indicators) a negative volume.
///
/// # Example
///
/// ```
/// use std::collections::BTreeMap;
/// use tradeterm_core::Bar;
/// use tradeterm_core::indicators::compute;
///
/// let bars: Vec<Bar> = (0..30)
///     .map(|i| {
///         let c = 100.0 + (i % 5) as f64;
///         Bar { time: i * 60_000, open: c, high: c + 1.0, low: c - 1.0, close: c, volume: 10.0 }
///     })
///     .collect();
/// let params = BTreeMap::from([("period".to_string(), 10.0)]);
/// let out = compute("RSI", &params, &bars)?;
/// assert_eq!(out.indicator, "rsi");
/// assert_eq!(out.series[0].first_valid, Some(10));
/// assert!(compute("rsi", &BTreeMap::from([("length".to_string(), 3.0)]), &bars).is_err());
/// # Ok::<(), tradeterm_core::CoreError>(())
/// ```
pub fn compute(name: &str, params: &BTreeMap<String, f64>, bars: &[Bar]) -> Result<IndicatorOutput, CoreError> {
    let info = find(name).ok_or_else(|| {
        let names: Vec<&str> = CATALOG.iter().map(|i| i.name).collect();
        CoreError::param(
            "indicator",
            format!("unknown indicator `{name}`; known: {}", names.join(", ")),
        )
    })?;
    let p = Resolved::new(info, params)?;
    let series: Vec<(&'static str, Vec<Option<f64>>)> = match info.name {
        "sma" => vec![("sma", SimpleMovingAverage::new(p.int("period")?)?.over(bars)?)],
        "ema" => vec![("ema", ExponentialMovingAverage::new(p.int("period")?)?.over(bars)?)],
        "wma" => vec![("wma", WeightedMovingAverage::new(p.int("period")?)?.over(bars)?)],
        "macd" => {
            let s = MovingAverageConvergenceDivergence::new(p.int("fast")?, p.int("slow")?, p.int("signal")?)?
                .over(bars)?;
            vec![("macd", s.macd), ("signal", s.signal), ("histogram", s.histogram)]
        }
        "adx" => {
            let s = AverageDirectionalIndex::new(p.int("period")?)?.over(bars)?;
            vec![("adx", s.adx), ("plus_di", s.plus_di), ("minus_di", s.minus_di)]
        }
        "sar" => vec![(
            "sar",
            ParabolicSar::new(p.real("acceleration")?, p.real("maximum")?)?.over(bars)?,
        )],
        "ichimoku" => {
            let s = IchimokuCloud::new(
                p.int("tenkan")?,
                p.int("kijun")?,
                p.int("senkou_b")?,
                p.int("displacement")?,
            )?
            .over(bars)?;
            vec![
                ("tenkan", s.tenkan),
                ("kijun", s.kijun),
                ("senkou_a", s.senkou_a),
                ("senkou_b", s.senkou_b),
                ("chikou", s.chikou),
            ]
        }
        "supertrend" => {
            let s = SuperTrend::new(p.int("period")?, p.real("multiplier")?)?.over(bars)?;
            vec![("supertrend", s.value), ("direction", s.direction)]
        }
        "rsi" => vec![("rsi", RelativeStrengthIndex::new(p.int("period")?)?.over(bars)?)],
        "stoch" => {
            let s = StochasticOscillator::with_matypes(
                p.int("fastk")?,
                p.int("slowk")?,
                p.int("slowk_matype")?,
                p.int("slowd")?,
                p.int("slowd_matype")?,
            )?
            .over(bars)?;
            vec![("k", s.k), ("d", s.d)]
        }
        "willr" => vec![("willr", WilliamsPercentRange::new(p.int("period")?)?.over(bars)?)],
        "cci" => vec![("cci", CommodityChannelIndex::new(p.int("period")?)?.over(bars)?)],
        "mom" => vec![("mom", Momentum::new(p.int("period")?)?.over(bars)?)],
        "roc" => vec![("roc", RateOfChange::new(p.int("period")?)?.over(bars)?)],
        "atr" => vec![("atr", AverageTrueRange::new(p.int("period")?)?.over(bars)?)],
        "bbands" => bands(
            BollingerBands::with_matype(
                p.int("period")?,
                p.real("nbdev_up")?,
                p.real("nbdev_dn")?,
                p.int("matype")?,
            )?
            .over(bars)?,
        ),
        "stddev" => vec![(
            "stddev",
            StandardDeviation::new(p.int("period")?, p.real("nbdev")?)?.over(bars)?,
        )],
        "donchian" => bands(DonchianChannels::new(p.int("period")?)?.over(bars)?),
        "keltner" => {
            bands(KeltnerChannels::new(p.int("period")?, p.int("atr_period")?, p.real("multiplier")?)?.over(bars)?)
        }
        "obv" => vec![("obv", OnBalanceVolume::new().over(bars)?)],
        "mfi" => vec![("mfi", MoneyFlowIndex::new(p.int("period")?)?.over(bars)?)],
        "vwap" => {
            let anchor = match p.0.get("anchor") {
                Some(&t) => VwapAnchor::From(t as i64),
                None => VwapAnchor::DailyUtc,
            };
            vec![("vwap", VolumeWeightedAveragePrice::new(anchor).over(bars)?)]
        }
        "var" => vec![("var", Variance::new(p.int("period")?, p.real("nbdev")?)?.over(bars)?)],
        "linearreg" => vec![("linearreg", LinearRegressionValue::new(p.int("period")?)?.over(bars)?)],
        "linearreg_slope" => vec![(
            "linearreg_slope",
            LinearRegressionSlope::new(p.int("period")?)?.over(bars)?,
        )],
        "linearreg_intercept" => vec![(
            "linearreg_intercept",
            LinearRegressionIntercept::new(p.int("period")?)?.over(bars)?,
        )],
        "linearreg_angle" => vec![(
            "linearreg_angle",
            LinearRegressionAngle::new(p.int("period")?)?.over(bars)?,
        )],
        "tsf" => vec![("tsf", TimeSeriesForecast::new(p.int("period")?)?.over(bars)?)],
        "correl" => vec![("correl", PearsonCorrelation::new(p.int("period")?)?.over(bars)?)],
        "beta" => vec![("beta", Beta::new(p.int("period")?)?.over(bars)?)],
        "mama" => {
            let s = MesaAdaptiveMovingAverage::new(p.real("fastlimit")?, p.real("slowlimit")?)?.over(bars)?;
            vec![("mama", s.mama), ("fama", s.fama)]
        }
        "ht_trendline" => vec![("ht_trendline", HilbertTrendline::new().over(bars)?)],
        "ht_dcperiod" => vec![("ht_dcperiod", HilbertDominantCyclePeriod::new().over(bars)?)],
        "ht_dcphase" => vec![("ht_dcphase", HilbertDominantCyclePhase::new().over(bars)?)],
        "ht_phasor" => {
            let s = HilbertPhasor::new().over(bars)?;
            vec![("inphase", s.inphase), ("quadrature", s.quadrature)]
        }
        "ht_sine" => {
            let s = HilbertSineWave::new().over(bars)?;
            vec![("sine", s.sine), ("leadsine", s.leadsine)]
        }
        "ht_trendmode" => vec![("ht_trendmode", HilbertTrendMode::new().over(bars)?)],
        "imi" => vec![("imi", IntradayMomentumIndex::new(p.int("period")?)?.over(bars)?)],
        "rma" => vec![("rma", WildersMovingAverage::new(p.int("period")?)?.over(bars)?)],
        "hma" => vec![("hma", HullMovingAverage::new(p.int("period")?)?.over(bars)?)],
        "vwma" => vec![("vwma", VolumeWeightedMovingAverage::new(p.int("period")?)?.over(bars)?)],
        "zlema" => vec![(
            "zlema",
            ZeroLagExponentialMovingAverage::new(p.int("period")?)?.over(bars)?,
        )],
        "dpo" => vec![("dpo", DetrendedPriceOscillator::new(p.int("period")?)?.over(bars)?)],
        "qstick" => vec![("qstick", Qstick::new(p.int("period")?)?.over(bars)?)],
        "ao" => vec![(
            "ao",
            AwesomeOscillator::new(p.int("fast")?, p.int("slow")?)?.over(bars)?,
        )],
        "ac" => vec![(
            "ac",
            AcceleratorOscillator::new(p.int("fast")?, p.int("slow")?, p.int("signal")?)?.over(bars)?,
        )],
        "er" => vec![("er", EfficiencyRatio::new(p.int("period")?)?.over(bars)?)],
        "fosc" => vec![("fosc", ForecastOscillator::new(p.int("period")?)?.over(bars)?)],
        "vhf" => vec![("vhf", VerticalHorizontalFilter::new(p.int("period")?)?.over(bars)?)],
        "avgdev" => vec![("avgdev", AverageDeviation::new(p.int("period")?)?.over(bars)?)],
        "adr" => vec![("adr", AverageDailyRange::new(p.int("period")?)?.over(bars)?)],
        "massi" => vec![("massi", MassIndex::new(p.int("fast")?, p.int("slow")?)?.over(bars)?)],
        "pvt" => vec![("pvt", PriceVolumeTrend::new().over(bars)?)],
        "nvi" => vec![("nvi", NegativeVolumeIndex::new().over(bars)?)],
        "pvi" => vec![("pvi", PositiveVolumeIndex::new().over(bars)?)],
        "cmf" => vec![("cmf", ChaikinMoneyFlow::new(p.int("period")?)?.over(bars)?)],
        "efi" => vec![("efi", ElderForceIndex::new(p.int("period")?)?.over(bars)?)],
        "marketfi" => vec![("marketfi", MarketFacilitationIndex::new().over(bars)?)],
        "accbands" => bands(AccelerationBands::new(p.int("period")?)?.over(bars)?),
        "cmou" => vec![(
            "cmou",
            ChandeMomentumOscillatorUnsmoothed::new(p.int("period")?)?.over(bars)?,
        )],
        "coppock" => vec![(
            "coppock",
            CoppockCurve::new(p.int("wma")?, p.int("roc1")?, p.int("roc2")?)?.over(bars)?,
        )],
        "eri" => {
            let s = ElderRayIndex::new(p.int("period")?)?.over(bars)?;
            vec![("bull", s.bull), ("bear", s.bear)]
        }
        "tsi" => vec![(
            "tsi",
            TrueStrengthIndex::new(p.int("first")?, p.int("second")?)?.over(bars)?,
        )],
        "vortex" => {
            let s = Vortex::new(p.int("period")?)?.over(bars)?;
            vec![("plus_vi", s.plus), ("minus_vi", s.minus)]
        }
        "wad" => vec![("wad", WilliamsAccumulationDistribution::new().over(bars)?)],
        "ha" => {
            let s = HeikinAshi::new().over(bars)?;
            vec![
                ("ha_open", s.open),
                ("ha_high", s.high),
                ("ha_low", s.low),
                ("ha_close", s.close),
            ]
        }
        "percentile" => vec![(
            "percentile",
            RollingPercentile::new(p.int("period")?, p.real("percentile")?)?.over(bars)?,
        )],
        "percentrank" => vec![("percentrank", PercentRank::new(p.int("period")?)?.over(bars)?)],
        "cvi" => vec![(
            "cvi",
            ChaikinVolatility::new(p.int("period")?, p.int("roc")?)?.over(bars)?,
        )],
        "rvi" => vec![(
            "rvi",
            RelativeVolatilityIndex::new(p.int("period")?, p.int("stddev")?)?.over(bars)?,
        )],
        "pvo" => vec![(
            "pvo",
            PercentageVolumeOscillator::new(p.int("fast")?, p.int("slow")?, p.int("matype")?)?.over(bars)?,
        )],
        "rvol" => vec![("rvol", RelativeVolume::new(p.int("period")?)?.over(bars)?)],
        "kdj" => {
            let s = Kdj::new(
                p.int("fastk")?,
                p.int("slowk")?,
                p.int("slowk_matype")?,
                p.int("slowd")?,
                p.int("slowd_matype")?,
            )?
            .over(bars)?;
            vec![("k", s.k), ("d", s.d), ("j", s.j)]
        }
        "smi" => {
            let s = StochasticMomentumIndex::new(p.int("period")?, p.int("fast")?, p.int("slow")?, p.int("signal")?)?
                .over(bars)?;
            vec![("smi", s.smi), ("signal", s.signal)]
        }
        "fractal" => {
            let s = Fractal::new(p.int("left")?, p.int("right")?)?.over(bars)?;
            vec![("swing_high", s.swing_high), ("swing_low", s.swing_low)]
        }
        "dema" => vec![(
            "dema",
            DoubleExponentialMovingAverage::new(p.int("period")?)?.over(bars)?,
        )],
        "tema" => vec![(
            "tema",
            TripleExponentialMovingAverage::new(p.int("period")?)?.over(bars)?,
        )],
        "trima" => vec![("trima", TriangularMovingAverage::new(p.int("period")?)?.over(bars)?)],
        "kama" => vec![("kama", KaufmanAdaptiveMovingAverage::new(p.int("period")?)?.over(bars)?)],
        "t3" => vec![(
            "t3",
            T3MovingAverage::new(p.int("period")?, p.real("vfactor")?)?.over(bars)?,
        )],
        "trix" => vec![("trix", Trix::new(p.int("period")?)?.over(bars)?)],
        "apo" => vec![(
            "apo",
            AbsolutePriceOscillator::new(p.int("fast")?, p.int("slow")?, p.int("matype")?)?.over(bars)?,
        )],
        "ppo" => vec![(
            "ppo",
            PercentagePriceOscillator::new(p.int("fast")?, p.int("slow")?, p.int("matype")?)?.over(bars)?,
        )],
        "macdfix" => {
            let s = MovingAverageConvergenceDivergenceFixed::new(p.int("signal")?)?.over(bars)?;
            vec![("macd", s.macd), ("signal", s.signal), ("histogram", s.histogram)]
        }
        "plus_dm" => vec![("plus_dm", PlusDirectionalMovement::new(p.int("period")?)?.over(bars)?)],
        "minus_dm" => vec![("minus_dm", MinusDirectionalMovement::new(p.int("period")?)?.over(bars)?)],
        "plus_di" => vec![("plus_di", PlusDirectionalIndicator::new(p.int("period")?)?.over(bars)?)],
        "minus_di" => vec![(
            "minus_di",
            MinusDirectionalIndicator::new(p.int("period")?)?.over(bars)?,
        )],
        "dx" => vec![("dx", DirectionalMovementIndex::new(p.int("period")?)?.over(bars)?)],
        "adxr" => vec![(
            "adxr",
            AverageDirectionalIndexRating::new(p.int("period")?)?.over(bars)?,
        )],
        "aroon" => {
            let s = Aroon::new(p.int("period")?)?.over(bars)?;
            vec![("down", s.down), ("up", s.up)]
        }
        "aroonosc" => vec![("aroonosc", AroonOscillator::new(p.int("period")?)?.over(bars)?)],
        "ultosc" => vec![(
            "ultosc",
            UltimateOscillator::new(p.int("period1")?, p.int("period2")?, p.int("period3")?)?.over(bars)?,
        )],
        "stochf" => {
            let s =
                FastStochastic::with_matype(p.int("fastk")?, p.int("fastd")?, p.int("fastd_matype")?)?.over(bars)?;
            vec![("k", s.k), ("d", s.d)]
        }
        "stochrsi" => {
            let s = StochasticRsi::with_matype(
                p.int("period")?,
                p.int("fastk")?,
                p.int("fastd")?,
                p.int("fastd_matype")?,
            )?
            .over(bars)?;
            vec![("k", s.k), ("d", s.d)]
        }
        "avgprice" => vec![("avgprice", AveragePrice::new().over(bars)?)],
        "medprice" => vec![("medprice", MedianPrice::new().over(bars)?)],
        "typprice" => vec![("typprice", TypicalPrice::new().over(bars)?)],
        "wclprice" => vec![("wclprice", WeightedClosePrice::new().over(bars)?)],
        "trange" => vec![("trange", TrueRange::new().over(bars)?)],
        "natr" => vec![("natr", NormalizedAverageTrueRange::new(p.int("period")?)?.over(bars)?)],
        "rocp" => vec![("rocp", RateOfChangePercentage::new(p.int("period")?)?.over(bars)?)],
        "rocr" => vec![("rocr", RateOfChangeRatio::new(p.int("period")?)?.over(bars)?)],
        "rocr100" => vec![("rocr100", RateOfChangeRatio100::new(p.int("period")?)?.over(bars)?)],
        "bop" => vec![("bop", BalanceOfPower::new().over(bars)?)],
        "cmo" => vec![("cmo", ChandeMomentumOscillator::new(p.int("period")?)?.over(bars)?)],
        "midpoint" => vec![("midpoint", Midpoint::new(p.int("period")?)?.over(bars)?)],
        "midprice" => vec![("midprice", MidpointPrice::new(p.int("period")?)?.over(bars)?)],
        "ad" => vec![("ad", AccumulationDistribution::new().over(bars)?)],
        "adosc" => vec![(
            "adosc",
            ChaikinOscillator::new(p.int("fast")?, p.int("slow")?)?.over(bars)?,
        )],
        "ma" => vec![(
            "ma",
            AnyMovingAverage::new(p.int("period")?, p.int("matype")?)?.over(bars)?,
        )],
        "macdext" => {
            let s = MovingAverageConvergenceDivergenceExt::new(
                p.int("fast")?,
                p.int("fast_matype")?,
                p.int("slow")?,
                p.int("slow_matype")?,
                p.int("signal")?,
                p.int("signal_matype")?,
            )?
            .over(bars)?;
            vec![("macd", s.macd), ("signal", s.signal), ("histogram", s.histogram)]
        }
        "mavp" => vec![(
            "mavp",
            VariablePeriodMovingAverage::new(p.int("min_period")?, p.int("max_period")?, p.int("matype")?)?
                .over(bars)?,
        )],
        "sarext" => vec![(
            "sarext",
            ParabolicSarExtended::new(
                p.real("start_value")?,
                p.real("offset_on_reverse")?,
                p.real("acceleration_init_long")?,
                p.real("acceleration_long")?,
                p.real("acceleration_max_long")?,
                p.real("acceleration_init_short")?,
                p.real("acceleration_short")?,
                p.real("acceleration_max_short")?,
            )?
            .over(bars)?,
        )],
        other => {
            return Err(CoreError::param(
                "indicator",
                format!("`{other}` is catalogued but not implemented"),
            ));
        }
    };
    Ok(IndicatorOutput {
        indicator: info.name.to_string(),
        params: p.0,
        series: series
            .into_iter()
            .map(|(name, values)| OutputSeries {
                name: name.to_string(),
                first_valid: values.iter().position(Option::is_some),
                values,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars(n: usize) -> Vec<Bar> {
        (0..n)
            .map(|i| {
                let c = 100.0 + ((i * 37) % 11) as f64 - 5.0 + i as f64 * 0.1;
                Bar {
                    time: 1_700_000_000_000 + i as i64 * 3_600_000,
                    open: c,
                    high: c + 1.5,
                    low: c - 1.25,
                    close: c + 0.25,
                    volume: 100.0 + (i % 7) as f64,
                }
            })
            .collect()
    }

    #[test]
    fn every_catalog_entry_computes_with_defaults() {
        let b = bars(120);
        for info in catalog() {
            let out = compute(info.name, &BTreeMap::new(), &b).unwrap();
            let names: Vec<&str> = out.series.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, info.outputs, "{}", info.name);
            for s in &out.series {
                assert_eq!(s.values.len(), b.len(), "{}", info.name);
                assert!(s.first_valid.is_some(), "{} {}", info.name, s.name);
            }
            for alias in info.aliases {
                assert_eq!(find(alias).map(|i| i.name), Some(info.name));
            }
            for p in info.params {
                if let Some(d) = p.default {
                    assert!(d >= p.min && d <= p.max, "{} {}", info.name, p.name);
                }
                // Just below the minimum is refused by the catalog and the constructor alike.
                let below = if p.kind == ParamKind::Real {
                    p.min - 1e-3
                } else {
                    p.min - 1.0
                };
                let err = compute(info.name, &BTreeMap::from([(p.name.to_string(), below)]), &b);
                assert!(err.is_err(), "{} {} {below}", info.name, p.name);
            }
        }
    }

    #[test]
    fn names_are_unique() {
        let mut all: Vec<&str> = Vec::new();
        for info in catalog() {
            all.push(info.name);
            all.extend(info.aliases.iter().copied());
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
    }

    #[test]
    fn clear_errors() {
        let b = bars(50);
        let err = compute("nope", &BTreeMap::new(), &b).unwrap_err().to_string();
        assert!(err.contains("rsi") && err.contains("nope"), "{err}");
        let err = compute("rsi", &BTreeMap::from([("length".into(), 3.0)]), &b)
            .unwrap_err()
            .to_string();
        assert!(err.contains("length") && err.contains("period"), "{err}");
        let err = compute("obv", &BTreeMap::from([("period".into(), 3.0)]), &b)
            .unwrap_err()
            .to_string();
        assert!(err.contains("none"), "{err}");
        assert!(compute("rsi", &BTreeMap::from([("period".into(), 2.5)]), &b).is_err());
        assert!(compute("rsi", &BTreeMap::from([("period".into(), f64::NAN)]), &b).is_err());
        assert!(compute("rsi", &BTreeMap::from([("period".into(), 10_001.0)]), &b).is_err());
        assert!(compute("rsi", &BTreeMap::new(), &[]).is_err());
        assert!(compute("Bollinger-Bands", &BTreeMap::new(), &b).is_ok());
        let out = compute("vwap", &BTreeMap::from([("anchor".into(), b[10].time as f64)]), &b).unwrap();
        assert_eq!(out.series[0].first_valid, Some(10));
        let long = compute("sma", &BTreeMap::from([("period".into(), 500.0)]), &b).unwrap();
        assert_eq!(long.series[0].first_valid, None);
    }
}
