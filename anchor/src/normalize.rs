//! Normalization: any source shape in, one anchor event envelope out.
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
use crate::dedupe::KeyRef;
use crate::js;
use crate::sanitize;
use crate::seq::Seq;
use crate::source::SourceEvent;

/// One normalized event of a turn. Absent string fields are `None`, never `""`.
///
/// Invariant: `event_id`, `session_id`, `turn_id`, `stream_id`, `source_event_type` and
/// `status` are trimmed (normalization cleans them; deserialization cleans them too).
/// `run_id` and `local_id` are kept as derived, as the reference stores them: a run id taken
/// from an event id is the text before its last `:`, and a generated local id ends with the
/// sequence as given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AnchorEvent {
    /// The journal identity `run_id:seq`, when the event has one.
    #[serde(deserialize_with = "clean_arc_opt")]
    pub event_id: Option<Arc<str>>,
    /// A stable local identity: explicit (tool call ids, live prose ids) or generated.
    pub local_id: Arc<str>,
    /// The session the event belongs to.
    #[serde(deserialize_with = "clean_arc_opt")]
    pub session_id: Option<Arc<str>>,
    /// The turn the event belongs to.
    #[serde(deserialize_with = "clean_arc_opt")]
    pub turn_id: Option<Arc<str>>,
    /// The run the event belongs to.
    pub run_id: Option<Arc<str>>,
    /// The transport stream that delivered it.
    #[serde(deserialize_with = "clean_arc_opt")]
    pub stream_id: Option<Arc<str>>,
    /// The position in its run.
    pub seq: Option<Seq>,
    /// The activity kind (`None` for metadata, side effects and transport).
    pub kind: Option<Kind>,
    /// The source type, trimmed (`token`, `tool_complete`, …).
    #[serde(deserialize_with = "clean_cow")]
    pub source_event_type: Cow<'static, str>,
    /// When it happened, as given (a number of seconds or a string).
    pub created_at: Option<Value>,
    /// Explicit or derived status.
    #[serde(deserialize_with = "clean_cow_opt")]
    pub status: Option<Cow<'static, str>>,
    /// The sanitized payload without identity keys.
    pub payload: Map<String, Value>,
}

fn clean_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    Ok(s.map(|s| js::trim(&s).to_owned()).filter(|s| !s.is_empty()))
}

fn clean_arc_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Arc<str>>, D::Error> {
    Ok(clean_string(d)?.map(Arc::from))
}

fn clean_cow<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Cow<'static, str>, D::Error> {
    Ok(clean_string(d)?.map(Cow::Owned).unwrap_or_default())
}

fn clean_cow_opt<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'static, str>>, D::Error> {
    Ok(clean_string(d)?.map(Cow::Owned))
}

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

/// Input keys the envelope is read from, in the reference's precedence order per group.
pub(crate) const INPUT_KEYS: js::KeySet<18> = js::KeySet::new([
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
    "payload",
    "data",
]);
const IN_TYPES: std::ops::Range<usize> = 0..6;
const IN_EVENT_IDS: std::ops::Range<usize> = 6..9;
const IN_SEQ: usize = 9;
const IN_SESSION: usize = 10;
const IN_TURN: usize = 11;
const IN_RUN: usize = 12;
const IN_STREAM: usize = 13;
const IN_CREATED_AT: usize = 14;
const IN_TIMESTAMP: usize = 15;
pub(crate) const IN_PAYLOAD: usize = 16;
pub(crate) const IN_DATA: usize = 17;

/// Payload keys the envelope is read from.
pub(crate) const PAYLOAD_KEYS: js::KeySet<21> = js::KeySet::new([
    "source_event_type",
    "type",
    "event",
    "event_id",
    "seq",
    "session_id",
    "turn_id",
    "run_id",
    "stream_id",
    "local_id",
    "id",
    "tid",
    "tool_call_id",
    "tool_use_id",
    "call_id",
    "created_at",
    "ts",
    "status",
    "state",
    "phase",
    "is_error",
]);
const P_TYPES: std::ops::Range<usize> = 0..3;
const P_EVENT_ID: usize = 3;
const P_SEQ: usize = 4;
const P_SESSION: usize = 5;
const P_TURN: usize = 6;
const P_RUN: usize = 7;
const P_STREAM: usize = 8;
/// `event_id` through `stream_id`: lifted out of the payload into the envelope.
const P_IDENTITY: std::ops::Range<usize> = 3..9;
const P_LOCAL_IDS: std::ops::Range<usize> = 9..15;
const P_CREATED_AT: usize = 15;
const P_TS: usize = 16;
const P_STATUS: std::ops::Range<usize> = 17..20;
const P_IS_ERROR: usize = 20;

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

/// An input's own keys, read once.
pub(crate) struct InputKeys<'a>([Option<&'a Value>; 18]);

impl<'a> InputKeys<'a> {
    pub(crate) fn of(input: &'a Value) -> Self {
        match input {
            Value::Object(map) => InputKeys(INPUT_KEYS.scan(map)),
            // Arrays and scalars have none of these keys.
            _ => InputKeys([None; 18]),
        }
    }

    /// The keys of a [`SourceEvent`], already in their slots.
    pub(crate) fn of_source(input: &'a SourceEvent) -> Self {
        InputKeys(input.slots())
    }
}

/// A payload's own keys, read once.
pub(crate) struct PayloadKeys<'a>([Option<&'a Value>; 21]);

impl<'a> PayloadKeys<'a> {
    /// The keys of `payload`; `noted` says which of them its input's own `payload`/`data`
    /// object has (known when a [`SourceEvent`] is built), so that it need not be scanned.
    pub(crate) fn of(payload: &'a PayloadSource<'_>, noted: Option<u32>) -> Self {
        match (payload, noted) {
            (PayloadSource::Borrowed(map), Some(mask)) => PayloadKeys(PAYLOAD_KEYS.pick(map, mask)),
            _ => PayloadKeys(PAYLOAD_KEYS.scan(payload.map())),
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
        keys.0[IN_PAYLOAD].or(keys.0[IN_DATA]).map(Self::coerce)
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
                map.remove(key);
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
        let mut source_type = js::clean(js::first_present(&i[IN_TYPES]));
        if source_type.is_empty() {
            source_type = js::clean(js::first_present(&p[P_TYPES]));
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
            payload_has_identity: p[P_IDENTITY].iter().any(Option::is_some),
        };
        if meta.classification == Classification::Excluded {
            return draft;
        }

        // Identity.
        draft.event_id = js::clean(js::or(js::first_present(&i[IN_EVENT_IDS]), p[P_EVENT_ID]));
        draft.seq = if let Some(raw) = i[IN_SEQ] {
            Seq::coerce(Some(raw))
        } else if let Some(raw) = p[P_SEQ] {
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
        draft.session_id = ident(i[IN_SESSION], p[P_SESSION], ctx.session_id);
        draft.turn_id = ident(i[IN_TURN], p[P_TURN], ctx.turn_id);
        draft.stream_id = ident(i[IN_STREAM], p[P_STREAM], ctx.stream_id);
        draft.run_id = match ident(i[IN_RUN], p[P_RUN], ctx.run_id) {
            Ident::None => Ident::of(event_id_run_id(draft.event_id)),
            found => found,
        };

        // The local id.
        draft.local_id = js::clean(js::or(ctx.local_id, js::first_present(&p[P_LOCAL_IDS])));
        draft.ctx_session = ctx.session_id.clean();
        draft.ctx_turn = ctx.turn_id.clean();

        let truthy = |v: Option<&'a Value>| v.filter(|v| js::truthy(Some(v)));
        draft.created_at = truthy(i[IN_CREATED_AT])
            .or_else(|| truthy(i[IN_TIMESTAMP]))
            .map(CreatedAt::Raw)
            .or_else(|| {
                truthy(p[P_CREATED_AT])
                    .or_else(|| truthy(p[P_TS]))
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
    p: &[Option<&'a Value>; 21],
) -> Option<Name<'a>> {
    let explicit = js::clean(js::first_present(&p[P_STATUS]));
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
        Some(Kind::ToolCompleted) => Some(Name::Static(if js::truthy(p[P_IS_ERROR]) {
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
