//! Cycle indicators: Ehlers' Hilbert-transform functions of TA-Lib
//! (HT_DCPERIOD, HT_DCPHASE, HT_PHASOR, HT_SINE, HT_TRENDMODE).
//!
//! They share one machinery with MAMA and HT_TRENDLINE (`hilbert`): TA-Lib's
//! 4-bar WMA price smoother, its odd/even-bar Hilbert transform (the parity
//! of the bar index picks the lane) and the homodyne dominant-cycle period,
//! reproduced operation for operation. Each function's warm-up is TA-Lib's
//! lookback with its default unstable period (0): 32 for HT_DCPERIOD and
//! HT_PHASOR, 63 for the others.

mod dcperiod;
mod dcphase;
pub(crate) mod hilbert;
mod phasor;
mod sine;
mod trendmode;

pub use dcperiod::HilbertDominantCyclePeriod;
pub use dcphase::HilbertDominantCyclePhase;
pub use phasor::{HilbertPhasor, HilbertPhasorOutput, HilbertPhasorSeries};
pub use sine::{HilbertSineWave, HilbertSineWaveOutput, HilbertSineWaveSeries};
pub use trendmode::HilbertTrendMode;
