//! The trust boundary around the agent: each account's agent works in a workspace of its own,
//! gateways are told which account a turn is for, a password in an upstream's URL reaches no
//! page or answer, attachments do not outlive a sign-out in the browser's cache, and nothing an
//! AG-UI agent sends grows the server's memory past a bound.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use server::runtime::agui_client::{AguiAgent, AguiSettings};
use server::runtime::openai::{OpenAiAgent, OpenAiSettings};
use server::runtime::workspaces::Workspaces;

use crate::backends::{stream, COMPLETIONS};
use crate::helpers::{Api, ServerProcess, TestApp, TestDb};
use crate::upstream::{data, delta, Piece, Reply, Upstream, DONE};

fn agent(upstream: &Upstream, workspace: &Path) -> Arc<OpenAiAgent> {
    agent_at(upstream.url("/v1"), workspace)
}

fn agent_at(base_url: String, workspace: &Path) -> Arc<OpenAiAgent> {
    let mut settings = OpenAiSettings::new(base_url, "sk-test".into(), "scripted-model");
    settings.max_tokens = None;
    settings.idle = Duration::from_secs(10);
    Arc::new(OpenAiAgent::new(settings, Workspaces::open(workspace, 1 << 20).unwrap()).unwrap())
}

async fn account_id(app: &TestApp, name: &str) -> String {
    app.store.user_credentials(name).await.unwrap().0.id
}

/// A scripted answer: `text`, then the end of the stream.
fn answer(text: &str) -> Reply {
    stream(&[
        delta(json!({"content": text}), None),
        delta(json!({}), Some("stop")),
        DONE.to_owned(),
    ])
}

/// A scripted step that calls each of `calls` (name, arguments).
fn calls(calls: &[(&str, Value)]) -> Reply {
    let mut parts: Vec<String> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            delta(
                json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}}]}),
                None,
            )
        })
        .collect();
    parts.push(delta(json!({}), Some("tool_calls")));
    parts.push(DONE.to_owned());
    stream(&parts)
}

/// The tool results the provider was sent in its last request, in order.
fn tool_results(upstream: &Upstream) -> Vec<String> {
    let last = upstream.requests(COMPLETIONS).pop().expect("a request");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Starts a turn and waits for its end; (run id, its status).
async fn run_turn(app: &TestApp, body: Value) -> (String, Value) {
    let (code, started) = app.post("/api/chat/start", body).await;
    assert_eq!(code, 200, "{started}");
    let run = started["run_id"].as_str().unwrap().to_owned();
    let status = app.wait_finished(&run).await;
    (run, status)
}

#[tokio::test]
async fn each_accounts_agent_sees_only_its_own_workspace() {
    let upstream = Upstream::start().await;
    let root = tempfile::tempdir().unwrap();
    let app = TestApp::builder()
        .adapter(agent(&upstream, root.path()))
        .spawn()
        .await;
    let (alice, bob) = app.two_users(false).await;
    let (alice_id, bob_id) = (
        account_id(&app, "alice").await,
        account_id(&app, "bob").await,
    );

    // Alice sends a text file: it is put in her workspace for her agent to read.
    app.use_cookie(Some(&alice));
    let session = app.new_session().await;
    let (code, up) = app
        .upload(
            "payroll.txt",
            b"SECRET-PAYROLL 1234\n".to_vec(),
            Some(&session),
        )
        .await;
    assert_eq!(code, 201, "{up}");
    upstream.script(COMPLETIONS, answer("Noted."));
    let send = json!({"session_id": session, "message": "keep this",
                      "attachments": [up["attachment"]["id"]]});
    let (_, status) = run_turn(&app, send).await;
    assert_eq!(status["terminal_state"], "completed", "{status}");
    let told = upstream
        .requests(COMPLETIONS)
        .pop()
        .unwrap()
        .body
        .to_string();
    let placed = told
        .split('`')
        .find(|p| p.starts_with("attachments/") && p.ends_with("payroll.txt"))
        .unwrap_or_else(|| panic!("the model is told where the file is: {told}"))
        .to_owned();
    let file = root.path().join(&alice_id).join(&placed);
    assert!(file.is_file(), "{} in alice's workspace", file.display());
    assert!(!root.path().join(&bob_id).join(&placed).exists());
    let written = std::fs::metadata(&file).unwrap().modified().unwrap();

    // A retry carries the same file: found where it is, not written again.
    let (_, s) = app.get(&format!("/api/session?session_id={session}")).await;
    let run = s["session"]["messages"][1]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    upstream.script(COMPLETIONS, answer("Noted again."));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (code, retried) = app
        .post(
            "/api/chat/retry",
            json!({"session_id": session, "run_id": run}),
        )
        .await;
    assert_eq!(code, 200, "{retried}");
    app.wait_finished(retried["run_id"].as_str().unwrap()).await;
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        written
    );

    // Bob's agent tries every way into alice's files.
    #[cfg(unix)]
    {
        std::fs::create_dir_all(root.path().join(&bob_id)).unwrap();
        std::os::unix::fs::symlink(
            root.path().join(&alice_id),
            root.path().join(&bob_id).join("door"),
        )
        .unwrap();
    }
    app.use_cookie(Some(&bob));
    let his = app.new_session().await;
    let theirs = format!("../{alice_id}/{placed}");
    let absolute = file.display().to_string();
    upstream.script(
        COMPLETIONS,
        calls(&[
            ("list_files", json!({"path": "."})),
            ("list_files", json!({"path": ".."})),
            ("search_text", json!({"query": "SECRET", "path": "."})),
            ("read_file", json!({"path": theirs})),
            ("read_file", json!({"path": absolute})),
            ("read_file", json!({"path": format!("door/{placed}")})),
            ("list_files", json!({"path": "door"})),
            (
                "write_file",
                json!({"path": format!("../{alice_id}/planted.txt"), "content": "x"}),
            ),
        ]),
    );
    upstream.script(COMPLETIONS, answer("Done looking."));
    let (_, status) = run_turn(
        &app,
        json!({"session_id": his, "message": "find the payroll"}),
    )
    .await;
    assert_eq!(status["terminal_state"], "completed", "{status}");
    let results = tool_results(&upstream);
    assert_eq!(results.len(), 8, "{results:?}");
    for (i, result) in results.iter().enumerate() {
        assert!(
            !result.contains("SECRET-PAYROLL"),
            "tool {i} leaked: {result}"
        );
    }
    // What lists or searches names none of her files (the others only echo his own path).
    for i in [0, 1, 2, 6] {
        assert!(
            !results[i].contains("payroll"),
            "tool {i} named her file: {}",
            results[i]
        );
        assert!(
            !results[i].contains(&alice_id),
            "tool {i} named her folder: {}",
            results[i]
        );
    }
    assert!(
        results[1].starts_with("Error:"),
        "climbing out: {}",
        results[1]
    );
    assert!(results[2].starts_with("No line"), "{}", results[2]);
    for (i, result) in results.iter().enumerate().skip(3) {
        assert!(result.starts_with("Error:"), "tool {i}: {result}");
    }
    assert!(!root.path().join(&alice_id).join("planted.txt").exists());
    // Her workspace holds her attachments only: nothing of his was written into it.
    assert!(std::fs::read_dir(root.path().join(&alice_id))
        .unwrap()
        .all(|e| e.unwrap().file_name() == "attachments"));
}

#[tokio::test]
async fn gateways_are_told_which_account_a_turn_is_for_and_never_its_name() {
    let upstream = Upstream::start().await;
    let adapter = Arc::new(
        AguiAgent::new(AguiSettings {
            url: upstream.url("/agent"),
            api_key: None,
            idle: Duration::from_secs(10),
            first_token: Duration::from_secs(10),
        })
        .unwrap(),
    );
    let app = TestApp::builder().adapter(adapter).spawn().await;
    let (alice, bob) = app.two_users(false).await;
    let finish = |text: &str| {
        let events = [
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": text}),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
        ];
        Reply::Stream(
            events
                .iter()
                .map(|e| Piece::Bytes(data(e.clone()).into_bytes()))
                .collect(),
        )
    };
    let mut tags = Vec::new();
    for cookie in [&alice, &bob, &alice] {
        app.use_cookie(Some(cookie));
        upstream.script("POST /agent", finish("hi"));
        let session = app.new_session().await;
        run_turn(&app, json!({"session_id": session, "message": "hello"})).await;
        let sent = upstream.requests("POST /agent").pop().unwrap().body;
        tags.push(sent["forwardedProps"]["anchorage"]["account"].clone());
    }
    assert!(tags[0].is_string(), "{tags:?}");
    assert_eq!(tags[0], tags[2], "stable for an account");
    assert_ne!(tags[0], tags[1], "apart for two accounts");
    let alice_id = account_id(&app, "alice").await;
    for tag in &tags {
        let tag = tag.as_str().unwrap();
        assert!(!tag.contains(&alice_id) && !tag.contains("alice") && !tag.contains("bob"));
    }
}

#[tokio::test]
async fn a_password_in_the_providers_url_reaches_no_page_and_no_answer() {
    const PASSWORD: &str = "PW-hunter2-secret";
    // A provider that is not there: every error it causes names its URL.
    let port = crate::helpers::free_port();
    let base = format!("http://llmuser:{PASSWORD}@127.0.0.1:{port}/v1");
    let root = tempfile::tempdir().unwrap();
    let app = TestApp::builder()
        .adapter(agent_at(base, root.path()))
        .spawn()
        .await;
    let session = app.new_session().await;
    let (run, status) = run_turn(&app, json!({"session_id": session, "message": "hello"})).await;
    assert_eq!(status["terminal_state"], "error");
    let mut seen = Vec::new();
    for path in [
        "/".to_owned(),
        format!("/s/{session}"),
        format!("/api/page?session_id={session}"),
        format!("/api/session?session_id={session}"),
        "/api/models".to_owned(),
        "/api/models?refresh=true".to_owned(),
        format!("/api/session/export?session_id={session}&format=jsonl"),
        format!("/api/session/export?session_id={session}&format=md"),
    ] {
        let (code, body) = app.raw_get(&path).await;
        assert!(code < 500, "{path}: {code}");
        assert!(
            !body.contains(PASSWORD),
            "{path} shows the password: {body}"
        );
        assert!(!body.contains("llmuser"), "{path} shows the user: {body}");
        seen.push(body);
    }
    // What is shown still says which provider: its host.
    assert!(
        seen[0].contains(&format!("127.0.0.1:{port}")),
        "the label names the host"
    );
    let models: Value = serde_json::from_str(&seen[4]).unwrap();
    assert!(
        models["error"]
            .as_str()
            .unwrap()
            .contains("[redacted]@127.0.0.1"),
        "{models}"
    );
    let events = app.stream(&run, None).await;
    assert!(events.iter().any(|e| e.event == "apperror"));
    for e in &events {
        assert!(!e.data.to_string().contains(PASSWORD), "{:?}", e.data);
    }
}

#[tokio::test]
async fn attachments_are_never_kept_in_the_browsers_cache() {
    let app = crate::helpers::TestApp::builder().spawn().await;
    let (code, up) = app.upload("a.txt", b"hello".to_vec(), None).await;
    assert_eq!(code, 201, "{up}");
    let id = up["attachment"]["id"].as_str().unwrap();
    let res = app.get_with(&format!("/api/attachment?id={id}"), &[]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["cache-control"], "private, no-store");
}

/// A field of a process's `/proc/PID/status` in bytes (Linux): `VmHWM` (peak resident),
/// `RssAnon` (its own memory now), `RssFile` (pages of files it maps, now).
fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"));
    kb * 1024
}

fn peak_rss(pid: u32) -> u64 {
    status_bytes(pid, "VmHWM")
}

/// Samples a process's own memory (`RssAnon`) every 10 ms until dropped; the most seen.
struct AnonPeak {
    most: Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl AnonPeak {
    fn watch(pid: u32) -> Self {
        let most = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen = Arc::clone(&most);
        let task = tokio::spawn(async move {
            loop {
                let now = status_bytes(pid, "RssAnon");
                seen.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        AnonPeak { most, task }
    }

    fn most(&self) -> u64 {
        self.most.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for AnonPeak {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn what_an_agui_agent_sends_cannot_grow_the_servers_memory() {
    let upstream = Upstream::start().await;
    let db = TestDb::new().await;
    let site = tempfile::tempdir().unwrap();
    let url = upstream.url("/agent");
    let server =
        ServerProcess::launch(&db, site.path(), &["--backend", "agui", "--agui-url", &url]).await;
    let app = Api::new(&server.base);
    let start = json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"});
    let opening = data(start.clone()).into_bytes();

    // 1. A state that copies itself into itself: 2 KB that would double forty times.
    let mut ops = vec![json!({"op": "add", "path": "/seed", "value": "s".repeat(2000)})];
    ops.extend((0..40).map(|i| json!({"op": "copy", "from": "", "path": format!("/c{i}")})));
    let doubling = [start.clone(), json!({"type": "STATE_DELTA", "delta": ops})];
    upstream.script(
        "POST /agent",
        Reply::Stream(
            doubling
                .iter()
                .map(|e| Piece::Bytes(data(e.clone()).into_bytes()))
                .collect(),
        ),
    );
    // 2. An event whose data lines never end (no blank line ever comes): 200 MB of them.
    let line = format!("data: {}\n", "x".repeat(1023)).into_bytes();
    upstream.script(
        "POST /agent",
        Reply::Stream(vec![
            Piece::Bytes(opening.clone()),
            Piece::Repeat(line, 200 * 1024),
        ]),
    );
    // 3. An answer of 100 MB, in 64 KiB deltas.
    let chunk = data(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m",
                            "delta": "y".repeat(64 * 1024)}))
    .into_bytes();
    upstream.script(
        "POST /agent",
        Reply::Stream(vec![Piece::Bytes(opening), Piece::Repeat(chunk, 1600)]),
    );
    let mut cards = Vec::new();
    let pid = server.child.id();
    let anon = AnonPeak::watch(pid);
    for message in [
        "double your state",
        "send an endless event",
        "write a long answer",
    ] {
        println!(
            "before {message:?}: peak RSS {} MB, own memory at most {} MB, file pages {} MB",
            peak_rss(pid) >> 20,
            anon.most() >> 20,
            status_bytes(pid, "RssFile") >> 20
        );
        let session = app.new_session().await;
        let run = app.start(&session, message).await;
        let status = app
            .wait_finished_within(&run, Duration::from_secs(60))
            .await;
        assert_eq!(status["terminal_state"], "error", "{message}: {status}");
        let events = app.stream(&run, None).await;
        let card = events
            .iter()
            .find(|e| e.event == "apperror")
            .map(|e| e.data["message"].as_str().unwrap_or_default().to_owned())
            .expect("an error card");
        cards.push(card);
    }
    assert!(
        cards[0].contains("state") && cards[0].contains("1 MiB"),
        "{}",
        cards[0]
    );
    assert!(cards[1].contains("4 MiB"), "{}", cards[1]);
    assert!(
        cards[2].contains("answer") && cards[2].contains("2 MiB"),
        "{}",
        cards[2]
    );
    let (rss, own) = (peak_rss(pid), anon.most());
    println!(
        "after the three turns: peak RSS {} MB (file pages now {} MB), own memory at most {} MB",
        rss >> 20,
        status_bytes(pid, "RssFile") >> 20,
        own >> 20
    );
    assert!(rss < 200 << 20, "peak RSS {} MB", rss >> 20);
}
