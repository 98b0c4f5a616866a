//! Process signals: what ends a server binary.

/// Resolves on the first SIGTERM (what an orchestrator or `kill` sends) or
/// SIGINT (Ctrl-C), for a graceful shutdown. Names the signal.
///
/// # Errors
/// The signal handlers could not be installed.
pub async fn shutdown_signal() -> std::io::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::select! {
            _ = term.recv() => Ok("SIGTERM"),
            _ = int.recv() => Ok("SIGINT"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await?;
        Ok("Ctrl-C")
    }
}
