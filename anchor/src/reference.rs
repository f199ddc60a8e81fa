//! The reference's whole-value entry points, kept for the parity tests (the `parity`
//! feature): normalizing an input into an owned envelope without a registry, a batch of them,
//! and the identity key of an envelope. The registry itself never builds a [`Normalized`]: it
//! reads a draft and materializes only what passes its gates.

use std::borrow::Cow;

use serde_json::Value;

use crate::classify::Classification;
use crate::js;
use crate::model::AnchorEvent;
use crate::normalize::{Ctx, Draft, DraftParts, IdCache, InputKeys, PayloadKeys, PayloadSource};
use crate::seq::Seq;

/// The result of normalizing one input.
#[derive(Clone, Debug, PartialEq)]
pub struct Normalized {
    /// Where the event goes.
    pub classification: Classification,
    /// The source type (`"unknown"` when the input names none).
    pub source_event_type: Cow<'static, str>,
    /// The envelope; `None` for excluded inputs.
    pub event: Option<AnchorEvent>,
    /// The identity key the registry deduplicates on (`""`: never deduplicated).
    pub dedupe_key: String,
}

/// Builds a dedupe key from already-cleaned parts.
fn dedupe_key_of(
    event_id: &str,
    run_id: &str,
    seq: Option<&str>,
    session_id: &str,
    local_id: &str,
    source_type: &str,
) -> Option<String> {
    let event_id = js::trim(event_id);
    if !event_id.is_empty() {
        let mut key = String::with_capacity(event_id.len() + 11);
        key.push_str("event_id:");
        js::write_json_string(&mut key, event_id);
        return Some(key);
    }
    let seq = seq.filter(|s| !s.is_empty())?;
    let run_id = js::trim(run_id);
    if !run_id.is_empty() {
        let mut key = String::from("run_seq:[");
        js::write_json_string(&mut key, run_id);
        key.push(',');
        js::write_json_string(&mut key, seq);
        key.push(']');
        return Some(key);
    }
    let (session_id, local_id) = (js::trim(session_id), js::trim(local_id));
    if session_id.is_empty() || local_id.is_empty() || seq == "pending" {
        return None;
    }
    let source_type = match js::trim(source_type) {
        "" => "event",
        t => t,
    };
    let mut key = String::from("local:[");
    for (i, part) in [session_id, source_type, local_id, seq]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            key.push(',');
        }
        js::write_json_string(&mut key, part);
    }
    key.push(']');
    Some(key)
}

/// `assistantTurnAnchorEventDedupeKey(event)`: the identity an event is deduplicated by:
/// `event_id`, else `run_id` + `seq`, else session + source type + local id + `seq`; never its
/// text or time. `""` means the event carries no identity and is never deduplicated.
pub fn dedupe_key(event: &AnchorEvent) -> String {
    let seq = event.seq.as_ref().map(Seq::to_js_string);
    dedupe_key_of(
        event.event_id.as_deref().unwrap_or(""),
        event.run_id.as_deref().unwrap_or(""),
        seq.as_deref(),
        event.session_id.as_deref().unwrap_or(""),
        &event.local_id,
        &event.source_event_type,
    )
    .unwrap_or_default()
}

/// `normalizeAssistantTurnAnchorSourceEvent(input, context)`: classifies any source shape (live
/// SSE frame, journal row, settled message, snapshot, flattened client event) and builds its
/// envelope. Inputs that are not objects count as `{}`; nothing here fails.
pub fn normalize(input: &Value, context: &Value) -> Normalized {
    normalize_in(input, &Ctx::raw(context))
}

pub(crate) fn normalize_in(input: &Value, ctx: &Ctx<'_>) -> Normalized {
    let keys = InputKeys::of(input);
    let payload = PayloadSource::extract(input, &keys);
    let draft = Draft::new(&keys, &PayloadKeys::of(&payload, None), ctx);
    let classification = draft.meta.classification;
    let source_event_type = draft.source_type.to_cow();
    if classification == Classification::Excluded {
        return Normalized {
            classification,
            source_event_type,
            event: None,
            dedupe_key: String::new(),
        };
    }
    let dedupe_key = draft.dedupe_key().unwrap_or_default();
    let event = DraftParts::new(draft, &mut String::new(), &mut IdCache::default()).finish(payload);
    Normalized {
        classification,
        source_event_type,
        event: Some(event),
        dedupe_key,
    }
}

/// `normalizeAssistantTurnAnchorSourceEvents(events, context)`: normalizes a batch, dropping
/// excluded inputs and later copies of an identity already seen in the batch (first wins).
pub fn normalize_batch<'a>(
    events: impl IntoIterator<Item = &'a Value>,
    context: &Value,
) -> Vec<Normalized> {
    let ctx = Ctx::raw(context);
    let mut seen = std::collections::BTreeSet::new();
    events
        .into_iter()
        .map(|input| normalize_in(input, &ctx))
        .filter(|n| n.classification != Classification::Excluded)
        .filter(|n| n.dedupe_key.is_empty() || seen.insert(n.dedupe_key.clone()))
        .collect()
}
