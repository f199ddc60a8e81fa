//! Share links: a read-only snapshot of a conversation, whoever has the link, until revoked.

use serde_json::json;

use crate::helpers::TestApp;

/// A client that sends no cookie and follows no redirect: someone who was only given a link.
fn stranger() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// What someone who was only given the link gets for `path`.
async fn opened(app: &TestApp, path: &str) -> reqwest::Response {
    stranger().get(app.url(path)).send().await.unwrap()
}

/// The page someone who was only given the link reads at `path`.
async fn read(app: &TestApp, path: &str) -> String {
    opened(app, path).await.text().await.unwrap()
}

#[tokio::test]
async fn a_link_shows_the_conversation_without_a_script_until_revoked() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app
        .start(&session, "What is <script>alert(1)</script> doing here?")
        .await;
    app.wait_finished(&run).await;

    let (code, made) = app.post("/api/share", json!({"session_id": session})).await;
    assert_eq!(code, 200, "{made}");
    let path = made["share"]["path"].as_str().unwrap().to_owned();
    let token = path.strip_prefix("/share/").unwrap();
    // 128 random bits, URL-safe.
    assert_eq!(token.len(), 22, "{token}");
    assert!(token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));

    let res = opened(&app, &path).await;
    assert_eq!(res.status(), 200);
    let h = res.headers().clone();
    assert!(h["content-security-policy"]
        .to_str()
        .unwrap()
        .starts_with("default-src 'none'"));
    assert_eq!(h["x-robots-tag"], "noindex, nofollow");
    assert_eq!(h["referrer-policy"], "no-referrer");
    // Kept by the reader's browser, asked again each time: a strong tag answers 304.
    assert_eq!(h["cache-control"], "private, no-cache");
    let etag = h["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && !etag.starts_with("W/"), "{etag}");
    let again = stranger()
        .get(app.url(&path))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag.as_str());
    assert!(again.text().await.unwrap().is_empty());
    let html = res.text().await.unwrap();
    assert!(
        !html.contains("<script"),
        "no script, and the message escaped: {html}"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("You wrote:"), "the answer");
    assert!(html.contains("shared-work"), "a line on the work: {html}");
    assert!(html.contains("noindex"));
    // Nothing of the controls or the journal.
    for absent in ["composer", "<form", "<button", &run] {
        assert!(!html.contains(absent), "{absent} in {html}");
    }

    let (code, list) = app.get("/api/shares").await;
    assert_eq!(code, 200);
    assert_eq!(list["shares"].as_array().unwrap().len(), 1);
    assert_eq!(list["shares"][0]["path"], json!(path));
    let id = list["shares"][0]["id"].as_str().unwrap().to_owned();

    let (code, _) = app.post("/api/share/revoke", json!({"id": id})).await;
    assert_eq!(code, 200);
    let res = opened(&app, &path).await;
    assert_eq!(res.status(), 404);
    // Its tag no longer answers 304: a revoked link stops for those who kept the page.
    let kept = stranger()
        .get(app.url(&path))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), 404);
    assert!(res.text().await.unwrap().contains("revoked"));
    let (_, list) = app.get("/api/shares").await;
    assert_eq!(list["shares"], json!([]));
    // Revoked twice: no such link.
    let (code, body) = app.post("/api/share/revoke", json!({"id": id})).await;
    assert_eq!(code, 404);
    assert!(body["error"].is_string());
}

#[tokio::test]
async fn a_turn_whose_snapshot_is_not_made_yet_is_shared_with_its_line_on_the_work() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo tools").await;
    app.wait_finished(&run).await;
    // Its snapshot is made in the background once it settles: waited for, then replaced by
    // one of an older version, which is not read (as a link made in the moment between the
    // turn's end and its snapshot finds none).
    let ids = std::slice::from_ref(&run);
    for _ in 0..400 {
        let stored = app.store.snapshots(ids, server::snapshots::VERSION).await;
        if stored.unwrap().contains_key(&run) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let older = server::snapshots::VERSION - 1;
    app.store
        .put_snapshot(&run, older, r#"{"answer":"stale"}"#)
        .await
        .unwrap();
    assert!(!app
        .store
        .snapshots(ids, server::snapshots::VERSION)
        .await
        .unwrap()
        .contains_key(&run));

    let (code, made) = app.post("/api/share", json!({"session_id": session})).await;
    assert_eq!(code, 200, "{made}");
    let path = made["share"]["path"].as_str().unwrap();
    let html = read(&app, path).await;
    assert!(
        html.contains("class=\"shared-work\""),
        "a line on the work: {html}"
    );
    assert!(html.contains("tool call"), "{html}");
    // Made while sharing, and kept.
    assert!(app
        .store
        .snapshots(ids, server::snapshots::VERSION)
        .await
        .unwrap()
        .contains_key(&run));
}

#[tokio::test]
async fn a_snapshot_is_of_its_moment_and_dies_with_its_conversation() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "first words").await;
    app.wait_finished(&run).await;
    let (_, made) = app.post("/api/share", json!({"session_id": session})).await;
    let path = made["share"]["path"].as_str().unwrap().to_owned();
    // What is said after the link was made is not in it.
    let run = app.start(&session, "later words").await;
    app.wait_finished(&run).await;
    let html = read(&app, &path).await;
    assert!(html.contains("first words"));
    assert!(!html.contains("later words"));
    // Deleted: the link leads nowhere (and the list forgets it); restored, it leads again.
    let (code, _) = app
        .post("/api/session/delete", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(opened(&app, &path).await.status(), 404);
    let (_, list) = app.get("/api/shares").await;
    assert_eq!(list["shares"], json!([]));
    let (code, _) = app
        .post("/api/session/restore", json!({"session_id": session}))
        .await;
    assert_eq!(code, 200);
    assert_eq!(opened(&app, &path).await.status(), 200);
}

#[tokio::test]
async fn bad_requests_and_unknown_links_answer_json_and_html_errors() {
    let app = TestApp::builder().spawn().await;
    let (code, body) = app.post("/api/share", json!({})).await;
    assert!((400..500).contains(&code), "{code}");
    assert!(body["error"].is_string(), "{body}");
    let (code, body) = app
        .post("/api/share", json!({"session_id": "nosuchsession"}))
        .await;
    assert_eq!(code, 404);
    assert!(body["error"].is_string());
    for path in ["/share/nosuchtoken", "/share/%3Cscript%3E"] {
        let res = opened(&app, path).await;
        assert_eq!(res.status(), 404, "{path}");
        assert!(!res.text().await.unwrap().contains("<script>"));
    }
}

#[tokio::test]
async fn links_are_their_owners_and_an_account_has_a_bounded_number() {
    let app = TestApp::builder().spawn().await;
    let (alice, bob) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let (code, made) = app.post("/api/share", json!({"session_id": session})).await;
    assert_eq!(code, 200);
    let path = made["share"]["path"].as_str().unwrap().to_owned();
    let id = made["share"]["id"].as_str().unwrap().to_owned();

    // Bob neither sees nor revokes hers, nor shares her conversation.
    app.use_cookie(Some(&bob));
    let (_, list) = app.get("/api/shares").await;
    assert_eq!(list["shares"], json!([]));
    let (code, _) = app.post("/api/share/revoke", json!({"id": id})).await;
    assert_eq!(code, 404);
    let (code, _) = app.post("/api/share", json!({"session_id": session})).await;
    assert_eq!(code, 404);
    // Signed out, the link still opens.
    assert_eq!(opened(&app, &path).await.status(), 200);

    // A hundred links, then a clear refusal.
    app.use_cookie(Some(&alice));
    for _ in 1..server::routes::MAX_SHARES {
        let (code, body) = app.post("/api/share", json!({"session_id": session})).await;
        assert_eq!(code, 200, "{body}");
    }
    let (code, body) = app.post("/api/share", json!({"session_id": session})).await;
    assert_eq!(code, 429);
    assert!(
        body["error"].as_str().unwrap().contains("revoke one"),
        "{body}"
    );
    // Bob has his own allowance.
    app.use_cookie(Some(&bob));
    let own = app.new_session().await;
    let (code, _) = app.post("/api/share", json!({"session_id": own})).await;
    assert_eq!(code, 200);

    // Her account removed: her links go with it.
    app.store.remove_user("alice").await.unwrap();
    assert_eq!(opened(&app, &path).await.status(), 404);
}

#[tokio::test]
async fn a_shared_page_is_rendered_once_and_each_address_reads_within_a_limit() {
    let app = TestApp::builder()
        .configure(|state| {
            state.public_url = server::security::PublicUrl::parse("http://chat.test").ok()
        })
        .spawn()
        .await;
    // With an account (open mode answers this machine only, never a proxy's reader).
    let (alice, _) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let run = app.start(&session, "/demo code").await;
    app.wait_finished(&run).await;
    let (code, shared) = app.post("/api/share", json!({"session_id": session})).await;
    assert_eq!(code, 200, "{shared}");
    let path = shared["share"]["path"].as_str().unwrap().to_owned();
    // A reader behind the proxy, at an address of its own.
    let view = |from: &'static str| {
        stranger()
            .get(app.url(&path))
            .header("host", "chat.test")
            .header("x-forwarded-for", from)
            .send()
    };
    let first = view("203.0.113.1").await.unwrap();
    assert_eq!(first.status(), 200);
    let first = first.text().await.unwrap();
    // Rendered once, kept: the same bytes, held in the cache.
    assert!(app.state.share_pages.bytes() >= first.len());
    let limit = server::throttle::SHARE_VIEW_LIMIT;
    for _ in 1..limit {
        let res = view("203.0.113.1").await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.text().await.unwrap(), first);
    }
    assert_eq!(app.state.share_pages.bytes(), first.len(), "kept once");
    // Past the limit, that address waits; another reads on.
    let held = view("203.0.113.1").await.unwrap();
    assert_eq!(held.status(), 429);
    assert!(
        held.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert!(held.text().await.unwrap().contains("Too many views"));
    assert_eq!(view("203.0.113.2").await.unwrap().status(), 200);
}
