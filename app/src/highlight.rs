//! Code coloured by language (pure): a code block's text as HTML whose tokens sit in spans
//! classed by kind (`hl-keyword`, `hl-string`, …), escaped, and the colours of those classes
//! in both themes. The lexers are `hl-lite`'s (twelve languages; any other stays plain). The
//! Markdown renderer and a tool call's detail use it; both come after the page is live, and so
//! does the stylesheet ([`COLORS`]), which the renderer's part adds to the page when it loads.

use std::fmt::Write as _;

use hl_lite::{Kind, Lang};

/// The most bytes of code coloured at once: past it a block stays plain (colouring is linear,
/// but a page should not grow by a span per token of a huge paste).
pub const MAX_BYTES: usize = 256 * 1024;

/// The language a fence names, if it is one that can be coloured: by its name (`rust`, `rs`,
/// `ts`, …) or by a file's (`src/main.rs`: a fence may name the file the code is from, as a
/// tool call's output is shown).
pub fn language(fence: &str) -> Option<Lang> {
    let fence = fence.trim();
    Lang::from_slug(fence).or_else(|| Lang::from_path(fence))
}

/// `code` as escaped HTML with its tokens in classed spans; `None` past [`MAX_BYTES`].
/// Concatenating the text of what it returns gives `code` back exactly: colouring changes the
/// colours of the characters, never the characters (so it never moves anything).
pub fn to_html(lang: Lang, code: &str) -> Option<String> {
    if code.len() > MAX_BYTES {
        return None;
    }
    let mut out = String::with_capacity(code.len() * 2);
    for span in hl_lite::highlight(lang, code) {
        match class(span.kind) {
            Some(class) => {
                let _ = write!(out, "<span class=\"hl-{class}\">");
                escape_into(&mut out, span.text);
                out.push_str("</span>");
            }
            None => escape_into(&mut out, span.text),
        }
    }
    Some(out)
}

/// The class a kind of token is shown with; `None` for what keeps the text's colour.
fn class(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Plain | Kind::Punctuation | Kind::Operator => None,
        other => Some(other.class()),
    }
}

/// Appends `text` to `out`, HTML-escaped (the one escape of the app's HTML strings).
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// The colours of the classes [`to_html`] writes, light and dark (the theme's
/// `color-scheme` picks one). Colour only: no weight or style that could change a glyph's
/// width.
pub const COLORS: &str = "\
.hl-keyword{color:light-dark(#7c3aad,#d0a6ff)}\
.hl-string{color:light-dark(#2e6b30,#a3d39c)}\
.hl-comment{color:light-dark(#6b6b66,#9a9b95)}\
.hl-number,.hl-constant{color:light-dark(#a3501a,#f2a66a)}\
.hl-type{color:light-dark(#0b6a86,#7fd0e8)}\
.hl-function{color:light-dark(#2f52b8,#8fb0ff)}\
.hl-attribute,.hl-property,.hl-variable{color:light-dark(#8a4a12,#e6b673)}\
.hl-tag{color:light-dark(#a02e3a,#ff9b9b)}";

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of HTML (tags dropped, entities read back).
    fn text_of(html: &str) -> String {
        let mut out = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => out.push(c),
                _ => {}
            }
        }
        out.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    }

    #[test]
    fn tokens_get_their_class_and_the_text_is_kept_exactly() {
        let code = "fn main() {\n    let s = \"<b>&\"; // done\n    x < 3\n}\n";
        let html = to_html(language("rust").unwrap(), code).unwrap();
        assert!(
            html.contains("<span class=\"hl-keyword\">fn</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"hl-string\">&quot;&lt;b&gt;&amp;&quot;</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"hl-comment\">// done</span>"),
            "{html}"
        );
        assert!(!html.contains("<b>"), "escaped: {html}");
        assert_eq!(text_of(&html), code);
    }

    #[test]
    fn fences_and_paths_name_languages_and_unknown_ones_stay_plain() {
        assert_eq!(language("ts"), Some(Lang::TypeScript));
        assert_eq!(language(" Python "), Some(Lang::Python));
        assert_eq!(language("brainfuck"), None);
        assert_eq!(language(""), None);
        assert_eq!(language("src/main.rs"), Some(Lang::Rust));
        assert_eq!(language("notes"), None);
    }

    #[test]
    fn a_huge_block_stays_plain() {
        let big = "x".repeat(MAX_BYTES + 1);
        assert_eq!(to_html(Lang::Rust, &big), None);
    }

    #[test]
    fn every_coloured_class_has_a_colour() {
        let code =
            "#[derive(Debug)]\nstruct A<'a> { f: u8 }\nconst N: u32 = 1;\nfn g() { h(\"s\"); }\n";
        let html = to_html(Lang::Rust, code).unwrap();
        for part in html.split("class=\"hl-").skip(1) {
            let class = part.split('"').next().unwrap();
            assert!(
                COLORS.contains(&format!(".hl-{class}")),
                "no colour for {class}"
            );
        }
    }
}
