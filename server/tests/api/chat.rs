//! Starting, cancelling, queueing, approvals and clarifications.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{wait_for_event, SseEvent, TestApp};

fn terminals(events: &[SseEvent]) -> Vec<&SseEvent> {
    events
        .iter()
        .filter(|e| matches!(e.event.as_str(), "done" | "cancel" | "apperror"))
        .collect()
}

#[tokio::test]
async fn the_user_message_is_stored_before_the_run_starts_and_the_answer_settles_in_band() {
    let app = TestApp::builder().spawn().await;
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
        "the new session is named after its first message"
    );
    assert!(events.iter().any(|e| e.event == "usage"));
    assert!(events.iter().any(|e| e.event == "metering"));
}

#[tokio::test]
async fn starting_on_a_busy_session_is_409_with_the_active_run() {
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(20))
        .spawn()
        .await;
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
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(10))
        .spawn()
        .await;
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
    let app = TestApp::builder().spawn().await;
    for (choice, expect) in [
        ("once", "approved: once"),
        ("deny", "left the build directory alone"),
    ] {
        let session = app.new_session().await;
        let run = app.start(&session, "/demo approval").await;
        let request = wait_for_event(&app, &run, "approval").await;
        let id = request.data["approval_id"].as_str().unwrap().to_owned();
        // Narrowest first; a destructive command is never offered for every conversation.
        assert_eq!(request.data["choices"], json!(["once", "session", "deny"]));
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
                json!({"run_id": run, "approval_id": id, "choice": "session"}),
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
    let app = TestApp::builder().spawn().await;
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
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(3))
        .spawn()
        .await;
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
    let app = TestApp::builder().spawn().await;
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
    let app = TestApp::builder().spawn().await;
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

#[tokio::test]
async fn a_file_the_agent_handed_over_downloads_for_its_owner_only() {
    let app = TestApp::builder().spawn().await;
    let (alice, bob) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let run = app.start(&session, "/demo artifact").await;
    app.wait_finished(&run).await;
    let events = app.stream(&run, None).await;
    let made = events
        .iter()
        .find(|e| e.event == "artifact_reference")
        .expect("an artifact");
    let content = made.data["content"].as_str().unwrap().to_owned();
    assert_eq!(content.lines().count(), 14, "{content}");
    let url = |seq: u64| app.url(&format!("/api/artifact?run_id={run}&seq={seq}"));
    let res = app
        .client
        .get(url(made.seq()))
        .header("cookie", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let disposition = res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(disposition.starts_with("attachment"), "{disposition}");
    assert!(disposition.contains("summary.md"), "{disposition}");
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert_eq!(res.text().await.unwrap(), content);
    // A row that is not a file, or another account asking: as if there were none.
    let token = events.iter().find(|e| e.event == "token").unwrap();
    for (cookie, seq) in [(&alice, token.seq()), (&bob, made.seq()), (&alice, 99_999)] {
        let res = app
            .client
            .get(url(seq))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404, "seq {seq}");
        let body: Value = res.json().await.unwrap();
        assert!(body["error"].is_string(), "{body}");
    }
}

/// The answer a run's events had streamed (the tokens after its last other activity).
fn streamed(events: &[SseEvent]) -> String {
    let mut text = String::new();
    for e in events {
        match e.event.as_str() {
            "token" => text.push_str(e.data["text"].as_str().unwrap()),
            "reasoning" | "tool" | "tool_complete" | "compressing" | "compressed" | "approval"
            | "clarify" => text.clear(),
            _ => {}
        }
    }
    text
}

#[tokio::test]
async fn a_stopped_turn_settles_with_what_it_streamed_flagged_partial() {
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(2))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 5000").await;
    // Let it stream a while, then Stop.
    let mut seen = 0;
    while seen < 40 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let (_, status) = app
            .get(&format!("/api/chat/stream/status?run_id={run}"))
            .await;
        seen = status["last_seq"].as_u64().unwrap_or(0);
    }
    app.post("/api/chat/cancel", json!({"run_id": run})).await;
    app.wait_finished(&run).await;
    let events = app.stream(&run, None).await;
    let partial = streamed(&events);
    assert!(partial.starts_with("w0 w1 w2 "), "{partial}");
    let settled = events
        .iter()
        .find(|e| e.event == "settled_message")
        .unwrap();
    assert_eq!(
        settled.data["content"],
        partial.as_str(),
        "every streamed word"
    );
    assert_eq!(settled.data["partial"], true);

    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    let message = &s["session"]["messages"][1];
    assert_eq!(message["content"], partial.as_str());
    assert_eq!(message["partial"], true);
    assert_eq!(message["terminal_state"], "cancelled");

    let md = app.export(&session, "md").await;
    assert!(md.contains(partial.trim_end()), "{md}");
    assert!(
        md.contains("partial answer: the turn ended cancelled"),
        "{md}"
    );
    assert!(!md.contains("no final answer"), "{md}");

    // A completed turn's answer is not partial.
    let run = app.start(&session, "/demo prose").await;
    app.wait_finished(&run).await;
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(s["session"]["messages"][3]["partial"], false);
}

#[tokio::test]
async fn every_ending_that_is_not_completion_keeps_the_streamed_answer() {
    let app = TestApp::builder().spawn().await;
    for (scenario, state, expected) in [
        ("/demo error", "error", "Let me check"),
        ("/demo no_response", "no_response", ""),
        ("/demo tool_limit", "tool_limit_reached", ""),
        ("/demo exhausted", "compression_exhausted", ""),
    ] {
        let session = app.new_session().await;
        let run = app.start(&session, scenario).await;
        app.wait_finished(&run).await;
        let events = app.stream(&run, None).await;
        assert_eq!(streamed(&events), expected, "{scenario}");
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        let message = &s["session"]["messages"][1];
        assert_eq!(message["terminal_state"], state, "{scenario}");
        assert_eq!(message["content"], expected, "{scenario}");
        assert_eq!(message["partial"], !expected.is_empty(), "{scenario}");
    }
}

#[tokio::test]
async fn a_send_retried_with_the_same_client_id_starts_one_turn() {
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(5))
        .spawn()
        .await;
    let session = app.new_session().await;
    let body = json!({"session_id": session, "message": "/demo long 200", "client_id": "c-1"});
    let (code, first) = app.post("/api/chat/start", body.clone()).await;
    assert_eq!(code, 200, "{first}");
    assert_eq!(first["duplicate"], false);
    let (code, again) = app.post("/api/chat/start", body.clone()).await;
    assert_eq!(code, 200, "a retry is not a conflict: {again}");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["run_id"], first["run_id"]);
    assert_eq!(again["user_message"]["id"], first["user_message"]["id"]);

    // While it runs, a queued follow-up retried twice is queued once.
    let queue = json!({"session_id": session, "message": "after that", "client_id": "c-2"});
    let (_, q1) = app.post("/api/chat/queue", queue.clone()).await;
    let (_, q2) = app.post("/api/chat/queue", queue.clone()).await;
    assert_eq!(q1["queued"], true, "{q1}");
    assert_eq!(q2["item"]["id"], q1["item"]["id"]);
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(s["session"]["queued"].as_array().unwrap().len(), 1);

    // Once the follow-up started, a retry of it answers that turn.
    let run = first["run_id"].as_str().unwrap();
    app.wait_finished(run).await;
    let mut started = Value::Null;
    for _ in 0..200 {
        let (_, q) = app.post("/api/chat/queue", queue.clone()).await;
        if q["queued"] == false {
            started = q;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(started["started"]["duplicate"], true, "{started}");
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    let users: Vec<&str> = s["session"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["/demo long 200", "after that"]);

    let (code, _) = app
        .post(
            "/api/chat/start",
            json!({"session_id": session, "message": "x", "client_id": "c".repeat(200)}),
        )
        .await;
    assert_eq!(code, 400);
}

#[tokio::test]
async fn a_follow_up_is_always_either_queued_or_started() {
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(1))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 40").await;
    app.post(
        "/api/chat/queue",
        json!({"session_id": session, "message": "next"}),
    )
    .await;
    // Watch the session from the moment the first run ends until the follow-up runs: the
    // follow-up never vanishes in between (it used to, between leaving the queue and starting).
    let mut checks = 0;
    loop {
        // The queue is read first, the transcript after it: a follow-up that leaves the queue
        // between the two reads is already in the transcript by the second.
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        let queued = s["session"]["queued"].as_array().unwrap().len();
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        let users = s["session"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .count();
        assert!(
            queued == 1 || users == 2,
            "queued {queued}, user messages {users}"
        );
        checks += 1;
        if users == 2 {
            break;
        }
        assert!(checks < 2000, "the follow-up never started");
    }
    app.wait_finished(&run).await;
}

#[tokio::test]
async fn page_data_after_a_run_holds_only_the_turns_that_came_after_it() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let first = app.start(&session, "/demo prose").await;
    app.wait_finished(&first).await;
    let second = app.start(&session, "/demo tools").await;
    app.wait_finished(&second).await;
    let (code, all) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(code, 200);
    assert_eq!(all["session"]["turns"].as_array().unwrap().len(), 2);
    let (_, tail) = app
        .get(&format!(
            "/api/page?session_id={session}&after_run_id={first}"
        ))
        .await;
    let turns = tail["session"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["run_id"], second.as_str());
    let shown = &all["session"]["turns"][1];
    assert_eq!(turns[0]["user"], shown["user"]);
    // A page catching up may have watched the turn start: it gets its rows, not its snapshot.
    assert!(shown["snapshot"].is_object());
    assert!(turns[0]["snapshot"].is_null());
    assert!(!turns[0]["events"].as_array().unwrap().is_empty());
    let (_, none) = app
        .get(&format!(
            "/api/page?session_id={session}&after_run_id={second}"
        ))
        .await;
    assert_eq!(none["session"]["turns"], json!([]));
    assert_eq!(none["session"]["id"], session.as_str());
}

#[tokio::test]
async fn a_compression_between_model_calls_leaves_a_whole_answer() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo compress").await;
    app.wait_finished(&run).await;
    let events = app.stream(&run, None).await;
    // What streamed before the compression led to it; the answer comes after, whole.
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    let compressing = kinds.iter().position(|k| *k == "compressing").unwrap();
    let compressed = kinds.iter().position(|k| *k == "compressed").unwrap();
    assert!(kinds[..compressing].contains(&"token"));
    assert!(compressing < compressed);
    let answer = streamed(&events);
    assert_eq!(
        answer,
        "The context is compressed and I can continue where we left off."
    );
    let settled = events
        .iter()
        .find(|e| e.event == "settled_message")
        .unwrap();
    assert_eq!(settled.data["content"], answer.as_str());
    let md = app.export(&session, "md").await;
    assert!(
        md.contains("\n\nThe context is compressed and I can continue"),
        "{md}"
    );
}

#[tokio::test]
async fn an_approval_answered_as_a_question_stays_pending_and_is_409() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo approval").await;
    let request = wait_for_event(&app, &run, "approval").await;
    let id = request.data["approval_id"].as_str().unwrap().to_owned();
    let (code, body) = app
        .post(
            "/api/clarify/respond",
            json!({"run_id": run, "clarify_id": id, "response": "yes"}),
        )
        .await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["kind"], "approval");
    // Still pending: the right answer goes through and the agent goes on.
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(s["session"]["pending_interactions"][0]["id"], id.as_str());
    assert_eq!(s["session"]["pending_interactions"][0]["status"], "pending");
    let (code, _) = app
        .post(
            "/api/approval/respond",
            json!({"run_id": run, "approval_id": id, "choice": "deny"}),
        )
        .await;
    assert_eq!(code, 200);
    let status = app.wait_finished(&run).await;
    assert_eq!(status["terminal_state"], "completed");
}

#[tokio::test]
async fn a_follow_up_left_waiting_with_no_turn_running_starts_by_itself() {
    // As when the instance whose turn ended died before starting the next: the follow-up is
    // in the queue and nothing runs. The upkeep finds it and starts it, once.
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let item = server::store::QueuedMessage {
        id: "q-stranded".into(),
        session_id: session.clone(),
        content: "left behind".into(),
        client_id: Some("c-stranded".into()),
        created_at: server::clock::now(),
        attachments: Vec::new(),
    };
    app.store.queue_message(&item, 20).await.unwrap();
    let mut run = None;
    for _ in 0..400 {
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        let sent: Vec<Value> = s["session"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["content"] == "left behind")
            .cloned()
            .collect();
        assert!(sent.len() <= 1, "started twice: {s}");
        if let Some(message) = sent.first() {
            assert_eq!(s["session"]["queued"].as_array().unwrap().len(), 0, "{s}");
            run = message["run_id"].as_str().map(str::to_owned);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let run = run.expect("the waiting follow-up started within 20 s");
    let status = app.wait_finished(&run).await;
    assert_eq!(status["terminal_state"], "completed");
}
