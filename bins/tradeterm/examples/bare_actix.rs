//! Baseline for `cargo xtask bench rest`: a bare actix-web JSON handler with
//! the same worker count as the REST API, answering a tick-shaped body with
//! no auth, no rate limit and no dispatch.

use actix_web::{App, HttpResponse, HttpServer, web};

/// The same allocator as the servers it is compared with, so that the ratio
/// measures the request path rather than the allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(4100);
    HttpServer::new(|| {
        App::new().route(
            "/bare",
            web::get().to(|| async {
                HttpResponse::Ok().json(serde_json::json!({
                    "data": { "symbol": "EURUSD", "bid": 1.08412, "ask": 1.08418, "time": "2026-11-18T12:00:00.123Z" }
                }))
            }),
        )
    })
    .workers(2)
    .bind(("127.0.0.1", port))?
    .run()
    .await
}
