//! What a webhook may target, and the one HTTP client deliveries use.
//!
//! - `https://` only when [`WebhookSettings::require_https`] (production);
//!   `http://` otherwise; no other scheme, no user information in the URL.
//! - No loopback, private (RFC 1918, unique local), shared (100.64/10),
//!   link-local (169.254/16 and fe80::/10, where the cloud metadata services
//!   live), unspecified, broadcast, multicast or documentation address,
//!   IPv4-mapped forms included, unless [`WebhookSettings::allow_private`].
//!   Checked on the URL's literal address and on every address its name
//!   resolves to when the endpoint is saved, and again by the client's
//!   resolver on every connection (a name that starts resolving to such an
//!   address later is refused then).
//! - The client follows no redirect (a 3xx is a failed attempt), times out
//!   after [`WebhookSettings::timeout`], and the sender reads at most
//!   [`WebhookSettings::max_response_bytes`] of an answer.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::WebhookSettings;
use crate::ToolError;

/// Longest target URL, bytes.
pub const MAX_URL_BYTES: usize = 2048;

fn invalid(msg: impl Into<String>) -> ToolError {
    ToolError::InvalidInput(format!("url: {}", msg.into()))
}

/// Whether `ip` is one a webhook may not reach without `allow_private`.
pub fn is_blocked(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return blocked_v4(v4);
            }
            let seg = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg[0] & 0xfe00) == 0xfc00 // unique local (fd00:ec2::254, the AWS metadata service)
                || (seg[0] & 0xffc0) == 0xfe80 // link-local
                || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
                || (seg[0] == 0x0064 && seg[1] == 0xff9b) // NAT64 of IPv4 (may reach private IPv4)
                || v6 == Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1)
        }
    }
}

fn blocked_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local() // 169.254.169.254: cloud metadata
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // shared address space (carrier NAT)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || o[0] >= 240 // reserved
}

/// Checks a target URL when an endpoint is saved: its form, scheme and the
/// addresses it names or resolves to. Every refusal is a
/// `VALIDATION_ERROR` naming `url`.
pub async fn check_target(raw: &str, settings: &WebhookSettings) -> Result<Url, ToolError> {
    let raw = raw.trim();
    if raw.is_empty() || raw.len() > MAX_URL_BYTES {
        return Err(invalid(format!(
            "give an https:// URL of at most {MAX_URL_BYTES} bytes"
        )));
    }
    let url = Url::parse(raw).map_err(|e| invalid(format!("not a URL ({e})")))?;
    match url.scheme() {
        "https" => {}
        "http" if !settings.require_https => {}
        "http" => return Err(invalid("must be https:// in production")),
        other => return Err(invalid(format!("scheme `{other}` is not allowed; use https://"))),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("must not hold credentials (user:password@)"));
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| invalid("has no host"))?;
    if settings.allow_private {
        return Ok(url);
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<IpAddr> = match literal.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| invalid(format!("the host `{host}` does not resolve ({e})")))?
            .map(|a| a.ip())
            .collect(),
    };
    if addrs.is_empty() {
        return Err(invalid(format!("the host `{host}` does not resolve")));
    }
    if let Some(ip) = addrs.into_iter().find(|ip| is_blocked(*ip)) {
        return Err(invalid(format!(
            "`{host}` is (or resolves to) {ip}, a loopback, private, link-local or metadata address; \
             an operator may allow those with WEBHOOK_ALLOW_PRIVATE=true"
        )));
    }
    Ok(url)
}

/// A resolver that refuses names resolving to a blocked address.
struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addrs.iter().find(|a| is_blocked(a.ip())) {
                return Err(format!("{host} resolves to {}, a blocked address", bad.ip()).into());
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The HTTP client of deliveries: no redirects, the settings' timeout, and
/// (unless private targets are allowed) the guarded resolver. A literal
/// address in a URL is checked by the sender before the post
/// ([`literal_allowed`]), as no resolver sees it.
pub fn client(settings: &WebhookSettings) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout)
        .user_agent(concat!("tradeterm-webhooks/", env!("CARGO_PKG_VERSION")));
    if !settings.allow_private {
        builder = builder.dns_resolver(Arc::new(GuardedResolver));
    }
    builder.build().map_err(|e| format!("webhook client: {e}"))
}

/// Whether the URL's host, when it is a literal address, may be reached.
pub fn literal_allowed(url: &Url, settings: &WebhookSettings) -> bool {
    if settings.allow_private {
        return true;
    }
    let host = url.host_str().unwrap_or_default();
    match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(ip) => !is_blocked(ip),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> WebhookSettings {
        WebhookSettings {
            require_https: true,
            ..WebhookSettings::default()
        }
    }

    #[test]
    fn private_and_metadata_addresses_are_blocked_public_ones_not() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(is_blocked(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["1.1.1.1", "93.184.216.34", "2606:4700:4700::1111"] {
            assert!(!is_blocked(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn targets_are_refused_naming_url() {
        for (raw, needle) in [
            ("http://93.184.216.34/h", "https"),
            ("ftp://example.com/", "scheme"),
            ("https://127.0.0.1/h", "127.0.0.1"),
            ("https://[::1]:8443/h", "::1"),
            ("https://169.254.169.254/latest/meta-data", "metadata"),
            ("https://10.0.0.5/h", "private"),
            ("https://localhost/h", "127.0.0.1"),
            ("https://user:pw@93.184.216.34/", "credentials"),
            ("not a url", "not a URL"),
            ("", "https://"),
        ] {
            let err = check_target(raw, &strict()).await.unwrap_err();
            let ToolError::InvalidInput(msg) = &err else {
                panic!("{raw}: {err:?}")
            };
            assert!(msg.starts_with("url: ") && msg.contains(needle), "{raw}: {msg}");
        }
        assert!(check_target("https://93.184.216.34/h", &strict()).await.is_ok());
        let dev = WebhookSettings::default();
        assert!(check_target("http://93.184.216.34/h", &dev).await.is_ok());
        assert!(check_target("http://127.0.0.1:9/h", &dev).await.is_err());
        let open = WebhookSettings {
            allow_private: true,
            ..WebhookSettings::default()
        };
        assert!(check_target("http://127.0.0.1:9/h", &open).await.is_ok());
    }
}
