//! What the server tells operators: `/metrics` on `--metrics-addr`, read by a Prometheus text
//! parser, with counters that move by exactly one per run; and OpenTelemetry traces over
//! OTLP/HTTP (`--otlp-endpoint`), received by a collector stand-in and decoded with the
//! official protobuf definitions: a span per HTTP request, a span per turn with its run id and
//! backend, the call to the model provider as the turn's child.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{json, Value};

use crate::backends::{stream, COMPLETIONS};
use crate::helpers::{free_port, ServerProcess, TestDb};
use crate::upstream::{delta, usage, Upstream, DONE};

/// A stand-in OTLP/HTTP collector: keeps the body of every `POST /v1/traces`.
struct Collector {
    url: String,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Collector {
    async fn start() -> Collector {
        let bodies: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
        let kept = Arc::clone(&bodies);
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                kept.lock().unwrap().push(body.to_vec());
                // An empty ExportTraceServiceResponse.
                std::future::ready((
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                ))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Collector { url, bodies }
    }

    /// Every span received so far.
    fn spans(&self) -> Vec<Span> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .flat_map(|body| {
                ExportTraceServiceRequest::decode(body.as_slice())
                    .expect("an OTLP protobuf export")
                    .resource_spans
            })
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }
}

/// A span's string (or integer, as text) attribute.
fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map(|v| match v {
            Any::StringValue(s) => s.clone(),
            Any::IntValue(i) => i.to_string(),
            other => format!("{other:?}"),
        })
}

/// The samples of a scrape, by metric name and labels (sorted `k=v` pairs).
fn scrape_of(text: &str) -> HashMap<(String, String), f64> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    scrape
        .samples
        .into_iter()
        .filter_map(|s| {
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => return None,
            };
            let mut labels: Vec<String> =
                s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            labels.sort();
            Some(((s.metric, labels.join(",")), value))
        })
        .collect()
}

fn sample(scrape: &HashMap<(String, String), f64>, name: &str, labels: &str) -> f64 {
    scrape
        .get(&(name.to_owned(), labels.to_owned()))
        .copied()
        .unwrap_or(0.0)
}

/// A histogram's observation count, from the scrape's text (`name_count{labels}`).
fn histogram_count(text: &str, name: &str, labels: &str) -> u64 {
    let prefix = format!("{name}_count{labels} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.parse().unwrap())
}

async fn post(client: &reqwest::Client, base: &str, path: &str, body: Value) -> Value {
    client
        .post(format!("{base}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn wait_finished(client: &reqwest::Client, base: &str, run: &str) {
    for _ in 0..400 {
        let status: Value = client
            .get(format!("{base}/api/chat/stream/status?run_id={run}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if status["terminal_state"].is_string() && status["active"] == false {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {run} did not finish");
}

#[tokio::test]
async fn metrics_count_each_run_once_and_traces_reach_a_collector() {
    let collector = Collector::start().await;
    let upstream = Upstream::start().await;
    for _ in 0..2 {
        upstream.script(
            COMPLETIONS,
            stream(&[
                delta(json!({ "content": "Hello there." }), None),
                delta(json!({}), Some("stop")),
                usage(40, 7),
                DONE.to_owned(),
            ]),
        );
    }
    let db = TestDb::new().await;
    let site = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let metrics_addr = format!("127.0.0.1:{}", free_port());
    let provider = upstream.url("/v1");
    let server = ServerProcess::launch_with(
        &db,
        site.path(),
        &[
            "--backend",
            "openai",
            "--openai-base-url",
            &provider,
            "--model",
            "scripted",
            "--workspace",
            workspace.path().to_str().unwrap(),
            "--metrics-addr",
            &metrics_addr,
            "--otlp-endpoint",
            &collector.url,
        ],
        &[("OPENAI_API_KEY", "sk-test")],
    )
    .await;
    let client = reqwest::Client::new();
    let metrics_url = format!("http://{metrics_addr}/metrics");
    let scrape = || async {
        let response = client.get(&metrics_url).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"));
        response.text().await.unwrap()
    };
    // Only on the metrics address: the app's own answers 404.
    let public = client
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), 404);

    let session = post(&client, &server.base, "/api/session/new", json!({})).await;
    let session = session["session"]["id"].as_str().unwrap().to_owned();
    let mut runs = Vec::new();
    for round in 0..2 {
        let before_text = scrape().await;
        let before = scrape_of(&before_text);
        let started = post(
            &client,
            &server.base,
            "/api/chat/start",
            json!({"session_id": session, "message": format!("Hi {round}")}),
        )
        .await;
        let run = started["run_id"].as_str().unwrap().to_owned();
        wait_finished(&client, &server.base, &run).await;
        runs.push(run);
        let after_text = scrape().await;
        let after = scrape_of(&after_text);
        let moved =
            |name: &str, labels: &str| sample(&after, name, labels) - sample(&before, name, labels);
        assert_eq!(
            moved("anchorage_runs_started_total", "backend=openai"),
            1.0,
            "round {round}"
        );
        assert_eq!(
            moved(
                "anchorage_runs_ended_total",
                "backend=openai,state=completed"
            ),
            1.0,
            "round {round}"
        );
        assert_eq!(
            moved("anchorage_tokens_total", "backend=openai,direction=in"),
            40.0
        );
        assert_eq!(
            moved("anchorage_tokens_total", "backend=openai,direction=out"),
            7.0
        );
        assert_eq!(
            moved(
                "anchorage_http_requests_total",
                "method=POST,route=/api/chat/start,status=200"
            ),
            1.0
        );
        for (name, labels) in [
            ("anchorage_first_token_seconds", "{backend=\"openai\"}"),
            (
                "anchorage_turn_duration_seconds",
                "{backend=\"openai\",state=\"completed\"}",
            ),
        ] {
            assert_eq!(
                histogram_count(&after_text, name, labels)
                    - histogram_count(&before_text, name, labels),
                1,
                "{name}"
            );
        }
        assert!(
            histogram_count(&after_text, "anchorage_journal_batch_events", "")
                > histogram_count(&before_text, "anchorage_journal_batch_events", "")
        );
        assert_eq!(sample(&after, "anchorage_sse_followers", ""), 0.0);
    }
    // A refusal by a limit is counted as one: a message past its size.
    let before = scrape_of(&scrape().await);
    let refused = client
        .post(format!("{}/api/chat/start", server.base))
        .json(&json!({"session_id": session, "message": "x".repeat(70_000)}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 413);
    let after = scrape_of(&scrape().await);
    assert_eq!(
        sample(
            &after,
            "anchorage_limits_refused_total",
            "route=/api/chat/start,status=413"
        ) - sample(
            &before,
            "anchorage_limits_refused_total",
            "route=/api/chat/start,status=413"
        ),
        1.0
    );

    // The spans: each turn's, with its run id and backend, its provider call as its child,
    // and the request that started it.
    let mut spans = Vec::new();
    for _ in 0..100 {
        spans = collector.spans();
        let turns = spans.iter().filter(|s| s.name == "turn").count();
        let calls = spans.iter().filter(|s| s.name == "upstream").count();
        if turns >= 2 && calls >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for run in &runs {
        let turn = spans
            .iter()
            .find(|s| s.name == "turn" && attribute(s, "run_id").as_deref() == Some(run))
            .unwrap_or_else(|| panic!("no span of turn {run}: {spans:#?}"));
        assert_eq!(attribute(turn, "backend").as_deref(), Some("openai"));
        assert_eq!(
            attribute(turn, "session_id").as_deref(),
            Some(session.as_str())
        );
        let call = spans
            .iter()
            .find(|s| s.name == "upstream" && s.parent_span_id == turn.span_id)
            .unwrap_or_else(|| panic!("no provider call under turn {run}"));
        assert_eq!(call.trace_id, turn.trace_id);
        assert_eq!(
            attribute(call, "gen_ai.request.model").as_deref(),
            Some("scripted")
        );
        // The turn is a child of the request that started it.
        let request = spans
            .iter()
            .find(|s| s.span_id == turn.parent_span_id)
            .expect("the turn's parent span");
        assert_eq!(request.name, "http_request");
        assert_eq!(
            attribute(request, "http.route").as_deref(),
            Some("/api/chat/start")
        );
        assert_eq!(attribute(request, "url.path"), None, "never a path");
        assert_eq!(
            attribute(request, "http.response.status_code").as_deref(),
            Some("200")
        );
    }

    // A share link's token is a secret: a span names its route, never its path. A file's
    // name is the person's: the log event that names it stays out of the spans.
    let shared = post(
        &client,
        &server.base,
        "/api/share",
        json!({"session_id": session}),
    )
    .await;
    let share_path = shared["share"]["path"].as_str().unwrap().to_owned();
    let token = share_path.rsplit('/').next().unwrap().to_owned();
    let page = client
        .get(format!("{}{share_path}", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let file_name = "quarterly-secret-plans.txt";
    let uploaded = client
        .post(format!("{}/api/attachments?name={file_name}", server.base))
        .header("content-type", "application/octet-stream")
        .body("plans")
        .send()
        .await
        .unwrap();
    assert_eq!(uploaded.status(), 201);
    // Made-up methods are counted as `other`, never one series each.
    let before = scrape_of(&scrape().await);
    for i in 0..30 {
        let method = reqwest::Method::from_bytes(format!("MADEUP{i}").as_bytes()).unwrap();
        let res = client
            .request(method, format!("{}/api/sessions", server.base))
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        assert!(res.status().is_client_error(), "{}", res.status());
    }
    let after_text = scrape().await;
    assert!(
        !after_text.contains("MADEUP"),
        "a made-up method became a label"
    );
    let after = scrape_of(&after_text);
    let others = |scrape: &HashMap<(String, String), f64>| -> f64 {
        scrape
            .iter()
            .filter(|((name, labels), _)| {
                name == "anchorage_http_requests_total" && labels.contains("method=other")
            })
            .map(|(_, v)| v)
            .sum()
    };
    assert_eq!(others(&after) - others(&before), 30.0);

    let mut shared_span = false;
    for _ in 0..100 {
        let spans = collector.spans();
        shared_span = spans
            .iter()
            .any(|s| attribute(s, "http.route").as_deref() == Some("/share/{token}"));
        if shared_span
            && spans
                .iter()
                .any(|s| attribute(s, "http.route").as_deref() == Some("/api/attachments"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(shared_span, "the share page's request span");
    for span in collector.spans() {
        let text = format!("{span:?}");
        assert!(!text.contains(&token), "a share token in {text}");
        assert!(!text.contains(file_name), "a file's name in {text}");
    }
}

#[tokio::test]
async fn a_metrics_address_off_loopback_is_refused() {
    let db = TestDb::new().await;
    let site = tempfile::tempdir().unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let metrics = format!("0.0.0.0:{}", free_port());
    let output = ServerProcess::command(&db, site.path(), &addr, &["--metrics-addr", &metrics])
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the server binary runs");
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("not a loopback address"), "{said}");
}
