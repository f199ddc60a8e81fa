use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// A credential (an API key): usable where it is needed, never printed. Its `Debug` says only
/// that there is one, so a logged or panicking `Config` does not leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The credential itself, for the request that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

/// A key from the environment, when set and not blank.
fn secret_from_env(name: &str) -> Option<Secret> {
    std::env::var(name)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .map(Secret)
}

/// A flag's value kept as a [`Secret`] (a database address carries a password).
fn secret_arg(value: &str) -> Result<Secret, std::convert::Infallible> {
    Ok(Secret(value.to_owned()))
}

/// Which agent runs the turns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The embedded demo agent: no key, no network.
    #[default]
    Demo,
    /// An agent loop over any OpenAI-compatible `/v1/chat/completions` endpoint.
    Openai,
    /// A Hermes Agent gateway through its Runs API.
    Hermes,
    /// Any AG-UI agent: a `RunAgentInput` POSTed, its event stream read.
    Agui,
}

/// The longest answer a model call may write, in tokens, unless configured (`--max-tokens`).
pub const DEFAULT_MAX_TOKENS: u32 = 2048;

/// Command-line flags; each can also be set through its environment variable.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "server",
    version,
    about = "Anchorage: chat with an AI agent in your browser"
)]
pub struct Config {
    /// What to do instead of serving
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Address to listen on [default: the Leptos site address, 127.0.0.1:3000]
    #[arg(long, global = true, env = "ANCHORAGE_ADDR")]
    pub addr: Option<SocketAddr>,

    /// Serve Prometheus metrics at `/metrics` on this address (loopback only; off unless set)
    #[arg(long, global = true, env = "ANCHORAGE_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,

    /// Send OpenTelemetry traces over OTLP/HTTP (protobuf) to this collector
    /// (`http://127.0.0.1:4318`: spans go to its `/v1/traces`); off unless set
    #[arg(long, global = true, env = "ANCHORAGE_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// The log events of this server (never of its libraries) that go to the collector as
    /// events of their spans: `off`, `error`, `warn` (the default), `info`, `debug`. Events
    /// below `warn` may name what people sent (an attachment's name)
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_OTLP_EVENTS",
        default_value = "warn"
    )]
    pub otlp_events: tracing_subscriber::filter::LevelFilter,

    /// Names of this machine the server answers at besides localhost, its addresses and
    /// `--public-url`'s host (`nas.local,chat.lan`): any other name is refused, so that a page
    /// elsewhere cannot reach the server through a name of its own (DNS rebinding)
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,

    /// The address people reach the server at, through a proxy (`https://chat.example.org`): its
    /// host passes the Host check and its origin the cross-site check; https marks the sign-in
    /// cookie Secure
    #[arg(long, global = true, env = "ANCHORAGE_PUBLIC_URL", value_parser = crate::security::PublicUrl::parse)]
    pub public_url: Option<crate::security::PublicUrl>,

    /// Set by `cargo leptos watch` (`LEPTOS_WATCH=true`): the bundle changes under the running
    /// server, so pages load it from `/pkg` and no service worker keeps it
    #[arg(long, global = true, env = "LEPTOS_WATCH", hide = true, default_value_t = false, action = clap::ArgAction::Set)]
    pub leptos_watch: bool,

    /// Directory for the database (created if missing)
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_DATA_DIR",
        default_value = "./data"
    )]
    pub data_dir: PathBuf,

    /// Where a release build keeps its bundle's compressed copies (default: `cache` under
    /// --data-dir); servers of one build may share it
    #[arg(long, env = "ANCHORAGE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,

    /// PostgreSQL to keep everything in (`postgres://user:password@host/db`) instead of the
    /// SQLite file under --data-dir; several instances may share it
    #[arg(long, global = true, env = "DATABASE_URL", hide_env_values = true, value_parser = secret_arg)]
    pub database_url: Option<Secret>,

    /// Seconds an instance's claim on the runs it runs holds unless renewed; once it has
    /// expired (the instance died), another instance ends them as interrupted
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_LEASE_SECS",
        default_value_t = 15,
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub lease_secs: u64,

    /// Pause between the demo agent's streamed chunks, in milliseconds (0: as fast as possible)
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_DEMO_DELAY_MS",
        default_value_t = 35
    )]
    pub demo_delay_ms: u64,

    /// The agent backend
    #[arg(long, global = true, env = "ANCHORAGE_BACKEND", value_enum, default_value_t = Backend::Demo)]
    pub backend: Backend,

    /// Base URL of the OpenAI-compatible API (hosted, or a local Ollama / llama.cpp / vLLM)
    #[arg(
        long,
        global = true,
        env = "OPENAI_BASE_URL",
        default_value = "https://api.openai.com/v1"
    )]
    pub openai_base_url: String,

    /// API key for the OpenAI-compatible API (read from the environment only)
    #[arg(skip = secret_from_env("OPENAI_API_KEY"))]
    pub openai_api_key: Option<Secret>,

    /// Model name sent to the provider [default: gpt-4o-mini for openai, hermes-agent for hermes]
    #[arg(long, global = true, env = "ANCHORAGE_MODEL")]
    pub model: Option<String>,

    /// Directory the `openai` agent's file tools are confined to (created if missing)
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_WORKSPACE",
        default_value = "./data/workspace"
    )]
    pub workspace: PathBuf,

    /// Model calls per turn before the `openai` agent stops with `tool_limit_reached`
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_ITERATIONS",
        default_value_t = 12
    )]
    pub max_iterations: u32,

    /// The longest answer one model call of the `openai` agent may write, in tokens (sent as
    /// `max_tokens`; 0 sends none and leaves it to the provider). An answer stopped there is
    /// shown as cut off, with Continue
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_TOKENS",
        default_value_t = DEFAULT_MAX_TOKENS
    )]
    pub max_tokens: u32,

    /// The model's context window in tokens, for the `openai` agent [default: what the
    /// provider's model list or its errors report]. The oldest turns are left out of a
    /// request that would not fit, and the turn says so
    #[arg(long, global = true, env = "ANCHORAGE_CONTEXT_TOKENS")]
    pub context_tokens: Option<u32>,

    /// Base URL of the Hermes Agent gateway
    #[arg(
        long,
        global = true,
        env = "HERMES_URL",
        default_value = "http://127.0.0.1:8642"
    )]
    pub hermes_url: String,

    /// Bearer key for the Hermes gateway (read from the environment only)
    #[arg(skip = secret_from_env("HERMES_API_KEY"))]
    pub hermes_api_key: Option<Secret>,

    /// URL of the AG-UI agent (`--backend agui`): where its `RunAgentInput` is POSTed
    #[arg(
        long,
        global = true,
        env = "AGUI_URL",
        default_value = "http://127.0.0.1:8000/"
    )]
    pub agui_url: String,

    /// Bearer key for the AG-UI agent (read from the environment only)
    #[arg(skip = secret_from_env("AGUI_API_KEY"))]
    pub agui_api_key: Option<Secret>,

    /// Follow-ups that may wait in one conversation
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_QUEUED",
        default_value_t = crate::limits::DEFAULTS.max_queued
    )]
    pub max_queued: usize,

    /// Turns one account may run at once (with no account: everyone together)
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_RUNS_PER_USER",
        default_value_t = crate::limits::DEFAULTS.max_runs_per_user
    )]
    pub max_runs_per_user: u64,

    /// Event streams one account may hold open
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_STREAMS_PER_USER",
        default_value_t = crate::limits::DEFAULTS.max_streams_per_user
    )]
    pub max_streams_per_user: usize,

    /// Event streams the server holds open in all
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_STREAMS",
        default_value_t = crate::limits::DEFAULTS.max_streams
    )]
    pub max_streams: usize,

    /// The largest file one may attach, in MiB
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_ATTACHMENT_MB",
        default_value_t = crate::limits::DEFAULTS.max_attachment_bytes >> 20
    )]
    pub max_attachment_mb: u64,

    /// Uploads one account may have in progress at once
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_UPLOADS_PER_USER",
        default_value_t = crate::limits::DEFAULTS.max_uploads_per_user
    )]
    pub max_uploads_per_user: usize,

    /// What one account's attached files may take in all, in MiB (its workspace on disk is
    /// held to the same size)
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_ATTACHMENT_STORAGE_MB",
        default_value_t = crate::limits::DEFAULTS.max_attachment_storage >> 20
    )]
    pub max_attachment_storage_mb: u64,

    /// The most the SQLite database file may grow to, in MiB (unset: as far as the disk
    /// goes): past it writes fail as on a full disk (507), turns end saying so, and the
    /// server goes on once room is made. For PostgreSQL, its own settings
    #[arg(long, global = true, env = "ANCHORAGE_MAX_DATABASE_MB")]
    pub max_database_mb: Option<u64>,

    /// Free space of the data directory below which the server warns at start, in MiB
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MIN_FREE_MB",
        default_value_t = 512
    )]
    pub min_free_mb: u64,

    /// Seconds a model (or the Hermes or AG-UI agent) may send nothing once its answer began:
    /// past it the turn ends `error` ("the model stopped responding"), keeping what streamed
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_UPSTREAM_IDLE_SECS",
        default_value_t = 120
    )]
    pub upstream_idle_secs: u64,

    /// Seconds a model (or agent) may send nothing before the first bytes of each call: a
    /// model that thinks (or reads a long prompt) first is allowed longer
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_UPSTREAM_FIRST_TOKEN_SECS",
        default_value_t = 600
    )]
    pub upstream_first_token_secs: u64,

    /// What one account may keep in all, in MiB: its conversations (their journals), the
    /// snapshots its share links keep and its attached files. Past it, new turns, imports,
    /// copies, share links and uploads are refused (413) until something is deleted
    #[arg(
        long,
        alias = "max-storage-per-user-mb",
        global = true,
        env = "ANCHORAGE_MAX_STORAGE_PER_USER",
        default_value_t = crate::limits::DEFAULTS.max_storage_per_user >> 20
    )]
    pub max_storage_per_user: u64,

    /// Seconds a sign-in's proof (the password, or a passkey) counts as fresh: what needs
    /// more than the cookie (adding a passkey) asks again after that
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_FRESH_PROOF_SECS",
        default_value_t = crate::limits::DEFAULTS.fresh_proof.as_secs()
    )]
    pub fresh_proof_secs: u64,

    /// Seconds a connection may take to send a request's headers
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_HEADER_TIMEOUT_SECS",
        default_value_t = crate::limits::DEFAULTS.header_timeout.as_secs()
    )]
    pub header_timeout_secs: u64,

    /// Connections the server holds open at once (one past it is closed at once)
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_CONNECTIONS",
        default_value_t = crate::limits::DEFAULTS.max_connections
    )]
    pub max_connections: usize,

    /// Connections one address may hold open at once (loopback, where a proxy connects
    /// from, is not held to it)
    #[arg(
        long,
        global = true,
        env = "ANCHORAGE_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = crate::limits::DEFAULTS.max_connections_per_address
    )]
    pub max_connections_per_address: usize,
}

/// What the server binary does instead of serving.
#[derive(Clone, Debug, Subcommand)]
pub enum Command {
    /// Manage the accounts that may sign in (with none, the server is open on loopback only)
    #[command(subcommand)]
    User(UserCommand),
}

/// `server user …`.
#[derive(Clone, Debug, Subcommand)]
pub enum UserCommand {
    /// Add an account; the password is read from stdin when it is not a terminal, else prompted
    Add {
        /// Its name: letters, digits, '.', '_' or '-'
        name: String,
        /// May manage the server; the first admin adopts the conversations made with no account
        #[arg(long)]
        admin: bool,
    },
    /// Set an account's password: it is signed out everywhere, and its passkeys are removed
    /// (asked first at a terminal; kept with --keep-passkeys)
    Passwd {
        /// The account
        name: String,
        /// Keep the account's passkeys (they still sign in)
        #[arg(long)]
        keep_passkeys: bool,
        /// Also revoke every link the account shared (asked at a terminal)
        #[arg(long)]
        revoke_shares: bool,
    },
    /// Remove an account and its sign-ins (its conversations are kept, without an owner)
    Remove {
        /// The account
        name: String,
        /// Remove the last account even though the server listens where others reach it
        /// (it then answers this machine only)
        #[arg(long)]
        force: bool,
    },
    /// List the accounts
    List,
}

impl Config {
    /// The limits these flags set.
    pub fn limits(&self) -> crate::limits::Limits {
        crate::limits::Limits {
            max_queued: self.max_queued,
            max_runs_per_user: self.max_runs_per_user,
            max_streams_per_user: self.max_streams_per_user,
            max_streams: self.max_streams,
            max_attachment_bytes: self.max_attachment_mb.saturating_mul(1 << 20),
            max_uploads_per_user: self.max_uploads_per_user.max(1),
            max_attachment_storage: self.max_attachment_storage_mb.saturating_mul(1 << 20),
            max_storage_per_user: self.max_storage_per_user.saturating_mul(1 << 20),
            fresh_proof: std::time::Duration::from_secs(self.fresh_proof_secs),
            import_wait: crate::limits::DEFAULTS.import_wait,
            header_timeout: std::time::Duration::from_secs(self.header_timeout_secs.max(1)),
            max_connections: self.max_connections.max(1),
            max_connections_per_address: self.max_connections_per_address.max(1),
        }
    }

    /// The defaults, as if run without flags (environment keys still apply).
    pub fn defaults() -> Self {
        Config::parse_from(["server"])
    }
}
