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
    let last = StoredValue::new((usize::MAX, String::new()));
    view! {
        <div class=format!("prose {class}")>
            <For
                each=move || chunks.get()
                key=|(i, chunk)| (*i, chunk.clone())
                children=move |(i, chunk)| chunk_view(i, chunk, last)
            />
        </div>
    }
}

/// A chunk, rendered here.
#[cfg(not(all(feature = "hydrate", feature = "split")))]
fn chunk_view(_: usize, chunk: String, _: StoredValue<(usize, String)>) -> impl IntoView {
    view! { <div class="chunk" inner_html=markdown::render(&chunk)></div> }
}

/// A chunk, rendered by the split-off renderer. A hydrated chunk keeps the server's HTML
/// (nothing is written to the DOM while hydrating, so nothing is rendered for it). A new
/// chunk's HTML is written when its rendering lands, within the task that built it and
/// before the next paint once the renderer is loaded; until the renderer is loaded it shows
/// what its index showed last (the same chunk a token shorter, while streaming) or its plain
/// text.
#[cfg(all(feature = "hydrate", feature = "split"))]
fn chunk_view(index: usize, chunk: String, last: StoredValue<(usize, String)>) -> impl IntoView {
    let hydrating = Owner::current_shared_context().is_some_and(|c| c.during_hydration());
    let node = NodeRef::<leptos::html::Div>::new();
    let mut initial = String::new();
    if !hydrating {
        let loaded = markdown::split_loaded();
        if !loaded {
            initial = last
                .with_value(|(i, html)| (*i == index).then(|| html.clone()))
                .unwrap_or_else(|| markdown::plain(&chunk));
        }
        leptos::task::spawn_local(async move {
            // Without the renderer (it could not be fetched), the chunk is shown as plain text,
            // whatever stood in for it meanwhile.
            let text = (!loaded).then(|| chunk.clone());
            let Some(rendered) = markdown::render_later(chunk).await else {
                if let (Some(el), Some(text)) = (node.try_get_untracked().flatten(), text) {
                    el.set_inner_html(&markdown::plain(&text));
                }
                return;
            };
            // The chunk (or the whole prose) may be gone by now.
            if let Some(el) = node.try_get_untracked().flatten() {
                el.set_inner_html(&rendered);
            }
            if !loaded {
                // Kept for the next chunk at this index only until the renderer is loaded.
                let _ = last.try_set_value((index, rendered));
            }
        });
    }
    view! { <div class="chunk" node_ref=node inner_html=initial></div> }
}
