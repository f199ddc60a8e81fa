//! PostgreSQL going away under a running server (a cluster of the test's own, restarted, and
//! stopped for ten seconds, each mid-turn): every turn completes or ends saying why, its
//! journal gapless to its end; while the database is away every request is answered within
//! 2 s with a clear 503; once it is back the server goes on by itself.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{Api, ServerProcess, TestDb};
use crate::pg_cluster::PgCluster;

/// The journal of `run` in `export` (JSON Lines): its rows' seqs, in order, and its last
/// row's type.
fn journal_of(export: &str, run: &str) -> (Vec<u64>, String) {
    let rows: Vec<Value> = export
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|row| row["run_id"] == run && row["seq"].is_u64())
        .collect();
    let seqs = rows.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    let last = rows
        .last()
        .and_then(|r| r["type"].as_str())
        .unwrap_or_default()
        .to_owned();
    (seqs, last)
}

/// Waits until `run` has journaled more than `seq` rows.
async fn past(api: &Api, run: &str, seq: u64) {
    for _ in 0..400 {
        let (_, status) = api
            .get(&format!("/api/chat/stream/status?run_id={run}"))
            .await;
        if status["last_seq"].as_u64().unwrap_or(0) > seq {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {run} made no progress");
}

/// The run ended, whole: completed, or ended `error` saying the database was out of reach;
/// its journal gapless from 1 to its `stream_end`.
async fn ended_whole(api: &Api, session: &str, run: &str) -> String {
    let status = api.wait_finished_within(run, Duration::from_secs(60)).await;
    let state = status["terminal_state"].as_str().unwrap().to_owned();
    let export = api.export(session, "jsonl").await;
    if state == "error" {
        assert!(
            export.contains("The server could not save this turn"),
            "an error says why: {export:.2000}"
        );
    } else {
        assert_eq!(state, "completed", "{status}");
    }
    let (seqs, last) = journal_of(&export, run);
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "gapless");
    assert_eq!(last, "stream_end");
    state
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/with-postgres.sh make pg-unit"]
async fn postgres_restarted_or_away_mid_turn_ends_each_turn_whole_and_requests_get_a_clear_503() {
    let cluster = tokio::task::spawn_blocking(PgCluster::start).await.unwrap();
    let db = TestDb {
        dir: tempfile::tempdir().unwrap(),
        url: Some(cluster.url()),
    };
    let site = tempfile::tempdir().unwrap();
    let server = ServerProcess::launch(&db, site.path(), &["--demo-delay-ms", "10"]).await;
    let api = Api::new(&server.base);

    // Restarted mid-turn: the journal rides it out and the turn completes.
    let session = api.new_session().await;
    let run = api.start(&session, "/demo long 600").await;
    past(&api, &run, 20).await;
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.restart();
        cluster
    })
    .await
    .unwrap();
    assert_eq!(ended_whole(&api, &session, &run).await, "completed");

    // Away for ten seconds mid-turn.
    let session = api.new_session().await;
    let run = api.start(&session, "/demo long 3000").await;
    past(&api, &run, 20).await;
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.down();
        cluster
    })
    .await
    .unwrap();
    let away = Instant::now();
    let mut answered = 0;
    while away.elapsed() < Duration::from_secs(10) {
        // A read and a write, each answered within 2 s with a clear 503.
        for req in [
            api.client.get(format!("{}/api/sessions", api.base)),
            api.client
                .post(format!("{}/api/session/new", api.base))
                .json(&json!({})),
        ] {
            let asked = Instant::now();
            let res = req.send().await.expect("an answer");
            let took = asked.elapsed();
            assert_eq!(res.status(), 503);
            assert!(took < Duration::from_secs(2), "answered in {took:?}");
            assert_eq!(
                res.headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok()),
                Some("2")
            );
            let body: Value = res.json().await.unwrap();
            assert!(
                body["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("database cannot be reached")),
                "{body}"
            );
            answered += 1;
        }
    }
    assert!(
        answered >= 4,
        "{answered} requests answered while it was away"
    );
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.up();
        cluster
    })
    .await
    .unwrap();
    // Back: the turn ends whole (completed, or an error that says why), with no restart.
    ended_whole(&api, &session, &run).await;
    let (code, list) = api.get("/api/sessions").await;
    assert_eq!(code, 200, "{list}");
    let session = api.new_session().await;
    let run = api.start(&session, "/demo prose").await;
    assert_eq!(ended_whole(&api, &session, &run).await, "completed");
    assert_eq!(api.get("/healthz").await.1, json!({"status": "ok"}));
    drop(server);
    drop(cluster);
}
