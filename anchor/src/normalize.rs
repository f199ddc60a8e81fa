//! Normalization (§4): any source shape in, one anchor event envelope out.
//!
//! Normalization runs in two steps. [`Draft::new`] reads identity, type, status and timestamps
//! straight from the input without copying its payload, which is all the registry's gates need;
//! only an event that passes them is materialized into an owned [`AnchorEvent`] (payload
//! sanitized, identity keys stripped). Rejected duplicates therefore cost no payload copy.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::classify::{classify, normalize_terminal_state, Classification, Kind, SourceMeta};
use crate::js;
use crate::sanitize;
use crate::seq::Seq;

/// One normalized event of a turn (§4.8). Absent string fields are `None`, never `""`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnchorEvent {
    /// The journal identity `run_id:seq`, when the event has one.
    pub event_id: Option<Arc<str>>,
    /// A stable local identity: explicit (tool call ids, live prose ids) or generated.
    pub local_id: Arc<str>,
    /// The session the event belongs to.
    pub session_id: Option<Arc<str>>,
    /// The turn the event belongs to.
    pub turn_id: Option<Arc<str>>,
    /// The run the event belongs to.
    pub run_id: Option<Arc<str>>,
    /// The transport stream that delivered it.
    pub stream_id: Option<Arc<str>>,
    /// The position in its run.
    pub seq: Option<Seq>,
    /// The activity kind (`None` for metadata, side effects and transport).
    pub kind: Option<Kind>,
    /// The source type, trimmed (`token`, `tool_complete`, …).
    pub source_event_type: Cow<'static, str>,
    /// When it happened, as given (a number of seconds or a string).
    pub created_at: Option<Value>,
    /// Explicit or derived status (§4.7).
    pub status: Option<Cow<'static, str>>,
    /// The sanitized payload without identity keys.
    pub payload: Map<String, Value>,
}

/// The result of normalizing one input (§4.8).
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

const TYPE_KEYS: [&str; 6] = [
    "source_event_type",
    "sourceType",
    "source_type",
    "event_type",
    "type",
    "event",
];
const PAYLOAD_TYPE_KEYS: [&str; 3] = ["source_event_type", "type", "event"];
const EVENT_ID_KEYS: [&str; 3] = ["event_id", "lastEventId", "last_event_id"];
const LOCAL_ID_KEYS: [&str; 6] = [
    "local_id",
    "id",
    "tid",
    "tool_call_id",
    "tool_use_id",
    "call_id",
];
const STATUS_KEYS: [&str; 3] = ["status", "state", "phase"];
/// Keys lifted out of the payload into the envelope.
const IDENTITY_KEYS: [&str; 6] = [
    "session_id",
    "turn_id",
    "run_id",
    "stream_id",
    "event_id",
    "seq",
];
/// Keys of a flattened client event that are envelope, not payload.
const RESERVED_KEYS: [&str; 16] = [
    "source_event_type",
    "sourceType",
    "source_type",
    "event_type",
    "type",
    "event",
    "event_id",
    "lastEventId",
    "last_event_id",
    "seq",
    "session_id",
    "turn_id",
    "run_id",
    "stream_id",
    "created_at",
    "timestamp",
];

static EMPTY_MAP: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

fn empty_map() -> &'static Map<String, Value> {
    &EMPTY_MAP
}

/// The payload of an input (§4.2), before sanitizing.
pub(crate) enum PayloadSource<'a> {
    /// No payload object: `{}`.
    Empty,
    /// The input's own `payload`/`data` object.
    Borrowed(&'a Map<String, Value>),
    /// Parsed from a string, wrapped from a scalar, or gathered from a flattened event.
    Owned(Map<String, Value>),
}

impl<'a> PayloadSource<'a> {
    /// `_sourceEventPayload(input)`.
    pub(crate) fn extract(input: &'a Value) -> Self {
        match input {
            Value::Object(map) => {
                if let Some(p) = map.get("payload") {
                    Self::coerce(p)
                } else if let Some(d) = map.get("data") {
                    Self::coerce(d)
                } else {
                    Self::Owned(
                        map.iter()
                            .filter(|(k, _)| {
                                !RESERVED_KEYS.contains(&k.as_str()) && !sanitize::is_unsafe_key(k)
                            })
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect(),
                    )
                }
            }
            // An array's own enumerable keys are its indices.
            Value::Array(items) => Self::Owned(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i.to_string(), v.clone()))
                    .collect(),
            ),
            _ => Self::Empty,
        }
    }

    fn coerce(v: &'a Value) -> Self {
        match v {
            Value::Null => Self::Empty,
            Value::Object(map) => Self::Borrowed(map),
            // A sanitized array is not a plain object, so the working payload is `{}`.
            Value::Array(_) => Self::Empty,
            Value::String(s) => {
                let t = js::trim(s);
                if t.is_empty() {
                    return Self::Empty;
                }
                match serde_json::from_str::<Value>(t) {
                    Ok(Value::Object(map)) => Self::Owned(map),
                    Ok(Value::Array(_)) => Self::Empty,
                    Ok(scalar) => Self::Owned(single("value", scalar)),
                    Err(_) => Self::Owned(single("text", Value::String(s.clone()))),
                }
            }
            scalar => Self::Owned(single("value", scalar.clone())),
        }
    }

    /// The raw payload object to read from.
    pub(crate) fn map(&self) -> &Map<String, Value> {
        match self {
            Self::Empty => empty_map(),
            Self::Borrowed(map) => map,
            Self::Owned(map) => map,
        }
    }

    /// The stored payload: sanitized, identity keys removed.
    pub(crate) fn into_event_payload(self) -> Map<String, Value> {
        let mut map = match self {
            Self::Empty => return Map::new(),
            Self::Borrowed(map) => sanitize::sanitized_map(map, 0),
            Self::Owned(mut map) => {
                sanitize::sanitize_map_in_place(&mut map, 0);
                map
            }
        };
        for key in IDENTITY_KEYS {
            map.remove(key);
        }
        map
    }
}

fn single(key: &str, value: Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    map
}

/// An identity value from the context: a raw caller value, or (inside a registry) the anchor's
/// own cleaned identity.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CtxId<'a> {
    Raw(Option<&'a Value>),
    Clean(&'a str, Option<&'a Arc<str>>),
}

impl<'a> CtxId<'a> {
    fn truthy(self) -> bool {
        match self {
            Self::Raw(v) => js::truthy(v),
            Self::Clean(s, _) => !s.is_empty(),
        }
    }

    fn clean(self) -> &'a str {
        match self {
            Self::Raw(v) => js::clean(v),
            Self::Clean(s, _) => s,
        }
    }

    fn ident(self) -> Ident<'a> {
        match self {
            Self::Raw(v) => Ident::of(js::clean(v)),
            Self::Clean("", _) => Ident::None,
            Self::Clean(_, Some(shared)) => Ident::Shared(shared),
            Self::Clean(s, None) => Ident::Borrowed(s),
        }
    }
}

/// The context an input is normalized in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx<'a> {
    pub(crate) session_id: CtxId<'a>,
    pub(crate) turn_id: CtxId<'a>,
    pub(crate) run_id: CtxId<'a>,
    pub(crate) stream_id: CtxId<'a>,
    pub(crate) local_id: Option<&'a Value>,
    pub(crate) seq: Option<&'a Value>,
    pub(crate) created_at: Option<&'a Value>,
}

impl<'a> Ctx<'a> {
    /// A caller's context object as it is (non-objects count as `{}`).
    pub(crate) fn raw(context: &'a Value) -> Self {
        let map = context.as_object();
        let get = |k: &str| map.and_then(|m| m.get(k));
        Ctx {
            session_id: CtxId::Raw(get("session_id")),
            turn_id: CtxId::Raw(get("turn_id")),
            run_id: CtxId::Raw(get("run_id")),
            stream_id: CtxId::Raw(get("stream_id")),
            local_id: get("local_id"),
            seq: get("seq"),
            created_at: get("created_at"),
        }
    }
}

/// A resolved identity string, borrowed or shared with the anchor.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ident<'a> {
    None,
    Borrowed(&'a str),
    Shared(&'a Arc<str>),
}

impl<'a> Ident<'a> {
    fn of(s: &'a str) -> Self {
        if s.is_empty() {
            Self::None
        } else {
            Self::Borrowed(s)
        }
    }

    pub(crate) fn as_str(&self) -> &'a str {
        match *self {
            Self::None => "",
            Self::Borrowed(s) => s,
            Self::Shared(s) => s,
        }
    }

    fn to_arc(self) -> Option<Arc<str>> {
        match self {
            Self::None => None,
            Self::Borrowed(s) => Some(Arc::from(s)),
            Self::Shared(s) => Some(Arc::clone(s)),
        }
    }
}

/// A string that is either a fixed name or borrowed from the input.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Name<'a> {
    Static(&'static str),
    Borrowed(&'a str),
}

impl<'a> Name<'a> {
    pub(crate) fn as_str(&self) -> &'a str {
        match *self {
            Self::Static(s) => s,
            Self::Borrowed(s) => s,
        }
    }

    pub(crate) fn to_cow(self) -> Cow<'static, str> {
        match self {
            Self::Static(s) => Cow::Borrowed(s),
            Self::Borrowed(s) => Cow::Owned(s.to_owned()),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum CreatedAt<'a> {
    /// From the input or the context: kept exactly as given.
    Raw(&'a Value),
    /// From the payload: kept as the sanitized payload holds it.
    Payload(&'a Value),
}

/// Everything the registry's gates need, read from an input without copying its payload.
pub(crate) struct Draft<'a> {
    pub(crate) meta: SourceMeta,
    pub(crate) source_type: Name<'a>,
    event_id: &'a str,
    pub(crate) seq: Option<Seq>,
    pub(crate) session_id: Ident<'a>,
    pub(crate) turn_id: Ident<'a>,
    pub(crate) run_id: Ident<'a>,
    pub(crate) stream_id: Ident<'a>,
    local_id: &'a str,
    ctx_session: &'a str,
    ctx_turn: &'a str,
    created_at: Option<CreatedAt<'a>>,
    pub(crate) status: Option<Name<'a>>,
}

impl<'a> Draft<'a> {
    /// Reads the envelope of `input`, whose payload is `payload`, in `ctx`.
    pub(crate) fn new(input: &'a Value, payload: &'a Map<String, Value>, ctx: &Ctx<'a>) -> Self {
        let own = |k: &str| js::own(Some(input), k);
        let p = |k: &str| payload.get(k);

        // §4.4 source type.
        let mut source_type = js::clean(js::first_own_in(Some(input), &TYPE_KEYS));
        if source_type.is_empty() {
            source_type = js::clean(js::first_own(payload, &PAYLOAD_TYPE_KEYS));
        }
        let meta = classify(source_type);
        let source_type = match meta.name {
            Some(name) => Name::Static(name),
            None if source_type.is_empty() => Name::Static("unknown"),
            None => Name::Borrowed(source_type),
        };
        let mut draft = Draft {
            meta,
            source_type,
            event_id: "",
            seq: None,
            session_id: Ident::None,
            turn_id: Ident::None,
            run_id: Ident::None,
            stream_id: Ident::None,
            local_id: "",
            ctx_session: "",
            ctx_turn: "",
            created_at: None,
            status: None,
        };
        if meta.classification == Classification::Excluded {
            return draft;
        }

        // §4.5 identity.
        draft.event_id = js::clean(js::or(
            js::first_own_in(Some(input), &EVENT_ID_KEYS),
            p("event_id"),
        ));
        draft.seq = if let Some(raw) = own("seq") {
            Seq::coerce(Some(raw))
        } else if let Some(raw) = p("seq") {
            Seq::coerce_payload(Some(raw))
        } else if let Some(raw) = ctx.seq {
            Seq::coerce(Some(raw))
        } else {
            event_id_seq(draft.event_id)
        };
        let ident = |input_v: Option<&'a Value>, payload_v: Option<&'a Value>, ctx_v: CtxId<'a>| {
            if js::truthy(input_v) {
                Ident::of(js::clean(input_v))
            } else if js::truthy(payload_v) {
                Ident::of(js::clean(payload_v))
            } else if ctx_v.truthy() {
                ctx_v.ident()
            } else {
                Ident::of(ctx_v.clean())
            }
        };
        draft.session_id = ident(own("session_id"), p("session_id"), ctx.session_id);
        draft.turn_id = ident(own("turn_id"), p("turn_id"), ctx.turn_id);
        draft.stream_id = ident(own("stream_id"), p("stream_id"), ctx.stream_id);
        draft.run_id = match ident(own("run_id"), p("run_id"), ctx.run_id) {
            Ident::None => Ident::of(event_id_run_id(draft.event_id)),
            found => found,
        };

        // §4.6 local id.
        draft.local_id = js::clean(js::or(ctx.local_id, js::first_own(payload, &LOCAL_ID_KEYS)));
        draft.ctx_session = ctx.session_id.clean();
        draft.ctx_turn = ctx.turn_id.clean();

        draft.created_at = [own("created_at"), own("timestamp")]
            .into_iter()
            .find(|v| js::truthy(*v))
            .flatten()
            .map(CreatedAt::Raw)
            .or_else(|| {
                [p("created_at"), p("ts")]
                    .into_iter()
                    .find(|v| js::truthy(*v))
                    .flatten()
                    .map(CreatedAt::Payload)
            })
            .or_else(|| {
                ctx.created_at
                    .filter(|v| js::truthy(Some(v)))
                    .map(CreatedAt::Raw)
            });

        draft.status = status_for(meta, draft.source_type.as_str(), payload);
        draft
    }

    /// The identity key (§5), or `None` when the event can never be deduplicated.
    pub(crate) fn dedupe_key(&self) -> Option<String> {
        let seq = self.seq.as_ref().map(Seq::to_js_string);
        let local;
        let local_id = if self.local_id.is_empty() {
            local = self.generated_local_id(seq.as_deref());
            js::trim(&local)
        } else {
            self.local_id
        };
        dedupe_key_of(
            self.event_id,
            self.run_id.as_str(),
            seq.as_deref(),
            self.session_id.as_str(),
            local_id,
            self.source_type.as_str(),
        )
    }

    fn generated_local_id(&self, seq: Option<&str>) -> String {
        let or = |s: &'a str, d: &'a str| if s.is_empty() { d } else { s };
        let ty = self.source_type.as_str();
        [
            or(self.ctx_session, "session"),
            or(self.ctx_turn, "turn"),
            or(ty, "event"),
            seq.unwrap_or("pending"),
        ]
        .join(":")
    }

    /// The envelope with its payload (which must be the one the draft was read from).
    pub(crate) fn into_event(self, payload: PayloadSource<'_>) -> AnchorEvent {
        let local_id: Arc<str> = if self.local_id.is_empty() {
            let seq = self.seq.as_ref().map(Seq::to_js_string);
            Arc::from(self.generated_local_id(seq.as_deref()))
        } else {
            Arc::from(self.local_id)
        };
        let created_at = self.created_at.map(|c| match c {
            CreatedAt::Raw(v) => v.clone(),
            CreatedAt::Payload(v) => sanitize::sanitized(v, 1),
        });
        let event = AnchorEvent {
            event_id: Ident::of(self.event_id).to_arc(),
            local_id,
            session_id: self.session_id.to_arc(),
            turn_id: self.turn_id.to_arc(),
            run_id: self.run_id.to_arc(),
            stream_id: self.stream_id.to_arc(),
            seq: self.seq,
            kind: self.meta.kind,
            source_event_type: self.source_type.to_cow(),
            created_at,
            status: self.status.map(Name::to_cow),
            payload: Map::new(),
        };
        AnchorEvent {
            payload: payload.into_event_payload(),
            ..event
        }
    }
}

/// `eventIdSeq(id)`: the sequence after the last `:` of an event id.
fn event_id_seq(event_id: &str) -> Option<Seq> {
    let (_, tail) = event_id.rsplit_once(':')?;
    if tail.is_empty() {
        return None;
    }
    Seq::coerce(Some(&Value::String(tail.to_owned())))
}

/// `eventIdRunId(id)`: what comes before the last `:` of an event id.
fn event_id_run_id(event_id: &str) -> &str {
    event_id.rsplit_once(':').map_or("", |(run, _)| run)
}

/// `_statusForSourceEvent` (§4.7).
fn status_for<'a>(
    meta: SourceMeta,
    source_type: &'a str,
    payload: &'a Map<String, Value>,
) -> Option<Name<'a>> {
    let explicit = js::clean(js::first_own(payload, &STATUS_KEYS));
    let kind = meta.kind;
    if !explicit.is_empty() {
        if kind == Some(Kind::TerminalStatus) {
            return Some(
                match normalize_terminal_state(explicit, Some(source_type)) {
                    Some(t) => Name::Static(t.as_str()),
                    None => Name::Borrowed(explicit),
                },
            );
        }
        return Some(Name::Borrowed(explicit));
    }
    if source_type == "interim_assistant" {
        return Some(Name::Static("completed"));
    }
    match kind {
        Some(Kind::ToolStarted) => Some(Name::Static("running")),
        Some(Kind::ToolCompleted) => Some(Name::Static(if js::truthy(payload.get("is_error")) {
            "error"
        } else {
            "completed"
        })),
        Some(Kind::TerminalStatus) => Some(Name::Static(
            normalize_terminal_state(source_type, None).map_or("error", |t| t.as_str()),
        )),
        Some(Kind::LifecycleStatus) => Some(Name::Static("running")),
        Some(Kind::ControlBoundary) => Some(Name::Static("pending")),
        _ if source_type == "stream_end" => Some(Name::Static("transport_closed")),
        _ => None,
    }
}

/// Builds a dedupe key from already-cleaned parts (§5).
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
    let payload = PayloadSource::extract(input);
    let draft = Draft::new(input, payload.map(), ctx);
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
    // The draft borrows the payload; detach it first.
    let event = {
        let parts = DraftParts::from(draft);
        parts.finish(payload)
    };
    Normalized {
        classification,
        source_event_type,
        event: Some(event),
        dedupe_key,
    }
}

/// A draft whose borrowed strings were copied, so the payload can be moved.
pub(crate) struct DraftParts {
    event: AnchorEvent,
}

impl From<Draft<'_>> for DraftParts {
    fn from(draft: Draft<'_>) -> Self {
        DraftParts {
            event: draft.into_event(PayloadSource::Empty),
        }
    }
}

impl DraftParts {
    pub(crate) fn finish(self, payload: PayloadSource<'_>) -> AnchorEvent {
        AnchorEvent {
            payload: payload.into_event_payload(),
            ..self.event
        }
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
