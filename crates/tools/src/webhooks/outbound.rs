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

/// The form of a target URL, as the input schemas state it (ECMA-262, as
/// JSON Schema reads `pattern`): `http://` or `https://`, a host name (dot-
/// separated labels of letters, digits and single inner hyphens, the last
/// starting with a letter) or a dotted-quad IPv4 address, an optional port
/// (0-65535), then an optional path, query or fragment of printable ASCII.
/// [`url_form`] checks exactly this, so the schema and the server agree;
/// every URL of this form parses. Host names in punycode (`xn--`) and IPv6
/// literals are not accepted.
pub const URL_PATTERN: &str = concat!(
    "^https?://",
    "(((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])",
    "|([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*)",
    "(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0))?",
    "([/?#][!-~]*)?$"
);

/// Whether `s` has the form of [`URL_PATTERN`]. One trailing `\n` is
/// allowed, as Python's `re` (which schema validators of that language use)
/// lets `$` match before it; the URL parser drops it.
pub fn url_form(s: &str) -> bool {
    let s = s.strip_suffix('\n').unwrap_or(s);
    let Some(rest) = s.strip_prefix("https://").or_else(|| s.strip_prefix("http://")) else {
        return false;
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if !tail.bytes().all(|b| (b'!'..=b'~').contains(&b)) {
        return false;
    }
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    port.is_none_or(port_form) && (ipv4_form(host) || host_name_form(host))
}

/// Why `raw` does not have the form of [`URL_PATTERN`], in words.
fn form_refusal(raw: &str) -> String {
    let Some((scheme, rest)) = raw.split_once("://") else {
        return "not a URL: give https://host[:port][/path]".into();
    };
    if scheme != "https" && scheme != "http" {
        return format!(
            "scheme `{}` is not allowed; use https://",
            scheme.chars().take(16).collect::<String>()
        );
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if authority.contains('@') {
        return "must not hold credentials (user:password@)".into();
    }
    if authority.starts_with('[') {
        return "IPv6 literals are not accepted: give a host name or an IPv4 address".into();
    }
    "give https://host[:port][/path]: a host name (letters, digits, inner hyphens, the last label starting with a \
     letter) or an IPv4 address, a port up to 65535, then printable ASCII"
        .into()
}

/// The target as stored, once [`check_target`] accepted it: as given (the
/// parser's normal form can be longer: a `/` added, characters
/// percent-encoded), without the one trailing `\n` [`url_form`] allows.
pub fn as_stored(raw: &str) -> &str {
    raw.strip_suffix('\n').unwrap_or(raw)
}

/// 0-65535 without leading zeros.
fn port_form(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 5
        && p.bytes().all(|b| b.is_ascii_digit())
        && (p == "0" || !p.starts_with('0'))
        && p.parse::<u32>().is_ok_and(|n| n <= 65_535)
}

/// Four dot-separated numbers 0-255 without leading zeros.
fn ipv4_form(h: &str) -> bool {
    let parts: Vec<&str> = h.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|o| {
            !o.is_empty()
                && o.len() <= 3
                && o.bytes().all(|b| b.is_ascii_digit())
                && (*o == "0" || !o.starts_with('0'))
                && o.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// Labels of letters and digits with single inner hyphens, the last
/// starting with a letter.
fn host_name_form(h: &str) -> bool {
    let label = |l: &str| {
        !l.is_empty()
            && l.split('-')
                .all(|run| !run.is_empty() && run.bytes().all(|b| b.is_ascii_alphanumeric()))
    };
    let labels: Vec<&str> = h.split('.').collect();
    labels.iter().all(|l| label(l))
        && labels
            .last()
            .is_some_and(|l| l.starts_with(|c: char| c.is_ascii_alphabetic()))
}

/// Checks a target URL when an endpoint is saved: its form
/// ([`URL_PATTERN`], as the input schema says), scheme and the addresses it
/// names or resolves to. Every refusal is a `VALIDATION_ERROR` naming `url`.
pub async fn check_target(raw: &str, settings: &WebhookSettings) -> Result<Url, ToolError> {
    if raw.is_empty() || raw.len() > MAX_URL_BYTES {
        return Err(invalid(format!(
            "give an https:// URL of at most {MAX_URL_BYTES} bytes"
        )));
    }
    if !url_form(raw) {
        return Err(invalid(form_refusal(raw)));
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

    /// URLs and whether they have the form: [`url_form`] is checked on them
    /// here, and `URL_PATTERN` by a JSON Schema validator in the REST
    /// schema test (`crates/rest/tests/openapi.rs`); every accepted URL
    /// parses, with its host and no credentials.
    pub const URL_FORMS: &[(&str, bool)] = &[
        ("https://hooks.example.com/tradeterm?x=1#f", true),
        ("http://127.0.0.1:8080/hook", true),
        ("http://localhost", true),
        ("https://a-b.c-d.example:443", true),
        ("http://0.0.0.0:0", true),
        ("https://a.b/@user", true),
        ("https://h/%zz\\back", true),
        ("HTTPS://example.com", false),
        ("https://", false),
        ("https://example.com.", false),
        ("https://user:pw@example.com", false),
        ("https://exa mple.com", false),
        ("https://example.com/a b", false),
        (" https://example.com", false),
        ("https://example.com\n", true),
        ("https://example.com\n\n", false),
        ("https://256.1.1.1", false),
        ("https://01.1.1.1", false),
        ("https://1.2.3", false),
        ("https://999.1.1.1", false),
        ("https://a--b.com", false),
        ("https://-a.com", false),
        ("https://a.1com", false),
        ("https://example.com:65536", false),
        ("https://example.com:080", false),
        ("https://example.com:", false),
        ("https://example.com:1:2", false),
        ("https://[::1]/", false),
        ("https://xn--bcher-kva.example", false),
        ("https://bücher.example", false),
        ("ftp://example.com", false),
        ("", false),
    ];

    #[test]
    fn the_url_form_is_the_schema_pattern_and_every_match_parses() {
        for (url, ok) in URL_FORMS {
            assert_eq!(url_form(url), *ok, "{url:?}");
            if *ok {
                let parsed = Url::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
                assert!(
                    parsed.host_str().is_some_and(|h| !h.is_empty()) && parsed.username().is_empty(),
                    "{url}"
                );
            }
        }
    }
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
            ("https://[::1]:8443/h", "IPv6"),
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
