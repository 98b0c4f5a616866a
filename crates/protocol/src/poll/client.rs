//! [`PollClient`]: an HTTP client of the long-poll binding's three routes.
//! It does one request per call and keeps no session state: sequence numbers,
//! acknowledgements and retries are the caller's (the simulator's poll
//! transport, the gateway's tests).

use std::time::Duration;

use super::{CLOSE_PATH, EXCHANGE_PATH, OPEN_PATH, PollBatch, PollReply, PollWelcome, SESSION_HEADER};
use crate::agent::{AgentFrame, ErrorBody, Hello, codes};

/// Extra time over `wait_ms` before an exchange is given up on the client side.
const EXCHANGE_SLACK: Duration = Duration::from_secs(10);
/// Time limit of open and close.
const SHORT_REQUEST: Duration = Duration::from_secs(10);

/// Why a call of the binding failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PollError {
    /// The gateway answered with a non-2xx status and an `error` body (or
    /// with no readable body: code `INTERNAL`).
    #[error("the gateway answered {status}: {code}: {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// Protocol error code (`AUTH_FAILED`, `SESSION_EXPIRED`, ...).
        code: String,
        /// The gateway's explanation.
        message: String,
    },
    /// No answer: connection refused or reset, time-out. Whether the gateway
    /// processed the request is unknown: retry the same batch.
    #[error("no answer from the gateway: {0}")]
    Transport(String),
    /// A 2xx answer whose body is not what the binding specifies.
    #[error("unexpected answer from the gateway: {0}")]
    Malformed(String),
}

impl PollError {
    /// Whether the session is gone (401 `AUTH_FAILED` or 404
    /// `SESSION_EXPIRED`): the agent opens a new session, with backoff.
    pub fn session_lost(&self) -> bool {
        matches!(self, Self::Refused { status: 401 | 404, .. })
    }

    /// The protocol error code of a refusal.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Refused { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// Client of one gateway's long-poll routes.
#[derive(Debug, Clone)]
pub struct PollClient {
    http: reqwest::Client,
    base: String,
}

impl PollClient {
    /// A client of the gateway at `url`: its base (`http://HOST:PORT`), or
    /// the binding's path (`http://HOST:PORT/agent/v1/poll`); a trailing
    /// `/agent/v1` is accepted too.
    pub fn new(http: reqwest::Client, url: &str) -> Self {
        let mut base = url.trim().trim_end_matches('/');
        for suffix in [EXCHANGE_PATH, "/agent/v1"] {
            if let Some(stripped) = base.strip_suffix(suffix) {
                base = stripped;
                break;
            }
        }
        Self {
            http,
            base: base.to_owned(),
        }
    }

    /// The gateway base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// `POST /agent/v1/poll/open` with `hello`.
    ///
    /// # Errors
    /// A refusal (`AUTH_FAILED`, `UNSUPPORTED_VERSION`, ...), no answer, or an
    /// unreadable welcome.
    pub async fn open(&self, hello: &Hello) -> Result<PollWelcome, PollError> {
        let body = AgentFrame::Hello(Box::new(hello.clone())).to_json();
        let resp = self
            .http
            .post(format!("{}{OPEN_PATH}", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(SHORT_REQUEST)
            .body(body)
            .send()
            .await
            .map_err(transport)?;
        let bytes = checked(resp).await?;
        serde_json::from_slice(&bytes).map_err(|e| PollError::Malformed(format!("welcome: {e}")))
    }

    /// `POST /agent/v1/poll`: sends `batch` and returns the gateway's reply.
    /// Gives up `wait_ms` + 10 s after sending.
    ///
    /// # Errors
    /// A refusal (`SESSION_EXPIRED`, `AUTH_FAILED`, `MALFORMED_FRAME`), no
    /// answer (retry the same batch), or an unreadable reply.
    pub async fn exchange(&self, session: &str, batch: &PollBatch) -> Result<PollReply, PollError> {
        let body = serde_json::to_string(batch).map_err(|e| PollError::Malformed(e.to_string()))?;
        self.exchange_raw(session, body, Duration::from_millis(batch.wait_ms) + EXCHANGE_SLACK)
            .await
    }

    /// [`PollClient::exchange`] with a body given as text (tests of malformed
    /// bodies).
    ///
    /// # Errors
    /// As [`PollClient::exchange`].
    pub async fn exchange_raw(&self, session: &str, body: String, limit: Duration) -> Result<PollReply, PollError> {
        let resp = self
            .http
            .post(format!("{}{EXCHANGE_PATH}", self.base))
            .header(SESSION_HEADER, session)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(limit)
            .body(body)
            .send()
            .await
            .map_err(transport)?;
        let bytes = checked(resp).await?;
        serde_json::from_slice(&bytes).map_err(|e| PollError::Malformed(format!("batch reply: {e}")))
    }

    /// `POST /agent/v1/poll/close`.
    ///
    /// # Errors
    /// A refusal (`SESSION_EXPIRED` for an unknown session) or no answer.
    pub async fn close(&self, session: &str) -> Result<(), PollError> {
        let resp = self
            .http
            .post(format!("{}{CLOSE_PATH}", self.base))
            .header(SESSION_HEADER, session)
            .timeout(SHORT_REQUEST)
            .send()
            .await
            .map_err(transport)?;
        checked(resp).await.map(|_| ())
    }
}

fn transport(e: reqwest::Error) -> PollError {
    PollError::Transport(e.to_string())
}

/// The body of a 2xx answer, or the refusal of another.
async fn checked(resp: reqwest::Response) -> Result<Vec<u8>, PollError> {
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(transport)?;
    if status.is_success() {
        return Ok(bytes.to_vec());
    }
    let error = serde_json::from_slice::<ErrorBody>(&bytes).unwrap_or_else(|_| {
        ErrorBody::new(
            codes::INTERNAL,
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned(),
        )
    });
    Err(PollError::Refused {
        status: status.as_u16(),
        code: error.code,
        message: error.message,
    })
}
