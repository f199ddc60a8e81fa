use leptos::prelude::*;

use crate::dynamic::flag;

/// A "⋯" button with a menu of actions (`children`: `<button role="menuitem">`s). The items
/// exist only while the menu is open, so a closed menu costs one button. Opening puts the
/// focus on the first item; the arrows, Home and End move it; Escape closes the menu and
/// gives the focus back to the "⋯"; so does a choice (unless the choice put the focus
/// elsewhere, as Rename does); the focus leaving the menu closes it.
#[component]
pub(crate) fn Menu(
    /// What the "⋯" is for ("More for this turn").
    label: String,
    /// The class of the wrapper (placement).
    #[prop(optional)]
    class: &'static str,
    children: ChildrenFn,
) -> impl IntoView {
    let open = RwSignal::new(false);
    let wrapper = NodeRef::<leptos::html::Div>::new();
    let trigger = NodeRef::<leptos::html::Button>::new();
    let items = NodeRef::<leptos::html::Div>::new();
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(first) = items.get().and_then(|el| {
            el.query_selector("[role='menuitem']:not(:disabled)")
                .ok()
                .flatten()
        }) {
            use wasm_bindgen::JsCast;
            if let Ok(first) = first.dyn_into::<web_sys::HtmlElement>() {
                let _ = first.focus();
            }
        }
    });
    let close = move |refocus: bool| {
        open.set(false);
        #[cfg(feature = "hydrate")]
        if refocus {
            if let Some(el) = trigger.get_untracked() {
                let _ = el.focus();
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = refocus;
    };
    let on_focusout = move |ev: leptos::ev::FocusEvent| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let inside = ev
                .related_target()
                .and_then(|t| t.dyn_into::<web_sys::Node>().ok())
                .zip(wrapper.get_untracked())
                .is_some_and(|(node, wrapper)| wrapper.contains(Some(&node)));
            if !inside {
                open.set(false);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = ev;
    };
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if !open.get_untracked() {
            return;
        }
        match ev.key().as_str() {
            "Escape" => {
                ev.prevent_default();
                // Not the drawer's Escape: this one only closes the menu.
                ev.stop_propagation();
                close(true);
            }
            #[cfg(feature = "hydrate")]
            key @ ("ArrowDown" | "ArrowUp" | "Home" | "End") => {
                ev.prevent_default();
                step_focus(wrapper, key);
            }
            _ => {}
        }
    };
    // A choice closes the menu after its own handler ran; the focus goes back to the "⋯"
    // unless that handler moved it (or the "⋯" went with what it was for).
    let on_choice = move |ev: leptos::ev::MouseEvent| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let on_item = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .and_then(|el| el.closest("[role='menuitem']").ok().flatten())
                .is_some();
            if on_item {
                let focus_stayed = web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.active_element())
                    .zip(wrapper.get_untracked())
                    .is_some_and(|(active, wrapper)| wrapper.contains(Some(&active)));
                close(focus_stayed);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = ev;
    };
    let menu_label = label.clone();
    view! {
        <div class=format!("menu {class}") node_ref=wrapper on:focusout=on_focusout on:keydown=on_keydown>
            <button
                type="button"
                class="message-action menu-trigger"
                aria-label=label
                aria-haspopup="menu"
                aria-expanded=flag(move || open.get())
                node_ref=trigger
                on:click=move |_| open.update(|o| *o = !*o)
            >
                "⋯"
            </button>
            {move || open.get().then(|| view! {
                <div class="menu-items" role="menu" aria-label=menu_label.clone() node_ref=items on:click=on_choice>
                    {children()}
                </div>
            })}
        </div>
    }
}

/// Moves the focus among a menu's items with the arrows, Home and End (wrapping around).
#[cfg(feature = "hydrate")]
fn step_focus(wrapper: NodeRef<leptos::html::Div>, key: &str) {
    use wasm_bindgen::JsCast;
    let Some(wrapper) = wrapper.get_untracked() else {
        return;
    };
    let Ok(list) = wrapper.query_selector_all("[role='menuitem']:not(:disabled)") else {
        return;
    };
    let items: Vec<web_sys::HtmlElement> = (0..list.length())
        .filter_map(|i| list.item(i)?.dyn_into().ok())
        .collect();
    if items.is_empty() {
        return;
    }
    let active = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.active_element());
    let at = items.iter().position(|item| {
        active
            .as_ref()
            .is_some_and(|a| a == item.as_ref() as &web_sys::Element)
    });
    let last = items.len() - 1;
    let to = match (key, at) {
        ("Home", _) | ("ArrowDown", None) => 0,
        ("End", _) | ("ArrowUp", None) => last,
        ("ArrowDown", Some(i)) => {
            if i == last {
                0
            } else {
                i + 1
            }
        }
        (_, Some(i)) => {
            if i == 0 {
                last
            } else {
                i - 1
            }
        }
        _ => 0,
    };
    let _ = items[to].focus();
}
