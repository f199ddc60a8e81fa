use axum::Json;
use serde_json::{json, Value};

/// Liveness: the process is up and serving requests.
pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}
