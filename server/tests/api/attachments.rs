//! Attachments: uploads judged by their bytes and limited in size, count and storage; kept
//! once per account and content; carried by the message through the page, a reload, the
//! export and an edit; given to the agent (the demo names them, the openai backend sends
//! images as image parts and text files as workspace files).

use serde_json::{json, Value};

use crate::backends::{openai, say, COMPLETIONS};
use crate::helpers::TestApp;
use crate::upstream::{Reply, Upstream};

/// A small valid PNG (1×1, transparent).
fn png() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend_from_slice(&[
        0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15,
        0xc4, 0x89, 0, 0, 0, 13, b'I', b'D', b'A', b'T', 0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1,
        0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82,
    ]);
    bytes
}

const NOTES: &str = "line one\nline two\nline three\n";

async fn upload_ok(app: &TestApp, name: &str, bytes: Vec<u8>) -> Value {
    let (code, body) = app.upload(name, bytes, None).await;
    assert_eq!(code, 201, "{name}: {body}");
    body["attachment"].clone()
}

fn id(attachment: &Value) -> String {
    attachment["id"].as_str().unwrap().to_owned()
}

async fn send(app: &TestApp, session: &str, message: &str, files: &[String]) -> (u16, Value) {
    app.post(
        "/api/chat/start",
        json!({"session_id": session, "message": message, "attachments": files}),
    )
    .await
}

/// The bytes and content type `GET /api/attachment` serves.
async fn fetch(app: &TestApp, id: &str) -> (u16, String, Vec<u8>) {
    let res = app.get_with(&format!("/api/attachment?id={id}"), &[]).await;
    let code = res.status().as_u16();
    let kind = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (code, kind, res.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn files_travel_with_their_message_through_the_page_a_reload_the_export_and_an_edit() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let photo = upload_ok(&app, "holiday photo.png", png()).await;
    assert_eq!(photo["mime"], "image/png");
    assert_eq!(photo["name"], "holiday photo.png");
    assert_eq!(photo["size"], png().len());
    // Judged by the bytes, whatever the name says.
    let notes = upload_ok(&app, "../notes.md", NOTES.as_bytes().to_vec()).await;
    assert_eq!(notes["mime"], "text/plain");
    assert_eq!(notes["name"], "notes.md");

    let files = [id(&photo), id(&notes)];
    let (code, started) = send(&app, &session, "What do you make of these?", &files).await;
    assert_eq!(code, 200, "{started}");
    let carried = &started["user_message"]["attachments"];
    assert_eq!(carried[0]["id"], photo["id"]);
    assert_eq!(carried[1]["name"], "notes.md");
    let run = started["run_id"].as_str().unwrap().to_owned();
    assert_eq!(app.wait_finished(&run).await["terminal_state"], "completed");

    // The demo agent says what arrived, by name and size.
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    let answer = s["session"]["messages"][1]["content"].as_str().unwrap();
    assert!(answer.contains("I received 2 files"), "{answer}");
    let size = png().len();
    assert!(
        answer.contains(&format!("`holiday photo.png`: PNG image, {size} B")),
        "{answer}"
    );
    assert!(
        answer.contains("`notes.md`: text, 3 lines, 29 B"),
        "{answer}"
    );

    // The page (what a reload renders) shows them on the user's message.
    let (_, page) = app.get(&format!("/api/page?session_id={session}")).await;
    let user = &page["session"]["turns"][0]["user"];
    assert_eq!(user["attachments"].as_array().unwrap().len(), 2);
    assert_eq!(user["attachments"][0]["name"], "holiday photo.png");

    // Served as they were sent: the image as an image, the text as plain text.
    let (code, kind, bytes) = fetch(&app, &id(&photo)).await;
    assert_eq!((code, kind.as_str(), bytes), (200, "image/png", png()));
    let (code, kind, bytes) = fetch(&app, &id(&notes)).await;
    assert_eq!(code, 200);
    assert_eq!(kind, "text/plain; charset=utf-8");
    assert_eq!(bytes, NOTES.as_bytes());

    // Exported: linked from the Markdown, listed in the JSON lines.
    let md = app.export(&session, "md").await;
    assert!(
        md.contains(&format!(
            "- Attached: [holiday photo.png](/api/attachment?id={}) (image/png, {size} B)",
            id(&photo)
        )),
        "{md}"
    );
    let jsonl = app.export(&session, "jsonl").await;
    let first: Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    assert_eq!(first["payload"]["attachments"][1]["name"], "notes.md");
    assert_eq!(first["payload"]["attachments"][1]["size"], 29);

    // A file goes with one message: sending it again is refused, and nothing starts.
    let (code, refused) = send(&app, &session, "again", &files[..1]).await;
    assert_eq!(code, 400, "{refused}");
    assert!(refused["error"]
        .as_str()
        .unwrap()
        .contains("was sent already"));
    assert_eq!(refused["attachment"], photo["id"]);

    // An edit keeps the files of the message it replaces.
    let (code, edited) = app
        .post(
            "/api/chat/edit",
            json!({"run_id": run, "message": "And now?"}),
        )
        .await;
    assert_eq!(code, 200, "{edited}");
    let kept = edited["user_message"]["attachments"].as_array().unwrap();
    assert_eq!(kept.len(), 2);
    assert_ne!(kept[0]["id"], photo["id"]);
    assert_eq!(kept[0]["name"], "holiday photo.png");
    let (_, _, bytes) = fetch(&app, kept[0]["id"].as_str().unwrap()).await;
    assert_eq!(bytes, png());
}

#[tokio::test]
async fn a_message_of_files_alone_is_answered_and_named_after_its_first_file() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let notes = upload_ok(&app, "report.txt", b"done".to_vec()).await;
    let (code, started) = send(&app, &session, "  ", &[id(&notes)]).await;
    assert_eq!(code, 200, "{started}");
    let run = started["run_id"].as_str().unwrap();
    assert_eq!(app.wait_finished(run).await["terminal_state"], "completed");
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(s["session"]["title"], "report.txt");
    // With neither text nor files, a message is still refused.
    let (code, body) = send(&app, &session, " ", &[]).await;
    assert_eq!(code, 400, "{body}");
}

#[tokio::test]
async fn limits_and_refused_types_are_clear_json_errors_and_keep_nothing() {
    let app = TestApp::builder()
        .configure(|state| {
            state.limits.max_attachment_bytes = 1024;
            state.limits.max_attachment_storage = 2500;
        })
        .spawn()
        .await;
    let session = app.new_session().await;

    // Too large, told by its length…
    let (code, body) = app.upload("big.txt", vec![b'a'; 1025], None).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(body["limit"], "max_attachment_bytes");
    assert!(body["error"].as_str().unwrap().contains("1.0 KB"), "{body}");
    // …or streamed without one.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..4).map(|_| Ok(vec![b'b'; 400])).collect();
    let res = app
        .client
        .post(app.url("/api/attachments?name=stream.txt"))
        .header("content-type", "application/octet-stream")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);
    assert_eq!(
        res.json::<Value>().await.unwrap()["limit"],
        "max_attachment_bytes"
    );

    // Types judged by the bytes: a PDF or a program is refused, whatever its name.
    let (code, body) = app
        .upload(
            "paper.txt",
            b"%PDF-1.7\n\xe2\xe3\xcf\xd3 binary".to_vec(),
            None,
        )
        .await;
    assert_eq!(code, 415, "{body}");
    assert!(body["error"].as_str().unwrap().contains("images"), "{body}");
    let (code, body) = app.upload("empty.txt", Vec::new(), None).await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = app
        .upload("x.txt", b"x".to_vec(), Some("nosuchsession"))
        .await;
    assert_eq!(code, 404, "{body}");
    let res = app
        .client
        .post(app.url("/api/attachments"))
        .header("content-type", "application/octet-stream")
        .body("no name")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    assert!(res.json::<Value>().await.unwrap()["error"].is_string());
    // A form (which any site can send) is refused before anything is kept.
    let res = app
        .client
        .post(app.url("/api/attachments?name=form.txt"))
        .header("content-type", "text/plain")
        .body("from another site")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);

    // The account's storage: the same content twice is kept once; new content past the
    // limit is refused.
    let one = upload_ok(&app, "a.txt", vec![b'1'; 1000]).await;
    let again = upload_ok(&app, "copy of a.txt", vec![b'1'; 1000]).await;
    assert_ne!(id(&one), id(&again));
    let two = upload_ok(&app, "b.txt", vec![b'2'; 1000]).await;
    let (code, body) = app.upload("c.txt", vec![b'3'; 1000], None).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(body["limit"], "max_attachment_storage");

    // At most eight per message; each listed once; ids that are not the account's refused.
    let many: Vec<String> = (0..9).map(|i| format!("att-{i}")).collect();
    let (code, body) = send(&app, &session, "hi", &many).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["limit"], "max_attachments_per_message");
    let (code, body) = send(&app, &session, "hi", &[id(&one), id(&one)]).await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = send(&app, &session, "hi", &["att-nosuch".to_owned()]).await;
    assert_eq!(code, 400, "{body}");
    // Nothing was started by any of those.
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(s["session"]["messages"].as_array().unwrap().len(), 0);

    // Uploads never sent go after a day, and their bytes with the last one naming them:
    // the storage is free again.
    let later = server::clock::now() + 2.0 * 24.0 * 3600.0;

    let purged = app.store.purge_attachments(later).await.unwrap();
    assert_eq!(purged, 3);
    let (code, _, _) = fetch(&app, &id(&two)).await;
    assert_eq!(code, 404);
    upload_ok(&app, "c.txt", vec![b'3'; 1000]).await;
    upload_ok(&app, "d.txt", vec![b'4'; 1000]).await;
}

#[tokio::test]
async fn the_files_of_a_purged_conversation_go_with_it() {
    let app = TestApp::builder()
        .configure(|state| state.limits.max_attachment_storage = 1500)
        .spawn()
        .await;
    let session = app.new_session().await;
    let file = upload_ok(&app, "a.txt", vec![b'a'; 1000]).await;
    let (code, started) = send(&app, &session, "keep this", &[id(&file)]).await;
    assert_eq!(code, 200, "{started}");
    app.wait_finished(started["run_id"].as_str().unwrap()).await;
    let (code, body) = app.upload("b.txt", vec![b'b'; 1000], None).await;
    assert_eq!(code, 413, "{body}");
    // Deleted: gone at once for the reader, and with the purge for good.
    let (code, _) = app
        .post("/api/session/delete", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(fetch(&app, &id(&file)).await.0, 404);

    app.store
        .purge_deleted(server::clock::now() + 1.0)
        .await
        .unwrap();
    upload_ok(&app, "b.txt", vec![b'b'; 1000]).await;
}

#[tokio::test]
async fn files_kept_with_no_account_count_for_the_admin_who_adopts_them() {
    let app = TestApp::builder()
        .configure(|state| state.limits.max_attachment_storage = 1500)
        .spawn()
        .await;
    upload_ok(&app, "open.txt", vec![b'o'; 1000]).await;
    app.add_user("alice", crate::helpers::ALICE_PASSWORD, true)
        .await;
    let alice = app.sign_in("alice", crate::helpers::ALICE_PASSWORD).await;
    app.use_cookie(Some(&alice));
    // Her storage holds the adopted file: another 1000 bytes are past the limit.
    let (code, body) = app.upload("mine.txt", vec![b'm'; 1000], None).await;
    assert_eq!(code, 413, "{body}");
    // The same content again is kept once, so it fits.
    upload_ok(&app, "open again.txt", vec![b'o'; 1000]).await;
    upload_ok(&app, "small.txt", vec![b's'; 400]).await;
}

#[tokio::test]
async fn one_accounts_files_are_not_anothers() {
    let app = TestApp::builder().spawn().await;
    let (alice, bob) = app.two_users(true).await;
    app.use_cookie(Some(&alice));
    let hers = upload_ok(&app, "secret.txt", b"alice only".to_vec()).await;

    app.use_cookie(Some(&bob));
    let session = app.new_session().await;
    assert_eq!(fetch_as(&app, &bob, &id(&hers)).await, 404);
    let (code, body) = send(&app, &session, "mine now", &[id(&hers)]).await;
    assert_eq!(code, 400, "{body}");
    // The same bytes uploaded by bob are his own file.
    let his = upload_ok(&app, "secret.txt", b"alice only".to_vec()).await;
    assert_ne!(id(&his), id(&hers));
    let (code, body) = send(&app, &session, "mine", &[id(&his)]).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(fetch_as(&app, &alice, &id(&his)).await, 404);
}

async fn fetch_as(app: &TestApp, cookie: &str, id: &str) -> u16 {
    app.get_with(&format!("/api/attachment?id={id}"), &[("cookie", cookie)])
        .await
        .status()
        .as_u16()
}

#[tokio::test]
async fn openai_gets_images_as_image_parts_and_text_files_in_the_workspace() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    upstream.script(
        COMPLETIONS,
        say("A tiny transparent square, and three lines."),
    );
    let app = TestApp::builder()
        .adapter(openai(&upstream, ws.path(), 4))
        .spawn()
        .await;
    let session = app.new_session().await;
    let photo = upload_ok(&app, "dot.png", png()).await;
    let notes = upload_ok(&app, "notes.txt", NOTES.as_bytes().to_vec()).await;
    let (code, started) = send(&app, &session, "Describe these", &[id(&photo), id(&notes)]).await;
    assert_eq!(code, 200, "{started}");
    let run = started["run_id"].as_str().unwrap().to_owned();
    assert_eq!(app.wait_finished(&run).await["terminal_state"], "completed");

    let request = &upstream.requests(COMPLETIONS)[0].body;
    let user = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(user["role"], "user");
    let parts = user["content"].as_array().unwrap();
    let text = parts[0]["text"].as_str().unwrap();
    // Where the file's content puts it (a retry finds it there again).
    use sha2::Digest as _;
    let digest = hex::encode(sha2::Sha256::digest(NOTES.as_bytes()));
    let placed = format!("attachments/{}/notes.txt", &digest[..16]);
    assert!(
        text.starts_with("Describe these\n\nAttached files:"),
        "{text}"
    );
    assert!(
        text.contains(&format!("in the workspace at `{placed}`")),
        "{text}"
    );
    let image = parts
        .iter()
        .find(|p| p["type"] == "image_url")
        .expect("an image part");
    use base64::Engine as _;
    let url = image["image_url"]["url"].as_str().unwrap();
    let encoded = url.strip_prefix("data:image/png;base64,").expect(url);
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap(),
        png()
    );
    // The text file is where the message says: the agent's read_file finds it.
    assert_eq!(
        std::fs::read_to_string(ws.path().join(&placed)).unwrap(),
        NOTES
    );
}

#[tokio::test]
async fn a_model_that_refuses_images_is_asked_again_with_their_names_and_remembered() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    upstream.script(
        COMPLETIONS,
        Reply::Json(
            400,
            json!({"error": {"message": "image input is not supported by this model"}}),
        ),
    );
    upstream.script(COMPLETIONS, say("I cannot see it."));
    upstream.script(COMPLETIONS, say("Still cannot."));
    let app = TestApp::builder()
        .adapter(openai(&upstream, ws.path(), 4))
        .spawn()
        .await;
    let session = app.new_session().await;
    let photo = upload_ok(&app, "dot.png", png()).await;
    let (_, started) = send(&app, &session, "What is this?", &[id(&photo)]).await;
    let run = started["run_id"].as_str().unwrap().to_owned();
    assert_eq!(app.wait_finished(&run).await["terminal_state"], "completed");
    let asked = upstream.requests(COMPLETIONS);
    assert_eq!(asked.len(), 2);
    let retried = asked[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let content = retried["content"].as_str().expect("text only");
    assert!(
        content.contains(&format!("dot.png ({} B): an image", png().len())),
        "{content}"
    );
    assert!(
        content.contains("this model does not take images"),
        "{content}"
    );
    // The next turn (the image is in its history) goes without images at once.
    let run2 = app.start(&session, "And now?").await;
    assert_eq!(
        app.wait_finished(&run2).await["terminal_state"],
        "completed"
    );
    let asked = upstream.requests(COMPLETIONS);
    assert_eq!(asked.len(), 3);
    assert!(!asked[2].body.to_string().contains("image_url"));
}

#[tokio::test]
async fn a_queued_follow_up_shows_its_files_and_carries_them_when_it_starts() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo approval").await;
    let approval = crate::helpers::wait_for_event(&app, &run, "approval").await;
    let notes = upload_ok(&app, "later.txt", b"for later".to_vec()).await;
    let (code, queued) = app
        .post(
            "/api/chat/queue",
            json!({"session_id": session, "message": "", "attachments": [id(&notes)], "client_id": "c-q1"}),
        )
        .await;
    assert_eq!(code, 200, "{queued}");
    assert_eq!(queued["queued"], true);
    let (_, page) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(
        page["session"]["queued"][0]["attachments"][0]["name"],
        "later.txt"
    );

    // The running turn ends; the follow-up starts with its file.
    let (code, _) = app
        .post(
            "/api/approval/respond",
            json!({"run_id": run, "approval_id": approval.data["approval_id"], "choice": "deny"}),
        )
        .await;
    assert_eq!(code, 200);
    app.wait_finished(&run).await;
    let mut carried = Value::Null;
    for _ in 0..100 {
        let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
        if let Some(m) = s["session"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["client_id"] == "c-q1")
        {
            carried = m["attachments"].clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(carried[0]["id"], notes["id"]);
}
