//! What the `openai` backend does about length: the answer limit it sends (`max_tokens`), an
//! answer the provider cut off, a conversation kept within the model's context, and a request
//! that does not fit. Against a scripted provider, so that what is sent can be read back; the
//! same behaviours against a real model are in `real_model`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use server::runtime::openai::{tool_schemas, OpenAiAgent, OpenAiSettings};
use server::runtime::workspaces::Workspaces;

use crate::backends::{say, stream, COMPLETIONS};
use crate::helpers::{of_kind, SseEvent, TestApp};
use crate::upstream::{delta, usage, Reply, Upstream, DONE};

struct Setup {
    upstream: Upstream,
    app: TestApp,
    _workspace: tempfile::TempDir,
}

async fn setup(max_tokens: Option<u32>, context_tokens: Option<u32>) -> Setup {
    let upstream = Upstream::start().await;
    let workspace = tempfile::tempdir().unwrap();
    let mut settings = OpenAiSettings::new(upstream.url("/v1"), "sk-test".into(), "scripted");
    settings.max_tokens = max_tokens;
    settings.context_tokens = context_tokens;
    settings.idle = Duration::from_secs(10);
    let agent = OpenAiAgent::new(
        settings,
        Workspaces::open(workspace.path(), 1 << 30).unwrap(),
    )
    .unwrap();
    let app = TestApp::builder().adapter(Arc::new(agent)).spawn().await;
    Setup {
        upstream,
        app,
        _workspace: workspace,
    }
}

/// A reply of `text` that the provider stopped at its length limit.
fn cut(text: &str) -> Reply {
    stream(&[
        delta(json!({ "content": text }), None),
        delta(json!({}), Some("length")),
        DONE.to_owned(),
    ])
}

async fn run_turn(app: &TestApp, session: &str, message: &str) -> (Value, Vec<SseEvent>) {
    let run = app.start(session, message).await;
    let status = app.wait_finished(&run).await;
    (status, app.stream(&run, None).await)
}

async fn messages_of(app: &TestApp, session: &str) -> Vec<Value> {
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    s["session"]["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn the_answer_limit_is_sent_and_a_cut_off_answer_says_so_in_the_turn_and_the_message() {
    let s = setup(Some(300), None).await;
    s.upstream
        .script(COMPLETIONS, cut("Once upon a time there was"));
    s.upstream.script(COMPLETIONS, say("The end."));
    let session = s.app.new_session().await;
    let (status, events) = run_turn(&s.app, &session, "Tell me a story").await;
    assert_eq!(
        s.upstream.requests(COMPLETIONS)[0].body["max_tokens"],
        300,
        "the limit is sent"
    );
    assert_eq!(status["terminal_state"], "completed", "not an error");
    let done = &of_kind(&events, "done")[0].data;
    assert_eq!(done["finish_reason"], "length");
    assert_eq!(done["cut_off"]["limit"], 300);
    assert!(done["cut_off"]["message"]
        .as_str()
        .unwrap()
        .contains("300 tokens"));
    let settled = &of_kind(&events, "settled_message")[0].data;
    assert_eq!(settled["cut_off"], true);
    assert_eq!(settled["content"], "Once upon a time there was");
    let answer = messages_of(&s.app, &session).await[1].clone();
    assert_eq!(answer["cut_off"], true);
    assert_eq!(
        answer["partial"], false,
        "what came is the answer, not a fragment"
    );
    // An answer that ended by itself is not.
    let (_, events) = run_turn(&s.app, &session, "Continue").await;
    let done = &of_kind(&events, "done")[0].data;
    assert!(done.get("cut_off").is_none(), "{done}");
    assert!(of_kind(&events, "settled_message")[0]
        .data
        .get("cut_off")
        .is_none());
    assert!(messages_of(&s.app, &session).await[3]
        .get("cut_off")
        .is_none());
    // Continue sends the cut-off answer back as it was.
    let sent = s.upstream.requests(COMPLETIONS)[1].body["messages"].clone();
    assert_eq!(sent[2]["content"], "Once upon a time there was");
}

#[tokio::test]
async fn no_limit_is_sent_when_none_is_set_and_a_provider_that_wants_the_newer_name_gets_it() {
    let s = setup(None, None).await;
    s.upstream.script(COMPLETIONS, say("Hi."));
    let session = s.app.new_session().await;
    run_turn(&s.app, &session, "Hello").await;
    let body = &s.upstream.requests(COMPLETIONS)[0].body;
    assert!(body.get("max_tokens").is_none() && body.get("max_completion_tokens").is_none());

    let s = setup(Some(500), None).await;
    s.upstream.script(
        COMPLETIONS,
        Reply::Json(
            400,
            json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error"}}),
        ),
    );
    s.upstream.script(COMPLETIONS, say("Hi."));
    s.upstream.script(COMPLETIONS, say("Again."));
    let session = s.app.new_session().await;
    let (status, _) = run_turn(&s.app, &session, "Hello").await;
    assert_eq!(status["terminal_state"], "completed");
    run_turn(&s.app, &session, "Hello again").await;
    let requests = s.upstream.requests(COMPLETIONS);
    assert_eq!(requests.len(), 3);
    for later in &requests[1..] {
        assert_eq!(later.body["max_completion_tokens"], 500);
        assert!(later.body.get("max_tokens").is_none());
    }
}

/// `n` bytes of text (its words start with `letter`).
fn text(n: usize, letter: char) -> String {
    let mut out = String::with_capacity(n);
    while out.len() < n {
        out.push(letter);
        out.push_str("bcd ");
    }
    out.truncate(n - 1);
    out.push('.');
    out
}

#[tokio::test]
async fn a_long_conversation_leaves_out_its_oldest_turns_never_the_system_prompt_or_the_message() {
    // 2,000 tokens of context, 200 kept for the answer.
    let s = setup(Some(200), Some(2000)).await;
    let session = s.app.new_session().await;
    let mut history: Vec<Value> = Vec::new();
    let mut most_left_out = 0;
    for (i, letter) in "abcdefgh".chars().enumerate() {
        let answer = format!("Answer {i}.");
        s.upstream.script(COMPLETIONS, say(&answer));
        let message = text(900, letter);
        let (status, events) = run_turn(&s.app, &session, &message).await;
        assert_eq!(status["terminal_state"], "completed");
        let sent = s.upstream.requests(COMPLETIONS)[i].body["messages"]
            .as_array()
            .unwrap()
            .clone();
        let left_out = of_kind(&events, "context_status")
            .first()
            .map_or(0, |e| e.data["left_out"].as_u64().unwrap() as usize);
        // The system prompt, the newest earlier messages (whole turns), the message itself.
        assert_eq!(sent[0]["role"], "system", "turn {i}");
        assert_eq!(left_out % 2, 0, "turn {i}: whole turns");
        assert_eq!(&sent[1..sent.len() - 1], &history[left_out..], "turn {i}");
        assert_eq!(sent.last().unwrap()["content"], json!(message));
        assert!(
            left_out >= most_left_out,
            "turn {i}: never more than before"
        );
        most_left_out = left_out;
        let bytes: usize = sent
            .iter()
            .map(|m| m["content"].as_str().map_or(0, str::len))
            .sum();
        assert!(bytes <= 3 * 1_800, "turn {i}: {bytes} bytes sent");
        if left_out > 0 {
            let status = &of_kind(&events, "context_status")[0].data;
            assert_eq!(status["context_tokens"], 2000);
            assert!(status["message"]
                .as_str()
                .unwrap()
                .contains(&format!("{left_out} messages")));
        }
        history.push(json!({"role": "user", "content": message}));
        history.push(json!({"role": "assistant", "content": answer}));
    }
    assert!(most_left_out >= 2, "the conversation outgrew the context");
    assert!(
        most_left_out < history.len() - 2,
        "and the latest turns stayed"
    );
}

#[tokio::test]
async fn a_message_that_cannot_fit_is_refused_before_the_provider_is_asked() {
    let s = setup(Some(200), Some(1000)).await;
    let session = s.app.new_session().await;
    let (status, events) = run_turn(&s.app, &session, &text(20_000, 'x')).await;
    assert_eq!(status["terminal_state"], "compression_exhausted");
    let end = &of_kind(&events, "apperror")[0].data;
    assert_eq!(end["type"], "context_overflow");
    assert!(end["message"].as_str().unwrap().contains("1,000"), "{end}");
    assert!(s.upstream.requests(COMPLETIONS).is_empty());
    // The user's message is kept, to edit and send again.
    let messages = messages_of(&s.app, &session).await;
    assert_eq!(messages[0]["content"], json!(text(20_000, 'x')));
}

#[tokio::test]
async fn a_providers_context_overflow_teaches_the_window_and_the_turn_is_asked_again_within_it() {
    let s = setup(Some(100), None).await;
    let session = s.app.new_session().await;
    s.upstream.script(COMPLETIONS, say("First."));
    s.upstream.script(COMPLETIONS, say("Second."));
    run_turn(&s.app, &session, &text(3_000, 'a')).await;
    run_turn(&s.app, &session, &text(3_000, 'b')).await;
    // The provider refuses the third: its window is smaller than the conversation.
    s.upstream.script(
        COMPLETIONS,
        Reply::Json(
            400,
            json!({"error": {"message": "This model's maximum context length is 2048 tokens. However, you requested 3120 tokens (3020 in the messages, 100 in the completion).", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
        ),
    );
    s.upstream.script(COMPLETIONS, say("Third."));
    let (status, events) = run_turn(&s.app, &session, &text(3_000, 'c')).await;
    assert_eq!(status["terminal_state"], "completed", "{events:?}");
    let requests = s.upstream.requests(COMPLETIONS);
    assert_eq!(requests.len(), 4, "asked once more");
    let again = requests[3].body["messages"].as_array().unwrap().clone();
    assert!(again.len() < requests[2].body["messages"].as_array().unwrap().len());
    assert_eq!(again.last().unwrap()["content"], json!(text(3_000, 'c')));
    let said = of_kind(&events, "context_status");
    assert_eq!(said.len(), 1);
    assert_eq!(said[0].data["context_tokens"], 2048);

    // An overflow the window cannot avoid ends with the card, whatever the wording.
    s.upstream.script(
        COMPLETIONS,
        Reply::Json(
            400,
            json!({"error": {"message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 2048}}),
        ),
    );
    let (status, events) = run_turn(&s.app, &session, "short").await;
    assert_eq!(status["terminal_state"], "compression_exhausted");
    let end = &of_kind(&events, "apperror")[0].data;
    assert_eq!(end["type"], "context_overflow");
    assert!(end["message"].as_str().unwrap().contains("2,048"), "{end}");
    assert!(end["hint"].as_str().unwrap().contains("new conversation"));
}

#[tokio::test]
async fn a_message_the_provider_refused_as_too_long_does_not_say_it_was_never_sent() {
    let s = setup(Some(100), None).await;
    let session = s.app.new_session().await;
    // No window known: the 3,000-byte message is sent, and refused by a 512-token model.
    s.upstream.script(
        COMPLETIONS,
        Reply::Json(
            400,
            json!({"error": {"message": "This model's maximum context length is 512 tokens. However, you requested 1200 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
        ),
    );
    let (status, events) = run_turn(&s.app, &session, &text(3_000, 'a')).await;
    assert_eq!(status["terminal_state"], "compression_exhausted");
    assert_eq!(s.upstream.requests(COMPLETIONS).len(), 1, "not asked again");
    let end = &of_kind(&events, "apperror")[0].data;
    assert_eq!(end["type"], "context_overflow");
    assert!(end["message"].as_str().unwrap().contains("512"), "{end}");
    let hint = end["hint"].as_str().unwrap();
    assert!(
        hint.contains("refused") && hint.contains("Shorten"),
        "{hint}"
    );
    assert!(!hint.contains("Nothing was sent"), "{hint}");
    // Now that the window is known, the next such message is refused before it is sent, and
    // says so.
    let (_, events) = run_turn(&s.app, &session, &text(3_000, 'b')).await;
    assert_eq!(s.upstream.requests(COMPLETIONS).len(), 1);
    let end = &of_kind(&events, "apperror")[0].data;
    assert!(
        end["hint"].as_str().unwrap().contains("Nothing was sent"),
        "{end}"
    );
}

/// A reply of `text` with a usage report of `prompt` tokens.
fn say_with_usage(text: &str, prompt: u64) -> Reply {
    stream(&[
        delta(json!({ "content": text }), None),
        delta(json!({}), Some("stop")),
        usage(prompt, 3),
        DONE.to_owned(),
    ])
}

#[tokio::test]
async fn a_providers_usage_reports_teach_how_long_a_token_is_and_more_of_the_conversation_fits() {
    // Two conversations of the same two long messages, on providers that differ only in their
    // usage reports: one counts the first request as few tokens (a long token, 5 bytes at
    // most is believed), the other reports nothing (3 bytes a token is assumed). The window
    // holds both messages at 5 bytes a token, not at 3.
    let tools = tool_schemas().to_string().len();
    let long = 4 * tools + 1_000;
    let window = u32::try_from(tools * 12 / 5 + 1_000).unwrap();
    let mut left_out = Vec::new();
    for reports in [true, false] {
        let s = setup(Some(200), Some(window)).await;
        let session = s.app.new_session().await;
        s.upstream.script(
            COMPLETIONS,
            if reports {
                say_with_usage("First.", 40)
            } else {
                say("First.")
            },
        );
        s.upstream.script(COMPLETIONS, say("Second."));
        let (status, events) = run_turn(&s.app, &session, &text(long, 'a')).await;
        assert_eq!(status["terminal_state"], "completed", "{events:?}");
        let (status, events) = run_turn(&s.app, &session, &text(long, 'b')).await;
        assert_eq!(status["terminal_state"], "completed", "{events:?}");
        let sent = s.upstream.requests(COMPLETIONS)[1].body["messages"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(sent.last().unwrap()["content"], json!(text(long, 'b')));
        let said = of_kind(&events, "context_status")
            .first()
            .map_or(0, |e| e.data["left_out"].as_u64().unwrap());
        // What the turn said it left out is what it left out.
        assert_eq!(sent.len() as u64, 4 - said, "reports usage: {reports}");
        left_out.push(said);
    }
    assert_eq!(
        left_out,
        [0, 2],
        "the first turn is kept only where usage taught better"
    );
}

#[tokio::test]
async fn a_stream_closed_before_any_answer_says_what_usually_causes_it() {
    let s = setup(Some(100), None).await;
    s.upstream.script(
        COMPLETIONS,
        stream(&[delta(json!({"role": "assistant"}), None)]),
    );
    let session = s.app.new_session().await;
    let (status, events) = run_turn(&s.app, &session, "Hello").await;
    assert_eq!(status["terminal_state"], "error");
    let end = &of_kind(&events, "apperror")[0].data;
    assert!(end["message"]
        .as_str()
        .unwrap()
        .contains("before it answered"));
    assert!(end["hint"].as_str().unwrap().contains("--context-tokens"));
    // One that had begun to answer keeps it and says it was cut.
    s.upstream.script(
        COMPLETIONS,
        stream(&[delta(json!({"content": "Half an"}), None)]),
    );
    let (_, events) = run_turn(&s.app, &session, "Hello").await;
    let end = &of_kind(&events, "apperror")[0].data;
    assert!(
        end["message"].as_str().unwrap().contains("cut off"),
        "{end}"
    );
}

#[tokio::test]
async fn an_ai_sdk_client_reads_a_cut_off_answer_as_finished_for_length() {
    let s = setup(Some(50), None).await;
    s.upstream.script(COMPLETIONS, cut("The first chapter"));
    s.upstream.script(COMPLETIONS, say("Done."));
    let finish = |chunks: &[Value]| {
        chunks
            .iter()
            .find(|c| c["type"] == "finish")
            .map(|c| c["finishReason"].clone())
    };
    let body = |text: &str, id: &str| {
        json!({"id": "chat-len", "trigger": "submit-message",
               "messages": [{"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}]})
    };
    let (_, chunks) =
        crate::protocols::post_stream(&s.app, "/api/ai-sdk/chat", body("A story", "u1")).await;
    assert_eq!(finish(&chunks), Some(json!("length")), "{chunks:?}");
    let (_, chunks) =
        crate::protocols::post_stream(&s.app, "/api/ai-sdk/chat", body("Go on", "u2")).await;
    assert_eq!(finish(&chunks), Some(json!("stop")), "{chunks:?}");
}

/// `GET /api/session/context` for `session` with a message of `draft` bytes.
async fn context_use(app: &TestApp, session: &str, draft: usize) -> Value {
    let (code, answer) = app
        .get(&format!(
            "/api/session/context?session_id={session}&draft_bytes={draft}"
        ))
        .await;
    assert_eq!(code, 200, "{answer}");
    answer
}

#[tokio::test]
async fn the_context_meter_foretells_what_the_next_turn_leaves_out() {
    // The same conversation as above: each message is measured before it is sent, and the
    // turn then leaves out exactly what the meter said.
    let s = setup(Some(200), Some(2000)).await;
    let session = s.app.new_session().await;
    let empty = context_use(&s.app, &session, 0).await;
    assert_eq!(empty["window"], 2000);
    assert_eq!(empty["messages"], 0);
    assert_eq!(empty["left_out"], 0);
    assert_eq!(empty["reserve"], 200);
    // A longer message takes more of it.
    let typed = context_use(&s.app, &session, 900).await;
    assert!(
        typed["used"].as_u64() > empty["used"].as_u64(),
        "{typed} {empty}"
    );
    let mut foretold_any = false;
    for (i, letter) in "abcdefg".chars().enumerate() {
        let message = text(900, letter);
        let foretold = context_use(&s.app, &session, message.len()).await;
        assert_eq!(foretold["messages"], 2 * i as u64, "turn {i}");
        assert!(
            foretold["used"].as_u64().unwrap() <= 2000 - 200,
            "turn {i}: {foretold}"
        );
        s.upstream.script(COMPLETIONS, say(&format!("Answer {i}.")));
        let (_, events) = run_turn(&s.app, &session, &message).await;
        let left_out = of_kind(&events, "context_status")
            .first()
            .map_or(0, |e| e.data["left_out"].as_u64().unwrap());
        assert_eq!(foretold["left_out"], left_out, "turn {i}: {foretold}");
        foretold_any |= left_out > 0;
    }
    assert!(foretold_any, "the conversation outgrew the context");
    // A message too long for the context even alone says so (counted up to a message's
    // limit, whatever is asked).
    let huge = context_use(&s.app, &session, usize::MAX / 2).await;
    assert_eq!(huge["too_long"], true, "{huge}");
    // Bad input is a 400 with a reason; another's conversation is not found.
    let (code, answer) = s
        .app
        .get(&format!(
            "/api/session/context?session_id={session}&draft_bytes=lots"
        ))
        .await;
    assert_eq!(code, 400, "{answer}");
    assert!(answer["error"].is_string());
    let (code, _) = s
        .app
        .get("/api/session/context?session_id=nope&draft_bytes=1")
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn no_meter_where_the_window_is_not_known_and_a_pretend_one_for_the_demo() {
    let s = setup(Some(200), None).await;
    let session = s.app.new_session().await;
    let answer = context_use(&s.app, &session, 100).await;
    assert_eq!(answer["window"], Value::Null, "{answer}");
    // The demo agent says it has a (pretend) window, so that the meter shows with it too.
    let demo = TestApp::builder().spawn().await;
    let session = demo.new_session().await;
    let pretend = context_use(&demo, &session, 100).await;
    assert_eq!(pretend["window"], 16_384, "{pretend}");
    assert!(pretend["used"].as_u64().unwrap() > 0, "{pretend}");
}
