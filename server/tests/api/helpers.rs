use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use leptos::prelude::LeptosOptions;
use serde_json::{json, Value};
use server::runtime::demo::DemoAgent;
use server::runtime::RuntimeAdapter;
use server::store::Store;
use server::AppState;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// The passwords of the accounts [`TestApp::two_users`] makes.
pub const ALICE_PASSWORD: &str = "alice-password-1";
pub const BOB_PASSWORD: &str = "bob-password-22";

/// Names a PostgreSQL database to run every test against instead of SQLite (`make test`
/// sets it for a second pass): each test gets a schema of its own in it.
pub const TEST_DATABASE_ENV: &str = "ANCHORAGE_TEST_DATABASE_URL";

/// The database a test server keeps everything in: a SQLite file in a temporary directory,
/// or, when [`TEST_DATABASE_ENV`] names a PostgreSQL database, a fresh schema of its own in
/// it. The same tests run on either.
pub struct TestDb {
    /// The data directory (SQLite's file, the lock, the workspace).
    pub dir: TempDir,
    /// The PostgreSQL address, schema included (`None`: SQLite).
    pub url: Option<String>,
}

impl TestDb {
    /// A new, empty database.
    pub async fn new() -> TestDb {
        TestDb::in_dir(tempfile::tempdir().expect("a temporary data directory")).await
    }

    /// A new, empty database with its data directory in `dir`.
    pub async fn in_dir(dir: TempDir) -> TestDb {
        let url = match std::env::var(TEST_DATABASE_ENV) {
            Ok(base) if !base.trim().is_empty() => Some(new_schema(base.trim()).await),
            _ => None,
        };
        TestDb { dir, url }
    }

    /// A new SQLite database, whatever [`TEST_DATABASE_ENV`] says (for what only SQLite
    /// does: one process per data directory).
    pub fn sqlite() -> TestDb {
        TestDb {
            dir: tempfile::tempdir().expect("a temporary data directory"),
            url: None,
        }
    }

    /// A new schema in the PostgreSQL database [`TEST_DATABASE_ENV`] names (`None`: it names
    /// none).
    pub async fn postgres() -> Option<TestDb> {
        let base = std::env::var(TEST_DATABASE_ENV).ok()?;
        let base = base.trim();
        if base.is_empty() {
            return None;
        }
        Some(TestDb {
            dir: tempfile::tempdir().expect("a temporary data directory"),
            url: Some(new_schema(base).await),
        })
    }

    /// A store over it (a new connection each time: as a restarted server opens it).
    pub async fn open(&self) -> Arc<dyn Store> {
        server::store::sql::open(self.url.as_deref(), self.dir.path())
            .await
            .expect("database")
    }

    /// The flags that point a server process at it.
    pub fn args(&self) -> Vec<std::ffi::OsString> {
        let mut args = vec!["--data-dir".into(), self.dir.path().into()];
        if let Some(url) = &self.url {
            args.push("--database-url".into());
            args.push(url.into());
        }
        args
    }

    /// Whether it is PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.url.is_some()
    }
}

/// Makes a schema of its own in the PostgreSQL database `base`; returns an address whose
/// connections use it.
async fn new_schema(base: &str) -> String {
    use sqlx::{Connection as _, Executor as _};
    let schema = format!("t_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::postgres::PgConnection::connect(base)
        .await
        .unwrap_or_else(|e| panic!("{TEST_DATABASE_ENV} ({base}): {e}"));
    conn.execute(format!("CREATE SCHEMA {schema}").as_str())
        .await
        .expect("a test schema");
    let _ = conn.close().await;
    let join = if base.contains('?') { '&' } else { '?' };
    format!("{base}{join}options=-c%20search_path%3D{schema}")
}

/// A server on an ephemeral port with its own site root and database; stops when dropped.
/// Its HTTP helpers are [`Api`]'s.
pub struct TestApp {
    pub addr: SocketAddr,
    pub site: TempDir,
    /// Its database (kept while the server runs).
    pub _db: TestDb,
    /// A browser-like client of it.
    pub api: Api,
    /// The database the server uses.
    pub store: Arc<dyn Store>,
    /// The server's state (its counters, its limits).
    pub state: AppState,
    shutdown: CancellationToken,
}

impl std::ops::Deref for TestApp {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.api
    }
}

impl TestApp {
    /// Adds an account straight into the database.
    pub async fn add_user(&self, name: &str, password: &str, admin: bool) {
        let hash = server::auth::hash_password(password).unwrap();
        self.store
            .create_user(name, &hash, admin, server::clock::now())
            .await
            .expect("account");
    }

    /// Adds alice (admin when `alice_admin`) and bob, and signs both in; returns their cookies.
    pub async fn two_users(&self, alice_admin: bool) -> (String, String) {
        self.add_user("alice", ALICE_PASSWORD, alice_admin).await;
        self.add_user("bob", BOB_PASSWORD, false).await;
        (
            self.sign_in("alice", ALICE_PASSWORD).await,
            self.sign_in("bob", BOB_PASSWORD).await,
        )
    }
}

impl TestApp {
    /// The id of the account `name`.
    pub async fn user_id(&self, name: &str) -> String {
        self.store
            .users()
            .await
            .unwrap()
            .into_iter()
            .find(|u| u.name == name)
            .unwrap_or_else(|| panic!("no account {name}"))
            .id
    }

    /// POSTs JSON as the browser at `http://localhost:PORT` does (a passkey belongs to a
    /// name, not an address), with `cookie` if given; the status and the JSON body.
    pub async fn post_local(&self, cookie: Option<&str>, path: &str, body: Value) -> (u16, Value) {
        let url = self.url(path).replace("127.0.0.1", "localhost");
        let mut req = self.client.post(url).json(&body);
        if let Some(cookie) = cookie {
            req = req.header("cookie", cookie);
        }
        let res = req.send().await.unwrap();
        let code = res.status().as_u16();
        (code, res.json().await.unwrap_or(Value::Null))
    }
}

/// A passkey of `user_id` as the store keeps one, named `name`, that no browser holds (its
/// credential is no key: enough for what is kept of it, never to sign in).
pub fn stored_passkey(user_id: &str, id: &str, name: &str) -> server::store::StoredPasskey {
    server::store::StoredPasskey {
        id: id.to_owned(),
        user_id: user_id.to_owned(),
        credential_id: format!("credential-of-{id}"),
        name: name.to_owned(),
        passkey: "{}".into(),
        created_at: 1.0,
        last_used_at: None,
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A client of a server over HTTP, as a browser would be (a [`TestApp`]'s, or one of a server
/// in another process, a [`ServerProcess`]).
pub struct Api {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub client: reqwest::Client,
    /// The sign-in cookie the helpers send (`name=value`), if any.
    cookie: std::sync::Mutex<Option<String>>,
}

impl Api {
    /// A client of the server at `base`.
    pub fn new(base: &str) -> Self {
        Api {
            base: base.to_owned(),
            client: reqwest::Client::new(),
            cookie: std::sync::Mutex::new(None),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// From now on the helpers send this sign-in cookie (`None`: none).
    pub fn use_cookie(&self, cookie: Option<&str>) {
        *self.cookie.lock().unwrap() = cookie.map(str::to_owned);
    }

    fn with_cookie(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self.cookie.lock().unwrap().as_deref() {
            Some(cookie) => req.header("cookie", cookie),
            None => req,
        }
    }

    /// Signs in; returns the cookie to send (`anchorage_session=…`).
    pub async fn sign_in(&self, name: &str, password: &str) -> String {
        let res = self
            .client
            .post(self.url("/api/auth/login"))
            .json(&json!({"username": name, "password": password}))
            .send()
            .await
            .expect("sign-in request");
        assert_eq!(res.status(), 200, "signing in {name}");
        let set = res
            .headers()
            .get("set-cookie")
            .expect("a cookie")
            .to_str()
            .unwrap()
            .to_owned();
        set.split(';').next().unwrap().to_owned()
    }

    /// POSTs JSON; returns the status and the JSON body.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let (status, text) = self.raw_post(path, body).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// A GET's status and body text.
    pub async fn raw_get(&self, path: &str) -> (u16, String) {
        let res = self
            .with_cookie(self.client.get(self.url(path)))
            .send()
            .await
            .expect("request");
        (res.status().as_u16(), res.text().await.unwrap_or_default())
    }

    /// A JSON POST's status and body text (a stream read to its end).
    pub async fn raw_post(&self, path: &str, body: Value) -> (u16, String) {
        let res = self
            .with_cookie(self.client.post(self.url(path)))
            .json(&body)
            .send()
            .await
            .expect("request");
        (res.status().as_u16(), res.text().await.unwrap_or_default())
    }

    /// POSTs a body of bytes (a file); returns the status and the JSON body.
    pub async fn post_bytes(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
        let res = self
            .with_cookie(self.client.post(self.url(path)))
            .header("content-type", "application/x-ndjson")
            .body(body)
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// Uploads a file as an attachment (for `session`, if given); returns the status and
    /// the JSON body.
    pub async fn upload(&self, name: &str, bytes: Vec<u8>, session: Option<&str>) -> (u16, Value) {
        let mut path = format!("/api/attachments?name={}", urlencode(name));
        if let Some(session) = session {
            path.push_str(&format!("&session_id={session}"));
        }
        let res = self
            .with_cookie(self.client.post(self.url(&path)))
            .header("content-type", "application/octet-stream")
            .body(bytes)
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// GETs; returns the status and the JSON body.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let (status, text) = self.raw_get(path).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// `GET path` with these headers (a `cookie` among them replaces the signed-in one): the
    /// response as it came, for what the JSON helpers do not show (headers, streamed bodies).
    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("cookie"))
        {
            req = self.with_cookie(req);
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        req.send().await.unwrap()
    }

    /// The session's export in `format` (`md` or `jsonl`), as text.
    pub async fn export(&self, session: &str, format: &str) -> String {
        let path = format!("/api/session/export?session_id={session}&format={format}");
        let res = self.get_with(&path, &[]).await;
        assert_eq!(res.status(), 200, "{path}");
        res.text().await.unwrap()
    }

    pub async fn new_session(&self) -> String {
        let (status, body) = self.post("/api/session/new", json!({})).await;
        assert_eq!(status, 200, "{body}");
        body["session"]["id"].as_str().unwrap().to_owned()
    }

    /// Starts a turn; returns its run id.
    pub async fn start(&self, session: &str, message: &str) -> String {
        let (status, body) = self
            .post(
                "/api/chat/start",
                json!({"session_id": session, "message": message}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["run_id"].as_str().unwrap().to_owned()
    }

    /// Opens a run's event stream from `after` (the response, not yet read).
    pub async fn open_stream(&self, run: &str, after: Option<u64>) -> reqwest::Response {
        let mut url = self.url(&format!("/api/chat/stream?run_id={run}"));
        if let Some(after) = after {
            url.push_str(&format!("&after_seq={after}"));
        }
        self.with_cookie(self.client.get(url))
            .send()
            .await
            .expect("stream request")
    }

    /// Reads a run's stream from `after` to its end.
    pub async fn stream(&self, run: &str, after: Option<u64>) -> Vec<SseEvent> {
        let res = self.open_stream(run, after).await;
        assert_eq!(res.status(), 200);
        read_sse(res).await
    }

    /// Waits until a run has ended.
    pub async fn wait_finished(&self, run: &str) -> Value {
        self.wait_finished_within(run, Duration::from_secs(10))
            .await
    }

    /// Waits up to `limit` until a run has ended.
    pub async fn wait_finished_within(&self, run: &str, limit: Duration) -> Value {
        for _ in 0..(limit.as_millis() / 25).max(1) {
            let (_, status) = self
                .get(&format!("/api/chat/stream/status?run_id={run}"))
                .await;
            if status["terminal_state"].is_string() && !status["active"].as_bool().unwrap_or(true) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("run {run} did not finish");
    }
}

/// Follows a run live until an event of `kind` arrives; returns it.
pub async fn wait_for_event(app: &TestApp, run: &str, kind: &str) -> SseEvent {
    let mut body = app.open_stream(run, None).await.bytes_stream();
    let mut buffer = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(20), body.next())
        .await
        .expect("stalled")
    {
        buffer.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let event = block
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap_or_default()
                .to_owned();
            if event == kind {
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .unwrap();
                let id = block
                    .lines()
                    .find_map(|l| l.strip_prefix("id: "))
                    .map(str::to_owned);
                return SseEvent {
                    id,
                    event,
                    data: serde_json::from_str(data).unwrap(),
                };
            }
        }
    }
    panic!("no {kind} event");
}

/// One SSE event.
#[derive(Clone, Debug, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: String,
    pub data: Value,
}

impl SseEvent {
    pub fn seq(&self) -> u64 {
        self.id
            .as_deref()
            .and_then(|id| id.rsplit_once(':'))
            .and_then(|(_, s)| s.parse().ok())
            .unwrap_or(0)
    }
}

/// Parses an SSE body until the server ends it.
pub async fn read_sse(res: reqwest::Response) -> Vec<SseEvent> {
    let mut events = Vec::new();
    let mut buffer = String::new();
    let mut body = res.bytes_stream();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(30), body.next())
        .await
        .expect("stream stalled")
    {
        buffer.push_str(std::str::from_utf8(&chunk.expect("body chunk")).expect("utf-8"));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if let Some(event) = parse_block(&block) {
                events.push(event);
            }
        }
    }
    events
}

pub fn parse_block(block: &str) -> Option<SseEvent> {
    let mut id = None;
    let mut event = None;
    let mut data = String::new();
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("event: ") {
            event = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("data: ") {
            data.push_str(v);
        }
    }
    Some(SseEvent {
        id,
        event: event?,
        data: serde_json::from_str(&data).expect("data is JSON"),
    })
}

/// One adjustment of the state before a test's server serves.
type Configure = Box<dyn FnOnce(&mut AppState) + Send>;

/// How a test's server is made: `TestApp::builder()` then what differs from the default (a
/// fresh database, the demo agent with no pause, the default limits), then `spawn()`.
pub struct Builder {
    db: Option<TestDb>,
    adapter: Option<Arc<dyn RuntimeAdapter>>,
    demo_delay: Duration,
    configure: Vec<Configure>,
}

impl TestApp {
    /// A server on loopback, as the builder's calls adjust it.
    pub fn builder() -> Builder {
        Builder {
            db: None,
            adapter: None,
            demo_delay: Duration::ZERO,
            configure: Vec::new(),
        }
    }
}

impl Builder {
    /// On this database (default: a fresh one).
    pub fn db(mut self, db: TestDb) -> Self {
        self.db = Some(db);
        self
    }

    /// The demo agent pauses this long between chunks.
    pub fn demo_delay(mut self, delay: Duration) -> Self {
        self.demo_delay = delay;
        self
    }

    /// Turns run on `adapter` instead of the demo agent.
    pub fn adapter(mut self, adapter: Arc<dyn RuntimeAdapter>) -> Self {
        self.adapter = Some(adapter);
        self
    }

    /// A quiet stream gets a heartbeat this often.
    pub fn heartbeat(self, every: Duration) -> Self {
        self.configure(move |state| state.heartbeat = every)
    }

    /// `configure` adjusts the state before the server serves (limits, timeouts).
    pub fn configure(mut self, configure: impl FnOnce(&mut AppState) + Send + 'static) -> Self {
        self.configure.push(Box::new(configure));
        self
    }

    /// Starts it.
    pub async fn spawn(self) -> TestApp {
        let db = match self.db {
            Some(db) => db,
            None => TestDb::new().await,
        };
        let adapter = self.adapter.unwrap_or_else(|| {
            Arc::new(DemoAgent {
                delay: self.demo_delay,
            })
        });
        let configure = self.configure;
        spawn(db, adapter, move |state| {
            for step in configure {
                step(state);
            }
        })
        .await
    }
}

async fn spawn(
    db: TestDb,
    adapter: Arc<dyn RuntimeAdapter>,
    configure: impl FnOnce(&mut AppState),
) -> TestApp {
    let site = tempfile::tempdir().expect("a temporary site root");
    std::fs::create_dir_all(site.path().join("pkg")).unwrap();
    std::fs::write(site.path().join("pkg/anchorage.css"), "body{color:red}").unwrap();
    let leptos_options = LeptosOptions::builder()
        .output_name("anchorage")
        .site_root(site.path().to_string_lossy().into_owned())
        .build();
    let store = db.open().await;
    let shutdown = CancellationToken::new();
    let mut state = AppState::with_parts(
        Arc::clone(&store),
        adapter,
        leptos_options,
        shutdown.clone(),
    )
    .await;
    configure(&mut state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = shutdown.clone();
    tokio::spawn(server::serve(listener, state.clone(), async move {
        stop.cancelled().await
    }));
    TestApp {
        addr,
        site,
        _db: db,
        api: Api::new(&format!("http://{addr}")),
        store,
        state,
        shutdown,
    }
}

/// The ids of a listing's sessions (`/api/sessions`, its search), in order.
pub fn session_ids(list: &Value) -> Vec<&str> {
    list["sessions"]
        .as_array()
        .expect("a list of sessions")
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect()
}

/// A query value, percent-encoded.
pub fn urlencode(value: &str) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A free loopback port (free when asked: a server binds it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The server binary running on a free loopback port over `db`; killed when dropped.
pub struct ServerProcess {
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl ServerProcess {
    /// Starts the server binary on `db` with `args` and waits until it answers.
    pub async fn launch(db: &TestDb, site: &std::path::Path, args: &[&str]) -> ServerProcess {
        let addr = format!("127.0.0.1:{}", free_port());
        ServerProcess::launch_at(db, site, &addr, args).await
    }

    /// As [`ServerProcess::launch`], listening on `addr` (`0.0.0.0:PORT`, say).
    pub async fn launch_at(
        db: &TestDb,
        site: &std::path::Path,
        addr: &str,
        args: &[&str],
    ) -> ServerProcess {
        let child = ServerProcess::command(db, site, addr, args)
            .spawn()
            .expect("the server binary starts");
        ServerProcess::up(child, addr).await
    }

    /// As [`ServerProcess::launch`], with these environment variables besides.
    pub async fn launch_with(
        db: &TestDb,
        site: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> ServerProcess {
        let addr = format!("127.0.0.1:{}", free_port());
        let child = ServerProcess::command(db, site, &addr, args)
            .envs(env.iter().copied())
            .spawn()
            .expect("the server binary starts");
        ServerProcess::up(child, &addr).await
    }

    /// The command that runs the server binary on `db`, listening on `addr`, with `args`.
    pub fn command(
        db: &TestDb,
        site: &std::path::Path,
        addr: &str,
        args: &[&str],
    ) -> std::process::Command {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_server"));
        command
            .args(["--addr", addr])
            .args(args)
            .args(db.args())
            .env_remove("DATABASE_URL")
            .env("LEPTOS_SITE_ROOT", site)
            .env("LEPTOS_OUTPUT_NAME", "anchorage")
            .env("RUST_LOG", "warn");
        // ANCHORAGE_TEST_SERVER_LOGS=1 shows what the servers log (their logs go to stdout).
        let shown = || {
            if std::env::var_os("ANCHORAGE_TEST_SERVER_LOGS").is_some() {
                std::process::Stdio::inherit()
            } else {
                std::process::Stdio::null()
            }
        };
        command.stdout(shown()).stderr(shown());
        command
    }

    /// Waits until the server started as `child` on `addr` answers.
    async fn up(child: std::process::Child, addr: &str) -> ServerProcess {
        let port = addr.rsplit(':').next().unwrap().to_owned();
        let server = ServerProcess {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        for _ in 0..400 {
            if reqwest::get(format!("{}/healthz", server.base))
                .await
                .is_ok_and(|r| r.status() == 200)
            {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server did not come up");
    }

    /// Kills it at once (SIGKILL: no shutdown of any kind) and waits until it is gone.
    pub fn kill(&mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The events of one kind.
pub fn of_kind<'a>(events: &'a [SseEvent], kind: &str) -> Vec<&'a SseEvent> {
    events.iter().filter(|e| e.event == kind).collect()
}

/// The `text` of the events of one kind, joined (a streamed answer, a reasoning).
pub fn texts(events: &[SseEvent], kind: &str) -> String {
    of_kind(events, kind)
        .iter()
        .map(|e| e.data["text"].as_str().unwrap_or_default())
        .collect()
}

/// The seqs of `events` are `first, first + 1, …`: every event once, in order.
pub fn assert_gapless(events: &[SseEvent], first: u64, what: &str) {
    let seqs: Vec<u64> = events.iter().map(SseEvent::seq).collect();
    let expected: Vec<u64> = (first..first + seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "{what}: every event once, in order");
}
