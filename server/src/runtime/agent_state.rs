//! An agent's JSON state, as AG-UI agents send it (a snapshot, then RFC 6902 deltas), held to
//! a size: what an operation would add is measured before it is applied, so a delta that
//! copies the whole state into itself (twenty of those would make it a million times larger)
//! is refused at the bound instead of taking the server's memory.

use serde_json::{json, Value};

/// The most bytes the agent's state may take, as JSON (about).
pub const MAX_STATE_BYTES: usize = 1 << 20;

/// The state would pass [`MAX_STATE_BYTES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} MiB", MAX_STATE_BYTES >> 20)]
pub struct TooLarge;

/// The state, and about what it takes.
#[derive(Debug)]
pub struct AgentState {
    value: Value,
    /// Its size as JSON, at least (measured again when it seems too large).
    bytes: usize,
}

impl Default for AgentState {
    /// The empty state a run's input gives the agent.
    fn default() -> Self {
        AgentState {
            value: json!({}),
            bytes: 2,
        }
    }
}

impl AgentState {
    /// The state now.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Takes a snapshot as the whole state.
    pub fn replace(&mut self, snapshot: &Value) -> Result<(), TooLarge> {
        let size = json_size(snapshot, MAX_STATE_BYTES);
        if size > MAX_STATE_BYTES {
            return Err(TooLarge);
        }
        self.value = snapshot.clone();
        self.bytes = size;
        Ok(())
    }

    /// Applies one operation of a delta (one that does not apply is skipped, as AG-UI's
    /// client does); `TooLarge`, applying nothing, when it would pass the bound.
    pub fn patch(&mut self, op: &Value) -> Result<(), TooLarge> {
        let added = match op["op"].as_str() {
            Some("add" | "replace") => op.get("value").map_or(0, |v| json_size(v, MAX_STATE_BYTES)),
            Some("copy") => op["from"]
                .as_str()
                .and_then(|from| self.value.pointer(from))
                .map_or(0, |v| json_size(v, MAX_STATE_BYTES)),
            _ => 0,
        } + op["path"].as_str().map_or(0, str::len);
        if self.bytes + added > MAX_STATE_BYTES {
            // The estimate only grows; measure what the state really takes now.
            self.bytes = json_size(&self.value, MAX_STATE_BYTES);
            if self.bytes + added > MAX_STATE_BYTES {
                return Err(TooLarge);
            }
        }
        if json_patch(&mut self.value, op).is_ok() {
            self.bytes += added;
        }
        Ok(())
    }
}

/// About how many bytes `value` takes as JSON; counting stops a little past `limit` (so that
/// measuring a huge value costs no more than measuring one of the limit's size).
fn json_size(value: &Value, limit: usize) -> usize {
    let mut total = 0usize;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        if total > limit {
            break;
        }
        total += match value {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 8,
            Value::String(s) => s.len() + 2,
            Value::Array(items) => {
                if items.len() <= limit {
                    stack.extend(items.iter());
                }
                2 + items.len()
            }
            Value::Object(map) => {
                if map.len() <= limit {
                    stack.extend(map.values());
                }
                2 + map.keys().map(|k| k.len() + 4).sum::<usize>()
            }
        };
    }
    total
}

/// Applies one RFC 6902 operation (`add`, `remove`, `replace`, `move`, `copy`, `test`).
fn json_patch(doc: &mut Value, op: &Value) -> Result<(), ()> {
    let path = op["path"].as_str().ok_or(())?;
    match op["op"].as_str().ok_or(())? {
        "add" => add(doc, path, op.get("value").cloned().ok_or(())?),
        "remove" => remove(doc, path).map(|_| ()),
        "replace" => {
            let target = doc.pointer_mut(path).ok_or(())?;
            *target = op.get("value").cloned().ok_or(())?;
            Ok(())
        }
        "move" => {
            let from = op["from"].as_str().ok_or(())?;
            let value = remove(doc, from)?;
            add(doc, path, value)
        }
        "copy" => {
            let from = op["from"].as_str().ok_or(())?;
            let value = doc.pointer(from).cloned().ok_or(())?;
            add(doc, path, value)
        }
        "test" => (doc.pointer(path) == op.get("value"))
            .then_some(())
            .ok_or(()),
        _ => Err(()),
    }
}

/// The parent of a JSON pointer and its last token, unescaped.
fn split_pointer(path: &str) -> Result<(&str, String), ()> {
    let at = path.rfind('/').ok_or(())?;
    let token = path[at + 1..].replace("~1", "/").replace("~0", "~");
    Ok((&path[..at], token))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), ()> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, token) = split_pointer(path)?;
    match doc.pointer_mut(parent).ok_or(())? {
        Value::Object(map) => {
            map.insert(token, value);
            Ok(())
        }
        Value::Array(list) => {
            let at = if token == "-" {
                list.len()
            } else {
                token.parse::<usize>().map_err(|_| ())?
            };
            if at > list.len() {
                return Err(());
            }
            list.insert(at, value);
            Ok(())
        }
        _ => Err(()),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, ()> {
    let (parent, token) = split_pointer(path)?;
    match doc.pointer_mut(parent).ok_or(())? {
        Value::Object(map) => map.remove(&token).ok_or(()),
        Value::Array(list) => {
            let at = token.parse::<usize>().map_err(|_| ())?;
            (at < list.len()).then(|| list.remove(at)).ok_or(())
        }
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_deltas_apply_as_rfc_6902_says() {
        let mut doc = json!({"todos": [{"title": "a"}], "n": 1});
        let ops = [
            json!({"op": "add", "path": "/todos/-", "value": {"title": "b"}}),
            json!({"op": "replace", "path": "/todos/0/title", "value": "A"}),
            json!({"op": "copy", "from": "/n", "path": "/m"}),
            json!({"op": "move", "from": "/m", "path": "/k~1x"}),
            json!({"op": "remove", "path": "/n"}),
            json!({"op": "test", "path": "/k~1x", "value": 1}),
        ];
        for op in &ops {
            json_patch(&mut doc, op).unwrap();
        }
        assert_eq!(
            doc,
            json!({"todos": [{"title": "A"}, {"title": "b"}], "k/x": 1})
        );
        // What does not apply changes nothing.
        let before = doc.clone();
        assert!(json_patch(&mut doc, &json!({"op": "remove", "path": "/nope"})).is_err());
        assert!(json_patch(
            &mut doc,
            &json!({"op": "add", "path": "/todos/9", "value": 0})
        )
        .is_err());
        assert!(json_patch(
            &mut doc,
            &json!({"op": "test", "path": "/k~1x", "value": 2})
        )
        .is_err());
        assert!(json_patch(&mut doc, &json!({"op": "jump", "path": "/k~1x"})).is_err());
        assert_eq!(doc, before);
    }

    #[test]
    fn a_state_that_doubles_itself_stops_at_the_bound() {
        let mut state = AgentState::default();
        let snapshot = json!({"a": "x".repeat(1000)});
        state.replace(&snapshot).unwrap();
        let double = json!({"op": "copy", "from": "", "path": "/b"});
        let mut applied = 0;
        let refused = loop {
            // Each copy nests the whole state under a new key.
            let op = json!({"op": "copy", "from": "", "path": format!("/k{applied}")});
            match state.patch(if applied == 0 { &double } else { &op }) {
                Ok(()) => applied += 1,
                Err(e) => break e,
            }
            assert!(applied < 64, "never refused");
        };
        assert_eq!(refused, TooLarge);
        assert!(
            json_size(state.value(), usize::MAX) <= MAX_STATE_BYTES,
            "{applied}"
        );
        assert!(
            applied >= 8,
            "a state of 1 KB doubles about ten times within 1 MiB"
        );
        // Replacing a value again and again is measured again, not refused.
        let mut state = AgentState::default();
        for i in 0..3000 {
            let op = json!({"op": "add", "path": "/v", "value": "y".repeat(1000 + i % 7)});
            assert!(state.patch(&op).is_ok());
        }
        assert!(state.bytes <= MAX_STATE_BYTES);
        assert_eq!(
            state.value()["v"].as_str().map(str::len),
            Some(1000 + 2999 % 7)
        );
    }

    #[test]
    fn sizes_are_counted_up_to_a_little_past_the_limit() {
        assert_eq!(json_size(&json!("abc"), 100), 5);
        assert_eq!(
            json_size(&json!({"k": [1, true]}), 100),
            2 + 5 + 2 + 2 + 8 + 5
        );
        let big = json!(vec!["z".repeat(100); 10_000]);
        let measured = json_size(&big, 100_000);
        assert!(measured > 100_000 && measured < 100_300, "{measured}");
        // A list longer than the limit is not walked at all.
        assert!(json_size(&json!(vec![0; 5000]), 1000) > 1000);
    }
}
