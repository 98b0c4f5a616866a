//! [`HttpDispatch`]: the one HTTP client of a remote gateway's dispatch route,
//! used by REST and MCP instances that do not run the gateway in-process.

use std::time::Duration;

use async_trait::async_trait;

use crate::agent::{Command, CommandResult};
use crate::dispatch::{
    Dispatch, DispatchError, DispatchReply, DispatchRequest, INTERNAL_TOKEN_HEADER, TerminalStatus,
};

/// Dispatch through a gateway reached over HTTP.
#[derive(Debug, Clone)]
pub struct HttpDispatch {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl HttpDispatch {
    /// Client of the gateway at `base_url` (`http://127.0.0.1:8081`), authenticating with
    /// the internal token shared by the deployment.
    pub fn new(base_url: &str, internal_token: &str) -> Result<Self, DispatchError> {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| DispatchError::Gateway(e.to_string()))?;
        Ok(Self {
            base: base_url.trim_end_matches('/').to_owned(),
            token: internal_token.to_owned(),
            http,
        })
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
        let body = DispatchRequest {
            license_id: license_id.to_owned(),
            terminal_id: terminal_id.to_owned(),
            command,
            timeout_ms: timeout.as_millis() as u64,
        };
        let resp = self
            .http
            .post(format!("{}/internal/v1/dispatch", self.base))
            .header(INTERNAL_TOKEN_HEADER, &self.token)
            .timeout(timeout + Duration::from_secs(2))
            .json(&body)
            .send()
            .await
            .map_err(|e| DispatchError::Gateway(format!("dispatch request failed: {e}")))?;
        if !resp.status().is_success() {
            return Err(DispatchError::Gateway(format!(
                "gateway answered {}",
                resp.status()
            )));
        }
        let reply: DispatchReply = resp
            .json()
            .await
            .map_err(|e| DispatchError::Gateway(format!("bad dispatch reply: {e}")))?;
        reply.into_result()
    }

    async fn terminals(&self, license_id: &str) -> Result<Vec<TerminalStatus>, DispatchError> {
        let resp = self
            .http
            .get(format!("{}/internal/v1/terminals", self.base))
            .query(&[("license_id", license_id)])
            .header(INTERNAL_TOKEN_HEADER, &self.token)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| DispatchError::Gateway(format!("terminal list request failed: {e}")))?;
        if !resp.status().is_success() {
            return Err(DispatchError::Gateway(format!(
                "gateway answered {}",
                resp.status()
            )));
        }
        resp.json()
            .await
            .map_err(|e| DispatchError::Gateway(format!("bad terminal list: {e}")))
    }
}
