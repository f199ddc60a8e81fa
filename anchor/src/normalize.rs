//! Normalization: any source shape in, one anchor event envelope out.
//!
//! Normalization runs in two steps. [`Draft::new`] reads identity, type, status and timestamps
//! straight from the input without copying its payload, which is all the registry's gates need;
//! only an event that passes them is materialized into an owned [`AnchorEvent`] (payload
//! sanitized, identity keys stripped). Rejected duplicates therefore cost no payload copy.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::classify::{normalize_terminal_state, Classification, Kind, SourceMeta};
use crate::dedupe::KeyRef;
use crate::envelope::{input, payload, IDENTITY_KEYS, RESERVED_KEYS};
use crate::js;
use crate::kind::classify;
use crate::model::AnchorEvent;
use crate::sanitize;
use crate::seq::Seq;
use crate::source::SourceEvent;

static EMPTY_MAP: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

fn empty_map() -> &'static Map<String, Value> {
    &EMPTY_MAP
}

/// An input's own keys, read once.
pub(crate) struct InputKeys<'a>(input::Slots<'a>);

impl<'a> InputKeys<'a> {
    pub(crate) fn of(input: &'a Value) -> Self {
        match input {
            Value::Object(map) => InputKeys(input::SET.scan(map)),
            // Arrays and scalars have none of these keys.
            _ => InputKeys([None; input::LEN]),
        }
    }

    /// The keys of a [`SourceEvent`], already in their slots.
    pub(crate) fn of_source(input: &'a SourceEvent) -> Self {
        InputKeys(input.slots())
    }
}

/// A payload's own keys, read once.
pub(crate) struct PayloadKeys<'a>(payload::Slots<'a>);

impl<'a> PayloadKeys<'a> {
    /// The keys of `payload`; `noted` says which of them its input's own `payload`/`data`
    /// object has (known when a [`SourceEvent`] is built), so that it need not be scanned.
    pub(crate) fn of(payload: &'a PayloadSource<'_>, noted: Option<u32>) -> Self {
        match (payload, noted) {
            (PayloadSource::Borrowed(map), Some(mask)) => PayloadKeys(payload::SET.pick(map, mask)),
            _ => PayloadKeys(payload::SET.scan(payload.map())),
        }
    }
}

/// The payload of an input, before sanitizing.
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
    pub(crate) fn extract(input: &'a Value, keys: &InputKeys<'a>) -> Self {
        Self::given(keys).unwrap_or_else(|| Self::flattened(input))
    }

    /// [`PayloadSource::extract`] for a [`SourceEvent`]: an object's other keys are exactly the
    /// ones a flattened event keeps.
    pub(crate) fn extract_source(input: &'a SourceEvent, keys: &InputKeys<'a>) -> Self {
        Self::given(keys).unwrap_or_else(|| match input.rest() {
            Ok(rest) => Self::Owned(
                rest.iter()
                    .filter(|(k, _)| !sanitize::is_unsafe_key(k))
                    .cloned()
                    .collect(),
            ),
            Err(other) => Self::flattened(other),
        })
    }

    /// The input's own `payload` or `data`, when it has one.
    fn given(keys: &InputKeys<'a>) -> Option<Self> {
        keys.0[input::PAYLOAD]
            .or(keys.0[input::DATA])
            .map(Self::coerce)
    }

    /// The payload of an event without `payload` or `data`: its own keys that are not envelope.
    fn flattened(input: &'a Value) -> Self {
        match input {
            Value::Object(map) => Self::Owned(
                map.iter()
                    .filter(|(k, _)| {
                        !RESERVED_KEYS.contains(&k.as_str()) && !sanitize::is_unsafe_key(k)
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
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
    pub(crate) fn into_event_payload(self, has_identity_keys: bool) -> Map<String, Value> {
        let mut map = match self {
            Self::Empty => return Map::new(),
            Self::Borrowed(map) => sanitize::sanitized_map(map, 0),
            Self::Owned(mut map) => {
                sanitize::sanitize_map_in_place(&mut map, 0);
                map
            }
        };
        if has_identity_keys {
            for key in IDENTITY_KEYS {
                map.remove(*key);
            }
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
    /// A caller's value (only the reference's whole-value entry points pass one).
    #[cfg_attr(not(feature = "parity"), allow(dead_code))]
    Raw(Option<&'a Value>),
    Clean(&'a str, Option<&'a Arc<str>>),
}

impl<'a> CtxId<'a> {
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
    #[cfg(feature = "parity")]
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

    /// [`Ident::to_arc`], sharing the string with the previous event's when it is the same.
    fn to_arc_in(self, last: &mut Option<Arc<str>>) -> Option<Arc<str>> {
        match self {
            Self::Borrowed(s) => match last {
                Some(arc) if **arc == *s => Some(Arc::clone(arc)),
                _ => {
                    let arc: Arc<str> = Arc::from(s);
                    *last = Some(Arc::clone(&arc));
                    Some(arc)
                }
            },
            other => other.to_arc(),
        }
    }
}

/// The session, turn, run and stream ids of the last event built: the events of one turn
/// share these strings instead of each holding a copy.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdCache([Option<Arc<str>>; 4]);

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
    payload_has_identity: bool,
}

impl<'a> Draft<'a> {
    /// Reads the envelope of an input (whose own keys are `keys` and whose payload is `payload`)
    /// in `ctx`.
    pub(crate) fn new(keys: &InputKeys<'a>, payload: &PayloadKeys<'a>, ctx: &Ctx<'a>) -> Self {
        let i = &keys.0;
        let p = &payload.0;

        // The source type.
        let mut source_type = js::clean(js::first_present(&i[input::TYPES]));
        if source_type.is_empty() {
            source_type = js::clean(js::first_present(&p[payload::TYPES]));
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
            payload_has_identity: p[payload::IDENTITY].iter().any(Option::is_some),
        };
        if meta.classification == Classification::Excluded {
            return draft;
        }

        // Identity.
        draft.event_id = js::clean(js::or(
            js::first_present(&i[input::EVENT_IDS]),
            p[payload::EVENT_ID],
        ));
        draft.seq = if let Some(raw) = i[input::SEQ] {
            Seq::coerce(Some(raw))
        } else if let Some(raw) = p[payload::SEQ] {
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
            } else {
                ctx_v.ident()
            }
        };
        draft.session_id = ident(i[input::SESSION], p[payload::SESSION], ctx.session_id);
        draft.turn_id = ident(i[input::TURN], p[payload::TURN], ctx.turn_id);
        draft.stream_id = ident(i[input::STREAM], p[payload::STREAM], ctx.stream_id);
        draft.run_id = match ident(i[input::RUN], p[payload::RUN], ctx.run_id) {
            Ident::None => Ident::of(event_id_run_id(draft.event_id)),
            found => found,
        };

        // The local id.
        draft.local_id = js::clean(js::or(
            ctx.local_id,
            js::first_present(&p[payload::LOCAL_IDS]),
        ));
        draft.ctx_session = ctx.session_id.clean();
        draft.ctx_turn = ctx.turn_id.clean();

        let truthy = |v: Option<&'a Value>| v.filter(|v| js::truthy(Some(v)));
        draft.created_at = truthy(i[input::CREATED_AT])
            .or_else(|| truthy(i[input::TIMESTAMP]))
            .map(CreatedAt::Raw)
            .or_else(|| {
                truthy(p[payload::CREATED_AT])
                    .or_else(|| truthy(p[payload::TS]))
                    .map(CreatedAt::Payload)
            })
            .or_else(|| truthy(ctx.created_at).map(CreatedAt::Raw));

        draft.status = status_for(meta, draft.source_type.as_str(), p);
        draft
    }

    /// The identity key, using `scratch` to render keys that are not an event id; `None`
    /// when the event has none and can never be deduplicated.
    pub(crate) fn key<'s>(&'s self, scratch: &'s mut String) -> Option<KeyRef<'s>> {
        if !self.event_id.is_empty() {
            return Some(KeyRef::EventId(self.event_id));
        }
        self.write_other_key(scratch)
            .then_some(KeyRef::Rendered(scratch))
    }

    /// Writes the identity key into `out` (cleared first); `false` when there is none.
    #[cfg(feature = "parity")]
    pub(crate) fn write_dedupe_key(&self, out: &mut String) -> bool {
        out.clear();
        if !self.event_id.is_empty() {
            out.push_str("event_id:");
            js::write_json_string(out, self.event_id);
            return true;
        }
        self.write_other_key(out)
    }

    /// The `run_seq` or `local` key (the event has no event id).
    fn write_other_key(&self, out: &mut String) -> bool {
        out.clear();
        let seq = match &self.seq {
            Some(Seq::Text(t)) if t.is_empty() => return false,
            Some(seq) => seq,
            None => return false,
        };
        let run_id = js::trim(self.run_id.as_str());
        if !run_id.is_empty() {
            out.push_str("run_seq:[");
            js::write_json_string(out, run_id);
            out.push_str(",\"");
            write_seq_escaped(out, seq);
            out.push_str("\"]");
            return true;
        }
        let session_id = js::trim(self.session_id.as_str());
        if session_id.is_empty() || matches!(seq, Seq::Text(t) if t == "pending") {
            return false;
        }
        out.push_str("local:[");
        js::write_json_string(out, session_id);
        out.push(',');
        js::write_json_string(out, self.source_type.as_str());
        out.push_str(",\"");
        if self.local_id.is_empty() {
            let mut generated = String::new();
            self.write_generated_local_id(&mut generated);
            js::write_json_escaped(out, js::trim(&generated));
        } else {
            js::write_json_escaped(out, self.local_id);
        }
        out.push_str("\",\"");
        write_seq_escaped(out, seq);
        out.push_str("\"]");
        true
    }

    /// The identity key as a new string.
    #[cfg(feature = "parity")]
    pub(crate) fn dedupe_key(&self) -> Option<String> {
        let mut key = String::new();
        self.write_dedupe_key(&mut key).then_some(key)
    }

    fn write_generated_local_id(&self, out: &mut String) {
        let or = |s: &'a str, d: &'a str| if s.is_empty() { d } else { s };
        out.push_str(or(self.ctx_session, "session"));
        out.push(':');
        out.push_str(or(self.ctx_turn, "turn"));
        out.push(':');
        out.push_str(or(self.source_type.as_str(), "event"));
        out.push(':');
        match &self.seq {
            Some(seq) => seq.write_js(out),
            None => out.push_str("pending"),
        }
    }

    /// The envelope with an empty payload; everything borrowed is copied.
    fn into_parts(self, scratch: &mut String, ids: &mut IdCache) -> AnchorEvent {
        let local_id: Arc<str> = if self.local_id.is_empty() {
            scratch.clear();
            self.write_generated_local_id(scratch);
            Arc::from(scratch.as_str())
        } else {
            Arc::from(self.local_id)
        };
        let created_at = self.created_at.map(|c| match c {
            CreatedAt::Raw(v) => v.clone(),
            CreatedAt::Payload(v) => sanitize::sanitized(v, 1),
        });
        AnchorEvent {
            event_id: Ident::of(self.event_id).to_arc(),
            local_id,
            session_id: self.session_id.to_arc_in(&mut ids.0[0]),
            turn_id: self.turn_id.to_arc_in(&mut ids.0[1]),
            run_id: self.run_id.to_arc_in(&mut ids.0[2]),
            stream_id: self.stream_id.to_arc_in(&mut ids.0[3]),
            seq: self.seq,
            kind: self.meta.kind,
            source_event_type: self.source_type.to_cow(),
            created_at,
            status: self.status.map(Name::to_cow),
            payload: Map::new(),
        }
    }
}

/// `String(seq)` as it appears inside a JSON string.
fn write_seq_escaped(out: &mut String, seq: &Seq) {
    match seq {
        Seq::Num(n) => js::write_f64(out, *n),
        Seq::Text(t) => js::write_json_escaped(out, t),
    }
}

/// `eventIdSeq(id)`: the sequence after the last `:` of an event id.
fn event_id_seq(event_id: &str) -> Option<Seq> {
    let (_, tail) = event_id.rsplit_once(':')?;
    if tail.is_empty() {
        return None;
    }
    Some(Seq::coerce_str(tail))
}

/// `eventIdRunId(id)`: what comes before the last `:` of an event id.
fn event_id_run_id(event_id: &str) -> &str {
    event_id.rsplit_once(':').map_or("", |(run, _)| run)
}

/// `_statusForSourceEvent`, over the scanned payload keys.
fn status_for<'a>(
    meta: SourceMeta,
    source_type: &'a str,
    p: &payload::Slots<'a>,
) -> Option<Name<'a>> {
    let explicit = js::clean(js::first_present(&p[payload::STATUS]));
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
        Some(Kind::ToolCompleted) => Some(Name::Static(if js::truthy(p[payload::IS_ERROR]) {
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

/// A draft whose borrowed strings were copied, so the payload it was read from can be moved.
pub(crate) struct DraftParts {
    event: AnchorEvent,
    payload_has_identity: bool,
}

impl DraftParts {
    pub(crate) fn new(draft: Draft<'_>, scratch: &mut String, ids: &mut IdCache) -> Self {
        let payload_has_identity = draft.payload_has_identity;
        DraftParts {
            event: draft.into_parts(scratch, ids),
            payload_has_identity,
        }
    }

    pub(crate) fn finish(self, payload: PayloadSource<'_>) -> AnchorEvent {
        AnchorEvent {
            payload: payload.into_event_payload(self.payload_has_identity),
            ..self.event
        }
    }
}
