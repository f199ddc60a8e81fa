//! Tracing setup: `RUST_LOG` wins; otherwise the server logs at `info`, its crate at `debug`
//! (`RUST_LOG=tower_http=debug` adds one line per request).

use tracing_subscriber::{layer::SubscriberExt as _, util::SubscriberInitExt as _, EnvFilter};

/// Installs the global subscriber. Call once, from `main`.
pub fn init() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,server=debug,tower_http=info"));
    tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer())
        .init();
}
