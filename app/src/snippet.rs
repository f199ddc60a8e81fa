//! Search hits in context: the words a conversation matched, cut from its message (by the
//! server) and marked where they match (by the sidebar).

/// Characters kept before the match.
const BEFORE: usize = 40;
/// Characters kept from the match on.
const AFTER: usize = 90;

/// Where `query` first occurs in `chars`, ignoring the case of ASCII letters (as SQLite's
/// `LIKE` does; Unicode's case tables would weigh more in the page's bundle than they give).
fn find(chars: &[char], query: &[char]) -> Option<usize> {
    if query.is_empty() || query.len() > chars.len() {
        return None;
    }
    let same = |a: char, b: char| a.eq_ignore_ascii_case(&b);
    (0..=chars.len() - query.len())
        .find(|&at| query.iter().zip(&chars[at..]).all(|(q, c)| same(*q, *c)))
}

/// A line of `text` around the first match of `query`, whitespace folded, with "…" where it
/// was cut. (`text` may itself be cut from a longer message, far enough before the match that
/// this cuts it again.)
pub fn snippet(text: &str, query: &str) -> String {
    let chars: Vec<char> = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .collect();
    let query: Vec<char> = query.trim().chars().collect();
    let at = find(&chars, &query).unwrap_or(0);
    let start = at.saturating_sub(BEFORE);
    // Start at a word where one is near.
    let start = if start > 0 {
        chars[start..at]
            .iter()
            .position(|c| *c == ' ')
            .map_or(start, |space| start + space + 1)
    } else {
        0
    };
    let end = (at + AFTER).min(chars.len());
    let mut line: String = chars[start..end].iter().collect();
    if start > 0 {
        line.insert(0, '…');
    }
    if end < chars.len() {
        line.push('…');
    }
    line
}

/// `line` in parts, each marked when it is an occurrence of `query` (ignoring case).
pub fn marked(line: &str, query: &str) -> Vec<(bool, String)> {
    let chars: Vec<char> = line.chars().collect();
    let query: Vec<char> = query.trim().chars().collect();
    let mut parts = Vec::new();
    let mut from = 0;
    while let Some(found) = find(&chars[from..], &query) {
        let at = from + found;
        if at > from {
            parts.push((false, chars[from..at].iter().collect()));
        }
        parts.push((true, chars[at..at + query.len()].iter().collect()));
        from = at + query.len();
    }
    if from < chars.len() || parts.is_empty() {
        parts.push((false, chars[from..].iter().collect()));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snippet_is_the_match_in_its_words_cut_where_it_was_cut() {
        let text =
            "The harbour master said the tide turns at six.\n\nBring the   LANTERN and rope \
                    for the night watch, and a spare oar in case the wind picks up later on, \
                    as it did last spring when the boats came in late and the quay flooded.";
        let line = snippet(text, "lantern");
        assert!(line.contains("Bring the LANTERN and rope"), "{line}");
        assert!(line.starts_with('…') && line.ends_with('…'), "{line}");
        assert!(!line.contains('\n') && !line.contains("  "), "{line}");
        // From the start when the match is near it.
        assert!(snippet("lantern at the door", "LANTERN").starts_with("lantern"));
        // No match: the start of the text.
        assert_eq!(snippet("short", "zzz"), "short");
    }

    #[test]
    fn marks_each_occurrence_and_keeps_the_text_whole() {
        let parts = marked("Tide, tide and TIDE.", "tide");
        let whole: String = parts.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(whole, "Tide, tide and TIDE.");
        let hits: Vec<&str> = parts
            .iter()
            .filter(|(m, _)| *m)
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(hits, ["Tide", "tide", "TIDE"]);
        assert_eq!(
            marked("nothing", "zzz"),
            vec![(false, "nothing".to_owned())]
        );
        assert_eq!(marked("<b>x</b>", "x").len(), 3);
    }
}
