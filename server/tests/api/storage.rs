//! One storage quota per account (`--max-storage-per-user`): conversations, share links'
//! snapshots and files count in it; past it, what would add to it is refused (413, saying so)
//! and nothing is cut off; deleting makes room, and restoring asks for it again. Imports and
//! copies are bounded the way uploads are: a permit per account and for the server, a file
//! read a run at a time and written in chunks (a failure leaves nothing), a message naming
//! too many files refused before any is looked at.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::TestApp;

async fn storage(app: &TestApp) -> Value {
    let (code, body) = app.get("/api/storage").await;
    assert_eq!(code, 200, "{body}");
    body
}

fn used(storage: &Value) -> u64 {
    ["conversations", "shares", "files"]
        .iter()
        .map(|k| storage[k].as_u64().unwrap())
        .sum()
}

/// A refusal for a full storage: 413, naming the limit and what is kept.
fn full(code: u16, body: &Value) {
    assert_eq!(code, 413, "{body}");
    assert_eq!(body["limit"], "max_storage_per_user", "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("your storage is full"),
        "{body}"
    );
}

/// An export of `runs` runs, each a message and `tokens` tokens of `word`: a made-up
/// conversation as the export writes one.
pub(crate) fn export_of(runs: usize, tokens: usize, word: &str) -> String {
    let mut out = String::new();
    for r in 0..runs {
        let run = format!("run-{r}");
        let parent = if r == 0 {
            Value::Null
        } else {
            json!(format!("run-{}", r - 1))
        };
        out.push_str(
            &json!({"type": "user_message", "run_id": run, "turn_id": format!("turn-{r}"),
                    "parent_run_id": parent, "created_at": 1.0 + r as f64,
                    "payload": {"id": format!("m-{r}"), "content": format!("question {r}"),
                                "created_at": 1.0 + r as f64}})
            .to_string(),
        );
        out.push('\n');
        let mut seq = 0;
        let mut row = |kind: &str, payload: Value, extra: Value| {
            seq += 1;
            let mut row = json!({"type": kind, "run_id": run, "seq": seq,
                                 "created_at": 1.5 + r as f64, "payload": payload});
            if let (Some(row), Some(extra)) = (row.as_object_mut(), extra.as_object()) {
                row.extend(extra.clone());
            }
            out.push_str(&row.to_string());
            out.push('\n');
        };
        for _ in 0..tokens {
            row("token", json!({"text": word}), json!({}));
        }
        row(
            "done",
            json!({}),
            json!({"terminal": true, "terminal_state": "completed"}),
        );
        row(
            "settled_message",
            json!({"content": word.repeat(tokens)}),
            json!({}),
        );
        row("stream_end", json!({}), json!({}));
    }
    out
}

#[tokio::test]
async fn one_quota_holds_conversations_links_and_files_and_deleting_makes_room() {
    let quota = 48 * 1024;
    let app = TestApp::builder()
        .configure(move |state| state.limits.max_storage_per_user = quota)
        .spawn()
        .await;
    let (alice, bob) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    let empty = storage(&app).await;
    assert_eq!(used(&empty), 0);
    assert_eq!(empty["quota"], json!(quota));

    // Turns fill it; the one that passes the quota ends as it would (nothing is cut off),
    // and the next is refused.
    let session = app.new_session().await;
    let mut refused = None;
    for _ in 0..40 {
        let (code, body) = app
            .post(
                "/api/chat/start",
                json!({"session_id": session, "message": "/demo long 300"}),
            )
            .await;
        if code != 200 {
            refused = Some((code, body));
            break;
        }
        let status = app.wait_finished(body["run_id"].as_str().unwrap()).await;
        assert_eq!(status["terminal_state"], "completed");
    }
    let (code, body) = refused.expect("the quota is reached");
    full(code, &body);
    let kept = storage(&app).await;
    assert!(used(&kept) > quota, "{kept}");
    assert!(kept["conversations"].as_u64().unwrap() > 0);

    // Everything else that would add to it is refused too.
    let (code, body) = app.upload("notes.txt", b"more".to_vec(), None).await;
    full(code, &body);
    let (code, body) = app.post("/api/share", json!({"session_id": session})).await;
    full(code, &body);
    let (code, body) = app
        .post_bytes("/api/session/import", export_of(1, 3, "x "))
        .await;
    full(code, &body);
    let (code, body) = app
        .post("/api/session/duplicate", json!({"session_id": session}))
        .await;
    full(code, &body);
    let (code, body) = app
        .post(
            "/api/chat/queue",
            json!({"session_id": session, "message": "later"}),
        )
        .await;
    full(code, &body);
    // Bob's storage is his own.
    app.use_cookie(Some(&bob));
    let his = app.new_session().await;
    let run = app.start(&his, "hello").await;
    app.wait_finished(&run).await;

    // Deleting makes room at once (Undo then asks for it again).
    app.use_cookie(Some(&alice));
    let (code, _) = app
        .post("/api/session/delete", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(storage(&app).await["conversations"], json!(0));
    let fresh = app.new_session().await;
    let run = app.start(&fresh, "hello").await;
    app.wait_finished(&run).await;
    // The one deleted is larger than the quota by itself: it stays in the bin.
    let (code, body) = app
        .post("/api/session/restore", json!({"session_id": session}))
        .await;
    full(code, &body);
    let (_, list) = app.get("/api/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1, "{list}");
    // One that fits comes back.
    let (code, _) = app
        .post("/api/session/delete", json!({"session_id": fresh}))
        .await;
    assert_eq!(code, 200);
    let (code, body) = app
        .post("/api/session/restore", json!({"session_id": fresh}))
        .await;
    assert_eq!(code, 200, "{body}");
}

#[tokio::test]
async fn an_import_naming_too_many_files_is_refused_before_any_is_looked_at() {
    let app = TestApp::builder().spawn().await;
    let files: Vec<Value> = (0..100_000)
        .map(|i| json!({"id": format!("att-{i}")}))
        .collect();
    let mut lines: Vec<Value> = export_of(1, 2, "x ")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0]["payload"]["attachments"] = json!(files);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let (code, body) = app.post_bytes("/api/session/import", text).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(body["line"], json!(1));
    assert!(
        body["error"].as_str().unwrap().contains("100000 files"),
        "{body}"
    );
    let (_, list) = app.get("/api/sessions").await;
    assert_eq!(list["sessions"], json!([]), "nothing written");
}

#[tokio::test]
async fn a_long_import_is_written_in_chunks_and_a_failure_leaves_nothing() {
    let app = TestApp::builder().spawn().await;
    // Past several chunks: 3 MB of turns.
    let text = export_of(600, 100, "word ");
    assert!(
        text.len() > 4 * server::transfer::CHUNK_BYTES,
        "{}",
        text.len()
    );
    // Broken at its last line: refused, and nothing of the chunks written before stays.
    let broken = format!("{}{{not json\n", text);
    let (code, body) = app.post_bytes("/api/session/import", broken).await;
    assert_eq!(code, 400, "{body}");
    let (_, list) = app.get("/api/sessions").await;
    assert_eq!(list["sessions"], json!([]));
    assert_eq!(storage(&app).await["conversations"], json!(0));

    let (code, body) = app.post_bytes("/api/session/import", text.clone()).await;
    assert_eq!(code, 200, "{body}");
    let session = body["session"]["id"].as_str().unwrap().to_owned();
    assert_eq!(body["session"]["title"], "question 0");
    // Every turn there, in order, each answered; the last one shown.
    let again = app.export(&session, "jsonl").await;
    let users = again
        .lines()
        .filter(|l| l.contains("\"user_message\""))
        .count();
    assert_eq!(users, 600);
    let rows = |t: &str| t.lines().filter(|l| l.contains("\"token\"")).count();
    assert_eq!(rows(&again), rows(&text));
    let (_, page) = app.get(&format!("/api/session?session_id={session}")).await;
    let messages = page["session"]["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        json!("word ".repeat(100))
    );
    assert!(storage(&app).await["conversations"].as_u64().unwrap() > text.len() as u64);
}

#[tokio::test]
async fn imports_and_copies_take_a_permit_per_account_and_for_the_server() {
    let app = TestApp::builder()
        .configure(|state| state.limits.import_wait = Duration::from_secs(20))
        .spawn()
        .await;
    let (alice, bob) = app.two_users(false).await;
    app.add_user("carol", "carol-password-3", false).await;
    let carol = app.sign_in("carol", "carol-password-3").await;
    // An import whose body is still on its way holds its permit.
    let hold = |cookie: String| {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
        let body = reqwest::Body::wrap_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
        let request = app
            .client
            .post(app.url("/api/session/import"))
            .header("cookie", cookie)
            .header("content-type", "application/x-ndjson")
            .body(body)
            .send();
        (tx, tokio::spawn(request))
    };
    let mut held = Vec::new();
    for cookie in [&alice, &alice, &bob, &bob] {
        let (tx, request) = hold(cookie.clone());
        tx.send(Ok(b"{".to_vec())).await.unwrap();
        held.push((tx, request));
    }
    // Give the four a moment to take their permits (each is waiting for its body).
    let mut answered = (0, 0);
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        app.use_cookie(Some(&alice));
        let session = app.new_session().await;
        let (mine, body) = app
            .post("/api/session/duplicate", json!({"session_id": session}))
            .await;
        app.use_cookie(Some(&carol));
        // A whole file refused: its sender hears why, not a reset connection.
        let (server, all) = crate::hardening::send_all_then_read(
            app.addr,
            &format!(
                "POST /api/session/import HTTP/1.1\r\nhost: {}\r\ncookie: {carol}\r\n\
                 content-type: application/x-ndjson\r\n",
                app.addr
            ),
            &vec![b'x'; 8 << 20],
        )
        .await;
        answered = (mine, server);
        if mine == 429 && server == 503 {
            assert_eq!(body["limit"], "max_transfers_per_user", "{body}");
            assert_eq!(all["limit"], "max_transfers", "{all}");
            break;
        }
    }
    assert_eq!(answered, (429, 503));
    // Once they end, the permits are free again.
    for (tx, request) in held {
        drop(tx);
        let res = request.await.unwrap().unwrap();
        assert_eq!(res.status(), 400, "a broken file");
    }
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let (code, body) = app
        .post("/api/session/duplicate", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200, "{body}");
}

#[tokio::test]
async fn an_import_whose_file_trickles_gives_its_place_back_in_time() {
    let app = TestApp::builder()
        .configure(|state| state.limits.import_wait = Duration::from_millis(300))
        .spawn()
        .await;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    let body = reqwest::Body::wrap_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    tx.send(Ok(b"{".to_vec())).await.unwrap();
    let res = app
        .client
        .post(app.url("/api/session/import"))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 408);
    let said: Value = res.json().await.unwrap();
    assert_eq!(said["limit"], "import_wait", "{said}");
    drop(tx);
    // Its place is free: the next import is taken.
    let (code, body) = app
        .post_bytes("/api/session/import", export_of(1, 2, "x "))
        .await;
    assert_eq!(code, 200, "{body}");
}
