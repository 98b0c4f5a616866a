//! The signature of a delivery: `Tradeterm-Signature: t=<unix seconds>,v1=<hex>`
//! where `<hex>` is HMAC-SHA256, keyed with the endpoint's whole secret
//! (`whsec_…`, as text), over `"<t>.<body>"` (the scheme payment APIs use).
//! A receiver recomputes it over the raw body, compares in constant time and
//! refuses a `t` too far from its clock (replays).

use sha2::{Digest, Sha256};

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(message);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner);
    outer.finalize().into()
}

/// The `Tradeterm-Signature` value of `body` signed with `secret` at `t` (unix seconds).
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    let mac = hmac_sha256(secret.as_bytes(), format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        assert_eq!(
            hex::encode(hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // A key longer than the block is hashed first (test case 6).
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn the_signature_covers_the_time_and_the_body() {
        let s = signature("whsec_x", 1_796_151_600, r#"{"id":"1-0"}"#);
        let expected = hex::encode(hmac_sha256(b"whsec_x", br#"1796151600.{"id":"1-0"}"#));
        assert_eq!(s, format!("t=1796151600,v1={expected}"));
        assert_ne!(s, signature("whsec_x", 1_796_151_601, r#"{"id":"1-0"}"#));
        assert_ne!(s, signature("whsec_y", 1_796_151_600, r#"{"id":"1-0"}"#));
    }
}
