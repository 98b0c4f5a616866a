//! Macro tools: `get_economic_surprise`, `get_rate_expectations`,
//! `get_cb_stance`, `get_market_context`, `get_risk_regime`.

use crate::Tool;

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    Vec::new()
}
