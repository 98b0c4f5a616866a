//! Secret generation and hashing.
//!
//! Every secret is 32 random bytes from the operating system's CSPRNG,
//! URL-safe base64 without padding, behind a prefix that says what it is:
//! `svc_api_` (REST API key), `tt_term_` (terminal key), `tt_lic_` (master
//! license key). Only the SHA-256 of the whole string is stored; secrets are
//! high-entropy, so a fast hash suffices and lookups can be indexed.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Prefix of REST API keys (spec §2).
pub const API_KEY_PREFIX: &str = "svc_api_";
/// Prefix of terminal keys.
pub const TERMINAL_KEY_PREFIX: &str = "tt_term_";
/// Prefix of master license keys.
pub const LICENSE_KEY_PREFIX: &str = "tt_lic_";

/// A plaintext secret, shown to its owner once. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a string.
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// The plaintext; call only to hand it to its owner.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Generates a new secret with `prefix` and 32 random bytes.
pub fn generate(prefix: &str) -> Secret {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    Secret(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// A random id with a prefix (`lic_`, `term_`, `key_`, `jrn_`): 16 random bytes in hex.
pub fn new_id(prefix: &str) -> String {
    let mut bytes = [0u8; 12];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

/// SHA-256 of the key, lower-case hex.
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Compares two hex digests in constant time.
pub fn hashes_equal(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The displayable prefix of a key: its kind prefix plus 4 characters.
pub fn display_prefix(key: &str) -> String {
    let cut = key.find('_').map(|_| {
        // prefix ends after the last '_' of the known prefixes
        [API_KEY_PREFIX, TERMINAL_KEY_PREFIX, LICENSE_KEY_PREFIX]
            .iter()
            .find(|p| key.starts_with(*p))
            .map(|p| p.len())
            .unwrap_or(0)
    });
    let start = cut.unwrap_or(0);
    key.chars().take(start + 4).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_prefix_and_entropy() {
        let a = generate(API_KEY_PREFIX);
        let b = generate(API_KEY_PREFIX);
        assert!(a.expose().starts_with("svc_api_"));
        assert_eq!(a.expose().len(), API_KEY_PREFIX.len() + 43);
        assert_ne!(a, b);
        assert!(
            a.expose()[API_KEY_PREFIX.len()..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        assert_eq!(format!("{a:?}"), "Secret(***)");
    }

    #[test]
    fn hashing() {
        let h = hash_key("svc_api_x");
        assert_eq!(h.len(), 64);
        assert!(hashes_equal(&h, &hash_key("svc_api_x")));
        assert!(!hashes_equal(&h, &hash_key("svc_api_y")));
        assert_eq!(display_prefix("svc_api_AbCdEf"), "svc_api_AbCd");
    }
}
