//! What the server draws and the page takes over later. The sidebar, the model picker, the
//! Export menu, Settings and toasts are drawn by the turns' part ([`TurnPart`]): a page that
//! comes alive without that part (a new conversation, the first visit) does not hydrate them.
//! It keeps what the server drew, and once the part is here it draws them again in the same
//! place, with the same markup. A person who acted on them meanwhile loses nothing: what was
//! typed into a field, which element had the focus, how far a list was scrolled carry over,
//! and the last button pressed is pressed again. A conversation's link opens it in place
//! before as after.

use leptos::either::Either;
use leptos::prelude::*;
use leptos::tachys::html::element::ElementChild;

use super::turns::{part_now, TurnPart};

/// The element `host` (whose id is `id`), with what `draw` takes from the part inside: at
/// once where the part is here (on the server, in builds that do not split, on a page that
/// fetched it before it hydrated), else when `part` comes. Until then a plain click on a link
/// in the host (to a page, not to a place in one) goes to `follow` with the link's site path,
/// where given (the page opens it in place, as the part's view would).
pub(crate) fn adopted<H>(
    part: ReadSignal<Option<TurnPart>>,
    id: &'static str,
    host: H,
    follow: Option<Callback<String>>,
    draw: impl Fn(TurnPart) -> AnyView + 'static,
) -> impl IntoView
where
    H: ElementChild<AnyView> + IntoView + 'static,
    <H as ElementChild<AnyView>>::Output: IntoView + 'static,
{
    match part_now() {
        Some(now) => Either::Left(host.child(draw(now))),
        None => {
            // An element without children: hydration walks none of those the server drew.
            #[cfg(feature = "hydrate")]
            browser::take_over_later(part, id, follow, draw);
            #[cfg(not(feature = "hydrate"))]
            let _ = (part, id, follow, draw);
            Either::Right(host)
        }
    }
}

/// [`adopted`] in a `<div class="slot">` with id `id`: a place laid out as if its content
/// stood there alone (`display: contents`).
pub(crate) fn slot(
    part: ReadSignal<Option<TurnPart>>,
    id: &'static str,
    draw: impl Fn(TurnPart) -> AnyView + 'static,
) -> impl IntoView {
    adopted(
        part,
        id,
        leptos::html::div().id(id).class("slot"),
        None,
        draw,
    )
}

#[cfg(feature = "hydrate")]
mod browser {
    use leptos::prelude::*;
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;

    use super::TurnPart;
    use crate::lazy::Mounted;

    type Listener = Closure<dyn Fn(web_sys::Event)>;

    /// The attributes by which an element names itself, most telling first.
    const NAMES: [&str; 2] = ["data-session-id", "id"];

    /// Where an element is, in a way that finds it again in another drawing of the same view:
    /// the nearest element around it (or itself) that names itself ([`NAMES`]), else the
    /// host, and its place among that one's elements. A list that gained a row above it
    /// meanwhile does not make it another element.
    #[derive(Clone)]
    struct Place {
        named: Option<(&'static str, String)>,
        index: usize,
    }

    fn elements(within: &web_sys::Element) -> Vec<web_sys::Element> {
        let Ok(all) = within.query_selector_all("*") else {
            return Vec::new();
        };
        (0..all.length())
            .filter_map(|i| all.item(i)?.dyn_into::<web_sys::Element>().ok())
            .collect()
    }

    fn place_of(host: &web_sys::Element, el: &web_sys::Element) -> Option<Place> {
        let mut at = Some(el.clone());
        while let Some(here) = at.filter(|here| here != host) {
            if let Some((name, value)) = NAMES
                .iter()
                .find_map(|name| here.get_attribute(name).map(|v| (*name, v)))
            {
                let index = if here == *el {
                    0
                } else {
                    1 + elements(&here).iter().position(|e| e == el)?
                };
                return Some(Place {
                    named: Some((name, value)),
                    index,
                });
            }
            at = here.parent_element();
        }
        let index = 1 + elements(host).iter().position(|e| e == el)?;
        Some(Place { named: None, index })
    }

    fn find(host: &web_sys::Element, place: &Place) -> Option<web_sys::Element> {
        let around = match &place.named {
            Some((name, value)) => {
                let value = value.replace('\\', "\\\\").replace('"', "\\\"");
                host.query_selector(&format!("[{name}=\"{value}\"]"))
                    .ok()??
            }
            None => host.clone(),
        };
        match place.index {
            0 => Some(around),
            i => elements(&around).into_iter().nth(i - 1),
        }
    }

    /// What a person did to the server's drawing, to be done again to the page's.
    struct Snapshot {
        /// The element with the focus.
        focus: Option<Place>,
        /// The fields' values.
        values: Vec<(Place, String)>,
        /// How far elements were scrolled.
        scrolled: Vec<(Place, i32)>,
    }

    fn value_of(el: &web_sys::Element) -> Option<String> {
        if let Some(input) = el.dyn_ref::<web_sys::HtmlInputElement>() {
            return Some(input.value());
        }
        if let Some(select) = el.dyn_ref::<web_sys::HtmlSelectElement>() {
            return Some(select.value());
        }
        el.dyn_ref::<web_sys::HtmlTextAreaElement>()
            .map(web_sys::HtmlTextAreaElement::value)
    }

    fn set_value(el: &web_sys::Element, value: &str) {
        if let Some(input) = el.dyn_ref::<web_sys::HtmlInputElement>() {
            input.set_value(value);
        } else if let Some(select) = el.dyn_ref::<web_sys::HtmlSelectElement>() {
            select.set_value(value);
        } else if let Some(area) = el.dyn_ref::<web_sys::HtmlTextAreaElement>() {
            area.set_value(value);
        }
    }

    fn snapshot(host: &web_sys::Element) -> Snapshot {
        let all = elements(host);
        let active = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.active_element());
        Snapshot {
            focus: active
                .filter(|a| host.contains(Some(a)))
                .and_then(|a| place_of(host, &a)),
            values: all
                .iter()
                .filter_map(|el| Some((place_of(host, el)?, value_of(el)?)))
                .collect(),
            scrolled: all
                .iter()
                .filter(|el| el.scroll_top() > 0)
                .filter_map(|el| Some((place_of(host, el)?, el.scroll_top())))
                .collect(),
        }
    }

    /// Does again to the page's drawing what was done to the server's: a value that differs
    /// is set and announced (`input`, `change`) so that the view hears it, as if typed.
    fn restore(host: &web_sys::Element, was: Snapshot, pressed: Option<Place>) {
        for (place, value) in was.values {
            let Some(el) = find(host, &place) else {
                continue;
            };
            if value_of(&el).as_deref() == Some(value.as_str()) {
                continue;
            }
            set_value(&el, &value);
            for name in ["input", "change"] {
                let init = web_sys::EventInit::new();
                init.set_bubbles(true);
                if let Ok(ev) = web_sys::Event::new_with_event_init_dict(name, &init) {
                    let _ = el.dispatch_event(&ev);
                }
            }
        }
        for (place, top) in was.scrolled {
            if let Some(el) = find(host, &place) {
                el.set_scroll_top(top);
            }
        }
        let html = |place: Option<Place>| {
            place
                .and_then(|p| find(host, &p))
                .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
        };
        if let Some(el) = html(was.focus) {
            let _ = el.focus();
        }
        if let Some(el) = html(pressed) {
            el.click();
        }
    }

    /// A plain click (the main button, no key held) on a link to a page of the site: its
    /// site path.
    fn plain_link(ev: &web_sys::Event, target: &web_sys::Element) -> Option<String> {
        let mouse = ev.dyn_ref::<web_sys::MouseEvent>()?;
        if mouse.button() != 0
            || mouse.ctrl_key()
            || mouse.meta_key()
            || mouse.shift_key()
            || mouse.alt_key()
        {
            return None;
        }
        let href = target.closest("a[href]").ok()??.get_attribute("href")?;
        (href.starts_with('/') && !href.contains('#')).then(|| crate::base::site_path(&href))
    }

    /// Until the part comes, a button pressed in the host does nothing but is remembered
    /// (the last one), to be pressed again then; a plain click on a link goes to `follow`.
    fn keep_presses(
        host: &web_sys::Element,
        pressed: StoredValue<Option<Place>, LocalStorage>,
        follow: Option<Callback<String>>,
    ) -> Option<Listener> {
        let at = host.clone();
        let listener: Listener = Closure::new(move |ev: web_sys::Event| {
            let Some(target) = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            else {
                return;
            };
            if let Some(follow) = follow {
                if let Some(path) = plain_link(&ev, &target) {
                    ev.prevent_default();
                    follow.run(path);
                    return;
                }
            }
            let Some(button) = target.closest("button").ok().flatten() else {
                return;
            };
            ev.prevent_default();
            ev.stop_propagation();
            pressed.set_value(place_of(&at, &button));
        });
        host.add_event_listener_with_callback_and_bool(
            "click",
            listener.as_ref().unchecked_ref(),
            true,
        )
        .ok()
        .map(|_| listener)
    }

    pub(super) fn take_over_later(
        part: ReadSignal<Option<TurnPart>>,
        host: &'static str,
        follow: Option<Callback<String>>,
        draw: impl Fn(TurnPart) -> AnyView + 'static,
    ) {
        let Some(owner) = Owner::current() else {
            return;
        };
        let held = StoredValue::new_local(None::<Mounted>);
        let pressed = StoredValue::new_local(None::<Place>);
        let listener = StoredValue::new_local(None::<Listener>);
        let element = move || web_sys::window()?.document()?.get_element_by_id(host);
        let mut draw = Some(draw);
        Effect::new(move |taken: Option<bool>| {
            if taken == Some(true) {
                return true;
            }
            let Some(el) = element() else {
                return false;
            };
            if taken.is_none() {
                listener.set_value(keep_presses(&el, pressed, follow));
            }
            let Some(now) = part.get() else {
                return false;
            };
            let Some(draw) = draw.take() else {
                return true;
            };
            if let Some(l) = listener.try_update_value(Option::take).flatten() {
                let _ = el.remove_event_listener_with_callback_and_bool(
                    "click",
                    l.as_ref().unchecked_ref(),
                    true,
                );
            }
            let was = snapshot(&el);
            el.set_inner_html("");
            let view = crate::lazy::mount(&owner, &el, move || draw(now));
            held.set_value(Some(view));
            restore(&el, was, pressed.get_value());
            true
        });
    }
}
