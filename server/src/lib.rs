//! The Anchorage server.
//!
//! It renders the Leptos app on the server (the same components the browser hydrates) and
//! serves the built site: the wasm bundle, its JS glue, the stylesheet and static assets.
//!
//! # Layout
//! - [`Config`]: command-line flags and their environment variables, parsed once in `main`.
//! - [`router`]: every route, as a plain axum [`Router`] that tests can drive directly.
//! - [`run`]: binds the listener and serves until the shutdown future resolves.
//! - `routes/`: the non-Leptos HTTP routes; [`telemetry`]: tracing setup.
// Release builds keep the full view types (dev builds erase them); their layout is deep.
#![recursion_limit = "512"]

use std::future::Future;
use std::sync::Arc;

use std::time::Duration;
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;

use anyhow::Context as _;
use axum::{extract::FromRef, routing::get, Router};
use leptos::prelude::*;
use tokio_util::sync::CancellationToken;

pub mod assets;
pub mod auth;
pub mod cache;
pub mod ceremony;
pub mod cli;
pub mod clock;
pub mod config;
pub mod error;
pub mod hub;
pub mod journal;
pub mod limits;
pub mod metrics;
pub mod offline;
pub mod pages;
pub mod protocols;
pub mod routes;
pub mod runner;
pub mod runtime;
pub mod security;
pub mod snapshots;
pub mod space;
pub mod storage;
pub mod store;
pub mod telemetry;
pub mod throttle;
pub mod transfer;
pub mod wire;

pub use config::Config;

use hub::Hub;
use journal::Journal;
use runner::Runner;
use runtime::RuntimeAdapter;
use store::Store;

/// Shared state handed to every handler.
#[derive(Clone, FromRef)]
pub struct AppState {
    /// Site settings (root, package name, address) for the Leptos handlers.
    pub leptos_options: LeptosOptions,
    /// Sessions, transcripts and the run journal.
    pub store: Arc<dyn Store>,
    /// Starts and ends runs.
    pub runner: Runner,
    /// Live fan-out of committed journal frames.
    pub hub: Hub,
    /// Fires when the server shuts down; open streams end on it.
    pub shutdown: CancellationToken,
    /// How long a silent stream waits before a heartbeat comment.
    pub heartbeat: Duration,
    /// Where people reach the server through a proxy, if it says.
    pub public_url: Option<security::PublicUrl>,
    /// Names of this machine the server answers at besides (`--allowed-hosts`).
    #[from_ref(skip)]
    pub allowed_hosts: Arc<[String]>,
    /// Sign-in attempts of the last minute, and the password hashing places.
    pub throttle: Arc<throttle::Throttle>,
    /// What one account, and everyone, may hold at once.
    pub limits: limits::Limits,
    /// Open event streams.
    pub streams: Arc<limits::StreamGate>,
    /// Uploads in progress.
    #[from_ref(skip)]
    pub uploads: Arc<limits::Gate>,
    /// Imports and copies in progress.
    #[from_ref(skip)]
    pub transfers: Arc<limits::Gate>,
    /// Open connections, per address.
    #[from_ref(skip)]
    pub connections: Arc<limits::Gate>,
    /// Counters about the server itself.
    pub metrics: Arc<metrics::Metrics>,
    /// This build's bundle (its id, its files), which pages link and the service worker keeps.
    pub bundle: Arc<offline::Bundle>,
    /// The key passkey ceremonies are sealed with (see `ceremony`), read once from the store.
    #[from_ref(skip)]
    pub ceremony_key: Arc<tokio::sync::OnceCell<Vec<u8>>>,
    /// Shared conversations' pages, rendered once.
    #[from_ref(skip)]
    pub share_pages: Arc<cache::Pages>,
}

impl AppState {
    /// The path the site lives under (`--public-url`'s; empty at the root): every address
    /// the server gives out starts with it.
    pub fn base(&self) -> &str {
        self.public_url.as_ref().map_or("", |p| p.path.as_str())
    }

    /// Opens the database (PostgreSQL at `config.database_url`, else the SQLite file under
    /// `config.data_dir`), starts the journal writer and the runner (with the configured
    /// agent), and reaps runs a previous process left behind.
    pub async fn open(
        config: &Config,
        leptos_options: LeptosOptions,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Self> {
        let url = config.database_url.as_ref().map(config::Secret::expose);
        let store = store::sql::open_with(
            url,
            &config.data_dir,
            config.max_database_mb.map(|mb| mb.saturating_mul(1 << 20)),
        )
        .await?;
        let adapter = build_adapter(config)?;
        let lease = Duration::from_secs(config.lease_secs);
        let mut state = Self::assemble(store, adapter, leptos_options, shutdown, lease).await;
        state.public_url = config.public_url.clone();
        state.allowed_hosts = config.allowed_hosts.clone().into();
        state.limits = config.limits();
        state.bundle = Arc::new(if config.leptos_watch {
            offline::Bundle::watched()
        } else {
            let root = (config.cache_dir.clone()).unwrap_or_else(|| config.data_dir.join("cache"));
            let cache = assets::cache_dir(&root, &state.bundle.build);
            offline::Bundle {
                cache: Some(cache),
                ..(*state.bundle).clone()
            }
        });
        Ok(state)
    }

    /// A state over the given store and agent; reaps abandoned runs before it returns.
    pub async fn with_parts(
        store: Arc<dyn Store>,
        adapter: Arc<dyn RuntimeAdapter>,
        leptos_options: LeptosOptions,
        shutdown: CancellationToken,
    ) -> Self {
        Self::assemble(
            store,
            adapter,
            leptos_options,
            shutdown,
            runner::DEFAULT_LEASE,
        )
        .await
    }

    async fn assemble(
        store: Arc<dyn Store>,
        adapter: Arc<dyn RuntimeAdapter>,
        leptos_options: LeptosOptions,
        shutdown: CancellationToken,
        lease: Duration,
    ) -> Self {
        let hub = Hub::default();
        let metrics = Arc::new(metrics::Metrics::default());
        let journal = Journal::spawn(store.clone(), hub.clone(), Arc::clone(&metrics));
        let runner = Runner::new(
            Arc::clone(&store),
            journal,
            hub.clone(),
            adapter,
            Arc::clone(&metrics),
            lease,
        );
        // Listening before reaping: nothing announced from now on is missed.
        spawn_listener(&store, &hub, &runner, shutdown.clone()).await;
        let reaped = runner.reap().await;
        if reaped > 0 {
            tracing::info!(reaped, "ended runs left running by a previous process");
        }
        runner.spawn_upkeep(shutdown.clone());
        spawn_purger(Arc::clone(&store), shutdown.clone());
        // Turns settled before snapshots existed (or of an older version) get theirs.
        let backfill = Arc::clone(&store);
        tokio::spawn(async move {
            match snapshots::backfill(backfill).await {
                Ok(0) => {}
                Ok(made) => tracing::info!(made, "made snapshots of settled turns"),
                Err(e) => tracing::warn!("making snapshots of settled turns stopped: {e}"),
            }
        });
        let pkg_dir =
            std::path::Path::new(&*leptos_options.site_root).join(&*leptos_options.site_pkg_dir);
        let bundle = Arc::new(offline::Bundle::read(&pkg_dir));
        AppState {
            leptos_options,
            bundle,
            store,
            runner,
            hub,
            shutdown,
            heartbeat: routes::stream::HEARTBEAT,
            public_url: None,
            allowed_hosts: Arc::from(Vec::new()),
            throttle: Arc::default(),
            limits: limits::Limits::default(),
            streams: Arc::default(),
            uploads: Arc::default(),
            transfers: Arc::default(),
            connections: Arc::default(),
            metrics,
            ceremony_key: Arc::default(),
            share_pages: Arc::default(),
        }
    }
}

/// Hands what the database announces to those waiting for it: commits to the feeds of runs
/// other instances run ([`Hub::wake`]), commands to the runner. Nothing with SQLite, which
/// announces nothing (one process sees everything itself).
async fn spawn_listener(
    store: &Arc<dyn Store>,
    hub: &Hub,
    runner: &Runner,
    shutdown: CancellationToken,
) {
    let mut notices = match store.listen().await {
        Ok(Some(notices)) => notices,
        Ok(None) => return,
        Err(e) => {
            // Feeds still look at the journal every second, and the upkeep takes commands.
            tracing::warn!(
                "cannot listen to the database: {e}; live events between instances will lag"
            );
            return;
        }
    };
    let hub = hub.clone();
    let runner = runner.clone();
    tokio::spawn(async move {
        loop {
            let notice = tokio::select! {
                notice = notices.recv() => notice,
                () = shutdown.cancelled() => break,
            };
            match notice {
                Some(store::Notice::Journal { run_id, .. }) => hub.wake(&run_id),
                Some(store::Notice::Commands { instance }) if instance == runner.instance() => {
                    let runner = runner.clone();
                    tokio::spawn(async move { runner.run_commands().await });
                }
                Some(store::Notice::Commands { .. }) => {}
                Some(store::Notice::Resync) => {
                    hub.wake_all();
                    let runner = runner.clone();
                    tokio::spawn(async move { runner.run_commands().await });
                }
                None => break,
            }
        }
    });
}

/// Removes deleted sessions once their Undo window has passed, uploads no message took
/// within a day, and commands older than an hour, and keeps room back for a full disk: at
/// start, then every minute.
fn spawn_purger(store: Arc<dyn Store>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        loop {
            let before = crate::clock::now() - routes::session::UNDO_WINDOW.as_secs_f64();
            match store.purge_deleted(before).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "removed deleted conversations"),
                Err(e) => tracing::warn!("removing deleted conversations failed: {e}"),
            }
            let unsent = crate::clock::now() - routes::attachments::UNSENT_FOR.as_secs_f64();
            match store.purge_attachments(unsent).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "removed attachments never sent"),
                Err(e) => tracing::warn!("removing attachments never sent failed: {e}"),
            }
            if let Err(e) = store.purge_commands(crate::clock::now() - 3600.0).await {
                tracing::warn!("removing old commands failed: {e}");
            }
            // Room kept back for a full disk (given up to end runs; put back once there is
            // room again).
            if let Err(e) = store.keep_reserve().await {
                if !e.disk_full() {
                    tracing::warn!("keeping room back failed: {e}");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(60)) => {}
                () = shutdown.cancelled() => break,
            }
        }
    });
}

/// The adapter the configuration asks for, or why it cannot start (a missing key, a workspace
/// that cannot be created).
pub fn build_adapter(config: &Config) -> anyhow::Result<Arc<dyn RuntimeAdapter>> {
    use anyhow::Context as _;
    use config::Backend;
    use runtime::{agui_client, demo, hermes, openai, workspaces};
    Ok(match config.backend {
        Backend::Demo => Arc::new(demo::DemoAgent {
            delay: Duration::from_millis(config.demo_delay_ms),
        }),
        Backend::Openai => {
            let Some(api_key) = config.openai_api_key.clone() else {
                anyhow::bail!(
                    "--backend openai needs an API key: set OPENAI_API_KEY (a local server \
                     that takes no key accepts any value, e.g. OPENAI_API_KEY=local)"
                );
            };
            let quota = config.limits().max_attachment_storage;
            let workspace = workspaces::Workspaces::open(&config.workspace, quota)
                .with_context(|| format!("opening the workspace {}", config.workspace.display()))?;
            Arc::new(openai::OpenAiAgent::new(
                openai::OpenAiSettings {
                    base_url: config.openai_base_url.clone(),
                    api_key,
                    model: config
                        .model
                        .clone()
                        .unwrap_or_else(|| "gpt-4o-mini".to_owned()),
                    max_iterations: config.max_iterations,
                    idle: Duration::from_secs(config.upstream_idle_secs.max(1)),
                    first_token: Duration::from_secs(config.upstream_first_token_secs.max(1)),
                    max_tokens: (config.max_tokens > 0).then_some(config.max_tokens),
                    context_tokens: config.context_tokens.filter(|t| *t > 0),
                },
                workspace,
            )?)
        }
        Backend::Hermes => Arc::new(hermes::HermesAgent::new(hermes::HermesSettings {
            url: config.hermes_url.clone(),
            api_key: config.hermes_api_key.clone(),
            model: config
                .model
                .clone()
                .unwrap_or_else(|| "hermes-agent".to_owned()),
            idle: Duration::from_secs(config.upstream_idle_secs.max(1)),
            first_token: Duration::from_secs(config.upstream_first_token_secs.max(1)),
        })?),
        Backend::Agui => Arc::new(agui_client::AguiAgent::new(agui_client::AguiSettings {
            url: config.agui_url.clone(),
            api_key: config.agui_api_key.clone(),
            idle: Duration::from_secs(config.upstream_idle_secs.max(1)),
            first_token: Duration::from_secs(config.upstream_first_token_secs.max(1)),
        })?),
    })
}

/// Builds the whole HTTP surface: API routes, the chat pages, then static files.
pub fn router(state: AppState) -> Router {
    // Rendering runs Leptos' task queue on tokio (a no-op when already set up).
    let _ = any_spawner::Executor::init_tokio();
    let options = state.leptos_options.clone();
    let options_pkg = options.site_pkg_dir.to_string();
    let pkg_dir = std::path::Path::new(&*options.site_root).join(&*options.site_pkg_dir);
    // This build's bundle, under an address of its own that pages link (see `offline`).
    let bundle = Arc::clone(&state.bundle);
    let worker = bundle.worker(state.base());
    let base = state.base().to_owned();
    let page_bundle = bundle.for_pages(&base);
    let guard = axum::middleware::from_fn_with_state(state.clone(), routes::guard::guard);
    let counted =
        axum::middleware::from_fn_with_state(Arc::clone(&state.metrics), metrics::count_requests);
    let api_gate = axum::middleware::from_fn_with_state(state.clone(), auth::require_api);
    let page_gate = axum::middleware::from_fn_with_state(state.clone(), auth::require_page);
    let pages = Router::new()
        .route("/", get(pages::newest))
        .route(app::api::paths::SESSION_PAGE, get(pages::session))
        .route(app::api::paths::NEW_CHAT, get(pages::new_chat))
        .route_layer(page_gate);
    let router = Router::new()
        .route(app::api::paths::HEALTH, get(routes::health::healthz))
        .route(
            app::api::paths::LOGIN_PAGE,
            get(routes::sign_in::login_form)
                .post(routes::sign_in::login)
                .layer(
                    // The sign-in form's post (see `security::FORM_PAGE`).
                    axum::extract::DefaultBodyLimit::max(16 * 1024),
                ),
        )
        // Signing in with a passkey (see `routes::passkeys`).
        .route(
            app::api::paths::AUTH_PASSKEY_START,
            axum::routing::post(routes::passkeys::sign_in_start)
                .layer(axum::extract::DefaultBodyLimit::max(16 * 1024)),
        )
        .route(
            app::api::paths::AUTH_PASSKEY_FINISH,
            axum::routing::post(routes::passkeys::sign_in_finish)
                .layer(axum::extract::DefaultBodyLimit::max(64 * 1024)),
        )
        // A shared conversation: whoever has the link (see `routes::share`).
        .route(app::api::paths::SHARE_PAGE, get(routes::share::page))
        .route(
            app::api::paths::WORKER,
            get(move || std::future::ready(offline::worker_response(&worker))),
        )
        .route(
            security::FORM_PATH,
            axum::routing::post(routes::sign_in::login)
                .layer(axum::extract::DefaultBodyLimit::max(16 * 1024)),
        )
        // Every other API route answers only a signed-in browser once accounts exist.
        .merge(routes::api().route_layer(api_gate))
        .merge(pages)
        // Static files of the site root (icons, manifest); anything else is a 404 page.
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            AppState,
            _,
        >(
            move || provide_context(page_bundle.clone()),
            app::not_found_shell,
        ))
        .with_state(state)
        // The bundle from its precompressed copies when they exist (see `assets`).
        .nest_service(
            &format!("/{}", options_pkg.trim_matches('/')),
            assets::files(&pkg_dir, bundle.cache.as_deref()),
        );
    // The same files under this build's own address, which never changes content (a watched
    // bundle has none: it changes).
    let router = if bundle.is_watched() {
        router
    } else {
        router.nest_service(
            &bundle.pkg_path(),
            Router::new()
                .fallback_service(assets::files(&pkg_dir, bundle.cache.as_deref()))
                .layer(axum::middleware::map_response(offline::immutable)),
        )
    };
    let router = router
        // Every request answered is counted, by the route that answered it (see `metrics`).
        .layer(counted)
        // Requests from elsewhere (another site, a rebound host name) stop here.
        .layer(guard)
        // gzip or brotli for pages, JSON and the site bundle; never for event streams, which
        // the default predicate leaves alone so that each frame goes out as it is written.
        .layer(CompressionLayer::new())
        .layer(axum::middleware::from_fn(routes::guard::headers))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_response(request_done),
        );
    under_base(&base, router)
}

/// The span of an HTTP request (see `telemetry`): its method and the route that answers it
/// (`/share/{token}`, never the path, which may carry a secret: a share link's token), and
/// its status once answered.
fn request_span<B>(request: &axum::http::Request<B>) -> tracing::Span {
    tracing::info_span!(
        telemetry::SPAN_REQUEST,
        "http.request.method" = metrics::method_label(request.method()),
        "http.route" = metrics::route_of(request),
        "http.response.status_code" = tracing::field::Empty,
    )
}

fn request_done<B>(response: &axum::http::Response<B>, latency: Duration, span: &tracing::Span) {
    use tower_http::trace::OnResponse as _;
    span.record("http.response.status_code", response.status().as_u16());
    tower_http::trace::DefaultOnResponse::new().on_response(response, latency, span);
}

/// The site under `base` (`--public-url`'s path): a proxy that passes the path on reaches it
/// there, one that takes the path off reaches it at the root (the addresses the site gives
/// out carry the base either way).
fn under_base(base: &str, router: Router) -> Router {
    if base.is_empty() {
        return router;
    }
    Router::new()
        .nest_service(base, router.clone())
        .fallback_service(router)
}

/// Serves the app on the configured address until `shutdown` resolves.
pub async fn run(
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let leptos_options = get_configuration(None)
        .context("reading the Leptos site configuration")?
        .leptos_options;
    let addr = config.addr.unwrap_or(leptos_options.site_addr);
    // The port, then the data directory, before anything is touched: a second server started
    // on the same port or directory stops here, leaving the first one's runs alone.
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    // One process owns a SQLite file; PostgreSQL is shared by design.
    let listening = Listening {
        addr: listener.local_addr()?,
        public_url: config.public_url.as_ref().map(|p| p.origin.clone()),
    };
    let _lock = match config.database_url {
        None => Some(DataDirLock::acquire(&config.data_dir, &listening)?),
        Some(_) => None,
    };
    if config.database_url.is_none() {
        if let Some(warning) =
            space::short_of_space(&config.data_dir, config.min_free_mb.saturating_mul(1 << 20))
        {
            tracing::warn!("{warning}");
        }
    }
    let token = CancellationToken::new();
    let pkg_dir =
        std::path::Path::new(&*leptos_options.site_root).join(&*leptos_options.site_pkg_dir);
    let state = AppState::open(&config, leptos_options, token.clone()).await?;
    // Release builds serve the bundle brotli-11 compressed once the copies are written (a few
    // seconds of one core, into the data directory); dev builds stay on the fly.
    if let Some(cache) = state
        .bundle
        .cache
        .clone()
        .filter(|_| !cfg!(debug_assertions))
    {
        tokio::task::spawn_blocking(move || match assets::fill_cache(&pkg_dir, &cache) {
            Ok(n) if n > 0 => tracing::info!(files = n, "compressed the site bundle"),
            Ok(_) => {}
            Err(e) => tracing::warn!("cannot compress the site bundle: {e}"),
        });
    }
    if let Some(addr) = config.metrics_addr {
        let addr = metrics::checked_addr(addr)?;
        let metrics_listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding the metrics address {addr}"))?;
        tracing::info!(
            "metrics on http://{}/metrics",
            metrics_listener.local_addr()?
        );
        let stop = token.clone();
        let metrics = Arc::clone(&state.metrics);
        tokio::spawn(async move {
            let served = metrics::serve(metrics_listener, metrics, async move {
                stop.cancelled().await;
            });
            if let Err(e) = served.await {
                tracing::warn!("the metrics address stopped: {e}");
            }
        });
    }
    let local = listener.local_addr()?;
    if state.store.count_users().await? == 0 {
        // With no account whoever reaches the server uses it: only this machine may.
        let exposed = if !local.ip().is_loopback() {
            Some(local.to_string())
        } else {
            config
                .public_url
                .as_ref()
                .map(|p| format!("{} (--public-url)", p.origin))
        };
        if let Some(exposed) = exposed {
            return Err(cli::UsageError(format!(
                "refusing to serve {exposed} with no account: anyone who can reach it would \
                 use the agent. Add one first (server --data-dir {} user add NAME --admin), \
                 or listen on 127.0.0.1 without --public-url",
                config.data_dir.display()
            ))
            .into());
        }
    }
    tracing::info!(
        "listening on http://{} (agent: {}, database: {}, instance {})",
        listener.local_addr()?,
        state.runner.adapter_name(),
        state.store.engine().name(),
        state.runner.instance()
    );
    serve(listener, state, shutdown).await
}

/// Where a server listens, as its data directory's lock file records it (for `server user
/// remove`, which warns before the last account of a server others reach goes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listening {
    /// The address it is bound to.
    pub addr: std::net::SocketAddr,
    /// `--public-url`'s origin, if given.
    pub public_url: Option<String>,
}

impl Listening {
    /// What the lock file of `data_dir` says of the server that holds (or last held) it.
    pub fn recorded(data_dir: &std::path::Path) -> Option<Listening> {
        let text = std::fs::read_to_string(data_dir.join("anchorage.lock")).ok()?;
        let mut lines = text.lines().skip(1);
        let addr = lines.next()?.trim().parse().ok()?;
        let public_url = lines
            .next()
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned);
        Some(Listening { addr, public_url })
    }

    /// Whether anyone but this machine can reach it.
    pub fn exposed(&self) -> bool {
        !self.addr.ip().is_loopback() || self.public_url.is_some()
    }
}

/// The claim of one server process on a data directory, held while it runs: a lock on
/// `anchorage.lock` inside it, which the operating system releases when the process ends, however
/// it ends.
#[derive(Debug)]
pub struct DataDirLock {
    _file: std::fs::File,
}

impl DataDirLock {
    /// Creates the directory if needed and locks it, or says which process holds it; the
    /// file then records the process and where it listens.
    pub fn acquire(data_dir: &std::path::Path, listening: &Listening) -> anyhow::Result<Self> {
        use std::io::{Read as _, Seek as _, Write as _};
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("creating the data directory {}", data_dir.display()))?;
        let path = data_dir.join("anchorage.lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.lines().next().unwrap_or_default().trim();
                let who = if holder.is_empty() {
                    "another Anchorage server".to_owned()
                } else {
                    format!("another Anchorage server (pid {holder})")
                };
                anyhow::bail!(
                    "{who} is using the data directory {}; stop it first, or give this one \
                     another --data-dir",
                    data_dir.display()
                );
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()));
            }
        }
        // Who holds it, for the message above.
        file.set_len(0)?;
        file.rewind()?;
        write!(
            file,
            "{}\n{}\n{}\n",
            std::process::id(),
            listening.addr,
            listening.public_url.as_deref().unwrap_or_default()
        )?;
        file.flush()?;
        Ok(DataDirLock { _file: file })
    }
}

/// Serves the app on an already bound listener until `shutdown` resolves. Open streams end
/// then; runs in progress stop and are reported interrupted by the next start.
///
/// Connections speak HTTP/1.1 (a proxy in front may speak HTTP/2 to browsers). Each must send
/// a request's headers within the header timeout, counted from when it connects (a client that
/// sends nothing, or trickles its headers, slowloris, is cut off), and carries one request.
/// At most `max_connections` are open at once, and `max_connections_per_address` from one
/// address (but loopback, where a proxy connects from); one past a limit is closed at once.
/// Every request knows its peer address.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use hyper_util::server::conn::auto::Builder;

    let token = state.shutdown.clone();
    let runner = state.runner.clone();
    let limits = state.limits.clone();
    let connections = Arc::clone(&state.connections);
    let app = router(state);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // HTTP/1 only: detecting HTTP/2 would read the first bytes with no timer at all.
    let mut builder = Builder::new(TokioExecutor::new()).http1_only();
    // One request per connection: hyper's header timeout also runs while a kept-alive
    // connection waits for its next request, and a client that sends on such a
    // connection just as the server closes it loses that request (a POST is not retried).
    // Answering `Connection: close` means no client ever reuses a connection the server
    // may close; a proxy in front keeps its clients' connections alive on its own.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors or a connection reset before it was taken:
                    // wait a moment rather than spin.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let per_address = if peer.ip().is_loopback() {
            usize::MAX
        } else {
            limits.max_connections_per_address
        };
        let Ok(permit) =
            connections.take(&peer.ip().to_string(), per_address, limits.max_connections)
        else {
            tracing::debug!("refused a connection from {peer}: too many open");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = tower_http::add_extension::AddExtension::new(
            app.clone(),
            axum::extract::ConnectInfo(peer),
        );
        let service = hyper_util::service::TowerToHyperService::new(service);
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::trace!("connection from {peer} ended: {e}");
            }
            drop(permit);
        });
    }
    drop(listener);
    runner.shut_down().await;
    token.cancel();
    graceful.shutdown().await;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for Ctrl-C: {err}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::error!("cannot listen for SIGTERM: {err}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
