//! Where a conversation sits: pinned to the top, archived out of the list, deleted with a
//! window for Undo before it is removed with its journal.

use serde_json::{json, Value};
use server::store::StoreError;

use crate::helpers::TestApp;

async fn listed(app: &TestApp, query: &str) -> Vec<(String, bool, bool)> {
    let (code, body) = app.get(&format!("/api/sessions{query}")).await;
    assert_eq!(code, 200, "{body}");
    body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["pinned"].as_bool().unwrap(),
                s["archived"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn ids(list: &[(String, bool, bool)]) -> Vec<&str> {
    list.iter().map(|(id, _, _)| id.as_str()).collect()
}

async fn titled(app: &TestApp, title: &str) -> String {
    let session = app.new_session().await;
    let (code, _) = app
        .post(
            "/api/session/rename",
            json!({"session_id": session, "title": title}),
        )
        .await;
    assert_eq!(code, 200);
    session
}

#[tokio::test]
async fn pinned_conversations_come_first_and_archived_ones_leave_the_list() {
    let app = TestApp::builder().spawn().await;
    let a = titled(&app, "alpha").await;
    let b = titled(&app, "bravo").await;
    let c = titled(&app, "charlie").await;
    assert_eq!(ids(&listed(&app, "").await), [&c, &b, &a]);

    // Pinned: first, whatever came after it.
    let (code, body) = app
        .post("/api/session/pin", json!({"session_id": a, "on": true}))
        .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["session"]["pinned"], true);
    let list = listed(&app, "").await;
    assert_eq!(ids(&list), [&a, &c, &b]);
    assert!(list[0].1 && !list[1].1);
    // The page's sidebar agrees.
    let (_, page) = app.get("/api/page").await;
    assert_eq!(page["sessions"][0]["id"], json!(a));
    assert_eq!(page["sessions"][0]["pinned"], true);

    // Archived: out of the list, in the archive, still found by search; its pin goes.
    let (code, body) = app
        .post("/api/session/archive", json!({"session_id": a, "on": true}))
        .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        (
            body["session"]["archived"].clone(),
            body["session"]["pinned"].clone()
        ),
        (json!(true), json!(false))
    );
    assert_eq!(ids(&listed(&app, "").await), [&c, &b]);
    assert_eq!(
        listed(&app, "?archived=true").await,
        [(a.clone(), false, true)]
    );
    let (_, found) = app.get("/api/sessions/search?q=alpha").await;
    assert_eq!(found["sessions"][0]["id"], json!(a));
    assert_eq!(found["sessions"][0]["archived"], true);
    // It still opens.
    let (code, _) = app.get(&format!("/api/session?session_id={a}")).await;
    assert_eq!(code, 200);

    // Back from the archive; unpinned.
    let (code, _) = app
        .post(
            "/api/session/archive",
            json!({"session_id": a, "on": false}),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(ids(&listed(&app, "").await), [&c, &b, &a]);
    assert!(listed(&app, "?archived=true").await.is_empty());
    let (code, _) = app
        .post("/api/session/pin", json!({"session_id": b, "on": true}))
        .await;
    assert_eq!(code, 200);
    let (code, _) = app
        .post("/api/session/pin", json!({"session_id": b, "on": false}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(ids(&listed(&app, "").await), [&c, &b, &a]);

    // Bad bodies and unknown ids.
    for (path, body, code) in [
        ("/api/session/pin", json!({"session_id": a}), 400),
        (
            "/api/session/pin",
            json!({"session_id": a, "on": "yes"}),
            400,
        ),
        (
            "/api/session/archive",
            json!({"session_id": "nope", "on": true}),
            404,
        ),
        (
            "/api/session/pin",
            json!({"session_id": "nope", "on": true}),
            404,
        ),
    ] {
        let (got, answer) = app.post(path, body.clone()).await;
        assert_eq!(got, code, "{path} {body}: {answer}");
        assert!(answer["error"].is_string());
    }
}

#[tokio::test]
async fn a_deleted_conversation_can_be_restored_until_it_is_removed_with_its_journal() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo prose").await;
    app.wait_finished(&run).await;
    let (_, before) = app.get(&format!("/api/session?session_id={session}")).await;

    let (code, _) = app
        .post("/api/session/delete", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200);
    // Gone for every read at once.
    assert!(listed(&app, "").await.is_empty());
    let (code, _) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(code, 404);
    let (code, _) = app.get(&format!("/api/chat/stream?run_id={run}")).await;
    assert_eq!(code, 404);
    let (_, found) = app.get("/api/sessions/search?q=demo").await;
    assert_eq!(found["sessions"], json!([]));
    let (code, _) = app
        .post(
            "/api/chat/start",
            json!({"session_id": session, "message": "more"}),
        )
        .await;
    assert_eq!(code, 404);

    // Undo: all of it back, once.
    let (code, body) = app
        .post("/api/session/restore", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["session"]["id"], json!(session));
    let (_, after) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(after, before);
    assert!(app.stream(&run, None).await.len() > 3);
    let (code, body) = app
        .post("/api/session/restore", json!({"session_id": session}))
        .await;
    assert_eq!(code, 404, "{body}");

    // Past the window the purge removes it, journal and all; Undo is too late.
    app.post("/api/session/delete", json!({"session_id": session}))
        .await;
    assert_eq!(app.store.purge_deleted(f64::MAX).await.unwrap(), 1);
    assert!(matches!(
        app.store.run(&run).await,
        Err(StoreError::NotFound)
    ));
    let (code, body): (u16, Value) = app
        .post("/api/session/restore", json!({"session_id": session}))
        .await;
    assert_eq!(code, 404, "{body}");
    // A purge removes only what was deleted before its time.
    let kept = app.new_session().await;
    app.post("/api/session/delete", json!({"session_id": kept}))
        .await;
    assert_eq!(app.store.purge_deleted(0.0).await.unwrap(), 0);
    let (code, _) = app
        .post("/api/session/restore", json!({"session_id": kept}))
        .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn the_server_lists_conversations_in_the_order_the_browser_places_them() {
    let app = TestApp::builder().spawn().await;
    let mut made = Vec::new();
    for title in ["one", "two", "three", "four", "five"] {
        made.push(titled(&app, title).await);
    }
    // Pins in another order than the conversations were made, and one renamed after its pin
    // (updated later than the pins after it).
    for i in [3, 0, 2] {
        let (code, _) = app
            .post(
                "/api/session/pin",
                json!({"session_id": made[i], "on": true}),
            )
            .await;
        assert_eq!(code, 200);
    }
    let (code, _) = app
        .post(
            "/api/session/rename",
            json!({"session_id": made[3], "title": "four, renamed"}),
        )
        .await;
    assert_eq!(code, 200);
    let (_, body) = app.get("/api/sessions").await;
    let listed: Vec<app::api::SessionSummary> =
        serde_json::from_value(body["sessions"].clone()).unwrap();
    // The latest pinned first, then the rest by their updates.
    let order: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        order,
        [&made[2], &made[0], &made[3], &made[4], &made[1]].map(String::as_str)
    );
    // The browser's rule sorts them the same way, whatever order they come in.
    for rotation in 0..listed.len() {
        let mut shuffled = listed.clone();
        shuffled.rotate_left(rotation);
        shuffled.reverse();
        shuffled.sort_by(app::api::SessionSummary::sidebar_order);
        assert_eq!(shuffled, listed, "rotation {rotation}");
    }
}

#[tokio::test]
async fn a_search_hit_carries_its_words_in_context_and_archived_hits_are_marked() {
    let app = TestApp::builder().spawn().await;
    let long = app.new_session().await;
    let message = format!(
        "{} the Wombat burrows under the fence {}",
        "before ".repeat(60),
        "after ".repeat(60)
    );
    let run = app.start(&long, &message).await;
    app.wait_finished(&run).await;
    let titled_only = titled(&app, "Wombat notes").await;
    let archived = app.new_session().await;
    let run = app.start(&archived, "an old wombat story").await;
    app.wait_finished(&run).await;
    let (code, _) = app
        .post(
            "/api/session/archive",
            json!({"session_id": archived, "on": true}),
        )
        .await;
    assert_eq!(code, 200);

    let (code, found) = app.get("/api/sessions/search?q=WOMBAT").await;
    assert_eq!(code, 200, "{found}");
    let hit = |id: &str| -> Value {
        found["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap_or(Value::Null)
    };
    // The words around the match, cut on both sides, on one line, short.
    let snippet = hit(&long)["snippet"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        snippet.contains("the Wombat burrows under the fence"),
        "{snippet}"
    );
    assert!(
        snippet.starts_with('…') && snippet.ends_with('…'),
        "{snippet}"
    );
    assert!(snippet.chars().count() <= 140, "{snippet}");
    // A title hit has no words of a message to show.
    assert_eq!(hit(&titled_only)["snippet"], Value::Null);
    // An archived hit is found, and says it is archived (the sidebar counts it apart).
    assert_eq!(hit(&archived)["archived"], true);
    let words = hit(&archived)["snippet"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(words.contains("an old wombat story"), "{words}");
}
