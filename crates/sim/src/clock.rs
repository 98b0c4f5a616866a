//! Where the simulator's "now" comes from.
//!
//! The simulator never reads the system time itself: every operation asks its
//! [`Clock`]. [`SystemClock`] follows the wall clock, optionally accelerated;
//! [`ManualClock`] only moves when a test moves it, so a week of market can be
//! replayed in milliseconds and two runs with the same steps are identical.

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tradeterm_core::time::UnixMs;

/// A source of the current simulated instant (unix ms, UTC).
pub trait Clock: Send + Sync + Debug + 'static {
    /// The current instant.
    fn now_ms(&self) -> UnixMs;
}

/// Wall-clock time, optionally running `speed` times faster from the moment
/// the clock is created.
#[derive(Debug, Clone)]
pub struct SystemClock {
    origin_ms: UnixMs,
    origin: Instant,
    speed: f64,
}

impl SystemClock {
    /// Starts at the current wall-clock time. A `speed` that is not a positive
    /// finite number counts as 1.
    pub fn new(speed: f64) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Self::starting_at(now, speed)
    }

    /// Starts at `start_ms` and runs `speed` times faster than real time.
    pub fn starting_at(start_ms: UnixMs, speed: f64) -> Self {
        let speed = if speed.is_finite() && speed > 0.0 { speed } else { 1.0 };
        Self {
            origin_ms: start_ms,
            origin: Instant::now(),
            speed,
        }
    }

    /// The acceleration factor.
    pub fn speed(&self) -> f64 {
        self.speed
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> UnixMs {
        let elapsed = self.origin.elapsed().as_secs_f64() * 1000.0 * self.speed;
        self.origin_ms.saturating_add(elapsed as i64)
    }
}

/// A clock that only moves when told to. Share it as `Arc<ManualClock>`, hand
/// a clone to the simulator as `Arc<dyn Clock>` and keep one to advance it.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `start_ms`.
    pub fn new(start_ms: UnixMs) -> Self {
        Self {
            now: AtomicI64::new(start_ms),
        }
    }

    /// Moves the clock to `t` (backwards moves are ignored: time never runs back).
    pub fn set(&self, t: UnixMs) {
        self.now.fetch_max(t, Ordering::SeqCst);
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: i64) {
        self.now.fetch_add(ms.max(0), Ordering::SeqCst);
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.advance_ms(d.as_millis().min(i64::MAX as u128) as i64);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> UnixMs {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_forward_only() {
        let c = ManualClock::new(1_000);
        c.advance_ms(500);
        assert_eq!(c.now_ms(), 1_500);
        c.set(1_200);
        assert_eq!(c.now_ms(), 1_500);
        c.advance(Duration::from_secs(2));
        assert_eq!(c.now_ms(), 3_500);
    }

    #[test]
    fn system_clock_speed() {
        let c = SystemClock::starting_at(0, f64::NAN);
        assert_eq!(c.speed(), 1.0);
        let fast = SystemClock::starting_at(1_000, 1000.0);
        std::thread::sleep(Duration::from_millis(20));
        assert!(fast.now_ms() >= 1_000 + 20_000);
    }
}
