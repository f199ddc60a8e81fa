//! API errors: a status and a JSON body `{"error": "...", ...}`. Internal causes are logged,
//! never sent.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use crate::journal::JournalError;
use crate::runner::RunError;
use crate::store::StoreError;

/// An error answered to an API client.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    extra: Map<String, Value>,
}

impl ApiError {
    /// An error with a status and a message for the client.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            extra: Map::new(),
        }
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404.
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("{what} not found"))
    }

    /// Adds a field to the body.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!("internal error: {cause}");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = self.extra;
        body.insert("error".into(), Value::String(self.message));
        (self.status, Json(Value::Object(body))).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ApiError::not_found("session or run"),
            StoreError::Busy { active_run_id } => {
                ApiError::new(StatusCode::CONFLICT, "session already has an active run")
                    .with("active_run_id", active_run_id)
            }
            StoreError::Finished => ApiError::new(StatusCode::CONFLICT, "run already finished"),
            StoreError::AlreadyAnswered => ApiError::new(StatusCode::CONFLICT, "already answered"),
            StoreError::WrongKind { kind } => ApiError::new(
                StatusCode::CONFLICT,
                format!("that request is a pending {kind}: answer it as one"),
            )
            .with("kind", kind),
            StoreError::Duplicate { run_id } => {
                ApiError::new(StatusCode::CONFLICT, "message already sent").with("run_id", run_id)
            }
            StoreError::Full { limit } => ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "your attached files would take more than {}, the limit: delete conversations with files you no longer need",
                    app::api::file_size(limit)
                ),
            )
            .with("limit", "max_attachment_storage"),
            StoreError::Unattachable { id } => ApiError::bad_request(format!(
                "attachment {id} cannot be sent: it does not exist, is not yours, or was sent already"
            ))
            .with("attachment", id),
            other => ApiError::internal(&other),
        }
    }
}

impl From<JournalError> for ApiError {
    fn from(e: JournalError) -> Self {
        match e {
            JournalError::Finished => ApiError::new(StatusCode::CONFLICT, "run already finished"),
            JournalError::Store(e) => e.into(),
            JournalError::Closed => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server is shutting down")
            }
        }
    }
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Store(e) => e.into(),
            RunError::Journal(e) => e.into(),
            RunError::NotActive => ApiError::new(StatusCode::CONFLICT, "run is not active"),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let status = match &rejection {
            JsonRejection::MissingJsonContentType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            JsonRejection::BytesRejection(_) => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::BAD_REQUEST,
        };
        let message = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "request body too large".to_owned(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                "expected a JSON body (Content-Type: application/json)".to_owned()
            }
            _ => format!("malformed JSON: {}", rejection.body_text()),
        };
        ApiError::new(status, message)
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::bad_request(format!("bad query: {}", rejection.body_text()))
    }
}

/// `Json<T>` whose rejections are [`ApiError`]s.
#[derive(axum::extract::FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// `Query<T>` whose rejections are [`ApiError`]s.
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// A JSON body for a successful answer.
pub fn ok(value: Value) -> Json<Value> {
    Json(value)
}

/// `{"ok": true}`.
pub fn ok_true() -> Json<Value> {
    Json(json!({"ok": true}))
}
