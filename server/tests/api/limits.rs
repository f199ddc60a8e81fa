//! Limits: follow-ups waiting, turns running and streams open per account and in all; a
//! client trickling its headers; a client that stops reading a replay; many readers during a
//! run.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use server::limits::Limits;
use server::metrics::Metrics;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::helpers::{read_sse, SseEvent, TestApp};

fn limits(f: impl FnOnce(&mut Limits)) -> impl FnOnce(&mut server::AppState) {
    move |state| f(&mut state.limits)
}

async fn cancel(app: &TestApp, run: &str) {
    app.post("/api/chat/cancel", json!({"run_id": run})).await;
    app.wait_finished(run).await;
}

#[tokio::test]
async fn follow_ups_wait_up_to_the_limit_per_conversation() {
    let app = TestApp::builder()
        .configure(limits(|l| l.max_queued = 2))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo slow").await;
    for i in 0..2 {
        let (code, body) = app
            .post(
                "/api/chat/queue",
                json!({"session_id": session, "message": format!("next {i}"), "client_id": format!("c{i}")}),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["queued"], json!(true));
    }
    let (code, body) = app
        .post(
            "/api/chat/queue",
            json!({"session_id": session, "message": "one too many", "client_id": "c9"}),
        )
        .await;
    assert_eq!(code, 429, "{body}");
    assert_eq!(body["limit"], json!("max_queued"));
    assert!(body["error"].as_str().unwrap().contains("waiting"));
    // A retried send of one already queued is not a new one.
    let (code, body) = app
        .post(
            "/api/chat/queue",
            json!({"session_id": session, "message": "next 0", "client_id": "c0"}),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(
        s["session"]["queued"].as_array().unwrap().len(),
        2,
        "nothing lost, nothing added"
    );
    cancel(&app, &run).await;
}

#[tokio::test]
async fn turns_run_up_to_the_limit_per_account() {
    let app = TestApp::builder()
        .configure(limits(|l| l.max_runs_per_user = 2))
        .spawn()
        .await;
    let (alice, bob) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    let mut runs = Vec::new();
    for _ in 0..2 {
        let session = app.new_session().await;
        runs.push(app.start(&session, "/demo slow").await);
    }
    let third = app.new_session().await;
    let (code, body) = app
        .post(
            "/api/chat/start",
            json!({"session_id": third, "message": "/demo slow", "client_id": "x1"}),
        )
        .await;
    assert_eq!(code, 429, "{body}");
    assert_eq!(body["limit"], json!("max_runs_per_user"));
    // A follow-up on an idle conversation would start a turn: the same answer.
    let (code, _) = app
        .post(
            "/api/chat/queue",
            json!({"session_id": third, "message": "/demo slow"}),
        )
        .await;
    assert_eq!(code, 429);
    let (_, s) = app.get(&format!("/api/session?session_id={third}")).await;
    assert_eq!(s["session"]["messages"], json!([]), "nothing stored");
    // Another account has its own.
    app.use_cookie(Some(&bob));
    let his = app.new_session().await;
    let run = app.start(&his, "/demo slow").await;
    cancel(&app, &run).await;
    // One of alice's ends: she may start again (and the refused send goes through).
    app.use_cookie(Some(&alice));
    cancel(&app, &runs.pop().unwrap()).await;
    let (code, body) = app
        .post(
            "/api/chat/start",
            json!({"session_id": third, "message": "/demo slow", "client_id": "x1"}),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    runs.push(body["run_id"].as_str().unwrap().to_owned());
    for run in &runs {
        cancel(&app, run).await;
    }
}

#[tokio::test]
async fn streams_are_limited_per_account_and_in_all() {
    let app = TestApp::builder()
        .configure(limits(|l| {
            l.max_streams_per_user = 2;
            l.max_streams = 3;
        }))
        .spawn()
        .await;
    let (alice, bob) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let run = app.start(&session, "/demo slow").await;
    let first = app.open_stream(&run, None).await;
    let second = app.open_stream(&run, None).await;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let third = app.open_stream(&run, None).await;
    assert_eq!(third.status(), 429);
    let body: Value = third.json().await.unwrap();
    assert_eq!(body["limit"], json!("max_streams_per_user"));

    app.use_cookie(Some(&bob));
    let his = app.new_session().await;
    let his_run = app.start(&his, "/demo slow").await;
    let bobs = app.open_stream(&his_run, None).await;
    assert_eq!(bobs.status(), 200, "his own allowance");
    let full = app.open_stream(&his_run, None).await;
    assert_eq!(full.status(), 503, "the server's allowance is used up");
    let body: Value = full.json().await.unwrap();
    assert_eq!(body["limit"], json!("max_streams"));

    // A stream that ends frees its place.
    drop(first);
    app.use_cookie(Some(&alice));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let again = app.open_stream(&run, None).await;
        if again.status() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed stream's place never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel(&app, &run).await;
    app.use_cookie(Some(&bob));
    cancel(&app, &his_run).await;
    drop((second, bobs));
}

#[tokio::test]
async fn a_client_that_trickles_its_headers_is_cut_off() {
    let app = TestApp::builder()
        .configure(limits(|l| l.header_timeout = Duration::from_millis(500)))
        .spawn()
        .await;
    let mut slow = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    // The server closes the connection (perhaps after a 408) without waiting for the rest.
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match slow.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "still open after 5 s");
    assert!(started.elapsed() >= Duration::from_millis(400));
    // Everyone else is served, one request per connection: no client ever sends on a
    // connection the server is about to close for being idle.
    let res = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["connection"], "close");
}

#[tokio::test]
async fn an_agent_streaming_fast_is_not_held_to_one_commit_per_token() {
    let app = TestApp::builder().configure(|_| {}).spawn().await;
    let session = app.new_session().await;
    let before = Metrics::get(&app.state.metrics.journal_batches);
    let run = app.start(&session, "/demo long 20000").await;
    let status = app
        .wait_finished_within(&run, Duration::from_secs(60))
        .await;
    assert_eq!(status["terminal_state"], json!("completed"));
    let batches = Metrics::get(&app.state.metrics.journal_batches) - before;
    let events = app.stream(&run, None).await;
    // Every token is there once, in order, though many went in together.
    let seqs: Vec<u64> = events
        .iter()
        .filter(|e| e.id.is_some())
        .map(SseEvent::seq)
        .collect();
    assert!(seqs.len() > 20_000);
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "gapless, in order"
    );
    eprintln!("{} events in {batches} journal transactions", seqs.len());
    assert!(
        batches * 4 < seqs.len() as u64,
        "{batches} transactions for {} events",
        seqs.len()
    );
}

#[tokio::test]
async fn a_client_that_stops_reading_a_replay_stops_the_replay() {
    let app = TestApp::builder().configure(|_| {}).spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 100000").await;
    let status = app
        .wait_finished_within(&run, Duration::from_secs(120))
        .await;
    assert_eq!(status["terminal_state"], json!("completed"));
    let journal_bytes = {
        let before = Metrics::get(&app.state.metrics.replay_bytes_read);
        let events = app.stream(&run, None).await;
        assert!(events.len() > 100_000);
        Metrics::get(&app.state.metrics.replay_bytes_read) - before
    };

    // A client with a small receive window reads a little, then nothing.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut client = socket.connect(app.addr).await.unwrap();
    client
        .write_all(
            format!(
                "GET /api/chat/stream?run_id={run} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let before = Metrics::get(&app.state.metrics.replay_bytes_read);
    let out_before = Metrics::get(&app.state.metrics.stream_bytes_out);
    let mut got = vec![0u8; 16 * 1024];
    let mut read = 0;
    while read < got.len() {
        let n = client.read(&mut got[read..]).await.unwrap();
        assert!(n > 0);
        read += n;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let read_now = Metrics::get(&app.state.metrics.replay_bytes_read) - before;
    let handed_on = Metrics::get(&app.state.metrics.stream_bytes_out) - out_before;
    // What the server read but could not hand to the connection (whose socket buffers, the
    // kernel's, are full): what it holds for this client.
    let held = read_now.saturating_sub(handed_on);
    eprintln!(
        "stalled replay: read {read_now} of the journal's {journal_bytes} bytes, \
         {handed_on} handed to the socket, {held} held in the server"
    );
    assert!(
        read_now < journal_bytes,
        "the replay stopped before the end"
    );
    assert!(
        held <= 4 * 1024 * 1024,
        "a stalled client makes the server hold {held} bytes"
    );
    // It reads on: the rest arrives, in order, to the end.
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), client.read_to_end(&mut rest))
        .await
        .ok();
    let text = String::from_utf8_lossy(&got[..read]).into_owned() + &String::from_utf8_lossy(&rest);
    assert!(text.contains("event: stream_end"), "the replay finished");
}

#[tokio::test]
async fn many_readers_during_a_run_lose_and_cancel_nothing() {
    let app = TestApp::builder().configure(|_| {}).spawn().await;
    // A long conversation to replay and search.
    let old = app.new_session().await;
    let old_run = app.start(&old, "/demo long 20000").await;
    app.wait_finished_within(&old_run, Duration::from_secs(60))
        .await;

    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 30000").await;
    let mut readers = Vec::new();
    for i in 0..50 {
        let url = if i % 2 == 0 {
            app.url(&format!(
                "/api/chat/stream?run_id={}",
                if i % 4 == 0 { &old_run } else { &run }
            ))
        } else {
            app.url("/api/sessions/search?q=w19999")
        };
        let client = app.client.clone();
        readers.push(tokio::spawn(async move {
            let res = client.get(url).send().await.unwrap();
            assert_eq!(res.status(), 200);
            if res
                .headers()
                .get("content-type")
                .is_some_and(|c| c.to_str().unwrap().starts_with("text/event-stream"))
            {
                let events = read_sse(res).await;
                let seqs: Vec<u64> = events.iter().map(|e| e.seq()).collect();
                assert_eq!(
                    seqs,
                    (1..=seqs.len() as u64).collect::<Vec<_>>(),
                    "gapless, once each"
                );
                assert_eq!(events.last().unwrap().event, "stream_end");
                events.len()
            } else {
                let body: Value = res.json().await.unwrap();
                body["sessions"].as_array().unwrap().len()
            }
        }));
    }
    for reader in readers {
        assert!(reader.await.unwrap() > 0);
    }
    let status = app.wait_finished(&run).await;
    assert_eq!(
        status["terminal_state"],
        json!("completed"),
        "nothing cancelled"
    );
    let events = app.stream(&run, None).await;
    let tokens = events.iter().filter(|e| e.event == "token").count();
    assert_eq!(tokens, 30_000, "nothing lost");
    assert_eq!(Metrics::get(&app.state.metrics.journal_retries), 0);
}
