//! RS256 session tokens: the claims the gateway signs and the adapters verify.
//!
//! Verification accepts RS256 only, with issuer, audience, expiry and
//! not-before enforced; `alg: none`, HMAC algorithms (including HS256 keyed
//! with the public key), tampered and expired tokens are all refused.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde::{Deserialize, Serialize};
use tradeterm_core::license::{Capability, Tier};

/// Default issuer (spec §5: must equal what the signer uses; configurable).
pub const DEFAULT_ISSUER: &str = "tradeterm-gateway";
/// Default audience.
pub const DEFAULT_AUDIENCE: &str = "tradeterm-api";
/// Default lifetime of a session token: 24 h (spec §8).
pub const DEFAULT_LIFETIME_SECS: u64 = 24 * 3600;

/// Which credential a token was exchanged for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialKind {
    /// A terminal key (`tt_term_…`); the token carries its terminal.
    TerminalKey,
    /// A REST API key (`svc_api_…`); license-scoped, no terminal.
    ApiKey,
}

/// Claims of a tradeterm session token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// Audience.
    pub aud: String,
    /// License id.
    pub sub: String,
    /// Issued at, unix seconds.
    pub iat: i64,
    /// Not before, unix seconds.
    pub nbf: i64,
    /// Expiry, unix seconds.
    pub exp: i64,
    /// Unique token id.
    pub jti: String,
    /// License tier.
    pub tier: Tier,
    /// Capabilities granted.
    pub caps: Vec<Capability>,
    /// Kind of credential exchanged.
    pub cred: CredentialKind,
    /// Id of the credential record (terminal-key id or API-key id), for revocation checks.
    pub cred_id: String,
    /// Terminal bound to the credential (terminal keys only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<String>,
    /// The credential's scope (`docs/security.md`, "Scoped keys"); absent: unrestricted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<tradeterm_core::scope::KeyScope>,
    /// Generation of the credential's scope when the token was issued (0
    /// until its first change in place): a token of an older generation is
    /// refused like a revoked one ([`Claims::credential`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cred_gen: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Claims {
    /// The name revocation marks and rate-limit checks know this token's
    /// credential by: its record id, qualified by the scope's generation
    /// once the scope was changed (`tradeterm_core::scope::credential_mark`).
    pub fn credential(&self) -> std::borrow::Cow<'_, str> {
        tradeterm_core::scope::credential_mark(&self.cred_id, self.cred_gen)
    }

    /// Whether the token grants `cap`.
    pub fn allows(&self, cap: Capability) -> bool {
        self.caps.contains(&cap)
    }
}

/// Why a token was refused or could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Key material unusable.
    #[error("invalid key: {0}")]
    Key(String),
    /// The token is not acceptable (bad signature, algorithm, issuer, audience, expired, malformed).
    #[error("invalid token: {0}")]
    Invalid(String),
}

/// Signs session tokens with an RSA private key.
#[derive(Clone)]
pub struct TokenSigner {
    key: EncodingKey,
    issuer: String,
    audience: String,
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSigner")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish()
    }
}

impl TokenSigner {
    /// From a PKCS#8 or PKCS#1 PEM private key.
    pub fn from_pem(private_pem: &[u8], issuer: &str, audience: &str) -> Result<Self, TokenError> {
        let key = EncodingKey::from_rsa_pem(private_pem).map_err(|e| TokenError::Key(e.to_string()))?;
        Ok(Self {
            key,
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
        })
    }

    /// Issuer used.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Audience used.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Signs `claims` after filling in `iss` and `aud`.
    pub fn sign(&self, mut claims: Claims) -> Result<String, TokenError> {
        claims.iss = self.issuer.clone();
        claims.aud = self.audience.clone();
        encode(&Header::new(Algorithm::RS256), &claims, &self.key).map_err(|e| TokenError::Key(e.to_string()))
    }
}

/// Verifies session tokens with the RSA public key.
#[derive(Clone)]
pub struct TokenVerifier {
    key: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenVerifier").finish_non_exhaustive()
    }
}

impl TokenVerifier {
    /// From an X.509 SubjectPublicKeyInfo (`PUBLIC KEY`) or PKCS#1 (`RSA PUBLIC KEY`) PEM.
    pub fn from_pem(public_pem: &[u8], issuer: &str, audience: &str) -> Result<Self, TokenError> {
        let key = DecodingKey::from_rsa_pem(public_pem).map_err(|e| TokenError::Key(e.to_string()))?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.algorithms = vec![Algorithm::RS256];
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "nbf", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = 5;
        Ok(Self { key, validation })
    }

    /// Verifies signature, algorithm, issuer, audience and times, and returns the claims.
    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        decode::<Claims>(token, &self.key, &self.validation)
            .map(|d| d.claims)
            .map_err(|e| TokenError::Invalid(e.to_string()))
    }
}

/// Generates a 2048-bit RSA key pair as (`PRIVATE KEY` PKCS#8 PEM, `PUBLIC KEY` SPKI PEM).
/// For development start-up; production deployments configure their own keys.
pub fn generate_rsa_pem_pair() -> Result<(String, String), TokenError> {
    use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
    use aws_lc_rs::rsa::{KeyPair, KeySize};
    use aws_lc_rs::signature::KeyPair as _;
    let pair = KeyPair::generate(KeySize::Rsa2048).map_err(|e| TokenError::Key(e.to_string()))?;
    let private: Pkcs8V1Der<'_> = pair.as_der().map_err(|e| TokenError::Key(e.to_string()))?;
    let public: PublicKeyX509Der<'_> = pair.public_key().as_der().map_err(|e| TokenError::Key(e.to_string()))?;
    Ok((pem("PRIVATE KEY", private.as_ref()), pem("PUBLIC KEY", public.as_ref())))
}

fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(now: i64, exp: i64) -> Claims {
        Claims {
            iss: String::new(),
            aud: String::new(),
            sub: "lic_1".into(),
            iat: now,
            nbf: now,
            exp,
            jti: "j1".into(),
            tier: Tier::Pro,
            caps: Tier::Pro.capabilities().to_vec(),
            cred: CredentialKind::TerminalKey,
            cred_id: "tk_1".into(),
            terminal: Some("term_1".into()),
            scope: None,
            cred_gen: 0,
        }
    }

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }

    #[test]
    fn sign_verify_and_attacks() {
        let (private, public) = generate_rsa_pem_pair().unwrap();
        let signer = TokenSigner::from_pem(private.as_bytes(), "iss-a", "aud-a").unwrap();
        let verifier = TokenVerifier::from_pem(public.as_bytes(), "iss-a", "aud-a").unwrap();
        let t = now();
        let token = signer.sign(claims(t, t + 3600)).unwrap();
        let c = verifier.verify(&token).unwrap();
        assert_eq!(c.sub, "lic_1");
        assert_eq!(c.iss, "iss-a");
        assert!(c.allows(Capability::Trade));

        // Expired.
        let expired = signer.sign(claims(t - 7200, t - 3600)).unwrap();
        assert!(verifier.verify(&expired).is_err());
        // Wrong issuer / audience.
        let other = TokenSigner::from_pem(private.as_bytes(), "iss-b", "aud-a").unwrap();
        assert!(verifier.verify(&other.sign(claims(t, t + 60)).unwrap()).is_err());
        let other = TokenSigner::from_pem(private.as_bytes(), "iss-a", "aud-b").unwrap();
        assert!(verifier.verify(&other.sign(claims(t, t + 60)).unwrap()).is_err());
        // Tampered payload.
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        use base64::Engine;
        let eng = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut payload: serde_json::Value = serde_json::from_slice(&eng.decode(&parts[1]).unwrap()).unwrap();
        payload["tier"] = serde_json::json!("enterprise");
        parts[1] = eng.encode(serde_json::to_vec(&payload).unwrap());
        assert!(verifier.verify(&parts.join(".")).is_err());
        // alg: none.
        let header = eng.encode(br#"{"alg":"none","typ":"JWT"}"#);
        assert!(verifier.verify(&format!("{header}.{}.", parts[1])).is_err());
        // HS256 keyed with the public key.
        let hs = encode(
            &Header::new(Algorithm::HS256),
            &{
                let mut c = claims(t, t + 60);
                c.iss = "iss-a".into();
                c.aud = "aud-a".into();
                c
            },
            &EncodingKey::from_secret(public.as_bytes()),
        )
        .unwrap();
        assert!(verifier.verify(&hs).is_err());
        // Another key pair.
        let (private2, _) = generate_rsa_pem_pair().unwrap();
        let foreign = TokenSigner::from_pem(private2.as_bytes(), "iss-a", "aud-a").unwrap();
        assert!(verifier.verify(&foreign.sign(claims(t, t + 60)).unwrap()).is_err());
        assert!(verifier.verify("garbage").is_err());
    }
}
