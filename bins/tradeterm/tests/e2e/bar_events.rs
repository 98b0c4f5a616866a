//! `bar.closed` end to end: a real gateway, a simulated terminal on a
//! `ManualClock` the test moves (minute by minute, and several minutes at
//! once, as a conflated quote feed does), the REST event stream.
//!
//! - a stream of `types=bar.closed&symbols=EURUSD&timeframes=M1` receives
//!   one event per closed minute, in order, each bar exactly what
//!   `get_bars` returns for that minute (OHLC and volume compared exactly);
//!   a stream of the same symbol asking M5 gets only the M5 bar;
//! - another license's stream asking the same receives none, and a symbol
//!   nobody asked for (GBPUSD, whose bars exist) produces none in the log;
//! - two watchers on one Redis (two API instances' worth) publish each bar once;
//! - bad requests are 400 `VALIDATION_ERROR` naming what is wrong and
//!   register nothing; a stream's interests are counted while it is open and
//!   removed when it closes.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tradeterm_core::Bar;
use tradeterm_events::EventType;
use tradeterm_sim::ManualClock;

use crate::harness::data::bars_of;
use crate::harness::{Api, Expect, Options, TestStack, WEDNESDAY_NOON, spawn, spawn_with, wait_until};

const MIN: i64 = 60_000;
/// Liveness deadline of each wait (generous for a loaded test run).
const DEADLINE: Duration = Duration::from_secs(30);

/// One Server-Sent Event: its type and its event JSON.
#[derive(Debug)]
struct Sse {
    event: String,
    data: Value,
}

/// A client reading one event stream.
struct Stream {
    resp: reqwest::Response,
    buf: String,
}

impl Stream {
    /// The next event (comments skipped); fails the test after [`DEADLINE`].
    async fn next(&mut self) -> Sse {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let (mut event, mut data) = (None, String::new());
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        event = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                if let Some(event) = event {
                    let data: Value = serde_json::from_str(&data).unwrap();
                    return Sse { event, data };
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.resp.chunk())
                .await
                .unwrap_or_else(|_| panic!("no event within {DEADLINE:?}; buffered: {:?}", self.buf));
            match chunk.unwrap() {
                Some(bytes) => self.buf.push_str(std::str::from_utf8(&bytes).unwrap()),
                None => panic!("the stream ended"),
            }
        }
    }

    /// The next `bar.closed` event (the only type these streams ask for).
    async fn next_bar(&mut self) -> Value {
        let e = self.next().await;
        assert_eq!(e.event, "bar.closed", "{}", e.data);
        e.data
    }

    /// Whether nothing but heartbeats arrives within `quiet`.
    async fn stays_quiet(&mut self, quiet: Duration) -> Result<(), Sse> {
        match tokio::time::timeout(quiet, self.next()).await {
            Err(_) => Ok(()),
            Ok(e) => Err(e),
        }
    }
}

async fn open(api: &Api, query: &str) -> Result<Stream, (u16, Value)> {
    let resp = api
        .request(Method::GET, &format!("/api/v1/events{query}"))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    if status != 200 {
        return Err((status, resp.json().await.unwrap_or(Value::Null)));
    }
    Ok(Stream {
        resp,
        buf: String::new(),
    })
}

async fn open_ok(api: &Api, query: &str) -> Stream {
    open(api, query)
        .await
        .unwrap_or_else(|(status, body)| panic!("GET /api/v1/events{query}: {status} {body}"))
}

/// The bars `get_bars` returns for `[from, to)`.
async fn bars(t: &TestStack, symbol: &str, timeframe: &str, from: i64, to: i64) -> Vec<Bar> {
    let iso = tradeterm_core::time::to_iso;
    let input = json!({ "symbol": symbol, "timeframe": timeframe, "from": iso(from), "to": iso(to) });
    bars_of(&t.api().on(t.terminal(0)).tool("get_bars", &input).await.data())
}

/// An event's bar, checked to be of `symbol` and `timeframe` on `terminal`.
fn bar_in(event: &Value, terminal: &str, symbol: &str, timeframe: &str) -> Bar {
    assert_eq!(
        (
            &event["terminal_id"],
            &event["symbol"],
            &event["data"]["symbol"],
            &event["data"]["timeframe"]
        ),
        (&json!(terminal), &json!(symbol), &json!(symbol), &json!(timeframe)),
        "{event}"
    );
    assert!(event["id"].is_string(), "a bar is a durable event: {event}");
    crate::harness::data::bar_of(&event["data"]["bar"])
}

/// The `bar.closed` events of a license's log, as (symbol, timeframe, bar time).
async fn logged_bars(t: &TestStack, license: &str) -> Vec<(String, String, String)> {
    assert!(t.stack.events.flush(DEADLINE).await, "the publisher drained");
    let replay = t.stack.events.bus().replay(license, None, 100_000).await.unwrap();
    replay
        .events
        .iter()
        .filter(|e| e.kind == EventType::BarClosed)
        .map(|e| {
            let d = &e.data;
            (
                d["symbol"].as_str().unwrap().to_owned(),
                d["timeframe"].as_str().unwrap().to_owned(),
                d["bar"]["time"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Waits until the watcher has seen a quote of the clock's minute (a quote
/// stream opened after the bar streams got one: the watcher hears the same
/// feed), so the bar forming now is the first one it will publish.
async fn wait_for_a_quote(t: &TestStack) {
    let mut quotes = open_ok(&t.api(), "?types=quote&symbols=EURUSD").await;
    let e = quotes.next().await;
    assert_eq!(e.event, "quote", "{}", e.data);
}

/// Moves the clock to `minute` (and 45 s, well past the minute's first
/// tick) after noon, then reads the stream's bars until every M1 bar
/// `get_bars` returns from noon up to that minute has come, comparing each.
async fn step(t: &TestStack, clock: &ManualClock, stream: &mut Stream, got: &mut Vec<Bar>, minute: i64) {
    clock.set(WEDNESDAY_NOON + minute * MIN + 45_000);
    let expected = bars(t, "EURUSD", "M1", WEDNESDAY_NOON, WEDNESDAY_NOON + minute * MIN).await;
    assert!(
        expected.len() as i64 >= minute - 1,
        "the simulated market traded at noon: {expected:?}"
    );
    while got.len() < expected.len() {
        let bar = bar_in(&stream.next_bar().await, t.terminal(0), "EURUSD", "M1");
        assert_eq!(bar, expected[got.len()], "bar {} of minute {minute}", got.len());
        got.push(bar);
    }
}

#[tokio::test]
async fn a_stream_gets_each_closed_bar_once_as_the_terminal_returns_it() {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON + 45_000));
    let t = spawn(Options {
        sims: 1,
        sim_clock: Some(clock.clone()),
        ..Options::default()
    })
    .await;
    let terminal = t.terminal(0).to_owned();
    let (other_license, other_key) = t.other_license(tradeterm_store::Tier::Pro).await;
    let query = "?types=bar.closed&symbols=EURUSD&timeframes=M1";
    let mut m1 = open_ok(&t.api(), query).await;
    // Timeframe names as MetaTrader writes them, in any case.
    let mut m5 = open_ok(&t.api(), "?types=bar.closed&symbols=EURUSD&timeframes=m5").await;
    let mut theirs = open_ok(&t.api_as(&other_key), query).await;
    wait_for_a_quote(&t).await;

    // Minute by minute, then three minutes at once, then two.
    let mut got = Vec::new();
    for minute in [1, 2, 5, 6, 8] {
        step(&t, &clock, &mut m1, &mut got, minute).await;
    }
    let times: Vec<i64> = got.iter().map(|b| b.time).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "in order, each once: {times:?}");
    assert_eq!(
        times.first(),
        Some(&WEDNESDAY_NOON),
        "the bar forming when the stream opened is the first"
    );

    // The M5 stream: the noon bar, and no M1 bar.
    let m5_expected = bars(&t, "EURUSD", "M5", WEDNESDAY_NOON, WEDNESDAY_NOON + 5 * MIN).await;
    assert_eq!(m5_expected.len(), 1);
    let m5_bar = bar_in(&m5.next_bar().await, &terminal, "EURUSD", "M5");
    assert_eq!(m5_bar, m5_expected[0]);

    // Exactly these in the license's log: each bar once, nothing for GBPUSD
    // (which traded: its bars exist) or any other symbol or timeframe.
    let mut logged = logged_bars(&t, &t.creds.license_id).await;
    logged.sort();
    let iso = tradeterm_core::time::to_iso;
    let mut expected: Vec<(String, String, String)> = got
        .iter()
        .map(|b| ("EURUSD".to_owned(), "M1".to_owned(), iso(b.time)))
        .chain([("EURUSD".to_owned(), "M5".to_owned(), iso(m5_bar.time))])
        .collect();
    expected.sort();
    assert_eq!(logged, expected);
    assert!(
        !bars(&t, "GBPUSD", "M1", WEDNESDAY_NOON, WEDNESDAY_NOON + 8 * MIN)
            .await
            .is_empty()
    );
    if let Err(e) = m1.stays_quiet(Duration::from_millis(500)).await {
        panic!("nothing more after the last closed bar: {e:?}");
    }

    // Another license asking the same bars gets none of this terminal's.
    if let Err(e) = theirs.stays_quiet(Duration::from_millis(500)).await {
        panic!("another license's stream got {e:?}");
    }
    assert!(logged_bars(&t, &other_license).await.is_empty());
    t.stack.stop().await;
}

#[tokio::test]
async fn two_watchers_on_one_redis_publish_each_bar_once() {
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON + 45_000));
    let t = spawn(Options {
        sims: 1,
        redis: true,
        sim_clock: Some(clock.clone()),
        ..Options::default()
    })
    .await;
    // A second watcher, as a second API instance runs: both see the
    // interests and the quotes; the Redis claim lets one of them publish.
    let second = tradeterm_tools::bar_watch::spawn(t.stack.services().clone(), Default::default());
    let mut m1 = open_ok(&t.api(), "?types=bar.closed&symbols=EURUSD&timeframes=M1").await;
    wait_for_a_quote(&t).await;
    let mut got = Vec::new();
    for minute in [1, 2, 4] {
        step(&t, &clock, &mut m1, &mut got, minute).await;
    }
    let logged = logged_bars(&t, &t.creds.license_id).await;
    assert_eq!(logged.len(), got.len(), "each bar once: {logged:?}");
    if let Err(e) = m1.stays_quiet(Duration::from_millis(500)).await {
        panic!("a bar twice: {e:?}");
    }
    second.stop().await;
    t.stack.stop().await;
}

#[tokio::test]
async fn bad_bar_requests_are_refused_and_open_streams_hold_their_interests() {
    // A client that left is noticed at the next heartbeat.
    let t = spawn_with(
        Options {
            sims: 1,
            ..Options::default()
        },
        |s| s.events_heartbeat_ms = 1_000,
    )
    .await;
    let interests = t.stack.events.bar_interests().clone();
    let eight: String = [
        "EURUSD", "GBPUSD", "USDJPY", "AUDUSD", "USDCHF", "USDCAD", "NZDUSD", "EURGBP",
    ]
    .join(",");
    let every = "M1,M5,M15,M30,H1,H4,D1,W1,MN1";
    for (query, needle) in [
        ("?symbols=EURUSD&timeframes=M2".to_owned(), "M2"),
        ("?symbols=EURUSD&timeframes=".to_owned(), "timeframes"),
        (format!("?symbols={eight}&timeframes={every}"), "at most 64"),
    ] {
        let (status, body) = open(&t.api(), &query).await.err().unwrap();
        assert_eq!(
            (status, &body["error"]["code"]),
            (400, &json!("VALIDATION_ERROR")),
            "{query}: {body}"
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{query}: {message}");
    }
    assert!(interests.is_empty(), "a refused request registers nothing");
    // Half of a bar series, or timeframes with types that leave bar.closed
    // out, ask for no bars: accepted, nothing registered.
    for query in [
        "?types=quote&symbols=EURUSD&timeframes=M1",
        "?types=bar.closed&symbols=EURUSD",
        "?types=bar.closed&timeframes=M1",
        "?types=bar.closed",
        "?timeframes=M1",
    ] {
        let open = open_ok(&t.api(), query).await;
        assert!(interests.is_empty(), "{query}: no bars asked for");
        drop(open);
    }

    // 8 symbols × 8 timeframes is the most one stream asks for.
    let most = open_ok(
        &t.api(),
        &format!("?symbols={eight}&timeframes=M1,M5,M15,M30,H1,H4,D1,W1"),
    )
    .await;
    assert_eq!(interests.len(), 64);
    drop(most);
    wait_until("the widest stream's interests removed", DEADLINE, || async {
        interests.is_empty().then_some(())
    })
    .await;

    // Every type, with bars: counted per pair, shared between streams.
    let a = open_ok(&t.api(), "?symbols=EURUSD&timeframes=M1,H1").await;
    let b = open_ok(&t.api(), "?types=bar.closed,quote&symbols=EURUSD,GBPUSD&timeframes=M1").await;
    let license = t.creds.license_id.clone();
    let terminal = t.terminal(0).to_owned();
    assert_eq!(interests.len(), 3);
    drop(a);
    wait_until("the first stream's interests removed", DEADLINE, || async {
        (interests.len() == 2).then_some(())
    })
    .await;
    assert!(
        interests.wants(&license, &terminal, "EURUSD", tradeterm_core::Timeframe::M1),
        "still asked by the second stream"
    );
    assert!(!interests.wants(&license, &terminal, "EURUSD", tradeterm_core::Timeframe::H1));
    drop(b);
    wait_until("every interest removed", DEADLINE, || async {
        interests.is_empty().then_some(())
    })
    .await;
    t.stack.stop().await;
}

/// `tradeterm events --types bar.closed --symbols EURUSD --timeframes M1`
/// asks for the bars (the stream's interest is registered while it runs)
/// and prints each closed minute as the terminal returns it.
#[tokio::test]
async fn the_events_command_asks_for_bars_with_its_timeframes() {
    use tradeterm::events_cli::{Ended, EventsArgs, run};
    let clock = Arc::new(ManualClock::new(WEDNESDAY_NOON + 45_000));
    let t = spawn(Options {
        sims: 1,
        sim_clock: Some(clock.clone()),
        ..Options::default()
    })
    .await;
    let terminal = t.terminal(0).to_owned();
    let interests = t.stack.events.bar_interests().clone();
    let args = EventsArgs {
        rest_url: t.rest.clone(),
        api_key: t.creds.api_key.clone(),
        types: Some("bar.closed".into()),
        terminal: None,
        symbols: Some("EURUSD".into()),
        timeframes: Some("M1".into()),
        after: None,
        json: true,
        no_quotes: true,
        limit: Some(2),
        no_reconnect: true,
    };
    let command = tokio::spawn(async move {
        let mut out = Vec::new();
        let ended = run(&args, &mut out).await.map_err(|e| e.to_string());
        (ended, out)
    });
    let license = t.creds.license_id.clone();
    wait_until("the command's bar interest", DEADLINE, || async {
        interests
            .wants(&license, &terminal, "EURUSD", tradeterm_core::Timeframe::M1)
            .then_some(())
    })
    .await;
    wait_for_a_quote(&t).await;
    for minute in [1, 2, 3] {
        clock.set(WEDNESDAY_NOON + minute * MIN + 45_000);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (ended, out) = tokio::time::timeout(DEADLINE, command)
        .await
        .expect("the command printed two bars")
        .unwrap();
    assert_eq!(ended, Ok(Ended::Limit));
    let expected = bars(&t, "EURUSD", "M1", WEDNESDAY_NOON, WEDNESDAY_NOON + 2 * MIN).await;
    let printed: Vec<Bar> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| bar_in(&serde_json::from_str(l).unwrap(), &terminal, "EURUSD", "M1"))
        .collect();
    assert_eq!(printed, expected);
    t.stack.stop().await;
}
