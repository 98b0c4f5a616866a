//! HTTP routes of the gateway.

use std::time::Duration;
use tradeterm_core::scope::KeyScope;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::json;
use subtle::ConstantTimeEq;
use tradeterm_protocol::Dispatch;
use tradeterm_protocol::dispatch::INTERNAL_TOKEN_HEADER;
use tradeterm_protocol::dispatch::{DispatchReply, DispatchRequest};
use tradeterm_protocol::token::{Claims, CredentialKind};
use tradeterm_store::License;

use crate::{ApiError, Gateway};

/// Largest JSON body accepted by the management routes.
const JSON_LIMIT: usize = 64 * 1024;

pub fn configure(cfg: &mut web::ServiceConfig, gateway: Gateway) {
    let json_cfg = web::JsonConfig::default()
        .limit(JSON_LIMIT)
        .error_handler(|err, _req| ApiError::bad_request(format!("invalid JSON body: {err}")).into());
    let internal_json = web::JsonConfig::default()
        .limit(1024 * 1024)
        .error_handler(|err, _req| ApiError::bad_request(format!("invalid JSON body: {err}")).into());
    cfg.app_data(web::Data::new(gateway))
        .app_data(json_cfg)
        .route("/healthz", web::get().to(healthz))
        .route("/agent/v1", web::get().to(crate::agent::agent_ws))
        .route("/api/token", web::post().to(token_for_terminal_key))
        .route("/api/token/api-key", web::post().to(token_for_api_key))
        .service(
            web::resource("/api/dashboard/api-keys")
                .route(web::get().to(list_api_keys))
                .route(web::post().to(create_api_key))
                .route(web::delete().to(revoke_api_key)),
        )
        .route("/api/dashboard/api-keys/{id}", web::patch().to(change_api_key_scope))
        .service(
            web::resource("/api/dashboard/terminals")
                .route(web::get().to(list_terminals))
                .route(web::post().to(create_terminal)),
        )
        .route(
            "/api/dashboard/terminals/{id}/rotate-key",
            web::post().to(rotate_terminal_key),
        )
        .service(
            web::resource("/api/dashboard/terminals/{id}/key")
                .route(web::get().to(terminal_key_record))
                .route(web::patch().to(change_terminal_key_scope)),
        )
        .configure(crate::manage::configure)
        .configure(crate::command::configure)
        .configure(crate::poll::configure)
        .service(
            web::scope("/internal/v1")
                .app_data(internal_json)
                .route("/dispatch", web::post().to(internal_dispatch))
                .route("/channel", web::get().to(crate::channel::internal_channel))
                .route("/terminals", web::get().to(internal_terminals))
                .route("/revoked", web::post().to(internal_revoked)),
        )
        .default_service(web::to(|| async {
            Err::<HttpResponse, _>(ApiError::not_found("no such route"))
        }));
}

async fn healthz(gateway: web::Data<Gateway>) -> HttpResponse {
    let _ = &gateway;
    HttpResponse::Ok().json(json!({ "status": "ok", "service": "tradeterm-gateway" }))
}

/// The bearer credential of a request, if any.
fn bearer(req: &HttpRequest) -> Option<String> {
    let value = req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    tradeterm_protocol::auth::parse_bearer(value).map(str::to_owned)
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The key a session token is issued for.
struct Issued<'a> {
    kind: CredentialKind,
    id: &'a str,
    /// Its scope, as stored.
    scope: Option<KeyScope>,
    /// Its scope's generation (`Claims::cred_gen`).
    generation: u32,
}

fn issue(
    gateway: &Gateway,
    license: &License,
    key: Issued<'_>,
    terminal: Option<String>,
    lifetime: Duration,
) -> Result<HttpResponse, ApiError> {
    let Issued {
        kind: cred,
        id: cred_id,
        scope,
        generation: cred_gen,
    } = key;
    let now = now_secs();
    // A scoped key's token ends no later than the key.
    let exp = (now + lifetime.as_secs() as i64).min(
        scope
            .as_ref()
            .and_then(|s| s.expires_at)
            .map_or(i64::MAX, |ms| ms.div_euclid(1000)),
    );
    let caps = match &scope {
        Some(s) => s.narrow(license.tier.capabilities()),
        None => license.tier.capabilities().to_vec(),
    };
    let claims = Claims {
        iss: String::new(),
        aud: String::new(),
        sub: license.id.clone(),
        iat: now,
        nbf: now,
        exp,
        jti: uuid::Uuid::new_v4().simple().to_string(),
        tier: license.tier,
        caps,
        cred,
        cred_id: cred_id.to_owned(),
        terminal: terminal.clone(),
        scope,
        cred_gen,
    };
    let token = gateway.inner.signer.sign(claims).map_err(ApiError::internal)?;
    let expires_at =
        chrono::DateTime::from_timestamp(exp, 0).map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    Ok(HttpResponse::Ok().json(json!({
        "token": token,
        "token_type": "Bearer",
        "expires_in": lifetime.as_secs(),
        "expires_at": expires_at,
        "license_id": license.id,
        "tier": license.tier,
        "terminal_id": terminal,
    })))
}

#[derive(Debug, Deserialize)]
struct TokenBody {
    license_key: Option<String>,
}

/// `POST /api/token`: a terminal key (Bearer header, or `{ "license_key" }` body) → session token.
async fn token_for_terminal_key(
    req: HttpRequest,
    body: web::Bytes,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let from_body = if body.is_empty() {
        None
    } else {
        serde_json::from_slice::<TokenBody>(&body)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?
            .license_key
    };
    let Some(key) = bearer(&req).or(from_body) else {
        return Err(ApiError::unauthorized(
            "missing terminal key: send `Authorization: Bearer <TERMINAL_KEY>`",
        ));
    };
    let throttled = !crate::guess::from_adapter(&gateway, &req);
    if throttled {
        gateway.guess_check("token", &req, Some(&key)).await?;
    }
    let store = gateway.store();
    match store.terminal_key(&key).await? {
        Some(auth) if !auth.license.disabled => {
            let scope = stored_scope(auth.permissions.as_ref(), &auth.key_id, "terminal key")?;
            issue(
                &gateway,
                &auth.license,
                Issued {
                    kind: CredentialKind::TerminalKey,
                    id: &auth.key_id,
                    scope,
                    generation: auth.scope_generation,
                },
                Some(auth.terminal.id.clone()),
                gateway.settings().token_lifetime,
            )
        }
        _ => {
            let master = store.license_by_master_key(&key).await?.is_some();
            if throttled && !master {
                gateway.guess_failed("token", &req, Some(&key)).await;
            }
            if master {
                Err(ApiError::unauthorized(
                    "master license keys are not accepted for token exchange; use a terminal key",
                ))
            } else {
                Err(ApiError::unauthorized("invalid or revoked terminal key"))
            }
        }
    }
}

/// `POST /api/token/api-key`: a REST API key (Bearer) → short-lived, license-scoped session token.
async fn token_for_api_key(req: HttpRequest, gateway: web::Data<Gateway>) -> Result<HttpResponse, ApiError> {
    let Some(key) = bearer(&req) else {
        return Err(ApiError::unauthorized(
            "missing API key: send `Authorization: Bearer svc_api_…`",
        ));
    };
    let throttled = !crate::guess::from_adapter(&gateway, &req);
    if throttled {
        gateway.guess_check("token", &req, Some(&key)).await?;
    }
    let store = gateway.store();
    let Some(auth) = store.api_key(&key).await?.filter(|a| !a.license.disabled) else {
        if throttled {
            gateway.guess_failed("token", &req, Some(&key)).await;
        }
        return Err(ApiError::unauthorized("invalid or revoked API key"));
    };
    let scope = stored_scope(auth.key.permissions.as_ref(), &auth.key.id, "API key")?;
    if let Err(e) = store.touch_api_key(&auth.key.id).await {
        tracing::warn!(error = %e, "could not update last_used_at");
    }
    issue(
        &gateway,
        &auth.license,
        Issued {
            kind: CredentialKind::ApiKey,
            id: &auth.key.id,
            scope,
            generation: auth.key.scope_generation,
        },
        None,
        gateway.settings().api_token_lifetime,
    )
}

/// The scope stored with a key, for its token: a stored scope that does not
/// read back fails closed (the key is refused, never treated as
/// unrestricted), and so does a scope past its expiry.
fn stored_scope(
    permissions: Option<&serde_json::Value>,
    key_id: &str,
    kind: &str,
) -> Result<Option<KeyScope>, ApiError> {
    let scope = match KeyScope::from_permissions(permissions) {
        Ok(scope) => scope,
        Err(e) => {
            tracing::error!(key_id = %key_id, error = %e, "a key's stored scope does not read back");
            return Err(ApiError::unauthorized(format!(
                "this {kind}'s scope cannot be read; set it again or replace the key"
            )));
        }
    };
    if let Some(expired) = scope
        .as_ref()
        .and_then(|s| s.check_time(chrono::Utc::now().timestamp_millis()).err())
    {
        return Err(ApiError::unauthorized(&expired.message));
    }
    Ok(scope)
}

/// Body of the scope-change routes: `{ "scope": { … } }`, or `{ "scope": null }` to lift it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeBody {
    /// Required; `null` lifts the scope.
    #[serde(default, deserialize_with = "present")]
    scope: Option<Option<KeyScope>>,
}

/// Tells `{"scope": null}` (`Some(None)`) from a body without `scope` (`None`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<KeyScope>>, D::Error> {
    Option::<KeyScope>::deserialize(d).map(Some)
}

fn scope_body(body: &[u8]) -> Result<Option<KeyScope>, ApiError> {
    let parsed: ScopeBody =
        serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
    parsed.scope.ok_or_else(|| {
        ApiError::bad_request("give the new scope as `{ \"scope\": { … } }`, or `{ \"scope\": null }` to lift it")
    })
}

/// A scope for a terminal key, validated as stored (`terminals` refused).
fn terminal_key_permissions(scope: Option<KeyScope>, license: &License) -> Result<Option<serde_json::Value>, ApiError> {
    match scope {
        Some(scope) => scope
            .for_terminal_key(license.tier.capabilities(), chrono::Utc::now().timestamp_millis())
            .map_err(|m| ApiError::bad_request(format!("scope: {m}"))),
        None => Ok(None),
    }
}

/// `PATCH /api/dashboard/api-keys/{id}`: changes the key's scope in place
/// (`{ "scope": … | null }`); the key's tokens of the old scope stop
/// working on every instance at once (`docs/security.md`, "Scoped keys").
async fn change_api_key_scope(
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let license = master(&req, &gateway).await?;
    let scope = scope_body(&body)?;
    let permissions = match scope {
        Some(scope) => scope
            .for_new_key(license.tier.capabilities(), chrono::Utc::now().timestamp_millis())
            .map_err(|m| ApiError::bad_request(format!("scope: {m}")))?,
        None => None,
    };
    match gateway
        .change_api_key_scope(&license.id, &path.into_inner(), permissions)
        .await?
    {
        Some(key) => Ok(HttpResponse::Ok().json(json!({ "data": key }))),
        None => Err(ApiError::not_found("no active API key with this id")),
    }
}

/// `GET /api/dashboard/terminals/{id}/key`: the terminal's active key (its scope; never the secret).
async fn terminal_key_record(
    req: HttpRequest,
    path: web::Path<String>,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let license = master(&req, &gateway).await?;
    match gateway
        .store()
        .terminal_key_record(&license.id, &path.into_inner())
        .await?
    {
        Some(key) => Ok(HttpResponse::Ok().json(json!({ "data": key }))),
        None => Err(ApiError::not_found(
            "no terminal with an active key with this id on this license",
        )),
    }
}

/// `PATCH /api/dashboard/terminals/{id}/key`: changes the scope of the
/// terminal's key in place (`{ "scope": … | null }`, no `terminals`).
async fn change_terminal_key_scope(
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let license = master(&req, &gateway).await?;
    let permissions = terminal_key_permissions(scope_body(&body)?, &license)?;
    match gateway
        .change_terminal_key_scope(&license.id, &path.into_inner(), permissions)
        .await?
    {
        Some(key) => Ok(HttpResponse::Ok().json(json!({ "data": key }))),
        None => Err(ApiError::not_found(
            "no terminal with an active key with this id on this license",
        )),
    }
}

/// Authenticates a dashboard request with the license's master key.
pub(crate) async fn master(req: &HttpRequest, gateway: &Gateway) -> Result<License, ApiError> {
    let Some(key) = bearer(req) else {
        return Err(ApiError::unauthorized(
            "missing master license key: send `Authorization: Bearer <LICENSE_KEY>`",
        ));
    };
    gateway.guess_check("dashboard", req, Some(&key)).await?;
    match gateway.store().license_by_master_key(&key).await? {
        Some(license) => Ok(license),
        None => {
            gateway.guess_failed("dashboard", req, Some(&key)).await;
            Err(ApiError::unauthorized(
                "dashboard endpoints require the license's master key",
            ))
        }
    }
}

async fn list_api_keys(req: HttpRequest, gateway: web::Data<Gateway>) -> Result<HttpResponse, ApiError> {
    let license = master(&req, &gateway).await?;
    let keys = gateway.store().list_api_keys(&license.id).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": keys })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateKeyBody {
    #[serde(default)]
    label: Option<String>,
    /// What the key may do within the tier (`docs/security.md`, "Scoped keys").
    #[serde(default)]
    scope: Option<KeyScope>,
}

async fn create_api_key(
    req: HttpRequest,
    body: web::Bytes,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let license = master(&req, &gateway).await?;
    let parsed: CreateKeyBody = if body.is_empty() {
        CreateKeyBody {
            label: None,
            scope: None,
        }
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?
    };
    let label = parsed.label.unwrap_or_else(|| "API key".to_owned());
    let permissions = match parsed.scope {
        Some(scope) => scope
            .for_new_key(license.tier.capabilities(), chrono::Utc::now().timestamp_millis())
            .map_err(|m| ApiError::bad_request(format!("scope: {m}")))?,
        None => None,
    };
    let (key, secret) = gateway
        .store()
        .create_scoped_api_key(&license.id, &label, permissions)
        .await?;
    tracing::info!(license = %license.id, key_id = %key.id, "API key created");
    Ok(HttpResponse::Created().json(json!({ "data": { "key": key, "api_key": secret.expose() } })))
}

#[derive(Debug, Deserialize)]
struct RevokeQuery {
    id: Option<String>,
}

async fn revoke_api_key(
    req: HttpRequest,
    query: web::Query<RevokeQuery>,
    body: web::Bytes,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let license = master(&req, &gateway).await?;
    let from_body = if body.is_empty() {
        None
    } else {
        serde_json::from_slice::<RevokeQuery>(&body)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?
            .id
    };
    let Some(id) = query.into_inner().id.or(from_body) else {
        return Err(ApiError::bad_request(
            "give the key id as `?id=` or in a JSON body `{ \"id\": … }`",
        ));
    };
    if gateway.revoke_api_key(&license.id, &id).await? {
        Ok(HttpResponse::Ok().json(json!({ "data": { "id": id, "revoked": true } })))
    } else {
        Err(ApiError::not_found("no active API key with this id"))
    }
}

async fn list_terminals(req: HttpRequest, gateway: web::Data<Gateway>) -> Result<HttpResponse, ApiError> {
    let license = master(&req, &gateway).await?;
    let list = gateway.terminals(&license.id).await.map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok().json(json!({ "data": list })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateTerminalBody {
    name: String,
    /// What the terminal's key may do within the tier (no `terminals`).
    #[serde(default)]
    scope: Option<KeyScope>,
}

async fn create_terminal(
    req: HttpRequest,
    body: web::Json<CreateTerminalBody>,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let license = master(&req, &gateway).await?;
    let body = body.into_inner();
    let permissions = terminal_key_permissions(body.scope, &license)?;
    let (terminal, key) = gateway
        .store()
        .create_scoped_terminal(&license.id, &body.name, permissions)
        .await?;
    tracing::info!(license = %license.id, terminal = %terminal.id, "terminal created");
    let record = gateway.store().terminal_key_record(&license.id, &terminal.id).await?;
    Ok(HttpResponse::Created().json(json!({ "data": {
        "terminal": terminal,
        "terminal_key": key.expose(),
        "key": record,
    } })))
}

/// `POST /api/dashboard/terminals/{id}/rotate-key`: revokes the terminal's
/// key and issues a new one (shown once). Session tokens exchanged for the
/// old key are refused by every REST instance at once (Redis marker, else the
/// store), and an agent connected with it here is disconnected at once.
///
/// The new key keeps the old key's scope, unless the body gives one
/// (`{ "scope": … | null }`).
async fn rotate_terminal_key(
    req: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    let license = master(&req, &gateway).await?;
    let terminal_id = path.into_inner();
    // No body, or one without `scope`: the new key keeps the old key's scope.
    let scope = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let parsed: ScopeBody =
            serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
        match parsed.scope {
            Some(scope) => Some(terminal_key_permissions(scope, &license)?),
            None => None,
        }
    };
    let rotated = match gateway
        .rotate_terminal_key_with_scope(&license.id, &terminal_id, scope)
        .await
    {
        Ok(r) => r,
        Err(tradeterm_store::StoreError::NotFound(_)) => {
            return Err(ApiError::not_found("no terminal with this id on this license"));
        }
        Err(e) => return Err(e.into()),
    };
    Ok(HttpResponse::Ok().json(json!({ "data": {
        "terminal_id": rotated.terminal_id,
        "terminal_key": rotated.terminal_key.expose(),
        "revoked_key_ids": rotated.revoked_key_ids,
        "agent_disconnected": rotated.agent_disconnected,
        "key": rotated.key,
    } })))
}

pub(crate) fn check_internal(req: &HttpRequest, gateway: &Gateway) -> Result<(), ApiError> {
    let Some(expected) = gateway.settings().internal_token.as_deref() else {
        return Err(ApiError::not_found("no such route"));
    };
    let given = req
        .headers()
        .get(INTERNAL_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if given.len() == expected.len() && bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "invalid internal token",
        ))
    }
}

async fn internal_dispatch(
    req: HttpRequest,
    body: web::Json<DispatchRequest>,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    check_internal(&req, &gateway)?;
    Ok(HttpResponse::Ok().json(run_dispatch(&gateway, body.into_inner()).await))
}

/// Runs a dispatch asked for by another process (this route, or the
/// dispatch channel): here, or relayed to the holder unless it was relayed
/// already.
pub(crate) async fn run_dispatch(gateway: &Gateway, dispatch: DispatchRequest) -> DispatchReply {
    let result = gateway
        .execute_here_or_relay(
            &dispatch.license_id,
            &dispatch.terminal_id,
            dispatch.command,
            Duration::from_millis(dispatch.timeout_ms),
            !dispatch.relayed,
        )
        .await;
    DispatchReply::from(result)
}

#[derive(Debug, Deserialize)]
struct LicenseQuery {
    license_id: String,
}

async fn internal_terminals(
    req: HttpRequest,
    query: web::Query<LicenseQuery>,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    check_internal(&req, &gateway)?;
    let list = gateway.terminals(&query.license_id).await.map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok().json(list))
}

/// `POST /internal/v1/revoked`: another instance rotated the key of a
/// terminal whose agent may be connected here.
async fn internal_revoked(
    req: HttpRequest,
    body: web::Json<tradeterm_protocol::dispatch::RevokedKeys>,
    gateway: web::Data<Gateway>,
) -> Result<HttpResponse, ApiError> {
    check_internal(&req, &gateway)?;
    let disconnected = gateway.inner.registry.drop_revoked(&body.terminal_id, &body.key_ids);
    Ok(HttpResponse::Ok().json(serde_json::json!({ "disconnected": disconnected })))
}
