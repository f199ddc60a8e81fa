//! Historical transcript scenes: a settled turn rebuilt from its transcript's tool
//! calls and final message, when they link up by id.

use serde_json::{json, Value};

use crate::classify::Classification;
use crate::js;
use crate::model::Seed;
use crate::registry::Registry;
use crate::scene::{ActivityScene, Mode};

/// A rebuilt historical turn.
#[derive(Clone, Debug)]
pub struct HistoricalScene {
    /// Its anchor.
    pub registry: Registry,
    /// The mode to show it in.
    pub mode: Mode,
}

impl HistoricalScene {
    /// The scene.
    pub fn scene(&self) -> ActivityScene<'_> {
        self.registry.scene(self.mode)
    }
}

/// `projectAssistantTurnAnchorHistoricalTranscriptScene(input, options)`: `None` when the input
/// lacks an identity, activity or a settled message, or when any activity event would not be
/// accepted as activity.
pub fn project_historical_scene(input: &Value, mode: Option<&str>) -> Option<HistoricalScene> {
    let get = |k: &str| js::own(Some(input), k);
    let session_id = js::clean(get("session_id"));
    let turn_id = js::clean(get("turn_id"));
    let local_id = js::clean(get("local_id"));
    let events = get("activity_events")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())?;
    let settled = get("settled_message").filter(|v| v.is_object())?;
    if session_id.is_empty() || turn_id.is_empty() || local_id.is_empty() {
        return None;
    }
    let opt = |s: &str| Some(s.to_owned()).filter(|s| !s.is_empty());
    let run_id = js::clean(get("run_id"));
    let stream_id = js::clean(get("stream_id"));
    let refs = match get("source_message_refs") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| js::clean(Some(v)))
            .filter(|s| !s.is_empty())
            .map(|s| Value::String(s.to_owned()))
            .collect(),
        _ => Vec::new(),
    };
    let seed = Seed {
        session_id: session_id.to_owned(),
        turn_id: opt(turn_id),
        run_id: opt(run_id),
        stream_id: opt(stream_id),
        local_id: None,
        source_message_refs: refs,
        status: None,
        started_at: None,
    };
    let mut registry = Registry::new(&seed).ok()?;
    let ctx = json!({"session_id": session_id, "turn_id": turn_id, "run_id": run_id, "stream_id": stream_id});
    for event in events {
        let applied = registry.apply(event, &ctx);
        if !applied.applied || applied.classification != Classification::Activity {
            return None;
        }
    }
    let mut payload = settled.as_object().cloned().unwrap_or_default();
    let role = match js::clean(payload.get("role")) {
        "" => "assistant".to_owned(),
        r => r.to_owned(),
    };
    payload.insert("role".into(), Value::String(role));
    let settled_input = json!({
        "source_type": "settled_message",
        "seq": events.len() + 1,
        "local_id": local_id,
        "payload": payload,
    });
    if !registry.apply(&settled_input, &ctx).applied {
        return None;
    }
    let mode = mode
        .map(js::trim)
        .filter(|m| !m.is_empty())
        .or_else(|| Some(js::clean(get("mode"))))
        .map(Mode::parse_or_default)
        .unwrap_or_default();
    Some(HistoricalScene { registry, mode })
}
