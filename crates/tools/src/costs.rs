//! Cost and account-history tools: `get_swap_calendar`, `estimate_fill`,
//! `get_equity_curve`.

use crate::Tool;

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    Vec::new()
}
