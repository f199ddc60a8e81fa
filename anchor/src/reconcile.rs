//! Reconciliation: does what a renderer shows match the anchor's scene? A diagnostic:
//! renderers that fold a tool's start and completion into one card are expected to differ.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::classify::normalize_terminal_state;
use crate::js;
use crate::scene::{ActivityScene, Role};
use crate::Kind;

/// A rendered row as the reconciler reads it: a plain JSON row, or an element of a DOM.
pub trait DomRow {
    /// An own property of a plain row.
    fn prop(&self, key: &str) -> Option<&Value>;
    /// A `data-*` attribute by its `dataset` (camelCase) name.
    fn dataset(&self, name: &str) -> Option<Cow<'_, str>>;
    /// Whether the row has a `dataset` at all.
    fn has_dataset(&self) -> bool;
    /// An attribute, for elements (`None` for plain rows).
    fn attribute(&self, name: &str) -> Option<Cow<'_, str>>;
    /// Whether the element has a class.
    fn has_class(&self, class: &str) -> bool;
    /// The text of the first descendant matching `selector`.
    fn query_text(&self, selector: &str) -> Option<Cow<'_, str>>;
    /// The element's text content.
    fn text_content(&self) -> Option<Cow<'_, str>>;
}

/// A row given as JSON. Plain rows are objects of fields; an element can be described with
/// `dataset` (object), `attributes` (object), `classList` (array), `textContent` (string) and
/// `query` (selector → text of its first match).
#[derive(Clone, Copy, Debug)]
pub struct JsonDomRow<'a>(pub &'a Value);

impl DomRow for JsonDomRow<'_> {
    fn prop(&self, key: &str) -> Option<&Value> {
        js::own(Some(self.0), key)
    }

    fn dataset(&self, name: &str) -> Option<Cow<'_, str>> {
        match js::own(js::own(Some(self.0), "dataset"), name) {
            Some(Value::String(s)) => Some(Cow::Borrowed(s)),
            Some(v) => Some(js::to_js_string(v)),
            None => None,
        }
    }

    fn has_dataset(&self) -> bool {
        matches!(js::own(Some(self.0), "dataset"), Some(Value::Object(_)))
    }

    fn attribute(&self, name: &str) -> Option<Cow<'_, str>> {
        match js::own(js::own(Some(self.0), "attributes"), name) {
            Some(Value::String(s)) => Some(Cow::Borrowed(s)),
            Some(v) => Some(js::to_js_string(v)),
            None => None,
        }
    }

    fn has_class(&self, class: &str) -> bool {
        match js::own(Some(self.0), "classList") {
            Some(Value::Array(items)) => items.iter().any(|c| c.as_str() == Some(class)),
            _ => false,
        }
    }

    fn query_text(&self, selector: &str) -> Option<Cow<'_, str>> {
        match js::own(js::own(Some(self.0), "query"), selector) {
            Some(Value::String(s)) => Some(Cow::Borrowed(s)),
            _ => None,
        }
    }

    fn text_content(&self) -> Option<Cow<'_, str>> {
        match js::own(Some(self.0), "textContent") {
            Some(Value::String(s)) => Some(Cow::Borrowed(s)),
            _ => None,
        }
    }
}

fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `dv(row, keys)`: an own value, else a `data-*` value, else an attribute.
fn dv<R: DomRow + ?Sized>(row: &R, keys: &[&str]) -> Option<Value> {
    for key in keys {
        match row.prop(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(v) => return Some(v.clone()),
        }
    }
    if row.has_dataset() {
        for key in keys {
            let found = row
                .dataset(&camel_case(key))
                .filter(|v| !v.is_empty())
                .or_else(|| row.dataset(key).filter(|v| !v.is_empty()));
            if let Some(v) = found {
                return Some(Value::String(v.into_owned()));
            }
        }
    }
    for key in keys {
        let found = row
            .attribute(&format!("data-{}", key.replace('_', "-")))
            .filter(|v| !v.is_empty())
            .or_else(|| row.attribute(key).filter(|v| !v.is_empty()));
        if let Some(v) = found {
            return Some(Value::String(v.into_owned()));
        }
    }
    None
}

fn clean_owned(v: Option<Value>) -> Option<String> {
    Some(js::clean(v.as_ref()).to_owned()).filter(|s| !s.is_empty())
}

/// `bool(v)`: booleans, `0`/`1`, and the words the renderers write.
fn loose_bool(v: Option<&Value>) -> Option<bool> {
    match v {
        Some(Value::Bool(b)) => return Some(*b),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => return Some(false),
        Some(Value::Number(n)) if n.as_f64() == Some(1.0) => return Some(true),
        _ => {}
    }
    match js::clean(v).to_lowercase().as_str() {
        "0" | "false" | "no" | "running" | "pending" => Some(false),
        "1" | "true" | "yes" | "done" | "completed" => Some(true),
        _ => None,
    }
}

/// `status(v)`: lower-cased, spaces and dashes as `_`, terminal aliases resolved.
fn loose_status(v: Option<&Value>) -> Option<String> {
    let lower = js::clean(v).to_lowercase();
    let mut s = String::with_capacity(lower.len());
    let mut run = false;
    for c in lower.chars() {
        if js::is_js_space(c) || c == '-' {
            if !run {
                s.push('_');
            }
            run = true;
        } else {
            s.push(c);
            run = false;
        }
    }
    if s.is_empty() {
        return None;
    }
    if let Some(t) = normalize_terminal_state(&s, None) {
        return Some(t.as_str().to_owned());
    }
    Some(if s == "failure" {
        "error".to_owned()
    } else {
        s
    })
}

fn text_of(v: Option<Value>) -> String {
    js::text(v.as_ref()).into_owned()
}

fn opt_str(s: Option<String>) -> Value {
    s.map_or(Value::Null, Value::String)
}

fn opt_bool(b: Option<bool>) -> Value {
    b.map_or(Value::Null, Value::Bool)
}

/// The comparable summary of one row.
fn summary<R: DomRow + ?Sized>(row: &R, index: usize) -> Map<String, Value> {
    let tool_value = match row.prop("tool") {
        Some(v @ Value::Object(_)) => v.clone(),
        _ => Value::Object(Map::new()),
    };
    let tool = JsonDomRow(&tool_value);
    let text = [
        dv(row, &["text"]),
        dv(row, &["preview"]),
        dv(row, &["summary"]),
        dv(row, &["content"]),
    ]
    .into_iter()
    .map(text_of)
    .find(|t| !t.is_empty())
    .or_else(|| row.text_content().map(Cow::into_owned))
    .unwrap_or_default();
    let or_tool = |own: Option<Value>, keys: &[&str]| {
        if js::truthy(own.as_ref()) {
            own
        } else {
            dv(&tool, keys)
        }
    };
    let nullish_or_tool = |own: Option<Value>, keys: &[&str]| match own {
        None | Some(Value::Null) => dv(&tool, keys),
        some => some,
    };
    let mut m = Map::new();
    m.insert(
        "row_id".into(),
        opt_str(clean_owned(dv(
            row,
            &["row_id", "rowId", "event_id", "eventId", "id"],
        ))),
    );
    m.insert("order_index".into(), json!(index));
    m.insert(
        "declared_order_index".into(),
        dv(row, &["order_index", "orderIndex"]).unwrap_or(Value::Null),
    );
    m.insert(
        "kind".into(),
        opt_str(clean_owned(dv(row, &["kind", "event_type", "type"]))),
    );
    m.insert("role".into(), opt_str(clean_owned(dv(row, &["role"]))));
    m.insert(
        "source_event_type".into(),
        opt_str(clean_owned(dv(
            row,
            &[
                "source_event_type",
                "sourceEventType",
                "event_type",
                "eventType",
            ],
        ))),
    );
    m.insert(
        "display_hint".into(),
        opt_str(clean_owned(dv(row, &["display_hint", "displayHint"]))),
    );
    m.insert(
        "status".into(),
        opt_str(loose_status(dv(row, &["status", "state"]).as_ref())),
    );
    m.insert("text".into(), Value::String(text));
    m.insert(
        "tool_call_id".into(),
        opt_str(clean_owned(or_tool(
            dv(
                row,
                &[
                    "tool_call_id",
                    "toolCallId",
                    "tid",
                    "tool_use_id",
                    "call_id",
                ],
            ),
            &[
                "id",
                "tool_call_id",
                "toolCallId",
                "tid",
                "tool_use_id",
                "call_id",
            ],
        ))),
    );
    m.insert(
        "tool_name".into(),
        opt_str(clean_owned(or_tool(
            dv(row, &["tool_name", "name"]),
            &["name", "tool_name"],
        ))),
    );
    m.insert(
        "tool_done".into(),
        opt_bool(loose_bool(
            nullish_or_tool(dv(row, &["tool_done", "toolDone", "done"]), &["done"]).as_ref(),
        )),
    );
    m.insert(
        "tool_is_error".into(),
        opt_bool(loose_bool(
            nullish_or_tool(
                dv(row, &["tool_is_error", "toolError", "is_error", "isError"]),
                &["is_error", "isError"],
            )
            .as_ref(),
        )),
    );
    m
}

/// The fields compared by default.
pub const DEFAULT_FIELDS: [&str; 8] = [
    "kind",
    "role",
    "source_event_type",
    "status",
    "tool_call_id",
    "tool_name",
    "tool_done",
    "tool_is_error",
];

fn json_text(v: Option<&Value>) -> String {
    let mut out = String::new();
    js::write_json(
        &mut out,
        v.unwrap_or(&Value::Null),
        js::KeyOrder::JsProperty,
    );
    out
}

/// `reconcileAssistantTurnAnchorActivityScene`: compares the scene's rows with `actual`
/// renderer rows and reports `activity_scene_reconciliation_v1` (missing, extra, reordered,
/// duplicated rows and differing fields). `fields` defaults to [`DEFAULT_FIELDS`]; entries are
/// trimmed and de-duplicated.
pub fn reconcile_scene<R: DomRow>(
    scene: &ActivityScene<'_>,
    actual: &[R],
    fields: Option<&[&str]>,
) -> Value {
    let scene_value = serde_json::to_value(scene).unwrap_or(Value::Null);
    let expected_rows: Vec<Value> = scene_value
        .get("activity_rows")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let expected: Vec<Map<String, Value>> = expected_rows
        .iter()
        .enumerate()
        .map(|(i, r)| summary(&JsonDomRow(r), i))
        .collect();
    let actual: Vec<Map<String, Value>> = actual
        .iter()
        .enumerate()
        .map(|(i, r)| summary(r, i))
        .collect();
    let fields: Vec<String> = match fields {
        Some(list) => {
            let mut out: Vec<String> = Vec::new();
            for f in list {
                let f = js::trim(f);
                if !f.is_empty() && !out.iter().any(|o| o == f) {
                    out.push(f.to_owned());
                }
            }
            out
        }
        None => DEFAULT_FIELDS.iter().map(|s| (*s).to_owned()).collect(),
    };

    let id = |s: &Map<String, Value>| s.get("row_id").and_then(Value::as_str).map(str::to_owned);
    let unique = |rows: &[Map<String, Value>]| {
        let ids: Vec<Option<String>> = rows.iter().map(id).collect();
        ids.iter().all(Option::is_some)
            && ids.iter().enumerate().all(|(i, a)| !ids[..i].contains(a))
    };
    let use_row_ids = unique(&expected) && unique(&actual);
    let mut mismatches = Vec::new();
    if expected.len() != actual.len() {
        mismatches.push(json!({"expected_count": expected.len(), "actual_count": actual.len(), "kind": "row_count"}));
    }
    for (i, row) in actual.iter().enumerate() {
        if let Some(rid) = id(row) {
            if actual[..i]
                .iter()
                .any(|earlier| id(earlier).as_deref() == Some(rid.as_str()))
            {
                mismatches.push(
                    json!({"row_id": rid, "index": i, "row": row, "kind": "duplicate_actual_row"}),
                );
            }
        }
    }
    let mut matched = vec![false; actual.len()];
    for (i, exp) in expected.iter().enumerate() {
        let exp_id = id(exp);
        let partner = match (&exp_id, use_row_ids) {
            (Some(rid), true) => actual.iter().position(|a| id(a).as_ref() == Some(rid)),
            _ => (i < actual.len()).then_some(i),
        };
        let Some(j) = partner else {
            mismatches.push(json!({"row_id": exp_id, "expected_index": i, "expected": exp, "kind": "missing_actual_row"}));
            continue;
        };
        matched[j] = true;
        let act = &actual[j];
        if act.get("order_index") != exp.get("order_index") {
            mismatches.push(json!({"row_id": exp_id, "expected_index": i, "actual_index": j, "kind": "order_mismatch"}));
        }
        for field in &fields {
            if !exp.contains_key(field) && !act.contains_key(field) {
                continue;
            }
            let (e, a) = (exp.get(field), act.get(field));
            if json_text(e) != json_text(a) {
                mismatches.push(json!({
                    "row_id": exp_id,
                    "field": field,
                    "expected": e.cloned().unwrap_or(Value::Null),
                    "actual": a.cloned().unwrap_or(Value::Null),
                    "kind": "field_mismatch",
                }));
            }
        }
    }
    if use_row_ids {
        let expected_ids: Vec<Option<String>> = expected.iter().map(id).collect();
        for (j, act) in actual.iter().enumerate() {
            if !matched[j] && !expected_ids.contains(&id(act)) {
                mismatches.push(json!({"row_id": id(act), "actual_index": j, "actual": act, "kind": "unexpected_actual_row"}));
            }
        }
    } else {
        for (j, act) in actual.iter().enumerate().skip(expected.len()) {
            mismatches.push(json!({"row_id": id(act), "actual_index": j, "actual": act, "kind": "unexpected_actual_row"}));
        }
    }
    json!({
        "version": "activity_scene_reconciliation_v1",
        "mode": scene.mode().as_str(),
        "scene_version": crate::SCENE_VERSION,
        "matched": mismatches.is_empty(),
        "summary": {
            "expected_count": expected.len(),
            "actual_count": actual.len(),
            "mismatch_count": mismatches.len(),
        },
        "identity": scene_value.get("identity").cloned().unwrap_or_else(|| json!({"source_message_refs": []})),
        "terminal_state": scene_value.get("terminal_state").cloned().unwrap_or(Value::Null),
        "fields": fields,
        "expected_rows": expected,
        "actual_rows": actual,
        "mismatches": mismatches,
    })
}

fn status_is(status: &Option<String>, set: &[&str]) -> bool {
    status.as_deref().is_some_and(|s| set.contains(&s))
}

/// `createAssistantTurnAnchorRendererSnapshot`: reads rendered rows (transparent event rows,
/// or Worklog thinking and tool cards) back into scene-like rows: `renderer_snapshot_v1`.
pub fn renderer_snapshot<R: DomRow>(
    rows: &[R],
    mode: crate::Mode,
    renderer: Option<&str>,
) -> Value {
    let transparent = mode == crate::Mode::TransparentStream;
    let rows: Vec<Value> = rows
        .iter()
        .enumerate()
        .map(|(index, row)| {
            let q = |sel: &str| row.query_text(sel).map(Cow::into_owned).unwrap_or_default();
            let status = match dv(row, &["status", "state", "event_status", "eventStatus"]) {
                Some(v) => loose_status(Some(&v)),
                None if row.has_class("tool-card-running") => Some("running".to_owned()),
                None => None,
            };
            let done_of = |st: &Option<String>| -> Option<bool> {
                loose_bool(dv(row, &["tool_done", "toolDone", "done"]).as_ref()).or_else(|| {
                    if status_is(st, &["completed", "error", "failed"]) {
                        Some(true)
                    } else if status_is(st, &["running", "pending", "interrupted"]) {
                        Some(false)
                    } else {
                        None
                    }
                })
            };
            let kind_from_type = |t: &str| -> Option<String> {
                Some(match t {
                    "thinking" | "reasoning" => "reasoning".to_owned(),
                    "tool" | "tool_call" | "tool-card" => {
                        if done_of(&status) == Some(true) || status_is(&status, &["completed", "error", "failed"]) {
                            "tool_completed".to_owned()
                        } else {
                            "tool_started".to_owned()
                        }
                    }
                    "compressing" | "compressed" => "lifecycle_status".to_owned(),
                    "done" | "cancel" | "error" | "apperror" => "terminal_status".to_owned(),
                    "" => return None,
                    other => other.to_owned(),
                })
            };
            let ty = clean_owned(dv(row, &["event_type", "eventType", "type"])).unwrap_or_default();
            let tool_name_dv = dv(row, &["tool_name", "toolName", "name"]);
            let kind = clean_owned(dv(row, &["kind"])).or_else(|| {
                if !ty.is_empty() {
                    kind_from_type(&ty)
                } else if transparent {
                    if js::truthy(tool_name_dv.as_ref()) || !q(".tool-card-name").is_empty() {
                        kind_from_type("tool")
                    } else {
                        Some("reasoning".to_owned())
                    }
                } else if row.has_class("wl-reason")
                    || row.has_class("agent-activity-thinking")
                    || row.has_class("thinking-card-row")
                {
                    Some("reasoning".to_owned())
                } else if row.has_class("tool-card-row") {
                    let card = dv(row, &["compression_card", "compressionCard"]).or_else(|| {
                        ["data-compression-card", "compression-card", "compression_card"]
                            .into_iter()
                            .find_map(|a| row.attribute(a).map(|v| Value::String(v.into_owned())))
                    });
                    match card {
                        Some(v) if loose_bool(Some(&v)) != Some(false) => Some("lifecycle_status".to_owned()),
                        _ => kind_from_type("tool"),
                    }
                } else {
                    None
                }
            });
            let kind_enum = kind.as_deref().and_then(Kind::parse);
            let is_tool = kind_enum.is_some_and(Kind::is_tool);
            let source = clean_owned(dv(row, &["source_event_type", "sourceEventType"])).or_else(|| {
                let k = kind.as_deref().unwrap_or("");
                let t = ty.as_str();
                Some(match (t, k) {
                    ("thinking", _) => "reasoning".to_owned(),
                    ("tool", "tool_completed") => "tool_complete".to_owned(),
                    ("tool", _) => "tool".to_owned(),
                    (_, "reasoning") => "reasoning".to_owned(),
                    (_, "tool_started") => "tool".to_owned(),
                    (_, "tool_completed") => "tool_complete".to_owned(),
                    ("", "lifecycle_status") => "compressed".to_owned(),
                    ("", "terminal_status") => "done".to_owned(),
                    (t, "lifecycle_status" | "terminal_status") => t.to_owned(),
                    ("", _) => return None,
                    (t, _) => t.to_owned(),
                })
            });
            let text = ["text", "preview", "summary", "content"]
                .into_iter()
                .map(|k| text_of(dv(row, &[k])))
                .find(|t| !t.is_empty())
                .or_else(|| {
                    [
                        ".transparent-event-preview",
                        ".transparent-event-thinking-preview",
                        ".thinking-card-body pre",
                        ".tool-card-preview",
                        ".tool-card-result pre",
                    ]
                    .into_iter()
                    .map(q)
                    .chain(row.text_content().map(Cow::into_owned))
                    .find(|t| !t.is_empty())
                })
                .unwrap_or_default();
            let first_text = |keys: &[&str]| Some(text_of(dv(row, keys))).filter(|t| !t.is_empty());
            let role = Role::of(kind_enum);
            let role = if kind_enum.is_none() { "activity" } else { role.as_str() };
            json!({
                "row_id": first_text(&["row_id", "rowId", "activity_row_id", "activityRowId", "event_id", "eventId", "anchor_event_id", "anchorEventId", "id"]),
                "order_index": index,
                "kind": kind,
                "role": role,
                "source_event_type": source,
                "status": status,
                "text": text,
                "tool_call_id": if is_tool { first_text(&["tool_call_id", "toolCallId", "tool_use_id", "toolUseId", "call_id", "callId", "tid", "live_tid", "liveTid"]) } else { None },
                "tool_name": if is_tool { first_text(&["tool_name", "toolName", "name"]).or_else(|| Some(q(".tool-card-name")).filter(|t| !t.is_empty())) } else { None },
                "tool_done": if is_tool { done_of(&status) } else { None },
                "tool_is_error": if is_tool {
                    loose_bool(dv(row, &["tool_is_error", "toolError", "is_error", "isError"]).as_ref())
                        .or(Some(status_is(&status, &["error", "failed"])))
                } else { None },
            })
        })
        .collect();
    let renderer = renderer
        .map(js::trim)
        .filter(|r| !r.is_empty())
        .unwrap_or(mode.as_str());
    json!({
        "version": "renderer_snapshot_v1",
        "mode": mode.as_str(),
        "renderer": renderer,
        "row_count": rows.len(),
        "rows": rows,
    })
}

/// `reconcileAssistantTurnAnchorRendererSnapshot`: snapshots `rows` and reconciles the snapshot
/// with the scene of the same mode.
pub fn reconcile_renderer_snapshot<R: DomRow>(
    scene: &ActivityScene<'_>,
    rows: &[R],
    renderer: Option<&str>,
    fields: Option<&[&str]>,
) -> Value {
    let snapshot = renderer_snapshot(rows, scene.mode(), renderer);
    let snapshot_rows: Vec<JsonDomRow<'_>> = snapshot["rows"]
        .as_array()
        .map(|rows| rows.iter().map(JsonDomRow).collect())
        .unwrap_or_default();
    let reconciliation = reconcile_scene(scene, &snapshot_rows, fields);
    json!({
        "version": "renderer_snapshot_reconciliation_v1",
        "mode": snapshot["mode"],
        "renderer": snapshot["renderer"],
        "matched": reconciliation["matched"],
        "snapshot": snapshot,
        "reconciliation": reconciliation,
    })
}
