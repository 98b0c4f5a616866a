//! A key's scope as the dashboard's forms hold it ([`ScopeForm`]), and in
//! words ([`describe`]).
//!
//! The form is only a way of writing a `tradeterm_core::scope::KeyScope`:
//! [`ScopeForm::permissions`] turns it into one and validates it exactly as
//! the gateway's management routes do (`KeyScope::for_new_key` or
//! `for_terminal_key` against the tier's capabilities, the message prefixed
//! `scope:` and naming the field), so the page and the routes cannot accept
//! different scopes. Fields left empty do not restrict; every capability of
//! the tier ticked means "no capability restriction".

use serde::Deserialize;
use serde_json::Value;
use tradeterm_core::license::Capability;
use tradeterm_core::scope::KeyScope;

/// Which kind of key a scope is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    /// A REST API key: may name `terminals`.
    Api,
    /// A terminal key: bound to its terminal, no `terminals`.
    Terminal,
}

/// The scope fields of a form, as typed (every one a string; a checkbox is
/// present when ticked).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ScopeForm {
    /// Present on a form that shows the capability checkboxes (so that
    /// none ticked is told from a form without them).
    #[serde(default)]
    pub caps_shown: Option<String>,
    #[serde(default)]
    pub cap_read: Option<String>,
    #[serde(default)]
    pub cap_analytics: Option<String>,
    #[serde(default)]
    pub cap_trade: Option<String>,
    /// `audit`, which no tier holds and a scope may add: reading the
    /// license's trade audit log.
    #[serde(default)]
    pub cap_audit: Option<String>,
    /// Terminal ids, separated by commas, spaces or lines.
    #[serde(default)]
    pub terminals: String,
    /// Symbols or patterns (`EUR*`).
    #[serde(default)]
    pub symbols: String,
    #[serde(default)]
    pub max_volume_per_order: String,
    #[serde(default)]
    pub max_open_volume_per_symbol: String,
    #[serde(default)]
    pub max_live_orders_per_day: String,
    #[serde(default)]
    pub dry_run_only: Option<String>,
    /// ISO 8601 (UTC when no offset is given; `datetime-local` inputs give none).
    #[serde(default)]
    pub expires_at: String,
    /// CIDR networks or single addresses.
    #[serde(default)]
    pub networks: String,
}

fn list(text: &str) -> Option<Vec<String>> {
    let items: Vec<String> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    (!items.is_empty()).then_some(items)
}

fn number<T: std::str::FromStr>(name: &str, text: &str, what: &str) -> Result<Option<T>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| format!("scope: `{name}` must be {what}"))
}

/// A time typed in the form as unix ms: RFC 3339, or `YYYY-MM-DDTHH:MM[:SS]`
/// (a `datetime-local` input) read as UTC.
pub(crate) fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_millis());
    }
    [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| chrono::NaiveDateTime::parse_from_str(text, f).ok())
    .map(|t| t.and_utc().timestamp_millis())
}

/// A unix-ms time as the form's `datetime-local` value (UTC).
fn form_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(String::new, |t| t.format("%Y-%m-%dT%H:%M").to_string())
}

impl ScopeForm {
    /// The form's scope as it would be stored (`None`: it restricts
    /// nothing), validated for a key of `kind` within `tier_caps` at
    /// `now_ms`; else the message naming the field, as the gateway says it.
    pub(crate) fn permissions(
        &self,
        kind: KeyKind,
        tier_caps: &[Capability],
        now_ms: i64,
    ) -> Result<Option<Value>, String> {
        let scope = self.scope(tier_caps)?;
        let checked = match kind {
            KeyKind::Api => scope.for_new_key(tier_caps, now_ms),
            KeyKind::Terminal => scope.for_terminal_key(tier_caps, now_ms),
        };
        checked.map_err(|m| format!("scope: {m}"))
    }

    fn scope(&self, tier_caps: &[Capability]) -> Result<KeyScope, String> {
        let ticked: Vec<Capability> = [
            (Capability::Read, &self.cap_read),
            (Capability::Analytics, &self.cap_analytics),
            (Capability::Trade, &self.cap_trade),
        ]
        .into_iter()
        .filter(|(_, v)| v.is_some())
        .map(|(c, _)| c)
        .collect();
        // Every capability of the tier ticked and not `audit` (or a form
        // without the checkboxes): no capability restriction. `audit` is
        // added on top of what is ticked.
        let all = tier_caps.iter().all(|c| ticked.contains(c));
        let audit = self.cap_audit.is_some();
        let capabilities = (self.caps_shown.is_some() && (!all || audit)).then(|| {
            let mut caps = ticked;
            if audit {
                caps.push(Capability::Audit);
            }
            caps
        });
        let expires_at = match self.expires_at.trim() {
            "" => None,
            t => Some(
                parse_time(t)
                    .ok_or_else(|| "scope: `expires_at` must be a date and time (2026-12-31T18:00, UTC)".to_owned())?,
            ),
        };
        Ok(KeyScope {
            capabilities,
            terminals: list(&self.terminals),
            symbols: list(&self.symbols),
            max_volume_per_order: number("max_volume_per_order", &self.max_volume_per_order, "a number of lots")?,
            max_open_volume_per_symbol: number(
                "max_open_volume_per_symbol",
                &self.max_open_volume_per_symbol,
                "a number of lots",
            )?,
            max_live_orders_per_day: number(
                "max_live_orders_per_day",
                &self.max_live_orders_per_day,
                "a whole number from 0 to 4294967295",
            )?,
            dry_run_only: self.dry_run_only.is_some(),
            expires_at,
            networks: list(&self.networks),
        })
    }

    /// The form filled with a stored scope (`None` or unreadable: empty,
    /// every capability of the tier ticked).
    pub(crate) fn of(permissions: Option<&Value>, tier_caps: &[Capability]) -> Self {
        let scope = KeyScope::from_permissions(permissions)
            .ok()
            .flatten()
            .unwrap_or_default();
        let caps = scope.capabilities.clone().unwrap_or_else(|| tier_caps.to_vec());
        let tick = |c: Capability| caps.contains(&c).then(|| "on".to_owned());
        let join = |v: &Option<Vec<String>>| v.as_ref().map(|v| v.join(", ")).unwrap_or_default();
        let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        Self {
            caps_shown: Some("1".to_owned()),
            cap_read: tick(Capability::Read),
            cap_analytics: tick(Capability::Analytics),
            cap_trade: tick(Capability::Trade),
            cap_audit: tick(Capability::Audit),
            terminals: join(&scope.terminals),
            symbols: join(&scope.symbols),
            max_volume_per_order: num(scope.max_volume_per_order),
            max_open_volume_per_symbol: num(scope.max_open_volume_per_symbol),
            max_live_orders_per_day: scope.max_live_orders_per_day.map(|v| v.to_string()).unwrap_or_default(),
            dry_run_only: scope.dry_run_only.then(|| "on".to_owned()),
            expires_at: scope.expires_at.map(form_time).unwrap_or_default(),
            networks: join(&scope.networks),
        }
    }

    /// Whether capability `c` is ticked.
    pub(crate) fn ticked(&self, c: Capability) -> bool {
        match c {
            Capability::Read => self.cap_read.is_some(),
            Capability::Analytics => self.cap_analytics.is_some(),
            Capability::Trade => self.cap_trade.is_some(),
            Capability::Audit => self.cap_audit.is_some(),
        }
    }
}

/// A stored scope in words, one phrase per rule; empty when the key may do
/// everything its tier allows; `Err` when it does not read back (the
/// gateway then refuses the key).
pub(crate) fn describe(permissions: Option<&Value>) -> Result<Vec<String>, String> {
    let Some(scope) = KeyScope::from_permissions(permissions)? else {
        return Ok(Vec::new());
    };
    let mut words = Vec::new();
    if let Some(caps) = &scope.capabilities {
        let names: Vec<&str> = caps.iter().map(|c| c.as_str()).collect();
        words.push(format!("capabilities: {} only", names.join(", ")));
    }
    if let Some(t) = &scope.terminals {
        words.push(format!("terminals: {}", t.join(", ")));
    }
    if let Some(s) = &scope.symbols {
        words.push(format!("symbols: {}", s.join(", ")));
    }
    if let Some(v) = scope.max_volume_per_order {
        words.push(format!("at most {v} lots per order"));
    }
    if let Some(v) = scope.max_open_volume_per_symbol {
        words.push(format!("at most {v} lots open per symbol"));
    }
    if let Some(v) = scope.max_live_orders_per_day {
        words.push(format!("at most {v} live orders per UTC day"));
    }
    if scope.dry_run_only {
        words.push("dry runs only (no live trading)".to_owned());
    }
    if let Some(at) = scope.expires_at {
        words.push(format!("expires {}", crate::views::time_ms(at)));
    }
    if let Some(n) = &scope.networks {
        words.push(format!("from networks: {}", n.join(", ")));
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRO: &[Capability] = &[Capability::Read, Capability::Analytics, Capability::Trade];

    fn form() -> ScopeForm {
        ScopeForm {
            caps_shown: Some("1".into()),
            cap_read: Some("on".into()),
            cap_analytics: Some("on".into()),
            cap_trade: Some("on".into()),
            ..ScopeForm::default()
        }
    }

    #[test]
    fn an_empty_form_restricts_nothing() {
        assert_eq!(form().permissions(KeyKind::Api, PRO, 0), Ok(None));
        assert_eq!(ScopeForm::default().permissions(KeyKind::Api, PRO, 0), Ok(None));
    }

    #[test]
    fn fields_become_the_scope() {
        let f = ScopeForm {
            cap_trade: None,
            terminals: "term_a, term_b".into(),
            symbols: "EUR*\nGBPUSD".into(),
            max_volume_per_order: "0.1".into(),
            max_open_volume_per_symbol: " 1 ".into(),
            max_live_orders_per_day: "5".into(),
            dry_run_only: Some("on".into()),
            expires_at: "2030-01-02T03:04".into(),
            networks: "10.0.0.0/8 2001:db8::/32".into(),
            ..form()
        };
        let stored = f.permissions(KeyKind::Api, PRO, 0).unwrap().unwrap();
        assert_eq!(
            stored,
            serde_json::json!({
                "capabilities": ["read", "analytics"], "terminals": ["term_a", "term_b"],
                "symbols": ["EUR*", "GBPUSD"], "max_volume_per_order": 0.1, "max_open_volume_per_symbol": 1.0,
                "max_live_orders_per_day": 5, "dry_run_only": true, "expires_at": 1_893_553_440_000_i64,
                "networks": ["10.0.0.0/8", "2001:db8::/32"]
            })
        );
        // Read back into the form, and to the same scope again.
        let again = ScopeForm::of(Some(&stored), PRO);
        assert_eq!(again.permissions(KeyKind::Api, PRO, 0).unwrap(), Some(stored.clone()));
        let words = describe(Some(&stored)).unwrap();
        assert_eq!(words[0], "capabilities: read, analytics only");
        assert!(words.contains(&"at most 0.1 lots per order".to_owned()), "{words:?}");
        assert!(words.contains(&"expires 2030-01-02 03:04 UTC".to_owned()), "{words:?}");
    }

    #[test]
    fn audit_is_added_on_top_and_read_back() {
        // Everything the tier allows, and the audit log.
        let all = ScopeForm {
            cap_audit: Some("on".into()),
            ..form()
        };
        let stored = all.permissions(KeyKind::Api, PRO, 0).unwrap().unwrap();
        assert_eq!(
            stored,
            serde_json::json!({ "capabilities": ["read", "analytics", "trade", "audit"] })
        );
        let again = ScopeForm::of(Some(&stored), PRO);
        assert!(again.ticked(Capability::Audit) && again.ticked(Capability::Trade));
        assert_eq!(again.permissions(KeyKind::Api, PRO, 0).unwrap(), Some(stored));
        // The audit log only.
        let only = ScopeForm {
            cap_read: None,
            cap_analytics: None,
            cap_trade: None,
            cap_audit: Some("on".into()),
            ..form()
        };
        let stored = only.permissions(KeyKind::Terminal, PRO, 0).unwrap().unwrap();
        assert_eq!(stored, serde_json::json!({ "capabilities": ["audit"] }));
        assert_eq!(describe(Some(&stored)).unwrap()[0], "capabilities: audit only");
        let again = ScopeForm::of(Some(&stored), PRO);
        assert!(again.ticked(Capability::Audit) && !again.ticked(Capability::Read));
        // Not ticked: an unscoped form stays unscoped.
        assert!(!ScopeForm::of(None, PRO).ticked(Capability::Audit));
    }

    #[test]
    fn bad_fields_are_named() {
        let bad = |f: ScopeForm, kind| f.permissions(kind, PRO, 0).unwrap_err();
        let none = ScopeForm {
            cap_read: None,
            cap_analytics: None,
            cap_trade: None,
            ..form()
        };
        assert!(bad(none, KeyKind::Api).contains("`capabilities`"));
        let volume = ScopeForm {
            max_volume_per_order: "lots".into(),
            ..form()
        };
        assert_eq!(
            bad(volume, KeyKind::Api),
            "scope: `max_volume_per_order` must be a number of lots"
        );
        let zero = ScopeForm {
            max_volume_per_order: "0".into(),
            ..form()
        };
        assert!(bad(zero, KeyKind::Api).starts_with("scope: `max_volume_per_order`"));
        let net = ScopeForm {
            networks: "10.0.0.0/33".into(),
            ..form()
        };
        assert!(bad(net, KeyKind::Api).contains("`networks`"));
        let terminals = ScopeForm {
            terminals: "term_a".into(),
            ..form()
        };
        assert!(bad(terminals, KeyKind::Terminal).contains("`terminals`"));
        let past = ScopeForm {
            expires_at: "2020-01-01T00:00".into(),
            ..form()
        };
        assert!(
            form()
                .permissions(KeyKind::Api, PRO, 1_700_000_000_000)
                .unwrap()
                .is_none()
        );
        assert!(
            past.permissions(KeyKind::Api, PRO, 1_700_000_000_000)
                .unwrap_err()
                .contains("`expires_at`")
        );
        let when = ScopeForm {
            expires_at: "tomorrow".into(),
            ..form()
        };
        assert!(bad(when, KeyKind::Api).contains("`expires_at`"));
    }

    #[test]
    fn an_unreadable_scope_is_said_so() {
        assert!(describe(Some(&serde_json::json!({ "nonsense": 1 }))).is_err());
        assert_eq!(describe(None), Ok(Vec::new()));
    }
}
