//! Sessions, cookies and CSRF protection of the dashboard.
//!
//! - **Sign-in**: the master key arrives once, in the body of
//!   `POST /dashboard/sign-in`, and is exchanged for a random session token
//!   (`tt_dash_…`, stored hashed by [`tradeterm_store::SessionStore`]) in the
//!   cookie [`SESSION_COOKIE`]: `HttpOnly`, `SameSite=Strict`, `Path=/dashboard`,
//!   `Secure` when the request came over HTTPS (the gateway's own TLS, or a
//!   proxy saying `X-Forwarded-Proto: https`). The sign-in form itself is
//!   protected by a double-submit token: a random value in the cookie
//!   [`SIGN_IN_COOKIE`] that the form must repeat.
//! - **Expiry**: a session ends after [`crate::DashboardSettings::session_idle`]
//!   without a page or form request (the expiry moves forward at most once a
//!   minute; the fragments a page refreshes on its own do not count) and
//!   [`crate::DashboardSettings::session_max`] after sign-in; sign-out deletes
//!   it.
//! - **CSRF**: every state-changing request must carry the session's CSRF
//!   token, `base64url(HMAC-SHA256(session token, "tradeterm dashboard csrf
//!   v1"))`, in the form field `csrf` or the header `X-CSRF-Token`; it is
//!   compared in constant time. Pages put it into their forms and a `<meta>`
//!   element; it cannot be computed without the `HttpOnly` cookie. Requests
//!   that a browser marks as cross-site (`Sec-Fetch-Site`) or whose `Origin`
//!   is another host are refused before that.

use actix_web::HttpRequest;
use actix_web::cookie::{Cookie, SameSite, time};
use aws_lc_rs::hmac;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use subtle::ConstantTimeEq;
use tradeterm_store::{DashboardSession, License};

use crate::Dashboard;
use crate::error::PageError;

/// The session cookie.
pub const SESSION_COOKIE: &str = "tt_dash";
/// The sign-in form's double-submit cookie.
pub const SIGN_IN_COOKIE: &str = "tt_dash_signin";
/// Form field of the CSRF token.
pub const CSRF_FIELD: &str = "csrf";
/// Header of the CSRF token (for script calls).
pub const CSRF_HEADER: &str = "x-csrf-token";
/// The cookies' path: the dashboard only.
const COOKIE_PATH: &str = crate::PATH;
/// The expiry of an active session is moved forward at most this often.
const EXTEND_EVERY_MS: i64 = 60_000;
/// Message of the CSRF token's HMAC.
const CSRF_CONTEXT: &[u8] = b"tradeterm dashboard csrf v1";

/// The signed-in owner of a request: the license and the session's CSRF token.
#[derive(Debug, Clone)]
pub(crate) struct Owner {
    /// The license the session acts for.
    pub license: License,
    /// The session token (the cookie's value), for sign-out.
    token: String,
    /// The session's CSRF token.
    pub csrf: String,
}

impl Owner {
    pub(crate) fn token(&self) -> &str {
        &self.token
    }
}

/// The CSRF token of a session.
pub fn csrf_token(session_token: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, session_token.as_bytes());
    URL_SAFE_NO_PAD.encode(hmac::sign(&key, CSRF_CONTEXT).as_ref())
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The signed-in owner of `req`, or [`PageError::SignIn`]. A page or a form
/// is activity: it moves the session's idle expiry forward.
pub(crate) async fn owner(req: &HttpRequest, dash: &Dashboard) -> Result<Owner, PageError> {
    resolve(req, dash, true).await
}

/// As [`owner`], for the fragments a page's script refreshes on its own:
/// they are not activity, so a tab left open still lets its session expire.
pub(crate) async fn owner_passive(req: &HttpRequest, dash: &Dashboard) -> Result<Owner, PageError> {
    resolve(req, dash, false).await
}

async fn resolve(req: &HttpRequest, dash: &Dashboard, activity: bool) -> Result<Owner, PageError> {
    let Some(token) = req.cookie(SESSION_COOKIE).map(|c| c.value().to_owned()) else {
        return Err(PageError::SignIn);
    };
    let store = dash.gateway().store();
    let Some(session) = store.dashboard_session(&token).await.map_err(PageError::internal)? else {
        return Err(PageError::SignIn);
    };
    if activity
        && let Some(expires_at) = extended_expiry(&session, dash.settings(), now_ms())
        && let Err(e) = store.extend_dashboard_session(&token, expires_at).await
    {
        tracing::warn!(error = %e, "could not extend a dashboard session");
    }
    Ok(Owner {
        license: session.license,
        csrf: csrf_token(&token),
        token,
    })
}

/// The new expiry of a session used at `now`: `now` + the idle lifetime,
/// never past sign-in + the absolute lifetime; `None` when that moves it by
/// less than a minute (not worth a write).
fn extended_expiry(session: &DashboardSession, settings: &crate::DashboardSettings, now: i64) -> Option<i64> {
    let idle = settings.session_idle.as_millis() as i64;
    let cap = session.created_at + settings.session_max.as_millis() as i64;
    let wanted = (now + idle).min(cap);
    (wanted - session.expires_at >= EXTEND_EVERY_MS).then_some(wanted)
}

/// Refuses a state-changing request that is cross-origin or lacks the
/// owner's CSRF token (`given`: the form field; else the header).
pub(crate) fn check_csrf(req: &HttpRequest, owner: &Owner, given: Option<&str>) -> Result<(), PageError> {
    if !same_origin(req) {
        return Err(PageError::Csrf);
    }
    let header = req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    let given = given.filter(|g| !g.is_empty()).or(header).unwrap_or_default();
    if tokens_equal(given, &owner.csrf) {
        Ok(())
    } else {
        Err(PageError::Csrf)
    }
}

/// Whether two tokens are equal, in constant time for equal lengths.
pub(crate) fn tokens_equal(a: &str, b: &str) -> bool {
    !a.is_empty() && a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Whether the browser says the request comes from this origin: refused when
/// `Sec-Fetch-Site` is `cross-site` or `same-site`, or when `Origin` names
/// another host (or is `null`). Requests without either header (non-browser
/// clients) pass on to the CSRF token.
pub(crate) fn same_origin(req: &HttpRequest) -> bool {
    let headers = req.headers();
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return false;
    }
    match headers.get(actix_web::http::header::ORIGIN) {
        None => true,
        Some(origin) => {
            let Ok(origin) = origin.to_str() else { return false };
            let authority = origin
                .strip_prefix("https://")
                .or_else(|| origin.strip_prefix("http://"));
            let host = req.connection_info().host().to_ascii_lowercase();
            authority.is_some_and(|a| a.to_ascii_lowercase() == host)
        }
    }
}

/// Whether the request came over HTTPS: the gateway's TLS, or a proxy that
/// says so (`Forwarded`/`X-Forwarded-Proto`).
pub(crate) fn is_https(req: &HttpRequest, dash: &Dashboard) -> bool {
    dash.gateway().settings().tls.is_some() || req.connection_info().scheme() == "https"
}

/// A cookie of the dashboard: `HttpOnly`, `SameSite=Strict`, `Path=/dashboard`,
/// `Secure` over HTTPS.
fn cookie(name: &'static str, value: String, secure: bool) -> Cookie<'static> {
    Cookie::build(name, value)
        .path(COOKIE_PATH)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .finish()
}

/// The session cookie for a new session (a browser-session cookie; the
/// server-side expiry is what counts).
pub(crate) fn session_cookie(token: &str, secure: bool) -> Cookie<'static> {
    cookie(SESSION_COOKIE, token.to_owned(), secure)
}

/// The sign-in form's double-submit cookie (one hour).
pub(crate) fn sign_in_cookie(value: &str, secure: bool) -> Cookie<'static> {
    let mut c = cookie(SIGN_IN_COOKIE, value.to_owned(), secure);
    c.set_max_age(time::Duration::hours(1));
    c
}

/// A cookie that removes `name`.
pub(crate) fn removal(name: &'static str, secure: bool) -> Cookie<'static> {
    let mut c = cookie(name, String::new(), secure);
    c.make_removal();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_tokens_are_per_session_and_not_the_session_token() {
        let a = csrf_token("tt_dash_a");
        assert_eq!(a, csrf_token("tt_dash_a"));
        assert_ne!(a, csrf_token("tt_dash_b"));
        assert_eq!(a.len(), 43, "32 bytes, base64url without padding");
        assert!(!a.contains("tt_dash"));
        // RFC 4231 test case 2 pins the construction: HMAC-SHA256 keyed by the token.
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"Jefe");
        assert_eq!(
            hex::encode(hmac::sign(&key, b"what do ya want for nothing?").as_ref()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn activity_extends_a_session_up_to_its_absolute_lifetime() {
        let settings = crate::DashboardSettings {
            session_idle: std::time::Duration::from_secs(30 * 60),
            session_max: std::time::Duration::from_secs(12 * 3600),
            ..crate::DashboardSettings::default()
        };
        let license = License {
            id: "lic_1".into(),
            name: "L".into(),
            tier: tradeterm_store::Tier::Pro,
            created_at: 0,
            disabled: false,
        };
        let minute = 60_000;
        let session = |created_at, expires_at| DashboardSession {
            license: license.clone(),
            created_at,
            expires_at,
        };
        // Used 10 minutes after sign-in: now + 30 min.
        assert_eq!(
            extended_expiry(&session(0, 30 * minute), &settings, 10 * minute),
            Some(40 * minute)
        );
        // Less than a minute of difference: no write.
        assert_eq!(extended_expiry(&session(0, 30 * minute), &settings, 30 * 1000), None);
        // Near the absolute end: capped at sign-in + 12 h, then nothing more.
        let end = 12 * 60 * minute;
        assert_eq!(
            extended_expiry(&session(0, end - 20 * minute), &settings, end - 5 * minute),
            Some(end)
        );
        assert_eq!(extended_expiry(&session(0, end), &settings, end - minute), None);
    }

    #[test]
    fn token_comparison() {
        assert!(tokens_equal("abc", "abc"));
        assert!(!tokens_equal("abc", "abd"));
        assert!(!tokens_equal("abc", "abcd"));
        assert!(!tokens_equal("", ""), "an empty token never matches");
    }

    #[test]
    fn origin_checks() {
        use actix_web::test::TestRequest;
        let same = TestRequest::default()
            .insert_header(("host", "gw.example:8081"))
            .insert_header(("origin", "https://gw.example:8081"))
            .to_http_request();
        assert!(same_origin(&same));
        let other = TestRequest::default()
            .insert_header(("host", "gw.example:8081"))
            .insert_header(("origin", "https://evil.example"))
            .to_http_request();
        assert!(!same_origin(&other));
        let null = TestRequest::default()
            .insert_header(("host", "gw.example:8081"))
            .insert_header(("origin", "null"))
            .to_http_request();
        assert!(!same_origin(&null));
        let cross = TestRequest::default()
            .insert_header(("host", "gw.example:8081"))
            .insert_header(("sec-fetch-site", "cross-site"))
            .to_http_request();
        assert!(!same_origin(&cross));
        let sibling = TestRequest::default()
            .insert_header(("sec-fetch-site", "same-site"))
            .to_http_request();
        assert!(!same_origin(&sibling));
        let plain = TestRequest::default().to_http_request();
        assert!(same_origin(&plain), "no browser headers: the CSRF token decides");
    }

    #[test]
    fn cookies_are_http_only_strict_and_scoped() {
        let c = session_cookie("tt_dash_x", false).to_string();
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.contains("Path=/dashboard"));
        assert!(!c.contains("Secure"));
        assert!(session_cookie("tt_dash_x", true).to_string().contains("Secure"));
        let gone = removal(SESSION_COOKIE, false).to_string();
        assert!(gone.contains("Max-Age=0"), "{gone}");
    }
}
