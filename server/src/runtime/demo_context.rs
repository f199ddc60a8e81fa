//! The demo agent's pretend context window: so that the composer's meter shows, fills and
//! warns with the demo as it does with a real model.

use app::api::ContextUse;

use super::ChatMessage;

/// The window the demo agent says its model has, in tokens.
pub const WINDOW: u64 = 16_384;

/// What the demo agent keeps free for its answer.
const RESERVE: u64 = WINDOW / 8;

/// The instructions every request would carry.
const INSTRUCTIONS: u64 = 200;

/// The tokens of a message of `bytes` bytes, as the estimate for real models counts them:
/// about four bytes a token, and a few for the message itself.
fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4) + 4
}

/// How much of the window a request with `history` and a message of `draft_bytes` bytes would
/// use: the newest messages that fit, the oldest left out past the room for the answer.
pub fn pretend_use(history: &[ChatMessage], draft_bytes: usize) -> ContextUse {
    let room = WINDOW - RESERVE;
    let messages = history.len() as u64;
    let mut used = INSTRUCTIONS + tokens(draft_bytes);
    if used > room {
        return ContextUse {
            window: Some(WINDOW),
            used,
            reserve: RESERVE,
            messages,
            left_out: messages,
            too_long: true,
        };
    }
    let mut kept = 0u64;
    for message in history.iter().rev() {
        let more = tokens(message.content.len());
        if used + more > room {
            break;
        }
        used += more;
        kept += 1;
    }
    ContextUse {
        window: Some(WINDOW),
        used,
        reserve: RESERVE,
        messages,
        left_out: messages - kept,
        too_long: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Role;

    fn said(bytes: usize) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: "x".repeat(bytes),
            attachments: Vec::new(),
        }
    }

    #[test]
    fn the_meter_fills_with_the_conversation_and_leaves_out_the_oldest_past_the_room() {
        let empty = pretend_use(&[], 0);
        assert_eq!(empty.window, Some(WINDOW));
        assert_eq!(empty.left_out, 0);
        let some = pretend_use(&[said(4_000), said(4_000)], 400);
        assert!(some.used > empty.used + 2_000, "{some:?}");
        assert_eq!(some.left_out, 0);
        // Past the room kept for the answer, the oldest go first.
        let long = pretend_use(&[said(40_000), said(20_000), said(20_000)], 0);
        assert_eq!(long.left_out, 1, "{long:?}");
        assert!(long.used <= WINDOW - RESERVE);
        // A message that cannot fit alone says so.
        let too_long = pretend_use(&[said(10)], 70_000);
        assert!(too_long.too_long);
        assert_eq!(too_long.left_out, 1);
    }
}
