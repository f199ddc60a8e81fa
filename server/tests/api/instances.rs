//! Several server processes on one PostgreSQL database, as behind a load balancer: a run
//! started through one is followed, stopped and answered through another, and when the one
//! running it dies, another ends it as interrupted once its lease has expired.
//!
//! These need PostgreSQL (`make test` runs them through `scripts/with-postgres.sh`, which sets
//! `ANCHORAGE_TEST_DATABASE_URL`); `make unit` leaves them out.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

use crate::helpers::{
    assert_gapless, read_sse, ServerProcess, SseEvent, TestDb, TEST_DATABASE_ENV,
};

/// The lease of the instances here: a dead one's runs are reaped about this long after.
const LEASE_SECS: u64 = 2;

/// A database several instances share; these tests mean nothing on SQLite.
async fn shared_db() -> TestDb {
    TestDb::postgres().await.unwrap_or_else(|| {
        panic!(
            "these tests need PostgreSQL: run them as scripts/with-postgres.sh make pg-unit \
             ({TEST_DATABASE_ENV} names the database)"
        )
    })
}

/// `n` instances on `db`, their demo agent pausing `delay_ms` between chunks.
async fn instances(
    db: &TestDb,
    site: &std::path::Path,
    n: usize,
    delay_ms: u64,
) -> Vec<ServerProcess> {
    let delay = delay_ms.to_string();
    let lease = LEASE_SECS.to_string();
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        all.push(
            ServerProcess::launch(
                db,
                site,
                &["--demo-delay-ms", &delay, "--lease-secs", &lease],
            )
            .await,
        );
    }
    all
}

async fn post(base: &str, path: &str, body: Value) -> (u16, Value) {
    crate::helpers::Api::new(base).post(path, body).await
}

async fn get(base: &str, path: &str) -> Value {
    reqwest::get(format!("{base}{path}"))
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON")
}

/// A new session on `base` running `message`: (session, run).
async fn start(base: &str, message: &str) -> (String, String) {
    let (status, session) = post(base, "/api/session/new", json!({})).await;
    assert_eq!(status, 200, "{session}");
    let session = session["session"]["id"].as_str().unwrap().to_owned();
    let (status, started) = post(
        base,
        "/api/chat/start",
        json!({"session_id": session, "message": message}),
    )
    .await;
    assert_eq!(status, 200, "{started}");
    (session, started["run_id"].as_str().unwrap().to_owned())
}

async fn stream(base: &str, run: &str, after: Option<u64>) -> Vec<SseEvent> {
    let mut url = format!("{base}/api/chat/stream?run_id={run}");
    if let Some(after) = after {
        url.push_str(&format!("&after_seq={after}"));
    }
    let res = reqwest::get(url).await.expect("stream");
    assert_eq!(res.status(), 200);
    read_sse(res).await
}

/// Follows a run on `base` until an event of `kind`; returns it.
async fn wait_for(base: &str, run: &str, kind: &str) -> SseEvent {
    let res = reqwest::get(format!("{base}/api/chat/stream?run_id={run}"))
        .await
        .expect("stream");
    let mut body = res.bytes_stream();
    let mut buffer = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(20), body.next())
            .await
            .unwrap_or_else(|_| panic!("no {kind} within 20 s"))
            .unwrap_or_else(|| panic!("the stream ended before {kind}"))
            .expect("chunk");
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let event = block.lines().find_map(|l| l.strip_prefix("event: "));
            if event == Some(kind) {
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .unwrap();
                return SseEvent {
                    id: block
                        .lines()
                        .find_map(|l| l.strip_prefix("id: "))
                        .map(str::to_owned),
                    event: kind.to_owned(),
                    data: serde_json::from_str(data).unwrap(),
                };
            }
        }
    }
}

/// Waits up to `limit` for a run to have ended, as `base` sees it; its status.
async fn wait_ended(base: &str, run: &str, limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        let status = get(base, &format!("/api/chat/stream/status?run_id={run}")).await;
        if status["terminal_state"].is_string() {
            return status;
        }
        assert!(started.elapsed() < limit, "{run} did not end: {status}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/with-postgres.sh make pg-unit"]
async fn a_run_on_one_instance_streams_through_another_from_any_cursor() {
    let db = shared_db().await;
    let site = tempfile::tempdir().unwrap();
    let nodes = instances(&db, site.path(), 2, 4).await;
    let (a, b) = (&nodes[0].base, &nodes[1].base);
    let (_, run) = start(a, "/demo long 400").await;

    // Followers through B from the start and from cursors picked while the run goes on: each
    // gets everything after its cursor once, in order, up to stream_end.
    let mut followers = vec![tokio::spawn({
        let (b, run) = (b.clone(), run.clone());
        async move { (0, stream(&b, &run, None).await) }
    })];
    // A small LCG: the cursors differ from run to run of the test, reproducibly per seed.
    let seed = std::process::id() as u64;
    let mut next = seed;
    for i in 0..6 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let seen = get(b, &format!("/api/chat/stream/status?run_id={run}")).await["last_seq"]
            .as_u64()
            .unwrap();
        next = next
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let cursor = if seen == 0 { 0 } else { (next >> 33) % seen };
        let (b, run) = (b.clone(), run.clone());
        // Every other one through Last-Event-ID, as a reconnecting EventSource does.
        followers.push(tokio::spawn(async move {
            let events = if i % 2 == 0 {
                stream(&b, &run, Some(cursor)).await
            } else {
                let res = reqwest::Client::new()
                    .get(format!("{b}/api/chat/stream?run_id={run}"))
                    .header("last-event-id", format!("{run}:{cursor}"))
                    .send()
                    .await
                    .unwrap();
                read_sse(res).await
            };
            (cursor, events)
        }));
    }
    let mut journal = BTreeMap::new();
    for (cursor, events) in futures::future::join_all(followers)
        .await
        .into_iter()
        .map(Result::unwrap)
    {
        assert!(!events.is_empty(), "from {cursor}: nothing");
        assert_gapless(&events, cursor + 1, &format!("through B from {cursor}"));
        assert_eq!(events.last().unwrap().event, "stream_end");
        for e in events {
            let seen = journal.entry(e.seq()).or_insert_with(|| e.clone());
            assert_eq!(
                *seen,
                e,
                "seq {} is the same event for every follower",
                e.seq()
            );
        }
    }
    // What B streamed is what A journaled.
    let from_a = stream(a, &run, None).await;
    assert_eq!(from_a.len(), journal.len());
    assert_eq!(from_a, journal.into_values().collect::<Vec<_>>());
    let tokens = from_a.iter().filter(|e| e.event == "token").count();
    assert_eq!(tokens, 400);
    let status = get(b, &format!("/api/chat/stream/status?run_id={run}")).await;
    assert_eq!(status["terminal_state"], "completed");
    assert_eq!(status["active"], false);
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/with-postgres.sh make pg-unit"]
async fn stop_approvals_and_follow_ups_sent_to_another_instance_reach_the_run() {
    let db = shared_db().await;
    let site = tempfile::tempdir().unwrap();
    let nodes = instances(&db, site.path(), 2, 10).await;
    let (a, b) = (&nodes[0].base, &nodes[1].base);

    // An approval asked by the run on A, answered through B: the agent on A goes on.
    let (session, run) = start(a, "/demo approval").await;
    let request = wait_for(b, &run, "approval").await;
    let id = request.data["approval_id"].as_str().unwrap().to_owned();
    let (status, body) = post(
        b,
        "/api/approval/respond",
        json!({"run_id": run, "approval_id": id, "choice": "once"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Once: a second answer, through either, is refused.
    let (status, _) = post(
        a,
        "/api/approval/respond",
        json!({"run_id": run, "approval_id": id, "choice": "deny"}),
    )
    .await;
    assert_eq!(status, 409);
    let ended = wait_ended(b, &run, Duration::from_secs(20)).await;
    assert_eq!(ended["terminal_state"], "completed");
    let events = stream(b, &run, None).await;
    assert_gapless(&events, 1, "the approved run");
    assert_eq!(
        events
            .iter()
            .filter(|e| e.event == "approval_resolved")
            .count(),
        1
    );
    let answer = events
        .iter()
        .find(|e| e.event == "settled_message")
        .unwrap();
    assert!(
        answer.data["content"]
            .as_str()
            .unwrap()
            .contains("approved: once"),
        "{answer:?}"
    );

    // A follow-up queued through B while A runs, and a Stop sent to B: the run on A stops,
    // and the follow-up starts once it has.
    let (status, body) = post(
        a,
        "/api/chat/start",
        json!({"session_id": session, "message": "/demo slow"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let slow = body["run_id"].as_str().unwrap().to_owned();
    wait_for(b, &slow, "token").await;
    let (status, body) = post(
        b,
        "/api/chat/queue",
        json!({"session_id": session, "message": "after the stop", "client_id": "q-1"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["queued"], true, "{body}");
    let (status, body) = post(b, "/api/chat/cancel", json!({"run_id": slow})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["cancelled"], true,
        "B's Stop reached the run on A: {body}"
    );
    let (_, again) = post(b, "/api/chat/cancel", json!({"run_id": slow})).await;
    assert_eq!(again["cancelled"], false, "a second Stop changes nothing");
    let status = wait_ended(a, &slow, Duration::from_secs(10)).await;
    assert_eq!(status["terminal_state"], "cancelled");
    let events = stream(a, &slow, None).await;
    assert_eq!(events.iter().filter(|e| e.event == "cancel").count(), 1);
    assert_eq!(events.last().unwrap().event, "stream_end");

    // The follow-up became the next turn, once.
    let started = Instant::now();
    let follow_up = loop {
        let s = get(b, &format!("/api/session?session_id={session}")).await;
        let messages = s["session"]["messages"].as_array().unwrap().clone();
        let sent: Vec<&Value> = messages
            .iter()
            .filter(|m| m["content"] == "after the stop")
            .collect();
        if let [one] = sent.as_slice() {
            break one["run_id"].as_str().unwrap().to_owned();
        }
        assert!(sent.len() <= 1, "sent twice: {s}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never started: {s}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let status = wait_ended(b, &follow_up, Duration::from_secs(20)).await;
    assert_eq!(status["terminal_state"], "completed");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/with-postgres.sh make pg-unit"]
async fn a_dead_instance_runs_are_interrupted_once_by_the_others_after_its_lease() {
    let db = shared_db().await;
    let site = tempfile::tempdir().unwrap();
    let mut nodes = instances(&db, site.path(), 3, 15).await;
    let a = nodes[0].base.clone();
    let (b, c) = (nodes[1].base.clone(), nodes[2].base.clone());
    let (session, run) = start(&a, "/demo slow").await;

    // Events acknowledged to a follower through B before A dies.
    let res = reqwest::get(format!("{b}/api/chat/stream?run_id={run}"))
        .await
        .unwrap();
    let mut body = res.bytes_stream();
    let mut buffer = String::new();
    let mut received: Vec<SseEvent> = Vec::new();
    while received.len() < 6 {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if let Some(id) = block.lines().find_map(|l| l.strip_prefix("id: ")) {
                let event = block
                    .lines()
                    .find_map(|l| l.strip_prefix("event: "))
                    .unwrap();
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .unwrap();
                received.push(SseEvent {
                    id: Some(id.to_owned()),
                    event: event.to_owned(),
                    data: serde_json::from_str(data).unwrap(),
                });
            }
        }
    }
    drop(body);

    nodes[0].kill();
    let killed = Instant::now();
    // Followers through B and C see it end, live.
    let through_b = tokio::spawn({
        let (b, run) = (b.clone(), run.clone());
        async move { stream(&b, &run, Some(0)).await }
    });
    let through_c = tokio::spawn({
        let (c, run) = (c.clone(), run.clone());
        async move { stream(&c, &run, Some(3)).await }
    });
    // Held until the lease runs out: no instance calls it dead before.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let early = get(&b, &format!("/api/chat/stream/status?run_id={run}")).await;
    assert_eq!(early["terminal_state"], Value::Null, "{early}");
    let status = wait_ended(&c, &run, Duration::from_secs(LEASE_SECS + 10)).await;
    let took = killed.elapsed();
    assert_eq!(status["terminal_state"], "interrupted");
    assert!(
        took >= Duration::from_millis(LEASE_SECS * 1000 / 2),
        "reaped {took:?} after the kill, before the lease could expire"
    );

    let events_b = through_b.await.unwrap();
    let events_c = through_c.await.unwrap();
    assert_gapless(&events_b, 1, "through B");
    assert_gapless(&events_c, 4, "through C");
    assert_eq!(events_b[3..], events_c[..]);
    // Ended exactly once, by one of the two.
    let ends: Vec<&SseEvent> = events_b
        .iter()
        .filter(|e| matches!(e.event.as_str(), "done" | "cancel" | "apperror"))
        .collect();
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0].data["status"], "interrupted");
    assert_eq!(events_b.last().unwrap().event, "stream_end");
    // Nothing acknowledged was lost.
    for (i, e) in received.iter().enumerate() {
        assert_eq!(&events_b[i], e, "acknowledged event {i}");
    }
    // The transcript says so, once; the session is free for a new turn on any instance.
    let s = get(&c, &format!("/api/session?session_id={session}")).await;
    let answers: Vec<&Value> = s["session"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(answers.len(), 1, "{s}");
    assert_eq!(answers[0]["terminal_state"], "interrupted");
    assert_eq!(s["session"]["active_run_id"], Value::Null);
    let (status, body) = post(
        &b,
        "/api/chat/start",
        json!({"session_id": session, "message": "again"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/with-postgres.sh make pg-unit"]
async fn a_paused_instance_taken_for_dead_adds_nothing_once_it_wakes() {
    let db = shared_db().await;
    let site = tempfile::tempdir().unwrap();
    let nodes = instances(&db, site.path(), 2, 15).await;
    let (a, b) = (&nodes[0].base, &nodes[1].base);
    let (session, run) = start(a, "/demo slow").await;
    wait_for(b, &run, "token").await;

    // A stops answering anything (as a machine that stalls, or loses the database), and B
    // takes it for dead once its lease has expired.
    let signal = |sig: &str| {
        let done = std::process::Command::new("kill")
            .args([sig, &nodes[0].child.id().to_string()])
            .status()
            .expect("kill");
        assert!(done.success());
    };
    signal("-STOP");
    // (Should A stop inside a commit, its transaction holds the run's row until the database
    // ends it: 20 s idle in a transaction.)
    let status = wait_ended(b, &run, Duration::from_secs(LEASE_SECS + 30)).await;
    assert_eq!(status["terminal_state"], "interrupted");
    let ended = stream(b, &run, None).await;
    assert_eq!(ended.last().unwrap().event, "stream_end");

    // A wakes: its turn goes on there for a moment, until it finds the lease taken. Nothing
    // it does reaches the journal, and it ends nothing a second time.
    signal("-CONT");
    tokio::time::sleep(Duration::from_millis(LEASE_SECS * 1000 + 500)).await;
    let after = stream(a, &run, None).await;
    assert_eq!(after, ended, "the journal as B ended it");
    let s = get(a, &format!("/api/session?session_id={session}")).await;
    let answers = s["session"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    assert_eq!(answers, 1, "{s}");
    let status = get(a, &format!("/api/chat/stream/status?run_id={run}")).await;
    assert_eq!(status["terminal_state"], "interrupted");
    assert_eq!(status["active"], false);
    // And A serves new turns as before.
    let (status, body) = post(
        a,
        "/api/chat/start",
        json!({"session_id": session, "message": "again"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let next = body["run_id"].as_str().unwrap();
    assert_eq!(
        wait_ended(b, next, Duration::from_secs(20)).await["terminal_state"],
        "completed"
    );
}

/// A limit holds when instances write at once: share links made through two instances
/// together, past what is left of the allowance, give exactly the allowance (each instance's
/// count and insert are one step for the whole database), and the rest a clear 429.
#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/with-postgres.sh make pg-unit"]
async fn a_limit_holds_when_instances_write_at_once() {
    let db = shared_db().await;
    let site = tempfile::tempdir().unwrap();
    let nodes = instances(&db, site.path(), 2, 1).await;
    let (a, b) = (nodes[0].base.clone(), nodes[1].base.clone());
    let (status, session) = post(&a, "/api/session/new", json!({})).await;
    assert_eq!(status, 200, "{session}");
    let session = session["session"]["id"].as_str().unwrap().to_owned();
    const LEFT: u32 = 4;
    for _ in 0..server::routes::MAX_SHARES - LEFT {
        let (status, body) = post(&a, "/api/share", json!({"session_id": session})).await;
        assert_eq!(status, 200, "{body}");
    }
    let attempts = (0..40).map(|i| {
        let base = if i % 2 == 0 { a.clone() } else { b.clone() };
        let session = session.clone();
        async move { post(&base, "/api/share", json!({"session_id": session})).await }
    });
    let answers = futures::future::join_all(attempts).await;
    let made = answers.iter().filter(|(status, _)| *status == 200).count();
    assert_eq!(made, LEFT as usize, "{answers:?}");
    for (status, body) in &answers {
        assert!(*status == 200 || *status == 429, "{status} {body}");
    }
    let listed = get(&b, "/api/shares").await;
    assert_eq!(
        listed["shares"].as_array().unwrap().len(),
        server::routes::MAX_SHARES as usize
    );
}
