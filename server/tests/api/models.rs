//! The choice of model: the provider's list through `GET /api/models`, a conversation's
//! choice through `POST /api/session/model` (or its first message), and the model each turn
//! was answered by.

use std::time::Duration;

use serde_json::{json, Value};

use crate::backends::{openai, say, COMPLETIONS};
use crate::helpers::TestApp;
use crate::upstream::{Reply, Upstream};

const MODELS: &str = "GET /v1/models";

fn listing(ids: &[&str]) -> Reply {
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model"}))
        .collect();
    Reply::Json(200, json!({"object": "list", "data": data}))
}

fn ids(answer: &Value) -> Vec<String> {
    answer["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The models of the turns shown of `session`, oldest first.
async fn turn_models(app: &TestApp, session: &str) -> (Vec<Value>, Value) {
    let (code, page) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(code, 200, "{page}");
    let turns = page["session"]["turns"].as_array().unwrap();
    (
        turns.iter().map(|t| t["model"].clone()).collect(),
        page["session"]["model"].clone(),
    )
}

#[tokio::test]
async fn the_model_list_comes_from_the_provider_is_kept_a_while_and_can_be_refreshed() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    upstream.script(
        MODELS,
        listing(&[
            "scripted-model",
            "b-model",
            "/models/gemma-3-270m-it-Q4_K_M.gguf",
        ]),
    );
    upstream.script(MODELS, listing(&["scripted-model", "c-model"]));
    let app = TestApp::builder()
        .adapter(openai(&upstream, ws.path(), 4))
        .spawn()
        .await;

    let (code, answer) = app.get("/api/models").await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["default"], "scripted-model");
    assert_eq!(
        ids(&answer),
        [
            "/models/gemma-3-270m-it-Q4_K_M.gguf",
            "b-model",
            "scripted-model"
        ]
    );
    // A model served from a file is named by the file.
    assert_eq!(answer["models"][0]["name"], "gemma-3-270m-it-Q4_K_M");
    assert_eq!(answer["models"][1]["name"], "b-model");
    let asked = upstream.requests(MODELS);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].auth.as_deref(), Some("Bearer sk-test"));

    // Asked again: answered from what the provider said.
    let (_, again) = app.get("/api/models").await;
    assert_eq!(ids(&again), ids(&answer));
    assert_eq!(upstream.requests(MODELS).len(), 1);
    // A refresh right after one asks nobody; a little later it asks the provider again.
    let (_, refreshed) = app.get("/api/models?refresh=true").await;
    assert_eq!(ids(&refreshed), ids(&answer));
    assert_eq!(upstream.requests(MODELS).len(), 1);
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let (_, refreshed) = app.get("/api/models?refresh=true").await;
    assert_eq!(ids(&refreshed), ["c-model", "scripted-model"]);
    assert_eq!(upstream.requests(MODELS).len(), 2);

    // A bad query is a 400 with a JSON error.
    let (code, body) = app.get("/api/models?refresh=maybe").await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"].is_string());
}

#[tokio::test]
async fn a_conversation_asks_for_a_model_and_each_turn_names_the_one_that_answered() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    upstream.script(MODELS, listing(&["scripted-model", "b-model"]));
    for text in ["One.", "Two.", "Three.", "Four."] {
        upstream.script(COMPLETIONS, say(text));
    }
    let app = TestApp::builder()
        .adapter(openai(&upstream, ws.path(), 4))
        .spawn()
        .await;
    let session = app.new_session().await;

    // No choice made: the default answers, and the turn says so.
    let run = app.start(&session, "first").await;
    app.wait_finished(&run).await;
    assert_eq!(
        upstream.requests(COMPLETIONS)[0].body["model"],
        "scripted-model"
    );
    let (models, chosen) = turn_models(&app, &session).await;
    assert_eq!(models, [json!("scripted-model")]);
    assert_eq!(chosen, Value::Null);

    // Another model for the next turns; the turns before keep theirs.
    let (code, body) = app
        .post(
            "/api/session/model",
            json!({"session_id": session, "model": "b-model"}),
        )
        .await;
    assert_eq!((code, body), (200, json!({"model": "b-model"})));
    let run = app.start(&session, "second").await;
    app.wait_finished(&run).await;
    assert_eq!(upstream.requests(COMPLETIONS)[1].body["model"], "b-model");
    let (models, chosen) = turn_models(&app, &session).await;
    assert_eq!(models, [json!("scripted-model"), json!("b-model")]);
    assert_eq!(chosen, "b-model");

    // What the provider does not offer is refused, and the choice stays.
    for (model, code) in [
        (json!("no-such-model"), 400),
        (json!("x".repeat(300)), 400),
        (json!(42), 400),
    ] {
        let (got, body) = app
            .post(
                "/api/session/model",
                json!({"session_id": session, "model": model}),
            )
            .await;
        assert_eq!(got, code, "{model}: {body}");
        assert!(body["error"].is_string(), "{body}");
    }
    let (got, _) = app
        .post(
            "/api/session/model",
            json!({"session_id": "nosuchsession", "model": "b-model"}),
        )
        .await;
    assert_eq!(got, 404);
    assert_eq!(turn_models(&app, &session).await.1, "b-model");

    // A new conversation's first message carries the choice.
    let other = app.new_session().await;
    let (code, started) = app
        .post(
            "/api/chat/start",
            json!({"session_id": other, "message": "hello", "model": "b-model"}),
        )
        .await;
    assert_eq!(code, 200, "{started}");
    assert_eq!(started["model"], "b-model");
    app.wait_finished(started["run_id"].as_str().unwrap()).await;
    assert_eq!(upstream.requests(COMPLETIONS)[2].body["model"], "b-model");
    assert_eq!(turn_models(&app, &other).await.1, "b-model");

    // Back to the default.
    let (code, body) = app
        .post(
            "/api/session/model",
            json!({"session_id": session, "model": null}),
        )
        .await;
    assert_eq!((code, body), (200, json!({"model": null})));
    let run = app.start(&session, "third").await;
    app.wait_finished(&run).await;
    assert_eq!(
        upstream.requests(COMPLETIONS)[3].body["model"],
        "scripted-model"
    );
}

#[tokio::test]
async fn a_provider_that_cannot_list_its_models_leaves_the_default() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    upstream.script(
        MODELS,
        Reply::Json(500, json!({"error": {"message": "down"}})),
    );
    let app = TestApp::builder()
        .adapter(openai(&upstream, ws.path(), 4))
        .spawn()
        .await;
    let (code, answer) = app.get("/api/models").await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(ids(&answer), ["scripted-model"]);
    assert!(
        answer["error"].as_str().unwrap().contains("500"),
        "{answer}"
    );
    // The default can still be chosen; another cannot be checked, which the answer says.
    let session = app.new_session().await;
    let (code, _) = app
        .post(
            "/api/session/model",
            json!({"session_id": session, "model": "scripted-model"}),
        )
        .await;
    assert_eq!(code, 200);
    let (code, body) = app
        .post(
            "/api/session/model",
            json!({"session_id": session, "model": "b-model"}),
        )
        .await;
    assert_eq!(code, 502, "{body}");
    assert!(body["error"].is_string());
}

#[tokio::test]
async fn a_backend_without_a_choice_of_model_offers_none_and_refuses_one() {
    let app = TestApp::builder().spawn().await;
    let (code, answer) = app.get("/api/models").await;
    assert_eq!(
        (code, answer),
        (200, json!({"default": null, "models": []}))
    );
    let session = app.new_session().await;
    let (code, body) = app
        .post(
            "/api/session/model",
            json!({"session_id": session, "model": "gpt-4o"}),
        )
        .await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("no choice"));
    // A start that asks for a model starts nothing.
    let (code, _) = app
        .post(
            "/api/chat/start",
            json!({"session_id": session, "message": "/demo prose", "model": "gpt-4o"}),
        )
        .await;
    assert_eq!(code, 400);
    let (_, page) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(page["session"]["turns"], json!([]));
    // The demo's turns name no model.
    let run = app.start(&session, "/demo prose").await;
    app.wait_finished(&run).await;
    assert_eq!(turn_models(&app, &session).await.0, [Value::Null]);
}
