//! The registry: one anchor, its dedupe memory and its counters.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::classify::{normalize_terminal_state, Classification, Kind, TerminalState};
use crate::dedupe::{DedupeKey, DedupeSet, KeyRef};
use crate::js;
use crate::model::{Anchor, AnchorEvent, Identity, Seed, SeedError};
use crate::normalize::{
    Ctx, CtxId, Draft, DraftParts, IdCache, InputKeys, PayloadKeys, PayloadSource,
};
#[cfg(feature = "parity")]
use crate::reference::Normalized;
use crate::scene::{ActivityRow, ActivityScene, Mode};
use crate::source::SourceEvent;

/// The registry's counters: every application increments exactly one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Events accepted into the anchor.
    pub applied: u64,
    /// Events whose identity was already accepted.
    pub skipped_duplicate: u64,
    /// Events whose type is not part of the anchor.
    pub skipped_excluded: u64,
    /// Events of another session, turn or run.
    pub skipped_mismatched: u64,
}

/// Step 3 of applying an event: the event names another session, turn or run than the anchor.
fn mismatches(identity: &Identity, session_id: &str, turn_id: &str, run_id: &str) -> bool {
    let differs = |event: &str, own: &str| {
        let own = js::trim(own);
        !event.is_empty() && !own.is_empty() && event != own
    };
    differs(session_id, &identity.session_id)
        || differs(turn_id, &identity.turn_id)
        || differs(run_id, identity.run_id.as_deref().unwrap_or(""))
}

/// What [`Registry::apply`] takes: a JSON value as it arrived (a live frame, a journal row, a
/// settled message, a snapshot), or a [`SourceEvent`] built from one. Sealed.
pub trait Input: sealed::Input {}

impl Input for Value {}
impl Input for SourceEvent {}

mod sealed {
    use super::*;

    #[allow(unreachable_pub)]
    pub trait Input {
        fn apply_to(&self, registry: &mut Registry, context: &Value) -> Applied;

        /// A hint that the input is applied soon: its slots, or (`deep`) what they point to.
        fn prefetch(&self, _deep: bool) {}
    }

    impl Input for Value {
        fn apply_to(&self, registry: &mut Registry, context: &Value) -> Applied {
            let keys = InputKeys::of(self);
            let payload = PayloadSource::extract(self, &keys);
            registry.apply_input(&keys, payload, None, context)
        }
    }

    impl Input for SourceEvent {
        fn apply_to(&self, registry: &mut Registry, context: &Value) -> Applied {
            let keys = InputKeys::of_source(self);
            let payload = PayloadSource::extract_source(self, &keys);
            registry.apply_input(&keys, payload, Some(self.payload_keys()), context)
        }

        fn prefetch(&self, deep: bool) {
            SourceEvent::prefetch(self, deep);
        }
    }
}

/// Reusable buffers; never part of a registry's value.
#[derive(Clone, Debug, Default)]
struct Scratch(String, IdCache);

impl PartialEq for Scratch {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Why an event was not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Its type is not part of the anchor.
    Excluded,
    /// It belongs to another session, turn or run.
    MismatchedAnchor,
    /// Its identity was already accepted.
    Duplicate,
}

impl SkipReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Excluded => "excluded",
            Self::MismatchedAnchor => "mismatched_anchor",
            Self::Duplicate => "duplicate",
        }
    }
}

/// What happened to the activity rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowChange {
    /// A row was appended at this index.
    Appended(usize),
    /// The row at this index was replaced in place.
    Updated(usize),
    /// The row at this index was removed; later rows moved up by one.
    Removed(usize),
}

/// What one application changed, so a renderer can patch instead of re-projecting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Change {
    /// The activity rows.
    pub row: Option<RowChange>,
    /// `lifecycle` (status, terminal state, timestamps).
    pub lifecycle: bool,
    /// `content` (final answer and its reference).
    pub content: bool,
    /// `usage`.
    pub usage: bool,
    /// The run or stream id was learned.
    pub identity: bool,
    /// An artifact, side effect, metadata or transport event was stored.
    pub stored: bool,
}

impl Change {
    /// Nothing visible changed.
    pub fn is_empty(&self) -> bool {
        *self == Change::default()
    }
}

/// The outcome of applying one event.
#[derive(Clone, Debug, PartialEq)]
#[must_use = "whether the event was applied, and what changed, is how a renderer knows what to patch"]
pub struct Applied {
    /// The event was accepted.
    pub applied: bool,
    /// Why not, when it was not.
    pub reason: Option<SkipReason>,
    /// Its classification.
    pub classification: Classification,
    /// Its source type.
    pub source_event_type: Cow<'static, str>,
    /// Its identity key (`None`: it has none and is never deduplicated).
    pub dedupe_key: Option<DedupeKey>,
    /// Its kind.
    pub kind: Option<Kind>,
    /// Its status.
    pub status: Option<Cow<'static, str>>,
    /// What changed.
    pub change: Change,
}

/// One assistant turn's anchor with its dedupe memory and counters.
///
/// # Calling protocol
/// 1. Create it from a [`Seed`] with [`Registry::new`] (or receive one through serde).
/// 2. Feed every observation of the turn, in arrival order, through
///    [`Registry::apply`]: live SSE frames, journal replay rows, settled messages and
///    recovery snapshots alike. Each call returns an [`Applied`] whose [`Change`] says which
///    parts of the anchor moved; nothing panics and nothing is an error.
/// 3. Read the turn through [`Registry::scene`] (all rows) or [`Registry::row`] (one row).
///
/// Applying the same events again changes nothing but the duplicate counter; applying live,
/// replayed and settled copies in any order yields the same anchor when the copies agree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "RegistryRepr", from = "RegistryRepr")]
pub struct Registry {
    // Invariant: a snapshot of `anchor.identity` at creation; never updated, so it goes stale
    // when a run or stream id is filled in later, as the reference's does (quirk Q6 of the
    // spec's table); the live identity is `anchor.identity`.
    identity: Identity,
    anchor: Anchor,
    // Invariant: every accepted event's non-empty dedupe key, in acceptance order.
    dedupe: DedupeSet,
    stats: Stats,
    scratch: Scratch,
}

#[derive(Default, Serialize, Deserialize)]
struct EventIndex {
    #[serde(default)]
    dedupe_keys: Vec<DedupeKey>,
}

#[derive(Serialize, Deserialize)]
struct RegistryRepr {
    #[serde(default)]
    identity: Option<Identity>,
    anchor: Anchor,
    #[serde(default)]
    event_index: EventIndex,
    #[serde(default)]
    stats: Stats,
}

impl From<Registry> for RegistryRepr {
    fn from(r: Registry) -> Self {
        RegistryRepr {
            identity: Some(r.identity),
            anchor: r.anchor,
            event_index: EventIndex {
                dedupe_keys: r.dedupe.iter().cloned().collect(),
            },
            stats: r.stats,
        }
    }
}

impl From<RegistryRepr> for Registry {
    fn from(r: RegistryRepr) -> Self {
        let run = r.anchor.identity.run_id.clone();
        Registry {
            identity: r.identity.unwrap_or_else(|| r.anchor.identity.clone()),
            anchor: r.anchor,
            dedupe: DedupeSet::from_keys(r.event_index.dedupe_keys, run.as_ref()),
            stats: r.stats,
            scratch: Scratch::default(),
        }
    }
}

impl Registry {
    /// `createAssistantTurnAnchorRegistry(seed)`.
    pub fn new(seed: &Seed) -> Result<Registry, SeedError> {
        let anchor = Anchor::new(seed)?;
        let mut dedupe = DedupeSet::default();
        if let Some(run) = &anchor.identity.run_id {
            dedupe.set_run(run);
        }
        Ok(Registry {
            identity: anchor.identity.clone(),
            anchor,
            dedupe,
            stats: Stats::default(),
            scratch: Scratch::default(),
        })
    }

    /// The anchor.
    pub fn anchor(&self) -> &Anchor {
        &self.anchor
    }

    /// The identity as it was when the registry was created (run and stream may have been
    /// learned since; see [`Anchor::identity`] for the live one).
    pub fn initial_identity(&self) -> &Identity {
        &self.identity
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Accepted identity keys, in acceptance order.
    pub fn dedupe_keys(&self) -> impl ExactSizeIterator<Item = &DedupeKey> {
        self.dedupe.iter()
    }

    /// Whether an identity key (as its string) was already accepted.
    pub fn has_seen(&self, dedupe_key: &str) -> bool {
        self.dedupe.contains_str(dedupe_key)
    }

    /// The projection of the whole turn in a display mode.
    pub fn scene(&self, mode: Mode) -> ActivityScene<'_> {
        ActivityScene::of(&self.anchor, mode)
    }

    /// Activity row `index` (what a renderer reads after a [`RowChange`]).
    pub fn row(&self, index: usize) -> Option<ActivityRow<'_>> {
        self.anchor
            .activity_events
            .get(index)
            .map(|e| ActivityRow::new(e, index))
    }

    /// The number of activity rows.
    pub fn row_count(&self) -> usize {
        self.anchor.activity_events.len()
    }

    /// `applyAssistantTurnAnchorSourceEvent(registry, input, context)`: normalizes `input` in
    /// the registry's context (the anchor's identity overrides the caller's `context`) and
    /// applies it. `input` is any JSON value, or a [`SourceEvent`] whose envelope keys were
    /// sorted into slots when it was built; both give the same outcome.
    pub fn apply<I: Input + ?Sized>(&mut self, input: &I, context: &Value) -> Applied {
        input.apply_to(self, context)
    }

    /// [`Registry::apply`] on each of `inputs` (event and context) in order, handing every
    /// outcome to `each`: the same outcomes as one call per input.
    ///
    /// Replaying a long journal is bound by reading the inputs from memory rather than by the
    /// anchor's work, so while one [`SourceEvent`] is applied the next two are prefetched (on
    /// x86-64; elsewhere, and for JSON values, this is the plain loop). `inputs` is therefore
    /// read up to two items ahead of the outcome handed to `each`.
    pub fn apply_batch<'a, I: Input + ?Sized + 'a>(
        &mut self,
        inputs: impl IntoIterator<Item = (&'a I, &'a Value)>,
        mut each: impl FnMut(Applied),
    ) {
        let mut inputs = inputs.into_iter();
        let mut current = inputs.next();
        let mut next = inputs.next();
        if let Some((event, _)) = next {
            event.prefetch(false);
        }
        while let Some((event, context)) = current {
            let after = inputs.next();
            // Two ahead: its slots. One ahead: the strings its slots (loaded last time) point to.
            if let Some((event, _)) = after {
                event.prefetch(false);
            }
            if let Some((event, _)) = next {
                event.prefetch(true);
            }
            each(self.apply(event, context));
            current = next;
            next = after;
        }
    }

    fn apply_input(
        &mut self,
        keys: &InputKeys<'_>,
        payload: PayloadSource<'_>,
        noted_payload_keys: Option<u32>,
        context: &Value,
    ) -> Applied {
        const CONTEXT_KEYS: js::KeySet<7> = js::KeySet::new([
            "session_id",
            "turn_id",
            "run_id",
            "stream_id",
            "local_id",
            "seq",
            "created_at",
        ]);
        let c = match context {
            Value::Object(map) => CONTEXT_KEYS.scan(map),
            _ => [None; 7],
        };
        // The registry context: the anchor's own identity wins over the caller's.
        let identity = &self.anchor.identity;
        fn pick<'r>(own: Option<&'r Arc<str>>, caller: Option<&'r Value>) -> CtxId<'r> {
            match own {
                Some(arc) if !js::trim(arc).is_empty() => {
                    let trimmed = js::trim(arc);
                    CtxId::Clean(trimmed, (trimmed.len() == arc.len()).then_some(arc))
                }
                _ => CtxId::Clean(js::clean(caller), None),
            }
        }
        let ctx = Ctx {
            session_id: pick(Some(&identity.session_id), c[0]),
            turn_id: pick(Some(&identity.turn_id), c[1]),
            run_id: pick(identity.run_id.as_ref(), c[2]),
            stream_id: pick(identity.stream_id.as_ref(), c[3]),
            local_id: c[4],
            seq: c[5],
            created_at: c[6],
        };
        let draft = Draft::new(keys, &PayloadKeys::of(&payload, noted_payload_keys), &ctx);
        let mut applied = Applied {
            applied: false,
            reason: None,
            classification: draft.meta.classification,
            source_event_type: draft.source_type.to_cow(),
            dedupe_key: None,
            kind: None,
            status: None,
            change: Change::default(),
        };
        if draft.meta.classification == Classification::Excluded {
            self.stats.skipped_excluded += 1;
            applied.reason = Some(SkipReason::Excluded);
            return applied;
        }
        applied.kind = draft.meta.kind;
        applied.status = draft.status.map(|s| s.to_cow());
        let key = draft.key(&mut self.scratch.0);
        let owned = |key: KeyRef<'_>| match key {
            KeyRef::EventId(id) => DedupeKey::EventId(Arc::from(id)),
            KeyRef::Rendered(s) => DedupeKey::Rendered(Arc::from(s)),
        };
        if mismatches(
            identity,
            draft.session_id.as_str(),
            draft.turn_id.as_str(),
            draft.run_id.as_str(),
        ) {
            applied.dedupe_key = key.map(owned);
            self.stats.skipped_mismatched += 1;
            applied.reason = Some(SkipReason::MismatchedAnchor);
            return applied;
        }
        if let Some(key) = key.filter(|k| self.dedupe.contains(*k)) {
            applied.dedupe_key = Some(owned(key));
            self.stats.skipped_duplicate += 1;
            applied.reason = Some(SkipReason::Duplicate);
            return applied;
        }
        // An event-id key shares the event's own id once the event is built.
        let rendered = match key {
            Some(KeyRef::Rendered(s)) => Some(DedupeKey::Rendered(Arc::from(s))),
            _ => None,
        };
        let has_event_key = matches!(key, Some(KeyRef::EventId(_)));
        let classification = draft.meta.classification;
        let event =
            DraftParts::new(draft, &mut self.scratch.0, &mut self.scratch.1).finish(payload);
        let key = match (has_event_key, &event.event_id) {
            (true, Some(id)) => Some(DedupeKey::EventId(Arc::clone(id))),
            _ => rendered,
        };
        if let Some(key) = &key {
            self.dedupe.insert(key.clone());
        }
        applied.dedupe_key = key;
        applied.change = self.accept(classification, event);
        applied.applied = true;
        applied
    }

    fn accept(&mut self, classification: Classification, event: AnchorEvent) -> Change {
        let mut change = Change::default();
        let identity = &mut self.anchor.identity;
        if identity.run_id.is_none() {
            if let Some(run) = event.run_id.as_ref().filter(|r| !js::trim(r).is_empty()) {
                identity.run_id = Some(Arc::clone(run));
                self.dedupe.set_run(run);
                change.identity = true;
            }
        }
        if identity.stream_id.is_none() {
            if let Some(stream) = event.stream_id.as_ref().filter(|s| !js::trim(s).is_empty()) {
                identity.stream_id = Some(Arc::clone(stream));
                change.identity = true;
            }
        }
        match classification {
            Classification::Activity => {
                change.lifecycle = self.update_lifecycle(&event);
                self.anchor.activity_events.push(event);
                change.row = Some(RowChange::Appended(self.anchor.activity_events.len() - 1));
            }
            Classification::Artifact => {
                self.anchor.artifacts.push(event);
                change.stored = true;
            }
            Classification::SideEffect => {
                self.anchor.side_effects.push(event);
                change.stored = true;
            }
            Classification::Metadata => {
                let (content, usage) = self.update_content(&event);
                change.content = content;
                change.usage = usage;
                self.anchor.metadata_events.push(event);
                change.stored = true;
            }
            Classification::Transport => {
                self.anchor.transport_events.push(event);
                change.stored = true;
            }
            Classification::Excluded => {}
        }
        self.stats.applied += 1;
        change
    }

    /// Returns whether the lifecycle changed.
    fn update_lifecycle(&mut self, event: &AnchorEvent) -> bool {
        let lc = &mut self.anchor.lifecycle;
        let mut changed = false;
        if !js::truthy(lc.started_at.as_ref()) && js::truthy(event.created_at.as_ref()) {
            lc.started_at = event.created_at.clone();
            changed = true;
        }
        let status = event.status.as_deref().map(js::trim).unwrap_or("");
        if (lc.status.is_empty() || lc.status == "created") && status == "running" {
            lc.status = "running".to_owned();
            changed = true;
        }
        if event.kind == Some(Kind::TerminalStatus) {
            let t = normalize_terminal_state(status, Some(&event.source_event_type))
                .unwrap_or(TerminalState::Completed);
            changed |= lc.status != t.as_str() || lc.terminal_state != Some(t);
            lc.status = t.as_str().to_owned();
            lc.terminal_state = Some(t);
            if js::truthy(event.created_at.as_ref()) {
                changed |= lc.completed_at != event.created_at;
                lc.completed_at = event.created_at.clone();
            }
        }
        changed
    }

    /// Returns whether (content, usage) changed.
    fn update_content(&mut self, event: &AnchorEvent) -> (bool, bool) {
        let p = &event.payload;
        match &*event.source_event_type {
            "usage" => {
                self.anchor.usage = Some(Value::Object(p.clone()));
                (false, true)
            }
            "settled_message" => {
                let role = js::clean(p.get("role"));
                if !role.is_empty() && role != "assistant" {
                    return (false, false);
                }
                let mut content_changed = false;
                let answer = js::first_text([
                    p.get("content"),
                    p.get("text"),
                    p.get("final_answer"),
                    p.get("answer"),
                ]);
                if !answer.is_empty() {
                    let payload_ref = js::first_own(p, &["message_id", "id", "local_id"]);
                    let event_ref = if event.local_id.is_empty() {
                        event.event_id.as_deref().unwrap_or("")
                    } else {
                        &event.local_id
                    };
                    let reference = match js::text(payload_ref) {
                        t if !t.is_empty() => t.into_owned(),
                        _ => event_ref.to_owned(),
                    };
                    let content = &mut self.anchor.content;
                    let reference = Some(reference).filter(|r| !r.is_empty());
                    content_changed =
                        content.final_answer != answer || content.final_message_ref != reference;
                    content.final_answer = answer.into_owned();
                    content.final_message_ref = reference;
                }
                let mut usage_changed = false;
                for key in ["usage", "_turnUsage"] {
                    if let Some(u @ (Value::Object(_) | Value::Array(_))) = p.get(key) {
                        usage_changed |= self.anchor.usage.as_ref() != Some(u);
                        self.anchor.usage = Some(u.clone());
                    }
                }
                (content_changed, usage_changed)
            }
            _ => (false, false),
        }
    }
}

/// The reference's entry points around normalization, kept for the parity tests: an
/// already normalized event, and the renderer-side upsert and removal by local id.
#[cfg(feature = "parity")]
impl Registry {
    /// `applyAssistantTurnAnchorNormalizedEvent(registry, normalized)`: the gates and routing
    /// for an already normalized event.
    pub fn apply_normalized(&mut self, normalized: Normalized) -> Applied {
        let Normalized {
            classification,
            source_event_type,
            event,
            dedupe_key,
        } = normalized;
        let mut applied = Applied {
            applied: false,
            reason: None,
            classification,
            source_event_type,
            dedupe_key: None,
            kind: None,
            status: None,
            change: Change::default(),
        };
        let Some(event) = event else {
            self.stats.skipped_excluded += 1;
            applied.reason = Some(SkipReason::Excluded);
            return applied;
        };
        applied.kind = event.kind;
        applied.status = event.status.clone();
        let key = Some(js::trim(&dedupe_key).to_owned())
            .filter(|k| !k.is_empty())
            .or_else(|| Some(crate::reference::dedupe_key(&event)).filter(|k| !k.is_empty()))
            .map(|k| DedupeKey::parse(&k));
        fn opt(s: &Option<Arc<str>>) -> &str {
            s.as_deref().map(js::trim).unwrap_or("")
        }
        if mismatches(
            &self.anchor.identity,
            opt(&event.session_id),
            opt(&event.turn_id),
            opt(&event.run_id),
        ) {
            applied.dedupe_key = key;
            self.stats.skipped_mismatched += 1;
            applied.reason = Some(SkipReason::MismatchedAnchor);
            return applied;
        }
        if let Some(key) = key {
            if self.dedupe.contains(key.key_ref()) {
                applied.dedupe_key = Some(key);
                self.stats.skipped_duplicate += 1;
                applied.reason = Some(SkipReason::Duplicate);
                return applied;
            }
            self.dedupe.insert(key.clone());
            applied.dedupe_key = Some(key);
        }
        applied.change = self.accept(classification, event);
        applied.applied = true;
        applied
    }

    /// Steps 6–8 of applying an event: identity fill, routing, lifecycle and content updates.
    /// Live prose and reasoning upserts: when an activity event with the same source
    /// type and local id as `input` is stored, replaces its status and merges `input`'s payload
    /// into it in place (same row, same position); otherwise applies `input` normally.
    ///
    /// The search starts at the newest row, where live upserts land.
    pub fn upsert_by_local_id(&mut self, input: &Value, context: &Value) -> Applied {
        let normalized = crate::reference::normalize(input, &self.context_value(context));
        let Some(event) = normalized.event.as_ref() else {
            return self.apply_normalized(normalized);
        };
        let found = self.anchor.activity_events.iter().rposition(|stored| {
            stored.local_id == event.local_id && stored.source_event_type == event.source_event_type
        });
        let Some(index) = found else {
            return self.apply_normalized(normalized);
        };
        let Normalized {
            classification,
            source_event_type,
            event,
            dedupe_key,
        } = normalized;
        let event = event.expect("checked above");
        let stored = &mut self.anchor.activity_events[index];
        stored.status = event.status.clone();
        stored.payload.extend(event.payload);
        Applied {
            applied: true,
            reason: None,
            classification,
            source_event_type,
            dedupe_key: Some(dedupe_key)
                .filter(|k| !k.is_empty())
                .map(|k| DedupeKey::parse(&k)),
            kind: stored.kind,
            status: stored.status.clone(),
            change: Change {
                row: Some(RowChange::Updated(index)),
                ..Change::default()
            },
        }
    }

    /// Removes the newest activity event with this source type and local id (the reference's
    /// reasoning-echo removal). Its dedupe key stays remembered.
    pub fn remove_by_local_id(&mut self, source_type: &str, local_id: &str) -> Option<Change> {
        let index = self
            .anchor
            .activity_events
            .iter()
            .rposition(|e| &*e.local_id == local_id && e.source_event_type == source_type)?;
        self.anchor.activity_events.remove(index);
        Some(Change {
            row: Some(RowChange::Removed(index)),
            ..Change::default()
        })
    }

    /// The registry context as a JSON object: the caller's keys with the anchor's identity.
    fn context_value(&self, context: &Value) -> Value {
        let mut map = context.as_object().cloned().unwrap_or_default();
        let identity = &self.anchor.identity;
        let mut set = |key: &str, own: Option<&Arc<str>>| {
            let value = match own.map(|s| js::trim(s)).filter(|s| !s.is_empty()) {
                Some(s) => s.to_owned(),
                None => js::clean(map.get(key)).to_owned(),
            };
            map.insert(key.to_owned(), Value::String(value));
        };
        set("session_id", Some(&identity.session_id));
        set("turn_id", Some(&identity.turn_id));
        set("run_id", identity.run_id.as_ref());
        set("stream_id", identity.stream_id.as_ref());
        Value::Object(map)
    }
}
