//! Scopes of credentials (`docs/security.md`, "Scoped keys"): what one REST
//! API key (or terminal key) may do within what its license's tier allows.
//!
//! A scope narrows, never widens: capabilities are a subset of the tier's,
//! terminals and symbols are allow-lists, trading limits cap what a live
//! call may do, and an expiry and source networks bound when and from where
//! the key works. Every check here is pure; the tool invocation path calls
//! them in one place so REST, MCP and the management routes cannot disagree.
//!
//! ```
//! use tradeterm_core::scope::{KeyScope, symbol_matches};
//! assert!(symbol_matches("EUR*", "EURUSD"));
//! assert!(!symbol_matches("EUR*", "GBPUSD"));
//! let scope: KeyScope = serde_json::from_str(r#"{"symbols": ["EURUSD"], "max_volume_per_order": 0.1}"#).unwrap();
//! assert!(scope.check_symbol("EURUSD").is_ok());
//! assert_eq!(scope.check_symbol("GBPUSD").unwrap_err().rule, "symbols");
//! assert_eq!(scope.check_volume(0.2).unwrap_err().rule, "max_volume_per_order");
//! ```

use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::license::Capability;

/// Most entries of each allow-list.
pub const MAX_LIST: usize = 100;
/// Longest symbol pattern.
pub const MAX_PATTERN_CHARS: usize = 32;

/// What a credential may do, within its license's tier. Every field is
/// optional; an absent field does not restrict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyScope {
    /// Capabilities: a subset of the tier's `read`, `analytics`, `trade`,
    /// and `audit` (reading the license's trade audit log, `docs/audit.md`),
    /// which no tier grants and a scope may add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<Capability>>,
    /// Terminal ids the key may address (REST API keys only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub terminals: Option<Vec<String>>,
    /// Symbols the key may use: exact names or patterns with `*` (`EUR*`, `*JPY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub symbols: Option<Vec<String>>,
    /// Largest volume of one order, lots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 1_000_000))]
    pub max_volume_per_order: Option<f64>,
    /// Largest open volume per symbol (open positions plus the new order), lots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 1_000_000))]
    pub max_open_volume_per_symbol: Option<f64>,
    /// Most live orders per UTC day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1_000_000))]
    pub max_live_orders_per_day: Option<u32>,
    /// No live trading at all: every trade call must be a dry run.
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run_only: bool,
    /// After this time (unix ms) the key is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Source networks (CIDR, `203.0.113.0/24`, `2001:db8::/32`, or one address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub networks: Option<Vec<String>>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Why a scope refuses a call: the rule (a field of [`KeyScope`]) and a
/// message naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeRefusal {
    /// The scope field that refuses (`symbols`, `max_volume_per_order`, …).
    pub rule: &'static str,
    /// For a person: what was refused and by which rule.
    pub message: String,
}

impl std::fmt::Display for ScopeRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn refuse(rule: &'static str, message: String) -> Result<(), ScopeRefusal> {
    Err(ScopeRefusal {
        rule,
        message: format!("refused by the key's scope (`{rule}`): {message}"),
    })
}

/// Whether `symbol` matches `pattern` (case-insensitive; `*` matches any run of characters).
pub fn symbol_matches(pattern: &str, symbol: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_uppercase().chars().collect();
    let s: Vec<char> = symbol.to_ascii_uppercase().chars().collect();
    // Iterative wildcard match with one backtrack point (linear enough for 32 characters).
    let (mut i, mut j) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while j < s.len() {
        if i < p.len() && p[i] != '*' && p[i] == s[j] {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(st) = star {
            i = st + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    while i < p.len() && p[i] == '*' {
        i += 1;
    }
    i == p.len()
}

/// A network of a scope: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    /// Parses `a.b.c.d/n`, `x::y/n` or a single address.
    pub fn parse(text: &str) -> Option<Self> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a.trim(), Some(p.trim())),
            None => (text.trim(), None),
        };
        let addr: IpAddr = addr.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => p.parse::<u8>().ok()?,
            Some(_) => return None,
            None => max,
        };
        (prefix <= max).then_some(Self { addr, prefix })
    }

    /// Whether `ip` is inside (an IPv4-mapped IPv6 address counts as its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = if self.prefix == 0 {
                    0
                } else {
                    u32::MAX << (32 - u32::from(self.prefix))
                };
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = if self.prefix == 0 {
                    0
                } else {
                    u128::MAX << (128 - u32::from(self.prefix))
                };
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl KeyScope {
    /// The scope stored with a key (its `permissions`): `Ok(None)` when it
    /// has none (or an unrestricted one); an error when it does not read
    /// back, which callers treat as a refusal (fail closed).
    pub fn from_permissions(stored: Option<&serde_json::Value>) -> Result<Option<Self>, String> {
        match stored {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => {
                let scope: Self = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
                Ok((!scope.is_unrestricted()).then_some(scope))
            }
        }
    }

    /// The scope a new key is created with, as stored (`permissions`):
    /// `Ok(None)` when it restricts nothing; an error naming the field when
    /// it is malformed, outside the tier, or already expired at `now_ms`.
    pub fn for_new_key(self, tier_caps: &[Capability], now_ms: i64) -> Result<Option<serde_json::Value>, String> {
        if self.is_unrestricted() {
            return Ok(None);
        }
        self.validate(tier_caps)?;
        if self.expires_at.is_some_and(|at| at <= now_ms) {
            return Err("`expires_at` is in the past".into());
        }
        serde_json::to_value(&self).map(Some).map_err(|e| e.to_string())
    }

    /// The scope a terminal key is created with, or changed to, as stored:
    /// as [`KeyScope::for_new_key`], and a scope naming `terminals` is
    /// refused (a terminal key is bound to its terminal).
    pub fn for_terminal_key(self, tier_caps: &[Capability], now_ms: i64) -> Result<Option<serde_json::Value>, String> {
        if self.terminals.is_some() {
            return Err("`terminals` does not apply to a terminal key: it is bound to its terminal".into());
        }
        self.for_new_key(tier_caps, now_ms)
    }

    /// Checks the scope itself against the tier's capabilities; answers a
    /// message naming the field at fault.
    pub fn validate(&self, tier_caps: &[Capability]) -> Result<(), String> {
        if let Some(caps) = &self.capabilities {
            if caps.is_empty() {
                return Err("`capabilities` must name at least one capability".into());
            }
            // `audit` is outside every tier: a scope may grant it on top.
            if let Some(c) = caps.iter().find(|c| !tier_caps.contains(c) && **c != Capability::Audit) {
                return Err(format!(
                    "`capabilities`: `{}` is not in the license's tier ({})",
                    c.as_str(),
                    tier_caps.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        let list = |name: &str, items: &Option<Vec<String>>| -> Result<(), String> {
            match items {
                Some(v) if v.is_empty() || v.len() > MAX_LIST => {
                    Err(format!("`{name}` must list 1 to {MAX_LIST} entries"))
                }
                _ => Ok(()),
            }
        };
        list("terminals", &self.terminals)?;
        list("symbols", &self.symbols)?;
        list("networks", &self.networks)?;
        for t in self.terminals.iter().flatten() {
            let ok =
                !t.is_empty() && t.len() <= 64 && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return Err(format!("`terminals`: `{t}` is not a terminal id"));
            }
        }
        for s in self.symbols.iter().flatten() {
            let ok = !s.is_empty()
                && s.chars().count() <= MAX_PATTERN_CHARS
                && s.chars().all(|c| c.is_ascii_alphanumeric() || "._#-+!*".contains(c));
            if !ok {
                return Err(format!(
                    "`symbols`: `{s}` is not a symbol or pattern (1-{MAX_PATTERN_CHARS} letters, digits, ._#-+! and *)"
                ));
            }
        }
        for n in self.networks.iter().flatten() {
            if Network::parse(n).is_none() {
                return Err(format!("`networks`: `{n}` is not an address or CIDR network"));
            }
        }
        for (name, v) in [
            ("max_volume_per_order", self.max_volume_per_order),
            ("max_open_volume_per_symbol", self.max_open_volume_per_symbol),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0 && v <= 1_000_000.0)
            {
                return Err(format!("`{name}` must be above 0 and at most 1 000 000 lots"));
            }
        }
        Ok(())
    }

    /// The capabilities a token for this key carries: the tier's, narrowed,
    /// and `audit` when the scope grants it (the one capability a scope adds:
    /// it only lets the key read the license's audit log).
    pub fn narrow(&self, tier_caps: &[Capability]) -> Vec<Capability> {
        match &self.capabilities {
            Some(caps) => {
                let mut out: Vec<Capability> = tier_caps
                    .iter()
                    .copied()
                    .filter(|c| caps.contains(c) && *c != Capability::Audit)
                    .collect();
                if caps.contains(&Capability::Audit) {
                    out.push(Capability::Audit);
                }
                out
            }
            None => tier_caps.to_vec(),
        }
    }

    /// Whether the scope restricts anything a call could hit.
    pub fn is_unrestricted(&self) -> bool {
        *self == Self::default()
    }

    /// The capability a tool needs.
    pub fn check_capability(&self, cap: Capability) -> Result<(), ScopeRefusal> {
        match &self.capabilities {
            Some(caps) if !caps.contains(&cap) => refuse(
                "capabilities",
                format!(
                    "the key may use {} only, not `{}`",
                    caps.iter()
                        .map(|c| format!("`{}`", c.as_str()))
                        .collect::<Vec<_>>()
                        .join(", "),
                    cap.as_str()
                ),
            ),
            _ => Ok(()),
        }
    }

    /// The time (unix ms) against the expiry.
    pub fn check_time(&self, now_ms: i64) -> Result<(), ScopeRefusal> {
        match self.expires_at {
            Some(at) if now_ms >= at => refuse("expires_at", format!("the key expired at {}", crate::time::to_iso(at))),
            _ => Ok(()),
        }
    }

    /// The source address against the networks (`None`: the address is not known, refused when networks are set).
    pub fn check_source(&self, source: Option<IpAddr>) -> Result<(), ScopeRefusal> {
        let Some(networks) = &self.networks else { return Ok(()) };
        let allowed = source.is_some_and(|ip| {
            networks
                .iter()
                .filter_map(|n| Network::parse(n))
                .any(|n| n.contains(ip))
        });
        if allowed {
            Ok(())
        } else {
            refuse(
                "networks",
                format!(
                    "the request comes from {}, outside the key's networks ({})",
                    source.map_or_else(|| "an unknown address".to_owned(), |ip| ip.to_string()),
                    networks.join(", ")
                ),
            )
        }
    }

    /// The terminal a call addresses.
    pub fn check_terminal(&self, terminal: &str) -> Result<(), ScopeRefusal> {
        match &self.terminals {
            Some(list) if !list.iter().any(|t| t == terminal) => refuse(
                "terminals",
                format!(
                    "terminal `{terminal}` is not in the key's terminals ({})",
                    list.join(", ")
                ),
            ),
            _ => Ok(()),
        }
    }

    /// A symbol a call uses.
    pub fn check_symbol(&self, symbol: &str) -> Result<(), ScopeRefusal> {
        match &self.symbols {
            Some(list) if !list.iter().any(|p| symbol_matches(p, symbol)) => refuse(
                "symbols",
                format!("`{symbol}` is not in the key's symbols ({})", list.join(", ")),
            ),
            _ => Ok(()),
        }
    }

    /// Whether the scope limits symbols at all.
    pub fn limits_symbols(&self) -> bool {
        self.symbols.is_some()
    }

    /// The volume of one order.
    pub fn check_volume(&self, volume: f64) -> Result<(), ScopeRefusal> {
        match self.max_volume_per_order {
            Some(max) if volume > max + 1e-9 => refuse(
                "max_volume_per_order",
                format!("{volume} lots is above the key's largest order of {max} lots"),
            ),
            _ => Ok(()),
        }
    }

    /// The open volume of a symbol after the order (`open`: lots open now).
    pub fn check_open_volume(&self, symbol: &str, open: f64, volume: f64) -> Result<(), ScopeRefusal> {
        match self.max_open_volume_per_symbol {
            Some(max) if open + volume > max + 1e-9 => refuse(
                "max_open_volume_per_symbol",
                format!(
                    "{symbol} would have {} lots open ({open} now + {volume}), above the key's {max} lots",
                    round8(open + volume)
                ),
            ),
            _ => Ok(()),
        }
    }

    /// A live call at all.
    pub fn check_live(&self) -> Result<(), ScopeRefusal> {
        if self.dry_run_only {
            refuse("dry_run_only", "the key may only run dry runs".into())
        } else {
            Ok(())
        }
    }

    /// The live orders of the day so far (`count`, this one not included).
    pub fn check_daily(&self, count: u64) -> Result<(), ScopeRefusal> {
        match self.max_live_orders_per_day {
            Some(max) if count >= u64::from(max) => refuse(
                "max_live_orders_per_day",
                format!("the key has placed its {max} live orders of today (UTC)"),
            ),
            _ => Ok(()),
        }
    }
}

/// The name under which revocation marks and rate-limit checks know one
/// generation of a credential's scope: the record id for generation 0
/// (every key before its first scope change), `{id}~{generation}` after.
/// A scope change marks the previous generation's name revoked, so that
/// tokens and cached exchanges carrying the old scope are refused (and
/// exchanged again) through the same path as revocations; a revocation
/// marks the record id and the current generation's name.
pub fn credential_mark(credential_id: &str, generation: u32) -> std::borrow::Cow<'_, str> {
    if generation == 0 {
        std::borrow::Cow::Borrowed(credential_id)
    } else {
        std::borrow::Cow::Owned(format!("{credential_id}~{generation}"))
    }
}

fn round8(x: f64) -> f64 {
    (x * 1e8).round() / 1e8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_like_globs() {
        for (p, s, want) in [
            ("EURUSD", "eurusd", true),
            ("EUR*", "EURUSD", true),
            ("EUR*", "EUR", true),
            ("*JPY", "USDJPY", true),
            ("*JPY", "USDJPYX", false),
            ("X*U*D", "XAUUSD", true),
            ("*", "US500", true),
            ("EUR*", "GBPEUR", false),
            ("US500", "US5000", false),
        ] {
            assert_eq!(symbol_matches(p, s), want, "{p} ~ {s}");
        }
    }

    #[test]
    fn networks_contain_their_addresses() {
        let n = Network::parse("203.0.113.0/24").unwrap();
        assert!(n.contains("203.0.113.7".parse().unwrap()));
        assert!(!n.contains("203.0.114.7".parse().unwrap()));
        assert!(n.contains("::ffff:203.0.113.9".parse().unwrap()), "IPv4-mapped");
        let one = Network::parse("127.0.0.1").unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        let v6 = Network::parse("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:1::5".parse().unwrap()));
        assert!(!v6.contains("2001:db9::5".parse().unwrap()));
        assert!(
            Network::parse("0.0.0.0/0")
                .unwrap()
                .contains("8.8.8.8".parse().unwrap())
        );
        for bad in ["10.0.0.0/33", "10.0.0/8", "x", "10.0.0.0/", "10.0.0.0/-1", "::/129"] {
            assert_eq!(Network::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn validation_names_the_field_and_narrowing_never_widens() {
        let tier = [Capability::Read, Capability::Analytics];
        let s = KeyScope {
            capabilities: Some(vec![Capability::Trade]),
            ..KeyScope::default()
        };
        assert!(s.validate(&tier).unwrap_err().contains("`trade`"));
        let s = KeyScope {
            capabilities: Some(vec![Capability::Read]),
            ..KeyScope::default()
        };
        s.validate(&tier).unwrap();
        assert_eq!(s.narrow(&tier), vec![Capability::Read]);
        assert_eq!(KeyScope::default().narrow(&tier), tier.to_vec());
        for (bad, field) in [
            (r#"{"symbols": []}"#, "symbols"),
            (r#"{"symbols": ["EUR USD"]}"#, "symbols"),
            (r#"{"networks": ["10.0.0.0/40"]}"#, "networks"),
            (r#"{"terminals": ["a b"]}"#, "terminals"),
            (r#"{"max_volume_per_order": 0}"#, "max_volume_per_order"),
        ] {
            let s: KeyScope = serde_json::from_str(bad).unwrap();
            assert!(s.validate(&tier).unwrap_err().contains(field), "{bad}");
        }
        assert!(serde_json::from_str::<KeyScope>(r#"{"colour": "red"}"#).is_err());
    }

    #[test]
    fn a_scope_may_add_audit_and_nothing_else() {
        let tier = [Capability::Read, Capability::Analytics, Capability::Trade];
        // `audit` on top of a subset of the tier.
        let s: KeyScope = serde_json::from_str(r#"{"capabilities": ["read", "audit"]}"#).unwrap();
        s.validate(&tier).unwrap();
        assert_eq!(s.narrow(&tier), vec![Capability::Read, Capability::Audit]);
        s.check_capability(Capability::Audit).unwrap();
        assert_eq!(s.check_capability(Capability::Trade).unwrap_err().rule, "capabilities");
        // `audit` alone: the audit log and nothing else.
        let only: KeyScope = serde_json::from_str(r#"{"capabilities": ["audit"]}"#).unwrap();
        assert_eq!(only.narrow(&tier), vec![Capability::Audit]);
        assert!(only.clone().for_new_key(&tier, 0).unwrap().is_some());
        assert_eq!(
            only.check_capability(Capability::Read).unwrap_err().rule,
            "capabilities"
        );
        // The whole tier and `audit`.
        let all: KeyScope =
            serde_json::from_str(r#"{"capabilities": ["read", "analytics", "trade", "audit"]}"#).unwrap();
        assert_eq!(all.narrow(&tier), [tier.as_slice(), &[Capability::Audit]].concat());
        // A terminal key may be scoped with it too.
        assert!(only.for_terminal_key(&tier, 0).unwrap().is_some());
        // Without it in the scope, no key holds `audit`, and the tier's other
        // capabilities are still refused outside the tier.
        assert!(!KeyScope::default().narrow(&tier).contains(&Capability::Audit));
        let read_only = [Capability::Read];
        let trade: KeyScope = serde_json::from_str(r#"{"capabilities": ["trade", "audit"]}"#).unwrap();
        assert!(trade.validate(&read_only).unwrap_err().contains("`trade`"));
    }

    #[test]
    fn a_terminal_key_scope_names_no_terminals_and_generations_have_their_own_marks() {
        let tier = [Capability::Read, Capability::Trade];
        let bound: KeyScope = serde_json::from_str(r#"{"terminals": ["t1"], "symbols": ["EURUSD"]}"#).unwrap();
        assert!(bound.for_terminal_key(&tier, 0).unwrap_err().contains("`terminals`"));
        let ok: KeyScope = serde_json::from_str(r#"{"symbols": ["EURUSD"], "max_volume_per_order": 0.1}"#).unwrap();
        assert!(ok.for_terminal_key(&tier, 0).unwrap().is_some());
        assert_eq!(KeyScope::default().for_terminal_key(&tier, 0).unwrap(), None);
        assert_eq!(credential_mark("tkey_1", 0), "tkey_1");
        assert_eq!(credential_mark("tkey_1", 3), "tkey_1~3");
    }

    #[test]
    fn each_rule_refuses_by_name() {
        let s: KeyScope = serde_json::from_str(
            r#"{"capabilities": ["read"], "terminals": ["t1"], "symbols": ["EUR*"], "max_volume_per_order": 0.1,
                "max_open_volume_per_symbol": 0.3, "max_live_orders_per_day": 2, "dry_run_only": true,
                "expires_at": 1000, "networks": ["10.0.0.0/8"]}"#,
        )
        .unwrap();
        assert_eq!(s.check_capability(Capability::Trade).unwrap_err().rule, "capabilities");
        s.check_capability(Capability::Read).unwrap();
        assert_eq!(s.check_terminal("t2").unwrap_err().rule, "terminals");
        s.check_terminal("t1").unwrap();
        assert_eq!(s.check_symbol("GBPUSD").unwrap_err().rule, "symbols");
        s.check_symbol("EURJPY").unwrap();
        assert_eq!(s.check_volume(0.2).unwrap_err().rule, "max_volume_per_order");
        s.check_volume(0.1).unwrap();
        assert_eq!(
            s.check_open_volume("EURUSD", 0.25, 0.1).unwrap_err().rule,
            "max_open_volume_per_symbol"
        );
        s.check_open_volume("EURUSD", 0.2, 0.1).unwrap();
        assert_eq!(s.check_daily(2).unwrap_err().rule, "max_live_orders_per_day");
        s.check_daily(1).unwrap();
        assert_eq!(s.check_live().unwrap_err().rule, "dry_run_only");
        assert_eq!(s.check_time(1000).unwrap_err().rule, "expires_at");
        s.check_time(999).unwrap();
        assert_eq!(
            s.check_source(Some("11.0.0.1".parse().unwrap())).unwrap_err().rule,
            "networks"
        );
        assert_eq!(s.check_source(None).unwrap_err().rule, "networks");
        s.check_source(Some("10.2.3.4".parse().unwrap())).unwrap();
        assert!(s.check_symbol("GBPUSD").unwrap_err().message.contains("`symbols`"));
        let open = KeyScope::default();
        assert!(open.is_unrestricted());
        open.check_live().unwrap();
        open.check_source(None).unwrap();
    }
}
