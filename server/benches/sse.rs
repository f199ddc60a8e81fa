//! Server benchmarks (a bench binary; `cargo bench -p server --bench sse`):
//!
//! 1. Replay: a finished run's 100k-event journal streamed over SSE on loopback, against a bare
//!    axum route streaming the same bytes from memory, in the same process and run.
//! 2. Fan-out: 1,000 followers of one run producing 200 events/s; delivery latency from the
//!    moment an event is emitted to the moment a follower has read it.
//! 3. Memory: resident memory per idle follower.
//! 4. Journal: events committed per second through the journal writer, one run appending
//!    one event at a time (each waits for its commit) and 32 runs appending at once.
//!
//! Each runs on SQLite; with `ANCHORAGE_TEST_DATABASE_URL` (a PostgreSQL database, as
//! `scripts/with-postgres.sh` gives) replay and journal run on PostgreSQL too, in the same
//! run, and fan-out runs once more with the 1,000 followers split over two instances sharing
//! the database, the run on one of them (`fanout_two_instances`).
//!
//! Prints one JSON object.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::body::Body;
use axum::routing::get;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Map, Value};
use server::runtime::{RunEnd, RunIo, RuntimeAdapter, TurnRequest};
use server::store::{JournalOp, NewEvent, Store};
use server::AppState;

// The tests' way to start a server (most of its helpers are the tests', not used here).
#[allow(dead_code)]
#[path = "../tests/api/helpers.rs"]
mod helpers;
use helpers::{TestApp, TestDb};

const REPLAY_EVENTS: u64 = 100_000;
const FOLLOWERS: usize = 1_000;
const RATE_PER_SEC: u64 = 200;
const FANOUT_SECONDS: u64 = 5;

/// Emits token events at a fixed rate, each stamped with its send time in microseconds.
struct Metronome {
    events: u64,
    interval: Duration,
}

fn micros_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

#[async_trait]
impl RuntimeAdapter for Metronome {
    fn name(&self) -> &'static str {
        "metronome"
    }

    async fn run(&self, turn: TurnRequest, io: RunIo) -> RunEnd {
        if turn.message == "idle" {
            io.stopped().await;
            return RunEnd::Cancelled;
        }
        let mut ticker = tokio::time::interval(self.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Let followers connect first.
        if io.sleep(Duration::from_secs(3)).await.is_err() {
            return RunEnd::Cancelled;
        }
        for i in 0..self.events {
            ticker.tick().await;
            if io
                .emit(
                    anchor::EventKind::Token,
                    json!({"text": format!("t{i} "), "sent_us": micros_now()}),
                )
                .await
                .is_err()
            {
                return RunEnd::Cancelled;
            }
        }
        RunEnd::Completed {
            answer: "done".into(),
            usage: None,
        }
    }
}

/// Where a benchmark keeps its data.
/// The engines to measure: SQLite, and PostgreSQL when `ANCHORAGE_TEST_DATABASE_URL` names one.
fn engines() -> Vec<&'static str> {
    let mut engines = vec!["sqlite"];
    if std::env::var(helpers::TEST_DATABASE_ENV).is_ok_and(|u| !u.trim().is_empty()) {
        engines.push("postgres");
    }
    engines
}

/// A new, empty database of `engine`.
async fn fresh(engine: &str) -> TestDb {
    match engine {
        "postgres" => TestDb::postgres()
            .await
            .expect("ANCHORAGE_TEST_DATABASE_URL"),
        _ => TestDb::sqlite(),
    }
}

async fn app(adapter: Arc<dyn RuntimeAdapter>) -> (String, AppState, TestApp) {
    app_on(adapter, TestDb::sqlite()).await
}

/// A server over `db` on a loopback port, as the tests start one: (its address, its state,
/// the server, which stops when dropped).
async fn app_on(adapter: Arc<dyn RuntimeAdapter>, db: TestDb) -> (String, AppState, TestApp) {
    let app = TestApp::builder()
        .db(db)
        .adapter(adapter)
        // Every follower here is the same (open-mode) reader: the per-account stream limit
        // would refuse all but the first 64.
        .configure(|state| {
            state.limits.max_streams_per_user = 4 * FOLLOWERS;
            state.limits.max_streams = 4 * FOLLOWERS;
        })
        .spawn()
        .await;
    (app.api.base.clone(), app.state.clone(), app)
}

/// Reads a whole response, returning (bytes, seconds).
async fn drain(client: &reqwest::Client, url: &str) -> (usize, f64) {
    let start = Instant::now();
    let res = client.get(url).send().await.unwrap();
    let mut body = res.bytes_stream();
    let mut total = 0;
    while let Some(chunk) = body.next().await {
        total += chunk.unwrap().len();
    }
    (total, start.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

async fn replay_benchmark(db: TestDb) -> Value {
    let (base, state, _data) = app_on(
        Arc::new(Metronome {
            events: 0,
            interval: Duration::from_millis(1),
        }),
        db,
    )
    .await;
    let store: Arc<dyn Store> = Arc::clone(&state.store);
    let session = store.create_session("bench", None, 0.0).await.unwrap();
    let run_id = "replay-run";
    store
        .start_run(server::store::NewTurn {
            session_id: &session.id,
            run_id,
            turn_id: "turn-bench",
            user_message_id: "msg-bench",
            message: "bench",
            attachments: &[],
            client_id: None,
            queued_id: None,
            place: server::store::TurnAt::Next,
            default_model: None,
            // This instance's: no reaper takes it while the journal is written.
            lease: server::store::Lease {
                instance: state.runner.instance(),
                until: f64::MAX,
            },
            max_running: None,
            now: 0.0,
        })
        .await
        .unwrap();
    // A realistic journal: token-sized payloads with timestamps, committed in batches.
    let mut seq = 0;
    while seq < REPLAY_EVENTS {
        let ops: Vec<JournalOp> = (0..2000)
            .map(|i| {
                let mut payload = Map::new();
                payload.insert("text".into(), Value::from(format!("word{} ", seq + i)));
                payload.insert("created_at".into(), Value::from(1_781_200_000.123));
                JournalOp::Append {
                    run_id: run_id.into(),
                    event: NewEvent {
                        kind: anchor::EventKind::Token,
                        payload,
                        terminal_state: None,
                        created_at: 1_781_200_000.123,
                    },
                }
            })
            .collect();
        for result in store.commit(ops).await.unwrap() {
            result.expect("journaled");
        }
        seq += 2000;
    }
    let mut end = Map::new();
    end.insert("created_at".into(), Value::from(1_781_200_000.123));
    store
        .commit(vec![JournalOp::Settle {
            run_id: run_id.into(),
            terminal: NewEvent {
                kind: anchor::EventKind::Done,
                payload: end,
                terminal_state: Some(anchor::TerminalState::Completed),
                created_at: 1_781_200_000.123,
            },
            answer: server::store::SettledAnswer {
                message_id: "m".into(),
                content: "done".into(),
                usage: None,
                cut_off: false,
            },
        }])
        .await
        .unwrap();

    // The journal read alone, without HTTP.
    let mut reads = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let mut after = 0;
        loop {
            let page = store.frames(run_id, after, None, 16_384).await.unwrap();
            if page.count == 0 {
                break;
            }
            after = page.last_seq;
        }
        reads.push(start.elapsed().as_secs_f64());
    }
    let store_read_ms = median(reads) * 1000.0;

    let client = reqwest::Client::new();
    let url = format!("{base}/api/chat/stream?run_id={run_id}");
    // The same bytes, from memory, through a bare axum route.
    let (bytes, _) = drain(&client, &url).await;
    let res = client.get(&url).send().await.unwrap();
    let body = res.bytes().await.unwrap();
    assert_eq!(body.len(), bytes);
    let chunks: Arc<Vec<Bytes>> =
        Arc::new(body.chunks(8 * 1024).map(Bytes::copy_from_slice).collect());
    let bare = axum::Router::new().route(
        "/bare",
        get(move || {
            let chunks = Arc::clone(&chunks);
            async move {
                let stream = futures::stream::iter(
                    (0..chunks.len())
                        .map(move |i| Ok::<_, std::convert::Infallible>(chunks[i].clone())),
                );
                Body::from_stream(stream)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bare_url = format!("http://{}/bare", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, bare).await.unwrap() });

    let mut ours = Vec::new();
    let mut baseline = Vec::new();
    for _ in 0..15 {
        let (n, t) = drain(&client, &url).await;
        assert_eq!(n, bytes);
        ours.push(t);
        let (n, t) = drain(&client, &bare_url).await;
        assert_eq!(n, bytes);
        baseline.push(t);
    }
    let (ours, baseline) = (median(ours), median(baseline));
    json!({
        "events": REPLAY_EVENTS + 3,
        "bytes": bytes,
        "journal_replay_ms": (ours * 1000.0 * 10.0).round() / 10.0,
        "bare_memory_ms": (baseline * 1000.0 * 10.0).round() / 10.0,
        "journal_events_per_sec": ((REPLAY_EVENTS + 3) as f64 / ours).round(),
        "throughput_ratio": ((baseline / ours) * 1000.0).round() / 1000.0,
        "journal_read_without_http_ms": (store_read_ms * 10.0).round() / 10.0,
    })
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

async fn fanout_benchmark() -> Value {
    let events = RATE_PER_SEC * FANOUT_SECONDS;
    let (base, _state, _data) = app(Arc::new(Metronome {
        events,
        interval: Duration::from_micros(1_000_000 / RATE_PER_SEC),
    }))
    .await;
    fan_out(&base, std::slice::from_ref(&base), events).await
}

/// The same with two instances on one PostgreSQL database: the run on the first, half the
/// followers on each (those on the second read it through its feed).
async fn fanout_two_instances_benchmark() -> Value {
    let events = RATE_PER_SEC * FANOUT_SECONDS;
    let db = fresh("postgres").await;
    let adapter = || {
        Arc::new(Metronome {
            events,
            interval: Duration::from_micros(1_000_000 / RATE_PER_SEC),
        })
    };
    // A second instance: the same database, a data directory of its own.
    let second = TestDb {
        dir: tempfile::tempdir().unwrap(),
        url: db.url.clone(),
    };
    let (b, _state_b, _data_b) = app_on(adapter(), second).await;
    let (a, _state_a, _data_a) = app_on(adapter(), db).await;
    let mut result = fan_out(&a, &[a.clone(), b.clone()], events).await;
    result["instances"] = json!(2);
    result
}

/// Starts a run on `owner` and follows it with [`FOLLOWERS`] followers spread over `bases`.
async fn fan_out(owner: &str, bases: &[String], events: u64) -> Value {
    let base = owner;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let api = helpers::Api::new(base);
    let session = api.new_session().await;
    let run = api.start(&session, "go").await;
    let mut tasks = Vec::with_capacity(FOLLOWERS);
    for i in 0..FOLLOWERS {
        let client = client.clone();
        let url = format!("{}/api/chat/stream?run_id={run}", bases[i % bases.len()]);
        tasks.push(tokio::spawn(async move {
            let res = client.get(url).send().await.unwrap();
            let mut body = res.bytes_stream();
            let mut buffer = String::new();
            let mut latencies = Vec::new();
            while let Some(chunk) = body.next().await {
                let Ok(chunk) = chunk else { break };
                let now = micros_now();
                buffer.push_str(std::str::from_utf8(&chunk).unwrap_or_default());
                while let Some(end) = buffer.find("\n\n") {
                    let block: String = buffer.drain(..end + 2).collect();
                    if let Some(sent) = block.find("\"sent_us\":").map(|i| &block[i + 10..]) {
                        let digits: String =
                            sent.chars().take_while(char::is_ascii_digit).collect();
                        if let Ok(sent) = digits.parse::<u64>() {
                            latencies.push(now.saturating_sub(sent));
                        }
                    }
                }
            }
            latencies
        }));
    }
    let mut all: Vec<u64> = Vec::new();
    let mut complete = 0;
    for t in tasks {
        let l = t.await.unwrap();
        if l.len() as u64 == events {
            complete += 1;
        }
        all.extend(l);
    }
    all.sort_unstable();
    let pct = |p: f64| all[((all.len() as f64 - 1.0) * p) as usize] as f64 / 1000.0;
    json!({
        "followers": FOLLOWERS,
        "events_per_sec": RATE_PER_SEC,
        "events": events,
        "followers_with_every_event": complete,
        "deliveries": all.len(),
        "latency_ms_p50": pct(0.50),
        "latency_ms_p99": pct(0.99),
        "latency_ms_max": pct(1.0),
    })
}

async fn memory_benchmark() -> Value {
    let (base, _state, _data) = app(Arc::new(Metronome {
        events: 0,
        interval: Duration::from_millis(1),
    }))
    .await;
    let client = reqwest::Client::new();
    let api = helpers::Api::new(&base);
    let session = api.new_session().await;
    let run = api.start(&session, "idle").await;
    // Warm up allocator and connection machinery with a few followers first.
    let mut held = Vec::new();
    for _ in 0..50 {
        held.push(
            client
                .get(format!("{base}/api/chat/stream?run_id={run}"))
                .send()
                .await
                .unwrap(),
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = rss_kib();
    for _ in 0..FOLLOWERS {
        held.push(
            client
                .get(format!("{base}/api/chat/stream?run_id={run}"))
                .send()
                .await
                .unwrap(),
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    let per = (after.saturating_sub(before) as f64 * 1024.0) / FOLLOWERS as f64;
    drop(held);
    json!({
        "idle_followers": FOLLOWERS,
        "rss_kib_before": before,
        "rss_kib_after": after,
        "bytes_per_idle_follower_incl_client": per.round(),
    })
}

/// Events per second through the journal writer: one run appending one event at a time
/// (each waits for its commit: a commit's latency), then 32 runs appending at once (the
/// writer batches them).
async fn journal_benchmark(db: TestDb) -> Value {
    let (_base, state, _data) = app_on(
        Arc::new(Metronome {
            events: 0,
            interval: Duration::from_millis(1),
        }),
        db,
    )
    .await;
    let store = Arc::clone(&state.store);
    let journal = server::journal::Journal::spawn(
        store.clone(),
        server::hub::Hub::default(),
        Arc::clone(&state.metrics),
    );
    let new_run = |n: usize| {
        let store = Arc::clone(&store);
        let instance = state.runner.instance().to_owned();
        async move {
            let session = store.create_session("bench", None, 0.0).await.unwrap();
            let run_id = format!("journal-{n}-{}", uuid::Uuid::new_v4().simple());
            store
                .start_run(server::store::NewTurn {
                    session_id: &session.id,
                    run_id: &run_id,
                    turn_id: &format!("turn-{run_id}"),
                    user_message_id: &format!("msg-{run_id}"),
                    message: "bench",
                    attachments: &[],
                    client_id: None,
                    queued_id: None,
                    place: server::store::TurnAt::Next,
                    default_model: None,
                    lease: server::store::Lease {
                        instance: &instance,
                        until: f64::MAX,
                    },
                    max_running: None,
                    now: 0.0,
                })
                .await
                .unwrap();
            run_id
        }
    };
    let token = |i: usize| {
        server::journal::event(
            anchor::EventKind::Token,
            json!({"text": format!("word{i} ")}),
            None,
        )
    };
    const ONE_BY_ONE: usize = 2_000;
    let run = new_run(0).await;
    let start = Instant::now();
    for i in 0..ONE_BY_ONE {
        journal.append(&run, token(i)).await.unwrap();
    }
    let one_by_one = ONE_BY_ONE as f64 / start.elapsed().as_secs_f64();

    // One run as an agent emits: queued in order, at most `IN_FLIGHT` waiting for their commit.
    const QUEUED: usize = 20_000;
    let run = new_run(100).await;
    let start = Instant::now();
    let mut waiting = std::collections::VecDeque::new();
    for i in 0..QUEUED {
        if waiting.len() >= server::runtime::IN_FLIGHT {
            let oldest: server::journal::Queued = waiting.pop_front().unwrap();
            oldest.outcome().await.unwrap();
        }
        waiting.push_back(journal.enqueue(&run, token(i)).await.unwrap());
    }
    for queued in waiting {
        queued.outcome().await.unwrap();
    }
    let queued = QUEUED as f64 / start.elapsed().as_secs_f64();

    const RUNS: usize = 32;
    const EACH: usize = 500;
    let mut runs = Vec::with_capacity(RUNS);
    for n in 0..RUNS {
        runs.push(new_run(n + 1).await);
    }
    let start = Instant::now();
    let writers: Vec<_> = runs
        .into_iter()
        .map(|run| {
            let journal = journal.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    journal.append(&run, token(i)).await.unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let concurrent = (RUNS * EACH) as f64 / start.elapsed().as_secs_f64();
    json!({
        "one_run_events_per_sec": one_by_one.round(),
        "one_run_commit_ms": ((1000.0 / one_by_one) * 1000.0).round() / 1000.0,
        "one_run_queued_events_per_sec": queued.round(),
        "queued_vs_one_by_one": ((queued / one_by_one) * 10.0).round() / 10.0,
        "runs_at_once": RUNS,
        "concurrent_events_per_sec": concurrent.round(),
    })
}

/// `cargo bench -p server --bench sse [-- replay|fanout|memory|journal ...]` (all by default).
fn main() {
    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |part: &str| parts.is_empty() || parts.iter().any(|p| p == part);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut out = serde_json::Map::new();
        let engines = engines();
        if wants("replay") {
            for engine in &engines {
                let db = fresh(engine).await;
                out.insert(format!("replay_{engine}"), replay_benchmark(db).await);
            }
        }
        if wants("journal") {
            for engine in &engines {
                let db = fresh(engine).await;
                out.insert(format!("journal_{engine}"), journal_benchmark(db).await);
            }
        }
        if wants("fanout") {
            out.insert("fanout".into(), fanout_benchmark().await);
            if engines.contains(&"postgres") {
                out.insert(
                    "fanout_two_instances".into(),
                    fanout_two_instances_benchmark().await,
                );
            }
        }
        if wants("memory") {
            out.insert("memory".into(), memory_benchmark().await);
        }
        println!("{}", Value::Object(out));
    });
}
