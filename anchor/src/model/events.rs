//! The activity list: an append-mostly sequence of events stored in fixed-size chunks.
//!
//! A `Vec` doubles by copying everything it holds; on a turn of 100,000 rows that is one
//! copy of tens of megabytes in the middle of a token append (a dropped frame in a browser,
//! a latency spike on the server). Chunks never move once allocated, so an append costs the
//! same at row 100 and at row 100,000.

use std::fmt;
use std::ops::{Index, IndexMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::AnchorEvent;

/// Events per chunk (every chunk but the last is full).
const CHUNK: usize = 256;

/// An ordered list of events with `Vec`-like indexing and appends that never move stored
/// events.
#[derive(Clone, Default, PartialEq)]
pub struct EventList {
    chunks: Vec<Vec<AnchorEvent>>,
    len: usize,
}

impl EventList {
    /// An empty list.
    pub const fn new() -> Self {
        EventList {
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// The number of events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends an event.
    pub fn push(&mut self, event: AnchorEvent) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(event),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(event);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// The event at `index`.
    pub fn get(&self, index: usize) -> Option<&AnchorEvent> {
        (index < self.len).then(|| &self.chunks[index / CHUNK][index % CHUNK])
    }

    /// The event at `index`, mutably.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut AnchorEvent> {
        (index < self.len).then(|| &mut self.chunks[index / CHUNK][index % CHUNK])
    }

    /// The first event.
    pub fn first(&self) -> Option<&AnchorEvent> {
        self.get(0)
    }

    /// The newest event.
    pub fn last(&self) -> Option<&AnchorEvent> {
        self.chunks.last().and_then(|c| c.last())
    }

    /// Removes and returns the event at `index`, shifting later events down by one.
    ///
    /// # Panics
    /// When `index` is out of bounds (like [`Vec::remove`]).
    pub fn remove(&mut self, index: usize) -> AnchorEvent {
        assert!(
            index < self.len,
            "index {index} out of bounds ({})",
            self.len
        );
        let first = index / CHUNK;
        let removed = self.chunks[first].remove(index % CHUNK);
        // Refill each chunk from the front of the next so that all but the last stay full.
        for c in first + 1..self.chunks.len() {
            let moved = self.chunks[c].remove(0);
            self.chunks[c - 1].push(moved);
        }
        if self.chunks.last().is_some_and(Vec::is_empty) {
            self.chunks.pop();
        }
        self.len -= 1;
        removed
    }

    /// The events in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            inner: self.chunks.iter().flatten(),
            remaining: self.len,
        }
    }
}

/// An iterator over an [`EventList`].
#[derive(Clone)]
pub struct Iter<'a> {
    inner: std::iter::Flatten<std::slice::Iter<'a, Vec<AnchorEvent>>>,
    remaining: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a AnchorEvent;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.inner.next()?;
        self.remaining -= 1;
        Some(next)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let next = self.inner.next_back()?;
        self.remaining -= 1;
        Some(next)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a EventList {
    type Item = &'a AnchorEvent;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl Index<usize> for EventList {
    type Output = AnchorEvent;

    fn index(&self, index: usize) -> &AnchorEvent {
        match self.get(index) {
            Some(event) => event,
            None => panic!("index {index} out of bounds ({})", self.len),
        }
    }
}

impl IndexMut<usize> for EventList {
    fn index_mut(&mut self, index: usize) -> &mut AnchorEvent {
        let len = self.len;
        match self.get_mut(index) {
            Some(event) => event,
            None => panic!("index {index} out of bounds ({len})"),
        }
    }
}

impl FromIterator<AnchorEvent> for EventList {
    fn from_iter<I: IntoIterator<Item = AnchorEvent>>(iter: I) -> Self {
        let mut list = EventList::new();
        iter.into_iter().for_each(|e| list.push(e));
        list
    }
}

impl From<Vec<AnchorEvent>> for EventList {
    fn from(events: Vec<AnchorEvent>) -> Self {
        events.into_iter().collect()
    }
}

impl fmt::Debug for EventList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for EventList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for EventList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<AnchorEvent>::deserialize(deserializer).map(EventList::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: usize) -> AnchorEvent {
        AnchorEvent {
            local_id: n.to_string().into(),
            ..AnchorEvent::default()
        }
    }

    fn ids(list: &EventList) -> Vec<String> {
        list.iter().map(|e| e.local_id.to_string()).collect()
    }

    #[test]
    fn behaves_like_a_vec_across_chunk_boundaries() {
        let n = 3 * CHUNK + 7;
        let mut list = EventList::new();
        let mut vec = Vec::new();
        for i in 0..n {
            list.push(event(i));
            vec.push(i.to_string());
        }
        assert_eq!(list.len(), n);
        assert_eq!(ids(&list), vec);
        assert_eq!(list[CHUNK].local_id.as_ref(), CHUNK.to_string());
        assert_eq!(
            list.last().map(|e| e.local_id.to_string()),
            vec.last().cloned()
        );
        assert_eq!(
            list.iter()
                .rev()
                .map(|e| e.local_id.to_string())
                .collect::<Vec<_>>(),
            vec.iter().rev().cloned().collect::<Vec<_>>()
        );
        assert_eq!(list.iter().len(), n);
        assert!(list.get(n).is_none());

        // Removals at a chunk's start, middle and end, and at the very end, keep order and
        // indexing.
        for at in [0, CHUNK - 1, CHUNK, 2 * CHUNK + 3, usize::MAX] {
            let at = at.min(list.len() - 1);
            let removed = list.remove(at);
            assert_eq!(removed.local_id.to_string(), vec.remove(at));
            assert_eq!(ids(&list), vec);
            assert_eq!(list.len(), vec.len());
            for (i, id) in vec.iter().enumerate() {
                assert_eq!(&list[i].local_id.to_string(), id);
            }
        }
        list[5].local_id = "changed".into();
        assert_eq!(list.get(5).map(|e| &*e.local_id), Some("changed"));
    }

    #[test]
    fn removing_the_only_event_of_the_last_chunk_drops_the_chunk() {
        let mut list: EventList = (0..=CHUNK).map(event).collect();
        list.remove(0);
        assert_eq!(list.len(), CHUNK);
        list.push(event(999));
        assert_eq!(list[CHUNK].local_id.as_ref(), "999");
        assert_eq!(list.len(), CHUNK + 1);
    }

    #[test]
    fn serializes_as_a_json_array() {
        let list: EventList = (0..3).map(event).collect();
        let json = serde_json::to_value(&list).unwrap();
        assert_eq!(json.as_array().map(Vec::len), Some(3));
        let back: EventList = serde_json::from_value(json).unwrap();
        assert_eq!(back, list);
    }
}
