//! The process's Prometheus recorder: installed once ([`install`], which
//! every server's `build` calls, so tests that build servers get metrics
//! too), rendered for `GET /metrics` ([`render`]). Every listener of a
//! process shares it: in `tradeterm serve` the REST, MCP and gateway ports
//! show the same registry.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::names::{ALL, Kind};

/// Upper bounds of the latency histograms, seconds: from 1 ms (an answer
/// from the quote cache) to 120 s (the longest dispatch timeout).
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// How often histogram buffers are folded into their buckets when nobody
/// scrapes (rendering does it too).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the Prometheus recorder as the process's `metrics` recorder, once
/// (later calls do nothing), with the help texts of [`crate::names::ALL`] and
/// a background thread that runs the recorder's upkeep. If another recorder
/// is already installed, metrics are not collected here and `/metrics` says
/// so; the process keeps running.
pub fn install() {
    HANDLE.get_or_init(|| {
        let builder = match PrometheusBuilder::new().set_buckets(LATENCY_BUCKETS) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "metrics: invalid histogram buckets; metrics are off");
                return None;
            }
        };
        match builder.install_recorder() {
            Ok(handle) => {
                describe();
                let upkeep = handle.clone();
                let spawned = std::thread::Builder::new()
                    .name("metrics-upkeep".into())
                    .spawn(move || {
                        loop {
                            std::thread::sleep(UPKEEP_EVERY);
                            upkeep.run_upkeep();
                        }
                    });
                if let Err(e) = spawned {
                    tracing::warn!(error = %e, "metrics: no upkeep thread; histograms are folded on scrape only");
                }
                Some(handle)
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics: another recorder is installed; /metrics stays empty");
                None
            }
        }
    });
}

fn describe() {
    for (name, kind, help) in ALL {
        match kind {
            Kind::Counter => ::metrics::describe_counter!(*name, *help),
            Kind::Gauge => ::metrics::describe_gauge!(*name, *help),
            Kind::Histogram => ::metrics::describe_histogram!(*name, ::metrics::Unit::Seconds, *help),
        }
    }
}

/// Whether this process's Prometheus recorder is installed: handles taken
/// before that would be no-ops for good, so [`crate::record`] keeps handles
/// only once it is.
pub(crate) fn installed() -> bool {
    HANDLE.get().is_some_and(Option::is_some)
}

/// The metrics of the process in the Prometheus text format (installing the
/// recorder first if nobody has).
pub fn render() -> String {
    install();
    match HANDLE.get().and_then(Option::as_ref) {
        Some(handle) => handle.render(),
        None => "# metrics are not collected in this process (another recorder is installed)\n".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::names;
    use crate::record::{self, DispatchSide, DispatchTimer};
    use crate::scrape::Scrape;

    #[test]
    fn recorded_events_show_in_the_text_with_their_labels() {
        super::install();
        let before = Scrape::parse(&super::render());
        let rest = [
            ("service", "unit"),
            ("route", "/x/{id}"),
            ("method", "GET"),
            ("status", "200"),
        ];
        record::http_request("unit", "/x/{id}", "GET", 200, Duration::from_millis(3));
        record::http_request("unit", "/x/{id}", "GET", 200, Duration::from_millis(30));
        DispatchTimer::start(DispatchSide::Gateway, "unit_cmd").finish("timeout");
        record::rate_limit("unit", "limited", false);
        {
            let _session = record::McpSessionGuard::open();
            let open = Scrape::parse(&super::render()).value(names::MCP_SESSIONS_OPEN, &[]);
            assert!(open >= 1.0, "{open}");
        }
        let text = super::render();
        let after = Scrape::parse(&text);
        let moved = |name: &str, labels: &[(&str, &str)]| after.value(name, labels) - before.value(name, labels);
        assert_eq!(moved(names::HTTP_REQUESTS_TOTAL, &rest), 2.0);
        let hist = [("service", "unit"), ("route", "/x/{id}"), ("method", "GET")];
        let count = format!("{}_count", names::HTTP_REQUEST_DURATION_SECONDS);
        assert_eq!(moved(&count, &hist), 2.0);
        let bucket = format!("{}_bucket", names::HTTP_REQUEST_DURATION_SECONDS);
        assert_eq!(moved(&bucket, &[("route", "/x/{id}"), ("le", "0.005")]), 1.0, "{text}");
        let d = [("side", "gateway"), ("command", "unit_cmd"), ("outcome", "timeout")];
        assert_eq!(moved(names::DISPATCH_TOTAL, &d), 1.0);
        let rl = [("bucket", "unit"), ("decision", "limited"), ("counter", "local")];
        assert_eq!(moved(names::RATE_LIMIT_DECISIONS_TOTAL, &rl), 1.0);
        assert!(moved(names::MCP_SESSIONS_TOTAL, &[]) >= 1.0);
        assert!(text.contains("# HELP tradeterm_dispatch_total"), "{text}");
        assert!(
            text.contains("# TYPE tradeterm_http_request_duration_seconds histogram"),
            "{text}"
        );
    }

    #[test]
    fn requests_past_the_handle_cache_are_counted_too() {
        super::install();
        let before = Scrape::parse(&super::render());
        // More (method, status) pairs on one route than a thread keeps handles for.
        for status in 200..260u16 {
            record::http_request("unit-cap", "/cap", "GET", status, Duration::from_millis(1));
            record::http_request("unit-cap", "/cap", "GET", status, Duration::from_millis(1));
        }
        let after = Scrape::parse(&super::render());
        for status in [200u16, 231, 232, 259] {
            let labels = [
                ("service", "unit-cap"),
                ("route", "/cap"),
                ("status", &status.to_string()),
            ];
            let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, &**v)).collect();
            let moved =
                after.value(names::HTTP_REQUESTS_TOTAL, &labels) - before.value(names::HTTP_REQUESTS_TOTAL, &labels);
            assert_eq!(moved, 2.0, "status {status}");
        }
        let count = format!("{}_count", names::HTTP_REQUEST_DURATION_SECONDS);
        let hist = [("service", "unit-cap"), ("route", "/cap")];
        assert_eq!(after.value(&count, &hist) - before.value(&count, &hist), 120.0);
    }
}
