//! # The Stable Assistant Turn Anchor
//!
//! Every assistant turn has exactly one anchor. Everything observed about the turn, whether a
//! live SSE frame, a row replayed from the run journal, the settled transcript message or a
//! recovery snapshot, is normalized into one envelope, classified, deduplicated by identity
//! and routed into that anchor. Renderers never own the turn; they project it.
//!
//! ```text
//! live SSE frame ─┐
//! journal row ────┼─▶ Registry::apply ─▶ Anchor ──────────▶ ActivityScene ─▶ rows
//! settled message ┤   normalize, classify,   activity_events   (one per activity event,
//! snapshot ───────┘   identity, sanitize;    artifacts, …      in acceptance order)
//!                     gates: excluded,       lifecycle,
//!                     mismatched, duplicate  content
//! ```
//!
//! # The model
//! - **Classification** ([`classify`]): `activity` (prose, reasoning, tools, lifecycle,
//!   control, terminal: these become rows), `artifact`, `side_effect`, `metadata` (usage,
//!   title, snapshots, the settled message), `transport` (`stream_end`) or `excluded`
//!   (counted, never stored: `metering`, `todo_state`, any unknown name).
//! - **Identity** ([`dedupe_key`]): an event is the same event when it has the same
//!   `event_id`, else the same `run_id` + `seq`, else the same session, type, local id and
//!   `seq`. Never its text, never its time. An event without identity is always appended.
//! - **One owner**: events of another session, turn or run are rejected; a reconnect on a new
//!   stream of the same run is accepted.
//! - **Terminal state is explicit** ([`TerminalState`]) and separate from the final answer.
//!   `done` settles the existing anchor; it never makes a second turn. `stream_end` is
//!   transport and never means "completed".
//! - **The final answer** comes only from a `settled_message` and is never a row.
//! - **Rows** ([`ActivityScene`], [`ActivityRow`]) are in acceptance order; every display mode
//!   gets the same rows and differs only in display hints.
//!
//! # Calling order
//! 1. [`Registry::new`] with a [`Seed`] (the session id is required).
//! 2. [`Registry::apply`] for every observation, in arrival order: a JSON value as it came, or
//!    a [`SourceEvent`] (an input whose envelope keys were sorted into slots when it was built,
//!    from a live frame's parts, a JSON value or JSON text, so applying it reads none of the
//!    input's own key strings; a property test holds the two equal on arbitrary input). It
//!    never fails and never panics; the returned [`Applied`] says whether the event was
//!    accepted, why not, and which parts of the anchor changed ([`Change`], with the row index
//!    to patch). [`Registry::apply_batch`] applies a batch (a journal replay) with the same
//!    outcomes, prefetching the next inputs while one is applied.
//! 3. [`Registry::scene`] for the whole turn, or [`Registry::row`] for one row.
//!
//! ```
//! use anchor::{Mode, Registry, Seed, TerminalState};
//! use serde_json::json;
//!
//! let mut turn = Registry::new(&Seed::new("s1").stream("run-1")).unwrap();
//! let ctx = json!({});
//! // A live frame, the same event replayed from the journal, then the end.
//! turn.apply(&json!({"type": "token", "data": "{\"text\":\"Hi\"}", "lastEventId": "run-1:1"}), &ctx);
//! let replay = turn.apply(&json!({"event": "token", "event_id": "run-1:1", "payload": {"text": "Hi"}}), &ctx);
//! assert!(!replay.applied);
//! turn.apply(&json!({"event": "done", "event_id": "run-1:2", "payload": {}}), &ctx);
//! turn.apply(&json!({"source_type": "settled_message", "payload": {"role": "assistant", "id": "m1", "content": "Hi!"}}), &ctx);
//!
//! let scene = turn.scene(Mode::CompactWorklog);
//! assert_eq!(scene.rows().len(), 2);
//! assert_eq!(scene.terminal_state(), Some(TerminalState::Completed));
//! assert_eq!(scene.final_answer(), "Hi!");
//! ```
//!
//! # Architecture invariants
//! - No IO, no clocks, no randomness, no global mutable state, no async, no web framework.
//!   Time and ids arrive inside events. The crate builds for `wasm32-unknown-unknown`. Its
//!   only `unsafe` is the x86-64 prefetch hint in [`Registry::apply_batch`].
//! - [`Registry::apply`] is total: any JSON value is a valid input.
//! - Replaying any prefix of a turn's events and then all of them equals applying them once,
//!   apart from the duplicate counter; re-applying a settled turn changes nothing else.
//! - Projections are deterministic: the same anchor gives the same rows on the server and in
//!   the browser.
//!
//! # Parity with the reference, and where we differ
//! The behaviour follows hermes-webui's `assistant_turn_anchors.js` field by field, including
//! its JS value semantics (truthiness, `String()`, `Number()`, the JS whitespace set, UTF-16
//! ordering); `anchor-replay` prints the same canonical document as the reference harness.
//! The labels Q1, Q4, … are the rows of the quirk table in the spec (`anchor-model.md`, §15);
//! each is said in words where the code follows or departs from it. Three deliberate
//! differences:
//! - **Q1**: source types named after `Object.prototype` members (`constructor`, `__proto__`,
//!   …) are *excluded*. The reference counts them as applied but stores them nowhere, a
//!   by-product of looking names up in a plain JS object, not a behaviour anyone wants.
//! - **Q4**: a `seq` that is an object becomes the string `"[object Object]"` wherever it
//!   appears. The reference throws for one inside a payload; nothing here throws on input.
//! - **Q11**: an anchor always has all of its event lists, so applying an activity event can
//!   never fail on a missing list (the reference throws `TypeError` for hand-made anchors).
//!
//! One limitation follows from Rust strings holding only whole characters: where the
//! reference would cut a reasoning preview through a surrogate pair and keep half of it, the
//! preview here ends before the pair.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

pub mod answer;
mod classify;
mod dedupe;
mod envelope;
mod js;
mod kind;
mod model;
mod normalize;
mod registry;
mod sanitize;
mod scene;
mod seq;
mod source;

// Parity with the reference implementation (the `parity` feature): not part of the product.
#[cfg(feature = "parity")]
mod historical;
#[cfg(feature = "parity")]
mod reconcile;
#[cfg(feature = "parity")]
mod reference;
#[cfg(feature = "parity")]
mod settled;
#[cfg(feature = "parity")]
mod shadow;
#[cfg(feature = "parity")]
pub mod synthetic;
#[cfg(feature = "parity")]
pub mod trace;

pub use classify::{normalize_terminal_state, Classification, Kind, SourceMeta, TerminalState};
pub use dedupe::DedupeKey;
#[cfg(feature = "parity")]
pub use historical::{project_historical_scene, HistoricalScene};
pub use kind::{classify, EventKind};
pub use model::{Anchor, AnchorEvent, Content, EventList, Identity, Lifecycle, Seed, SeedError};
#[cfg(feature = "parity")]
pub use reconcile::{
    reconcile_renderer_snapshot, reconcile_scene, renderer_snapshot, DomRow, JsonDomRow,
    DEFAULT_FIELDS,
};
#[cfg(feature = "parity")]
pub use reference::{dedupe_key, normalize, normalize_batch, Normalized};
pub use registry::{Applied, Change, Input, Registry, RowChange, SkipReason, Stats};
#[cfg(feature = "parity")]
pub use sanitize::sanitize;
pub use scene::{
    ActivityRow, ActivityScene, Group, GroupKey, Mode, Role, RowId, Thinking, Tool, SCENE_VERSION,
    TRANSPARENT_HINT,
};
pub use seq::Seq;
#[cfg(feature = "parity")]
pub use settled::{project_settled_final_answer, SettledProjection, SettledSkip};
#[cfg(feature = "parity")]
pub use shadow::{shadow_snapshot, ShadowSnapshot, LAYERS};
pub use source::SourceEvent;

/// The reference module version this crate matches.
pub const API_VERSION: &str = "slice8-renderer-snapshot-adapter";
