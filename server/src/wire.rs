//! The SSE wire format of a journaled event, in one place: the journal stores each row's frame
//! as it will be sent, replays send the stored text, and live followers get the same bytes.

/// One frame: `id: run:seq` (what a browser sends back as `Last-Event-ID`), `event:` the
/// event kind's name, `data:` the payload as compact JSON (never a raw line break), and the
/// blank line that ends it.
pub fn encode_frame(run_id: &str, seq: u64, kind: &str, payload_json: &str) -> String {
    format!("id: {run_id}:{seq}\nevent: {kind}\ndata: {payload_json}\n\n")
}

/// Whether the last frame of a buffer of frames is `stream_end` (the run's stream is over).
pub fn ends_with_stream_end(sse: &str) -> bool {
    let body = sse.trim_end_matches('\n');
    body.rfind("\nevent: ")
        .and_then(|i| body[i + 8..].split('\n').next())
        .is_some_and(|kind| kind == anchor::EventKind::StreamEnd.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_one_event_with_its_resume_id() {
        let payload = serde_json::json!({"text": "two\nlines"}).to_string();
        let frame = encode_frame("run-1", 7, "token", &payload);
        assert_eq!(
            frame,
            "id: run-1:7\nevent: token\ndata: {\"text\":\"two\\nlines\"}\n\n"
        );
        // Exactly one blank line, at the end: the payload's line break stays escaped.
        assert_eq!(frame.matches("\n\n").count(), 1);
        assert!(frame.ends_with("\n\n"));
    }

    #[test]
    fn the_end_of_a_replay_page_is_recognized_by_its_last_frame() {
        let token = encode_frame("r", 1, "token", "{}");
        let end = encode_frame("r", 2, "stream_end", "{}");
        assert!(ends_with_stream_end(&(token.clone() + &end)));
        assert!(!ends_with_stream_end(&(end + &token)));
        // The name inside a payload is not the frame's kind.
        let inside = encode_frame("r", 1, "token", r#"{"text":"event: stream_end"}"#);
        assert!(!ends_with_stream_end(&inside));
        assert!(!ends_with_stream_end(""));
    }
}
