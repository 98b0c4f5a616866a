//! # tradeterm-cluster
//!
//! Routing across gateway instances, on Redis (`KEYVALUE_URL`), for a
//! scaled-out deployment: several `tradeterm-gateway` instances hold the
//! agent connections, and `tradeterm-api` / `tradeterm-mcp` instances send
//! each command to the instance that holds the terminal.
//!
//! - [`RouteTable`]: the table `tt:route:{terminal_id}` → [`Route`] (which
//!   instance, at which internal URL, since when, and the terminal's status),
//!   written by the gateway holding the connection with a TTL that its
//!   refresher renews, so that the routes of an instance that died expire on
//!   their own. A newer connection always wins over an older one (a terminal
//!   whose agent reconnected to another instance while its old connection
//!   lingers on a dead or partitioned one resolves to the newest), and a
//!   route is deleted on disconnect only by the connection that wrote it.
//! - [`RoutedDispatch`]: the [`Dispatch`] of API and MCP instances. It looks
//!   the terminal up and posts the command to that gateway's internal
//!   dispatch route; with no route it asks the configured gateway address
//!   (`GATEWAY_URL`, normally the load balancer of the gateways), which
//!   answers "not found" or "not connected" from the store, or relays.
//!   [`Dispatch::prepare`] reads the route ahead (the REST API overlaps it
//!   with its rate-limit call); the command then uses it if it follows
//!   within [`PREPARED_FOR`]. A read (any command but a trade) is sent at
//!   once to the holder this instance last saw for the terminal while the
//!   table is read beside it: the answer is used if the table still names
//!   that connection, else dropped and the read sent where the table says
//!   (reads change nothing, so sending one twice is harmless; trades always
//!   wait for the table).
//! - Route moves are published: the table's scripts publish the key of
//!   every route that changes connection or is deleted on
//!   [`MOVES_CHANNEL`]. An instance subscribed to it
//!   ([`RoutedDispatch::watch_moves`], which the API and MCP binaries start)
//!   keeps a copy of the table: it loads the whole table when the
//!   subscription comes up, and reads each route it hears of again, in
//!   order with the messages ([`subscribe`]). A read then goes to the known
//!   holder with no table read at all (for at most [`TRUSTED_FOR`] after
//!   the route was read; a holder that no longer has the terminal answers
//!   "unreachable", and the read follows the table). While the subscription
//!   is down, reads check the table as above.
//! - [`conn::ThreadConnections`]: the Redis connections of these hot paths,
//!   one multiplexed connection per thread (no pool check per call).
//!
//! Why internal HTTP to the holder rather than a Redis channel: the command
//! and its answer take one hop over the pooled HTTP connections the
//! single-gateway deployment already uses, with the same timeout and
//! error semantics; Redis is read at most once (a `GET`) per command. A Redis
//! request/response channel would take two Redis round trips and a
//! subscription per instance, and lose the command when an instance dies
//! between publish and reply without a way to tell the caller. See
//! `docs/deploy.md`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deadpool_redis::redis;
use serde::{Deserialize, Serialize};
use tradeterm_protocol::http_client::HttpDispatch;
use tradeterm_protocol::{Command, CommandResult, Dispatch, DispatchError, TerminalStatus};

/// Prefix of [`route_key`].
const ROUTE_PREFIX: &str = "tt:route:";

/// Redis key of a terminal's route.
pub fn route_key(terminal_id: &str) -> String {
    format!("{ROUTE_PREFIX}{terminal_id}")
}

/// Redis channel on which the route table's scripts publish the key of
/// every route that changed connection or was deleted (not the refreshes
/// of a route by its own connection): what lets an API or MCP instance
/// trust the routes it has seen ([`RoutedDispatch::watch_moves`]).
pub const MOVES_CHANNEL: &str = "tt:route:moved";

/// Where a terminal's agent is connected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    /// Name of the gateway instance (`GATEWAY_INSTANCE_ID`), for logs.
    pub instance: String,
    /// Internal base URL of that instance (`GATEWAY_ADVERTISE_URL`).
    pub url: String,
    /// The connection: unique across instances and restarts.
    pub conn: String,
    /// When the connection started (ms since the epoch): the newest wins.
    pub since_ms: i64,
    /// License owning the terminal (a route never serves another license).
    pub license_id: String,
    /// The terminal's status as that gateway knows it.
    pub status: TerminalStatus,
}

impl Route {
    /// Whether both name the same connection at the same instance address.
    fn same_connection(&self, other: &Route) -> bool {
        self.conn == other.conn && self.url == other.url
    }
}

/// Why the route table could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("route table: {0}")]
pub struct RouteError(String);

impl RouteError {
    fn from(e: impl std::fmt::Display) -> Self {
        Self(e.to_string())
    }
}

/// Sets the route unless a newer connection of another writer holds it.
/// KEYS[1] route key; ARGV: value, conn, since_ms, ttl_ms. Returns 1 when
/// written, 0 when a newer connection holds the route. A write that changes
/// the connection (not a refresh of the same one) is published on
/// [`MOVES_CHANNEL`].
const CLAIM: &str = r"
local cur = redis.call('GET', KEYS[1])
local moved = true
if cur then
  local ok, c = pcall(cjson.decode, cur)
  if ok and type(c) == 'table' then
    if c.conn == ARGV[2] then
      moved = false
    elseif tonumber(c.since_ms) and tonumber(c.since_ms) > tonumber(ARGV[3]) then
      return 0
    end
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
if moved then redis.call('PUBLISH', 'tt:route:moved', KEYS[1]) end
return 1
";

/// Deletes the route if it still names this connection, and publishes the
/// deletion on [`MOVES_CHANNEL`]. KEYS[1] route key; ARGV[1] conn. Returns
/// the number of keys deleted.
const RELEASE: &str = r"
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, c = pcall(cjson.decode, cur)
  if ok and type(c) == 'table' and c.conn == ARGV[1] then
    redis.call('DEL', KEYS[1])
    redis.call('PUBLISH', 'tt:route:moved', KEYS[1])
    return 1
  end
end
return 0
";

pub mod conn;
pub mod guess;
pub mod subscribe;

use conn::ThreadConnections;

/// How long one route-table call may take before it counts as failed (a
/// lookup then falls back to the entry gateway). [`RouteTable::claim_all`]
/// gets ten times as long (thousands of routes in one pipeline).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(1);

/// The route table in Redis. Cheap to clone.
#[derive(Clone)]
pub struct RouteTable {
    conns: Arc<ThreadConnections>,
    ttl: Duration,
    call_timeout: Duration,
    claim: Arc<redis::Script>,
    release: Arc<redis::Script>,
}

impl std::fmt::Debug for RouteTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteTable")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RouteTable {
    /// The table in the Redis of `pool`; routes live `ttl` unless refreshed.
    pub fn new(pool: deadpool_redis::Pool, ttl: Duration) -> Self {
        Self {
            conns: Arc::new(ThreadConnections::new(pool)),
            ttl: ttl.max(Duration::from_secs(1)),
            call_timeout: CALL_TIMEOUT,
            claim: Arc::new(redis::Script::new(CLAIM)),
            release: Arc::new(redis::Script::new(RELEASE)),
        }
    }

    /// How long a route lives without a refresh.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The same table with another [`CALL_TIMEOUT`].
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Runs `f` on this thread's connection within `limit`; on any failure
    /// the connection is forgotten (the next call opens a new one).
    async fn call<T, F, Fut>(&self, limit: Duration, f: F) -> Result<T, RouteError>
    where
        F: FnOnce(redis::aio::MultiplexedConnection) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let conn = self.conns.get().await.map_err(RouteError)?;
        match tokio::time::timeout(limit, f(conn)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                self.conns.forget();
                Err(RouteError::from(e))
            }
            Err(_) => {
                self.conns.forget();
                Err(RouteError(format!("no answer within {} ms", limit.as_millis())))
            }
        }
    }

    /// Writes (or refreshes) `route` for `terminal_id`. `Ok(false)` when a
    /// newer connection holds the terminal: the caller's connection is stale.
    ///
    /// # Errors
    /// Redis failed.
    pub async fn claim(&self, terminal_id: &str, route: &Route) -> Result<bool, RouteError> {
        // One EVALSHA (the script is loaded only when Redis does not know it).
        let value = serde_json::to_string(route).map_err(RouteError::from)?;
        let mut invocation = self.claim.key(route_key(terminal_id));
        invocation
            .arg(value)
            .arg(&route.conn)
            .arg(route.since_ms)
            .arg(self.ttl.as_millis() as u64);
        let written: i64 = self
            .call(self.call_timeout, |mut c| async move {
                invocation.invoke_async(&mut c).await
            })
            .await?;
        Ok(written == 1)
    }

    /// [`RouteTable::claim`] for many terminals in one pipeline (after a
    /// `SCRIPT LOAD`, as a pipeline cannot fall back from `EVALSHA`); one
    /// answer per route, in order.
    ///
    /// # Errors
    /// Redis failed.
    pub async fn claim_all(&self, routes: &[(&str, &Route)]) -> Result<Vec<bool>, RouteError> {
        if routes.is_empty() {
            return Ok(Vec::new());
        }
        let ttl_ms = self.ttl.as_millis() as u64;
        let mut pipe = redis::pipe();
        for (terminal, route) in routes {
            let value = serde_json::to_string(route).map_err(RouteError::from)?;
            pipe.cmd("EVALSHA")
                .arg(self.claim.get_hash())
                .arg(1)
                .arg(route_key(terminal))
                .arg(value)
                .arg(&route.conn)
                .arg(route.since_ms)
                .arg(ttl_ms);
        }
        let written: Vec<i64> = self
            .call(self.call_timeout * 10, |mut c| async move {
                // Loads the script once per server (a restarted Redis forgets it).
                let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(CLAIM).query_async(&mut c).await?;
                pipe.query_async(&mut c).await
            })
            .await?;
        Ok(written.into_iter().map(|w| w == 1).collect())
    }

    /// Deletes the terminal's route if connection `conn` still holds it.
    ///
    /// # Errors
    /// Redis failed.
    pub async fn release(&self, terminal_id: &str, conn: &str) -> Result<bool, RouteError> {
        let mut invocation = self.release.key(route_key(terminal_id));
        invocation.arg(conn);
        let deleted: i64 = self
            .call(self.call_timeout, |mut c| async move {
                invocation.invoke_async(&mut c).await
            })
            .await?;
        Ok(deleted == 1)
    }

    /// The terminal's route, if an agent is connected to some instance.
    ///
    /// # Errors
    /// Redis failed.
    pub async fn lookup(&self, terminal_id: &str) -> Result<Option<Route>, RouteError> {
        Ok(self.lookup_all(&[terminal_id]).await?.pop().flatten())
    }

    /// Routes of many terminals in one round trip, in order.
    ///
    /// # Errors
    /// Redis failed.
    pub async fn lookup_all(&self, terminal_ids: &[&str]) -> Result<Vec<Option<Route>>, RouteError> {
        if terminal_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut mget = redis::cmd("MGET");
        for t in terminal_ids {
            mget.arg(route_key(t));
        }
        let values: Vec<Option<String>> = self
            .call(self.call_timeout, |mut c| async move { mget.query_async(&mut c).await })
            .await?;
        Ok(values
            .into_iter()
            .map(|v| v.and_then(|v| serde_json::from_str(&v).ok()))
            .collect())
    }
}

/// A connection id unique across instances and restarts: the instance's
/// random boot nonce and its connection counter.
pub fn conn_id(boot: &str, counter: u64) -> String {
    format!("{boot}:{counter}")
}

/// A fresh random boot nonce for [`conn_id`].
pub fn boot_nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// The [`Dispatch`] of API and MCP instances in a scaled-out deployment:
/// commands go to the gateway that holds the terminal (route table), else
/// to the entry gateway (`GATEWAY_URL`). Terminal lists are the entry
/// gateway's, which merges the route table.
pub struct RoutedDispatch {
    table: RouteTable,
    entry: HttpDispatch,
    holders: Mutex<HashMap<String, HttpDispatch>>,
    /// Routes read by [`Dispatch::prepare`] for the command about to follow.
    prepared: Mutex<HashMap<String, (Option<Route>, Instant)>>,
    /// The last route read from the table for each terminal: where a read
    /// goes, while the table is read beside it or, when this instance hears
    /// of every move ([`RoutedDispatch::watch_moves`]), alone.
    known: Arc<Known>,
}

/// The routes an instance has seen, and whether it hears of their moves.
#[derive(Default)]
struct Known {
    state: Mutex<KnownState>,
    /// The subscription to [`MOVES_CHANNEL`] is up: every route remembered
    /// since it came up and not heard of since is still the table's.
    watching: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct KnownState {
    /// Route (shared: each read takes one) and when it was read.
    routes: HashMap<String, (Arc<Route>, Instant)>,
    /// Bumped by every move heard and every new subscription: a table read
    /// that started before a bump does not remember its answer (it may
    /// predate the move).
    generation: u64,
}

impl Known {
    fn lock(&self) -> std::sync::MutexGuard<'_, KnownState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn generation(&self) -> u64 {
        self.lock().generation
    }

    fn watching(&self) -> bool {
        self.watching.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Routes were written or deleted in the table by other connections.
    fn moved(&self, terminals: &[String]) {
        let mut state = self.lock();
        state.generation += 1;
        for t in terminals {
            state.routes.remove(t);
        }
    }

    /// Routes read by the moves subscription, in order with the moves it
    /// hears (so they are current whatever the generation).
    fn load<'a>(&self, routes: impl Iterator<Item = (&'a String, Option<Route>)>) {
        let mut state = self.lock();
        let now = Instant::now();
        for (terminal, route) in routes {
            match route {
                Some(route) => {
                    if state.routes.len() < KNOWN_MAX || state.routes.contains_key(terminal) {
                        state.routes.insert(terminal.clone(), (Arc::new(route), now));
                    }
                }
                None => {
                    state.routes.remove(terminal);
                }
            }
        }
    }

    /// The subscription came up: nothing seen before it can be trusted (a
    /// move may have gone unheard).
    fn watch_started(&self) {
        let mut state = self.lock();
        state.generation += 1;
        state.routes.clear();
        self.watching.store(true, std::sync::atomic::Ordering::Release);
    }

    fn watch_lost(&self) {
        let mut state = self.lock();
        state.generation += 1;
        self.watching.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// How long a route heard of no move is trusted without reading the table
/// (a bound on what an unheard move could cost, for example while a
/// gateway of an older version, which does not publish its moves, is being
/// upgraded); then a read checks the table beside it, which renews it.
pub const TRUSTED_FOR: Duration = Duration::from_secs(300);

/// How long a route read by [`Dispatch::prepare`] serves the command that
/// follows it: the route is then as fresh as one read for the command itself
/// (a command never waits on a table read older than this). Each prepared
/// route serves one command.
pub const PREPARED_FOR: Duration = Duration::from_millis(250);

/// Prepared routes kept at most (unused ones beyond it are dropped).
const PREPARED_MAX: usize = 4096;

/// Known routes kept at most (beyond it, the others are read each time).
const KNOWN_MAX: usize = 262_144;

impl std::fmt::Debug for RoutedDispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoutedDispatch")
            .field("entry", &self.entry.base_url())
            .finish_non_exhaustive()
    }
}

impl RoutedDispatch {
    /// Routes with `table`, falling back to `entry`.
    pub fn new(table: RouteTable, entry: HttpDispatch) -> Self {
        Self {
            table,
            entry,
            holders: Mutex::new(HashMap::new()),
            prepared: Mutex::new(HashMap::new()),
            known: Arc::new(Known::default()),
        }
    }

    /// Starts hearing of route moves on [`MOVES_CHANNEL`] of the Redis at
    /// `url`, on a thread of its own that ends with this dispatch. While the
    /// subscription is up, a read goes to the holder this instance last saw
    /// for the terminal without reading the table (for at most
    /// [`TRUSTED_FOR`]); an answer "not held here" from that holder sends
    /// it to where the table says. When the subscription is lost (Redis
    /// restarting, network), reads check the table again until it is back.
    ///
    /// # Errors
    /// `url` is not a Redis URL, or the thread could not start.
    pub fn watch_moves(&self, url: &str) -> Result<(), RouteError> {
        let heard = MovesHeard {
            known: Arc::downgrade(&self.known),
            table: self.table.clone(),
        };
        subscribe::spawn(url, MOVES_CHANNEL, "tt-route-moves", heard).map_err(RouteError)
    }

    /// Whether this instance hears of route moves now.
    pub fn watching_moves(&self) -> bool {
        self.known.watching()
    }

    /// Records what the table said of a terminal, in a read that started at
    /// `generation` of the known routes.
    fn remember(&self, terminal_id: &str, route: Option<&Route>, generation: u64) {
        let mut known = self.known.lock();
        match route {
            Some(route) if known.generation == generation => {
                // Full: the routes known stay, the others are read each time.
                if known.routes.len() < KNOWN_MAX || known.routes.contains_key(terminal_id) {
                    known
                        .routes
                        .insert(terminal_id.to_owned(), (Arc::new(route.clone()), Instant::now()));
                }
            }
            // A move was heard while reading: the answer may predate it.
            Some(_) => {}
            None => {
                known.routes.remove(terminal_id);
            }
        }
    }

    /// The last route the table gave for the terminal, if it is the
    /// license's, and whether it can be trusted without reading the table.
    fn known(&self, license_id: &str, terminal_id: &str) -> Option<(Arc<Route>, bool)> {
        let watching = self.known.watching();
        let known = self.known.lock();
        let (route, at) = known
            .routes
            .get(terminal_id)
            .filter(|(r, _)| r.license_id == license_id)?;
        Some((route.clone(), watching && at.elapsed() < TRUSTED_FOR))
    }

    /// Forgets the terminal's known route if it is still `route`.
    fn forget(&self, terminal_id: &str, route: &Arc<Route>) {
        let mut known = self.known.lock();
        if known
            .routes
            .get(terminal_id)
            .is_some_and(|(r, _)| Arc::ptr_eq(r, route))
        {
            known.routes.remove(terminal_id);
        }
    }

    /// Reads the table, remembering the answer.
    async fn lookup(&self, terminal_id: &str) -> Result<Option<Route>, RouteError> {
        let generation = self.known.generation();
        let route = self.table.lookup(terminal_id).await;
        if let Ok(route) = &route {
            self.remember(terminal_id, route.as_ref(), generation);
        }
        route
    }

    /// A read sent to the `known` holder alone, trusted because no move of
    /// the terminal was heard since the table named it. "Not held there"
    /// (the instance is down, or the agent left it) sends the read where the
    /// table says now.
    async fn read_trusted(
        &self,
        known: Arc<Route>,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
    ) -> Result<CommandResult, DispatchError> {
        let out = self
            .holder(&known.url)
            .execute(license_id, terminal_id, command.clone(), timeout)
            .await;
        if out != Err(DispatchError::Unreachable) {
            return out;
        }
        self.forget(terminal_id, &known);
        let fresh = self.lookup(terminal_id).await;
        if let Ok(Some(route)) = &fresh
            && route.same_connection(&known)
        {
            // The table still names the connection that just answered "not held".
            return out;
        }
        self.dispatch_on(fresh, license_id, terminal_id, command, timeout).await
    }

    /// Sends the command where `route` (the table's answer) says.
    async fn dispatch_on(
        &self,
        route: Result<Option<Route>, RouteError>,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
    ) -> Result<CommandResult, DispatchError> {
        match route {
            Ok(Some(route)) if route.license_id == license_id => {
                let result = self
                    .holder(&route.url)
                    .execute(license_id, terminal_id, command, timeout)
                    .await;
                if result == Err(DispatchError::Unreachable) {
                    tracing::info!(
                        terminal = %terminal_id,
                        instance = %route.instance,
                        "the gateway the route names does not hold the terminal (down or moved)"
                    );
                }
                result
            }
            // Another license's terminal is the entry gateway's to refuse (as not found).
            Ok(_) => self.entry.execute(license_id, terminal_id, command, timeout).await,
            Err(e) => {
                tracing::warn!(error = %e, "route table unreadable: dispatching through the entry gateway");
                self.entry.execute(license_id, terminal_id, command, timeout).await
            }
        }
    }

    /// A read sent to the `known` holder at once, with the table read
    /// beside it (see the module docs). The answer is used when the table
    /// still names the same connection, or when the table cannot be read and
    /// the holder answered from its own connection (a holder answers only
    /// for terminals it holds); otherwise the read goes where the table says.
    async fn read_ahead(
        &self,
        known: Arc<Route>,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
    ) -> Result<CommandResult, DispatchError> {
        let holder = self.holder(&known.url);
        let ahead = holder.execute(license_id, terminal_id, command.clone(), timeout);
        let lookup = self.lookup(terminal_id);
        tokio::pin!(ahead, lookup);
        let mut answered = None;
        let fresh = loop {
            tokio::select! {
                biased;
                route = &mut lookup => break route,
                out = &mut ahead, if answered.is_none() => answered = Some(out),
            }
        };
        let keep = match &fresh {
            Ok(Some(route)) => route.same_connection(&known) && route.license_id == license_id,
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(error = %e, "route table unreadable: keeping the answer of the last known holder");
                true
            }
        };
        if keep {
            let out = match answered {
                Some(out) => out,
                None => ahead.await,
            };
            if fresh.is_ok() || out != Err(DispatchError::Unreachable) {
                return out;
            }
        }
        self.dispatch_on(fresh, license_id, terminal_id, command, timeout).await
    }

    /// The route [`Dispatch::prepare`] read for this command, if recent.
    fn take_prepared(&self, terminal_id: &str) -> Option<Option<Route>> {
        let mut prepared = self.prepared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        prepared
            .remove(terminal_id)
            .filter(|(_, at)| at.elapsed() < PREPARED_FOR)
            .map(|(route, _)| route)
    }

    fn holder(&self, url: &str) -> HttpDispatch {
        let mut holders = self.holders.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(h) = holders.get(url) {
            return h.clone();
        }
        // Instances come and go: keep the map bounded.
        if holders.len() >= 1024 {
            holders.clear();
        }
        let h = self.entry.holder(url);
        holders.insert(url.to_owned(), h.clone());
        h
    }
}

#[async_trait]
impl Dispatch for RoutedDispatch {
    async fn execute(
        &self,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
    ) -> Result<CommandResult, DispatchError> {
        let route = match self.take_prepared(terminal_id) {
            Some(route) => Ok(route),
            None if !command.is_trade() => match self.known(license_id, terminal_id) {
                Some((known, true)) => {
                    return self
                        .read_trusted(known, license_id, terminal_id, command, timeout)
                        .await;
                }
                Some((known, false)) => {
                    return self.read_ahead(known, license_id, terminal_id, command, timeout).await;
                }
                None => self.lookup(terminal_id).await,
            },
            None => self.lookup(terminal_id).await,
        };
        self.dispatch_on(route, license_id, terminal_id, command, timeout).await
    }

    async fn terminals(&self, license_id: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
        self.entry.terminals(license_id).await
    }

    async fn prepare(&self, license_id: &str, terminal_id: &str) {
        // A trusted route needs no read (a trade reads the table itself).
        if matches!(self.known(license_id, terminal_id), Some((_, true))) {
            return;
        }
        // A failed read leaves nothing: the command reads the table itself.
        let Ok(route) = self.lookup(terminal_id).await else {
            return;
        };
        let mut prepared = self.prepared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if prepared.len() >= PREPARED_MAX {
            prepared.retain(|_, (_, at)| at.elapsed() < PREPARED_FOR);
            if prepared.len() >= PREPARED_MAX {
                prepared.clear();
            }
        }
        prepared.insert(terminal_id.to_owned(), (route, Instant::now()));
    }
}

/// The subscription of [`RoutedDispatch::watch_moves`]; ends when the
/// dispatch is dropped.
struct MovesHeard {
    known: std::sync::Weak<Known>,
    table: RouteTable,
}

impl MovesHeard {
    /// The terminals of every route in the table (`SCAN`).
    async fn all_terminals(&self) -> Result<Vec<String>, RouteError> {
        let mut cursor = 0u64;
        let mut terminals = Vec::new();
        loop {
            let (next, keys): (u64, Vec<String>) = self
                .table
                .call(self.table.call_timeout, |mut c| async move {
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(format!("{ROUTE_PREFIX}*"))
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut c)
                        .await
                })
                .await?;
            terminals.extend(
                keys.iter()
                    .filter_map(|k| k.strip_prefix(ROUTE_PREFIX))
                    .map(str::to_owned),
            );
            if next == 0 || terminals.len() >= KNOWN_MAX {
                return Ok(terminals);
            }
            cursor = next;
        }
    }

    /// Reads the routes of `terminals` (1 000 per `MGET`) into the known
    /// routes. Runs before the next messages are handled, so a move that
    /// happens meanwhile is applied after what this read.
    async fn load(&self, known: &Known, terminals: &[String]) {
        for chunk in terminals.chunks(1000) {
            let ids: Vec<&str> = chunk.iter().map(String::as_str).collect();
            match self.table.lookup_all(&ids).await {
                Ok(routes) => known.load(chunk.iter().zip(routes)),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read routes heard of; they are read on their next command");
                    return;
                }
            }
        }
    }
}

impl subscribe::Subscription for MovesHeard {
    async fn heard(&self, what: subscribe::Heard) {
        let Some(known) = self.known.upgrade() else { return };
        match what {
            subscribe::Heard::Up => {
                known.watch_started();
                // Every route the table holds, so that no read waits for it.
                match self.all_terminals().await {
                    Ok(terminals) => {
                        self.load(&known, &terminals).await;
                        tracing::info!(routes = terminals.len(), "route table loaded");
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot load the route table; routes are read as needed"),
                }
            }
            subscribe::Heard::Messages(keys) => {
                let terminals: Vec<String> = keys
                    .iter()
                    .map(|k| k.strip_prefix(ROUTE_PREFIX).unwrap_or(k).to_owned())
                    .collect();
                known.moved(&terminals);
                self.load(&known, &terminals).await;
            }
            subscribe::Heard::Down => known.watch_lost(),
        }
    }

    fn alive(&self) -> bool {
        self.known.strong_count() > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(id: &str) -> TerminalStatus {
        TerminalStatus {
            id: id.into(),
            name: "t".into(),
            connected: true,
            bound: true,
            platform: None,
            build: None,
            account_login: None,
            account_server: None,
            account_currency: None,
            trade_mode: None,
            permissions: Default::default(),
            last_seen: None,
            connected_since: None,
        }
    }

    fn route(instance: &str, conn: &str, since_ms: i64, terminal: &str) -> Route {
        Route {
            instance: instance.into(),
            url: format!("http://{instance}"),
            conn: conn.into(),
            since_ms,
            license_id: "lic".into(),
            status: status(terminal),
        }
    }

    /// The machine's Redis (started before every session and CI run).
    fn table(ttl: Duration) -> RouteTable {
        let pool = deadpool_redis::Config::from_url("redis://127.0.0.1:6379")
            .create_pool(Some(deadpool_redis::Runtime::Tokio1))
            .unwrap();
        RouteTable::new(pool, ttl)
    }

    fn terminal() -> String {
        format!("test-term-{}", uuid::Uuid::new_v4().simple())
    }

    #[tokio::test]
    async fn the_newest_connection_wins_and_only_its_writer_releases_it() {
        let t = table(Duration::from_secs(30));
        let id = terminal();
        let old = route("a", "boot-a:1", 1_000, &id);
        let new = route("b", "boot-b:7", 2_000, &id);
        assert!(t.claim(&id, &old).await.unwrap());
        assert!(t.claim(&id, &new).await.unwrap(), "a newer connection takes the route");
        // The old connection's refresh does not take it back.
        assert!(!t.claim(&id, &old).await.unwrap());
        assert_eq!(t.lookup(&id).await.unwrap(), Some(new.clone()));
        // Its release does not remove the newer route either.
        assert!(!t.release(&id, &old.conn).await.unwrap());
        assert_eq!(t.lookup(&id).await.unwrap().map(|r| r.conn), Some(new.conn.clone()));
        // The holder refreshes (same conn, same since) and releases.
        assert!(t.claim(&id, &new).await.unwrap());
        assert!(t.release(&id, &new.conn).await.unwrap());
        assert_eq!(t.lookup(&id).await.unwrap(), None);
        // After a release, an older connection may claim again.
        assert!(t.claim(&id, &old).await.unwrap());
        t.release(&id, &old.conn).await.unwrap();
    }

    #[tokio::test]
    async fn routes_expire_without_refresh_and_batches_answer_in_order() {
        let t = table(Duration::from_secs(1));
        let (a, b) = (terminal(), terminal());
        let ra = route("a", "x:1", 5, &a);
        let rb = route("a", "x:2", 5, &b);
        assert_eq!(t.claim_all(&[(&a, &ra), (&b, &rb)]).await.unwrap(), vec![true, true]);
        let found = t.lookup_all(&[&a, "nobody-here", &b]).await.unwrap();
        assert_eq!(found, vec![Some(ra), None, Some(rb)]);
        tokio::time::sleep(Duration::from_millis(1_300)).await;
        assert_eq!(t.lookup_all(&[&a, &b]).await.unwrap(), vec![None, None]);
    }

    #[tokio::test]
    async fn an_unreadable_value_is_no_route_and_is_overwritten() {
        let t = table(Duration::from_secs(30));
        let id = terminal();
        let mut c = t.conns.get().await.unwrap();
        let _: () = redis::cmd("SET")
            .arg(route_key(&id))
            .arg("not json")
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(t.lookup(&id).await.unwrap(), None);
        let r = route("a", "x:1", 1, &id);
        assert!(t.claim(&id, &r).await.unwrap());
        assert!(t.release(&id, &r.conn).await.unwrap());
    }

    #[tokio::test]
    async fn a_prepared_route_serves_the_next_command_only_while_fresh() {
        let t = table(Duration::from_secs(30));
        let id = terminal();
        // The holder refuses connections (→ unreachable); the entry gateway
        // does too, which a plain client reports as a gateway error: the
        // error tells which way a command went.
        let mut held = route("127.0.0.1:1", "x:1", 1, &id);
        held.url = "http://127.0.0.1:1".into();
        assert!(t.claim(&id, &held).await.unwrap());
        let d = RoutedDispatch::new(t.clone(), HttpDispatch::new("http://127.0.0.1:2", "tok").unwrap());
        let went = async |d: &RoutedDispatch| {
            d.execute("lic", &id, Command::AccountInfo, Duration::from_secs(1))
                .await
                .unwrap_err()
        };
        assert_eq!(went(&d).await, DispatchError::Unreachable, "routed to the holder");

        d.prepare("lic", &id).await;
        assert!(t.release(&id, &held.conn).await.unwrap());
        // The prepared route serves the command that follows at once...
        assert_eq!(went(&d).await, DispatchError::Unreachable);
        // ...once: the next one reads the table (no route: the entry gateway).
        assert!(matches!(went(&d).await, DispatchError::Gateway(_)));
        // A prepared route grown older than PREPARED_FOR is not used.
        assert!(t.claim(&id, &held).await.unwrap());
        d.prepare("lic", &id).await;
        assert!(t.release(&id, &held.conn).await.unwrap());
        tokio::time::sleep(PREPARED_FOR + Duration::from_millis(50)).await;
        assert!(matches!(went(&d).await, DispatchError::Gateway(_)));
        // Another license's command never follows a route of this one.
        assert!(t.claim(&id, &held).await.unwrap());
        d.prepare("lic", &id).await;
        let other = d
            .execute("other", &id, Command::AccountInfo, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(matches!(other, DispatchError::Gateway(_)), "{other:?}");
        t.release(&id, &held.conn).await.unwrap();
    }

    /// A fake gateway on loopback. It counts dispatch requests and answers
    /// each with the symbol list `[name]`, or never answers once `hang` is set.
    /// It refuses the dispatch channel (404), so dispatches come over HTTP.
    struct Fake {
        url: String,
        seen: Arc<std::sync::atomic::AtomicUsize>,
        hang: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Fake {
        fn seen(&self) -> usize {
            self.seen.load(std::sync::atomic::Ordering::SeqCst)
        }
        fn hang(&self) {
            self.hang.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        fn route(&self, conn: &str, since_ms: i64, terminal: &str) -> Route {
            let mut r = route(self.url.trim_start_matches("http://"), conn, since_ms, terminal);
            r.url = self.url.clone();
            r
        }
    }

    async fn fake_holder(name: &'static str) -> Fake {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake = Fake {
            url: format!("http://{}", listener.local_addr().unwrap()),
            seen: Arc::new(AtomicUsize::new(0)),
            hang: Arc::new(AtomicBool::new(false)),
        };
        let (seen, hang) = (fake.seen.clone(), fake.hang.clone());
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let (seen, hang) = (seen.clone(), hang.clone());
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        // One request: its head, then `content-length` bytes.
                        let head_end = loop {
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        while buf.len() < head_end + len {
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        buf.drain(..head_end + len);
                        if !head.starts_with("post /internal/v1/dispatch ") {
                            // The dispatch channel's upgrade: refused, so
                            // that every dispatch comes over HTTP.
                            let refused = "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
                            if sock.write_all(refused.as_bytes()).await.is_err() {
                                return;
                            }
                            continue;
                        }
                        seen.fetch_add(1, Ordering::SeqCst);
                        if hang.load(Ordering::SeqCst) {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                            return;
                        }
                        let reply = tradeterm_protocol::dispatch::DispatchReply::from(Ok(CommandResult::Symbols {
                            symbols: vec![name.to_owned()],
                        }));
                        let body = serde_json::to_string(&reply).unwrap();
                        let http = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if sock.write_all(http.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        fake
    }

    fn symbols(r: Result<CommandResult, DispatchError>) -> Vec<String> {
        match r {
            Ok(CommandResult::Symbols { symbols }) => symbols,
            other => panic!("not a symbol list: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_read_goes_ahead_to_the_known_holder_and_follows_the_table() {
        let t = table(Duration::from_secs(30));
        let id = terminal();
        // The entry gateway refuses connections: a command sent there fails
        // with a gateway error, which tells where it went.
        let d = RoutedDispatch::new(t.clone(), HttpDispatch::new("http://127.0.0.1:2", "tok").unwrap());
        // Bounded, so that a read stuck on a hung holder fails the test instead of hanging it.
        let run = async |d: &RoutedDispatch, license: &str, command: Command| {
            tokio::time::timeout(
                Duration::from_secs(20),
                d.execute(license, &id, command, Duration::from_secs(60)),
            )
            .await
            .expect("the command must not wait for a hung holder")
        };
        let (a, b, c) = (fake_holder("a").await, fake_holder("b").await, fake_holder("c").await);
        let at_a = a.route("a:1", 1_000, &id);
        assert!(t.claim(&id, &at_a).await.unwrap());
        // The first read learns the route, the next goes ahead to it: one request each.
        assert_eq!(symbols(run(&d, "lic", Command::Symbols).await), ["a"]);
        assert_eq!(symbols(run(&d, "lic", Command::Symbols).await), ["a"]);
        assert_eq!(a.seen(), 2);

        // The agent moved to b while its old connection on a hangs: the read
        // sent ahead to a is dropped and the answer comes from b.
        a.hang();
        let at_b = b.route("b:1", 2_000, &id);
        assert!(t.claim(&id, &at_b).await.unwrap());
        assert_eq!(symbols(run(&d, "lic", Command::Symbols).await), ["b"]);
        assert_eq!((a.seen(), b.seen()), (3, 1), "sent ahead to a, then to b");

        // A trade never goes ahead: the table moved to c, the known route
        // still names b, and only c sees the trade.
        let at_c = c.route("c:1", 3_000, &id);
        assert!(t.claim(&id, &at_c).await.unwrap());
        assert_eq!(symbols(run(&d, "lic", Command::CancelOrder { ticket: 7 }).await), ["c"]);
        assert_eq!((b.seen(), c.seen()), (1, 1));

        // Another license's read never follows this license's route.
        let other = run(&d, "other", Command::Symbols).await.unwrap_err();
        assert!(matches!(other, DispatchError::Gateway(_)), "{other:?}");
        assert_eq!(c.seen(), 1);

        // The route is gone (agent disconnected): the read sent ahead is
        // dropped and the entry gateway answers.
        assert!(t.release(&id, &at_c.conn).await.unwrap());
        let gone = run(&d, "lic", Command::Symbols).await.unwrap_err();
        assert!(matches!(gone, DispatchError::Gateway(_)), "{gone:?}");
        assert_eq!(c.seen(), 2, "sent ahead to c, then to the entry gateway");
        // Nothing is known any more: the next read waits for the table.
        let again = run(&d, "lic", Command::Symbols).await.unwrap_err();
        assert!(matches!(again, DispatchError::Gateway(_)), "{again:?}");
        assert_eq!(c.seen(), 2);
    }

    /// Writes a route straight into the table, as no gateway does: nothing
    /// is published, so only a table read can see it.
    async fn write_unheard(t: &RouteTable, terminal: &str, route: &Route) {
        let mut c = t.conns.get().await.unwrap();
        let _: () = redis::cmd("SET")
            .arg(route_key(terminal))
            .arg(serde_json::to_string(route).unwrap())
            .arg("PX")
            .arg(30_000)
            .query_async(&mut c)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_watching_instance_trusts_the_routes_it_knows_until_it_hears_they_moved() {
        let t = table(Duration::from_secs(30));
        let id = terminal();
        let (a, b, c) = (fake_holder("a").await, fake_holder("b").await, fake_holder("c").await);
        // A route in the table before the instance subscribes.
        let early = terminal();
        write_unheard(&t, &early, &a.route("a:0", 500, &early)).await;
        let d = RoutedDispatch::new(t.clone(), HttpDispatch::new("http://127.0.0.1:2", "tok").unwrap());
        d.watch_moves("redis://127.0.0.1:6379").unwrap();
        for _ in 0..250 {
            if d.watching_moves() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(d.watching_moves(), "subscribed to route moves");
        let run = async |command: Command| {
            tokio::time::timeout(
                Duration::from_secs(20),
                d.execute("lic", &id, command, Duration::from_secs(10)),
            )
            .await
            .expect("answered")
        };
        // The whole table was loaded on subscribing: a read of `early` goes
        // to a with no table read (the table names b by now, unheard).
        write_unheard(&t, &early, &b.route("b:0", 600, &early)).await;
        let r = d
            .execute("lic", &early, Command::Symbols, Duration::from_secs(10))
            .await;
        assert_eq!(symbols(r), ["a"]);
        assert_eq!((a.seen(), b.seen()), (1, 0));
        t.release(&early, "b:0").await.unwrap();

        // A holder that is down: the read learns its route and gets "unreachable".
        let mut dead = route("dead", "dead:1", 500, &id);
        dead.url = "http://127.0.0.1:1".into();
        assert!(t.claim(&id, &dead).await.unwrap());
        assert_eq!(run(Command::Symbols).await.unwrap_err(), DispatchError::Unreachable);
        // The table names a without a word (no move published): the trusted
        // route answers "unreachable" again, so the read follows the table.
        write_unheard(&t, &id, &a.route("a:1", 1_000, &id)).await;
        assert_eq!(symbols(run(Command::Symbols).await), ["a"]);
        assert_eq!(a.seen(), 2);

        // The table names b without a word: reads keep going to a alone,
        // which shows no table read is made for them.
        write_unheard(&t, &id, &b.route("b:1", 2_000, &id)).await;
        assert_eq!(symbols(run(Command::Symbols).await), ["a"]);
        assert_eq!(symbols(run(Command::Symbols).await), ["a"]);
        assert_eq!((a.seen(), b.seen()), (4, 0));
        // A trade always reads the table (and the instance learns b from it).
        assert_eq!(symbols(run(Command::CancelOrder { ticket: 1 }).await), ["b"]);
        assert_eq!(b.seen(), 1);
        assert_eq!(symbols(run(Command::Symbols).await), ["b"]);
        assert_eq!((a.seen(), b.seen()), (4, 2));

        // A gateway claims the route for a new connection: the move is
        // heard, and reads follow it within moments.
        assert!(t.claim(&id, &c.route("c:1", 3_000, &id)).await.unwrap());
        let mut went_to_c = false;
        for _ in 0..100 {
            if symbols(run(Command::Symbols).await) == ["c"] {
                went_to_c = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(went_to_c, "the move was heard");
        assert_eq!(a.seen(), 4, "reads went to b until the move was heard, then to c");
        let seen_b = b.seen();
        assert_eq!(symbols(run(Command::Symbols).await), ["c"]);

        // Without the subscription, nothing is trusted: a read goes ahead to
        // c and follows the table to b.
        d.known.watch_lost();
        write_unheard(&t, &id, &b.route("b:2", 4_000, &id)).await;
        let seen_c = c.seen();
        assert_eq!(symbols(run(Command::Symbols).await), ["b"]);
        assert_eq!((c.seen(), b.seen()), (seen_c + 1, seen_b + 1));
        t.release(&id, "b:2").await.unwrap();
    }

    #[tokio::test]
    async fn claims_that_change_the_connection_and_releases_are_published() {
        use futures_util::StreamExt;
        let t = table(Duration::from_secs(30));
        let id = terminal();
        let client = redis::Client::open("redis://127.0.0.1:6379").unwrap();
        let mut pubsub = client.get_async_pubsub().await.unwrap();
        pubsub.subscribe(MOVES_CHANNEL).await.unwrap();
        let mut stream = pubsub.into_on_message();
        let mut heard = async || loop {
            let msg = tokio::time::timeout(Duration::from_secs(5), stream.next())
                .await
                .expect("a message")
                .expect("subscribed");
            let key: String = msg.get_payload().unwrap();
            // Other tests publish on the same channel.
            if key == route_key(&id) {
                return key;
            }
        };
        let first = route("a", "a:1", 1_000, &id);
        assert!(t.claim(&id, &first).await.unwrap());
        assert_eq!(heard().await, route_key(&id));
        // A refresh by the same connection is not a move; a new connection is.
        assert!(t.claim(&id, &first).await.unwrap());
        assert!(t.claim_all(&[(&id, &first)]).await.unwrap()[0]);
        let second = route("b", "b:1", 2_000, &id);
        assert!(t.claim(&id, &second).await.unwrap());
        heard().await;
        // A stale release changes nothing and says nothing; the holder's does.
        assert!(!t.release(&id, &first.conn).await.unwrap());
        assert!(t.release(&id, &second.conn).await.unwrap());
        heard().await;
        // Exactly three moves were published for this terminal.
        let quiet = tokio::time::timeout(Duration::from_millis(300), heard()).await;
        assert!(quiet.is_err(), "no fourth message");
    }

    #[test]
    fn connection_ids_differ_across_boots() {
        let (a, b) = (boot_nonce(), boot_nonce());
        assert_ne!(conn_id(&a, 1), conn_id(&b, 1));
        assert_eq!(a.len(), 12);
    }
}
