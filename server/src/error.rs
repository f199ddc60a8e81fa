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

/// An error answered to an API client: the variant decides the status, the [`Detail`] says
/// what went wrong in the body `{"error": message, …extra}`.
#[derive(Debug)]
pub enum ApiError {
    /// 400: the request is malformed, or names something it may not use.
    BadRequest(Detail),
    /// 401: nobody is signed in (or nobody can be).
    Unauthorized(Detail),
    /// 403: the request may not be made from where it came.
    Forbidden(Detail),
    /// 404: no such thing, or not the caller's.
    NotFound(Detail),
    /// 409: the thing is not in a state that allows it.
    Conflict(Detail),
    /// 413: past a size limit.
    TooLarge(Detail),
    /// 415: a body of a type the route does not take.
    UnsupportedMedia(Detail),
    /// 429: past a rate or concurrency limit.
    TooMany(Detail),
    /// 502: the upstream provider failed.
    Upstream(Detail),
    /// 503: the server cannot take it now (full, shutting down).
    Unavailable(Detail),
    /// 500: logged where it happened, never detailed to the client.
    Internal,
}

/// What an [`ApiError`] tells the client.
#[derive(Debug, Default)]
pub struct Detail {
    message: String,
    extra: Map<String, Value>,
}

impl Detail {
    fn new(message: impl Into<String>) -> Self {
        Detail {
            message: message.into(),
            extra: Map::new(),
        }
    }
}

impl ApiError {
    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::BadRequest(Detail::new(message))
    }

    /// 401.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::Unauthorized(Detail::new(message))
    }

    /// 403.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::Forbidden(Detail::new(message))
    }

    /// 404, naming what was not found.
    pub fn not_found(what: &str) -> Self {
        Self::NotFound(Detail::new(format!("{what} not found")))
    }

    /// 409.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict(Detail::new(message))
    }

    /// 413.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::TooLarge(Detail::new(message))
    }

    /// 415.
    pub fn unsupported_media(message: impl Into<String>) -> Self {
        Self::UnsupportedMedia(Detail::new(message))
    }

    /// 429.
    pub fn too_many(message: impl Into<String>) -> Self {
        Self::TooMany(Detail::new(message))
    }

    /// 502.
    pub fn upstream(message: impl Into<String>) -> Self {
        Self::Upstream(Detail::new(message))
    }

    /// 503.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::Unavailable(Detail::new(message))
    }

    /// 500, logging the cause.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!("internal error: {cause}");
        Self::Internal
    }

    /// A refusal with one of the client-error statuses the variants have (any other status
    /// reads as 400).
    pub fn refusal(status: StatusCode, message: impl Into<String>) -> Self {
        let detail = Detail::new(message);
        match status {
            StatusCode::UNAUTHORIZED => Self::Unauthorized(detail),
            StatusCode::FORBIDDEN => Self::Forbidden(detail),
            StatusCode::NOT_FOUND => Self::NotFound(detail),
            StatusCode::CONFLICT => Self::Conflict(detail),
            StatusCode::PAYLOAD_TOO_LARGE => Self::TooLarge(detail),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UnsupportedMedia(detail),
            StatusCode::TOO_MANY_REQUESTS => Self::TooMany(detail),
            _ => Self::BadRequest(detail),
        }
    }

    /// Adds a field to the body (nothing for [`ApiError::Internal`]).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let Some(detail) = self.detail_mut() {
            detail.extra.insert(key.to_owned(), value.into());
        }
        self
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMedia(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Upstream(_) => StatusCode::BAD_GATEWAY,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn detail_mut(&mut self) -> Option<&mut Detail> {
        match self {
            Self::BadRequest(d)
            | Self::Unauthorized(d)
            | Self::Forbidden(d)
            | Self::NotFound(d)
            | Self::Conflict(d)
            | Self::TooLarge(d)
            | Self::UnsupportedMedia(d)
            | Self::TooMany(d)
            | Self::Upstream(d)
            | Self::Unavailable(d) => Some(d),
            Self::Internal => None,
        }
    }

    fn into_detail(self) -> Option<Detail> {
        match self {
            Self::BadRequest(d)
            | Self::Unauthorized(d)
            | Self::Forbidden(d)
            | Self::NotFound(d)
            | Self::Conflict(d)
            | Self::TooLarge(d)
            | Self::UnsupportedMedia(d)
            | Self::TooMany(d)
            | Self::Upstream(d)
            | Self::Unavailable(d) => Some(d),
            Self::Internal => None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let (message, mut body) = match self.into_detail() {
            Some(detail) => (detail.message, detail.extra),
            None => ("internal error".to_owned(), Map::new()),
        };
        body.insert("error".into(), Value::String(message));
        (status, Json(Value::Object(body))).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ApiError::not_found("session or run"),
            StoreError::Busy { active_run_id } => {
                ApiError::conflict("session already has an active run")
                    .with("active_run_id", active_run_id)
            }
            StoreError::Finished => ApiError::conflict("run already finished"),
            StoreError::AlreadyAnswered => ApiError::conflict("already answered"),
            StoreError::WrongKind { kind } => ApiError::conflict(
                format!("that request is a pending {kind}: answer it as one"),
            )
            .with("kind", kind),
            StoreError::Duplicate { run_id } => {
                ApiError::conflict("message already sent").with("run_id", run_id)
            }
            StoreError::Full { limit } => ApiError::too_large(
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
            JournalError::Finished => ApiError::conflict("run already finished"),
            JournalError::Store(e) => e.into(),
            JournalError::Closed => ApiError::unavailable("server is shutting down"),
        }
    }
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Store(e) => e.into(),
            RunError::Journal(e) => e.into(),
            RunError::NotActive => ApiError::conflict("run is not active"),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match &rejection {
            JsonRejection::MissingJsonContentType(_) => {
                ApiError::unsupported_media("expected a JSON body (Content-Type: application/json)")
            }
            JsonRejection::BytesRejection(_) => ApiError::too_large("request body too large"),
            _ => ApiError::bad_request(format!("malformed JSON: {}", rejection.body_text())),
        }
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
