//! Faults a server meets, with real processes: a disk that fills mid-turn (SQLite held to a
//! size, `--max-database-mb`, with a ballast that leaves it little room), and a model that
//! goes silent or drops the connection mid-answer. Whatever fails, every turn ends, says
//! why, and the server goes on by itself once it can.

use std::time::Duration;

use serde_json::{json, Value};
use sqlx::{Connection as _, Executor as _};

use crate::helpers::{Api, ServerProcess, TestDb};

/// A connection of the test's own to the SQLite file at `path` (no size limit of its own).
async fn own_connection(path: &std::path::Path) -> sqlx::SqliteConnection {
    sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("the test's connection")
}

/// The journal of `run` in `export` (JSON Lines): its rows' seqs, in order.
fn seqs_of(export: &str, run: &str) -> Vec<u64> {
    export
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|row| row["run_id"] == run && row["seq"].is_u64())
        .map(|row| row["seq"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_full_disk_ends_every_turn_says_so_and_the_server_goes_on_once_room_is_made() {
    let db = TestDb::sqlite();
    let path = db.dir.path().join("anchorage.db");
    // The database made (migrated), then a ballast that takes most of the room it may have.
    drop(db.open().await);
    let mut own = own_connection(&path).await;
    own.execute("CREATE TABLE ballast (b BLOB NOT NULL)")
        .await
        .unwrap();
    for _ in 0..16 {
        own.execute("INSERT INTO ballast (b) VALUES (zeroblob(262144))")
            .await
            .unwrap();
    }
    own.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        .await
        .unwrap();
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(&mut own)
        .await
        .unwrap();
    // About 1.5 MiB of room left for the server.
    let cap_mb = (pages.unsigned_abs() * 4096 + (3 << 19)).div_ceil(1 << 20);
    let site = tempfile::tempdir().unwrap();
    let args = [
        "--max-database-mb".to_owned(),
        cap_mb.to_string(),
        "--demo-delay-ms".to_owned(),
        "0".to_owned(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = ServerProcess::launch(&db, site.path(), &args).await;
    let api = Api::new(&server.base);

    // Three long turns at once fill it.
    let mut runs = Vec::new();
    for _ in 0..3 {
        let session = api.new_session().await;
        runs.push((
            session.clone(),
            api.start(&session, "/demo long 100000").await,
        ));
    }
    let mut degraded = Value::Null;
    for _ in 0..600 {
        degraded = api.get("/healthz").await.1;
        if degraded["status"] == "degraded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        degraded,
        json!({"status": "degraded", "store": "the disk is full"})
    );
    // Every turn ends, saying why, though the disk is still full: the room kept back for
    // that takes their ends.
    for (_, run) in &runs {
        let status = api.wait_finished_within(run, Duration::from_secs(30)).await;
        assert_eq!(status["terminal_state"], "error", "{status}");
    }
    // A write that needs room gets the clear answer, and no internal error.
    let (code, body) = api.upload("notes.txt", vec![b'x'; 1 << 20], None).await;
    assert_eq!(code, 507, "{body}");
    assert_eq!(
        body,
        json!({"error": "the server's disk is full", "limit": "disk"})
    );
    // Reads still answer.
    let (code, _) = api.get("/api/sessions").await;
    assert_eq!(code, 200);

    // Room is made: with no restart, the server goes on.
    own.execute("DELETE FROM ballast").await.unwrap();
    for (session, _) in &runs {
        let (_, page) = api.get(&format!("/api/session?session_id={session}")).await;
        let answer = &page["session"]["messages"][1];
        assert_eq!(answer["terminal_state"], "error", "{page}");
    }
    let export = api.export(&runs[0].0, "jsonl").await;
    assert!(
        export.contains("The server could not save this turn: the disk is full."),
        "the turn says why"
    );
    // New turns complete, and the store says it is well again.
    let session = api.new_session().await;
    let run = api.start(&session, "/demo prose").await;
    assert_eq!(api.wait_finished(&run).await["terminal_state"], "completed");
    assert_eq!(api.get("/healthz").await.1, json!({"status": "ok"}));

    // After a restart everything is there, every journal gapless to its end.
    server.kill();
    drop(own);
    let server = ServerProcess::launch(&db, site.path(), &[]).await;
    let api = Api::new(&server.base);
    let (_, list) = api.get("/api/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 4, "{list}");
    for (session, run) in runs.iter().chain([&(session, run)]) {
        let export = api.export(session, "jsonl").await;
        let seqs = seqs_of(&export, run);
        assert!(!seqs.is_empty());
        assert_eq!(
            seqs,
            (1..=seqs.len() as u64).collect::<Vec<_>>(),
            "gapless: {run}"
        );
        let last: Value = serde_json::from_str(export.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "stream_end", "{run} ends");
    }
}

/// A model that streams the start of an answer, then `then` (goes silent, or drops the
/// connection), and answers in full when asked again.
async fn model_that(
    then: crate::upstream::Piece,
) -> (
    crate::upstream::Upstream,
    crate::helpers::TestApp,
    tempfile::TempDir,
) {
    use crate::backends::{openai_at, say, COMPLETIONS};
    use crate::upstream::{delta, Piece, Reply, Upstream};
    let upstream = Upstream::start().await;
    upstream.script(
        COMPLETIONS,
        Reply::Stream(vec![
            Piece::Bytes(delta(json!({"content": "I started and then "}), None).into_bytes()),
            then,
        ]),
    );
    upstream.script(COMPLETIONS, say("A whole answer."));
    let ws = tempfile::tempdir().unwrap();
    let agent = openai_at(
        upstream.url("/v1"),
        ws.path(),
        2,
        Duration::from_millis(400),
    );
    let app = crate::helpers::TestApp::builder()
        .adapter(agent)
        .spawn()
        .await;
    (upstream, app, ws)
}

#[tokio::test]
async fn a_model_that_goes_silent_or_drops_the_connection_ends_the_turn_and_retry_answers() {
    use crate::upstream::Piece;
    for (then, said) in [
        (Piece::Hang, "The model stopped responding."),
        (
            Piece::Abort,
            "The connection to the model provider was lost mid-answer.",
        ),
    ] {
        let (upstream, app, _ws) = model_that(then).await;
        let session = app.new_session().await;
        let run = app.start(&session, "Hi").await;
        // Within its bound (400 ms of silence here), never left looking live.
        let status = app
            .wait_finished_within(&run, Duration::from_secs(10))
            .await;
        assert_eq!(status["terminal_state"], "error", "{said}");
        let events = app.stream(&run, None).await;
        let end = crate::helpers::of_kind(&events, "apperror")[0].clone();
        assert_eq!(end.data["message"], said);
        // What streamed is kept as the turn's partial answer.
        let (_, page) = app.get(&format!("/api/session?session_id={session}")).await;
        assert_eq!(
            page["session"]["messages"][1]["content"],
            "I started and then "
        );
        // Retry asks again, and this time it answers.
        let (code, retried) = app.post("/api/chat/retry", json!({"run_id": run})).await;
        assert_eq!(code, 200, "{retried}");
        let again = retried["run_id"].as_str().unwrap().to_owned();
        assert_eq!(
            app.wait_finished(&again).await["terminal_state"],
            "completed"
        );
        drop(upstream);
    }
}
