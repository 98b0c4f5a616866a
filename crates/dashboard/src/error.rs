//! Errors of the dashboard's pages, answered as HTML pages (or, for the
//! fragments the script fetches, as bare statuses).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, ResponseError};

use crate::views;

/// Why a page could not be served.
#[derive(Debug)]
pub(crate) enum PageError {
    /// No live session: to the sign-in page (303), or 401 for a fragment.
    SignIn,
    /// A state-changing request without the session's CSRF token, or from
    /// another origin: 403, nothing changed.
    Csrf,
    /// No such page, terminal, key or webhook on this license: 404.
    NotFound,
    /// The form is invalid: 400 with a message for the owner.
    Invalid(String),
    /// An internal failure, logged with this request id: 500 with the id only.
    Internal(String),
    /// A fragment asked without a live session: 401, no body.
    FragmentSignIn,
}

impl PageError {
    /// Logs `detail` with a fresh request id; the page shows only the id.
    pub(crate) fn internal(detail: impl std::fmt::Display) -> Self {
        let request_id = uuid::Uuid::new_v4().simple().to_string();
        tracing::error!(%request_id, error = %detail, "dashboard: internal error");
        Self::Internal(request_id)
    }

    /// The same error for a fragment request (no redirect).
    pub(crate) fn for_fragment(self) -> Self {
        match self {
            Self::SignIn => Self::FragmentSignIn,
            other => other,
        }
    }
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::SignIn | Self::FragmentSignIn => f.write_str("not signed in"),
            Self::Csrf => f.write_str("missing or invalid CSRF token"),
            Self::NotFound => f.write_str("not found"),
            Self::Invalid(m) => write!(f, "invalid: {m}"),
            Self::Internal(id) => write!(f, "internal error (request id {id})"),
        }
    }
}

impl ResponseError for PageError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::SignIn => StatusCode::SEE_OTHER,
            Self::FragmentSignIn => StatusCode::UNAUTHORIZED,
            Self::Csrf => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Invalid(_) => StatusCode::BAD_REQUEST,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        match self {
            Self::SignIn => HttpResponse::SeeOther()
                .insert_header((header::LOCATION, views::SIGN_IN_PATH))
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .finish(),
            Self::FragmentSignIn => HttpResponse::Unauthorized()
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .finish(),
            Self::Csrf => views::page_response(
                status,
                views::message_page(
                    "Not accepted",
                    "This form was not accepted: it expired, or it did not come from this dashboard. \
                     Nothing was changed. Reload the page and try again.",
                ),
            ),
            Self::NotFound => views::page_response(
                status,
                views::message_page(
                    "Not found",
                    "There is no such page, terminal, key or webhook on this license.",
                ),
            ),
            Self::Invalid(message) => views::page_response(status, views::message_page("Not accepted", message)),
            Self::Internal(id) => views::page_response(
                status,
                views::message_page(
                    "Something went wrong",
                    &format!("The dashboard could not do this. The server logged it with request id {id}."),
                ),
            ),
        }
    }
}
