//! Starting, cancelling, queueing, approvals and clarifications.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with, wait_for_event, SseEvent};

fn terminals(events: &[SseEvent]) -> Vec<&SseEvent> {
    events
        .iter()
        .filter(|e| matches!(e.event.as_str(), "done" | "cancel" | "apperror"))
        .collect()
}

#[tokio::test]
async fn the_user_message_is_stored_before_the_run_starts_and_the_answer_settles_in_band() {
    let app = spawn_app().await;
    let session = app.new_session().await;
    let (code, started) = app
        .post(
            "/api/chat/start",
            json!({"session_id": session, "message": "  Hello there  "}),
        )
        .await;
    assert_eq!(code, 200);
    let run = started["run_id"].as_str().unwrap();
    assert_eq!(started["stream_id"], started["run_id"]);
    assert_eq!(started["turn_id"], format!("turn-{run}"));
    assert_eq!(started["user_message"]["content"], "Hello there");
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(s["session"]["messages"][0]["content"], "Hello there");
    app.wait_finished(run).await;
    let events = app.stream(run, None).await;
    let settled = events
        .iter()
        .find(|e| e.event == "settled_message")
        .unwrap();
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    let answer = &s["session"]["messages"][1];
    assert_eq!(answer["role"], "assistant");
    assert_eq!(
        answer["id"], settled.data["id"],
        "the settled message keeps its stable id"
    );
    assert_eq!(answer["content"], settled.data["content"]);
    assert!(answer["content"].as_str().unwrap().contains("Hello there"));
    assert_eq!(
        s["session"]["title"], "Hello there",
        "the agent titled the new session"
    );
    assert!(events.iter().any(|e| e.event == "usage"));
    assert!(events.iter().any(|e| e.event == "metering"));
}

#[tokio::test]
async fn starting_on_a_busy_session_is_409_with_the_active_run() {
    let app = spawn_app_with(Duration::from_millis(20)).await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo slow").await;
    let (code, body) = app
        .post(
            "/api/chat/start",
            json!({"session_id": session, "message": "again"}),
        )
        .await;
    assert_eq!(code, 409);
    assert_eq!(body["active_run_id"], Value::String(run.clone()));
    assert!(body["error"].as_str().unwrap().contains("active"));
    app.post("/api/chat/cancel", json!({"run_id": run})).await;
}

#[tokio::test]
async fn cancel_is_idempotent_and_ends_the_run_once_as_cancelled() {
    let app = spawn_app_with(Duration::from_millis(10)).await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo slow").await;
    wait_for_event(&app, &run, "token").await;
    let (code, first) = app.post("/api/chat/cancel", json!({"run_id": run})).await;
    assert_eq!(code, 200);
    assert_eq!(first["cancelled"], true);
    let (_, second) = app.post("/api/chat/cancel", json!({"run_id": run})).await;
    assert_eq!(
        second,
        json!({"ok": true, "cancelled": false, "run_id": run})
    );
    let status = app.wait_finished(&run).await;
    assert_eq!(status["terminal_state"], "cancelled");
    let events = app.stream(&run, None).await;
    let ends = terminals(&events);
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].event, "cancel");
    assert_eq!(ends[0].data["status"], "cancelled");
    assert_eq!(events.last().unwrap().event, "stream_end");
    assert!(
        events.iter().any(|e| e.event == "token"),
        "partial work is kept"
    );
    let (_, third) = app.post("/api/chat/cancel", json!({"run_id": run})).await;
    assert_eq!(
        third["cancelled"], false,
        "cancelling a finished run changes nothing"
    );
    assert_eq!(app.stream(&run, None).await, events);
    let (code, _) = app
        .post("/api/chat/cancel", json!({"run_id": "no-such-run"}))
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn an_approval_is_answered_once_and_the_agent_continues() {
    let app = spawn_app().await;
    for (choice, expect) in [
        ("once", "approved: once"),
        ("deny", "left the build directory alone"),
    ] {
        let session = app.new_session().await;
        let run = app.start(&session, "/demo approval").await;
        let request = wait_for_event(&app, &run, "approval").await;
        let id = request.data["approval_id"].as_str().unwrap().to_owned();
        assert_eq!(
            request.data["choices"],
            json!(["once", "session", "always", "deny"])
        );
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        assert_eq!(
            s["session"]["pending_interactions"][0]["id"],
            Value::String(id.clone()),
            "survives a reload"
        );
        let (code, body) = app
            .post(
                "/api/approval/respond",
                json!({"run_id": run, "approval_id": id, "choice": choice}),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        let (code, body) = app
            .post(
                "/api/approval/respond",
                json!({"run_id": run, "approval_id": id, "choice": "always"}),
            )
            .await;
        assert_eq!(code, 409, "{body}");
        assert_eq!(body["error"], "already answered");
        let status = app.wait_finished(&run).await;
        assert_eq!(status["terminal_state"], "completed");
        let events = app.stream(&run, None).await;
        let resolved = events
            .iter()
            .find(|e| e.event == "approval_resolved")
            .unwrap();
        assert_eq!(resolved.data["choice"], choice);
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        let answer = s["session"]["messages"][1]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(answer.contains(expect), "{answer}");
        assert_eq!(s["session"]["pending_interactions"], json!([]));
    }
    let (code, _) = app
        .post(
            "/api/approval/respond",
            json!({"run_id": "x", "approval_id": "y", "choice": "maybe"}),
        )
        .await;
    assert_eq!(code, 400);
}

#[tokio::test]
async fn a_clarification_is_answered_once() {
    let app = spawn_app().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo clarify").await;
    let request = wait_for_event(&app, &run, "clarify").await;
    let id = request.data["clarify_id"].as_str().unwrap();
    assert_eq!(
        request.data["choices_offered"],
        json!(["staging", "production"])
    );
    let (code, _) = app
        .post(
            "/api/clarify/respond",
            json!({"run_id": run, "clarify_id": id, "response": "production"}),
        )
        .await;
    assert_eq!(code, 200);
    let (code, _) = app
        .post(
            "/api/clarify/respond",
            json!({"run_id": run, "clarify_id": id, "response": "staging"}),
        )
        .await;
    assert_eq!(code, 409);
    app.wait_finished(&run).await;
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert!(s["session"]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .contains("production"));
    let (code, _) = app
        .post(
            "/api/clarify/respond",
            json!({"run_id": run, "clarify_id": "clr-unknown", "response": "x"}),
        )
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn a_queued_follow_up_starts_when_the_run_ends() {
    let app = spawn_app_with(Duration::from_millis(3)).await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 60").await;
    let (code, queued) = app
        .post(
            "/api/chat/queue",
            json!({"session_id": session, "message": "and then this"}),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(queued["queued"], true, "{queued}");
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(s["session"]["queued"][0]["content"], "and then this");
    app.wait_finished(&run).await;
    // The follow-up becomes the next turn.
    let mut messages = Value::Null;
    for _ in 0..200 {
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        messages = s["session"]["messages"].clone();
        if messages.as_array().unwrap().len() == 4 && s["session"]["active_run_id"].is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(messages[2]["content"], "and then this");
    // On an idle session a "queued" message simply starts.
    let (_, idle) = app
        .post(
            "/api/chat/queue",
            json!({"session_id": session, "message": "now"}),
        )
        .await;
    assert_eq!(idle["queued"], false);
    assert!(idle["started"]["run_id"].is_string());
}

#[tokio::test]
async fn each_ending_is_journaled_once_with_its_terminal_state() {
    let app = spawn_app().await;
    for (scenario, event, state) in [
        ("/demo error", "apperror", "error"),
        ("/demo no_response", "apperror", "no_response"),
        ("/demo tool_limit", "done", "tool_limit_reached"),
        ("/demo compress", "done", "completed"),
    ] {
        let session = app.new_session().await;
        let run = app.start(&session, scenario).await;
        let status = app.wait_finished(&run).await;
        assert_eq!(status["terminal_state"], state, "{scenario}");
        let events = app.stream(&run, None).await;
        let ends = terminals(&events);
        assert_eq!(ends.len(), 1, "{scenario}");
        assert_eq!(ends[0].event, event, "{scenario}");
        assert_eq!(
            ends[0].data["status"], state,
            "{scenario}: the status names the state"
        );
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        assert_eq!(s["session"]["messages"][1]["terminal_state"], state);
    }
}

#[tokio::test]
async fn the_demo_agent_covers_todo_artifact_and_long_scenarios() {
    let app = spawn_app().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo todo").await;
    app.wait_finished(&run).await;
    let events = app.stream(&run, None).await;
    let todos: Vec<&SseEvent> = events.iter().filter(|e| e.event == "todo_state").collect();
    assert_eq!(todos.len(), 4);
    assert_eq!(todos[3].data["todos"][2]["status"], "completed");

    let session = app.new_session().await;
    let run = app.start(&session, "/demo artifact").await;
    app.wait_finished(&run).await;
    let events = app.stream(&run, None).await;
    assert!(events
        .iter()
        .any(|e| e.event == "artifact_reference" && e.data["path"] == "notes/summary.md"));
    assert!(events.iter().any(|e| e.event == "state_saved"));

    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 500").await;
    app.wait_finished(&run).await;
    let events = app.stream(&run, None).await;
    assert_eq!(events.iter().filter(|e| e.event == "token").count(), 500);
}
