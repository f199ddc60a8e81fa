//! The message box's `/` menu: typing `/` lists the commands ([`crate::commands`]), typing
//! on filters them, and after a command and a space its arguments. ↑/↓ move, Tab fills in,
//! Enter (or a tap) chooses, Escape closes. A page's command acts in the page; the agent's
//! (`/demo tools`) and anything unknown go to the agent as typed.
//!
//! It comes with the turns' part. The composer hands it each key (and each press of Send)
//! first, through [`KeyHook`]: what the menu takes, the composer leaves alone.

use leptos::prelude::*;

use crate::commands::{self, Entry, Offer};
use crate::state::use_chat;

/// Where the composer asks the menu first: `Some(key)` for a key in the message box, `None`
/// for a message about to be sent (Enter or Send), which a page's command keeps from the
/// agent. `true`: the menu took it.
pub(crate) type KeyHook = StoredValue<Option<Callback<Option<leptos::ev::KeyboardEvent>, bool>>>;

/// The id of the list (the message box points at it while it is open).
const MENU_ID: &str = "slash-menu";

/// The `/` menu above the message box, filling `draft`.
#[component]
pub(crate) fn SlashMenu(draft: RwSignal<String>, keys: KeyHook) -> impl IntoView {
    let chat = use_chat();
    // The models one may ask for: the provider's list once loaded, else the default alone.
    let models = Memo::new(move |_| {
        let mut ids: Vec<String> = chat
            .models
            .with(|list| list.iter().map(|m| m.id.clone()).collect());
        if ids.is_empty() {
            ids.extend(chat.default_model.get());
        }
        ids
    });
    let list = Memo::new(move |_| {
        models.with(|models| {
            chat.commands
                .with(|agent| draft.with(|text| commands::entries(text, &Offer { models, agent })))
        })
    });
    // Escape closes the list for the text it was pressed on; typing opens it again.
    let dismissed = RwSignal::new(None::<String>);
    let open = Memo::new(move |_| {
        list.with(|l| !l.is_empty())
            && dismissed.with(|d| draft.with(|text| d.as_ref() != Some(text)))
    });
    let active = RwSignal::new(0_usize);
    Effect::new(move |_| {
        list.track();
        active.set(0);
    });

    #[cfg(feature = "hydrate")]
    let act = act::Acts::new(chat, draft);
    #[cfg(feature = "hydrate")]
    let choose = move |entry: Entry| act.choose(entry);
    #[cfg(not(feature = "hydrate"))]
    let choose = move |entry: Entry| drop(entry);

    let on_key = Callback::new(move |key: Option<leptos::ev::KeyboardEvent>| {
        #[cfg(feature = "hydrate")]
        {
            act.key(key, open, list, active, dismissed)
        }
        #[cfg(not(feature = "hydrate"))]
        {
            let _ = key;
            false
        }
    });
    keys.set_value(Some(on_key));
    on_cleanup(move || {
        let _ = keys.try_set_value(None);
    });

    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let Some(field) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(crate::document::COMPOSER_ID))
        else {
            return;
        };
        // A text box's own attributes (ARIA 1.2 allows `aria-expanded` on a combobox, not
        // on a textarea): it offers a list, names it while it is open, and its active line.
        let is_open = open.get();
        let _ = field.set_attribute("aria-autocomplete", "list");
        let _ = field.set_attribute("aria-haspopup", "listbox");
        if is_open {
            let _ = field.set_attribute("aria-controls", MENU_ID);
            let _ = field.set_attribute("aria-activedescendant", &option_id(active.get()));
            act::reveal(&option_id(active.get()));
        } else {
            let _ = field.remove_attribute("aria-controls");
            let _ = field.remove_attribute("aria-activedescendant");
        }
    });

    move || {
        open.get().then(|| {
            view! {
                <ul class="slash-menu" id=MENU_ID role="listbox" aria-label="Commands" tabindex="0">
                    {list.get().into_iter().enumerate().map(|(i, entry)| {
                        let text = entry.text.clone();
                        let args = entry.args.clone();
                        let what = entry.what.clone();
                        view! {
                            <li
                                role="option"
                                id=option_id(i)
                                class="slash-option"
                                aria-selected=move || if active.get() == i { "true" } else { "false" }
                                // The message box keeps the focus (and a phone its keyboard).
                                on:pointerdown=|ev| ev.prevent_default()
                                on:mousedown=|ev| ev.prevent_default()
                                on:pointerenter=move |_| active.set(i)
                                on:click=move |_| choose(entry.clone())
                            >
                                <span class="slash-name">{text}</span>
                                {(!args.is_empty()).then(|| view! { <span class="slash-args">{args}</span> })}
                                <span class="slash-what">{what}</span>
                            </li>
                        }
                    }).collect_view()}
                </ul>
            }
        })
    }
}

fn option_id(i: usize) -> String {
    format!("slash-option-{i}")
}

/// What the menu does in the browser.
#[cfg(feature = "hydrate")]
mod act {
    use super::*;
    use crate::commands::{Action, Typed};
    use crate::state::{ChatState, PageCommands, Sender};
    use anchor::Mode;

    /// What choosing needs: the page and what it offers.
    #[derive(Clone, Copy)]
    pub(super) struct Acts {
        chat: ChatState,
        draft: RwSignal<String>,
        page: Option<PageCommands>,
        send: Option<Sender>,
        /// Why a model chosen here was refused (said in a notice).
        problem: RwSignal<Option<String>>,
    }

    impl Acts {
        pub(super) fn new(chat: ChatState, draft: RwSignal<String>) -> Self {
            let problem = RwSignal::new(None::<String>);
            Effect::new(move |_| {
                if let Some(why) = problem.get() {
                    crate::components::show_toast(chat, &why, None, false);
                }
            });
            Acts {
                chat,
                draft,
                page: use_context::<PageCommands>(),
                send: use_context::<Sender>(),
                problem,
            }
        }

        /// A key in the message box (`None`: the message is about to be sent). `true`: taken
        /// here.
        pub(super) fn key(
            self,
            key: Option<leptos::ev::KeyboardEvent>,
            open: Memo<bool>,
            list: Memo<Vec<Entry>>,
            active: RwSignal<usize>,
            dismissed: RwSignal<Option<String>>,
        ) -> bool {
            let Some(ev) = key else {
                return self.run_typed();
            };
            if ev.is_composing() || ev.alt_key() || ev.ctrl_key() || ev.meta_key() {
                return false;
            }
            let name = ev.key();
            let took = if open.get_untracked() {
                let count = list.with_untracked(Vec::len);
                let at = active.get_untracked().min(count.saturating_sub(1));
                let entry = move || list.with_untracked(|l| l.get(at).cloned());
                match name.as_str() {
                    "ArrowDown" => {
                        active.set((at + 1) % count);
                        true
                    }
                    "ArrowUp" => {
                        active.set((at + count - 1) % count);
                        true
                    }
                    "Tab" if !ev.shift_key() => {
                        if let Some(entry) = entry() {
                            self.fill(&entry);
                        }
                        true
                    }
                    "Enter" if !ev.shift_key() => {
                        if let Some(entry) = entry() {
                            self.choose(entry);
                        }
                        true
                    }
                    "Escape" if !ev.shift_key() => {
                        dismissed.set(Some(self.draft.get_untracked()));
                        true
                    }
                    _ => false,
                }
            } else {
                false
            };
            if took {
                ev.prevent_default();
                ev.stop_propagation();
            }
            took
        }

        /// Puts the entry's text in the message box (a space after a command that takes
        /// more), for more typing.
        fn fill(self, entry: &Entry) {
            let more = entry.needs_more || !entry.args.is_empty();
            self.draft
                .set(format!("{}{}", entry.text, if more { " " } else { "" }));
        }

        /// A line chosen: a command that needs an argument is filled in; a page's command
        /// runs; an agent's goes to the agent.
        pub(super) fn choose(self, entry: Entry) {
            if entry.needs_more {
                self.fill(&entry);
                return;
            }
            match self.parse(&entry.text) {
                Typed::Page(action) => {
                    self.draft.set(String::new());
                    self.perform(action);
                }
                Typed::Incomplete => self.fill(&entry),
                Typed::Text => {
                    if let Some(Sender(send)) = self.send {
                        self.draft.set(String::new());
                        send.run(entry.text);
                    }
                }
            }
        }

        /// What is typed, sent: a page's command runs here (`true`); anything else goes on
        /// to the agent (`false`).
        fn run_typed(self) -> bool {
            let text = self.draft.get_untracked();
            match self.parse(&text) {
                Typed::Text => false,
                Typed::Page(action) => {
                    self.draft.set(String::new());
                    self.perform(action);
                    true
                }
                Typed::Incomplete => {
                    let word = text.split_whitespace().next().unwrap_or_default();
                    let message = format!(
                        "{word} does not take that. Type / to see the commands and what they take."
                    );
                    crate::components::show_toast(self.chat, &message, None, false);
                    true
                }
            }
        }

        fn parse(self, text: &str) -> Typed {
            let chat = self.chat;
            let mut models: Vec<String> = chat
                .models
                .with_untracked(|list| list.iter().map(|m| m.id.clone()).collect());
            if models.is_empty() {
                models.extend(chat.default_model.get_untracked());
            }
            chat.commands.with_untracked(|agent| {
                commands::parse(
                    text,
                    &Offer {
                        models: &models,
                        agent,
                    },
                )
            })
        }

        fn perform(self, action: Action) {
            let chat = self.chat;
            let say = |message: &str| crate::components::show_toast(chat, message, None, false);
            match action {
                Action::New => {
                    chat.settings.set(false);
                    crate::nav::go(chat, crate::nav::NEW_CHAT);
                }
                Action::Mode(mode) => {
                    let mode = mode.unwrap_or(match chat.mode.get_untracked() {
                        Mode::TransparentStream => Mode::CompactWorklog,
                        _ => Mode::TransparentStream,
                    });
                    if let Some(page) = self.page {
                        page.set_mode.run(mode);
                    }
                }
                Action::Model(id) => super::super::model_picker::choose(chat, self.problem, id),
                Action::Theme(theme) => {
                    let theme = theme.unwrap_or_else(|| opposite(chat.theme.get_untracked()));
                    chat.theme.set(theme);
                    crate::prefs::apply_theme(theme);
                }
                Action::Export(format) => match chat.session_id.get_untracked() {
                    Some(session_id) => download(session_id, format),
                    None => say("Nothing to export yet: send a message first."),
                },
                Action::Retry => {
                    let last = chat.turns.with_untracked(|t| t.last().cloned());
                    match last {
                        None => say("Nothing to retry yet."),
                        Some(_) if chat.running_turn().is_some() => {
                            say("A turn is running: stop it first (/stop).")
                        }
                        Some(turn) => crate::branches::retry(chat, &turn),
                    }
                }
                Action::Stop => match (chat.running_turn(), self.page) {
                    (Some(_), Some(page)) => page.stop.run(()),
                    _ => say("Nothing is running."),
                },
                Action::Help => chat.settings.set(true),
            }
        }
    }

    /// Light ↔ dark; from the system's theme, the other one than it shows.
    fn opposite(theme: crate::api::Theme) -> crate::api::Theme {
        use crate::api::Theme;
        let dark_now = match theme {
            Theme::Dark => true,
            Theme::Light => false,
            Theme::System => web_sys::window()
                .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
                .is_some_and(|m| m.matches()),
        };
        if dark_now {
            Theme::Light
        } else {
            Theme::Dark
        }
    }

    /// Downloads the conversation as the Export menu does.
    fn download(session_id: String, format: &str) {
        use wasm_bindgen::JsCast;
        let query = crate::api::ExportQuery {
            session_id,
            format: Some(format.to_owned()),
        };
        let href = crate::base::href(&crate::api::url(crate::api::paths::SESSION_EXPORT, &query));
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return;
        };
        let Some(link) = document
            .create_element("a")
            .ok()
            .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
        else {
            return;
        };
        let _ = link.set_attribute("href", &href);
        let _ = link.set_attribute("download", "");
        link.click();
    }

    /// Scrolls the list so that the active line is in view.
    pub(super) fn reveal(id: &str) {
        let Some(option) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(id))
        else {
            return;
        };
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_block(web_sys::ScrollLogicalPosition::Nearest);
        option.scroll_into_view_with_scroll_into_view_options(&options);
    }
}
