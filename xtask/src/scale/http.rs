//! A minimal HTTP/1.1 client over `std::net` for the scale test (loopback,
//! plain HTTP, one connection per request), so that xtask stays
//! dependency-light: enough for JSON envelopes, chunked bodies and the
//! server-sent events MCP answers with.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One answer.
#[derive(Debug, Clone)]
pub struct Resp {
    /// HTTP status.
    pub status: u16,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body (decoded from chunked transfer encoding).
    pub body: String,
}

impl Resp {
    /// The body as JSON, or the first JSON-RPC message of an SSE body; `Null` otherwise.
    pub fn json(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("jsonrpc").is_some())
            .unwrap_or(Value::Null)
    }

    /// The envelope's error code (`""` when none).
    pub fn code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or_default().to_owned()
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request to `addr` (`host:port`) and reads the whole answer
/// within `timeout`. `Err` is a transport failure (refused, reset, timeout).
pub fn request(
    method: &str,
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    timeout: Duration,
) -> Result<Resp, String> {
    let sock: SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let deadline = Instant::now() + timeout;
    let mut s = TcpStream::connect_timeout(&sock, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_nodelay(true).ok();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or_default();
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "DELETE" | "PATCH") {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    head.push_str(body);
    s.set_write_timeout(Some(timeout)).ok();
    s.write_all(head.as_bytes())
        .map_err(|e| format!("send to {addr}: {e}"))?;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "{method} {path} at {addr}: no complete answer within {timeout:?}"
            ));
        }
        s.set_read_timeout(Some(left)).ok();
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&chunk[..n]);
                if complete(&raw) {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(format!(
                    "{method} {path} at {addr}: no complete answer within {timeout:?}"
                ));
            }
            Err(e) => return Err(format!("{method} {path} at {addr}: {e}")),
        }
    }
    parse(&raw).ok_or_else(|| format!("{method} {path} at {addr}: malformed answer"))
}

/// Where the head ends, if it has.
fn head_end(raw: &[u8]) -> Option<usize> {
    raw.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Whether `raw` holds a whole answer (by `Content-Length` or the last chunk).
fn complete(raw: &[u8]) -> bool {
    let Some(end) = head_end(raw) else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let body = &raw[end..];
    if head.contains("transfer-encoding: chunked") {
        return body.ends_with(b"0\r\n\r\n");
    }
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .is_some_and(|n| body.len() >= n)
}

fn parse(raw: &[u8]) -> Option<Resp> {
    let end = head_end(raw)?;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(&raw[end..])
    } else {
        raw[end..].to_vec()
    };
    Some(Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = b.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&b[..i])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        b = &b[i + 2..];
        if size == 0 || b.len() < size {
            out.extend_from_slice(&b[..size.min(b.len())]);
            break;
        }
        out.extend_from_slice(&b[..size]);
        b = b.get(size + 2..).unwrap_or_default();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_length_and_chunked_bodies() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nX-A: b\r\n\r\n{}";
        assert!(complete(raw));
        let r = parse(raw).unwrap();
        assert_eq!((r.status, r.body.as_str(), r.header("x-a")), (200, "{}", Some("b")));
        let raw = b"HTTP/1.1 502 Bad Gateway\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n";
        assert!(complete(raw));
        assert_eq!(parse(raw).unwrap().body, "{\"a\":1}");
        assert!(!complete(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n{}"));
    }

    #[test]
    fn reads_sse_json_rpc() {
        let r = Resp {
            status: 200,
            headers: vec![],
            body: "data: \n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n".into(),
        };
        assert_eq!(r.json()["id"], 1);
    }
}
