//! Differential vectors: every trace run through the `anchor-replay` binary must
//! print exactly the reference's canonical document.
//!
//! The vectors published with the spec are kept in `tests/fixtures/vectors/`; when the shared
//! spec folder sits beside the project (`../shared/vectors`), every vector found there runs too,
//! so vectors added later are picked up without copying them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn vector_dirs() -> Vec<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![manifest.join("tests/fixtures/vectors")];
    let shared = manifest.join("../../shared/vectors");
    if shared.is_dir() {
        dirs.push(shared);
    }
    dirs
}

/// Trace name → (trace, expected), later directories overriding earlier ones.
fn vectors() -> BTreeMap<String, (PathBuf, PathBuf)> {
    let mut found = BTreeMap::new();
    for dir in vector_dirs() {
        for entry in std::fs::read_dir(&dir).expect("vector directory is readable") {
            let path = entry.expect("directory entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let expected = path.with_extension("expected.json");
            if expected.is_file() {
                let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                found.insert(name, (path, expected));
            }
        }
    }
    found
}

fn replay(trace: &Path, extra: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_anchor-replay"))
        .arg(trace)
        .args(extra)
        .output()
        .expect("anchor-replay runs");
    assert!(
        output.status.success(),
        "anchor-replay failed on {}: {}",
        trace.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

/// Where two JSON values first differ, for a readable failure.
fn first_difference(ours: &Value, theirs: &Value, path: &str) -> Option<String> {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys()) {
                let here = format!("{path}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => {
                        if let Some(d) = first_difference(x, y, &here) {
                            return Some(d);
                        }
                    }
                    (x, y) => return Some(format!("{here}: ours {x:?}, reference {y:?}")),
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, &format!("{path}/{i}"))),
        (a, b) if a == b => None,
        (a, b) => Some(format!("{path}: ours {a}, reference {b}")),
    }
}

#[test]
fn every_vector_matches_the_reference_document() {
    let vectors = vectors();
    assert!(vectors.len() >= 6, "the published vectors are present");
    for (name, (trace, expected)) in &vectors {
        let ours = replay(trace, &[]);
        let reference = std::fs::read_to_string(expected).unwrap();
        let ours_value: Value = serde_json::from_str(&ours).expect("our output is JSON");
        let reference_value: Value =
            serde_json::from_str(&reference).expect("expected file is JSON");
        if let Some(diff) = first_difference(&ours_value, &reference_value, "") {
            panic!("vector {name} differs at {diff}");
        }
        // The canonical text is reproduced byte for byte as well.
        assert_eq!(
            ours.trim_end(),
            reference.trim_end(),
            "vector {name}: canonical bytes"
        );
    }
}

#[test]
fn command_line_flags_override_the_config_line() {
    let vectors = vectors();
    let (trace, _) = &vectors["02-tools-reasoning"];
    let (_, shadow_expected) = &vectors["05-tools-reasoning-shadow-stream"];
    let ours: Value = serde_json::from_str(&replay(
        trace,
        &["--entry", "shadow", "--mode", "transparent_stream"],
    ))
    .unwrap();
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(shadow_expected).unwrap()).unwrap();
    // Same trace, same entry and mode as vector 05: the same anchor, scene and results.
    assert_eq!(ours["registry"], reference["registry"]);
    assert_eq!(ours["scene"], reference["scene"]);
    assert_eq!(ours["mode"], "transparent_stream");
    assert_eq!(ours["entry"], "shadow");
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_code_2() {
    let dir = std::env::temp_dir().join(format!("anchor-replay-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"config\":{\"anchor\":{\"session_id\":\"s\"}}}\n{not json}\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_anchor-replay"))
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("line 2: not JSON"), "{stderr}");

    let output = Command::new(env!("CARGO_BIN_EXE_anchor-replay"))
        .arg(&bad)
        .args(["--mode", "fancy"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));

    let no_session = dir.join("no-session.jsonl");
    std::fs::write(
        &no_session,
        "{\"source\":\"live\",\"event\":{\"type\":\"token\"}}\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_anchor-replay"))
        .arg(&no_session)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("requires session_id"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_mode_reports_medians_and_counts() {
    let vectors = vectors();
    let (trace, _) = &vectors["04-replay-after-settle"];
    let out: Value = serde_json::from_str(&replay(trace, &["--bench", "3"])).unwrap();
    assert_eq!(out["lines"], 19);
    assert_eq!(out["applied"], 8);
    assert!(out["apply_ms_median"].as_f64().unwrap() >= 0.0);
    assert!(out["project_ms_median"].as_f64().unwrap() >= 0.0);
}
