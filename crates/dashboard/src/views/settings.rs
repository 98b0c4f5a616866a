//! The settings page: the owner's settings of the license (the ones
//! `GET`/`PUT /api/dashboard/license-settings` read and change).

use maud::{Markup, html};
use tradeterm_store::LicenseSettings;

use super::{Nav, SETTINGS_PATH, csrf_field, layout};
use crate::session::Owner;

/// The settings page (`saved`: after a change).
pub(crate) fn page(owner: &Owner, settings: &LicenseSettings, saved: bool) -> Markup {
    layout(
        "Settings",
        Some(owner),
        Nav::Settings,
        html! {
            h1 { "Settings" }
            p.lead { "Settings of this license, for every terminal and key." }
            @if saved {
                div.alert.success role="status" #notice { "Saved. Calls follow the new settings from now on." }
            }
            section.card aria-labelledby="confirm-title" {
                h2 #confirm-title { "Live trades from AI clients" }
                p {
                    "When this is on, every live trade an AI client asks for over MCP is put to its user first \
                     (a summary with the money at risk, accept or decline); without an accept nothing is sent. \
                     A client that cannot ask its user cannot trade live; dry runs always work."
                }
                form method="post" action=(SETTINGS_PATH) {
                    (csrf_field(owner))
                    label.check {
                        input #mcp-trade-confirmation type="checkbox" name="mcp_trade_confirmation" checked[settings.mcp_trade_confirmation];
                        "Ask the user to confirm each live trade requested over MCP"
                    }
                    @if !settings.mcp_trade_confirmation {
                        p.warning-text #confirmation-off {
                            "Off: live trades over MCP are sent without asking anyone, within the key's scope and the other checks."
                        }
                    }
                    button.button.primary type="submit" { "Save" }
                }
            }
        },
    )
}
