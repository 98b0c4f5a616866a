//! Interactive API reference served by the binary (being written).

use actix_web::web;

/// Registers the docs routes.
pub fn configure(_cfg: &mut web::ServiceConfig) {}
