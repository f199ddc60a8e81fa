//! Accounts: the gate, signing in and out, tokens, the throttle, isolation between users, and
//! the `server user` commands.

use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::helpers::{wait_for_event, TestApp};

use crate::helpers::{ALICE_PASSWORD as ALICE_PW, BOB_PASSWORD as BOB_PW};

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn status_of(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_first_account_closes_open_mode_and_the_first_admin_adopts_its_conversations() {
    let app = TestApp::builder().spawn().await;
    // Open mode: no sign-in.
    let open_session = app.new_session().await;
    let (code, me) = app.get("/api/auth/me").await;
    assert_eq!((code, me["open"].clone()), (401, json!(true)));
    // A link shared in open mode.
    let (code, shared) = app
        .post("/api/share", json!({"session_id": open_session}))
        .await;
    assert_eq!(code, 200, "{shared}");
    let open_share = shared["share"]["id"].as_str().unwrap().to_owned();

    app.add_user("alice", ALICE_PW, true).await;
    let client = no_redirects();
    // Every API route answers 401 JSON.
    for (method, path) in server::routes::api_routes() {
        let req = match method {
            "GET" => client.get(app.url(path)),
            _ => client.post(app.url(path)).json(&json!({})),
        };
        let (code, body) = status_of(req.send().await.unwrap()).await;
        assert_eq!(code, 401, "{method} {path}");
        assert!(body["error"].is_string(), "{method} {path}: {body}");
    }
    // The pages send the browser to sign in, and back after.
    for (path, location) in [
        ("/", "/login?next=/"),
        ("/new", "/login?next=/new"),
        ("/s/abc?x=1", "/login?next=/s/abc%3Fx%3D1"),
    ] {
        let res = client.get(app.url(path)).send().await.unwrap();
        assert_eq!(res.status(), 303, "{path}");
        assert_eq!(res.headers()["location"], location, "{path}");
    }
    // What stays open.
    for path in ["/healthz", "/login", "/pkg/anchorage.css"] {
        let res = client.get(app.url(path)).send().await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
    }
    let form = client
        .get(app.url("/login?next=/s/abc"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // The form posts to its own address: a failed sign-in shows it again there.
    assert!(form.contains(r#"<form class="login-form" method="post" action="/login""#));
    assert!(form.contains(r#"name="next" value="/s/abc""#));

    // The first admin owns what was made before.
    let alice = app.sign_in("alice", ALICE_PW).await;
    app.use_cookie(Some(&alice));
    let (code, sessions) = app.get("/api/sessions").await;
    assert_eq!(code, 200);
    assert_eq!(sessions["sessions"][0]["id"], json!(open_session));
    let (code, me) = app.get("/api/auth/me").await;
    assert_eq!(
        (code, &me["user"]),
        (200, &json!({"name": "alice", "admin": true}))
    );
    // The tag her pages carry (see `auth::account_tag`): opaque, not her name or id.
    let tag = me["account"].as_str().unwrap();
    assert_eq!(tag.len(), 16, "{me}");
    assert!(!tag.contains("alice"));
    // The link shared in open mode is hers now: listed, and hers to revoke.
    let (code, shares) = app.get("/api/shares").await;
    assert_eq!(code, 200);
    assert_eq!(shares["shares"][0]["id"], json!(open_share), "{shares}");
    let (code, _) = app
        .post("/api/share/revoke", json!({"id": open_share}))
        .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn signing_in_and_out() {
    let app = TestApp::builder().spawn().await;
    app.add_user("alice", ALICE_PW, false).await;
    let client = no_redirects();
    let login = |body: Value| client.post(app.url("/api/auth/login")).json(&body).send();
    // One answer for a wrong password and an unknown name.
    let (code, wrong) = status_of(
        login(json!({"username": "alice", "password": "not-her-password"}))
            .await
            .unwrap(),
    )
    .await;
    let (code2, unknown) = status_of(
        login(json!({"username": "mallory", "password": ALICE_PW}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((code, code2), (401, 401));
    assert_eq!(wrong, unknown);
    let (code, _) = status_of(login(json!({"username": "alice"})).await.unwrap()).await;
    assert_eq!(code, 401, "no password");
    let (code, _) = status_of(
        client
            .post(app.url("/api/auth/login"))
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(code, 400);

    let res = login(json!({"username": "ALICE", "password": ALICE_PW}))
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "names are matched without case");
    let set = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    for part in ["anchorage_session=", "HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(set.contains(part), "{set}");
    }
    assert!(!set.contains("Secure"), "plain http on loopback: {set}");
    let token = set.split(';').next().unwrap().to_owned();
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"user": {"name": "alice", "admin": false}})
    );
    // The database has the token's hash, never the token.
    let raw = token.split_once('=').unwrap().1;
    assert_eq!(raw.len(), 64);
    assert!(app
        .store
        .token_user(raw, server::clock::now())
        .await
        .unwrap()
        .is_none());
    assert!(app
        .store
        .token_user(&server::auth::token_hash(raw), server::clock::now())
        .await
        .unwrap()
        .is_some());

    app.use_cookie(Some(&token));
    assert_eq!(app.get("/api/auth/me").await.0, 200);
    assert_eq!(app.post("/api/auth/logout", json!({})).await.0, 200);
    // Revoked on the server: the same cookie no longer works.
    assert_eq!(app.get("/api/auth/me").await.0, 401);
    assert_eq!(app.get("/api/sessions").await.0, 401);

    // The sign-in form: a post from this site goes on to `next`, a foreign `next` goes home.
    let origin = format!("http://{}", app.addr);
    for (next, expect) in [
        ("/s/abc", "/s/abc"),
        ("//evil.example/x", "/"),
        ("https://evil.example", "/"),
    ] {
        let res = client
            .post(app.url("/login"))
            .header("origin", &origin)
            .form(&[
                ("username", "alice"),
                ("password", ALICE_PW),
                ("next", next),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 303, "{next}");
        assert_eq!(res.headers()["location"], expect, "{next}");
        assert!(res.headers().contains_key("set-cookie"));
    }
    // A wrong password in the form shows the form again, with the name kept.
    let res = client
        .post(app.url("/login"))
        .header("origin", &origin)
        .form(&[
            ("username", "alice"),
            ("password", "wrong-password"),
            ("next", "/"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let page = res.text().await.unwrap();
    assert!(page.contains("wrong name or password"));
    assert!(page.contains(r#"value="alice""#));
    // A form from another site is refused, at either address.
    for path in ["/login", "/api/auth/login"] {
        let res = client
            .post(app.url(path))
            .header("origin", "https://evil.example")
            .form(&[("username", "alice"), ("password", ALICE_PW)])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{path}");
    }
}

#[tokio::test]
async fn a_new_password_or_a_removed_account_signs_out_everywhere() {
    let app = TestApp::builder().spawn().await;
    app.add_user("alice", ALICE_PW, false).await;
    app.add_user("bob", BOB_PW, false).await;
    let first = app.sign_in("alice", ALICE_PW).await;
    let second = app.sign_in("alice", ALICE_PW).await;
    let bob = app.sign_in("bob", BOB_PW).await;
    let hash = server::auth::hash_password("another-password").unwrap();
    app.store.set_password("alice", &hash).await.unwrap();
    for cookie in [&first, &second] {
        app.use_cookie(Some(cookie));
        assert_eq!(app.get("/api/auth/me").await.0, 401);
    }
    app.use_cookie(Some(&bob));
    assert_eq!(
        app.get("/api/auth/me").await.0,
        200,
        "others stay signed in"
    );
    app.use_cookie(None);
    let alice = app.sign_in("alice", "another-password").await;
    app.store.remove_user("alice").await.unwrap();
    app.use_cookie(Some(&alice));
    assert_eq!(app.get("/api/auth/me").await.0, 401);
}

#[tokio::test]
async fn tokens_expire_and_use_moves_the_expiry() {
    let app = TestApp::builder().spawn().await;
    app.add_user("alice", ALICE_PW, false).await;
    let (user, _) = app.store.user_credentials("alice").await.unwrap();
    let now = server::clock::now();
    let day = 86_400.0;
    let stale = server::auth::new_token();
    let sign_in = |token: &str, at: f64, until: f64| server::store::NewSignIn {
        token_hash: server::auth::token_hash(token),
        user_id: user.id.clone(),
        now: at,
        expires_at: until,
        ip: "127.0.0.1".into(),
        agent: String::new(),
        passkey_id: None,
    };
    app.store
        .create_token(&sign_in(&stale, now - 31.0 * day, now - 1.0))
        .await
        .unwrap();
    app.use_cookie(Some(&format!("anchorage_session={stale}")));
    assert_eq!(app.get("/api/auth/me").await.0, 401, "expired");

    let aging = server::auth::new_token();
    let hash = server::auth::token_hash(&aging);
    app.store
        .create_token(&sign_in(&aging, now - 20.0 * day, now + 10.0 * day))
        .await
        .unwrap();
    let res = app
        .client
        .get(app.url("/api/auth/me"))
        .header("cookie", format!("anchorage_session={aging}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let set = res.headers()["set-cookie"].to_str().unwrap();
    assert!(
        set.starts_with(&format!("anchorage_session={aging};")),
        "{set}"
    );
    assert!(set.contains("Max-Age=2592000"), "{set}");
    let (_, expires) = app
        .store
        .token_user(&hash, server::clock::now())
        .await
        .unwrap()
        .unwrap();
    assert!(expires > now + 29.0 * day, "slid to 30 days from now");
    // Used again at once: nothing to move, no cookie.
    let res = app
        .client
        .get(app.url("/api/auth/me"))
        .header("cookie", format!("anchorage_session={aging}"))
        .send()
        .await
        .unwrap();
    assert!(!res.headers().contains_key("set-cookie"));
}

#[tokio::test]
async fn failed_sign_ins_are_throttled_per_name_and_per_address() {
    let app = TestApp::builder().spawn().await;
    app.add_user("alice", ALICE_PW, false).await;
    app.add_user("bob", BOB_PW, false).await;
    let login = |name: &str, password: &str| {
        app.client
            .post(app.url("/api/auth/login"))
            .json(&json!({"username": name, "password": password}))
            .send()
    };
    for _ in 0..5 {
        assert_eq!(
            login("alice", "wrong-password").await.unwrap().status(),
            401
        );
    }
    // The sixth within a minute is refused before the password is looked at, even a right one.
    let res = login("alice", ALICE_PW).await.unwrap();
    assert_eq!(res.status(), 429);
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(res.json::<Value>().await.unwrap()["error"].is_string());
    // The address made those five failures too: another name from it waits as well.
    assert_eq!(login("bob", BOB_PW).await.unwrap().status(), 429);
}

/// What bob does with one of alice's ids, and what he must get.
struct Case {
    method: &'static str,
    path: String,
    body: Value,
    expect: Expect,
}

enum Expect {
    /// Exactly what an unknown id gets.
    NotFound,
    /// Exactly what an unknown id gets, whatever that is (a resume with nothing to resume).
    AsUnknown,
    /// 200 and a stream of a turn of his own: none of hers in it, nothing of hers changed
    /// (a name of hers that he uses names a conversation of his).
    OwnTurn,
    /// 200, and none of alice's ids or titles in the body.
    NothingOfHers,
    /// Refused (4xx), and none of alice's ids or titles in the body.
    Refused,
}

#[tokio::test]
async fn another_users_ids_answer_as_unknown_ids_on_every_route() {
    let app = TestApp::builder().spawn().await;
    let (alice, bob) = app.two_users(true).await;

    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let (code, _) = app
        .post(
            "/api/session/rename",
            json!({"session_id": session, "title": "Alice's secret plans"}),
        )
        .await;
    assert_eq!(code, 200);
    let run = app.start(&session, "/demo approval").await;
    let approval = wait_for_event(&app, &run, "approval").await;
    let approval_id = approval.data["approval_id"].as_str().unwrap().to_owned();
    // A standing permission of hers, in that session.
    let alice_id = app
        .store
        .users()
        .await
        .unwrap()
        .into_iter()
        .find(|u| u.name == "alice")
        .unwrap()
        .id;
    app.store
        .add_grant(Some(&alice_id), Some(&session), "rm -rf", 0.0)
        .await
        .unwrap();
    let grant = app.store.grants(Some(&alice_id), 10).await.unwrap()[0]
        .id
        .clone();
    // A file of hers, not sent yet.
    let (code, up) = app
        .upload("plans.txt", b"the secret plans".to_vec(), None)
        .await;
    assert_eq!(code, 201, "{up}");
    let file = up["attachment"]["id"].as_str().unwrap().to_owned();
    // A share link of hers.
    let (code, shared) = app.post("/api/share", json!({"session_id": session})).await;
    assert_eq!(code, 200, "{shared}");
    let share = shared["share"]["id"].as_str().unwrap().to_owned();
    // A ceremony of hers in progress, and a passkey of hers.
    let ceremony = {
        let (code, start) = app
            .post_local(Some(&alice), "/api/passkeys/register/start", json!({}))
            .await;
        assert_eq!(code, 200, "{start}");
        start["ceremony"].as_str().unwrap().to_owned()
    };
    app.store
        .add_passkey(
            &crate::helpers::stored_passkey(&alice_id, "passkey-hers", "Alice's secret plans"),
            20,
        )
        .await
        .unwrap();
    // Her sign-in, as Settings names it.
    let her_sign_in = server::auth::token_hash(alice.split_once('=').unwrap().1)[..16].to_owned();

    app.use_cookie(Some(&bob));
    let own = app.new_session().await;
    let q = |path: &str| path.to_owned();
    let cases: Vec<Case> = vec![
        Case {
            method: "POST",
            path: q("/api/session/new"),
            body: json!({"title": "Bob's"}),
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "GET",
            path: q("/api/sessions"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "GET",
            path: format!("/api/session?session_id={session}"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/session/rename"),
            body: json!({"session_id": session, "title": "pwned"}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/session/delete"),
            body: json!({"session_id": session}),
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: q("/api/sessions/search?q=secret"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "GET",
            path: format!("/api/session/export?session_id={session}&format=jsonl"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        // Each account's own workspace (this server's demo agent keeps none: 404 for all);
        // one account's files never reach another: `workspace::each_account_reads_…`.
        Case {
            method: "GET",
            path: q("/api/workspace"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: q("/api/workspace/file?path=notes.md"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/session/duplicate"),
            body: json!({"session_id": session, "all": true}),
            expect: Expect::NotFound,
        },
        // An import writes a conversation of the viewer's own (what it may carry of her files
        // is `transfer::an_import_carries_the_accounts_own_files_and_no_one_elses`).
        Case {
            method: "POST",
            path: q("/api/session/import"),
            body: json!({}),
            expect: Expect::Refused,
        },
        Case {
            method: "POST",
            path: format!("/api/attachments?name=x.txt&session_id={session}"),
            body: json!({}),
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: format!("/api/attachment?id={file}"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/chat/start"),
            body: json!({"session_id": session, "message": "hi"}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/chat/cancel"),
            body: json!({"run_id": run}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/chat/queue"),
            body: json!({"session_id": session, "message": "hi"}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/chat/retry"),
            body: json!({"run_id": run}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/chat/edit"),
            body: json!({"run_id": run, "message": "hi"}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/chat/branch"),
            body: json!({"run_id": run, "version": 1}),
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: format!("/api/chat/stream?run_id={run}"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: format!("/api/chat/stream/status?run_id={run}"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/approval/respond"),
            body: json!({"run_id": run, "approval_id": approval_id, "choice": "always"}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/clarify/respond"),
            body: json!({"run_id": run, "clarify_id": approval_id, "response": "x"}),
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: format!("/api/chat/journal?run_id={run}"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: format!("/api/page?session_id={session}"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "POST",
            path: q("/api/session/restore"),
            body: json!({"session_id": session}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/session/pin"),
            body: json!({"session_id": session, "on": true}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/session/archive"),
            body: json!({"session_id": session, "on": true}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/session/model"),
            body: json!({"session_id": session, "model": null}),
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: format!("/api/session/context?session_id={session}&draft_bytes=10"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: q("/api/grants"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "POST",
            path: q("/api/grants/revoke"),
            body: json!({"id": grant}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/share"),
            body: json!({"session_id": session}),
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: q("/api/shares"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "POST",
            path: q("/api/share/revoke"),
            body: json!({"id": share}),
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: q("/api/passkeys"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "POST",
            path: q("/api/passkeys/register/start"),
            body: json!({}),
            expect: Expect::Refused,
        },
        Case {
            method: "POST",
            path: q("/api/passkeys/register/finish"),
            body: json!({"ceremony": ceremony, "credential": {}}),
            expect: Expect::Refused,
        },
        Case {
            method: "POST",
            path: q("/api/passkeys/remove"),
            body: json!({"id": "passkey-hers"}),
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: format!("/api/artifact?run_id={run}&seq=1"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/passkeys/rename"),
            body: json!({"id": "passkey-hers", "name": "Mine now"}),
            expect: Expect::NotFound,
        },
        Case {
            method: "GET",
            path: q("/api/models"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "POST",
            path: q("/api/agui"),
            body: json!({"threadId": session, "runId": "bob-1",
                         "messages": [{"id": "b1", "role": "user", "content": "hi"}]}),
            expect: Expect::OwnTurn,
        },
        Case {
            method: "GET",
            path: format!("/api/runs/{run}/agui"),
            body: Value::Null,
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/ai-sdk/chat"),
            body: json!({"id": session, "messages": [{"id": "b2", "role": "user",
                         "parts": [{"type": "text", "text": "hi"}]}]}),
            expect: Expect::OwnTurn,
        },
        Case {
            method: "GET",
            path: format!("/api/ai-sdk/chat/{session}/stream"),
            body: Value::Null,
            expect: Expect::AsUnknown,
        },
        Case {
            method: "GET",
            path: q("/api/auth/me"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "GET",
            path: q("/api/storage"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "POST",
            path: q("/api/auth/confirm"),
            body: json!({"password": ALICE_PW}),
            expect: Expect::Refused,
        },
        Case {
            method: "POST",
            path: q("/api/auth/confirm/passkey"),
            body: json!({"ceremony": ceremony, "credential": {}}),
            expect: Expect::Refused,
        },
        Case {
            method: "GET",
            path: q("/api/auth/sign-ins"),
            body: Value::Null,
            expect: Expect::NothingOfHers,
        },
        Case {
            method: "POST",
            path: q("/api/auth/sign-ins/end"),
            body: json!({"id": her_sign_in}),
            expect: Expect::NotFound,
        },
        Case {
            method: "POST",
            path: q("/api/auth/logout"),
            body: json!({}),
            expect: Expect::NothingOfHers,
        },
        // Signed in again first (the case before signed him out).
        Case {
            method: "POST",
            path: q("/api/auth/sign-ins/end-all"),
            body: json!({}),
            expect: Expect::NothingOfHers,
        },
    ];
    // Every gated route has a case: a route added without one fails here. A `{param}` of a
    // route's path stands for any one segment.
    let matches = |route: &str, path: &str| {
        let path = path.split('?').next().unwrap();
        let (r, p): (Vec<&str>, Vec<&str>) =
            (route.split('/').collect(), path.split('/').collect());
        r.len() == p.len()
            && r.iter()
                .zip(&p)
                .all(|(r, p)| r == p || (r.starts_with('{') && r.ends_with('}')))
    };
    for (method, route) in server::routes::api_routes() {
        assert!(
            cases
                .iter()
                .any(|c| c.method == method && matches(route, &c.path)),
            "{method} {route} has no isolation case: add one (and an owner check to the route)"
        );
    }
    let her_messages = app.store.messages(&session).await.unwrap().len();

    for case in &cases {
        if case.path == "/api/auth/sign-ins/end-all" {
            let bob = app.sign_in("bob", BOB_PW).await;
            app.use_cookie(Some(&bob));
        }
        let (code, body) = match case.method {
            "GET" => app.get(&case.path).await,
            _ => app.post(&case.path, case.body.clone()).await,
        };
        match case.expect {
            Expect::NotFound => {
                // The same call with an id nobody has.
                let unknown_path = case
                    .path
                    .replace(&session, "nosuchsession")
                    .replace(&run, "nosuchrun");
                let unknown_body: Value = serde_json::from_str(
                    &case
                        .body
                        .to_string()
                        .replace(&session, "nosuchsession")
                        .replace(&run, "nosuchrun"),
                )
                .unwrap();
                let (ucode, ubody) = match case.method {
                    "GET" => app.get(&unknown_path).await,
                    _ => app.post(&unknown_path, unknown_body).await,
                };
                assert_eq!(code, 404, "{} {}: {body}", case.method, case.path);
                assert_eq!(
                    (code, &body),
                    (ucode, &ubody),
                    "{} {}",
                    case.method,
                    case.path
                );
            }
            Expect::AsUnknown => {
                let unknown_path = case.path.replace(&session, "nosuchsession");
                let res = app.raw_get(&case.path).await;
                let unknown = app.raw_get(&unknown_path).await;
                assert_eq!(res, unknown, "{} {}", case.method, case.path);
            }
            Expect::OwnTurn => {
                let (code, text) = app.raw_post(&case.path, case.body.clone()).await;
                assert_eq!(code, 200, "{} {}: {text}", case.method, case.path);
                for hers in [&run, "Alice's secret plans", "alice"] {
                    assert!(
                        !text.contains(hers),
                        "{} {} shows {hers}: {text}",
                        case.method,
                        case.path
                    );
                }
                assert_eq!(
                    app.store.messages(&session).await.unwrap().len(),
                    her_messages,
                    "{} {} wrote into her conversation",
                    case.method,
                    case.path
                );
            }
            Expect::Refused => {
                assert!(
                    (400..500).contains(&code),
                    "{} {}: {code} {body}",
                    case.method,
                    case.path
                );
                let text = body.to_string();
                for hers in [&session, &run, "Alice's secret plans", "alice"] {
                    assert!(
                        !text.contains(hers),
                        "{} {} shows {hers}",
                        case.method,
                        case.path
                    );
                }
            }
            Expect::NothingOfHers => {
                assert_eq!(code, 200, "{} {}: {body}", case.method, case.path);
                let text = body.to_string();
                for hers in [&session, &run, "Alice's secret plans", "alice"] {
                    assert!(
                        !text.contains(hers),
                        "{} {} shows {hers}: {text}",
                        case.method,
                        case.path
                    );
                }
            }
        }
    }
    // Bob's own things answer him (signed in again: the last case signed him out).
    let bob = app.sign_in("bob", BOB_PW).await;
    app.use_cookie(Some(&bob));
    let (code, _) = app.get(&format!("/api/session?session_id={own}")).await;
    assert_eq!(code, 200);

    // Nothing of alice's changed: the title, the run, the pending approval.
    app.use_cookie(Some(&alice));
    let (code, s) = app.get(&format!("/api/session?session_id={session}")).await;
    assert_eq!(code, 200);
    assert_eq!(s["session"]["title"], json!("Alice's secret plans"));
    assert_eq!(s["session"]["active_run_id"], json!(run));
    assert_eq!(
        app.store.grants(Some(&alice_id), 10).await.unwrap().len(),
        1
    );
    assert_eq!(app.store.shares(Some(&alice_id)).await.unwrap().len(), 1);
    assert_eq!(app.store.passkeys(&alice_id).await.unwrap().len(), 1);
    assert_eq!(
        s["session"]["pending_interactions"][0]["id"],
        json!(approval_id)
    );
    assert_eq!(
        s["session"]["pending_interactions"][0]["status"],
        json!("pending")
    );
    let (code, _) = app
        .post(
            "/api/approval/respond",
            json!({"run_id": run, "approval_id": approval_id, "choice": "once"}),
        )
        .await;
    assert_eq!(code, 200, "still hers to answer");
    app.wait_finished(&run).await;
}

#[tokio::test]
async fn a_page_of_another_users_conversation_shows_only_your_own() {
    let app = TestApp::builder().spawn().await;
    let (alice, bob) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    app.post(
        "/api/session/rename",
        json!({"session_id": session, "title": "Alice's diary"}),
    )
    .await;
    app.use_cookie(Some(&bob));
    let mine = app.new_session().await;
    app.post(
        "/api/session/rename",
        json!({"session_id": mine, "title": "Bob's notes"}),
    )
    .await;
    let page = |path: String, cookie: String| {
        let client = app.client.clone();
        let url = app.url(&path);
        async move {
            let res = client
                .get(url)
                .header("cookie", cookie)
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.text().await.unwrap())
        }
    };
    let (code, html) = page(format!("/s/{session}"), bob.clone()).await;
    assert_eq!(code, 200);
    assert!(!html.contains("Alice's diary") && !html.contains("Alice&#x27;s diary"));
    assert!(html.contains("Bob"), "his own sidebar");
    let (code, unknown) = page("/s/nosuchsession".into(), bob.clone()).await;
    assert_eq!(code, 200);
    // The same page as for an id that does not exist (but for the id in the address).
    assert_eq!(
        strip_nonces(&html.replace(&session, "X")),
        strip_nonces(&unknown.replace("nosuchsession", "X"))
    );
    let (_, html) = page(format!("/s/{session}"), alice).await;
    assert!(html.contains("Alice"));
    assert!(
        html.contains(r#"data-account"#),
        "the sidebar says who is signed in"
    );
}

/// The page without its per-response nonces (Leptos writes one into `crossorigin` too).
fn strip_nonces(html: &str) -> String {
    let mut html = html.to_owned();
    for attribute in ["nonce=\"", "crossorigin=\""] {
        let mut out = String::new();
        let mut rest = html.as_str();
        while let Some(i) = rest.find(attribute) {
            out.push_str(&rest[..i]);
            rest = &rest[i + attribute.len()..];
            rest = rest.split_once('"').map_or("", |(_, r)| r);
        }
        out.push_str(rest);
        html = out;
    }
    // The moment the page was made (its relative times start from it).
    let mut out = String::new();
    let mut rest = html.as_str();
    while let Some(i) = rest.find("\"now\":") {
        out.push_str(&rest[..i]);
        rest = rest[i + 6..].trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    }
    out.push_str(rest);
    html = out;
    html
}

#[tokio::test]
async fn with_an_account_addresses_reach_the_server_and_other_names_do_not() {
    let app = TestApp::builder()
        .configure(|state| state.allowed_hosts = vec!["nas.local".to_owned()].into())
        .spawn()
        .await;
    app.add_user("alice", ALICE_PW, false).await;
    let alice = app.sign_in("alice", ALICE_PW).await;
    let res = app
        .client
        .get(app.url("/api/sessions"))
        .header("host", "192.168.1.5:3000")
        .header("cookie", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "a phone on the LAN");
    let res = app
        .client
        .get(app.url("/api/sessions"))
        .header("host", "evil.example")
        .header("cookie", &alice)
        .send()
        .await
        .unwrap();
    // DNS rebinding: another site's name, resolving to this server, is answered nothing,
    // with a cookie or without (and so is the sign-in page, and a passkey ceremony).
    assert_eq!(res.status(), 403, "a rebound name is refused");
    let body: Value = res.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("not at this name"),
        "{body}"
    );
    for (method, path) in [("GET", "/login"), ("POST", "/api/auth/passkey/start")] {
        let req = match method {
            "GET" => app.client.get(app.url(path)),
            _ => app.client.post(app.url(path)).json(&json!({})),
        };
        let res = req
            .header("host", "evil.example:3000")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{method} {path}");
    }
    // A name the operator allows (`--allowed-hosts`) is this machine's; `/healthz`, which
    // says nothing, answers a container's check by any name.
    let at = |host: &'static str, path: &'static str| {
        app.client
            .get(app.url(path))
            .header("host", host)
            .header("cookie", &alice)
            .send()
    };
    assert_eq!(
        at("nas.local:3000", "/api/sessions")
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(at("anchorage-app", "/healthz").await.unwrap().status(), 200);
    assert_eq!(
        at("anchorage-app", "/api/sessions").await.unwrap().status(),
        403
    );
}

/// The server binary with a fresh data directory, as a person runs it.
pub(crate) fn server_cmd(db: &crate::helpers::TestDb) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_server"));
    cmd.env_remove("ANCHORAGE_DATA_DIR")
        .env_remove("DATABASE_URL")
        .env("LEPTOS_OUTPUT_NAME", "anchorage")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.args(db.args());
    cmd
}

pub(crate) fn run_with_stdin(mut cmd: Command, stdin: &str) -> (i32, String, String) {
    use std::io::Write as _;
    let mut child = cmd.spawn().expect("the server binary");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_user_commands_manage_accounts() {
    let db = crate::helpers::TestDb::new().await;
    let user = |args: &[&str], stdin: &str| {
        let mut cmd = server_cmd(&db);
        cmd.arg("user").args(args);
        run_with_stdin(cmd, stdin)
    };
    let (code, _, err) = user(&["add", "alice", "--admin"], "short\n");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("at least 10 characters"), "{err}");
    let (code, out, err) = user(&["add", "alice", "--admin"], "a long enough password\n");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("added the admin account \"alice\""), "{out}");
    // Global flags after the subcommand work too.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_server"));
    cmd.env_remove("ANCHORAGE_DATA_DIR")
        .env_remove("DATABASE_URL")
        .args(["user", "add", "bob"])
        .args(db.args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (code, _, err) = run_with_stdin(cmd, "bob's long password\n");
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = user(&["add", "ALICE"], "another long password\n");
    assert_eq!(code, 2);
    assert!(err.contains("exists"), "{err}");
    let (code, _, err) = user(&["add", "al ice"], "another long password\n");
    assert_eq!(code, 2, "{err}");
    let (code, out, _) = user(&["list"], "");
    assert_eq!(code, 0);
    assert_eq!(out, "alice (admin)\nbob\n");

    let store = db.open().await;
    let (_, hash) = store.user_credentials("bob").await.unwrap();
    assert!(server::auth::verify_password("bob's long password", &hash));
    let (code, out, err) = user(&["passwd", "bob"], "bob's new long password\n");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("signed out everywhere"));
    let (_, hash) = store.user_credentials("bob").await.unwrap();
    assert!(server::auth::verify_password(
        "bob's new long password",
        &hash
    ));
    let (code, _, err) = user(&["passwd", "carol"], "whatever long password\n");
    assert_eq!(code, 2);
    assert!(err.contains("no account named"), "{err}");
    let (code, _, _) = user(&["remove", "bob"], "");
    assert_eq!(code, 0);
    let (_, out, _) = user(&["list"], "");
    assert_eq!(out, "alice (admin)\n");
}

#[tokio::test]
async fn with_no_account_the_server_refuses_a_network_address() {
    let db = crate::helpers::TestDb::new().await;
    let site = tempfile::tempdir().unwrap();
    let mut cmd = server_cmd(&db);
    cmd.args(["--addr", "0.0.0.0:0"])
        .env("LEPTOS_SITE_ROOT", site.path());
    let (code, _, err) = run_with_stdin(cmd, "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("server") && err.contains("user add"), "{err}");
}

#[tokio::test]
async fn behind_https_the_cookie_is_secure_and_failures_count_per_forwarded_address() {
    let app = crate::helpers::TestApp::builder()
        .configure(|state| {
            state.public_url =
                Some(server::security::PublicUrl::parse("https://chat.example.org").unwrap());
        })
        .spawn()
        .await;
    app.add_user("alice", ALICE_PW, false).await;
    let login = |from: &'static str, name: String, password: &'static str| {
        app.client
            .post(app.url("/api/auth/login"))
            .header("host", "chat.example.org")
            .header("x-forwarded-for", from)
            .json(&json!({"username": name, "password": password}))
            .send()
    };
    let res = login("203.0.113.7", "alice".into(), ALICE_PW)
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let set = res.headers()["set-cookie"].to_str().unwrap();
    assert!(set.contains("; Secure"), "{set}");
    // Five failures from one address behind the proxy, each for another name...
    for i in 0..5 {
        let res = login("203.0.113.8", format!("nobody{i}"), "wrong-password")
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
    }
    // ...hold that address back, not everyone behind the proxy.
    assert_eq!(
        login("203.0.113.8", "alice".into(), ALICE_PW)
            .await
            .unwrap()
            .status(),
        429
    );
    assert_eq!(
        login("203.0.113.9", "alice".into(), ALICE_PW)
            .await
            .unwrap()
            .status(),
        200
    );
}
