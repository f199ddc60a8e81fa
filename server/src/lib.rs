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

use std::future::Future;

use anyhow::Context as _;
use axum::{extract::FromRef, routing::get, Router};
use leptos::prelude::*;
use leptos_axum::{generate_route_list, LeptosRoutes};

mod config;
mod routes;
pub mod telemetry;

pub use config::Config;

/// Shared state handed to every handler.
#[derive(Clone, FromRef)]
pub struct AppState {
    /// Site settings (root, package name, address) for the Leptos handlers.
    pub leptos_options: LeptosOptions,
}

/// Builds the whole HTTP surface: API routes first, then the Leptos pages, then static files.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(app::App);
    let options = state.leptos_options.clone();
    Router::new()
        .route("/healthz", get(routes::health::healthz))
        .leptos_routes(&state, routes, move || app::shell(options.clone()))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(
            app::shell,
        ))
        .with_state(state)
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
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    tracing::info!("listening on http://{}", listener.local_addr()?);
    serve(listener, AppState { leptos_options }, shutdown).await
}

/// Serves the app on an already bound listener until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
        .context("serving HTTP")
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
