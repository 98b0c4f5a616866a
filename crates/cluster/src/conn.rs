//! Redis connections for hot paths: one multiplexed connection per thread,
//! shared by every request that thread runs.
//!
//! Taking a connection out of a `deadpool_redis::Pool` for each call costs
//! an extra round trip every time (the pool's recycle check sends `UNWATCH`
//! and `PING` before handing the connection out), which doubles what a
//! single-command call such as a route lookup or a rate-limit count costs.
//! A multiplexed connection needs no such check: it carries concurrent
//! requests over one socket and reports a broken socket as an error on the
//! next call, after which the caller [forgets](ThreadConnections::forget) it
//! and the next call opens a new one from the pool.
//!
//! Per thread because a connection's I/O task runs on the runtime that
//! opened it: each actix worker (a single-threaded runtime) then talks to
//! Redis without waking another thread.

use std::collections::HashMap;
use std::sync::Mutex;
use std::thread::ThreadId;

use deadpool_redis::redis::aio::MultiplexedConnection;

/// One multiplexed connection per thread, opened from `pool` on first use.
pub struct ThreadConnections {
    pool: deadpool_redis::Pool,
    conns: Mutex<HashMap<ThreadId, MultiplexedConnection>>,
    /// Serialises (re)connecting, so a burst after a drop opens one connection.
    connecting: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for ThreadConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open = self.conns.lock().map_or(0, |c| c.len());
        f.debug_struct("ThreadConnections").field("open", &open).finish()
    }
}

impl ThreadConnections {
    /// Connections taken from `pool` (its URL and connection settings).
    pub fn new(pool: deadpool_redis::Pool) -> Self {
        Self {
            pool,
            conns: Mutex::new(HashMap::new()),
            connecting: tokio::sync::Mutex::new(()),
        }
    }

    /// The pool the connections come from (for calls that are not hot).
    pub fn pool(&self) -> &deadpool_redis::Pool {
        &self.pool
    }

    /// This thread's connection, opened on first use.
    ///
    /// # Errors
    /// The pool could not open a connection (Redis down or unreachable).
    pub async fn get(&self) -> Result<MultiplexedConnection, String> {
        let cached = || {
            let thread = std::thread::current().id();
            self.conns.lock().ok().and_then(|c| c.get(&thread).cloned())
        };
        if let Some(conn) = cached() {
            return Ok(conn);
        }
        let _one_at_a_time = self.connecting.lock().await;
        // A task of a multi-threaded runtime may have moved to another thread
        // while waiting: the connection is filed under the thread that opens it.
        if let Some(conn) = cached() {
            return Ok(conn);
        }
        let pooled = self.pool.get().await.map_err(|e| e.to_string())?;
        let conn = deadpool_redis::Connection::take(pooled);
        if let Ok(mut conns) = self.conns.lock() {
            conns.insert(std::thread::current().id(), conn.clone());
        }
        Ok(conn)
    }

    /// Forgets this thread's connection (after an error or a timeout): the
    /// next [`ThreadConnections::get`] opens a new one.
    pub fn forget(&self) {
        if let Ok(mut conns) = self.conns.lock() {
            conns.remove(&std::thread::current().id());
        }
    }
}
