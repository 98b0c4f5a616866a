//! A typed client of the stack's HTTP routes.
//!
//! [`Api`] holds a base URL (the REST server or the gateway), a credential,
//! and optionally a target terminal and an idempotency key. Each route the
//! tests use is one method; it answers [`ApiResult`]: the success
//! envelope's `data`, or an [`ApiFailure`] with the status and the error
//! envelope's code and message. Answers are checked against the spec's
//! envelopes (`docs/rest-api.md`): a success is `{ "data": … }` and nothing
//! else, an error `{ "error": { "code", "message", … } }` and nothing else;
//! anything different, and any body that is not JSON, fails the test with
//! the body shown.
//!
//! [`Api::send`] is the low-level call for what a test must see as is
//! (headers, a status, a raw path).

use std::fmt;

use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// An answer other than success: the status and the error envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiFailure {
    /// The request, `METHOD path`.
    pub request: String,
    /// HTTP status.
    pub status: u16,
    /// `error.code`.
    pub code: String,
    /// `error.message`.
    pub message: String,
    /// The whole `error` object (`retcode`, `detail`, …) but its `request_id`.
    pub error: Value,
}

impl ApiFailure {
    /// Asserts the message contains `needle`; returns the failure for more checks.
    #[track_caller]
    pub fn mentions(&self, needle: &str) -> &Self {
        assert!(
            self.message.contains(needle),
            "message `{}` should mention `{needle}` ({}: {} {})",
            self.message,
            self.request,
            self.status,
            self.code
        );
        self
    }

    /// `error.retcode` (order rejections).
    pub fn retcode(&self) -> Option<&str> {
        self.error["retcode"].as_str()
    }
}

impl fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} {}: {} ({})",
            self.request, self.status, self.code, self.message, self.error
        )
    }
}

/// The answer of an enveloped route: `data`, or the failure.
pub type ApiResult = Result<Value, ApiFailure>;

/// Assertions on an [`ApiResult`].
pub trait Expect: Sized {
    /// The data of a success; fails the test with the failure otherwise.
    #[track_caller]
    fn data(self) -> Value {
        self.data_for("")
    }

    /// The failure, asserted to have this status and code; fails the test
    /// with the data on a success.
    #[track_caller]
    fn failure(self, status: u16, code: &str) -> ApiFailure {
        self.failure_for(status, code, "")
    }

    /// As [`Expect::data`], naming `context` (the input, the case) in a failure.
    fn data_for(self, context: impl fmt::Display) -> Value;

    /// As [`Expect::failure`], naming `context` (the input, the case) in a failure.
    fn failure_for(self, status: u16, code: &str, context: impl fmt::Display) -> ApiFailure;
}

impl Expect for ApiResult {
    #[track_caller]
    fn data_for(self, context: impl fmt::Display) -> Value {
        self.unwrap_or_else(|f| panic!("{context}: expected a success, got {f}"))
    }

    #[track_caller]
    fn failure_for(self, status: u16, code: &str, context: impl fmt::Display) -> ApiFailure {
        match self {
            Ok(data) => panic!("{context}: expected {status} {code}, got a success: {data}"),
            Err(f) => {
                assert_eq!((f.status, f.code.as_str()), (status, code), "{context}: {f}");
                f
            }
        }
    }
}

/// A raw answer: status, headers and the JSON body.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: HeaderMap,
    /// The body (always JSON: anything else failed the test).
    pub body: Value,
    /// `METHOD path`, for failure messages.
    what: String,
}

impl Reply {
    /// The body read as the spec's envelope.
    #[track_caller]
    pub fn envelope(self) -> ApiResult {
        let what = &self.what;
        let status = self.status;
        let body = &self.body;
        let only = |key: &str| body.as_object().is_some_and(|o| o.len() == 1 && o.contains_key(key));
        // A success may carry a base64 PNG `chart` next to `data` (a
        // chartable tool asked for `"chart": true`, docs/rest-api.md).
        let success = body.as_object().is_some_and(|o| {
            o.contains_key("data")
                && o.keys().all(|k| k == "data" || k == "chart")
                && o.get("chart")
                    .is_none_or(|c| c["data"].is_string() && c["mime_type"] == "image/png")
        });
        if (200..300).contains(&status) {
            assert!(success, "{what}: {status} is not a success envelope: {body}");
            return Ok(self.body["data"].clone());
        }
        assert!(only("error"), "{what}: {status} is not an error envelope: {body}");
        Err(failure_of(what, status, &self.body))
    }
}

#[track_caller]
fn failure_of(what: &str, status: u16, body: &Value) -> ApiFailure {
    let error = &body["error"];
    let (Some(code), Some(message)) = (error["code"].as_str(), error["message"].as_str()) else {
        panic!("{what}: {status}: the error has no code and message: {body}")
    };
    // The request id (`error.request_id`) differs from request to request:
    // kept out, so that two failures compare equal when they say the same
    // (tests/e2e/observability.rs checks it on the raw body).
    let mut error = error.clone();
    if let Some(fields) = error.as_object_mut() {
        fields.remove("request_id");
    }
    ApiFailure {
        request: what.to_owned(),
        status,
        code: code.to_owned(),
        message: message.to_owned(),
        error,
    }
}

/// Status and JSON body of a response; a body that is not JSON fails the
/// test, showing it.
pub async fn json_body(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let url = resp.url().clone();
    let text = resp.text().await.unwrap();
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{url}: status {status}, the body is not JSON ({e}): {text:?}"));
    (status, body)
}

/// A client of one server (REST or gateway) with one credential.
#[derive(Debug, Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    key: Option<String>,
    terminal: Option<String>,
    idempotency_key: Option<String>,
}

impl Api {
    /// A client of `base` (`http://127.0.0.1:port`) without a credential.
    pub fn new(http: &reqwest::Client, base: &str) -> Self {
        Self {
            http: http.clone(),
            base: base.to_owned(),
            key: None,
            terminal: None,
            idempotency_key: None,
        }
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The same client with `key` as the bearer credential.
    pub fn key(mut self, key: &str) -> Self {
        self.key = Some(key.to_owned());
        self
    }

    /// The same client targeting `terminal` (`X-Terminal-Id`).
    pub fn on(mut self, terminal: &str) -> Self {
        self.terminal = Some(terminal.to_owned());
        self
    }

    /// The same client sending `Idempotency-Key: key`.
    pub fn idempotency_key(mut self, key: &str) -> Self {
        self.idempotency_key = Some(key.to_owned());
        self
    }

    /// The same client, against another server (a second instance).
    pub fn at(mut self, base: &str) -> Self {
        self.base = base.to_owned();
        self
    }

    /// The request as built for `method path`, with the client's headers.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        if let Some(t) = &self.terminal {
            req = req.header("X-Terminal-Id", t);
        }
        if let Some(k) = &self.idempotency_key {
            req = req.header("Idempotency-Key", k);
        }
        req
    }

    /// `method path` with an optional JSON body: the raw answer.
    pub async fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Reply {
        let what = format!("{method} {path}");
        let mut req = self.request(method, path);
        if let Some(b) = body {
            req = req.json(b);
        }
        Self::send_request(&what, req).await
    }

    /// Sends a request built with [`Api::request`] (a raw body, other
    /// headers): the raw answer, `what` naming it in failures.
    pub async fn send_request(what: &str, req: reqwest::RequestBuilder) -> Reply {
        let resp = req.send().await.unwrap_or_else(|e| panic!("{what}: {e}"));
        let headers = resp.headers().clone();
        let (status, body) = json_body(resp).await;
        Reply {
            status,
            headers,
            body,
            what: what.to_owned(),
        }
    }

    /// `GET path` read as an envelope.
    pub async fn get(&self, path: &str) -> ApiResult {
        self.send(Method::GET, path, None).await.envelope()
    }

    /// `POST path` with a JSON body, read as an envelope.
    pub async fn post(&self, path: &str, body: &Value) -> ApiResult {
        self.send(Method::POST, path, Some(body)).await.envelope()
    }

    /// `PUT path` with a JSON body, read as an envelope.
    pub async fn put(&self, path: &str, body: &Value) -> ApiResult {
        self.send(Method::PUT, path, Some(body)).await.envelope()
    }

    /// `DELETE path`, read as an envelope.
    pub async fn delete(&self, path: &str) -> ApiResult {
        self.send(Method::DELETE, path, None).await.envelope()
    }

    // ----- public routes

    /// `GET /healthz`: the status and body.
    pub async fn healthz(&self) -> (u16, Value) {
        let r = self.send(Method::GET, "/healthz", None).await;
        (r.status, r.body)
    }

    /// `POST /api/token` for a terminal key: the gateway's token answer as is
    /// (`{ "token", "expires_in" }`, not enveloped), or the error envelope.
    pub async fn token(&self, license_key: &str) -> ApiResult {
        let r = self
            .send(Method::POST, "/api/token", Some(&json!({ "license_key": license_key })))
            .await;
        if r.status == 200 {
            assert!(r.body["token"].is_string(), "POST /api/token: {}", r.body);
            return Ok(r.body);
        }
        r.envelope()
    }

    // ----- terminals, market, account

    /// `GET /api/v1/terminals`.
    pub async fn terminals(&self) -> ApiResult {
        self.get("/api/v1/terminals").await
    }

    /// `GET /api/v1/account/info`.
    pub async fn account(&self) -> ApiResult {
        self.get("/api/v1/account/info").await
    }

    /// `GET /api/v1/market/tick/{symbol}`.
    pub async fn tick(&self, symbol: &str) -> ApiResult {
        self.get(&format!("/api/v1/market/tick/{symbol}")).await
    }

    // ----- orders and positions

    /// `POST /api/v1/orders` (a dry run unless the order says `"dry_run": false`).
    pub async fn place_order(&self, order: &Value) -> ApiResult {
        self.post("/api/v1/orders", order).await
    }

    /// `GET /api/v1/positions/{ticket}`.
    pub async fn position(&self, ticket: u64) -> ApiResult {
        self.get(&format!("/api/v1/positions/{ticket}")).await
    }

    /// `POST /api/v1/positions/{ticket}/close`.
    pub async fn close_position(&self, ticket: u64, body: &Value) -> ApiResult {
        self.post(&format!("/api/v1/positions/{ticket}/close"), body).await
    }

    /// `POST /api/v1/positions/{ticket}/modify`.
    pub async fn modify_position(&self, ticket: u64, body: &Value) -> ApiResult {
        self.post(&format!("/api/v1/positions/{ticket}/modify"), body).await
    }

    /// `POST /api/v1/positions/{ticket}/reverse`.
    pub async fn reverse_position(&self, ticket: u64, body: &Value) -> ApiResult {
        self.post(&format!("/api/v1/positions/{ticket}/reverse"), body).await
    }

    // ----- journal

    /// `POST /api/v1/journal`.
    pub async fn create_journal_entry(&self, body: &Value) -> ApiResult {
        self.post("/api/v1/journal", body).await
    }

    /// `GET /api/v1/journal?{query}` (`query` may be empty).
    pub async fn journal(&self, query: &str) -> ApiResult {
        match query {
            "" => self.get("/api/v1/journal").await,
            q => self.get(&format!("/api/v1/journal?{q}")).await,
        }
    }

    /// `GET /api/v1/journal/{id}`.
    pub async fn journal_entry(&self, id: &str) -> ApiResult {
        self.get(&format!("/api/v1/journal/{id}")).await
    }

    /// `PUT /api/v1/journal/{id}`.
    pub async fn update_journal_entry(&self, id: &str, body: &Value) -> ApiResult {
        self.put(&format!("/api/v1/journal/{id}"), body).await
    }

    /// `DELETE /api/v1/journal/{id}`.
    pub async fn delete_journal_entry(&self, id: &str) -> ApiResult {
        self.delete(&format!("/api/v1/journal/{id}")).await
    }

    // ----- tools

    /// `POST /api/v1/tools/{name}` with `input`.
    pub async fn tool(&self, name: &str, input: &Value) -> ApiResult {
        self.post(&format!("/api/v1/tools/{name}"), input).await
    }

    // ----- management routes (master key; spec §4)

    /// `GET /api/news-guard`.
    pub async fn news_guard(&self) -> ApiResult {
        self.get("/api/news-guard").await
    }

    /// `PUT /api/news-guard`.
    pub async fn set_news_guard(&self, body: &Value) -> ApiResult {
        self.put("/api/news-guard", body).await
    }

    /// `DELETE /api/news-guard`.
    pub async fn remove_news_guard(&self) -> ApiResult {
        self.delete("/api/news-guard").await
    }

    /// `GET /api/prop-firm-rules`.
    pub async fn prop_firm_rules(&self) -> ApiResult {
        self.get("/api/prop-firm-rules").await
    }

    /// `PUT /api/prop-firm-rules`.
    pub async fn set_prop_firm_rules(&self, body: &Value) -> ApiResult {
        self.put("/api/prop-firm-rules", body).await
    }

    /// `DELETE /api/prop-firm-rules`.
    pub async fn remove_prop_firm_rules(&self) -> ApiResult {
        self.delete("/api/prop-firm-rules").await
    }

    /// `GET /api/cb-stance?{query}`.
    pub async fn cb_stance(&self, query: &str) -> ApiResult {
        self.get(&format!("/api/cb-stance?{query}")).await
    }

    // ----- the gateway's dashboard (master key)

    /// `GET /api/dashboard/support/identity`.
    pub async fn support_identity(&self) -> ApiResult {
        self.get("/api/dashboard/support/identity").await
    }

    /// `POST /api/dashboard/terminals/{id}/rotate-key`.
    pub async fn rotate_terminal_key(&self, terminal_id: &str) -> ApiResult {
        self.send(
            Method::POST,
            &format!("/api/dashboard/terminals/{terminal_id}/rotate-key"),
            None,
        )
        .await
        .envelope()
    }

    /// `DELETE /api/dashboard/api-keys?id={key_id}`.
    pub async fn revoke_api_key(&self, key_id: &str) -> ApiResult {
        self.delete(&format!("/api/dashboard/api-keys?id={key_id}")).await
    }

    /// `POST /api/dashboard/terminals/{id}/command`: the agent's answer as is
    /// (`{ "result", "elapsed_ms" }`, not enveloped), or the error envelope.
    pub async fn terminal_command(&self, terminal_id: &str, body: &Value) -> ApiResult {
        let r = self
            .send(
                Method::POST,
                &format!("/api/dashboard/terminals/{terminal_id}/command"),
                Some(body),
            )
            .await;
        if r.status == 200 {
            assert!(r.body.get("result").is_some(), "the command route: {}", r.body);
            return Ok(r.body);
        }
        r.envelope()
    }
}
