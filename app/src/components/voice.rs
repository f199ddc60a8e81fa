//! Talking instead of typing: a microphone button beside the message box, where the browser
//! recognizes speech (`SpeechRecognition`, or Chrome's `webkitSpeechRecognition`). The words
//! are appended to what is in the box as they are recognized; a tap on the button or about two
//! seconds without a word stops listening; nothing is sent without Send.

use leptos::prelude::*;

/// How long a pause ends listening.
#[cfg(feature = "hydrate")]
const QUIET_MS: u64 = 2_000;

/// The microphone button (only where the browser offers recognition: it appears once the page
/// is live, so that the document the server sent and the hydrated one agree).
#[component]
pub(crate) fn VoiceButton(draft: RwSignal<String>) -> impl IntoView {
    let offered = RwSignal::new(false);
    let listening = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    let session = StoredValue::new_local(None::<listen::Session>);
    #[cfg(feature = "hydrate")]
    let starting = StoredValue::new_local(false);
    #[cfg(feature = "hydrate")]
    {
        Effect::new(move |_| offered.set(listen::recognizer().is_some()));
        // Listening belongs to the conversation it began in: opening another one, or leaving
        // the page, ends it (the words would go into another draft).
        let stop = move || {
            session.try_with_value(|s| {
                if let Some(s) = s {
                    s.abort();
                }
            });
        };
        let chat = crate::state::use_chat();
        Effect::new(move |previous: Option<Option<String>>| {
            let shown = chat.session_id.get();
            if previous.is_some_and(|p| p != shown) {
                stop();
            }
            shown
        });
        on_cleanup(stop);
    }
    let toggle = move |_| {
        #[cfg(feature = "hydrate")]
        {
            if listening.get_untracked() {
                session.with_value(|s| {
                    if let Some(s) = s {
                        s.stop();
                    }
                });
            } else if !starting.get_value() {
                // Listening's code is fetched on the first tap (see `crate::lazy`); taps
                // meanwhile start nothing more.
                starting.set_value(true);
                let chat = crate::state::use_chat();
                let shown = chat.session_id.get_untracked();
                leptos::task::spawn_local(async move {
                    let starter = listener(chat, draft, listening, session).await;
                    let _ = starting.try_set_value(false);
                    // The button gone, or another conversation opened meanwhile: not now.
                    let here = listening.try_get_untracked().is_some()
                        && chat.session_id.try_get_untracked() == Some(shown);
                    match starter {
                        Ok(start) if here => {
                            if let Some(started) = start() {
                                let _ = session.try_set_value(Some(started));
                                let _ = listening.try_set(true);
                            }
                        }
                        Ok(_) => {}
                        Err(_) => crate::lazy::unavailable(chat, "Talking could not start"),
                    }
                });
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (draft, listening);
    };
    view! {
        {move || offered.get().then(|| view! {
            <button
                type="button"
                class="composer-voice"
                class:listening=move || listening.get()
                aria-label=move || if listening.get() { "Stop listening" } else { "Talk" }
                aria-pressed=move || if listening.get() { "true" } else { "false" }
                title=move || if listening.get() { "Listening… tap to stop" } else { "Talk instead of typing" }
                on:click=toggle
            >
                <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
                    <path
                        d="M12 3a3 3 0 0 0-3 3v6a3 3 0 0 0 6 0V6a3 3 0 0 0-3-3zM5.5 11a6.5 6.5 0 0 0 13 0M12 17.5V21"
                        fill="none"
                        stroke="currentColor"
                        stroke-width="1.8"
                        stroke-linecap="round"
                        stroke-linejoin="round"
                    />
                </svg>
            </button>
        })}
    }
}

#[cfg(feature = "hydrate")]
crate::lazy::split_off!(
    voice_input,
    fn listener(
        chat: crate::state::ChatState,
        draft: RwSignal<String>,
        listening: RwSignal<bool>,
        session: StoredValue<Option<listen::Session>, LocalStorage>,
    ) -> Box<dyn FnOnce() -> Option<listen::Session>> {
        Box::new(move || listen::start(chat, draft, listening, session))
    }
);

#[cfg(feature = "hydrate")]
mod listen {
    use js_sys::{Array, Function, Reflect};
    use leptos::prelude::*;
    use wasm_bindgen::prelude::*;

    use crate::state::{ChatState, Problem};

    /// The browser's recognizer class, if it has one.
    pub(super) fn recognizer() -> Option<Function> {
        let window = web_sys::window()?;
        ["SpeechRecognition", "webkitSpeechRecognition"]
            .into_iter()
            .filter_map(|name| Reflect::get(&window, &name.into()).ok())
            .find_map(|ctor| ctor.dyn_into::<Function>().ok())
    }

    fn get(target: &JsValue, key: &str) -> JsValue {
        Reflect::get(target, &key.into()).unwrap_or(JsValue::UNDEFINED)
    }

    fn call(target: &JsValue, method: &str) {
        if let Ok(f) = get(target, method).dyn_into::<Function>() {
            let _ = f.call0(target);
        }
    }

    /// One time of listening: the recognizer and its handlers (kept as long as it listens).
    pub(crate) struct Session {
        recognition: JsValue,
        _handlers: Vec<Closure<dyn FnMut(JsValue)>>,
    }

    impl Session {
        /// Stops listening (the recognizer then ends, which the page hears).
        pub(super) fn stop(&self) {
            call(&self.recognition, "stop");
        }

        /// Stops at once, dropping what was not recognized yet.
        pub(super) fn abort(&self) {
            call(&self.recognition, "abort");
        }
    }

    impl Drop for Session {
        /// The recognizer lets go of the handlers before they go: a late event finds none.
        fn drop(&mut self) {
            for name in ["onresult", "onerror", "onend"] {
                let _ = Reflect::set(&self.recognition, &name.into(), &JsValue::NULL);
            }
        }
    }

    /// Every transcript of a result event so far, in order (the final ones and the current guess).
    fn transcript(event: &JsValue) -> String {
        let results = get(event, "results");
        let count = get(&results, "length").as_f64().unwrap_or(0.0) as u32;
        let mut text = String::new();
        for i in 0..count {
            let result = Reflect::get_u32(&results, i).unwrap_or(JsValue::UNDEFINED);
            let best = Reflect::get_u32(&result, 0).unwrap_or(JsValue::UNDEFINED);
            if let Some(words) = get(&best, "transcript").as_string() {
                text.push_str(&words);
            }
        }
        text.trim().to_owned()
    }

    /// Starts listening; the words go after what `draft` holds now.
    pub(super) fn start(
        chat: ChatState,
        draft: RwSignal<String>,
        listening: RwSignal<bool>,
        session: StoredValue<Option<Session>, LocalStorage>,
    ) -> Option<Session> {
        let recognition = Reflect::construct(&recognizer()?, &Array::new()).ok()?;
        let _ = Reflect::set(&recognition, &"continuous".into(), &true.into());
        let _ = Reflect::set(&recognition, &"interimResults".into(), &true.into());
        if let Some(lang) = web_sys::window().and_then(|w| w.navigator().language()) {
            let _ = Reflect::set(&recognition, &"lang".into(), &lang.into());
        }
        let typed = draft.get_untracked();
        let before = if typed.is_empty() || typed.ends_with(char::is_whitespace) {
            typed
        } else {
            format!("{typed} ")
        };
        // A pause of QUIET_MS ends listening: each result pushes the end further.
        let heard = StoredValue::new(0u64);
        let quiet = {
            let recognition = recognition.clone();
            move || {
                heard.update_value(|n| *n += 1);
                let mine = heard.get_value();
                let recognition = recognition.clone();
                set_timeout(
                    move || {
                        if heard.get_value() == mine && listening.get_untracked() {
                            call(&recognition, "stop");
                        }
                    },
                    std::time::Duration::from_millis(super::QUIET_MS),
                );
            }
        };
        let on_result = {
            let quiet = quiet.clone();
            Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
                // Ended (stopped, or its conversation closed): a result that comes between the
                // end and the handlers' going goes nowhere.
                if listening.try_get_untracked() != Some(true) {
                    return;
                }
                let words = transcript(&event);
                if !words.is_empty() {
                    draft.set(format!("{before}{words}"));
                }
                quiet();
            })
        };
        let on_error = Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
            let kind = get(&event, "error").as_string().unwrap_or_default();
            let message = match kind.as_str() {
                // Silence, or stopped on purpose: nothing to say.
                "no-speech" | "aborted" => return,
                "not-allowed" | "service-not-allowed" => "The microphone is not allowed: \
                     let this site use it in the browser's settings to talk instead of typing."
                    .to_owned(),
                "audio-capture" => "No microphone was found.".to_owned(),
                other => format!("Speech recognition stopped ({other})."),
            };
            chat.error.set(Some(Problem {
                message,
                network: false,
            }));
        });
        let on_end = Closure::<dyn FnMut(JsValue)>::new(move |_| {
            listening.set(false);
            // Dropped after this handler has returned, not while it runs.
            set_timeout(
                move || session.set_value(None),
                std::time::Duration::from_millis(0),
            );
        });
        for (name, handler) in [
            ("onresult", &on_result),
            ("onerror", &on_error),
            ("onend", &on_end),
        ] {
            let _ = Reflect::set(&recognition, &name.into(), handler.as_ref());
        }
        call(&recognition, "start");
        quiet();
        Some(Session {
            recognition,
            _handlers: vec![on_result, on_error, on_end],
        })
    }
}
