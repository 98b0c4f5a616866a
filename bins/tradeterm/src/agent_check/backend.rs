//! The two ways the kit reaches a terminal: the gateway's raw command route
//! (`POST /api/dashboard/terminals/{id}/command`, master key: the agent's
//! answers as sent) or the REST API's tools (`POST /api/v1/tools/{name}`, API
//! key: answers converted back to the protocol's types, ISO times to unix ms,
//! REST error codes to the agent's).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tradeterm_core::time::{UnixMs, parse_iso, to_iso};
use tradeterm_protocol::agent::{OrderCheck, OrderRequest, TradeResult, codes};
use tradeterm_protocol::{Command, CommandResult, TerminalStatus};

use super::{COMMAND_TIMEOUT_MS, CheckArgs, Failure, SetupError};

pub(super) enum Backend {
    Gateway {
        base: String,
        key: String,
        terminal: String,
        http: reqwest::Client,
    },
    Rest {
        base: String,
        key: String,
        terminal: String,
        http: reqwest::Client,
    },
}

fn http_client(ca_file: Option<&PathBuf>) -> Result<reqwest::Client, SetupError> {
    let mut b = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_millis(COMMAND_TIMEOUT_MS + 10_000));
    if let Some(path) = ca_file {
        let pem = std::fs::read(path).map_err(|e| SetupError(format!("reading --ca-file {}: {e}", path.display())))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| SetupError(format!("--ca-file {} is not a PEM certificate: {e}", path.display())))?;
        if certs.is_empty() {
            return Err(SetupError(format!("--ca-file {} holds no certificate", path.display())));
        }
        b = b.tls_certs_merge(certs);
    }
    b.build().map_err(|e| SetupError(format!("HTTP client: {e}")))
}

fn base_url(url: &str, flag: &str) -> Result<String, SetupError> {
    let url = url.trim().trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(SetupError(format!("{flag} must start with http:// or https://")));
    }
    Ok(url.to_owned())
}

impl Backend {
    pub(super) fn new(args: &CheckArgs) -> Result<Self, SetupError> {
        let http = http_client(args.ca_file.as_ref())?;
        match (&args.gateway_url, &args.rest_url) {
            (Some(url), None) => Ok(Self::Gateway {
                base: base_url(url, "--gateway-url")?,
                key: args
                    .master_key
                    .clone()
                    .ok_or_else(|| SetupError("--gateway-url needs --master-key".into()))?,
                terminal: args.terminal.clone(),
                http,
            }),
            (None, Some(url)) => Ok(Self::Rest {
                base: base_url(url, "--rest-url")?,
                key: args
                    .api_key
                    .clone()
                    .ok_or_else(|| SetupError("--rest-url needs --api-key".into()))?,
                terminal: args.terminal.clone(),
                http,
            }),
            _ => Err(SetupError("give exactly one of --gateway-url and --rest-url".into())),
        }
    }

    pub(super) fn mode_name(&self) -> &'static str {
        match self {
            Self::Gateway { .. } => "gateway",
            Self::Rest { .. } => "rest",
        }
    }

    pub(super) fn is_rest(&self) -> bool {
        matches!(self, Self::Rest { .. })
    }

    /// The terminal's status from the terminal list of the license.
    pub(super) async fn terminal_status(&self, terminal: &str) -> Result<TerminalStatus, SetupError> {
        let (url, key, http) = match self {
            Self::Gateway { base, key, http, .. } => (format!("{base}/api/dashboard/terminals"), key, http),
            Self::Rest { base, key, http, .. } => (format!("{base}/api/v1/terminals"), key, http),
        };
        let resp = http
            .get(&url)
            .bearer_auth(key)
            .send()
            .await
            .map_err(|e| SetupError(format!("cannot reach {url}: {}", chain(&e))))?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(SetupError(format!(
                "GET {url} answered {status}: {}",
                error_text(&body)
            )));
        }
        let list = match self {
            Self::Gateway { .. } => body["data"].clone(),
            Self::Rest { .. } => body["data"]["terminals"].clone(),
        };
        let list: Vec<TerminalStatus> = serde_json::from_value(list)
            .map_err(|e| SetupError(format!("GET {url}: unexpected terminal list: {e}")))?;
        list.into_iter()
            .find(|t| t.id == terminal)
            .ok_or_else(|| SetupError(format!("no terminal {terminal} on this license")))
    }

    /// Runs one protocol command.
    pub(super) async fn call(&self, command: &Command) -> Result<CommandResult, Failure> {
        match self {
            Self::Gateway {
                base,
                key,
                terminal,
                http,
            } => {
                let url = format!("{base}/api/dashboard/terminals/{terminal}/command");
                gateway_call(http, &url, key, command).await
            }
            Self::Rest { .. } => self.rest_command(command).await,
        }
    }

    /// Calls a REST tool (REST mode only) with an optional idempotency key.
    pub(super) async fn rest_tool(
        &self,
        tool: &str,
        body: Value,
        idempotency_key: Option<&str>,
    ) -> Result<Value, Failure> {
        let Self::Rest {
            base,
            key,
            terminal,
            http,
        } = self
        else {
            return Err(Failure::new("KIT", "REST tool called in gateway mode"));
        };
        let url = format!("{base}/api/v1/tools/{tool}");
        for _ in 0..5 {
            let mut req = http
                .post(&url)
                .bearer_auth(key)
                .header("X-Terminal-Id", terminal)
                .json(&body);
            if let Some(k) = idempotency_key {
                req = req.header("Idempotency-Key", k);
            }
            let resp = req
                .send()
                .await
                .map_err(|e| Failure::new("HTTP", format!("POST {url}: {}", chain(&e))))?;
            let status = resp.status();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            let value: Value = resp.json().await.unwrap_or(Value::Null);
            if status.is_success() {
                return Ok(value["data"].clone());
            }
            if status.as_u16() == 429 {
                // Rate limited: wait as told and try again.
                tokio::time::sleep(Duration::from_secs(retry_after.unwrap_or(5).clamp(1, 60))).await;
                continue;
            }
            return Err(rest_failure(status.as_u16(), &value));
        }
        Err(Failure::new("RATE_LIMITED", "still rate limited after 5 attempts"))
    }

    async fn rest_command(&self, command: &Command) -> Result<CommandResult, Failure> {
        let iso = |t: UnixMs| json!(to_iso(t));
        let conv = |v: Value| -> Result<CommandResult, Failure> {
            serde_json::from_value(v).map_err(|e| Failure::new("MALFORMED_RESULT", e.to_string()))
        };
        match command {
            Command::AccountInfo => {
                let mut v = self.rest_tool("get_account_info", json!({}), None).await?;
                v["kind"] = json!("account_info");
                conv(v)
            }
            Command::Positions { symbol } => {
                let mut v = self
                    .rest_tool("get_positions", json!({ "symbol": symbol }), None)
                    .await?;
                iso_fields_each(&mut v["positions"], &["open_time"])?;
                v["kind"] = json!("positions");
                conv(v)
            }
            Command::Orders { symbol } => {
                let mut v = self.rest_tool("get_orders", json!({ "symbol": symbol }), None).await?;
                iso_fields_each(&mut v["orders"], &["time_setup", "expiration"])?;
                v["kind"] = json!("orders");
                conv(v)
            }
            Command::HistoryDeals { from, to } => {
                let v = self
                    .rest_tool("get_deal_history", json!({ "from": iso(*from), "to": iso(*to) }), None)
                    .await?;
                let mut deals = v["deals"].clone();
                iso_fields_each(&mut deals, &["time"])?;
                conv(json!({ "kind": "deals", "deals": deals }))
            }
            Command::HistoryOrders { from, to } => {
                let v = self
                    .rest_tool("get_order_history", json!({ "from": iso(*from), "to": iso(*to) }), None)
                    .await?;
                let mut orders = v["orders"].clone();
                iso_fields_each(&mut orders, &["time_setup", "time_done"])?;
                conv(json!({ "kind": "history_orders", "orders": orders }))
            }
            Command::Symbols => {
                let mut v = self.rest_tool("get_symbols", json!({}), None).await?;
                v["kind"] = json!("symbols");
                conv(v)
            }
            Command::SymbolSpec { symbol } => {
                let mut v = self
                    .rest_tool("get_symbol_spec", json!({ "symbol": symbol }), None)
                    .await?;
                v["kind"] = json!("symbol_spec");
                conv(v)
            }
            Command::Tick { symbol } => {
                let mut v = self.rest_tool("get_tick", json!({ "symbol": symbol }), None).await?;
                iso_fields(&mut v, &["time"])?;
                v["kind"] = json!("tick");
                conv(v)
            }
            Command::Bars {
                symbol,
                timeframe,
                count,
                from,
                to,
            } => {
                let mut body = json!({ "symbol": symbol, "timeframe": timeframe });
                if let Some(c) = count {
                    body["count"] = json!(c);
                }
                if let Some(f) = from {
                    body["from"] = iso(*f);
                }
                if let Some(t) = to {
                    body["to"] = iso(*t);
                }
                let mut v = self.rest_tool("get_bars", body, None).await?;
                iso_fields_each(&mut v["bars"], &["time"])?;
                v["kind"] = json!("bars");
                conv(v)
            }
            Command::Ticks { .. } => Err(Failure::new("NOT_IN_REST", "REST has no tick-history route")),
            Command::OrderCheck { order } => {
                let mut body = order_body(order);
                body["dry_run"] = json!(true);
                match self.rest_tool("place_order", body, None).await {
                    Ok(v) => Ok(CommandResult::OrderCheck(OrderCheck {
                        valid: true,
                        retcode: "done".into(),
                        comment: String::new(),
                        price: v["price"].as_f64().unwrap_or(f64::NAN),
                        margin: v["margin_required"].as_f64().unwrap_or(f64::NAN),
                        free_margin_after: v["free_margin_after"].as_f64().unwrap_or(f64::NAN),
                        margin_level_after: v["margin_level_after"].as_f64(),
                    })),
                    Err(f) if f.code == codes::TRADE_REJECTED => Ok(CommandResult::OrderCheck(OrderCheck {
                        valid: false,
                        retcode: f.retcode.unwrap_or_else(|| "rejected".into()),
                        comment: f.message,
                        price: 0.0,
                        margin: 0.0,
                        free_margin_after: 0.0,
                        margin_level_after: None,
                    })),
                    Err(f) => Err(f),
                }
            }
            Command::PlaceOrder { order } => {
                let mut body = order_body(order);
                body["dry_run"] = json!(false);
                let v = self
                    .rest_tool("place_order", body, order.idempotency_key.as_deref())
                    .await?;
                trade_of(&v["trade"])
            }
            Command::ClosePosition {
                ticket,
                volume,
                deviation_points,
                idempotency_key,
            } => {
                let body = json!({ "ticket": ticket, "volume": volume, "deviation_points": deviation_points, "dry_run": false });
                let v = self
                    .rest_tool("close_position", body, idempotency_key.as_deref())
                    .await?;
                trade_of(&v["trade"])
            }
            Command::ModifyPosition {
                ticket,
                stop_loss,
                take_profit,
            } => {
                // REST: absent keeps a level, 0 removes it; the protocol: absent removes.
                let body = json!({
                    "ticket": ticket,
                    "stop_loss": stop_loss.unwrap_or(0.0),
                    "take_profit": take_profit.unwrap_or(0.0),
                    "dry_run": false,
                });
                let v = self.rest_tool("modify_position", body, None).await?;
                trade_of(&v["trade"])
            }
            Command::CancelOrder { ticket } => {
                let v = self
                    .rest_tool("cancel_order", json!({ "ticket": ticket, "dry_run": false }), None)
                    .await?;
                trade_of(&v["trade"])
            }
            Command::ReversePosition {
                ticket,
                idempotency_key,
            } => {
                let v = self
                    .rest_tool(
                        "reverse_position",
                        json!({ "ticket": ticket, "dry_run": false }),
                        idempotency_key.as_deref(),
                    )
                    .await?;
                let close = trade_result(&v["close_trade"])?;
                let open = trade_result(&v["open_trade"])?;
                Ok(CommandResult::Reverse { close, open })
            }
            Command::Calendar { from, to, currencies } => {
                let body = json!({ "from": iso(*from), "to": iso(*to), "currencies": currencies, "source": "auto" });
                let v = self.rest_tool("get_economic_calendar", body, None).await?;
                if v["source"] != json!("terminal") {
                    return Err(Failure::new(
                        codes::NOT_SUPPORTED,
                        v["note"].as_str().unwrap_or("the terminal's calendar was not used"),
                    ));
                }
                let mut events = v["events"].clone();
                iso_fields_each(&mut events, &["time"])?;
                conv(json!({ "kind": "calendar", "events": events }))
            }
            Command::ModifyOrder {
                ticket,
                price,
                stop_limit_price,
                stop_loss,
                take_profit,
                expiration_mode,
                expiration,
                idempotency_key,
            } => {
                // REST: absent keeps a field, 0 removes a level; the protocol: the whole new state.
                let body = json!({
                    "ticket": ticket,
                    "price": price,
                    "stop_limit_price": stop_limit_price,
                    "stop_loss": stop_loss.unwrap_or(0.0),
                    "take_profit": take_profit.unwrap_or(0.0),
                    "expiration_mode": expiration_mode.unwrap_or_default(),
                    "expiration": expiration.map(to_iso),
                    "dry_run": false,
                });
                let v = self.rest_tool("modify_order", body, idempotency_key.as_deref()).await?;
                trade_of(&v["trade"])
            }
            Command::CloseBy {
                ticket,
                ticket_by,
                idempotency_key,
            } => {
                let body = json!({ "ticket": ticket, "ticket_by": ticket_by, "dry_run": false });
                let v = self.rest_tool("close_by", body, idempotency_key.as_deref()).await?;
                trade_of(&v["trade"])
            }
            // `get_market_depth` subscribes, reads and (unless kept) releases.
            Command::MarketBookAdd { symbol } | Command::MarketBookRelease { symbol } => {
                let keep = matches!(command, Command::MarketBookAdd { .. });
                let body = json!({ "symbol": symbol, "keep_subscribed": keep });
                let v = self.rest_tool("get_market_depth", body, None).await?;
                Ok(CommandResult::MarketBookSubscription {
                    symbol: v["symbol"].as_str().unwrap_or(symbol).to_owned(),
                    subscribed: keep,
                })
            }
            Command::MarketBookGet { symbol } => {
                let v = self
                    .rest_tool(
                        "get_market_depth",
                        json!({ "symbol": symbol, "keep_subscribed": true }),
                        None,
                    )
                    .await?;
                let time = v["time"]
                    .as_str()
                    .map(parse_iso)
                    .transpose()
                    .map_err(|e| Failure::new("MALFORMED_RESULT", format!("`time`: {e}")))?
                    .unwrap_or_default();
                let level = |side: &str, l: &Value| json!({ "type": side, "price": l["price"], "volume": l["volume"] });
                let mut levels: Vec<Value> = v["asks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .rev()
                    .map(|l| level("sell", l))
                    .collect();
                levels.extend(v["bids"].as_array().into_iter().flatten().map(|l| level("buy", l)));
                conv(json!({ "kind": "market_book", "symbol": v["symbol"], "time": time, "levels": levels }))
            }
        }
    }
}

/// An error with its sources (`error sending request: … certificate …`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

fn order_body(order: &OrderRequest) -> Value {
    json!({
        "symbol": order.symbol,
        "order_type": order.order_type,
        "volume": order.volume,
        "price": order.price,
        "stop_loss": order.stop_loss,
        "take_profit": order.take_profit,
        "deviation_points": order.deviation_points,
        "comment": order.comment,
        "magic": order.magic,
        "stop_limit_price": order.stop_limit_price,
        "expiration_mode": order.expiration_mode,
        "expiration": order.expiration.map(to_iso),
        "filling": order.filling,
    })
}

fn trade_result(v: &Value) -> Result<TradeResult, Failure> {
    serde_json::from_value(v.clone()).map_err(|e| Failure::new("MALFORMED_RESULT", format!("trade result: {e}")))
}

fn trade_of(v: &Value) -> Result<CommandResult, Failure> {
    trade_result(v).map(CommandResult::Trade)
}

/// Replaces ISO 8601 strings in `fields` of the object `v` by unix ms.
fn iso_fields(v: &mut Value, fields: &[&str]) -> Result<(), Failure> {
    for f in fields {
        if let Some(s) = v.get(*f).and_then(Value::as_str) {
            let ms = parse_iso(s).map_err(|e| Failure::new("MALFORMED_RESULT", format!("`{f}`: {e}")))?;
            v[*f] = json!(ms);
        }
    }
    Ok(())
}

fn iso_fields_each(list: &mut Value, fields: &[&str]) -> Result<(), Failure> {
    if let Some(items) = list.as_array_mut() {
        for item in items {
            iso_fields(item, fields)?;
        }
    }
    Ok(())
}

fn error_text(body: &Value) -> String {
    match (body["error"]["code"].as_str(), body["error"]["message"].as_str()) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        _ => body.to_string().chars().take(300).collect(),
    }
}

/// A REST error converted to the agent's terms where it carries them.
fn rest_failure(status: u16, body: &Value) -> Failure {
    let code = body["error"]["code"].as_str().unwrap_or("HTTP").to_owned();
    let message = body["error"]["message"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("HTTP {status}"));
    let retcode = body["error"]["retcode"].as_str().map(str::to_owned);
    let agent_code = match code.as_str() {
        "VALIDATION_ERROR" => codes::INVALID_ARGUMENT.to_owned(),
        "ORDER_REJECTED" => codes::TRADE_REJECTED.to_owned(),
        "DISPATCH_ERROR" => {
            // "command failed: <message> (<CODE>)"
            let inner = message
                .strip_suffix(')')
                .and_then(|m| m.rsplit_once(" ("))
                .map(|(_, c)| c.to_owned())
                .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_uppercase() || ch == '_'));
            match inner {
                Some(c) => c,
                None if message.contains("unreachable") => "TERMINAL_UNREACHABLE".to_owned(),
                None if message.contains("did not answer") => "TERMINAL_TIMEOUT".to_owned(),
                None => code,
            }
        }
        _ => code,
    };
    Failure {
        code: agent_code,
        message,
        retcode,
    }
}

async fn gateway_call(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    command: &Command,
) -> Result<CommandResult, Failure> {
    let body = json!({ "command": command, "timeout_ms": COMMAND_TIMEOUT_MS, "live": command.is_trade() });
    let resp = http
        .post(url)
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .map_err(|e| Failure::new("HTTP", format!("POST {url}: {}", chain(&e))))?;
    let status = resp.status();
    let value: Value = resp.json().await.unwrap_or(Value::Null);
    if status.is_success() {
        return serde_json::from_value(value["result"].clone())
            .map_err(|e| Failure::new("MALFORMED_RESULT", format!("result does not match the protocol: {e}")));
    }
    let err = &value["error"];
    if let Some(detail) = err.get("detail").filter(|d| d.is_object()) {
        return Err(Failure {
            code: detail["code"].as_str().unwrap_or("COMMAND_FAILED").to_owned(),
            message: detail["message"].as_str().unwrap_or_default().to_owned(),
            retcode: detail["retcode"].as_str().map(str::to_owned),
        });
    }
    Err(Failure::new(
        err["code"].as_str().unwrap_or("HTTP"),
        err["message"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("HTTP {status}")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_dispatch_errors_carry_the_agent_code() {
        let body =
            json!({ "error": { "code": "DISPATCH_ERROR", "message": "command failed: no calendar (NOT_SUPPORTED)" } });
        assert_eq!(rest_failure(502, &body).code, "NOT_SUPPORTED");
        let body = json!({ "error": { "code": "VALIDATION_ERROR", "message": "unknown symbol" } });
        assert_eq!(rest_failure(400, &body).code, "INVALID_ARGUMENT");
        let body = json!({ "error": { "code": "ORDER_REJECTED", "message": "x", "retcode": "no_money" } });
        let f = rest_failure(422, &body);
        assert_eq!(
            (f.code.as_str(), f.retcode.as_deref()),
            ("TRADE_REJECTED", Some("no_money"))
        );
    }
}
