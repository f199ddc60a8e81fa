//! The journal over SSE: resume from any cursor, many followers, honest cursors.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::{assert_gapless, read_sse, SseEvent, TestApp};
use futures::StreamExt;

fn assert_well_formed_run(events: &[SseEvent]) {
    assert_gapless(events, 1, "a whole run");
    let terminals = events
        .iter()
        .filter(|e| matches!(e.event.as_str(), "done" | "cancel" | "apperror"))
        .count();
    assert_eq!(terminals, 1, "exactly one terminal event");
    let n = events.len();
    assert_eq!(events[n - 1].event, "stream_end");
    assert_eq!(events[n - 2].event, "settled_message");
    for e in events {
        let run_seq = e.id.as_deref().unwrap();
        assert!(run_seq.contains(':'), "every frame has run:seq");
        assert!(
            e.data["created_at"].is_number(),
            "every payload carries created_at"
        );
    }
}

#[tokio::test]
async fn a_finished_run_resumes_from_every_cursor_with_exactly_the_missing_events() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo tools").await;
    app.wait_finished(&run).await;
    let full = app.stream(&run, None).await;
    assert_well_formed_run(&full);
    assert!(full.iter().any(|e| e.event == "tool_complete"));
    for cursor in 0..=full.len() as u64 {
        let tail = app.stream(&run, Some(cursor)).await;
        assert_eq!(tail, full[cursor as usize..], "after_seq={cursor}");
    }
}

#[tokio::test]
async fn a_running_run_resumes_from_every_cursor_with_exactly_the_missing_events() {
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(4))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 120").await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let (_, status) = app
        .get(&format!("/api/chat/stream/status?run_id={run}"))
        .await;
    assert_eq!(status["active"], true, "still running: {status}");
    let reached = status["last_seq"].as_u64().unwrap();
    assert!(reached > 5);
    // Every cursor the client could hold now, each followed to the end concurrently.
    let mut tasks = Vec::new();
    for cursor in 0..=reached {
        let url = app.url(&format!("/api/chat/stream?run_id={run}&after_seq={cursor}"));
        let client = app.client.clone();
        tasks.push(tokio::spawn(async move {
            (
                cursor,
                read_sse(client.get(url).send().await.unwrap()).await,
            )
        }));
    }
    let results: Vec<(u64, Vec<SseEvent>)> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let full = app.stream(&run, None).await;
    assert_well_formed_run(&full);
    assert_eq!(full.iter().filter(|e| e.event == "token").count(), 120);
    for (cursor, tail) in results {
        assert_eq!(
            tail,
            full[cursor as usize..],
            "after_seq={cursor} while running"
        );
    }
}

#[tokio::test]
async fn fifty_concurrent_followers_see_identical_sequences() {
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(2))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 200").await;
    let mut tasks = Vec::new();
    for i in 0..50u64 {
        let url = app.url(&format!("/api/chat/stream?run_id={run}"));
        let client = app.client.clone();
        tasks.push(tokio::spawn(async move {
            // Followers join at different moments of the run.
            tokio::time::sleep(Duration::from_millis(i * 3)).await;
            read_sse(client.get(url).send().await.unwrap()).await
        }));
    }
    let results: Vec<Vec<SseEvent>> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_well_formed_run(&results[0]);
    assert!(results.len() == 50);
    for r in &results {
        assert_eq!(r, &results[0]);
    }
}

async fn stream_with_header(
    app: &TestApp,
    run: &str,
    query: &str,
    last_event_id: Option<&str>,
) -> Vec<SseEvent> {
    let mut req = app
        .client
        .get(app.url(&format!("/api/chat/stream?run_id={run}{query}")));
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    read_sse(req.send().await.unwrap()).await
}

#[tokio::test]
async fn cursors_that_do_not_fit_replay_from_the_start_and_after_seq_beats_the_header() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo prose").await;
    app.wait_finished(&run).await;
    let full = app.stream(&run, None).await;
    let n = full.len();
    assert_eq!(
        stream_with_header(&app, &run, "", Some(&format!("{run}:3"))).await,
        full[3..]
    );
    assert_eq!(
        stream_with_header(&app, &run, "", Some("other-run:3")).await,
        full
    );
    assert_eq!(
        stream_with_header(&app, &run, "", Some("not-a-cursor")).await,
        full
    );
    assert_eq!(
        stream_with_header(&app, &run, "&after_seq=99999", None).await,
        full
    );
    assert_eq!(
        stream_with_header(&app, &run, "&after_seq=abc", None).await,
        full
    );
    assert_eq!(
        stream_with_header(&app, &run, "&after_seq=2", Some(&format!("{run}:5"))).await,
        full[2..]
    );
    // A cursor equal to the last delivered seq sends nothing again.
    assert!(app.stream(&run, Some(n as u64)).await.is_empty());
}

#[tokio::test]
async fn stream_status_reports_the_journal_and_unknown_runs_are_404() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo prose").await;
    let status = app.wait_finished(&run).await;
    let full = app.stream(&run, None).await;
    assert_eq!(status["last_seq"].as_u64().unwrap(), full.len() as u64);
    assert_eq!(status["terminal_state"], "completed");
    assert_eq!(status["session_id"], Value::String(session));
    let (code, body) = app.get("/api/chat/stream?run_id=nope").await;
    assert_eq!(code, 404);
    assert_eq!(body["error"], "stream not found");
    let (code, _) = app.get("/api/chat/stream/status?run_id=nope").await;
    assert_eq!(code, 404);
    let (code, body) = app.get("/api/chat/stream").await;
    assert_eq!(code, 400, "{body}");
}

#[tokio::test]
async fn a_silent_stream_gets_heartbeats_and_ids_on_every_journaled_frame() {
    let db = crate::helpers::TestDb::new().await;
    let app = TestApp::builder()
        .db(db)
        .heartbeat(Duration::from_millis(150))
        .spawn()
        .await;
    let session = app.new_session().await;
    // The approval scenario waits for the user: the run goes quiet.
    let run = app.start(&session, "/demo approval").await;
    let res = app.open_stream(&run, None).await;
    assert_eq!(
        res.headers()["content-type"],
        "text/event-stream; charset=utf-8"
    );
    assert_eq!(res.headers()["cache-control"], "no-cache");
    let mut body = res.bytes_stream();
    let mut text = String::new();
    while !text.contains(": heartbeat") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .expect("a heartbeat")
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    for block in text.split("\n\n").filter(|b| b.contains("event: ")) {
        assert!(
            block.starts_with("id: ") || block.contains("\nid: "),
            "every journaled frame has an id: {block}"
        );
    }
    app.post("/api/chat/cancel", serde_json::json!({"run_id": run}))
        .await;
}
