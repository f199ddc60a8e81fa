use std::sync::LazyLock;

use anchor::{Applied, Registry, Seed};
use serde_json::{json, Value};

static EXPECTED: LazyLock<Value> = LazyLock::new(|| {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/scenarios.expected.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("scenario outcomes")).expect("JSON")
});

/// The reference's outcome for a scenario id.
#[track_caller]
pub fn expected(id: &str) -> &'static Value {
    EXPECTED
        .get(id)
        .unwrap_or_else(|| panic!("no expected outcome for {id}"))
}

/// `CTX` of scenarios.md.
pub fn ctx() -> Value {
    json!({"session_id": "sid-1", "turn_id": "turn-1", "run_id": "run-1", "stream_id": "stream-1"})
}

/// `reg(seed)`.
#[track_caller]
pub fn reg(seed: Value) -> Registry {
    Registry::new(&Seed::from_value(&seed)).expect("valid seed")
}

/// `{applied, reason}` as the reference reports it.
pub fn outcome(a: &Applied) -> Value {
    json!({"applied": a.applied, "reason": a.reason.map(|r| r.as_str())})
}

/// Any serializable value as JSON.
#[track_caller]
pub fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("serializable")
}

/// The registry's stats as JSON.
pub fn stats(r: &Registry) -> Value {
    to_json(&r.stats())
}

/// The registry's dedupe keys as JSON.
pub fn keys(r: &Registry) -> Value {
    json!(r.dedupe_keys().collect::<Vec<_>>())
}

/// Drops object-valued entries of each mismatch (the scenario file keeps only scalars).
pub fn scalar_mismatches(report: &Value) -> Value {
    let list = report["mismatches"].as_array().cloned().unwrap_or_default();
    Value::Array(
        list.into_iter()
            .map(|m| {
                let map = m.as_object().cloned().unwrap_or_default();
                Value::Object(map.into_iter().filter(|(_, v)| !v.is_object()).collect())
            })
            .collect(),
    )
}
