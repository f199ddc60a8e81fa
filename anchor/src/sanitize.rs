//! Payload sanitizing: containers nest at most five levels below the payload root,
//! prototype-polluting keys are dropped, and nothing else changes.
//!
//! JSON has no functions, symbols, dates or `undefined`, so of the reference's rules only the
//! depth limit and the unsafe keys can apply to our inputs. Key order is not kept in the value
//! (maps are sorted); writers sort keys by UTF-16 code units when order matters.

use serde_json::{Map, Value};

/// Containers at this depth or deeper become [`MAX_DEPTH_MARKER`].
pub(crate) const MAX_DEPTH: usize = 6;
/// What a too-deep container is replaced with.
pub(crate) const MAX_DEPTH_MARKER: &str = "[MaxDepth]";
/// Keys never copied into a payload.
pub(crate) const UNSAFE_KEYS: [&str; 3] = ["__proto__", "constructor", "prototype"];

pub(crate) fn is_unsafe_key(key: &str) -> bool {
    UNSAFE_KEYS.contains(&key)
}

/// Sanitizes `value`, which sits at `depth` below the payload root, in place.
pub(crate) fn sanitize_in_place(value: &mut Value, depth: usize) {
    match value {
        Value::Array(_) | Value::Object(_) if depth >= MAX_DEPTH => {
            *value = Value::String(MAX_DEPTH_MARKER.to_owned());
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| sanitize_in_place(v, depth + 1)),
        Value::Object(map) => sanitize_map_in_place(map, depth),
        _ => {}
    }
}

/// Sanitizes an object's entries in place; the object itself sits at `depth`.
pub(crate) fn sanitize_map_in_place(map: &mut Map<String, Value>, depth: usize) {
    if UNSAFE_KEYS.iter().any(|k| map.contains_key(*k)) {
        map.retain(|k, _| !is_unsafe_key(k));
    }
    map.values_mut()
        .for_each(|v| sanitize_in_place(v, depth + 1));
}

/// A sanitized copy of `value`, which sits at `depth` below the payload root.
pub(crate) fn sanitized(value: &Value, depth: usize) -> Value {
    match value {
        Value::Array(_) | Value::Object(_) if depth >= MAX_DEPTH => {
            Value::String(MAX_DEPTH_MARKER.to_owned())
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| sanitized(v, depth + 1)).collect())
        }
        Value::Object(map) => Value::Object(sanitized_map(map, depth)),
        other => other.clone(),
    }
}

/// A sanitized copy of an object's entries; the object itself sits at `depth`.
pub(crate) fn sanitized_map(map: &Map<String, Value>, depth: usize) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| !is_unsafe_key(k))
        .map(|(k, v)| (k.clone(), sanitized(v, depth + 1)))
        .collect()
}

/// `sanitize(v)` at the payload root: a sanitized copy of any JSON value.
#[cfg(feature = "parity")]
pub fn sanitize(value: &Value) -> Value {
    sanitized(value, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deep_containers_become_markers_five_levels_down() {
        let v = json!({"deep": {"n": {"n": {"n": {"n": {"n": {"n": 1}}}}}}});
        assert_eq!(
            sanitized(&v, 0),
            json!({"deep": {"n": {"n": {"n": {"n": {"n": "[MaxDepth]"}}}}}})
        );
    }

    #[test]
    fn unsafe_keys_are_dropped_at_every_level() {
        let mut v = json!({"a": {"__proto__": {"x": 1}, "b": [{"constructor": 1, "c": 2}]}, "prototype": 1});
        sanitize_in_place(&mut v, 0);
        assert_eq!(v, json!({"a": {"b": [{"c": 2}]}}));
    }
}
