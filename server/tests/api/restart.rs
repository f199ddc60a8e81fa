//! A server killed mid-run: after a restart the run is reported interrupted, and its journal
//! holds every event the client had received.

use std::process::{Command, Stdio};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::helpers::{free_port, ServerProcess, SseEvent, TestDb};

/// The lease the launched servers hold their runs by: a restart on PostgreSQL reaps a run
/// only once its lease has expired (on SQLite, at once).
const LEASE_SECS: u64 = 2;

async fn launch(db: &TestDb, site: &std::path::Path) -> ServerProcess {
    let lease = LEASE_SECS.to_string();
    ServerProcess::launch(db, site, &["--demo-delay-ms", "15", "--lease-secs", &lease]).await
}

/// A new session on `base` running `/demo slow`: (session, run).
async fn start_slow(client: &reqwest::Client, base: &str) -> (String, String) {
    let post = |path: &str, body: Value| {
        let request = client.post(format!("{base}{path}")).json(&body);
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let session = post("/api/session/new", json!({})).await;
    let session = session["session"]["id"].as_str().unwrap().to_owned();
    let started = post(
        "/api/chat/start",
        json!({"session_id": session, "message": "/demo slow"}),
    )
    .await;
    (session, started["run_id"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_run_cut_off_by_a_crash_is_interrupted_after_restart_and_keeps_what_was_acknowledged() {
    let db = TestDb::new().await;
    let site = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let mut server = launch(&db, site.path()).await;

    let (session, run) = start_slow(&client, &server.base).await;

    // Receive some events: these were acknowledged to a client.
    let res = client
        .get(format!("{}/api/chat/stream?run_id={run}", server.base))
        .send()
        .await
        .unwrap();
    let mut body = res.bytes_stream();
    let mut buffer = String::new();
    let mut received: Vec<(String, String)> = Vec::new();
    while received.len() < 8 {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if let (Some(id), Some(data)) = (
                block.lines().find_map(|l| l.strip_prefix("id: ")),
                block.lines().find_map(|l| l.strip_prefix("data: ")),
            ) {
                received.push((id.to_owned(), data.to_owned()));
            }
        }
    }

    // Kill -9: no shutdown handling at all.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(body);

    let server = launch(&db, site.path()).await;
    let status_now = || async {
        client
            .get(format!(
                "{}/api/chat/stream/status?run_id={run}",
                server.base
            ))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    };
    let mut status = status_now().await;
    if db.is_postgres() {
        // Another instance may still hold it: it is reaped once the lease has expired.
        for _ in 0..(LEASE_SECS * 40 + 200) {
            if status["terminal_state"].is_string() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
            status = status_now().await;
        }
    }
    assert_eq!(status["active"], false);
    assert_eq!(status["terminal_state"], "interrupted");

    let res = client
        .get(format!("{}/api/chat/stream?run_id={run}", server.base))
        .send()
        .await
        .unwrap();
    let events: Vec<SseEvent> = crate::helpers::read_sse(res).await;
    for (i, (id, data)) in received.iter().enumerate() {
        assert_eq!(
            events[i].id.as_deref(),
            Some(id.as_str()),
            "acknowledged event {i} survived"
        );
        assert_eq!(events[i].data, serde_json::from_str::<Value>(data).unwrap());
    }
    let ends: Vec<&SseEvent> = events
        .iter()
        .filter(|e| matches!(e.event.as_str(), "done" | "cancel" | "apperror"))
        .collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].event, "apperror");
    assert_eq!(ends[0].data["status"], "interrupted");
    assert_eq!(ends[0].data["recovery_control"], true);
    assert_eq!(events.last().unwrap().event, "stream_end");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq(), i as u64 + 1, "gapless");
    }
    let s: Value = client
        .get(format!("{}/api/session?session_id={session}", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(s["session"]["active_run_id"], Value::Null);
    let message = &s["session"]["messages"][1];
    assert_eq!(message["terminal_state"], "interrupted");
    // What it had streamed is its partial answer.
    let streamed: String = events
        .iter()
        .filter(|e| e.event == "token")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert!(streamed.starts_with("Working on it."), "{streamed}");
    assert_eq!(message["content"], streamed.as_str());
    assert_eq!(message["partial"], true);
}

/// Runs the server binary to its exit (it must not start); returns whether it failed and what
/// it printed.
fn run_to_exit(port: u16, data: &std::path::Path, site: &std::path::Path) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(data)
        .env_remove("DATABASE_URL")
        .env("LEPTOS_SITE_ROOT", site)
        .env("LEPTOS_OUTPUT_NAME", "anchorage")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server binary starts");
    for _ in 0..200 {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read as _;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (!status.success(), err);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("a second server kept running");
}

#[tokio::test]
async fn a_second_server_on_the_same_sqlite_directory_or_port_stops_before_touching_anything() {
    // One process per SQLite file (PostgreSQL is shared by design: see `instances.rs`).
    let db = TestDb::sqlite();
    let data = &db.dir;
    let site = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let server = launch(&db, site.path()).await;
    let (_, run) = start_slow(&client, &server.base).await;
    let status = |client: reqwest::Client, base: String, run: String| async move {
        client
            .get(format!("{base}/api/chat/stream/status?run_id={run}"))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    };

    // The same data directory on another port: refused, and the running turn is not reaped.
    let (failed, err) = run_to_exit(free_port(), data.path(), site.path());
    assert!(failed, "{err}");
    assert!(err.contains("is using the data directory"), "{err}");
    assert!(err.contains(&format!("pid {}", server.child.id())), "{err}");
    // The same port with another data directory: refused before the directory is made.
    let port = server.base.rsplit(':').next().unwrap().parse().unwrap();
    let fresh = data.path().join("never-made");
    let (failed, err) = run_to_exit(port, &fresh, site.path());
    assert!(failed, "{err}");
    assert!(err.contains("binding"), "{err}");
    assert!(!fresh.exists());

    let now = status(client.clone(), server.base.clone(), run.clone()).await;
    assert_eq!(now["active"], true, "{now}");
    assert_eq!(now["terminal_state"], Value::Null, "{now}");
    client
        .post(format!("{}/api/chat/cancel", server.base))
        .json(&json!({"run_id": run}))
        .send()
        .await
        .unwrap();
}
