//! Standing permissions: an approval answered "this conversation" or "every conversation"
//! holds (in that conversation, or in all) for exactly what the card named, Settings lists
//! it, and a revoked one asks again.

use serde_json::{json, Value};

use crate::helpers::{wait_for_event, TestApp};

/// Runs `/demo approval` in `session`; answers `choice` if it asks. Whether it asked.
async fn approval_turn(app: &TestApp, session: &str, choice: &str) -> bool {
    command_turn(app, session, "/demo approval", choice).await
}

/// Runs `message` (a `/demo approval COMMAND`) in `session`; answers `choice` if it asks.
/// Whether it asked.
async fn command_turn(app: &TestApp, session: &str, message: &str, choice: &str) -> bool {
    let run = app.start(session, message).await;
    // It ends on its own, or waits for an answer.
    let asked = loop {
        let (_, status) = app
            .get(&format!("/api/chat/stream/status?run_id={run}"))
            .await;
        if status["terminal_state"].is_string() {
            break false;
        }
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        if s["session"]["pending_interactions"]
            .as_array()
            .is_some_and(|p| !p.is_empty())
        {
            break true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    if asked {
        let request = wait_for_event(app, &run, "approval").await;
        let (code, body) = app
            .post(
                "/api/approval/respond",
                json!({"run_id": run, "approval_id": request.data["approval_id"], "choice": choice}),
            )
            .await;
        assert_eq!(code, 200, "{body}");
    }
    let status = app.wait_finished(&run).await;
    assert_eq!(status["terminal_state"], "completed");
    let asked_in_journal = app
        .stream(&run, None)
        .await
        .iter()
        .any(|e| e.event == "approval");
    assert_eq!(asked, asked_in_journal, "{run}");
    asked
}

async fn grants(app: &TestApp) -> Vec<Value> {
    let (code, body) = app.get("/api/grants").await;
    assert_eq!(code, 200, "{body}");
    body["grants"].as_array().unwrap().clone()
}

#[tokio::test]
async fn this_session_and_always_hold_until_revoked() {
    let app = TestApp::builder().spawn().await;
    let first = app.new_session().await;
    assert!(grants(&app).await.is_empty());

    // "This session": the same action goes ahead there without asking, not elsewhere.
    assert!(approval_turn(&app, &first, "session").await);
    assert!(!approval_turn(&app, &first, "once").await);
    let second = app.new_session().await;
    assert!(
        approval_turn(&app, &second, "once").await,
        "a once is not kept"
    );
    assert!(approval_turn(&app, &second, "deny").await);
    let listed = grants(&app).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["scope"], "session");
    assert_eq!(listed[0]["pattern"], "rm -rf target/");
    assert_eq!(listed[0]["session_id"], json!(first));
    assert!(listed[0]["session_title"].is_string(), "{listed:?}");
    let session_grant = listed[0]["id"].as_str().unwrap().to_owned();

    // "Every conversation" is not offered for a destructive command, and not taken.
    let session = app.new_session().await;
    let run = app.start(&session, "/demo approval").await;
    let request = wait_for_event(&app, &run, "approval").await;
    assert_eq!(
        request.data["choices"],
        json!(["once", "session", "deny"]),
        "{}",
        request.data
    );
    assert_eq!(
        request.data["options"][1]["label"],
        "Allow `rm -rf target/` in this conversation"
    );
    let (code, body) = app
        .post(
            "/api/approval/respond",
            json!({"run_id": run, "approval_id": request.data["approval_id"], "choice": "always"}),
        )
        .await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("not offered"));
    let (code, _) = app
        .post(
            "/api/approval/respond",
            json!({"run_id": run, "approval_id": request.data["approval_id"], "choice": "deny"}),
        )
        .await;
    assert_eq!(code, 200);
    app.wait_finished(&run).await;

    // A command kept for this conversation is that command: another rm there asks.
    assert!(
        command_turn(&app, &first, "/demo approval rm -rf /", "deny").await,
        "rm -rf / asks, whatever was allowed for rm -rf target/"
    );

    // "Every conversation", for what is not destructive: that command, everywhere.
    assert!(command_turn(&app, &second, "/demo approval cargo test", "always").await);
    let third = app.new_session().await;
    assert!(!command_turn(&app, &third, "/demo approval cargo test", "once").await);
    assert!(
        command_turn(&app, &third, "/demo approval cargo test --release", "deny").await,
        "other arguments ask"
    );
    let listed = grants(&app).await;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["scope"], "always");
    assert_eq!(listed[0]["pattern"], "cargo test");
    assert_eq!(listed[0]["session_id"], Value::Null);
    let always = listed[0]["id"].as_str().unwrap().to_owned();

    // Revoked: the next such action asks again.
    let (code, body) = app.post("/api/grants/revoke", json!({"id": always})).await;
    assert_eq!((code, body), (200, json!({"ok": true})));
    assert!(command_turn(&app, &third, "/demo approval cargo test", "deny").await);
    assert!(
        !approval_turn(&app, &first, "once").await,
        "the session grant holds"
    );
    let (code, _) = app
        .post("/api/grants/revoke", json!({"id": session_grant}))
        .await;
    assert_eq!(code, 200);
    assert!(approval_turn(&app, &first, "once").await);
    assert!(grants(&app).await.is_empty());

    // Unknown or gone: 404 with a JSON error; bad bodies 400.
    let (code, body) = app.post("/api/grants/revoke", json!({"id": always})).await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["error"], "grant not found");
    let (code, body) = app.post("/api/grants/revoke", json!({})).await;
    assert_eq!(code, 400, "{body}");
}

#[tokio::test]
async fn a_session_grant_goes_with_its_session() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    assert!(approval_turn(&app, &session, "session").await);
    assert_eq!(grants(&app).await.len(), 1);
    let (code, _) = app
        .post("/api/session/delete", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200);
    assert!(grants(&app).await.is_empty());
    // Undo of the delete brings it back with the conversation.
    let (code, _) = app
        .post("/api/session/restore", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(grants(&app).await.len(), 1);
}
