//! The differential trace format and its runner: what `anchor-replay` does, as a
//! library, so tests and benchmarks run exactly the same code.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::js;
use crate::model::{Seed, SeedError};
use crate::registry::{Applied, Registry};
use crate::scene::Mode;
use crate::shadow::{shadow_snapshot, LAYERS};
use crate::source::SourceEvent;
use crate::API_VERSION;

/// How a trace's events are applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Entry {
    /// In file order, each with its own context.
    #[default]
    Sequential,
    /// Grouped by source layer through the shadow snapshot (live, replay, settled, inflight).
    Shadow,
}

impl Entry {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Entry::Sequential => "sequential",
            Entry::Shadow => "shadow",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Entry> {
        match js::trim(s) {
            "sequential" => Some(Entry::Sequential),
            "shadow" => Some(Entry::Shadow),
            _ => None,
        }
    }
}

/// Why a trace could not be read or run.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A line is not JSON.
    #[error("line {line}: not JSON: {source}")]
    Json {
        /// 1-based line number.
        line: usize,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A line is JSON but not an event line.
    #[error("line {line}: {message}")]
    Shape {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The configured mode or entry is unknown.
    #[error("unknown {what} {value:?}")]
    Unknown {
        /// `mode` or `entry`.
        what: &'static str,
        /// The value given.
        value: String,
    },
    /// The anchor seed is unusable.
    #[error(transparent)]
    Seed(#[from] SeedError),
}

/// One event line.
#[derive(Clone, Debug)]
pub struct TraceLine {
    /// 1-based line number in the file.
    pub line: usize,
    /// `live`, `replay`, `settled` or `inflight`.
    pub source: String,
    /// The event, as given (its envelope keys sorted into slots when the line was read).
    pub event: SourceEvent,
    /// `{...config.context, ...line.context, source_layer: source}`; lines with equal contexts
    /// share one value.
    pub context: Arc<Value>,
}

/// A line of a trace file as written: a config line or an event line. Only its own keys are
/// kept; a key given twice keeps its last value, as in a JSON object.
#[derive(Default)]
struct RawLine {
    /// `Some` when the key is present, even with `null`.
    config: Option<Value>,
    source: Option<Value>,
    event: Option<SourceEvent>,
    context: Option<Value>,
}

impl<'de> Deserialize<'de> for RawLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LineVisitor;
        impl<'de> serde::de::Visitor<'de> for LineVisitor {
            type Value = RawLine;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<RawLine, A::Error> {
                let mut line = RawLine::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*key {
                        "config" => line.config = Some(map.next_value()?),
                        "source" => line.source = Some(map.next_value()?),
                        "event" => line.event = Some(map.next_value()?),
                        "context" => line.context = Some(map.next_value()?),
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(line)
            }
        }
        d.deserialize_map(LineVisitor)
    }
}

/// A parsed trace.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The registry seed (`config.anchor`).
    pub anchor: Value,
    /// The base context (`config.context`).
    pub context: Map<String, Value>,
    /// The configured mode, if any.
    pub mode: Option<String>,
    /// The configured entry, if any.
    pub entry: Option<String>,
    /// The event lines.
    pub lines: Vec<TraceLine>,
}

impl Trace {
    /// Parses JSON Lines: blank lines and `//` comments are skipped; an optional first
    /// `{"config": …}` line; then `{"source", "event", "context"?}` lines.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut trace = Trace {
            anchor: Value::Object(Map::new()),
            context: Map::new(),
            mode: None,
            entry: None,
            lines: Vec::new(),
        };
        let mut seen_event = false;
        let mut contexts: Vec<Arc<Value>> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let t = raw.trim();
            if t.is_empty() || t.starts_with("//") {
                continue;
            }
            let shape = |message: &str| TraceError::Shape {
                line,
                message: message.to_owned(),
            };
            if !t.starts_with('{') {
                // Valid JSON of another shape is a shape error, anything else is not JSON.
                serde_json::from_str::<serde::de::IgnoredAny>(t)
                    .map_err(|source| TraceError::Json { line, source })?;
                return Err(shape("expected a JSON object"));
            }
            let raw: RawLine =
                serde_json::from_str(t).map_err(|source| TraceError::Json { line, source })?;
            if let Some(config) = raw.config {
                if seen_event || !trace.lines.is_empty() {
                    return Err(shape("the config line must come first"));
                }
                let config = config
                    .as_object()
                    .ok_or_else(|| shape("config must be an object"))?;
                if let Some(anchor) = config.get("anchor") {
                    trace.anchor = anchor.clone();
                }
                if let Some(Value::Object(ctx)) = config.get("context") {
                    trace.context = ctx.clone();
                }
                trace.mode = config
                    .get("mode")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                trace.entry = config
                    .get("entry")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                continue;
            }
            seen_event = true;
            let Some(Value::String(source)) = raw.source else {
                return Err(shape("an event line needs a string \"source\""));
            };
            let event = raw
                .event
                .ok_or_else(|| shape("an event line needs an \"event\""))?;
            let mut context = trace.context.clone();
            if let Some(Value::Object(extra)) = &raw.context {
                context.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            context.insert("source_layer".into(), Value::String(source.clone()));
            let context = Value::Object(context);
            let context = match contexts.iter().find(|c| ***c == context) {
                Some(shared) => Arc::clone(shared),
                None => {
                    let shared = Arc::new(context);
                    contexts.push(Arc::clone(&shared));
                    shared
                }
            };
            trace.lines.push(TraceLine {
                line,
                source,
                event,
                context,
            });
        }
        Ok(trace)
    }

    /// The mode: `flag` if given, else the config's, else the default.
    pub fn mode(&self, flag: Option<&str>) -> Result<Mode, TraceError> {
        match flag.or(self.mode.as_deref()) {
            None => Ok(Mode::default()),
            Some(m) => Mode::parse(m).ok_or_else(|| TraceError::Unknown {
                what: "mode",
                value: m.to_owned(),
            }),
        }
    }

    /// The entry: `flag` if given, else the config's, else sequential.
    pub fn entry(&self, flag: Option<&str>) -> Result<Entry, TraceError> {
        match flag.or(self.entry.as_deref()) {
            None => Ok(Entry::default()),
            Some(e) => Entry::parse(e).ok_or_else(|| TraceError::Unknown {
                what: "entry",
                value: e.to_owned(),
            }),
        }
    }

    /// A fresh registry from the configured seed.
    pub fn registry(&self) -> Result<Registry, SeedError> {
        Registry::new(&Seed::from_value(&self.anchor))
    }

    /// Applies every line in file order to `registry` (the sequential entry).
    pub fn apply_sequential(&self, registry: &mut Registry) -> Vec<Applied> {
        let mut results = Vec::with_capacity(self.lines.len());
        registry.apply_batch(
            self.lines.iter().map(|l| (&l.event, &*l.context)),
            |applied| results.push(applied),
        );
        results
    }

    /// Runs the trace.
    pub fn run(&self, mode: Mode, entry: Entry) -> Result<TraceRun, TraceError> {
        let (registry, results) = match entry {
            Entry::Sequential => {
                let mut registry = self.registry()?;
                let applied = self.apply_sequential(&mut registry);
                let results = self
                    .lines
                    .iter()
                    .zip(applied)
                    .enumerate()
                    .map(|(index, (line, applied))| TraceResult::new(index, line, applied))
                    .collect();
                (registry, results)
            }
            Entry::Shadow => {
                let mut sources = Map::new();
                for layer in LAYERS {
                    let events: Vec<Value> = self
                        .lines
                        .iter()
                        .filter(|l| l.source == layer)
                        .map(|l| l.event.to_value())
                        .collect();
                    sources.insert(format!("{layer}_events"), Value::Array(events));
                }
                let input = json!({
                    "anchor": self.anchor,
                    "context": self.context,
                    "sources": sources,
                });
                let snapshot = shadow_snapshot(&input)?;
                let mut results = Vec::new();
                for (layer, applied) in LAYERS.iter().zip(snapshot.results) {
                    let lines = self.lines.iter().filter(|l| l.source == *layer);
                    for (line, applied) in lines.zip(applied) {
                        results.push(TraceResult::new(results.len(), line, applied));
                    }
                }
                (snapshot.registry, results)
            }
        };
        Ok(TraceRun {
            entry,
            mode,
            results,
            registry,
        })
    }
}

/// One line's outcome, as the harness reports it.
#[derive(Clone, Debug, Serialize)]
pub struct TraceResult {
    /// Position among the applied events.
    pub index: usize,
    /// 1-based line number.
    pub line: usize,
    /// The line's source layer.
    pub source: String,
    /// Accepted.
    pub applied: bool,
    /// Why not.
    pub reason: Option<&'static str>,
    /// Its classification.
    pub classification: &'static str,
    /// Its source type.
    pub source_event_type: String,
    /// Its identity key (`""` when none).
    pub dedupe_key: String,
    /// Its kind.
    pub kind: Option<&'static str>,
    /// Its status.
    pub status: Option<String>,
}

impl TraceResult {
    fn new(index: usize, line: &TraceLine, applied: Applied) -> Self {
        TraceResult {
            index,
            line: line.line,
            source: line.source.clone(),
            applied: applied.applied,
            reason: applied.reason.map(|r| r.as_str()),
            classification: applied.classification.as_str(),
            source_event_type: applied.source_event_type.into_owned(),
            dedupe_key: applied
                .dedupe_key
                .map(|k| k.to_string())
                .unwrap_or_default(),
            kind: applied.kind.map(|k| k.as_str()),
            status: applied.status.map(|s| s.into_owned()),
        }
    }
}

/// A finished run: results, the registry and its scene.
#[derive(Clone, Debug)]
pub struct TraceRun {
    /// The entry used.
    pub entry: Entry,
    /// The mode used.
    pub mode: Mode,
    /// One result per event line.
    pub results: Vec<TraceResult>,
    /// The final registry.
    pub registry: Registry,
}

impl TraceRun {
    /// The harness document `{api_version, entry, mode, results, registry, scene}`.
    pub fn to_value(&self) -> Value {
        json!({
            "api_version": API_VERSION,
            "entry": self.entry.as_str(),
            "mode": self.mode.as_str(),
            "results": self.results,
            "registry": self.registry,
            "scene": self.registry.scene(self.mode),
        })
    }
}

impl fmt::Display for TraceRun {
    /// The canonical form: keys sorted by UTF-16 code units, no whitespace, JS numbers.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&canonical_json(&self.to_value()))
    }
}

/// `value` as canonical JSON text: keys sorted by UTF-16 code units at every level, no
/// whitespace, numbers and strings as `JSON.stringify` writes them.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    js::write_json(&mut out, value, js::KeyOrder::Utf16);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        Trace::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn lines_must_be_objects() {
        for line in ["7", "[{\"anchor\":{}}]", "[]", "\"live\"", "null"] {
            assert_eq!(error(line), "line 1: expected a JSON object", "{line}");
        }
        assert!(error("{\"source\":").starts_with("line 1: not JSON:"));
        assert!(error("[1,").starts_with("line 1: not JSON:"));
    }

    #[test]
    fn a_key_given_twice_keeps_its_last_value() {
        let trace = Trace::parse(
            r#"{"source":"replay","event":{},"event":{"type":"token"},"source":"live","x":[1]}"#,
        )
        .unwrap();
        assert_eq!(trace.lines.len(), 1);
        assert_eq!(trace.lines[0].source, "live");
        assert_eq!(
            trace.lines[0].event.to_value(),
            serde_json::json!({"type": "token"})
        );
    }

    #[test]
    fn event_lines_need_a_source_and_an_event() {
        assert_eq!(
            error(r#"{"event":{}}"#),
            "line 1: an event line needs a string \"source\""
        );
        assert_eq!(
            error(r#"{"source":"live"}"#),
            "line 1: an event line needs an \"event\""
        );
        // A null event is an event (excluded when applied), not a missing one.
        let trace = Trace::parse(r#"{"source":"live","event":null}"#).unwrap();
        assert_eq!(trace.lines[0].event.to_value(), Value::Null);
    }
}
