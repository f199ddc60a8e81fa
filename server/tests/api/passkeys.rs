//! Passkey ceremonies over HTTP: who may begin one, for which site, and that each is answered
//! once, by the account that began it. (The signature itself is checked by webauthn-rs; a real
//! authenticator signs in the Playwright test, end2end/tests/passkeys.spec.ts.)

use serde_json::{json, Value};

use crate::helpers::{stored_passkey, TestApp};

#[tokio::test]
async fn passkeys_need_an_account_and_a_site_name() {
    let app = TestApp::builder().spawn().await;
    let (code, body) = app
        .post_local(None, "/api/passkeys/register/start", json!({}))
        .await;
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
    let (code, start) = app
        .post_local(Some(&alice), "/api/passkeys/register/start", json!({}))
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

    // Bob cannot answer hers: it is sealed as hers.
    let finish = json!({"ceremony": ceremony, "credential": {}});
    let (code, body) = app
        .post_local(Some(&bob), "/api/passkeys/register/finish", finish.clone())
        .await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("start again"),
        "{body}"
    );
    // Hers, answered with something that is no credential: refused for that.
    let (code, body) = app
        .post_local(Some(&alice), "/api/passkeys/register/finish", finish)
        .await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("not a credential"),
        "{body}"
    );
    // Changed on the way (another account's id sealed under her seal, or a made-up one):
    // not a ceremony of this server's.
    let (body64, seal) = ceremony.split_once('.').unwrap();
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut sealed: Value = serde_json::from_slice(&b64.decode(body64).unwrap()).unwrap();
    sealed["u"] = json!("someone-else");
    let forged = format!("{}.{seal}", b64.encode(sealed.to_string()));
    for ceremony in [forged, "ceremony-none".to_owned(), "x".repeat(40_000)] {
        let (code, body) = app
            .post_local(
                Some(&alice),
                "/api/passkeys/register/finish",
                json!({"ceremony": ceremony, "credential": {}}),
            )
            .await;
        assert_eq!(code, 400);
        assert!(
            body["error"].as_str().unwrap().contains("start again"),
            "{body}"
        );
    }

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
        let (code, start) = app.post_local(None, "/api/auth/passkey/start", body).await;
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
    let (code, body) = app
        .post_local(
            None,
            "/api/auth/passkey/finish",
            json!({"ceremony": "ceremony-none", "credential": {}}),
        )
        .await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = app
        .post_local(None, "/api/auth/passkey/finish", json!({"x": 1}))
        .await;
    assert!((400..500).contains(&code), "{code}");
    assert!(body["error"].is_string());
}

/// A server behind a proxy at `http://localhost` (its readers' addresses in
/// `X-Forwarded-For`), with alice and bob.
async fn behind_a_proxy() -> TestApp {
    let app = TestApp::builder()
        .configure(|state| {
            state.public_url = server::security::PublicUrl::parse("http://localhost").ok()
        })
        .spawn()
        .await;
    app.two_users(false).await;
    app
}

/// POSTs JSON as the browser at `from` does, through the proxy.
async fn post_from(app: &TestApp, from: &str, path: &str, body: Value) -> (u16, Value) {
    let res = app
        .client
        .post(app.url(path))
        .header("host", "localhost")
        .header("x-forwarded-for", from)
        .json(&body)
        .send()
        .await
        .unwrap();
    let code = res.status().as_u16();
    (code, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_persons_ceremony_survives_a_thousand_strangers_starts() {
    let app = behind_a_proxy().await;
    let (code, mine) = post_from(&app, "198.51.100.7", "/api/auth/passkey/start", json!({})).await;
    assert_eq!(code, 200, "{mine}");
    // A thousand strangers, each from an address of its own (a botnet, or an IPv6 block's
    // many networks), each begins a ceremony: nothing of theirs is kept, so nothing of hers
    // gives way.
    for i in 0..1_000u32 {
        let from = format!("10.{}.{}.{}", i / 65_536, (i / 256) % 256, i % 256);
        let (code, body) = post_from(&app, &from, "/api/auth/passkey/start", json!({})).await;
        assert_eq!(code, 200, "{from}: {body}");
    }
    // Hers still opens (refused for what it was answered with, not for being gone).
    let (code, body) = post_from(
        &app,
        "198.51.100.7",
        "/api/auth/passkey/finish",
        json!({"ceremony": mine["ceremony"], "credential": {}}),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        body["error"].as_str().unwrap().contains("not a credential"),
        "{body}"
    );
    // One address begins a few at most.
    let mut refused = 0;
    for _ in 0..(server::throttle::CEREMONY_LIMIT + 5) {
        let (code, _) = post_from(&app, "203.0.113.9", "/api/auth/passkey/start", json!({})).await;
        if code == 429 {
            refused += 1;
        }
    }
    assert_eq!(refused, 5);
}

#[tokio::test]
async fn a_passkey_start_resets_no_count_of_failed_sign_ins() {
    let app = behind_a_proxy().await;
    // 24 wrong passwords for 24 names from one address, a passkey ceremony begun after
    // every fourth: the address is held back after the limit, whatever the starts.
    let mut checked = 0;
    let mut held = 0;
    for i in 0..24 {
        let (code, body) = post_from(
            &app,
            "192.0.2.44",
            "/api/auth/login",
            json!({"username": format!("user{i}"), "password": "wrong password 1"}),
        )
        .await;
        match code {
            401 => checked += 1,
            429 => held += 1,
            other => panic!("{other}: {body}"),
        }
        if i % 4 == 3 {
            let (code, _) =
                post_from(&app, "192.0.2.44", "/api/auth/passkey/start", json!({})).await;
            // Held back too, once the address is.
            assert!(code == 200 || code == 429, "{code}");
        }
    }
    assert_eq!(
        checked,
        server::throttle::THROTTLE_LIMIT,
        "checked at most the limit"
    );
    assert_eq!(held, 24 - server::throttle::THROTTLE_LIMIT);
    // A passkey's answers count against the address too: held back now.
    let (code, _) = post_from(
        &app,
        "192.0.2.44",
        "/api/auth/passkey/finish",
        json!({"ceremony": "x", "credential": {}}),
    )
    .await;
    assert_eq!(code, 429);
    // And its failures count: another address, five made-up answers, then held back.
    for _ in 0..server::throttle::THROTTLE_LIMIT {
        let (code, _) = post_from(
            &app,
            "192.0.2.45",
            "/api/auth/passkey/finish",
            json!({"ceremony": "x", "credential": {}}),
        )
        .await;
        assert_eq!(code, 400);
    }
    let (code, _) = post_from(
        &app,
        "192.0.2.45",
        "/api/auth/login",
        json!({"username": "alice", "password": crate::helpers::ALICE_PASSWORD}),
    )
    .await;
    assert_eq!(code, 429, "the right password waits too, from that address");
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
    let key = |n: u32| stored_passkey(&alice.id, &format!("passkey-{n}"), &format!("Key {n}"));
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
