//! Portfolio tools: `get_correlation_matrix`, `check_portfolio_exposure`.

use crate::Tool;

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    Vec::new()
}
