//! Prop-firm tools: `set_prop_firm_rules`, `get_prop_firm_status`,
//! `remove_prop_firm_rules`.

use crate::Tool;

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    Vec::new()
}
