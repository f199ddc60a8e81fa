//! What lasts beyond a cookie: adding a passkey asks for a fresh proof (the password, or a
//! passkey, given within the last few minutes), Settings lists where the account is signed
//! in and ends any of it, a removed passkey takes its sign-ins with it, and a new password
//! (`server user passwd`) ends every sign-in and, unless kept, the passkeys.

use std::time::Duration;

use serde_json::{json, Value};

use crate::accounts::{run_with_stdin, server_cmd};
use crate::helpers::{stored_passkey, TestApp, ALICE_PASSWORD, BOB_PASSWORD};

/// Signs in as `name` from a browser that says it is `agent`; the cookie.
async fn sign_in_as(app: &TestApp, name: &str, password: &str, agent: &str) -> String {
    let res = app
        .client
        .post(app.url("/api/auth/login"))
        .header("user-agent", agent)
        .json(&json!({"username": name, "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let set = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    set.split(';').next().unwrap().to_owned()
}

const PHONE: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537.36";
const LAPTOP: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";

#[tokio::test]
async fn a_stolen_cookie_cannot_add_a_passkey_without_the_password() {
    let app = TestApp::builder()
        .configure(|state| state.limits.fresh_proof = Duration::from_millis(400))
        .spawn()
        .await;
    let (alice, _) = app.two_users(false).await;
    // Just signed in with the password: fresh.
    let (code, body) = app
        .post_local(Some(&alice), "/api/passkeys/register/start", json!({}))
        .await;
    assert_eq!(code, 200, "{body}");
    // A while later, the cookie alone (borrowed, stolen) adds nothing that lasts.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (code, body) = app
        .post_local(Some(&alice), "/api/passkeys/register/start", json!({}))
        .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reauth"], json!(true));
    assert!(
        body["error"].as_str().unwrap().contains("password"),
        "{body}"
    );
    // Another account's password, or a wrong one, proves nothing.
    for wrong in [BOB_PASSWORD, "not the password at all"] {
        let (code, body) = app
            .post_local(
                Some(&alice),
                "/api/auth/confirm",
                json!({"password": wrong}),
            )
            .await;
        // 403: she is still signed in (401 would send her page to sign in).
        assert_eq!(code, 403, "{body}");
        let (code, _) = app
            .post_local(Some(&alice), "/api/passkeys/register/start", json!({}))
            .await;
        assert_eq!(code, 403);
    }
    // Her password, given again: fresh for a while.
    let (code, body) = app
        .post_local(
            Some(&alice),
            "/api/auth/confirm",
            json!({"password": ALICE_PASSWORD}),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = app
        .post_local(Some(&alice), "/api/passkeys/register/start", json!({}))
        .await;
    assert_eq!(code, 200, "{body}");
    // Guessing through the confirmation is counted as signing in is.
    let mut held = false;
    for _ in 0..8 {
        let (code, _) = app
            .post_local(
                Some(&alice),
                "/api/auth/confirm",
                json!({"password": "guess guess"}),
            )
            .await;
        assert!(code == 403 || code == 429, "{code}");
        held |= code == 429;
    }
    assert!(held, "guesses are held back");
}

#[tokio::test]
async fn settings_lists_where_the_account_is_signed_in_and_ends_any_of_it() {
    let app = TestApp::builder().spawn().await;
    let (_, bob) = app.two_users(false).await;
    let laptop = sign_in_as(&app, "alice", ALICE_PASSWORD, LAPTOP).await;
    let phone = sign_in_as(&app, "alice", ALICE_PASSWORD, PHONE).await;
    app.use_cookie(Some(&laptop));
    let (code, list) = app.get("/api/auth/sign-ins").await;
    assert_eq!(code, 200);
    let sign_ins = list["sign_ins"].as_array().unwrap();
    // Hers three (the helper's, the laptop's, the phone's), never bob's.
    assert_eq!(sign_ins.len(), 3, "{list}");
    let devices: Vec<&str> = sign_ins
        .iter()
        .map(|s| s["device"].as_str().unwrap())
        .collect();
    assert!(devices.contains(&"Firefox on Linux"), "{devices:?}");
    assert!(devices.contains(&"Chrome on Android"), "{devices:?}");
    let current: Vec<&Value> = sign_ins.iter().filter(|s| s["current"] == true).collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["device"], "Firefox on Linux");
    assert_eq!(current[0]["ip"], "127.0.0.1");
    assert!(current[0]["created_at"].as_f64().unwrap() > 0.0);
    assert_eq!(current[0]["passkey"], Value::Null);
    let phone_id = sign_ins
        .iter()
        .find(|s| s["device"] == "Chrome on Android")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // "Sign out" on the phone's line: the phone is signed out, the laptop is not.
    let (code, _) = app
        .post("/api/auth/sign-ins/end", json!({"id": phone_id}))
        .await;
    assert_eq!(code, 200);
    app.use_cookie(Some(&phone));
    assert_eq!(app.get("/api/auth/me").await.0, 401);
    app.use_cookie(Some(&laptop));
    assert_eq!(app.get("/api/auth/me").await.0, 200);
    // Gone already, or made up: 404.
    for id in [phone_id.as_str(), "0123456789abcdef", "%", ""] {
        let (code, body) = app.post("/api/auth/sign-ins/end", json!({"id": id})).await;
        assert_eq!(code, 404, "{id}: {body}");
    }

    // "Sign out everywhere": every one of hers, this one too (its cookie cleared); bob's stays.
    let res = app
        .client
        .post(app.url("/api/auth/sign-ins/end-all"))
        .header("cookie", &laptop)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    assert_eq!(app.get("/api/auth/me").await.0, 401);
    app.use_cookie(Some(&bob));
    assert_eq!(app.get("/api/auth/me").await.0, 200);
}

#[tokio::test]
async fn a_removed_passkey_ends_the_sign_ins_it_made() {
    let app = TestApp::builder().spawn().await;
    let (alice, _) = app.two_users(false).await;
    let alice_id = app.user_id("alice").await;
    app.store
        .add_passkey(&stored_passkey(&alice_id, "passkey-phone", "Phone"), 20)
        .await
        .unwrap();
    // A browser signed in with that passkey (as `passkeys::sign_in_finish` records it).
    let token = server::auth::new_token();
    let now = server::clock::now();
    app.store
        .create_token(&server::store::NewSignIn {
            token_hash: server::auth::token_hash(&token),
            user_id: alice_id,
            now,
            expires_at: now + 3600.0,
            ip: "203.0.113.5".into(),
            agent: PHONE.into(),
            passkey_id: Some("passkey-phone".into()),
        })
        .await
        .unwrap();
    let with_passkey = format!("anchorage_session={token}");
    app.use_cookie(Some(&alice));
    let (_, list) = app.get("/api/auth/sign-ins").await;
    let line = list["sign_ins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["ip"] == "203.0.113.5")
        .cloned()
        .unwrap();
    assert_eq!(line["passkey"], "Phone", "{line}");
    let (code, _) = app
        .post("/api/passkeys/remove", json!({"id": "passkey-phone"}))
        .await;
    assert_eq!(code, 200);
    app.use_cookie(Some(&with_passkey));
    assert_eq!(
        app.get("/api/auth/me").await.0,
        401,
        "signed out with its passkey"
    );
    app.use_cookie(Some(&alice));
    assert_eq!(
        app.get("/api/auth/me").await.0,
        200,
        "the password's sign-in stays"
    );
}

#[tokio::test]
async fn passkeys_say_which_one_this_browser_used_and_take_a_new_name() {
    let app = TestApp::builder().spawn().await;
    let (alice, _) = app.two_users(false).await;
    let alice_id = app.user_id("alice").await;
    for (id, name) in [("passkey-phone", "Phone"), ("passkey-laptop", "Laptop")] {
        app.store
            .add_passkey(&stored_passkey(&alice_id, id, name), 20)
            .await
            .unwrap();
    }
    let token = server::auth::new_token();
    let now = server::clock::now();
    app.store
        .create_token(&server::store::NewSignIn {
            token_hash: server::auth::token_hash(&token),
            user_id: alice_id,
            now,
            expires_at: now + 3600.0,
            ip: "203.0.113.5".into(),
            agent: PHONE.into(),
            passkey_id: Some("passkey-phone".into()),
        })
        .await
        .unwrap();
    let in_use = |list: &Value| -> Vec<(String, bool)> {
        list["passkeys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["name"].as_str().unwrap().to_owned(), p["in_use"] == true))
            .collect()
    };
    // The browser that signed in with the phone's passkey sees it marked; the password's
    // sign-in sees none.
    app.use_cookie(Some(&format!("anchorage_session={token}")));
    let (_, list) = app.get("/api/passkeys").await;
    let mut seen = in_use(&list);
    seen.sort();
    assert_eq!(
        seen,
        [("Laptop".to_owned(), false), ("Phone".to_owned(), true)]
    );
    app.use_cookie(Some(&alice));
    let (_, list) = app.get("/api/passkeys").await;
    assert!(in_use(&list).iter().all(|(_, used)| !used), "{list}");
    // A new name, trimmed; none, or too long, is refused and changes nothing.
    let (code, body) = app
        .post(
            "/api/passkeys/rename",
            json!({"id": "passkey-laptop", "name": "  Work laptop  "}),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    for name in ["   ", &"x".repeat(61)] {
        let (code, body) = app
            .post(
                "/api/passkeys/rename",
                json!({"id": "passkey-laptop", "name": name}),
            )
            .await;
        assert_eq!(code, 400, "{body}");
        assert!(body["error"].is_string(), "{body}");
    }
    let (_, list) = app.get("/api/passkeys").await;
    let names: Vec<String> = in_use(&list).into_iter().map(|(name, _)| name).collect();
    assert!(names.contains(&"Work laptop".to_owned()), "{names:?}");
    let (code, _) = app
        .post(
            "/api/passkeys/rename",
            json!({"id": "passkey-nobodys", "name": "x"}),
        )
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn a_new_password_ends_every_sign_in_and_the_passkeys_unless_kept() {
    let app = TestApp::builder().spawn().await;
    let (alice, bob) = app.two_users(false).await;
    let user = |args: &[&str], stdin: &str| {
        let mut cmd = server_cmd(&app._db);
        cmd.arg("user").args(args);
        run_with_stdin(cmd, stdin)
    };
    let users = app.store.users().await.unwrap();
    let id_of = |name: &str| users.iter().find(|u| u.name == name).unwrap().id.clone();
    let key = |user: &str, n: u32| {
        stored_passkey(
            &id_of(user),
            &format!("passkey-{user}-{n}"),
            &format!("Key {n}"),
        )
    };
    for (name, n) in [("alice", 1), ("alice", 2), ("bob", 1)] {
        app.store.add_passkey(&key(name, n), 20).await.unwrap();
    }
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let (code, _) = app.post("/api/share", json!({"session_id": session})).await;
    assert_eq!(code, 200);

    // With --keep-passkeys they stay (and so do the links, which it says).
    let (code, out, err) = user(
        &["passwd", "alice", "--keep-passkeys"],
        "alice's second password\n",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("its 2 passkey(s) still sign in"), "{out}");
    assert!(out.contains("its 1 share link(s) still answer"), "{out}");
    assert_eq!(app.get("/api/auth/me").await.0, 401, "the old cookie");
    assert_eq!(app.store.passkeys(&id_of("alice")).await.unwrap().len(), 2);

    // Without: the passkeys go (read from a pipe, nothing is asked); the links with
    // --revoke-shares.
    let again = app.sign_in("alice", "alice's second password").await;
    let (code, out, err) = user(
        &["passwd", "alice", "--revoke-shares"],
        "alice's third password\n",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed its 2 passkey(s)"), "{out}");
    assert!(out.contains("revoked its 1 share link(s)"), "{out}");
    app.use_cookie(Some(&again));
    assert_eq!(app.get("/api/auth/me").await.0, 401);
    assert!(app
        .store
        .passkeys(&id_of("alice"))
        .await
        .unwrap()
        .is_empty());
    assert!(app
        .store
        .shares(Some(&id_of("alice")))
        .await
        .unwrap()
        .is_empty());
    // Bob's are his.
    assert_eq!(app.store.passkeys(&id_of("bob")).await.unwrap().len(), 1);
    app.use_cookie(Some(&bob));
    assert_eq!(app.get("/api/auth/me").await.0, 200);

    // Her passkey, answering a sign-in now, is refused as removed.
    let handle = {
        use base64::Engine as _;
        let uuid = uuid::Uuid::parse_str(&id_of("alice")).unwrap();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(uuid.as_bytes())
    };
    let (code, start) = app
        .post_local(None, "/api/auth/passkey/start", json!({}))
        .await;
    assert_eq!(code, 200, "{start}");
    let credential = json!({
        "id": "Y3JlZA", "rawId": "Y3JlZA", "type": "public-key",
        "response": {"authenticatorData": "AA", "clientDataJSON": "AA", "signature": "AA",
                     "userHandle": handle},
    });
    let (code, body) = app
        .post_local(
            None,
            "/api/auth/passkey/finish",
            json!({"ceremony": start["ceremony"], "credential": credential}),
        )
        .await;
    assert_eq!(code, 401, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("removed"),
        "{body}"
    );
}
