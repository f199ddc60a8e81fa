//! The site behind a proxy under a path of its own (`--public-url http://host/team/chat`):
//! every address it gives out starts with the path, and it answers there (a proxy that passes
//! the path on) as at its root (one that takes it off).

use serde_json::json;

use crate::helpers::{TestApp, ALICE_PASSWORD};

const BASE: &str = "/team/chat";

async fn under_a_path() -> TestApp {
    let app = TestApp::builder()
        .configure(|state| {
            state.public_url =
                Some(server::security::PublicUrl::parse("http://127.0.0.1/team/chat/").unwrap());
        })
        .spawn()
        .await;
    std::fs::write(app.site.path().join("manifest.webmanifest"), "{}").unwrap();
    app
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Every `href`, `src` and `action` of a document.
fn addresses(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in [" href=\"", " src=\"", " action=\""] {
        let mut rest = html;
        while let Some(at) = rest.find(attr) {
            rest = &rest[at + attr.len()..];
            let end = rest.find('"').unwrap_or(rest.len());
            out.push(rest[..end].to_owned());
        }
    }
    out
}

/// Asserts that every address of `html` that is not a fragment or another site's is under
/// the base.
fn all_under_base(html: &str, what: &str) {
    let found = addresses(html);
    assert!(!found.is_empty(), "{what}: no addresses in {html}");
    for address in found {
        if address.starts_with('#') || address.starts_with("http") {
            continue;
        }
        assert!(
            address.starts_with(&format!("{BASE}/")),
            "{what}: {address} is not under {BASE}"
        );
    }
}

#[tokio::test]
async fn every_address_a_page_gives_out_is_under_the_path_and_the_site_answers_there() {
    let app = under_a_path().await;
    let session = app.new_session().await;
    let run = app.start(&session, "Hello under a path").await;
    app.wait_finished(&run).await;

    // The pages, through a proxy that passes the path on: the base alone (with or without
    // its slash), a conversation, a new one.
    for path in [
        BASE.to_owned(),
        format!("{BASE}/"),
        format!("{BASE}/s/{session}"),
        format!("{BASE}/new"),
    ] {
        let (code, page) = app.raw_get(&path).await;
        assert_eq!(code, 200, "{path}");
        assert!(
            page.contains(&format!(r#"<meta name="anchorage-base" content="{BASE}""#)),
            "{path}"
        );
        all_under_base(&page, &path);
        let build = &app.state.bundle.build;
        assert!(
            page.contains(&format!(r#"href="{BASE}/build/{build}/pkg/anchorage.css""#)),
            "{path}"
        );
    }
    // The same through a proxy that takes the path off: the addresses still carry it.
    let (code, page) = app.raw_get(&format!("/s/{session}")).await;
    assert_eq!(code, 200);
    all_under_base(&page, "/s/ at the root");

    // What those addresses load answers under the path.
    let build = app.state.bundle.build.clone();
    for path in [
        format!("{BASE}/build/{build}/pkg/anchorage.css"),
        format!("{BASE}/pkg/anchorage.css"),
        format!("{BASE}/manifest.webmanifest"),
        format!("{BASE}/healthz"),
    ] {
        let (code, _) = app.raw_get(&path).await;
        assert_eq!(code, 200, "{path}");
    }
    let (code, list) = app.get(&format!("{BASE}/api/sessions")).await;
    assert_eq!(code, 200);
    assert_eq!(list["sessions"][0]["id"], json!(session));

    // The worker keeps the bundle under the path and watches the pages there.
    let (code, worker) = app.raw_get(&format!("{BASE}/sw.js")).await;
    assert_eq!(code, 200);
    assert!(
        worker.contains(&format!("const BASE = \"{BASE}\";")),
        "{worker}"
    );
    assert!(worker.contains(&format!("\"{BASE}/build/{build}/pkg/anchorage.css\"")));

    // An unknown address answers 404 with a way back under the path.
    let (code, page) = app.raw_get(&format!("{BASE}/nowhere")).await;
    assert_eq!(code, 404);
    assert!(page.contains(&format!(r#"href="{BASE}/""#)), "{page}");
    all_under_base(&page, "404");

    // A share link's page.
    let (code, share) = app.post("/api/share", json!({"session_id": session})).await;
    assert_eq!(code, 200, "{share}");
    let path = share["share"]["path"].as_str().unwrap().to_owned();
    assert!(
        path.starts_with("/share/"),
        "the API speaks site paths: {path}"
    );
    let (code, page) = app.raw_get(&format!("{BASE}{path}")).await;
    assert_eq!(code, 200);
    assert!(page.contains("Hello under a path"));
    all_under_base(&page, "share");
}

#[tokio::test]
async fn signing_in_under_a_path_stays_under_it() {
    let app = under_a_path().await;
    app.add_user("alice", ALICE_PASSWORD, false).await;
    let client = no_redirects();
    // A page without a sign-in goes to the sign-in page under the path, and back to the
    // browser's address after.
    let res = client
        .get(app.url(&format!("{BASE}/s/abc?x=1")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(
        res.headers()["location"],
        format!("{BASE}/login?next={BASE}/s/abc%3Fx%3D1").as_str()
    );
    let form = client
        .get(app.url(&format!("{BASE}/login?next={BASE}/s/abc")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(form.contains(&format!(r#"name="next" value="{BASE}/s/abc""#)));
    all_under_base(&form, "sign-in page");
    // The form's post (from the page the proxy serves) signs in for the site's path only,
    // and goes back.
    let res = client
        .post(app.url(&format!("{BASE}/api/auth/login")))
        .header("origin", "http://127.0.0.1")
        .form(&[
            ("username", "alice"),
            ("password", ALICE_PASSWORD),
            ("next", &format!("{BASE}/s/abc")),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], format!("{BASE}/s/abc").as_str());
    let cookie = res.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.contains(&format!("; Path={BASE};")), "{cookie}");
    // A `next` elsewhere on the host is not followed: the site's home instead.
    for elsewhere in ["/other/app", "/s/abc", "//evil.example"] {
        let res = client
            .post(app.url(&format!("{BASE}/api/auth/login")))
            .header("origin", "http://127.0.0.1")
            .form(&[
                ("username", "alice"),
                ("password", ALICE_PASSWORD),
                ("next", elsewhere),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 303, "{elsewhere}");
        assert_eq!(
            res.headers()["location"],
            format!("{BASE}/").as_str(),
            "{elsewhere}"
        );
    }
}
