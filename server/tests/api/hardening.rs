//! What a burst, an idle crowd, a proxy or a greedy client can no longer do: guess passwords
//! in parallel past the throttle, hold connections open without sending, reach an open server
//! from elsewhere, start more turns than the limit by starting them at once, or make the
//! server read a whole history in one request.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::helpers::{ServerProcess, TestApp, TestDb, ALICE_PASSWORD};

#[tokio::test]
async fn a_burst_of_wrong_passwords_checks_at_most_five() {
    let app = crate::helpers::TestApp::builder().spawn().await;
    app.add_user("alice", ALICE_PASSWORD, false).await;
    let attempts = (0..60).map(|i| {
        let request = app
            .client
            .post(app.url("/api/auth/login"))
            .json(&json!({"username": "alice", "password": format!("wrong-password-{i}")}));
        async move { request.send().await.unwrap() }
    });
    let answers = futures::future::join_all(attempts).await;
    let mut checked = 0;
    for res in answers {
        match res.status().as_u16() {
            401 => checked += 1,
            429 | 503 => {
                assert!(res.headers().contains_key("retry-after"));
                let body: Value = res.json().await.unwrap();
                assert!(body["error"].is_string(), "{body}");
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert!(checked <= 5, "{checked} passwords were checked");
    assert!(checked >= 1, "the first ones are checked");
    // The right password is held back too, until the minute is over.
    let (code, _) = app
        .post(
            "/api/auth/login",
            json!({"username": "alice", "password": ALICE_PASSWORD}),
        )
        .await;
    assert_eq!(code, 429);
}

#[tokio::test]
async fn a_thousand_idle_connections_are_cut_at_the_header_timeout() {
    let db = TestDb::new().await;
    let site = tempfile::tempdir().unwrap();
    let server = ServerProcess::launch(&db, site.path(), &["--header-timeout-secs", "2"]).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let began = Instant::now();
    let mut sockets = Vec::new();
    for i in 0..1000 {
        let mut socket = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let opened = Instant::now();
        // Each waits for the server to close it from the moment it is open: how long it lived.
        sockets.push(tokio::spawn(async move {
            // Some send nothing, some half a request line, some headers without their end.
            match i % 3 {
                0 => {}
                1 => socket.write_all(b"GET /heal").await.unwrap(),
                _ => socket
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                    .await
                    .unwrap(),
            }
            let mut buf = [0u8; 1024];
            loop {
                match tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => return opened.elapsed(),
                    Ok(Ok(_)) => continue,
                    Err(_) => panic!("a connection was still open 10 s on"),
                }
            }
        }));
    }
    println!(
        "opened 1,000 connections in {:.2} s",
        began.elapsed().as_secs_f64()
    );
    // The server still answers meanwhile.
    let res = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let reads = sockets
        .into_iter()
        .map(|task| async move { task.await.unwrap() });
    let lived = futures::future::join_all(reads).await;
    let longest = lived.iter().max().unwrap();
    let shortest = lived.iter().min().unwrap();
    println!(
        "1,000 idle connections lived {:.2}–{:.2} s (timeout 2 s)",
        shortest.as_secs_f64(),
        longest.as_secs_f64()
    );
    assert!(*shortest >= Duration::from_millis(1500), "{shortest:?}");
    assert!(*longest < Duration::from_secs(4), "{longest:?}");
    let res = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn an_open_server_behind_a_proxy_does_not_start_and_refuses_what_a_proxy_forwards() {
    let db = TestDb::new().await;
    let site = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_server"))
        .args([
            "--addr",
            "127.0.0.1:0",
            "--public-url",
            "https://chat.example.org",
        ])
        .args(db.args())
        .env_remove("DATABASE_URL")
        .env("LEPTOS_SITE_ROOT", site.path())
        .env("LEPTOS_OUTPUT_NAME", "anchorage")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("server") && err.contains("user add"), "{err}");
    assert!(err.contains("chat.example.org"), "{err}");

    // Running with an account, then the last one removed: what a proxy forwards is refused,
    // and so is the public name; this machine still gets in.
    let app = crate::helpers::TestApp::builder().spawn().await;
    let session = app.new_session().await;
    for (host, forwarded) in [
        ("chat.example.org", None),
        ("127.0.0.1", Some("203.0.113.7")),
    ] {
        let mut req = app
            .client
            .get(app.url(&format!("/api/session?session_id={session}")))
            .header("host", host);
        if let Some(from) = forwarded {
            req = req.header("x-forwarded-for", from);
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 403, "{host} {forwarded:?}");
        let body: Value = res.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains("user add"),
            "{body}"
        );
    }
    let (code, _) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(code, 200);

    // From another address of this machine (when it has one), open mode says no.
    if let Some(ip) = own_network_address() {
        let db = TestDb::new().await;
        let site = tempfile::tempdir().unwrap();
        let port = crate::helpers::free_port();
        let store = db.open().await;
        let hash = server::auth::hash_password(ALICE_PASSWORD).unwrap();
        store
            .create_user("alice", &hash, true, server::clock::now())
            .await
            .unwrap();
        let addr = format!("0.0.0.0:{port}");
        let _server = ServerProcess::launch_at(&db, site.path(), &addr, &[]).await;
        // The last account goes while it runs: it asks for --force, then does it.
        let remove = |force: bool| {
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_server"));
            cmd.args(db.args())
                .env_remove("DATABASE_URL")
                .args(["--addr", &addr, "user", "remove", "alice"]);
            if force {
                cmd.arg("--force");
            }
            cmd.output().unwrap()
        };
        let refused = remove(false);
        assert_eq!(refused.status.code(), Some(2));
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("last account") && said.contains("--force"),
            "{said}"
        );
        assert!(remove(true).status.success());
        let res = reqwest::get(format!("http://{ip}:{port}/api/sessions"))
            .await
            .unwrap();
        assert_eq!(res.status(), 403);
        let res = reqwest::get(format!("http://127.0.0.1:{port}/api/sessions"))
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    } else {
        println!("no address but loopback here: the network case is left out");
    }
}

/// An address of this machine that is not loopback, if it has one.
fn own_network_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

fn limits(f: impl FnOnce(&mut server::limits::Limits)) -> impl FnOnce(&mut server::AppState) {
    move |state| f(&mut state.limits)
}

async fn cancel_all(app: &TestApp, runs: &[String]) {
    for run in runs {
        app.post("/api/chat/cancel", json!({"run_id": run})).await;
        app.wait_finished(run).await;
    }
}

#[tokio::test]
async fn twenty_starts_at_once_start_no_more_than_the_limit() {
    let app = TestApp::builder()
        .configure(limits(|l| l.max_runs_per_user = 4))
        .spawn()
        .await;
    let mut sessions = Vec::new();
    for _ in 0..20 {
        sessions.push(app.new_session().await);
    }
    let starts = sessions.iter().map(|session| {
        app.post(
            "/api/chat/start",
            json!({"session_id": session, "message": "/demo slow"}),
        )
    });
    let answers = futures::future::join_all(starts).await;
    let mut started = Vec::new();
    for (code, body) in answers {
        match code {
            200 => started.push(body["run_id"].as_str().unwrap().to_owned()),
            429 => assert_eq!(body["limit"], "max_runs_per_user", "{body}"),
            other => panic!("{other}: {body}"),
        }
    }
    assert!(started.len() <= 4, "{} started", started.len());
    assert!(!started.is_empty());
    assert!(app.store.count_running(None).await.unwrap() <= 4);
    cancel_all(&app, &started).await;
}

#[tokio::test]
async fn twenty_follow_ups_at_once_queue_no_more_than_the_limit() {
    let app = TestApp::builder()
        .configure(limits(|l| l.max_queued = 3))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo slow").await;
    let sends = (0..20).map(|i| {
        app.post(
            "/api/chat/queue",
            json!({"session_id": session, "message": format!("next {i}"), "client_id": format!("q{i}")}),
        )
    });
    let answers = futures::future::join_all(sends).await;
    let queued = answers.iter().filter(|(code, _)| *code == 200).count();
    for (code, body) in &answers {
        assert!(
            *code == 200 || (*code == 429 && body["limit"] == "max_queued"),
            "{code} {body}"
        );
    }
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    let waiting = s["session"]["queued"].as_array().unwrap().len();
    assert!(
        waiting <= 3 && queued <= 3,
        "{waiting} waiting, {queued} answered queued"
    );
    cancel_all(&app, &[run]).await;
}

#[tokio::test]
async fn turns_after_an_unknown_run_are_a_404_not_the_whole_history() {
    let app = crate::helpers::TestApp::builder().spawn().await;
    let (alice, bob) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let run = app.start(&session, "hello").await;
    app.wait_finished(&run).await;
    let (code, body) = app
        .get(&format!("/api/page?session_id={session}&after_run_id=nope"))
        .await;
    assert_eq!(code, 404, "{body}");
    assert!(body["error"].is_string());
    let (code, page) = app
        .get(&format!(
            "/api/page?session_id={session}&after_run_id={run}"
        ))
        .await;
    assert_eq!(code, 200);
    assert_eq!(
        page["session"]["turns"],
        json!([]),
        "nothing after the last turn"
    );
    // Another account's run is as unknown as one that never was.
    app.use_cookie(Some(&bob));
    let his = app.new_session().await;
    let (code, _) = app
        .get(&format!("/api/page?session_id={his}&after_run_id={run}"))
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn an_export_is_streamed_a_page_at_a_time() {
    let app = crate::helpers::TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 12000").await;
    app.wait_finished_within(&run, Duration::from_secs(60))
        .await;
    let res = app
        .get_with(
            &format!("/api/session/export?session_id={session}&format=jsonl"),
            &[],
        )
        .await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers().get("content-length").is_none(),
        "sent as it is read, not built whole first"
    );
    let text = res.text().await.unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let last_seq = app.store.run(&run).await.unwrap().last_seq;
    assert_eq!(
        lines.len() as u64,
        last_seq + 1,
        "the message, then every row"
    );
    assert_eq!(lines[0]["event"], "user_message");
    let seqs: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (1..=last_seq).collect::<Vec<_>>(),
        "in order, none twice"
    );
    // Compressed on its way (as a browser asks for it), the same lines, ended properly.
    let res = app
        .get_with(
            &format!("/api/session/export?session_id={session}&format=jsonl"),
            &[("accept-encoding", "gzip")],
        )
        .await;
    assert_eq!(res.headers()["content-encoding"], "gzip");
    let zipped = res.bytes().await.expect("the whole body");
    let mut unzipped = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(&zipped[..]),
        &mut unzipped,
    )
    .unwrap();
    assert_eq!(unzipped, text);
}

/// Sends a whole request (its head's lines, then the body) before reading a byte of the
/// answer, as a plain client does, and returns the answer's status and JSON body. A server that
/// answers early and closes with the body unread resets the connection and the answer is lost.
pub async fn send_all_then_read(
    addr: std::net::SocketAddr,
    head: &str,
    body: &[u8],
) -> (u16, Value) {
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{head}content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(body).await.expect("the whole body is sent");
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer)
        .await
        .expect("the answer arrives whole");
    let answer = String::from_utf8_lossy(&answer);
    let status = answer[9..12].parse().unwrap();
    let json = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

#[tokio::test]
async fn uploads_in_progress_are_bounded_per_account() {
    let app = TestApp::builder()
        .configure(limits(|l| l.max_uploads_per_user = 2))
        .spawn()
        .await;
    let (alice, bob) = app.two_users(false).await;
    // Two uploads that never finish sending.
    let mut held = Vec::new();
    for i in 0..2 {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
        tx.send(Ok(b"partial ".to_vec())).await.unwrap();
        let body = reqwest::Body::wrap_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
        let request = app
            .client
            .post(app.url(&format!("/api/attachments?name=slow{i}.txt")))
            .header("cookie", &alice)
            .header("content-type", "application/octet-stream")
            .body(body)
            .send();
        held.push((tx, tokio::spawn(request)));
    }
    // Both reach the server and hold their places.
    for _ in 0..400 {
        if app.state.uploads.open() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(app.state.uploads.open(), 2, "both uploads are in progress");
    app.use_cookie(Some(&alice));
    // A refused file is still on its way when the answer is ready: the client hears the
    // refusal all the same, not a connection closed mid-upload.
    let third = send_all_then_read(
        app.addr,
        &format!(
            "POST /api/attachments?name=third.txt HTTP/1.1\r\nhost: {}\r\ncookie: {alice}\r\n\
             content-type: application/octet-stream\r\n",
            app.addr
        ),
        &vec![b'x'; 8 << 20],
    )
    .await;
    assert_eq!(third.0, 429, "{}", third.1);
    assert_eq!(third.1["limit"], "max_uploads_per_user");
    // Another account is not held back by hers.
    app.use_cookie(Some(&bob));
    let (code, _) = app.upload("his.txt", b"y".to_vec(), None).await;
    assert_eq!(code, 201);
    // Once hers finish, she may upload again.
    for (tx, request) in held {
        drop(tx);
        let res = request.await.unwrap().unwrap();
        assert_eq!(res.status(), 201);
    }
    app.use_cookie(Some(&alice));
    let (code, _) = app.upload("fourth.txt", b"z".to_vec(), None).await;
    assert_eq!(code, 201);
}
