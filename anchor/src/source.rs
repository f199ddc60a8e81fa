//! [`SourceEvent`]: an input whose envelope keys were picked out once, when it was built.
//!
//! Normalization reads up to eighteen envelope keys of every input (`type`, `event_id`, `seq`,
//! `payload`, …). Reading them from a JSON object means comparing each of its key strings,
//! which live in their own allocations; for an input that is applied more than once, or that
//! the caller builds from parts anyway (an SSE frame is a type, a data string and an id), the
//! keys can be sorted into their slots once instead. Applying a `SourceEvent` is equivalent to
//! applying the JSON value it came from: same classification, identity, payload and outcome.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::envelope::{input, payload};

/// The number of envelope slots.
const SLOTS: usize = input::LEN;

/// One input event (any shape [`Registry::apply`](crate::Registry::apply)
/// takes), with its envelope keys already in their slots.
///
/// Build one from a JSON value (`SourceEvent::from(value)`, no copy), from a live SSE frame's
/// parts ([`SourceEvent::live_frame`]) or by deserializing JSON text; apply it with
/// [`Registry::apply`](crate::Registry::apply). [`SourceEvent::to_value`] gives the
/// JSON value back.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceEvent(Repr);

#[derive(Clone, Debug, PartialEq)]
enum Repr {
    /// An object.
    Object {
        /// Bit `i`: the object has envelope key `i`.
        present: u32,
        /// The values of the present envelope keys, in slot order.
        values: Box<[Value]>,
        /// Which payload keys (`payload::KEYS`) the object's own `payload` (else `data`) has,
        /// when that is an object.
        payload_keys: u32,
        /// Every other key, sorted, each once.
        rest: Box<[(String, Value)]>,
    },
    /// An array or a scalar, as given (it has no envelope keys).
    Other(Value),
}

/// Envelope values by slot, gathered while reading an object.
struct Slots([Option<Value>; SLOTS]);

impl Slots {
    fn new() -> Self {
        Slots(std::array::from_fn(|_| None))
    }

    /// Puts an object's entry in its slot, or in `rest` when it is not an envelope key (a
    /// repeated envelope key keeps its last value).
    fn put(&mut self, key: &str, value: Value, rest: &mut Vec<(String, Value)>) {
        match input::SET.slot(key) {
            Some(i) => self.0[i] = Some(value),
            None => rest.push((key.to_owned(), value)),
        }
    }

    /// The event; `rest` is sorted by key, each key once.
    fn finish(self, rest: Vec<(String, Value)>) -> SourceEvent {
        let payload_keys = match self.0[input::PAYLOAD]
            .as_ref()
            .or(self.0[input::DATA].as_ref())
        {
            Some(Value::Object(map)) => payload::SET.mask(map),
            _ => 0,
        };
        let mut present = 0u32;
        let mut values = Vec::with_capacity(self.0.iter().flatten().count());
        for (i, value) in self.0.into_iter().enumerate() {
            if let Some(value) = value {
                present |= 1 << i;
                values.push(value);
            }
        }
        SourceEvent(Repr::Object {
            present,
            values: values.into_boxed_slice(),
            payload_keys,
            rest: rest.into_boxed_slice(),
        })
    }
}

impl SourceEvent {
    /// A live SSE frame, `{type, data, lastEventId}`, from its parts: the event name, the data
    /// text as received, and the frame's own `id:` line if it had one.
    pub fn live_frame(kind: &str, data: &str, last_event_id: Option<&str>) -> Self {
        let mut slots = Slots::new();
        let mut rest = Vec::new();
        let text = |s: &str| Value::String(s.to_owned());
        slots.put("type", text(kind), &mut rest);
        slots.put("data", text(data), &mut rest);
        if let Some(id) = last_event_id {
            slots.put("lastEventId", text(id), &mut rest);
        }
        slots.finish(rest)
    }

    /// Asks the CPU to start loading this event's slots, or (`strings`) the first bytes of its
    /// string values, whose addresses are read from the slots (so those should be in cache by
    /// then). The prefetches are hints; on targets without a prefetch instruction they do
    /// nothing.
    pub(crate) fn prefetch(&self, strings: bool) {
        if let Repr::Object { values, .. } = &self.0 {
            if strings {
                for value in values.iter() {
                    if let Value::String(s) = value {
                        prefetch(s.as_ptr());
                    }
                }
            } else {
                let start = values.as_ptr().cast::<u8>();
                let len = std::mem::size_of_val::<[Value]>(values);
                for offset in (0..len).step_by(64) {
                    prefetch(start.wrapping_add(offset));
                }
            }
        }
    }

    /// The envelope values by slot (what normalization reads).
    pub(crate) fn slots(&self) -> [Option<&Value>; SLOTS] {
        let mut found = [None; SLOTS];
        if let Repr::Object {
            present, values, ..
        } = &self.0
        {
            let mut bits = *present;
            for value in values.iter() {
                found[bits.trailing_zeros() as usize] = Some(value);
                bits &= bits - 1;
            }
        }
        found
    }

    /// An object's keys that are not envelope keys (sorted), or the input itself when it is
    /// not an object.
    pub(crate) fn rest(&self) -> Result<&[(String, Value)], &Value> {
        match &self.0 {
            Repr::Object { rest, .. } => Ok(rest),
            Repr::Other(value) => Err(value),
        }
    }

    /// Which of `payload::KEYS` the input's own `payload` (else `data`) object has, by slot.
    pub(crate) fn payload_keys(&self) -> u32 {
        match &self.0 {
            Repr::Object { payload_keys, .. } => *payload_keys,
            Repr::Other(_) => 0,
        }
    }

    /// The JSON value this event stands for.
    pub fn to_value(&self) -> Value {
        match &self.0 {
            Repr::Object {
                present,
                values,
                rest,
                ..
            } => {
                let mut map: Map<String, Value> = rest.iter().cloned().collect();
                let mut bits = *present;
                for value in values.iter() {
                    let key = input::SET.key(bits.trailing_zeros() as usize);
                    map.insert(key.to_owned(), value.clone());
                    bits &= bits - 1;
                }
                Value::Object(map)
            }
            Repr::Other(value) => value.clone(),
        }
    }
}

/// A hint to load the cache line at `at` (any address: a prefetch never faults).
#[inline]
#[allow(unsafe_code)] // The crate's one `unsafe`: see the SAFETY note.
fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 processor has; it reads nothing
    // architecturally and never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

impl From<Value> for SourceEvent {
    fn from(value: Value) -> Self {
        match value {
            Value::Object(map) => {
                let mut slots = Slots::new();
                let mut rest = Vec::new();
                for (key, value) in map {
                    slots.put(&key, value, &mut rest);
                }
                // Each key is there once; a map already iterates sorted unless serde_json's
                // `preserve_order` is on, and then this keeps both constructors alike.
                rest.sort_by(|a, b| a.0.cmp(&b.0));
                slots.finish(rest)
            }
            other => SourceEvent(Repr::Other(other)),
        }
    }
}

impl Serialize for SourceEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

/// A key read straight from the input text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for SourceEvent {
    /// Reads any JSON value; an object's envelope keys go straight to their slots (a repeated
    /// key keeps its last value, as in a JSON object).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SourceVisitor;
        impl<'de> Visitor<'de> for SourceVisitor {
            type Value = SourceEvent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SourceEvent, A::Error> {
                let mut slots = Slots::new();
                let mut rest: Vec<(String, Value)> = Vec::new();
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    slots.put(&key, map.next_value()?, &mut rest);
                }
                // Sorted, and a repeated key keeps its last value.
                rest.reverse();
                rest.sort_by(|a, b| a.0.cmp(&b.0));
                rest.dedup_by(|later, earlier| later.0 == earlier.0);
                Ok(slots.finish(rest))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<SourceEvent, A::Error> {
                let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(SourceEvent(Repr::Other(value)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<SourceEvent, E> {
                Ok(SourceEvent(Repr::Other(Value::Bool(v))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SourceEvent, E> {
                Ok(SourceEvent(Repr::Other(Value::from(v))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SourceEvent, E> {
                Ok(SourceEvent(Repr::Other(Value::from(v))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<SourceEvent, E> {
                Ok(SourceEvent(Repr::Other(Value::from(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SourceEvent, E> {
                Ok(SourceEvent(Repr::Other(Value::String(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<SourceEvent, E> {
                Ok(SourceEvent(Repr::Other(Value::String(v))))
            }
            fn visit_unit<E: de::Error>(self) -> Result<SourceEvent, E> {
                Ok(SourceEvent(Repr::Other(Value::Null)))
            }
            fn visit_none<E: de::Error>(self) -> Result<SourceEvent, E> {
                Ok(SourceEvent(Repr::Other(Value::Null)))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<SourceEvent, D::Error> {
                SourceEvent::deserialize(d)
            }
        }
        d.deserialize_any(SourceVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(text: &str) -> SourceEvent {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value_as_in_a_json_object() {
        let text = r#"{"type":"tool","x":1,"type":"token","x":2,"data":"{}","a":0}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            value,
            json!({"type": "token", "x": 2, "data": "{}", "a": 0})
        );
        assert_eq!(parsed(text), SourceEvent::from(value.clone()));
        assert_eq!(parsed(text).to_value(), value);
    }

    #[test]
    fn a_live_frame_from_its_parts_is_the_frame_object() {
        let frame = SourceEvent::live_frame("token", r#"{"text":"Hi"}"#, Some("run-1:1"));
        let object =
            json!({"type": "token", "data": "{\"text\":\"Hi\"}", "lastEventId": "run-1:1"});
        assert_eq!(frame, SourceEvent::from(object.clone()));
        assert_eq!(frame.to_value(), object);
        let without_id = SourceEvent::live_frame("token", "{}", None);
        assert_eq!(
            without_id.to_value(),
            json!({"type": "token", "data": "{}"})
        );
    }

    #[test]
    fn envelope_keys_go_to_slots_and_the_rest_stays_sorted() {
        let event =
            parsed(r#"{"zeta":1,"event_id":"r:1","alpha":2,"payload":{"seq":3,"text":"x"}}"#);
        let slots = event.slots();
        assert_eq!(slots.iter().flatten().count(), 2);
        let rest = event.rest().unwrap();
        let keys: Vec<&str> = rest.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["alpha", "zeta"]);
        // `seq` is one of the payload keys normalization reads; `text` is not.
        let seq_slot = payload::SEQ;
        assert_eq!(event.payload_keys(), 1 << seq_slot);
    }

    #[test]
    fn arrays_and_scalars_are_kept_as_given() {
        for text in [
            "[1,{\"type\":\"token\"}]",
            "7",
            "-2.5",
            "\"token\"",
            "null",
            "true",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            let event = parsed(text);
            assert_eq!(event, SourceEvent::from(value.clone()));
            assert_eq!(event.to_value(), value);
            assert!(event.slots().iter().all(Option::is_none));
            assert_eq!(event.rest(), Err(&value));
        }
    }

    #[test]
    fn serializes_as_the_value_it_stands_for() {
        let value = json!({"event": "token", "payload": {"text": "hi"}, "version": 1});
        let event = SourceEvent::from(value.clone());
        assert_eq!(serde_json::to_value(&event).unwrap(), value);
    }
}
