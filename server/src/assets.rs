//! The site bundle (`/pkg`: wasm, js, css) served from files compressed once at the strongest
//! levels (brotli 11, gzip 9) instead of on the fly at a fast level: brotli 11 makes the wasm
//! about a fifth smaller than the on-the-fly encoding.
//!
//! Precompressed copies sit next to their originals (`anchorage.wasm.br`, `.gz`). At startup
//! stale copies (older than their original, from an earlier build) are removed before anything
//! is served, then fresh ones are written in the background; until they exist the compression
//! layer encodes responses on the fly as before.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

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

/// Whether `copy` was made from `original` as it is now: a copy gets its original's
/// modification time when written, so any change to the original (a rebuild, a rollback to an
/// older file, a copy that keeps old times) makes it stale.
fn fresh(original: &Path, copy: &Path) -> bool {
    match (modified(original), modified(copy)) {
        (Some(o), Some(c)) => c == o,
        _ => false,
    }
}

/// Removes precompressed copies that are older than their original (or whose original is
/// gone). Returns how many were removed. Fast; run before serving.
pub fn remove_stale(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for path in entries.filter_map(Result::ok).map(|e| e.path()) {
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
            continue;
        };
        if !SUFFIXES.contains(&ext) {
            continue;
        }
        let original = path.with_extension("");
        // Only copies of bundle files: other compressed assets are left alone.
        let bundle = original
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| EXTENSIONS.contains(&e));
        if !bundle {
            continue;
        }
        if !fresh(&original, &path) && fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
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

/// Writes missing or stale `.br` and `.gz` copies of the bundle's files. Returns how many were
/// written. Slow (brotli 11); run in the background.
pub fn precompress(dir: &Path) -> io::Result<usize> {
    let mut written = 0;
    let mut first_error = None;
    for original in originals(dir) {
        for suffix in SUFFIXES {
            match precompress_one(&original, suffix) {
                Ok(true) => written += 1,
                Ok(false) => {}
                // One file's failure does not keep the others uncompressed.
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    match first_error {
        Some(e) if written == 0 => Err(e),
        _ => Ok(written),
    }
}

/// Writes the `suffix` copy of `original` unless it is fresh; returns whether it wrote one.
fn precompress_one(original: &Path, suffix: &str) -> io::Result<bool> {
    let copy = with_suffix(original, suffix);
    if fresh(original, &copy) {
        return Ok(false);
    }
    let Some(mtime) = modified(original) else {
        return Ok(false);
    };
    let data = fs::read(original)?;
    let compressed = match suffix {
        "br" => brotli_11(&data)?,
        _ => gzip_9(&data)?,
    };
    // Not worth it (already compressed formats): leave the original alone.
    if compressed.len() >= data.len() {
        return Ok(false);
    }
    write_atomically(&copy, &compressed, mtime)?;
    // The original changed while we compressed it: drop the copy, the next start writes a
    // new one.
    if !fresh(original, &copy) {
        let _ = fs::remove_file(&copy);
        return Ok(false);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn copies_decode_to_their_originals_and_stale_ones_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("app.wasm");
        let body: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        fs::write(&wasm, &body).unwrap();
        fs::write(dir.path().join("notes.txt"), "not part of the bundle").unwrap();
        assert_eq!(precompress(dir.path()).unwrap(), 2);
        assert_eq!(precompress(dir.path()).unwrap(), 0, "fresh copies are kept");
        assert!(!dir.path().join("notes.txt.br").exists());

        let br = fs::read(with_suffix(&wasm, "br")).unwrap();
        let mut decoded = Vec::new();
        brotli::Decompressor::new(&br[..], 4096)
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, body);
        let gz = fs::read(with_suffix(&wasm, "gz")).unwrap();
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, body);

        // A rebuild makes the copies stale: they go before anything is served.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&wasm, b"a new build").unwrap();
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        fs::File::options()
            .write(true)
            .open(&wasm)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(remove_stale(dir.path()), 2);
        assert!(!with_suffix(&wasm, "br").exists());
        assert_eq!(remove_stale(dir.path()), 0);

        // A rollback to a file older than the copies also makes them stale.
        fs::write(&wasm, &body).unwrap();
        assert_eq!(precompress(dir.path()).unwrap(), 2);
        let earlier = SystemTime::now() - std::time::Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(&wasm)
            .unwrap()
            .set_modified(earlier)
            .unwrap();
        assert_eq!(remove_stale(dir.path()), 2);

        // Compressed files that are not copies of the bundle are not ours to remove.
        fs::write(dir.path().join("data.tar.gz"), b"archive").unwrap();
        assert_eq!(remove_stale(dir.path()), 0);
        assert!(dir.path().join("data.tar.gz").exists());
    }
}
