//! The registry's identity memory. A key is kept in a form that shares the event's own id where
//! it can, so remembering a journaled event costs no extra string.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use indexmap::{Equivalent, IndexSet};
use rustc_hash::FxBuildHasher;

use crate::js;

/// An accepted identity. Two keys are equal exactly when their strings are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DedupeKey {
    /// `event_id:"<id>"`, holding the id itself.
    EventId(Arc<str>),
    /// Any other key (`run_seq:[…]`, `local:[…]`), as its string.
    Rendered(Arc<str>),
}

impl DedupeKey {
    /// Reads a key string back (as stored in a serialized registry).
    pub fn parse(key: &str) -> DedupeKey {
        if let Some(quoted) = key.strip_prefix("event_id:") {
            if let Ok(id) = serde_json::from_str::<String>(quoted) {
                let mut rendered = String::with_capacity(key.len());
                rendered.push_str("event_id:");
                js::write_json_string(&mut rendered, &id);
                if rendered == key {
                    return DedupeKey::EventId(Arc::from(id));
                }
            }
        }
        DedupeKey::Rendered(Arc::from(key))
    }

    pub(crate) fn key_ref(&self) -> KeyRef<'_> {
        match self {
            DedupeKey::EventId(id) => KeyRef::EventId(id),
            DedupeKey::Rendered(s) => KeyRef::Rendered(s),
        }
    }
}

impl fmt::Display for DedupeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DedupeKey::EventId(id) => {
                let mut out = String::with_capacity(id.len() + 11);
                out.push_str("event_id:");
                js::write_json_string(&mut out, id);
                f.write_str(&out)
            }
            DedupeKey::Rendered(s) => f.write_str(s),
        }
    }
}

impl serde::Serialize for DedupeKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for DedupeKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(DedupeKey::parse(&s))
    }
}

/// A borrowed key, for lookups without building a [`DedupeKey`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum KeyRef<'a> {
    EventId(&'a str),
    Rendered(&'a str),
}

impl Hash for KeyRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            KeyRef::EventId(s) => {
                state.write_u8(0);
                s.hash(state);
            }
            KeyRef::Rendered(s) => {
                state.write_u8(1);
                s.hash(state);
            }
        }
    }
}

impl Hash for DedupeKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key_ref().hash(state);
    }
}

impl Equivalent<DedupeKey> for KeyRef<'_> {
    fn equivalent(&self, key: &DedupeKey) -> bool {
        match (self, key) {
            (KeyRef::EventId(a), DedupeKey::EventId(b)) => *a == &**b,
            (KeyRef::Rendered(a), DedupeKey::Rendered(b)) => *a == &**b,
            _ => false,
        }
    }
}

/// Accepted keys in acceptance order, with constant-time membership.
///
/// Journaled events of the anchor's own run have ids `<run>:<seq>`; those are remembered as one
/// bit per sequence number, which keeps lookups in cache however long the turn grows. Every
/// other key lives in a hash set.
#[derive(Clone, Debug, Default)]
pub(crate) struct DedupeSet {
    // Invariant: every accepted key exactly once, in acceptance order.
    order: Vec<DedupeKey>,
    // Invariant: no key here is `<run>:<n>` for the current `run` with `n` below `MAX_SEQ_BIT`.
    others: IndexSet<DedupeKey, FxBuildHasher>,
    run: Option<Arc<str>>,
    seqs: Vec<u64>,
}

/// Sequence numbers at or above this go to the hash set (bounds the bitmap at 2 MiB).
const MAX_SEQ_BIT: u64 = 1 << 24;

impl PartialEq for DedupeSet {
    fn eq(&self, other: &Self) -> bool {
        self.order == other.order
    }
}

impl DedupeSet {
    /// The bit for an event id of the current run, if it is one.
    fn seq_bit(&self, event_id: &str) -> Option<u64> {
        let run = self.run.as_deref()?;
        let tail = event_id.strip_prefix(run)?.strip_prefix(':')?;
        let b = tail.as_bytes();
        let canonical = !b.is_empty()
            && b.len() <= 8
            && b.iter().all(u8::is_ascii_digit)
            && (b[0] != b'0' || b.len() == 1);
        if !canonical {
            return None;
        }
        tail.parse::<u64>().ok().filter(|n| *n < MAX_SEQ_BIT)
    }

    fn has_bit(&self, n: u64) -> bool {
        self.seqs
            .get((n / 64) as usize)
            .is_some_and(|w| w & (1 << (n % 64)) != 0)
    }

    fn set_bit(&mut self, n: u64) {
        let word = (n / 64) as usize;
        if self.seqs.len() <= word {
            self.seqs.resize(word + 1, 0);
        }
        self.seqs[word] |= 1 << (n % 64);
    }

    /// Whether `key` was accepted.
    pub(crate) fn contains(&self, key: KeyRef<'_>) -> bool {
        match key {
            KeyRef::EventId(id) => match self.seq_bit(id) {
                Some(n) => self.has_bit(n),
                None => self.others.contains(&key),
            },
            KeyRef::Rendered(_) => self.others.contains(&key),
        }
    }

    /// Remembers a key that is not yet remembered.
    pub(crate) fn insert(&mut self, key: DedupeKey) {
        match key.key_ref() {
            KeyRef::EventId(id) if self.seq_bit(id).is_some() => {
                let n = self.seq_bit(id).unwrap_or_default();
                self.set_bit(n);
            }
            _ => {
                self.others.insert(key.clone());
            }
        }
        self.order.push(key);
    }

    /// Tells the set which run the anchor belongs to (once it is known).
    pub(crate) fn set_run(&mut self, run: &Arc<str>) {
        if self.run.as_deref() == Some(&**run) {
            return;
        }
        self.run = Some(Arc::clone(run));
        self.seqs.clear();
        let others = std::mem::take(&mut self.others);
        for key in others {
            match key.key_ref() {
                KeyRef::EventId(id) if self.seq_bit(id).is_some() => {
                    let n = self.seq_bit(id).unwrap_or_default();
                    self.set_bit(n);
                }
                _ => {
                    self.others.insert(key);
                }
            }
        }
    }

    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &DedupeKey> {
        self.order.iter()
    }

    pub(crate) fn contains_str(&self, key: &str) -> bool {
        self.contains(DedupeKey::parse(key).key_ref())
    }

    /// Rebuilds the set from keys in acceptance order.
    pub(crate) fn from_keys(keys: Vec<DedupeKey>, run: Option<&Arc<str>>) -> Self {
        let mut set = DedupeSet::default();
        if let Some(run) = run {
            set.set_run(run);
        }
        for key in keys {
            if !set.contains(key.key_ref()) {
                set.insert(key);
            }
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_their_strings() {
        for s in [
            r#"event_id:"run-1:2""#,
            r#"event_id:"ré:1\"q""#,
            r#"run_seq:["a","1"]"#,
            "local:[\"s\",\"token\",\"l\",\"2\"]",
        ] {
            assert_eq!(DedupeKey::parse(s).to_string(), s);
        }
        assert!(matches!(
            DedupeKey::parse(r#"event_id:"x""#),
            DedupeKey::EventId(_)
        ));
        // A key in another escaping is kept verbatim, never confused with the canonical one.
        assert!(matches!(
            DedupeKey::parse("event_id:\"\\u0041\""),
            DedupeKey::Rendered(_)
        ));
    }

    #[test]
    fn borrowed_lookups_find_owned_keys() {
        let mut set = DedupeSet::default();
        set.insert(DedupeKey::EventId(Arc::from("r:1")));
        set.insert(DedupeKey::Rendered(Arc::from("run_seq:[\"r\",\"2\"]")));
        assert!(set.contains(KeyRef::EventId("r:1")));
        assert!(set.contains(KeyRef::Rendered("run_seq:[\"r\",\"2\"]")));
        assert!(!set.contains(KeyRef::Rendered("event_id:\"r:1\"")));
        assert!(set.contains_str("event_id:\"r:1\""));
    }

    #[test]
    fn ids_of_the_run_move_to_the_bitmap_and_stay_found() {
        let mut set = DedupeSet::default();
        set.insert(DedupeKey::EventId(Arc::from("r:1")));
        set.insert(DedupeKey::EventId(Arc::from("r:01")));
        set.insert(DedupeKey::EventId(Arc::from("other:2")));
        set.set_run(&Arc::from("r"));
        set.insert(DedupeKey::EventId(Arc::from("r:3")));
        set.insert(DedupeKey::EventId(Arc::from("r:99999999999")));
        for id in ["r:1", "r:01", "other:2", "r:3", "r:99999999999"] {
            assert!(set.contains(KeyRef::EventId(id)), "{id}");
        }
        for id in ["r:2", "r:0", "r:001", "r:", "r:1:1", "other:1"] {
            assert!(!set.contains(KeyRef::EventId(id)), "{id}");
        }
        let order: Vec<String> = set.iter().map(ToString::to_string).collect();
        assert_eq!(order.len(), 5);
        assert_eq!(order[0], "event_id:\"r:1\"");
        assert!(
            !set.others.contains(&KeyRef::EventId("r:1")),
            "moved to the bitmap"
        );
    }
}
