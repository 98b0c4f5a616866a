//! The harness shared by the end-to-end test binaries (`tests/e2e`, and
//! `tests/external` for what runs the built binary or other programs).
//!
//! - [`stack`]: the single-node stack on port 0 ([`spawn`], [`Options`],
//!   [`TestStack`]), with simulated terminals over the real agent protocol.
//! - [`client`]: a typed client of the REST API, the management routes and
//!   the gateway's dashboard ([`Api`]): one method per route the tests use,
//!   answers as [`ApiResult`] (the envelope's `data`, or an [`ApiFailure`]).
//!   A body that is not JSON, or not the spec's envelope, fails the test
//!   with the body shown.
//! - [`approx`]: the one approximate equality ([`close_to`]) with an
//!   explicit relative tolerance, and its JSON forms.
//! - [`wait`]: [`wait_until`], polling with a deadline; a test sleeps only
//!   where the elapsed time is what it tests.
//! - [`data`]: tool outputs turned into `tradeterm_core` values.
//! - [`mcp`]: an rmcp client of the stack's MCP endpoint.
//! - [`process`]: the built `tradeterm` binary without the machine's
//!   configuration, free ports, children killed on drop.
//!
//! To add a test: put it in the module of its area under `tests/e2e/` (or
//! a new module listed in `tests/e2e/main.rs`), start a stack with
//! `spawn(Options { sims: 1, ..Options::default() })`, call the routes
//! through `t.api()` / `t.tool(..)`, and compare with `tradeterm_core` run on
//! the data fetched through the same client.

#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a part of the harness and of its re-exports"
)]

pub mod approx;
pub mod client;
pub mod data;
pub mod mcp;
pub mod process;
pub mod stack;
pub mod wait;

pub use approx::{assert_close, assert_json_close, assert_json_contains, close_to};
pub use client::{Api, ApiFailure, ApiResult, Expect, json_body};
pub use stack::{Options, TestStack, WEDNESDAY_NOON, spawn, spawn_with};
pub use wait::wait_until;
