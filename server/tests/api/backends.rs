//! The real backends against scripted upstream servers over loopback: an OpenAI-compatible
//! provider and a Hermes gateway. Each test runs a turn through the whole server and asserts
//! what was journaled and how the turn ended.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use server::runtime::hermes::{HermesAgent, HermesSettings};
use server::runtime::openai::{OpenAiAgent, OpenAiSettings};
use server::runtime::workspaces::Workspaces;
use server::Config;

use crate::helpers::{of_kind, texts, wait_for_event, SseEvent, TestApp};
use crate::upstream::{data, delta, split_bytes, usage, Piece, Reply, Upstream, DONE};

pub(crate) const COMPLETIONS: &str = "POST /v1/chat/completions";

pub(crate) fn openai(
    upstream: &Upstream,
    workspace: &Path,
    max_iterations: u32,
) -> Arc<OpenAiAgent> {
    openai_at(
        upstream.url("/v1"),
        workspace,
        max_iterations,
        Duration::from_secs(10),
    )
}

/// An agent over `base_url` with the test key and model.
pub(crate) fn openai_at(
    base_url: String,
    workspace: &Path,
    max_iterations: u32,
    idle: Duration,
) -> Arc<OpenAiAgent> {
    Arc::new(
        OpenAiAgent::new(
            OpenAiSettings {
                base_url,
                api_key: "sk-test".into(),
                model: "scripted-model".into(),
                max_iterations,
                idle,
                first_token: idle,
                max_tokens: None,
                context_tokens: None,
            },
            Workspaces::open(workspace, 1 << 30).unwrap(),
        )
        .unwrap(),
    )
}

/// Runs one turn to its end; returns (events, terminal status, final answer).
/// A server whose turns run on the openai backend against `upstream`.
async fn openai_app(upstream: &Upstream, workspace: &Path, max_iterations: u32) -> TestApp {
    TestApp::builder()
        .adapter(openai(upstream, workspace, max_iterations))
        .spawn()
        .await
}

async fn turn(app: &TestApp, session: &str, message: &str) -> (Vec<SseEvent>, Value, String) {
    let run = app.start(session, message).await;
    let status = app.wait_finished(&run).await;
    let events = app.stream(&run, None).await;
    let answer = answer_of(app, session).await;
    (events, status, answer)
}

/// Runs one turn in a new session that must end as `error`; returns its events and the
/// `apperror` event.
async fn failed_turn(app: &TestApp, message: &str) -> (Vec<SseEvent>, SseEvent) {
    let session = app.new_session().await;
    let (events, status, _) = turn(app, &session, message).await;
    assert_eq!(status["terminal_state"], "error");
    let end = of_kind(&events, "apperror")[0].clone();
    (events, end)
}

async fn answer_of(app: &TestApp, session: &str) -> String {
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    s["session"]["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// (input, output) tokens of a usage payload.
fn tokens(usage: &Value) -> (u64, u64) {
    (
        usage["input_tokens"].as_u64().unwrap_or(0),
        usage["output_tokens"].as_u64().unwrap_or(0),
    )
}

pub(crate) fn stream(parts: &[String]) -> Reply {
    Reply::Stream(
        parts
            .iter()
            .map(|p| Piece::Bytes(p.clone().into_bytes()))
            .collect(),
    )
}

fn tool_call(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
    let mut function = json!({ "arguments": args });
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let mut call = json!({"index": index, "type": "function", "function": function});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    json!({ "tool_calls": [call] })
}

#[tokio::test]
async fn openai_streams_reasoning_text_and_usage_even_when_utf8_is_split() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    let body: String = [
        delta(json!({"role": "assistant", "content": ""}), None),
        delta(json!({"reasoning_content": "Thinking about "}), None),
        delta(json!({"reasoning": "the façade…"}), None),
        delta(json!({"content": "Héllo "}), None),
        delta(json!({"content": "wörld 🌍"}), None),
        delta(json!({}), Some("stop")),
        usage(12, 5),
        DONE.to_owned(),
    ]
    .concat();
    // 7-byte pieces: lines, JSON and multi-byte characters all arrive cut.
    upstream.script(COMPLETIONS, Reply::Stream(split_bytes(&body, 7)));
    let app = openai_app(&upstream, ws.path(), 4).await;
    let session = app.new_session().await;
    let (events, status, answer) = turn(&app, &session, "Say hello").await;

    assert_eq!(status["terminal_state"], "completed");
    assert_eq!(texts(&events, "reasoning"), "Thinking about the façade…");
    assert_eq!(texts(&events, "token"), "Héllo wörld 🌍");
    assert_eq!(answer, "Héllo wörld 🌍");
    let usage = of_kind(&events, "usage");
    assert_eq!(tokens(&usage[0].data), (12, 5));
    assert_eq!(
        of_kind(&events, "done")[0].data["usage"]["output_tokens"],
        5
    );
    // The conversation is named after its first message, once, as a title from the prompt
    // (not as the agent's).
    let titles = of_kind(&events, "title");
    assert_eq!(titles.len(), 1);
    assert_eq!(titles[0].data["title"], "Say hello");
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(s["session"]["title"], "Say hello");
    assert_eq!(
        app.store.session(&session).await.unwrap().title_source,
        server::store::TitleSource::Prompt
    );

    let request = &upstream.requests(COMPLETIONS)[0];
    assert_eq!(request.auth.as_deref(), Some("Bearer sk-test"));
    assert_eq!(request.body["model"], "scripted-model");
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["tools"].as_array().unwrap().len(), 5);
    let messages = request.body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1], json!({"role": "user", "content": "Say hello"}));
}

#[tokio::test]
async fn openai_runs_tool_calls_whose_arguments_arrive_in_pieces_and_feeds_results_back() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "remember the milk").unwrap();
    std::fs::write(ws.path().parent().unwrap().join("secret.txt"), "nope").ok();
    upstream.script(
        COMPLETIONS,
        stream(&[
            delta(json!({"content": "Let me look. "}), None),
            delta(
                tool_call(0, Some("call_a"), Some("read_file"), "{\"pa"),
                None,
            ),
            delta(tool_call(0, None, None, "th\": \"no"), None),
            delta(tool_call(0, None, None, "tes.txt\"}"), None),
            delta(tool_call(1, Some("call_b"), Some("read_file"), ""), None),
            delta(
                tool_call(1, None, None, "{\"path\": \"../secret.txt\"}"),
                None,
            ),
            delta(tool_call(2, Some("call_c"), Some("list_files"), "{}"), None),
            delta(json!({}), Some("tool_calls")),
            usage(100, 20),
            DONE.to_owned(),
        ]),
    );
    upstream.script(
        COMPLETIONS,
        stream(&[
            delta(
                json!({"content": "Your notes say: remember the milk."}),
                None,
            ),
            delta(json!({}), Some("stop")),
            usage(150, 10),
            DONE.to_owned(),
        ]),
    );
    let app = openai_app(&upstream, ws.path(), 4).await;
    let session = app.new_session().await;
    let (events, status, answer) = turn(&app, &session, "What do my notes say?").await;

    assert_eq!(status["terminal_state"], "completed");
    assert_eq!(answer, "Your notes say: remember the milk.");
    let started = of_kind(&events, "tool");
    let completed = of_kind(&events, "tool_complete");
    assert_eq!(started.len(), 3);
    assert_eq!(completed.len(), 3);
    assert_eq!(started[0].data["name"], "read_file");
    assert_eq!(started[0].data["tid"], "call_a");
    assert_eq!(started[0].data["args"], json!({"path": "notes.txt"}));
    assert_eq!(completed[0].data["preview"], "remember the milk");
    assert_eq!(completed[0].data["is_error"], false);
    assert_eq!(completed[1].data["is_error"], true);
    assert!(completed[1].data["preview"]
        .as_str()
        .unwrap()
        .contains("outside the workspace"));
    assert_eq!(completed[2].data["preview"], "notes.txt");
    // Usage adds up over both model calls.
    assert_eq!(tokens(&of_kind(&events, "usage")[0].data), (250, 30));

    let second = &upstream.requests(COMPLETIONS)[1].body["messages"];
    let messages = second.as_array().unwrap();
    let assistant = &messages[2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "Let me look. ");
    assert_eq!(
        assistant["tool_calls"][0]["function"],
        json!({"name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "remember the milk"})
    );
    assert!(messages[4]["content"]
        .as_str()
        .unwrap()
        .starts_with("Error: `../secret.txt` is outside the workspace"));
    assert_eq!(messages[5]["tool_call_id"], "call_c");
}

fn write_call(path: &str, content: &str) -> Reply {
    let args = json!({"path": path, "content": content}).to_string();
    stream(&[
        delta(
            tool_call(0, Some("call_w"), Some("write_file"), &args),
            None,
        ),
        delta(json!({}), Some("tool_calls")),
        DONE.to_owned(),
    ])
}

pub(crate) fn say(text: &str) -> Reply {
    stream(&[
        delta(json!({ "content": text }), None),
        delta(json!({}), Some("stop")),
        DONE.to_owned(),
    ])
}

#[tokio::test]
async fn openai_write_file_waits_for_the_users_approval_and_reports_a_denial() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    let app = openai_app(&upstream, ws.path(), 4).await;
    for (choice, file, written) in [("once", "out/a.txt", true), ("deny", "b.txt", false)] {
        upstream.script(COMPLETIONS, write_call(file, "hello"));
        upstream.script(COMPLETIONS, say("Done."));
        let before = upstream.requests(COMPLETIONS).len();
        let session = app.new_session().await;
        let run = app.start(&session, "Write the file").await;
        let request = wait_for_event(&app, &run, "approval").await;
        assert_eq!(request.data["command"], format!("write_file {file}"));
        assert!(
            !ws.path().join(file).exists(),
            "nothing written before the answer"
        );
        let (code, body) = app
            .post(
                "/api/approval/respond",
                json!({"run_id": run, "approval_id": request.data["approval_id"], "choice": choice}),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        let status = app.wait_finished(&run).await;
        assert_eq!(status["terminal_state"], "completed");
        assert_eq!(ws.path().join(file).exists(), written);
        let fed_back = &upstream.requests(COMPLETIONS)[before + 1].body["messages"];
        let tool_message = fed_back.as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        if written {
            assert_eq!(
                std::fs::read_to_string(ws.path().join(file)).unwrap(),
                "hello"
            );
            assert_eq!(tool_message, format!("Wrote 5 bytes to {file}."));
        } else {
            assert_eq!(
                tool_message,
                format!("Error: The user denied writing `{file}`.")
            );
        }
    }

    // Any file under its folder, in this conversation: later writes there do not ask
    // again; a write beside the folder does.
    let session = app.new_session().await;
    upstream.script(COMPLETIONS, write_call("notes/c.txt", "1"));
    upstream.script(COMPLETIONS, say("One."));
    let run = app.start(&session, "Write c").await;
    let request = wait_for_event(&app, &run, "approval").await;
    assert_eq!(
        request.data["choices"],
        json!(["once", "session", "session_wide", "always_wide", "deny"])
    );
    assert_eq!(
        request.data["options"][2]["label"],
        "Allow writing any file under `notes/` in this conversation"
    );
    app.post(
        "/api/approval/respond",
        json!({"run_id": run, "approval_id": request.data["approval_id"], "choice": "session_wide"}),
    )
    .await;
    app.wait_finished(&run).await;
    upstream.script(COMPLETIONS, write_call("notes/d.txt", "2"));
    upstream.script(COMPLETIONS, say("Two."));
    let (events, status, _) = turn(&app, &session, "Write d").await;
    assert_eq!(status["terminal_state"], "completed");
    assert!(of_kind(&events, "approval").is_empty());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("notes/d.txt")).unwrap(),
        "2"
    );
    upstream.script(COMPLETIONS, write_call("e.txt", "3"));
    upstream.script(COMPLETIONS, say("Three."));
    let run = app.start(&session, "Write e").await;
    let request = wait_for_event(&app, &run, "approval").await;
    assert_eq!(request.data["command"], "write_file e.txt");
    app.post(
        "/api/approval/respond",
        json!({"run_id": run, "approval_id": request.data["approval_id"], "choice": "deny"}),
    )
    .await;
    app.wait_finished(&run).await;
    assert!(!ws.path().join("e.txt").exists());
}

#[tokio::test]
async fn openai_ask_user_becomes_a_clarify_question_and_the_answer_goes_back() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    let args = json!({"question": "Which branch?", "choices": ["main", "dev"]}).to_string();
    upstream.script(
        COMPLETIONS,
        stream(&[
            delta(tool_call(0, Some("call_q"), Some("ask_user"), &args), None),
            delta(json!({}), Some("tool_calls")),
            DONE.to_owned(),
        ]),
    );
    upstream.script(COMPLETIONS, say("Using dev."));
    let app = openai_app(&upstream, ws.path(), 4).await;
    let session = app.new_session().await;
    let run = app.start(&session, "Deploy").await;
    let question = wait_for_event(&app, &run, "clarify").await;
    assert_eq!(question.data["question"], "Which branch?");
    assert_eq!(question.data["choices_offered"], json!(["main", "dev"]));
    let (code, body) = app
        .post(
            "/api/clarify/respond",
            json!({"run_id": run, "clarify_id": question.data["clarify_id"], "response": "dev"}),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(app.wait_finished(&run).await["terminal_state"], "completed");
    let messages = upstream.requests(COMPLETIONS)[1].body["messages"].clone();
    assert_eq!(
        messages.as_array().unwrap().last().unwrap()["content"],
        "dev"
    );
    assert_eq!(answer_of(&app, &session).await, "Using dev.");
}

#[tokio::test]
async fn openai_provider_errors_end_the_turn_as_error_with_a_hint_and_keep_partial_work() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    let app = openai_app(&upstream, ws.path(), 4).await;
    let partial = delta(json!({"content": "Partial "}), None);
    let cases: Vec<(Reply, &str, &str)> = vec![
        (
            // Providers quote the key they were given: the turn shows none of it.
            Reply::Json(
                401,
                json!({"error": {"message": "Incorrect API key provided: sk-test-abc123def456"}}),
            ),
            "rejected the API key (HTTP 401): Incorrect API key provided: [redacted]",
            "OPENAI_API_KEY",
        ),
        (
            Reply::Json(429, json!({"error": {"message": "Rate limit reached"}})),
            "rate limiting requests (HTTP 429)",
            "Wait a moment",
        ),
        (
            Reply::Json(503, json!({"error": "overloaded"})),
            "server error (HTTP 503): overloaded",
            "send the message again",
        ),
        (
            Reply::Stream(vec![
                Piece::Bytes(partial.clone().into_bytes()),
                Piece::Bytes(b"data: {\"choices\": [oops\n\n".to_vec()),
            ]),
            "malformed stream chunk",
            "oops",
        ),
        (
            Reply::Stream(vec![
                Piece::Bytes(partial.clone().into_bytes()),
                Piece::Abort,
            ]),
            "lost mid-answer",
            "partial answer is kept",
        ),
        (
            Reply::Stream(vec![Piece::Bytes(partial.clone().into_bytes())]),
            "cut off",
            "partial answer is kept",
        ),
    ];
    for (reply, message, hint) in cases {
        upstream.script(COMPLETIONS, reply);
        let session = app.new_session().await;
        let (events, status, _) = turn(&app, &session, "Hi").await;
        assert_eq!(status["terminal_state"], "error", "{message}");
        let end = of_kind(&events, "apperror")[0];
        let got = end.data["message"].as_str().unwrap();
        assert!(got.contains(message), "{got:?} lacks {message:?}");
        assert!(!got.contains("sk-test"), "{got:?}");
        let got_hint = end.data["hint"].as_str().unwrap_or_default();
        assert!(got_hint.contains(hint), "{got_hint:?} lacks {hint:?}");
        let streamed = texts(&events, "token");
        if message.contains("HTTP") {
            assert_eq!(streamed, "");
        } else {
            assert_eq!(streamed, "Partial ", "partial work is journaled");
        }
    }

    // Nobody listening at all.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = closed.local_addr().unwrap();
    drop(closed);
    let agent = openai_at(
        format!("http://{dead}/v1"),
        ws.path(),
        2,
        Duration::from_secs(5),
    );
    let app = TestApp::builder().adapter(agent).spawn().await;
    let (_, end) = failed_turn(&app, "Hi").await;
    assert!(end.data["message"]
        .as_str()
        .unwrap()
        .starts_with("Cannot reach the model provider"));
}

#[tokio::test]
async fn openai_asks_again_without_what_a_local_server_rejects_and_reads_unindexed_calls() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha").unwrap();
    std::fs::write(ws.path().join("b.txt"), "beta").unwrap();
    upstream.script(
        COMPLETIONS,
        Reply::Json(
            400,
            json!({"error": {"message": "unknown field `stream_options`"}}),
        ),
    );
    upstream.script(
        COMPLETIONS,
        Reply::Json(
            400,
            json!({"error": {"message": "model does not support tools"}}),
        ),
    );
    // Two whole calls without `index`, as some local servers send them; the second with its
    // arguments as an object instead of JSON text.
    let call = |id: &str, arguments: Value| {
        json!({"tool_calls": [{"id": id, "type": "function",
               "function": {"name": "read_file", "arguments": arguments}}]})
    };
    upstream.script(
        COMPLETIONS,
        stream(&[
            delta(
                call("c1", json!(json!({"path": "a.txt"}).to_string())),
                None,
            ),
            delta(call("c2", json!({"path": "b.txt"})), None),
            delta(json!({}), Some("tool_calls")),
            DONE.to_owned(),
        ]),
    );
    upstream.script(COMPLETIONS, say("alpha and beta"));
    upstream.script(COMPLETIONS, say("Again."));
    let app = openai_app(&upstream, ws.path(), 4).await;
    let session = app.new_session().await;
    let (events, status, answer) = turn(&app, &session, "Read both").await;
    assert_eq!(status["terminal_state"], "completed");
    assert_eq!(answer, "alpha and beta");
    let previews: Vec<&Value> = of_kind(&events, "tool_complete")
        .iter()
        .map(|e| &e.data["preview"])
        .collect();
    assert_eq!(previews, [&json!("alpha"), &json!("beta")]);

    let requests = upstream.requests(COMPLETIONS);
    assert!(requests[0].body.get("stream_options").is_some());
    assert!(requests[1].body.get("stream_options").is_none());
    assert!(requests[1].body.get("tools").is_some());
    assert!(requests[2].body.get("tools").is_none());
    // Remembered for the next turn: no more rejected requests.
    turn(&app, &session, "Again").await;
    let last = upstream.requests(COMPLETIONS).pop().unwrap();
    assert!(last.body.get("tools").is_none() && last.body.get("stream_options").is_none());
    assert_eq!(upstream.requests(COMPLETIONS).len(), 5);
}

#[tokio::test]
async fn a_provider_that_goes_silent_ends_the_turn_after_the_idle_limit() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    upstream.script(
        COMPLETIONS,
        Reply::Stream(vec![
            Piece::Bytes(delta(json!({"content": "Half an answer"}), None).into_bytes()),
            Piece::Hang,
        ]),
    );
    let agent = openai_at(
        upstream.url("/v1"),
        ws.path(),
        2,
        Duration::from_millis(300),
    );
    let app = TestApp::builder().adapter(agent).spawn().await;
    let (events, end) = failed_turn(&app, "Hi").await;
    assert_eq!(end.data["message"], "The model stopped responding.");
    assert!(end.data["hint"]
        .as_str()
        .unwrap()
        .starts_with("no data for 300 ms"));
    assert_eq!(texts(&events, "token"), "Half an answer");
    upstream.wait_disconnected().await;
}

#[tokio::test]
async fn openai_think_tags_in_the_content_become_reasoning() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    upstream.script(
        COMPLETIONS,
        stream(&[
            delta(json!({"content": "<thi"}), None),
            delta(json!({"content": "nk>Two plus two "}), None),
            delta(json!({"content": "is four.</thi"}), None),
            delta(json!({"content": "nk>\n\n**4**"}), None),
            delta(json!({}), Some("stop")),
            DONE.to_owned(),
        ]),
    );
    let app = openai_app(&upstream, ws.path(), 2).await;
    let session = app.new_session().await;
    let (events, status, answer) = turn(&app, &session, "2+2?").await;
    assert_eq!(status["terminal_state"], "completed");
    assert_eq!(texts(&events, "reasoning"), "Two plus two is four.");
    assert_eq!(texts(&events, "token"), "\n\n**4**");
    assert_eq!(answer, "\n\n**4**");
}

#[tokio::test]
async fn openai_calls_that_share_index_zero_but_not_their_id_stay_apart() {
    // Ollama numbers every call 0 and tells them apart by id.
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha").unwrap();
    std::fs::write(ws.path().join("b.txt"), "beta").unwrap();
    let call = |id: &str, path: &str| {
        let args = json!({ "path": path }).to_string();
        tool_call(0, Some(id), Some("read_file"), &args)
    };
    upstream.script(
        COMPLETIONS,
        stream(&[
            delta(call("call_1", "a.txt"), None),
            delta(call("call_2", "b.txt"), None),
            delta(json!({}), Some("tool_calls")),
            DONE.to_owned(),
        ]),
    );
    upstream.script(COMPLETIONS, say("Both read."));
    let app = openai_app(&upstream, ws.path(), 3).await;
    let session = app.new_session().await;
    let (events, status, _) = turn(&app, &session, "Read a and b").await;
    assert_eq!(status["terminal_state"], "completed");
    let done = of_kind(&events, "tool_complete");
    assert_eq!(done.len(), 2);
    assert_eq!(done[0].data["preview"], "alpha");
    assert_eq!(done[1].data["preview"], "beta");
    assert_eq!(done[1].data["tid"], "call_2");
}

#[tokio::test]
async fn openai_stops_at_the_iteration_limit_as_tool_limit_reached() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    for n in 0..2 {
        upstream.script(
            COMPLETIONS,
            stream(&[
                delta(json!({"content": format!("Looking ({n}). ")}), None),
                delta(
                    tool_call(0, Some(&format!("call_{n}")), Some("list_files"), "{}"),
                    None,
                ),
                delta(json!({}), Some("tool_calls")),
                DONE.to_owned(),
            ]),
        );
    }
    let app = openai_app(&upstream, ws.path(), 2).await;
    let session = app.new_session().await;
    let (events, status, _) = turn(&app, &session, "Loop").await;
    assert_eq!(status["terminal_state"], "tool_limit_reached");
    assert_eq!(of_kind(&events, "tool_complete").len(), 2);
    assert_eq!(upstream.requests(COMPLETIONS).len(), 2, "no third call");
}

#[tokio::test]
async fn openai_stop_aborts_the_upstream_request() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    upstream.script(
        COMPLETIONS,
        Reply::Stream(vec![
            Piece::Bytes(delta(json!({"content": "Working on it"}), None).into_bytes()),
            Piece::Hang,
        ]),
    );
    let app = openai_app(&upstream, ws.path(), 4).await;
    let session = app.new_session().await;
    let run = app.start(&session, "Take your time").await;
    wait_for_event(&app, &run, "token").await;
    let (code, body) = app.post("/api/chat/cancel", json!({"run_id": run})).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(app.wait_finished(&run).await["terminal_state"], "cancelled");
    upstream.wait_disconnected().await;
}

#[tokio::test]
async fn openai_sends_the_sessions_history_on_each_turn() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    upstream.script(COMPLETIONS, say("Paris."));
    upstream.script(COMPLETIONS, say("About 2.1 million."));
    let app = openai_app(&upstream, ws.path(), 4).await;
    let session = app.new_session().await;
    turn(&app, &session, "Capital of France?").await;
    let (_, status, answer) = turn(&app, &session, "Population?").await;
    assert_eq!(status["terminal_state"], "completed");
    assert_eq!(answer, "About 2.1 million.");
    let messages = upstream.requests(COMPLETIONS)[1].body["messages"].clone();
    let tail: Vec<Value> = messages.as_array().unwrap()[1..].to_vec();
    assert_eq!(
        tail,
        vec![
            json!({"role": "user", "content": "Capital of France?"}),
            json!({"role": "assistant", "content": "Paris."}),
            json!({"role": "user", "content": "Population?"}),
        ]
    );
}

#[tokio::test]
async fn the_openai_backend_without_a_key_is_a_clear_startup_error() {
    let mut config = Config::defaults();
    config.backend = server::config::Backend::Openai;
    config.openai_api_key = None;
    let data = tempfile::tempdir().unwrap();
    config.data_dir = data.path().to_owned();
    config.workspace = data.path().join("ws");
    let error = match server::build_adapter(&config) {
        Ok(_) => panic!("started without a key"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("OPENAI_API_KEY"), "{error}");
    config.openai_api_key = Some("sk-secret-x".into());
    // A printed configuration says there is a key, never which.
    let printed = format!("{config:?}");
    assert!(!printed.contains("sk-secret-x"), "{printed}");
    assert!(printed.contains("Secret(<redacted>)"), "{printed}");
    let adapter = server::build_adapter(&config).unwrap();
    assert_eq!(adapter.name(), "openai");
    assert!(data.path().join("ws").is_dir(), "the workspace is created");
    config.backend = server::config::Backend::Demo;
    assert_eq!(server::build_adapter(&config).unwrap().name(), "demo");
}

// --- Hermes gateway -----------------------------------------------------------------------

fn hermes(upstream: &Upstream, key: Option<&str>) -> Arc<HermesAgent> {
    Arc::new(
        HermesAgent::new(HermesSettings {
            url: upstream.url(""),
            api_key: key.map(Into::into),
            model: "hermes-agent".into(),
            idle: Duration::from_secs(10),
            first_token: Duration::from_secs(10),
        })
        .unwrap(),
    )
}

fn capabilities(approval: bool) -> Reply {
    Reply::Json(
        200,
        json!({"object": "hermes.api_server.capabilities",
               "features": {"run_submission": true, "run_events_sse": true, "run_stop": true,
                            "run_approval_response": approval}}),
    )
}

#[tokio::test]
async fn hermes_runs_map_into_the_journal_and_approvals_are_forwarded() {
    let upstream = Upstream::start().await;
    upstream.script("GET /v1/capabilities", capabilities(true));
    upstream.script(
        "POST /v1/runs",
        Reply::Json(202, json!({"run_id": "run_h1", "status": "started"})),
    );
    upstream.script(
        "POST /v1/runs/run_h1/approval",
        Reply::Json(200, json!({"ok": true})),
    );
    let mut pieces = split_bytes(
        &[
            "event: message.delta\n".to_owned(),
            data(json!({"event": "message.delta", "delta": "Chécking "})),
            data(json!({"event": "reasoning.available", "text": "Need the disk usage."})),
            data(
                json!({"event": "tool.started", "tool": "terminal", "tool_call_id": "tc1",
                        "args": {"command": "du -sh"}, "preview": "du -sh"}),
            ),
            data(
                json!({"event": "tool.completed", "tool": "terminal", "tool_call_id": "tc1",
                        "status": "completed", "args": {"command": "du -sh"}, "preview": "4.0K ."}),
            ),
            data(
                json!({"event": "approval.request", "approval_id": "ap1", "command": "rm -rf build",
                        "description": "Remove the build folder", "pattern_keys": ["rm -rf"]}),
            ),
        ]
        .concat(),
        5,
    );
    pieces.push(Piece::WaitFor("POST /v1/runs/run_h1/approval".into()));
    pieces.push(Piece::Bytes(
        [
            data(
                json!({"event": "tool.completed", "tool": "terminal", "tool_call_id": "tc2",
                        "status": "error", "preview": "permission denied"}),
            ),
            data(
                json!({"event": "run.completed", "output": "Checked: 4.0K. 🚀",
                        "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49}}),
            ),
            DONE.to_owned(),
        ]
        .concat()
        .into_bytes(),
    ));
    upstream.script("GET /v1/runs/run_h1/events", Reply::Stream(pieces));
    let app = TestApp::builder()
        .adapter(hermes(&upstream, Some("hk-1")))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "How big is it?").await;
    let request = wait_for_event(&app, &run, "approval").await;
    assert_eq!(request.data["command"], "rm -rf build");
    assert_eq!(request.data["description"], "Remove the build folder");
    app.post(
        "/api/approval/respond",
        json!({"run_id": run, "approval_id": request.data["approval_id"], "choice": "once"}),
    )
    .await;
    let status = app.wait_finished(&run).await;
    assert_eq!(status["terminal_state"], "completed");
    let events = app.stream(&run, None).await;
    assert_eq!(texts(&events, "token"), "Chécking ");
    assert_eq!(texts(&events, "reasoning"), "Need the disk usage.");
    let started = of_kind(&events, "tool");
    assert_eq!(started[0].data["name"], "terminal");
    assert_eq!(started[0].data["tid"], "tc1");
    assert_eq!(started[0].data["args"], json!({"command": "du -sh"}));
    let completed = of_kind(&events, "tool_complete");
    assert_eq!(completed[0].data["preview"], "4.0K .");
    assert_eq!(completed[0].data["is_error"], false);
    assert_eq!(completed[1].data["is_error"], true);
    assert_eq!(tokens(&of_kind(&events, "usage")[0].data), (40, 9));
    assert_eq!(answer_of(&app, &session).await, "Checked: 4.0K. 🚀");

    let approval = upstream.requests("POST /v1/runs/run_h1/approval");
    assert_eq!(
        approval[0].body,
        json!({"approval_id": "ap1", "choice": "once"})
    );
    let started = &upstream.requests("POST /v1/runs")[0];
    assert_eq!(started.auth.as_deref(), Some("Bearer hk-1"));
    assert_eq!(started.body["input"], "How big is it?");
    assert_eq!(started.body["session_id"], session);
    assert_eq!(started.body["conversation_history"], json!([]));
}

#[tokio::test]
async fn hermes_failures_cancellations_and_refusals_end_the_turn_explicitly() {
    let upstream = Upstream::start().await;
    let app = TestApp::builder()
        .adapter(hermes(&upstream, None))
        .spawn()
        .await;
    let cases = [
        (
            vec![
                data(json!({"event": "message.delta", "delta": "Half"})),
                data(json!({"event": "run.failed", "error": "model overloaded"})),
            ],
            "error",
            Some("The Hermes agent failed: model overloaded"),
        ),
        (
            vec![data(json!({"event": "run.cancelled"}))],
            "cancelled",
            None,
        ),
        (
            vec![data(json!({"event": "message.delta", "delta": "Half"}))],
            "error",
            Some("closed the event stream before the run finished"),
        ),
    ];
    for (n, (frames, terminal, message)) in cases.into_iter().enumerate() {
        let id = format!("run_f{n}");
        upstream.script(
            &format!("POST /v1/runs/{id}/stop"),
            Reply::Json(200, json!({"ok": true})),
        );
        upstream.script("GET /v1/capabilities", capabilities(false));
        upstream.script("POST /v1/runs", Reply::Json(200, json!({ "run_id": id })));
        upstream.script(&format!("GET /v1/runs/{id}/events"), stream(&frames));
        let session = app.new_session().await;
        let (events, status, _) = turn(&app, &session, "Go").await;
        assert_eq!(status["terminal_state"], terminal);
        if let Some(message) = message {
            let end = of_kind(&events, "apperror")[0];
            assert!(end.data["message"].as_str().unwrap().contains(message));
            assert_eq!(texts(&events, "token"), "Half", "partial work is kept");
        }
        // A run the gateway ended is left alone; one we lost track of is stopped.
        let stops = upstream.requests(&format!("POST /v1/runs/{id}/stop")).len();
        let lost = message.is_some_and(|m| m.contains("closed the event stream"));
        assert_eq!(stops, usize::from(lost), "{id}");
    }

    // The gateway refuses the run.
    upstream.script("GET /v1/capabilities", capabilities(false));
    upstream.script(
        "POST /v1/runs",
        Reply::Json(401, json!({"error": {"message": "invalid key"}})),
    );
    let (_, end) = failed_turn(&app, "Go").await;
    assert!(end.data["message"]
        .as_str()
        .unwrap()
        .contains("HTTP 401): invalid key"));
    assert_eq!(end.data["hint"], "Check HERMES_API_KEY.");

    // An approval the gateway cannot take answers for ends the turn with advice.
    upstream.script("GET /v1/capabilities", capabilities(false));
    upstream.script(
        "POST /v1/runs",
        Reply::Json(200, json!({"run_id": "run_na"})),
    );
    upstream.script(
        "GET /v1/runs/run_na/events",
        stream(&[data(
            json!({"event": "approval.request", "command": "rm x", "description": "Remove x"}),
        )]),
    );
    let session = app.new_session().await;
    let (events, status, _) = turn(&app, &session, "Go").await;
    assert_eq!(status["terminal_state"], "error");
    assert!(of_kind(&events, "apperror")[0].data["message"]
        .as_str()
        .unwrap()
        .contains("does not accept answers"));
}

#[tokio::test]
async fn hermes_stop_stops_the_gateway_run_and_closes_its_stream() {
    let upstream = Upstream::start().await;
    upstream.script("GET /v1/capabilities", capabilities(true));
    upstream.script(
        "POST /v1/runs",
        Reply::Json(200, json!({"run_id": "run_s"})),
    );
    upstream.script(
        "POST /v1/runs/run_s/stop",
        Reply::Json(200, json!({"ok": true})),
    );
    upstream.script(
        "GET /v1/runs/run_s/events",
        Reply::Stream(vec![
            Piece::Bytes(data(json!({"event": "message.delta", "delta": "Long job"})).into_bytes()),
            Piece::Hang,
        ]),
    );
    let app = TestApp::builder()
        .adapter(hermes(&upstream, None))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "Long job").await;
    wait_for_event(&app, &run, "token").await;
    app.post("/api/chat/cancel", json!({"run_id": run})).await;
    assert_eq!(app.wait_finished(&run).await["terminal_state"], "cancelled");
    upstream.wait_request("POST /v1/runs/run_s/stop").await;
    upstream.wait_disconnected().await;
}

#[tokio::test]
async fn openai_allow_always_holds_for_the_account_that_chose_it_only() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    let app = openai_app(&upstream, ws.path(), 4).await;
    let (alice, bob) = app.two_users(false).await;

    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    upstream.script(COMPLETIONS, write_call("docs/a.txt", "1"));
    upstream.script(COMPLETIONS, say("One."));
    let run = app.start(&session, "Write a").await;
    let request = wait_for_event(&app, &run, "approval").await;
    let (code, _) = app
        .post(
            "/api/approval/respond",
            json!({"run_id": run, "approval_id": request.data["approval_id"], "choice": "always_wide"}),
        )
        .await;
    assert_eq!(code, 200);
    app.wait_finished(&run).await;
    // Alice, in another conversation, under that folder: not asked again.
    let other = app.new_session().await;
    upstream.script(COMPLETIONS, write_call("docs/b.txt", "2"));
    upstream.script(COMPLETIONS, say("Two."));
    let (events, status, _) = turn(&app, &other, "Write b").await;
    assert_eq!(status["terminal_state"], "completed");
    assert!(of_kind(&events, "approval").is_empty());

    // Bob is asked: her permission is not his.
    app.use_cookie(Some(&bob));
    let his = app.new_session().await;
    upstream.script(COMPLETIONS, write_call("docs/c.txt", "3"));
    upstream.script(COMPLETIONS, say("Three."));
    let run = app.start(&his, "Write c").await;
    let request = wait_for_event(&app, &run, "approval").await;
    assert_eq!(request.data["command"], "write_file docs/c.txt");
    assert!(!ws.path().join("docs/c.txt").exists());
    app.post(
        "/api/approval/respond",
        json!({"run_id": run, "approval_id": request.data["approval_id"], "choice": "deny"}),
    )
    .await;
    app.wait_finished(&run).await;
    assert!(!ws.path().join("docs/c.txt").exists());
}

#[tokio::test]
async fn after_an_edit_the_model_is_told_the_branch_shown() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    for answer in ["Paris.", "About 2.1 million.", "Rome.", "Still Paris."] {
        upstream.script(COMPLETIONS, say(answer));
    }
    let app = openai_app(&upstream, ws.path(), 4).await;
    let session = app.new_session().await;
    let first = app.start(&session, "Capital of France?").await;
    app.wait_finished(&first).await;
    let second = app.start(&session, "Population?").await;
    app.wait_finished(&second).await;
    // The second message, changed: the model hears the first turn, not the version replaced.
    let (code, edited) = app
        .post(
            "/api/chat/edit",
            json!({"run_id": second, "message": "Capital of Italy?"}),
        )
        .await;
    assert_eq!(code, 200, "{edited}");
    app.wait_finished(edited["run_id"].as_str().unwrap()).await;
    let tail = |i: usize| {
        upstream.requests(COMPLETIONS)[i].body["messages"]
            .as_array()
            .unwrap()[1..]
            .to_vec()
    };
    assert_eq!(
        tail(2),
        vec![
            json!({"role": "user", "content": "Capital of France?"}),
            json!({"role": "assistant", "content": "Paris."}),
            json!({"role": "user", "content": "Capital of Italy?"}),
        ]
    );
    // A retry of the first turn forks before both: the model hears nothing before it.
    let (code, retried) = app.post("/api/chat/retry", json!({"run_id": first})).await;
    assert_eq!(code, 200, "{retried}");
    app.wait_finished(retried["run_id"].as_str().unwrap()).await;
    assert_eq!(
        tail(3),
        vec![json!({"role": "user", "content": "Capital of France?"})]
    );
}
