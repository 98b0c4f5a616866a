//! [`HttpDispatch`]: the one client of a remote gateway's dispatch route,
//! used by REST and MCP instances that do not run the gateway in-process
//! (and by a gateway relaying to another). A dispatch goes over the
//! thread's dispatch channel to that gateway when one is open
//! (`crate::channel`), else as `POST /internal/v1/dispatch`. It passes the
//! current request id on and counts each dispatch in
//! `tradeterm_dispatch_total{side="client"}`.

use std::time::Duration;

use async_trait::async_trait;
use tradeterm_telemetry::record::{DispatchSide, DispatchTimer};
use tradeterm_telemetry::request_id;

use crate::agent::{Command, CommandResult};
use crate::channel::Outcome;
use crate::dispatch::{
    Dispatch, DispatchError, DispatchReply, DispatchRequest, INTERNAL_TOKEN_HEADER, RevokedKeys, TerminalStatus,
};

/// How long a pooled connection to a gateway may stay idle before the
/// client drops it: under the gateway's keep-alive (actix-web's default,
/// 5 s), so that a request never goes out on a connection the gateway is
/// closing at that moment (a failure the client cannot tell from a lost
/// request; seen as "error sending request" under load).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// HTTP clients, one per thread, sharing one configuration.
///
/// A pooled connection's I/O runs on the runtime that opened it. Each
/// actix worker is a single-threaded runtime, so with one client for the
/// whole process a request handled by one worker often goes out over a
/// connection driven by another, and every dispatch then wakes a second
/// thread twice (out and back). One client per thread keeps a worker's
/// dispatches on its own connections.
#[derive(Debug)]
struct ThreadClients {
    /// The client built first: serves a thread whose own cannot be built.
    first: reqwest::Client,
    clients: std::sync::Mutex<std::collections::HashMap<std::thread::ThreadId, reqwest::Client>>,
}

impl ThreadClients {
    fn build() -> Result<reqwest::Client, DispatchError> {
        reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .connect_timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| DispatchError::Gateway(e.to_string()))
    }

    fn new() -> Result<Self, DispatchError> {
        // Fails early on a configuration the platform cannot build.
        let first = Self::build()?;
        let mut clients = std::collections::HashMap::new();
        clients.insert(std::thread::current().id(), first.clone());
        Ok(Self {
            first,
            clients: std::sync::Mutex::new(clients),
        })
    }

    /// This thread's client.
    fn get(&self) -> reqwest::Client {
        let thread = std::thread::current().id();
        let mut clients = self.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = clients.get(&thread) {
            return c.clone();
        }
        // Building cannot fail once it succeeded with the same settings;
        // should it, the first client serves.
        let c = Self::build().unwrap_or_else(|_| self.first.clone());
        clients.insert(thread, c.clone());
        c
    }
}

/// The dispatch route of the gateway at `base`.
fn dispatch_url(base: &str) -> Result<reqwest::Url, String> {
    reqwest::Url::parse(&format!("{base}/internal/v1/dispatch")).map_err(|e| e.to_string())
}

/// Dispatch through a gateway reached over HTTP.
#[derive(Debug, Clone)]
pub struct HttpDispatch {
    base: String,
    /// `{base}/internal/v1/dispatch`, parsed once (each request clones it).
    dispatch_url: Result<reqwest::Url, String>,
    token: String,
    http: std::sync::Arc<ThreadClients>,
    /// Dispatch channels to the gateways, by thread (`crate::channel`);
    /// `None`: every dispatch is an HTTP request.
    channels: Option<std::sync::Arc<crate::channel::Channels>>,
    /// Talks to the gateway that holds the terminal (see [`HttpDispatch::holder`]).
    holder: bool,
}

impl HttpDispatch {
    /// Client of the gateway at `base_url` (`http://127.0.0.1:8081`), authenticating with
    /// the internal token shared by the deployment.
    pub fn new(base_url: &str, internal_token: &str) -> Result<Self, DispatchError> {
        let base = base_url.trim_end_matches('/').to_owned();
        Ok(Self {
            dispatch_url: dispatch_url(&base),
            base,
            token: internal_token.to_owned(),
            http: std::sync::Arc::new(ThreadClients::new()?),
            channels: Some(std::sync::Arc::default()),
            holder: false,
        })
    }

    /// Client of the gateway instance that the route table says holds the
    /// terminals it is asked about (a scaled-out deployment). Its requests
    /// are marked relayed (that gateway answers from its own connections and
    /// never relays further), and a refused connection, which means the
    /// request never reached the instance (it is down, its agents are
    /// reconnecting elsewhere), is reported as [`DispatchError::Unreachable`]
    /// rather than a gateway failure. Shares `self`'s connection pools and
    /// dispatch channels.
    #[must_use]
    pub fn holder(&self, base_url: &str) -> Self {
        let base = base_url.trim_end_matches('/').to_owned();
        Self {
            dispatch_url: dispatch_url(&base),
            base,
            token: self.token.clone(),
            http: self.http.clone(),
            channels: self.channels.clone(),
            holder: true,
        }
    }

    /// The same client sending every dispatch as an HTTP request, never
    /// over a dispatch channel (`GATEWAY_DISPATCH_CHANNEL=false`; holders
    /// made from it too).
    #[must_use]
    pub fn without_channels(mut self) -> Self {
        self.channels = None;
        self
    }

    /// The gateway's base URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Asks the gateway to disconnect the terminal's agent if it
    /// authenticated with one of the revoked keys. Whether it did.
    ///
    /// # Errors
    /// The gateway could not be reached or refused.
    pub async fn drop_revoked(&self, revoked: &RevokedKeys) -> Result<bool, DispatchError> {
        let resp = self
            .http
            .get()
            .post(format!("{}/internal/v1/revoked", self.base))
            .header(INTERNAL_TOKEN_HEADER, &self.token)
            .timeout(Duration::from_secs(5))
            .json(revoked)
            .send()
            .await
            .map_err(|e| DispatchError::Gateway(format!("revocation request failed: {e}")))?;
        if !resp.status().is_success() {
            return Err(DispatchError::Gateway(format!("gateway answered {}", resp.status())));
        }
        let body: serde_json::Value = resp
            .json()
            .await
            .map_err(|e| DispatchError::Gateway(format!("bad revocation reply: {e}")))?;
        Ok(body["disconnected"].as_bool().unwrap_or(false))
    }
}

impl HttpDispatch {
    /// Sends a dispatch over this thread's channel to the gateway when it is
    /// open (`crate::channel`), else as `POST /internal/v1/dispatch`; the
    /// current request's id goes with it either way, so that the gateway
    /// logs it and puts it into the agent's request id
    /// (`tradeterm_telemetry::request_id`).
    async fn send_dispatch(
        &self,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
    ) -> Result<CommandResult, DispatchError> {
        let read_only = !command.is_trade();
        let body = DispatchRequest {
            license_id: license_id.to_owned(),
            terminal_id: terminal_id.to_owned(),
            command,
            timeout_ms: timeout.as_millis() as u64,
            relayed: self.holder,
        };
        let id = request_id::current();
        if let Some(channel) = self.channels.as_ref().and_then(|c| c.get(&self.base, &self.token)) {
            let wait = timeout + Duration::from_secs(2);
            match channel.dispatch(&body, id.as_ref().map(|i| i.as_str()), wait).await {
                Outcome::Reply(reply) => return reply.into_result(),
                Outcome::Unsent => {}
                // As with an HTTP connection lost under a request: a read
                // sent to the holder changed nothing and goes back to the
                // route table; anything else has an unknown outcome.
                Outcome::Lost(why) if self.holder && read_only => {
                    tracing::debug!(gateway = %self.base, %why, "dispatch channel lost under a read");
                    return Err(DispatchError::Unreachable);
                }
                Outcome::Lost(why) => return Err(DispatchError::Gateway(format!("dispatch request failed: {why}"))),
                Outcome::TimedOut => {
                    return Err(DispatchError::Gateway(
                        "dispatch request failed: no answer from the gateway in time".into(),
                    ));
                }
            }
        }
        self.post_dispatch(body, id, read_only, timeout).await
    }

    /// `POST /internal/v1/dispatch`, with the request id in `X-Request-Id`.
    async fn post_dispatch(
        &self,
        body: DispatchRequest,
        id: Option<request_id::RequestId>,
        read_only: bool,
        timeout: Duration,
    ) -> Result<CommandResult, DispatchError> {
        let url = self
            .dispatch_url
            .clone()
            .map_err(|e| DispatchError::Gateway(format!("invalid gateway address {}: {e}", self.base)))?;
        let mut request = self
            .http
            .get()
            .post(url)
            .header(INTERNAL_TOKEN_HEADER, &self.token)
            .timeout(timeout + Duration::from_secs(2))
            .json(&body);
        if let Some(id) = id {
            request = request.header(request_id::REQUEST_ID_HEADER, id.as_str());
        }
        let resp = request.send().await.map_err(|e| {
            // The holder is gone: nothing was sent (a refused connection),
            // or a read command lost its connection on the way (the holder
            // died under it; reading changes nothing, so nothing is left
            // unknown). Any other failure, and every lost trade command,
            // leaves the outcome unknown: a gateway error, never retried.
            let gone = e.is_connect() || (read_only && e.is_request() && !e.is_timeout());
            if self.holder && gone {
                DispatchError::Unreachable
            } else {
                DispatchError::Gateway(format!("dispatch request failed: {e}"))
            }
        })?;
        if !resp.status().is_success() {
            return Err(DispatchError::Gateway(format!("gateway answered {}", resp.status())));
        }
        let reply: DispatchReply = resp
            .json()
            .await
            .map_err(|e| DispatchError::Gateway(format!("bad dispatch reply: {e}")))?;
        reply.into_result()
    }
}

#[async_trait]
impl Dispatch for HttpDispatch {
    async fn execute(
        &self,
        license_id: &str,
        terminal_id: &str,
        command: Command,
        timeout: Duration,
    ) -> Result<CommandResult, DispatchError> {
        let timer = DispatchTimer::start(DispatchSide::Client, command.name());
        let result = self.send_dispatch(license_id, terminal_id, command, timeout).await;
        timer.finish(DispatchError::outcome_of(&result));
        result
    }

    async fn terminals(&self, license_id: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
        let resp = self
            .http
            .get()
            .get(format!("{}/internal/v1/terminals", self.base))
            .query(&[("license_id", license_id)])
            .header(INTERNAL_TOKEN_HEADER, &self.token)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| DispatchError::Gateway(format!("terminal list request failed: {e}")))?;
        if !resp.status().is_success() {
            return Err(DispatchError::Gateway(format!("gateway answered {}", resp.status())));
        }
        resp.json()
            .await
            .map_err(|e| DispatchError::Gateway(format!("bad terminal list: {e}")))
    }
}

/// Answer of the gateway's token exchange routes.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct TokenGrant {
    /// The session token.
    pub token: String,
    /// Lifetime in seconds.
    pub expires_in: u64,
}

/// Why a token exchange failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExchangeError {
    /// The gateway refused the credential (401): message safe to show.
    #[error("{0}")]
    Refused(String),
    /// The gateway could not be reached or answered nonsense.
    #[error("gateway error: {0}")]
    Gateway(String),
}

/// Client of the gateway's token exchange routes (`POST /api/token`,
/// `POST /api/token/api-key`), used by the REST and MCP adapters.
#[derive(Debug, Clone)]
pub struct GatewayClient {
    base: String,
    http: reqwest::Client,
    /// The deployment's internal token, sent with every exchange: the
    /// gateway then leaves the credential-guessing throttle to this adapter,
    /// which counts its own clients by their addresses.
    internal_token: Option<String>,
}

impl GatewayClient {
    /// Client of the gateway at `base_url`.
    pub fn new(base_url: &str) -> Result<Self, ExchangeError> {
        Self::build(base_url, Self::builder())
    }

    /// Client of a gateway serving HTTPS with its own certificate:
    /// `extra_roots_pem` (PEM certificates, e.g. the gateway's self-signed
    /// certificate) are trusted in addition to the system's roots, and
    /// `resolve` makes a host name of `base_url` reach the given address
    /// (a single node reaching its own gateway over loopback under a name its
    /// certificate holds).
    pub fn with_tls(
        base_url: &str,
        extra_roots_pem: &[u8],
        resolve: Option<(&str, std::net::SocketAddr)>,
    ) -> Result<Self, ExchangeError> {
        let roots = reqwest::Certificate::from_pem_bundle(extra_roots_pem)
            .map_err(|e| ExchangeError::Gateway(format!("invalid PEM certificates: {e}")))?;
        let mut builder = Self::builder().tls_certs_merge(roots);
        if let Some((name, addr)) = resolve {
            builder = builder.resolve(name, addr);
        }
        Self::build(base_url, builder)
    }

    fn builder() -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .pool_max_idle_per_host(16)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
    }

    fn build(base_url: &str, builder: reqwest::ClientBuilder) -> Result<Self, ExchangeError> {
        let http = builder.build().map_err(|e| ExchangeError::Gateway(e.to_string()))?;
        Ok(Self {
            base: base_url.trim_end_matches('/').to_owned(),
            http,
            internal_token: None,
        })
    }

    /// Sends the deployment's internal token with every exchange (the
    /// gateway's throttle then does not count this adapter's address).
    pub fn with_internal_token(mut self, token: Option<&str>) -> Self {
        self.internal_token = token.filter(|t| !t.is_empty()).map(str::to_owned);
        self
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.post(format!("{}{path}", self.base));
        match &self.internal_token {
            Some(token) => request.header(crate::dispatch::INTERNAL_TOKEN_HEADER, token),
            None => request,
        }
    }

    /// Base URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    async fn exchange(&self, path: &str, key: &str) -> Result<TokenGrant, ExchangeError> {
        let resp = self
            .post(path)
            .bearer_auth(key)
            .send()
            .await
            .map_err(|e| ExchangeError::Gateway(format!("token exchange failed: {e}")))?;
        let status = resp.status();
        let body: serde_json::Value = resp
            .json()
            .await
            .map_err(|e| ExchangeError::Gateway(format!("bad token exchange answer: {e}")))?;
        if status.as_u16() == 401 {
            let msg = body["error"]["message"]
                .as_str()
                .unwrap_or("invalid credential")
                .to_owned();
            return Err(ExchangeError::Refused(msg));
        }
        if !status.is_success() {
            return Err(ExchangeError::Gateway(format!("gateway answered {status}")));
        }
        serde_json::from_value(body).map_err(|e| ExchangeError::Gateway(format!("bad token exchange answer: {e}")))
    }

    /// Exchanges a terminal key for a session token.
    pub async fn exchange_terminal_key(&self, key: &str) -> Result<TokenGrant, ExchangeError> {
        self.exchange("/api/token", key).await
    }

    /// Exchanges a REST API key for a short-lived session token.
    pub async fn exchange_api_key(&self, key: &str) -> Result<TokenGrant, ExchangeError> {
        self.exchange("/api/token/api-key", key).await
    }

    /// Forwards a raw `POST /api/token` JSON body and returns the gateway's status and body.
    pub async fn proxy_token(&self, body: serde_json::Value) -> Result<(u16, serde_json::Value), ExchangeError> {
        let resp = self
            .post("/api/token")
            .json(&body)
            .send()
            .await
            .map_err(|e| ExchangeError::Gateway(format!("token exchange failed: {e}")))?;
        let status = resp.status().as_u16();
        let body = resp
            .json()
            .await
            .map_err(|e| ExchangeError::Gateway(format!("bad token exchange answer: {e}")))?;
        Ok((status, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threads_served(clients: &ThreadClients) -> usize {
        clients.clients.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// A holder that takes the request and dies before answering (its
    /// connection closes): a read is unreachable, a trade's outcome unknown.
    #[tokio::test]
    async fn a_holder_dying_mid_request_makes_a_read_unreachable_and_a_trade_unknown() {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = [0_u8; 4096];
                let _ = socket.read(&mut buf).await;
                drop(socket);
            }
        });
        let holder = HttpDispatch::new("http://127.0.0.1:1", "t").unwrap().holder(&url);
        let t = Duration::from_secs(5);
        let read = holder.execute("lic", "term", Command::AccountInfo, t).await;
        assert_eq!(read, Err(DispatchError::Unreachable));
        let trade = Command::ClosePosition {
            ticket: 1,
            volume: None,
            deviation_points: None,
            idempotency_key: None,
        };
        let trade = holder.execute("lic", "term", trade, t).await;
        assert!(matches!(trade, Err(DispatchError::Gateway(_))), "{trade:?}");
        // Through the entry gateway (not a holder) a lost read stays a gateway error.
        let entry = HttpDispatch::new(&url, "t").unwrap();
        let read = entry.execute("lic", "term", Command::AccountInfo, t).await;
        assert!(matches!(read, Err(DispatchError::Gateway(_))), "{read:?}");
    }

    #[test]
    fn each_thread_gets_its_own_client_and_keeps_it() {
        let clients = std::sync::Arc::new(ThreadClients::new().unwrap());
        let _ = clients.get();
        let _ = clients.get();
        assert_eq!(threads_served(&clients), 1, "the same thread reuses its client");
        let other = clients.clone();
        std::thread::spawn(move || {
            let _ = other.get();
            let _ = other.get();
        })
        .join()
        .unwrap();
        assert_eq!(threads_served(&clients), 2, "another thread has a client of its own");
        // Holders share the pools of the dispatch they come from.
        let d = HttpDispatch::new("http://127.0.0.1:1/", "t").unwrap();
        let h = d.holder("http://127.0.0.1:2");
        assert!(std::sync::Arc::ptr_eq(&d.http, &h.http));
        assert_eq!(h.base_url(), "http://127.0.0.1:2");
        assert_eq!(
            h.dispatch_url.as_ref().unwrap().as_str(),
            "http://127.0.0.1:2/internal/v1/dispatch"
        );
    }

    #[tokio::test]
    async fn an_unusable_gateway_address_is_a_gateway_error() {
        let d = HttpDispatch::new("http://[not-an-address", "t").unwrap();
        let r = d
            .execute("lic", "term", Command::AccountInfo, Duration::from_secs(1))
            .await;
        assert!(
            matches!(&r, Err(DispatchError::Gateway(m)) if m.contains("invalid gateway address")),
            "{r:?}"
        );
    }
}
