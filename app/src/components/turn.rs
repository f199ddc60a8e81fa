use anchor::{Mode, TerminalState};
use leptos::either::{Either, EitherOf3, EitherOf4};
use leptos::prelude::*;

use crate::components::prose::Prose;
use crate::components::terminal::{Evidence, EvidenceCard, TerminalCard};
use crate::dynamic::{dynamic, either, flag};
use crate::model::{fold_tools, step_count, Segment, SegmentKind, WorkItem};
use crate::state::{use_chat, Connection, TurnHandle};

/// How many trace rows a turn shows before "Show earlier".
const TRACE_WINDOW: usize = 200;

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

/// `n` with thousands separated ("12,345").
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// The turn's token usage, as shown under the answer.
fn usage_label(input: u64, output: u64) -> String {
    format!("{} tokens in · {} out", grouped(input), grouped(output))
}

/// The Transparent Stream's heading: how many events and tool calls the turn has.
fn trace_summary(events: usize, tools: usize) -> String {
    format!(
        "Trace · {} · {}",
        counted(events, "event"),
        counted(tools, "tool")
    )
}

fn tool_verb(name: &str, failed: bool, running: bool) -> String {
    // Known tools read as a sentence about their target ("Read notes.txt"); others name
    // themselves ("Called fetch_weather").
    let known = match name {
        "terminal" | "shell" | "bash" => Some(("Running", "Ran", "Command failed:")),
        "read_file" => Some(("Reading", "Read", "Could not read")),
        "write_file" => Some(("Writing", "Wrote", "Could not write")),
        "search_text" | "search_files" => Some(("Searching for", "Searched for", "Search failed:")),
        "list_files" => Some(("Listing", "Listed", "Could not list")),
        "ask_user" => Some(("Asking", "Asked", "Could not ask")),
        _ => None,
    };
    match (known, failed, running) {
        (Some((_, _, failed)), true, _) => failed.to_owned(),
        (Some((running, _, _)), false, true) => running.to_owned(),
        (Some((_, done, _)), false, false) => done.to_owned(),
        (None, true, _) => format!("Failed: {name}"),
        (None, false, true) => format!("Calling {name}"),
        (None, false, false) => format!("Called {name}"),
    }
}

/// One tool call (Compact Worklog: start and end folded into one card).
#[component]
fn ToolCard(
    first: Segment,
    done: Option<Segment>,
    turn_over: Signal<bool>,
    /// A start row of the Transparent Stream whose completion is another row.
    #[prop(optional)]
    completed_elsewhere: bool,
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
    let state = move || {
        if finished {
            if failed {
                "failed"
            } else {
                "done"
            }
        } else if completed_elsewhere {
            "started"
        } else if turn_over.get() {
            "interrupted"
        } else {
            "running"
        }
    };
    view! {
        <div class="tool-card" data-row-id=row_id data-tool-state=dynamic(state)>
            <button
                type="button"
                class="tool-head"
                title=tool.name.clone()
                aria-expanded=flag(move || open.get())
                on:click=move |_| open.update(|o| *o = !*o)
            >
                <span class="tool-dot" aria-hidden="true"></span>
                <span class="tool-action">{dynamic(move || tool_verb(&name, failed, matches!(state(), "running" | "started")))}</span>
                <span class="tool-target">{tool.target.clone()}</span>
                <span class="tool-status">
                    {dynamic(move || match state() {
                        "failed" => "Failed",
                        "interrupted" => "Interrupted",
                        "running" => "Running",
                        "started" => "Started",
                        _ => "",
                    })}
                </span>
            </button>
            // The detail is built when opened, never for a folded card.
            {move || open.get().then(|| view! {
                <div class="tool-detail">
                    <div class="detail-label">"Input"</div>
                    <pre class="tool-args">{args.clone()}</pre>
                    {(!result.is_empty()).then(|| view! {
                        <div class="detail-label">"Output"</div>
                        <pre class="tool-output">{result.clone()}</pre>
                    })}
                </div>
            })}
        </div>
    }
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

/// A lifecycle, control or terminal note.
#[component]
fn NoteRow(turn: TurnHandle, segment: Segment) -> impl IntoView {
    let label = match (segment.kind, segment.source.as_str()) {
        (SegmentKind::Lifecycle, "compressing") => "Compressing context".to_owned(),
        (SegmentKind::Lifecycle, "compressed") => "Context compressed".to_owned(),
        (SegmentKind::Control, "approval") => "Asked for approval".to_owned(),
        (SegmentKind::Control, "clarify") => "Asked a question".to_owned(),
        (SegmentKind::Terminal, source) => format!("Ended ({source})"),
        (_, source) => source.replace('_', " "),
    };
    let class = match segment.kind {
        SegmentKind::Lifecycle => "note lifecycle",
        SegmentKind::Control => "note control",
        _ => "note terminal",
    };
    view! {
        <div class=class data-row-id=segment.row_id.clone()>
            <span class="note-label">{label}</span>
            {(!segment.text.is_empty()).then(|| view! { <span class="note-detail">{segment.text.clone()}</span> })}
            {segment.interaction.clone().map(|id| {
                let answer = Memo::new(move |_| turn.state.with(|s| s.answers.get(&id).cloned()));
                move || answer.get().map(|a| view! { <span class="note-answer" data-answer="">{a}</span> })
            })}
        </div>
    }
}

/// Prose written while working.
#[component]
fn ProseRow(turn: TurnHandle, key: u64, row_id: String) -> impl IntoView {
    let text = Signal::derive(move || {
        turn.state.with(|s| {
            s.segments
                .iter()
                .find(|seg| seg.key == key)
                .map(|seg| seg.text.clone())
                .unwrap_or_default()
        })
    });
    view! {
        <div class="process-prose" data-row-id=row_id>
            <Prose text=text />
        </div>
    }
}

fn segment_view(
    turn: TurnHandle,
    segment: Segment,
    turn_over: Signal<bool>,
    completed_elsewhere: bool,
) -> impl IntoView {
    match segment.kind {
        SegmentKind::Prose => EitherOf4::A(
            view! { <ProseRow turn=turn key=segment.key row_id=segment.row_id.clone() /> },
        ),
        SegmentKind::Thinking => EitherOf4::B(view! { <ThinkingRow segment=segment /> }),
        SegmentKind::ToolStart | SegmentKind::ToolUpdate | SegmentKind::ToolDone => {
            let done = (segment.kind == SegmentKind::ToolDone).then(|| segment.clone());
            EitherOf4::C(
                view! { <ToolCard first=segment done=done turn_over=turn_over completed_elsewhere=completed_elsewhere /> },
            )
        }
        _ => EitherOf4::D(view! { <NoteRow turn=turn segment=segment /> }),
    }
}

/// The Compact Worklog: process folded under a summary line, the answer primary.
#[component]
fn Worklog(turn: TurnHandle, turn_over: Signal<bool>) -> impl IntoView {
    let user_choice = RwSignal::new(None::<bool>);
    let steps = Memo::new(move |_| turn.state.with(|s| step_count(&s.process())));
    // Like the Transparent Stream, a long worklog materializes only its latest items.
    let shown = RwSignal::new(TRACE_WINDOW);
    let elapsed = Memo::new(move |_| turn.state.with(|s| s.elapsed()));
    let error_family = Memo::new(move |_| {
        turn.state.with(|s| {
            s.terminal_state()
                .is_some_and(|t| !matches!(t, TerminalState::Completed | TerminalState::Cancelled))
        })
    });
    // Open while the turn runs; folded once it settles (errors stay open); the user's choice wins.
    let open = Memo::new(move |_| {
        user_choice
            .get()
            .unwrap_or_else(|| !turn_over.get() || error_family.get())
    });
    let has_steps = Memo::new(move |_| steps.get() > 0);
    let items = Memo::new(move |_| {
        let limit = shown.get();
        turn.state.with(|s| {
            let process = s.process();
            fold_tools(&process[process.len().saturating_sub(limit)..])
        })
    });
    let hidden = Memo::new(move |_| {
        turn.state
            .with(|s| s.process().len())
            .saturating_sub(shown.get())
    });
    let any_hidden = Memo::new(move |_| hidden.get() > 0);
    let summary = move || {
        let n = steps.get();
        let time = elapsed.get().map(fmt_duration);
        match (turn_over.get(), time) {
            (false, _) => format!("Working · {}", counted(n, "step")),
            (true, Some(t)) => format!("Processed {t} · {}", counted(n, "step")),
            (true, None) => format!("Processed · {}", counted(n, "step")),
        }
    };
    let stored_turn = StoredValue::new(turn.clone());
    let render_items = move || {
        let turn = stored_turn.get_value();
        view! {
            <div class="worklog-items">
                {move || any_hidden.get().then(|| view! {
                    <button type="button" class="show-earlier" on:click=move |_| shown.update(|n| *n += TRACE_WINDOW)>
                        {dynamic(move || format!("Show {} earlier", hidden.get().min(TRACE_WINDOW)))}
                    </button>
                })}
                <For
                    each=move || items.get()
                    key=|item| item.key()
                    children=move |item| match item {
                        WorkItem::Segment(segment) => Either::Left(segment_view(turn.clone(), segment, turn_over, false)),
                        WorkItem::Tool { first, done } => Either::Right(view! { <ToolCard first=first done=done.map(|d| *d) turn_over=turn_over /> }),
                    }
                />
            </div>
        }
    };
    move || {
        has_steps.get().then(|| {
            view! {
                <div class="worklog" data-open=flag(move || open.get())>
                    <button
                        type="button"
                        class="worklog-summary"
                        aria-expanded=flag(move || open.get())
                        on:click=move |_| user_choice.set(Some(!open.get_untracked()))
                    >
                        <span class="worklog-text">{summary}</span>
                        <span class="chevron" aria-hidden="true"></span>
                    </button>
                    {move || open.get().then(render_items)}
                </div>
            }
        })
    }
}

/// The Transparent Stream: every event its own row, in order (token and reasoning deltas
/// merged into their segment), windowed.
#[component]
fn Trace(turn: TurnHandle, turn_over: Signal<bool>) -> impl IntoView {
    let shown = RwSignal::new(TRACE_WINDOW);
    let total = Memo::new(move |_| turn.state.with(|s| s.process().len()));
    let rows = Memo::new(move |_| {
        let limit = shown.get();
        turn.state.with(|s| {
            let process = s.process();
            let start = process.len().saturating_sub(limit);
            process[start..]
                .iter()
                .map(|seg| {
                    let completed = seg.kind == SegmentKind::ToolStart
                        && seg
                            .tool
                            .as_ref()
                            .is_some_and(|t| s.completed_calls.contains(&t.call_id));
                    ((*seg).clone(), completed)
                })
                .collect::<Vec<_>>()
        })
    });
    let tools = Memo::new(move |_| {
        turn.state.with(|s| {
            s.segments
                .iter()
                .filter(|seg| seg.kind == SegmentKind::ToolStart)
                .count()
        })
    });
    let turn_for_rows = turn.clone();
    let any_hidden = Memo::new(move |_| total.get() > shown.get());
    view! {
        <div class="trace">
            <div class="trace-head">
                {dynamic(move || trace_summary(total.get(), tools.get()))}
            </div>
            {move || any_hidden.get().then(|| view! {
                <button type="button" class="show-earlier" on:click=move |_| shown.update(|n| *n += TRACE_WINDOW)>
                    {dynamic(move || format!("Show {} earlier", total.get().saturating_sub(shown.get()).min(TRACE_WINDOW)))}
                </button>
            })}
            <div class="trace-rows">
                <For
                    each=move || rows.get()
                    key=|(seg, completed)| (seg.key, seg.rev, *completed)
                    children={
                        let turn = turn_for_rows.clone();
                        move |(segment, completed): (Segment, bool)| {
                            let kind = match segment.kind {
                                SegmentKind::ToolStart => "tool-start",
                                SegmentKind::ToolUpdate => "tool-update",
                                SegmentKind::ToolDone => "tool-done",
                                SegmentKind::Prose => "prose",
                                SegmentKind::Thinking => "thinking",
                                _ => "note",
                            };
                            view! { <div class=format!("trace-row {kind}")>{segment_view(turn.clone(), segment, turn_over, completed)}</div> }
                        }
                    }
                />
            </div>
        </div>
    }
}

/// One exchange: the user's message and the assistant's turn in the chosen display mode.
#[component]
pub(crate) fn TurnView(turn: TurnHandle) -> impl IntoView {
    let chat = use_chat();
    let mode = Memo::new(move |_| turn.mode.get().unwrap_or_else(|| chat.mode.get()));
    let turn_over = Signal::derive(move || turn.state.with(|s| s.terminal_state().is_some()));
    let final_answer = Memo::new(move |_| turn.state.with(|s| s.final_answer().to_owned()));
    // While streaming, the prose after the last tool is the answer taking shape; once settled
    // the final answer takes its place, in the same element.
    let answer_text = Signal::derive(move || {
        let settled = final_answer.get();
        if !settled.is_empty() {
            return settled;
        }
        turn.state.with(|s| {
            if !s.prose_is_answer() {
                return String::new();
            }
            s.segments[s.answer_stream()]
                .iter()
                .filter(|seg| seg.kind == SegmentKind::Prose)
                .map(|seg| seg.text.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        })
    });
    let settled = Memo::new(move |_| !final_answer.get().is_empty());
    let has_answer = Memo::new(move |_| !answer_text.with(String::is_empty));
    let terminal = Memo::new(move |_| {
        turn.state.with(|s| {
            let state = s.terminal_state()?;
            (state != TerminalState::Completed).then(|| {
                let note = s
                    .segments
                    .iter()
                    .rev()
                    .find(|seg| seg.kind == SegmentKind::Terminal);
                let payload_text = note.map(|n| n.text.clone()).unwrap_or_default();
                let hint = s
                    .registry
                    .anchor()
                    .activity_events
                    .iter()
                    .rev()
                    .find(|e| e.kind == Some(anchor::Kind::TerminalStatus))
                    .and_then(|e| {
                        e.payload
                            .get("hint")
                            .and_then(|h| h.as_str())
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
                (state, payload_text, hint)
            })
        })
    });
    // Never an empty "running" shell: a turn that is not over says why it is not moving.
    let evidence = Memo::new(move |_| {
        let (over, last_seq) = turn
            .state
            .with(|s| (s.terminal_state().is_some(), s.last_seq));
        if over {
            None
        } else if !turn.running.get() {
            Some(Evidence::Incomplete)
        } else if matches!(
            chat.connection.get(),
            Connection::Reconnecting | Connection::Offline
        ) {
            Some(Evidence::Restoring(last_seq))
        } else {
            None
        }
    });
    let usage = Memo::new(move |_| {
        turn.state.with(|s| {
            let usage = s.registry.anchor().usage.as_ref()?;
            let input = usage.get("input_tokens")?.as_u64()?;
            let output = usage.get("output_tokens")?.as_u64()?;
            Some(usage_label(input, output))
        })
    });
    let waiting = Memo::new(move |_| {
        turn.running.get()
            && turn
                .state
                .with(|s| s.segments.is_empty() && s.terminal_state().is_none())
    });
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
    };
    let user_text = turn.user.content.clone();
    let turn_for_worklog = turn.clone();
    let turn_for_trace = turn.clone();
    view! {
        <article
            class="turn"
            data-turn-id=turn.turn_id.clone()
            data-run-id=turn.run_id.clone()
            data-mode=dynamic(move || mode.get().as_str())
            data-row-count=dynamic(move || turn.state.with(|s| s.row_count().to_string()))
            data-last-seq=dynamic(move || turn.state.with(|s| s.last_seq.to_string()))
        >
            <div class="user-message">
                <div class="bubble">{user_text}</div>
            </div>
            <div class="assistant" data-state=either(move || turn_over.get(), "settled", "running")>
                <div class="assistant-head">
                    <span class="assistant-label">"Assistant"</span>
                    <button
                        type="button"
                        class="turn-mode"
                        title="Switch this turn between the worklog and the full trace"
                        aria-label=either(move || mode.get() == Mode::TransparentStream, "Show as worklog", "Show full trace")
                        on:click=toggle_mode
                    >
                        {either(move || mode.get() == Mode::TransparentStream, "Worklog", "Trace")}
                    </button>
                </div>
                {move || waiting.get().then(|| view! {
                    <div class="waiting" aria-hidden="true"><span></span><span></span><span></span></div>
                })}
                {move || match mode.get() {
                    Mode::TransparentStream => EitherOf3::A(view! { <Trace turn=turn_for_trace.clone() turn_over=turn_over /> }),
                    Mode::HideAllActivity => EitherOf3::B(()),
                    Mode::CompactWorklog => EitherOf3::C(view! { <Worklog turn=turn_for_worklog.clone() turn_over=turn_over /> }),
                }}
                {move || has_answer.get().then(|| view! {
                    <div
                        class="answer"
                        data-final-answer=either(move || settled.get(), "true", "streaming")
                    >
                        <Prose text=answer_text />
                    </div>
                })}
                {move || terminal.get().map(|(state, message, hint)| view! { <TerminalCard state=state message=message hint=hint /> })}
                {move || evidence.get().map(|evidence| view! { <EvidenceCard evidence=evidence /> })}
                <div class="turn-footer">
                    {move || usage.get().map(|u| view! { <span class="usage">{u}</span> })}
                </div>
            </div>
        </article>
    }
}

#[cfg(test)]
mod tests {
    use super::{tool_verb, trace_summary, usage_label};

    #[test]
    fn usage_reads_as_tokens_with_thousands_grouped() {
        assert_eq!(usage_label(1200, 4), "1,200 tokens in · 4 out");
        assert_eq!(usage_label(0, 999), "0 tokens in · 999 out");
        assert_eq!(
            usage_label(1_234_567, 100_000),
            "1,234,567 tokens in · 100,000 out"
        );
    }

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(trace_summary(5, 1), "Trace · 5 events · 1 tool");
        assert_eq!(trace_summary(1, 0), "Trace · 1 event · 0 tools");
        assert_eq!(trace_summary(12, 3), "Trace · 12 events · 3 tools");
    }

    #[test]
    fn known_tools_read_as_a_sentence_and_others_name_themselves() {
        assert_eq!(tool_verb("write_file", false, true), "Writing");
        assert_eq!(tool_verb("write_file", false, false), "Wrote");
        assert_eq!(tool_verb("read_file", true, false), "Could not read");
        assert_eq!(tool_verb("terminal", false, false), "Ran");
        assert_eq!(
            tool_verb("fetch_weather", false, true),
            "Calling fetch_weather"
        );
        assert_eq!(
            tool_verb("fetch_weather", false, false),
            "Called fetch_weather"
        );
        assert_eq!(
            tool_verb("fetch_weather", true, false),
            "Failed: fetch_weather"
        );
    }
}
