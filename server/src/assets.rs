//! The site bundle (`/pkg`: wasm, js, css) served from files compressed once at the strongest
//! levels (brotli 11, gzip 9) instead of on the fly at a fast level: brotli 11 makes the wasm
//! about a fifth smaller than the on-the-fly encoding.
//!
//! The server never writes into the site folder (a container image, a package or a Nix store
//! keeps it read-only): the compressed copies go to a cache of their own under the data
//! directory (or `--cache-dir`), one folder per build (`cache/bundle/{build}`, the build being a hash of the
//! bundle's contents, so a folder is never stale). Each file lands whole (written aside, then
//! renamed); until its copies are there, the original is served from the site folder and the
//! compression layer encodes it on the fly, as before.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tower_http::services::ServeDir;

/// Files worth compressing.
const EXTENSIONS: [&str; 4] = ["wasm", "js", "css", "svg"];
/// The encodings written, with their file suffixes.
const SUFFIXES: [&str; 2] = ["br", "gz"];

fn originals(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e))
        })
        .collect();
    files.sort();
    files
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

fn modified(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Writes `bytes` to `path` through a temporary file of this process, with the modification
/// time `mtime`.
fn write_atomically(path: &Path, bytes: &[u8], mtime: SystemTime) -> io::Result<()> {
    let tmp = with_suffix(path, &format!("{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.set_modified(mtime)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

fn brotli_11(data: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 3);
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        lgwin: 22,
        ..Default::default()
    };
    brotli::BrotliCompress(&mut &data[..], &mut out, &params)?;
    Ok(out)
}

fn gzip_9(data: &[u8]) -> io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 3),
        flate2::Compression::best(),
    );
    encoder.write_all(data)?;
    encoder.finish()
}

/// The cache folder of `build` under `cache_root` (`--cache-dir`, by default `cache` in the
/// data directory).
pub fn cache_dir(cache_root: &Path, build: &str) -> PathBuf {
    cache_root.join("bundle").join(build)
}

/// Fills `cache` with the bundle files of `pkg_dir` and their `.br` and `.gz` copies (the
/// copies first, then the original: a file is served from the cache once it is there), and
/// removes the folders of other builds beside it. Returns how many files it wrote. Slow
/// (brotli 11); run in the background.
pub fn fill_cache(pkg_dir: &Path, cache: &Path) -> io::Result<usize> {
    fs::create_dir_all(cache)?;
    if let (Some(parent), Some(own)) = (cache.parent(), cache.file_name()) {
        for entry in fs::read_dir(parent)?.filter_map(Result::ok) {
            if entry.file_name() != own {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
    let mut written = 0;
    let mut first_error = None;
    for original in originals(pkg_dir) {
        match cache_one(&original, cache) {
            Ok(n) => written += n,
            // One file's failure does not keep the others uncompressed.
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if written == 0 => Err(e),
        _ => Ok(written),
    }
}

/// Writes what `cache` lacks of `original`: its compressed copies (where they are smaller),
/// then the original itself. Returns how many files it wrote.
fn cache_one(original: &Path, cache: &Path) -> io::Result<usize> {
    let Some(name) = original.file_name() else {
        return Ok(0);
    };
    let target = cache.join(name);
    if target.exists() {
        return Ok(0);
    }
    let data = fs::read(original)?;
    let mtime = modified(original).unwrap_or_else(SystemTime::now);
    let mut written = 0;
    for suffix in SUFFIXES {
        let compressed = match suffix {
            "br" => brotli_11(&data)?,
            _ => gzip_9(&data)?,
        };
        // Not worth it (already compressed formats): the original alone.
        if compressed.len() < data.len() {
            write_atomically(&with_suffix(&target, suffix), &compressed, mtime)?;
            written += 1;
        }
    }
    write_atomically(&target, &data, mtime)?;
    Ok(written + 1)
}

/// The bundle's files: from `cache` (with their precompressed copies) where it has them, from
/// `pkg_dir` (as they are: copies an older server left there are not trusted) otherwise.
pub fn files(pkg_dir: &Path, cache: Option<&Path>) -> ServeDir<ServeDir> {
    match cache {
        Some(cache) => ServeDir::new(cache)
            .precompressed_br()
            .precompressed_gzip()
            .fallback(ServeDir::new(pkg_dir)),
        None => ServeDir::new(pkg_dir).fallback(ServeDir::new(pkg_dir)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn the_cache_holds_copies_that_decode_to_their_originals_and_one_build_only() {
        let site = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let wasm = site.path().join("app.wasm");
        let body: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        fs::write(&wasm, &body).unwrap();
        fs::write(site.path().join("notes.txt"), "not part of the bundle").unwrap();
        let listed = |dir: &Path| {
            let mut names: Vec<String> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        let site_before = listed(site.path());

        let old = cache_dir(data.path(), "0000000000000000");
        fs::create_dir_all(&old).unwrap();
        let cache = cache_dir(data.path(), "1111111111111111");
        assert_eq!(fill_cache(site.path(), &cache).unwrap(), 3);
        assert_eq!(fill_cache(site.path(), &cache).unwrap(), 0, "kept");
        assert!(!old.exists(), "another build's copies are gone");
        assert_eq!(listed(&cache), ["app.wasm", "app.wasm.br", "app.wasm.gz"]);
        assert_eq!(
            listed(site.path()),
            site_before,
            "nothing written to the site"
        );

        assert_eq!(fs::read(cache.join("app.wasm")).unwrap(), body);
        let br = fs::read(cache.join("app.wasm.br")).unwrap();
        let mut decoded = Vec::new();
        brotli::Decompressor::new(&br[..], 4096)
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, body);
        let gz = fs::read(cache.join("app.wasm.gz")).unwrap();
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, body);
    }
}
