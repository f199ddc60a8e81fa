//! The embedded demo agent: no key, no network, deterministic, paced like a real model.
//!
//! `/demo NAME [N]` picks a scenario: `prose`, `tools`, `approval`, `clarify`, `todo`,
//! `artifact`, `compress`, `error`, `no_response`, `tool_limit`, `exhausted`, `degraded`, `slow`,
//! `long N`. Any other
//! message gets a plain mixed turn that answers it.

use anchor::EventKind;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::approvals::Approval;
use super::tools::names::{READ_FILE, SEARCH_TEXT, WRITE_FILE};
use super::{ApprovalChoice, RunEnd, RunIo, RuntimeAdapter, Stopped, TurnRequest};

/// The demo agent.
#[derive(Clone, Debug)]
pub struct DemoAgent {
    /// Pause between streamed chunks (0 in tests).
    pub delay: Duration,
}

/// The scenarios `/demo` knows.
pub const SCENARIOS: [&str; 17] = [
    "prose",
    "tools",
    "code",
    "approval",
    "clarify",
    "todo",
    "artifact",
    "compress",
    "error",
    "flaky",
    "no_response",
    "tool_limit",
    "exhausted",
    "degraded",
    "slow",
    "long",
    "trace",
];

#[async_trait]
impl RuntimeAdapter for DemoAgent {
    fn name(&self) -> &'static str {
        "demo"
    }

    fn label(&self) -> String {
        "Demo agent (no model)".to_owned()
    }

    fn examples(&self) -> Vec<app::api::Example> {
        use app::api::Example;
        vec![
            Example::new("Watch it use tools", "/demo tools"),
            Example::new("Approve what it runs", "/demo approval"),
            Example::new("Stream a long answer", "/demo long 400"),
        ]
    }

    fn commands(&self) -> Vec<app::api::Example> {
        SCENARIOS
            .iter()
            .map(|name| app::api::Example {
                label: describe(name).to_owned(),
                prompt: format!("/demo {name}"),
            })
            .collect()
    }

    fn title_for(&self, message: &str) -> Option<String> {
        title(message)
    }

    fn context_use(
        &self,
        model: Option<&str>,
        history: &[super::ChatMessage],
        draft_bytes: usize,
    ) -> app::api::ContextUse {
        let _ = model;
        super::demo_context::pretend_use(history, draft_bytes)
    }

    async fn run(&self, turn: TurnRequest, io: RunIo) -> RunEnd {
        let mut turn_state = Turn {
            io: &io,
            delay: self.delay,
            tokens_out: 0,
            tool_no: 0,
        };
        match turn_state.play(&turn).await {
            Ok(end) => end,
            Err(Stopped) => RunEnd::Cancelled,
        }
    }
}

struct Turn<'a> {
    io: &'a RunIo,
    delay: Duration,
    tokens_out: u64,
    tool_no: u32,
}

/// The most rows one demo message may journal (`long`, `trace`): one message cannot fill the
/// disk.
pub const MAX_ROWS: u64 = 100_000;

/// How many rows a sized scenario journals: N (1000 when not given), at least `min`, at most
/// [`MAX_ROWS`].
fn rows(n: Option<u64>, min: u64) -> u64 {
    n.unwrap_or(1000).clamp(min, MAX_ROWS)
}

/// The file `/demo artifact` writes (14 lines).
const SUMMARY_MD: &str = "# Summary\n\n\
The cache test failed because entries were keyed by text, not by identity.\n\n\
## What changed\n\n\
- Entries are keyed by `run_id` and `seq`.\n\
- A replayed event is skipped, not shown twice.\n\
- The settled message lands in the same place.\n\n\
## Next\n\n\
1. Run the whole suite again.\n\
2. Watch a reload in the middle of a turn.\n\
";

/// The file `/demo code` reads.
const FIB_RS: &str = "/// The n-th Fibonacci number.\npub fn fib(n: u32) -> u64 {\n    let (mut a, mut b) = (0u64, 1u64);\n    for _ in 0..n {\n        (a, b) = (b, a + b);\n    }\n    a\n}\n";

/// What `/demo code` answers: fenced code in two languages it colours and one it does not.
const CODE_ANSWER: &str = "`fib` keeps two numbers and steps them forward:\n\n```rust\npub fn fib(n: u32) -> u64 {\n    let (mut a, mut b) = (0u64, 1u64);\n    for _ in 0..n {\n        (a, b) = (b, a + b); // the next pair\n    }\n    a\n}\n```\n\nThe same in Python:\n\n```python\ndef fib(n: int) -> int:\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b  # the next pair\n    return a\n```\n\nAnd its output, which is no language:\n\n```text\nfib(10) = 55\n```\n";

/// What a scenario shows, as the `/demo` menu says it.
fn describe(name: &str) -> &'static str {
    match name {
        "prose" => "A plain answer in Markdown",
        "tools" => "Reads, searches and writes files with tools",
        "code" => "Reads a Rust file, answers with code in three languages",
        "approval" => "Asks before it runs a command",
        "clarify" => "Asks you a question first",
        "todo" => "Works through a todo list",
        "artifact" => "Writes a summary file",
        "compress" => "Compresses its context mid-turn",
        "error" => "Fails with an error",
        "flaky" => "Fails the first time; Retry answers",
        "no_response" => "Ends without an answer",
        "tool_limit" => "Hits its limit of tool calls",
        "exhausted" => "Cannot compress its context any further",
        "degraded" => "Reads only part of a file",
        "slow" => "Streams dots until you stop it",
        "long" => "Streams a long answer (N words)",
        "trace" => "Reads many files, then answers (N steps)",
        _ => "A demo scenario",
    }
}

/// What `/demo approval` asks to run, unless the message names another command.
const APPROVAL_COMMAND: &str = "rm -rf target/";

/// The command of `/demo approval [COMMAND]`.
fn approval_command(message: &str) -> &str {
    let rest = message
        .trim()
        .strip_prefix("/demo")
        .unwrap_or_default()
        .trim_start();
    let command = rest.strip_prefix("approval").unwrap_or_default().trim();
    if command.is_empty() {
        APPROVAL_COMMAND
    } else {
        command
    }
}

/// What a conversation started with `/demo NAME [N]` is called: what the scenario does, not
/// the command ("Demo: streams a long answer (400 words)").
fn title(message: &str) -> Option<String> {
    let (name, n) = scenario(message)?;
    if !SCENARIOS.contains(&name) {
        return None;
    }
    let what = describe(name);
    let what = match (what.find(" (N "), n) {
        (Some(_), Some(n)) => what.replacen(" (N ", &format!(" ({n} "), 1),
        (Some(at), None) => what[..at].to_owned(),
        (None, _) => what.to_owned(),
    };
    let mut chars = what.chars();
    let first = chars.next()?.to_lowercase();
    Some(format!("Demo: {first}{}", chars.as_str()))
}

/// `/demo NAME [N]` → (name, N).
fn scenario(message: &str) -> Option<(&str, Option<u64>)> {
    let rest = message.trim().strip_prefix("/demo")?;
    let mut words = rest.split_whitespace();
    let name = words.next().unwrap_or("prose");
    let n = words.next().and_then(|w| w.parse().ok());
    Some((name, n))
}

/// Splits text into streaming chunks of a word or two, keeping whitespace.
fn chunks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    for piece in text.split_inclusive(' ') {
        current.push_str(piece);
        words += 1;
        if words == 2 || piece.ends_with('\n') {
            out.push(std::mem::take(&mut current));
            words = 0;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

impl Turn<'_> {
    async fn pause(&self) -> Result<(), Stopped> {
        if self.delay.is_zero() {
            if self.io.is_stopped() {
                return Err(Stopped);
            }
            tokio::task::yield_now().await;
            Ok(())
        } else {
            self.io.sleep(self.delay).await
        }
    }

    async fn think(&mut self, text: &str) -> Result<(), Stopped> {
        for chunk in chunks(text) {
            self.io
                .emit(EventKind::Reasoning, json!({ "text": chunk }))
                .await?;
            self.pause().await?;
        }
        Ok(())
    }

    /// Streams prose as tokens; returns it.
    async fn say(&mut self, text: &str) -> Result<String, Stopped> {
        for chunk in chunks(text) {
            self.tokens_out += 1;
            self.io
                .emit(EventKind::Token, json!({ "text": chunk }))
                .await?;
            self.pause().await?;
        }
        Ok(text.to_owned())
    }

    async fn meter(&self) -> Result<(), Stopped> {
        self.io
            .emit(
                EventKind::Metering,
                json!({"tps": 42.0, "tps_available": true, "estimated": false, "active": 1,
                       "usage": {"input_tokens": 1200, "output_tokens": self.tokens_out}}),
            )
            .await
    }

    async fn tool(
        &mut self,
        name: &str,
        args: Value,
        result: &str,
        is_error: bool,
    ) -> Result<(), Stopped> {
        self.tool_no += 1;
        let tid = format!("call_{:04}", self.tool_no);
        self.io
            .emit(
                EventKind::Tool,
                json!({"event_type": "tool.started", "name": name, "preview": null, "args": args, "tid": tid}),
            )
            .await?;
        self.pause().await?;
        self.pause().await?;
        self.meter().await?;
        self.io
            .emit(
                EventKind::ToolComplete,
                json!({"event_type": "tool.completed", "name": name, "preview": result, "args": args, "tid": tid,
                       "is_error": is_error, "duration": 0.4}),
            )
            .await
    }

    fn usage(&self) -> Value {
        json!({"input_tokens": 1200, "output_tokens": self.tokens_out.max(1)})
    }

    async fn finish(&mut self, answer: String) -> Result<RunEnd, Stopped> {
        self.io.emit(EventKind::Usage, self.usage()).await?;
        Ok(RunEnd::Completed {
            answer,
            usage: Some(self.usage()),
        })
    }

    async fn play(&mut self, turn: &TurnRequest) -> Result<RunEnd, Stopped> {
        let Some((name, n)) = scenario(&turn.message) else {
            if !turn.attachments.is_empty() {
                return self.received(turn).await;
            }
            return self.plain(&turn.message).await;
        };
        match name {
            "prose" => {
                self.think(
                    "The user wants a short, well-formed answer. A paragraph and a list will do.",
                )
                .await?;
                let answer = self
                    .say(
                        "Here is a streamed answer from the **demo agent**.\n\n\
                         It arrives token by token, settles in place when the turn ends, and survives a reload:\n\n\
                         - every event has a journal id, so nothing is shown twice;\n\
                         - the final answer is separate from the work that led to it;\n\
                         - the turn ends with an explicit terminal state.\n",
                    )
                    .await?;
                self.finish(answer).await
            }
            "tools" => {
                self.think("I should look at the test output first, then at the cache code.")
                    .await?;
                self.tool(
                    "terminal",
                    json!({"command": "cargo test -p anchor"}),
                    "58 passed; 1 failed (replay_dedupe)",
                    false,
                )
                .await?;
                self.say("One test fails. Let me read the module it exercises.\n")
                    .await?;
                self.tool(
                    READ_FILE,
                    json!({"path": "anchor/src/dedupe.rs"}),
                    "error: no such file: anchor/src/dedupe.rs",
                    true,
                )
                .await?;
                self.think("Wrong path; the set lives in the registry module.")
                    .await?;
                self.tool(
                    SEARCH_TEXT,
                    json!({"pattern": "fn insert", "path": "anchor/src"}),
                    "anchor/src/registry.rs:212: fn insert(&mut self, key: DedupeKey)",
                    false,
                )
                .await?;
                let answer = self
                    .say(
                        "The failure comes from a stale sequence cache: `insert` keeps the old run id after a \
                         reconnect, so replayed events look new.\n\n```rust\nself.run = Some(run.clone());\n```\n",
                    )
                    .await?;
                self.finish(answer).await
            }
            "code" => {
                self.tool(READ_FILE, json!({"path": "src/fib.rs"}), FIB_RS, false)
                    .await?;
                let answer = self.say(CODE_ANSWER).await?;
                self.finish(answer).await
            }
            "approval" => {
                self.think("Cleaning the build directory needs the user's permission.")
                    .await?;
                // `/demo approval COMMAND` asks for that command instead (`cargo test`,
                // `rm -rf /`): a standing permission for it goes ahead without asking.
                let command = approval_command(&turn.message);
                let approval = if command == APPROVAL_COMMAND {
                    Approval::command(command, "Delete the build directory")
                } else {
                    Approval::command(command, &format!("Run `{command}`"))
                };
                let choice = match self.io.permitted(&approval).await {
                    Some(choice) => choice,
                    None => self.io.ask_approval(&approval).await?,
                };
                if choice.allows() && command != APPROVAL_COMMAND {
                    self.tool("terminal", json!({"command": command}), "done", false)
                        .await?;
                    let answer = self
                        .say(&format!(
                            "Ran `{command}` (approved: {}).",
                            choice_name(choice)
                        ))
                        .await?;
                    return self.finish(answer).await;
                }
                if choice.allows() {
                    self.tool(
                        "terminal",
                        json!({"command": APPROVAL_COMMAND}),
                        "removed target/ (3.5 GB)",
                        false,
                    )
                    .await?;
                    let answer = self
                        .say(&format!(
                            "Done: the build directory is gone (approved: {}).",
                            choice_name(choice)
                        ))
                        .await?;
                    self.finish(answer).await
                } else {
                    let answer = self
                        .say("Understood: I left the build directory alone.")
                        .await?;
                    self.finish(answer).await
                }
            }
            "clarify" => {
                let response = self
                    .io
                    .ask_clarify(
                        "Which environment should I deploy to?",
                        &["staging", "production"],
                    )
                    .await?;
                let response = if response.trim().is_empty() {
                    "staging".to_owned()
                } else {
                    response
                };
                self.tool(
                    "terminal",
                    json!({"command": format!("deploy --env {response}")}),
                    "deployed build 412",
                    false,
                )
                .await?;
                let answer = self
                    .say(&format!("Deployed to **{response}** as you asked."))
                    .await?;
                self.finish(answer).await
            }
            "todo" => {
                let mut todos = vec![
                    json!({"id": "1", "content": "Read the failing test", "status": "in_progress"}),
                    json!({"id": "2", "content": "Fix the cache", "status": "pending"}),
                    json!({"id": "3", "content": "Run the suite again", "status": "pending"}),
                ];
                self.io
                    .emit(
                        EventKind::TodoState,
                        json!({"source": "tool", "todos": todos}),
                    )
                    .await?;
                // Each call sends the whole list as it now stands, as agents' todo tools do.
                for i in 0..todos.len() {
                    todos[i]["status"] = json!("completed");
                    if let Some(next) = todos.get_mut(i + 1) {
                        next["status"] = json!("in_progress");
                    }
                    let done = format!("done: {}", todos[i]["content"].as_str().unwrap_or(""));
                    self.tool("todo", json!({"todos": todos}), &done, false)
                        .await?;
                    self.io
                        .emit(
                            EventKind::TodoState,
                            json!({"source": "tool", "todos": todos}),
                        )
                        .await?;
                }
                let answer = self.say("All three steps are done.").await?;
                self.finish(answer).await
            }
            "artifact" => {
                self.tool(
                    WRITE_FILE,
                    json!({"path": "notes/summary.md"}),
                    "wrote 14 lines",
                    false,
                )
                .await?;
                self.io
                    .emit(
                        EventKind::ArtifactReference,
                        // Handed over whole: this agent keeps no files here, so the page
                        // offers it as a download.
                        json!({"path": "notes/summary.md", "kind": "file", "action": "created",
                               "content": SUMMARY_MD}),
                    )
                    .await?;
                self.io
                    .emit(
                        EventKind::StateSaved,
                        json!({"kind": "memory", "action": "saved"}),
                    )
                    .await?;
                let answer = self
                    .say("I wrote the summary to `notes/summary.md` and saved a memory about it.")
                    .await?;
                self.finish(answer).await
            }
            "compress" => {
                // As an agent does it: compression comes between model calls, never inside
                // a sentence, so the answer is whole and comes after it.
                self.say(
                    "This conversation is getting long, so I will compress the context first.\n",
                )
                .await?;
                self.io
                    .emit(
                        EventKind::Compressing,
                        json!({"message": "Summarizing 42 earlier messages"}),
                    )
                    .await?;
                self.pause().await?;
                self.io
                    .emit(
                        EventKind::Compressed,
                        json!({"message": "42 messages summarized into 1", "status": "completed"}),
                    )
                    .await?;
                let answer = self
                    .say("The context is compressed and I can continue where we left off.")
                    .await?;
                self.finish(answer).await
            }
            "error" => {
                self.think("Calling the provider.").await?;
                self.say("Let me check").await?;
                Ok(RunEnd::Failed {
                    message: "The provider returned 500 Internal Server Error.".into(),
                    hint: Some("Try again in a moment; the partial answer is kept.".into()),
                })
            }
            // Fails as `error` does the first time, and answers when retried.
            "flaky" if turn.attempt <= 1 => {
                self.think("Calling the provider.").await?;
                Ok(RunEnd::Failed {
                    message: "The provider returned 503 Service Unavailable.".into(),
                    hint: Some("Retry: the provider is back in a moment.".into()),
                })
            }
            "flaky" => {
                let answer = self
                    .say(&format!("Answered on attempt {}.", turn.attempt))
                    .await?;
                self.finish(answer).await
            }
            "no_response" => {
                self.think("Waiting for the model...").await?;
                Ok(RunEnd::NoResponse)
            }
            "tool_limit" => {
                for i in 0..3 {
                    self.tool(
                        SEARCH_TEXT,
                        json!({"pattern": format!("needle{i}")}),
                        "no match",
                        false,
                    )
                    .await?;
                }
                Ok(RunEnd::ToolLimitReached {
                    answer: String::new(),
                    usage: Some(self.usage()),
                })
            }
            "exhausted" => {
                self.io
                    .emit(
                        EventKind::Compressing,
                        json!({"message": "Summarizing 180 earlier messages"}),
                    )
                    .await?;
                self.pause().await?;
                Ok(RunEnd::CompressionExhausted)
            }
            "degraded" => {
                // The step that fell short says so where it stands, not only in the card.
                self.tool(
                    READ_FILE,
                    json!({"path": "notes/long.md"}),
                    "read 2 of 5 parts: parts 3 to 5 could not be read",
                    true,
                )
                .await?;
                Ok(RunEnd::Degraded {
                    message: "The agent read only 2 of the 5 parts of notes/long.md, so this \
                              turn has no answer."
                        .into(),
                })
            }
            "slow" => {
                self.say("Working on it").await?;
                loop {
                    self.io
                        .emit(EventKind::Token, json!({ "text": "." }))
                        .await?;
                    self.io
                        .sleep(self.delay.max(Duration::from_millis(200)))
                        .await?;
                }
            }
            "long" => {
                let n = rows(n, 1);
                let mut answer = String::new();
                for i in 0..n {
                    let text = format!("w{i} ");
                    self.tokens_out += 1;
                    self.io
                        .emit(EventKind::Token, json!({ "text": text }))
                        .await?;
                    answer.push_str(&text);
                    if !self.delay.is_zero() {
                        self.io.sleep(self.delay).await?;
                    } else if self.io.is_stopped() {
                        return Err(Stopped);
                    }
                }
                self.finish(answer).await
            }
            "trace" => {
                // N activity rows as fast as possible (tool calls: a start and an end each),
                // then an answer streamed at the configured pace (at least 20 ms a chunk: a
                // long turn that keeps going), or at once on a server with no pause.
                let n = rows(n, 2);
                for i in 0..n / 2 {
                    let tid = format!("call_{i:06}");
                    self.io
                        .emit(EventKind::Tool, json!({"event_type": "tool.started", "name": READ_FILE, "args": {"path": format!("src/f{i}.rs")}, "tid": tid}))
                        .await?;
                    self.io
                        .emit(EventKind::ToolComplete, json!({"event_type": "tool.completed", "name": READ_FILE, "args": {"path": format!("src/f{i}.rs")}, "tid": tid, "preview": "12 lines", "is_error": false}))
                        .await?;
                }
                let mut answer = String::new();
                for i in 0..400 {
                    let text = format!("t{i} ");
                    self.tokens_out += 1;
                    self.io
                        .emit(EventKind::Token, json!({ "text": text }))
                        .await?;
                    answer.push_str(&text);
                    if !self.delay.is_zero() {
                        self.io
                            .sleep(self.delay.max(Duration::from_millis(20)))
                            .await?;
                    } else if self.io.is_stopped() {
                        return Err(Stopped);
                    }
                }
                self.finish(answer).await
            }
            other => {
                let known = SCENARIOS.join(", ");
                let answer = self
                    .say(&format!(
                        "There is no demo scenario called `{other}`. Try one of: {known}."
                    ))
                    .await?;
                self.finish(answer).await
            }
        }
    }

    /// Says which files came with the message: by name, kind and size (and for a text file,
    /// how many lines it has).
    async fn received(&mut self, turn: &TurnRequest) -> Result<RunEnd, Stopped> {
        let files = &turn.attachments;
        self.think("The message carries files. I can't look at them, but I can say what arrived.")
            .await?;
        let mut text = match files.len() {
            1 => "I received one file:\n\n".to_owned(),
            n => format!("I received {n} files:\n\n"),
        };
        for file in files {
            let kind = match file.mime.as_str() {
                "image/png" => "PNG image".to_owned(),
                "image/jpeg" => "JPEG image".to_owned(),
                "image/gif" => "GIF image".to_owned(),
                "image/webp" => "WebP image".to_owned(),
                _ => match file.text().map(|t| t.lines().count()) {
                    Some(1) => "text, 1 line".to_owned(),
                    Some(n) => format!("text, {n} lines"),
                    None => "text".to_owned(),
                },
            };
            let name = file.name.replace(['`', '\n'], "");
            text.push_str(&format!(
                "- `{name}`: {kind}, {}\n",
                app::api::file_size(file.size)
            ));
        }
        text.push_str(
            "\nI'm the demo agent, so that is all I can tell. With `ANCHORAGE_BACKEND=openai`, \
             images go to the model as pictures and text files become workspace files it reads.\n",
        );
        let answer = self.say(&text).await?;
        self.finish(answer).await
    }

    async fn plain(&mut self, message: &str) -> Result<RunEnd, Stopped> {
        self.think("I'm the embedded demo agent: I have no model behind me, so I'll say what I am and show how an answer streams.")
            .await?;
        self.tool(
            SEARCH_TEXT,
            json!({"pattern": message.chars().take(40).collect::<String>()}),
            "3 matches in README.md",
            false,
        )
        .await?;
        let quoted: String = message.chars().take(200).collect();
        let answer = self
            .say(&format!(
                "You wrote: \"{quoted}\"\n\nI'm the demo agent that ships with Anchorage, so I can't answer that for real. \
                 To talk to a model, start the server with `ANCHORAGE_BACKEND=openai` and an `OPENAI_API_KEY` \
                 (any OpenAI-compatible server works, Ollama included), or `ANCHORAGE_BACKEND=hermes` for a Hermes gateway. \
                 Meanwhile, try `/demo tools`, `/demo approval` or `/demo long 2000` to see how turns stream."
            ))
            .await?;
        self.finish(answer).await
    }
}

fn choice_name(choice: ApprovalChoice) -> &'static str {
    match choice {
        ApprovalChoice::Once => "once",
        ApprovalChoice::Session | ApprovalChoice::SessionWide => "in this conversation",
        ApprovalChoice::Always | ApprovalChoice::AlwaysWide => "in every conversation",
        ApprovalChoice::Deny => "denied",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_started_by_a_demo_command_is_titled_by_what_it_does() {
        assert_eq!(
            title("/demo approval").as_deref(),
            Some("Demo: asks before it runs a command")
        );
        assert_eq!(
            title("/demo long 400").as_deref(),
            Some("Demo: streams a long answer (400 words)")
        );
        assert_eq!(
            title("/demo trace").as_deref(),
            Some("Demo: reads many files, then answers")
        );
        // Not a scenario, or not a command: the message's own words.
        assert_eq!(title("/demo nonsense"), None);
        assert_eq!(title("hello there"), None);
    }

    #[test]
    fn demo_commands_name_a_scenario_and_a_count() {
        assert_eq!(scenario("/demo long 500"), Some(("long", Some(500))));
        assert_eq!(rows(Some(500), 1), 500);
        assert_eq!(rows(None, 1), 1000);
        assert_eq!(
            rows(Some(5_000_000), 1),
            MAX_ROWS,
            "one message, at most 100k rows"
        );
        assert_eq!(rows(Some(0), 2), 2);
        assert_eq!(scenario("  /demo tools"), Some(("tools", None)));
        assert_eq!(scenario("/demo"), Some(("prose", None)));
        // Every scenario is offered, each with what it shows, as a command it plays.
        let offered = DemoAgent {
            delay: Duration::ZERO,
        }
        .commands();
        assert_eq!(offered.len(), SCENARIOS.len());
        for (command, name) in offered.iter().zip(SCENARIOS) {
            assert_eq!(scenario(&command.prompt).map(|(n, _)| n), Some(name));
            assert_ne!(describe(name), "A demo scenario");
        }
        assert_eq!(scenario("hello"), None);
        assert_eq!(approval_command("/demo approval"), "rm -rf target/");
        assert_eq!(approval_command("/demo approval  rm -rf / "), "rm -rf /");
    }

    #[test]
    fn chunks_keep_every_character() {
        let text = "one two three\nfour  five";
        assert_eq!(chunks(text).concat(), text);
        assert!(chunks(text).len() >= 3);
    }
}
