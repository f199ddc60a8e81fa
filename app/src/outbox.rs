//! The outbox: a message on its way to the server. It is sent once (a new conversation is
//! created first), kept while the server cannot be reached, tried again with the same client
//! id (so a first attempt whose answer was lost never starts a second turn), and queued when
//! a turn is running. The text stays in the composer until the server has it.

use leptos::prelude::*;

use crate::client::Failure;
use crate::lazy::Task;
use crate::state::ChatState;

/// Sends a message: starts a turn (creating the session first on a new conversation), or
/// queues it while a turn runs. The text stays in the composer until the server has it.
pub(crate) fn send(chat: ChatState, text: String) {
    if chat.outbox.with_untracked(Option::is_some) {
        return;
    }
    // The files go with the message: they leave the composer with it (and come back if the
    // server refuses it).
    let attachments: Vec<crate::api::AttachmentData> = chat
        .files
        .with_untracked(|f| f.iter().filter_map(|p| p.ready().cloned()).collect());
    chat.files
        .update(|f| f.retain(|p| p.state == crate::state::FileState::Uploading));
    let out = crate::state::Outgoing {
        session_id: chat.session_id.get_untracked(),
        text,
        client_id: crate::client::client_id(),
        failed: None,
        model: chat.model.get_untracked(),
        attachments,
        stranded: false,
    };
    chat.outbox.set(Some(out.clone()));
    dispatch(chat, out);
}

/// Sends the waiting message again, unless an attempt is on its way. A retry carries the same
/// client id, so a first attempt that reached the server but whose answer was lost does not
/// start a second turn.
pub(crate) fn attempt(chat: ChatState) {
    leptos::task::spawn_local(async move {
        // What sends it first (in a split build, the turns' part, which also follows the
        // turn): while that cannot come, the message stays marked as waiting (nothing
        // flickers) and the next try asks again.
        if crate::live::prepare().await.is_err() {
            return;
        }
        let Some(mut out) = chat.outbox.get_untracked() else {
            return;
        };
        // Another account's now: never sent.
        if out.stranded || out.failed.take().is_none() {
            return;
        }
        chat.outbox.set(Some(out.clone()));
        dispatch(chat, out);
    });
}

/// One attempt of `out`, marked in flight in the outbox.
fn dispatch(chat: ChatState, mut out: crate::state::Outgoing) {
    chat.error.set(None);
    leptos::task::spawn_local(async move {
        let result = match deliverer(chat, out.clone()).await {
            Ok(task) => task.await,
            // Its code could not be fetched: as if the server could not be reached (it could
            // not, for that file), the message waits and goes once it answers again.
            Err(_) => Err(crate::client::Failure::new(0, "")),
        };
        let still_ours = chat
            .outbox
            .with_untracked(|o| o.as_ref().is_some_and(|o| o.client_id == out.client_id));
        match result {
            Ok(session) => {
                if still_ours {
                    chat.outbox.set(None);
                }
                // The text leaves the field (or the kept draft of a conversation the reader
                // has left meanwhile) once the server has it.
                if chat.session_id.get_untracked().as_deref() == Some(session.as_str()) {
                    if chat.draft.with_untracked(|d| *d == out.text) {
                        chat.draft.set(String::new());
                    }
                    chat.following.set(true);
                } else if crate::components::stored_draft(Some(&session)) == out.text {
                    crate::components::store_draft(Some(&session), "");
                }
            }
            Err(e) if e.status == 0 => {
                if still_ours {
                    out.failed = Some("the server cannot be reached.".to_owned());
                    chat.outbox.set(Some(out));
                }
            }
            // The browser is signed in as someone else now (this one signed out, another
            // signed in): the server took nothing, and nothing will try again.
            Err(e) if e.account_changed => {
                if still_ours {
                    out.failed = Some(e.message);
                    out.stranded = true;
                    chat.outbox.set(Some(out));
                }
            }
            Err(e) => {
                // Refused (too long, say): the text stays to be changed, and the files with
                // it; nothing retries it.
                if still_ours {
                    chat.outbox.set(None);
                    let back = out.attachments.iter().map(|a| crate::state::PendingFile {
                        key: crate::components::file_key(),
                        name: a.name.clone(),
                        size: a.size,
                        state: crate::state::FileState::Ready(a.clone()),
                    });
                    chat.files.update(|f| {
                        let mut all: Vec<_> = back.collect();
                        all.append(f);
                        *f = all;
                    });
                }
                chat.fail(&e);
            }
        }
    });
}

// Getting a message to the server ends in a turn to draw and follow: in a split build its code
// comes with the turns' part (`components::turns`), and until that part is here the message
// waits in the outbox as it does for a server that cannot be reached.
crate::lazy::split_off!(
    turn_views,
    fn deliverer(chat: ChatState, out: crate::state::Outgoing) -> Task<Result<String, Failure>> {
        Box::pin(async move { deliver(chat, &out).await })
    }
);

/// One attempt at getting a message to the server; the session it went to.
async fn deliver(chat: ChatState, out: &crate::state::Outgoing) -> Result<String, Failure> {
    use crate::api::{QueuedData, SendBody};
    use crate::client;

    // The reader may open another conversation while this waits for the server: what
    // comes back then goes to the server's record only, not into the page shown.
    let epoch = chat.epoch.get_value();
    let created = out.session_id.is_none();
    let session_id = match out.session_id.clone() {
        Some(id) => id,
        None => {
            let summary = client::new_session().await?.session;
            let id = summary.id.clone();
            chat.sessions
                .update(|list| crate::components::place_in(list, summary));
            // If the reader went elsewhere meanwhile, the message still goes to the new
            // session, which stays in the background.
            let here = chat.epoch.get_value() == epoch && chat.session_id.get_untracked().is_none();
            // Retries go to this session from now on.
            chat.outbox.update(|o| {
                if let Some(o) = o.as_mut().filter(|o| o.client_id == out.client_id) {
                    o.session_id = Some(id.clone());
                }
            });
            if here {
                // The draft moves with it: it is this conversation's until the server has it.
                crate::components::store_draft(Some(&id), &chat.draft.get_untracked());
                crate::components::store_draft(None, "");
                chat.session_id.set(Some(id.clone()));
                crate::nav::correct_address(chat);
            }
            id
        }
    };
    let body = SendBody {
        session_id: session_id.clone(),
        message: out.text.clone(),
        client_id: Some(out.client_id.clone()),
        attachments: out.attachments.iter().map(|a| a.id.clone()).collect(),
        // The turn carries the model picked (a new conversation's first turn sets it; for an
        // open one it was stored when picked, and the server changes nothing).
        model: out.model.clone(),
    };
    let shown = chat.shows(&session_id, epoch);
    if shown && chat.running_turn().is_some() {
        let answer = client::queue(&body).await?;
        if !chat.shows(&session_id, epoch) {
            return Ok(session_id);
        }
        if let (true, Some(item)) = (answer.queued, answer.item) {
            let item = QueuedData {
                id: item.id,
                content: item.content,
                attachments: out.attachments.clone(),
            };
            let known = chat
                .queued
                .with_untracked(|q| q.iter().any(|q| q.id == item.id));
            if !known {
                chat.queued.update(|q| q.push(item));
            }
            chat.announcement.set("Message queued".into());
            // The turn ended while this was on its way: its end found no follow-up on the
            // page to look for, and the server starts this one now (or has).
            if chat.running_turn().is_none() {
                crate::nav::catch_up(chat, session_id.clone());
            }
        } else {
            // The run ended meanwhile and this started at once: show it.
            crate::nav::catch_up(chat, session_id.clone());
        }
        return Ok(session_id);
    }
    let answer = match client::start(&body).await {
        Ok(answer) => answer,
        Err(e) if e.status == 409 => {
            // The session is busy (another tab started a turn): queue this one, and show both.
            client::queue(&body).await?;
            if chat.shows(&session_id, epoch) {
                crate::nav::catch_up(chat, session_id.clone());
            }
            return Ok(session_id);
        }
        Err(e) => {
            // Refused (too long, too many running…): a conversation made for this message is
            // not kept (a server out of reach may still take it: that one waits, and goes).
            if created && e.status != 0 && !e.account_changed {
                unmake(chat, &session_id, &out.text, epoch).await;
            }
            return Err(e);
        }
    };
    let duplicate = answer.duplicate;
    if let Some(at) = answer.user_message.as_ref().map(|m| m.created_at) {
        touch(chat, &session_id, at);
    }
    let turn = crate::branches::started_turn(answer);
    let run_id = turn.run_id.clone();
    if duplicate {
        // An earlier attempt started it: the page learns of it as of the journal.
        if chat.shows(&session_id, epoch) {
            crate::nav::catch_up(chat, session_id.clone());
        }
        return Ok(session_id);
    }
    chat.mark_session(&session_id, Some(run_id.clone()));
    let known = chat
        .turns
        .with_untracked(|ts| ts.iter().any(|t| t.run_id == run_id));
    if chat.shows(&session_id, epoch) && !known {
        let handle = chat.new_turn(&session_id, &turn);
        chat.turns.update(|turns| turns.push(handle));
        chat.announcement.set("The assistant is responding".into());
    }
    Ok(session_id)
}

/// Takes back the conversation a refused first message made: gone from the server and the
/// list, and the page (if it still shows it) a new conversation again, with the text.
async fn unmake(chat: ChatState, session_id: &str, text: &str, epoch: u64) {
    let _ = crate::client::delete(session_id).await;
    chat.sessions
        .update(|list| list.retain(|s| s.id != session_id));
    if chat.epoch.get_value() == epoch
        && chat.session_id.get_untracked().as_deref() == Some(session_id)
    {
        crate::components::store_draft(Some(session_id), "");
        crate::components::store_draft(None, text);
        chat.session_id.set(None);
        crate::nav::correct_address(chat);
    }
}

/// A conversation that took a message at `at` moves where the server now lists it (the one
/// rule, [`crate::api::SessionSummary::sidebar_order`]): the sidebar is the same live as
/// after a reload.
fn touch(chat: ChatState, session_id: &str, at: f64) {
    chat.sessions.update(|list| {
        if let Some(i) = list.iter().position(|s| s.id == session_id) {
            let mut session = list.remove(i);
            session.updated_at = session.updated_at.max(at);
            crate::components::place_in(list, session);
        }
    });
}
