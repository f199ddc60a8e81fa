//! What imports and copies cost in memory, measured on the server process as it runs: 30
//! copies of a 3 MB conversation asked at once, then ten 8 MB imports asked at once, from five
//! accounts. The permits (two per account, four on the server) bound how many are written at
//! once, and each holds its text and one chunk of it parsed: the process's resident memory
//! stays within [`BOUND_MIB`] of what it was before (BENCHMARKS.md, "Imports and copies",
//! has the figures measured).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{ServerProcess, TestDb};
use crate::storage::export_of;

/// How far above its resting size the server may grow under the load below, in MiB.
const BOUND_MIB: u64 = 160;

/// The resident anonymous memory of process `pid` (its heap and stacks: not the database's
/// pages SQLite maps from its file, which the kernel drops as it needs), in KiB (`RssAnon`
/// of its status).
fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn thirty_copies_and_ten_large_imports_at_once_stay_within_a_memory_bound() {
    let db = TestDb::new().await;
    let store = db.open().await;
    let names: Vec<String> = (0..5).map(|i| format!("user{i}")).collect();
    for name in &names {
        let hash = server::auth::hash_password("a long password 1").unwrap();
        store
            .create_user(name, &hash, false, server::clock::now())
            .await
            .unwrap();
    }
    drop(store);
    let site = tempfile::tempdir().unwrap();
    let server = ServerProcess::launch(&db, site.path(), &[]).await;
    let pid = server.child.id();
    let client = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base);
    let api = crate::helpers::Api::new(&server.base);
    let mut cookies = Vec::new();
    for name in &names {
        cookies.push(api.sign_in(name, "a long password 1").await);
    }
    // Each account has a conversation whose export is 3 MB.
    let three = export_of(105, 100, "word ");
    let mut sessions = Vec::new();
    for cookie in &cookies {
        let res = client
            .post(url("/api/session/import"))
            .header("cookie", cookie)
            .header("content-type", "application/x-ndjson")
            .body(three.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        sessions.push(body["session"]["id"].as_str().unwrap().to_owned());
    }
    let exported = client
        .get(url(&format!(
            "/api/session/export?session_id={}&format=jsonl",
            sessions[0]
        )))
        .header("cookie", &cookies[0])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        (3_000_000..4_000_000).contains(&exported.len()),
        "{}",
        exported.len()
    );
    let eight = export_of(800, 100, "word ");
    assert!(
        eight.len() > 8_000_000 && eight.len() <= 8 << 20,
        "{}",
        eight.len()
    );
    // Settled: what the process holds at rest.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let resting = resident_kib(pid);
    let peak = Arc::new(AtomicU64::new(resting));
    let watching = {
        let peak = Arc::clone(&peak);
        tokio::spawn(async move {
            loop {
                peak.fetch_max(resident_kib(pid), Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let copies = (0..30).map(|i| {
        let request = client
            .post(url("/api/session/duplicate"))
            .header("cookie", &cookies[i % 5])
            .json(&json!({"session_id": sessions[i % 5]}))
            .send();
        async move { request.await.unwrap().status().as_u16() }
    });
    let copied = futures::future::join_all(copies).await;
    let copies_peak = peak.load(Ordering::SeqCst);
    let imports = (0..10).map(|i| {
        let request = client
            .post(url("/api/session/import"))
            .header("cookie", &cookies[i % 5])
            .header("content-type", "application/x-ndjson")
            .body(eight.clone())
            .send();
        async move { request.await.unwrap().status().as_u16() }
    });
    let imported = futures::future::join_all(imports).await;
    watching.abort();
    let grown_mib = (peak.load(Ordering::SeqCst).saturating_sub(resting)) / 1024;
    println!(
        "resting {} MiB; copies' peak +{} MiB; imports' peak +{grown_mib} MiB; copies \
         {copied:?}; imports {imported:?}",
        resting / 1024,
        copies_peak.saturating_sub(resting) / 1024,
    );
    // Every request answered: written, or told to wait (its account's two, or the server's
    // four, in progress).
    for code in copied.iter().chain(&imported) {
        assert!([200, 429, 503].contains(code), "{code}");
    }
    assert!(copied.iter().filter(|c| **c == 200).count() >= 4);
    assert!(imported.contains(&200));
    assert!(
        grown_mib <= BOUND_MIB,
        "the server grew {grown_mib} MiB past its resting size (the bound is {BOUND_MIB} MiB)"
    );
}
