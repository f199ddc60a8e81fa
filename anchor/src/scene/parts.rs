//! The parts a row of the scene is made of, each with the shape it serializes to: its id, its
//! group, its reasoning text and its tool call.

use super::*;

/// A row id; displays as the reference's string.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowId<'a> {
    /// The journal event id.
    Event(&'a str),
    /// `run_id:seq`.
    RunSeq(&'a str, &'a Seq),
    /// `local_id:source_type:index`.
    Local(&'a str, &'a str, usize),
    /// `activity:index`.
    Index(usize),
}

impl fmt::Display for RowId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowId::Event(id) => f.write_str(id),
            RowId::RunSeq(run, seq) => write!(f, "{run}:{seq}"),
            RowId::Local(local, ty, i) => write!(f, "{local}:{ty}:{i}"),
            RowId::Index(i) => write!(f, "activity:{i}"),
        }
    }
}

impl Serialize for RowId<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A row's grouping: segment, burst, assistant message, event or position.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Group<'a> {
    /// The group key.
    pub key: GroupKey<'a>,
    /// The activity burst, when given.
    pub activity_burst_id: Option<&'a Value>,
    /// The activity segment, when given.
    pub activity_segment_seq: Option<&'a Value>,
    /// The assistant message index, when given.
    pub assistant_msg_idx: Option<&'a Value>,
}

/// What a group key is made of; displays as `segment:3`, `burst:B2`, `event:7`, ….
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GroupKey<'a> {
    /// `segment:<activitySegmentSeq>`.
    Segment(&'a Value),
    /// `burst:<activityBurstId>`.
    Burst(&'a Value),
    /// `assistant:<assistant_msg_idx>`.
    Message(&'a Value),
    /// `event:<seq>`.
    Event(&'a Seq),
    /// `activity:<index>`.
    Index(usize),
}

impl fmt::Display for GroupKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupKey::Segment(v) => write!(f, "segment:{}", js::to_js_string(v)),
            GroupKey::Burst(v) => write!(f, "burst:{}", js::to_js_string(v)),
            GroupKey::Message(v) => write!(f, "assistant:{}", js::to_js_string(v)),
            GroupKey::Event(seq) => write!(f, "event:{seq}"),
            GroupKey::Index(i) => write!(f, "activity:{i}"),
        }
    }
}

impl Serialize for Group<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Group", 4)?;
        st.serialize_field("group_key", &self.key.to_string())?;
        st.serialize_field("activity_burst_id", &self.activity_burst_id)?;
        st.serialize_field("activity_segment_seq", &self.activity_segment_seq)?;
        st.serialize_field("assistant_msg_idx", &self.assistant_msg_idx)?;
        st.end()
    }
}

/// Reasoning text; its preview and dedupe key are derived on demand.
#[derive(Clone, Debug, PartialEq)]
pub struct Thinking<'a> {
    /// The reasoning text as written.
    pub text: Cow<'a, str>,
}

/// Previews longer than this many UTF-16 units are cut.
const PREVIEW_LIMIT: usize = 180;
const PREVIEW_KEEP: usize = 177;

impl Thinking<'_> {
    /// The text on one line: every whitespace run collapsed to a space, trimmed.
    pub fn collapsed(&self) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut pending_space = false;
        for c in js::trim(&self.text).chars() {
            if js::is_js_space(c) {
                pending_space = true;
            } else {
                if pending_space {
                    out.push(' ');
                    pending_space = false;
                }
                out.push(c);
            }
        }
        out
    }

    /// The collapsed text, cut to 177 UTF-16 units plus `...` when longer than 180.
    ///
    /// Where the cut would split a surrogate pair, the reference keeps half of it; a Rust
    /// string cannot hold half a character, so the whole pair is dropped there.
    pub fn preview(&self) -> String {
        let collapsed = self.collapsed();
        if js::utf16_len(&collapsed) <= PREVIEW_LIMIT {
            return collapsed;
        }
        let mut units = 0;
        let mut end = 0;
        for (i, c) in collapsed.char_indices() {
            if units + c.len_utf16() > PREVIEW_KEEP {
                break;
            }
            units += c.len_utf16();
            end = i + c.len_utf8();
        }
        let mut preview = collapsed[..end].to_owned();
        preview.push_str("...");
        preview
    }

    /// `thinking:<collapsed text, lower-cased>`, or `""` when there is no text.
    pub fn dedupe_key(&self) -> String {
        let collapsed = self.collapsed();
        if collapsed.is_empty() {
            String::new()
        } else {
            format!("thinking:{}", collapsed.to_lowercase())
        }
    }
}

impl Serialize for Thinking<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Thinking", 3)?;
        st.serialize_field("text", &self.text)?;
        st.serialize_field("preview", &self.preview())?;
        st.serialize_field("dedupe_key", &self.dedupe_key())?;
        st.end()
    }
}

/// A tool call as one row shows it. Start, update and completion stay separate rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool<'a> {
    /// The tool call id.
    pub id: Option<Cow<'a, str>>,
    /// The tool's name (`tool` when unnamed).
    pub name: &'a str,
    /// The arguments (`None` is shown as `{}`).
    pub args: Option<&'a Value>,
    /// A one-line preview (live servers put the result snippet here).
    pub preview: Cow<'a, str>,
    /// A result snippet.
    pub snippet: Cow<'a, str>,
    /// The structured result.
    pub result: Option<&'a Value>,
    /// The raw output.
    pub output: Option<&'a Value>,
    /// The call has finished.
    pub done: bool,
    /// The call failed.
    pub is_error: bool,
    /// The result is a diff.
    pub is_diff: bool,
    /// How long it took.
    pub duration: Option<&'a Value>,
    /// When it started.
    pub started_at: Option<&'a Value>,
}

static EMPTY_ARGS: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| Value::Object(Map::new()));

impl<'a> Tool<'a> {
    /// The arguments, `{}` when there are none.
    pub fn args(&self) -> &'a Value {
        self.args.unwrap_or(&EMPTY_ARGS)
    }

    /// `name|id|JSON(args)`: what identifies the call for display deduplication.
    pub fn signature(&self) -> String {
        let mut out = String::new();
        out.push_str(self.name);
        out.push('|');
        out.push_str(self.id.as_deref().unwrap_or(""));
        out.push('|');
        js::write_json(&mut out, self.args(), js::KeyOrder::JsProperty);
        out
    }
}

impl Serialize for Tool<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_map(None)?;
        st.serialize_entry("id", &self.id)?;
        st.serialize_entry("name", self.name)?;
        st.serialize_entry("args", self.args())?;
        st.serialize_entry("preview", &self.preview)?;
        st.serialize_entry("snippet", &self.snippet)?;
        st.serialize_entry("result", &self.result)?;
        st.serialize_entry("output", &self.output)?;
        st.serialize_entry("done", &self.done)?;
        st.serialize_entry("is_error", &self.is_error)?;
        if self.is_diff {
            st.serialize_entry("is_diff", &true)?;
        }
        st.serialize_entry("duration", &self.duration)?;
        st.serialize_entry("started_at", &self.started_at)?;
        st.serialize_entry("signature", &self.signature())?;
        st.end()
    }
}
