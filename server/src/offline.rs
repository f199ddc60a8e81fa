//! What a browser keeps of the app: the build's id and files, and the service worker that
//! keeps them.
//!
//! The bundle is served twice: at `/pkg/…` (for anything that names it directly) and at
//! `/build/{id}/pkg/…`, where `id` is a hash of the bundle's contents. Pages link the second,
//! so a page names exactly the files of the build that rendered it: the service worker serves
//! those cache-first forever (they cannot change), a new build has new addresses (taken at the
//! next page load), and a page of the previous build that is still open keeps finding its own
//! files — the lazily loaded Markdown renderer included, which its loader fetches by a path
//! relative to the script, so it carries the build too.
//!
//! The worker script (`sw.js` beside this file) is filled in here with the build's id and
//! file list, so a new build is also a new worker: the browser installs it at the next
//! navigation and it fetches the new files before it takes over.

use std::fs;
use std::path::Path;

use sha2::{Digest as _, Sha256};

/// The worker's source; `__BUILD__`, `__SHELL__`, `__BASE__` and `__DELETE__` are filled in.
const TEMPLATE: &str = include_str!("sw.js");

/// The worker served while the bundle is watched: it unregisters itself and drops what
/// Anchorage's workers kept.
const RETIRED: &str = r#""use strict";
// Anchorage under `cargo leptos watch`: no worker keeps the bundle (server/src/offline.rs).
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((n) => n.startsWith("anchorage-")).map((n) => caches.delete(n))))
      .then(() => self.registration.unregister()),
  );
});
"#;

/// The header that marks a chat page a browser may keep to show offline, with whose it is.
pub const SAVE_HEADER: &str = "x-anchorage-save";

/// Files of the bundle a page may load: the stylesheet, the scripts and the wasm modules
/// (not the type declarations, not the precompressed copies the server writes beside them).
fn loadable(name: &str) -> bool {
    [".js", ".wasm", ".css"].iter().any(|e| name.ends_with(e)) && !name.ends_with(".d.ts")
}

/// One build of the site bundle.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// A hash of the bundle's file names and contents (16 hex digits).
    pub build: String,
    /// The loadable files, by name, sorted.
    pub files: Vec<String>,
    /// The files of the part that draws turns ([`app::TURN_PART`]), as the split manifest
    /// lists them (none when the build is not split).
    pub turn_part: Vec<String>,
    /// Where the server keeps this build's compressed copies (see `assets`), if it does.
    pub cache: Option<std::path::PathBuf>,
}

/// The files of split-off part `part`, from the split manifest in `pkg_dir` (a map from each
/// part to the files it loads, without their `.wasm`); none when there is no such manifest.
fn split_part(pkg_dir: &Path, part: &str) -> Vec<String> {
    let manifest = fs::read(pkg_dir.join("__wasm_split_manifest.json")).unwrap_or_default();
    serde_json::from_slice::<std::collections::HashMap<String, Vec<String>>>(&manifest)
        .ok()
        .and_then(|mut parts| parts.remove(part))
        .unwrap_or_default()
        .into_iter()
        .map(|stem| format!("{stem}.wasm"))
        .collect()
}

impl Bundle {
    /// Reads the bundle in `pkg_dir`. A missing directory (a test without a site) is a
    /// bundle of no files.
    pub fn read(pkg_dir: &Path) -> Bundle {
        let mut files: Vec<String> = fs::read_dir(pkg_dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.path().is_file())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|name| loadable(name))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let mut hash = Sha256::new();
        for name in &files {
            hash.update(name.as_bytes());
            hash.update([0]);
            match fs::read(pkg_dir.join(name)) {
                Ok(bytes) => {
                    hash.update((bytes.len() as u64).to_le_bytes());
                    hash.update(&bytes);
                }
                Err(_) => hash.update(u64::MAX.to_le_bytes()),
            }
        }
        let build = hex::encode(&hash.finalize()[..8]);
        let turn_part = split_part(pkg_dir, app::TURN_PART)
            .into_iter()
            .filter(|f| files.contains(f))
            .collect();
        Bundle {
            build,
            files,
            turn_part,
            cache: None,
        }
    }

    /// The bundle as `cargo leptos watch` serves it: it changes under the running server, so
    /// it has no build to name, pages load it from `/pkg`, and no worker keeps it.
    pub fn watched() -> Bundle {
        Bundle {
            build: String::new(),
            files: Vec::new(),
            turn_part: Vec::new(),
            cache: None,
        }
    }

    /// Whether this is [`Bundle::watched`].
    pub fn is_watched(&self) -> bool {
        self.build.is_empty()
    }

    /// What a page rendered under `base` (the site's path) is told of the bundle.
    pub fn for_pages(&self, base: &str) -> app::Bundle {
        app::Bundle {
            root: format!("{base}{}", self.root()),
            base: base.to_owned(),
            build: self.build.clone(),
            turn_part: self.turn_part.clone(),
        }
    }

    /// The address prefix of this build's bundle: pages load `{root}/pkg/{file}` (`/pkg`
    /// itself when watched).
    pub fn root(&self) -> String {
        if self.is_watched() {
            return String::new();
        }
        format!("/build/{}", self.build)
    }

    /// Where the bundle's files are served for this build.
    pub fn pkg_path(&self) -> String {
        format!("{}/pkg", self.root())
    }

    /// The service worker for this build: its id and the addresses it keeps. When watched, a
    /// worker that takes itself and its caches away (one from an earlier release build on the
    /// same address would serve a stale bundle). `base` is the path the site lives under
    /// (`--public-url`'s): every address the worker keeps or watches starts with it.
    pub fn worker(&self, base: &str) -> String {
        if self.is_watched() {
            return RETIRED.to_owned();
        }
        let shell: Vec<String> = self
            .files
            .iter()
            .map(|f| format!("{base}{}/{f}", self.pkg_path()))
            .collect();
        let shell = serde_json::to_string(&shell).unwrap_or_else(|_| "[]".to_owned());
        TEMPLATE
            .replace("__BUILD__", &self.build)
            .replace("__SHELL__", &shell)
            .replace("__BASE__", base)
            .replace("__DELETE__", app::api::paths::SESSION_DELETE)
    }
}

/// The worker script as a response: never kept by the HTTP cache, so that the browser sees
/// a new build at its next check.
pub fn worker_response(script: &str) -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse as _;
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        script.to_owned(),
    )
        .into_response()
}

/// Marks a file of a build's own address as never changing (an error is left as it is).
pub async fn immutable(mut response: axum::response::Response) -> axum::response::Response {
    use axum::http::{header, HeaderValue};
    if response.status().is_success() {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=31536000, immutable"),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_id_follows_the_contents_and_only_loadable_files_count() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("anchorage.js"), "one").unwrap();
        fs::write(dir.path().join("anchorage.wasm"), "two").unwrap();
        fs::write(dir.path().join("anchorage.d.ts"), "types").unwrap();
        fs::write(dir.path().join("anchorage.wasm.br"), "copy").unwrap();
        let first = Bundle::read(dir.path());
        assert_eq!(first.files, ["anchorage.js", "anchorage.wasm"]);
        assert_eq!(first.build.len(), 16);
        // A precompressed copy or the type declarations change nothing.
        fs::write(dir.path().join("anchorage.wasm.gz"), "another copy").unwrap();
        fs::write(dir.path().join("anchorage.d.ts"), "other types").unwrap();
        assert_eq!(Bundle::read(dir.path()).build, first.build);
        // A byte of the wasm does.
        fs::write(dir.path().join("anchorage.wasm"), "twO").unwrap();
        assert_ne!(Bundle::read(dir.path()).build, first.build);
    }

    #[test]
    fn the_worker_names_its_build_and_every_file_under_the_build_path() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("anchorage.css"), "a{}").unwrap();
        fs::write(dir.path().join("split_markdown_renderer.wasm"), "w").unwrap();
        let bundle = Bundle::read(dir.path());
        let worker = bundle.worker("");
        assert!(!worker.contains("__BUILD__") && !worker.contains("__SHELL__"));
        assert!(!worker.contains("__DELETE__") && !worker.contains("__BASE__"));
        assert!(worker.contains(&format!("\"{}\"", bundle.build)));
        for file in &bundle.files {
            assert!(worker.contains(&format!("\"/build/{}/pkg/{file}\"", bundle.build)));
        }
        // Under a path, every address it keeps starts with it.
        let under = bundle.worker("/team/chat");
        assert!(under.contains("const BASE = \"/team/chat\";"), "{under}");
        for file in &bundle.files {
            assert!(under.contains(&format!("\"/team/chat/build/{}/pkg/{file}\"", bundle.build)));
        }
    }

    #[test]
    fn the_turns_part_is_read_from_the_split_manifest() {
        let dir = tempfile::tempdir().unwrap();
        for file in [
            "anchorage.wasm",
            "chunk_3.wasm",
            "split_turn_views.wasm",
            "split_models.wasm",
        ] {
            fs::write(dir.path().join(file), "w").unwrap();
        }
        assert!(
            Bundle::read(dir.path()).turn_part.is_empty(),
            "no manifest, no part"
        );
        fs::write(
            dir.path().join("__wasm_split_manifest.json"),
            r#"{"turn_views":["chunk_3","split_turn_views"],"models":["split_models"],"gone":["x"]}"#,
        )
        .unwrap();
        let bundle = Bundle::read(dir.path());
        assert_eq!(bundle.turn_part, ["chunk_3.wasm", "split_turn_views.wasm"]);
        // A page under a path is told them with the build's root.
        let pages = bundle.for_pages("/team");
        assert_eq!(pages.turn_part, bundle.turn_part);
        assert_eq!(pages.root, format!("/team/build/{}", bundle.build));
    }

    #[test]
    fn no_directory_is_a_bundle_of_nothing() {
        let bundle = Bundle::read(Path::new("/nonexistent/anchorage/pkg"));
        assert!(bundle.files.is_empty());
        assert_eq!(bundle.build.len(), 16);
    }
}
