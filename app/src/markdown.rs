//! Markdown to HTML that is safe to insert: raw HTML in the source is shown as text, links and
//! images can only point to web, mail and relative addresses, and code blocks get a copy button.
//!
//! Streaming prose is split into [`chunks`] at blank lines (outside code fences), so that a
//! growing answer re-renders only its last chunk.

use pulldown_cmark::{html, CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// The start of a link to `dest_url`, or to `#` when the destination is not harmless.
fn safe_link<'a>(
    link_type: pulldown_cmark::LinkType,
    dest_url: CowStr<'a>,
    title: CowStr<'a>,
    id: CowStr<'a>,
) -> Event<'a> {
    let dest_url = if safe_url(&dest_url) {
        dest_url
    } else {
        CowStr::Borrowed("#")
    };
    Event::Start(Tag::Link {
        link_type,
        dest_url,
        title,
        id,
    })
}

/// Whether a link destination is harmless: http(s), mailto, or relative (no scheme).
fn safe_url(dest: &str) -> bool {
    let d = dest.trim();
    let lower = d.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
    {
        return true;
    }
    // Relative addresses have no scheme before the first '/', '?' or '#'.
    let head = d.split(['/', '?', '#']).next().unwrap_or("");
    !head.contains(':')
}

/// Renders Markdown to safe HTML.
pub fn render(markdown: &str) -> String {
    let mut in_image = false;
    // Inside a fenced block of a language that is coloured: it, its label, its text so far.
    let mut code: Option<(hl_lite::Lang, String, String)> = None;
    let events = Parser::new_ext(markdown, options()).flat_map(|event| -> Vec<Event<'_>> {
        match event {
            // Raw HTML is text: `<script>` renders as the characters you typed.
            Event::Html(raw) | Event::InlineHtml(raw) => vec![Event::Text(raw)],
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => vec![safe_link(link_type, dest_url, title, id)],
            // Images are shown as links: no remote loads from model output.
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                in_image = true;
                vec![safe_link(link_type, dest_url, title, id)]
            }
            Event::End(TagEnd::Image) if in_image => {
                in_image = false;
                vec![Event::End(TagEnd::Link)]
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let fence = match &kind {
                    CodeBlockKind::Fenced(lang) => lang.split_whitespace().next().unwrap_or("").to_owned(),
                    CodeBlockKind::Indented => String::new(),
                };
                let label = escape(&fence);
                let head = Event::Html(CowStr::from(format!(
                    "<div class=\"code-block\"><div class=\"code-head\"><span class=\"code-lang\">{label}</span>\
                     <button type=\"button\" class=\"copy-code\" data-copy-code=\"\">Copy</button></div>"
                )));
                // A language that can be coloured: its text is gathered and written coloured
                // at the block's end; any other block is written as it comes.
                match crate::highlight::language(&fence) {
                    Some(lang) => {
                        code = Some((lang, label, String::new()));
                        vec![head]
                    }
                    None => vec![head, Event::Start(Tag::CodeBlock(kind))],
                }
            }
            Event::Text(text) if code.is_some() => {
                if let Some((_, _, gathered)) = code.as_mut() {
                    gathered.push_str(&text);
                }
                vec![]
            }
            Event::End(TagEnd::CodeBlock) => match code.take() {
                Some((lang, label, gathered)) => {
                    let body = crate::highlight::to_html(lang, &gathered)
                        .unwrap_or_else(|| escape(&gathered));
                    vec![Event::Html(CowStr::from(format!(
                        "\n<pre><code class=\"language-{label}\">{body}</code></pre>\n</div>"
                    )))]
                }
                None => vec![Event::End(TagEnd::CodeBlock), Event::Html(CowStr::Borrowed("</div>"))],
            },
            other => vec![other],
        }
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2 + 16);
    html::push_html(&mut out, events);
    out
}

/// [`render`] in the part of the bundle that is split off (`--split` builds with the `split`
/// feature): the browser fetches it on the first call, so a first load does not carry the
/// Markdown parser. Later calls still answer asynchronously, within the same task. A failed
/// fetch is an error (the next call fetches again), never a panic: the page stays usable with
/// plain text.
#[cfg(all(feature = "hydrate", feature = "split"))]
#[leptos::wasm_split::wasm_split(
    markdown_renderer,
    wasm_split_path = ::leptos::wasm_split,
    fallible
)]
fn render_split(markdown: String) -> Result<String, leptos::wasm_split::SplitLoaderError> {
    COLORED.with(|done| {
        if !done.replace(true) {
            install_colors();
        }
    });
    Ok(render(&markdown))
}

#[cfg(all(feature = "hydrate", feature = "split"))]
thread_local! {
    static COLORED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Adds the code colours to the page (once: they come with the renderer, not with the first
/// load). A block the server coloured takes its colours then, in place: only colours change.
#[cfg(feature = "hydrate")]
fn install_colors() {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if document.get_element_by_id("code-colors").is_some() {
        return;
    }
    let Ok(style) = document.create_element("style") else {
        return;
    };
    style.set_id("code-colors");
    style.set_text_content(Some(crate::highlight::COLORS));
    if let Ok(Some(head)) = document.query_selector("head") {
        let _ = head.append_child(&style);
    }
}

#[cfg(all(feature = "hydrate", feature = "split"))]
thread_local! {
    static LOADED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the split-off renderer has answered once (from then on it answers within the task
/// that asks).
#[cfg(all(feature = "hydrate", feature = "split"))]
pub fn split_loaded() -> bool {
    LOADED.with(std::cell::Cell::get)
}

/// [`render_split`], noting that the renderer is loaded; `None` when it could not be fetched.
#[cfg(all(feature = "hydrate", feature = "split"))]
pub async fn render_later(markdown: String) -> Option<String> {
    let html = render_split(markdown).await.ok()?;
    LOADED.with(|l| l.set(true));
    Some(html)
}

/// `code` as a fenced block of `lang`, whatever backticks it holds (the fence is longer than
/// any run of them inside).
#[cfg(any(feature = "hydrate", test))]
fn fenced(code: &str, lang: &str) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let end = if code.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{lang}\n{code}{end}{fence}\n")
}

/// The coloured body of the one code block of `html` (what [`render`] made of [`fenced`]);
/// `None` when nothing in it was coloured.
#[cfg(any(feature = "hydrate", test))]
fn coloured_body(html: &str) -> Option<&str> {
    let open = html.find("<code class=\"language-")?;
    let start = open + html[open..].find('>')? + 1;
    let end = html.rfind("</code>")?;
    let body = html.get(start..end)?;
    body.contains("<span class=\"hl-").then_some(body)
}

/// A tool call's text coloured as `lang` (what a fence may say: `json`, `rust`, a file's
/// name), by the same renderer as an answer's code (its part, fetched if need be): escaped
/// HTML whose text is `code` exactly; `None` when it cannot be coloured (an unknown language,
/// too big, text the renderer would change, the part not fetched).
#[cfg(feature = "hydrate")]
pub async fn color_later(code: String, lang: String) -> Option<String> {
    // Markdown reads a carriage return as a line's end: such text would not stay as it is;
    // and a fence's info is one word of no backtick.
    let unfit = |text: &str| text.is_empty() || text.contains(['`', '\r', '\n', ' ', '\t']);
    if code.contains('\r') || code.len() > crate::highlight::MAX_BYTES || unfit(&lang) {
        return None;
    }
    let source = fenced(&code, &lang);
    #[cfg(feature = "split")]
    let html = render_later(source).await?;
    #[cfg(not(feature = "split"))]
    let html = render(&source);
    let mut body = coloured_body(&html)?.to_owned();
    if !code.ends_with('\n') && body.ends_with('\n') {
        body.pop();
    }
    Some(body)
}

/// Makes sure the renderer is loaded, then calls `ready`. When it is split off, this fetches
/// it (the page calls this once hydrated, so that no later render waits for the network);
/// otherwise it is part of the bundle and `ready` runs at once.
pub fn preload(ready: impl FnOnce() + 'static) {
    #[cfg(all(feature = "hydrate", feature = "split"))]
    leptos::task::spawn_local(async move {
        if render_later(String::new()).await.is_some() {
            ready();
        }
    });
    #[cfg(all(feature = "hydrate", not(feature = "split")))]
    install_colors();
    #[cfg(not(all(feature = "hydrate", feature = "split")))]
    ready();
}

/// Prose as plain text, escaped, until its Markdown is rendered.
pub fn plain(text: &str) -> String {
    format!("<p class=\"plain\">{}</p>", escape(text))
}

/// HTML-escapes text.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    crate::highlight::escape_into(&mut out, text);
    out
}

/// Splits prose into chunks that render independently: at blank lines outside fenced code.
/// Joining the chunks gives back the text.
pub fn chunks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_fence = false;
    let mut offset = 0;
    let mut previous_blank = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let blank = line.trim().is_empty();
        offset += line.len();
        // A chunk ends after a blank line that follows text, outside a fence.
        if blank && !previous_blank && !in_fence && offset > start && line.ends_with('\n') {
            out.push(&text[start..offset]);
            start = offset;
        }
        previous_blank = blank;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_shown_as_text() {
        let html = render("Hello <img src=x onerror=alert(1)> and <script>alert(2)</script>");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        let block = render("<div onclick=\"x()\">\nhi\n</div>\n");
        assert!(!block.contains("<div onclick"), "{block}");
    }

    #[test]
    fn dangerous_links_are_neutralized() {
        let html = render("[click](javascript:alert(1)) [ok](https://example.com) [rel](/s/1) ![img](data:text/html,x)");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("data:"), "{html}");
        assert!(html.contains("href=\"https://example.com\""));
        assert!(html.contains("href=\"/s/1\""));
        assert!(!html.contains("<img"));
    }

    #[test]
    fn code_blocks_get_a_copy_button_and_escaped_content() {
        let html = render("```rust\nlet x = \"<b>\";\n```\n");
        assert!(html.contains("class=\"code-block\""));
        assert!(html.contains("data-copy-code"));
        assert!(html.contains("&lt;b&gt;"));
        assert!(html.contains(">rust<"));
        let evil = render("```\"><script>x</script>\ncode\n```\n");
        assert!(!evil.contains("<script>"), "{evil}");
    }

    #[test]
    fn fenced_code_of_a_known_language_is_coloured_and_keeps_its_block() {
        let coloured = render("```rs\nfn main() { let s = \"<i>\"; }\n```\n");
        assert!(
            coloured.contains("<span class=\"code-lang\">rs</span>"),
            "{coloured}"
        );
        assert!(
            coloured.contains("\n<pre><code class=\"language-rs\">"),
            "{coloured}"
        );
        assert!(
            coloured.contains("<span class=\"hl-keyword\">fn</span>"),
            "{coloured}"
        );
        assert!(coloured.contains("&quot;&lt;i&gt;&quot;"), "{coloured}");
        assert!(
            coloured.trim_end().ends_with("</code></pre>\n</div>"),
            "{coloured}"
        );
        // The same block as pulldown-cmark writes it, but for the spans: the same characters
        // in the same elements, so colouring moves nothing.
        let plain = render("```brainfuck\nfn main() { let s = \"<i>\"; }\n```\n");
        assert!(!plain.contains("hl-"), "{plain}");
        let strip = |html: &str| {
            html.replace("<span class=\"hl-keyword\">", "")
                .replace("<span class=\"hl-string\">", "")
                .replace("<span class=\"hl-function\">", "")
                .replace("</span>", "")
                .replace("&quot;", "\"")
        };
        assert_eq!(
            strip(&coloured).replace("rs", "brainfuck"),
            strip(&plain).replace("rs", "brainfuck")
        );
        // Markdown inside a code block stays text; text after the block is prose again.
        let after = render("```py\n# *not emphasis*\n```\n\n*emphasis*\n");
        assert!(after.contains("<em>emphasis</em>"), "{after}");
        assert!(!after.contains("<em>not"), "{after}");
    }

    #[test]
    fn tool_text_is_coloured_through_a_fence_it_cannot_break_out_of() {
        let code = "let a = \"```\";\n// ````` five\nfn f() {}";
        let source = fenced(code, "rust");
        assert!(source.starts_with("``````rust\n"), "{source}");
        let html = render(&source);
        let body = coloured_body(&html).unwrap();
        assert!(
            body.contains("<span class=\"hl-keyword\">fn</span>"),
            "{body}"
        );
        assert!(body.contains("// ````` five"), "{body}");
        // Nothing coloured (plain text as JSON, say): nothing to put in.
        assert_eq!(coloured_body(&render(&fenced("just words", "text"))), None);
    }

    #[test]
    fn chunks_split_at_blank_lines_outside_fences_and_lose_nothing() {
        let text = "Para one\nstill one\n\nPara two\n\n```\na\n\nb\n```\n\ntail";
        let parts = chunks(text);
        assert_eq!(parts.concat(), text);
        assert_eq!(
            parts,
            vec![
                "Para one\nstill one\n\n",
                "Para two\n\n",
                "```\na\n\nb\n```\n\n",
                "tail"
            ]
        );
        assert_eq!(chunks("no breaks at all"), vec!["no breaks at all"]);
        assert!(chunks("").is_empty());
    }
}
