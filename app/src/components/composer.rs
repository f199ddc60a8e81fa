use leptos::prelude::*;

/// The message composer. Send is enabled only while the draft has visible text.
#[component]
pub(crate) fn Composer() -> impl IntoView {
    let (draft, set_draft) = signal(String::new());
    let blank = move || draft.with(|text| text.trim().is_empty());

    view! {
        <form class="composer" on:submit=move |ev| ev.prevent_default()>
            <label for="composer-input" class="visually-hidden">"Message"</label>
            <textarea
                id="composer-input"
                name="message"
                rows="1"
                placeholder="Message Anchorage…"
                prop:value=move || draft.get()
                on:input=move |ev| set_draft.set(event_target_value(&ev))
            ></textarea>
            <button type="submit" class="composer-send" disabled=blank>
                "Send"
            </button>
        </form>
    }
}
