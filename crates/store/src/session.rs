//! Sessions of the dashboard web page (`crates/dashboard`): the
//! [`SessionStore`] section of the store, a supertrait of [`crate::Store`].
//!
//! A license owner signs in with the master key and receives a random session
//! token (`tt_dash_…`, 32 bytes from the OS CSPRNG) in an `HttpOnly` cookie.
//! Only the token's SHA-256 is stored, with the license and an expiry; the
//! dashboard moves the expiry forward while the owner is active and ends the
//! session on sign-out by deleting its row, so a signed-out cookie is dead at
//! once on every instance sharing the database.
//!
//! **Invariants:** the token is never stored or logged; a session resolves to
//! its own license only, and never to a disabled license or after its expiry.

use async_trait::async_trait;

use crate::{License, Secret, StoreResult};

/// Prefix of dashboard session tokens.
pub const SESSION_TOKEN_PREFIX: &str = "tt_dash_";

/// A live dashboard session, resolved from its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardSession {
    /// The license the session acts for (enabled).
    pub license: License,
    /// When the owner signed in, unix ms.
    pub created_at: i64,
    /// When the session ends unless extended, unix ms (in the future).
    pub expires_at: i64,
}

/// Persistence of dashboard sessions.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Starts a session of the license that lasts until `expires_at` (unix
    /// ms, in the future) and returns its token, to be handed to the owner
    /// once (as a cookie). Expired sessions of every license are deleted on
    /// the way. An unknown license is [`crate::StoreError::NotFound`].
    async fn create_dashboard_session(&self, license_id: &str, expires_at: i64) -> StoreResult<Secret>;
    /// The session of this token, if it exists, has not expired and its
    /// license is enabled.
    async fn dashboard_session(&self, token: &str) -> StoreResult<Option<DashboardSession>>;
    /// Moves a live session's expiry forward to `expires_at` (never back, and
    /// never revives an expired or ended session). `Ok(false)` when nothing
    /// changed.
    async fn extend_dashboard_session(&self, token: &str, expires_at: i64) -> StoreResult<bool>;
    /// Ends the session (sign-out): its token no longer resolves anywhere.
    /// `Ok(false)` when there was no such session.
    async fn end_dashboard_session(&self, token: &str) -> StoreResult<bool>;
}
