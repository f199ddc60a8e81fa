//! Tracing setup. Logs: `RUST_LOG` wins; otherwise the server logs at `info`, its crate at
//! `debug` (`RUST_LOG=tower_http=debug` adds one line per request). Traces: with
//! `--otlp-endpoint`, OpenTelemetry spans go over OTLP/HTTP (protobuf) to that collector, a
//! span per HTTP request ([`SPAN_REQUEST`]) and per turn ([`SPAN_TURN`], with its run id and
//! backend), the turn's calls to a model provider as its children ([`SPAN_UPSTREAM`]),
//! whatever `RUST_LOG` says.

use std::time::Duration;

use anyhow::Context as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use tracing_subscriber::filter::{filter_fn, LevelFilter};
use tracing_subscriber::{
    layer::SubscriberExt as _, util::SubscriberInitExt as _, EnvFilter, Layer as _,
};

/// The span of one HTTP request.
pub const SPAN_REQUEST: &str = "http_request";
/// The span of one turn (a run), from its start to its end.
pub const SPAN_TURN: &str = "turn";
/// The span of one call to a model provider, within its turn.
pub const SPAN_UPSTREAM: &str = "upstream";

/// How long finished spans wait before they are sent (in a batch).
const EXPORT_EVERY: Duration = Duration::from_millis(500);

/// What must outlive the server for its last spans to be sent: dropping it flushes them.
pub struct Telemetry {
    traces: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.traces.take() {
            if let Err(e) = provider.shutdown() {
                eprintln!("warning: the last traces were not sent: {e}");
            }
        }
    }
}

/// Installs the global subscriber, with traces to `otlp_endpoint` when given (its base URL:
/// spans go to `/v1/traces` under it, unless it ends so already). Spans go at info and above,
/// of this server and of its HTTP layer; the events inside them go too (as span events) when
/// they are this server's own at `events` or above: never a library's, whose events say
/// what they were given. Call once, from `main`.
pub fn init(otlp_endpoint: Option<&str>, events: LevelFilter) -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,server=debug,tower_http=info"));
    let logs = tracing_subscriber::fmt::layer().with_filter(filter);
    let Some(endpoint) = otlp_endpoint else {
        tracing_subscriber::registry().with(logs).init();
        return Ok(Telemetry { traces: None });
    };
    let provider = traces(endpoint)?;
    let tracer = provider.tracer("anchorage");
    let spans = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(filter_fn(move |meta| exported(meta, events)));
    tracing_subscriber::registry().with(logs).with(spans).init();
    Ok(Telemetry {
        traces: Some(provider),
    })
}

/// Whether what `meta` describes goes to the collector: a span of this server or its HTTP
/// layer at info or above; an event of this server's at `events` or above.
pub fn exported(meta: &tracing::Metadata<'_>, events: LevelFilter) -> bool {
    let ours = meta.target() == "server" || meta.target().starts_with("server::");
    if meta.is_span() {
        let http = meta.target() == "tower_http" || meta.target().starts_with("tower_http::");
        (ours || http) && LevelFilter::INFO >= *meta.level()
    } else {
        ours && events >= *meta.level()
    }
}

/// The tracer provider that sends spans to `endpoint`.
fn traces(endpoint: &str) -> anyhow::Result<opentelemetry_sdk::trace::SdkTracerProvider> {
    let base = endpoint.trim_end_matches('/');
    let url = if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(url.clone())
        .with_timeout(Duration::from_secs(10))
        .build()
        .with_context(|| format!("setting up traces to {url}"))?;
    let batches = opentelemetry_sdk::trace::BatchConfigBuilder::default()
        .with_scheduled_delay(EXPORT_EVERY)
        .build();
    let processor = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter)
        .with_batch_config(batches)
        .build();
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("anchorage")
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .build())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::Subscriber;
    use tracing_subscriber::filter::{filter_fn, LevelFilter};
    use tracing_subscriber::layer::{Context, SubscriberExt as _};
    use tracing_subscriber::Layer;

    use super::exported;

    /// A layer that notes what reaches it: `span NAME` or `event TARGET LEVEL`.
    struct Seen(Arc<Mutex<Vec<String>>>);

    impl<S: Subscriber> Layer<S> for Seen {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            let meta = event.metadata();
            self.0
                .lock()
                .unwrap()
                .push(format!("event {} {}", meta.target(), meta.level()));
        }

        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: Context<'_, S>,
        ) {
            self.0
                .lock()
                .unwrap()
                .push(format!("span {}", attrs.metadata().name()));
        }
    }

    #[test]
    fn spans_go_out_and_only_this_servers_events_at_the_level_chosen() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let layer =
            Seen(Arc::clone(&seen)).with_filter(filter_fn(|m| exported(m, LevelFilter::WARN)));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let _request = tracing::info_span!(target: "server", "request").entered();
            let _http = tracing::info_span!(target: "tower_http::trace", "http").entered();
            let _quiet = tracing::debug_span!(target: "server", "quiet").entered();
            tracing::info!(target: "server::routes::attachments", "a file's name");
            tracing::warn!(target: "server::runner", "kept");
            tracing::error!(target: "hyper::proto", "a library's");
            tracing::warn!(target: "serverless", "not this server");
        });
        assert_eq!(
            *seen.lock().unwrap(),
            ["span request", "span http", "event server::runner WARN"]
        );
    }
}
