use clap::Parser;

use server::{telemetry, Config};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    telemetry::init();
    server::run(config, server::shutdown_signal()).await
}
