//! The dashboard's routes and their handlers.
//!
//! ```text
//! GET  /dashboard                                   → the terminals page (or sign-in)
//! GET  /dashboard/sign-in       POST  (master key)  → session cookie
//! POST /dashboard/sign-out                          → session deleted
//! GET  /dashboard/terminals     POST  (name, scope) → new terminal, key shown once
//! GET  /dashboard/terminals/{id}
//! GET  /dashboard/terminals/{id}/rotate-key  POST   → new key shown once, old one revoked
//! GET  /dashboard/terminals/{id}/scope       POST   → its key's scope changed in place
//! POST /dashboard/terminals/{id}/scope/clear        → its key's scope lifted
//! GET  /dashboard/api-keys      POST  (label, scope) → new key shown once
//! GET  /dashboard/api-keys/{id}/revoke       POST   → revoked
//! GET  /dashboard/api-keys/{id}/scope        POST   → scope changed in place
//! POST /dashboard/api-keys/{id}/scope/clear         → scope lifted
//! GET  /dashboard/webhooks      POST  (url, types)  → new endpoint, secret shown once
//! GET  /dashboard/webhooks/{id} POST  (url, types, enabled) → saved
//! POST /dashboard/webhooks/{id}/test                → the test delivery's outcome
//! GET  /dashboard/webhooks/{id}/delete       POST   → deleted
//! GET  /dashboard/audit         (?terminal, tool, surface, decision, cursor) → the trade audit log
//! GET  /dashboard/audit.csv     (the same filters)  → the rows as CSV
//! GET  /dashboard/settings      POST (mcp_trade_confirmation) → the license's settings
//! GET  /dashboard/fragments/terminals                 (live table)
//! GET  /dashboard/fragments/terminals/{id}/status     (live status)
//! GET  /dashboard/fragments/terminals/{id}/insights   (rules and alerts)
//! GET  /dashboard/assets/{name}
//! ```
//!
//! Every handler but sign-in starts with [`session::owner`]; every POST
//! checks the CSRF token ([`session::check_csrf`]) before anything else is
//! done. Terminals and keys are looked up among the session's license's only;
//! webhooks are read and changed through the catalog's webhook tools (the
//! binary's [`crate::Insights`]), which look endpoints up among the
//! license's only.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use tradeterm_protocol::{Dispatch, TerminalStatus};
use tradeterm_store::StoreError;

use crate::audit::{self, AuditQuery};
use crate::error::PageError;
use crate::scope_form::{KeyKind, ScopeForm};
use crate::session::{self, Owner, SIGN_IN_COOKIE};
use crate::snippets::AgentAddress;
use crate::views::scope::ScopeTarget;
use crate::views::{self, Nav, api_keys, page_response, scope, sign_in, terminals, webhooks as webhook_views};
use crate::webhooks::{
    self, CreatedView, DeletedView, Failure, TestedView, WebhookCall, WebhookDetailView, WebhookListView, WebhookView,
};
use crate::{Dashboard, assets, insights};

pub(crate) fn configure(cfg: &mut web::ServiceConfig, dash: Dashboard) {
    let forms = web::FormConfig::default()
        .limit(16 * 1024)
        .error_handler(|_, _| PageError::Invalid("The form could not be read.".to_owned()).into());
    cfg.service(
        web::scope(crate::PATH)
            .app_data(web::Data::new(dash))
            .app_data(forms)
            .route("", web::get().to(home))
            .route("/", web::get().to(home))
            .service(
                web::resource("/sign-in")
                    .route(web::get().to(sign_in_form))
                    .route(web::post().to(sign_in)),
            )
            .route("/sign-out", web::post().to(sign_out))
            .service(
                web::resource("/terminals")
                    .route(web::get().to(terminal_list))
                    .route(web::post().to(create_terminal)),
            )
            .route("/terminals/{id}", web::get().to(terminal))
            .service(
                web::resource("/terminals/{id}/scope")
                    .route(web::get().to(terminal_scope_page))
                    .route(web::post().to(change_terminal_scope)),
            )
            .route("/terminals/{id}/scope/clear", web::post().to(clear_terminal_scope))
            .service(
                web::resource("/terminals/{id}/rotate-key")
                    .route(web::get().to(rotate_confirm))
                    .route(web::post().to(rotate)),
            )
            .service(
                web::resource("/api-keys")
                    .route(web::get().to(api_key_list))
                    .route(web::post().to(create_api_key)),
            )
            .service(
                web::resource("/api-keys/{id}/revoke")
                    .route(web::get().to(revoke_confirm))
                    .route(web::post().to(revoke)),
            )
            .service(
                web::resource("/api-keys/{id}/scope")
                    .route(web::get().to(api_key_scope_page))
                    .route(web::post().to(change_api_key_scope)),
            )
            .route("/api-keys/{id}/scope/clear", web::post().to(clear_api_key_scope))
            .service(
                web::resource("/webhooks")
                    .route(web::get().to(webhook_list))
                    .route(web::post().to(create_webhook)),
            )
            .service(
                web::resource("/webhooks/{id}")
                    .route(web::get().to(webhook))
                    .route(web::post().to(update_webhook)),
            )
            .route("/webhooks/{id}/test", web::post().to(test_webhook))
            .service(
                web::resource("/webhooks/{id}/delete")
                    .route(web::get().to(delete_webhook_confirm))
                    .route(web::post().to(delete_webhook)),
            )
            .route("/audit", web::get().to(audit_page))
            .route("/audit.csv", web::get().to(audit_export))
            .service(
                web::resource("/settings")
                    .route(web::get().to(settings_page))
                    .route(web::post().to(change_settings)),
            )
            .route("/fragments/terminals", web::get().to(list_fragment))
            .route("/fragments/terminals/{id}/status", web::get().to(status_fragment))
            .route("/fragments/terminals/{id}/insights", web::get().to(insights_fragment))
            .route("/assets/{name}", web::get().to(assets::serve))
            .default_service(web::to(|| async { Err::<HttpResponse, _>(PageError::NotFound) })),
    );
}

/// A form that only carries the CSRF token.
#[derive(Debug, Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

#[derive(Deserialize)]
struct SignInForm {
    #[serde(default)]
    master_key: String,
    #[serde(default)]
    csrf: String,
}

impl std::fmt::Debug for SignInForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInForm").finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize)]
struct NameForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    csrf: String,
    #[serde(flatten)]
    scope: ScopeForm,
}

#[derive(Debug, Deserialize)]
struct LabelForm {
    #[serde(default)]
    label: String,
    #[serde(default)]
    csrf: String,
    #[serde(flatten)]
    scope: ScopeForm,
}

/// The scope page's form.
#[derive(Debug, Deserialize)]
struct ScopeChangeForm {
    #[serde(default)]
    csrf: String,
    #[serde(flatten)]
    scope: ScopeForm,
}

#[derive(Debug, Deserialize)]
struct WebhookForm {
    #[serde(default)]
    url: String,
    #[serde(default)]
    types: String,
    #[serde(default)]
    csrf: String,
}

#[derive(Debug, Deserialize)]
struct WebhookUpdateForm {
    #[serde(default)]
    url: String,
    #[serde(default)]
    types: String,
    /// The checkbox: present (`on`) when ticked.
    #[serde(default)]
    enabled: Option<String>,
    /// Whether it was enabled when the form was shown: only a change is sent.
    #[serde(default)]
    was_enabled: String,
    #[serde(default)]
    csrf: String,
}

#[derive(Debug, Deserialize)]
struct DoneQuery {
    done: Option<String>,
}

fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

fn refresh_ms(dash: &Dashboard) -> u128 {
    dash.settings().refresh.as_millis()
}

fn address(req: &HttpRequest, dash: &Dashboard) -> AgentAddress {
    AgentAddress::of(req, session::is_https(req, dash))
}

async fn home(req: HttpRequest, dash: web::Data<Dashboard>) -> Result<HttpResponse, PageError> {
    session::owner(&req, &dash).await?;
    Ok(see_other(views::TERMINALS_PATH))
}

// ----- sign-in and sign-out -----

async fn sign_in_form(req: HttpRequest, dash: web::Data<Dashboard>) -> Result<HttpResponse, PageError> {
    if session::owner(&req, &dash).await.is_ok() {
        return Ok(see_other(views::TERMINALS_PATH));
    }
    Ok(sign_in_page(&req, &dash, StatusCode::OK, None))
}

/// The sign-in page with a fresh double-submit token in its cookie.
fn sign_in_page(req: &HttpRequest, dash: &Dashboard, status: StatusCode, error: Option<&str>) -> HttpResponse {
    let token = tradeterm_store::keys::generate("").expose().to_owned();
    let mut response = page_response(status, sign_in::page(&token, error));
    if let Err(e) = response.add_cookie(&session::sign_in_cookie(&token, session::is_https(req, dash))) {
        tracing::warn!(error = %e, "dashboard: could not set the sign-in cookie");
    }
    response
}

async fn sign_in(
    req: HttpRequest,
    form: web::Form<SignInForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let form = form.into_inner();
    let expected = req
        .cookie(SIGN_IN_COOKIE)
        .map(|c| c.value().to_owned())
        .unwrap_or_default();
    if !session::same_origin(&req) || !session::tokens_equal(&form.csrf, &expected) {
        return Err(PageError::Csrf);
    }
    let gateway = dash.gateway();
    let store = gateway.store();
    let key = form.master_key.trim();
    let candidate = (!key.is_empty()).then_some(key);
    // Guessing is throttled per address as at every other credential check
    // (docs/security.md); a refused page says when to try again.
    if let Err(refused) = gateway.guess_check("dashboard", &req, candidate).await {
        let mut page = sign_in_page(
            &req,
            &dash,
            StatusCode::TOO_MANY_REQUESTS,
            Some("Too many failed sign-ins from this address: wait a moment and try again."),
        );
        if let Some(secs) = refused.retry_after()
            && let Ok(value) = actix_web::http::header::HeaderValue::from_str(&secs.to_string())
        {
            page.headers_mut().insert(actix_web::http::header::RETRY_AFTER, value);
        }
        return Ok(page);
    }
    let license = match candidate {
        None => None,
        Some(key) => store.license_by_master_key(key).await.map_err(PageError::internal)?,
    };
    let Some(license) = license else {
        gateway.guess_failed("dashboard", &req, candidate).await;
        tracing::info!("dashboard: sign-in refused (not a master key of an enabled license)");
        return Ok(sign_in_page(
            &req,
            &dash,
            StatusCode::UNAUTHORIZED,
            Some("That is not the master key of an enabled license."),
        ));
    };
    let settings = dash.settings();
    let expires_at =
        chrono::Utc::now().timestamp_millis() + settings.session_idle.min(settings.session_max).as_millis() as i64;
    let token = store
        .create_dashboard_session(&license.id, expires_at)
        .await
        .map_err(PageError::internal)?;
    tracing::info!(license = %license.id, "dashboard: signed in");
    let secure = session::is_https(&req, &dash);
    let mut response = see_other(views::TERMINALS_PATH);
    for cookie in [
        session::session_cookie(token.expose(), secure),
        session::removal(SIGN_IN_COOKIE, secure),
    ] {
        response.add_cookie(&cookie).map_err(PageError::internal)?;
    }
    Ok(response)
}

async fn sign_out(
    req: HttpRequest,
    form: web::Form<CsrfForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    dash.gateway()
        .store()
        .end_dashboard_session(owner.token())
        .await
        .map_err(PageError::internal)?;
    tracing::info!(license = %owner.license.id, "dashboard: signed out");
    let mut response = see_other(views::SIGN_IN_PATH);
    response
        .add_cookie(&session::removal(
            session::SESSION_COOKIE,
            session::is_https(&req, &dash),
        ))
        .map_err(PageError::internal)?;
    Ok(response)
}

// ----- terminals -----

async fn terminals_of(dash: &Dashboard, owner: &Owner) -> Result<Vec<TerminalStatus>, PageError> {
    dash.gateway()
        .terminals(&owner.license.id)
        .await
        .map_err(PageError::internal)
}

/// A terminal of the owner's license, or 404.
async fn terminal_of(dash: &Dashboard, owner: &Owner, id: &str) -> Result<TerminalStatus, PageError> {
    terminals_of(dash, owner)
        .await?
        .into_iter()
        .find(|t| t.id == id)
        .ok_or(PageError::NotFound)
}

async fn terminal_list(req: HttpRequest, dash: web::Data<Dashboard>) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let list = terminals_of(&dash, &owner).await?;
    Ok(page_response(
        StatusCode::OK,
        terminals::list_page(&owner, &list, refresh_ms(&dash), None, &fresh_scope(&owner)),
    ))
}

async fn create_terminal(
    req: HttpRequest,
    form: web::Form<NameForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let name = form.name.trim();
    let refused = async |message: &str| -> Result<HttpResponse, PageError> {
        let list = terminals_of(&dash, &owner).await?;
        Ok(page_response(
            StatusCode::BAD_REQUEST,
            terminals::list_page(
                &owner,
                &list,
                refresh_ms(&dash),
                Some(&capitalized(message)),
                &form.scope,
            ),
        ))
    };
    let permissions = match scope_of(&owner, &form.scope, KeyKind::Terminal) {
        Ok(p) => p,
        Err(message) => return refused(&message).await,
    };
    let store = dash.gateway().store();
    match store.create_scoped_terminal(&owner.license.id, name, permissions).await {
        Ok((terminal, key)) => {
            tracing::info!(license = %owner.license.id, terminal = %terminal.id, "dashboard: terminal created");
            let record = store
                .terminal_key_record(&owner.license.id, &terminal.id)
                .await
                .map_err(PageError::internal)?;
            Ok(page_response(
                StatusCode::OK,
                terminals::created_page(
                    &owner,
                    &terminal.id,
                    &terminal.name,
                    key.expose(),
                    record.as_ref().and_then(|k| k.permissions.as_ref()),
                    &address(&req, &dash),
                ),
            ))
        }
        Err(StoreError::Invalid(message)) => refused(&message).await,
        Err(e) => Err(PageError::internal(e)),
    }
}

async fn terminal(
    req: HttpRequest,
    path: web::Path<String>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let t = terminal_of(&dash, &owner, &path).await?;
    let panel = insights::panel(&dash, &owner.license, &t.id).await;
    let key = terminal_key_of(&dash, &owner, &t.id).await?;
    Ok(page_response(
        StatusCode::OK,
        terminals::terminal_page(
            &owner,
            &t,
            &address(&req, &dash),
            panel.as_ref(),
            refresh_ms(&dash),
            key.as_ref().map(|k| k.permissions.as_ref()),
        ),
    ))
}

async fn rotate_confirm(
    req: HttpRequest,
    path: web::Path<String>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let t = terminal_of(&dash, &owner, &path).await?;
    Ok(page_response(
        StatusCode::OK,
        terminals::rotate_confirm_page(&owner, &t),
    ))
}

async fn rotate(
    req: HttpRequest,
    path: web::Path<String>,
    form: web::Form<CsrfForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let t = terminal_of(&dash, &owner, &path).await?;
    let rotation = match dash.gateway().rotate_terminal_key(&owner.license.id, &t.id).await {
        Ok(r) => r,
        Err(StoreError::NotFound(_)) => return Err(PageError::NotFound),
        Err(e) => return Err(PageError::internal(e)),
    };
    Ok(page_response(
        StatusCode::OK,
        terminals::rotated_page(&owner, &t, &rotation, &address(&req, &dash)),
    ))
}

// ----- API keys -----

async fn api_key_list(
    req: HttpRequest,
    query: web::Query<DoneQuery>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let keys = list_keys(&dash, &owner).await?;
    let notice = query.done.as_deref().and_then(api_keys::Notice::parse);
    Ok(page_response(
        StatusCode::OK,
        api_keys::list_page(&owner, &keys, notice, None, &fresh_scope(&owner)),
    ))
}

async fn list_keys(dash: &Dashboard, owner: &Owner) -> Result<Vec<tradeterm_store::ApiKey>, PageError> {
    dash.gateway()
        .store()
        .list_api_keys(&owner.license.id)
        .await
        .map_err(PageError::internal)
}

async fn create_api_key(
    req: HttpRequest,
    form: web::Form<LabelForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let permissions = match scope_of(&owner, &form.scope, KeyKind::Api) {
        Ok(p) => p,
        Err(message) => return key_refused(&dash, &owner, StatusCode::BAD_REQUEST, &message, &form.scope).await,
    };
    match dash
        .gateway()
        .store()
        .create_scoped_api_key(&owner.license.id, form.label.trim(), permissions)
        .await
    {
        Ok((key, secret)) => {
            tracing::info!(license = %owner.license.id, key_id = %key.id, "dashboard: API key created");
            Ok(page_response(
                StatusCode::OK,
                api_keys::created_page(&owner, &key, secret.expose(), dash.settings().rest_url.as_deref()),
            ))
        }
        Err(e @ StoreError::ApiKeyLimit) => {
            key_refused(&dash, &owner, StatusCode::CONFLICT, &e.to_string(), &form.scope).await
        }
        Err(StoreError::Invalid(message)) => {
            key_refused(&dash, &owner, StatusCode::BAD_REQUEST, &message, &form.scope).await
        }
        Err(e) => Err(PageError::internal(e)),
    }
}

/// The API keys page again, saying why a key was not created.
async fn key_refused(
    dash: &Dashboard,
    owner: &Owner,
    status: StatusCode,
    message: &str,
    draft: &ScopeForm,
) -> Result<HttpResponse, PageError> {
    let keys = list_keys(dash, owner).await?;
    Ok(page_response(
        status,
        api_keys::list_page(owner, &keys, None, Some(&capitalized(message)), draft),
    ))
}

/// An active key of the owner's license, or 404.
async fn active_key_of(dash: &Dashboard, owner: &Owner, id: &str) -> Result<tradeterm_store::ApiKey, PageError> {
    list_keys(dash, owner)
        .await?
        .into_iter()
        .find(|k| k.id == id && k.revoked_at.is_none())
        .ok_or(PageError::NotFound)
}

async fn revoke_confirm(
    req: HttpRequest,
    path: web::Path<String>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let key = active_key_of(&dash, &owner, &path).await?;
    Ok(page_response(
        StatusCode::OK,
        api_keys::revoke_confirm_page(&owner, &key),
    ))
}

async fn revoke(
    req: HttpRequest,
    path: web::Path<String>,
    form: web::Form<CsrfForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    match dash.gateway().revoke_api_key(&owner.license.id, &path).await {
        Ok(true) => Ok(see_other(&format!("{}?done=revoked", views::API_KEYS_PATH))),
        Ok(false) => Err(PageError::NotFound),
        Err(e) => Err(PageError::internal(e)),
    }
}

// ----- key scopes -----

/// The scope form of a new key: nothing restricted.
fn fresh_scope(owner: &Owner) -> ScopeForm {
    ScopeForm::of(None, owner.license.tier.capabilities())
}

/// A form's scope as stored, validated as the gateway's management routes
/// validate it; else the message naming the field.
fn scope_of(owner: &Owner, form: &ScopeForm, kind: KeyKind) -> Result<Option<serde_json::Value>, String> {
    form.permissions(
        kind,
        owner.license.tier.capabilities(),
        chrono::Utc::now().timestamp_millis(),
    )
}

/// The active key's record of a terminal of the owner's license.
async fn terminal_key_of(
    dash: &Dashboard,
    owner: &Owner,
    terminal_id: &str,
) -> Result<Option<tradeterm_store::TerminalKey>, PageError> {
    dash.gateway()
        .store()
        .terminal_key_record(&owner.license.id, terminal_id)
        .await
        .map_err(PageError::internal)
}

fn api_key_target(key: &tradeterm_store::ApiKey, action: &str) -> (String, String) {
    (format!("API key “{}”", key.label), action.to_owned())
}

/// The scope page of an API key (a refused change: 400 with the message
/// and the form as typed).
fn api_key_scope_response(
    owner: &Owner,
    key: &tradeterm_store::ApiKey,
    status: StatusCode,
    form: &ScopeForm,
    error: Option<&str>,
) -> HttpResponse {
    let action = api_keys::scope_path(&key.id);
    let (name, action) = api_key_target(key, &action);
    let target = ScopeTarget {
        kind: KeyKind::Api,
        name: &name,
        action: &action,
        back: views::API_KEYS_PATH,
        nav: Nav::ApiKeys,
    };
    page_response(
        status,
        scope::scope_page(owner, &target, key.permissions.as_ref(), form, error),
    )
}

async fn api_key_scope_page(
    req: HttpRequest,
    path: web::Path<String>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let key = active_key_of(&dash, &owner, &path).await?;
    let form = ScopeForm::of(key.permissions.as_ref(), owner.license.tier.capabilities());
    Ok(api_key_scope_response(&owner, &key, StatusCode::OK, &form, None))
}

async fn change_api_key_scope(
    req: HttpRequest,
    path: web::Path<String>,
    form: web::Form<ScopeChangeForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let key = active_key_of(&dash, &owner, &path).await?;
    match scope_of(&owner, &form.scope, KeyKind::Api) {
        Ok(permissions) => set_api_key_scope(&dash, &owner, &key.id, permissions).await,
        Err(message) => Ok(api_key_scope_response(
            &owner,
            &key,
            StatusCode::BAD_REQUEST,
            &form.scope,
            Some(&capitalized(&message)),
        )),
    }
}

async fn clear_api_key_scope(
    req: HttpRequest,
    path: web::Path<String>,
    form: web::Form<CsrfForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    set_api_key_scope(&dash, &owner, &path, None).await
}

/// Changes an API key's scope through the gateway (published to every
/// instance, as the management route does), back to the list.
async fn set_api_key_scope(
    dash: &Dashboard,
    owner: &Owner,
    key_id: &str,
    permissions: Option<serde_json::Value>,
) -> Result<HttpResponse, PageError> {
    match dash
        .gateway()
        .change_api_key_scope(&owner.license.id, key_id, permissions)
        .await
    {
        Ok(Some(_)) => {
            tracing::info!(license = %owner.license.id, key_id = %key_id, "dashboard: API key scope changed");
            Ok(see_other(&format!("{}?done=scoped", views::API_KEYS_PATH)))
        }
        Ok(None) => Err(PageError::NotFound),
        Err(e) => Err(PageError::internal(e)),
    }
}

/// The scope page of a terminal's key (a refused change: 400 with the
/// message and the form as typed).
fn terminal_scope_response(
    owner: &Owner,
    t: &TerminalStatus,
    key: &tradeterm_store::TerminalKey,
    status: StatusCode,
    form: &ScopeForm,
    error: Option<&str>,
) -> HttpResponse {
    let name = format!("key of the terminal “{}”", t.name);
    let action = terminals::scope_path(&t.id);
    let back = terminals::terminal_path(&t.id);
    let target = ScopeTarget {
        kind: KeyKind::Terminal,
        name: &name,
        action: &action,
        back: &back,
        nav: Nav::Terminals,
    };
    page_response(
        status,
        scope::scope_page(owner, &target, key.permissions.as_ref(), form, error),
    )
}

/// A terminal of the owner's license with its active key, or 404.
async fn terminal_with_key(
    dash: &Dashboard,
    owner: &Owner,
    id: &str,
) -> Result<(TerminalStatus, tradeterm_store::TerminalKey), PageError> {
    let t = terminal_of(dash, owner, id).await?;
    let key = terminal_key_of(dash, owner, &t.id).await?.ok_or(PageError::NotFound)?;
    Ok((t, key))
}

async fn terminal_scope_page(
    req: HttpRequest,
    path: web::Path<String>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let (t, key) = terminal_with_key(&dash, &owner, &path).await?;
    let form = ScopeForm::of(key.permissions.as_ref(), owner.license.tier.capabilities());
    Ok(terminal_scope_response(&owner, &t, &key, StatusCode::OK, &form, None))
}

async fn change_terminal_scope(
    req: HttpRequest,
    path: web::Path<String>,
    form: web::Form<ScopeChangeForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let (t, key) = terminal_with_key(&dash, &owner, &path).await?;
    match scope_of(&owner, &form.scope, KeyKind::Terminal) {
        Ok(permissions) => set_terminal_scope(&dash, &owner, &t.id, permissions).await,
        Err(message) => Ok(terminal_scope_response(
            &owner,
            &t,
            &key,
            StatusCode::BAD_REQUEST,
            &form.scope,
            Some(&capitalized(&message)),
        )),
    }
}

async fn clear_terminal_scope(
    req: HttpRequest,
    path: web::Path<String>,
    form: web::Form<CsrfForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let t = terminal_of(&dash, &owner, &path).await?;
    set_terminal_scope(&dash, &owner, &t.id, None).await
}

/// Changes a terminal key's scope through the gateway, back to the terminal.
async fn set_terminal_scope(
    dash: &Dashboard,
    owner: &Owner,
    terminal_id: &str,
    permissions: Option<serde_json::Value>,
) -> Result<HttpResponse, PageError> {
    match dash
        .gateway()
        .change_terminal_key_scope(&owner.license.id, terminal_id, permissions)
        .await
    {
        Ok(Some(_)) => {
            tracing::info!(license = %owner.license.id, terminal = %terminal_id, "dashboard: terminal key scope changed");
            Ok(see_other(&terminals::terminal_path(terminal_id)))
        }
        Ok(None) => Err(PageError::NotFound),
        Err(e) => Err(PageError::internal(e)),
    }
}

// ----- webhooks -----

/// A failed webhook call that the page does not render itself.
fn webhook_failure(f: Failure) -> PageError {
    match f {
        // Without the catalog there is no endpoint to reach here.
        Failure::Unavailable | Failure::NotFound => PageError::NotFound,
        Failure::Refused(message) => PageError::Invalid(capitalized(&message)),
        Failure::Failed(e) => PageError::internal(format!("{}: {}", e.code, e.message)),
    }
}

async fn webhook_list(
    req: HttpRequest,
    query: web::Query<DoneQuery>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let notice = query.done.as_deref().and_then(webhook_views::Notice::parse);
    list_webhooks_page(
        &dash,
        &owner,
        StatusCode::OK,
        notice,
        None,
        &webhook_views::Draft::default(),
    )
    .await
}

/// The webhooks page (with a refusal of the create form, when there is one).
async fn list_webhooks_page(
    dash: &Dashboard,
    owner: &Owner,
    status: StatusCode,
    notice: Option<webhook_views::Notice>,
    error: Option<&str>,
    draft: &webhook_views::Draft<'_>,
) -> Result<HttpResponse, PageError> {
    let listed = webhooks::run::<WebhookListView>(dash, &owner.license, WebhookCall::List).await;
    let listing = match &listed {
        Ok(list) => webhook_views::Listing::Ready(list),
        Err(Failure::Unavailable) => webhook_views::Listing::Unavailable,
        Err(Failure::Failed(e)) => webhook_views::Listing::Failed(e),
        Err(Failure::NotFound | Failure::Refused(_)) => {
            return Err(PageError::internal("list_webhooks refused its empty input"));
        }
    };
    Ok(page_response(
        status,
        webhook_views::list_page(owner, listing, notice, error, draft),
    ))
}

async fn create_webhook(
    req: HttpRequest,
    form: web::Form<WebhookForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let call = WebhookCall::Create {
        url: form.url.trim().to_owned(),
        types: webhooks::parse_types(&form.types),
    };
    match webhooks::run::<CreatedView>(&dash, &owner.license, call).await {
        Ok(created) => {
            tracing::info!(license = %owner.license.id, webhook = %created.webhook.webhook_id, "dashboard: webhook created");
            Ok(page_response(
                StatusCode::OK,
                webhook_views::created_page(&owner, &created),
            ))
        }
        Err(Failure::Refused(message)) => {
            let draft = webhook_views::Draft {
                url: form.url.trim(),
                types: form.types.trim(),
            };
            list_webhooks_page(
                &dash,
                &owner,
                StatusCode::BAD_REQUEST,
                None,
                Some(&capitalized(&message)),
                &draft,
            )
            .await
        }
        Err(f) => Err(webhook_failure(f)),
    }
}

/// An endpoint of the owner's license with its counts and log, or 404.
async fn webhook_detail(dash: &Dashboard, owner: &Owner, id: &str) -> Result<WebhookDetailView, PageError> {
    let call = WebhookCall::Get {
        webhook_id: id.to_owned(),
    };
    webhooks::run::<WebhookDetailView>(dash, &owner.license, call)
        .await
        .map_err(webhook_failure)
}

async fn webhook(
    req: HttpRequest,
    path: web::Path<String>,
    query: web::Query<DoneQuery>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let detail = webhook_detail(&dash, &owner, &path).await?;
    let notice = query.done.as_deref().and_then(webhook_views::Notice::parse);
    Ok(page_response(
        StatusCode::OK,
        webhook_views::detail_page(&owner, &detail, notice, None, None, None),
    ))
}

async fn update_webhook(
    req: HttpRequest,
    path: web::Path<String>,
    form: web::Form<WebhookUpdateForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let enabled = form.enabled.is_some();
    // Only a change of the switch is sent: saving the URL of an endpoint
    // disabled for failing keeps it disabled, with its reason.
    let changed = (enabled != (form.was_enabled == "true")).then_some(enabled);
    let call = WebhookCall::Update {
        webhook_id: path.clone(),
        url: Some(form.url.trim().to_owned()),
        types: Some(webhooks::parse_types(&form.types)),
        enabled: changed,
    };
    match webhooks::run::<WebhookView>(&dash, &owner.license, call).await {
        Ok(saved) => {
            tracing::info!(license = %owner.license.id, webhook = %saved.webhook_id, "dashboard: webhook updated");
            Ok(see_other(&format!(
                "{}?done=updated",
                webhook_views::webhook_path(&saved.webhook_id)
            )))
        }
        Err(Failure::Refused(message)) => {
            let detail = webhook_detail(&dash, &owner, &path).await?;
            let edit = webhook_views::Edit {
                url: form.url.trim(),
                types: form.types.trim(),
                enabled,
            };
            Ok(page_response(
                StatusCode::BAD_REQUEST,
                webhook_views::detail_page(&owner, &detail, None, None, Some(&capitalized(&message)), Some(&edit)),
            ))
        }
        Err(f) => Err(webhook_failure(f)),
    }
}

async fn test_webhook(
    req: HttpRequest,
    path: web::Path<String>,
    form: web::Form<CsrfForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let call = WebhookCall::Test {
        webhook_id: path.clone(),
    };
    let tested = webhooks::run::<TestedView>(&dash, &owner.license, call)
        .await
        .map_err(webhook_failure)?;
    let detail = webhook_detail(&dash, &owner, &path).await?;
    Ok(page_response(
        StatusCode::OK,
        webhook_views::detail_page(&owner, &detail, None, Some(&tested), None, None),
    ))
}

async fn delete_webhook_confirm(
    req: HttpRequest,
    path: web::Path<String>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let detail = webhook_detail(&dash, &owner, &path).await?;
    Ok(page_response(
        StatusCode::OK,
        webhook_views::delete_confirm_page(&owner, &detail.webhook),
    ))
}

async fn delete_webhook(
    req: HttpRequest,
    path: web::Path<String>,
    form: web::Form<CsrfForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let call = WebhookCall::Delete {
        webhook_id: path.clone(),
    };
    let deleted = webhooks::run::<DeletedView>(&dash, &owner.license, call)
        .await
        .map_err(webhook_failure)?;
    if !deleted.deleted {
        return Err(PageError::NotFound);
    }
    tracing::info!(license = %owner.license.id, webhook = %path, "dashboard: webhook deleted");
    Ok(see_other(&format!("{}?done=deleted", views::WEBHOOKS_PATH)))
}

// ----- the audit log -----

/// The audit page's query string (a malformed one is a 400 page).
fn audit_query(req: &HttpRequest) -> Result<AuditQuery, PageError> {
    web::Query::<AuditQuery>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|_| PageError::Invalid("These filters could not be read.".into()))
}

/// `GET /dashboard/audit`: a page of the license's log, newest first.
async fn audit_page(req: HttpRequest, dash: web::Data<Dashboard>) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let query = audit_query(&req)?;
    let filter = query.filter(audit::PAGE_ROWS).map_err(PageError::Invalid)?;
    let page = audit::page(dash.gateway().store().as_ref(), &owner.license.id, &filter)
        .await
        .map_err(PageError::internal)?;
    let terminals = terminals_of(&dash, &owner).await?;
    let credentials = audit::credentials(dash.gateway().store().as_ref(), &owner.license.id, &terminals)
        .await
        .map_err(PageError::internal)?;
    Ok(page_response(
        StatusCode::OK,
        views::audit::page(&owner, &terminals, &credentials, &query, &page),
    ))
}

/// `GET /dashboard/audit.csv`: the same filters' rows (up to the log's
/// largest page) as the CSV `GET /api/v1/audit?format=csv` answers.
async fn audit_export(req: HttpRequest, dash: web::Data<Dashboard>) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let query = audit_query(&req)?;
    let filter = query.filter(audit::EXPORT_ROWS).map_err(PageError::Invalid)?;
    let page = audit::page(dash.gateway().store().as_ref(), &owner.license.id, &filter)
        .await
        .map_err(PageError::internal)?;
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::CONTENT_TYPE, "text/csv; charset=utf-8"))
        .insert_header((header::CONTENT_DISPOSITION, "attachment; filename=\"audit.csv\""))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if let Some(next) = page.next_cursor {
        response.insert_header(("x-next-cursor", next.to_string()));
    }
    Ok(response.body(audit::csv(&page.rows)))
}

// ----- settings -----

/// The settings form: a ticked checkbox is present (`on`).
#[derive(Debug, Deserialize)]
struct SettingsForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    mcp_trade_confirmation: Option<String>,
}

/// `GET /dashboard/settings`: the license's settings.
async fn settings_page(
    req: HttpRequest,
    query: web::Query<DoneQuery>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    let settings = dash
        .gateway()
        .store()
        .license_settings(&owner.license.id)
        .await
        .map_err(PageError::internal)?;
    let saved = query.done.as_deref() == Some("saved");
    Ok(page_response(
        StatusCode::OK,
        views::settings::page(&owner, &settings, saved),
    ))
}

/// `POST /dashboard/settings`: changes them as `PUT
/// /api/dashboard/license-settings` does (the same store call).
async fn change_settings(
    req: HttpRequest,
    form: web::Form<SettingsForm>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner(&req, &dash).await?;
    session::check_csrf(&req, &owner, Some(&form.csrf))?;
    let store = dash.gateway().store();
    let mut settings = store
        .license_settings(&owner.license.id)
        .await
        .map_err(PageError::internal)?;
    settings.mcp_trade_confirmation = form.mcp_trade_confirmation.is_some();
    store
        .set_license_settings(&owner.license.id, &settings)
        .await
        .map_err(PageError::internal)?;
    tracing::info!(
        license = %owner.license.id,
        mcp_trade_confirmation = settings.mcp_trade_confirmation,
        "dashboard: license settings changed"
    );
    Ok(see_other(&format!("{}?done=saved", views::SETTINGS_PATH)))
}

// ----- fragments -----

async fn list_fragment(req: HttpRequest, dash: web::Data<Dashboard>) -> Result<HttpResponse, PageError> {
    let owner = session::owner_passive(&req, &dash)
        .await
        .map_err(PageError::for_fragment)?;
    let list = terminals_of(&dash, &owner).await?;
    Ok(views::fragment_response(terminals::table(&list)))
}

async fn status_fragment(
    req: HttpRequest,
    path: web::Path<String>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner_passive(&req, &dash)
        .await
        .map_err(PageError::for_fragment)?;
    let t = terminal_of(&dash, &owner, &path).await?;
    Ok(views::fragment_response(terminals::status(&t)))
}

async fn insights_fragment(
    req: HttpRequest,
    path: web::Path<String>,
    dash: web::Data<Dashboard>,
) -> Result<HttpResponse, PageError> {
    let owner = session::owner_passive(&req, &dash)
        .await
        .map_err(PageError::for_fragment)?;
    let t = terminal_of(&dash, &owner, &path).await?;
    let panel = insights::panel(&dash, &owner.license, &t.id).await;
    Ok(views::fragment_response(views::insights::panel(panel.as_ref())))
}

/// A store message as a sentence.
fn capitalized(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => {
            let mut s: String = first.to_uppercase().collect();
            s.push_str(chars.as_str());
            if !s.ends_with('.') {
                s.push('.');
            }
            s
        }
        None => String::new(),
    }
}
