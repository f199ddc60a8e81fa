//! The `openai` backend against a real model: llama.cpp's server (llama-cpp-python) serving
//! Gemma 3 270M, which `scripts/with-model.sh` starts and names in `ANCHORAGE_TEST_LLAMA_URL`
//! (`make model-unit`; `make unit` skips these). They assert what the server does with what a
//! real model server sends, never the model's words: a 270M model answers poorly.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use server::runtime::openai::{OpenAiAgent, OpenAiSettings};
use server::runtime::workspaces::Workspaces;

use crate::helpers::{of_kind, parse_block, SseEvent, TestApp};

/// The model server's `/v1` URL.
fn llama_url() -> String {
    std::env::var("ANCHORAGE_TEST_LLAMA_URL").unwrap_or_else(|_| {
        panic!(
            "these tests need a real model server: run them as scripts/with-model.sh make \
             model-unit (it sets ANCHORAGE_TEST_LLAMA_URL)"
        )
    })
}

/// The id the model server lists its model by (the file it loaded).
async fn model_id() -> String {
    let list: Value = reqwest::get(format!("{}/models", llama_url()))
        .await
        .expect("the model server answers")
        .json()
        .await
        .expect("a model list");
    list["data"][0]["id"]
        .as_str()
        .expect("the model server lists its model")
        .to_owned()
}

struct Model {
    app: TestApp,
    _workspace: tempfile::TempDir,
}

/// A server whose agent is the real model, with `max_tokens` and `context_tokens`.
async fn with_model(max_tokens: Option<u32>, context_tokens: Option<u32>) -> Model {
    let workspace = tempfile::tempdir().unwrap();
    let mut settings = OpenAiSettings::new(llama_url(), "local".into(), &model_id().await);
    settings.max_tokens = max_tokens;
    settings.context_tokens = context_tokens;
    settings.max_iterations = 2;
    settings.idle = Duration::from_secs(120);
    let agent = OpenAiAgent::new(
        settings,
        Workspaces::open(workspace.path(), 1 << 30).unwrap(),
    )
    .unwrap();
    Model {
        app: TestApp::builder().adapter(Arc::new(agent)).spawn().await,
        _workspace: workspace,
    }
}

/// An event as it arrived, and when.
struct Arrived {
    at: Instant,
    event: SseEvent,
}

/// Follows a run live from `after` until the server ends the stream, or until `stop_after`
/// events have arrived (then the connection is dropped).
async fn follow(app: &TestApp, run: &str, after: Option<u64>, stop_after: usize) -> Vec<Arrived> {
    let res = app.open_stream(run, after).await;
    assert_eq!(res.status(), 200);
    let mut body = res.bytes_stream();
    let mut buffer = String::new();
    let mut out = Vec::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(120), body.next())
        .await
        .expect("the stream stalled")
    {
        buffer.push_str(std::str::from_utf8(&chunk.expect("a body chunk")).expect("utf-8"));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if let Some(event) = parse_block(&block) {
                out.push(Arrived {
                    at: Instant::now(),
                    event,
                });
                if out.len() >= stop_after {
                    return out;
                }
            }
        }
    }
    out
}

fn tokens(events: &[SseEvent]) -> String {
    of_kind(events, "token")
        .iter()
        .map(|e| e.data["text"].as_str().unwrap_or_default())
        .collect()
}

/// The session's last assistant message.
async fn last_answer(app: &TestApp, session: &str) -> Value {
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    s["session"]["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
        .cloned()
        .unwrap_or(Value::Null)
}

const LIMIT: Duration = Duration::from_secs(180);

#[tokio::test]
#[ignore = "needs a model server: scripts/with-model.sh make model-unit"]
async fn a_real_model_streams_token_by_token_and_the_turn_settles_once() {
    let m = with_model(Some(48), Some(4096)).await;
    let session = m.app.new_session().await;
    let run = m
        .app
        .start(&session, "Count from one to thirty, one number per line.")
        .await;
    let live = follow(&m.app, &run, None, usize::MAX).await;
    let events: Vec<SseEvent> = live.iter().map(|a| a.event.clone()).collect();
    let token_times: Vec<Instant> = live
        .iter()
        .filter(|a| a.event.event == "token")
        .map(|a| a.at)
        .collect();
    assert!(
        token_times.len() >= 5,
        "the answer came in pieces: {} token events",
        token_times.len()
    );
    // Streamed as the model wrote it, not all at the end.
    let done_at = live
        .iter()
        .find(|a| a.event.event == "done")
        .expect("the turn is done")
        .at;
    assert!(
        done_at.duration_since(token_times[0]) > Duration::from_millis(150),
        "the first token arrived {:?} before the end",
        done_at.duration_since(token_times[0])
    );
    // Every event once, in order; one ending, one settled message.
    let seqs: Vec<u64> = events.iter().map(SseEvent::seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(of_kind(&events, "done").len(), 1);
    assert_eq!(of_kind(&events, "settled_message").len(), 1);
    assert_eq!(events.last().unwrap().event, "stream_end");
    let streamed = tokens(&events);
    assert!(!streamed.trim().is_empty());
    let settled = &of_kind(&events, "settled_message")[0].data;
    assert_eq!(settled["content"], json!(streamed));
    let stored = last_answer(&m.app, &session).await;
    assert_eq!(stored["content"], json!(streamed));
    assert_eq!(stored["terminal_state"], "completed");
    // The journal read back later is the same turn.
    assert_eq!(m.app.stream(&run, None).await, events);
}

#[tokio::test]
#[ignore = "needs a model server: scripts/with-model.sh make model-unit"]
async fn following_again_from_the_last_seen_event_misses_nothing_and_repeats_nothing() {
    let m = with_model(Some(64), Some(4096)).await;
    let session = m.app.new_session().await;
    let run = m
        .app
        .start(&session, "List twenty colours, one per line.")
        .await;
    // A page that loaded mid-answer, then a reconnect from its last event.
    let first = follow(&m.app, &run, None, 6).await;
    let last = first.last().unwrap().event.seq();
    let rest = follow(&m.app, &run, Some(last), usize::MAX).await;
    let joined: Vec<SseEvent> = first.into_iter().chain(rest).map(|a| a.event).collect();
    let whole = m.app.stream(&run, None).await;
    assert_eq!(joined, whole, "the two halves are the journal, once each");
    let stored = last_answer(&m.app, &session).await;
    assert_eq!(stored["content"], json!(tokens(&whole)));
}

/// Whether the model server takes a new request at once (it runs one at a time, and
/// `scripts/with-model.sh` starts it with `--interrupt_requests False`: a generation still
/// going holds the next request until it ends).
async fn model_server_is_free() -> bool {
    let body = json!({
        "model": model_id().await,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 1,
    });
    let request = reqwest::Client::new()
        .post(format!("{}/chat/completions", llama_url()))
        .json(&body)
        .send();
    matches!(
        tokio::time::timeout(Duration::from_secs(5), request).await,
        Ok(Ok(r)) if r.status().is_success()
    )
}

#[tokio::test]
#[ignore = "needs a model server: scripts/with-model.sh make model-unit"]
async fn stop_ends_the_generation_on_the_model_server_and_keeps_the_partial_answer() {
    // Room for a minute and more of writing: only Stop ends it early.
    let m = with_model(Some(3000), Some(4096)).await;
    let session = m.app.new_session().await;
    let run = m
        .app
        .start(
            &session,
            "Write a very long story about a lighthouse keeper, with many chapters.",
        )
        .await;
    let started = follow(&m.app, &run, None, 12).await;
    assert!(started.iter().any(|a| a.event.event == "token"));
    let (code, body) = m.app.post("/api/chat/cancel", json!({"run_id": run})).await;
    assert_eq!(code, 200, "{body}");
    let status = m.app.wait_finished_within(&run, LIMIT).await;
    assert_eq!(status["terminal_state"], "cancelled");
    // The model server stopped writing: a new request is answered at once, not after the
    // thousands of tokens the story had room for.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        model_server_is_free().await,
        "the model server still generates"
    );
    let events = m.app.stream(&run, None).await;
    let streamed = tokens(&events);
    assert!(!streamed.is_empty());
    let stored = last_answer(&m.app, &session).await;
    assert_eq!(stored["partial"], true);
    assert_eq!(stored["content"], json!(streamed));
    // Nothing arrived after the stop.
    let cancel = events.iter().position(|e| e.event == "cancel").unwrap();
    assert!(events[cancel..].iter().all(|e| e.event != "token"));
}

#[tokio::test]
#[ignore = "needs a model server: scripts/with-model.sh make model-unit"]
async fn an_answer_stopped_by_max_tokens_is_said_to_be_cut_off() {
    let m = with_model(Some(24), Some(4096)).await;
    let session = m.app.new_session().await;
    let run = m
        .app
        .start(
            &session,
            "Write a long essay about the history of ships, at least ten paragraphs.",
        )
        .await;
    m.app.wait_finished_within(&run, LIMIT).await;
    let events = m.app.stream(&run, None).await;
    let done = &of_kind(&events, "done")[0].data;
    assert_eq!(done["finish_reason"], "length");
    assert_eq!(done["cut_off"]["limit"], 24);
    assert!(done["cut_off"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("24")));
    let stored = last_answer(&m.app, &session).await;
    assert_eq!(stored["terminal_state"], "completed", "it is not an error");
    assert_eq!(stored["cut_off"], true);
    assert_eq!(stored["content"], json!(tokens(&events)));
    let settled = &of_kind(&events, "settled_message")[0].data;
    assert_eq!(settled["cut_off"], true);
}

/// About `n` bytes of varied prose (a 270M model reads it in a fraction of the tokens).
fn filler(n: usize) -> String {
    let words = [
        "harbour", "lantern", "tide", "granite", "gull", "rope", "keeper", "storm", "light",
        "north", "shore", "wave",
    ];
    let mut out = String::new();
    let mut i = 0;
    while out.len() < n {
        out.push_str(words[i % words.len()]);
        out.push(if i % 11 == 10 { '.' } else { ' ' });
        i += 1;
    }
    out
}

#[tokio::test]
#[ignore = "needs a model server: scripts/with-model.sh make model-unit"]
async fn a_conversation_longer_than_the_context_is_answered_with_the_oldest_turns_left_out() {
    let m = with_model(Some(16), Some(4096)).await;
    let session = m.app.new_session().await;
    let mut trimmed = None;
    for round in 0..4 {
        let message = format!("Note {round}: {}. Reply with one word.", filler(4_500));
        let run = m.app.start(&session, &message).await;
        let status = m.app.wait_finished_within(&run, LIMIT).await;
        assert_eq!(
            status["terminal_state"], "completed",
            "round {round} was answered"
        );
        let events = m.app.stream(&run, None).await;
        if let Some(status) = of_kind(&events, "context_status").first() {
            trimmed = Some((round, status.data.clone()));
            break;
        }
    }
    let (round, status) = trimmed.expect("some turn left earlier context out");
    assert!(
        round >= 1,
        "the first turn has nothing earlier to leave out"
    );
    assert_eq!(status["status"], "trimmed");
    assert!(status["left_out"].as_u64().unwrap() >= 2, "{status}");
    assert_eq!(status["context_tokens"], 4096);
    assert!(status["message"].as_str().unwrap().contains("4,096"));
}

#[tokio::test]
#[ignore = "needs a model server: scripts/with-model.sh make model-unit"]
async fn a_message_too_long_for_the_context_ends_with_a_card_that_says_so() {
    // With the window known, the message is refused before the model is asked.
    let m = with_model(Some(64), Some(4096)).await;
    let session = m.app.new_session().await;
    let run = m.app.start(&session, &filler(40_000)).await;
    let status = m.app.wait_finished_within(&run, LIMIT).await;
    assert_eq!(status["terminal_state"], "compression_exhausted");
    let events = m.app.stream(&run, None).await;
    let end = &of_kind(&events, "apperror")[0].data;
    assert_eq!(end["type"], "context_overflow");
    assert!(end["message"].as_str().unwrap().contains("4,096"), "{end}");
    assert!(end["hint"].as_str().unwrap().contains("Shorten"), "{end}");
    assert!(of_kind(&events, "token").is_empty());
    // Without it, the model server's own refusal (it closes the stream unanswered) is told
    // with what to do about it.
    let m = with_model(Some(64), None).await;
    let session = m.app.new_session().await;
    let run = m.app.start(&session, &filler(40_000)).await;
    let status = m.app.wait_finished_within(&run, LIMIT).await;
    assert_eq!(status["terminal_state"], "error");
    let events = m.app.stream(&run, None).await;
    let end = &of_kind(&events, "apperror")[0].data;
    assert!(
        end["hint"].as_str().unwrap().contains("--context-tokens"),
        "{end}"
    );
}

#[tokio::test]
#[ignore = "needs a model server: scripts/with-model.sh make model-unit"]
async fn the_model_list_names_the_model_by_its_file_stem() {
    let m = with_model(Some(16), None).await;
    let (code, list) = m.app.get("/api/models").await;
    assert_eq!(code, 200, "{list}");
    let id = model_id().await;
    let listed = list["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == json!(id))
        .cloned()
        .expect("the served model is offered");
    assert_eq!(listed["name"], "gemma-3-270m-q4_k_m");
    assert!(id.ends_with(".gguf") && id.contains('/'), "{id}");
}
