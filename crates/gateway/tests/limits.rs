//! The gateway's refusals of credential guessing and oversized frames
//! (`docs/security.md`): wrong keys from one address end in 429s while the
//! right key from another keeps working; a WebSocket frame announced over
//! the limit is refused from its header.

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use common::{INTERNAL, hello, spawn_app};
use futures_util::SinkExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;
use tradeterm_protocol::agent::{GatewayFrame, Permissions};

/// A client whose connections come from `127.0.0.N`.
fn client_from(last: u8) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)))
        .build()
        .unwrap()
}

#[tokio::test]
async fn wrong_keys_from_one_address_end_in_429s_while_the_right_key_elsewhere_works() {
    let app = spawn_app().await;
    let guesser = client_from(2);
    let owner = client_from(1);
    let terminal_key = &app.terminals[0].1;
    let mut statuses = Vec::new();
    for i in 0..300 {
        let path = if i % 2 == 0 { "/api/token" } else { "/api/token/api-key" };
        let wrong = format!("svc_api_wrong{i:04}xxxxxxxxxxxxxxxx");
        let resp = guesser
            .post(format!("{}{path}", app.base))
            .bearer_auth(&wrong)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        if status == 429 {
            let retry: u64 = resp.headers()["retry-after"].to_str().unwrap().parse().unwrap();
            assert!(retry >= 1);
            let body: serde_json::Value = resp.json().await.unwrap();
            assert_eq!(body["error"]["code"], "RATE_LIMITED", "{body}");
        }
        statuses.push(status);
        if i % 25 == 0 {
            let ok = owner
                .post(format!("{}/api/token", app.base))
                .bearer_auth(terminal_key)
                .send()
                .await
                .unwrap();
            assert_eq!(ok.status(), 200, "the right key from another address at guess {i}");
        }
    }
    let refused = statuses.iter().filter(|s| **s == 401).count();
    assert!(refused <= 15, "{refused} guesses were checked: {statuses:?}");
    assert!(statuses[200..].iter().all(|s| *s == 429), "{statuses:?}");

    // The blocked address is refused even with the right key (the key is not
    // checked), on the agent endpoint too.
    let resp = guesser
        .post(format!("{}/api/token", app.base))
        .bearer_auth(terminal_key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    let poll = guesser
        .post(format!("{}/agent/v1/poll/open", app.base))
        .body(hello(terminal_key, "uid-guess", Permissions::default()))
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(poll.status(), 429);
    assert!(poll.headers().contains_key("retry-after"));

    // An adapter instance (the internal token) throttles its own clients:
    // the gateway neither counts nor refuses its exchanges.
    for _ in 0..30 {
        let resp = guesser
            .post(format!("{}/api/token/api-key", app.base))
            .header(tradeterm_protocol::dispatch::INTERNAL_TOKEN_HEADER, INTERNAL)
            .bearer_auth("svc_api_wrong_from_an_adapter")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401);
    }

    let metrics = common::scrape(&app).await;
    assert!(metrics.value("tradeterm_auth_throttled_total", &[("surface", "token")]) >= 200.0);
    assert!(metrics.value("tradeterm_auth_failures_total", &[("surface", "token")]) >= 10.0);
}

#[tokio::test]
async fn wrong_terminal_keys_in_hello_are_throttled() {
    let app = spawn_app().await;
    let mut last = None;
    for i in 0..12 {
        let (mut ws, _) = tokio_tungstenite::connect_async(&app.ws_url).await.unwrap();
        ws.send(Message::text(hello(
            &format!("tk_wrong_{i}_xxxxxxxx"),
            "uid-x",
            Permissions::default(),
        )))
        .await
        .unwrap();
        last = Some(common::next_gateway_frame(&mut ws).await);
    }
    match last {
        Some(GatewayFrame::Error { error, .. }) => assert_eq!(error.code, "RATE_LIMITED"),
        other => panic!("expected a RATE_LIMITED error, got {other:?}"),
    }
}

/// Opens a WebSocket by hand (the test writes raw frame headers).
async fn raw_websocket(app: &common::TestApp) -> tokio::net::TcpStream {
    let addr = app.base.trim_start_matches("http://").to_owned();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "GET /agent/v1 HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        tcp.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    tcp
}

/// A masked client frame header announcing `len` bytes of text.
fn text_header(len: u64) -> Vec<u8> {
    let mut h = vec![0x81, 0x80 | 127];
    h.extend_from_slice(&len.to_be_bytes());
    h.extend_from_slice(&[9, 9, 9, 9]);
    h
}

/// Reads the server's frames until it closes: `(texts, close code)`.
async fn server_frames(tcp: &mut tokio::net::TcpStream) -> (Vec<String>, Option<u16>) {
    let mut texts = Vec::new();
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = match tokio::time::timeout_at(deadline.into(), tcp.read(&mut chunk)).await {
            Ok(Ok(n)) => n,
            Ok(Err(_)) => 0,
            Err(_) => panic!("the server neither refused nor closed in 5 s"),
        };
        if n == 0 {
            return (texts, None);
        }
        buf.extend_from_slice(&chunk[..n]);
        while buf.len() >= 2 {
            let (len, start) = match buf[1] & 0x7f {
                126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
                126 => break,
                127 => panic!("the server sent a huge frame"),
                l => (l as usize, 2),
            };
            if buf.len() < start + len {
                break;
            }
            let payload = buf[start..start + len].to_vec();
            match buf[0] & 0x0f {
                1 => texts.push(String::from_utf8(payload).unwrap()),
                8 => return (texts, Some(u16::from_be_bytes([payload[0], payload[1]]))),
                _ => {}
            }
            buf.drain(..start + len);
        }
    }
}

#[tokio::test]
async fn a_frame_announced_over_the_limit_before_hello_is_refused_from_its_header() {
    let app = spawn_app().await;
    // The header alone, no payload: refused at once (1009, FRAME_TOO_LARGE).
    let mut tcp = raw_websocket(&app).await;
    tcp.write_all(&text_header(512 << 20)).await.unwrap();
    let (texts, close) = server_frames(&mut tcp).await;
    assert!(texts.iter().any(|t| t.contains("FRAME_TOO_LARGE")), "{texts:?}");
    assert_eq!(close, Some(1009));

    // A frame just over the 64 KiB limit before hello is refused too.
    let mut tcp = raw_websocket(&app).await;
    tcp.write_all(&text_header(64 * 1024 + 1)).await.unwrap();
    let (_, close) = server_frames(&mut tcp).await;
    assert_eq!(close, Some(1009));

    // The header, then the payload as fast as it goes: the connection is
    // dropped long before 512 MiB (what the socket buffers hold, not the frame).
    let tcp = raw_websocket(&app).await;
    let (_read, mut write) = tcp.into_split();
    write.write_all(&text_header(512 << 20)).await.unwrap();
    let block = vec![b'x'; 64 * 1024];
    let mut written = 0_usize;
    let flood = async {
        while written < 512 << 20 {
            if write.write_all(&block).await.is_err() {
                return;
            }
            written += block.len();
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), flood).await;
    assert!(written < 32 << 20, "the gateway took {written} bytes of the frame");

    let metrics = common::scrape(&app).await;
    assert!(metrics.value("tradeterm_limit_refusals_total", &[("limit", "agent_frame")]) >= 3.0);
}

#[tokio::test]
async fn after_hello_frames_up_to_the_large_limit_pass() {
    let app = spawn_app().await;
    let (t, key) = &app.terminals[0];
    let (mut ws, welcome) = common::connect(&app, key, "uid-big", Permissions::default()).await;
    assert!(matches!(welcome, GatewayFrame::Welcome { .. }), "{welcome:?}");
    // A 1 MiB frame (a malformed one: answered with an error, the connection lives on).
    ws.send(Message::text("x".repeat(1 << 20))).await.unwrap();
    match common::next_gateway_frame(&mut ws).await {
        GatewayFrame::Error { error, .. } => assert_eq!(error.code, "MALFORMED_FRAME"),
        other => panic!("{other:?}"),
    }
    ws.send(Message::text(r#"{"type":"ping","ts":1}"#)).await.unwrap();
    assert!(matches!(
        common::next_gateway_frame(&mut ws).await,
        GatewayFrame::Pong { .. }
    ));
    assert!(app.gateway.is_connected(t));
    drop(ws);
}
