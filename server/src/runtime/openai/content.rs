//! What a user message carries to the model: its text, and its files placed in the workspace
//! (images inline, where the model takes them).

use super::*;

/// The content of a user message that carries files: its text with a line per file (where a
/// text file is in the workspace), then the images as image parts (those given with their
/// bytes; the others are named only). `placed` is where each file went (see `place_files`).
pub(super) fn user_content(text: &str, files: &[AttachedFile], placed: &[Option<String>]) -> Value {
    let mut note = String::from(text.trim());
    if !note.is_empty() {
        note.push_str("\n\n");
    }
    note.push_str("Attached files:");
    let mut parts = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let label = file.label();
        match (
            file.is_image(),
            &file.bytes,
            placed.get(i).and_then(Option::as_ref),
        ) {
            (true, Some(bytes), _) => {
                note.push_str(&format!("\n- {label}: an image"));
                parts.push(json!({"type": "text", "text": format!("Image: {label}")}));
                parts.push(json!({"type": "image_url", "image_url": {
                    "url": format!("data:{};base64,{}", file.mime, BASE64.encode(bytes)),
                }}));
            }
            (true, None, _) => note.push_str(&format!("\n- {label}: an image (no longer shown)")),
            (false, _, Some(path)) => note.push_str(&format!(
                "\n- {label}: a text file, in the workspace at `{path}` (read it with read_file)"
            )),
            (false, _, None) => note.push_str(&format!("\n- {label}: a text file")),
        }
    }
    let mut content = vec![json!({"type": "text", "text": note})];
    content.extend(parts);
    Value::Array(content)
}

/// Whether a message carries an image part.
pub(super) fn has_image(message: &Value) -> bool {
    message["content"]
        .as_array()
        .is_some_and(|parts| parts.iter().any(|p| p["type"] == "image_url"))
}

/// The message for a model that takes no images: its text parts only, saying so.
pub(super) fn without_images(message: &Value) -> Value {
    if !has_image(message) {
        return message.clone();
    }
    let mut text: Vec<&str> = message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect();
    text.push("(The images are not shown: this model does not take images.)");
    json!({"role": message["role"], "content": text.join("\n")})
}

impl OpenAiAgent {
    /// Puts the text files of the turn's message into the account's workspace for the model
    /// to read (see [`Workspaces::place`]): where each went (`None`: an image, or a file that
    /// could not be placed, which the model is told by name only).
    pub(super) async fn place_files(
        &self,
        turn: &TurnRequest,
        workspace: &Workspace,
    ) -> Vec<Option<String>> {
        let mut placed = Vec::with_capacity(turn.attachments.len());
        for file in &turn.attachments {
            let Some(text) = file.text() else {
                placed.push(None);
                continue;
            };
            let (all, ws) = (self.workspaces.clone(), workspace.clone());
            let (name, text) = (file.name.clone(), text.to_owned());
            let written = tokio::task::spawn_blocking(move || all.place(&ws, &name, &text)).await;
            match written {
                Ok(Ok(rel)) => placed.push(Some(rel)),
                // Said by the file's size: its name (and the path, in the error) are the
                // person's, and a warning may leave for the trace collector (`--otlp-events`).
                Ok(Err(e)) => {
                    tracing::warn!(
                        size = file.size,
                        "an attachment was not placed in the workspace"
                    );
                    tracing::debug!("not placed: {e}");
                    placed.push(None);
                }
                Err(e) => {
                    tracing::warn!(
                        size = file.size,
                        "an attachment was not placed in the workspace"
                    );
                    tracing::debug!("not placed: {e}");
                    placed.push(None);
                }
            }
        }
        placed
    }
}
