//! The layers every request passes: the rules of [`crate::security`] applied to each request
//! (open mode answers this machine only; writes must be JSON from this site), and the
//! headers added to each response (no sniffing, no framing, the page policy).

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::security::{allowed_host, check_write, from_this_machine, page_policy};
use crate::AppState;

/// A refusal: `status` with a JSON error.
fn refuse(status: StatusCode, message: &str) -> Response {
    ApiError::refusal(status, message).into_response()
}

/// The checks of [`from_this_machine`] (in open mode) and [`check_write`], as a layer.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let public_url = state.public_url.as_ref();
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    if !from_this_machine(request.headers(), peer) {
        match state.store.count_users().await {
            Ok(0) => {
                return refuse(
                    StatusCode::FORBIDDEN,
                    "this server has no account, so it answers only on this machine (at \
                     localhost); add one to reach it from elsewhere: server user add NAME",
                )
            }
            Ok(_) => {}
            Err(e) => return ApiError::from(e).into_response(),
        }
    }
    // In every mode: a page of another site whose name was made to resolve to this server
    // (DNS rebinding) reaches it by that name and reads what it is answered (a sign-in page,
    // a passkey ceremony to crowd out): nothing is answered to a name that is not this one's.
    // `/healthz` says nothing but "ok": a container's health check may ask it by any name.
    let health = request.uri().path() == app::api::paths::HEALTH;
    if !health && !allowed_host(request.headers(), public_url, &state.allowed_hosts) {
        return refuse(
            StatusCode::FORBIDDEN,
            "this server answers at localhost, at an address, at its --public-url or at a name \
             of --allowed-hosts; not at this name",
        );
    }
    match check_write(
        request.method(),
        request.uri().path(),
        request.headers(),
        public_url,
    ) {
        Ok(()) => next.run(request).await,
        Err((status, message)) => refuse(status, message),
    }
}

/// Adds the headers to a response (the HTML policies only where a page did not set its own).
pub async fn headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let html = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if html {
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        if !h.contains_key(header::REFERRER_POLICY) {
            h.insert(
                header::REFERRER_POLICY,
                HeaderValue::from_static("same-origin"),
            );
        }
        if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
            if let Ok(value) = HeaderValue::from_str(&page_policy(None)) {
                h.insert(header::CONTENT_SECURITY_POLICY, value);
            }
        }
    }
    response
}
