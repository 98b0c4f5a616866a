//! OpenAPI 3.1 document of the REST API (being written).

/// The OpenAPI document.
pub fn document() -> serde_json::Value {
    serde_json::json!({ "openapi": "3.1.0", "info": { "title": "tradeterm REST API", "version": env!("CARGO_PKG_VERSION") }, "paths": {} })
}
