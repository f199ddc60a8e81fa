//! The agent protocols: an AG-UI agent as the backend (against a scripted agent that writes
//! its events split at awkward bytes), and Anchorage answering as an AG-UI agent and as an AI
//! SDK chat endpoint, through the whole server on SQLite (and PostgreSQL in `make test`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use server::runtime::agui_client::{AguiAgent, AguiSettings};

use crate::helpers::{of_kind, texts, SseEvent, TestApp};
use crate::upstream::{data, split_bytes, Piece, Reply, Upstream};

const AGENT: &str = "POST /agent";

fn agent(upstream: &Upstream, key: Option<&str>) -> Arc<AguiAgent> {
    Arc::new(
        AguiAgent::new(AguiSettings {
            url: upstream.url("/agent"),
            api_key: key.map(Into::into),
            idle: Duration::from_secs(10),
            first_token: Duration::from_secs(10),
        })
        .unwrap(),
    )
}

/// Events as the protocol's encoder writes them (`data: <json>\n\n`), cut every `size` bytes.
fn script(events: &[Value], size: usize) -> Reply {
    let text: String = events.iter().map(|e| data(e.clone())).collect();
    Reply::Stream(split_bytes(&text, size))
}

/// The session's messages (role, content).
async fn transcript(app: &TestApp, session: &str) -> Vec<Value> {
    let (code, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(code, 200, "{s}");
    s["session"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn settled(app: &TestApp, session: &str) -> Value {
    transcript(app, session)
        .await
        .into_iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .expect("an answer")
}

/// Runs `message` in a new session against the scripted agent; (events, terminal status).
async fn agent_turn(app: &TestApp, message: &str) -> (String, Vec<SseEvent>, Value) {
    let session = app.new_session().await;
    let run = app.start(&session, message).await;
    let status = app.wait_finished(&run).await;
    (session, app.stream(&run, None).await, status)
}

#[tokio::test]
async fn an_agui_agents_events_become_the_turn_even_split_mid_character() {
    let upstream = Upstream::start().await;
    let events = [
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "REASONING_START", "messageId": "r1"}),
        json!({"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"}),
        json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "Thinking about "}),
        json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "the façade…"}),
        json!({"type": "REASONING_MESSAGE_END", "messageId": "r1"}),
        json!({"type": "REASONING_END", "messageId": "r1"}),
        json!({"type": "TOOL_CALL_START", "toolCallId": "tc1", "toolCallName": "read_file"}),
        json!({"type": "TOOL_CALL_ARGS", "toolCallId": "tc1", "delta": "{\"path\": \"no"}),
        json!({"type": "TOOL_CALL_ARGS", "toolCallId": "tc1", "delta": "tes/ü.md\"}"}),
        json!({"type": "TOOL_CALL_END", "toolCallId": "tc1"}),
        json!({"type": "TOOL_CALL_RESULT", "messageId": "m-t", "toolCallId": "tc1", "content": "12 lines", "role": "tool"}),
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"todos": [
            {"title": "Read the notes", "status": "done"},
            {"title": "Answer", "status": "in_progress"}]}}),
        json!({"type": "STATE_DELTA", "delta": [
            {"op": "replace", "path": "/todos/1/status", "value": "completed"}]}),
        json!({"type": "CUSTOM", "name": "progress", "value": {"pct": 50}}),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Héllo "}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "wörld 🌍"}),
        json!({"type": "TEXT_MESSAGE_END", "messageId": "m1"}),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"},
               "usage": [{"inputTokens": 20, "outputTokens": 5}]}),
    ];
    upstream.script(AGENT, script(&events, 7));
    let app = TestApp::builder()
        .adapter(agent(&upstream, Some("k-test")))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "Hi there").await;
    let status = app.wait_finished(&run).await;
    assert_eq!(status["terminal_state"], "completed");
    let events = app.stream(&run, None).await;

    // What the agent was sent: the thread, the run, the conversation, the key.
    let sent = &upstream.requests(AGENT)[0];
    assert_eq!(sent.auth.as_deref(), Some("Bearer k-test"));
    assert_eq!(sent.body["threadId"], json!(session));
    assert_eq!(sent.body["runId"], json!(run));
    let last = sent.body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        (&last["role"], &last["content"]),
        (&json!("user"), &json!("Hi there"))
    );

    assert_eq!(texts(&events, "reasoning"), "Thinking about the façade…");
    assert_eq!(texts(&events, "token"), "Héllo wörld 🌍");
    let tool = of_kind(&events, "tool")[0];
    assert_eq!(tool.data["name"], "read_file");
    assert_eq!(tool.data["tid"], "tc1");
    assert_eq!(tool.data["args"], json!({"path": "notes/ü.md"}));
    let done = of_kind(&events, "tool_complete")[0];
    assert_eq!(
        (&done.data["tid"], &done.data["preview"]),
        (&json!("tc1"), &json!("12 lines"))
    );
    assert_eq!(done.data["args"], json!({"path": "notes/ü.md"}));
    let todos = of_kind(&events, "todo_state");
    assert_eq!(todos.len(), 2, "the snapshot, then the delta");
    assert_eq!(
        todos[1].data["todos"],
        json!([{"id": "1", "content": "Read the notes", "status": "completed"},
               {"id": "2", "content": "Answer", "status": "completed"}])
    );
    // The event we have no place for is kept, not shown.
    let kept = of_kind(&events, "state_saved");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].data["event"]["value"], json!({"pct": 50}));
    // In the agent's order: reasoning, the tool, its result, then the answer.
    let order: Vec<&str> = events
        .iter()
        .map(|e| e.event.as_str())
        .filter(|k| ["reasoning", "tool", "tool_complete", "token"].contains(k))
        .collect();
    let first = |k: &str| order.iter().position(|x| *x == k).unwrap();
    assert!(first("reasoning") < first("tool"));
    assert!(first("tool") < first("tool_complete"));
    assert!(first("tool_complete") < first("token"));
    let answer = settled(&app, &session).await;
    assert_eq!(answer["content"], "Héllo wörld 🌍");
    let done = of_kind(&events, "done")[0];
    assert_eq!(done.data["usage"]["input_tokens"], 20);
    assert_eq!(done.data["usage"]["output_tokens"], 5);
}

#[tokio::test]
async fn an_agui_agent_that_fails_pauses_or_drops_ends_the_turn_honestly() {
    let upstream = Upstream::start().await;
    let text =
        |delta: &str| json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": delta});
    let start = json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"});
    // RUN_ERROR after some text.
    upstream.script(
        AGENT,
        script(
            &[
                json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
                start.clone(),
                text("Partly "),
                json!({"type": "RUN_ERROR", "message": "the model is overloaded", "code": "overloaded"}),
            ],
            5,
        ),
    );
    // An interrupt: the agent waits for someone.
    upstream.script(
        AGENT,
        script(
            &[
                json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
                json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt",
                       "interrupts": [{"id": "i1", "reason": "approval to deploy"}]}}),
            ],
            9,
        ),
    );
    // The connection breaks mid-run.
    let mut dropped = split_bytes(&(data(start.clone()) + &data(text("So far"))), 6);
    dropped.push(Piece::Abort);
    upstream.script(AGENT, Reply::Stream(dropped));
    // The stream ends without RUN_FINISHED.
    upstream.script(AGENT, script(&[start.clone(), text("Cut")], 64));
    // The agent refuses.
    upstream.script(AGENT, Reply::Json(401, json!({"detail": "bad key"})));
    let app = TestApp::builder()
        .adapter(agent(&upstream, None))
        .spawn()
        .await;

    let (session, events, status) = agent_turn(&app, "one").await;
    assert_eq!(status["terminal_state"], "error");
    let end = of_kind(&events, "apperror")[0];
    assert!(end.data["message"]
        .as_str()
        .unwrap()
        .contains("the model is overloaded"));
    assert!(end.data["hint"].as_str().unwrap().contains("overloaded"));
    let answer = settled(&app, &session).await;
    assert_eq!(
        (&answer["content"], &answer["partial"]),
        (&json!("Partly "), &json!(true))
    );

    let (_, events, status) = agent_turn(&app, "two").await;
    assert_eq!(status["terminal_state"], "error");
    let message = of_kind(&events, "apperror")[0].data["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("paused, waiting for approval to deploy"),
        "{message}"
    );

    let (session, events, status) = agent_turn(&app, "three").await;
    assert_eq!(status["terminal_state"], "error");
    let message = of_kind(&events, "apperror")[0].data["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("lost mid-run"), "{message}");
    assert_eq!(settled(&app, &session).await["content"], "So far");

    let (_, events, status) = agent_turn(&app, "four").await;
    assert_eq!(status["terminal_state"], "error");
    let message = of_kind(&events, "apperror")[0].data["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("closed the event stream before the run finished"),
        "{message}"
    );

    let (_, events, _) = agent_turn(&app, "five").await;
    let end = of_kind(&events, "apperror")[0];
    assert!(end.data["message"].as_str().unwrap().contains("HTTP 401"));
    assert!(end.data["hint"].as_str().unwrap().contains("AGUI_API_KEY"));
}

#[tokio::test]
async fn stop_closes_the_connection_to_the_agui_agent() {
    let upstream = Upstream::start().await;
    let mut pieces = split_bytes(
        &(data(json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}))
            + &data(
                json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Working"}),
            )),
        11,
    );
    pieces.push(Piece::Hang);
    upstream.script(AGENT, Reply::Stream(pieces));
    let app = TestApp::builder()
        .adapter(agent(&upstream, None))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "go").await;
    crate::helpers::wait_for_event(&app, &run, "token").await;
    let (code, body) = app.post("/api/chat/cancel", json!({"run_id": run})).await;
    assert_eq!(code, 200, "{body}");
    upstream.wait_disconnected().await;
    let status = app.wait_finished(&run).await;
    assert_eq!(status["terminal_state"], "cancelled");
    assert_eq!(settled(&app, &session).await["content"], "Working");
}

// ---- Anchorage as an AG-UI agent and an AI SDK endpoint ----

/// The `data:` payloads of an event-stream body, in order (`[DONE]` as the string).
fn data_frames(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|block| {
            let data: Vec<&str> = block
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .map(|d| serde_json::from_str(&d).unwrap_or(Value::String(d)))
        .collect()
}

pub(crate) async fn post_stream(
    app: &TestApp,
    path: &str,
    body: Value,
) -> (reqwest::header::HeaderMap, Vec<Value>) {
    let res = app
        .client
        .post(app.url(path))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let headers = res.headers().clone();
    let text = tokio::time::timeout(Duration::from_secs(30), res.text())
        .await
        .expect("the stream ends")
        .unwrap();
    (headers, data_frames(&text))
}

async fn get_stream(app: &TestApp, path: &str) -> Vec<Value> {
    let res = app.client.get(app.url(path)).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let text = tokio::time::timeout(Duration::from_secs(30), res.text())
        .await
        .expect("the stream ends")
        .unwrap();
    data_frames(&text)
}

/// Holds AG-UI events to the rules of the official client's verifier; the text of each text
/// message, in order.
fn verify_agui(events: &[Value]) -> Vec<String> {
    assert_eq!(events[0]["type"], "RUN_STARTED", "{:?}", events[0]);
    let mut messages = HashSet::new();
    let mut calls = HashSet::new();
    let mut reasoning = HashSet::new();
    let mut text: Vec<String> = Vec::new();
    let mut last_seq = 0;
    for (i, e) in events.iter().enumerate() {
        let kind = e["type"].as_str().unwrap();
        let id = |k: &str| e[k].as_str().unwrap().to_owned();
        if i > 0 {
            assert_ne!(kind, "RUN_STARTED");
            let seq = e["metadata"]["anchorage"]["seq"]
                .as_u64()
                .expect("our seq rides along");
            assert!(seq >= last_seq, "in journal order");
            last_seq = seq;
        }
        match kind {
            "TEXT_MESSAGE_START" => {
                assert!(messages.insert(id("messageId")), "started twice");
                text.push(String::new());
            }
            "TEXT_MESSAGE_CONTENT" => {
                assert!(
                    messages.contains(&id("messageId")),
                    "content outside its message"
                );
                let delta = e["delta"].as_str().unwrap();
                assert!(!delta.is_empty());
                text.last_mut().unwrap().push_str(delta);
            }
            "TEXT_MESSAGE_END" => assert!(messages.remove(&id("messageId"))),
            "REASONING_START" => assert!(reasoning.insert(id("messageId"))),
            "REASONING_MESSAGE_START" | "REASONING_MESSAGE_END" | "REASONING_MESSAGE_CONTENT" => {
                assert!(reasoning.contains(&id("messageId")))
            }
            "REASONING_END" => assert!(reasoning.remove(&id("messageId"))),
            "TOOL_CALL_START" => assert!(calls.insert(id("toolCallId")), "call started twice"),
            "TOOL_CALL_ARGS" => assert!(calls.contains(&id("toolCallId"))),
            "TOOL_CALL_END" => assert!(calls.remove(&id("toolCallId"))),
            "RUN_FINISHED" | "RUN_ERROR" => {
                assert_eq!(i, events.len() - 1, "nothing after the end");
                assert!(messages.is_empty() && calls.is_empty() && reasoning.is_empty());
            }
            _ => {}
        }
    }
    assert!(matches!(
        events.last().unwrap()["type"].as_str(),
        Some("RUN_FINISHED" | "RUN_ERROR")
    ));
    text
}

/// (name, args) of each tool call of AG-UI events, and each result's content.
fn agui_tools(events: &[Value]) -> (Vec<(String, Value)>, Vec<String>) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    let mut name = String::new();
    for e in events {
        match e["type"].as_str().unwrap() {
            "TOOL_CALL_START" => name = e["toolCallName"].as_str().unwrap().to_owned(),
            "TOOL_CALL_ARGS" => calls.push((
                name.clone(),
                serde_json::from_str(e["delta"].as_str().unwrap()).unwrap(),
            )),
            "TOOL_CALL_RESULT" => results.push(e["content"].as_str().unwrap().to_owned()),
            _ => {}
        }
    }
    (calls, results)
}

/// (name, args) of the journal's tool rows, and the results' previews.
fn journal_tools(events: &[SseEvent]) -> (Vec<(String, Value)>, Vec<String>) {
    let calls = of_kind(events, "tool")
        .iter()
        .map(|e| {
            (
                e.data["name"].as_str().unwrap().to_owned(),
                e.data["args"].clone(),
            )
        })
        .collect();
    let results = of_kind(events, "tool_complete")
        .iter()
        .map(|e| e.data["preview"].as_str().unwrap_or_default().to_owned())
        .collect();
    (calls, results)
}

#[tokio::test]
async fn anchorage_answers_as_an_agui_agent_live_and_from_its_journal() {
    let app = TestApp::builder().spawn().await;
    let input = |run: &str, text: &str| {
        json!({"threadId": "thread-one", "runId": run, "state": {}, "tools": [], "context": [],
               "forwardedProps": {}, "messages": [{"id": format!("u-{run}"), "role": "user", "content": text}]})
    };
    let (headers, events) =
        post_stream(&app, "/api/agui", input("client-run-1", "/demo tools")).await;
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    assert_eq!(events[0]["threadId"], "thread-one");
    assert_eq!(events[0]["runId"], "client-run-1");
    let text = verify_agui(&events);
    let end = events.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED");
    assert_eq!(end["runId"], "client-run-1");
    assert_eq!(end["result"]["terminal_state"], "completed");

    // It is a turn of ours: the same text, tools and results as the journal and transcript.
    let run = events[1]["metadata"]["anchorage"]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, status) = app
        .get(&format!("/api/chat/stream/status?run_id={run}"))
        .await;
    let session = status["session_id"].as_str().unwrap().to_owned();
    let journal = app.stream(&run, None).await;
    let answer = settled(&app, &session).await;
    // What it said before its tools is a message of its own; the last one is the answer.
    assert!(text.len() > 1, "{text:?}");
    assert_eq!(text.last().unwrap(), answer["content"].as_str().unwrap());
    assert_eq!(text.concat(), texts(&journal, "token"));
    let (calls, results) = agui_tools(&events);
    assert!(!calls.is_empty());
    assert_eq!((calls.clone(), results.clone()), journal_tools(&journal));
    let reasoning: String = events
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, texts(&journal, "reasoning"));

    // The run read back later is the same turn.
    let again = get_stream(&app, &format!("/api/runs/{run}/agui")).await;
    assert_eq!(again[0]["threadId"], json!(session));
    assert_eq!(again[0]["runId"], json!(run));
    assert_eq!(verify_agui(&again), text);
    assert_eq!(agui_tools(&again), (calls, results));

    // The same runId again follows that turn instead of starting another; the same thread
    // is the same session.
    let (_, replayed) = post_stream(&app, "/api/agui", input("client-run-1", "/demo tools")).await;
    assert_eq!(verify_agui(&replayed), text);
    let (_, next) = post_stream(&app, "/api/agui", input("client-run-2", "Hello")).await;
    verify_agui(&next);
    let roles: Vec<Value> = transcript(&app, &session)
        .await
        .iter()
        .map(|m| m["role"].clone())
        .collect();
    assert_eq!(
        roles,
        vec![
            json!("user"),
            json!("assistant"),
            json!("user"),
            json!("assistant")
        ]
    );

    // Bad input is refused, and nothing starts.
    for (body, says) in [
        (
            json!({"runId": "x", "messages": [{"role": "user", "content": "hi"}]}),
            "threadId",
        ),
        (
            json!({"threadId": "t2", "messages": [{"role": "assistant", "content": "hi"}]}),
            "user message",
        ),
        (json!({"threadId": "t2", "messages": "nope"}), ""),
        (
            json!({"threadId": "x".repeat(300), "messages": [{"role": "user", "content": "hi"}]}),
            "too long",
        ),
    ] {
        let (code, err) = app.post("/api/agui", body).await;
        assert_eq!(code, 400, "{err}");
        assert!(err["error"].as_str().unwrap().contains(says), "{err}");
    }
}

#[tokio::test]
async fn a_client_joining_a_live_run_gets_the_agui_start_events_it_missed() {
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(4))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo long 300").await;
    crate::helpers::wait_for_event(&app, &run, "token").await;
    let events = get_stream(&app, &format!("/api/runs/{run}/agui")).await;
    let text = verify_agui(&events);
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let answer = settled(&app, &session).await;
    assert_eq!(text, vec![answer["content"].as_str().unwrap().to_owned()]);
}

#[tokio::test]
async fn anchorage_answers_as_an_ai_sdk_chat_endpoint_and_resumes() {
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(4))
        .spawn()
        .await;
    let body = |text: &str, id: &str| {
        json!({"id": "chat-abc", "trigger": "submit-message",
               "messages": [{"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}]})
    };
    let (headers, chunks) = post_stream(&app, "/api/ai-sdk/chat", body("/demo tools", "u1")).await;
    assert_eq!(headers["x-vercel-ai-ui-message-stream"], "v1");
    assert_eq!(chunks.last().unwrap(), &json!("[DONE]"));
    let start = &chunks[0];
    assert_eq!(start["type"], "start");
    let session = start["messageMetadata"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = start["messageMetadata"]["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = settled(&app, &session).await;
    assert_eq!(start["messageId"], answer["id"], "the id it settles into");
    let (text, tools) = ui_parts(&chunks);
    assert_eq!(text.last().unwrap(), answer["content"].as_str().unwrap());
    assert_eq!(text.concat(), texts(&app.stream(&run, None).await, "token"));
    let journal = app.stream(&run, None).await;
    let (calls, results) = journal_tools(&journal);
    assert_eq!(tools, calls.into_iter().zip(results).collect::<Vec<_>>());
    assert_eq!(chunks[chunks.len() - 2]["type"], "finish");

    // Nothing runs: 204.
    let res = app
        .client
        .get(app.url("/api/ai-sdk/chat/chat-abc/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let res = app
        .client
        .get(app.url("/api/ai-sdk/chat/never-used/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);

    // A long turn, whose first answer is dropped; the resume reads all of it.
    let res = app
        .client
        .post(app.url("/api/ai-sdk/chat"))
        .json(&body("/demo long 300", "u2"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    drop(res);
    let chunks = get_stream(&app, "/api/ai-sdk/chat/chat-abc/stream").await;
    let answer = settled(&app, &session).await;
    assert_eq!(chunks[0]["messageId"], answer["id"]);
    assert_eq!(
        ui_parts(&chunks).0,
        vec![answer["content"].as_str().unwrap().to_owned()]
    );
    assert_eq!(chunks.last().unwrap(), &json!("[DONE]"));
}

/// A tool part: (its tool, its input), and its output.
type ToolPart = ((String, Value), String);

/// The text parts and the (tool, input) → output of UI message chunks, checking that every delta
/// and end has its start.
fn ui_parts(chunks: &[Value]) -> (Vec<String>, Vec<ToolPart>) {
    let mut open = HashSet::new();
    let mut text: Vec<String> = Vec::new();
    let mut tools: Vec<ToolPart> = Vec::new();
    let mut ids = Vec::new();
    for c in chunks.iter().filter(|c| c.is_object()) {
        let kind = c["type"].as_str().unwrap();
        let id = c["id"].as_str().unwrap_or_default().to_owned();
        match kind {
            "text-start" | "reasoning-start" => {
                if kind == "text-start" {
                    text.push(String::new());
                }
                assert!(open.insert(id));
            }
            "text-delta" => {
                assert!(open.contains(&id));
                text.last_mut()
                    .unwrap()
                    .push_str(c["delta"].as_str().unwrap());
            }
            "reasoning-delta" => assert!(open.contains(&id)),
            "text-end" | "reasoning-end" => assert!(open.remove(&id)),
            "tool-input-available" => {
                ids.push(c["toolCallId"].clone());
                tools.push((
                    (
                        c["toolName"].as_str().unwrap().to_owned(),
                        c["input"].clone(),
                    ),
                    String::new(),
                ));
            }
            "tool-output-available" | "tool-output-error" => {
                let at = ids
                    .iter()
                    .position(|i| *i == c["toolCallId"])
                    .expect("its call");
                tools[at].1 = c["output"]
                    .as_str()
                    .or(c["errorText"].as_str())
                    .unwrap_or_default()
                    .to_owned();
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "every part ended");
    (text, tools)
}

#[tokio::test]
async fn a_failed_turn_ends_each_protocols_stream_as_that_protocol_says_failure() {
    let upstream = Upstream::start().await;
    let failing = || {
        script(
            &[
                json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
                json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Partly "}),
                json!({"type": "RUN_ERROR", "message": "the model is overloaded"}),
            ],
            13,
        )
    };
    upstream.script(AGENT, failing());
    upstream.script(AGENT, failing());
    let app = TestApp::builder()
        .adapter(agent(&upstream, None))
        .spawn()
        .await;

    let input = json!({"threadId": "failing", "runId": "r1",
                       "messages": [{"id": "u1", "role": "user", "content": "go"}]});
    let (_, events) = post_stream(&app, "/api/agui", input).await;
    verify_agui(&events);
    let end = events.last().unwrap();
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "error");
    assert!(end["message"]
        .as_str()
        .unwrap()
        .contains("the model is overloaded"));

    let body = json!({"id": "failing-chat",
                      "messages": [{"id": "u2", "role": "user", "parts": [{"type": "text", "text": "go"}]}]});
    let (_, chunks) = post_stream(&app, "/api/ai-sdk/chat", body).await;
    let (text, _) = ui_parts(&chunks);
    assert_eq!(text, vec!["Partly ".to_owned()]);
    let error = &chunks[chunks.len() - 2];
    assert_eq!(error["type"], "error");
    assert!(error["errorText"]
        .as_str()
        .unwrap()
        .contains("the model is overloaded"));
    assert_eq!(chunks.last().unwrap(), &json!("[DONE]"));
    assert!(!chunks.iter().any(|c| c["type"] == "finish"));
}
