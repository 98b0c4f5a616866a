//! This instance's part in a scaled-out deployment (`tradeterm-cluster`):
//! it announces the terminals connected here in the Redis route table,
//! refreshes their routes while they stay, withdraws them when they leave,
//! merges the table into terminal lists, and relays a command for a
//! terminal held by another instance to it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tradeterm_cluster::{Route, RouteTable};
use tradeterm_protocol::TerminalStatus;
use tradeterm_protocol::http_client::HttpDispatch;

use crate::registry::Conn;
use crate::{Gateway, Inner};

/// How this gateway instance takes part in a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// Instance name for logs and the route table (`GATEWAY_INSTANCE_ID`).
    pub instance: String,
    /// Base URL at which API, MCP and other gateway instances reach this
    /// instance's internal routes (`GATEWAY_ADVERTISE_URL`).
    pub advertise_url: String,
}

/// The live cluster membership of a gateway.
pub(crate) struct Cluster {
    pub table: RouteTable,
    pub instance: String,
    pub url: String,
    /// Random per start: connection ids stay unique across restarts.
    pub boot: String,
    /// Client for relaying to other instances (needs the internal token).
    pub relay: Option<HttpDispatch>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("instance", &self.instance)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// The membership the settings ask for: a cluster section and Redis.
    pub fn from_settings(settings: &crate::GatewaySettings) -> Option<Self> {
        let cluster = settings.cluster.as_ref()?;
        let pool = settings.redis.clone()?;
        // A route outlives a missed refresh or two, and no more than the
        // time after which the gateway itself declares an agent dead.
        let table = RouteTable::new(pool, settings.heartbeat_timeout);
        let relay = settings
            .internal_token
            .as_deref()
            .and_then(|token| HttpDispatch::new(&cluster.advertise_url, token).ok());
        Some(Self {
            table,
            instance: cluster.instance.clone(),
            url: cluster.advertise_url.trim_end_matches('/').to_owned(),
            boot: tradeterm_cluster::boot_nonce(),
            relay,
        })
    }

    /// The route-table id of a connection of this instance.
    pub fn conn_id(&self, conn: &Conn) -> String {
        tradeterm_cluster::conn_id(&self.boot, conn.conn_id)
    }

    /// Whether a route names a connection of this instance (this start).
    pub fn is_mine(&self, route: &Route) -> bool {
        route.conn.split_once(':').is_some_and(|(boot, _)| boot == self.boot)
    }

    /// The route of a connection held here.
    pub fn route(&self, conn: &Conn) -> Route {
        Route {
            instance: self.instance.clone(),
            url: self.url.clone(),
            conn: self.conn_id(conn),
            since_ms: conn.connected_since,
            license_id: conn.license_id.clone(),
            status: conn.status(String::new()),
        }
    }

    /// How often the routes of this instance's connections are renewed.
    pub fn refresh_every(&self) -> Duration {
        (self.table.ttl() / 3).max(Duration::from_millis(200))
    }
}

/// Announces a new connection (before the agent is welcomed, so a command
/// routed to the terminal finds it here).
pub(crate) async fn announce(gateway: &Gateway, conn: &Conn) {
    let Some(cluster) = &gateway.inner.cluster else { return };
    match cluster.table.claim(&conn.terminal_id, &cluster.route(conn)).await {
        Ok(true) => {}
        // Clocks of two instances disagree, or a newer connection exists
        // elsewhere: the refresher ends this one if it stays superseded.
        Ok(false) => tracing::warn!(
            terminal = %conn.terminal_id,
            "the route table names a newer connection of this terminal on another instance"
        ),
        Err(e) => {
            tracing::warn!(terminal = %conn.terminal_id, error = %e, "could not announce the connection in the route table")
        }
    }
}

/// Withdraws the route of a connection that ended (if it still names it).
pub(crate) async fn withdraw(gateway: &Gateway, conn: &Conn) {
    let Some(cluster) = &gateway.inner.cluster else { return };
    if let Err(e) = cluster.table.release(&conn.terminal_id, &cluster.conn_id(conn)).await {
        tracing::warn!(terminal = %conn.terminal_id, error = %e, "could not withdraw a route (it expires on its own)");
    }
}

/// Renews the routes of every connection held here, and closes those a
/// newer connection on another instance has superseded, for as long as the
/// gateway lives.
pub(crate) fn spawn_refresher(inner: &Arc<Inner>) {
    let Some(cluster) = &inner.cluster else { return };
    crate::spawn_round(inner, "route table", cluster.refresh_every(), async |inner| {
        refresh(&inner).await;
    });
}

/// One refresh round (see [`spawn_refresher`]).
async fn refresh(inner: &Inner) {
    let Some(cluster) = &inner.cluster else { return };
    if inner.draining.load(Ordering::Relaxed) {
        return;
    }
    let conns = inner.registry.all();
    for chunk in conns.chunks(1000) {
        let routes: Vec<(String, Route)> = chunk
            .iter()
            .map(|c| (c.terminal_id.clone(), cluster.route(c)))
            .collect();
        let refs: Vec<(&str, &Route)> = routes.iter().map(|(t, r)| (t.as_str(), r)).collect();
        match cluster.table.claim_all(&refs).await {
            Ok(written) => {
                for (conn, kept) in chunk.iter().zip(written) {
                    if !kept {
                        tracing::info!(
                            terminal = %conn.terminal_id,
                            "closing a connection superseded by a newer one on another instance"
                        );
                        conn.kill.notify_one();
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not refresh the route table"),
        }
    }
}

/// Withdraws every route of this instance (shutdown).
pub(crate) async fn withdraw_all(inner: &Inner) {
    let Some(cluster) = &inner.cluster else { return };
    for conn in inner.registry.all() {
        let _ = cluster.table.release(&conn.terminal_id, &cluster.conn_id(&conn)).await;
    }
}

/// Fills in, from the route table, the terminals of `list` that are not
/// connected here but are on another instance.
pub(crate) async fn merge(gateway: &Gateway, license_id: &str, list: &mut [TerminalStatus]) {
    let Some(cluster) = &gateway.inner.cluster else { return };
    let absent: Vec<usize> = (0..list.len()).filter(|&i| !list[i].connected).collect();
    if absent.is_empty() {
        return;
    }
    let ids: Vec<&str> = absent.iter().map(|&i| list[i].id.as_str()).collect();
    let routes = match cluster.table.lookup_all(&ids).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "route table unreadable: terminals of other instances are listed as disconnected");
            return;
        }
    };
    for (i, route) in absent.into_iter().zip(routes) {
        if let Some(route) = route.filter(|r| r.license_id == license_id && !cluster.is_mine(r)) {
            let t = &mut list[i];
            let name = std::mem::take(&mut t.name);
            *t = TerminalStatus {
                id: t.id.clone(),
                name,
                ..route.status
            };
        }
    }
}

/// The gateway instance holding the terminal if it is another one, with
/// the client to relay to it.
pub(crate) async fn holder(gateway: &Gateway, license_id: &str, terminal_id: &str) -> Option<HttpDispatch> {
    let cluster = gateway.inner.cluster.as_ref()?;
    let relay = cluster.relay.as_ref()?;
    match cluster.table.lookup(terminal_id).await {
        Ok(Some(route)) if route.license_id == license_id && !cluster.is_mine(&route) && route.url != cluster.url => {
            Some(relay.holder(&route.url))
        }
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "route table unreadable: not relaying");
            None
        }
    }
}

/// Asks the instance holding the terminal's agent, if another one, to
/// disconnect it when it authenticated with a revoked key. Whether it did.
pub(crate) async fn drop_revoked_elsewhere(
    gateway: &Gateway,
    license_id: &str,
    terminal_id: &str,
    key_ids: &[String],
) -> bool {
    let Some(holder) = holder(gateway, license_id, terminal_id).await else {
        return false;
    };
    let revoked = tradeterm_protocol::dispatch::RevokedKeys {
        terminal_id: terminal_id.to_owned(),
        key_ids: key_ids.to_vec(),
    };
    match holder.drop_revoked(&revoked).await {
        Ok(done) => done,
        Err(e) => {
            // That instance re-checks its agents' keys within `key_recheck`.
            tracing::warn!(terminal = %terminal_id, error = %e, "could not ask the holding instance to drop a revoked key");
            false
        }
    }
}
