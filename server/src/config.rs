use std::net::SocketAddr;

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
}
