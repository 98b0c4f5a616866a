//! The gateway's side of the credential-guessing throttle
//! (`tradeterm_cluster::guess`, `docs/security.md`): the source address of
//! a request, and the check and count around every credential the gateway
//! verifies (token exchange, agents' `hello`, master-key routes; the
//! dashboard's sign-in through [`Gateway::guess_check`]).
//!
//! A token exchange carrying the deployment's internal token comes from a
//! REST or MCP instance exchanging its own client's key: that instance
//! throttles its client by the client's address, so the gateway neither
//! counts nor refuses it (otherwise a guesser at the REST API would block
//! the REST instance's address, and with it every REST client).

use std::net::{IpAddr, Ipv4Addr};

use actix_web::HttpRequest;

use crate::{ApiError, Gateway};

/// The client address of `req`: the peer, or what a trusted proxy says.
pub(crate) fn source(gateway: &Gateway, req: &HttpRequest) -> IpAddr {
    let peer = req.peer_addr().map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip());
    let forwarded = req.headers().get_all("x-forwarded-for").filter_map(|v| v.to_str().ok());
    gateway.settings().guess.source(peer, forwarded)
}

/// Whether `req` carries the deployment's internal token (an adapter
/// instance exchanging its client's key).
pub(crate) fn from_adapter(gateway: &Gateway, req: &HttpRequest) -> bool {
    req.headers()
        .contains_key(tradeterm_protocol::dispatch::INTERNAL_TOKEN_HEADER)
        && crate::http::check_internal(req, gateway).is_ok()
}

impl Gateway {
    /// The client address of a request to this gateway's listener (the peer,
    /// or the address a trusted proxy's `X-Forwarded-For` names).
    pub fn client_address(&self, req: &HttpRequest) -> IpAddr {
        source(self, req)
    }

    /// Before checking `credential` at `surface` (`token`, `agent`,
    /// `dashboard`): 429 `RATE_LIMITED` with `Retry-After` when its source
    /// (or its key prefix) is blocked for guessing.
    ///
    /// # Errors
    /// The throttle's refusal, to answer as is.
    pub async fn guess_check(
        &self,
        surface: &'static str,
        req: &HttpRequest,
        credential: Option<&str>,
    ) -> Result<(), ApiError> {
        self.settings()
            .guess
            .check(surface, source(self, req), credential)
            .await
            .map_err(|blocked| {
                tracing::info!(%surface, scope = blocked.scope, "credential check refused: too many failures");
                ApiError::throttled(&blocked)
            })
    }

    /// Counts a wrong `credential` at `surface` against the request's source.
    pub async fn guess_failed(&self, surface: &'static str, req: &HttpRequest, credential: Option<&str>) {
        self.settings()
            .guess
            .failed(surface, source(self, req), credential)
            .await;
    }
}
