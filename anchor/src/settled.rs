//! Settled final-answer projection: the final answer of a transcript message, through a
//! one-message anchor, exactly as a live turn would settle.

use serde_json::{json, Map, Value};

use crate::js;
use crate::model::Seed;
use crate::registry::Registry;

/// Why a message was not projected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettledSkip {
    /// Neither the context nor the message names a session.
    MissingSession,
    /// The message is not the assistant's.
    NonAssistant,
}

impl SettledSkip {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MissingSession => "missing_session",
            Self::NonAssistant => "non_assistant",
        }
    }
}

/// The outcome of [`project_settled_final_answer`].
#[derive(Clone, Debug)]
pub struct SettledProjection {
    /// Why nothing was projected, if so.
    pub skipped: Option<SettledSkip>,
    /// The final answer (`""` when the message has none).
    pub final_answer: String,
    /// The message it comes from.
    pub final_message_ref: Option<String>,
    /// The one-message anchor.
    pub registry: Option<Registry>,
}

fn first_clean<'a>(v: &'a Value, keys: &[&str]) -> &'a str {
    js::clean(js::first_own_in(Some(v), keys))
}

fn or<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() {
        b
    } else {
        a
    }
}

/// `projectAssistantTurnAnchorSettledMessageFinalAnswer(message, context)`.
pub fn project_settled_final_answer(message: &Value, context: &Value) -> SettledProjection {
    let skip = |reason| SettledProjection {
        skipped: Some(reason),
        final_answer: String::new(),
        final_message_ref: None,
        registry: None,
    };
    let session_id = or(
        first_clean(context, &["session_id", "sessionId"]),
        first_clean(message, &["session_id", "sessionId"]),
    );
    if session_id.is_empty() {
        return skip(SettledSkip::MissingSession);
    }
    if or(first_clean(message, &["role"]), "assistant") != "assistant" {
        return skip(SettledSkip::NonAssistant);
    }
    let run_id = or(
        first_clean(context, &["run_id", "runId"]),
        first_clean(message, &["run_id", "runId", "_run_id", "runtime_run_id"]),
    );
    let stream_id = or(
        first_clean(context, &["stream_id", "streamId"]),
        first_clean(message, &["stream_id", "streamId", "_stream_id"]),
    );
    let mut reference = js::first_text([
        js::first_own_in(Some(message), &["message_id", "id", "local_id"]),
        js::first_own_in(
            Some(context),
            &["message_id", "messageId", "local_id", "localId"],
        ),
    ])
    .into_owned();
    if reference.is_empty() {
        if let Some(idx) = js::first_own_in(Some(context), &["raw_idx", "rawIdx"]) {
            reference = format!("raw_idx:{}", js::to_js_string(idx));
        }
    }
    let turn_id = or(
        first_clean(context, &["turn_id", "turnId"]),
        first_clean(message, &["turn_id", "turnId"]),
    );
    let turn_id = if turn_id.is_empty() {
        let tail = [run_id, stream_id, reference.as_str()]
            .into_iter()
            .find(|s| !s.is_empty())
            .unwrap_or("assistant");
        format!("settled:{session_id}:{tail}")
    } else {
        turn_id.to_owned()
    };
    let opt = |s: &str| Some(s.to_owned()).filter(|s| !s.is_empty());
    let seed = Seed {
        session_id: session_id.to_owned(),
        turn_id: Some(turn_id.clone()),
        run_id: opt(run_id),
        stream_id: opt(stream_id),
        local_id: opt(&reference),
        source_message_refs: if reference.is_empty() {
            Vec::new()
        } else {
            vec![Value::String(reference.clone())]
        },
        status: None,
        started_at: None,
    };
    let Ok(mut registry) = Registry::new(&seed) else {
        return skip(SettledSkip::MissingSession);
    };
    let content = match context.as_object() {
        Some(ctx) if ctx.contains_key("content") => ctx.get("content"),
        _ => js::own(Some(message), "content"),
    };
    let ref_value = opt(&reference).map_or(Value::Null, Value::String);
    let mut payload = Map::new();
    payload.insert("role".into(), json!("assistant"));
    payload.insert("id".into(), ref_value.clone());
    payload.insert("content".into(), content.cloned().unwrap_or(Value::Null));
    for key in ["usage", "_turnUsage"] {
        if let Some(u @ (Value::Object(_) | Value::Array(_))) = js::own(Some(message), key) {
            payload.insert(key.into(), u.clone());
        }
    }
    let input =
        json!({"source_type": "settled_message", "payload": payload, "local_id": ref_value});
    let ctx = json!({
        "session_id": session_id,
        "turn_id": turn_id,
        "run_id": run_id,
        "stream_id": stream_id,
    });
    let _ = registry.apply(&input, &ctx);
    let content = &registry.anchor().content;
    SettledProjection {
        skipped: None,
        final_answer: content.final_answer.clone(),
        final_message_ref: content.final_message_ref.clone(),
        registry: Some(registry),
    }
}
