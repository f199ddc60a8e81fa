//! The path the site lives under: `/chat` when the server is reached at
//! `https://example.org/chat` (`--public-url`), empty at a host's root; on the server, with
//! the build whose bundle the page loads ([`Bundle`]).
//!
//! The app spells every address from the site's root (`api::paths`, the addresses `nav`
//! reads and makes, the page data's links); this module is the one place that puts the
//! base in front, for what goes to the browser (`href`s, requests, the history), and the one
//! that takes it off what the browser reports ([`site_path`]). The server says the base in
//! the page's context when it renders, and in a `<meta>` ([`BASE_META`]) the browser reads
//! once.

/// The name of the `<meta>` that carries the base (absent at the root).
pub const BASE_META: &str = "anchorage-base";

/// Where the site lives and which build's bundle a page loads, given by the server as context
/// of the render (see its `offline` module). Without it (a document rendered outside a chat
/// page), pages load `/pkg/…` at the host's root.
#[cfg(feature = "ssr")]
#[derive(Clone, Debug)]
pub struct Bundle {
    /// The address prefix: the page loads `{root}/pkg/…` (the base is part of it).
    pub root: String,
    /// The path the site lives under (see [`base`]).
    pub base: String,
    /// The build's id (empty under `cargo leptos watch`: no build to keep).
    pub build: String,
    /// The files of the part that draws turns (`components::turns`), when the build splits it
    /// off: a page that opens with turns asks for them beside the main bundle, not after it.
    pub turn_part: Vec<String>,
}

/// The base of the page being rendered: the server's [`Bundle`] says it.
#[cfg(feature = "ssr")]
pub fn base() -> String {
    leptos::prelude::use_context::<Bundle>()
        .map(|b| b.base)
        .unwrap_or_default()
}

/// The base of this page, as its `<meta>` says (read once).
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub fn base() -> String {
    thread_local! {
        static BASE: String = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.query_selector(&format!("meta[name=\"{BASE_META}\"]")).ok().flatten())
            .and_then(|meta| meta.get_attribute("content"))
            .filter(|base| base.starts_with('/') && !base.ends_with('/'))
            .unwrap_or_default();
    }
    BASE.with(String::clone)
}

/// Neither build: no page, no base.
#[cfg(not(any(feature = "ssr", feature = "hydrate")))]
pub fn base() -> String {
    String::new()
}

/// The browser's address of the site path `path` (`/s/1` → `/chat/s/1`).
pub fn href(path: &str) -> String {
    with_base(&base(), path)
}

/// `path` under `base`.
fn with_base(base: &str, path: &str) -> String {
    format!("{base}{path}")
}

/// The site path of a browser address's path (`/chat/s/1` → `/s/1`; the base alone, with or
/// without its slash, → `/`). An address outside the base is left as it is.
pub fn site_path(pathname: &str) -> String {
    without_base(&base(), pathname)
}

fn without_base(base: &str, pathname: &str) -> String {
    if base.is_empty() {
        return pathname.to_owned();
    }
    match pathname.strip_prefix(base) {
        Some("") => "/".to_owned(),
        Some(rest) if rest.starts_with('/') => rest.to_owned(),
        _ => pathname.to_owned(),
    }
}

/// The `Path` of the cookies the page sets: the site's, not the whole host's.
pub fn cookie_path() -> String {
    let base = base();
    if base.is_empty() {
        "/".to_owned()
    } else {
        base
    }
}

#[cfg(test)]
mod tests {
    use super::{with_base, without_base};

    #[test]
    fn the_base_goes_on_and_comes_off_whole_segments_only() {
        assert_eq!(with_base("", "/s/1"), "/s/1");
        assert_eq!(with_base("/chat", "/s/1"), "/chat/s/1");
        assert_eq!(with_base("/chat", "/"), "/chat/");
        for path in ["/", "/s/1", "/new", "/login"] {
            assert_eq!(without_base("/chat", &with_base("/chat", path)), path);
            assert_eq!(without_base("", path), path);
        }
        assert_eq!(without_base("/chat", "/chat"), "/");
        assert_eq!(without_base("/chat", "/chatter/s/1"), "/chatter/s/1");
        assert_eq!(without_base("/chat", "/other"), "/other");
    }
}
