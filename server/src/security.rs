//! Response headers that keep pages from being framed, sniffed or made to run foreign
//! scripts.
//!
//! Every response says `X-Content-Type-Options: nosniff`. HTML also gets a Content Security
//! Policy that allows scripts from the site itself, WebAssembly, and the one inline hydration
//! script (by its per-response nonce, see [`page_policy`]); no inline or evaluated script
//! otherwise, no plugins, no `<base>`, and no framing (`frame-ancestors 'none'` and
//! `X-Frame-Options: DENY`: the approval buttons cannot be clickjacked).

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

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
    use super::page_policy;

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
        assert!(
            !script.contains("unsafe-inline") && !script.contains("unsafe-eval'"),
            "{script}"
        );
        assert!(!page_policy(None).contains("nonce-"));
    }
}
