//! Input validation. Refusals are [`StoreError::Invalid`] with a message that
//! names the field and never repeats secret material.

use crate::{StoreError, StoreResult, TerminalInfo};

/// Longest name or label, in characters.
pub(super) const MAX_NAME_CHARS: usize = 100;
/// Longest serialized journal body, in bytes.
pub(super) const MAX_JOURNAL_BODY_BYTES: usize = 64 * 1024;
/// Longest idempotency key, request hash, fingerprint or reported string.
pub(super) const MAX_TOKEN_CHARS: usize = 255;

fn invalid(msg: impl Into<String>) -> StoreError {
    StoreError::Invalid(msg.into())
}

/// A display name or label: 1..=100 characters, not blank, no control characters.
pub(super) fn name(field: &str, value: &str) -> StoreResult<()> {
    if value.trim().is_empty() {
        return Err(invalid(format!("{field} must not be empty")));
    }
    if value.chars().count() > MAX_NAME_CHARS {
        return Err(invalid(format!("{field} must be at most {MAX_NAME_CHARS} characters")));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(format!("{field} must not contain control characters")));
    }
    Ok(())
}

/// An opaque token (idempotency key, request hash, fingerprint): 1..=255 characters.
pub(super) fn token(field: &str, value: &str) -> StoreResult<()> {
    if value.is_empty() {
        return Err(invalid(format!("{field} must not be empty")));
    }
    if value.chars().count() > MAX_TOKEN_CHARS {
        return Err(invalid(format!("{field} must be at most {MAX_TOKEN_CHARS} characters")));
    }
    Ok(())
}

/// Serializes a journal body, refusing one larger than 64 KiB.
pub(super) fn journal_body(body: &serde_json::Value) -> StoreResult<String> {
    let text = serde_json::to_string(body).map_err(|e| invalid(format!("journal body: {e}")))?;
    if text.len() > MAX_JOURNAL_BODY_BYTES {
        return Err(invalid(format!(
            "journal body is {} bytes serialized; at most {MAX_JOURNAL_BODY_BYTES} allowed",
            text.len()
        )));
    }
    Ok(text)
}

/// Reported terminal details: strings of at most 255 characters, a login that fits in i64.
pub(super) fn terminal_info(info: &TerminalInfo) -> StoreResult<i64> {
    for (field, value) in [
        ("platform", &info.platform),
        ("account_server", &info.account_server),
        ("account_currency", &info.account_currency),
        ("trade_mode", &info.trade_mode),
    ] {
        if value.chars().count() > MAX_TOKEN_CHARS {
            return Err(invalid(format!("{field} must be at most {MAX_TOKEN_CHARS} characters")));
        }
    }
    i64::try_from(info.account_login).map_err(|_| invalid("account_login is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(name("label", "a").is_ok());
        assert!(name("label", &"é".repeat(100)).is_ok());
        assert!(name("label", &"é".repeat(101)).is_err());
        assert!(name("label", "").is_err());
        assert!(name("label", "   ").is_err());
        assert!(name("label", "a\nb").is_err());
    }

    #[test]
    fn journal_bodies() {
        let ok = serde_json::Value::String("x".repeat(MAX_JOURNAL_BODY_BYTES - 2));
        assert_eq!(journal_body(&ok).unwrap().len(), MAX_JOURNAL_BODY_BYTES);
        let big = serde_json::Value::String("x".repeat(MAX_JOURNAL_BODY_BYTES - 1));
        assert!(matches!(journal_body(&big), Err(StoreError::Invalid(_))));
    }

    #[test]
    fn tokens() {
        assert!(token("key", "k").is_ok());
        assert!(token("key", "").is_err());
        assert!(token("key", &"k".repeat(256)).is_err());
    }
}
