//! License tiers and the capabilities they grant (spec §5.7).
//!
//! # Example
//!
//! ```
//! use tradeterm_core::license::{Capability, Tier};
//!
//! let tier = Tier::parse("Pro").ok_or("unknown tier")?;
//! assert!(tier.allows(Capability::Trade));
//! assert!(!Tier::Free.allows(Capability::Trade));
//! assert!(Tier::Free.allows(Capability::Analytics));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// License tier (spec §5.7, §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Read and analytics only.
    Free,
    /// Adds trading.
    Pro,
    /// Pro for teams.
    Team,
    /// Everything, highest limits.
    Enterprise,
}

impl Tier {
    /// Every tier, lowest first.
    pub const ALL: [Tier; 4] = [Tier::Free, Tier::Pro, Tier::Team, Tier::Enterprise];

    /// Lower-case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Free => "free",
            Self::Pro => "pro",
            Self::Team => "team",
            Self::Enterprise => "enterprise",
        }
    }

    /// Parses a lower-case name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s.trim()))
    }

    /// Capabilities the tier grants: `read` and `analytics` for all, `trade` from Pro up.
    pub fn capabilities(self) -> &'static [Capability] {
        match self {
            Self::Free => &[Capability::Read, Capability::Analytics],
            _ => &[Capability::Read, Capability::Analytics, Capability::Trade],
        }
    }

    /// Whether the tier grants `cap`.
    pub fn allows(self, cap: Capability) -> bool {
        self.capabilities().contains(&cap)
    }
}

/// Capability gating a tool or endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    /// Read account and market data.
    Read,
    /// Server-side analytics.
    Analytics,
    /// Trade-affecting operations.
    Trade,
    /// Reading the trade audit log (`docs/audit.md`). No tier grants it to
    /// every credential: the master key holds it, and a key scoped with it.
    Audit,
}

impl Capability {
    /// Lower-case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Analytics => "analytics",
            Self::Trade => "trade",
            Self::Audit => "audit",
        }
    }

    /// Parses a lower-case name.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Read, Self::Analytics, Self::Trade, Self::Audit]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}
