//! The log format of every binary: `LOG_FORMAT=text` (default: human lines
//! on stderr, coloured on a terminal) or `LOG_FORMAT=json` (one JSON object
//! per line on stderr: `timestamp`, `level`, `target`, `fields` with the
//! message, and `span`/`spans` carrying the fields of the enclosing spans,
//! among them the `request` span's `request_id`). `RUST_LOG` filters as usual.

use std::io::IsTerminal;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// Parses `LOG_FORMAT` (`json` or `text`, any case; empty is text).
    ///
    /// # Errors
    /// Any other value, with a message naming the accepted ones.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!("LOG_FORMAT must be `json` or `text`, not `{other}`")),
        }
    }
}

/// The filter when `RUST_LOG` is unset.
pub const DEFAULT_FILTER: &str = "info,actix_server=warn,sqlx=warn,rmcp=warn";

/// Target of the per-request spans (`request`, `mcp_tool`) that carry the
/// request id. [`init`] always enables it at info level, whatever `RUST_LOG`
/// says, so that every line logged inside a request carries its id (a span
/// is filtered like an event: `RUST_LOG=warn` alone would drop it).
pub const REQUEST_SPAN_TARGET: &str = "tradeterm::request";

/// Installs the process's tracing subscriber (once; later calls do nothing)
/// writing to stderr in `format`, filtered by `RUST_LOG` (default
/// [`DEFAULT_FILTER`]) with the request spans always on
/// ([`REQUEST_SPAN_TARGET`]).
pub fn init(format: LogFormat) {
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    if let Ok(spans) = format!("{REQUEST_SPAN_TARGET}=info").parse() {
        filter = filter.add_directive(spans);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_ansi(false)
            .try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_format_values() {
        assert_eq!(LogFormat::parse("json"), Ok(LogFormat::Json));
        assert_eq!(LogFormat::parse(" JSON "), Ok(LogFormat::Json));
        assert_eq!(LogFormat::parse(""), Ok(LogFormat::Text));
        assert_eq!(LogFormat::parse("text"), Ok(LogFormat::Text));
        assert!(LogFormat::parse("yaml").unwrap_err().contains("LOG_FORMAT"));
    }
}
