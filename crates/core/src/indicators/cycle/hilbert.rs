//! The Hilbert-transform machinery shared by MAMA and the `HT_*` functions:
//! TA-Lib's 4-bar WMA price smoother, its odd/even-bar Hilbert transform and
//! the homodyne dominant-cycle period, operation for operation.

/// One lane (odd or even bars) of a Hilbert transform stage, TA-Lib's
/// `HILBERT_VARIABLES`.
#[derive(Debug, Clone, Copy, Default)]
struct Lane {
    buf: [f64; 3],
    prev: f64,
    prev_input: f64,
}

impl Lane {
    /// TA-Lib's `DO_HILBERT_TRANSFORM`, operation for operation.
    #[inline]
    fn transform(&mut self, idx: usize, input: f64, adjusted: f64) -> f64 {
        const A: f64 = 0.0962;
        const B: f64 = 0.5769;
        let t = A * input;
        let mut out = 0.0 - self.buf[idx];
        self.buf[idx] = t;
        out += t;
        out -= self.prev;
        self.prev = B * self.prev_input;
        out += self.prev;
        self.prev_input = input;
        out * adjusted
    }
}

/// A Hilbert transform stage: one lane for even bars, one for odd bars.
#[derive(Debug, Clone, Copy, Default)]
struct Stage {
    odd: Lane,
    even: Lane,
}

impl Stage {
    #[inline]
    fn transform(&mut self, even: bool, idx: usize, input: f64, adjusted: f64) -> f64 {
        if even {
            self.even.transform(idx, input, adjusted)
        } else {
            self.odd.transform(idx, input, adjusted)
        }
    }
}

/// What one bar of the Hilbert transform gives its users.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HilbertStep {
    /// Index of the bar (0 for the first input).
    pub(crate) today: usize,
    /// The 4-bar WMA of the price.
    pub(crate) smoothed: f64,
    /// In-phase component `I1` (the detrender three bars of the lane back).
    pub(crate) i1: f64,
    /// Quadrature component `Q1`.
    pub(crate) q1: f64,
    /// `0.33 · period + 0.67 · previous`, TA-Lib's `smoothPeriod`.
    pub(crate) smooth_period: f64,
}

/// The first bar whose Hilbert transform MAMA, HT_DCPERIOD and HT_PHASOR run
/// (TA-Lib's 9 WMA-only bars after the first three).
pub(crate) const SHORT_START: usize = 12;
/// The first bar whose Hilbert transform HT_DCPHASE, HT_SINE, HT_TRENDLINE
/// and HT_TRENDMODE run (34 WMA-only bars after the first three).
pub(crate) const LONG_START: usize = 37;

/// TA-Lib's `rad2Deg` (`45 / atan(1)`, equal to `180 / (4 · atan(1))`).
#[inline]
pub(crate) fn rad2deg() -> f64 {
    45.0 / 1.0f64.atan()
}

/// The price smoother and Hilbert transform of TA-Lib's `HT_*` family and
/// `TA_MAMA`: the first `start` bars only feed the smoother, then every bar
/// gives a [`HilbertStep`].
#[derive(Debug, Clone)]
pub(crate) struct HilbertCore {
    start: usize,
    count: usize,
    /// The last three inputs, oldest first.
    last: [f64; 3],
    wma_sub: f64,
    wma_sum: f64,
    trailing: f64,
    hilbert_idx: usize,
    detrender: Stage,
    q1: Stage,
    ji: Stage,
    jq: Stage,
    i1_odd_prev2: f64,
    i1_odd_prev3: f64,
    i1_even_prev2: f64,
    i1_even_prev3: f64,
    prev_q2: f64,
    prev_i2: f64,
    re: f64,
    im: f64,
    period: f64,
    smooth_period: f64,
}

impl HilbertCore {
    /// A core whose transform starts at bar `start` ([`SHORT_START`] or [`LONG_START`]).
    pub(crate) fn new(start: usize) -> Self {
        Self {
            start: start.max(3),
            count: 0,
            last: [0.0; 3],
            wma_sub: 0.0,
            wma_sum: 0.0,
            trailing: 0.0,
            hilbert_idx: 0,
            detrender: Stage::default(),
            q1: Stage::default(),
            ji: Stage::default(),
            jq: Stage::default(),
            i1_odd_prev2: 0.0,
            i1_odd_prev3: 0.0,
            i1_even_prev2: 0.0,
            i1_even_prev3: 0.0,
            prev_q2: 0.0,
            prev_i2: 0.0,
            re: 0.0,
            im: 0.0,
            period: 0.0,
            smooth_period: 0.0,
        }
    }

    /// Forgets every input.
    pub(crate) fn reset(&mut self) {
        *self = Self::new(self.start);
    }

    /// Number of inputs seen.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// The 4-bar WMA price smoother (TA-Lib's `DO_PRICE_WMA`): the smoothed value.
    #[inline]
    fn smooth(&mut self, x: f64) -> f64 {
        self.wma_sub += x;
        self.wma_sub -= self.trailing;
        self.wma_sum += x * 4.0;
        self.trailing = self.last[0];
        let smoothed = self.wma_sum * 0.1;
        self.wma_sum -= self.wma_sub;
        smoothed
    }

    #[inline]
    fn remember(&mut self, x: f64) {
        self.last = [self.last[1], self.last[2], x];
    }

    /// Consumes one price; `None` while only the smoother is being filled.
    #[inline]
    pub(crate) fn next(&mut self, x: f64) -> Option<HilbertStep> {
        let today = self.count;
        self.count = self.count.saturating_add(1);
        if today < 3 {
            if today == 0 {
                self.wma_sub = x;
                self.wma_sum = x;
            } else {
                self.wma_sub += x;
                self.wma_sum += x * (today + 1) as f64;
            }
            self.remember(x);
            return None;
        }
        if today < self.start {
            self.smooth(x);
            self.remember(x);
            return None;
        }
        let adjusted = 0.075 * self.period + 0.54;
        let smoothed = self.smooth(x);
        self.remember(x);
        // The parity of the bar index picks the lane (TA-Lib's `today % 2`).
        let even = today.is_multiple_of(2);
        let idx = self.hilbert_idx;
        let detrender = self.detrender.transform(even, idx, smoothed, adjusted);
        let q1 = self.q1.transform(even, idx, detrender, adjusted);
        let i1 = if even { self.i1_even_prev3 } else { self.i1_odd_prev3 };
        let ji = self.ji.transform(even, idx, i1, adjusted);
        let jq = self.jq.transform(even, idx, q1, adjusted);
        if even {
            self.hilbert_idx = (self.hilbert_idx + 1) % 3;
        }
        let q2 = 0.2 * (q1 + ji) + 0.8 * self.prev_q2;
        let i2 = 0.2 * (i1 - jq) + 0.8 * self.prev_i2;
        if even {
            self.i1_odd_prev3 = self.i1_odd_prev2;
            self.i1_odd_prev2 = detrender;
        } else {
            self.i1_even_prev3 = self.i1_even_prev2;
            self.i1_even_prev2 = detrender;
        }
        self.re = 0.2 * (i2 * self.prev_i2 + q2 * self.prev_q2) + 0.8 * self.re;
        self.im = 0.2 * (i2 * self.prev_q2 - q2 * self.prev_i2) + 0.8 * self.im;
        self.prev_q2 = q2;
        self.prev_i2 = i2;
        let previous = self.period;
        if self.im != 0.0 && self.re != 0.0 {
            self.period = 360.0 / ((self.im / self.re).atan() * rad2deg());
        }
        if self.period > 1.5 * previous {
            self.period = 1.5 * previous;
        }
        if self.period < 0.67 * previous {
            self.period = 0.67 * previous;
        }
        // TA-Lib's `if < 6 … else if > 50`; a NaN stays NaN either way.
        self.period = self.period.clamp(6.0, 50.0);
        self.period = 0.2 * self.period + 0.8 * previous;
        self.smooth_period = 0.33 * self.period + 0.67 * self.smooth_period;
        Some(HilbertStep {
            today,
            smoothed,
            i1,
            q1,
            smooth_period: self.smooth_period,
        })
    }
}

/// Length of TA-Lib's `smoothPrice` circular buffer (and the longest cycle).
const RING: usize = 50;

/// `(int)(smoothPeriod + 0.5)`, at most the ring's length (a NaN gives 0).
#[inline]
fn dc_period_int(smooth_period: f64) -> usize {
    ((smooth_period + 0.5) as usize).min(RING)
}

/// The dominant-cycle phase of HT_DCPHASE, HT_SINE and HT_TRENDMODE:
/// TA-Lib's `smoothPrice` ring and its DFT over one dominant cycle.
#[derive(Debug, Clone)]
pub(crate) struct DcPhase {
    smooth_price: [f64; RING],
    idx: usize,
    phase: f64,
}

impl Default for DcPhase {
    fn default() -> Self {
        Self {
            smooth_price: [0.0; RING],
            idx: 0,
            phase: 0.0,
        }
    }
}

impl DcPhase {
    /// Stores this bar's smoothed price (call once per Hilbert step, before
    /// [`DcPhase::update`]).
    #[inline]
    pub(crate) fn store(&mut self, smoothed: f64) {
        self.smooth_price[self.idx] = smoothed;
    }

    /// This bar's smoothed price, as stored.
    #[inline]
    pub(crate) fn current(&self) -> f64 {
        self.smooth_price[self.idx]
    }

    /// The phase of the last [`DcPhase::update`] (0 before the first).
    #[inline]
    pub(crate) fn phase(&self) -> f64 {
        self.phase
    }

    /// Advances the ring to the next bar (TA-Lib's `smoothPrice_Idx++`).
    #[inline]
    pub(crate) fn advance(&mut self) {
        self.idx = if self.idx + 1 >= RING { 0 } else { self.idx + 1 };
    }

    /// The phase in degrees after this bar, as TA-Lib's `DCPhase`.
    pub(crate) fn update(&mut self, smooth_period: f64) -> f64 {
        let tau = 1.0f64.atan() * 8.0;
        let n = dc_period_int(smooth_period);
        let mut real = 0.0;
        let mut imag = 0.0;
        let mut idx = self.idx;
        for i in 0..n {
            let angle = i as f64 * tau / n as f64;
            let v = self.smooth_price[idx];
            real += angle.sin() * v;
            imag += angle.cos() * v;
            idx = if idx == 0 { RING - 1 } else { idx - 1 };
        }
        let abs_imag = imag.abs();
        if abs_imag > 0.0 {
            self.phase = (real / imag).atan() * rad2deg();
        } else if abs_imag <= 0.01 {
            if real < 0.0 {
                self.phase -= 90.0;
            } else if real > 0.0 {
                self.phase += 90.0;
            }
        }
        self.phase += 90.0;
        // Compensates for the one-bar lag of the WMA.
        self.phase += 360.0 / smooth_period;
        if imag < 0.0 {
            self.phase += 180.0;
        }
        if self.phase > 315.0 {
            self.phase -= 360.0;
        }
        self.phase
    }
}

/// The instantaneous trendline of HT_TRENDLINE and HT_TRENDMODE: the mean of
/// the raw prices over one dominant cycle, then a 4-3-2-1 WMA of those means.
#[derive(Debug, Clone)]
pub(crate) struct Trendline {
    /// The last [`RING`] raw prices; `head` is the slot of the next write.
    raw: [f64; RING],
    head: usize,
    itrend: [f64; 3],
}

impl Default for Trendline {
    fn default() -> Self {
        Self {
            raw: [0.0; RING],
            head: 0,
            itrend: [0.0; 3],
        }
    }
}

impl Trendline {
    /// Records a raw price (every bar, warm-up included).
    #[inline]
    pub(crate) fn push(&mut self, x: f64) {
        self.raw[self.head] = x;
        self.head = if self.head + 1 >= RING { 0 } else { self.head + 1 };
    }

    /// The trendline after this bar (the price of this bar already pushed).
    pub(crate) fn update(&mut self, smooth_period: f64) -> f64 {
        let n = dc_period_int(smooth_period);
        let mut sum = 0.0;
        let mut idx = self.head;
        // Newest first, as TA-Lib's `inReal[idx--]`.
        for _ in 0..n {
            idx = if idx == 0 { RING - 1 } else { idx - 1 };
            sum += self.raw[idx];
        }
        if n > 0 {
            sum /= n as f64;
        }
        let [t1, t2, t3] = self.itrend;
        let line = (4.0 * sum + 3.0 * t1 + 2.0 * t2 + t3) / 10.0;
        self.itrend = [sum, t1, t2];
        line
    }
}
