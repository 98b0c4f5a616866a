//! What a tool call knows about its caller, and typed helpers to query the
//! terminal through dispatch.

use std::sync::Arc;
use std::time::Duration;

use tradeterm_core::license::Capability;
use tradeterm_core::{AccountInfo, SymbolSpec, Tick};
use tradeterm_protocol::agent::Permissions;
use tradeterm_protocol::{Command, CommandResult};

use crate::{Caller, Services, ToolError};

/// Everything a handler may use: the process's [`Services`] and what is
/// known about this call. Made only by [`ToolContext::new`] (which
/// [`crate::invoke`] calls for every adapter; outside this crate a literal
/// does not compile).
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The server-side services (dispatch, store, calendar, news, ETF flows, ...).
    pub services: Arc<Services>,
    /// License the call acts for.
    pub license_id: String,
    /// Record id of the credential the caller authenticated with (an API key,
    /// or the terminal key behind a session token): the identity of
    /// per-caller state such as `get_state_delta`'s last snapshot.
    pub caller: String,
    /// Capabilities of the caller's credential.
    pub caps: Vec<Capability>,
    /// Target terminal, resolved by [`crate::invoke`] (`None` for license-wide tools).
    pub terminal_id: Option<String>,
    /// Forces every trading tool to dry-run (MCP `paper` mode).
    pub force_dry_run: bool,
    /// Idempotency key of a live call (REST `Idempotency-Key` header).
    pub idempotency_key: Option<String>,
    /// Dispatch timeout per command.
    pub timeout: Duration,
    /// Current time, unix ms (taken once per call).
    pub now_ms: i64,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("license_id", &self.license_id)
            .field("terminal_id", &self.terminal_id)
            .field("force_dry_run", &self.force_dry_run)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// The context of one call by `caller` on `terminal_id`: the services'
    /// dispatch timeout, the current time, no dry-run forcing, no
    /// idempotency key.
    pub fn new(services: Arc<Services>, caller: Caller, terminal_id: Option<String>) -> Self {
        Self {
            timeout: services.settings.dispatch_timeout,
            services,
            license_id: caller.license_id,
            caller: caller.credential,
            caps: caller.caps,
            terminal_id,
            force_dry_run: false,
            idempotency_key: None,
            now_ms: chrono::Utc::now().timestamp_millis(),
        }
    }

    /// The target terminal id, or [`ToolError::TerminalRequired`].
    pub fn terminal(&self) -> Result<&str, ToolError> {
        self.terminal_id.as_deref().ok_or(ToolError::TerminalRequired)
    }

    /// Runs one command on the target terminal.
    pub async fn run(&self, command: Command) -> Result<CommandResult, ToolError> {
        let terminal = self.terminal()?;
        Ok(self
            .services
            .dispatch
            .execute(&self.license_id, terminal, command, self.timeout)
            .await?)
    }

    /// Account state.
    pub async fn account(&self) -> Result<AccountInfo, ToolError> {
        match self.run(Command::AccountInfo).await? {
            CommandResult::AccountInfo(a) => Ok(a),
            other => Err(unexpected("account_info", &other)),
        }
    }

    /// Rate converting `from` into `account_currency`, from the symbol's own
    /// quote or the terminal's `FROMACC` / `ACCFROM` quotes. `None` when unknown.
    pub async fn rate_to_account(
        &self,
        from: &str,
        account_currency: &str,
        spec: &SymbolSpec,
        tick: &Tick,
    ) -> Option<f64> {
        use tradeterm_core::trading::{Quote, conversion_rate};
        let own = Quote::of(spec, tick);
        if let Some(rate) = conversion_rate(from, account_currency, &[own]) {
            return Some(rate);
        }
        let mut extra = Vec::new();
        for sym in [format!("{from}{account_currency}"), format!("{account_currency}{from}")] {
            if let (Ok(spec), Ok(tick)) = (self.spec(&sym).await, self.tick(&sym).await) {
                extra.push((spec, tick));
            }
        }
        let mut quotes = vec![own];
        quotes.extend(extra.iter().map(|(s, t)| Quote::of(s, t)));
        conversion_rate(from, account_currency, &quotes)
    }

    /// Latest quote of a symbol.
    pub async fn tick(&self, symbol: &str) -> Result<Tick, ToolError> {
        match self
            .run(Command::Tick {
                symbol: symbol.to_owned(),
            })
            .await?
        {
            CommandResult::Tick(t) => Ok(t),
            other => Err(unexpected("tick", &other)),
        }
    }

    /// Contract specification of a symbol.
    pub async fn spec(&self, symbol: &str) -> Result<SymbolSpec, ToolError> {
        match self
            .run(Command::SymbolSpec {
                symbol: symbol.to_owned(),
            })
            .await?
        {
            CommandResult::SymbolSpec(s) => Ok(s),
            other => Err(unexpected("symbol_spec", &other)),
        }
    }

    /// Trading permissions of the target terminal as the gateway last heard them.
    pub async fn permissions(&self) -> Result<Permissions, ToolError> {
        let terminal = self.terminal()?;
        let list = self.services.dispatch.terminals(&self.license_id).await?;
        let status = list
            .into_iter()
            .find(|t| t.id == terminal)
            .ok_or_else(|| ToolError::NotFound("terminal not found".into()))?;
        if !status.connected {
            return Err(ToolError::Dispatch(
                "terminal unreachable: no agent is connected".into(),
            ));
        }
        Ok(status.permissions)
    }

    /// Whether this call may trade live: `dry_run == Some(false)` and not forced to dry run.
    pub fn is_live(&self, dry_run: Option<bool>) -> bool {
        dry_run == Some(false) && !self.force_dry_run
    }

    /// Checks every live-trading precondition: the `trade` capability and the
    /// terminal's allow-trading input and automated-trading switch.
    pub async fn ensure_live_allowed(&self) -> Result<(), ToolError> {
        if !self.caps.contains(&Capability::Trade) {
            return Err(ToolError::TradingDisabled(
                "live trading needs the `trade` capability (Pro tier and above); dry runs work on every tier".into(),
            ));
        }
        let permissions = self.permissions().await?;
        if !permissions.allow_trading {
            return Err(ToolError::TradingDisabled(
                "live trading is off on this terminal: the agent's allow-trading input (inp_AllowTrading) is false"
                    .into(),
            ));
        }
        if !permissions.automated_trading {
            return Err(ToolError::TradingDisabled(
                "live trading is off on this terminal: the terminal's automated-trading switch is off, or the broker \
                 does not allow trading on the account or by experts"
                    .into(),
            ));
        }
        Ok(())
    }
}

pub(crate) fn unexpected(cmd: &str, got: &CommandResult) -> ToolError {
    let kind = serde_json::to_value(got)
        .ok()
        .and_then(|v| v["kind"].as_str().map(str::to_owned))
        .unwrap_or_default();
    ToolError::Dispatch(format!("terminal answered `{cmd}` with a `{kind}` result"))
}
