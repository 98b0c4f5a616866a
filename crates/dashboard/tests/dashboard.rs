//! The dashboard over real HTTP, as a browser drives it (cookies, forms,
//! `Origin`), on a gateway with a SQLite store: sign-in and sign-out, the
//! session cookie's attributes, CSRF protection (a request without the
//! session's token changes nothing), license isolation (a session never
//! reaches another license), the secrets shown once, the five-key limit, the
//! rules-and-alerts panel, the webhooks page over the catalog's real webhook
//! tools (the signing secret shown once, the test delivery signed with it,
//! the delivery log, another license's endpoint not found), key scopes, the
//! audit page (this license's rows only, filters, cursor, CSV), the settings
//! page (trade confirmation off and on, CSRF), and no master key or secret
//! in any log line.
//!
//! The same pages in a real browser: `bins/tradeterm/tests/external/dashboard.rs`.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use serde_json::{Value, json};
use tradeterm_dashboard::{Dashboard, DashboardSettings, Insight, InsightError, Insights};
use tradeterm_gateway::{Gateway, GatewaySettings};
use tradeterm_protocol::token::{TokenSigner, generate_rsa_pem_pair};
use tradeterm_store::{
    AuditStore, License, NewWebhookDelivery, SessionStore, SqlStore, Store, Tier, WebhookAttemptOutcome, WebhookStore,
};
use tradeterm_tools::webhooks::{WebhookSettings, sign};

// ----- a log sink shared by every test of this binary -----

/// Every log line of this test binary (all tests), at TRACE.
fn logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("trace")
            .with_ansi(false)
            .with_writer(move || LogWriter(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber per test binary");
        buffer
    })
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log_text() -> String {
    String::from_utf8_lossy(&logs().lock().unwrap()).into_owned()
}

// ----- the app -----

/// Records the insights asked for and answers fixed ones.
#[derive(Default)]
struct FakeInsights {
    calls: Mutex<Vec<(String, String, Insight)>>,
}

#[async_trait]
impl Insights for FakeInsights {
    async fn get(&self, license: &License, terminal_id: &str, insight: Insight) -> Result<Value, InsightError> {
        self.calls
            .lock()
            .unwrap()
            .push((license.id.clone(), terminal_id.to_owned(), insight.clone()));
        match insight {
            Insight::PropFirmStatus => Ok(json!({
                "terminal_id": terminal_id, "verdict": "warning", "reason": "daily loss has 40 % of its room left",
                "enforcement": "advisory", "max_safe_risk_percent": 1.5, "max_safe_risk_amount": 150.0,
                "limits": [{ "rule": "daily_loss", "limit": 500.0, "used": 300.0, "headroom": 200.0,
                             "headroom_percent": 40.0, "floor_equity": 9500.0, "verdict": "warning",
                             "breached_on_closed_balance": false }],
                "objectives": [], "passed": false, "currency": "USD", "balance": 10000.0, "equity": 9800.0,
                "as_of": "2026-11-18T12:00:00Z", "intraday_breaches": [], "rules": {}
            })),
            Insight::NewsGuardStatus => Err(InsightError {
                code: "FORBIDDEN".into(),
                message: "needs the analytics capability".into(),
            }),
            Insight::LatestAlerts => Ok(json!({
                "alerts": [{ "id": "news:1", "kind": "news", "fired_at": "2026-11-18T11:59:00Z",
                             "title": "ECB <b>surprise</b>", "currencies": ["EUR"] }],
                "next_cursor": "1", "more": false, "guard_active": true, "equity_guard_active": false, "notes": []
            })),
            Insight::Webhook(_) => Err(InsightError {
                code: "INTERNAL_ERROR".into(),
                message: "not faked".into(),
            }),
        }
    }
}

/// The catalog's real tools, run in process as the license's master key,
/// as the single-node binary's `ToolInsights` does.
struct CatalogInsights {
    services: Arc<tradeterm_tools::Services>,
}

#[async_trait]
impl Insights for CatalogInsights {
    async fn get(&self, license: &License, terminal_id: &str, insight: Insight) -> Result<Value, InsightError> {
        let tool = tradeterm_tools::find(insight.tool()).expect("a catalog tool");
        let caller = tradeterm_tools::Caller {
            license_id: license.id.clone(),
            credential: format!("master:{}", license.id),
            caps: license.tier.capabilities().to_vec(),
        };
        let call = tradeterm_tools::Invocation::new(
            "dashboard",
            caller,
            tradeterm_tools::TerminalChoice::Header(Some(terminal_id.to_owned())),
        );
        let answer = tradeterm_tools::invoke(&self.services, tool, call, insight.input())
            .await
            .map_err(|e| InsightError {
                code: e.code().to_owned(),
                message: e.to_string(),
            })?;
        insight.check(&answer).expect("the tool's answer fits the page");
        Ok(answer)
    }
}

struct TestApp {
    base: String,
    host: String,
    store: Arc<SqlStore>,
    http: reqwest::Client,
    insights: Arc<FakeInsights>,
    /// The catalog's services (with `Options::catalog`), to make tool calls
    /// as another surface would.
    services: Option<Arc<tradeterm_tools::Services>>,
    _dir: tempfile::TempDir,
}

struct Options {
    insights: bool,
    /// The catalog's real tools instead of the fake insights.
    catalog: bool,
    settings: DashboardSettings,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            insights: true,
            catalog: false,
            settings: DashboardSettings::default(),
        }
    }
}

async fn spawn_app(opts: Options) -> TestApp {
    logs();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("dash.db").display());
    let store = Arc::new(SqlStore::connect(&url).await.unwrap());
    let (private, _) = generate_rsa_pem_pair().unwrap();
    let signer = TokenSigner::from_pem(private.as_bytes(), "iss", "aud").unwrap();
    let gateway = Gateway::new(GatewaySettings::default(), store.clone(), signer);
    let insights = Arc::new(FakeInsights::default());
    let mut dashboard = Dashboard::new(gateway.clone(), opts.settings);
    let mut catalog = None;
    if opts.catalog {
        let services = tradeterm_tools::Services {
            // The test's receiver is on loopback.
            webhooks: WebhookSettings {
                allow_private: true,
                ..WebhookSettings::default()
            },
            ..tradeterm_tools::Services::new(Arc::new(gateway.clone()), store.clone())
        };
        let services = Arc::new(services);
        catalog = Some(services.clone());
        dashboard = dashboard.with_insights(Arc::new(CatalogInsights { services }));
    } else if opts.insights {
        dashboard = dashboard.with_insights(insights.clone());
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = gateway
        .server_with(listener, move |cfg| dashboard.configure(cfg))
        .unwrap();
    let host = format!("127.0.0.1:{}", server.port());
    tokio::spawn(server.run_until_stopped());
    TestApp {
        base: format!("http://{host}"),
        host,
        store,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
        insights,
        services: catalog,
        _dir: dir,
    }
}

/// A license with a terminal and an API key.
struct Tenant {
    license: License,
    master: String,
    terminal_id: String,
    terminal_key: String,
    api_key_id: String,
    api_key: String,
}

impl TestApp {
    async fn tenant(&self, name: &str) -> Tenant {
        let (license, master) = self.store.create_license(name, Tier::Pro).await.unwrap();
        let (terminal, terminal_key) = self
            .store
            .create_terminal(&license.id, &format!("{name} terminal"))
            .await
            .unwrap();
        let (key, api_key) = self
            .store
            .create_api_key(&license.id, &format!("{name} key"))
            .await
            .unwrap();
        Tenant {
            license,
            master: master.expose().to_owned(),
            terminal_id: terminal.id,
            terminal_key: terminal_key.expose().to_owned(),
            api_key_id: key.id,
            api_key: api_key.expose().to_owned(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn origin(&self) -> String {
        self.base.clone()
    }

    /// Opens the sign-in page: the form's token and its cookie.
    async fn sign_in_form(&self) -> (String, String) {
        let r = self.http.get(self.url("/dashboard/sign-in")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let cookies = set_cookies(&r);
        let cookie = cookies.get("tt_dash_signin").expect("sign-in cookie").clone();
        let body = r.text().await.unwrap();
        (hidden(&body, "csrf"), cookie.value)
    }

    /// Signs in as a browser would; panics unless it works.
    async fn sign_in(&self, master: &str) -> Session<'_> {
        let (token, cookie) = self.sign_in_form().await;
        let r = self
            .http
            .post(self.url("/dashboard/sign-in"))
            .header(COOKIE, format!("tt_dash_signin={cookie}"))
            .header(ORIGIN, self.origin())
            .form(&[("master_key", master), ("csrf", &token)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "sign-in");
        assert_eq!(r.headers()[LOCATION], "/dashboard/terminals");
        let session = set_cookies(&r).remove("tt_dash").expect("session cookie");
        let mut s = Session {
            app: self,
            cookie: session.value,
            csrf: String::new(),
        };
        let page = s.get("/dashboard/terminals").await;
        assert_eq!(page.0, StatusCode::OK);
        s.csrf = meta(&page.1, "csrf-token");
        s
    }
}

/// A signed-in browser.
struct Session<'a> {
    app: &'a TestApp,
    cookie: String,
    csrf: String,
}

impl Session<'_> {
    async fn get(&self, path: &str) -> (StatusCode, String) {
        let r = self
            .app
            .http
            .get(self.app.url(path))
            .header(COOKIE, format!("tt_dash={}", self.cookie))
            .send()
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    }

    /// A form POST from this origin with the session's CSRF token.
    async fn post(&self, path: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        let mut all = fields.to_vec();
        all.push(("csrf", &self.csrf));
        self.post_raw(path, &all, Some(&self.app.origin())).await
    }

    async fn post_raw(&self, path: &str, fields: &[(&str, &str)], origin: Option<&str>) -> reqwest::Response {
        let mut request = self
            .app
            .http
            .post(self.app.url(path))
            .header(COOKIE, format!("tt_dash={}", self.cookie))
            .form(fields);
        if let Some(origin) = origin {
            request = request.header(ORIGIN, origin);
        }
        request.send().await.unwrap()
    }
}

#[derive(Debug, Clone)]
struct SetCookie {
    value: String,
    attributes: String,
}

fn set_cookies(r: &reqwest::Response) -> BTreeMap<String, SetCookie> {
    r.headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| {
            let (pair, attributes) = v.split_once(';').unwrap_or((v, ""));
            let (name, value) = pair.split_once('=')?;
            Some((
                name.trim().to_owned(),
                SetCookie {
                    value: value.trim().to_owned(),
                    attributes: attributes.to_owned(),
                },
            ))
        })
        .collect()
}

/// The value of the first hidden input named `name`.
fn hidden(html: &str, name: &str) -> String {
    attribute_after(html, &format!("name=\"{name}\" value=\""))
}

/// The content of `<meta name="{name}">`.
fn meta(html: &str, name: &str) -> String {
    attribute_after(html, &format!("<meta name=\"{name}\" content=\""))
}

fn attribute_after(html: &str, marker: &str) -> String {
    let start = html.find(marker).unwrap_or_else(|| panic!("{marker} not in the page")) + marker.len();
    html[start..].split('"').next().unwrap().to_owned()
}

/// The `value` of the input with this id.
fn input_value(html: &str, id: &str) -> String {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("#{id} not in the page"));
    attribute_after(&html[start..], "value=\"")
}

// ----- sign-in, cookies, sign-out -----

#[tokio::test]
async fn sign_in_sets_a_strict_http_only_session_cookie_and_never_echoes_the_key() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;

    // Unauthenticated pages and fragments lead to the sign-in page.
    for path in ["/dashboard", "/dashboard/terminals", "/dashboard/api-keys"] {
        let r = app.http.get(app.url(path)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{path}");
        assert_eq!(r.headers()[LOCATION], "/dashboard/sign-in");
    }
    let r = app
        .http
        .get(app.url("/dashboard/fragments/terminals"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // The form: a password field, posted in the body.
    let r = app.http.get(app.url("/dashboard/sign-in")).send().await.unwrap();
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert!(
        r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'none'")
    );
    let form = r.text().await.unwrap();
    assert!(form.contains("method=\"post\" action=\"/dashboard/sign-in\""));
    assert!(form.contains("type=\"password\" name=\"master_key\""));

    // A wrong key: 401, the form again, the key not echoed.
    let (token, cookie) = app.sign_in_form().await;
    let wrong = "tt_lic_not-the-right-one";
    let r = app
        .http
        .post(app.url("/dashboard/sign-in"))
        .header(COOKIE, format!("tt_dash_signin={cookie}"))
        .header(ORIGIN, app.origin())
        .form(&[("master_key", wrong), ("csrf", &token)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(!set_cookies(&r).contains_key("tt_dash"));
    let page = r.text().await.unwrap();
    assert!(page.contains("That is not the master key of an enabled license."));
    assert!(!page.contains(wrong));

    // The right key: a session cookie, HttpOnly, SameSite=Strict, path /dashboard, not Secure over plain HTTP.
    let (token, cookie) = app.sign_in_form().await;
    let r = app
        .http
        .post(app.url("/dashboard/sign-in"))
        .header(COOKIE, format!("tt_dash_signin={cookie}"))
        .header(ORIGIN, app.origin())
        .form(&[("master_key", a.master.as_str()), ("csrf", &token)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let location = r.headers()[LOCATION].to_str().unwrap().to_owned();
    assert_eq!(location, "/dashboard/terminals");
    let cookies = set_cookies(&r);
    let session = &cookies["tt_dash"];
    assert!(session.value.starts_with("tt_dash_"));
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/dashboard"] {
        assert!(
            session.attributes.contains(attribute),
            "{attribute}: {}",
            session.attributes
        );
    }
    assert!(!session.attributes.contains("Secure"));
    assert!(
        cookies["tt_dash_signin"].attributes.contains("Max-Age=0"),
        "the form's cookie is dropped"
    );
    // The session is stored (hashed) for this license.
    let stored = app.store.dashboard_session(&session.value).await.unwrap().unwrap();
    assert_eq!(stored.license.id, a.license.id);

    // Signed in: the pages name the license and never carry the master key.
    let s = Session {
        app: &app,
        cookie: session.value.clone(),
        csrf: String::new(),
    };
    for path in [
        "/dashboard/terminals",
        "/dashboard/api-keys",
        &format!("/dashboard/terminals/{}", a.terminal_id),
    ] {
        let (status, page) = s.get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(page.contains("Alpha"), "{path}");
        assert!(!page.contains(&a.master), "{path}");
        assert!(
            !page.contains(&session.value),
            "{path}: the session token is not in the page"
        );
    }
    // The sign-in page sends a signed-in owner on.
    let (status, _) = s.get("/dashboard/sign-in").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_session_cookie_is_secure_over_https() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let r = app
        .http
        .get(app.url("/dashboard/sign-in"))
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    let cookie = set_cookies(&r).remove("tt_dash_signin").unwrap();
    assert!(cookie.attributes.contains("Secure"));
    let token = hidden(&r.text().await.unwrap(), "csrf");
    let r = app
        .http
        .post(app.url("/dashboard/sign-in"))
        .header("x-forwarded-proto", "https")
        .header(COOKIE, format!("tt_dash_signin={}", cookie.value))
        .form(&[("master_key", a.master.as_str()), ("csrf", &token)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(set_cookies(&r)["tt_dash"].attributes.contains("Secure"));
}

#[tokio::test]
async fn sign_in_needs_its_form_token_and_this_origin() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let (token, cookie) = app.sign_in_form().await;
    let attempts: [(Option<&str>, &str, Option<String>); 4] = [
        (None, "", Some(app.origin())),                        // no form token
        (Some(cookie.as_str()), "forged", Some(app.origin())), // a token that is not the cookie's
        (None, token.as_str(), Some(app.origin())),            // no cookie
        (
            Some(cookie.as_str()),
            token.as_str(),
            Some("http://evil.example".into()),
        ), // another origin
    ];
    for (cookie, token, origin) in attempts {
        let mut request = app
            .http
            .post(app.url("/dashboard/sign-in"))
            .form(&[("master_key", a.master.as_str()), ("csrf", token)]);
        if let Some(c) = cookie {
            request = request.header(COOKIE, format!("tt_dash_signin={c}"));
        }
        if let Some(o) = origin {
            request = request.header(ORIGIN, o);
        }
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert!(!set_cookies(&r).contains_key("tt_dash"), "no session");
        assert!(!r.text().await.unwrap().contains(&a.master));
    }
}

#[tokio::test]
async fn sign_out_ends_that_session_at_once_and_expired_sessions_are_gone() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let first = app.sign_in(&a.master).await;
    let second = app.sign_in(&a.master).await;
    assert_ne!(first.cookie, second.cookie);
    assert_ne!(first.csrf, second.csrf, "a CSRF token per session");

    // Sign-out without the token does nothing.
    let r = first.post_raw("/dashboard/sign-out", &[], Some(&app.origin())).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(first.get("/dashboard/terminals").await.0, StatusCode::OK);

    let r = first.post("/dashboard/sign-out", &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/dashboard/sign-in");
    assert!(set_cookies(&r)["tt_dash"].attributes.contains("Max-Age=0"));
    assert!(app.store.dashboard_session(&first.cookie).await.unwrap().is_none());
    assert_eq!(first.get("/dashboard/terminals").await.0, StatusCode::SEE_OTHER);
    assert_eq!(
        first.get("/dashboard/fragments/terminals").await.0,
        StatusCode::UNAUTHORIZED
    );
    // The other session lives on.
    assert_eq!(second.get("/dashboard/terminals").await.0, StatusCode::OK);

    // A session left idle past its expiry is refused (one in use would have
    // been extended: see the next test).
    let soon = chrono::Utc::now().timestamp_millis() + 300;
    let token = app.store.create_dashboard_session(&a.license.id, soon).await.unwrap();
    let short = Session {
        app: &app,
        cookie: token.expose().to_owned(),
        csrf: String::new(),
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(short.get("/dashboard/terminals").await.0, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn an_active_session_is_extended_up_to_its_absolute_lifetime() {
    let app = spawn_app(Options {
        settings: DashboardSettings {
            session_idle: Duration::from_secs(30 * 60),
            session_max: Duration::from_secs(3600),
            ..DashboardSettings::default()
        },
        ..Options::default()
    })
    .await;
    let a = app.tenant("Alpha").await;
    let now = chrono::Utc::now().timestamp_millis();
    // A session that expires in 2 minutes: the next request moves it to now + 30 min.
    let token = app
        .store
        .create_dashboard_session(&a.license.id, now + 120_000)
        .await
        .unwrap();
    let s = Session {
        app: &app,
        cookie: token.expose().to_owned(),
        csrf: String::new(),
    };
    // The fragments a page refreshes by itself are not activity.
    assert_eq!(s.get("/dashboard/fragments/terminals").await.0, StatusCode::OK);
    let unchanged = app
        .store
        .dashboard_session(token.expose())
        .await
        .unwrap()
        .unwrap()
        .expires_at;
    assert_eq!(unchanged, now + 120_000, "a refresh does not extend the session");
    assert_eq!(s.get("/dashboard/terminals").await.0, StatusCode::OK);
    let expires = app
        .store
        .dashboard_session(token.expose())
        .await
        .unwrap()
        .unwrap()
        .expires_at;
    assert!(
        expires >= now + 29 * 60_000 && expires <= now + 31 * 60_000,
        "{}",
        expires - now
    );
}

// ----- CSRF -----

#[tokio::test]
async fn state_changing_requests_without_a_valid_csrf_token_change_nothing() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let s = app.sign_in(&a.master).await;
    let other = app.sign_in(&a.master).await; // the same license's other session
    let rotate = format!("/dashboard/terminals/{}/rotate-key", a.terminal_id);
    let revoke = format!("/dashboard/api-keys/{}/revoke", a.api_key_id);
    let actions: [(&str, Vec<(&str, &str)>); 5] = [
        ("/dashboard/terminals", vec![("name", "sneaky")]),
        ("/dashboard/api-keys", vec![("label", "sneaky")]),
        (rotate.as_str(), vec![]),
        (revoke.as_str(), vec![]),
        ("/dashboard/sign-out", vec![]),
    ];
    let before = app.store.list_terminals(&a.license.id).await.unwrap();
    for (path, fields) in &actions {
        let tries: [(Option<&str>, Option<String>, &str); 5] = [
            (None, Some(app.origin()), "no token"),
            (Some("not-the-token"), Some(app.origin()), "a wrong token"),
            (Some(other.csrf.as_str()), Some(app.origin()), "another session's token"),
            (
                Some(s.csrf.as_str()),
                Some("http://evil.example".into()),
                "the right token from another origin",
            ),
            (
                Some(s.csrf.as_str()),
                Some("null".into()),
                "the right token from an opaque origin",
            ),
        ];
        for (token, origin, what) in tries {
            let mut all = fields.clone();
            if let Some(t) = token {
                all.push(("csrf", t));
            }
            let r = s.post_raw(path, &all, origin.as_deref()).await;
            assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path}: {what}");
            let page = r.text().await.unwrap();
            assert!(page.contains("Nothing was changed"), "{path}: {what}");
        }
        // A browser marking the request cross-site is refused too.
        let mut all = fields.clone();
        all.push(("csrf", &s.csrf));
        let r = app
            .http
            .post(app.url(path))
            .header(COOKIE, format!("tt_dash={}", s.cookie))
            .header("sec-fetch-site", "cross-site")
            .form(&all)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path}: Sec-Fetch-Site cross-site");
    }
    // Nothing changed: no terminal or key created, the terminal key and the API key still work, the session lives.
    assert_eq!(app.store.list_terminals(&a.license.id).await.unwrap(), before);
    let keys = app.store.list_api_keys(&a.license.id).await.unwrap();
    assert_eq!(keys.len(), 1);
    assert!(app.store.api_key(&a.api_key).await.unwrap().is_some());
    assert!(app.store.terminal_key(&a.terminal_key).await.unwrap().is_some());
    assert!(app.store.dashboard_session(&s.cookie).await.unwrap().is_some());

    // The token in the header works like the form field (script calls), and the real token works.
    let r = app
        .http
        .post(app.url("/dashboard/terminals"))
        .header(COOKIE, format!("tt_dash={}", s.cookie))
        .header(ORIGIN, app.origin())
        .header("x-csrf-token", &s.csrf)
        .form(&[("name", "by header")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = s.post("/dashboard/terminals", &[("name", "by form")]).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(app.store.list_terminals(&a.license.id).await.unwrap().len(), 3);
}

// ----- license isolation -----

#[tokio::test]
async fn a_session_never_reads_or_changes_anything_of_another_license() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let b = app.tenant("Bravo").await;
    let s = app.sign_in(&a.master).await;

    // Lists show only A's.
    for path in [
        "/dashboard/terminals",
        "/dashboard/fragments/terminals",
        "/dashboard/api-keys",
    ] {
        let (status, page) = s.get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(!page.contains(&b.terminal_id) && !page.contains("Bravo"), "{path}");
    }
    // B's terminal and key are not found, read or written.
    let b_terminal = format!("/dashboard/terminals/{}", b.terminal_id);
    for path in [
        b_terminal.clone(),
        format!("{b_terminal}/rotate-key"),
        format!("/dashboard/fragments/terminals/{}/status", b.terminal_id),
        format!("/dashboard/fragments/terminals/{}/insights", b.terminal_id),
        format!("/dashboard/api-keys/{}/revoke", b.api_key_id),
    ] {
        let (status, page) = s.get(&path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(!page.contains("Bravo"), "{path}");
    }
    for path in [
        format!("{b_terminal}/rotate-key"),
        format!("/dashboard/api-keys/{}/revoke", b.api_key_id),
    ] {
        let r = s.post(&path, &[]).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
    }
    assert!(
        app.store.terminal_key(&b.terminal_key).await.unwrap().is_some(),
        "B's terminal key still works"
    );
    assert!(
        app.store.api_key(&b.api_key).await.unwrap().is_some(),
        "B's API key still works"
    );
    // The insights source was never asked about B.
    let calls = app.insights.calls.lock().unwrap().clone();
    assert!(
        calls
            .iter()
            .all(|(license, terminal, _)| license == &a.license.id && terminal != &b.terminal_id)
    );

    // A's own are there (the same routes work for the owner).
    let (status, page) = s.get(&format!("/dashboard/terminals/{}", a.terminal_id)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Alpha terminal"));
    // B's session sees B only.
    let sb = app.sign_in(&b.master).await;
    let (_, page) = sb.get("/dashboard/api-keys").await;
    assert!(page.contains("Bravo key") && !page.contains("Alpha key"));
    // A's CSRF token is worthless with B's session.
    let mut fields = vec![("name", "x")];
    fields.push(("csrf", s.csrf.as_str()));
    let r = sb.post_raw("/dashboard/terminals", &fields, Some(&app.origin())).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.store.list_terminals(&b.license.id).await.unwrap().len(), 1);
}

// ----- terminals, keys, limits -----

#[tokio::test]
async fn terminals_are_created_and_rotated_with_their_keys_shown_once() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let s = app.sign_in(&a.master).await;

    let r = s.post("/dashboard/terminals", &[("name", "MT5 <demo>")]).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let page = r.text().await.unwrap();
    assert!(page.contains("MT5 &lt;demo&gt;"), "the name is escaped");
    let key = input_value(&page, "terminal-key");
    assert!(key.starts_with("tt_term_"));
    let auth = app
        .store
        .terminal_key(&key)
        .await
        .unwrap()
        .expect("the shown key works");
    assert_eq!(auth.license.id, a.license.id);
    // The set-up snippets carry this gateway's address and the key.
    assert!(page.contains(&format!("inp_GatewayUrl   = ws://{}/agent/v1", app.host)));
    assert!(page.contains(&format!("inp_GatewayUrl   = http://{}/agent/v1/poll", app.host)));
    assert!(page.contains(&format!("$env:TRADETERM_TERMINAL_KEY = &quot;{key}&quot;")));
    // Shown once: never again on the list or the terminal's page.
    let (_, list) = s.get("/dashboard/terminals").await;
    assert!(list.contains("MT5 &lt;demo&gt;") && !list.contains(&key));
    let (_, one) = s.get(&format!("/dashboard/terminals/{}", auth.terminal.id)).await;
    assert!(!one.contains(&key) && one.contains("&lt;TERMINAL_KEY&gt;"));
    assert!(one.contains("Never connected"));

    // An invalid name is refused with the reason.
    let r = s.post("/dashboard/terminals", &[("name", "   ")]).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().await.unwrap().contains("Terminal name must not be empty."));

    // Rotation: the confirmation says what happens, then the new key once; the old one is dead.
    let rotate = format!("/dashboard/terminals/{}/rotate-key", auth.terminal.id);
    let (status, confirm) = s.get(&rotate).await;
    assert_eq!(status, StatusCode::OK);
    assert!(confirm.contains("No agent is connected now, so nothing is disconnected."));
    let r = s.post(&rotate, &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    let page = r.text().await.unwrap();
    let new_key = input_value(&page, "terminal-key");
    assert_ne!(new_key, key);
    assert!(page.contains("1 old key(s) revoked.") && page.contains("No agent was connected with the old key."));
    assert!(app.store.terminal_key(&key).await.unwrap().is_none());
    assert!(app.store.terminal_key(&new_key).await.unwrap().is_some());
}

#[tokio::test]
async fn api_keys_are_created_once_listed_without_secrets_limited_to_five_and_revoked() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await; // holds one key already
    let s = app.sign_in(&a.master).await;

    let r = s.post("/dashboard/api-keys", &[("label", "backtests")]).await;
    assert_eq!(r.status(), StatusCode::OK);
    let page = r.text().await.unwrap();
    let secret = input_value(&page, "api-key");
    assert!(secret.starts_with("svc_api_"));
    assert!(app.store.api_key(&secret).await.unwrap().is_some());
    let (_, list) = s.get("/dashboard/api-keys").await;
    assert!(list.contains("backtests") && list.contains(&secret[..12]) && !list.contains(&secret));
    assert!(list.contains("(2 of 5 active)"));
    assert!(!list.contains("id=\"key-limit\""));

    for i in 0..3 {
        let r = s.post("/dashboard/api-keys", &[("label", &format!("k{i}"))]).await;
        assert_eq!(r.status(), StatusCode::OK);
    }
    // Five active: the limit is explained and the form is disabled; a sixth is refused.
    let (_, list) = s.get("/dashboard/api-keys").await;
    assert!(list.contains("id=\"key-limit\""));
    assert!(list.contains("This license has 5 active API keys, the most it may hold."));
    assert!(list.contains("type=\"submit\" disabled"));
    let r = s.post("/dashboard/api-keys", &[("label", "sixth")]).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(r.text().await.unwrap().contains("already has 5 active API keys"));
    assert_eq!(app.store.list_api_keys(&a.license.id).await.unwrap().len(), 5);

    // Revocation: confirmation, then refused at once.
    let revoke = format!("/dashboard/api-keys/{}/revoke", a.api_key_id);
    let (status, confirm) = s.get(&revoke).await;
    assert_eq!(status, StatusCode::OK);
    assert!(confirm.contains("Programs using it are refused at once"));
    let r = s.post(&revoke, &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/dashboard/api-keys?done=revoked");
    assert!(app.store.api_key(&a.api_key).await.unwrap().is_none());
    let (_, list) = s.get("/dashboard/api-keys?done=revoked").await;
    assert!(list.contains("The key was revoked.") && list.contains("revoked"));
    // A revoked key is not offered again.
    assert_eq!(s.get(&revoke).await.0, StatusCode::NOT_FOUND);
    assert_eq!(s.post(&revoke, &[]).await.status(), StatusCode::NOT_FOUND);
}

// ----- rules and alerts -----

#[tokio::test]
async fn the_rules_panel_shows_the_insights_of_the_terminal() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let s = app.sign_in(&a.master).await;
    for path in [
        format!("/dashboard/terminals/{}", a.terminal_id),
        format!("/dashboard/fragments/terminals/{}/insights", a.terminal_id),
    ] {
        let (status, page) = s.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(page.contains("data-verdict=\"warning\""), "{path}");
        assert!(page.contains("1.50 % of equity (150.00 USD)"), "{path}");
        assert!(page.contains("Daily loss") && page.contains("200.00 USD"), "{path}");
        assert!(
            page.contains("data-code=\"FORBIDDEN\""),
            "{path}: the news guard's failure"
        );
        assert!(
            page.contains("ECB &lt;b&gt;surprise&lt;/b&gt;"),
            "{path}: escaped alert title"
        );
    }
    let calls = app.insights.calls.lock().unwrap().clone();
    assert!(calls.len() >= 6);
    assert!(calls.iter().all(|(l, t, _)| l == &a.license.id && t == &a.terminal_id));

    // Without an insights source the panel says where they are.
    let bare = spawn_app(Options {
        insights: false,
        ..Options::default()
    })
    .await;
    let b = bare.tenant("Bare").await;
    let s = bare.sign_in(&b.master).await;
    let (_, page) = s.get(&format!("/dashboard/terminals/{}", b.terminal_id)).await;
    assert!(page.contains("id=\"insights-unavailable\""));
}

// ----- webhooks -----

/// One request a [`receiver`] got: its signature header and its body.
type Received = Arc<Mutex<Vec<(String, String)>>>;

/// A loopback HTTP receiver answering `200` to every request.
async fn receiver() -> (String, Received) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
    let got: Received = Arc::default();
    let sink = got.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let sink = sink.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = sock.read(&mut chunk).await else { return };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    let Some((head, body)) = text.split_once("\r\n\r\n") else {
                        continue;
                    };
                    let header = |name: &str| {
                        head.lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                            })
                            .unwrap_or_default()
                    };
                    let len: usize = header("content-length").parse().unwrap_or(0);
                    if body.len() < len {
                        continue;
                    }
                    sink.lock()
                        .unwrap()
                        .push((header("tradeterm-signature"), body[..len].to_owned()));
                    let _ = sock
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                        .await;
                    return;
                }
            });
        }
    });
    (url, got)
}

#[tokio::test]
async fn webhooks_are_added_with_the_secret_shown_once_tested_updated_logged_deleted_and_kept_to_their_license() {
    let app = spawn_app(Options {
        catalog: true,
        ..Options::default()
    })
    .await;
    let a = app.tenant("Alpha").await;
    let b = app.tenant("Bravo").await;
    let s = app.sign_in(&a.master).await;
    let (url, got) = receiver().await;

    let (status, page) = s.get("/dashboard/webhooks").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("No webhook endpoints yet.") && page.contains("(0 of 10)"));
    assert!(page.contains("href=\"/dashboard/webhooks\" aria-current=\"page\""));

    // Refused by the tool (a target that is not http(s), a type never delivered): 400, the reason, the values kept.
    let r = s
        .post("/dashboard/webhooks", &[("url", "ftp://example.com/h"), ("types", "")])
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let page = r.text().await.unwrap();
    assert!(page.contains("id=\"create-error\"") && page.contains("url"), "{page}");
    assert!(page.contains("value=\"ftp://example.com/h\""));
    let r = s
        .post(
            "/dashboard/webhooks",
            &[("url", &url), ("types", "order.filled, quote")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let page = r.text().await.unwrap();
    assert!(page.contains("`quote` is not delivered by webhooks"), "{page}");
    assert!(page.contains("value=\"order.filled, quote\""));
    assert!(app.store.list_webhooks(&a.license.id).await.unwrap().is_empty());

    // Added: the signing secret on the answer, this once.
    let r = s
        .post(
            "/dashboard/webhooks",
            &[("url", &url), ("types", "order.filled position.closed")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let page = r.text().await.unwrap();
    let secret = input_value(&page, "webhook-secret");
    assert!(secret.starts_with("whsec_"), "{secret}");
    let stored = app.store.list_webhooks(&a.license.id).await.unwrap();
    assert_eq!(stored.len(), 1);
    let id = stored[0].id.clone();
    assert_eq!((stored[0].url.as_str(), stored[0].enabled), (url.as_str(), true));
    assert_eq!(stored[0].types, ["order.filled", "position.closed"]);
    let signing = app.store.webhook_secret(&a.license.id, &id).await.unwrap().unwrap();
    assert_eq!(signing.expose(), secret, "the secret shown is the one that signs");
    let detail = format!("/dashboard/webhooks/{id}");
    for path in [
        "/dashboard/webhooks".to_owned(),
        detail.clone(),
        format!("{detail}/delete"),
    ] {
        let (status, page) = s.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(page.contains(&url) && page.contains(&id), "{path}");
        assert!(
            !page.contains(&secret) && !page.contains("whsec_"),
            "{path}: never shown again"
        );
    }
    let (_, list) = s.get("/dashboard/webhooks").await;
    assert!(list.contains("(1 of 10)") && list.contains("<code>order.filled</code>"));
    assert!(list.contains("data-status=\"enabled\""));

    // A test event: posted now, signed with that secret, its answer shown.
    let r = s.post(&format!("{detail}/test"), &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    let page = r.text().await.unwrap();
    assert!(
        page.contains("id=\"test-outcome\"") && page.contains("data-delivered=\"true\""),
        "{page}"
    );
    assert!(page.contains("answered HTTP 200"));
    let received = got.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    let (signature, body) = &received[0];
    let t: i64 = signature
        .strip_prefix("t=")
        .and_then(|v| v.split_once(','))
        .unwrap()
        .0
        .parse()
        .unwrap();
    assert_eq!(
        sign::signature(&secret, t, body),
        *signature,
        "signed with the shown secret"
    );
    assert_eq!(serde_json::from_str::<Value>(body).unwrap()["type"], "webhook.test");

    // Updated: other types and disabled by the owner, then enabled again.
    let r = s
        .post(
            &detail,
            &[("url", &url), ("types", "deal.added"), ("was_enabled", "true")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], format!("{detail}?done=updated").as_str());
    let e = app.store.webhook(&a.license.id, &id).await.unwrap().unwrap();
    assert_eq!((e.enabled, e.types.clone()), (false, vec!["deal.added".to_owned()]));
    assert_eq!(e.disabled_reason.as_deref(), Some("disabled by the owner"));
    let (_, page) = s.get(&format!("{detail}?done=updated")).await;
    assert!(page.contains("The endpoint was saved.") && page.contains("data-status=\"disabled\""));
    assert!(page.contains("disabled by the owner"));
    // Saving without touching the switch leaves it as it is.
    let r = s
        .post(
            &detail,
            &[("url", &url), ("types", "deal.added"), ("was_enabled", "false")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(!app.store.webhook(&a.license.id, &id).await.unwrap().unwrap().enabled);
    let r = s
        .post(
            &detail,
            &[
                ("url", &url),
                ("types", "deal.added"),
                ("enabled", "on"),
                ("was_enabled", "false"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let e = app.store.webhook(&a.license.id, &id).await.unwrap().unwrap();
    assert!(e.enabled && e.disabled_reason.is_none());
    // A refused update: 400 with the reason and the values typed; nothing changed.
    let r = s
        .post(
            &detail,
            &[
                ("url", "ftp://example.com/h"),
                ("types", "deal.added"),
                ("enabled", "on"),
                ("was_enabled", "true"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let page = r.text().await.unwrap();
    assert!(page.contains("id=\"update-error\"") && page.contains("value=\"ftp://example.com/h\""));
    assert_eq!(app.store.webhook(&a.license.id, &id).await.unwrap().unwrap().url, url);

    // The delivery log: an attempt a sender recorded, with its time, event id, status, latency and error.
    let now = chrono::Utc::now().timestamp_millis();
    let event = "1795003200000-0";
    let delivery = NewWebhookDelivery {
        event_id: event.into(),
        event_type: "deal.added".into(),
        body: "{}".into(),
    };
    app.store
        .enqueue_webhook_deliveries(&a.license.id, &id, &[delivery], event)
        .await
        .unwrap();
    let claimed = app
        .store
        .claim_webhook_deliveries("test", now, now + 30_000, 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let outcome = WebhookAttemptOutcome {
        at: now,
        status: Some(503),
        latency_ms: 42,
        error: Some("HTTP 503".into()),
        delivered: false,
        next_attempt_at: Some(now + 60_000),
    };
    assert!(
        app.store
            .record_webhook_attempt(&a.license.id, claimed[0].id, &claimed[0].claim, &outcome)
            .await
            .unwrap()
    );
    let (_, page) = s.get(&detail).await;
    assert!(page.contains(&format!("data-event=\"{event}\"")), "{page}");
    for shown in [
        "<td>503</td>",
        "42 ms",
        "HTTP 503",
        "retrying",
        "1 pending, 0 delivered, 0 failed",
    ] {
        assert!(page.contains(shown), "{shown} in the log");
    }
    let (_, list) = s.get("/dashboard/webhooks").await;
    assert!(list.contains("data-failing="), "the failure streak is listed");

    // Another license's endpoint: not found on every page and form, and untouched.
    let b_url = "http://127.0.0.1:9/bravo";
    let (b_hook, _) = app.store.create_webhook(&b.license.id, b_url, &[], None).await.unwrap();
    let theirs = format!("/dashboard/webhooks/{}", b_hook.id);
    for path in [theirs.clone(), format!("{theirs}/delete")] {
        let (status, page) = s.get(&path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(!page.contains(b_url), "{path}");
    }
    let update = [
        ("url", url.as_str()),
        ("types", ""),
        ("enabled", "on"),
        ("was_enabled", "false"),
    ];
    for (path, fields) in [
        (theirs.clone(), &update[..]),
        (format!("{theirs}/test"), &[][..]),
        (format!("{theirs}/delete"), &[][..]),
    ] {
        let r = s.post(&path, fields).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
    }
    let (_, list) = s.get("/dashboard/webhooks").await;
    assert!(!list.contains(b_url) && !list.contains(&b_hook.id));
    assert_eq!(
        app.store.webhook(&b.license.id, &b_hook.id).await.unwrap(),
        Some(b_hook.clone()),
        "B's endpoint is unchanged"
    );
    assert_eq!(got.lock().unwrap().len(), 1, "no test delivery for B's endpoint");

    // Without the session's CSRF token nothing changes.
    let before = app.store.webhook(&a.license.id, &id).await.unwrap();
    for (path, fields) in [
        ("/dashboard/webhooks".to_owned(), vec![("url", url.as_str())]),
        (detail.clone(), vec![("url", url.as_str()), ("was_enabled", "true")]),
        (format!("{detail}/test"), vec![]),
        (format!("{detail}/delete"), vec![]),
    ] {
        let r = s.post_raw(&path, &fields, Some(&app.origin())).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path}");
        let mut all = fields.clone();
        all.push(("csrf", &s.csrf));
        let r = s.post_raw(&path, &all, Some("http://evil.example")).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path} from another origin");
    }
    assert_eq!(app.store.webhook(&a.license.id, &id).await.unwrap(), before);
    assert_eq!(app.store.list_webhooks(&a.license.id).await.unwrap().len(), 1);
    assert_eq!(got.lock().unwrap().len(), 1);

    // Deleted after the confirmation; then not found.
    let (_, confirm) = s.get(&format!("{detail}/delete")).await;
    assert!(confirm.contains("Delete the endpoint"));
    let r = s.post(&format!("{detail}/delete"), &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/dashboard/webhooks?done=deleted");
    assert!(app.store.list_webhooks(&a.license.id).await.unwrap().is_empty());
    let (_, list) = s.get("/dashboard/webhooks?done=deleted").await;
    assert!(list.contains("The endpoint was deleted"));
    assert_eq!(s.get(&detail).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        s.post(&format!("{detail}/delete"), &[]).await.status(),
        StatusCode::NOT_FOUND
    );
    assert!(app.store.webhook(&b.license.id, &b_hook.id).await.unwrap().is_some());

    // The secret never reached a log.
    assert!(!log_text().contains(&secret), "the signing secret was logged");
}

#[tokio::test]
async fn without_the_catalog_the_webhooks_page_says_where_to_manage_them() {
    let app = spawn_app(Options {
        insights: false,
        ..Options::default()
    })
    .await;
    let a = app.tenant("Alpha").await;
    let (hook, _) = app
        .store
        .create_webhook(&a.license.id, "http://127.0.0.1:9/h", &[], None)
        .await
        .unwrap();
    let s = app.sign_in(&a.master).await;
    let (status, page) = s.get("/dashboard/webhooks").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("id=\"webhooks-unavailable\""));
    assert_eq!(
        s.get(&format!("/dashboard/webhooks/{}", hook.id)).await.0,
        StatusCode::NOT_FOUND
    );
    let r = s.post("/dashboard/webhooks", &[("url", "http://127.0.0.1:9/x")]).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.store.list_webhooks(&a.license.id).await.unwrap().len(), 1);
}

// ----- assets, headers, logs -----

#[tokio::test]
async fn assets_are_embedded_and_pages_are_hardened() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let s = app.sign_in(&a.master).await;
    let (_, page) = s.get("/dashboard/terminals").await;
    for (name, content_type) in [("dashboard.css", "text/css"), ("dashboard.js", "text/javascript")] {
        let marker = format!("/dashboard/assets/{name}?v=");
        assert!(page.contains(&marker), "{name} linked");
        let r = app
            .http
            .get(app.url(&format!("/dashboard/assets/{name}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with(content_type));
        assert!(r.headers()["cache-control"].to_str().unwrap().contains("immutable"));
        assert!(!r.bytes().await.unwrap().is_empty());
    }
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "nothing from elsewhere"
    );
    let r = app
        .http
        .get(app.url("/dashboard/assets/other.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = app
        .http
        .get(app.url("/dashboard/terminals"))
        .header(COOKIE, format!("tt_dash={}", s.cookie))
        .send()
        .await
        .unwrap();
    let csp = r.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'")
            && csp.contains("frame-ancestors 'none'")
            && csp.contains("form-action 'self'")
    );
    assert_eq!(r.headers()["x-frame-options"], "DENY");
    // Unknown dashboard paths answer the dashboard's own 404 page; the gateway's routes are untouched.
    let (status, page) = s.get("/dashboard/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(page.contains("<h1>Not found</h1>"));
    let r = app.http.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_master_key_and_session_tokens_never_reach_a_log() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    // Failed and successful sign-ins, a few pages, a key created and revoked, sign-out.
    let (token, cookie) = app.sign_in_form().await;
    let _ = app
        .http
        .post(app.url("/dashboard/sign-in"))
        .header(COOKIE, format!("tt_dash_signin={cookie}"))
        .header(ORIGIN, app.origin())
        .form(&[("master_key", format!("{}x", a.master).as_str()), ("csrf", &token)])
        .send()
        .await
        .unwrap();
    let s = app.sign_in(&a.master).await;
    let r = s.post("/dashboard/api-keys", &[("label", "logged?")]).await;
    let secret = input_value(&r.text().await.unwrap(), "api-key");
    let _ = s.get(&format!("/dashboard/terminals/{}", a.terminal_id)).await;
    s.post("/dashboard/sign-out", &[]).await;
    let logs = log_text();
    assert!(
        logs.contains(&format!("license={}", a.license.id)),
        "the sink captures the dashboard's lines"
    );
    assert!(logs.contains("dashboard: signed in") && logs.contains("dashboard: sign-in refused"));
    for secret in [a.master.as_str(), &s.cookie, &s.csrf, &secret, "tt_lic_", "tt_dash_"] {
        assert!(!logs.contains(secret), "a secret reached the log: {secret}");
    }
}

#[tokio::test]
async fn sign_in_guessing_is_throttled_with_retry_after_and_the_right_key_works_after_the_block() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let attempt = |key: String| {
        let app = &app;
        async move {
            let (token, cookie) = app.sign_in_form().await;
            app.http
                .post(app.url("/dashboard/sign-in"))
                .header(COOKIE, format!("tt_dash_signin={cookie}"))
                .header(ORIGIN, app.origin())
                .form(&[("master_key", key.as_str()), ("csrf", token.as_str())])
                .send()
                .await
                .unwrap()
        }
    };
    // The default threshold: ten failures from one address are 401s…
    for i in 0..10 {
        let r = attempt(format!("tt_lic_guess-{i}")).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    // …then the address is refused, even with the right key, and told when to retry.
    let r = attempt(a.master.clone()).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=900).contains(&retry), "{retry}");
    assert!(!set_cookies(&r).contains_key("tt_dash"), "no session while blocked");
    let page = r.text().await.unwrap();
    assert!(page.contains("Too many failed sign-ins"));
    assert!(!page.contains(&a.master));
    // After the block the right key signs in (a refused attempt is not a failure).
    tokio::time::sleep(Duration::from_secs(retry) + Duration::from_millis(200)).await;
    let r = attempt(a.master.clone()).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(set_cookies(&r).contains_key("tt_dash"));
}

// ----- key scopes (issue 31) -----

impl TestApp {
    /// A gateway management route with the master key: its `data`.
    async fn manage(&self, master: &str, path: &str) -> Value {
        let r = self.http.get(self.url(path)).bearer_auth(master).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        r.json::<Value>().await.unwrap()["data"].clone()
    }

    /// The stored scope of an API key, read back through the gateway's route.
    async fn api_key_scope(&self, master: &str, key_id: &str) -> Value {
        let keys = self.manage(master, "/api/dashboard/api-keys").await;
        keys.as_array()
            .unwrap()
            .iter()
            .find(|k| k["id"] == key_id)
            .unwrap_or_else(|| panic!("{key_id} not listed"))["permissions"]
            .clone()
    }

    /// Exchanges an API key for a session token; its claims.
    async fn api_key_claims(&self, api_key: &str) -> Value {
        use base64::Engine;
        let r = self
            .http
            .post(self.url("/api/token/api-key"))
            .bearer_auth(api_key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let token = r.json::<Value>().await.unwrap()["token"].as_str().unwrap().to_owned();
        let payload = token.split('.').nth(1).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload)
                .unwrap(),
        )
        .unwrap()
    }

    /// A dry-run `place_order` as a credential with these claims would make
    /// it (the token's capabilities and scope), on `terminal_id`.
    async fn order_as(&self, claims: &Value, terminal_id: &str, symbol: &str) -> Result<Value, (String, String)> {
        let services = self.services.as_ref().expect("a catalog app");
        let caller = tradeterm_tools::Caller {
            license_id: claims["sub"].as_str().unwrap().to_owned(),
            credential: claims["cred_id"].as_str().unwrap().to_owned(),
            caps: serde_json::from_value(claims["caps"].clone()).unwrap(),
        };
        let mut call = tradeterm_tools::Invocation::new(
            "rest",
            caller,
            tradeterm_tools::TerminalChoice::Header(Some(terminal_id.to_owned())),
        );
        call.scope = serde_json::from_value::<Option<tradeterm_core::scope::KeyScope>>(claims["scope"].clone())
            .unwrap()
            .map(Arc::new);
        let tool = tradeterm_tools::find("place_order").unwrap();
        let input = json!({ "symbol": symbol, "order_type": "BUY", "volume": 0.05 });
        tradeterm_tools::invoke(services, tool, call, input)
            .await
            .map_err(|e| (e.code().to_owned(), e.to_string()))
    }
}

#[tokio::test]
async fn api_keys_are_created_with_a_scope_that_is_enforced_and_changed_or_lifted_in_place() {
    let app = spawn_app(Options {
        catalog: true,
        ..Options::default()
    })
    .await;
    let a = app.tenant("Alpha").await;
    let b = app.tenant("Bravo").await;
    let s = app.sign_in(&a.master).await;

    // The create form offers the scope's fields, the tier's capabilities ticked.
    let (_, page) = s.get("/dashboard/api-keys").await;
    for name in [
        "cap_read",
        "cap_analytics",
        "cap_trade",
        "cap_audit",
        "terminals",
        "symbols",
        "max_volume_per_order",
        "max_open_volume_per_symbol",
        "max_live_orders_per_day",
        "dry_run_only",
        "expires_at",
        "networks",
    ] {
        assert!(page.contains(&format!("name=\"{name}\"")), "{name}");
    }
    assert!(page.contains("name=\"cap_trade\" checked"));
    assert!(page.contains("everything the tier allows"), "the unscoped key's row");

    // Created with a scope: no trading, EUR* only, 0.1 lots.
    let r = s
        .post(
            "/dashboard/api-keys",
            &[
                ("label", "analyst"),
                ("caps_shown", "1"),
                ("cap_read", "on"),
                ("cap_analytics", "on"),
                ("symbols", "EUR*"),
                ("max_volume_per_order", "0.1"),
                ("terminals", &a.terminal_id),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let created = r.text().await.unwrap();
    let secret = input_value(&created, "api-key");
    assert!(created.contains("capabilities: read, analytics only"), "{created}");
    assert!(created.contains("symbols: EUR*"));
    let stored = app.store.list_api_keys(&a.license.id).await.unwrap();
    let key = stored.iter().find(|k| k.label == "analyst").unwrap();
    let expected = json!({
        "capabilities": ["read", "analytics"], "terminals": [a.terminal_id],
        "symbols": ["EUR*"], "max_volume_per_order": 0.1
    });
    assert_eq!(app.api_key_scope(&a.master, &key.id).await, expected);

    // The key works under it: its token carries no `trade`, and a GBPUSD
    // order is refused by the symbols rule.
    let claims = app.api_key_claims(&secret).await;
    assert_eq!(claims["caps"], json!(["read", "analytics"]));
    let (code, message) = app.order_as(&claims, &a.terminal_id, "GBPUSD").await.unwrap_err();
    assert_eq!(code, "FORBIDDEN", "{message}");
    assert!(message.contains("`symbols`"), "{message}");

    // The list shows it in words, with a link to change it; never the secret.
    let (_, list) = s.get("/dashboard/api-keys").await;
    assert!(list.contains("at most 0.1 lots per order"));
    assert!(list.contains(&format!("/dashboard/api-keys/{}/scope", key.id)));
    assert!(!list.contains(&secret));

    // The scope page is filled with the stored scope.
    let (status, scope_page) = s.get(&format!("/dashboard/api-keys/{}/scope", key.id)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(input_value(&scope_page, "scope-symbols"), "EUR*");
    assert_eq!(input_value(&scope_page, "scope-max-volume"), "0.1");
    assert!(!scope_page.contains("name=\"cap_trade\" checked"));

    // Changed in place: trading allowed, GBP* only. The same secret now trades GBP, not EUR.
    let path = format!("/dashboard/api-keys/{}/scope", key.id);
    let r = s
        .post(
            &path,
            &[
                ("caps_shown", "1"),
                ("cap_read", "on"),
                ("cap_analytics", "on"),
                ("cap_trade", "on"),
                ("symbols", "GBP*"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/dashboard/api-keys?done=scoped");
    assert_eq!(
        app.api_key_scope(&a.master, &key.id).await,
        json!({ "symbols": ["GBP*"] })
    );
    let claims = app.api_key_claims(&secret).await;
    assert_eq!(claims["caps"], json!(["read", "analytics", "trade"]));
    let (code, message) = app.order_as(&claims, &a.terminal_id, "EURUSD").await.unwrap_err();
    assert_eq!(code, "FORBIDDEN");
    assert!(message.contains("`symbols`"), "{message}");
    match app.order_as(&claims, &a.terminal_id, "GBPUSD").await {
        Ok(_) => {}
        Err((code, message)) => assert_ne!(code, "FORBIDDEN", "GBPUSD is in the scope now: {message}"),
    }

    // A bad change is refused with the field named, and changes nothing.
    let r = s
        .post(
            &path,
            &[("caps_shown", "1"), ("cap_read", "on"), ("networks", "10.0.0.0/33")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let refused = r.text().await.unwrap();
    assert!(
        refused.contains("Scope: `networks`: `10.0.0.0/33` is not an address or CIDR network"),
        "{refused}"
    );
    assert_eq!(
        input_value(&refused, "scope-networks"),
        "10.0.0.0/33",
        "the form keeps what was typed"
    );
    assert_eq!(
        app.api_key_scope(&a.master, &key.id).await,
        json!({ "symbols": ["GBP*"] })
    );
    // A bad scope at creation: the page says why and no key is stored.
    let before = app.store.list_api_keys(&a.license.id).await.unwrap().len();
    let r = s
        .post(
            "/dashboard/api-keys",
            &[("label", "bad"), ("max_volume_per_order", "0")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let refused = r.text().await.unwrap();
    assert!(
        refused.contains("Scope: `max_volume_per_order` must be above 0"),
        "{refused}"
    );
    let r = s
        .post(
            "/dashboard/api-keys",
            &[("label", "bad"), ("expires_at", "2020-01-01T00:00")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().await.unwrap().contains("`expires_at` is in the past"));
    assert_eq!(app.store.list_api_keys(&a.license.id).await.unwrap().len(), before);

    // Lifted: the key may do what the tier allows again.
    let r = s.post(&format!("{path}/clear"), &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.api_key_scope(&a.master, &key.id).await, Value::Null);
    let claims = app.api_key_claims(&secret).await;
    assert_eq!(claims["scope"], Value::Null);
    if let Err((code, message)) = app.order_as(&claims, &a.terminal_id, "EURUSD").await {
        assert_ne!(code, "FORBIDDEN", "{message}");
    }

    // Without the CSRF token nothing changes.
    let r = s.post_raw(&path, &[("symbols", "XAU*")], Some(&app.origin())).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.api_key_scope(&a.master, &key.id).await, Value::Null);

    // Another license's key is not found, read or changed.
    let other = format!("/dashboard/api-keys/{}/scope", b.api_key_id);
    assert_eq!(s.get(&other).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        s.post(&other, &[("symbols", "XAU*")]).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        s.post(&format!("{other}/clear"), &[]).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(app.api_key_scope(&b.master, &b.api_key_id).await, Value::Null);
    let _ = b.api_key;
}

#[tokio::test]
async fn terminals_are_created_with_a_key_scope_changed_in_place_and_kept_to_their_license() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let b = app.tenant("Bravo").await;
    let s = app.sign_in(&a.master).await;

    let (_, page) = s.get("/dashboard/terminals").await;
    assert!(page.contains("name=\"dry_run_only\""));
    assert!(
        !page.contains("name=\"terminals\""),
        "a terminal key is bound to its terminal"
    );

    let r = s
        .post(
            "/dashboard/terminals",
            &[("name", "EU box"), ("symbols", "EURUSD"), ("dry_run_only", "on")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let created = r.text().await.unwrap();
    assert!(created.contains("dry runs only (no live trading)"), "{created}");
    let terminals = app.store.list_terminals(&a.license.id).await.unwrap();
    let t = terminals.iter().find(|t| t.name == "EU box").unwrap();
    let key_path = format!("/api/dashboard/terminals/{}/key", t.id);
    assert_eq!(
        app.manage(&a.master, &key_path).await["permissions"],
        json!({ "symbols": ["EURUSD"], "dry_run_only": true })
    );

    // `terminals` does not apply to a terminal key: refused, nothing created.
    let count = terminals.len();
    let r = s
        .post(
            "/dashboard/terminals",
            &[("name", "Other"), ("terminals", &a.terminal_id)],
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("`terminals` does not apply to a terminal key")
    );
    assert_eq!(app.store.list_terminals(&a.license.id).await.unwrap().len(), count);

    // The terminal page shows the key's scope and changes it in place.
    let (_, tpage) = s.get(&format!("/dashboard/terminals/{}", t.id)).await;
    assert!(tpage.contains("symbols: EURUSD"));
    let path = format!("/dashboard/terminals/{}/scope", t.id);
    let (status, spage) = s.get(&path).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(input_value(&spage, "scope-symbols"), "EURUSD");
    let r = s.post(&path, &[("max_live_orders_per_day", "3")]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.manage(&a.master, &key_path).await["permissions"],
        json!({ "max_live_orders_per_day": 3 })
    );
    let (_, tpage) = s.get(&format!("/dashboard/terminals/{}", t.id)).await;
    assert!(tpage.contains("at most 3 live orders per UTC day"));
    let r = s.post(&path, &[("max_live_orders_per_day", "many")]).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("`max_live_orders_per_day` must be a whole number")
    );
    let r = s.post(&format!("{path}/clear"), &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.manage(&a.master, &key_path).await["permissions"], Value::Null);

    // Another license's terminal: not found, its key unchanged.
    let other = format!("/dashboard/terminals/{}/scope", b.terminal_id);
    assert_eq!(s.get(&other).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        s.post(&other, &[("symbols", "XAU*")]).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        s.post(&format!("{other}/clear"), &[]).await.status(),
        StatusCode::NOT_FOUND
    );
    let b_key = format!("/api/dashboard/terminals/{}/key", b.terminal_id);
    assert_eq!(app.manage(&b.master, &b_key).await["permissions"], Value::Null);
}

// ----- the audit log and the license's settings -----

/// An audit row of `license` as the tool invocation path appends it.
#[allow(clippy::too_many_arguments)]
fn audit_row(
    license: &str,
    at: i64,
    label: &str,
    surface: &str,
    tool: &str,
    terminal: &str,
    decision: &str,
    code: Option<&str>,
    answer: Option<Value>,
) -> tradeterm_store::NewAuditRecord {
    tradeterm_store::NewAuditRecord {
        license_id: license.to_owned(),
        at,
        credential_id: "key_test".into(),
        credential_label: Some(label.to_owned()),
        surface: surface.to_owned(),
        source: Some("127.0.0.1".into()),
        request_id: None,
        tool: tool.to_owned(),
        terminal_id: Some(terminal.to_owned()),
        request: json!({ "input": { "symbol": "EURUSD" }, "dry_run": decision == "dry_run" }).to_string(),
        decision: decision.to_owned(),
        code: code.map(str::to_owned),
        answer: answer.map(|v| v.to_string()),
        latency_us: 1200,
        handler_us: Some(900),
    }
}

/// The `data-audit` ids of a page, in page order.
fn audit_ids(page: &str) -> Vec<String> {
    page.split("data-audit=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_audit_page_shows_this_licenses_trade_calls_filtered_paged_and_exported() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let b = app.tenant("Bravo").await;
    let t0 = 1_795_003_200_000;
    let dry = app
        .store
        .append_audit(&audit_row(
            &a.license.id,
            t0,
            "alpha bot",
            "rest",
            "place_order",
            &a.terminal_id,
            "dry_run",
            None,
            Some(json!({ "dry_run": true })),
        ))
        .await
        .unwrap();
    let sent = app
        .store
        .append_audit(&audit_row(
            &a.license.id,
            t0 + 1000,
            "alpha terminal",
            "mcp",
            "place_order",
            &a.terminal_id,
            "sent",
            None,
            Some(
                json!({ "dry_run": false, "trade": { "retcode": "TRADE_RETCODE_DONE", "order": 777_001, "deal": 5 } }),
            ),
        ))
        .await
        .unwrap();
    let refused = app
        .store
        .append_audit(&audit_row(
            &a.license.id,
            t0 + 2000,
            "alpha bot",
            "rest",
            "close_position",
            "term_elsewhere",
            "refused",
            Some("FORBIDDEN"),
            Some(json!({ "code": "FORBIDDEN", "message": "refused by the key's scope" })),
        ))
        .await
        .unwrap();
    let bravo = app
        .store
        .append_audit(&audit_row(
            &b.license.id,
            t0 + 3000,
            "bravo secret label",
            "rest",
            "place_order",
            &b.terminal_id,
            "sent",
            None,
            Some(json!({ "trade": { "retcode": "TRADE_RETCODE_DONE", "order": 999_001 } })),
        ))
        .await
        .unwrap();

    // Signed out: to the sign-in page.
    let r = app.http.get(app.url("/dashboard/audit")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = app.http.get(app.url("/dashboard/audit.csv")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    // This license's rows, newest first, with label, surface, tool, decision, retcode and ticket.
    let s = app.sign_in(&a.master).await;
    let (status, page) = s.get("/dashboard/audit").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        audit_ids(&page),
        vec![refused.id.clone(), sent.id.clone(), dry.id.clone()]
    );
    for shown in [
        "alpha terminal",
        "alpha bot",
        "TRADE_RETCODE_DONE",
        "777001",
        "FORBIDDEN",
        "close_position",
        "2026-11-18 12:00:01 UTC",
        "href=\"/dashboard/audit.csv\"",
    ] {
        assert!(page.contains(shown), "{shown} not on the page");
    }
    assert!(
        page.contains("aria-current=\"page\">Audit log"),
        "the navigation marks the page"
    );
    // Another license's rows never.
    assert!(!page.contains(&bravo.id));
    assert!(!page.contains("bravo secret label"));
    assert!(!page.contains("999001"));
    assert!(!page.contains("id=\"older\""), "one page only");

    // Filters: surface, decision, tool, terminal.
    let (_, mcp) = s.get("/dashboard/audit?surface=mcp").await;
    assert_eq!(audit_ids(&mcp), vec![sent.id.clone()]);
    assert!(
        mcp.contains("<option value=\"mcp\" selected>"),
        "the filter stays selected"
    );
    assert!(
        mcp.contains("href=\"/dashboard/audit.csv?surface=mcp\""),
        "the export keeps the filters"
    );
    let (_, refusals) = s.get("/dashboard/audit?decision=refused").await;
    assert_eq!(audit_ids(&refusals), vec![refused.id.clone()]);
    let (_, closes) = s.get("/dashboard/audit?tool=close_position").await;
    assert_eq!(audit_ids(&closes), vec![refused.id.clone()]);
    let (_, on_terminal) = s.get(&format!("/dashboard/audit?terminal={}", a.terminal_id)).await;
    assert_eq!(audit_ids(&on_terminal), vec![sent.id.clone(), dry.id.clone()]);
    let (_, both) = s
        .get(&format!(
            "/dashboard/audit?terminal={}&surface=rest&decision=dry_run",
            a.terminal_id
        ))
        .await;
    assert_eq!(audit_ids(&both), vec![dry.id.clone()]);
    // Filtering by the other license's terminal shows nothing of it.
    let (_, theirs) = s.get(&format!("/dashboard/audit?terminal={}", b.terminal_id)).await;
    assert!(audit_ids(&theirs).is_empty());
    assert!(theirs.contains("No rows match."));
    for bad in ["surface=fax", "decision=maybe", "cursor=-1", "cursor=x"] {
        let (status, _) = s.get(&format!("/dashboard/audit?{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    }

    // The CSV export: the store's writer, this license's rows only.
    let r = app
        .http
        .get(app.url("/dashboard/audit.csv?surface=mcp"))
        .header(COOKIE, format!("tt_dash={}", s.cookie))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/csv"));
    assert!(
        r.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("audit.csv")
    );
    let csv = r.text().await.unwrap();
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[0].starts_with("seq,id,at,credential_id,credential_label,surface"),
        "{csv}"
    );
    assert!(lines[1].starts_with(&format!("2,{},", sent.id)), "{csv}");
    assert!(lines[1].ends_with(&sent.hash), "{csv}");
    let r = app
        .http
        .get(app.url("/dashboard/audit.csv"))
        .header(COOKIE, format!("tt_dash={}", s.cookie))
        .send()
        .await
        .unwrap();
    let all = r.text().await.unwrap();
    assert_eq!(all.split("\r\n").filter(|l| !l.is_empty()).count(), 4, "{all}");
    assert!(!all.contains(&bravo.id) && !all.contains("bravo secret label"));

    // Pages of 50 by the cursor: 52 more rows, then the older page has the rest.
    for i in 0..52 {
        app.store
            .append_audit(&audit_row(
                &a.license.id,
                t0 + 10_000 + i,
                "alpha bot",
                "rest",
                "modify_order",
                &a.terminal_id,
                "dry_run",
                None,
                None,
            ))
            .await
            .unwrap();
    }
    let (_, first) = s.get("/dashboard/audit").await;
    let first_ids = audit_ids(&first);
    assert_eq!(first_ids.len(), 50);
    let older = attribute_after(&first, "id=\"older\" href=\"").replace("&amp;", "&");
    assert_eq!(older, "/dashboard/audit?cursor=6");
    let (_, second) = s.get(&older).await;
    let second_ids = audit_ids(&second);
    assert_eq!(second_ids[2..], [refused.id.clone(), sent.id.clone(), dry.id.clone()]);
    assert_eq!(second_ids.len(), 5);
    assert!(!second.contains("id=\"older\""));
    assert!(second.contains(">Newest<"));
    // The cursor keeps the filters.
    let (_, filtered) = s.get("/dashboard/audit?tool=modify_order").await;
    assert_eq!(audit_ids(&filtered).len(), 50);
    let older = attribute_after(&filtered, "id=\"older\" href=\"").replace("&amp;", "&");
    assert!(
        older.starts_with("/dashboard/audit?tool=modify_order&cursor="),
        "{older}"
    );
    let (_, rest) = s.get(&older).await;
    assert_eq!(audit_ids(&rest).len(), 2);

    // A key for an auditor, made on the API keys page: `audit` on top of `read`.
    let r = s
        .post(
            "/dashboard/api-keys",
            &[
                ("label", "auditor"),
                ("caps_shown", "1"),
                ("cap_read", "on"),
                ("cap_audit", "on"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.unwrap().contains("capabilities: read, audit only"));
    let keys = app.store.list_api_keys(&a.license.id).await.unwrap();
    let auditor = keys.iter().find(|k| k.label == "auditor").unwrap();
    assert_eq!(auditor.permissions, Some(json!({ "capabilities": ["read", "audit"] })));
    let (_, scope_page) = s.get(&format!("/dashboard/api-keys/{}/scope", auditor.id)).await;
    assert!(
        scope_page.contains("name=\"cap_audit\" checked"),
        "read back into the form"
    );

    // The other license's session sees its own row only.
    let sb = app.sign_in(&b.master).await;
    let (_, page) = sb.get("/dashboard/audit").await;
    assert_eq!(audit_ids(&page), vec![bravo.id.clone()]);
    assert!(!page.contains("alpha bot"));
}

#[tokio::test]
async fn the_settings_page_turns_trade_confirmation_off_and_on_with_its_csrf_token() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    let b = app.tenant("Bravo").await;
    let settings_of = |master: String| {
        let http = app.http.clone();
        let url = app.url("/api/dashboard/license-settings");
        async move {
            let r = http.get(url).bearer_auth(master).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            r.json::<Value>().await.unwrap()["data"].clone()
        }
    };
    assert_eq!(
        settings_of(a.master.clone()).await,
        json!({ "mcp_trade_confirmation": true })
    );

    let s = app.sign_in(&a.master).await;
    let (status, page) = s.get("/dashboard/settings").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("name=\"mcp_trade_confirmation\" checked"),
        "on by default"
    );
    assert!(page.contains(&format!("name=\"csrf\" value=\"{}\"", s.csrf)));

    // Without the session's token, or from another origin: nothing changes.
    let r = s
        .post_raw("/dashboard/settings", &[("csrf", "forged")], Some(&app.origin()))
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = s
        .post_raw("/dashboard/settings", &[("csrf", &s.csrf)], Some("http://evil.example"))
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        settings_of(a.master.clone()).await,
        json!({ "mcp_trade_confirmation": true })
    );

    // Off (the checkbox unticked): GET /api/dashboard/license-settings says so.
    let r = s.post("/dashboard/settings", &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/dashboard/settings?done=saved");
    assert_eq!(
        settings_of(a.master.clone()).await,
        json!({ "mcp_trade_confirmation": false })
    );
    let (_, page) = s.get("/dashboard/settings?done=saved").await;
    assert!(page.contains("id=\"notice\""));
    assert!(!page.contains("name=\"mcp_trade_confirmation\" checked"));
    assert!(page.contains("id=\"confirmation-off\""));
    // Another license is untouched.
    assert_eq!(
        settings_of(b.master.clone()).await,
        json!({ "mcp_trade_confirmation": true })
    );

    // On again.
    let r = s.post("/dashboard/settings", &[("mcp_trade_confirmation", "on")]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        settings_of(a.master.clone()).await,
        json!({ "mcp_trade_confirmation": true })
    );
    let (_, page) = s.get("/dashboard/settings").await;
    assert!(page.contains("name=\"mcp_trade_confirmation\" checked"));
}

#[tokio::test]
async fn the_audit_page_filters_by_time_range_and_credential() {
    let app = spawn_app(Options::default()).await;
    let a = app.tenant("Alpha").await;
    // 2026-11-18T12:00:00Z, then one row a minute, from three credentials.
    let t0 = 1_795_003_200_000;
    let master = format!("master:{}", a.license.id);
    let terminal_key = app
        .store
        .terminal_key_record(&a.license.id, &a.terminal_id)
        .await
        .unwrap()
        .unwrap()
        .id;
    let mut ids = Vec::new();
    for (i, credential) in [&a.api_key_id, &terminal_key, &master, &a.api_key_id]
        .into_iter()
        .enumerate()
    {
        let mut row = audit_row(
            &a.license.id,
            t0 + i as i64 * 60_000,
            "alpha",
            "rest",
            "place_order",
            &a.terminal_id,
            "dry_run",
            None,
            None,
        );
        row.credential_id = credential.clone();
        ids.push(app.store.append_audit(&row).await.unwrap().id);
    }
    let s = app.sign_in(&a.master).await;
    let (status, all) = s.get("/dashboard/audit").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(audit_ids(&all).len(), 4);
    // The filter offers the license's credentials by name.
    for shown in [
        format!("<option value=\"{master}\">Master key</option>"),
        format!("<option value=\"{}\">API key Alpha key (", a.api_key_id),
        format!("<option value=\"{terminal_key}\">Terminal key of Alpha terminal</option>"),
        "type=\"datetime-local\" name=\"from\"".to_owned(),
        "From (UTC)".to_owned(),
    ] {
        assert!(all.contains(&shown), "{shown} not on the page");
    }
    // A row's credential links to its rows.
    assert!(
        all.contains(&format!("href=\"/dashboard/audit?credential={}\"", terminal_key)),
        "no link to the terminal key's rows"
    );

    // From inclusive, to exclusive, read as UTC: the rows of 12:01 and 12:02.
    let (_, range) = s
        .get("/dashboard/audit?from=2026-11-18T12:01&to=2026-11-18T12:03")
        .await;
    assert_eq!(audit_ids(&range), vec![ids[2].clone(), ids[1].clone()]);
    assert!(
        range.contains("name=\"from\" step=\"1\" value=\"2026-11-18T12:01:00\""),
        "the range stays in the form"
    );
    // Open-ended, and an RFC 3339 time with an offset (12:02 UTC).
    let (_, since) = s.get("/dashboard/audit?from=2026-11-18T14:02:00%2B02:00").await;
    assert_eq!(audit_ids(&since), vec![ids[3].clone(), ids[2].clone()]);
    let (_, until) = s.get("/dashboard/audit?to=2026-11-18T12:01").await;
    assert_eq!(audit_ids(&until), vec![ids[0].clone()]);

    // One credential, alone or with the range.
    let (_, by_key) = s.get(&format!("/dashboard/audit?credential={}", a.api_key_id)).await;
    assert_eq!(audit_ids(&by_key), vec![ids[3].clone(), ids[0].clone()]);
    assert!(
        by_key.contains(&format!("<option value=\"{}\" selected>", a.api_key_id)),
        "the credential stays selected"
    );
    let (_, by_master) = s.get(&format!("/dashboard/audit?credential={master}")).await;
    assert_eq!(audit_ids(&by_master), vec![ids[2].clone()]);
    let (_, key_in_range) = s
        .get(&format!(
            "/dashboard/audit?credential={}&from=2026-11-18T12:01",
            a.api_key_id
        ))
        .await;
    assert_eq!(audit_ids(&key_in_range), vec![ids[3].clone()]);
    // An id the filter does not list (a rotated key) still filters, and stays shown.
    let (_, gone) = s.get("/dashboard/audit?credential=tkey_rotated").await;
    assert!(audit_ids(&gone).is_empty());
    assert!(gone.contains("<option value=\"tkey_rotated\" selected>"));

    // The export keeps the range and the credential.
    let (_, filtered) = s
        .get(&format!("/dashboard/audit?credential={terminal_key}&from=2026-11-18"))
        .await;
    let export = format!("href=\"/dashboard/audit.csv?from=2026-11-18&amp;credential={terminal_key}\"");
    assert!(filtered.contains(&export), "{export} not on the page");
    let r = app
        .http
        .get(app.url(&format!(
            "/dashboard/audit.csv?from=2026-11-18&credential={terminal_key}"
        )))
        .header(COOKIE, format!("tt_dash={}", s.cookie))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let csv = r.text().await.unwrap();
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[1].starts_with(&format!("2,{},", ids[1])), "{csv}");

    // A time that is none, or an empty range: 400 with the reason.
    for bad in [
        "from=yesterday",
        "to=2026-13-01T00:00",
        "from=2026-11-18T12:00&to=2026-11-18T11:00",
    ] {
        let (status, page) = s.get(&format!("/dashboard/audit?{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(page.contains("time"), "{bad}: {page}");
    }
}
