//! `get_account_info`: the account state as the terminal reports it.

use tradeterm_core::AccountInfo;

use crate::market::NoInput;
use crate::{Capability, Gate, READ_TERMINAL, Target, Tool, ToolContext, ToolError, ToolSpec};

async fn handle(ctx: ToolContext, _input: NoInput) -> Result<AccountInfo, ToolError> {
    ctx.account().await
}

pub(super) fn tool() -> Tool {
    ToolSpec {
        name: "get_account_info",
        title: "Account information",
        description: "Account state: login, server, currency, leverage, trade mode (demo/real/contest), balance, equity, margin, free margin, margin level and floating profit.",
        capability: Capability::Read,
        gate: Gate::Always,
        target: Target::Terminal,
        annotations: READ_TERMINAL,
    }
    .build(handle)
}
