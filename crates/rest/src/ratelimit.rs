//! Per-license rate limiting (spec §8). The limiter lives in
//! [`tradeterm_tools::ratelimit`], shared with the MCP adapter (which counts
//! in its own `mcp` bucket); this module re-exports it for the REST API.

pub use tradeterm_tools::ratelimit::*;
