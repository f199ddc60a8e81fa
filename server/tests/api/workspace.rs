//! The workspace seen from the app: each account lists and reads its own agent's files,
//! read-only, and nothing else; files come as text, images or downloads, never as pages.

use serde_json::Value;

use crate::backends::openai;
use crate::helpers::TestApp;
use crate::upstream::Upstream;

async fn id_of(app: &TestApp, name: &str) -> String {
    app.store
        .users()
        .await
        .unwrap()
        .into_iter()
        .find(|u| u.name == name)
        .unwrap()
        .id
}

fn names(listing: &Value) -> Vec<String> {
    listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap();
            if e["dir"] == true {
                format!("{name}/")
            } else {
                name.to_owned()
            }
        })
        .collect()
}

#[tokio::test]
async fn each_account_reads_its_own_workspace_and_no_one_elses() {
    let upstream = Upstream::start().await;
    let ws = tempfile::tempdir().unwrap();
    let app = TestApp::builder()
        .adapter(openai(&upstream, ws.path(), 4))
        .spawn()
        .await;
    let (alice, bob) = app.two_users(false).await;
    // What her agent wrote (its tools write under her account's directory).
    let hers = ws.path().join(id_of(&app, "alice").await);
    std::fs::create_dir_all(hers.join("notes")).unwrap();
    std::fs::write(hers.join("notes/plans.md"), "# Alice's secret plans\n").unwrap();
    std::fs::write(hers.join("page.html"), "<script>alert(1)</script>").unwrap();
    std::fs::write(hers.join("blob.bin"), [0u8, 159, 146, 150]).unwrap();
    std::fs::write(hers.join("dot.png"), b"\x89PNG\r\n\x1a\n....").unwrap();

    app.use_cookie(Some(&alice));
    let (code, top) = app.get("/api/workspace").await;
    assert_eq!(code, 200, "{top}");
    assert_eq!(names(&top), ["notes/", "blob.bin", "dot.png", "page.html"]);
    assert_eq!(top["path"], "");
    let (code, notes) = app.get("/api/workspace?path=notes").await;
    assert_eq!(code, 200);
    assert_eq!(notes["entries"][0]["path"], "notes/plans.md");
    assert_eq!(notes["entries"][0]["size"], 23);

    // Text is plain text, shown in place; HTML is text too, never a page of the site.
    let res = app
        .get_with("/api/workspace/file?path=notes/plans.md", &[])
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/plain; charset=utf-8");
    assert!(res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("inline;"));
    assert_eq!(res.headers()["cache-control"], "private, no-store");
    assert_eq!(res.text().await.unwrap(), "# Alice's secret plans\n");
    let res = app
        .get_with("/api/workspace/file?path=page.html", &[])
        .await;
    assert_eq!(res.headers()["content-type"], "text/plain; charset=utf-8");
    assert!(res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("sandbox"));
    let res = app.get_with("/api/workspace/file?path=dot.png", &[]).await;
    assert_eq!(res.headers()["content-type"], "image/png");
    // Anything else, and anything asked for as a download, is a download.
    let res = app.get_with("/api/workspace/file?path=blob.bin", &[]).await;
    assert_eq!(res.headers()["content-type"], "application/octet-stream");
    assert!(res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment;"));
    let res = app
        .get_with("/api/workspace/file?path=notes/plans.md&download=true", &[])
        .await;
    assert_eq!(
        res.headers()["content-disposition"],
        "attachment; filename*=UTF-8''plans.md"
    );

    // Paths stay inside; what is not there is 404; a directory is not a file.
    for (path, status) in [
        ("/api/workspace?path=..", 400),
        ("/api/workspace?path=/etc", 400),
        ("/api/workspace/file?path=../../etc/passwd", 400),
        ("/api/workspace/file?path=notes", 400),
        ("/api/workspace/file?path=gone.txt", 404),
        ("/api/workspace?path=gone", 404),
        ("/api/workspace/file", 400),
    ] {
        let (code, body) = app.get(path).await;
        assert_eq!(code, status, "{path}: {body}");
        assert!(body["error"].is_string(), "{path}: {body}");
    }

    // Bob's workspace is his own: empty, and hers is not reachable from it.
    app.use_cookie(Some(&bob));
    let (code, his) = app.get("/api/workspace").await;
    assert_eq!(code, 200);
    assert!(names(&his).is_empty(), "{his}");
    let alice_id = id_of(&app, "alice").await;
    for path in [
        "/api/workspace/file?path=notes/plans.md".to_owned(),
        format!("/api/workspace/file?path=../{alice_id}/notes/plans.md"),
        format!("/api/workspace?path=../{alice_id}"),
    ] {
        let (code, text) = app.raw_get(&path).await;
        assert!(code == 404 || code == 400, "{path}: {code}");
        assert!(!text.contains("secret plans"), "{path}: {text}");
    }
    // Signed out: 401.
    app.use_cookie(None);
    let (code, _) = app.get("/api/workspace").await;
    assert_eq!(code, 401);
}

#[tokio::test]
async fn an_agent_that_keeps_no_files_has_no_workspace_to_show() {
    let app = TestApp::builder().spawn().await;
    let (code, body) = app.get("/api/workspace").await;
    assert_eq!(code, 404, "{body}");
    assert!(body["reason"].as_str().unwrap().contains("keeps no files"));
}
