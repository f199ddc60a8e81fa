//! Passkey ceremonies over HTTP: who may begin one, for which site, and that each is answered
//! once, by the account that began it. (The signature itself is checked by webauthn-rs; a real
//! authenticator signs in the Playwright test, end2end/tests/passkeys.spec.ts.)

use serde_json::{json, Value};

use crate::helpers::TestApp;

/// POSTs JSON to the server as the browser at `http://localhost:PORT` does.
async fn post_local(app: &TestApp, cookie: Option<&str>, path: &str, body: Value) -> (u16, Value) {
    let url = app.url(path).replace("127.0.0.1", "localhost");
    let mut req = app.client.post(url).json(&body);
    if let Some(cookie) = cookie {
        req = req.header("cookie", cookie);
    }
    let res = req.send().await.unwrap();
    let code = res.status().as_u16();
    (code, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn passkeys_need_an_account_and_a_site_name() {
    let app = TestApp::builder().spawn().await;
    let (code, body) = post_local(&app, None, "/api/passkeys/register/start", json!({})).await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("server user add"),
        "{body}"
    );

    let (alice, _) = app.two_users(false).await;
    app.use_cookie(Some(&alice));
    // At an IP address there is no name for a passkey to belong to.
    let (code, body) = app.post("/api/passkeys/register/start", json!({})).await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("localhost"),
        "{body}"
    );
}

#[tokio::test]
async fn a_ceremony_is_the_accounts_and_is_answered_once() {
    let app = TestApp::builder().spawn().await;
    let (alice, bob) = app.two_users(false).await;
    let (code, start) = post_local(
        &app,
        Some(&alice),
        "/api/passkeys/register/start",
        json!({}),
    )
    .await;
    assert_eq!(code, 200, "{start}");
    let options = &start["options"]["publicKey"];
    assert_eq!(options["rp"]["id"], json!("localhost"));
    assert_eq!(options["user"]["name"], json!("alice"));
    // Discoverable: the authenticator keeps whose it is, so that signing in needs no name.
    assert_eq!(
        options["authenticatorSelection"]["residentKey"],
        json!("required")
    );
    assert_eq!(
        options["authenticatorSelection"]["requireResidentKey"],
        json!(true)
    );
    assert!(
        options["challenge"].as_str().unwrap().len() >= 16,
        "{options}"
    );
    let ceremony = start["ceremony"].as_str().unwrap().to_owned();

    // Bob cannot answer hers; that spends it.
    let finish = json!({"ceremony": ceremony, "credential": {}});
    let (code, body) = post_local(
        &app,
        Some(&bob),
        "/api/passkeys/register/finish",
        finish.clone(),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("start again"),
        "{body}"
    );
    let (code, body) =
        post_local(&app, Some(&alice), "/api/passkeys/register/finish", finish).await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("start again"),
        "{body}"
    );

    // A new one answered with something that is no credential: refused, and spent too.
    let (_, start) = post_local(
        &app,
        Some(&alice),
        "/api/passkeys/register/start",
        json!({}),
    )
    .await;
    let finish = json!({"ceremony": start["ceremony"], "credential": {"id": "x"}});
    let (code, body) = post_local(
        &app,
        Some(&alice),
        "/api/passkeys/register/finish",
        finish.clone(),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("not a credential"),
        "{body}"
    );
    let (code, _) = post_local(&app, Some(&alice), "/api/passkeys/register/finish", finish).await;
    assert_eq!(code, 400);

    // Nothing was added.
    app.use_cookie(Some(&alice));
    let (code, list) = app.get("/api/passkeys").await;
    assert_eq!(code, 200);
    assert_eq!(list["passkeys"], json!([]));
}

#[tokio::test]
async fn signing_in_with_a_passkey_asks_for_no_name_and_names_no_one() {
    let app = TestApp::builder().spawn().await;
    app.two_users(false).await;
    // The same for anyone, whatever name the request carries: any passkey of this site may
    // answer (none is listed), and its user must be verified.
    let mut shapes = Vec::new();
    for body in [
        json!({}),
        json!({"username": "alice"}),
        json!({"username": "nobody"}),
    ] {
        let (code, start) = post_local(&app, None, "/api/auth/passkey/start", body).await;
        assert_eq!(code, 200, "{start}");
        let options = &start["options"];
        assert!(options.get("mediation").is_none(), "{options}");
        let key = &options["publicKey"];
        assert_eq!(key["rpId"], json!("localhost"));
        assert_eq!(key["userVerification"], json!("required"));
        assert!(
            key.get("allowCredentials")
                .is_none_or(|list| list.as_array().is_some_and(Vec::is_empty)),
            "{key}"
        );
        let mut shape: Vec<String> = key.as_object().unwrap().keys().cloned().collect();
        shape.sort();
        shapes.push(shape);
    }
    assert!(shapes.iter().all(|s| s == &shapes[0]), "{shapes:?}");

    // A made-up ceremony signs nobody in.
    let (code, body) = post_local(
        &app,
        None,
        "/api/auth/passkey/finish",
        json!({"ceremony": "ceremony-none", "credential": {}}),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = post_local(&app, None, "/api/auth/passkey/finish", json!({"x": 1})).await;
    assert!((400..500).contains(&code), "{code}");
    assert!(body["error"].is_string());
}

#[tokio::test]
async fn sign_ins_in_progress_are_bounded_the_oldest_giving_way() {
    let app = TestApp::builder().spawn().await;
    app.two_users(false).await;
    let start = || async {
        let (code, start) = post_local(&app, None, "/api/auth/passkey/start", json!({})).await;
        assert_eq!(code, 200, "{start}");
        start["ceremony"].as_str().unwrap().to_owned()
    };
    let oldest = start().await;
    let mut newest = String::new();
    for _ in 0..70 {
        newest = start().await;
    }
    let finish = |ceremony: String| {
        let app = &app;
        async move {
            post_local(
                app,
                None,
                "/api/auth/passkey/finish",
                json!({"ceremony": ceremony, "credential": {}}),
            )
            .await
        }
    };
    // The oldest gave way to newer ones; the newest is still there (and then spent).
    let (code, body) = finish(oldest).await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("start again"),
        "{body}"
    );
    let (code, body) = finish(newest).await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("not a credential"),
        "{body}"
    );
}

#[tokio::test]
async fn passkeys_outlive_a_new_password_and_go_with_their_account() {
    let app = TestApp::builder().spawn().await;
    app.two_users(false).await;
    let alice = app
        .store
        .users()
        .await
        .unwrap()
        .into_iter()
        .find(|u| u.name == "alice")
        .unwrap();
    let key = |n: u32| server::store::StoredPasskey {
        id: format!("passkey-{n}"),
        user_id: alice.id.clone(),
        credential_id: format!("credential-{n}"),
        name: format!("Key {n}"),
        passkey: "{}".into(),
        created_at: f64::from(n),
        last_used_at: None,
    };
    for n in 0..server::routes::MAX_PASSKEYS {
        app.store
            .add_passkey(&key(n), server::routes::MAX_PASSKEYS)
            .await
            .unwrap();
    }
    // One more is refused, and says so.
    let refused = app
        .store
        .add_passkey(&key(99), server::routes::MAX_PASSKEYS)
        .await
        .unwrap_err();
    assert!(matches!(
        refused,
        server::store::StoreError::TooManyPasskeys { .. }
    ));
    // The same credential twice is refused by the database.
    app.store
        .remove_passkey(&alice.id, "passkey-0")
        .await
        .unwrap();
    let mut twin = key(1);
    twin.id = "passkey-twin".into();
    assert!(app
        .store
        .add_passkey(&twin, server::routes::MAX_PASSKEYS)
        .await
        .is_err());

    app.store.set_password("alice", "$new-hash").await.unwrap();
    assert_eq!(
        app.store.passkeys(&alice.id).await.unwrap().len(),
        server::routes::MAX_PASSKEYS as usize - 1
    );
    assert_eq!(
        app.store.count_passkeys().await.unwrap(),
        u64::from(server::routes::MAX_PASSKEYS) - 1
    );
    app.store.remove_user("alice").await.unwrap();
    assert_eq!(app.store.count_passkeys().await.unwrap(), 0);
}
