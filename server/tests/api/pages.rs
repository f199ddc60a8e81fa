use crate::helpers::{session_ids, TestApp};

#[tokio::test]
async fn healthz_reports_ok() {
    let app = TestApp::builder().spawn().await;
    let res = reqwest::get(app.url("/healthz")).await.unwrap();
    assert_eq!(res.status(), 200);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body, serde_json::json!({"status": "ok"}));
}

#[tokio::test]
async fn home_page_is_rendered_on_the_server_with_its_hydration_scripts() {
    let app = TestApp::builder().spawn().await;
    let res = reqwest::get(app.url("/")).await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = res.text().await.unwrap();
    assert!(html.contains(r#"<nav id="sidebar""#), "sidebar rendered");
    assert!(html.contains("Start a conversation"), "empty chat rendered");
    assert!(html.contains(r#"id="composer-input""#), "composer rendered");
    assert!(
        html.contains("/pkg/anchorage.js"),
        "hydration script referenced"
    );
    assert!(html.contains("/pkg/anchorage.css"), "stylesheet linked");
    assert!(
        html.contains("Demo agent (no model)"),
        "the sidebar says who answers"
    );
    assert!(
        !html.contains("data-hydrated"),
        "only the browser marks the page hydrated"
    );
}

#[tokio::test]
async fn unknown_pages_answer_404_with_a_way_back() {
    let app = TestApp::builder().spawn().await;
    let res = reqwest::get(app.url("/no/such/page")).await.unwrap();
    assert_eq!(res.status(), 404);
    let html = res.text().await.unwrap();
    assert!(html.contains("Page not found"));
    assert!(html.contains(r#"href="/""#));
}

#[tokio::test]
async fn built_assets_are_served_from_the_site_root() {
    let app = TestApp::builder().spawn().await;
    let res = reqwest::get(app.url("/pkg/anchorage.css")).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "body{color:red}");
    assert!(app.site.path().exists());
}

#[tokio::test]
async fn pages_are_compressed_but_event_streams_are_not() {
    let app = TestApp::builder().spawn().await;
    let client = reqwest::Client::new();
    let page = client
        .get(app.url("/"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(
        page.headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap()),
        Some("gzip")
    );

    let session = app.new_session().await;
    let run = app.start(&session, "hello").await;
    app.wait_finished(&run).await;
    let stream = client
        .get(app.url(&format!("/api/chat/stream?run_id={run}&after_seq=0")))
        .header("accept-encoding", "gzip, br")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    assert!(stream.headers().get("content-encoding").is_none());
    let events = crate::helpers::read_sse(stream).await;
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("stream_end"));
}

#[tokio::test]
async fn the_bundle_is_served_from_compressed_copies_kept_outside_the_site_folder() {
    use std::io::Read as _;
    let data = tempfile::tempdir().unwrap();
    let cache = server::assets::cache_dir(data.path(), "0123456789abcdef");
    let kept = cache.clone();
    let app = TestApp::builder()
        .configure(move |state| {
            let mut bundle = (*state.bundle).clone();
            bundle.cache = Some(kept);
            state.bundle = std::sync::Arc::new(bundle);
        })
        .spawn()
        .await;
    let pkg = app.site.path().join("pkg");
    let css: String = (0..4000)
        .map(|i| format!(".c{i}{{color:#{:06x}}}\n", i * 97))
        .collect();
    std::fs::write(pkg.join("anchorage.css"), &css).unwrap();
    // A copy an older server left beside the original: never trusted (it may be stale).
    std::fs::write(pkg.join("anchorage.css.br"), b"stale").unwrap();
    let listed = |dir: &std::path::Path| {
        let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                let name = e.file_name().into_string().unwrap();
                (name, e.metadata().unwrap().len())
            })
            .collect();
        files.sort();
        files
    };
    let site_before = listed(&pkg);
    let client = reqwest::Client::new();
    let get = |encoding: &'static str| {
        client
            .get(app.url("/pkg/anchorage.css"))
            .header("accept-encoding", encoding)
            .send()
    };
    let brotli_text = |body: &[u8]| {
        let mut decoded = String::new();
        brotli::Decompressor::new(body, 4096)
            .read_to_string(&mut decoded)
            .unwrap();
        decoded
    };

    // Before the copies exist: the original, compressed on the fly.
    let res = get("br").await.unwrap();
    assert_eq!(res.status(), 200);
    let on_the_fly = res.headers().get("content-encoding").cloned();
    let body = res.bytes().await.unwrap();
    match on_the_fly {
        Some(e) if e == "br" => assert_eq!(brotli_text(&body), css),
        _ => assert_eq!(body, css.as_bytes()),
    }

    assert_eq!(
        server::assets::fill_cache(&pkg, &cache).unwrap(),
        3,
        "the css, its .br and its .gz"
    );
    let res = get("gzip, br").await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-encoding"], "br");
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/css"));
    let body = res.bytes().await.unwrap();
    assert_eq!(
        body.len() as u64,
        std::fs::metadata(cache.join("anchorage.css.br"))
            .unwrap()
            .len()
    );
    assert_eq!(brotli_text(&body), css);
    let res = get("gzip").await.unwrap();
    assert_eq!(res.headers()["content-encoding"], "gzip");
    let res = get("identity").await.unwrap();
    assert!(res.headers().get("content-encoding").is_none());
    assert_eq!(res.text().await.unwrap(), css);

    // The server wrote nothing into its site folder.
    assert_eq!(listed(&pkg), site_before);
}

/// The JSON the page carries for hydration, read back out of the HTML.
fn page_data(html: &str) -> serde_json::Value {
    let open = format!(
        r#"<script type="application/json" id="{}">"#,
        app::PAGE_DATA_ID
    );
    let start = html.find(&open).expect("the page carries its data") + open.len();
    let end = start
        + html[start..]
            .find("</script>")
            .expect("the data element ends");
    serde_json::from_str(&html[start..end]).expect("the page data is JSON")
}

#[tokio::test]
async fn a_session_page_carries_the_data_it_was_rendered_from() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let (status, _) = app
        .post(
            "/api/session/rename",
            serde_json::json!({"session_id": session, "title": "</script><b>x</b>"}),
        )
        .await;
    assert_eq!(status, 200);
    let run = app.start(&session, "hello <script>alert(1)</script>").await;
    app.wait_finished(&run).await;

    let html = reqwest::get(app.url(&format!("/s/{session}")))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let title = &html[html.find("<title>").unwrap()..html.find("</title>").unwrap()];
    assert_eq!(
        title, "<title>&lt;/script&gt;&lt;b&gt;x&lt;/b&gt; · Anchorage",
        "the tab names the conversation, escaped"
    );
    let data = page_data(&html);
    assert_eq!(data["session"]["id"], session.as_str());
    assert_eq!(data["session"]["title"], "</script><b>x</b>");
    let turn = &data["session"]["turns"][0];
    assert_eq!(turn["run_id"], run.as_str());
    assert_eq!(turn["user"]["content"], "hello <script>alert(1)</script>");
    // A settled turn comes as its snapshot: the answer, not the rows.
    assert_eq!(turn["events"], serde_json::json!([]));
    assert!(turn["snapshot"]["answer"]
        .as_str()
        .is_some_and(|a| !a.is_empty()));
    assert_eq!(data["missing"], false);

    // The same data as JSON for in-page navigation.
    let (status, mut json) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(status, 200);
    // Both say when they were made, a moment apart.
    let (mut data, made) = (data.clone(), data["now"].as_f64().unwrap());
    assert!((json["now"].as_f64().unwrap() - made).abs() < 60.0);
    json["now"] = serde_json::json!(0);
    data["now"] = serde_json::json!(0);
    assert_eq!(json, data);
}

#[tokio::test]
async fn an_unknown_session_shows_the_newest_with_a_notice() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let html = reqwest::get(app.url("/s/no-such-session"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("does not exist"));
    let data = page_data(&html);
    assert_eq!(data["missing"], true);
    assert_eq!(data["session"]["id"], session.as_str());

    let (status, json) = app.get("/api/page?session_id=no-such-session").await;
    assert_eq!(status, 200);
    assert_eq!(json["missing"], true);
    let (status, json) = app.get("/api/page").await;
    assert_eq!(status, 200);
    assert_eq!(json["session"]["id"], session.as_str());
    assert_eq!(json["missing"], false);
}

#[tokio::test]
async fn pages_carry_a_policy_that_admits_only_their_own_hydration_script() {
    let app = TestApp::builder().spawn().await;
    let mut nonces = Vec::new();
    for _ in 0..2 {
        let res = reqwest::get(app.url("/")).await.unwrap();
        let h = res.headers().clone();
        assert_eq!(h["x-frame-options"], "DENY");
        assert_eq!(h["referrer-policy"], "same-origin");
        assert_eq!(h["x-content-type-options"], "nosniff");
        let policy = h["content-security-policy"].to_str().unwrap().to_owned();
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        let nonce = policy
            .split("'nonce-")
            .nth(1)
            .and_then(|rest| rest.split('\'').next())
            .expect("a nonce in the policy")
            .to_owned();
        let html = res.text().await.unwrap();
        // Every inline script that runs carries the nonce; the page data is not a script.
        let scripts: Vec<&str> = html.split("<script").skip(1).collect();
        assert!(!scripts.is_empty());
        for script in scripts {
            let tag = script.split('>').next().unwrap();
            if tag.contains("application/json") {
                continue;
            }
            assert!(tag.contains(&format!("nonce=\"{nonce}\"")), "{tag}");
        }
        nonces.push(nonce);
    }
    assert_ne!(nonces[0], nonces[1], "a fresh nonce per page");

    // Other HTML gets the policy without a nonce; JSON and files are never sniffed.
    let res = reqwest::get(app.url("/no/such/page")).await.unwrap();
    let policy = res.headers()["content-security-policy"].to_str().unwrap();
    assert!(!policy.contains("nonce-") && policy.contains("script-src 'self'"));
    assert_eq!(res.headers()["x-frame-options"], "DENY");
    for path in ["/api/sessions", "/pkg/anchorage.css", "/healthz"] {
        let res = reqwest::get(app.url(path)).await.unwrap();
        assert_eq!(res.headers()["x-content-type-options"], "nosniff", "{path}");
    }
}

#[tokio::test]
async fn a_long_conversation_opens_on_its_latest_window_and_loads_earlier_ones_before_it() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let mut runs = Vec::new();
    for i in 0..25 {
        let run = app
            .start(&session, &format!("/demo long {}", 2 + i % 3))
            .await;
        app.wait_finished(&run).await;
        runs.push(run);
    }
    let run_ids = |page: &serde_json::Value| -> Vec<String> {
        page["session"]["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["run_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (code, page) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(code, 200);
    assert_eq!(
        run_ids(&page),
        runs[5..].to_vec(),
        "the latest 20, in order"
    );
    assert_eq!(page["session"]["earlier"], serde_json::json!(true));
    // The rendered page carries the same window.
    let html = reqwest::get(app.url(&format!("/s/{session}")))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(html.matches("data-turn-id=").count(), 20);
    assert!(!html.contains(&runs[4]), "an older turn is not in the page");
    // "Show earlier": the window before the first one shown.
    let (code, earlier) = app
        .get(&format!(
            "/api/page?session_id={session}&before_run_id={}",
            runs[5]
        ))
        .await;
    assert_eq!(code, 200);
    assert_eq!(run_ids(&earlier), runs[..5].to_vec());
    assert_eq!(earlier["session"]["earlier"], serde_json::json!(false));
    // An unknown run: nothing earlier, not the whole conversation.
    let (_, none) = app
        .get(&format!(
            "/api/page?session_id={session}&before_run_id=nosuchrun"
        ))
        .await;
    assert_eq!(run_ids(&none), Vec::<String>::new());
    // Catching up after a run gives the turns after it, a window at most: when more came,
    // the latest window, marked as leaving turns out.
    let latest = runs.len() - 20;
    let (_, after) = app
        .get(&format!(
            "/api/page?session_id={session}&after_run_id={}",
            runs[latest - 1]
        ))
        .await;
    assert_eq!(run_ids(&after), runs[latest..].to_vec());
    assert_eq!(after["session"]["earlier"], serde_json::json!(false));
    let (_, after) = app
        .get(&format!(
            "/api/page?session_id={session}&after_run_id={}",
            runs[2]
        ))
        .await;
    assert_eq!(run_ids(&after), runs[latest..].to_vec());
    assert_eq!(after["session"]["earlier"], serde_json::json!(true));
}

#[tokio::test]
async fn the_sidebar_lists_a_page_of_sessions_and_any_session_still_opens() {
    let app = TestApp::builder().spawn().await;
    let mut ids = Vec::new();
    for i in 0..55 {
        let (_, body) = app
            .post(
                "/api/session/new",
                serde_json::json!({"title": format!("Conversation {i}")}),
            )
            .await;
        ids.push(body["session"]["id"].as_str().unwrap().to_owned());
    }
    let (_, page) = app.get("/api/page").await;
    let listed = page["sessions"].as_array().unwrap();
    assert_eq!(
        listed.len(),
        server::pages::SIDEBAR_PAGE,
        "the top of the sidebar"
    );
    assert_eq!(page["more_sessions"], serde_json::json!(true));
    assert_eq!(listed[0]["id"], serde_json::json!(ids[54]), "newest first");
    // The oldest is not listed, and still opens (it is not "missing").
    let (_, oldest) = app.get(&format!("/api/page?session_id={}", ids[0])).await;
    assert_eq!(oldest["missing"], serde_json::json!(false));
    assert_eq!(oldest["session"]["id"], serde_json::json!(ids[0]));
    let html = reqwest::get(app.url(&format!("/s/{}", ids[0])))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("Conversation 0"));
    assert_eq!(
        html.matches("class=\"session-row").count(),
        server::pages::SIDEBAR_PAGE
    );
    // The next page, and the end.
    let (_, next) = app.get("/api/sessions?offset=10&limit=50").await;
    let rest = session_ids(&next);
    assert_eq!(
        rest,
        ids[..45]
            .iter()
            .rev()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    assert_eq!(next["more"], serde_json::json!(false));
    let (_, all) = app.get("/api/sessions").await;
    assert_eq!(
        all["sessions"].as_array().unwrap().len(),
        55,
        "without a limit: all"
    );
    let (code, _) = app.get("/api/sessions?limit=nope").await;
    assert_eq!(code, 400);
}

/// Every row of a run's journal, through `/api/chat/journal`, page after page.
async fn whole_journal(app: &TestApp, run: &str) -> (Vec<app::api::JournalEvent>, usize) {
    let mut events = Vec::new();
    let mut after = 0;
    let mut pages = 0;
    loop {
        let (code, page) = app
            .get(&format!("/api/chat/journal?run_id={run}&after={after}"))
            .await;
        assert_eq!(code, 200, "{page}");
        pages += 1;
        let page: app::api::JournalPage = serde_json::from_value(page).unwrap();
        assert_eq!(page.run_id, run);
        events.extend(page.events);
        match page.next {
            Some(next) => after = next,
            None => return (events, pages),
        }
    }
}

/// What a page made from these journal rows shows of the turn, as its snapshot.
fn snapshot_of(run: &str, events: Vec<app::api::JournalEvent>) -> app::api::TurnSnapshot {
    let turn = app::api::TurnData {
        user: app::api::MessageData {
            id: "u".into(),
            content: String::new(),
            created_at: 0.0,
            attachments: Vec::new(),
        },
        run_id: run.into(),
        turn_id: "t".into(),
        events,
        running: false,
        snapshot: None,
        versions: Default::default(),
        model: None,
    };
    app::model::TurnState::new("s", &turn)
        .snapshot()
        .expect("the turn settled")
}

#[tokio::test]
async fn a_settled_turn_travels_as_its_snapshot_and_its_rows_come_when_asked() {
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let tools = app.start(&session, "/demo tools").await;
    app.wait_finished(&tools).await;
    let failed = app.start(&session, "/demo error").await;
    app.wait_finished(&failed).await;
    let long = app.start(&session, "/demo long 6000").await;
    app.wait_finished(&long).await;

    let (code, page) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(code, 200);
    let turns = page["session"]["turns"].as_array().unwrap().clone();
    assert_eq!(turns.len(), 3);
    // The completed turns: their snapshots, no rows.
    for (turn, run) in [(&turns[0], &tools), (&turns[2], &long)] {
        assert_eq!(turn["events"], serde_json::json!([]), "{run}");
        let snapshot: app::api::TurnSnapshot =
            serde_json::from_value(turn["snapshot"].clone()).unwrap();
        // The same as the page's model makes of the whole journal, fetched on demand.
        let (rows, pages) = whole_journal(&app, run).await;
        assert_eq!(rows.len() as u64, snapshot.last_seq);
        assert!(rows.windows(2).all(|w| w[1].seq == w[0].seq + 1), "gapless");
        assert_eq!(snapshot, snapshot_of(run, rows));
        if run == &long {
            assert!(pages >= 2, "6,000 rows come in pages");
            assert!(snapshot.answer.starts_with("w0 w1 ") && snapshot.settled);
        } else {
            assert_eq!(
                snapshot.steps, 6,
                "two thoughts, three tool calls, a remark"
            );
            assert_eq!(snapshot.stream.1, 3);
        }
    }
    // A small turn that failed opens its worklog: it comes with its rows.
    assert!(turns[1]["snapshot"].is_null());
    assert!(!turns[1]["events"].as_array().unwrap().is_empty());
    // The page is the answers and little more, not the 6,000 rows behind the last one.
    let bytes = serde_json::to_string(&page).unwrap().len();
    let answers = turns[2]["snapshot"]["answer"].as_str().unwrap().len();
    assert!(bytes < answers + 12_000, "{bytes} bytes");

    // A reader of the Transparent Stream gets the rows of small turns in the first page.
    app.use_cookie(Some("anchorage_mode=transparent_stream"));
    let (_, trace) = app.get(&format!("/api/page?session_id={session}")).await;
    let turns = trace["session"]["turns"].as_array().unwrap();
    assert!(turns[0]["snapshot"].is_null());
    assert!(!turns[0]["events"].as_array().unwrap().is_empty());
    assert!(
        turns[2]["snapshot"].is_object(),
        "6,000 rows wait to be asked for"
    );
    let html = reqwest::Client::new()
        .get(app.url(&format!("/s/{session}")))
        .header("cookie", "anchorage_mode=transparent_stream")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(page_data(&html)["session"], trace["session"]);
    app.use_cookie(None);

    // Bad questions get a JSON answer.
    let (code, body) = app.get("/api/chat/journal").await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"].is_string());
    let (code, _) = app.get("/api/chat/journal?run_id=nosuchrun").await;
    assert_eq!(code, 404);
    let (code, _) = app
        .get(&format!("/api/chat/journal?run_id={tools}&after=x"))
        .await;
    assert_eq!(code, 400);
}

/// Stores a snapshot of the version before this one for `run`, as an upgrade leaves them.
async fn make_stale(app: &TestApp, run: &str) {
    let stale = r#"{"answer":"stale"}"#;
    let version = server::snapshots::VERSION - 1;
    app.store.put_snapshot(run, version, stale).await.unwrap();
}

#[tokio::test]
async fn snapshots_missing_or_of_an_older_version_are_made_again() {
    use server::store::Store;
    let app = TestApp::builder().spawn().await;
    let session = app.new_session().await;
    let run = app.start(&session, "/demo tools").await;
    app.wait_finished(&run).await;
    let (_, page) = app.get(&format!("/api/page?session_id={session}")).await;
    let fresh = page["session"]["turns"][0]["snapshot"].clone();
    assert!(fresh.is_object());
    // An older version (as after an upgrade) is not used: the page makes it again.
    make_stale(&app, &run).await;
    let (_, again) = app.get(&format!("/api/page?session_id={session}")).await;
    assert_eq!(again["session"]["turns"][0]["snapshot"], fresh);
    // And the pass at startup makes what is missing.
    make_stale(&app, &run).await;
    let store: std::sync::Arc<dyn Store> = app.store.clone();
    assert_eq!(server::snapshots::backfill(store.clone()).await.unwrap(), 1);
    assert_eq!(server::snapshots::backfill(store).await.unwrap(), 0);
    let stored = app
        .store
        .snapshots(std::slice::from_ref(&run), server::snapshots::VERSION)
        .await
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(&stored[&run]).unwrap();
    assert_eq!(stored, fresh);
}

#[tokio::test]
async fn an_empty_conversation_offers_the_agents_examples() {
    let app = TestApp::builder().spawn().await;
    let (code, page) = app.get("/api/page").await;
    assert_eq!(code, 200);
    let prompts: Vec<&str> = page["examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["prompt"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["/demo tools", "/demo approval", "/demo long 400"]);
    // And the HTML shows them before any script runs.
    let html = app
        .client
        .get(app.url("/new"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("Watch it use tools") && html.contains("/demo approval"));
}

/// The build's id the service worker names.
fn worker_build(script: &str) -> String {
    let start = script
        .find("const BUILD = \"")
        .expect("the worker names its build")
        + 15;
    script[start..start + 16].to_owned()
}

#[tokio::test]
async fn the_service_worker_keeps_the_bundle_of_the_build_the_pages_link() {
    let app = TestApp::builder().spawn().await;
    let res = reqwest::get(app.url("/sw.js")).await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    // Never kept by the HTTP cache: the browser sees a new build at its next check.
    assert_eq!(res.headers()["cache-control"], "no-cache");
    let script = res.text().await.unwrap();
    let build = worker_build(&script);
    assert!(build.chars().all(|c| c.is_ascii_hexdigit()), "{build}");
    let css = format!("/build/{build}/pkg/anchorage.css");
    assert!(script.contains(&format!("\"{css}\"")), "{script}");

    // The page links that build's files and names the build.
    let html = reqwest::get(app.url("/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains(&format!("href=\"{css}\"")),
        "stylesheet of the build"
    );
    assert!(html.contains(&format!("/build/{build}/pkg/anchorage.js")));
    assert!(html.contains(&format!("name=\"anchorage-build\" content=\"{build}\"")));

    // Those addresses never change content; another build's are not here.
    let res = reqwest::get(app.url(&css)).await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("immutable"));
    assert_eq!(res.text().await.unwrap(), "body{color:red}");
    let res = reqwest::get(app.url("/build/0123456789abcdef/pkg/anchorage.css"))
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let res = reqwest::get(app.url(&format!("/build/{build}/pkg/nothing.wasm")))
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert!(res.headers().get("cache-control").is_none());
}

#[tokio::test]
async fn chat_pages_say_whose_they_are_to_keep_and_the_sign_in_page_does_not() {
    let app = TestApp::builder().spawn().await;
    let res = reqwest::get(app.url("/")).await.unwrap();
    assert_eq!(res.headers()["x-anchorage-save"], "open");
    let session = app.new_session().await;
    let res = reqwest::get(app.url(&format!("/s/{session}")))
        .await
        .unwrap();
    assert_eq!(res.headers()["x-anchorage-save"], "open");
    // A conversation that is not there shows the newest: nothing to keep at its address.
    let res = reqwest::get(app.url("/s/no-such-conversation"))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers().get("x-anchorage-save").is_none());
    let (status, _) = app
        .post(
            "/api/session/delete",
            serde_json::json!({"session_id": session}),
        )
        .await;
    assert_eq!(status, 200);
    let res = reqwest::get(app.url(&format!("/s/{session}")))
        .await
        .unwrap();
    assert!(res.headers().get("x-anchorage-save").is_none());

    let (alice, _bob) = app.two_users(false).await;
    let res = app
        .client
        .get(app.url("/"))
        .header("cookie", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let owner = res.headers()["x-anchorage-save"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(!owner.is_empty() && owner != "open");
    // Signed out: the sign-in page, nothing to keep.
    let res = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(app.url("/"))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_redirection(), "{}", res.status());
    assert!(res.headers().get("x-anchorage-save").is_none());
    // The worker and the bundle need no sign-in: they hold nothing of anyone's.
    assert_eq!(reqwest::get(app.url("/sw.js")).await.unwrap().status(), 200);
}

#[tokio::test]
async fn under_cargo_leptos_watch_pages_load_the_bundle_from_pkg_and_no_worker_keeps_it() {
    // As `LEPTOS_WATCH=true` (`cargo leptos watch`) makes it: the bundle changes under the
    // running server, so a build address and a worker's cache would serve it stale.
    let config =
        <server::config::Config as clap::Parser>::parse_from(["server", "--leptos-watch", "true"]);
    assert!(config.leptos_watch);
    let app = TestApp::builder()
        .configure(|state| state.bundle = std::sync::Arc::new(server::offline::Bundle::watched()))
        .spawn()
        .await;
    let page = reqwest::get(app.url("/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("href=\"/pkg/anchorage.css\""), "{page}");
    assert!(!page.contains("/build/"), "{page}");
    assert!(!page.contains("anchorage-build"), "{page}");
    // A worker left by an earlier release build on this address takes itself away.
    let worker = reqwest::get(app.url("/sw.js")).await.unwrap();
    assert_eq!(worker.headers()["cache-control"], "no-cache");
    let worker = worker.text().await.unwrap();
    assert!(worker.contains("unregister()"), "{worker}");
    assert!(!worker.contains("addAll"), "{worker}");
    let css = reqwest::get(app.url("/pkg/anchorage.css")).await.unwrap();
    assert_eq!(css.status(), 200);
    assert!(css.headers().get("cache-control").is_none());
}
