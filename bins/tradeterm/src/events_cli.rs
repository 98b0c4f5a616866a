//! `tradeterm events`: a live event stream of a tradeterm server printed in a
//! shell (`GET /api/v1/events`, docs/events.md), with the stream's filters
//! and resume, reconnecting after the last event it printed when the
//! connection drops or the server cuts it (`stream.cut`).
//!
//! ```text
//! tradeterm events --rest-url http://127.0.0.1:4000 --api-key svc_api_… --types order.filled,position.closed
//! tradeterm events --api-key svc_api_… --types bar.closed --symbols EURUSD --timeframes M1,H1
//! 2026-12-01T19:00:00.251Z  position.closed  term_7df4…  EURUSD  position=7001 reason=sl price=1.08391 profit=-6.1   [1796151600123-4]
//! ```

use std::io::Write;
use std::time::Duration;

use serde_json::Value;

/// Arguments of `tradeterm events`.
#[derive(Debug, Clone, clap::Args)]
pub struct EventsArgs {
    /// The REST API's base URL.
    #[arg(long, default_value = "http://127.0.0.1:4000", env = "TRADETERM_REST_URL")]
    pub rest_url: String,
    /// A REST API key of the license (`svc_api_…`) or a session token.
    #[arg(long, env = "TRADETERM_API_KEY", hide_env_values = true)]
    pub api_key: String,
    /// Comma-separated event types (docs/events.md); every type when absent.
    #[arg(long)]
    pub types: Option<String>,
    /// Only this terminal's events.
    #[arg(long)]
    pub terminal: Option<String>,
    /// Comma-separated symbols.
    #[arg(long)]
    pub symbols: Option<String>,
    /// Comma-separated timeframes (`M1,H1`): with `--symbols`, the stream
    /// asks for the `bar.closed` events of each symbol on each timeframe.
    #[arg(long)]
    pub timeframes: Option<String>,
    /// Resume after this event id (`<ms>-<seq>`).
    #[arg(long)]
    pub after: Option<String>,
    /// Print each event as one line of JSON (the event as the server sent it).
    #[arg(long)]
    pub json: bool,
    /// Leave quotes out (they are conflated, and many).
    #[arg(long)]
    pub no_quotes: bool,
    /// Exit after this many events (quotes included unless `--no-quotes`).
    #[arg(long)]
    pub limit: Option<u64>,
    /// Do not reconnect when the stream ends; exit instead.
    #[arg(long)]
    pub no_reconnect: bool,
}

/// Why `run` stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// `--limit` events were printed.
    Limit,
    /// The stream ended and `--no-reconnect` was given.
    StreamEnded,
}

/// Exit code of a run: 0 when it ended as asked, 2 for usage, authentication
/// or connection errors.
pub fn exit_code(result: &anyhow::Result<Ended>) -> u8 {
    match result {
        Ok(_) => 0,
        Err(_) => 2,
    }
}

fn query(args: &EventsArgs) -> Vec<(&'static str, String)> {
    let mut q = Vec::new();
    for (name, value) in [
        ("types", &args.types),
        ("terminal_id", &args.terminal),
        ("symbols", &args.symbols),
        ("timeframes", &args.timeframes),
    ] {
        if let Some(v) = value {
            q.push((name, v.clone()));
        }
    }
    q
}

/// One line for a person: time, type, terminal, symbol, the data's scalar
/// fields (nested objects left out), and the id.
pub fn human_line(event: &Value) -> String {
    let mut fields = Vec::new();
    if let Some(data) = event["data"].as_object() {
        for (k, v) in data {
            match v {
                Value::Object(_) | Value::Array(_) | Value::Null => {}
                Value::String(s) => fields.push(format!("{k}={s}")),
                other => fields.push(format!("{k}={other}")),
            }
        }
    }
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    let id = event["id"].as_str().map(|id| format!("   [{id}]")).unwrap_or_default();
    format!(
        "{}  {}  {}  {}  {}{id}",
        text(&event["time"]),
        text(&event["type"]),
        text(&event["terminal_id"]),
        text(&event["symbol"]),
        fields.join(" ")
    )
}

/// Reads the stream and prints to `out` until `--limit`, the end of the
/// stream with `--no-reconnect`, or an error the stream cannot recover from
/// (a refused credential or filter; an unreachable server with
/// `--no-reconnect`).
///
/// # Errors
/// The server refused the request (the message says why), or it could not
/// be reached and `--no-reconnect` was given.
pub async fn run(args: &EventsArgs, out: &mut (dyn Write + Send)) -> anyhow::Result<Ended> {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()?;
    let url = format!("{}/api/v1/events", args.rest_url.trim_end_matches('/'));
    let mut last_id = args.after.clone();
    let mut printed = 0u64;
    let mut backoff = Duration::from_millis(500);
    loop {
        let mut req = http.get(&url).bearer_auth(&args.api_key).query(&query(args));
        if let Some(id) = &last_id {
            req = req.header("Last-Event-ID", id);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) if !args.no_reconnect => {
                eprintln!("tradeterm events: {e}; reconnecting in {backoff:?}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
                continue;
            }
            Err(e) => anyhow::bail!("cannot reach {url}: {e}"),
        };
        let status = resp.status();
        if !status.is_success() {
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            let message = body["error"]["message"].as_str().unwrap_or("no message");
            let code = body["error"]["code"].as_str().unwrap_or("");
            // Too many streams or requests: wait and retry; anything else is final.
            if status.as_u16() == 429 && !args.no_reconnect {
                eprintln!("tradeterm events: {code}: {message}; retrying in {backoff:?}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
                continue;
            }
            anyhow::bail!("{} {code}: {message}", status.as_u16());
        }
        backoff = Duration::from_millis(500);
        let mut resp = resp;
        let mut buf = String::new();
        'stream: loop {
            let chunk = match resp.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break 'stream,
                Err(e) => {
                    eprintln!("tradeterm events: stream interrupted: {e}");
                    break 'stream;
                }
            };
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                let data: String = frame
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect::<Vec<_>>()
                    .join("\n");
                if data.is_empty() {
                    continue;
                }
                let Ok(event) = serde_json::from_str::<Value>(&data) else {
                    continue;
                };
                let kind = event["type"].as_str().unwrap_or_default();
                if kind == "stream.cut" {
                    if let Some(id) = event["data"]["resume_after"].as_str() {
                        last_id = Some(id.to_owned());
                    }
                    eprintln!("tradeterm events: the server cut the stream; resuming after {last_id:?}");
                    break 'stream;
                }
                if let Some(id) = event["id"].as_str() {
                    last_id = Some(id.to_owned());
                }
                if args.no_quotes && kind == "quote" {
                    continue;
                }
                let line = if args.json { data } else { human_line(&event) };
                writeln!(out, "{line}")?;
                out.flush()?;
                printed += 1;
                if args.limit.is_some_and(|l| printed >= l) {
                    return Ok(Ended::Limit);
                }
            }
        }
        if args.no_reconnect {
            return Ok(Ended::StreamEnded);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_human_line_names_time_type_terminal_symbol_scalars_and_id() {
        let event = serde_json::json!({
            "id": "5-1", "type": "position.closed", "time": "2026-12-01T19:00:00Z", "terminal_id": "term_a", "symbol": "EURUSD",
            "data": { "position": 7, "reason": "sl", "deal": { "ticket": 1 } },
        });
        assert_eq!(
            human_line(&event),
            "2026-12-01T19:00:00Z  position.closed  term_a  EURUSD  position=7 reason=sl   [5-1]"
        );
        let quote = serde_json::json!({ "type": "quote", "time": "t", "data": { "bid": 1.1 } });
        assert_eq!(human_line(&quote), "t  quote  -  -  bid=1.1");
    }
}
