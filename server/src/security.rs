//! What keeps other sites out, as rules on a request's parts: the checks every request passes
//! (its Host, and for a request that changes something, its content type and where it comes
//! from) and the policy that keeps pages from running foreign scripts. The layers that apply
//! them to every request and response are in `routes/guard.rs`; nothing here does IO.
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

use axum::http::{header, HeaderMap, Method, StatusCode};

/// The address people reach the server at through a proxy (`--public-url`), perhaps under a
/// path of its own (`https://example.org/chat`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl {
    /// `http` or `https`.
    pub scheme: String,
    /// The host name, lowercase, without the port.
    pub host: String,
    /// `scheme://host[:port]`, as a browser sends it in `Origin`.
    pub origin: String,
    /// The path the site lives under: empty at the root, else `/one/or/more` (no trailing
    /// slash). Every address the server gives out starts with it.
    pub path: String,
}

impl PublicUrl {
    /// Parses `http(s)://host[:port][/path][/]`; the path's segments are plain names
    /// (letters, digits, `-._~`), so that it reads the same in a URL, a cookie and a script.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim().trim_end_matches('/');
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("{text:?} is not a URL (say https://host)"))?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!("{text:?}: only http and https"));
        }
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains(['?', '#', '@', ' ']) {
            return Err(format!(
                "{text:?}: only a scheme, a host, a port and a path"
            ));
        }
        let plain = |segment: &str| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
        };
        if !path.is_empty() && !path[1..].split('/').all(plain) {
            return Err(format!(
                "{text:?}: a path of plain names only (letters, digits, -._~), as /chat"
            ));
        }
        let authority = authority.to_ascii_lowercase();
        Ok(PublicUrl {
            host: host_name(&authority).to_owned(),
            origin: format!("{scheme}://{authority}"),
            scheme,
            path: path.to_owned(),
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

/// The JSON sign-in (the page's passkey script and API clients use it); the one write that
/// may come as a form is the sign-in page's post to its own address ([`FORM_PAGE`]: a failed
/// sign-in shows the form again where it was, and a reload there asks for the form, never an
/// API route). Both must still come from this site.
pub const FORM_PATH: &str = "/api/auth/login";
/// See [`FORM_PATH`].
pub const FORM_PAGE: &str = app::api::paths::LOGIN_PAGE;

/// The routes that take a body that is not JSON: an attachment's bytes, and a conversation's
/// JSON Lines export to import.
pub const UPLOAD_PATH: &str = "/api/attachments";
/// See [`UPLOAD_PATH`].
pub const IMPORT_PATH: &str = "/api/session/import";

/// Whether the request names this machine, or the `--public-url` host.
pub fn known_host(headers: &HeaderMap, public_url: Option<&PublicUrl>) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return true;
    };
    let host = host.to_ascii_lowercase();
    let name = host_name(&host);
    LOOPBACK.contains(&name) || public_url.is_some_and(|p| p.host.as_str() == name)
}

/// Whether a request may be answered by the name it gives the server, in every mode: this
/// machine's names, the `--public-url` host, a name of `also` (`--allowed-hosts`), or an
/// address (`192.168.1.5`, `[fd00::1]`), which no other site's page can be made to use for
/// itself; never another name, which is what DNS rebinding sends (another site's name, made
/// to resolve to this server).
pub fn allowed_host(headers: &HeaderMap, public_url: Option<&PublicUrl>, also: &[String]) -> bool {
    if known_host(headers, public_url) {
        return true;
    }
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return true;
    };
    let host = host.to_ascii_lowercase();
    let name = host_name(&host);
    // Names the operator gave (`--allowed-hosts nas.local`): the machine's own on its network.
    if also
        .iter()
        .any(|allowed| allowed.eq_ignore_ascii_case(name))
    {
        return true;
    }
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    let port_ok = host[name.len()..]
        .strip_prefix(':')
        .is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    port_ok && bare.parse::<std::net::IpAddr>().is_ok()
}

/// Whether only someone on this machine can have sent the request: it came from loopback,
/// names this machine (not a rebound name of another site, not the public address) and
/// passed through no proxy. Open mode (no account) answers only such requests.
pub fn from_this_machine(headers: &HeaderMap, peer: Option<std::net::IpAddr>) -> bool {
    let proxied = ["x-forwarded-for", "forwarded", "x-real-ip"]
        .iter()
        .any(|h| headers.contains_key(*h));
    peer.is_some_and(|ip| ip.is_loopback()) && known_host(headers, None) && !proxied
}

/// Why a request that changes something is refused, if it is: not JSON (but the sign-in
/// form), or from another site.
pub fn check_write(
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    public_url: Option<&PublicUrl>,
) -> Result<(), (StatusCode, &'static str)> {
    let changes = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if !changes {
        return Ok(());
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|t| t.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let form = (path == FORM_PATH || path == FORM_PAGE)
        && content_type == "application/x-www-form-urlencoded";
    // A file's bytes: a type no form can send, so another site cannot send one either
    // (a cross-site fetch with it needs a preflight, which is never granted).
    let upload = (path == UPLOAD_PATH && content_type == "application/octet-stream")
        || (path == IMPORT_PATH && content_type == "application/x-ndjson");
    if content_type != "application/json" && !form && !upload {
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
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase);
    match headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        Some(origin) => {
            let origin = origin.trim().to_ascii_lowercase();
            let own = host.as_deref().is_some_and(|h| {
                origin == format!("http://{h}") || origin == format!("https://{h}")
            });
            let public = public_url.is_some_and(|p| p.origin == origin);
            if !own && !public {
                return Err((
                    StatusCode::FORBIDDEN,
                    "requests from other sites are refused",
                ));
            }
        }
        // Browsers send Origin with every form post; a form without one did not come from
        // the sign-in page.
        None if form && !site.eq_ignore_ascii_case("same-origin") => {
            return Err((StatusCode::FORBIDDEN, "a form must come from this site"));
        }
        None => {}
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::{allowed_host, check_write, known_host, page_policy, PublicUrl};
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
            if known_host(&headers(&[("host", host)]), public) {
                Ok(())
            } else {
                Err(StatusCode::FORBIDDEN)
            }
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
        // Open mode: only loopback, by a loopback name, through no proxy.
        let lo = Some(std::net::IpAddr::from([127, 0, 0, 1]));
        let lan = Some(std::net::IpAddr::from([192, 168, 1, 9]));
        let host = |h: &'static str| headers(&[("host", h)]);
        assert!(super::from_this_machine(&host("127.0.0.1:3000"), lo));
        assert!(!super::from_this_machine(&host("127.0.0.1:3000"), lan));
        assert!(!super::from_this_machine(&host("127.0.0.1:3000"), None));
        assert!(!super::from_this_machine(&host("chat.example.org"), lo));
        assert!(!super::from_this_machine(
            &headers(&[("host", "localhost"), ("x-forwarded-for", "203.0.113.7")]),
            lo
        ));
        let public = PublicUrl::parse("https://Chat.Example.org/").unwrap();
        assert_eq!(public.origin, "https://chat.example.org");
        assert_eq!(get("chat.example.org", Some(&public)), Ok(()));
        assert_eq!(
            get("other.example.org", Some(&public)),
            Err(StatusCode::FORBIDDEN)
        );
        // In every mode, a name is this machine's or the public one; an address is any.
        let allowed = |host: &'static str, public: Option<&PublicUrl>| {
            allowed_host(&headers(&[("host", host)]), public, &[])
        };
        for host in [
            "localhost:3000",
            "192.168.1.5:3000",
            "[fd00::1]:3000",
            "10.0.0.2",
        ] {
            assert!(allowed(host, None), "{host}");
        }
        for host in [
            "evil.example:3000",
            "127.0.0.1.nip.io",
            "192.168.1.5:x",
            "192.168.1.5:",
        ] {
            assert!(!allowed(host, None), "{host}");
        }
        assert!(allowed("chat.example.org:443", Some(&public)));
        assert!(!allowed("rebound.example.org", Some(&public)));
        // A name the operator allows, in any case.
        let nas = ["nas.local".to_owned()];
        assert!(allowed_host(
            &headers(&[("host", "NAS.local:3000")]),
            None,
            &nas
        ));
        assert!(!allowed_host(
            &headers(&[("host", "nas.local.evil.example")]),
            None,
            &nas
        ));
        assert!(PublicUrl::parse("chat.example.org").is_err());
        assert!(PublicUrl::parse("ftp://x").is_err());
        assert_eq!(public.path, "");
        let under = PublicUrl::parse("https://X.org:8443/Team/chat-1/").unwrap();
        assert_eq!(under.origin, "https://x.org:8443");
        assert_eq!(under.host, "x.org");
        assert_eq!(under.path, "/Team/chat-1", "the path keeps its case");
        for bad in [
            "https://x/a b",
            "https://x/a?b",
            "https://x/a#b",
            "https://x/../a",
            "https://x/a//b",
            "https://x/%2e",
            "https://x/a\"<b",
            "https://u@x/a",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn writes_must_be_json_from_this_site() {
        let post = |pairs: &[(&'static str, &'static str)]| {
            check_write(&Method::POST, "/api/chat/start", &headers(pairs), None).map_err(|e| e.0)
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
            check_write(&Method::GET, "/api/sessions", &headers(&[host]), None).map_err(|e| e.0),
            Ok(())
        );
        // The sign-in form may post a form, from this site only.
        let form = ("content-type", "application/x-www-form-urlencoded");
        for path in [super::FORM_PATH, super::FORM_PAGE] {
            let login = |pairs: &[(&'static str, &'static str)]| {
                check_write(&Method::POST, path, &headers(pairs), None).map_err(|e| e.0)
            };
            assert_eq!(
                login(&[host, form, ("origin", "http://127.0.0.1:3000")]),
                Ok(())
            );
            assert_eq!(
                login(&[host, form, ("origin", "https://evil.example")]),
                Err(StatusCode::FORBIDDEN)
            );
            assert_eq!(login(&[host, form]), Err(StatusCode::FORBIDDEN));
        }
        assert_eq!(
            check_write(
                &Method::POST,
                "/api/session/new",
                &headers(&[host, form, ("origin", "http://127.0.0.1:3000")]),
                None
            )
            .map_err(|e| e.0),
            Err(StatusCode::UNSUPPORTED_MEDIA_TYPE),
            "no other route takes a form"
        );
        // An import takes JSON Lines (a type no form can send), and from this site only.
        let lines = ("content-type", "application/x-ndjson");
        let import = |pairs: &[(&'static str, &'static str)], path: &str| {
            check_write(&Method::POST, path, &headers(pairs), None).map_err(|e| e.0)
        };
        assert_eq!(import(&[host, lines], super::IMPORT_PATH), Ok(()));
        assert_eq!(
            import(&[host, ("content-type", "text/plain")], super::IMPORT_PATH),
            Err(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        );
        assert_eq!(
            import(
                &[host, lines, ("sec-fetch-site", "cross-site")],
                super::IMPORT_PATH
            ),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            import(&[host, lines], "/api/session/new"),
            Err(StatusCode::UNSUPPORTED_MEDIA_TYPE)
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
