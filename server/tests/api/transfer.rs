//! Import and duplicate: a conversation's JSONL export read back as a new conversation of the
//! account (every branch, every id new, nothing written unless all of it is), and a copy of a
//! conversation (the branch shown, or all).

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::helpers::TestApp;

async fn finished(app: &TestApp, session: &str, message: &str) -> String {
    let run = app.start(session, message).await;
    app.wait_finished(&run).await;
    run
}

fn run_of(answer: &Value) -> String {
    answer["run_id"].as_str().unwrap().to_owned()
}

/// The ids an export names: its session's, its runs', turns', messages' and files'.
fn ids_of(jsonl: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut add = |v: &Value| {
        if let Some(id) = v.as_str() {
            if !ids.iter().any(|known| known == id) {
                ids.push(id.to_owned());
            }
        }
    };
    for line in jsonl.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        for key in ["session_id", "run_id", "turn_id"] {
            add(&row[key]);
        }
        if row["type"] == "user_message" || row["type"] == "settled_message" {
            add(&row["payload"]["id"]);
        }
        for file in row["payload"]["attachments"]
            .as_array()
            .into_iter()
            .flatten()
        {
            add(&file["id"]);
        }
    }
    ids
}

/// An export with every id it names replaced by a name in the order the ids first appear: two
/// exports of one conversation read the same whatever ids each was given.
fn canonical(jsonl: &str) -> Vec<Value> {
    let ids = ids_of(jsonl);
    let names: HashMap<&str, String> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), format!("<id{i}>")))
        .collect();
    fn walk(value: &mut Value, ids: &[String], names: &HashMap<&str, String>) {
        match value {
            Value::String(text) => {
                // Longest first: a run's id is part of its answer's id.
                let mut order: Vec<&String> = ids.iter().collect();
                order.sort_by_key(|id| std::cmp::Reverse(id.len()));
                for id in order {
                    if text.contains(id.as_str()) {
                        *text = text.replace(id.as_str(), &names[id.as_str()]);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, ids, names)),
            Value::Object(map) => map.values_mut().for_each(|v| walk(v, ids, names)),
            _ => {}
        }
    }
    jsonl
        .lines()
        .map(|line| {
            let mut row: Value = serde_json::from_str(line).unwrap();
            // The title a copy was given is its own.
            row.as_object_mut().unwrap().remove("session_title");
            walk(&mut row, &ids, &names);
            row
        })
        .collect()
}

/// Two exports read the same, row for row (the first row that differs is named).
fn assert_same_rows(is: &str, was: &str) {
    let (is, was) = (canonical(is), canonical(was));
    for (i, (a, b)) in is.iter().zip(&was).enumerate() {
        assert_eq!(a, b, "row {i} differs");
    }
    assert_eq!(is.len(), was.len(), "as many rows");
}

/// The turns a session's page shows: (user message, answer, versions "i/n").
async fn shown(app: &TestApp, session: &str) -> Vec<(String, String, String)> {
    let (code, page) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(code, 200, "{page}");
    page["session"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let v = &t["versions"];
            let versions = if v.is_null() {
                "1/1".to_owned()
            } else {
                format!("{}/{}", v["index"], v["count"])
            };
            (
                t["user"]["content"].as_str().unwrap().to_owned(),
                t["snapshot"]["answer"]
                    .as_str()
                    .or(t["answer"].as_str())
                    .unwrap_or_default()
                    .to_owned(),
                versions,
            )
        })
        .collect()
}

async fn import(app: &TestApp, path: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
    app.post_bytes(path, body).await
}

/// A conversation with a retry, an edit and a stopped turn: four branches' worth of runs.
async fn branched(app: &TestApp) -> String {
    let session = app.new_session().await;
    let a = finished(app, &session, "/demo prose").await;
    let b = finished(app, &session, "/demo tools").await;
    let (code, retried) = app.post("/api/chat/retry", json!({"run_id": b})).await;
    assert_eq!(code, 200, "{retried}");
    app.wait_finished(&run_of(&retried)).await;
    let (code, edited) = app
        .post(
            "/api/chat/edit",
            json!({"run_id": a, "message": "/demo prose, said again"}),
        )
        .await;
    assert_eq!(code, 200, "{edited}");
    app.wait_finished(&run_of(&edited)).await;
    let long = app.start(&session, "/demo long 400").await;
    crate::helpers::wait_for_event(app, &long, "token").await;
    app.post("/api/chat/cancel", json!({"run_id": long})).await;
    app.wait_finished(&long).await;
    session
}

#[tokio::test]
async fn an_import_of_an_export_is_the_same_conversation_with_every_branch_and_new_ids() {
    let app = TestApp::builder()
        .demo_delay(std::time::Duration::from_millis(5))
        .spawn()
        .await;
    let session = branched(&app).await;
    let (code, _) = app
        .post(
            "/api/session/rename",
            json!({"session_id": session, "title": "Harbour log"}),
        )
        .await;
    assert_eq!(code, 200);
    let exported = app.export(&session, "jsonl").await;

    let (code, answer) = import(
        &app,
        "/api/session/import?title=From%20a%20file",
        exported.clone(),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    let copy = answer["session"]["id"].as_str().unwrap().to_owned();
    assert_ne!(copy, session);
    assert_eq!(answer["attachments_left_out"], 0);

    // The same rows, row for row: every run of every branch, its journal, its end (a stopped
    // turn keeps its partial answer), the times; only the ids are new.
    let again = app.export(&copy, "jsonl").await;
    assert_same_rows(&again, &exported);
    let old_ids = ids_of(&exported);
    for id in ids_of(&again) {
        assert!(!old_ids.contains(&id), "id {id} was not issued afresh");
    }
    assert_eq!(
        again
            .lines()
            .filter(|l| l.contains("\"user_message\""))
            .count(),
        5
    );

    // It reads as the original: the branch shown last, the versions of each place, and a
    // version switch that brings back the other branch.
    assert_eq!(shown(&app, &copy).await, shown(&app, &session).await);
    let (_, page) = app.get(&format!("/api/page?session_id={copy}")).await;
    let first = page["session"]["turns"][0]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, body) = app
        .post("/api/chat/branch", json!({"run_id": first, "version": 1}))
        .await;
    assert_eq!(code, 200, "{body}");
    let turns = shown(&app, &copy).await;
    assert_eq!(
        turns.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
        ["/demo prose", "/demo tools"]
    );
    assert_eq!(turns[1].2, "2/2");

    // It comes first in the list, under the title it was exported with, told apart from
    // the conversation it was exported from (this account has that one still).
    let (_, list) = app.get("/api/sessions").await;
    assert_eq!(list["sessions"][0]["id"], copy.as_str());
    assert_eq!(list["sessions"][0]["title"], "Harbour log (copy)");
    // A file that names no title: the agent's, else the file's name, else the first words.
    let untitled = |keep_agent: bool| {
        exported
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("session_title");
                if !keep_agent && r["type"] == "title" {
                    r["payload"]["title"] = Value::Null;
                }
                r.to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (file, path, title) in [
        (
            untitled(true),
            "/api/session/import?title=notes",
            "Demo: a plain answer in Markdown",
        ),
        (untitled(false), "/api/session/import?title=notes", "notes"),
        (untitled(false), "/api/session/import", "/demo prose"),
        // The first words again: the import before has them, so this one is its copy.
        (untitled(false), "/api/session/import", "/demo prose (copy)"),
    ] {
        let (code, answer) = import(&app, path, file).await;
        assert_eq!(code, 200, "{answer}");
        assert_eq!(answer["session"]["title"], title, "{path}");
    }

    // It goes on like any conversation.
    let next = finished(&app, &copy, "/demo prose").await;
    let (_, run) = app
        .get(&format!("/api/chat/stream/status?run_id={next}"))
        .await;
    assert_eq!(run["terminal_state"], "completed", "{run}");

    // A second import is a second conversation.
    let (code, other) = import(&app, "/api/session/import", exported).await;
    assert_eq!(code, 200);
    assert_ne!(other["session"]["id"], copy.as_str());
}

#[tokio::test]
async fn a_bad_import_names_its_line_and_writes_nothing() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    finished(&app, &session, "/demo prose").await;
    finished(&app, &session, "/demo prose").await;
    let good = app.export(&session, "jsonl").await;
    let lines: Vec<&str> = good.lines().collect();
    let with = |at: usize, line: &str| {
        let mut l = lines.clone();
        l[at] = line;
        l.join("\n")
    };
    let row = |at: usize| serde_json::from_str::<Value>(lines[at]).unwrap();
    let edited = |at: usize, f: &dyn Fn(&mut Value)| {
        let mut r = row(at);
        f(&mut r);
        with(at, &r.to_string())
    };
    let second_user = lines
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, l)| l.contains("\"user_message\""))
        .unwrap()
        .0;
    let cases: Vec<(String, usize, &str)> = vec![
        (with(2, "{not json"), 3, "not a JSON object"),
        (
            edited(2, &|r| r["seq"] = json!(7)),
            3,
            "seq 7 where 2 was due",
        ),
        (
            edited(second_user, &|r| r["parent_run_id"] = json!("nobody")),
            second_user + 1,
            "names no run before it",
        ),
        (
            edited(1, &|r| r["run_id"] = json!("elsewhere")),
            2,
            "not after that run's user_message line",
        ),
        (
            edited(1, &|r| {
                r["type"] = json!("teleport");
                r["event"] = json!("teleport");
            }),
            2,
            "unknown event",
        ),
        (
            edited(0, &|r| r["payload"]["content"] = json!(5)),
            1,
            "content",
        ),
        (
            format!("{good}{}\n", lines[lines.len() - 1]),
            lines.len() + 1,
            "after the run's stream_end",
        ),
        (String::new(), 1, "no user_message line"),
        ("\n\n".to_owned(), 2, "no user_message line"),
    ];
    for (body, line, says) in cases {
        let (code, answer) = import(&app, "/api/session/import", body.clone()).await;
        assert_eq!(code, 400, "{says}: {answer}");
        assert_eq!(answer["line"], line, "{says}: {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(
            error.starts_with(&format!("line {line}: ")) && error.contains(says),
            "{says}: {error}"
        );
    }
    // Not text.
    let (code, answer) = import(&app, "/api/session/import", vec![0xff, 0xfe, 0x00]).await;
    assert_eq!(code, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("UTF-8"));
    // Too long a message: 413, naming the line.
    let long = edited(0, &|r| {
        r["payload"]["content"] = json!("x".repeat(70 * 1024))
    });
    let (code, answer) = import(&app, "/api/session/import", long).await;
    assert_eq!(code, 413, "{answer}");
    assert_eq!(answer["line"], 1);
    // Too large a file: 413 before it is read, whether it says its length or not.
    let huge = "x".repeat(8 * 1024 * 1024 + 1);
    let (code, answer) = import(&app, "/api/session/import", huge.clone()).await;
    assert_eq!(code, 413, "{answer}");
    assert_eq!(answer["limit"], "max_import_bytes");
    let chunks = futures::stream::iter(
        huge.into_bytes()
            .chunks(64 * 1024)
            .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
            .collect::<Vec<_>>(),
    );
    let (code, answer) = import(
        &app,
        "/api/session/import",
        reqwest::Body::wrap_stream(chunks),
    )
    .await;
    assert_eq!(code, 413, "{answer}");

    // Nothing of any of them was written: the one conversation is all there is.
    let (_, list) = app.get("/api/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1, "{list}");
    // And the file as it was still goes in.
    let (code, answer) = import(&app, "/api/session/import", good.clone()).await;
    assert_eq!(code, 200, "{answer}");

    // A file cut off inside a turn (an export taken while it ran) goes in too: that turn ends
    // interrupted, with the words it had streamed as its answer.
    let cut: Vec<&str> = lines[..lines.len() - 3].to_vec();
    let streamed: String = cut
        .iter()
        .skip(second_user)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["type"] == "token")
        .map(|r| r["payload"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(!streamed.is_empty());
    let (code, answer) = import(&app, "/api/session/import", cut.join("\n")).await;
    assert_eq!(code, 200, "{answer}");
    let copy = answer["session"]["id"].as_str().unwrap();
    let rows: Vec<Value> = app
        .export(copy, "jsonl")
        .await
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = &rows[rows.len() - 3];
    assert_eq!(end["terminal_state"], "interrupted", "{end}");
    let settled = &rows[rows.len() - 2];
    assert_eq!(settled["payload"]["content"], streamed.as_str());
    assert_eq!(settled["payload"]["partial"], true);
}

#[tokio::test]
async fn a_copy_holds_the_branch_shown_or_every_branch_and_leaves_a_running_turn_out() {
    let app = TestApp::builder()
        .demo_delay(std::time::Duration::from_millis(5))
        .spawn()
        .await;
    let session = branched(&app).await;
    let (code, _) = app
        .post(
            "/api/session/rename",
            json!({"session_id": session, "title": "Plans"}),
        )
        .await;
    assert_eq!(code, 200);
    let users = |jsonl: &str| {
        jsonl
            .lines()
            .filter(|l| l.contains("\"user_message\""))
            .count()
    };

    let (code, shown_only) = app
        .post("/api/session/duplicate", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200, "{shown_only}");
    let branch = shown_only["session"]["id"].as_str().unwrap().to_owned();
    assert_eq!(shown_only["session"]["title"], "Plans (copy)");
    // The branch shown: the edit, then the stopped turn.
    assert_eq!(users(&app.export(&branch, "jsonl").await), 2);
    assert_eq!(shown(&app, &branch).await.len(), 2);
    let original = shown(&app, &session).await;
    let copied = shown(&app, &branch).await;
    for (was, is) in original.iter().zip(&copied) {
        assert_eq!((&was.0, &was.1), (&is.0, &is.1));
        assert_eq!(is.2, "1/1", "one branch was copied");
    }

    let (code, all) = app
        .post(
            "/api/session/duplicate",
            json!({"session_id": session, "all": true}),
        )
        .await;
    assert_eq!(code, 200, "{all}");
    // The second copy is told apart from the first.
    assert_eq!(all["session"]["title"], "Plans (copy 2)");
    let every = all["session"]["id"].as_str().unwrap().to_owned();
    assert_same_rows(
        &app.export(&every, "jsonl").await,
        &app.export(&session, "jsonl").await,
    );
    assert_eq!(shown(&app, &every).await, original);

    // A turn still running is not copied; the original is left as it was.
    let running = app.start(&session, "/demo long 2000").await;
    crate::helpers::wait_for_event(&app, &running, "token").await;
    let (code, mid) = app
        .post(
            "/api/session/duplicate",
            json!({"session_id": session, "all": true}),
        )
        .await;
    assert_eq!(code, 200, "{mid}");
    let mid = mid["session"]["id"].as_str().unwrap().to_owned();
    assert_eq!(users(&app.export(&mid, "jsonl").await), 5);
    let (_, status) = app
        .get(&format!("/api/chat/stream/status?run_id={running}"))
        .await;
    assert_eq!(status["active"], true, "{status}");
    app.post("/api/chat/cancel", json!({"run_id": running}))
        .await;
    app.wait_finished(&running).await;

    // An empty conversation copies as an empty one; bad requests get clear answers.
    let empty = app.new_session().await;
    let (code, copy) = app
        .post("/api/session/duplicate", json!({"session_id": empty}))
        .await;
    assert_eq!(code, 200, "{copy}");
    assert_eq!(
        shown(&app, copy["session"]["id"].as_str().unwrap()).await,
        vec![]
    );
    let (code, _) = app
        .post("/api/session/duplicate", json!({"session_id": "nosuch"}))
        .await;
    assert_eq!(code, 404);
    let (code, answer) = app.post("/api/session/duplicate", json!({})).await;
    assert_eq!(code, 400, "{answer}");
}

#[tokio::test]
async fn an_import_carries_the_accounts_own_files_and_no_one_elses() {
    let app = TestApp::builder().spawn().await;
    let (alice, bob) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let (code, file) = app
        .upload("notes.md", b"line one\nline two\n".to_vec(), None)
        .await;
    assert_eq!(code, 201, "{file}");
    let file_id = file["attachment"]["id"].as_str().unwrap().to_owned();
    let (code, started) = app
        .post(
            "/api/chat/start",
            json!({"session_id": session, "message": "/demo prose", "attachments": [file_id]}),
        )
        .await;
    assert_eq!(code, 200, "{started}");
    app.wait_finished(&run_of(&started)).await;
    let exported = app.export(&session, "jsonl").await;

    // Hers: the file comes along, a copy of its own that serves the same bytes.
    let (code, mine) = import(&app, "/api/session/import", exported.clone()).await;
    assert_eq!(code, 200, "{mine}");
    assert_eq!(mine["attachments_left_out"], 0);
    let (_, page) = app
        .get(&format!(
            "/api/page?session_id={}",
            mine["session"]["id"].as_str().unwrap()
        ))
        .await;
    let carried = &page["session"]["turns"][0]["user"]["attachments"][0];
    assert_eq!(carried["name"], "notes.md");
    assert_ne!(carried["id"], file_id.as_str());
    let (code, bytes) = app
        .raw_get(&format!(
            "/api/attachment?id={}",
            carried["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!((code, bytes.as_str()), (200, "line one\nline two\n"));

    // Bob imports her file: the conversation is his, her file is not.
    app.use_cookie(Some(&bob));
    let (code, his) = import(&app, "/api/session/import", exported).await;
    assert_eq!(code, 200, "{his}");
    assert_eq!(his["attachments_left_out"], 1);
    let his_id = his["session"]["id"].as_str().unwrap();
    let (_, page) = app.get(&format!("/api/page?session_id={his_id}")).await;
    let turn = &page["session"]["turns"][0];
    assert_eq!(turn["user"]["content"], "/demo prose");
    assert!(
        turn["user"]["attachments"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "{turn}"
    );
    let (code, _) = app.raw_get(&format!("/api/attachment?id={file_id}")).await;
    assert_eq!(code, 404);
    // And she does not see his conversation, nor he hers.
    let (_, list) = app.get("/api/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1);
}
