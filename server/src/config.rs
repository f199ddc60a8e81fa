use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

/// Command-line flags; each can also be set through its environment variable.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "server",
    version,
    about = "Anchorage: chat with an AI agent in your browser"
)]
pub struct Config {
    /// Address to listen on [default: the Leptos site address, 127.0.0.1:3000]
    #[arg(long, env = "ANCHORAGE_ADDR")]
    pub addr: Option<SocketAddr>,

    /// Directory for the database (created if missing)
    #[arg(long, env = "ANCHORAGE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Pause between the demo agent's streamed chunks, in milliseconds (0: as fast as possible)
    #[arg(long, env = "ANCHORAGE_DEMO_DELAY_MS", default_value_t = 35)]
    pub demo_delay_ms: u64,
}

impl Config {
    /// The defaults, as if run without flags or environment.
    pub fn defaults() -> Self {
        Config::parse_from(["server"])
    }
}
