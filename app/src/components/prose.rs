use leptos::prelude::*;

use crate::markdown;

/// Markdown prose. Split into chunks at blank lines: while an answer streams, only its last
/// chunk is parsed again.
#[component]
pub(crate) fn Prose(
    #[prop(into)] text: Signal<String>,
    #[prop(optional)] class: &'static str,
) -> impl IntoView {
    let chunks = Memo::new(move |_| {
        text.with(|t| {
            markdown::chunks(t)
                .into_iter()
                .enumerate()
                .map(|(i, c)| (i, c.to_owned()))
                .collect::<Vec<_>>()
        })
    });
    view! {
        <div class=format!("prose {class}")>
            <For
                each=move || chunks.get()
                key=|(i, chunk)| (*i, chunk.clone())
                children=move |(_, chunk)| view! { <div class="chunk" inner_html=markdown::render(&chunk)></div> }
            />
        </div>
    }
}
