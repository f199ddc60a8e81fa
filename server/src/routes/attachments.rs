//! Attachments: files people send with a message. An upload is kept at once (before the
//! message is sent, so a large file is on its way while the message is written) and belongs
//! to its account; the message that carries it names it. Only images (PNG, JPEG, GIF, WebP)
//! and UTF-8 text are taken, judged by their bytes, not by what the browser says they are.

use app::api::{FileQuery, UploadQuery, Uploaded};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use sha2::{Digest, Sha256};

use crate::auth::{owned_session, Viewer};
use crate::error::{ApiError, ApiQuery};
use crate::store::{Attachment, StoreError};
use crate::AppState;

/// The most files one message may carry.
pub const MAX_PER_MESSAGE: usize = app::api::MAX_ATTACHMENTS;

/// The longest file name kept, in bytes (longer ones are cut, keeping the extension).
const MAX_NAME_BYTES: usize = 200;

/// How long an upload that no message carries is kept.
pub const UNSENT_FOR: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// What a file is, judged by its bytes: its type, or why it is refused.
pub fn sniff(bytes: &[u8]) -> Result<&'static str, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::bad_request("the file is empty"));
    }
    let image = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    };
    if let Some(mime) = image {
        return Ok(mime);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok("text/plain"),
        _ => Err(ApiError::unsupported_media(
            "only images (PNG, JPEG, GIF, WebP) and text files (UTF-8) can be attached",
        )),
    }
}

/// A file name fit to show and to write into a workspace: no directories, no control
/// characters, at most [`MAX_NAME_BYTES`] (the extension kept), never empty or dots only.
pub fn clean_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let mut clean: String = base
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned();
    if clean.len() > MAX_NAME_BYTES {
        let ext = clean
            .rfind('.')
            .map(|i| clean[i..].to_owned())
            .filter(|e| e.len() <= 16)
            .unwrap_or_default();
        let mut cut = MAX_NAME_BYTES - ext.len();
        while !clean.is_char_boundary(cut) {
            cut -= 1;
        }
        clean = format!("{}{ext}", &clean[..cut]);
    }
    if clean.trim_matches('.').is_empty() {
        "file".to_owned()
    } else {
        clean
    }
}

/// `POST /api/attachments?name=N[&session_id=S]`, the file's bytes as the body: keeps it
/// and answers `{"attachment": {id, name, mime, size}}` (201). 413 past the size limit or the
/// account's storage, 415 for a type not taken, 400 for an empty file.
pub async fn upload(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<UploadQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let limit = state.limits.max_attachment_bytes;
    let too_large = || {
        ApiError::too_large(format!(
            "the file is larger than {}, the limit for one file",
            app::api::file_size(limit)
        ))
        .with("limit", "max_attachment_bytes")
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    if let Some(session_id) = &q.session_id {
        owned_session(&state, &viewer, session_id).await?;
    }
    // Each upload in progress holds up to its size in memory: so many at once per account.
    let most = usize::try_from(limit).unwrap_or(usize::MAX);
    let _uploading = match state
        .uploads
        .upload(viewer.owner().unwrap_or_default(), &state.limits)
    {
        Ok(place) => place,
        Err(refused) => {
            super::unread::discard(body, most, state.limits.import_wait).await;
            return Err(refused.into());
        }
    };
    let bytes = axum::body::to_bytes(body, most)
        .await
        .map_err(|_| too_large())?;
    let mime = sniff(&bytes)?;
    crate::storage::room(
        state.store.as_ref(),
        viewer.owner(),
        state.limits.max_storage_per_user,
        bytes.len() as u64,
    )
    .await?;
    let attachment = Attachment {
        id: format!("att-{}", uuid::Uuid::new_v4().simple()),
        owner: viewer.owner().unwrap_or_default().to_owned(),
        sha256: hex::encode(Sha256::digest(&bytes)),
        name: clean_name(&q.name),
        mime: mime.to_owned(),
        size: bytes.len() as u64,
        session_id: q.session_id,
        message_id: None,
        created_at: crate::clock::now(),
    };
    let kept = state
        .store
        .add_attachment(&attachment, &bytes, state.limits.max_attachment_storage)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(Uploaded {
            attachment: kept.data(),
        }),
    )
        .into_response())
}

/// The attachment `id` if it is `viewer`'s; `NotFound` otherwise.
pub async fn owned_attachment(
    state: &AppState,
    viewer: &Viewer,
    id: &str,
) -> Result<Attachment, ApiError> {
    let attachment = state.store.attachment(id).await?;
    if attachment.owner != viewer.owner().unwrap_or_default() {
        return Err(ApiError::not_found("attachment"));
    }
    // Sent in a conversation: it is that conversation's (gone when it is deleted).
    if let Some(session_id) = &attachment.session_id {
        match owned_session(state, viewer, session_id).await {
            Ok(_) => {}
            Err(StoreError::NotFound) => return Err(ApiError::not_found("attachment")),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(attachment)
}

/// Checks that `ids` may go with a message of `session_id`: at most [`MAX_PER_MESSAGE`], no
/// repeats, each the viewer's and not sent yet. (The store checks again as it sends them.)
pub async fn checked(
    state: &AppState,
    viewer: &Viewer,
    session_id: &str,
    ids: &[String],
) -> Result<(), ApiError> {
    if ids.len() > MAX_PER_MESSAGE {
        return Err(ApiError::bad_request(format!(
            "a message can carry at most {MAX_PER_MESSAGE} files"
        ))
        .with("limit", "max_attachments_per_message"));
    }
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(ApiError::bad_request(format!(
                "attachment {id} is listed twice"
            )));
        }
        let unattachable = || StoreError::Unattachable { id: id.clone() }.into();
        let attachment = match owned_attachment(state, viewer, id).await {
            Ok(a) => a,
            Err(ApiError::NotFound(_)) => return Err(unattachable()),
            Err(e) => return Err(e),
        };
        if attachment.message_id.is_some()
            || attachment
                .session_id
                .as_deref()
                .is_some_and(|s| s != session_id)
        {
            return Err(unattachable());
        }
    }
    Ok(())
}

/// `GET /api/attachment?id=A`: the file's bytes. Images are shown in the page; text is
/// served as plain text; neither is ever run as a page of this site.
pub async fn download(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiQuery(q): ApiQuery<FileQuery>,
) -> Result<Response, ApiError> {
    let attachment = owned_attachment(&state, &viewer, &q.id).await?;
    let bytes = state.store.attachment_bytes(&attachment.id).await?;
    let mime = if attachment.mime.starts_with("image/") {
        attachment.mime.clone()
    } else {
        "text/plain; charset=utf-8".to_owned()
    };
    Ok(served(bytes, &mime, "inline", &attachment.name))
}

/// A file's bytes as the browser gets them: of type `mime`, `inline` or `attachment` under its
/// `name`, never kept (on a shared device a file must not outlive its sign-out; the agent may
/// change a workspace's at any time), and sandboxed (nothing in it runs as this site).
pub(crate) fn served(bytes: Vec<u8>, mime: &str, disposition: &str, name: &str) -> Response {
    let mut response = bytes.into_response();
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(mime) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{disposition}; filename*=UTF-8''{}",
        super::session::encode_rfc5987(name)
    )) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_judged_by_their_bytes() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest").unwrap(), "image/png");
        assert_eq!(sniff(&[0xff, 0xd8, 0xff, 0xe0]).unwrap(), "image/jpeg");
        assert_eq!(sniff(b"GIF89a....").unwrap(), "image/gif");
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 ").unwrap(), "image/webp");
        assert_eq!(sniff("notes: é\n".as_bytes()).unwrap(), "text/plain");
        let refused = sniff(b"%PDF-1.7\n\xe2\xe3\xcf\xd3").unwrap_err();
        assert_eq!(refused.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(
            sniff(b"MZ\0\0binary").unwrap_err().status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        assert_eq!(sniff(b"").unwrap_err().status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn names_lose_directories_and_control_characters_and_keep_their_extension() {
        assert_eq!(clean_name("../../etc/passwd"), "passwd");
        assert_eq!(clean_name("C:\\Users\\me\\a b.txt"), "a b.txt");
        assert_eq!(clean_name("bad\u{0}\nname.png"), "bad  name.png");
        assert_eq!(clean_name(".."), "file");
        assert_eq!(clean_name("  "), "file");
        let long = format!("{}.txt", "é".repeat(300));
        let cut = clean_name(&long);
        assert!(
            cut.len() <= MAX_NAME_BYTES && cut.ends_with(".txt"),
            "{cut}"
        );
    }
}
