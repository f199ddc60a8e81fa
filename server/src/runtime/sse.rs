//! A decoder for `text/event-stream` bodies read from upstream servers.
//!
//! Bytes arrive in arbitrary pieces: a line, a UTF-8 character or a `\r\n` pair may be split
//! across two reads. The decoder only decodes whole lines, so a multi-byte character is never
//! cut in half.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when present.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Turns chunks of bytes into events.
#[derive(Debug, Default)]
pub struct SseDecoder {
    started: bool,
    pending: Vec<u8>,
    // How much of `pending` is known to hold no line end (not searched again).
    scanned: usize,
    event: Option<String>,
    data: String,
    has_data: bool,
}

/// The largest event accepted, in bytes: its `data:` lines together, or one line of any
/// field. An upstream that sends more (or a line that never ends) is an error, not memory
/// that grows as long as it sends.
pub const MAX_EVENT: usize = 4 << 20;

/// What went wrong while decoding.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// An event (or a line) grew past [`MAX_EVENT`].
    #[error("an event of the stream passed {} MiB, the most one event may be", MAX_EVENT >> 20)]
    EventTooLarge,
}

impl SseDecoder {
    /// Feeds bytes; returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        self.pending.extend_from_slice(bytes);
        if !self.started {
            if self.pending.len() < BOM.len() && BOM.starts_with(&self.pending) {
                return Ok(Vec::new());
            }
            if self.pending.starts_with(BOM) {
                self.pending.drain(..BOM.len());
            }
            self.started = true;
        }
        let mut out = Vec::new();
        let mut start = 0;
        let mut from = self.scanned;
        // Lines end in CRLF, LF or a lone CR.
        while let Some(offset) = self.pending[from..]
            .iter()
            .position(|b| *b == b'\n' || *b == b'\r')
        {
            let end = from + offset;
            let next = match (self.pending[end], self.pending.get(end + 1)) {
                (b'\r', Some(b'\n')) => end + 2,
                // A CR at the end of what arrived: its LF may be in the next read.
                (b'\r', None) => break,
                _ => end + 1,
            };
            let line = String::from_utf8_lossy(&self.pending[start..end]).into_owned();
            if let Some(event) = self.line(&line)? {
                out.push(event);
            }
            start = next;
            from = next;
        }
        self.pending.drain(..start);
        // What is left holds no line end but, perhaps, a CR waiting for its LF.
        self.scanned = self.pending.len().saturating_sub(1);
        if self.pending.len() + self.data.len() > MAX_EVENT {
            return Err(SseError::EventTooLarge);
        }
        Ok(out)
    }

    /// The event left when the stream ends without a final blank line, if any.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.pending.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            let line = line.strip_suffix('\r').unwrap_or(&line).to_owned();
            if let Ok(Some(event)) = self.line(&line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Result<Option<SseEvent>, SseError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT {
                    return Err(SseError::EventTooLarge);
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
        })
    }
}

/// Why reading an upstream event stream stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The connection failed or was dropped.
    #[error("the connection was lost: {0}")]
    Transport(String),
    /// Nothing arrived for too long.
    #[error("no data for {}", show(*.0))]
    Idle(Duration),
    /// The stream was not a valid event stream.
    #[error(transparent)]
    Decode(#[from] SseError),
}

fn show(d: Duration) -> String {
    if d.as_secs() >= 1 && d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// Reads events from a response body, one at a time.
pub struct EventReader {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    decoder: SseDecoder,
    ready: std::collections::VecDeque<SseEvent>,
    idle: Duration,
    /// The silence allowed before the first bytes (a model thinking before it answers).
    first: Duration,
    /// Whether any bytes came yet.
    started: bool,
    ended: bool,
}

impl EventReader {
    /// Reads `response`'s body; waiting longer than `idle` for bytes is an error.
    pub fn new(response: reqwest::Response, idle: Duration) -> Self {
        EventReader {
            body: Box::pin(response.bytes_stream()),
            decoder: SseDecoder::default(),
            ready: Default::default(),
            idle,
            first: idle,
            started: false,
            ended: false,
        }
    }

    /// Allows `first` of silence before the first bytes instead (at least `idle`).
    pub fn first_within(mut self, first: Duration) -> Self {
        self.first = first.max(self.idle);
        self
    }

    /// The next event; `Ok(None)` when the body ended.
    pub async fn next(&mut self) -> Result<Option<SseEvent>, ReadError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            let wait = if self.started { self.idle } else { self.first };
            match tokio::time::timeout(wait, self.body.next()).await {
                Err(_) => return Err(ReadError::Idle(wait)),
                Ok(Some(Ok(bytes))) => {
                    self.started = true;
                    self.ready.extend(self.decoder.push(&bytes)?);
                }
                Ok(Some(Err(e))) => return Err(ReadError::Transport(e.to_string())),
                Ok(None) => {
                    self.ended = true;
                    self.ready.extend(self.decoder.finish());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::default();
        let mut out = Vec::new();
        for p in pieces {
            out.extend(d.push(p).unwrap());
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn multibyte_characters_split_across_reads_arrive_whole() {
        let text = "data: {\"t\":\"héllo 🌍\"}\n\n".as_bytes();
        // Split inside the é and inside the emoji.
        let e = text.iter().position(|b| *b == 0xC3).unwrap() + 1;
        let g = text.iter().position(|b| *b == 0xF0).unwrap() + 2;
        let events = feed(&[&text[..e], &text[e..g], &text[g..]]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "{\"t\":\"héllo 🌍\"}");
    }

    #[test]
    fn fields_comments_crlf_and_multiline_data() {
        let events = feed(&[
            b": keepalive\r\n",
            b"event: message.delta\r\ndata: a\r",
            b"\ndata: b\r\n\r\n",
            b"data:no-space\n\ndata: [DONE]",
        ]);
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: Some("message.delta".into()),
                    data: "a\nb".into()
                },
                SseEvent {
                    event: None,
                    data: "no-space".into()
                },
                SseEvent {
                    event: None,
                    data: "[DONE]".into()
                },
            ]
        );
    }

    #[test]
    fn a_byte_order_mark_and_lone_carriage_returns_are_understood() {
        let events = feed(&[
            b"\xEF\xBB",
            b"\xBFdata: one\r\r",
            b"data: two\r",
            b"\ndata: x\r\n\r\n",
        ]);
        assert_eq!(
            events.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(),
            ["one", "two\nx"]
        );
    }

    #[test]
    fn an_event_that_never_ends_is_an_error_not_memory() {
        // Many short data lines with no blank line: each line is small, the event is not.
        let mut d = SseDecoder::default();
        let line = format!("data: {}\n", "x".repeat(1000));
        let mut fed = 0;
        let refused = loop {
            match d.push(line.as_bytes()) {
                Ok(events) => assert!(events.is_empty()),
                Err(e) => break e,
            }
            fed += line.len();
            assert!(fed <= 2 * MAX_EVENT, "never refused");
        };
        assert_eq!(refused, SseError::EventTooLarge);
        // One line that never ends, fed in small pieces.
        let mut d = SseDecoder::default();
        d.push(b"data: ").unwrap();
        let piece = vec![b'y'; 64 * 1024];
        let mut refused = None;
        for _ in 0..(MAX_EVENT / piece.len() + 2) {
            if let Err(e) = d.push(&piece) {
                refused = Some(e);
                break;
            }
        }
        assert_eq!(refused, Some(SseError::EventTooLarge));
        // An event just under the bound still arrives whole.
        let mut d = SseDecoder::default();
        let big = "z".repeat(MAX_EVENT - 16);
        let events = d.push(format!("data: {big}\n\n").as_bytes()).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data.len(), big.len());
    }

    #[test]
    fn a_line_end_split_between_reads_is_found() {
        let events = feed(&[b"data: a", b"bc", b"\r", b"\n", b"\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "abc");
    }

    #[test]
    fn an_event_name_without_data_dispatches_nothing() {
        assert!(feed(&[b"event: ping\n\n"]).is_empty());
    }
}
