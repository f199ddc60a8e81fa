//! Retry, edit and versions: a session's turns as a tree, one branch shown.

use serde_json::{json, Value};

use crate::helpers::TestApp;

/// The turns the page shows: (user message, run id, versions as "i/n").
async fn shown(app: &TestApp, session: &str) -> Vec<(String, String, String)> {
    let (code, page) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(code, 200);
    page["session"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let versions = &t["versions"];
            let (i, n) = if versions.is_null() {
                (1, 1)
            } else {
                (
                    versions["index"].as_u64().unwrap(),
                    versions["count"].as_u64().unwrap(),
                )
            };
            (
                t["user"]["content"].as_str().unwrap().to_owned(),
                t["run_id"].as_str().unwrap().to_owned(),
                format!("{i}/{n}"),
            )
        })
        .collect()
}

async fn finished(app: &TestApp, session: &str, message: &str) -> String {
    let run = app.start(session, message).await;
    app.wait_finished(&run).await;
    run
}

fn run_of(answer: &Value) -> String {
    answer["run_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_retry_is_a_new_version_of_the_turn_and_the_old_one_stays() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let first = finished(&app, &session, "/demo prose").await;
    let failed = finished(&app, &session, "/demo error").await;
    let (code, answer) = app.post("/api/chat/retry", json!({"run_id": failed})).await;
    assert_eq!(code, 200, "{answer}");
    let retried = run_of(&answer);
    assert_ne!(retried, failed);
    assert_eq!(answer["versions"], json!({"index": 2, "count": 2}));
    // The same message, answered again.
    let (_, page) = app.get(&format!("/api/page?session_id={session}")).await;
    let old_message = page["session"]["turns"][1]["user"]["id"].clone();
    assert_eq!(answer["user_message"]["id"], old_message);
    app.wait_finished(&retried).await;
    let turns = shown(&app, &session).await;
    let expected = vec![
        ("/demo prose".to_owned(), first.clone(), "1/1".to_owned()),
        ("/demo error".to_owned(), retried.clone(), "2/2".to_owned()),
    ];
    assert_eq!(turns, expected);
    // The first version is one step back, and the next message follows the version shown.
    let (code, _) = app
        .post("/api/chat/branch", json!({"run_id": retried, "version": 1}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(
        shown(&app, &session).await[1],
        ("/demo error".into(), failed.clone(), "1/2".into())
    );
    let next = finished(&app, &session, "/demo prose").await;
    let turns = shown(&app, &session).await;
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[1].1, failed);
    assert_eq!(turns[2].1, next);
}

#[tokio::test]
async fn an_edit_forks_the_conversation_and_each_version_keeps_what_followed_it() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let a = finished(&app, &session, "/demo prose").await;
    let b = finished(&app, &session, "first question").await;
    let c = finished(&app, &session, "a follow-up").await;
    let (code, answer) = app
        .post(
            "/api/chat/edit",
            json!({"run_id": b, "message": "  second question  ", "client_id": "edit-1"}),
        )
        .await;
    assert_eq!(code, 200, "{answer}");
    let edited = run_of(&answer);
    assert_eq!(answer["user_message"]["content"], "second question");
    // Sent twice (an answer lost on the way): one edit.
    let (code, again) = app
        .post(
            "/api/chat/edit",
            json!({"run_id": b, "message": "second question", "client_id": "edit-1"}),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(run_of(&again), edited);
    app.wait_finished(&edited).await;
    let turns = shown(&app, &session).await;
    assert_eq!(
        turns,
        vec![
            ("/demo prose".to_owned(), a.clone(), "1/1".to_owned()),
            (
                "second question".to_owned(),
                edited.clone(),
                "2/2".to_owned()
            ),
        ]
    );
    // Version 1 brings back the turn that followed it.
    let (code, body) = app
        .post("/api/chat/branch", json!({"run_id": edited, "version": 1}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(body["run_id"], b.as_str());
    assert_eq!(body["head_run_id"], c.as_str());
    let runs: Vec<String> = shown(&app, &session)
        .await
        .into_iter()
        .map(|t| t.1)
        .collect();
    assert_eq!(runs, [a.clone(), b.clone(), c.clone()]);
    // And back; a reload shows what was chosen last.
    app.post("/api/chat/branch", json!({"run_id": b, "version": 2}))
        .await;
    let runs: Vec<String> = shown(&app, &session)
        .await
        .into_iter()
        .map(|t| t.1)
        .collect();
    assert_eq!(runs, [a.clone(), edited.clone()]);

    // The Markdown export is the branch shown; the JSON lines hold every branch.
    let md = app.export(&session, "md").await;
    assert!(
        md.contains("second question")
            && !md.contains("first question")
            && !md.contains("a follow-up"),
        "{md}"
    );
    let jsonl = app.export(&session, "jsonl").await;
    let users: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["type"] == "user_message")
        .collect();
    let parent = |run: &str| {
        users
            .iter()
            .find(|u| u["run_id"] == run)
            .map(|u| u["parent_run_id"].clone())
            .unwrap()
    };
    assert_eq!(users.len(), 4);
    assert_eq!(parent(&a), Value::Null);
    assert_eq!(parent(&b), json!(a));
    assert_eq!(parent(&edited), json!(a));
    assert_eq!(parent(&c), json!(b));
}

#[tokio::test]
async fn versions_cannot_change_while_a_turn_runs_and_bad_requests_get_clear_answers() {
    let app = TestApp::builder()
        .demo_delay(std::time::Duration::from_millis(40))
        .spawn()
        .await;
    let session = app.new_session().await;
    let done = finished(&app, &session, "/demo prose").await;
    let running = app.start(&session, "/demo long 200").await;
    for (path, body) in [
        ("/api/chat/retry", json!({"run_id": done})),
        ("/api/chat/edit", json!({"run_id": done, "message": "x"})),
        ("/api/chat/branch", json!({"run_id": done, "version": 1})),
    ] {
        let (code, answer) = app.post(path, body).await;
        assert_eq!(code, 409, "{path}: {answer}");
        assert_eq!(answer["active_run_id"], running.as_str(), "{path}");
    }
    app.post("/api/chat/cancel", json!({"run_id": running}))
        .await;
    app.wait_finished(&running).await;
    let cases = [
        (
            "/api/chat/branch",
            json!({"run_id": done, "version": 2}),
            400,
        ),
        (
            "/api/chat/branch",
            json!({"run_id": done, "version": 0}),
            400,
        ),
        (
            "/api/chat/branch",
            json!({"run_id": done, "version": "two"}),
            400,
        ),
        (
            "/api/chat/edit",
            json!({"run_id": done, "message": "   "}),
            400,
        ),
        (
            "/api/chat/edit",
            json!({"run_id": done, "message": "x".repeat(70_000)}),
            413,
        ),
        ("/api/chat/retry", json!({"run_id": "nosuchrun"}), 404),
        (
            "/api/chat/edit",
            json!({"run_id": "nosuchrun", "message": "x"}),
            404,
        ),
    ];
    for (path, body, status) in cases {
        let (code, answer) = app.post(path, body.clone()).await;
        assert_eq!(code, status, "{path} {body}: {answer}");
        assert!(answer["error"].is_string(), "{path}: {answer}");
    }
    // Nothing of that changed the conversation.
    let runs: Vec<String> = shown(&app, &session)
        .await
        .into_iter()
        .map(|t| t.1)
        .collect();
    assert_eq!(runs, [done, running]);
}

#[tokio::test]
async fn a_link_to_a_turn_on_another_branch_shows_that_branch_and_one_on_this_branch_changes_nothing(
) {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let first = finished(&app, &session, "the wombat question").await;
    let (code, edited) = app
        .post(
            "/api/chat/edit",
            json!({"run_id": first, "message": "another question"}),
        )
        .await;
    assert_eq!(code, 200, "{edited}");
    let second = run_of(&edited);
    app.wait_finished(&second).await;
    let after = finished(&app, &session, "a follow-up").await;
    assert_eq!(shown(&app, &session).await[0].0, "another question");

    // Search finds the first version; its turn is not shown.
    let (_, hits) = app.get("/api/sessions/search?q=wombat").await;
    let hit = hits["sessions"][0]["hit_turn_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(hit, format!("turn-{first}"));

    // A turn shown already: nothing changes.
    let (code, same) = app.post("/api/chat/branch", json!({"run_id": after})).await;
    assert_eq!(code, 200, "{same}");
    assert_eq!(same["changed"], false);
    assert_eq!(same["head_run_id"], after);
    assert_eq!(shown(&app, &session).await.len(), 2);

    // The hit's turn: its branch is shown.
    let (code, moved) = app.post("/api/chat/branch", json!({"run_id": first})).await;
    assert_eq!(code, 200, "{moved}");
    assert_eq!(moved["changed"], true);
    assert_eq!(moved["turn_id"], hit);
    let turns = shown(&app, &session).await;
    assert_eq!(turns.len(), 1);
    assert_eq!(
        turns[0],
        (
            "the wombat question".to_owned(),
            first.clone(),
            "1/2".to_owned()
        )
    );
}
