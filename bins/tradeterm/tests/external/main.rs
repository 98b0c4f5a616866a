//! Tests that run the built `tradeterm` binary or other programs: the local
//! commands (`cli`), the agent conformance kit (`agent_check`), the
//! MetaTrader agents compiled with g++ (`mql_agents`), `tradeterm serve` as a
//! user starts it (`serve_first_start`), its JSON logs (`json_logs`), the
//! stdio MCP connector driven by the official Python SDK (`connect`), live
//! MCP trades confirmed with the SDK's elicitation callback (`mcp_confirm`),
//! schemathesis over the served OpenAPI document (`schemathesis`), a
//! Python client generated from it (`python_client`) and webhook deliveries
//! across a `kill -9` of `tradeterm serve` (`webhook_kill`).
//!
//! Kept apart from `tests/e2e` so that these children (compilers,
//! interpreters, whole servers) do not compete for the CPU with the
//! in-process tests' timing, and so that the two test crates build in
//! parallel. They share the harness of `tests/harness/`.

#[path = "../harness/mod.rs"]
mod harness;

mod agent_check;
mod cli;
mod connect;
mod dashboard;
mod inspector;
mod json_logs;
mod mcp_confirm;
mod mql_agents;
mod python_client;
mod schemathesis;
mod serve_first_start;
mod webhook_kill;
