//! # tradeterm-protocol
//!
//! The versioned JSON protocol spoken between the gateway and terminal-side
//! agents (MetaTrader expert advisors, bridges, the simulated terminal), and
//! the [`dispatch::Dispatch`] interface through which the REST and MCP
//! adapters reach terminals.
//!
//! The message model ([`agent`]) is independent of its transport: the gateway
//! carries it over WebSocket text frames and over an HTTP long-poll binding
//! ([`poll`]) for agents that only have plain HTTP. `docs/agent-protocol.md`
//! documents it for authors of agents in other languages.
//!
//! **Architecture invariant:** this crate holds types and (behind the
//! `client` feature) the HTTP clients of the gateway: its dispatch route
//! (`http_client`) and the agents' long-poll binding
//! (`poll::PollClient`). It knows nothing of the gateway's internals, the
//! store or any web framework.

pub mod agent;
pub mod auth;
#[cfg(feature = "client")]
mod channel;
pub mod dispatch;
#[cfg(feature = "client")]
pub mod http_client;
pub mod poll;
#[cfg(feature = "jwt")]
pub mod token;
mod wire;

pub use agent::{AgentFrame, Command, CommandResult, ErrorBody, Event, GatewayFrame, Hello, PROTOCOL_VERSION};
pub use dispatch::{Dispatch, DispatchError, TerminalStatus};
