//! Property tests of the indicator contract:
//!
//! - streaming equals batch, value for value, for every indicator on random
//!   valid bar series (and `is_ready()` is true exactly when `next` returned a value);
//! - `reset()` makes an indicator behave as freshly built;
//! - every batch output (through `compute`) is as long as its input;
//! - random parameters, including absurd ones, never panic: they are accepted
//!   or refused with an error.

use std::collections::BTreeMap;
use std::fmt::Debug;

use proptest::prelude::*;
use tradeterm_core::Bar;
use tradeterm_core::indicators::*;

/// Random valid bars: a random walk with consistent OHLC, non-negative
/// volume (sometimes zero) and increasing times with gaps that cross UTC days.
fn bars_strategy(max_len: usize) -> impl Strategy<Value = Vec<Bar>> {
    (
        1.0e-3f64..1.0e5,
        prop::collection::vec(
            (-1.0f64..1.0, 0.0f64..1.0, 0.0f64..1.0, -1.0f64..1.0, 0u8..4, 1i64..30),
            1..max_len,
        ),
    )
        .prop_map(|(start, steps)| {
            let mut price = start;
            let mut time = 1_600_000_000_000i64;
            steps
                .into_iter()
                .map(|(step, up, down, close_at, vol_kind, gap)| {
                    let scale = price * 0.01;
                    let open = price;
                    let close = (price + step * scale).max(start * 1e-3);
                    let high = open.max(close) + up * scale;
                    let low = (open.min(close) - down * scale).max(0.0);
                    let close = if close_at > 0.8 {
                        high
                    } else if close_at < -0.8 {
                        low
                    } else {
                        close
                    };
                    price = close;
                    time += gap * 900_000;
                    let volume = match vol_kind {
                        0 => 0.0,
                        1 => 1.0,
                        _ => (up + down) * 1000.0,
                    };
                    Bar {
                        time,
                        open,
                        high,
                        low,
                        close,
                        volume,
                    }
                })
                .collect()
        })
}

/// Feeds `bars` one by one, checking `is_ready()` after every step.
fn stream<T, O>(mut ind: T, bars: &[Bar]) -> Vec<Option<O>>
where
    T: for<'a> Next<&'a Bar> + Indicator<Output = O>,
{
    bars.iter()
        .map(|b| {
            let out = ind.next(b);
            assert_eq!(ind.is_ready(), out.is_some(), "is_ready disagrees with next()");
            out
        })
        .collect()
}

/// Feeds closes as plain values through `Next<f64>`.
fn stream_values<T>(mut ind: T, bars: &[Bar]) -> Vec<Option<T::Output>>
where
    T: Next<f64>,
{
    bars.iter()
        .map(|b| {
            let out = ind.next(b.close);
            assert_eq!(ind.is_ready(), out.is_some());
            out
        })
        .collect()
}

/// The columns of a bar series, for the column forms.
struct Columns {
    open: Vec<f64>,
    high: Vec<f64>,
    low: Vec<f64>,
    close: Vec<f64>,
    volume: Vec<f64>,
}

impl Columns {
    fn of(bars: &[Bar]) -> Self {
        Self {
            open: bars.iter().map(|b| b.open).collect(),
            high: bars.iter().map(|b| b.high).collect(),
            low: bars.iter().map(|b| b.low).collect(),
            close: bars.iter().map(|b| b.close).collect(),
            volume: bars.iter().map(|b| b.volume).collect(),
        }
    }
}

/// A column form's output (NaN during warm-up) as the bar form's (`None`).
fn opt(values: &[f64]) -> Vec<Option<f64>> {
    values
        .iter()
        .map(|v| if v.is_nan() { None } else { Some(*v) })
        .collect()
}

fn same<T: PartialEq + Debug>(name: &str, a: &[T], b: &[T]) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.len(), b.len(), "{}: length", name);
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        prop_assert_eq!(x, y, "{} differs at {}", name, i);
    }
    Ok(())
}

fn field<O: Copy, F: Fn(O) -> Option<f64>>(outs: &[Option<O>], f: F) -> Vec<Option<f64>> {
    outs.iter().map(|o| o.and_then(&f)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn streaming_equals_batch_single_output(
        bars in bars_strategy(160),
        p in 1usize..40,
        q in 2usize..40,
    ) {
        let sma = SimpleMovingAverage::new(p).unwrap();
        same("sma", &sma.over(&bars).unwrap(), &stream_values(sma.clone(), &bars))?;
        same("sma/bar", &sma.over(&bars).unwrap(), &stream(sma, &bars))?;
        let ema = ExponentialMovingAverage::new(p).unwrap();
        same("ema", &ema.over(&bars).unwrap(), &stream_values(ema, &bars))?;
        let wma = WeightedMovingAverage::new(p).unwrap();
        same("wma", &wma.over(&bars).unwrap(), &stream_values(wma, &bars))?;
        let rsi = RelativeStrengthIndex::new(q).unwrap();
        same("rsi", &rsi.over(&bars).unwrap(), &stream_values(rsi, &bars))?;
        let mom = Momentum::new(p).unwrap();
        same("mom", &mom.over(&bars).unwrap(), &stream_values(mom, &bars))?;
        let roc = RateOfChange::new(p).unwrap();
        same("roc", &roc.over(&bars).unwrap(), &stream_values(roc, &bars))?;
        let sd = StandardDeviation::new(q, 1.5).unwrap();
        same("stddev", &sd.over(&bars).unwrap(), &stream_values(sd, &bars))?;
        let atr = AverageTrueRange::new(p).unwrap();
        same("atr", &atr.over(&bars).unwrap(), &stream(atr, &bars))?;
        let willr = WilliamsPercentRange::new(q).unwrap();
        same("willr", &willr.over(&bars).unwrap(), &stream(willr, &bars))?;
        let cci = CommodityChannelIndex::new(q).unwrap();
        same("cci", &cci.over(&bars).unwrap(), &stream(cci, &bars))?;
        let mfi = MoneyFlowIndex::new(q).unwrap();
        same("mfi", &mfi.over(&bars).unwrap(), &stream(mfi, &bars))?;
        let obv = OnBalanceVolume::new();
        same("obv", &obv.over(&bars).unwrap(), &stream(obv, &bars))?;
        let sar = ParabolicSar::new(0.01 * (p as f64 % 5.0 + 1.0), 0.2).unwrap();
        same("sar", &sar.over(&bars).unwrap(), &stream(sar, &bars))?;
        let daily = VolumeWeightedAveragePrice::new(VwapAnchor::DailyUtc);
        same("vwap", &daily.over(&bars).unwrap(), &stream(daily, &bars))?;
        let anchor = bars[bars.len() / 2].time;
        let anchored = VolumeWeightedAveragePrice::new(VwapAnchor::From(anchor));
        same("vwap/anchored", &anchored.over(&bars).unwrap(), &stream(anchored, &bars))?;
    }

    #[test]
    fn streaming_equals_batch_multi_output(
        bars in bars_strategy(160),
        a in 2usize..20,
        b in 2usize..30,
        c in 1usize..12,
        m in 0.0f64..5.0,
    ) {
        let (fast, slow) = (a.min(b), a.max(b));
        let macd = MovingAverageConvergenceDivergence::new(fast, slow, c).unwrap();
        let batch = macd.over(&bars).unwrap();
        let outs = stream_values(macd, &bars);
        same("macd", &batch.macd, &field(&outs, |o| Some(o.macd)))?;
        same("macd.signal", &batch.signal, &field(&outs, |o| Some(o.signal)))?;
        same("macd.hist", &batch.histogram, &field(&outs, |o| Some(o.histogram)))?;

        let bb = BollingerBands::new(b, m, 5.0 - m).unwrap();
        let batch = bb.over(&bars).unwrap();
        let outs = stream_values(bb, &bars);
        same("bb.upper", &batch.upper, &field(&outs, |o| Some(o.upper)))?;
        same("bb.middle", &batch.middle, &field(&outs, |o| Some(o.middle)))?;
        same("bb.lower", &batch.lower, &field(&outs, |o| Some(o.lower)))?;

        let stoch = StochasticOscillator::new(b, c, a).unwrap();
        let batch = stoch.over(&bars).unwrap();
        let outs = stream(stoch, &bars);
        same("stoch.k", &batch.k, &field(&outs, |o| Some(o.k)))?;
        same("stoch.d", &batch.d, &field(&outs, |o| Some(o.d)))?;

        let adx = AverageDirectionalIndex::new(a).unwrap();
        let batch = adx.over(&bars).unwrap();
        let outs = stream(adx, &bars);
        same("adx", &batch.adx, &field(&outs, |o| o.adx))?;
        same("adx.plus_di", &batch.plus_di, &field(&outs, |o| Some(o.plus_di)))?;
        same("adx.minus_di", &batch.minus_di, &field(&outs, |o| Some(o.minus_di)))?;

        let dc = DonchianChannels::new(b).unwrap();
        let batch = dc.over(&bars).unwrap();
        let outs = stream(dc, &bars);
        same("dc.upper", &batch.upper, &field(&outs, |o| Some(o.upper)))?;
        same("dc.lower", &batch.lower, &field(&outs, |o| Some(o.lower)))?;

        let kc = KeltnerChannels::new(b, c, m).unwrap();
        let batch = kc.over(&bars).unwrap();
        let outs = stream(kc, &bars);
        same("kc.upper", &batch.upper, &field(&outs, |o| Some(o.upper)))?;
        same("kc.middle", &batch.middle, &field(&outs, |o| Some(o.middle)))?;
        same("kc.lower", &batch.lower, &field(&outs, |o| Some(o.lower)))?;

        let st = SuperTrend::new(b, m).unwrap();
        let batch = st.over(&bars).unwrap();
        let outs = stream(st, &bars);
        same("supertrend", &batch.value, &field(&outs, |o| Some(o.value)))?;
        same("supertrend.dir", &batch.direction, &field(&outs, |o| Some(f64::from(o.direction))))?;

        let ichi = IchimokuCloud::new(a, b, b + c, c).unwrap();
        let batch = ichi.over(&bars).unwrap();
        let outs = stream(ichi, &bars);
        same("ichimoku.tenkan", &batch.tenkan, &field(&outs, |o| o.tenkan))?;
        same("ichimoku.kijun", &batch.kijun, &field(&outs, |o| o.kijun))?;
        same("ichimoku.senkou_a", &batch.senkou_a, &field(&outs, |o| o.senkou_a))?;
        same("ichimoku.senkou_b", &batch.senkou_b, &field(&outs, |o| o.senkou_b))?;
        // The spans computed now are the ones plotted `displacement` bars later.
        let ahead = field(&outs, |o| o.senkou_a_ahead);
        for (i, v) in batch.senkou_a.iter().enumerate().skip(c) {
            prop_assert_eq!(*v, ahead[i - c]);
        }
        for (i, v) in batch.chikou.iter().enumerate() {
            prop_assert_eq!(*v, bars.get(i + c).map(|b| b.close));
        }
    }

    /// The TA-Lib functions added for issue 33: streaming equals batch, and
    /// the column form equals the bar form.
    #[test]
    fn streaming_equals_batch_talib_functions(
        bars in bars_strategy(160),
        p in 1usize..40,
        q in 2usize..40,
        r in 2usize..15,
    ) {
        let cols = Columns::of(&bars);
        let (o, h, l, c, v) = (&cols.open[..], &cols.high[..], &cols.low[..], &cols.close[..], &cols.volume[..]);

        let ind = AveragePrice::new();
        same("avgprice", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        same("avgprice/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(o, h, l, c).unwrap()))?;
        let ind = MedianPrice::new();
        same("medprice", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        same("medprice/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l).unwrap()))?;
        let ind = TypicalPrice::new();
        same("typprice", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        same("typprice/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c).unwrap()))?;
        let ind = WeightedClosePrice::new();
        same("wclprice", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        same("wclprice/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c).unwrap()))?;
        let ind = TrueRange::new();
        same("trange", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("trange/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c).unwrap()))?;
        let ind = NormalizedAverageTrueRange::new(p).unwrap();
        same("natr", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("natr/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c).unwrap()))?;
        let ind = RateOfChangePercentage::new(p).unwrap();
        same("rocp", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
        same("rocp/col", &ind.over(&bars).unwrap(), &ind.over_values(c).unwrap())?;
        let ind = RateOfChangeRatio::new(p).unwrap();
        same("rocr", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
        let ind = RateOfChangeRatio100::new(p).unwrap();
        same("rocr100", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
        let ind = BalanceOfPower::new();
        same("bop", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        same("bop/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(o, h, l, c).unwrap()))?;
        let ind = ChandeMomentumOscillator::new(q).unwrap();
        same("cmo", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
        same("cmo/bar", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        let ind = Midpoint::new(q).unwrap();
        same("midpoint", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
        let ind = MidpointPrice::new(q).unwrap();
        same("midprice", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("midprice/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l).unwrap()))?;
        let ind = AccumulationDistribution::new();
        same("ad", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("ad/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c, v).unwrap()))?;
        let ind = ChaikinOscillator::new(r, q).unwrap();
        same("adosc", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("adosc/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c, v).unwrap()))?;

        let ind = PlusDirectionalMovement::new(p).unwrap();
        same("plus_dm", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("plus_dm/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l).unwrap()))?;
        let ind = MinusDirectionalMovement::new(p).unwrap();
        same("minus_dm", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        let ind = PlusDirectionalIndicator::new(p).unwrap();
        same("plus_di", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("plus_di/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c).unwrap()))?;
        let ind = MinusDirectionalIndicator::new(p).unwrap();
        same("minus_di", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        let ind = DirectionalMovementIndex::new(q).unwrap();
        same("dx", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("dx/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c).unwrap()))?;
        let ind = AverageDirectionalIndexRating::new(r).unwrap();
        same("adxr", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("adxr/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c).unwrap()))?;
        let ind = Aroon::new(q).unwrap();
        let batch = ind.over(&bars).unwrap();
        let outs = stream(ind.clone(), &bars);
        same("aroon.down", &batch.down, &field(&outs, |o| Some(o.down)))?;
        same("aroon.up", &batch.up, &field(&outs, |o| Some(o.up)))?;
        prop_assert_eq!(&ind.over_columns(h, l).unwrap(), &batch);
        let ind = AroonOscillator::new(q).unwrap();
        same("aroonosc", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("aroonosc/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l).unwrap()))?;
        let ind = UltimateOscillator::new(p, r, q).unwrap();
        same("ultosc", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("ultosc/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l, c).unwrap()))?;
        let ind = FastStochastic::new(q, r).unwrap();
        let batch = ind.over(&bars).unwrap();
        let outs = stream(ind.clone(), &bars);
        same("stochf.k", &batch.k, &field(&outs, |o| Some(o.k)))?;
        same("stochf.d", &batch.d, &field(&outs, |o| Some(o.d)))?;
        prop_assert_eq!(&ind.over_columns(h, l, c).unwrap(), &batch);
        for matype in [1, 3, 6, 7] {
            let ind = FastStochastic::with_matype(q, r, matype).unwrap();
            let batch = ind.over(&bars).unwrap();
            let outs = stream(ind, &bars);
            same("stochf.d/matype", &batch.d, &field(&outs, |o| Some(o.d)))?;
            let ind = StochasticRsi::with_matype(q, r, p % 5 + 1, matype).unwrap();
            let batch = ind.over(&bars).unwrap();
            let outs = stream_values(ind, &bars);
            same("stochrsi.d/matype", &batch.d, &field(&outs, |o| Some(o.d)))?;
        }
        for (km, dm) in [(1, 0), (2, 6), (7, 8)] {
            let ind = StochasticOscillator::with_matypes(q, r, km, p % 5 + 1, dm).unwrap();
            let batch = ind.over(&bars).unwrap();
            let outs = stream(ind, &bars);
            same("stoch.k/matype", &batch.k, &field(&outs, |o| Some(o.k)))?;
            same("stoch.d/matype", &batch.d, &field(&outs, |o| Some(o.d)))?;
        }
        let ind = StochasticRsi::new(q, r, p % 5 + 1).unwrap();
        let batch = ind.over(&bars).unwrap();
        let outs = stream_values(ind.clone(), &bars);
        same("stochrsi.k", &batch.k, &field(&outs, |o| Some(o.k)))?;
        same("stochrsi.d", &batch.d, &field(&outs, |o| Some(o.d)))?;
        prop_assert_eq!(&ind.over_values(c).unwrap(), &batch);

        let ind = DoubleExponentialMovingAverage::new(p).unwrap();
        same("dema", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
        same("dema/col", &ind.over(&bars).unwrap(), &ind.over_values(c).unwrap())?;
        let ind = TripleExponentialMovingAverage::new(p).unwrap();
        same("tema", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
        let ind = TriangularMovingAverage::new(p).unwrap();
        same("trima", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
        same("trima/bar", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        let ind = KaufmanAdaptiveMovingAverage::new(p).unwrap();
        same("kama", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
        let ind = T3MovingAverage::new(r, (p % 11) as f64 / 10.0).unwrap();
        same("t3", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
        let ind = Trix::new(r).unwrap();
        same("trix", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
        for matype in [0, 1, 2, 3, 4, 5, 6, 7, 8] {
            let ind = AbsolutePriceOscillator::new(r, q, matype).unwrap();
            same("apo", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
            let ind = PercentagePriceOscillator::new(q, r, matype).unwrap();
            same("ppo", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
        }
        let ind = MesaAdaptiveMovingAverage::new(0.01 + (p % 9) as f64 * 0.1, 0.05).unwrap();
        let batch = ind.over(&bars).unwrap();
        let outs = stream_values(ind.clone(), &bars);
        same("mama", &batch.mama, &field(&outs, |o| Some(o.mama)))?;
        same("mama.fama", &batch.fama, &field(&outs, |o| Some(o.fama)))?;
        prop_assert_eq!(&ind.over_values(c).unwrap(), &batch);
        // The Hilbert-transform functions and IMI (bars up to 160: past the 63-bar warm-up).
        let ind = HilbertTrendline::new();
        same("ht_trendline", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
        same("ht_trendline/bar", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("ht_trendline/col", &ind.over(&bars).unwrap(), &ind.over_values(c).unwrap())?;
        let ind = HilbertDominantCyclePeriod::new();
        same("ht_dcperiod", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
        same("ht_dcperiod/col", &ind.over(&bars).unwrap(), &ind.over_values(c).unwrap())?;
        let ind = HilbertDominantCyclePhase::new();
        same("ht_dcphase", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
        same("ht_dcphase/col", &ind.over(&bars).unwrap(), &ind.over_values(c).unwrap())?;
        let ind = HilbertTrendMode::new();
        same("ht_trendmode", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
        same("ht_trendmode/col", &ind.over(&bars).unwrap(), &ind.over_values(c).unwrap())?;
        let ind = HilbertPhasor::new();
        let batch = ind.over(&bars).unwrap();
        let outs = stream_values(ind.clone(), &bars);
        same("ht_phasor.inphase", &batch.inphase, &field(&outs, |o| Some(o.inphase)))?;
        same("ht_phasor.quadrature", &batch.quadrature, &field(&outs, |o| Some(o.quadrature)))?;
        prop_assert_eq!(&ind.over_values(c).unwrap(), &batch);
        let ind = HilbertSineWave::new();
        let batch = ind.over(&bars).unwrap();
        let outs = stream_values(ind.clone(), &bars);
        same("ht_sine.sine", &batch.sine, &field(&outs, |o| Some(o.sine)))?;
        same("ht_sine.leadsine", &batch.leadsine, &field(&outs, |o| Some(o.leadsine)))?;
        prop_assert_eq!(&ind.over_values(c).unwrap(), &batch);
        let ind = IntradayMomentumIndex::new(q).unwrap();
        same("imi", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("imi/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(o, c).unwrap()))?;
        let ind = MovingAverageConvergenceDivergenceFixed::new(r).unwrap();
        let batch = ind.over(&bars).unwrap();
        let outs = stream_values(ind.clone(), &bars);
        same("macdfix", &batch.macd, &field(&outs, |o| Some(o.macd)))?;
        same("macdfix.signal", &batch.signal, &field(&outs, |o| Some(o.signal)))?;
        same("macdfix.hist", &batch.histogram, &field(&outs, |o| Some(o.histogram)))?;
        prop_assert_eq!(&ind.over_values(c).unwrap(), &batch);

        let ind = Variance::new(p, 1.0).unwrap();
        same("var", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
        same("var/col", &ind.over(&bars).unwrap(), &ind.over_values(c).unwrap())?;
        let fit = LinearRegression::new(q).unwrap();
        let fits = stream_values(fit.clone(), &bars);
        prop_assert_eq!(&fit.over_fits(&bars).unwrap(), &fits);
        let ind = LinearRegressionValue::new(q).unwrap();
        same("linearreg", &ind.over(&bars).unwrap(), &field(&fits, |f| Some(f.value)))?;
        same("linearreg/stream", &ind.over(&bars).unwrap(), &stream_values(ind, &bars))?;
        let ind = LinearRegressionSlope::new(q).unwrap();
        same("linearreg_slope", &ind.over(&bars).unwrap(), &field(&fits, |f| Some(f.slope)))?;
        let ind = LinearRegressionIntercept::new(q).unwrap();
        same("linearreg_intercept", &ind.over(&bars).unwrap(), &field(&fits, |f| Some(f.intercept)))?;
        let ind = LinearRegressionAngle::new(q).unwrap();
        same("linearreg_angle", &ind.over(&bars).unwrap(), &field(&fits, |f| Some(f.angle)))?;
        let ind = TimeSeriesForecast::new(q).unwrap();
        same("tsf", &ind.over(&bars).unwrap(), &field(&fits, |f| Some(f.forecast)))?;
        same("tsf/col", &ind.over(&bars).unwrap(), &ind.over_values(c).unwrap())?;
        let ind = PearsonCorrelation::new(p).unwrap();
        same("correl", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("correl/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l).unwrap()))?;
        let ind = Beta::new(p).unwrap();
        same("beta", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
        same("beta/col", &ind.over(&bars).unwrap(), &opt(&ind.over_columns(h, l).unwrap()))?;

        for matype in 0..=8 {
            for period in [1, p] {
                let ind = AnyMovingAverage::new(period, matype).unwrap();
                same("ma", &ind.over(&bars).unwrap(), &stream_values(ind.clone(), &bars))?;
                same("ma/bar", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
            }
            let ind = BollingerBands::with_matype(q, 2.0, 1.5, matype).unwrap();
            let batch = ind.over(&bars).unwrap();
            let outs = stream_values(ind, &bars);
            same("bbands.middle/matype", &batch.middle, &field(&outs, |o| Some(o.middle)))?;
            same("bbands.upper/matype", &batch.upper, &field(&outs, |o| Some(o.upper)))?;
            same("bbands.lower/matype", &batch.lower, &field(&outs, |o| Some(o.lower)))?;
            let ind = MovingAverageConvergenceDivergenceExt::new(q, matype, r, (matype + 3) % 9, p % 5 + 1, (matype + 7) % 9)
                .unwrap();
            let batch = ind.over(&bars).unwrap();
            let outs = stream(ind, &bars);
            same("macdext", &batch.macd, &field(&outs, |o| Some(o.macd)))?;
            same("macdext.signal", &batch.signal, &field(&outs, |o| Some(o.signal)))?;
            same("macdext.hist", &batch.histogram, &field(&outs, |o| Some(o.histogram)))?;
            let ind = VariablePeriodMovingAverage::new(q.min(r), q.max(r), matype).unwrap();
            // Bars' volumes are 0, 1 or up to 2000: every clamp is exercised.
            same("mavp", &ind.over(&bars).unwrap(), &stream(ind.clone(), &bars))?;
            same("mavp/col", &ind.over(&bars).unwrap(), &ind.over_columns(c, v).unwrap())?;
        }
        let first = &bars[0];
        for (sv, offset) in [(0.0, 0.0), (first.low * 0.99, 0.01), (-first.high * 1.01, 0.05)] {
            let ind = ParabolicSarExtended::new(sv, offset, 0.01, 0.02, 0.1 + (p % 3) as f64 * 0.1, 0.03, 0.01, 0.3)
                .unwrap();
            same("sarext", &ind.over(&bars).unwrap(), &stream(ind, &bars))?;
        }
    }

    /// The TA-Lib 0.8 functions (RMA, HMA, VWMA, ZLEMA, DPO, QSTICK, AO, AC,
    /// ER, FOSC, VHF, AVGDEV, ADR, MASSI, PVT, NVI, PVI, CMF, EFI, MARKETFI,
    /// CMOU, COPPOCK, TSI, PERCENTILE, PERCENTRANK, RVI, WAD, CVI, PVO, RVOL,
    /// ACCBANDS, ERI, VORTEX, HA, FRACTAL, KDJ, SMI):
    /// streaming = batch, the close-based ones also through `Next<f64>`,
    /// and the column form equals the bar form.
    #[test]
    fn streaming_equals_batch_talib_08_functions(
        bars in bars_strategy(160),
        p in 1usize..40,
        q in 2usize..40,
        r in 2usize..15,
    ) {
        let cols = Columns::of(&bars);
        let (o, h, l, c, v) = (&cols.open[..], &cols.high[..], &cols.low[..], &cols.close[..], &cols.volume[..]);
        macro_rules! close_based {
            ($name:literal, $ind:expr) => {{
                let ind = $ind;
                let batch = ind.over(&bars).unwrap();
                same($name, &batch, &stream_values(ind.clone(), &bars))?;
                same(concat!($name, "/bar"), &batch, &stream(ind.clone(), &bars))?;
                same(concat!($name, "/col"), &batch, &ind.over_values(c).unwrap())?;
            }};
        }
        close_based!("rma", WildersMovingAverage::new(p).unwrap());
        close_based!("hma", HullMovingAverage::new(p).unwrap());
        close_based!("zlema", ZeroLagExponentialMovingAverage::new(p).unwrap());
        close_based!("dpo", DetrendedPriceOscillator::new(q).unwrap());
        close_based!("er", EfficiencyRatio::new(q).unwrap());
        close_based!("fosc", ForecastOscillator::new(q).unwrap());
        close_based!("vhf", VerticalHorizontalFilter::new(q).unwrap());
        close_based!("avgdev", AverageDeviation::new(q).unwrap());
        macro_rules! bar_based {
            ($name:literal, $ind:expr, $($col:expr),+) => {{
                let ind = $ind;
                let batch = ind.over(&bars).unwrap();
                same($name, &batch, &stream(ind.clone(), &bars))?;
                same(concat!($name, "/col"), &batch, &opt(&ind.over_columns($($col),+).unwrap()))?;
            }};
        }
        bar_based!("vwma", VolumeWeightedMovingAverage::new(p).unwrap(), c, v);
        bar_based!("qstick", Qstick::new(p).unwrap(), o, c);
        bar_based!("ao", AwesomeOscillator::new(r, q).unwrap(), h, l);
        bar_based!("ac", AcceleratorOscillator::new(r, q, r).unwrap(), h, l);
        bar_based!("adr", AverageDailyRange::new(p).unwrap(), h, l);
        bar_based!("massi", MassIndex::new(r, q).unwrap(), h, l);
        bar_based!("pvt", PriceVolumeTrend::new(), c, v);
        bar_based!("nvi", NegativeVolumeIndex::new(), c, v);
        bar_based!("pvi", PositiveVolumeIndex::new(), c, v);
        bar_based!("cmf", ChaikinMoneyFlow::new(q).unwrap(), h, l, c, v);
        bar_based!("efi", ElderForceIndex::new(p).unwrap(), c, v);
        bar_based!("marketfi", MarketFacilitationIndex::new(), h, l, v);
        close_based!("cmou", ChandeMomentumOscillatorUnsmoothed::new(q).unwrap());
        close_based!("coppock", CoppockCurve::new(p, r, q).unwrap());
        close_based!("tsi", TrueStrengthIndex::new(r, q).unwrap());
        close_based!("percentile", RollingPercentile::new(q, (p as f64) * 2.5).unwrap());
        close_based!("percentrank", PercentRank::new(q).unwrap());
        close_based!("rvi", RelativeVolatilityIndex::new(p, q).unwrap());
        bar_based!("wad", WilliamsAccumulationDistribution::new(), h, l, c);
        bar_based!("cvi", ChaikinVolatility::new(q, p).unwrap(), h, l);
        bar_based!("pvo", PercentageVolumeOscillator::new(r, q, p % 9).unwrap(), v);
        bar_based!("rvol", RelativeVolume::new(p).unwrap(), v);
        macro_rules! multi {
            ($name:literal, $ind:expr, [$($col:expr),+], $($field:ident),+) => {{
                let ind = $ind;
                let batch = ind.over(&bars).unwrap();
                let outs = stream(ind.clone(), &bars);
                $(same(concat!($name, ".", stringify!($field)), &batch.$field, &field(&outs, |o| Some(o.$field)))?;)+
                prop_assert_eq!(&ind.over_columns($($col),+).unwrap(), &batch);
            }};
        }
        multi!("accbands", AccelerationBands::new(q).unwrap(), [h, l, c], upper, middle, lower);
        multi!("eri", ElderRayIndex::new(p).unwrap(), [h, l, c], bull, bear);
        multi!("vortex", Vortex::new(p).unwrap(), [h, l, c], plus, minus);
        multi!("ha", HeikinAshi::new(), [o, h, l, c], open, high, low, close);
        multi!("fractal", Fractal::new(r, p).unwrap(), [h, l], swing_high, swing_low);
        multi!("kdj", Kdj::new(q, r, 13, r, p % 14).unwrap(), [h, l, c], k, d, j);
        multi!("kdj/classic", Kdj::new(q, p, p % 9, r, 13).unwrap(), [h, l, c], k, d, j);
        multi!("smi", StochasticMomentumIndex::new(q, r, q, r).unwrap(), [h, l, c], smi, signal);
    }

    /// `reset` of the TA-Lib 0.8 functions: the same outputs as a fresh copy.
    #[test]
    fn reset_behaves_as_new_talib_08(bars in bars_strategy(80), p in 2usize..20) {
        macro_rules! twice {
            ($($name:literal => $ind:expr),* $(,)?) => {$({
                let mut ind = $ind;
                let first: Vec<_> = bars.iter().map(|b| ind.next(b)).collect();
                ind.reset();
                prop_assert!(!ind.is_ready(), "{} ready after reset", $name);
                let second: Vec<_> = bars.iter().map(|b| ind.next(b)).collect();
                same($name, &first, &second)?;
            })*};
        }
        twice!(
            "rma" => WildersMovingAverage::new(p).unwrap(),
            "hma" => HullMovingAverage::new(p).unwrap(),
            "vwma" => VolumeWeightedMovingAverage::new(p).unwrap(),
            "zlema" => ZeroLagExponentialMovingAverage::new(p).unwrap(),
            "dpo" => DetrendedPriceOscillator::new(p).unwrap(),
            "qstick" => Qstick::new(p).unwrap(),
            "ao" => AwesomeOscillator::new(2, p).unwrap(),
            "ac" => AcceleratorOscillator::new(2, p, 3).unwrap(),
            "er" => EfficiencyRatio::new(p).unwrap(),
            "fosc" => ForecastOscillator::new(p).unwrap(),
            "vhf" => VerticalHorizontalFilter::new(p).unwrap(),
            "avgdev" => AverageDeviation::new(p).unwrap(),
            "adr" => AverageDailyRange::new(p).unwrap(),
            "massi" => MassIndex::new(2, p).unwrap(),
            "pvt" => PriceVolumeTrend::new(),
            "nvi" => NegativeVolumeIndex::new(),
            "pvi" => PositiveVolumeIndex::new(),
            "cmf" => ChaikinMoneyFlow::new(p).unwrap(),
            "efi" => ElderForceIndex::new(p).unwrap(),
            "marketfi" => MarketFacilitationIndex::new(),
            "cmou" => ChandeMomentumOscillatorUnsmoothed::new(p).unwrap(),
            "coppock" => CoppockCurve::new(p, 2, p).unwrap(),
            "tsi" => TrueStrengthIndex::new(p, 2).unwrap(),
            "percentile" => RollingPercentile::new(p, 30.0).unwrap(),
            "percentrank" => PercentRank::new(p).unwrap(),
            "rvi" => RelativeVolatilityIndex::new(p, 3).unwrap(),
            "wad" => WilliamsAccumulationDistribution::new(),
            "cvi" => ChaikinVolatility::new(p, 2).unwrap(),
            "pvo" => PercentageVolumeOscillator::new(2, p, 1).unwrap(),
            "rvol" => RelativeVolume::new(p).unwrap(),
            "accbands" => AccelerationBands::new(p).unwrap(),
            "eri" => ElderRayIndex::new(p).unwrap(),
            "vortex" => Vortex::new(p).unwrap(),
            "ha" => HeikinAshi::new(),
            "fractal" => Fractal::new(p, 2).unwrap(),
            "kdj" => Kdj::new(p, 3, 13, 3, 12).unwrap(),
            "smi" => StochasticMomentumIndex::new(p, 2, 3, 2).unwrap(),
        );
    }

    #[test]
    fn reset_behaves_as_new(bars in bars_strategy(80), p in 2usize..20) {
        let mut rsi = RelativeStrengthIndex::new(p).unwrap();
        let first: Vec<_> = bars.iter().map(|b| rsi.next(b)).collect();
        rsi.reset();
        prop_assert!(!rsi.is_ready());
        let second: Vec<_> = bars.iter().map(|b| rsi.next(b)).collect();
        same("rsi after reset", &first, &second)?;

        let mut ichi = IchimokuCloud::new(p, p + 1, p + 2, p).unwrap();
        let first: Vec<_> = bars.iter().map(|b| ichi.next(b)).collect();
        ichi.reset();
        let second: Vec<_> = bars.iter().map(|b| ichi.next(b)).collect();
        same("ichimoku after reset", &first, &second)?;

        let mut trendmode = HilbertTrendMode::new();
        let first: Vec<_> = bars.iter().map(|b| trendmode.next(b)).collect();
        trendmode.reset();
        prop_assert!(!trendmode.is_ready());
        let second: Vec<_> = bars.iter().map(|b| trendmode.next(b)).collect();
        same("ht_trendmode after reset", &first, &second)?;

        let mut sine = HilbertSineWave::new();
        let first: Vec<_> = bars.iter().map(|b| sine.next(b)).collect();
        sine.reset();
        let second: Vec<_> = bars.iter().map(|b| sine.next(b)).collect();
        same("ht_sine after reset", &first, &second)?;

        let mut imi = IntradayMomentumIndex::new(p).unwrap();
        let first: Vec<_> = bars.iter().map(|b| imi.next(b)).collect();
        imi.reset();
        prop_assert!(!imi.is_ready());
        let second: Vec<_> = bars.iter().map(|b| imi.next(b)).collect();
        same("imi after reset", &first, &second)?;

        let mut macd = MovingAverageConvergenceDivergence::new(2, p, 3).unwrap();
        let first: Vec<_> = bars.iter().map(|b| macd.next(b)).collect();
        macd.reset();
        let second: Vec<_> = bars.iter().map(|b| macd.next(b)).collect();
        same("macd after reset", &first, &second)?;
    }

    #[test]
    fn batch_output_is_as_long_as_input(bars in bars_strategy(120), pick in 0usize..1000) {
        for info in catalog() {
            // Defaults, and the smallest allowed value of one parameter.
            let mut params = BTreeMap::new();
            if !info.params.is_empty() {
                let p = &info.params[pick % info.params.len()];
                if p.kind != ParamKind::Timestamp {
                    params.insert(p.name.to_string(), p.min);
                }
            }
            for params in [BTreeMap::new(), params] {
                match compute(info.name, &params, &bars) {
                    Ok(out) => {
                        prop_assert_eq!(out.series.len(), info.outputs.len());
                        for s in &out.series {
                            prop_assert_eq!(s.values.len(), bars.len(), "{} {}", info.name, s.name);
                            prop_assert_eq!(s.first_valid, s.values.iter().position(Option::is_some));
                            prop_assert!(s.values.iter().flatten().all(|v| v.is_finite()), "{} {}", info.name, s.name);
                        }
                    }
                    // Only parameter values may be refused (a parameter out of its range).
                    Err(e) => prop_assert!(
                        matches!(e, tradeterm_core::CoreError::InvalidParameter { .. }),
                        "{}: {e}",
                        info.name
                    ),
                }
            }
        }
    }

    #[test]
    fn random_parameters_never_panic(
        bars in bars_strategy(60),
        which in 0usize..64,
        values in prop::collection::vec(
            prop_oneof![
                Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(-1.0), Just(0.0),
                Just(1.0), Just(1e300), Just(10_000.0), Just(10_001.0), Just(2.5),
                -100.0f64..100.0, 0.0f64..20_000.0
            ],
            0..5
        ),
        junk_key in "[a-z_]{1,12}",
    ) {
        let info = &catalog()[which % catalog().len()];
        let mut params = BTreeMap::new();
        for (p, v) in info.params.iter().zip(&values) {
            params.insert(p.name.to_string(), *v);
        }
        if values.len() == 4 {
            params.insert(junk_key, 1.0);
        }
        if let Ok(out) = compute(info.name, &params, &bars) {
            for s in &out.series {
                prop_assert_eq!(s.values.len(), bars.len());
            }
        }
        // Constructors directly, with periods far outside their bounds.
        let n = values.first().map_or(0, |v| if v.is_finite() && *v >= 0.0 { *v as usize } else { 0 });
        let x = values.get(1).copied().unwrap_or(f64::NAN);
        let _ = SimpleMovingAverage::new(n);
        let _ = ExponentialMovingAverage::new(n);
        let _ = WeightedMovingAverage::new(n);
        let _ = RelativeStrengthIndex::new(n);
        let _ = MovingAverageConvergenceDivergence::new(n, n / 2, n);
        let _ = BollingerBands::new(n, x, x);
        let _ = StandardDeviation::new(n, x);
        let _ = ParabolicSar::new(x, x);
        let _ = KeltnerChannels::new(n, n, x);
        let _ = SuperTrend::new(n, x);
        let _ = IchimokuCloud::new(n, n, n, n);
        let _ = StochasticOscillator::new(n, n, n);
    }

    #[test]
    fn streaming_never_panics_on_any_float(
        values in prop::collection::vec(
            prop_oneof![
                Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(0.0), Just(-0.0),
                Just(f64::MAX), Just(f64::MIN), Just(f64::MIN_POSITIVE), -1e6f64..1e6
            ],
            1..60
        ),
        p in 2usize..8,
    ) {
        // Streaming input is not validated (only batch is); odd values give odd
        // outputs but never a panic.
        let bars: Vec<Bar> = values
            .chunks(1)
            .enumerate()
            .map(|(i, c)| {
                let v = c[0];
                let w = values[(i * 7 + 3) % values.len()];
                Bar { time: i as i64 * 60_000, open: v, high: w, low: v, close: w, volume: v }
            })
            .collect();
        macro_rules! feed {
            ($($ind:expr),* $(,)?) => {$({
                let mut ind = $ind;
                for b in &bars {
                    let _ = ind.next(b);
                }
                ind.reset();
            })*};
        }
        feed!(
            SimpleMovingAverage::new(p).unwrap(),
            ExponentialMovingAverage::new(p).unwrap(),
            WeightedMovingAverage::new(p).unwrap(),
            RelativeStrengthIndex::new(p).unwrap(),
            MovingAverageConvergenceDivergence::new(2, p, 2).unwrap(),
            AverageDirectionalIndex::new(p).unwrap(),
            ParabolicSar::default(),
            IchimokuCloud::new(p, p + 1, p + 2, 2).unwrap(),
            SuperTrend::new(p, 2.0).unwrap(),
            StochasticOscillator::new(p, 2, 2).unwrap(),
            WilliamsPercentRange::new(p).unwrap(),
            CommodityChannelIndex::new(p).unwrap(),
            Momentum::new(p).unwrap(),
            RateOfChange::new(p).unwrap(),
            AverageTrueRange::new(p).unwrap(),
            BollingerBands::new(p, 2.0, 1.0).unwrap(),
            StandardDeviation::new(p, 1.0).unwrap(),
            DonchianChannels::new(p).unwrap(),
            KeltnerChannels::new(p, 2, 2.0).unwrap(),
            OnBalanceVolume::new(),
            MoneyFlowIndex::new(p).unwrap(),
            VolumeWeightedAveragePrice::new(VwapAnchor::DailyUtc),
            VolumeWeightedAveragePrice::new(VwapAnchor::From(120_000)),
            HilbertTrendline::new(),
            HilbertDominantCyclePeriod::new(),
            HilbertDominantCyclePhase::new(),
            HilbertPhasor::new(),
            HilbertSineWave::new(),
            HilbertTrendMode::new(),
            IntradayMomentumIndex::new(p).unwrap(),
        );
        feed!(
            WildersMovingAverage::new(p).unwrap(),
            HullMovingAverage::new(p).unwrap(),
            VolumeWeightedMovingAverage::new(p).unwrap(),
            ZeroLagExponentialMovingAverage::new(p).unwrap(),
            DetrendedPriceOscillator::new(p).unwrap(),
            Qstick::new(p).unwrap(),
            AwesomeOscillator::new(2, p).unwrap(),
            AcceleratorOscillator::new(2, p, 2).unwrap(),
            EfficiencyRatio::new(p).unwrap(),
            ForecastOscillator::new(p).unwrap(),
            VerticalHorizontalFilter::new(p).unwrap(),
            AverageDeviation::new(p).unwrap(),
            AverageDailyRange::new(p).unwrap(),
            MassIndex::new(2, p).unwrap(),
            PriceVolumeTrend::new(),
            NegativeVolumeIndex::new(),
            PositiveVolumeIndex::new(),
            ChaikinMoneyFlow::new(p).unwrap(),
            ElderForceIndex::new(p).unwrap(),
            MarketFacilitationIndex::new(),
            ChandeMomentumOscillatorUnsmoothed::new(p).unwrap(),
            CoppockCurve::new(p, 2, p).unwrap(),
            TrueStrengthIndex::new(p, 2).unwrap(),
            RollingPercentile::new(p, 30.0).unwrap(),
            PercentRank::new(p).unwrap(),
            RelativeVolatilityIndex::new(p, 3).unwrap(),
            WilliamsAccumulationDistribution::new(),
            ChaikinVolatility::new(p, 2).unwrap(),
            PercentageVolumeOscillator::new(2, p, 1).unwrap(),
            RelativeVolume::new(p).unwrap(),
            AccelerationBands::new(p).unwrap(),
            ElderRayIndex::new(p).unwrap(),
            Vortex::new(p).unwrap(),
            HeikinAshi::new(),
            Fractal::new(p, 1).unwrap(),
            Kdj::new(p, 3, 13, 3, 9).unwrap(),
            StochasticMomentumIndex::new(p, 2, p, 2).unwrap(),
        );
        let mut sd = StandardDeviation::new(p, 1.0).unwrap();
        for v in &values {
            let _ = sd.next(*v);
        }
    }

    #[test]
    fn batch_rejects_non_finite_input(bars in bars_strategy(40), at in 0usize..40, field in 0usize..5) {
        let mut bad = bars.clone();
        let i = at % bad.len();
        let b = &mut bad[i];
        match field {
            0 => b.open = f64::NAN,
            1 => b.high = f64::INFINITY,
            2 => b.low = f64::NEG_INFINITY,
            3 => b.close = f64::NAN,
            _ => b.volume = f64::NAN,
        }
        for info in catalog() {
            let err = compute(info.name, &BTreeMap::new(), &bad);
            prop_assert!(matches!(err, Err(tradeterm_core::CoreError::InvalidInput(_))), "{}", info.name);
            let empty = compute(info.name, &BTreeMap::new(), &[]);
            prop_assert!(matches!(empty, Err(tradeterm_core::CoreError::InvalidInput(_))), "{}", info.name);
        }
    }
}
