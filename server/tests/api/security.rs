//! Requests from elsewhere: a rebound host name, another site's page, a form post.

use serde_json::{json, Value};

use crate::helpers::TestApp;

#[tokio::test]
async fn other_hosts_and_cross_site_writes_are_refused_and_change_nothing() {
    let app = TestApp::builder().spawn().await;
    let count = || async {
        let (_, list) = app.get("/api/sessions").await;
        list["sessions"].as_array().map_or(0, Vec::len)
    };
    let before = count().await;
    let send = |host: Option<&'static str>,
                headers: &[(&'static str, &'static str)],
                body: &'static str| {
        let mut req = app.client.post(app.url("/api/session/new")).body(body);
        if let Some(host) = host {
            req = req.header("host", host);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send()
    };
    let json = ("content-type", "application/json");
    // (Host, headers, expected status)
    type Case = (Option<&'static str>, Vec<(&'static str, &'static str)>, u16);
    let cases: Vec<Case> = vec![
        // DNS rebinding: the browser sends the attacker's host name.
        (Some("evil.example:3000"), vec![json], 403),
        // A form or a text body from another page: not JSON.
        (
            None,
            vec![("content-type", "application/x-www-form-urlencoded")],
            415,
        ),
        (None, vec![("content-type", "text/plain")], 415),
        (None, vec![], 415),
        // JSON, but from another site.
        (None, vec![json, ("sec-fetch-site", "cross-site")], 403),
        (None, vec![json, ("origin", "https://evil.example")], 403),
    ];
    for (host, headers, status) in cases {
        let res = send(host, &headers, "{}").await.unwrap();
        assert_eq!(res.status().as_u16(), status, "{host:?} {headers:?}");
        assert_eq!(res.headers()["x-content-type-options"], "nosniff");
        let body: Value = res.json().await.unwrap();
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{body}"
        );
    }
    assert_eq!(count().await, before, "nothing was created");
    // Reads under another name are refused too; the page itself as well.
    let res = app
        .client
        .get(app.url("/api/sessions"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let res = app
        .client
        .get(app.url("/"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);

    // This site's own page, and a script without Origin, go through.
    let (status, _) = app.post("/api/session/new", json!({})).await;
    assert_eq!(status, 200);
    let own = app
        .client
        .post(app.url("/api/session/new"))
        .header("content-type", "application/json")
        .header("origin", format!("http://{}", app.addr))
        .header("sec-fetch-site", "same-origin")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 200);
    let localhost = app
        .client
        .get(app.url("/api/sessions"))
        .header("host", format!("localhost:{}", app.addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(localhost.status(), 200);
    assert_eq!(count().await, before + 2);
}
