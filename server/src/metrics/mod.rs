//! What the server measures of itself, for Prometheus: runs started and ended, tokens, the
//! time to a turn's first token and its length, event stream followers, journal commits,
//! HTTP requests and requests refused by a limit. Served as text on `--metrics-addr` (off by
//! default, loopback only): never on the app's own address, so never public by accident.
//! README.md lists every metric.

pub mod series;
pub mod store;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use series::{Counters, Gauge, Histograms};

/// Seconds, for a turn's first token.
const FIRST_TOKEN: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
/// Seconds, for a turn's length.
const TURN: &[f64] = &[
    0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0,
];
/// Seconds, for a journal commit.
const COMMIT: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];
/// Events, for a journal batch.
const BATCH: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// The server's metrics (one set per server).
pub struct Metrics {
    /// Runs started.
    pub runs_started: Counters,
    /// Runs ended, by how.
    pub runs_ended: Counters,
    /// Tokens the provider reported, into the model and out of it.
    pub tokens: Counters,
    /// Time from a run's start to its first token of answer.
    pub first_token: Histograms,
    /// Time from a run's start to its end.
    pub turn_duration: Histograms,
    /// Event streams open now.
    pub sse_followers: Gauge,
    /// Time one journal transaction took.
    pub journal_commit: Histograms,
    /// Events in one journal transaction.
    pub journal_batch: Histograms,
    /// HTTP requests answered.
    pub http_requests: Counters,
    /// Requests a limit refused (429, 413).
    pub limits_refused: Counters,
    /// Bytes of journal frames read for event streams (replays and gap fills).
    pub replay_bytes_read: AtomicU64,
    /// Bytes event streams handed to their connections (what is read but not handed on is
    /// what the server holds for slow clients).
    pub stream_bytes_out: AtomicU64,
    /// Journal batches that failed and were tried again.
    pub journal_retries: AtomicU64,
    /// Journal batches written (each one transaction, however many events and runs it holds).
    pub journal_batches: AtomicU64,
    /// How the database's writes fare (`/healthz`, `anchorage_store_failures_total`).
    pub store: store::StoreHealth,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            runs_started: Counters::new(
                "anchorage_runs_started_total",
                "Runs (assistant turns) started.",
                &["backend"],
            ),
            runs_ended: Counters::new(
                "anchorage_runs_ended_total",
                "Runs ended, by terminal state (completed, cancelled, failed, interrupted, ...).",
                &["backend", "state"],
            ),
            tokens: Counters::new(
                "anchorage_tokens_total",
                "Tokens the provider reported: in (the prompt) and out (the answer).",
                &["backend", "direction"],
            ),
            first_token: Histograms::new(
                "anchorage_first_token_seconds",
                "Seconds from a run's start to its first token of answer.",
                &["backend"],
                FIRST_TOKEN,
            ),
            turn_duration: Histograms::new(
                "anchorage_turn_duration_seconds",
                "Seconds from a run's start to its end, by terminal state.",
                &["backend", "state"],
                TURN,
            ),
            sse_followers: Gauge::new("anchorage_sse_followers", "Event streams (SSE) open now."),
            journal_commit: Histograms::new(
                "anchorage_journal_commit_seconds",
                "Seconds one journal transaction took (retries included).",
                &[],
                COMMIT,
            ),
            journal_batch: Histograms::new(
                "anchorage_journal_batch_events",
                "Journal writes committed in one transaction.",
                &[],
                BATCH,
            ),
            http_requests: Counters::new(
                "anchorage_http_requests_total",
                "HTTP requests answered, by route (as the router names it), method and status.",
                &["route", "method", "status"],
            ),
            limits_refused: Counters::new(
                "anchorage_limits_refused_total",
                "Requests refused by a limit (429 too many, 413 too large), by route and status.",
                &["route", "status"],
            ),
            replay_bytes_read: AtomicU64::new(0),
            stream_bytes_out: AtomicU64::new(0),
            journal_retries: AtomicU64::new(0),
            journal_batches: AtomicU64::new(0),
            store: store::StoreHealth::default(),
        }
    }
}

impl Metrics {
    /// The metrics in Prometheus's text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.runs_started.write(&mut out);
        self.runs_ended.write(&mut out);
        self.tokens.write(&mut out);
        self.first_token.write(&mut out);
        self.turn_duration.write(&mut out);
        self.sse_followers.write(&mut out);
        self.journal_commit.write(&mut out);
        self.journal_batch.write(&mut out);
        self.http_requests.write(&mut out);
        self.limits_refused.write(&mut out);
        self.store.failures.write(&mut out);
        for (name, help, counter) in [
            (
                "anchorage_journal_batches_total",
                "Journal transactions written.",
                &self.journal_batches,
            ),
            (
                "anchorage_journal_retries_total",
                "Journal transactions that failed and were tried again.",
                &self.journal_retries,
            ),
            (
                "anchorage_replay_bytes_read_total",
                "Bytes of journal frames read for event streams (replays, gap fills).",
                &self.replay_bytes_read,
            ),
            (
                "anchorage_stream_bytes_out_total",
                "Bytes event streams handed to their connections.",
                &self.stream_bytes_out,
            ),
        ] {
            series::write_plain(&mut out, name, help, "counter", Self::get(counter));
        }
        out
    }

    /// Adds to one of the plain counters.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads one of the plain counters.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// A run ended as `state` after `took`, having reported `usage` (`input_tokens`,
    /// `output_tokens`) and, when it streamed an answer, its first token after `first_token`.
    pub fn ended(
        &self,
        backend: &str,
        state: &str,
        took: Option<Duration>,
        first_token: Option<Duration>,
        usage: Option<&serde_json::Value>,
    ) {
        self.runs_ended.inc(&[backend, state]);
        if let Some(took) = took {
            self.turn_duration
                .observe(&[backend, state], took.as_secs_f64());
        }
        if let Some(first) = first_token {
            self.first_token.observe(&[backend], first.as_secs_f64());
        }
        for (key, direction) in [("input_tokens", "in"), ("output_tokens", "out")] {
            if let Some(n) = usage.and_then(|u| u[key].as_u64()) {
                self.tokens.add(&[backend, direction], n);
            }
        }
    }

    /// One more event stream open, until the guard is dropped.
    pub fn follower(self: &Arc<Self>) -> Follower {
        self.sse_followers.add(1);
        Follower(Arc::clone(self))
    }
}

/// An open event stream, counted in [`Metrics::sse_followers`] while it lives.
pub struct Follower(Arc<Metrics>);

impl Drop for Follower {
    fn drop(&mut self) {
        self.0.sse_followers.add(-1);
    }
}

/// The route that answers a request, as the router names it (`/s/{session_id}`), never its
/// path: `unmatched` for what no route took (a static file, a 404).
pub fn route_of<B>(request: &axum::http::Request<B>) -> &str {
    request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
}

/// A request's method as a label: one of HTTP's, else `other` (a method is any token a
/// client makes up, and each would be a series of its own).
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// Counts every request the app answers, by the route that answered it.
pub async fn count_requests(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let route = route_of(&request).to_owned();
    let method = method_label(request.method());
    let response = next.run(request).await;
    let status = response.status();
    let code = status.as_str();
    metrics.http_requests.inc(&[&route, method, code]);
    if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::PAYLOAD_TOO_LARGE {
        metrics.limits_refused.inc(&[&route, code]);
    }
    response
}

/// `GET /metrics` on the metrics address.
async fn exposition(State(metrics): State<Arc<Metrics>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics.render(),
    )
        .into_response()
}

/// Serves `/metrics` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = axum::Router::new()
        .route("/metrics", axum::routing::get(exposition))
        .with_state(metrics);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Refuses a metrics address other than loopback: metrics name routes and load, and nothing
/// guards them but where they listen.
pub fn checked_addr(addr: std::net::SocketAddr) -> anyhow::Result<std::net::SocketAddr> {
    if addr.ip().is_loopback() {
        Ok(addr)
    } else {
        anyhow::bail!(
            "--metrics-addr {addr} is not a loopback address: metrics are served on this \
             machine only (127.0.0.1 or [::1]); let Prometheus scrape through a tunnel or a \
             proxy that checks who asks"
        )
    }
}
