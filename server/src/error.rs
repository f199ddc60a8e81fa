//! API errors: a status and a JSON body `{"error": "...", ...}`. Internal causes are logged,
//! never sent.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use crate::journal::JournalError;
use crate::limits::{Refused, Whose};
use crate::runner::RunError;
use crate::store::StoreError;

/// Declares [`ApiError`] from one table: each variant with its status and, where it has one,
/// its constructor from a message; the status, the refusal for a status and the body are
/// derived from the same rows.
macro_rules! api_errors {
    ($($(#[doc = $doc:expr])* $variant:ident = $status:ident $(, $ctor:ident)?;)*) => {
        /// An error answered to an API client: the variant decides the status, the
        /// [`Detail`] says what went wrong in the body `{"error": message, …extra}`.
        #[derive(Debug)]
        pub enum ApiError {
            $($(#[doc = $doc])* $variant(Detail),)*
            /// 500: logged where it happened, never detailed to the client.
            Internal,
        }

        impl ApiError {
            $($(
                #[doc = concat!("[`ApiError::", stringify!($variant), "`] with `message`.")]
                pub fn $ctor(message: impl Into<String>) -> Self {
                    Self::$variant(Detail::new(message))
                }
            )?)*

            /// The status.
            pub fn status(&self) -> StatusCode {
                match self {
                    $(Self::$variant(_) => StatusCode::$status,)*
                    Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
                }
            }

            /// A refusal with `status` (one the table has; any other reads as 400).
            pub fn refusal(status: StatusCode, message: impl Into<String>) -> Self {
                let detail = Detail::new(message);
                $(if status == StatusCode::$status {
                    return Self::$variant(detail);
                })*
                Self::BadRequest(detail)
            }

            fn detail_mut(&mut self) -> Option<&mut Detail> {
                match self {
                    $(Self::$variant(d) => Some(d),)*
                    Self::Internal => None,
                }
            }

            fn into_detail(self) -> Option<Detail> {
                match self {
                    $(Self::$variant(d) => Some(d),)*
                    Self::Internal => None,
                }
            }
        }
    };
}

api_errors! {
    /// 400: the request is malformed, or names something it may not use.
    BadRequest = BAD_REQUEST, bad_request;
    /// 401: nobody is signed in (or nobody can be).
    Unauthorized = UNAUTHORIZED, unauthorized;
    /// 403: the request may not be made from where it came.
    Forbidden = FORBIDDEN, forbidden;
    /// 404: no such thing, or not the caller's (see [`ApiError::not_found`]).
    NotFound = NOT_FOUND;
    /// 408: the request's body did not arrive in time.
    RequestTimeout = REQUEST_TIMEOUT, request_timeout;
    /// 409: the thing is not in a state that allows it.
    Conflict = CONFLICT, conflict;
    /// 413: past a size limit.
    TooLarge = PAYLOAD_TOO_LARGE, too_large;
    /// 415: a body of a type the route does not take.
    UnsupportedMedia = UNSUPPORTED_MEDIA_TYPE, unsupported_media;
    /// 429: past a rate or concurrency limit.
    TooMany = TOO_MANY_REQUESTS, too_many;
    /// 502: the upstream provider failed.
    Upstream = BAD_GATEWAY, upstream;
    /// 503: the server cannot take it now (full, shutting down, its database unreachable).
    Unavailable = SERVICE_UNAVAILABLE, unavailable;
    /// 507: the server's disk is full.
    InsufficientStorage = INSUFFICIENT_STORAGE, insufficient_storage;
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
    /// 404, naming what was not found.
    pub fn not_found(what: &str) -> Self {
        Self::NotFound(Detail::new(format!("{what} not found")))
    }

    /// 500, logging the cause.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!("internal error: {cause}");
        Self::Internal
    }

    /// Adds a field to the body (nothing for [`ApiError::Internal`]).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let Some(detail) = self.detail_mut() {
            detail.extra.insert(key.to_owned(), value.into());
        }
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let (message, mut body) = match self.into_detail() {
            Some(detail) => (detail.message, detail.extra),
            None => ("internal error".to_owned(), Map::new()),
        };
        // A refusal that says when to come back says it in the header too.
        let retry_after = body.get("retry_after").and_then(Value::as_u64);
        body.insert("error".into(), Value::String(message));
        let mut response = (status, Json(Value::Object(body))).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        let error = match refused.whose {
            Whose::Account => ApiError::too_many(refused.message),
            Whose::Server => ApiError::unavailable(refused.message),
        };
        error.with("limit", refused.limit)
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
            StoreError::TooManyRunning { limit } => ApiError::too_many(format!(
                "{limit} turns are running, the limit: wait for one to end, or stop one"
            ))
            .with("limit", "max_runs_per_user"),
            StoreError::QueueFull { limit } => ApiError::too_many(format!(
                "{limit} follow-ups are already waiting in this conversation, the limit"
            ))
            .with("limit", "max_queued"),
            StoreError::TooManyPasskeys { limit } => ApiError::too_many(format!(
                "you have {limit} passkeys, the limit: remove one in Settings first"
            ))
            .with("limit", "max_passkeys"),
            StoreError::TooManyShares { limit } => ApiError::too_many(format!(
                "you have {limit} share links, the limit: revoke one in Settings first"
            ))
            .with("limit", "max_shares"),
            StoreError::Unattachable { id } => ApiError::bad_request(format!(
                "attachment {id} cannot be sent: it does not exist, is not yours, or was sent already"
            ))
            .with("attachment", id),
            e if e.disk_full() => ApiError::insufficient_storage("the server's disk is full")
                .with("limit", "disk"),
            e if e.unreachable() => {
                tracing::warn!("the database cannot be reached: {e}");
                ApiError::unavailable("the server's database cannot be reached now: try again shortly")
                    .with("retry_after", 2)
            }
            other => ApiError::internal(&other),
        }
    }
}

impl From<crate::transfer::TransferError> for ApiError {
    fn from(e: crate::transfer::TransferError) -> Self {
        use crate::transfer::TransferError;
        match e {
            TransferError::Read(e) if e.too_large => {
                ApiError::too_large(e.to_string()).with("line", e.line)
            }
            TransferError::Read(e) => ApiError::bad_request(e.to_string()).with("line", e.line),
            TransferError::TooLarge(message) => ApiError::too_large(message),
            TransferError::Full(full) => full.into(),
            TransferError::Store(e) => e.into(),
            TransferError::Export(e) => ApiError::internal(&e),
        }
    }
}

impl From<crate::storage::Full> for ApiError {
    fn from(full: crate::storage::Full) -> Self {
        ApiError::too_large(full.to_string())
            .with("limit", "max_storage_per_user")
            .with("used", full.used.total())
            .with("quota", full.quota)
    }
}

impl From<crate::storage::NoRoom> for ApiError {
    fn from(e: crate::storage::NoRoom) -> Self {
        match e {
            crate::storage::NoRoom::Full(full) => full.into(),
            crate::storage::NoRoom::Store(e) => e.into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_its_status_and_what_it_says() {
        for status in [400, 401, 403, 404, 409, 413, 415, 429] {
            let status = StatusCode::from_u16(status).unwrap();
            let refusal = ApiError::refusal(status, "no").with("limit", "x");
            assert_eq!(refusal.status(), status);
            let detail = refusal.into_detail().unwrap();
            assert_eq!(
                (detail.message.as_str(), &detail.extra["limit"]),
                ("no", &json!("x"))
            );
        }
        // A status the table does not have is a bad request, never a server error.
        assert_eq!(
            ApiError::refusal(StatusCode::IM_A_TEAPOT, "no").status(),
            StatusCode::BAD_REQUEST
        );
        let internal = ApiError::internal(&"disk on fire").with("path", "/secret");
        assert_eq!(internal.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            internal.into_detail().is_none(),
            "nothing of the cause is told"
        );
        assert_eq!(ApiError::not_found("run").status(), StatusCode::NOT_FOUND);
    }
}
