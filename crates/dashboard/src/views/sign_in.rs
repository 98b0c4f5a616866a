//! The sign-in page.

use maud::{Markup, html};

use super::{Nav, layout};
use crate::session::CSRF_FIELD;

/// The sign-in form. `token` is the form's double-submit value; `error`
/// says why the last attempt failed. The master key is never put back.
pub(crate) fn page(token: &str, error: Option<&str>) -> Markup {
    layout(
        "Sign in",
        None,
        Nav::None,
        html! {
            div.narrow {
                h1 { "Sign in" }
                p.lead { "Manage this license's terminals, their keys and REST API keys." }
                @if let Some(error) = error {
                    div.alert.error role="alert" #sign-in-error { (error) }
                }
                form.card method="post" action=(super::SIGN_IN_PATH) {
                    input type="hidden" name=(CSRF_FIELD) value=(token);
                    div.field {
                        label for="master_key" { "Master license key" }
                        input #master_key type="password" name="master_key" required
                            autocomplete="current-password" spellcheck="false" autocapitalize="off"
                            aria-describedby="master_key_help"
                            aria-invalid=[error.map(|_| "true")];
                        p.help #master_key_help {
                            "The license's master key (" code { "tt_lic_…" } "), printed when the license was \
                             created (" code { "tradeterm serve" } " saves it in "
                            code { ".tradeterm/demo-credentials.json" } "). It is exchanged for a session \
                             that ends when you sign out or after a while without use; the key itself is \
                             kept nowhere in this page."
                        }
                    }
                    button.button.primary type="submit" { "Sign in" }
                }
            }
        },
    )
}
