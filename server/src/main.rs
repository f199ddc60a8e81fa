use std::process::ExitCode;

use clap::Parser;

use server::config::Command;
use server::{telemetry, Config};

#[tokio::main]
async fn main() -> ExitCode {
    let config = Config::parse();
    // Kept to the end: dropping it sends the last traces.
    let _telemetry = match telemetry::init(config.otlp_endpoint.as_deref(), config.otlp_events) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let result = match &config.command {
        Some(Command::User(command)) => {
            let url = config.database_url.as_ref().map(|u| u.expose());
            let exposed = server::cli::exposure(&config);
            let out = &mut std::io::stdout();
            server::cli::user(command, url, &config.data_dir, exposed.as_deref(), out).await
        }
        None => server::run(config, server::shutdown_signal()).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The whole cause chain on one line, without a backtrace: these are setup errors
            // (a missing key, a busy port) the user fixes from the message.
            eprintln!("error: {e:#}");
            // 2: what was asked cannot be done as asked (a refused address, a short password).
            if e.downcast_ref::<server::cli::UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
