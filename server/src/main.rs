use std::process::ExitCode;

use clap::Parser;

use server::{telemetry, Config};

#[tokio::main]
async fn main() -> ExitCode {
    let config = Config::parse();
    telemetry::init();
    match server::run(config, server::shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The whole cause chain on one line, without a backtrace: these are setup errors
            // (a missing key, a busy port) the user fixes from the message.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
