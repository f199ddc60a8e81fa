//! Bad input gets a clear 4xx JSON error and changes nothing.

use serde_json::{json, Value};

use crate::helpers::TestApp;

#[tokio::test]
async fn malformed_and_oversized_requests_get_4xx_json_errors() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let post_raw = |path: &str, body: &'static str, content_type: Option<&'static str>| {
        let mut req = app.client.post(app.url(path)).body(body);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        req.send()
    };
    let check = |res: reqwest::Response, status: u16| async move {
        assert_eq!(res.status().as_u16(), status);
        let body: Value = res.json().await.expect("a JSON error body");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{body}"
        );
    };
    check(
        post_raw("/api/chat/start", "{not json", Some("application/json"))
            .await
            .unwrap(),
        400,
    )
    .await;
    check(
        post_raw(
            "/api/chat/start",
            "{\"session_id\": 5}",
            Some("application/json"),
        )
        .await
        .unwrap(),
        400,
    )
    .await;
    check(post_raw("/api/chat/start", "{}", None).await.unwrap(), 415).await;
    check(
        post_raw("/api/session/new", "[1,", Some("application/json"))
            .await
            .unwrap(),
        400,
    )
    .await;

    let big = "x".repeat(64 * 1024 + 1);
    let (code, body) = app
        .post(
            "/api/chat/start",
            json!({"session_id": session, "message": big}),
        )
        .await;
    assert_eq!(code, 413, "{body}");
    let huge = "x".repeat(300 * 1024);
    let (code, body) = app
        .post(
            "/api/chat/start",
            json!({"session_id": session, "message": huge}),
        )
        .await;
    assert_eq!(code, 413, "{body}");
    let (code, body) = app
        .post(
            "/api/chat/start",
            json!({"session_id": session, "message": "   "}),
        )
        .await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = app
        .post(
            "/api/chat/start",
            json!({"session_id": "nope", "message": "hi"}),
        )
        .await;
    assert_eq!(code, 404, "{body}");
    let (code, _) = app
        .post(
            "/api/session/rename",
            json!({"session_id": session, "title": ""}),
        )
        .await;
    assert_eq!(code, 400);
    let (code, _) = app
        .post(
            "/api/session/rename",
            json!({"session_id": session, "title": "t".repeat(201)}),
        )
        .await;
    assert_eq!(code, 400);
    let (code, _) = app
        .post(
            "/api/session/rename",
            json!({"session_id": "nope", "title": "x"}),
        )
        .await;
    assert_eq!(code, 404);
    let (code, _) = app.get("/api/session").await;
    assert_eq!(code, 400);
    let (code, _) = app.get("/api/session?session_id=nope").await;
    assert_eq!(code, 404);

    // Nothing was stored by any of it.
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(s["session"]["messages"], json!([]));
    assert_eq!(s["session"]["title"], "New chat");
}
