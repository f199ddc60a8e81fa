//! The data model: one anchor per assistant turn and the events it holds. Nothing here
//! decides what goes where (that is the registry's work); these are the values it keeps and
//! hands out, by shared reference only.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::classify::{Kind, TerminalState};
use crate::js;
use crate::seq::Seq;

mod events;
pub use events::EventList;

/// Who the turn is. Session and turn never change; run and stream are learned from events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// The session the turn belongs to (never empty).
    pub session_id: Arc<str>,
    /// The turn (never empty when created through [`Anchor::new`]).
    #[serde(default)]
    pub turn_id: Arc<str>,
    /// The run producing the turn, once known.
    #[serde(default)]
    pub run_id: Option<Arc<str>>,
    /// The transport stream, once known.
    #[serde(default)]
    pub stream_id: Option<Arc<str>>,
    /// Settled transcript messages this turn stands for.
    #[serde(default)]
    pub source_message_refs: Vec<Value>,
}

/// Where the turn is in its life. The terminal state is separate from the final answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Lifecycle {
    /// `created`, `running`, a terminal state, or a caller-seeded status such as `restoring`.
    pub status: String,
    /// How the turn ended, once it has.
    pub terminal_state: Option<TerminalState>,
    /// When the first accepted activity with a timestamp happened.
    pub started_at: Option<Value>,
    /// When the (last) terminal event happened.
    pub completed_at: Option<Value>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle {
            status: "created".to_owned(),
            terminal_state: None,
            started_at: None,
            completed_at: None,
        }
    }
}

/// The settled answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Content {
    /// The final answer's text (empty until a settled message carries one).
    pub final_answer: String,
    /// The settled message the answer comes from: the authority, the text is a snapshot.
    pub final_message_ref: Option<String>,
}

/// One assistant turn: everything observed about it, in acceptance order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Anchor {
    /// Who the turn is.
    pub identity: Identity,
    /// Where it is in its life.
    #[serde(default)]
    pub lifecycle: Lifecycle,
    /// The settled answer.
    #[serde(default)]
    pub content: Content,
    /// Prose, reasoning, tools, lifecycle, control and terminal events: the rows.
    #[serde(default)]
    pub activity_events: EventList,
    /// Artifact references.
    #[serde(default)]
    pub artifacts: Vec<AnchorEvent>,
    /// Memory and skill changes.
    #[serde(default)]
    pub side_effects: Vec<AnchorEvent>,
    /// Usage, title, snapshots and settled messages.
    #[serde(default)]
    pub metadata_events: Vec<AnchorEvent>,
    /// Stream plumbing.
    #[serde(default)]
    pub transport_events: Vec<AnchorEvent>,
    /// The turn's token usage, from `usage` events or the settled message.
    #[serde(default)]
    pub usage: Option<Value>,
}

/// How to create an anchor. Only `session_id` is required.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Seed {
    /// The session (required, trimmed).
    pub session_id: String,
    /// The turn; generated from session, run/stream and local id when empty.
    pub turn_id: Option<String>,
    /// The run, when already known.
    pub run_id: Option<String>,
    /// The stream, when already known.
    pub stream_id: Option<String>,
    /// Used in the generated turn id.
    pub local_id: Option<String>,
    /// Settled messages the turn stands for.
    pub source_message_refs: Vec<Value>,
    /// The initial lifecycle status (`created` when empty).
    pub status: Option<String>,
    /// The initial `started_at`.
    pub started_at: Option<Value>,
}

impl Seed {
    /// A seed for a session.
    pub fn new(session_id: impl Into<String>) -> Self {
        Seed {
            session_id: session_id.into(),
            ..Seed::default()
        }
    }

    /// Sets the turn id.
    pub fn turn(mut self, turn_id: impl Into<String>) -> Self {
        self.turn_id = Some(turn_id.into());
        self
    }

    /// Sets the run id.
    pub fn run(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Sets the stream id.
    pub fn stream(mut self, stream_id: impl Into<String>) -> Self {
        self.stream_id = Some(stream_id.into());
        self
    }

    /// A seed from a JSON object with the reference's field names. Non-string ids count as
    /// absent; non-array `source_message_refs` as empty.
    pub fn from_value(input: &Value) -> Self {
        let s =
            |k: &str| Some(js::clean(js::own(Some(input), k)).to_owned()).filter(|s| !s.is_empty());
        Seed {
            session_id: js::clean(js::own(Some(input), "session_id")).to_owned(),
            turn_id: s("turn_id"),
            run_id: s("run_id"),
            stream_id: s("stream_id"),
            local_id: s("local_id"),
            source_message_refs: match js::own(Some(input), "source_message_refs") {
                Some(Value::Array(refs)) => refs.clone(),
                _ => Vec::new(),
            },
            status: s("status"),
            started_at: js::own(Some(input), "started_at")
                .filter(|v| js::truthy(Some(v)))
                .cloned(),
        }
    }
}

/// Why an anchor could not be created.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SeedError {
    /// The seed has no session id.
    #[error("assistant turn anchor requires session_id")]
    MissingSessionId,
}

impl Anchor {
    /// `createAssistantTurnAnchorSeed(input)`.
    pub fn new(seed: &Seed) -> Result<Anchor, SeedError> {
        let clean = |s: &Option<String>| {
            s.as_deref()
                .map(js::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let session_id = js::trim(&seed.session_id);
        if session_id.is_empty() {
            return Err(SeedError::MissingSessionId);
        }
        let run_id = clean(&seed.run_id);
        let stream_id = clean(&seed.stream_id);
        let turn_id = clean(&seed.turn_id).unwrap_or_else(|| {
            [
                "local",
                session_id,
                run_id
                    .as_deref()
                    .or(stream_id.as_deref())
                    .unwrap_or("pending"),
                clean(&seed.local_id).as_deref().unwrap_or("assistant"),
            ]
            .join(":")
        });
        Ok(Anchor {
            identity: Identity {
                session_id: Arc::from(session_id),
                turn_id: Arc::from(turn_id),
                run_id: run_id.map(Arc::from),
                stream_id: stream_id.map(Arc::from),
                source_message_refs: seed.source_message_refs.clone(),
            },
            lifecycle: Lifecycle {
                status: clean(&seed.status).unwrap_or_else(|| "created".to_owned()),
                terminal_state: None,
                started_at: seed.started_at.clone().filter(|v| js::truthy(Some(v))),
                completed_at: None,
            },
            content: Content::default(),
            activity_events: EventList::new(),
            artifacts: Vec::new(),
            side_effects: Vec::new(),
            metadata_events: Vec::new(),
            transport_events: Vec::new(),
            usage: None,
        })
    }
}

impl Anchor {
    /// A JSON object of the lifecycle, as the reference shapes it.
    pub fn lifecycle_value(&self) -> Map<String, Value> {
        match serde_json::to_value(&self.lifecycle) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }
}

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
