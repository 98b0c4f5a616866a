//! Waiting for state with a deadline instead of fixed sleeps.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// How often a condition is polled.
const POLL: Duration = Duration::from_millis(20);

/// Polls `check` until it gives `Some`, and returns that value; fails the
/// test naming `what` once `timeout` has passed. For a plain condition,
/// return `cond.then_some(())`. `what` is formatted only on failure, so it
/// may read state (a log file) when it is displayed.
///
/// Use it to wait for state (an agent connected, a feed refreshed, an alert
/// recorded). A test keeps a sleep only where the elapsed time itself is
/// under test (a rate-limit window, an outage that must last).
pub async fn wait_until<T, F, Fut>(what: impl Display, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// As [`wait_until`], for code on a plain thread (child processes, files).
pub fn wait_until_blocking<T>(what: impl Display, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}
