//! The session API.

use std::time::Duration;

use serde_json::json;

use crate::helpers::{session_ids, TestApp};

#[tokio::test]
async fn sessions_are_created_listed_newest_first_renamed_and_searched() {
    let app = TestApp::builder().spawn().await;
    let (code, first) = app
        .post("/api/session/new", json!({"title": "Rust lifetimes"}))
        .await;
    assert_eq!(code, 200);
    let first = first["session"]["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let second = app.new_session().await;
    let (_, list) = app.get("/api/sessions").await;
    let ids = session_ids(&list);
    assert_eq!(ids, [second.as_str(), first.as_str()]);

    let (code, renamed) = app
        .post(
            "/api/session/rename",
            json!({"session_id": second, "title": "  Borrow checker  "}),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(renamed["session"]["title"], "Borrow checker");
    assert_eq!(renamed["session"]["title_source"], "manual");

    let run = app.start(&first, "tell me about the turbofish").await;
    app.wait_finished(&run).await;
    let (_, hits) = app.get("/api/sessions/search?q=TURBOFISH").await;
    let hits = session_ids(&hits);
    assert_eq!(
        hits,
        [first.as_str()],
        "message text is searched, case-insensitively"
    );
    let (_, hits) = app.get("/api/sessions/search?q=borrow").await;
    assert_eq!(
        hits["sessions"][0]["id"],
        second.as_str(),
        "titles are searched"
    );
    let (_, hits) = app.get("/api/sessions/search?q=100%25_").await;
    assert_eq!(hits["sessions"], json!([]), "LIKE wildcards are literal");

    // The agent does not replace a title the user chose.
    let run = app.start(&second, "a first message").await;
    app.wait_finished(&run).await;
    let (_, s) = app.get(&format!("/api/session?session_id={second}")).await;
    assert_eq!(s["session"]["title"], "Borrow checker");
}

#[tokio::test]
async fn deleting_a_session_removes_its_journal_and_is_refused_while_running() {
    let app = TestApp::builder()
        .demo_delay(Duration::from_millis(20))
        .spawn()
        .await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo slow").await;
    let (code, body) = app
        .post("/api/session/delete", json!({"session_id": session}))
        .await;
    assert_eq!(code, 409);
    assert_eq!(body["active_run_id"], run.as_str());
    app.post("/api/chat/cancel", json!({"run_id": run})).await;
    app.wait_finished(&run).await;
    let (code, _) = app
        .post("/api/session/delete", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200);
    let (code, _) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(code, 404);
    let (code, _) = app.get(&format!("/api/chat/stream?run_id={run}")).await;
    assert_eq!(code, 404, "the journal went with it");
    let (code, _) = app
        .post("/api/session/delete", json!({"session_id": session}))
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn the_markdown_export_shows_what_the_agent_did_and_what_it_was_allowed() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo approval").await;
    let approval = crate::helpers::wait_for_event(&app, &run, "approval").await;
    let (code, _) = app
        .post(
            "/api/approval/respond",
            json!({"run_id": run, "approval_id": approval.data["approval_id"], "choice": "once"}),
        )
        .await;
    assert_eq!(code, 200);
    app.wait_finished(&run).await;
    let tools = app.start(&session, "/demo tools").await;
    app.wait_finished(&tools).await;
    let md = app
        .get_with(
            &format!("/api/session/export?session_id={session}&format=md"),
            &[],
        )
        .await
        .text()
        .await
        .unwrap();
    // Each answer comes after its steps, folded.
    assert_eq!(md.matches("<details>").count(), 2, "{md}");
    assert!(md.contains("<summary>Worklog: "), "{md}");
    // The command asked for, and the answer given.
    assert!(md.contains("` rm -rf target/ `"), "{md}");
    assert!(md.contains("): Allowed"), "{md}");
    // A tool call with its arguments and its result.
    assert!(
        md.contains("**terminal** ` cargo test -p anchor ` → ` 58 passed;"),
        "{md}"
    );
    assert!(md.contains("- Thought: _"), "{md}");
    // Then the answers themselves, as before.
    assert!(md.contains("Done: the build directory is gone"), "{md}");
    let steps = md.find("` rm -rf target/ `").unwrap();
    let answer = md.find("Done: the build directory is gone").unwrap();
    assert!(steps < answer, "the steps come before the answer");
}

#[tokio::test]
async fn export_gives_markdown_and_the_journal_as_json_lines() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo prose").await;
    app.wait_finished(&run).await;
    let res = app
        .get_with(
            &format!("/api/session/export?session_id={session}&format=md"),
            &[],
        )
        .await;
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/markdown"));
    let disposition = res.headers()["content-disposition"].to_str().unwrap();
    // Named after the conversation (titled by what its first message, a demo command, does)
    // and its date.
    assert!(
        disposition.starts_with("attachment; filename=\"demo-a-plain-answer-in-markdown-20"),
        "{disposition}"
    );
    assert!(disposition.ends_with(".md"), "{disposition}");
    let md = res.text().await.unwrap();
    assert!(md.contains("## You\n\n/demo prose"));
    assert!(md.contains("## Assistant"));
    assert!(md.contains("demo agent"));

    let res = app
        .get_with(
            &format!("/api/session/export?session_id={session}&format=jsonl"),
            &[],
        )
        .await;
    let text = res.text().await.unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events = app.stream(&run, None).await;
    // The user's message, then the run's journal.
    assert_eq!(rows.len(), events.len() + 1);
    assert_eq!(rows[0]["type"], "user_message");
    assert_eq!(rows[0]["run_id"], run.as_str());
    assert_eq!(rows[0]["payload"]["role"], "user");
    assert_eq!(rows[0]["payload"]["content"], "/demo prose");
    for (i, row) in rows[1..].iter().enumerate() {
        assert_eq!(row["seq"], i as u64 + 1);
        assert_eq!(row["event_id"], format!("{run}:{}", i + 1));
        assert_eq!(row["payload"], events[i].data);
    }
    let (code, _) = app
        .get(&format!(
            "/api/session/export?session_id={session}&format=pdf"
        ))
        .await;
    assert_eq!(code, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_from_several_requests_while_a_run_journals_never_fail() {
    // Session deletes, renames and new sessions race the journal writer; each waits its turn
    // for the write lock instead of failing.
    let app = TestApp::builder().spawn().await;
    let busy = app.new_session().await;
    let run = app.start(&busy, "/demo long 3000").await;
    let mut codes = Vec::new();
    for i in 0..40 {
        let session = app.new_session().await;
        let (code, body) = app
            .post(
                "/api/session/rename",
                json!({"session_id": session, "title": format!("t{i}")}),
            )
            .await;
        codes.push((code, body));
        let (code, body) = app
            .post("/api/session/delete", json!({"session_id": session}))
            .await;
        codes.push((code, body));
    }
    app.wait_finished(&run).await;
    let failed: Vec<_> = codes.iter().filter(|(c, _)| *c != 200).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

#[tokio::test]
async fn a_search_hit_in_a_message_names_the_turn_it_belongs_to() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let mut runs = Vec::new();
    for word in ["alpha", "narwhal", "gamma", "narwhal again", "delta"] {
        let run = app.start(&session, &format!("/demo long 2 {word}")).await;
        app.wait_finished(&run).await;
        runs.push(run);
    }
    let turn_of = |run: &str| format!("turn-{run}");
    let (_, hits) = app.get("/api/sessions/search?q=narwhal").await;
    assert_eq!(hits["sessions"][0]["id"], session.as_str());
    // The newest message that matched.
    assert_eq!(
        hits["sessions"][0]["hit_turn_id"],
        turn_of(&runs[3]).as_str()
    );
    let (_, hits) = app.get("/api/sessions/search?q=gamma").await;
    assert_eq!(
        hits["sessions"][0]["hit_turn_id"],
        turn_of(&runs[2]).as_str()
    );
    // An answer's words lead to its turn too ("w1" is in every answer of `/demo long 2`).
    let (_, hits) = app.get("/api/sessions/search?q=w1").await;
    assert_eq!(
        hits["sessions"][0]["hit_turn_id"],
        turn_of(&runs[4]).as_str()
    );
    // A title hit names no turn; the plain list names none.
    app.post(
        "/api/session/rename",
        json!({"session_id": session, "title": "Zoology"}),
    )
    .await;
    let (_, hits) = app.get("/api/sessions/search?q=zoology").await;
    assert_eq!(hits["sessions"][0]["id"], session.as_str());
    assert!(hits["sessions"][0].get("hit_turn_id").is_none());
    let (_, list) = app.get("/api/sessions").await;
    assert!(list["sessions"][0].get("hit_turn_id").is_none());
}

#[tokio::test]
async fn a_list_and_search_results_come_a_page_at_a_time() {
    let app = TestApp::builder().spawn().await;
    let limit = server::routes::LIST_LIMIT as usize;
    for i in 0..=limit {
        let title = format!("Walrus notes {i}");
        app.store
            .create_session(&title, None, i as f64)
            .await
            .unwrap();
    }
    app.store.create_session("Other", None, 0.5).await.unwrap();
    let (code, list) = app.get("/api/sessions").await;
    assert_eq!(code, 200);
    assert_eq!(list["sessions"].as_array().unwrap().len(), limit);
    assert_eq!(list["more"], true, "the rest is a request away");
    assert_eq!(
        list["sessions"][0]["title"],
        format!("Walrus notes {limit}")
    );
    let (code, hits) = app.get("/api/sessions/search?q=walrus").await;
    assert_eq!(code, 200);
    assert_eq!(hits["sessions"].as_array().unwrap().len(), limit);
    assert_eq!(hits["more"], true);
    assert_eq!(
        hits["sessions"][0]["title"],
        format!("Walrus notes {limit}")
    );
    let (_, hits) = app.get("/api/sessions/search?q=other").await;
    assert_eq!(hits["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(hits["more"], false);
}
