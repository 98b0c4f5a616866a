//! Credential plumbing shared by every HTTP surface (gateway, REST, MCP).

/// Longest credential accepted in an `Authorization` header.
pub const MAX_CREDENTIAL_LEN: usize = 8192;

/// The credential of an `Authorization: Bearer <credential>` header value:
/// the scheme is case-insensitive, surrounding blanks are ignored, and an
/// empty or oversized credential is no credential.
pub fn parse_bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty() && token.len() <= MAX_CREDENTIAL_LEN).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parsing() {
        assert_eq!(parse_bearer("Bearer abc"), Some("abc"));
        assert_eq!(parse_bearer("bearer  tt_term_x "), Some("tt_term_x"));
        assert_eq!(parse_bearer("Basic abc"), None);
        assert_eq!(parse_bearer("Bearer "), None);
        assert_eq!(parse_bearer("Bearerabc"), None);
        assert_eq!(
            parse_bearer(&format!("Bearer {}", "x".repeat(MAX_CREDENTIAL_LEN + 1))),
            None
        );
    }
}
