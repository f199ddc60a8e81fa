//! The page's reactive state: one signal per turn (its [`TurnState`]) and the UI-local
//! preferences around it. Display preferences live here, never in the anchor.

use anchor::Mode;
use leptos::prelude::*;

use crate::api::{MessageData, QueuedData, SessionPage, SessionSummary, TurnData, Versions};
use crate::model::TurnState;

/// What the live connection of the running turn is doing. (The server renders `Idle`: the
/// rest happen in the browser.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connection {
    /// Nothing is running.
    Idle,
    /// Connected and receiving.
    #[cfg(feature = "hydrate")]
    Live,
    /// The stream dropped; the browser is reconnecting.
    #[cfg(feature = "hydrate")]
    Reconnecting,
    /// Reconnected; the journal resumed after this seq.
    #[cfg(feature = "hydrate")]
    Resumed(u64),
    /// The server cannot be reached.
    #[cfg(feature = "hydrate")]
    Offline,
}

impl Connection {
    /// The indicator's text.
    pub fn label(self) -> String {
        match self {
            Connection::Idle => String::new(),
            #[cfg(feature = "hydrate")]
            Connection::Live => "Live".into(),
            #[cfg(feature = "hydrate")]
            Connection::Reconnecting => "Reconnecting…".into(),
            #[cfg(feature = "hydrate")]
            Connection::Resumed(seq) => format!("Resumed from event {seq}"),
            #[cfg(feature = "hydrate")]
            Connection::Offline => "Offline".into(),
        }
    }

    /// The `data-connection` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Connection::Idle => "idle",
            #[cfg(feature = "hydrate")]
            Connection::Live => "live",
            #[cfg(feature = "hydrate")]
            Connection::Reconnecting => "reconnecting",
            #[cfg(feature = "hydrate")]
            Connection::Resumed(_) => "resumed",
            #[cfg(feature = "hydrate")]
            Connection::Offline => "offline",
        }
    }

    /// The stream is down: reconnecting, or the server cannot be reached.
    pub fn down(self) -> bool {
        match self {
            #[cfg(feature = "hydrate")]
            Connection::Reconnecting | Connection::Offline => true,
            _ => false,
        }
    }
}

/// One turn on the page.
#[derive(Clone)]
pub struct TurnHandle {
    /// The run (also the key).
    pub run_id: String,
    /// The assistant turn id.
    pub turn_id: String,
    /// The user's message.
    pub user: MessageData,
    /// The anchor and what is derived from it.
    pub state: RwSignal<TurnState>,
    /// This turn's display mode, when it differs from the page's.
    pub mode: RwSignal<Option<Mode>>,
    /// The run was still producing events when the page learned of it.
    pub running: RwSignal<bool>,
    /// The reader watched this turn run on this page (it was running when the page got it):
    /// what the page showed while it ran stays in place when it settles.
    pub watched: bool,
    /// Which loading of the page data made this handle: a reload makes new handles for the
    /// same runs, and the page must draw those (see [`TurnHandle::key`]).
    pub epoch: u64,
    /// Where loading the rows of a turn shown as its snapshot stands.
    pub rows: RwSignal<Rows>,
    /// Which version of its place it is (retries and edits are the others).
    pub versions: Versions,
    /// The model that answers it (`None`: a backend with no choice of model).
    pub model: Option<String>,
}

/// Where loading the rows of a turn shown as its snapshot stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rows {
    /// Not asked for (or loaded: the turn no longer needs them).
    Idle,
    /// On their way.
    Loading,
    /// The last try failed, with this message (only the browser loads them).
    #[cfg(feature = "hydrate")]
    Failed(String),
}

impl TurnHandle {
    /// A turn from the page data, made by loading number `epoch`.
    pub fn new(session_id: &str, turn: &TurnData, epoch: u64) -> Self {
        TurnHandle {
            run_id: turn.run_id.clone(),
            turn_id: turn.turn_id.clone(),
            user: turn.user.clone(),
            state: RwSignal::new(TurnState::new(session_id, turn)),
            mode: RwSignal::new(None),
            running: RwSignal::new(turn.running),
            watched: turn.running,
            epoch,
            rows: RwSignal::new(Rows::Idle),
            versions: turn.versions,
            model: turn.model.clone(),
        }
    }

    /// What identifies the turn's view: its run, and the loading that made this handle.
    pub fn key(&self) -> (String, u64) {
        (self.run_id.clone(), self.epoch)
    }
}

/// The chat page's state, provided as context.
#[derive(Clone, Copy)]
pub struct ChatState {
    /// The open session.
    pub session_id: RwSignal<Option<String>>,
    /// Its title.
    pub title: RwSignal<String>,
    /// The sidebar (its first page, and the pages loaded after it).
    pub sessions: RwSignal<Vec<SessionSummary>>,
    /// More sessions follow those in the sidebar.
    pub more_sessions: RwSignal<bool>,
    /// The open session's turns (a window of its latest ones, and any loaded before them).
    pub turns: RwSignal<Vec<TurnHandle>>,
    /// The session has turns older than the ones shown.
    pub earlier: RwSignal<bool>,
    /// Queued follow-ups.
    pub queued: RwSignal<Vec<QueuedData>>,
    /// The page's display mode.
    pub mode: RwSignal<Mode>,
    /// The running turn's connection.
    pub connection: RwSignal<Connection>,
    /// Seconds the running turn has sent nothing, once that is long enough to say (a model
    /// thinking, or stuck): the header says "Waiting for the model (40 s)" instead of "Live".
    pub quiet: RwSignal<Option<u32>>,
    /// While it is quiet, why the server cannot save, if it cannot (`the disk is full`): the
    /// header says so instead of blaming the model.
    pub store_trouble: RwSignal<Option<String>>,
    /// The last status change, for screen readers.
    pub announcement: RwSignal<String>,
    /// An error to show above the composer.
    pub error: RwSignal<Option<Problem>>,
    /// The composer's text (kept per conversation, and across a reload, by the composer).
    pub draft: RwSignal<String>,
    /// Files attached in the composer: on their way to the server, kept there, or refused.
    pub files: RwSignal<Vec<PendingFile>>,
    /// Files are being dragged over the conversation.
    pub dragging: RwSignal<bool>,
    /// How deep inside the conversation the drag is (elements entered and not left).
    #[cfg(feature = "hydrate")]
    pub drag_depth: StoredValue<u32>,
    /// Who answers.
    pub agent: RwSignal<String>,
    /// Who is signed in (`None`: the server has no accounts).
    pub user: RwSignal<Option<crate::api::UserData>>,
    /// How many times page data was loaded into this state.
    pub epoch: StoredValue<u64>,
    /// Every event kind the server may send (see [`SessionPage::event_kinds`]).
    pub event_kinds: StoredValue<Vec<String>>,
    /// Owns the signals of the shown turns; replaced (and its signals disposed) by the next
    /// load, so that the page never keeps the journals of conversations it no longer shows.
    turn_owner: StoredValue<Option<Owner>>,
    /// The address asked for a session that does not exist (the newest one is shown).
    pub missing: RwSignal<bool>,
    /// Another conversation's data is on its way.
    pub loading: RwSignal<bool>,
    /// A message on its way to the server (or waiting for it to come back).
    pub outbox: RwSignal<Option<Outgoing>>,
    /// The transcript follows new content at its bottom (the reader is there).
    pub following: RwSignal<bool>,
    /// Content arrived below while the reader was scrolled up.
    pub unseen: RwSignal<bool>,
    /// The element id of a turn the address links to (`turn-…`), held in view until the
    /// reader scrolls, sends or jumps away: no following of the bottom and no late layout
    /// moves it off the screen meanwhile.
    pub pinned: StoredValue<Option<String>>,
    /// Prompts an empty conversation offers.
    pub examples: RwSignal<Vec<crate::api::Example>>,
    /// The agent's own slash commands (see [`crate::commands`]).
    pub commands: RwSignal<Vec<crate::api::Example>>,
    /// The model conversations get unless they ask for another (`None`: who answers offers
    /// no choice, and the composer shows no picker).
    pub default_model: RwSignal<Option<String>>,
    /// Who answers knows its model's context window (the composer shows a meter).
    pub context_meter: RwSignal<bool>,
    /// The model the open conversation asks for (`None`: the default); for a new one, the
    /// choice its first message carries.
    pub model: RwSignal<Option<String>>,
    /// The models offered, once asked for (`/api/models`).
    pub models: RwSignal<Vec<crate::api::ModelInfo>>,
    /// The colour theme this browser shows (Settings, made in the browser only, reads it).
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    pub theme: RwSignal<crate::api::Theme>,
    /// The Settings panel is open.
    pub settings: RwSignal<bool>,
    /// The agent keeps files here: the Files panel is offered.
    pub workspace: RwSignal<bool>,
    /// Where the Files panel is open (`None`: closed).
    pub files_at: RwSignal<Option<FilesAt>>,
    /// The page's clock: times and the sidebar's groups read it (the server's at first, so
    /// that hydration finds what it rendered; the browser's once the page runs).
    pub clock: RwSignal<crate::time::Clock>,
    /// A short notice at the bottom of the page (a conversation deleted, with Undo).
    pub toast: RwSignal<Option<Toast>>,
    /// The page is a copy this browser kept, shown because the server cannot be reached
    /// (false until the page is live, so that hydration finds what the server rendered).
    pub saved: RwSignal<bool>,
    /// No turn of the shown conversation runs (one memo for the page: every turn's actions
    /// read it, and a streaming turn's tokens do not reach them).
    pub idle: Memo<bool>,
}

/// Something that went wrong, shown above the composer until it no longer holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// What to tell the reader.
    pub message: String,
    /// The server could not be reached: the page clears it once the server answers again.
    pub network: bool,
}

/// What a conversation's "⋯" menu does to it (and Undo reverses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Deletes it (Undo brings it back for a while).
    Delete,
    /// Pins it to the top of the list, or unpins it.
    Pin(bool),
    /// Archives it, or brings it back.
    Archive(bool),
}

/// Where the Files panel is: a directory of the workspace, and the file shown beside it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilesAt {
    /// The directory listed (`""`: the top).
    pub dir: String,
    /// The file previewed, if one is.
    pub file: Option<String>,
}

impl FilesAt {
    /// The panel at the file `path` (a tool row's), its directory listed beside it.
    pub fn file(path: &str) -> Self {
        let path = path.trim().trim_start_matches("./");
        let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
        FilesAt {
            dir: dir.to_owned(),
            file: Some(path.to_owned()),
        }
    }
}

/// A short notice with, for a deleted conversation, what Undo brings back.
#[derive(Clone, Debug, PartialEq)]
pub struct Toast {
    /// Tells one notice from the next (a later one replaces it; its timer then does nothing).
    pub id: u64,
    /// What happened.
    pub message: String,
    /// What Undo reverses (a delete, an archive), and of which conversation.
    pub undo: Option<(Action, SessionSummary)>,
    /// An address the notice gives (a share link), with Copy.
    pub link: Option<String>,
    /// It was the one shown.
    pub was_shown: bool,
}

/// A message the reader sent that the server has not taken yet.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing {
    /// The conversation it was written in (`None`: a new one, created when it is sent).
    pub session_id: Option<String>,
    /// Its text.
    pub text: String,
    /// The id that makes a retry of it safe (the server starts it once).
    pub client_id: String,
    /// Why the last attempt failed, if it did; it is retried when the server answers again.
    pub failed: Option<String>,
    /// The model chosen for a new conversation (its first turn asks for it).
    pub model: Option<String>,
    /// The files it carries (uploaded already).
    pub attachments: Vec<crate::api::AttachmentData>,
    /// It will never be sent: the browser is signed in as another account than the one it
    /// was written by (a shared device). It stays in view, saying so.
    pub stranded: bool,
}

/// A file attached in the composer.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingFile {
    /// Tells the chips apart (the same file may be attached twice).
    pub key: u64,
    /// Its name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Where it stands.
    pub state: FileState,
}

/// Where a file attached in the composer stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    not(feature = "hydrate"),
    expect(
        dead_code,
        reason = "only the browser attaches files: a page the server renders has none pending"
    )
)]
pub enum FileState {
    /// On its way to the server.
    Uploading,
    /// Kept by the server: it goes with the next message.
    Ready(crate::api::AttachmentData),
    /// Refused (too large, a type not taken, the server unreachable): why.
    Failed(String),
}

impl PendingFile {
    /// The attachment, once the server has it.
    pub fn ready(&self) -> Option<&crate::api::AttachmentData> {
        match &self.state {
            FileState::Ready(a) => Some(a),
            _ => None,
        }
    }
}

impl ChatState {
    /// State for a loaded page.
    pub fn new(page: &SessionPage) -> Self {
        let turns = RwSignal::new(Vec::<TurnHandle>::new());
        let idle = Memo::new(move |_| {
            turns.with(|turns| {
                !turns
                    .iter()
                    .rev()
                    .any(|t| t.running.get() && t.state.with(|s| !s.ended))
            })
        });
        let state = ChatState {
            session_id: RwSignal::new(None),
            title: RwSignal::new(String::new()),
            sessions: RwSignal::new(Vec::new()),
            more_sessions: RwSignal::new(false),
            turns,
            idle,
            examples: RwSignal::new(Vec::new()),
            commands: RwSignal::new(Vec::new()),
            workspace: RwSignal::new(false),
            files_at: RwSignal::new(None),
            default_model: RwSignal::new(None),
            context_meter: RwSignal::new(false),
            model: RwSignal::new(None),
            models: RwSignal::new(Vec::new()),
            theme: RwSignal::new(
                page.theme
                    .as_deref()
                    .map(crate::api::Theme::parse)
                    .unwrap_or_default(),
            ),
            settings: RwSignal::new(false),
            clock: RwSignal::new(crate::time::Clock {
                now: page.now,
                offset: page.tz_offset.unwrap_or(0),
            }),
            toast: RwSignal::new(None),
            saved: RwSignal::new(false),
            earlier: RwSignal::new(false),
            queued: RwSignal::new(Vec::new()),
            mode: RwSignal::new(
                page.mode
                    .as_deref()
                    .map(Mode::parse_or_default)
                    .unwrap_or_default(),
            ),
            connection: RwSignal::new(Connection::Idle),
            quiet: RwSignal::new(None),
            store_trouble: RwSignal::new(None),
            announcement: RwSignal::new(String::new()),
            error: RwSignal::new(None),
            draft: RwSignal::new(String::new()),
            files: RwSignal::new(Vec::new()),
            dragging: RwSignal::new(false),
            #[cfg(feature = "hydrate")]
            drag_depth: StoredValue::new(0),
            agent: RwSignal::new(String::new()),
            user: RwSignal::new(None),
            missing: RwSignal::new(false),
            loading: RwSignal::new(false),
            outbox: RwSignal::new(None),
            following: RwSignal::new(true),
            unseen: RwSignal::new(false),
            pinned: StoredValue::new(None),
            epoch: StoredValue::new(0),
            event_kinds: StoredValue::new(Vec::new()),
            turn_owner: StoredValue::new(None),
        };
        state.load(page);
        state
    }

    /// Shows another page (after in-app navigation or a change made in another tab).
    pub fn load(&self, page: &SessionPage) {
        self.epoch.update_value(|e| *e += 1);
        let previous = self
            .turn_owner
            .try_update_value(|o| o.replace(Owner::new()))
            .flatten();
        self.take_sidebar(page);
        if !page.event_kinds.is_empty() {
            self.event_kinds.set_value(page.event_kinds.clone());
        }
        self.agent.set(page.agent.clone());
        self.examples.set(page.examples.clone());
        self.commands.set(page.commands.clone());
        self.workspace.set(page.files);
        self.default_model.set(page.default_model.clone());
        self.context_meter.set(page.context_meter);
        self.model
            .set(page.session.as_ref().and_then(|s| s.model.clone()));
        self.user.set(page.user.clone());
        // Whose page this is: its requests say so (see `client::set_account`).
        #[cfg(feature = "hydrate")]
        crate::client::set_account(Some(
            page.user
                .as_ref()
                .map(|u| u.account.clone())
                .unwrap_or_default(),
        ));
        self.missing.set(page.missing);
        match &page.session {
            Some(session) => {
                self.session_id.set(Some(session.id.clone()));
                self.title.set(session.title.clone());
                self.turns.set(
                    session
                        .turns
                        .iter()
                        .map(|t| self.new_turn(&session.id, t))
                        .collect(),
                );
                self.queued.set(session.queued.clone());
                self.earlier.set(session.earlier);
            }
            None => {
                self.session_id.set(None);
                self.title.set("New chat".into());
                self.turns.set(Vec::new());
                self.earlier.set(false);
                self.queued.set(Vec::new());
            }
        }
        self.error.set(None);
        self.pinned.set_value(None);
        self.following.set(true);
        self.unseen.set(false);
        if let Some(previous) = previous {
            release(previous);
        }
    }

    /// Takes the sidebar's first page from `page`, keeping the sessions loaded after it (the
    /// reader scrolled the list down: it does not shrink back when a conversation opens).
    fn take_sidebar(&self, page: &SessionPage) {
        let first = &page.sessions;
        let mut list = first.clone();
        let mut more = page.more_sessions;
        if page.more_sessions {
            // Newest first: what is not in the new first page comes after it, in its order.
            let rest: Vec<SessionSummary> = self.sessions.with_untracked(|loaded| {
                loaded
                    .iter()
                    .filter(|s| !first.iter().any(|f| f.id == s.id))
                    .cloned()
                    .collect()
            });
            if !rest.is_empty() {
                list.extend(rest);
                more = self.more_sessions.get_untracked();
            }
        }
        self.sessions.set(list);
        self.more_sessions.set(more);
    }

    /// Shows a failed call's problem.
    #[cfg(feature = "hydrate")]
    pub fn fail(&self, failure: &crate::client::Failure) {
        self.error.set(Some(Problem {
            message: failure.message.clone(),
            network: failure.status == 0,
        }));
    }

    /// Adds the turns of `page` that the page does not show yet (page data fetched with
    /// `after_run_id`), leaving the shown ones as they are; takes its queue and titles.
    #[cfg(feature = "hydrate")]
    pub fn append(&self, page: &SessionPage) {
        let Some(session) = &page.session else {
            return;
        };
        if self.session_id.get_untracked().as_deref() != Some(session.id.as_str()) {
            return;
        }
        if session.earlier {
            // More came than one window holds: the latest window, afresh.
            self.load(page);
            return;
        }
        self.take_sidebar(page);
        self.title.set(session.title.clone());
        let new = self.unknown_turns(session);
        if !new.is_empty() {
            self.turns.update(|turns| turns.extend(new));
        }
        self.queued.set(session.queued.clone());
    }

    /// Handles for the turns of `session` the page does not show yet.
    #[cfg(feature = "hydrate")]
    fn unknown_turns(&self, session: &crate::api::SessionDetail) -> Vec<TurnHandle> {
        let known: Vec<String> = self
            .turns
            .with_untracked(|ts| ts.iter().map(|t| t.run_id.clone()).collect());
        session
            .turns
            .iter()
            .filter(|t| !known.contains(&t.run_id))
            .map(|t| self.new_turn(&session.id, t))
            .collect()
    }

    /// Puts the turns of `page` (a window fetched with `before_run_id`) before the shown ones.
    #[cfg(feature = "hydrate")]
    pub fn prepend(&self, page: &SessionPage) {
        let Some(session) = &page.session else {
            return;
        };
        if self.session_id.get_untracked().as_deref() != Some(session.id.as_str()) {
            return;
        }
        let mut earlier = self.unknown_turns(session);
        self.earlier.set(session.earlier);
        if !earlier.is_empty() {
            self.turns.update(|turns| {
                earlier.append(turns);
                *turns = earlier;
            });
        }
    }

    /// Shows `turn` in place of the turn of `run_id` and of every turn after it: a retry or an
    /// edit forked the conversation there. The turns before it stay as they are.
    #[cfg(feature = "hydrate")]
    pub fn fork(&self, session_id: &str, run_id: &str, turn: &TurnData) {
        let handle = self.new_turn(session_id, turn);
        self.turns.update(|turns| {
            if let Some(i) = turns.iter().position(|t| t.run_id == run_id) {
                turns.truncate(i);
            }
            turns.push(handle);
        });
    }

    /// Shows the branch of `page` from its turn of run `chosen` on, in place of the turn of
    /// `run_id` (another version of the same place) and of the turns after it; the turns before
    /// stay as they are. False when `page` does not hold `chosen`.
    #[cfg(feature = "hydrate")]
    pub fn show_branch(&self, run_id: &str, chosen: &str, page: &SessionPage) -> bool {
        let Some(session) = &page.session else {
            return false;
        };
        let Some(from) = session.turns.iter().position(|t| t.run_id == chosen) else {
            return false;
        };
        let shown: Vec<TurnHandle> = session.turns[from..]
            .iter()
            .map(|t| self.new_turn(&session.id, t))
            .collect();
        self.turns.update(|turns| {
            if let Some(i) = turns.iter().position(|t| t.run_id == run_id) {
                turns.truncate(i);
            }
            turns.extend(shown);
        });
        self.queued.set(session.queued.clone());
        true
    }

    /// A handle for a turn of the shown conversation, owned with the others.
    pub fn new_turn(&self, session_id: &str, turn: &TurnData) -> TurnHandle {
        let epoch = self.epoch.get_value();
        let owner = self.turn_owner.with_value(Clone::clone);
        let make = || TurnHandle::new(session_id, turn, epoch);
        match owner {
            Some(owner) => owner.with(make),
            None => make(),
        }
    }

    /// Has every turn apply what it held while the engine was missing (its part has come).
    #[cfg(feature = "hydrate")]
    pub fn catch_up(&self) {
        let Some(engine) = crate::model::engine::now() else {
            return;
        };
        self.turns.with_untracked(|turns| {
            for turn in turns {
                if turn.state.with_untracked(|s| s.holds()) {
                    turn.state.update(|s| s.catch_up(engine));
                }
            }
        });
    }

    /// Loads the rows of a turn shown as its snapshot (the reader opened its steps or its
    /// stream): once; a load under way is not started again. The turn then shows them as a
    /// turn loaded with its journal does.
    pub fn load_rows(&self, turn: &TurnHandle) {
        if !turn.state.with_untracked(|s| s.needs_rows())
            || turn.rows.get_untracked() == Rows::Loading
        {
            return;
        }
        let Some(session) = self.session_id.get_untracked() else {
            return;
        };
        turn.rows.set(Rows::Loading);
        #[cfg(feature = "hydrate")]
        {
            let turn = turn.clone();
            leptos::task::spawn_local(async move {
                match crate::client::whole_journal(&turn.run_id).await {
                    Ok(events) => {
                        let data = TurnData {
                            user: turn.user.clone(),
                            run_id: turn.run_id.clone(),
                            turn_id: turn.turn_id.clone(),
                            events,
                            running: false,
                            snapshot: None,
                            versions: turn.versions,
                            model: turn.model.clone(),
                        };
                        // The handle may be gone (another conversation opened meanwhile).
                        let _ = turn.state.try_set(TurnState::new(&session, &data));
                        let _ = turn.rows.try_set(Rows::Idle);
                    }
                    Err(failure) => {
                        let _ = turn.rows.try_set(Rows::Failed(failure.message));
                    }
                }
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = session;
    }

    /// Turns shown in the Transparent Stream as their snapshot bring their rows (after a switch
    /// of the page's mode); a long one waits for the reader to ask (its stream offers them).
    pub fn rows_for_stream(&self) {
        let page_mode = self.mode.get_untracked();
        self.turns.with_untracked(|turns| {
            for turn in turns {
                let stream =
                    turn.mode.get_untracked().unwrap_or(page_mode) == Mode::TransparentStream;
                if stream
                    && turn
                        .state
                        .with_untracked(|s| s.needs_rows() && s.last_seq <= crate::api::INLINE_ROWS)
                {
                    self.load_rows(turn);
                }
            }
        });
    }

    /// Whether the page still shows `session_id` as loaded by load number `epoch` (a task that
    /// waited on the server checks this before writing into the page).
    #[cfg(feature = "hydrate")]
    pub fn shows(&self, session_id: &str, epoch: u64) -> bool {
        self.epoch.get_value() == epoch
            && self.session_id.get_untracked().as_deref() == Some(session_id)
    }

    /// The turn still running, if any.
    pub fn running_turn(&self) -> Option<TurnHandle> {
        self.turns.with(|turns| {
            turns
                .iter()
                .rev()
                .find(|t| t.running.get() && t.state.with(|s| !s.ended))
                .cloned()
        })
    }

    /// Marks a session as running (or idle) in the sidebar.
    #[cfg(feature = "hydrate")]
    pub fn mark_session(&self, session_id: &str, run: Option<String>) {
        self.sessions.update(|list| {
            if let Some(s) = list.iter_mut().find(|s| s.id == session_id) {
                s.active_run_id = run;
            }
        });
    }
}

/// Disposes the signals of turns no longer shown, once the views reading them are gone (the
/// list of turns is redrawn by an effect; this runs after it).
fn release(owner: Owner) {
    #[cfg(feature = "hydrate")]
    set_timeout(move || owner.cleanup(), std::time::Duration::ZERO);
    #[cfg(not(feature = "hydrate"))]
    owner.cleanup();
}

/// The chat state from context.
pub fn use_chat() -> ChatState {
    expect_context::<ChatState>()
}

/// How the page sends a message, provided by the page for the views below it that send one
/// as if typed (a prompt to try, "Continue"): the outbox sits above the views.
#[derive(Clone, Copy)]
pub struct Sender(pub Callback<String>);

/// What the page does that a slash command may ask for (see [`crate::commands`]).
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
pub struct PageCommands {
    /// Stops the running turn.
    pub stop: Callback<()>,
    /// Shows turns in this view.
    pub set_mode: Callback<anchor::Mode>,
}

/// Sends `text` as the page sends what is typed.
pub fn send_message(text: String) {
    if let Some(Sender(send)) = use_context::<Sender>() {
        send.run(text);
    }
}
