//! Event-analysis tools: `get_holding_risk`, `get_event_sensitivity`.

use crate::Tool;

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    Vec::new()
}
