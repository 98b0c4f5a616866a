//! End-to-end tests of the single-node stack in process: the REST API, MCP,
//! the gateway's routes and the tools, over the real agent protocol with
//! simulated terminals, SQLite, and the machine's Redis and PostgreSQL where
//! a test says so.
//!
//! One test binary, so the whole stack is linked once; one module per area,
//! each test named `module::test` (`cargo test -p tradeterm --test e2e
//! rest_api::` runs one area). The shared harness (`tests/harness/`) starts
//! the stack on port 0 and holds the typed client, the approximate equality
//! and the polling helper; see its module docs for how to add a test.
//!
//! Tests that run the built binary or other programs are in `tests/external`.

#[path = "../harness/mod.rs"]
mod harness;

mod access_limits;
mod alert_rules_tools;
mod alerts_tools;
mod analysis_tools;
mod audit_log;
mod backtest_tool;
mod bar_events;
mod calendar_fallback;
mod calendar_tools;
mod coaching_tools;
mod cost_tools;
mod coverage_tools;
mod equity_guard_tools;
mod etf_flows_tool;
mod event_analysis_tools;
mod events_stream;
mod gateway_manage;
mod macro_tools;
mod managed_exits;
mod mcp;
mod mcp_confirm;
mod mcp_resources;
mod news_tool;
mod observability;
mod order_management;
mod portfolio_tools;
mod prop_firm_tools;
mod rest_api;
mod scoped_keys;
mod stack;
mod swarm;
mod tool_inputs;
mod webhooks;
