//! CPU-bound work off the threads that serve requests.
//!
//! A tool's heavy computation (a backtest, an indicator over thousands of
//! bars, MAVP with a wide period range) can take a noticeable time, far
//! more in a debug build. Run where the request is served, it would hold
//! that thread: an actix worker of the REST API serves every connection it
//! accepted on its one thread, so a quote request on the same connection
//! or worker would wait behind the backtest. [`cpu`] runs the computation
//! on tokio's blocking pool instead, at most [`permits`] at once (one per
//! core: more would only share the cores), later ones waiting their turn
//! without holding a thread.
//!
//! A panic in the computation is answered as an internal error, never
//! propagated into the server.

use std::sync::OnceLock;

use tokio::sync::Semaphore;

use crate::ToolError;

/// Computations running at once: the machine's parallelism (at least 1).
pub(crate) fn permits() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

fn semaphore() -> &'static Semaphore {
    static SEMAPHORE: OnceLock<Semaphore> = OnceLock::new();
    SEMAPHORE.get_or_init(|| Semaphore::new(permits()))
}

/// Runs `work` on the blocking pool, once a permit is free.
///
/// # Errors
/// [`ToolError::Internal`] when the work panicked (or the pool is shut
/// down); the work's own errors are in its `T`.
pub(crate) async fn cpu<T, F>(work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let _permit = semaphore()
        .acquire()
        .await
        .map_err(|_| ToolError::Internal("the computation pool is closed".into()))?;
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| ToolError::Internal("the computation failed".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn work_runs_off_the_serving_thread_and_a_panic_is_an_error() {
        let serving = std::thread::current().id();
        let ran_on = cpu(|| std::thread::current().id()).await.unwrap();
        assert_ne!(ran_on, serving, "the work ran on the thread serving the request");
        let err = cpu(|| -> u32 { panic!("boom") }).await.unwrap_err();
        assert!(matches!(err, ToolError::Internal(_)), "{err:?}");
        // The permit of the panicked work was given back.
        assert_eq!(semaphore().available_permits(), permits());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_long_computation_does_not_hold_the_serving_thread() {
        // On a single-threaded runtime (as an actix worker's), a timer on
        // the serving thread fires while the computation still runs.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let work = tokio::spawn(cpu(move || rx.recv_timeout(std::time::Duration::from_secs(30)).is_ok()));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        tx.send(()).unwrap();
        assert!(work.await.unwrap().unwrap(), "the computation was not still waiting");
    }
}
