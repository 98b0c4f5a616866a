//! `GET /api/v1/events`: the license's events as Server-Sent Events (the
//! WHATWG format), from the pipeline of `tradeterm-events`.
//!
//! Same authentication as every route (the `read` capability), counted as
//! one request of the rate-limit bucket when it opens (the events it
//! carries are not counted). Filters: `types` (comma-separated event types),
//! `terminal_id`, `symbols` (comma-separated), `timeframes` (the bars of
//! `bar.closed`: with `symbols`, every symbol × timeframe pair is watched
//! for as long as the stream is open, [`MAX_BAR_PAIRS`] at most). Resume: the `Last-Event-ID`
//! header (what a browser's `EventSource` sends when it reconnects) or the
//! `after` query parameter, the header winning; within retention every
//! event after that id comes once, in order; beyond it the stream starts
//! with `stream.gap`. A credential bound to one terminal (a terminal key's
//! session token) sees only that terminal's events. Concurrent streams per
//! license are limited by tier ([`stream_limit`]) on each instance; beyond
//! it 429 `RATE_LIMITED` with `Retry-After`. See `docs/events.md`.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use tradeterm_core::Timeframe;
use tradeterm_core::license::{Capability, Tier};
use tradeterm_events::interest::BarInterest;
use tradeterm_events::subscriber::{Filter, Subscription, sse, subscribe};
use tradeterm_events::{EventId, EventType};

use crate::{AppState, RestError};

/// The route.
pub const EVENTS_PATH: &str = "/api/v1/events";

/// How long a client waits before reconnecting (the stream's `retry:`), ms.
const RETRY_MS: u64 = 2_000;

/// Most symbols or types in one filter.
const MAX_FILTER_ITEMS: usize = 64;

/// Most (symbol, timeframe) pairs of `bar.closed` one stream asks for: each
/// costs a bars read from the terminal per closed bar.
pub const MAX_BAR_PAIRS: usize = 64;

/// Concurrent event streams per license and instance, by tier.
pub const fn stream_limit(tier: Tier) -> usize {
    match tier {
        Tier::Free => 2,
        Tier::Pro => 10,
        Tier::Team => 50,
        Tier::Enterprise => 200,
    }
}

/// Open streams per license on this instance.
#[derive(Debug, Default)]
pub struct StreamSlots {
    open: Mutex<HashMap<String, usize>>,
}

/// One open stream's place; freed when dropped (the client went away or
/// the stream ended).
struct Slot {
    slots: Arc<StreamSlots>,
    license: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self
            .slots
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.license) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.license);
            }
        }
    }
}

impl StreamSlots {
    fn take(self: &Arc<Self>, license: &str, limit: usize) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = open.entry(license.to_owned()).or_insert(0);
        if *n >= limit {
            return None;
        }
        *n += 1;
        Some(Slot {
            slots: self.clone(),
            license: license.to_owned(),
        })
    }

    /// Streams open for `license` now.
    pub fn open(&self, license: &str) -> usize {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(license)
            .copied()
            .unwrap_or(0)
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Query {
    types: Option<String>,
    terminal_id: Option<String>,
    symbols: Option<String>,
    timeframes: Option<String>,
    after: Option<String>,
}

fn list(field: &str, text: &str) -> Result<Vec<String>, RestError> {
    let items: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if items.is_empty() {
        return Err(RestError::invalid(format!("`{field}` names nothing")));
    }
    if items.len() > MAX_FILTER_ITEMS {
        return Err(RestError::invalid(format!(
            "`{field}` names more than {MAX_FILTER_ITEMS} items"
        )));
    }
    Ok(items)
}

fn parse_id(field: &str, text: &str) -> Result<EventId, RestError> {
    text.parse().map_err(|e| RestError::invalid(format!("`{field}`: {e}")))
}

/// `bar.closed` is asked for with `symbols` and `timeframes` together, and
/// `timeframes` only where bars are asked for.
fn check_bars(
    types: Option<&BTreeSet<EventType>>,
    symbols: Option<&BTreeSet<String>>,
    timeframes: Option<&BTreeSet<Timeframe>>,
) -> Result<(), RestError> {
    let names_bars = types.is_some_and(|t| t.contains(&EventType::BarClosed));
    match (symbols, timeframes) {
        // Types without bars: `timeframes` asks for nothing (ignored).
        (_, Some(_)) if types.is_some() && !names_bars => Ok(()),
        // No symbols, or no timeframes: no bar series is asked for, and
        // the stream carries no `bar.closed` (OpenAPI cannot state a
        // dependency between two query parameters, so neither is refused).
        (None, _) | (_, None) => Ok(()),
        (Some(s), Some(t)) if s.len() * t.len() > MAX_BAR_PAIRS => Err(RestError::invalid(format!(
            "`symbols` × `timeframes` names {} bar series; a stream may ask for at most {MAX_BAR_PAIRS}",
            s.len() * t.len()
        ))),
        _ => Ok(()),
    }
}

/// The filter and the resume id of a request.
fn parse(req: &HttpRequest) -> Result<(Filter, Option<EventId>), RestError> {
    let query = web::Query::<Query>::from_query(req.query_string())
        .map_err(|e| RestError::invalid(format!("invalid query: {e}")))?
        .into_inner();
    let types = match &query.types {
        Some(text) => {
            let mut set = BTreeSet::new();
            for name in list("types", text)? {
                let kind = name
                    .parse()
                    .map_err(|e| RestError::invalid(format!("`types`: {e} (docs/events.md lists them)")))?;
                set.insert(kind);
            }
            Some(set)
        }
        None => None,
    };
    let symbols = match &query.symbols {
        Some(text) => {
            let items = list("symbols", text)?;
            if let Some(bad) = items.iter().find(|s| !tradeterm_core::market::is_symbol(s)) {
                return Err(RestError::invalid(format!("`symbols`: `{bad}` is not a symbol name")));
            }
            Some(items.into_iter().collect())
        }
        None => None,
    };
    let timeframes = match &query.timeframes {
        Some(text) => {
            let mut set = BTreeSet::new();
            for name in list("timeframes", text)? {
                let tf: Timeframe = name
                    .parse()
                    .map_err(|e| RestError::invalid(format!("`timeframes`: {e}")))?;
                set.insert(tf);
            }
            Some(set)
        }
        None => None,
    };
    check_bars(types.as_ref(), symbols.as_ref(), timeframes.as_ref())?;
    // `timeframes` with types that leave `bar.closed` out asks for no bars.
    let timeframes = timeframes
        .filter(|_| types.as_ref().is_none_or(|t| t.contains(&EventType::BarClosed)))
        .filter(|_| symbols.is_some());
    if let Some(id) = &query.terminal_id
        && !tradeterm_tools::valid_terminal_id(id)
    {
        return Err(RestError::invalid("`terminal_id` is not a terminal id (term_…)"));
    }
    let header = req
        .headers()
        .get("last-event-id")
        .map(|v| {
            v.to_str()
                .map_err(|_| RestError::invalid("`Last-Event-ID` is not text"))
        })
        .transpose()?
        .map(str::trim)
        .filter(|v| !v.is_empty());
    let after = match (header, query.after.as_deref()) {
        (Some(h), _) => Some(parse_id("Last-Event-ID", h)?),
        (None, Some(a)) => Some(parse_id("after", a)?),
        (None, None) => None,
    };
    Ok((
        Filter {
            types,
            terminal_id: query.terminal_id,
            symbols,
            timeframes,
        },
        after,
    ))
}

/// `GET /api/v1/events`.
pub(crate) async fn stream(req: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, RestError> {
    let caller = crate::routes::authenticate(&req, &state).await?;
    if !caller.claims.allows(Capability::Read) {
        return Err(RestError::new(
            403,
            "FORBIDDEN",
            "the event stream needs the `read` capability",
        ));
    }
    let (mut filter, after) = parse(&req)?;
    let license = caller.license_id().to_owned();
    // A credential bound to one terminal sees that terminal's events only.
    if let Some(bound) = &caller.claims.terminal {
        match &filter.terminal_id {
            Some(asked) if asked != bound => {
                return Err(RestError::new(
                    403,
                    "FORBIDDEN",
                    "this credential is bound to another terminal",
                ));
            }
            _ => filter.terminal_id = Some(bound.clone()),
        }
    }
    if let Some(id) = &filter.terminal_id {
        match state.services.store.terminal(&license, id).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err(RestError::new(
                    404,
                    "NOT_FOUND",
                    format!("no terminal {id} on this license"),
                ));
            }
            Err(e) => return Err(RestError::internal(e, state.services.settings.production)),
        }
    }
    let caller = crate::routes::count_fresh(&req, &state, caller, false).await?;
    let Some(events) = &state.services.events else {
        return Err(RestError::new(
            503,
            "EVENTS_UNAVAILABLE",
            "this server publishes no events",
        ));
    };
    let limit = stream_limit(caller.claims.tier);
    let Some(slot) = state.streams.take(&license, limit) else {
        return Err(RestError::limited(
            format!("{limit} event streams are open for this license already (the limit of its tier); close one"),
            5,
        ));
    };
    // The bars this stream asks for are watched while it is open.
    let bars: Option<BarInterest> = match (&filter.symbols, &filter.timeframes) {
        (Some(symbols), Some(timeframes)) => Some(events.bar_interests().register(
            &license,
            filter.terminal_id.as_deref(),
            symbols,
            timeframes,
        )),
        _ => None,
    };
    let subscription = subscribe(
        events.bus().clone(),
        license,
        after,
        filter,
        state.services.event_stream,
    )
    .await
    .map_err(|e| {
        tracing::warn!(error = %e, "event stream not opened");
        RestError::new(
            503,
            "EVENTS_UNAVAILABLE",
            "the event engine is unavailable; retry shortly",
        )
    })?;
    // The slot and the bar interests live as long as the body.
    let held = (slot, bars);
    let body = futures_util::stream::unfold(
        (Some(sse::preamble(RETRY_MS)), subscription, held),
        |(first, mut sub, held): (Option<String>, Subscription, (Slot, Option<BarInterest>))| async move {
            if let Some(text) = first {
                return Some((
                    Ok::<_, std::convert::Infallible>(web::Bytes::from(text)),
                    (None, sub, held),
                ));
            }
            let item = sub.next().await?;
            Some((Ok(web::Bytes::from(sse::frame(&item))), (None, sub, held)))
        },
    );
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body))
}
