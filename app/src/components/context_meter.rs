use leptos::prelude::*;

use crate::api::ContextUse;
#[cfg(feature = "hydrate")]
use crate::state::use_chat;

/// How long typing must pause before the meter asks again, in milliseconds.
#[cfg(feature = "hydrate")]
const PAUSE_MS: u64 = 350;

/// The share of the window past which the meter warns.
const WARN_AT: f64 = 0.6;

/// The context meter in the composer's footer: how much of the model's context the next
/// message would use (the estimate the server trims history by, for what is typed now), a bar
/// that turns to a warning near the limit, and which earlier messages the next turn would
/// leave out. Hidden where the window is not known.
#[component]
pub(crate) fn ContextMeter() -> impl IntoView {
    let known = RwSignal::new(None::<ContextUse>);
    #[cfg(feature = "hydrate")]
    {
        let chat = use_chat();
        // Asked again when the conversation, its model or its turns change (at once), and as
        // the message is typed (once typing pauses). An older answer never replaces a newer.
        let asked = StoredValue::new(0_u64);
        let ask = move |session_id: String, draft_bytes: u64| {
            asked.update_value(|n| *n += 1);
            let mine = asked.get_value();
            leptos::task::spawn_local(async move {
                let query = crate::api::ContextQuery {
                    session_id,
                    draft_bytes,
                };
                let answer = crate::client::context_use(&query).await.ok();
                if asked.try_get_value() == Some(mine) {
                    let _ = known.try_set(answer.filter(|a| a.window.is_some()));
                }
            });
        };
        Effect::new(move |_| {
            let session = chat.session_id.get();
            chat.model.track();
            chat.idle.track();
            let bytes = chat.draft.with_untracked(|d| d.len() as u64);
            match session {
                Some(session) => ask(session, bytes),
                None => known.set(None),
            }
        });
        Effect::new(move |first: Option<()>| {
            let bytes = chat.draft.with(|d| d.len() as u64);
            if first.is_none() {
                return;
            }
            let pending = asked.get_value() + 1;
            asked.set_value(pending);
            set_timeout(
                move || {
                    if asked.try_get_value() != Some(pending) {
                        return;
                    }
                    if let Some(session) = chat.session_id.get_untracked() {
                        ask(session, bytes);
                    }
                },
                std::time::Duration::from_millis(PAUSE_MS),
            );
        });
    }
    move || {
        known.get().and_then(|usage| {
            let window = usage.window?;
            let share = (usage.used as f64 / window.max(1) as f64).clamp(0.0, 1.0);
            let level = if usage.too_long || usage.left_out > 0 {
                "full"
            } else if share >= WARN_AT {
                "warn"
            } else {
                "ok"
            };
            let note = left_out_note(&usage);
            let label = format!(
                "Context: about {} of {} tokens{}",
                crate::api::grouped(usage.used),
                crate::api::grouped(window),
                note.as_deref().map(|n| format!(". {n}")).unwrap_or_default()
            );
            Some(view! {
                <div
                    class="context-meter"
                    data-level=level
                    role="meter"
                    aria-label="Context used"
                    aria-valuemin="0"
                    aria-valuemax=window.to_string()
                    aria-valuenow=usage.used.min(window).to_string()
                    aria-valuetext=label.clone()
                    title=label
                >
                    <span class="context-bar" aria-hidden="true">
                        <span class="context-fill" style=format!("width:{:.1}%", share * 100.0)></span>
                    </span>
                    <span class="context-text">{format!("{} / {}", compact(usage.used), compact(window))}</span>
                    {note.map(|n| view! { <span class="context-note">{n}</span> })}
                </div>
            })
        })
    }
}

/// What the next turn would leave out, as a person reads it (`None`: nothing).
fn left_out_note(usage: &ContextUse) -> Option<String> {
    if usage.too_long {
        return Some("Too long for this model's context".to_owned());
    }
    match usage.left_out {
        0 => None,
        1 => Some("The oldest message will be left out".to_owned()),
        n if n >= usage.messages => Some("Earlier messages will be left out".to_owned()),
        n => Some(format!("The oldest {n} messages will be left out")),
    }
}

/// A token count in a few characters: `940`, `1.2k`, `128k`.
fn compact(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..9_950 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{}k", (n + 500) / 1_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_compact() {
        assert_eq!(compact(940), "940");
        assert_eq!(compact(1_234), "1.2k");
        assert_eq!(compact(9_949), "9.9k");
        assert_eq!(compact(9_950), "10k");
        assert_eq!(compact(128_000), "128k");
    }

    #[test]
    fn the_note_says_what_is_left_out() {
        let mut usage = ContextUse {
            window: Some(2_000),
            messages: 6,
            ..ContextUse::default()
        };
        assert_eq!(left_out_note(&usage), None);
        usage.left_out = 1;
        assert_eq!(
            left_out_note(&usage).as_deref(),
            Some("The oldest message will be left out")
        );
        usage.left_out = 4;
        assert_eq!(
            left_out_note(&usage).as_deref(),
            Some("The oldest 4 messages will be left out")
        );
        usage.left_out = 6;
        assert_eq!(
            left_out_note(&usage).as_deref(),
            Some("Earlier messages will be left out")
        );
        usage.too_long = true;
        assert_eq!(
            left_out_note(&usage).as_deref(),
            Some("Too long for this model's context")
        );
    }
}
