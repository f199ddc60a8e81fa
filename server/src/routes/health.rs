use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::metrics::store::Said;
use crate::metrics::Metrics;

/// Liveness: the process is up and serving requests; `degraded` when the database's last
/// write failed (its disk full, or out of reach), which reads still survive.
pub(crate) async fn healthz(State(metrics): State<Arc<Metrics>>) -> Json<Value> {
    Json(match metrics.store.said() {
        Said::Ok => json!({ "status": "ok" }),
        Said::DiskFull => json!({ "status": "degraded", "store": "the disk is full" }),
        Said::Failing => json!({ "status": "degraded", "store": "writes are failing" }),
    })
}
