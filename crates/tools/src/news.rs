//! `get_news`: market news from a provider the server is configured with
//! (`NEWS_API_KEY`, optionally `NEWS_API_URL`), filtered by relevance to a
//! symbol or currencies. Without a key the tool is a no-op that says so
//! (spec: news fetching needs a news API key on the server). See
//! `docs/news.md`.
//!
//! The provider format is Finnhub's market-news endpoint
//! (`GET {url}?category=forex&token={key}` → an array of `{ id, datetime
//! (unix s), headline, summary, source, url, related, category }`); any
//! service answering that shape works.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tradeterm_core::time::{UnixMs, iso, parse_iso};

use crate::events::is_currency;
use crate::market::check_symbol;
use crate::{Annotations, Capability, Gate, Target, Tool, ToolContext, ToolError, ToolSpec};

/// Default provider endpoint (Finnhub market news).
pub const DEFAULT_NEWS_URL: &str = "https://finnhub.io/api/v1/news";
/// How long a fetched list answers calls without asking the provider again.
pub const NEWS_CACHE: Duration = Duration::from_secs(60);
/// Most items one call returns.
pub const MAX_NEWS_ITEMS: u32 = 100;

/// One news item.
#[derive(Debug, Clone, PartialEq)]
pub struct NewsItem {
    /// Provider id.
    pub id: String,
    /// Publication time, unix ms.
    pub time: UnixMs,
    /// Headline.
    pub headline: String,
    /// Summary.
    pub summary: String,
    /// Publisher.
    pub source: String,
    /// Link to the article.
    pub url: String,
    /// Symbols the provider tagged it with.
    pub related: String,
}

/// The provider's item shape.
#[derive(Debug, Deserialize)]
struct ProviderItem {
    #[serde(default)]
    id: serde_json::Value,
    #[serde(default)]
    datetime: i64,
    #[serde(default)]
    headline: String,
    #[serde(default)]
    summary: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    related: String,
}

/// Parses a provider answer; items without a headline or time are dropped.
///
/// # Errors
/// The body is not a JSON array of items.
pub fn parse_items(body: &[u8]) -> Result<Vec<NewsItem>, String> {
    let raw: Vec<ProviderItem> =
        serde_json::from_slice(body).map_err(|e| format!("the news provider answered an unexpected shape: {e}"))?;
    let mut items: Vec<NewsItem> = raw
        .into_iter()
        .filter(|i| !i.headline.trim().is_empty() && i.datetime > 0)
        .map(|i| NewsItem {
            id: match i.id {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            },
            time: i.datetime.saturating_mul(1000),
            headline: i.headline,
            summary: i.summary,
            source: i.source,
            url: i.url,
            related: i.related,
        })
        .collect();
    items.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.id.cmp(&b.id)));
    Ok(items)
}

/// Words that tie a text to a currency (lower-case, matched as whole words).
fn keywords(currency: &str) -> &'static [&'static str] {
    match currency {
        "USD" => &[
            "usd",
            "dollar",
            "fed",
            "fomc",
            "powell",
            "treasury",
            "treasuries",
            "u.s.",
            "us",
        ],
        "EUR" => &["eur", "euro", "ecb", "lagarde", "eurozone", "euro zone", "bund"],
        "GBP" => &[
            "gbp",
            "sterling",
            "pound",
            "boe",
            "bank of england",
            "bailey",
            "gilt",
            "gilts",
            "uk",
        ],
        "JPY" => &["jpy", "yen", "boj", "bank of japan", "ueda", "japan", "jgb"],
        "CHF" => &["chf", "franc", "snb", "swiss"],
        "AUD" => &["aud", "aussie", "rba", "australia", "australian"],
        "NZD" => &["nzd", "kiwi", "rbnz", "new zealand"],
        "CAD" => &["cad", "loonie", "boc", "bank of canada", "canada", "canadian"],
        "CNY" => &["cny", "yuan", "renminbi", "pboc", "china", "chinese"],
        "XAU" => &["xau", "gold", "bullion"],
        "XAG" => &["xag", "silver"],
        _ => &[],
    }
}

/// The currencies of `wanted` that `item` is about (code, keyword, or the
/// provider's `related` tags), in the order of `wanted`.
pub fn relevant_currencies(item: &NewsItem, wanted: &[String]) -> Vec<String> {
    let text = format!(" {} {} {} ", item.headline, item.summary, item.related).to_lowercase();
    let words: String = text
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '.' { c } else { ' ' })
        .collect();
    let padded = format!(" {} ", words.split_whitespace().collect::<Vec<_>>().join(" "));
    wanted
        .iter()
        .filter(|c| {
            let code = c.to_lowercase();
            std::iter::once(code.as_str())
                .chain(keywords(c).iter().copied())
                .any(|k| padded.contains(&format!(" {k} ")))
        })
        .cloned()
        .collect()
}

/// The currencies a symbol name stands for: the two ISO codes of a
/// six-letter pair (`EURUSD`, `XAUUSD`), else none.
pub fn symbol_currencies(symbol: &str) -> Vec<String> {
    let s: String = symbol.chars().take_while(char::is_ascii_alphabetic).collect();
    if s.len() == 6 {
        let (a, b) = s.split_at(3);
        if is_currency(a) && is_currency(b) {
            return vec![a.to_ascii_uppercase(), b.to_ascii_uppercase()];
        }
    }
    Vec::new()
}

/// The server's news provider, with a short cache shared by every call.
#[derive(Debug, Default)]
pub struct NewsService {
    provider: Option<Provider>,
    cache: Mutex<Option<(Instant, Arc<Vec<NewsItem>>)>>,
}

struct Provider {
    client: reqwest::Client,
    url: String,
    key: String,
}

/// Never shows the key.
impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl NewsService {
    /// A service for `key` at `url` (default [`DEFAULT_NEWS_URL`]); without a
    /// key, the no-op service.
    ///
    /// # Errors
    /// The URL is not http(s) or the HTTP client cannot be built.
    pub fn new(key: Option<&str>, url: Option<&str>) -> Result<Self, String> {
        let Some(key) = key.map(str::trim).filter(|k| !k.is_empty()) else {
            return Ok(Self::default());
        };
        let url = url.unwrap_or(DEFAULT_NEWS_URL).trim().to_owned();
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!("NEWS_API_URL must be an http(s) URL, got `{url}`"));
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("news client: {e}"))?;
        Ok(Self {
            provider: Some(Provider {
                client,
                url,
                key: key.to_owned(),
            }),
            cache: Mutex::new(None),
        })
    }

    /// Whether a key is configured.
    pub fn is_enabled(&self) -> bool {
        self.provider.is_some()
    }

    /// The latest items (cached for [`NEWS_CACHE`]) and, when the provider
    /// failed, why (with the last good list, if any).
    pub(crate) async fn items(&self) -> (Arc<Vec<NewsItem>>, Option<String>) {
        let cached = self.cache.lock().ok().and_then(|c| c.clone());
        if let Some((at, items)) = &cached
            && at.elapsed() < NEWS_CACHE
        {
            return (items.clone(), None);
        }
        let Some(provider) = &self.provider else {
            return (Arc::new(Vec::new()), None);
        };
        let fetched = async {
            let resp = provider
                .client
                .get(&provider.url)
                .query(&[("category", "forex"), ("token", provider.key.as_str())])
                .send()
                .await
                .map_err(|e| format!("the news provider could not be reached: {}", e.without_url()))?;
            if !resp.status().is_success() {
                return Err(format!("the news provider answered HTTP {}", resp.status().as_u16()));
            }
            let body = resp
                .bytes()
                .await
                .map_err(|e| format!("reading the news provider's answer: {}", e.without_url()))?;
            parse_items(&body)
        }
        .await;
        match fetched {
            Ok(items) => {
                let items = Arc::new(items);
                if let Ok(mut c) = self.cache.lock() {
                    *c = Some((Instant::now(), items.clone()));
                }
                (items, None)
            }
            Err(e) => {
                tracing::warn!(error = %e, "news provider failed");
                let stale = cached.map(|(_, items)| items).unwrap_or_default();
                (stale, Some(e))
            }
        }
    }
}

/// Input of `get_news`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewsInput {
    /// Only news about this symbol's currencies (a six-letter pair such as `EURUSD`, or `XAUUSD`).
    #[serde(default)]
    #[schemars(pattern(crate::schema::CURRENCY_PAIR_PATTERN))]
    pub symbol: Option<String>,
    /// Only news about these currencies (ISO codes, at most 20; combined with `symbol`'s).
    #[serde(default)]
    #[schemars(inner(pattern(crate::schema::CURRENCY_PATTERN)), length(max = crate::events::MAX_CURRENCIES))]
    pub currencies: Vec<String>,
    /// Only items published at or after this time (ISO 8601).
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    pub since: Option<String>,
    /// Most items returned (1-100, default 20), newest first.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_NEWS_ITEMS))]
    pub limit: Option<u32>,
}

/// One item of `get_news`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NewsItemOut {
    /// Provider id.
    pub id: String,
    /// Publication time (ISO 8601).
    #[serde(with = "iso")]
    #[schemars(with = "iso::Schema")]
    pub time: UnixMs,
    /// Headline.
    pub headline: String,
    /// Summary.
    pub summary: String,
    /// Publisher.
    pub source: String,
    /// Link to the article.
    pub url: String,
    /// The requested currencies the item is about (empty when no filter was given).
    pub currencies: Vec<String>,
}

/// Output of `get_news`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NewsOutput {
    /// Whether the server has a news provider (`NEWS_API_KEY`); without one the list is always empty.
    pub enabled: bool,
    /// The currencies filtered on (empty: no filter).
    pub currencies: Vec<String>,
    /// Items, newest first.
    pub items: Vec<NewsItemOut>,
    /// Why the list may be empty or stale (no provider configured, provider unreachable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

async fn get_news(ctx: ToolContext, input: NewsInput) -> Result<NewsOutput, ToolError> {
    let limit = input.limit.unwrap_or(20);
    if !(1..=MAX_NEWS_ITEMS).contains(&limit) {
        return Err(ToolError::InvalidInput(format!(
            "`limit` must be between 1 and {MAX_NEWS_ITEMS}, got {limit}"
        )));
    }
    if input.currencies.len() > crate::events::MAX_CURRENCIES {
        return Err(ToolError::InvalidInput(format!(
            "`currencies` may list at most {} codes",
            crate::events::MAX_CURRENCIES
        )));
    }
    let mut currencies = Vec::new();
    if let Some(symbol) = &input.symbol {
        check_symbol(symbol)?;
        let own = symbol_currencies(symbol);
        if own.is_empty() {
            return Err(ToolError::InvalidInput(format!(
                "`{symbol}` is not a currency pair such as EURUSD: give `currencies` instead"
            )));
        }
        currencies.extend(own);
    }
    for code in &input.currencies {
        if !is_currency(code) {
            return Err(ToolError::InvalidInput(format!(
                "invalid currency `{}`: use a 3-letter ISO code such as USD",
                code.chars().take(40).collect::<String>()
            )));
        }
        currencies.push(code.to_ascii_uppercase());
    }
    currencies.sort();
    currencies.dedup();
    let since = input
        .since
        .as_deref()
        .map(|s| parse_iso(s).map_err(|_| ToolError::InvalidInput("`since` must be an ISO 8601 time".into())))
        .transpose()?;
    if !ctx.services.news.is_enabled() {
        return Ok(NewsOutput {
            enabled: false,
            currencies,
            items: Vec::new(),
            note: Some("no news provider is configured on this server (NEWS_API_KEY)".into()),
        });
    }
    let (items, failure) = ctx.services.news.items().await;
    let items = items
        .iter()
        .filter(|i| since.is_none_or(|s| i.time >= s))
        .filter_map(|i| {
            let matched = if currencies.is_empty() {
                Vec::new()
            } else {
                let relevant = relevant_currencies(i, &currencies);
                if relevant.is_empty() {
                    return None;
                }
                relevant
            };
            Some(NewsItemOut {
                id: i.id.clone(),
                time: i.time,
                headline: i.headline.clone(),
                summary: i.summary.clone(),
                source: i.source.clone(),
                url: i.url.clone(),
                currencies: matched,
            })
        })
        .take(limit as usize)
        .collect();
    Ok(NewsOutput {
        enabled: true,
        currencies,
        items,
        note: failure.map(|e| format!("{e}; showing the last list fetched, if any")),
    })
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    vec![
        ToolSpec {
            name: "get_news",
            title: "Market news",
            description: "Latest market news from the server's news provider, newest first, optionally only items about a symbol's currencies (`EURUSD`) or given currencies (matched on codes, names and central banks). Without a provider configured on the server (`NEWS_API_KEY`) the list is empty and `enabled` is false.",
            capability: Capability::Read,
            gate: Gate::Always,
            target: Target::License,
            annotations: Annotations {
                read_only: true,
                destructive: false,
                idempotent: true,
                open_world: true,
            },
        }
        .build(get_news),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(headline: &str, summary: &str, related: &str) -> NewsItem {
        NewsItem {
            id: "1".into(),
            time: 1_000,
            headline: headline.into(),
            summary: summary.into(),
            source: "s".into(),
            url: "u".into(),
            related: related.into(),
        }
    }

    #[test]
    fn relevance_matches_codes_names_and_banks_as_whole_words() {
        let wanted = vec!["EUR".to_owned(), "USD".to_owned()];
        assert_eq!(
            relevant_currencies(&item("ECB holds rates", "", ""), &wanted),
            vec!["EUR".to_owned()]
        );
        assert_eq!(
            relevant_currencies(&item("Dollar slips; euro gains", "", ""), &wanted),
            wanted
        );
        assert_eq!(
            relevant_currencies(&item("x", "", "EURUSD"), &wanted).len(),
            0,
            "tags are whole words"
        );
        assert_eq!(
            relevant_currencies(&item("x", "", "EUR"), &wanted),
            vec!["EUR".to_owned()]
        );
        assert!(relevant_currencies(&item("Federal budget", "fedex results", ""), &["USD".into()]).is_empty());
        assert!(relevant_currencies(&item("Yen weakens after BoJ", "", ""), &wanted).is_empty());
    }

    #[test]
    fn provider_answers_are_parsed_newest_first() {
        let body = br#"[
            {"category":"forex","datetime":1700000000,"headline":"Older","id":7,"related":"","source":"A","summary":"s","url":"u"},
            {"category":"forex","datetime":1700000100,"headline":"Newer","id":"x9","source":"B"},
            {"datetime":1700000200,"headline":"  "},
            {"headline":"no time"}
        ]"#;
        let items = parse_items(body).unwrap();
        assert_eq!(
            items.iter().map(|i| i.headline.as_str()).collect::<Vec<_>>(),
            ["Newer", "Older"]
        );
        assert_eq!((items[0].id.as_str(), items[0].time), ("x9", 1_700_000_100_000));
        assert_eq!(items[1].id, "7");
        assert!(parse_items(b"{\"error\": \"bad token\"}").is_err());
    }

    #[test]
    fn symbols_and_configuration() {
        assert_eq!(symbol_currencies("EURUSD"), vec!["EUR".to_owned(), "USD".to_owned()]);
        assert_eq!(symbol_currencies("XAUUSD.m"), vec!["XAU".to_owned(), "USD".to_owned()]);
        assert!(symbol_currencies("US500").is_empty());
        assert!(!NewsService::new(None, None).unwrap().is_enabled());
        assert!(!NewsService::new(Some("  "), None).unwrap().is_enabled());
        assert!(NewsService::new(Some("k"), None).unwrap().is_enabled());
        assert!(NewsService::new(Some("k"), Some("ftp://x")).is_err());
        let shown = format!("{:?}", NewsService::new(Some("secret-key-123"), None).unwrap());
        assert!(!shown.contains("secret-key-123"), "{shown}");
    }
}
