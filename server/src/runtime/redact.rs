//! What of an upstream may be shown: text with credentials taken out, and the host of a
//! URL. Errors, hints, labels and logs all go through here, since a key or a password in a
//! URL (`http://user:secret@host/v1`) would otherwise reach every page that names the agent.

/// `text` (an upstream error, a hint built from one) with anything that looks like a credential
/// replaced by `[redacted]`: a bearer token, an `sk-…` key, a `key=`/`token=` parameter, or a
/// long run of letters and digits (a hex or base64 key). Such text is journaled into the turn
/// and shown to whoever reads the conversation.
pub fn redact_secrets(text: &str) -> String {
    let text = strip_userinfo(text);
    let text = text.as_str();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let token_char =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '+' | '=');
    while !rest.is_empty() {
        let lower = rest.to_ascii_lowercase();
        // A bearer token or a key parameter: keep the label, drop what follows it.
        let label = [
            "bearer ",
            "api_key=",
            "apikey=",
            "key=",
            "token=",
            "access_token=",
        ]
        .iter()
        .find(|l| lower.starts_with(**l))
        .filter(|_| {
            out.chars()
                .last()
                .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
        });
        if let Some(label) = label {
            let (head, tail) = rest.split_at(label.len());
            let end = tail.find(|c: char| !token_char(c)).unwrap_or(tail.len());
            out.push_str(head);
            if end > 0 {
                out.push_str("[redacted]");
            }
            rest = &tail[end..];
            continue;
        }
        let end = rest.find(|c: char| !token_char(c)).unwrap_or(rest.len());
        if end == 0 {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let word = &rest[..end];
        let looks_like_key = (word.starts_with("sk-") || word.starts_with("sk_"))
            && word.len() >= 11
            || (word.len() >= 32
                && word.chars().any(|c| c.is_ascii_digit())
                && word.chars().any(|c| c.is_ascii_alphabetic())
                && !word.contains('/'));
        out.push_str(if looks_like_key { "[redacted]" } else { word });
        rest = &rest[end..];
    }
    out
}

/// `text` with the user and password of every URL in it (`scheme://user:pw@host`) replaced
/// by `[redacted]`.
pub fn strip_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends where the path, the query, the fragment or the text does.
        let end = tail
            .find(|c: char| {
                matches!(c, '/' | '?' | '#') || c.is_whitespace() || "\"'<>()`".contains(c)
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(user_end) => {
                out.push_str("[redacted]");
                out.push_str(&authority[user_end..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// A URL as it may be shown: without its user and password, nor any key in its query.
pub fn shown_url(url: &str) -> String {
    redact_secrets(url)
}

/// `host[:port]` of a URL, for labels (never its user or password).
pub(crate) fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit('@').next().unwrap_or(authority)
}

#[cfg(test)]
mod tests {
    use super::{host_of, redact_secrets, shown_url};

    #[test]
    fn credentials_never_reach_a_turn() {
        assert_eq!(
            redact_secrets(
                "401 Unauthorized: Incorrect API key provided: sk-proj-abc123DEF456ghi."
            ),
            "401 Unauthorized: Incorrect API key provided: [redacted]"
        );
        assert_eq!(
            redact_secrets("sent Authorization: Bearer eyJhbGciOi.J9x-y_z and failed"),
            "sent Authorization: Bearer [redacted] and failed"
        );
        assert_eq!(
            redact_secrets("GET https://host/v1?key=AIzaSyA1b2C3&x=1 gave 403"),
            "GET https://host/v1?key=[redacted]&x=1 gave 403"
        );
        assert_eq!(
            redact_secrets("token 0123456789abcdef0123456789abcdef01 rejected"),
            "token [redacted] rejected"
        );
        // Ordinary text, paths and short ids stay.
        for plain in [
            "The provider returned 500 Internal Server Error.",
            "model gpt-4o-mini not found at http://127.0.0.1:11434/v1/chat/completions",
            "monkey=1 donkey=2",
            "Try again in a moment; the partial answer is kept.",
        ] {
            assert_eq!(redact_secrets(plain), plain);
        }
    }

    #[test]
    fn labels_name_the_host_of_a_url() {
        assert_eq!(host_of("https://api.openai.com/v1"), "api.openai.com");
        assert_eq!(host_of("http://127.0.0.1:11434/v1/"), "127.0.0.1:11434");
        assert_eq!(host_of("http://localhost:8642"), "localhost:8642");
        assert_eq!(host_of("gateway.local?x=1"), "gateway.local");
        assert_eq!(host_of("http://user:PW@host:8000/v1"), "host:8000");
        assert_eq!(host_of("http://a@b:c@host/v1"), "host");
    }

    #[test]
    fn a_password_in_a_url_is_never_shown() {
        assert_eq!(
            shown_url("http://user:PW-9x@llm.internal:8000/v1"),
            "http://[redacted]@llm.internal:8000/v1"
        );
        assert_eq!(
            redact_secrets(
                "error sending request for url (http://user:hunter2@host/v1/chat/completions)"
            ),
            "error sending request for url (http://[redacted]@host/v1/chat/completions)"
        );
        assert_eq!(
            redact_secrets("two: https://a:b@x.org and ftp://c@y.org/p?q"),
            "two: https://[redacted]@x.org and ftp://[redacted]@y.org/p?q"
        );
        assert_eq!(shown_url("http://host:1/v1"), "http://host:1/v1");
        assert_eq!(redact_secrets("no url: a@b and ://"), "no url: a@b and ://");
    }
}
