//! A turn: the user's message and the assistant's answer, with its process shown in one of
//! two views of the same anchor: the Compact Worklog (`worklog.rs`) or the Transparent Stream
//! (`stream.rs`). Both read the process through one memo per turn (`view_model.rs`).

mod artifacts;
mod stream;
mod view_model;
mod worklog;

use anchor::{Mode, TerminalState};
use leptos::either::{Either, EitherOf3, EitherOf4};
use leptos::prelude::*;

use crate::components::menu::Menu;
use crate::components::message::{copy_text, CopyButton, Timestamp, UserMessage};
use crate::components::prose::Prose;
use crate::components::terminal::{Evidence, EvidenceCard, TerminalCard};
use crate::dynamic::{dynamic, either, flag};
use crate::model::{AnswerState, Segment, SegmentKind, WorkItem};
use crate::state::{use_chat, Rows, TurnHandle};
use stream::Stream;
use view_model::{ProcessSummary, WINDOW};
use worklog::Worklog;

fn fmt_duration(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m {:02}s", s / 60, s % 60)
    }
}

/// `n` and a noun, plural unless `n` is one ("1 step", "3 steps").
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The turn's token usage, as shown under the answer: in full, and in short for a phone.
fn usage_label(input: u64, output: u64) -> (String, String) {
    use crate::api::grouped;
    (
        format!("{} tokens in · {} out", grouped(input), grouped(output)),
        format!("{} tokens", grouped(input.saturating_add(output))),
    )
}

/// Where a tool call stands, for its wording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ToolPhase {
    /// It runs.
    Running,
    /// It finished.
    Done,
    /// It finished with an error.
    Failed,
    /// The turn ended before it finished.
    Stopped,
}

impl ToolPhase {
    fn of(finished: bool, failed: bool, turn_over: bool) -> Self {
        match (finished, failed, turn_over) {
            (true, true, _) => ToolPhase::Failed,
            (true, false, _) => ToolPhase::Done,
            (false, _, true) => ToolPhase::Stopped,
            (false, _, false) => ToolPhase::Running,
        }
    }

    /// The `data-tool-state` value.
    fn as_str(self) -> &'static str {
        match self {
            ToolPhase::Running => "running",
            ToolPhase::Done => "done",
            ToolPhase::Failed => "failed",
            ToolPhase::Stopped => "interrupted",
        }
    }

    /// The status at the end of the row (nothing for a call that simply finished).
    fn status(self) -> &'static str {
        match self {
            ToolPhase::Running => "Running",
            ToolPhase::Done => "",
            ToolPhase::Failed => "Failed",
            ToolPhase::Stopped => "Interrupted",
        }
    }
}

/// What a tool row says it did: known tools read as a sentence about their target ("Read
/// notes.txt"), others name themselves ("Called fetch_weather"). Only a running call is in the
/// present tense.
fn tool_verb(name: &str, phase: ToolPhase) -> String {
    let known = match name {
        "terminal" | "shell" | "bash" => {
            Some(("Running", "Ran", "Command failed:", "Stopped running"))
        }
        "read_file" => Some(("Reading", "Read", "Could not read", "Stopped reading")),
        "write_file" => Some(("Writing", "Wrote", "Could not write", "Stopped writing")),
        "search_text" | "search_files" => Some((
            "Searching for",
            "Searched for",
            "Search failed:",
            "Stopped searching for",
        )),
        "list_files" => Some(("Listing", "Listed", "Could not list", "Stopped listing")),
        "ask_user" => Some(("Asking", "Asked", "Could not ask", "Stopped asking")),
        "todo" | "todo_write" | "TodoWrite" | "update_todos" => Some((
            "Updating todos",
            "Updated todos",
            "Could not update todos",
            "Stopped updating todos",
        )),
        _ => None,
    };
    match (known, phase) {
        (Some((running, ..)), ToolPhase::Running) => running.to_owned(),
        (Some((_, done, ..)), ToolPhase::Done) => done.to_owned(),
        (Some((_, _, failed, _)), ToolPhase::Failed) => failed.to_owned(),
        (Some((.., stopped)), ToolPhase::Stopped) => stopped.to_owned(),
        (None, ToolPhase::Running) => format!("Calling {name}"),
        (None, ToolPhase::Done) => format!("Called {name}"),
        (None, ToolPhase::Failed) => format!("Failed: {name}"),
        (None, ToolPhase::Stopped) => format!("Stopped calling {name}"),
    }
}

/// One tool call: its start and its end in one row.
#[component]
fn ToolCard(
    first: Segment,
    done: Option<Segment>,
    turn_over: Signal<bool>,
    /// The Transparent Stream shows the result's first line in the row itself.
    #[prop(optional)]
    inline_result: bool,
) -> impl IntoView {
    let tool = first.tool.clone().unwrap_or_default();
    let result = done
        .as_ref()
        .and_then(|d| d.tool.clone())
        .map(|t| t.result)
        .unwrap_or_default();
    let failed = done
        .as_ref()
        .is_some_and(|d| d.tool.as_ref().is_some_and(|t| t.is_error));
    let finished = done.is_some();
    let open = RwSignal::new(false);
    let row_id = first.row_id.clone();
    let name = tool.name.clone();
    let args = tool.args.clone();
    // A file the agent read or wrote opens in the Files panel, where it keeps files.
    let chat = crate::state::use_chat();
    let file_path = tool.target.clone();
    let shows_file = chat.workspace.get_untracked()
        && matches!(tool.name.as_str(), "read_file" | "write_file")
        && !file_path.is_empty()
        && !failed;
    #[cfg(feature = "hydrate")]
    let target = tool.target.clone();
    // A finished call never asks whether the turn is over: it does not change with it.
    let phase = move || ToolPhase::of(finished, failed, !finished && turn_over.get());
    let result_line = inline_result
        .then(|| result.lines().next().unwrap_or_default().to_owned())
        .filter(|line| !line.is_empty());
    view! {
        <div class="tool-card" data-row-id=row_id data-tool-state=dynamic(move || phase().as_str())>
            <button
                type="button"
                class="tool-head"
                title=tool.name.clone()
                aria-expanded=flag(move || open.get())
                on:click=move |_| open.update(|o| *o = !*o)
            >
                <span class="tool-dot" aria-hidden="true"></span>
                <span class="tool-action">{dynamic(move || tool_verb(&name, phase()))}</span>
                <span class="tool-target">{tool.target.clone()}</span>
                <span class="tool-status">{dynamic(move || phase().status())}</span>
            </button>
            {result_line.map(|line| view! { <div class="tool-result-line">{line}</div> })}
            // The detail is built when opened, never for a folded card. Its text comes at once;
            // its colours (the arguments as JSON, the output as the file it names) when the
            // renderer's part gives them, in place.
            {move || open.get().then(|| {
                let args_node = NodeRef::<leptos::html::Pre>::new();
                let output_node = NodeRef::<leptos::html::Pre>::new();
                #[cfg(feature = "hydrate")]
                {
                    use crate::markdown::color_later;
                    colour(args_node, color_later(args.clone(), "json".to_owned()));
                    colour(output_node, color_later(result.clone(), target.clone()));
                }
                view! {
                    <div class="tool-detail">
                        <div class="detail-label">"Input"</div>
                        <pre class="tool-args" node_ref=args_node>{args.clone()}</pre>
                        {(!result.is_empty()).then(|| view! {
                            <div class="detail-label">"Output"</div>
                            <pre class="tool-output" node_ref=output_node>{result.clone()}</pre>
                        })}
                        {shows_file.then(|| {
                            let path = file_path.clone();
                            view! {
                                <button
                                    type="button"
                                    class="text-button open-in-files"
                                    on:click=move |_| chat.files_at.set(Some(crate::state::FilesAt::file(&path)))
                                >
                                    "Show in Files"
                                </button>
                            }
                        })}
                    </div>
                }
            })}
        </div>
    }
}

/// Puts the coloured HTML `coloured` gives into `node`, if the node is still there by then (its
/// text is the same: only colours change).
#[cfg(feature = "hydrate")]
fn colour(
    node: NodeRef<leptos::html::Pre>,
    coloured: impl std::future::Future<Output = Option<String>> + 'static,
) {
    leptos::task::spawn_local(async move {
        if let (Some(html), Some(el)) = (coloured.await, node.try_get_untracked().flatten()) {
            el.set_inner_html(&html);
        }
    });
}

/// Reasoning, collapsed to its first line.
#[component]
fn ThinkingRow(segment: Segment) -> impl IntoView {
    let open = RwSignal::new(false);
    let preview: String = {
        let one_line: String = segment
            .text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if one_line.chars().count() > 140 {
            one_line.chars().take(137).collect::<String>() + "..."
        } else {
            one_line
        }
    };
    let text = segment.text.clone();
    view! {
        <div class="thinking" data-row-id=segment.row_id.clone()>
            <button
                type="button"
                class="thinking-head"
                aria-expanded=flag(move || open.get())
                on:click=move |_| open.update(|o| *o = !*o)
            >
                <span class="thinking-label">"Thinking"</span>
                <span class="thinking-preview">{preview}</span>
            </button>
            {move || open.get().then(|| view! { <pre class="thinking-body">{text.clone()}</pre> })}
        </div>
    }
}

/// What a note says: its label (in the tense of where the turn stands) and, when it says more
/// than the label, its own message.
fn note_label(kind: SegmentKind, source: &str, turn_over: bool) -> String {
    match (kind, source) {
        // A compression that finished is folded into the "compressed" note.
        (SegmentKind::Lifecycle, "compressing") if turn_over => {
            "Context compression did not finish".to_owned()
        }
        (SegmentKind::Lifecycle, "compressing") => "Compressing context…".to_owned(),
        (SegmentKind::Lifecycle, "compressed") => "Compressed the context".to_owned(),
        (SegmentKind::Control, "approval") => "Asked for approval".to_owned(),
        (SegmentKind::Control, "clarify") => "Asked a question".to_owned(),
        (SegmentKind::Terminal, source) => format!("Ended ({source})"),
        (_, source) => {
            // Event types are ASCII words: "goal_continue" reads "Goal continue".
            let mut label = source.replace('_', " ");
            if let Some(first) = label.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            label
        }
    }
}

/// Whether a note's own text adds to its label (it is not the label said again).
fn says_more(label: &str, text: &str) -> bool {
    let plain = |s: &str| {
        s.trim()
            .trim_end_matches(['.', '…'])
            .to_ascii_lowercase()
            .replace("the ", "")
    };
    let text = plain(text);
    !text.is_empty() && !plain(label).contains(&text)
}

/// A lifecycle, control or terminal note.
#[component]
fn NoteRow(turn: TurnHandle, segment: Segment, turn_over: Signal<bool>) -> impl IntoView {
    let (kind, source) = (segment.kind, segment.source.clone());
    let label = Memo::new(move |_| note_label(kind, &source, turn_over.get()));
    let class = match segment.kind {
        SegmentKind::Lifecycle => "note lifecycle",
        SegmentKind::Control => "note control",
        _ => "note terminal",
    };
    let text = segment.text.clone();
    let detail = move || {
        let text = text.clone();
        label
            .with(|l| says_more(l, &text))
            .then(|| view! { <span class="note-detail">{text}</span> })
    };
    view! {
        <div class=class data-row-id=segment.row_id.clone()>
            <span class="note-label">{dynamic(move || label.get())}</span>
            {detail}
            {segment.interaction.clone().map(|id| {
                let answer = Memo::new(move |_| turn.state.with(|s| s.answers.get(&id).cloned()));
                move || answer.get().map(|a| view! { <span class="note-answer" data-answer="">{a}</span> })
            })}
        </div>
    }
}

/// Prose written while working (it is final: prose that grows is the answer).
#[component]
fn ProseRow(segment: Segment) -> impl IntoView {
    view! {
        <div class="process-prose" data-row-id=segment.row_id>
            <Prose text=Signal::stored(segment.text) />
        </div>
    }
}

/// One item of the process, as the worklog and the stream show it.
fn item_view(
    turn: TurnHandle,
    item: WorkItem,
    turn_over: Signal<bool>,
    stream: bool,
) -> impl IntoView {
    match item {
        WorkItem::Tool { first, done } => EitherOf4::A(view! {
            <ToolCard first=first done=done.map(|d| *d) turn_over=turn_over inline_result=stream />
        }),
        WorkItem::Segment(segment) => match segment.kind {
            SegmentKind::Prose => EitherOf4::B(view! { <ProseRow segment=segment /> }),
            SegmentKind::Thinking => EitherOf4::C(view! { <ThinkingRow segment=segment /> }),
            _ => EitherOf4::D(view! { <NoteRow turn=turn segment=segment turn_over=turn_over /> }),
        },
    }
}

/// The turn's process as both views read it: redone when the process changes (see
/// `TurnState::process_rev`) or its rows arrive, not per token of the answer.
fn process_memo(turn: &TurnHandle) -> Memo<ProcessSummary> {
    let state = turn.state;
    let changed = Memo::new(move |_| state.with(|s| (s.process_rev, s.needs_rows())));
    Memo::new(move |_| {
        // Read (not only tracked): a memo is computed, and subscribed, when read.
        let _ = changed.get();
        state.with_untracked(ProcessSummary::of)
    })
}

/// The kind of an item, for the stream's row class.
fn item_kind(item: &WorkItem) -> &'static str {
    match item {
        WorkItem::Tool { .. } => "tool",
        WorkItem::Segment(s) => match s.kind {
            SegmentKind::Prose => "prose",
            SegmentKind::Thinking => "thinking",
            _ => "note",
        },
    }
}

/// The process of a turn, windowed to its latest items: one item per thing it did.
#[component]
fn ProcessItems(
    turn: TurnHandle,
    process: Memo<ProcessSummary>,
    turn_over: Signal<bool>,
    stream: bool,
) -> impl IntoView {
    // A long process materializes only its latest items; the reader asks for more. Redone when
    // the process changes, not per token of the answer.
    let shown = RwSignal::new(WINDOW);
    // The window remembers where it started and how long the process was: a burst of rows
    // does not swap the rows on screen for others in one update (`view_model::window_start`).
    let window = Memo::new(move |before: Option<&(Vec<WorkItem>, usize, usize)>| {
        // Read (not only tracked): a memo is computed, and subscribed, when read.
        let _ = process.get();
        let limit = shown.get();
        let before = before.map(|(_, start, len)| (*start, *len));
        turn.state.with_untracked(|s| {
            let (items, start) = view_model::window(s, limit, before);
            (items, start, s.process().len())
        })
    });
    let items = Memo::new(move |_| window.with(|(items, _, _)| items.clone()));
    let hidden = Memo::new(move |_| window.with(|(_, hidden, _)| *hidden));
    let any_hidden = Memo::new(move |_| hidden.get() > 0);
    let class = if stream {
        "stream-rows"
    } else {
        "worklog-items"
    };
    view! {
        <div class=class>
            {move || any_hidden.get().then(|| view! {
                <button type="button" class="pill rows-earlier" on:click=move |_| shown.update(|n| *n += WINDOW)>
                    {dynamic(move || format!("Show {} earlier", hidden.get().min(WINDOW)))}
                </button>
            })}
            <For
                each=move || items.get()
                key=|item| item.key()
                children=move |item| {
                    let kind = item_kind(&item);
                    let view = item_view(turn.clone(), item, turn_over, stream);
                    if stream {
                        Either::Left(view! { <div class=format!("stream-row row-{kind}")>{view}</div> })
                    } else {
                        Either::Right(view)
                    }
                }
            />
        </div>
    }
}

/// The process of a turn, or while the turn shows its snapshot, where loading its rows stands
/// (the reader opened them: they are on their way; a long stream shown at first asks first).
#[component]
fn Steps(
    turn: TurnHandle,
    process: Memo<ProcessSummary>,
    turn_over: Signal<bool>,
    stream: bool,
) -> impl IntoView {
    let chat = use_chat();
    let needs = Memo::new(move |_| process.with(|p| p.needs_rows));
    let rows = turn.rows;
    let total = Memo::new(move |_| process.with(|p| if stream { p.events } else { p.steps }));
    let count = move || counted(total.get(), if stream { "event" } else { "step" });
    let stored = StoredValue::new(turn);
    let load = move |_| stored.with_value(|t| chat.load_rows(t));
    // Whether the rows are there, as a memo: the count changes with every step, and a closure
    // that read it would make the items anew each time (their window, and the reader's "Show
    // earlier", started over under the reader's eyes). A turn with no steps has nothing to load.
    let has_rows = Memo::new(move |_| !needs.get() || total.get() == 0);
    move || {
        if has_rows.get() {
            return EitherOf3::A(view! {
                <ProcessItems turn=stored.get_value() process=process turn_over=turn_over stream=stream />
            });
        }
        // Not loaded: offered, or offered again after a failed try (that only the browser makes).
        let failed: Option<String> = match rows.get() {
            Rows::Loading => {
                return EitherOf3::B(view! {
                    <div class="rows-state" role="status">{move || format!("Loading {}…", count())}</div>
                });
            }
            Rows::Idle => None,
            #[cfg(feature = "hydrate")]
            Rows::Failed(message) => Some(message),
        };
        let again = failed.is_some();
        EitherOf3::C(view! {
            <div class="rows-state" class:rows-failed=again role=again.then_some("alert")>
                {failed.map(|message| view! { <span>{format!("The steps could not be loaded: {message}")}</span> })}
                <button type="button" class="pill load-rows" on:click=load>
                    {move || if again { "Try again".to_owned() } else { format!("Show {}", count()) }}
                </button>
            </div>
        })
    }
}

/// One exchange: the user's message and the assistant's turn in the chosen display mode.
/// A settled turn's "⋯": copy its answer, retry it, copy a link that opens the conversation at
/// it. The menu closes after each.
#[component]
fn TurnMenu(
    turn_id: String,
    answer: Callback<(), String>,
    retry: Callback<()>,
    can_retry: Signal<bool>,
) -> impl IntoView {
    let chat = use_chat();
    let link = Callback::new(move |()| {
        let origin = {
            #[cfg(feature = "hydrate")]
            {
                web_sys::window()
                    .and_then(|w| w.location().origin().ok())
                    .unwrap_or_default()
            }
            #[cfg(not(feature = "hydrate"))]
            {
                String::new()
            }
        };
        let session = chat.session_id.get_untracked().unwrap_or_default();
        format!(
            "{origin}{}#{turn_id}",
            crate::base::href(&crate::api::paths::session_page(&session))
        )
    });
    view! {
        <Menu label="More for this turn".to_owned() class="turn-menu">
            <button type="button" role="menuitem" on:click=move |_| { copy_text(&answer.run(())); }>"Copy answer"</button>
            <button type="button" role="menuitem" disabled=dynamic(move || !can_retry.get()) on:click=move |_| retry.run(())>"Retry"</button>
            <button type="button" role="menuitem" on:click=move |_| { copy_text(&link.run(())); }>"Copy link to this turn"</button>
        </Menu>
    }
}

/// What a terminal card offers: run the turn again (a retry of a turn before the last forks
/// the conversation there), or for the last turn when it used all of its steps, ask it to go
/// on (a follow-up, so that its work so far stays). The button stays while it cannot be used
/// (a turn runs, or another came after the one to continue), so that the card keeps its size.
fn card_action(
    state: TerminalState,
    retry: Callback<()>,
    can_change: Signal<bool>,
    can_continue: Signal<bool>,
) -> Option<impl IntoView> {
    let continues = state == TerminalState::ToolLimitReached;
    if state == TerminalState::CompressionExhausted {
        // Nothing more fits here: the next step is a conversation of its own.
        #[cfg(feature = "hydrate")]
        let chat = use_chat();
        return Some(Either::Left(view! {
            <button
                type="button"
                class="primary card-retry"
                data-new-conversation=""
                on:click=move |_| {
                    #[cfg(feature = "hydrate")]
                    crate::nav::go(chat, crate::nav::NEW_CHAT);
                }
            >
                "New conversation"
            </button>
        }));
    }
    let usable = if continues { can_continue } else { can_change };
    let on_click = move |_| {
        if continues {
            crate::state::send_message("Continue".to_owned());
        } else {
            retry.run(());
        }
    };
    Some(Either::Right(view! {
        <button
            type="button"
            class="primary card-retry"
            data-retry=""
            disabled=dynamic(move || !usable.get())
            on:click=on_click
        >
            {if continues { "Continue" } else { "Retry" }}
        </button>
    }))
}

#[component]
pub(crate) fn TurnView(turn: TurnHandle) -> impl IntoView {
    let chat = use_chat();
    let mode = Memo::new(move |_| turn.mode.get().unwrap_or_else(|| chat.mode.get()));
    // A memo, not a derived signal: the many rows that ask are told once, when the turn ends,
    // not on every event of the turn.
    let turn_over: Signal<bool> =
        Memo::new(move |_| turn.state.with(|s| s.terminal_state().is_some())).into();
    // The answer takes shape in one element while it streams, and stays in that element when
    // it settles: as the final answer, or as what was streamed (partial) when the turn ended
    // any other way.
    let answer_text = Memo::new(move |_| turn.state.with(|s| s.answer_text()));
    // When the turn ended (its last event), once it has: read only then, not on every event.
    let ended_at = Memo::new(move |_| {
        turn_over
            .get()
            .then(|| turn.state.with(|s| s.last_at))
            .flatten()
            .filter(|at| *at > 0.0)
    });
    let answer_state = Memo::new(move |_| turn.state.with(|s| s.answer_state()));
    // The files the turn made (rarely any: compared, not redrawn, per event).
    let made_files = Memo::new(move |_| turn.state.with(|s| s.artifacts()));
    let has_answer = Memo::new(move |_| !answer_text.with(String::is_empty));
    // Which prose the answer is: when work comes after it (a tool call, a compression), what
    // streamed becomes interim and stays where it is, and the next answer is another element
    // below the work, never the same one moved down.
    let answer_segment = Memo::new(move |_| turn.state.with(|s| s.answer_stream().start));
    let partial = Memo::new(move |_| answer_state.get() == AnswerState::Partial);
    let terminal = Memo::new(move |_| {
        turn.state.with(|s| {
            let state = s.terminal_state()?;
            (state != TerminalState::Completed).then(|| {
                let (message, hint) = s.terminal_note();
                (state, message, hint)
            })
        })
    });
    // Never an empty "running" shell: a turn that is not over says why it is not moving. A
    // blip the browser reconnects from at once shows in the header only; the card comes when
    // the connection stays down.
    let down = Memo::new(move |_| chat.connection.get().down());
    let down_long = RwSignal::new(false);
    Effect::new(move |_| {
        if !down.get() {
            down_long.set(false);
        } else {
            #[cfg(feature = "hydrate")]
            set_timeout(
                move || {
                    if down.try_get_untracked() == Some(true) {
                        let _ = down_long.try_set(true);
                    }
                },
                std::time::Duration::from_millis(1500),
            );
        }
    });
    let evidence = Memo::new(move |_| {
        let (over, last_seq) = turn
            .state
            .with(|s| (s.terminal_state().is_some(), s.last_seq));
        if over {
            None
        } else if !turn.running.get() {
            Some(Evidence::Incomplete)
        } else if down_long.get() {
            Some(Evidence::Restoring(last_seq))
        } else {
            None
        }
    });
    let notices = Memo::new(move |_| turn.state.with(|s| s.notices()));
    let usage = Memo::new(move |_| {
        turn.state
            .with(|s| s.usage_tokens())
            .map(|(input, output)| usage_label(input, output))
    });
    let turn_for_toggle = turn.clone();
    let toggle_mode = move |_| {
        let next = match mode.get_untracked() {
            Mode::TransparentStream => Mode::CompactWorklog,
            _ => Mode::TransparentStream,
        };
        turn.mode.set(if next == chat.mode.get_untracked() {
            None
        } else {
            Some(next)
        });
        if next == Mode::TransparentStream {
            chat.load_rows(&turn_for_toggle);
        }
    };
    // What the reader may do to the turn: change it (edit its message, show another version)
    // once it is over and nothing runs; retry it (or continue it) when it is also the last.
    let can_change: Signal<bool> = Memo::new(move |_| turn_over.get() && chat.idle.get()).into();
    let run_id = turn.run_id.clone();
    let is_last = Memo::new(move |_| {
        chat.turns
            .with(|ts| ts.last().is_some_and(|t| t.run_id == run_id))
    });
    let can_retry: Signal<bool> = Memo::new(move |_| can_change.get() && is_last.get()).into();
    let turn_for_retry = turn.clone();
    let retry = Callback::new(move |_: ()| {
        #[cfg(feature = "hydrate")]
        crate::branches::retry(chat, &turn_for_retry);
        #[cfg(not(feature = "hydrate"))]
        let _ = &turn_for_retry;
    });
    let answer_for_copy = Callback::new(move |_: ()| answer_text.get_untracked());
    let turn_id = turn.turn_id.clone();
    let turn_model = turn.model.clone();
    let turn_for_message = turn.clone();
    let turn_for_worklog = turn.clone();
    let turn_for_stream = turn.clone();
    let process = process_memo(&turn);
    view! {
        <article
            class="turn"
            id=turn.turn_id.clone()
            data-turn-id=turn.turn_id.clone()
            data-run-id=turn.run_id.clone()
            data-mode=dynamic(move || mode.get().as_str())
            data-row-count=dynamic(move || turn.state.with(|s| s.row_count().to_string()))
            data-last-seq=dynamic(move || turn.state.with(|s| s.last_seq.to_string()))
        >
            <UserMessage turn=turn_for_message can_change=can_change />
            <div class="assistant" data-state=either(move || turn_over.get(), "settled", "running")>
                <div class="assistant-head">
                    <span class="assistant-label">"Assistant"</span>
                    // Says what it does (not which view is shown: the header's switch says that).
                    <button
                        type="button"
                        class="turn-mode"
                        title="Switch this turn between the worklog and the full stream"
                        on:click=toggle_mode
                    >
                        {either(move || mode.get() == Mode::TransparentStream, "Show as worklog", "Show full stream")}
                    </button>
                </div>
                {move || match mode.get() {
                    Mode::TransparentStream => EitherOf3::A(view! { <Stream turn=turn_for_stream.clone() process=process turn_over=turn_over /> }),
                    Mode::HideAllActivity => EitherOf3::B(()),
                    Mode::CompactWorklog => EitherOf3::C(view! { <Worklog turn=turn_for_worklog.clone() process=process turn_over=turn_over /> }),
                }}
                {move || notices.with(|n| n.left_out.clone()).map(|text| view! {
                    <p class="turn-notice" role="note" data-notice="left-out">{text}</p>
                })}
                // Keyed by the answer's segment: another answer is another element (rendering
                // the same view again would reuse the element, and move it).
                <For
                    each=move || has_answer.get().then(|| answer_segment.get())
                    key=|segment| *segment
                    children=move |_| view! {
                        <div
                            class="answer"
                            data-final-answer=dynamic(move || answer_state.get().as_str())
                        >
                            <Prose text=answer_text />
                            {move || partial.get().then(|| view! {
                                <p class="partial-note">"Partial answer: the turn ended before it finished."</p>
                            })}
                        </div>
                    }
                />
                <artifacts::TurnFiles files=made_files run_id=turn.run_id.clone() />
                {move || notices.with(|n| n.cut_off.clone()).map(|text| view! {
                    <div class="turn-notice cut-off" role="status" data-notice="cut-off">
                        <p>{text}</p>
                        <button
                            type="button"
                            class="secondary"
                            data-continue=""
                            title="Ask the model to go on from where the answer stopped"
                            disabled=dynamic(move || !can_retry.get())
                            on:click=move |_| {
                                crate::state::send_message("Continue".to_owned());
                            }
                        >
                            "Continue"
                        </button>
                    </div>
                })}
                {move || terminal.get().map(|(state, message, hint)| view! {
                    <TerminalCard state=state message=message hint=hint>
                        {card_action(state, retry, can_change, can_retry)}
                    </TerminalCard>
                })}
                {move || evidence.get().map(|evidence| view! { <EvidenceCard evidence=evidence /> })}
                // The footer fills in once, when the turn is over: its height is kept from the
                // first token on, and nothing in it is there before the timestamp that leads it
                // (a model name or usage shown earlier would be pushed aside at the settle).
                <div class="turn-footer">
                    {move || ended_at.get().map(|at| view! { <Timestamp at=at verb="Answered" /> })}
                    {move || turn_over.get().then(|| turn_model.clone()).flatten().map(|model| view! {
                        <span class="turn-model" title=model.clone()>{crate::api::model_name(&model).to_owned()}</span>
                    })}
                    {move || turn_over.get().then(|| usage.get()).flatten().map(|(long, short)| view! {
                        <span class="usage" title=long.clone()>
                            <span class="usage-long">{long.clone()}</span>
                            <span class="usage-short">{short}</span>
                        </span>
                    })}
                    {move || (turn_over.get() && has_answer.get()).then(|| view! {
                        <CopyButton label="Copy answer" text=answer_for_copy />
                    })}
                    {move || (can_retry.get() && terminal.get().is_none()).then(|| view! {
                        <button type="button" class="message-action" data-retry="" on:click=move |_| retry.run(())>"Retry"</button>
                    })}
                    {move || turn_over.get().then(|| view! {
                        <TurnMenu turn_id=turn_id.clone() answer=answer_for_copy retry=retry can_retry=can_retry />
                    })}
                </div>
            </div>
        </article>
    }
}

#[cfg(test)]
mod tests {
    use super::{note_label, says_more, tool_verb, usage_label, ToolPhase};

    #[test]
    fn usage_reads_as_tokens_with_thousands_grouped() {
        let full = |i, o| usage_label(i, o).0;
        let short = |i, o| usage_label(i, o).1;
        assert_eq!(full(1200, 4), "1,200 tokens in · 4 out");
        assert_eq!(full(0, 999), "0 tokens in · 999 out");
        assert_eq!(
            full(1_234_567, 100_000),
            "1,234,567 tokens in · 100,000 out"
        );
        assert_eq!(short(1200, 4), "1,204 tokens");
        assert_eq!(short(1_234_567, 100_000), "1,334,567 tokens");
        assert_eq!(
            short(u64::MAX, 1),
            format!("{} tokens", crate::api::grouped(u64::MAX))
        );
    }

    #[test]
    fn known_tools_read_as_a_sentence_and_only_a_running_call_is_in_the_present() {
        use ToolPhase::*;
        assert_eq!(tool_verb("write_file", Running), "Writing");
        assert_eq!(tool_verb("write_file", Done), "Wrote");
        assert_eq!(tool_verb("read_file", Failed), "Could not read");
        assert_eq!(tool_verb("read_file", Stopped), "Stopped reading");
        assert_eq!(tool_verb("terminal", Done), "Ran");
        assert_eq!(tool_verb("fetch_weather", Running), "Calling fetch_weather");
        assert_eq!(tool_verb("fetch_weather", Done), "Called fetch_weather");
        assert_eq!(tool_verb("todo", Done), "Updated todos");
        assert_eq!(tool_verb("fetch_weather", Failed), "Failed: fetch_weather");
        assert_eq!(
            tool_verb("fetch_weather", Stopped),
            "Stopped calling fetch_weather"
        );
        for phase in [Done, Failed, Stopped] {
            for name in ["terminal", "read_file", "search_text", "x"] {
                let verb = tool_verb(name, phase);
                assert!(
                    !verb.contains("ing ") && !verb.ends_with("ing") || verb.starts_with("Stopped"),
                    "{verb}"
                );
            }
            assert_ne!(phase.status(), "Running");
        }
    }

    #[test]
    fn notes_speak_in_the_tense_of_the_turn_and_never_repeat_themselves() {
        use crate::model::SegmentKind::*;
        assert_eq!(
            note_label(Lifecycle, "compressing", false),
            "Compressing context…"
        );
        assert_eq!(
            note_label(Lifecycle, "compressing", true),
            "Context compression did not finish"
        );
        assert_eq!(
            note_label(Lifecycle, "compressed", true),
            "Compressed the context"
        );
        assert_eq!(note_label(Control, "goal_continue", true), "Goal continue");
        assert!(!says_more("Compressing context…", "Compressing context"));
        assert!(!says_more("Compressed the context", "compressed context."));
        assert!(says_more(
            "Compressed the context",
            "42 messages summarized into 1"
        ));
        assert!(!says_more("Asked a question", ""));
    }
}
