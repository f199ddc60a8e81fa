//! What keeps other sites out: the checks every request passes ([`guard`]: its Host, and for
//! a request that changes something, its content type and where it comes from), and the
//! response headers that keep pages from being framed, sniffed or made to run foreign scripts.
//!
//! A page on another site can make a browser send requests here: to a server on the network,
//! or to one on loopback through DNS rebinding (its own host name made to resolve to
//! 127.0.0.1). The Host check refuses rebound names; the content type (a cross-site form or
//! `fetch` cannot send `application/json` without a preflight this server never grants),
//! `Sec-Fetch-Site` and `Origin` refuse cross-site writes.
//!
//! Every response says `X-Content-Type-Options: nosniff`. HTML also gets a Content Security
//! Policy that allows scripts from the site itself, WebAssembly, and the one inline hydration
//! script (by its per-response nonce, see [`page_policy`]); no inline or evaluated script
//! otherwise, no plugins, no `<base>`, and no framing (`frame-ancestors 'none'` and
//! `X-Frame-Options: DENY`: the approval buttons cannot be clickjacked).

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::AppState;

/// The address people reach the server at through a proxy (`--public-url`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl {
    /// `http` or `https`.
    pub scheme: String,
    /// The host name, lowercase, without the port.
    pub host: String,
    /// `scheme://host[:port]`, as a browser sends it in `Origin`.
    pub origin: String,
}

impl PublicUrl {
    /// Parses `http(s)://host[:port][/]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim().trim_end_matches('/');
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("{text:?} is not a URL (say https://host)"))?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!("{text:?}: only http and https"));
        }
        if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
            return Err(format!("{text:?}: only a scheme, a host and a port"));
        }
        let authority = rest.to_ascii_lowercase();
        Ok(PublicUrl {
            host: host_name(&authority).to_owned(),
            origin: format!("{scheme}://{authority}"),
            scheme,
        })
    }

    /// Whether it is served over TLS.
    pub fn https(&self) -> bool {
        self.scheme == "https"
    }
}

/// The host name of a `Host` header or an authority (`[::1]:3000` → `[::1]`, `a.b:80` → `a.b`).
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// Names of this machine, which no other site can make a browser use for its own pages.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// A refusal: `status` with a JSON error.
fn refuse(status: StatusCode, message: &str) -> Response {
    ApiError::new(status, message).into_response()
}

/// Why a request is refused before it reaches a route, if it is.
pub fn check(
    method: &Method,
    headers: &HeaderMap,
    public_url: Option<&PublicUrl>,
) -> Result<(), (StatusCode, &'static str)> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase);
    if let Some(host) = &host {
        let name = host_name(host);
        let known = LOOPBACK.contains(&name) || public_url.is_some_and(|p| p.host.as_str() == name);
        if !known {
            return Err((
                StatusCode::FORBIDDEN,
                "this server answers to localhost only (set --public-url to reach it by another name)",
            ));
        }
    }
    let changes = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if !changes {
        return Ok(());
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "requests that change something must be sent as application/json",
        ));
    }
    let site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if site.eq_ignore_ascii_case("cross-site") {
        return Err((StatusCode::FORBIDDEN, "cross-site requests are refused"));
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        let origin = origin.trim().to_ascii_lowercase();
        let own = host
            .as_deref()
            .is_some_and(|h| origin == format!("http://{h}") || origin == format!("https://{h}"));
        let public = public_url.is_some_and(|p| p.origin == origin);
        if !own && !public {
            return Err((
                StatusCode::FORBIDDEN,
                "requests from other sites are refused",
            ));
        }
    }
    Ok(())
}

/// The checks of [`check`], as a layer.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match check(
        request.method(),
        request.headers(),
        state.public_url.as_ref(),
    ) {
        Ok(()) => next.run(request).await,
        Err((status, message)) => refuse(status, message),
    }
}

/// The policy of an HTML response; `nonce` admits the inline script that carries it.
pub fn page_policy(nonce: Option<&str>) -> String {
    let mut script = String::from("'self' 'wasm-unsafe-eval'");
    if let Some(nonce) = nonce {
        script.push_str(&format!(" 'nonce-{nonce}'"));
    }
    // `cargo leptos watch` reloads the page through its own socket; nothing else does.
    let connect = if std::env::var_os("LEPTOS_WATCH").is_some() {
        "'self' ws: wss:"
    } else {
        "'self'"
    };
    format!(
        "default-src 'self'; script-src {script}; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; connect-src {connect}; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'"
    )
}

/// Adds the headers to a response (the HTML policy only where a page did not set its own).
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
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        );
        if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
            if let Ok(value) = HeaderValue::from_str(&page_policy(None)) {
                h.insert(header::CONTENT_SECURITY_POLICY, value);
            }
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::{check, page_policy, PublicUrl};
    use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_loopback_names_or_the_public_url_reach_the_server() {
        let get = |host: &'static str, public: Option<&PublicUrl>| {
            check(&Method::GET, &headers(&[("host", host)]), public).map_err(|e| e.0)
        };
        for host in ["127.0.0.1:3000", "localhost", "LOCALHOST:80", "[::1]:3000"] {
            assert_eq!(get(host, None), Ok(()), "{host}");
        }
        for host in [
            "evil.example:3000",
            "127.0.0.1.evil.example",
            "192.168.1.5:3000",
        ] {
            assert_eq!(get(host, None), Err(StatusCode::FORBIDDEN), "{host}");
        }
        let public = PublicUrl::parse("https://Chat.Example.org/").unwrap();
        assert_eq!(public.origin, "https://chat.example.org");
        assert_eq!(get("chat.example.org", Some(&public)), Ok(()));
        assert_eq!(
            get("other.example.org", Some(&public)),
            Err(StatusCode::FORBIDDEN)
        );
        assert!(PublicUrl::parse("chat.example.org").is_err());
        assert!(PublicUrl::parse("ftp://x").is_err());
        assert!(PublicUrl::parse("https://x/path").is_err());
    }

    #[test]
    fn writes_must_be_json_from_this_site() {
        let post = |pairs: &[(&'static str, &'static str)]| {
            check(&Method::POST, &headers(pairs), None).map_err(|e| e.0)
        };
        let json = ("content-type", "application/json");
        let host = ("host", "127.0.0.1:3000");
        assert_eq!(post(&[host, json]), Ok(()), "a script without Origin");
        assert_eq!(
            post(&[host, ("content-type", "application/json; charset=utf-8")]),
            Ok(())
        );
        assert_eq!(
            post(&[
                host,
                json,
                ("origin", "http://127.0.0.1:3000"),
                ("sec-fetch-site", "same-origin")
            ]),
            Ok(())
        );
        assert_eq!(post(&[host]), Err(StatusCode::UNSUPPORTED_MEDIA_TYPE));
        assert_eq!(
            post(&[host, ("content-type", "text/plain")]),
            Err(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        );
        assert_eq!(
            post(&[host, json, ("sec-fetch-site", "cross-site")]),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            post(&[host, json, ("origin", "https://evil.example")]),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            post(&[host, json, ("origin", "null")]),
            Err(StatusCode::FORBIDDEN)
        );
        // Reads are not held to it.
        assert_eq!(
            check(&Method::GET, &headers(&[host]), None).map_err(|e| e.0),
            Ok(())
        );
    }

    #[test]
    fn the_policy_admits_only_the_site_wasm_and_the_nonced_script() {
        let policy = page_policy(Some("abc123"));
        assert!(policy.contains("script-src 'self' 'wasm-unsafe-eval' 'nonce-abc123';"));
        for part in [
            "default-src 'self'",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
        ] {
            assert!(policy.contains(part), "{part}: {policy}");
        }
        let script = policy
            .split("script-src")
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap();
        for token in script.split_whitespace() {
            assert!(
                token != "'unsafe-inline'" && token != "'unsafe-eval'",
                "{script}"
            );
        }
        assert!(!page_policy(None).contains("nonce-"));
    }
}
