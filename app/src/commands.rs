//! Slash commands: what typing `/` in the message box offers, and what a typed command
//! means. Pure (no view, no browser), so the list and the parsing are tested natively; the
//! composer's menu (`components::slash`) shows [`entries`] and runs [`parse`]'s [`Action`].
//!
//! The page's own commands act in the page and never reach the agent. The agent's own
//! commands (the demo agent's `/demo SCENARIO`, listed by who answers) and anything that is
//! not a command go to the agent as the text typed.

use anchor::Mode;

use crate::api::{Example, Theme};

/// One of the page's own commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    /// What follows the `/`.
    pub name: &'static str,
    /// What may follow it (`""`: nothing).
    pub args: &'static str,
    /// What it does, as the menu and Settings say it.
    pub what: &'static str,
}

/// The page's own commands, in the order the menu lists them.
pub const COMMANDS: [Command; 9] = [
    Command {
        name: "new",
        args: "",
        what: "Start a new chat",
    },
    Command {
        name: "mode",
        args: "worklog|stream",
        what: "Switch the view of turns (alone: to the other one)",
    },
    Command {
        name: "model",
        args: "NAME",
        what: "Ask another model from now on",
    },
    Command {
        name: "theme",
        args: "light|dark|system",
        what: "Change the colour theme (alone: light ↔ dark)",
    },
    Command {
        name: "export",
        args: "md|jsonl",
        what: "Download this conversation (alone: Markdown)",
    },
    Command {
        name: "retry",
        args: "",
        what: "Run the last turn again",
    },
    Command {
        name: "stop",
        args: "",
        what: "Stop the running turn",
    },
    Command {
        name: "help",
        args: "",
        what: "List the commands and shortcuts (in Settings)",
    },
    Command {
        name: "demo",
        args: "SCENARIO",
        what: "Play one of the demo agent's scenarios",
    },
];

/// What a page's command does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A new chat.
    New,
    /// This view (`None`: the other one).
    Mode(Option<Mode>),
    /// This model from now on.
    Model(String),
    /// This theme (`None`: light ↔ dark).
    Theme(Option<Theme>),
    /// Download the conversation in this format (`md` or `jsonl`).
    Export(&'static str),
    /// Run the last turn again.
    Retry,
    /// Stop the running turn.
    Stop,
    /// Show the commands (Settings).
    Help,
}

/// What the page offers besides its own commands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Offer<'a> {
    /// The models one may ask for (empty: who answers offers no choice, and `/model` is not
    /// offered).
    pub models: &'a [String],
    /// The agent's own commands: each example's prompt is the command (`/demo tools`), its
    /// label what it does.
    pub agent: &'a [Example],
}

/// One line of the menu.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// What choosing it puts in the message box (`/mode`, `/mode stream`, `/demo tools`).
    pub text: String,
    /// What may follow it, shown after it (`worklog|stream`).
    pub args: String,
    /// What it does.
    pub what: String,
    /// Choosing it only fills in the text (a space after it): an argument is still needed.
    pub needs_more: bool,
}

/// What the message box means as a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Typed {
    /// Not a command the page knows: the text goes to the agent as typed.
    Text,
    /// One of the page's commands.
    Page(Action),
    /// A page's command with a missing or unknown argument: nothing is sent (the menu shows
    /// what it takes).
    Incomplete,
}

/// The word after `/` and what follows it, when `draft` is one line starting with `/`.
fn split(draft: &str) -> Option<(&str, Option<&str>)> {
    let line = draft.strip_prefix('/')?;
    if line.contains('\n') {
        return None;
    }
    Some(match line.find(char::is_whitespace) {
        Some(at) => (&line[..at], Some(line[at..].trim_start())),
        None => (line, None),
    })
}

/// Whether `name` is offered: `/model` when there is a choice of model, `/demo` when who
/// answers lists it.
fn offered(command: &Command, offer: &Offer<'_>) -> bool {
    match command.name {
        "model" => !offer.models.is_empty(),
        "demo" => offer
            .agent
            .iter()
            .any(|e| agent_word(&e.prompt) == Some("demo")),
        _ => true,
    }
}

/// The command word of an agent's command (`/demo tools` → `demo`).
fn agent_word(prompt: &str) -> Option<&str> {
    split(prompt).map(|(word, _)| word)
}

/// The fixed choices of a page command's argument.
fn choices(command: &Command) -> Vec<&'static str> {
    match command.args {
        "" | "NAME" | "SCENARIO" => Vec::new(),
        args => args.split('|').collect(),
    }
}

/// The menu for what is typed: the commands whose name starts with the word being typed,
/// then, after a command and a space, the arguments it takes that start with what follows.
/// Empty: no menu (not a command, or nothing matches).
pub fn entries(draft: &str, offer: &Offer<'_>) -> Vec<Entry> {
    let Some((word, rest)) = split(draft) else {
        return Vec::new();
    };
    let word_lower = word.to_ascii_lowercase();
    match rest {
        None => COMMANDS
            .iter()
            .filter(|c| c.name.starts_with(&word_lower) && offered(c, offer))
            .map(|c| Entry {
                text: format!("/{}", c.name),
                args: c.args.to_owned(),
                what: c.what.to_owned(),
                needs_more: matches!(c.args, "NAME" | "SCENARIO"),
            })
            .collect(),
        Some(rest) => {
            let Some(command) = COMMANDS
                .iter()
                .find(|c| c.name == word_lower && offered(c, offer))
            else {
                return Vec::new();
            };
            let rest_lower = rest.to_ascii_lowercase();
            let mut list: Vec<Entry> = match command.name {
                "model" => offer
                    .models
                    .iter()
                    .filter(|m| m.to_ascii_lowercase().starts_with(&rest_lower))
                    .map(|m| Entry {
                        text: format!("/model {m}"),
                        args: String::new(),
                        what: "Ask this model from now on".to_owned(),
                        needs_more: false,
                    })
                    .collect(),
                "demo" => offer
                    .agent
                    .iter()
                    .filter(|e| {
                        split(&e.prompt).is_some_and(|(w, arg)| {
                            w == "demo"
                                && arg
                                    .unwrap_or_default()
                                    .to_ascii_lowercase()
                                    .starts_with(&rest_lower)
                        })
                    })
                    .map(|e| Entry {
                        text: e.prompt.clone(),
                        args: String::new(),
                        what: e.label.clone(),
                        needs_more: false,
                    })
                    .collect(),
                _ => choices(command)
                    .into_iter()
                    .filter(|choice| choice.starts_with(&rest_lower))
                    .map(|choice| Entry {
                        text: format!("/{} {choice}", command.name),
                        args: String::new(),
                        what: command.what.to_owned(),
                        needs_more: false,
                    })
                    .collect(),
            };
            // Exactly what is typed, and nothing else: no list to choose from.
            if list.len() == 1 && list[0].text.eq_ignore_ascii_case(draft.trim_end()) {
                list.clear();
            }
            list
        }
    }
}

/// What `draft` asks for. Only the page's own commands are taken from the message box;
/// `/demo …`, an unknown `/word` and any other text go to the agent.
pub fn parse(draft: &str, offer: &Offer<'_>) -> Typed {
    let Some((word, rest)) = split(draft.trim()) else {
        return Typed::Text;
    };
    let word = word.to_ascii_lowercase();
    let Some(command) = COMMANDS
        .iter()
        .find(|c| c.name == word && offered(c, offer))
    else {
        return Typed::Text;
    };
    let arg = rest.unwrap_or_default().trim();
    let arg_lower = arg.to_ascii_lowercase();
    let action = match (command.name, arg_lower.as_str()) {
        ("demo", _) => return Typed::Text,
        ("new", "") => Action::New,
        ("retry", "") => Action::Retry,
        ("stop", "") => Action::Stop,
        ("help", "") => Action::Help,
        ("mode", "") => Action::Mode(None),
        ("mode", "worklog") => Action::Mode(Some(Mode::CompactWorklog)),
        ("mode", "stream") => Action::Mode(Some(Mode::TransparentStream)),
        ("theme", "") => Action::Theme(None),
        ("theme", "light") => Action::Theme(Some(Theme::Light)),
        ("theme", "dark") => Action::Theme(Some(Theme::Dark)),
        ("theme", "system") => Action::Theme(Some(Theme::System)),
        ("export", "" | "md" | "markdown") => Action::Export("md"),
        ("export", "jsonl" | "journal") => Action::Export("jsonl"),
        ("model", _) => match offer.models.iter().find(|m| m.eq_ignore_ascii_case(arg)) {
            Some(model) => Action::Model(model.clone()),
            None => return Typed::Incomplete,
        },
        _ => return Typed::Incomplete,
    };
    Typed::Page(action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Vec<Example> {
        vec![
            Example::new("Watch it use tools", "/demo tools"),
            Example::new("Approve what it runs", "/demo approval"),
            Example::new("Stream a long answer", "/demo long 400"),
        ]
    }

    fn texts(list: &[Entry]) -> Vec<&str> {
        list.iter().map(|e| e.text.as_str()).collect()
    }

    #[test]
    fn a_slash_lists_what_is_offered() {
        let agent = demo();
        let models = vec!["gpt-4o-mini".to_owned()];
        let all = Offer {
            models: &models,
            agent: &agent,
        };
        assert_eq!(entries("/", &all).len(), COMMANDS.len());
        // No choice of model, no agent commands: neither is offered.
        let plain = Offer::default();
        let listed = entries("/", &plain);
        assert!(!texts(&listed).contains(&"/model"));
        assert!(!texts(&listed).contains(&"/demo"));
        assert_eq!(listed.len(), COMMANDS.len() - 2);
    }

    #[test]
    fn typing_filters_and_mode_comes_first() {
        let models = vec!["m".to_owned()];
        let offer = Offer {
            models: &models,
            agent: &[],
        };
        assert_eq!(texts(&entries("/mo", &offer)), ["/mode", "/model"]);
        assert_eq!(texts(&entries("/MODE", &offer)), ["/mode", "/model"]);
        assert_eq!(texts(&entries("/th", &offer)), ["/theme"]);
        assert!(entries("/zz", &offer).is_empty());
        assert!(entries("hello /mode", &offer).is_empty());
        assert!(entries("/mode\nmore", &offer).is_empty());
    }

    #[test]
    fn after_a_space_the_arguments_are_listed() {
        let agent = demo();
        let models = vec![
            "gpt-4o".to_owned(),
            "gpt-4o-mini".to_owned(),
            "o3".to_owned(),
        ];
        let offer = Offer {
            models: &models,
            agent: &agent,
        };
        assert_eq!(
            texts(&entries("/mode ", &offer)),
            ["/mode worklog", "/mode stream"]
        );
        assert_eq!(texts(&entries("/mode s", &offer)), ["/mode stream"]);
        // What is typed in full needs no list.
        assert!(entries("/mode stream", &offer).is_empty());
        assert_eq!(
            texts(&entries("/model gpt", &offer)),
            ["/model gpt-4o", "/model gpt-4o-mini"]
        );
        assert_eq!(texts(&entries("/demo a", &offer)), ["/demo approval"]);
        assert_eq!(entries("/demo ", &offer).len(), 3);
        assert_eq!(entries("/demo ", &offer)[2].what, "Stream a long answer");
        assert!(entries("/new ", &offer).is_empty());
        assert!(entries("/nope x", &offer).is_empty());
    }

    #[test]
    fn commands_that_take_an_argument_from_a_list_ask_for_it() {
        let agent = demo();
        let models = vec!["m".to_owned()];
        let offer = Offer {
            models: &models,
            agent: &agent,
        };
        let list = entries("/", &offer);
        let needs: Vec<&str> = list
            .iter()
            .filter(|e| e.needs_more)
            .map(|e| e.text.as_str())
            .collect();
        assert_eq!(needs, ["/model", "/demo"]);
    }

    #[test]
    fn the_page_takes_its_own_commands_only() {
        let agent = demo();
        let models = vec!["gpt-4o-mini".to_owned()];
        let offer = Offer {
            models: &models,
            agent: &agent,
        };
        assert_eq!(parse("/new", &offer), Typed::Page(Action::New));
        assert_eq!(parse(" /mode ", &offer), Typed::Page(Action::Mode(None)));
        assert_eq!(
            parse("/mode Stream", &offer),
            Typed::Page(Action::Mode(Some(Mode::TransparentStream)))
        );
        assert_eq!(
            parse("/theme dark", &offer),
            Typed::Page(Action::Theme(Some(Theme::Dark)))
        );
        assert_eq!(parse("/export", &offer), Typed::Page(Action::Export("md")));
        assert_eq!(
            parse("/export jsonl", &offer),
            Typed::Page(Action::Export("jsonl"))
        );
        assert_eq!(
            parse("/model GPT-4o-mini", &offer),
            Typed::Page(Action::Model("gpt-4o-mini".into()))
        );
        assert_eq!(parse("/model nope", &offer), Typed::Incomplete);
        assert_eq!(parse("/mode sideways", &offer), Typed::Incomplete);
        assert_eq!(parse("/stop now", &offer), Typed::Incomplete);
        // The agent's commands, unknown commands and text go to the agent.
        assert_eq!(parse("/demo tools", &offer), Typed::Text);
        assert_eq!(parse("/deploy prod", &offer), Typed::Text);
        assert_eq!(parse("what does /new do?", &offer), Typed::Text);
        assert_eq!(parse("/new\nand more", &offer), Typed::Text);
        // No choice of model: `/model x` is not the page's.
        assert_eq!(parse("/model x", &Offer::default()), Typed::Text);
    }
}
